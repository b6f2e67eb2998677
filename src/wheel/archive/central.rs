//! The end records and the central directory: the archive's table of contents, parsed by
//! the book (APPNOTE 4.3.12-4.3.16, 4.5.3), with every field a strict installer would refuse
//! reported.

use super::{
    ArchiveError, CENTRAL_LEN, CENTRAL_SIG, EOCD_LEN, EOCD_SIG, Entry, FLAG_UTF8, U16_SENTINEL,
    U32_SENTINEL, UNICODE_PATH_EXTRA, ZIP64_EXTRA, u16_at, u32_at, u64_at,
};
use crate::wheel::problem::Problem;

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

/// Scans backwards for the end-of-central-directory signature whose comment length reaches
/// the end of the file exactly; falls back to the last signature found.
pub(super) fn find_eocd(tail: &[u8]) -> Option<usize> {
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
                problems.push(Problem::zip(Some(&lossy), detail.to_string()));
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
                                Err(detail) => {
                                    problems.push(Problem::zip(Some(&name), detail.to_string()))
                                }
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
