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
//!
//! The parts: [`central`] parses the end records and the central directory, [`local`] checks
//! each local header and opens an entry's data, [`data`] streams it (inflating, counting,
//! checking the CRC).

mod central;
mod data;
mod local;

use crate::platform::host::ReadAt;
use std::fs::File;
use std::io::{self, Read};

pub use data::{EntryReader, RangeReader};

use central::parse_central_directory;

pub(super) const EOCD_SIG: u32 = 0x0605_4b50;
pub(super) const EOCD64_SIG: u32 = 0x0606_4b50;
pub(super) const EOCD64_LOCATOR_SIG: u32 = 0x0706_4b50;
pub(super) const CENTRAL_SIG: u32 = 0x0201_4b50;
pub(super) const LOCAL_SIG: u32 = 0x0403_4b50;
pub(super) const DESCRIPTOR_SIG: u32 = 0x0807_4b50;
pub(super) const EOCD_LEN: u64 = 22;
pub(super) const EOCD64_LOCATOR_LEN: u64 = 20;
pub(super) const CENTRAL_LEN: usize = 46;
pub(super) const LOCAL_LEN: usize = 30;
pub(super) const MAX_COMMENT: u64 = 0xFFFF;
pub(super) const ZIP64_EXTRA: u16 = 0x0001;
pub(super) const UNICODE_PATH_EXTRA: u16 = 0x7075;
pub(super) const U32_SENTINEL: u32 = 0xFFFF_FFFF;
pub(super) const U16_SENTINEL: u16 = 0xFFFF;

/// General purpose flag bits.
pub(super) const FLAG_ENCRYPTED: u16 = 1;
pub(super) const FLAG_DESCRIPTOR: u16 = 1 << 3;
pub(super) const FLAG_UTF8: u16 = 1 << 11;

pub const METHOD_STORED: u16 = 0;
pub const METHOD_DEFLATE: u16 = 8;

/// A structural defect of the container that still leaves its entries readable (headers that
/// disagree, a ZIP64 field no sentinel asked for, a name that is not UTF-8): a strict installer
/// refuses such an archive, so the reader reports each one to its caller (verification makes
/// them its `zip` problems).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defect {
    /// The entry it concerns, or `None` for the archive as a whole.
    pub entry: Option<String>,
    pub detail: String,
}

impl Defect {
    pub(crate) fn new(entry: Option<&str>, detail: String) -> Defect {
        Defect {
            entry: entry.map(str::to_string),
            detail,
        }
    }
}

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

/// An entry whose data cannot be read (the rest of the archive may still be).
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    #[error("no local header at offset {0}")]
    NoLocalHeader(u64),
    #[error(
        "its data ({size} bytes at offset {start}) runs past the start of the central \
         directory at {central}"
    )]
    PastCentralDirectory { size: u64, start: u64, central: u64 },
    #[error("compression method {0} is not supported")]
    Method(u16),
    #[error("it is {size} bytes; more than the {limit} bytes allowed for it")]
    TooBig { size: u64, limit: u64 },
    #[error(transparent)]
    Data(io::Error),
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

pub(super) fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([bytes[at], bytes[at + 1]])
}

pub(super) fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

pub(super) fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(buf)
}

/// Reads exactly `len` bytes at `offset`, or says the archive ends too early.
pub(super) fn read_exact_at(
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

impl Archive {
    /// Parses the end records and the central directory. Structural defects that still leave
    /// the entries readable are pushed to `defects`; defects that make the archive unreadable
    /// are errors.
    pub fn open(file: File, defects: &mut Vec<Defect>) -> Result<Archive, ArchiveError> {
        let len = file.metadata()?.len();
        let eocd_at = central::locate_end_record(&file, len)?;
        let end = central::read_end_records(&file, len, eocd_at, defects)?;
        let cd_len = end.directory_len(len)?;
        let directory = read_exact_at(&file, len, end.cd_offset, cd_len, "the central directory")?;
        let entries = parse_central_directory(&directory, end.count, end.cd_offset, defects)?;
        Ok(Archive {
            file,
            len,
            entries,
            central_directory_offset: end.cd_offset,
            zip64: end.zip64,
        })
    }

    /// Reads a whole (small) entry into memory, refusing entries above `limit` bytes.
    pub fn read_small(
        &self,
        entry: &Entry,
        limit: u64,
        defects: &mut Vec<Defect>,
    ) -> Result<Vec<u8>, EntryError> {
        if entry.size > limit {
            return Err(EntryError::TooBig {
                size: entry.size,
                limit,
            });
        }
        let span = self.local_header(entry, defects)?;
        let mut reader = self.reader(entry, span)?;
        let mut out = Vec::with_capacity(entry.size as usize);
        reader.read_to_end(&mut out).map_err(EntryError::Data)?;
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

    fn open_bytes(bytes: &[u8]) -> (Result<Archive, ArchiveError>, Vec<Defect>) {
        let mut file = tempfile::tempfile().expect("tempfile");
        file.write_all(bytes).expect("write");
        let mut defects = Vec::new();
        (Archive::open(file, &mut defects), defects)
    }

    fn read_all(archive: &Archive, entry: &Entry) -> Result<Vec<u8>, EntryError> {
        let mut defects = Vec::new();
        let span = archive.local_header(entry, &mut defects)?;
        assert!(defects.is_empty(), "{defects:?}");
        let mut out = Vec::new();
        archive
            .reader(entry, span)?
            .read_to_end(&mut out)
            .map_err(EntryError::Data)?;
        Ok(out)
    }

    #[test]
    fn reads_entries_of_plain_and_zip64_archives() {
        let big = vec![7u8; 300_000];
        for zip64 in [false, true] {
            let bytes = zip_of(&[("a.txt", b"hello"), ("pkg/big.bin", &big)], zip64);
            let (archive, defects) = open_bytes(&bytes);
            let archive = archive.expect("opens");
            assert!(defects.is_empty(), "zip64={zip64}: {defects:?}");
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
            Err(e) => e.to_string(),
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

        let (archive, defects) = open_bytes(&out);
        let archive = archive.expect("opens");
        assert!(defects.is_empty(), "{defects:?}");
        let mut defects = Vec::new();
        let span = archive
            .local_header(&archive.entries[0], &mut defects)
            .expect("span");
        let text: Vec<&str> = defects.iter().map(|d| d.detail.as_str()).collect();
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
        let mut defects = Vec::new();
        let span = archive
            .local_header(&archive.entries[0], &mut defects)
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
