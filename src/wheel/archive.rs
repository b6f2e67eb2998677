//! A strict reader for the zip container of a wheel.
//!
//! Installers disagree about malformed archives: pip (Python's zipfile) tolerates a ZIP64 extra
//! field that no 0xFFFFFFFF sentinel asked for, uv refuses it ("zip64 extended information field
//! was too long", pypa/wheel#692, pytorch#189748), and two parsers reading different names or
//! sizes out of one file is how malicious archives smuggle content. So the central directory,
//! the (ZIP64) end records and every local header are parsed here by the book and checked
//! against each other; anything a strict installer would refuse is reported.
//!
//! Entry data is read with positioned reads (`pread`) on one shared file handle, so any number
//! of entries can be read in parallel without seeking or reopening the file.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

use crate::wheel::problem::Problem;

const EOCD_SIG: u32 = 0x0605_4b50;
const EOCD64_SIG: u32 = 0x0606_4b50;
const EOCD64_LOCATOR_SIG: u32 = 0x0706_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const LOCAL_SIG: u32 = 0x0403_4b50;
const DESCRIPTOR_SIG: u32 = 0x0807_4b50;
const EOCD_LEN: u64 = 22;
const EOCD64_LOCATOR_LEN: u64 = 20;
const CENTRAL_LEN: usize = 46;
const LOCAL_LEN: usize = 30;
const MAX_COMMENT: u64 = 0xFFFF;
const ZIP64_EXTRA: u16 = 0x0001;
const UNICODE_PATH_EXTRA: u16 = 0x7075;
const U32_SENTINEL: u32 = 0xFFFF_FFFF;
const U16_SENTINEL: u16 = 0xFFFF;

/// General purpose flag bits.
const FLAG_ENCRYPTED: u16 = 1;
const FLAG_DESCRIPTOR: u16 = 1 << 3;
const FLAG_UTF8: u16 = 1 << 11;

pub const METHOD_STORED: u16 = 0;
pub const METHOD_DEFLATE: u16 = 8;

/// The archive cannot be read at all: nothing inside it can be checked.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("cannot read the file: {0}")]
    Io(#[from] io::Error),
    #[error(
        "the archive is truncated: {detail} (the file is {len} bytes; was an upload or \
         download cut short?)"
    )]
    Truncated { len: u64, detail: String },
    #[error("not a zip archive: {detail}")]
    NotZip { detail: String },
    #[error("corrupt zip archive: {detail}")]
    Corrupt { detail: String },
}

/// One central directory entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub raw_name: Vec<u8>,
    pub method: u16,
    pub flags: u16,
    pub crc32: u32,
    pub compressed_size: u64,
    pub size: u64,
    pub header_offset: u64,
    pub external_attributes: u32,
    pub version_made_by: u16,
    /// MS-DOS modification time and date, as stored.
    pub dos_time: u16,
    pub dos_date: u16,
}

impl Entry {
    pub fn is_dir(&self) -> bool {
        self.name.ends_with('/')
    }

    /// A symlink entry (Unix mode in the high half of the external attributes).
    pub fn is_symlink(&self) -> bool {
        let unix = self.version_made_by >> 8 == 3;
        unix && (self.external_attributes >> 16) & 0o170000 == 0o120000
    }

    pub fn encrypted(&self) -> bool {
        self.flags & FLAG_ENCRYPTED != 0
    }
}

/// The parsed directory of an archive plus the file it came from.
#[derive(Debug)]
pub struct Archive {
    file: File,
    pub len: u64,
    pub entries: Vec<Entry>,
    /// Where the central directory starts: entry data must lie before it.
    pub central_directory_offset: u64,
    pub zip64: bool,
}

/// Where an entry's data lies, learnt from its local header.
#[derive(Debug, Clone, Copy)]
pub struct DataSpan {
    pub start: u64,
    /// First byte after the data and its data descriptor, if any.
    pub end: u64,
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(buf)
}

