//! The end records and the central directory: the archive's table of contents, parsed by
//! the book (APPNOTE 4.3.12-4.3.16, 4.5.3), with every field a strict installer would refuse
//! reported.

use crate::platform::host::ReadAt;
use std::fs::File;

use super::{
    ArchiveError, CENTRAL_LEN, CENTRAL_SIG, Defect, EOCD_LEN, EOCD_SIG, EOCD64_LOCATOR_LEN,
    EOCD64_LOCATOR_SIG, EOCD64_SIG, Entry, FLAG_UTF8, LOCAL_SIG, MAX_COMMENT, U16_SENTINEL,
    U32_SENTINEL, UNICODE_PATH_EXTRA, ZIP64_EXTRA, read_exact_at, u16_at, u32_at, u64_at,
};

/// A header field that breaks the format; what it means depends on the header (a problem
/// of the entry, or an archive that cannot be read).
#[derive(Debug, thiserror::Error)]
pub(super) enum HeaderDefect {
    #[error("{0} stray bytes at the end of the extra field")]
    StrayExtraBytes(usize),
    #[error("extra field 0x{id:04x} claims {len} bytes but only {remain} remain")]
    ExtraOverrun { id: u16, len: usize, remain: usize },
    #[error(
        "the ZIP64 extra field in the {place} is {too}: it holds {len} bytes but the header's \
         0xFFFFFFFF sentinels call for {expected} (uv refuses such archives; pypa/wheel#692)"
    )]
    Zip64Length {
        place: &'static str,
        too: &'static str,
        len: usize,
        expected: usize,
    },
    #[error(
        "entry name '{0}' is not ASCII but the UTF-8 flag is not set (installers would \
         decode it differently)"
    )]
    NameNotAscii(String),
    #[error("entry name {0} is not valid UTF-8")]
    NameNotUtf8(String),
}

/// Where the end-of-central-directory record starts. A file without one is not a zip archive,
/// or a truncated one.
pub(super) fn locate_end_record(file: &File, len: u64) -> Result<u64, ArchiveError> {
    let tail_len = len.min(EOCD_LEN + MAX_COMMENT);
    let tail_start = len - tail_len;
    let tail = read_exact_at(
        file,
        len,
        tail_start,
        tail_len as usize,
        "the end of the archive",
    )?;
    if let Some(at) = find_eocd(&tail) {
        return Ok(tail_start + at as u64);
    }
    let mut head = [0u8; 4];
    let starts_like_zip = len >= 4
        && file.read_exact_at(&mut head, 0).is_ok()
        && u32::from_le_bytes(head) == LOCAL_SIG;
    Err(if starts_like_zip {
        ArchiveError::Truncated {
            len,
            detail: "it starts like a zip archive but has no end-of-central-directory record"
                .into(),
        }
    } else {
        ArchiveError::NotZip {
            detail: format!(
                "no end-of-central-directory record in the last {tail_len} bytes and no zip \
                 signature at the start"
            ),
        }
    })
}

/// What the end records say about the central directory.
pub(super) struct EndRecords {
    disk: u16,
    cd_disk: u16,
    count_on_disk: u64,
    pub count: u64,
    cd_size: u64,
    pub cd_offset: u64,
    /// Where the central directory must end: the (ZIP64) end record.
    cd_end: u64,
    pub zip64: bool,
}