/// Reads exactly `len` bytes at `offset`, or says the archive ends too early.
fn read_exact_at(
    file: &File,
    file_len: u64,
    offset: u64,
    len: usize,
    what: &str,
) -> Result<Vec<u8>, ArchiveError> {
    if offset
        .checked_add(len as u64)
        .is_none_or(|end| end > file_len)
    {
        return Err(ArchiveError::Truncated {
            len: file_len,
            detail: format!(
                "{what} at offset {offset} ({len} bytes) lies past the end of the file"
            ),
        });
    }
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

/// The extra fields of a header: (id, data) pairs. A field running past the end is an error.
fn extra_fields(extra: &[u8]) -> Result<Vec<(u16, &[u8])>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < extra.len() {
        if at + 4 > extra.len() {
            return Err(format!(
                "{} stray bytes at the end of the extra field",
                extra.len() - at
            ));
        }
        let id = u16_at(extra, at);
        let len = usize::from(u16_at(extra, at + 2));
        let start = at + 4;
        if start + len > extra.len() {
            return Err(format!(
                "extra field 0x{id:04x} claims {len} bytes but only {} remain",
                extra.len() - start
            ));
        }
        out.push((id, &extra[start..start + len]));
        at = start + len;
    }
    Ok(out)
}

/// Values of a ZIP64 extended information field: present exactly for the header fields that
/// hold the sentinel, in the order the spec gives (APPNOTE 4.5.3).
struct Zip64Values {
    size: Option<u64>,
    compressed_size: Option<u64>,
    header_offset: Option<u64>,
}

/// Parses a ZIP64 field strictly. `want` lists which values the header asked for (size,
/// compressed size, offset, disk); `where_` is "local header" or "central directory".
fn parse_zip64(data: &[u8], want: [bool; 4], where_: &str) -> Result<Zip64Values, String> {
    let expected = want[..3].iter().filter(|w| **w).count() * 8 + if want[3] { 4 } else { 0 };
    if data.len() != expected {
        let too = if data.len() > expected {
            "too long"
        } else {
            "too short"
        };
        return Err(format!(
            "the ZIP64 extra field in the {where_} is {too}: it holds {} bytes but the header's \
             0xFFFFFFFF sentinels call for {expected} (uv refuses such archives; pypa/wheel#692)",
            data.len()
        ));
    }
    let mut at = 0;
    let mut take = |wanted: bool| {
        wanted.then(|| {
            let value = u64_at(data, at);
            at += 8;
            value
        })
    };
    let size = take(want[0]);
    let compressed_size = take(want[1]);
    let header_offset = take(want[2]);
    Ok(Zip64Values {
        size,
        compressed_size,
        header_offset,
    })
}

fn decode_name(raw: &[u8], flags: u16) -> Result<String, String> {
    match std::str::from_utf8(raw) {
        Ok(name) if name.is_ascii() || flags & FLAG_UTF8 != 0 => Ok(name.to_string()),
        // Without the UTF-8 flag a non-ASCII name is CP437 to Python's zipfile and UTF-8 to
        // others: installers would create different files.
        Ok(name) => Err(format!(
            "entry name '{name}' is not ASCII but the UTF-8 flag is not set (installers would \
             decode it differently)"
        )),
        Err(_) => Err(format!(
            "entry name {} is not valid UTF-8",
            String::from_utf8_lossy(raw)
        )),
    }
}

impl Archive {
    /// Parses the end records and the central directory. Structural defects that still leave
    /// the entries readable are pushed to `problems`; defects that make the archive unreadable
    /// are errors.
    pub fn open(file: File, problems: &mut Vec<Problem>) -> Result<Archive, ArchiveError> {
        let len = file.metadata()?.len();
        let tail_len = len.min(EOCD_LEN + MAX_COMMENT);
        let tail_start = len - tail_len;
        let tail = read_exact_at(
            &file,
            len,
            tail_start,
            tail_len as usize,
            "the end of the archive",
        )?;
        let eocd_at = find_eocd(&tail).map(|at| tail_start + at as u64);
        let Some(eocd_at) = eocd_at else {
            let mut head = [0u8; 4];
            let starts_like_zip = len >= 4
                && file.read_exact_at(&mut head, 0).is_ok()
                && u32::from_le_bytes(head) == LOCAL_SIG;
            return Err(if starts_like_zip {
                ArchiveError::Truncated {
                    len,
                    detail: "it starts like a zip archive but has no end-of-central-directory \
                             record"
                        .into(),
                }
            } else {
                ArchiveError::NotZip {
                    detail: format!(
                        "no end-of-central-directory record in the last {tail_len} bytes and no \
                         zip signature at the start"
                    ),
                }
            });
        };
        let eocd = read_exact_at(&file, len, eocd_at, EOCD_LEN as usize, "the end record")?;
        let comment_len = u64::from(u16_at(&eocd, 20));
        if eocd_at + EOCD_LEN + comment_len != len {
            problems.push(Problem::zip(
                None,
                format!(
                    "{} bytes of trailing data after the end-of-central-directory record",
                    len - (eocd_at + EOCD_LEN + comment_len)
                ),
            ));
        }
        let disk = u16_at(&eocd, 4);
        let cd_disk = u16_at(&eocd, 6);
        let mut count_on_disk = u64::from(u16_at(&eocd, 8));
        let mut count = u64::from(u16_at(&eocd, 10));
        let mut cd_size = u64::from(u32_at(&eocd, 12));
        let mut cd_offset = u64::from(u32_at(&eocd, 16));
        let mut cd_end = eocd_at;
        let mut zip64 = false;

        // A ZIP64 end record, found through its locator right before the classic end record.
        let locator = if eocd_at >= EOCD64_LOCATOR_LEN {
            let bytes = read_exact_at(
                &file,
                len,
                eocd_at - EOCD64_LOCATOR_LEN,
                EOCD64_LOCATOR_LEN as usize,
                "the ZIP64 locator",
            )?;
            (u32_at(&bytes, 0) == EOCD64_LOCATOR_SIG).then_some(bytes)
        } else {
            None
        };
        let needs_zip64 = count == u64::from(U16_SENTINEL)
            || count_on_disk == u64::from(U16_SENTINEL)
            || cd_size == u64::from(U32_SENTINEL)
            || cd_offset == u64::from(U32_SENTINEL);
        match locator {
            Some(locator) => {
                zip64 = true;
                let record_at = u64_at(&locator, 8);
                let locator_at = eocd_at - EOCD64_LOCATOR_LEN;
                let record = read_exact_at(&file, len, record_at, 56, "the ZIP64 end record")?;
                if u32_at(&record, 0) != EOCD64_SIG {
                    return Err(ArchiveError::Corrupt {
                        detail: format!(
                            "the ZIP64 locator points at offset {record_at}, where there is no \
                             ZIP64 end-of-central-directory record"
                        ),
                    });
                }
                let record_len = u64_at(&record, 4);
                if record_at
                    .checked_add(12)
                    .and_then(|v| v.checked_add(record_len))
                    != Some(locator_at)
                {
                    problems.push(Problem::zip(
                        None,
                        format!(
                            "the ZIP64 end record at offset {record_at} says it is {} bytes long \
                             but the locator follows at offset {locator_at}",
                            record_len + 12
                        ),
                    ));
                }
                let values = [
                    (
                        "entry count on this disk",
                        &mut count_on_disk,
                        u64_at(&record, 24),
                        u64::from(U16_SENTINEL),
                    ),
                    (
                        "entry count",
                        &mut count,
                        u64_at(&record, 32),
                        u64::from(U16_SENTINEL),
                    ),
                    (
                        "central directory size",
                        &mut cd_size,
                        u64_at(&record, 40),
                        u64::from(U32_SENTINEL),
                    ),
                    (
                        "central directory offset",
                        &mut cd_offset,
                        u64_at(&record, 48),
                        u64::from(U32_SENTINEL),
                    ),
                ];
                for (what, classic, wide, sentinel) in values {
                    if *classic != sentinel && *classic != wide {
                        problems.push(Problem::zip(
                            None,
                            format!("the end records disagree on the {what}: {classic} (classic) vs {wide} (ZIP64)"),
                        ));
                    }
                    *classic = wide;
                }
                if u32_at(&record, 16) != 0
                    || u32_at(&record, 20) != 0
                    || u32_at(&locator, 4) != 0
                    || u32_at(&locator, 16) > 1
                {
                    return Err(ArchiveError::Corrupt {
                        detail: "multi-disk (split) archives are not wheels".into(),
                    });
                }
                cd_end = record_at;
            }
            None if needs_zip64 => {
                return Err(ArchiveError::Corrupt {
                    detail: "the end-of-central-directory record holds 0xFFFF/0xFFFFFFFF \
                             sentinels but there is no ZIP64 end record"
                        .into(),
                });
            }
            None => {}
        }
        if disk != 0 || cd_disk != 0 || count_on_disk != count {
            return Err(ArchiveError::Corrupt {
                detail: "multi-disk (split) archives are not wheels".into(),
            });
        }
        if cd_offset.checked_add(cd_size).is_none_or(|end| end > len) {
            return Err(ArchiveError::Truncated {
                len,
                detail: format!(
                    "the central directory (offset {cd_offset}, {cd_size} bytes) lies past the end of the file"
                ),
            });
        }
        if cd_offset + cd_size != cd_end {
            return Err(ArchiveError::Corrupt {
                detail: format!(
                    "the central directory ends at offset {} but the end record starts at {cd_end} \
                     (data prepended to or spliced into the archive?)",
                    cd_offset + cd_size
                ),
            });
        }
        let Ok(cd_len) = usize::try_from(cd_size) else {
            return Err(ArchiveError::Corrupt {
                detail: format!("central directory of {cd_size} bytes"),
            });
        };
        let directory = read_exact_at(&file, len, cd_offset, cd_len, "the central directory")?;
        let entries = parse_central_directory(&directory, count, cd_offset, problems)?;
        Ok(Archive {
            file,
            len,
            entries,
            central_directory_offset: cd_offset,
            zip64,
        })
    }