impl EndRecords {
    /// The central directory's length, once its place is checked: on one disk, inside the
    /// file, right before the end record.
    pub(super) fn directory_len(&self, len: u64) -> Result<usize, ArchiveError> {
        let (cd_offset, cd_size) = (self.cd_offset, self.cd_size);
        if self.disk != 0 || self.cd_disk != 0 || self.count_on_disk != self.count {
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
        if cd_offset + cd_size != self.cd_end {
            return Err(ArchiveError::Corrupt {
                detail: format!(
                    "the central directory ends at offset {} but the end record starts at {} \
                     (data prepended to or spliced into the archive?)",
                    cd_offset + cd_size,
                    self.cd_end
                ),
            });
        }
        usize::try_from(cd_size).map_err(|_| ArchiveError::Corrupt {
            detail: format!("central directory of {cd_size} bytes"),
        })
    }
}

/// Reads the classic end record at `eocd_at` and, when a locator precedes it, the ZIP64 end
/// record, whose values replace the classic ones (a classic value that is neither the
/// sentinel nor the ZIP64 value is a problem).
pub(super) fn read_end_records(
    file: &File,
    len: u64,
    eocd_at: u64,
    defects: &mut Vec<Defect>,
) -> Result<EndRecords, ArchiveError> {
    let eocd = read_exact_at(file, len, eocd_at, EOCD_LEN as usize, "the end record")?;
    let comment_len = u64::from(u16_at(&eocd, 20));
    if eocd_at + EOCD_LEN + comment_len != len {
        defects.push(Defect::new(
            None,
            format!(
                "{} bytes of trailing data after the end-of-central-directory record",
                len - (eocd_at + EOCD_LEN + comment_len)
            ),
        ));
    }
    let mut end = EndRecords {
        disk: u16_at(&eocd, 4),
        cd_disk: u16_at(&eocd, 6),
        count_on_disk: u64::from(u16_at(&eocd, 8)),
        count: u64::from(u16_at(&eocd, 10)),
        cd_size: u64::from(u32_at(&eocd, 12)),
        cd_offset: u64::from(u32_at(&eocd, 16)),
        cd_end: eocd_at,
        zip64: false,
    };
    // A ZIP64 end record, found through its locator right before the classic end record.
    let locator = if eocd_at >= EOCD64_LOCATOR_LEN {
        let bytes = read_exact_at(
            file,
            len,
            eocd_at - EOCD64_LOCATOR_LEN,
            EOCD64_LOCATOR_LEN as usize,
            "the ZIP64 locator",
        )?;
        (u32_at(&bytes, 0) == EOCD64_LOCATOR_SIG).then_some(bytes)
    } else {
        None
    };
    let needs_zip64 = end.count == u64::from(U16_SENTINEL)
        || end.count_on_disk == u64::from(U16_SENTINEL)
        || end.cd_size == u64::from(U32_SENTINEL)
        || end.cd_offset == u64::from(U32_SENTINEL);
    match locator {
        Some(locator) => read_zip64_end(file, len, eocd_at, &locator, &mut end, defects)?,
        None if needs_zip64 => {
            return Err(ArchiveError::Corrupt {
                detail: "the end-of-central-directory record holds 0xFFFF/0xFFFFFFFF \
                         sentinels but there is no ZIP64 end record"
                    .into(),
            });
        }
        None => {}
    }
    Ok(end)
}

/// The ZIP64 end record the locator points at, merged into `end`.
fn read_zip64_end(
    file: &File,
    len: u64,
    eocd_at: u64,
    locator: &[u8],
    end: &mut EndRecords,
    defects: &mut Vec<Defect>,
) -> Result<(), ArchiveError> {
    end.zip64 = true;
    let record_at = u64_at(locator, 8);
    let locator_at = eocd_at - EOCD64_LOCATOR_LEN;
    let record = read_exact_at(file, len, record_at, 56, "the ZIP64 end record")?;
    if u32_at(&record, 0) != EOCD64_SIG {
        return Err(ArchiveError::Corrupt {
            detail: format!(
                "the ZIP64 locator points at offset {record_at}, where there is no ZIP64 \
                 end-of-central-directory record"
            ),
        });
    }
    let record_len = u64_at(&record, 4);
    if record_at
        .checked_add(12)
        .and_then(|v| v.checked_add(record_len))
        != Some(locator_at)
    {
        defects.push(Defect::new(
            None,
            format!(
                "the ZIP64 end record at offset {record_at} says it is {} bytes long but the \
                 locator follows at offset {locator_at}",
                record_len + 12
            ),
        ));
    }
    let values = [
        (
            "entry count on this disk",
            &mut end.count_on_disk,
            u64_at(&record, 24),
            u64::from(U16_SENTINEL),
        ),
        (
            "entry count",
            &mut end.count,
            u64_at(&record, 32),
            u64::from(U16_SENTINEL),
        ),
        (
            "central directory size",
            &mut end.cd_size,
            u64_at(&record, 40),
            u64::from(U32_SENTINEL),
        ),
        (
            "central directory offset",
            &mut end.cd_offset,
            u64_at(&record, 48),
            u64::from(U32_SENTINEL),
        ),
    ];
    for (what, classic, wide, sentinel) in values {
        if *classic != sentinel && *classic != wide {
            defects.push(Defect::new(
                None,
                format!(
                    "the end records disagree on the {what}: {classic} (classic) vs {wide} (ZIP64)"
                ),
            ));
        }
        *classic = wide;
    }
    if u32_at(&record, 16) != 0
        || u32_at(&record, 20) != 0
        || u32_at(locator, 4) != 0
        || u32_at(locator, 16) > 1
    {
        return Err(ArchiveError::Corrupt {
            detail: "multi-disk (split) archives are not wheels".into(),
        });
    }
    end.cd_end = record_at;
    Ok(())
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

pub(super) fn parse_central_directory(
    directory: &[u8],
    count: u64,
    cd_offset: u64,
    defects: &mut Vec<Defect>,
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
                defects.push(Defect::new(Some(&lossy), detail.to_string()));
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
            Err(detail) => defects.push(Defect::new(
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
                                Err(detail) => {
                                    defects.push(Defect::new(Some(&name), detail.to_string()))
                                }
                            }
                        }
                        UNICODE_PATH_EXTRA => defects.push(Defect::new(
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
        defects.push(Defect::new(
            None,
            format!(
                "the end record counts {count} entries but the central directory holds {}",
                entries.len()
            ),
        ));
    }
    Ok(entries)
}

/// The extra fields of a header: (id, data) pairs. A field running past the end is an error.
pub(super) fn extra_fields(extra: &[u8]) -> Result<Vec<(u16, &[u8])>, HeaderDefect> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < extra.len() {
        if at + 4 > extra.len() {
            return Err(HeaderDefect::StrayExtraBytes(extra.len() - at));
        }
        let id = u16_at(extra, at);
        let len = usize::from(u16_at(extra, at + 2));
        let start = at + 4;
        if start + len > extra.len() {
            return Err(HeaderDefect::ExtraOverrun {
                id,
                len,
                remain: extra.len() - start,
            });
        }
        out.push((id, &extra[start..start + len]));
        at = start + len;
    }
    Ok(out)
}

/// Values of a ZIP64 extended information field: present exactly for the header fields that
/// hold the sentinel, in the order the spec gives (APPNOTE 4.5.3).
pub(super) struct Zip64Values {
    pub size: Option<u64>,
    pub compressed_size: Option<u64>,
    pub header_offset: Option<u64>,
}

/// Parses a ZIP64 field strictly. `want` lists which values the header asked for (size,
/// compressed size, offset, disk); `place` is "local header" or "central directory".
pub(super) fn parse_zip64(
    data: &[u8],
    want: [bool; 4],
    place: &'static str,
) -> Result<Zip64Values, HeaderDefect> {
    let expected = want[..3].iter().filter(|w| **w).count() * 8 + if want[3] { 4 } else { 0 };
    if data.len() != expected {
        let too = if data.len() > expected {
            "too long"
        } else {
            "too short"
        };
        return Err(HeaderDefect::Zip64Length {
            place,
            too,
            len: data.len(),
            expected,
        });
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

fn decode_name(raw: &[u8], flags: u16) -> Result<String, HeaderDefect> {
    match std::str::from_utf8(raw) {
        Ok(name) if name.is_ascii() || flags & FLAG_UTF8 != 0 => Ok(name.to_string()),
        // Without the UTF-8 flag a non-ASCII name is CP437 to Python's zipfile and UTF-8 to
        // others: installers would create different files.
        Ok(name) => Err(HeaderDefect::NameNotAscii(name.to_string())),
        Err(_) => Err(HeaderDefect::NameNotUtf8(
            String::from_utf8_lossy(raw).into_owned(),
        )),
    }
}