    /// Reads and checks an entry's local header against the central directory; returns where
    /// the data lies. Mismatches that leave the data readable are pushed to `problems`.
    pub fn local_header(
        &self,
        entry: &Entry,
        problems: &mut Vec<Problem>,
    ) -> Result<DataSpan, String> {
        let header = read_exact_at(
            &self.file,
            self.len,
            entry.header_offset,
            LOCAL_LEN,
            "the local header",
        )
        .map_err(|e| e.to_string())?;
        if u32_at(&header, 0) != LOCAL_SIG {
            return Err(format!("no local header at offset {}", entry.header_offset));
        }
        let flags = u16_at(&header, 6);
        let method = u16_at(&header, 8);
        let crc = u32_at(&header, 14);
        let compressed32 = u32_at(&header, 18);
        let size32 = u32_at(&header, 22);
        let name_len = usize::from(u16_at(&header, 26));
        let extra_len = usize::from(u16_at(&header, 28));
        let variable = read_exact_at(
            &self.file,
            self.len,
            entry.header_offset + LOCAL_LEN as u64,
            name_len + extra_len,
            "the local header's name and extra field",
        )
        .map_err(|e| e.to_string())?;
        let (name, extra) = variable.split_at(name_len);
        let mut mismatch = |what: String| problems.push(Problem::zip(Some(&entry.name), what));
        if name != entry.raw_name.as_slice() {
            mismatch(format!(
                "the local header names it '{}' but the central directory says '{}'",
                String::from_utf8_lossy(name),
                entry.name
            ));
        }
        if method != entry.method {
            mismatch(format!(
                "compression method {method} in the local header, {} in the central directory",
                entry.method
            ));
        }
        if (flags ^ entry.flags) & (FLAG_ENCRYPTED | FLAG_DESCRIPTOR) != 0 {
            mismatch(format!(
                "flags 0x{flags:04x} in the local header, 0x{:04x} in the central directory",
                entry.flags
            ));
        }
        let mut local_zip64 = false;
        let mut size = u64::from(size32);
        let mut compressed = u64::from(compressed32);
        match extra_fields(extra) {
            Err(detail) => mismatch(format!("local header: {detail}")),
            Ok(fields) => {
                for (id, data) in fields {
                    if id != ZIP64_EXTRA {
                        continue;
                    }
                    local_zip64 = true;
                    // In a local header the ZIP64 field carries both sizes or nothing.
                    let sentinel = size32 == U32_SENTINEL || compressed32 == U32_SENTINEL;
                    match parse_zip64(data, [sentinel, sentinel, false, false], "local header") {
                        Ok(values) => {
                            size = values.size.unwrap_or(size);
                            compressed = values.compressed_size.unwrap_or(compressed);
                        }
                        Err(detail) => mismatch(detail),
                    }
                }
            }
        }
        if !local_zip64 && (size32 == U32_SENTINEL || compressed32 == U32_SENTINEL) {
            mismatch("the local header holds 0xFFFFFFFF sizes but no ZIP64 extra field".into());
        }
        let deferred = flags & FLAG_DESCRIPTOR != 0;
        // With a data descriptor the local values may be zero; otherwise they must agree.
        let agrees = |local: u64, central: u64| local == central || (deferred && local == 0);
        if !agrees(u64::from(crc), u64::from(entry.crc32)) {
            mismatch(format!(
                "CRC-32 {crc:08x} in the local header, {:08x} in the central directory",
                entry.crc32
            ));
        }
        if !agrees(size, entry.size) || !agrees(compressed, entry.compressed_size) {
            mismatch(format!(
                "sizes {compressed}/{size} (compressed/uncompressed) in the local header, {}/{} \
                 in the central directory",
                entry.compressed_size, entry.size
            ));
        }
        let start = entry.header_offset + (LOCAL_LEN + name_len + extra_len) as u64;
        let data_end = start
            .checked_add(entry.compressed_size)
            .filter(|end| *end <= self.central_directory_offset)
            .ok_or_else(|| {
                format!(
                    "its data ({} bytes at offset {start}) runs past the start of the central \
                     directory at {}",
                    entry.compressed_size, self.central_directory_offset
                )
            })?;
        let end = if deferred {
            data_end + self.descriptor_len(data_end, local_zip64)
        } else {
            data_end
        };
        Ok(DataSpan { start, end })
    }

    /// Length of the data descriptor at `at` (optional signature, CRC, two sizes).
    fn descriptor_len(&self, at: u64, zip64: bool) -> u64 {
        let mut sig = [0u8; 4];
        let signed = self.file.read_exact_at(&mut sig, at).is_ok()
            && u32::from_le_bytes(sig) == DESCRIPTOR_SIG;
        let sizes = if zip64 { 16 } else { 8 };
        if signed { 8 + sizes } else { 4 + sizes }
    }

    /// A reader of the entry's uncompressed data; it fails on a size or CRC mismatch.
    pub fn reader<'a>(&'a self, entry: &Entry, span: DataSpan) -> Result<EntryReader<'a>, String> {
        let raw = RangeReader {
            file: &self.file,
            pos: span.start,
            end: span.start + entry.compressed_size,
        };
        let inner = match entry.method {
            METHOD_STORED => Decoder::Stored(raw),
            METHOD_DEFLATE => Decoder::Deflate(Box::new(
                flate2::read::DeflateDecoder::new_with_buf(raw, vec![0; 256 * 1024]),
            )),
            other => return Err(format!("compression method {other} is not supported")),
        };
        Ok(EntryReader {
            inner,
            declared: entry.size,
            crc_expected: entry.crc32,
            read: 0,
            crc: flate2::Crc::new(),
        })
    }

    /// Reads a whole (small) entry into memory, refusing entries above `limit` bytes.
    pub fn read_small(
        &self,
        entry: &Entry,
        limit: u64,
        problems: &mut Vec<Problem>,
    ) -> Result<Vec<u8>, String> {
        if entry.size > limit {
            return Err(format!(
                "it is {} bytes; more than the {limit} bytes allowed for it",
                entry.size
            ));
        }
        let span = self.local_header(entry, problems)?;
        let mut reader = self.reader(entry, span)?;
        let mut out = Vec::with_capacity(entry.size as usize);
        reader.read_to_end(&mut out).map_err(|e| e.to_string())?;
        Ok(out)
    }

    /// The file itself, for copying an entry's compressed bytes as they are.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The whole file, read sequentially (for the wheel's own SHA-256).
    pub fn whole_file(&self) -> RangeReader<'_> {
        RangeReader {
            file: &self.file,
            pos: 0,
            end: self.len,
        }
    }
}

/// Scans backwards for the end-of-central-directory signature whose comment length reaches
/// the end of the file exactly; falls back to the last signature found.
fn find_eocd(tail: &[u8]) -> Option<usize> {
    if tail.len() < EOCD_LEN as usize {
        return None;
    }
    let mut fallback = None;
    for at in (0..=tail.len() - EOCD_LEN as usize).rev() {
        if u32_at(tail, at) == EOCD_SIG {
            let comment = usize::from(u16_at(tail, at + 20));
            if at + EOCD_LEN as usize + comment == tail.len() {
                return Some(at);
            }
            fallback.get_or_insert(at);
        }
    }
    fallback
}

fn parse_central_directory(
    directory: &[u8],
    count: u64,
    cd_offset: u64,
    problems: &mut Vec<Problem>,
) -> Result<Vec<Entry>, ArchiveError> {
    let corrupt = |detail: String| ArchiveError::Corrupt { detail };
    let capacity = usize::try_from(count)
        .unwrap_or(0)
        .min(directory.len() / CENTRAL_LEN);
    let mut entries = Vec::with_capacity(capacity);
    let mut at = 0usize;
    while at < directory.len() {
        if directory.len() - at < CENTRAL_LEN || u32_at(directory, at) != CENTRAL_SIG {
            return Err(corrupt(format!(
                "no central directory header at offset {} (entry {})",
                cd_offset + at as u64,
                entries.len() + 1
            )));
        }
        let h = &directory[at..];
        let version_made_by = u16_at(h, 4);
        let flags = u16_at(h, 8);
        let method = u16_at(h, 10);
        let dos_time = u16_at(h, 12);
        let dos_date = u16_at(h, 14);
        let crc32 = u32_at(h, 16);
        let compressed32 = u32_at(h, 20);
        let size32 = u32_at(h, 24);
        let name_len = usize::from(u16_at(h, 28));
        let extra_len = usize::from(u16_at(h, 30));
        let comment_len = usize::from(u16_at(h, 32));
        let disk16 = u16_at(h, 34);
        let external_attributes = u32_at(h, 38);
        let offset32 = u32_at(h, 42);
        let total = CENTRAL_LEN + name_len + extra_len + comment_len;
        if h.len() < total {
            return Err(corrupt(format!(
                "central directory entry {} runs past the end of the directory",
                entries.len() + 1
            )));
        }
        let raw_name = h[CENTRAL_LEN..CENTRAL_LEN + name_len].to_vec();
        let extra = &h[CENTRAL_LEN + name_len..CENTRAL_LEN + name_len + extra_len];
        let name = match decode_name(&raw_name, flags) {
            Ok(name) => name,
            Err(detail) => {
                let lossy = String::from_utf8_lossy(&raw_name).into_owned();
                problems.push(Problem::zip(Some(&lossy), detail));
                lossy
            }
        };
        let mut size = u64::from(size32);
        let mut compressed_size = u64::from(compressed32);
        let mut header_offset = u64::from(offset32);
        let want = [
            size32 == U32_SENTINEL,
            compressed32 == U32_SENTINEL,
            offset32 == U32_SENTINEL,
            disk16 == U16_SENTINEL,
        ];
        let mut found_zip64 = false;
        match extra_fields(extra) {
            Err(detail) => problems.push(Problem::zip(
                Some(&name),
                format!("central directory: {detail}"),
            )),
            Ok(fields) => {
                for (id, data) in fields {
                    match id {
                        ZIP64_EXTRA => {
                            found_zip64 = true;
                            match parse_zip64(data, want, "central directory") {
                                Ok(values) => {
                                    size = values.size.unwrap_or(size);
                                    compressed_size =
                                        values.compressed_size.unwrap_or(compressed_size);
                                    header_offset = values.header_offset.unwrap_or(header_offset);
                                }
                                Err(detail) => problems.push(Problem::zip(Some(&name), detail)),
                            }
                        }
                        UNICODE_PATH_EXTRA => problems.push(Problem::zip(
                            Some(&name),
                            "an Info-ZIP Unicode path field gives the entry a second name \
                             (installers may pick either)"
                                .into(),
                        )),
                        _ => {}
                    }
                }
            }
        }
        if want.iter().any(|w| *w) && !found_zip64 {
            return Err(corrupt(format!(
                "entry '{name}' holds 0xFFFFFFFF sentinels but no ZIP64 extra field"
            )));
        }
        entries.push(Entry {
            name,
            raw_name,
            method,
            flags,
            crc32,
            compressed_size,
            size,
            header_offset,
            external_attributes,
            version_made_by,
            dos_time,
            dos_date,
        });
        at += total;
    }
    if entries.len() as u64 != count {
        problems.push(Problem::zip(
            None,
            format!(
                "the end record counts {count} entries but the central directory holds {}",
                entries.len()
            ),
        ));
    }
    Ok(entries)
}

/// Sequential reads of a byte range of a file through `pread`.
pub struct RangeReader<'a> {
    file: &'a File,
    pos: u64,
    end: u64,
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.end.saturating_sub(self.pos);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file ends early",
            ));
        }
        self.pos += n as u64;
        Ok(n)
    }
}

enum Decoder<'a> {
    Stored(RangeReader<'a>),
    Deflate(Box<flate2::read::DeflateDecoder<RangeReader<'a>>>),
}

/// The uncompressed data of one entry. Reading past the declared size, ending before it, or a
/// CRC-32 mismatch is an `InvalidData` error naming the numbers.
pub struct EntryReader<'a> {
    inner: Decoder<'a>,
    declared: u64,
    crc_expected: u32,
    read: u64,
    crc: flate2::Crc,
}

impl Read for EntryReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // Ask for one byte more than declared so an overlong stream is noticed, never more:
        // a zip bomb cannot make us inflate beyond what the header promised.
        let left = self.declared.saturating_sub(self.read).saturating_add(1);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = match &mut self.inner {
            Decoder::Stored(r) => r.read(&mut buf[..want]),
            Decoder::Deflate(r) => r.read(&mut buf[..want]),
        }
        .map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the compressed data is corrupt: {e}"),
            )
        })?;
        self.read += n as u64;
        if self.read > self.declared {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "it inflates to more than the {} bytes its header declares",
                    self.declared
                ),
            ));
        }
        self.crc.update(&buf[..n]);
        if n == 0 {
            if self.read != self.declared {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "its data ends after {} bytes but its header declares {}",
                        self.read, self.declared
                    ),
                ));
            }
            if self.crc.sum() != self.crc_expected {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "CRC-32 of its data is {:08x} but its header says {:08x}",
                        self.crc.sum(),
                        self.crc_expected
                    ),
                ));
            }
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_of(entries: &[(&str, &[u8])], zip64: bool) -> Vec<u8> {
        let mut cursor = std::io::Cursor::new(Vec::new());
        {
            let mut writer = zip::ZipWriter::new(&mut cursor);
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated)
                .large_file(zip64);
            for (name, data) in entries {
                writer.start_file(*name, options).expect("start");
                writer.write_all(data).expect("write");
            }
            writer.finish().expect("finish");
        }
        cursor.into_inner()
    }

    fn open_bytes(bytes: &[u8]) -> (Result<Archive, ArchiveError>, Vec<Problem>) {
        let mut file = tempfile::tempfile().expect("tempfile");
        file.write_all(bytes).expect("write");
        let mut problems = Vec::new();
        (Archive::open(file, &mut problems), problems)
    }

    fn read_all(archive: &Archive, entry: &Entry) -> Result<Vec<u8>, String> {
        let mut problems = Vec::new();
        let span = archive.local_header(entry, &mut problems)?;
        assert!(problems.is_empty(), "{problems:?}");
        let mut out = Vec::new();
        archive
            .reader(entry, span)?
            .read_to_end(&mut out)
            .map_err(|e| e.to_string())?;
        Ok(out)
    }

    #[test]
    fn reads_entries_of_plain_and_zip64_archives() {
        let big = vec![7u8; 300_000];
        for zip64 in [false, true] {
            let bytes = zip_of(&[("a.txt", b"hello"), ("pkg/big.bin", &big)], zip64);
            let (archive, problems) = open_bytes(&bytes);
            let archive = archive.expect("opens");
            assert!(problems.is_empty(), "zip64={zip64}: {problems:?}");
            let names: Vec<&str> = archive.entries.iter().map(|e| e.name.as_str()).collect();
            assert_eq!(names, ["a.txt", "pkg/big.bin"]);
            assert_eq!(
                read_all(&archive, &archive.entries[0]).expect("a"),
                b"hello"
            );
            assert_eq!(read_all(&archive, &archive.entries[1]).expect("big"), big);
        }
    }

    #[test]
    fn a_truncated_archive_is_a_precise_error() {
        let bytes = zip_of(&[("a.txt", &[1u8; 5000])], false);
        let (result, _) = open_bytes(&bytes[..bytes.len() / 2]);
        let error = result.expect_err("truncated").to_string();
        assert!(error.contains("the archive is truncated"), "{error}");
        assert!(
            error.contains(&format!("the file is {} bytes", bytes.len() / 2)),
            "{error}"
        );

        let (result, _) = open_bytes(b"definitely not a zip file at all, just text");
        assert!(
            result
                .expect_err("not zip")
                .to_string()
                .starts_with("not a zip archive")
        );
    }

    #[test]
    fn corrupt_data_is_caught_by_the_crc() {
        let mut bytes = zip_of(&[("a.txt", b"hello hello hello")], false);
        // Stored? No: deflated. Flip a bit inside the compressed data (after the 30+5 byte
        // local header) and expect either an inflate error or a CRC mismatch.
        bytes[36] ^= 0x55;
        let (archive, _) = open_bytes(&bytes);
        let archive = archive.expect("directory intact");
        let error = read_all(&archive, &archive.entries[0]);
        let error = match error {
            Err(e) => e,
            Ok(data) => panic!("read corrupt data without error: {data:?}"),
        };
        assert!(
            error.contains("CRC-32") || error.contains("corrupt") || error.contains("declares"),
            "{error}"
        );
    }

    #[test]
    fn an_unrequested_zip64_value_in_a_local_header_is_reported() {
        // The pypa/wheel#692 defect: a local ZIP64 field of 8 bytes while the header's sizes
        // are ordinary 32-bit values.
        let name = b"a.txt";
        let data = b"hello";
        let crc = {
            let mut c = flate2::Crc::new();
            c.update(data);
            c.sum()
        };
        let mut out = Vec::new();
        let extra: Vec<u8> = [
            &1u16.to_le_bytes()[..],
            &8u16.to_le_bytes(),
            &1234u64.to_le_bytes(),
        ]
        .concat();
        out.extend_from_slice(&LOCAL_SIG.to_le_bytes());
        out.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&(extra.len() as u16).to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(&extra);
        out.extend_from_slice(data);
        let cd_offset = out.len();
        out.extend_from_slice(&CENTRAL_SIG.to_le_bytes());
        out.extend_from_slice(&[20, 3, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&[0; 12]);
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(name);
        let cd_size = out.len() - cd_offset;
        out.extend_from_slice(&EOCD_SIG.to_le_bytes());
        out.extend_from_slice(&[0, 0, 0, 0, 1, 0, 1, 0]);
        out.extend_from_slice(&(cd_size as u32).to_le_bytes());
        out.extend_from_slice(&(cd_offset as u32).to_le_bytes());
        out.extend_from_slice(&[0, 0]);

        let (archive, problems) = open_bytes(&out);
        let archive = archive.expect("opens");
        assert!(problems.is_empty(), "{problems:?}");
        let mut problems = Vec::new();
        let span = archive
            .local_header(&archive.entries[0], &mut problems)
            .expect("span");
        let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(text[0].contains("ZIP64 extra field in the local header is too long: it holds 8 bytes but the header's 0xFFFFFFFF sentinels call for 0"), "{}", text[0]);
        let mut content = Vec::new();
        archive
            .reader(&archive.entries[0], span)
            .expect("reader")
            .read_to_end(&mut content)
            .expect("read");
        assert_eq!(content, data);
    }

    #[test]
    fn the_entry_reader_never_inflates_past_the_declared_size() {
        let bytes = zip_of(&[("a.bin", &[0u8; 100_000])], false);
        let (archive, _) = open_bytes(&bytes);
        let archive = archive.expect("opens");
        let mut entry = archive.entries[0].clone();
        entry.size = 1000;
        let mut problems = Vec::new();
        let span = archive
            .local_header(&archive.entries[0], &mut problems)
            .expect("span");
        let mut sink = Vec::new();
        let error = archive
            .reader(&entry, span)
            .expect("reader")
            .read_to_end(&mut sink)
            .expect_err("bomb");
        assert!(
            error
                .to_string()
                .contains("more than the 1000 bytes its header declares"),
            "{error}"
        );
        assert!(sink.len() <= 1001);
    }
}
