//! Clang offload bundles: the container `hipcc` embeds in a library's `.hip_fatbin` section,
//! one bundle per translation unit (or per link with `-fgpu-rdc`), each aligned in the section.
//!
//! Uncompressed bundle: `__CLANG_OFFLOAD_BUNDLE__`, a u64 entry count, then per entry u64
//! offset, u64 size, u64 id length and the id (`hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+`);
//! offsets are relative to the bundle start. Compressed bundle (`--offload-compress`, which
//! PyTorch's ROCm build uses): `CCOB`, u16 version, u16 method (0 zlib, 1 zstd), then total
//! size (v2: u32, v3: u64; absent in v1), uncompressed size (u32 in v1/v2, u64 in v3), an
//! 8-byte hash, then the compressed uncompressed-bundle. Verification inflates only the head
//! of the compressed data (the entry table is all it needs); the kpack split reads every code
//! object ([`code_objects`]).

use std::io::Read;

pub const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
pub const COMPRESSED_MAGIC: &[u8] = b"CCOB";
/// The triple prefix of AMD GPU code objects in entry ids.
const AMDGCN_TRIPLE: &str = "amdgcn-amd-amdhsa-";
/// Sanity bounds so a corrupt header cannot make us allocate or loop absurdly.
const MAX_ENTRIES: u64 = 4096;
const MAX_ID_LEN: u64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    Zlib,
    Zstd,
}

/// One bundle found in a section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    /// Offset of the bundle in the section.
    pub offset: usize,
    /// `None` for plain bundles; the method and header version of compressed ones.
    pub compressed: Option<(Compression, u16)>,
    /// Entry ids (`hipv4-amdgcn-amd-amdhsa--gfx906`, `host-x86_64-unknown-linux`).
    pub ids: Vec<String>,
}

impl Bundle {
    /// The gfx processors this bundle has code for (`gfx90a` for `…--gfx90a:xnack+`).
    pub fn targets(&self) -> impl Iterator<Item = &str> {
        self.ids.iter().filter_map(|id| gfx_target(id))
    }
}

/// The processor of an AMD GPU entry id, without target features.
pub fn gfx_target(id: &str) -> Option<&str> {
    let at = id.find(AMDGCN_TRIPLE)?;
    let target_id = id[at + AMDGCN_TRIPLE.len()..].trim_start_matches('-');
    let processor = target_id.split(':').next().unwrap_or(target_id);
    (!processor.is_empty()).then_some(processor)
}

/// A section that cannot be fully read. Bundles parsed before the defect are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionScan {
    pub bundles: Vec<Bundle>,
    pub error: Option<String>,
}

/// Walks a `.hip_fatbin` section: bundle after bundle, skipping the zero padding between them.
pub fn scan_section(section: &[u8]) -> SectionScan {
    let mut bundles = Vec::new();
    let mut at = 0usize;
    loop {
        while at < section.len() && section[at] == 0 {
            at += 1;
        }
        if at >= section.len() {
            return SectionScan {
                bundles,
                error: None,
            };
        }
        let rest = &section[at..];
        let parsed = if rest.starts_with(BUNDLE_MAGIC) {
            parse_plain(rest).map(|(entries, len)| {
                (
                    Bundle {
                        offset: at,
                        compressed: None,
                        ids: entries.into_iter().map(|e| e.id).collect(),
                    },
                    Some(len),
                )
            })
        } else if rest.starts_with(COMPRESSED_MAGIC) {
            parse_compressed(rest).map(|(bundle, len)| {
                (
                    Bundle {
                        offset: at,
                        ..bundle
                    },
                    len,
                )
            })
        } else {
            Err(BundleError::Unrecognised(at))
        };
        match parsed {
            Ok((bundle, Some(len))) => {
                bundles.push(bundle);
                at = at.saturating_add(len.max(1));
            }
            // A v1 compressed bundle does not record its size: the rest cannot be walked.
            Ok((bundle, None)) => {
                bundles.push(bundle);
                return SectionScan {
                    bundles,
                    error: None,
                };
            }
            Err(detail) => {
                return SectionScan {
                    bundles,
                    error: Some(format!("bundle at offset 0x{at:x}: {detail}")),
                };
            }
        }
    }
}

/// Why an offload bundle cannot be read.
#[derive(Debug, thiserror::Error)]
enum BundleError {
    #[error(
        "unrecognised data at offset 0x{0:x} of the section (neither an offload bundle nor \
         zero padding)"
    )]
    Unrecognised(usize),
    #[error("the bundle does not start with __CLANG_OFFLOAD_BUNDLE__")]
    Magic,
    #[error("{0} entries is not a plausible bundle")]
    Entries(u64),
    #[error("entry {index} has an id of {len} bytes")]
    IdLength { index: u64, len: u64 },
    #[error("entry {0} has a non-UTF-8 id")]
    IdNotUtf8(u64),
    #[error("entry '{0}' has an overflowing offset/size")]
    Overflow(String),
    #[error("bundle length overflows")]
    LengthOverflow,
    #[error("its entries reach {len} bytes but only {remain} remain in the section")]
    EntriesPastEnd { len: usize, remain: usize },
    #[error("compression method {0} is unknown (0 zlib, 1 zstd)")]
    Method(u16),
    #[error("compressed bundle version {0} is unknown (1 to 3 are)")]
    Version(u16),
    #[error("bundle size overflows")]
    SizeOverflow,
    #[error("its header says {total} bytes but {remain} remain in the section")]
    SizePastEnd { total: usize, remain: usize },
    #[error("zstd frame: {0}")]
    Zstd(String),
    #[error("inside the {method:?}-compressed bundle: {error}")]
    Inside {
        method: Compression,
        error: Box<BundleError>,
    },
    #[error("cannot read {what}: {error}")]
    Read {
        what: &'static str,
        error: std::io::Error,
    },
}

/// One entry of a bundle's table: its id and where its code object is, from the bundle start.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TableEntry {
    id: String,
    offset: u64,
    size: u64,
}

/// Reads the entry table of a plain bundle from `reader`; returns the entries and the bundle's
/// length (the end of its last entry, at least the end of the table).
fn read_plain(reader: &mut impl Read) -> Result<(Vec<TableEntry>, u64), BundleError> {
    let mut magic = [0u8; 24];
    read_exact(reader, &mut magic, "the bundle magic")?;
    if magic != BUNDLE_MAGIC {
        return Err(BundleError::Magic);
    }
    let count = read_u64(reader, "the entry count")?;
    if count > MAX_ENTRIES {
        return Err(BundleError::Entries(count));
    }
    let mut table_end = 32u64;
    let mut end = 0u64;
    let mut ids = Vec::new();
    for index in 0..count {
        let offset = read_u64(reader, "an entry offset")?;
        let size = read_u64(reader, "an entry size")?;
        let id_len = read_u64(reader, "an entry id length")?;
        if id_len > MAX_ID_LEN {
            return Err(BundleError::IdLength { index, len: id_len });
        }
        let mut id = vec![0u8; id_len as usize];
        read_exact(reader, &mut id, "an entry id")?;
        let id = String::from_utf8(id).map_err(|_| BundleError::IdNotUtf8(index))?;
        table_end += 24 + id_len;
        end = end.max(
            offset
                .checked_add(size)
                .ok_or_else(|| BundleError::Overflow(id.clone()))?,
        );
        ids.push(TableEntry { id, offset, size });
    }
    Ok((ids, end.max(table_end)))
}

fn parse_plain(data: &[u8]) -> Result<(Vec<TableEntry>, usize), BundleError> {
    let mut reader = data;
    let (ids, len) = read_plain(&mut reader)?;
    let len = usize::try_from(len).map_err(|_| BundleError::LengthOverflow)?;
    if len > data.len() {
        return Err(BundleError::EntriesPastEnd {
            len,
            remain: data.len(),
        });
    }
    Ok((ids, len))
}

/// The header of a compressed bundle.
struct CompressedHeader {
    method: Compression,
    version: u16,
    /// Bytes before the compressed payload.
    header_len: usize,
    /// The bundle's length in the section (`None` for v1, which does not record it).
    total: Option<usize>,
    uncompressed: u64,
}

fn compressed_header(data: &[u8]) -> Result<CompressedHeader, BundleError> {
    let mut header = data;
    let mut common = [0u8; 8];
    read_exact(&mut header, &mut common, "the compressed bundle header")?;
    let version = u16::from_le_bytes([common[4], common[5]]);
    let method = match u16::from_le_bytes([common[6], common[7]]) {
        0 => Compression::Zlib,
        1 => Compression::Zstd,
        other => {
            return Err(BundleError::Method(other));
        }
    };
    let total = match version {
        1 => None,
        2 => Some(u64::from(read_u32(&mut header, "the total size")?)),
        3 => Some(read_u64(&mut header, "the total size")?),
        other => {
            return Err(BundleError::Version(other));
        }
    };
    let uncompressed = if version == 3 {
        read_u64(&mut header, "the uncompressed size")?
    } else {
        u64::from(read_u32(&mut header, "the uncompressed size")?)
    };
    let mut hash = [0u8; 8];
    read_exact(&mut header, &mut hash, "the hash")?;
    let header_len = data.len() - header.len();
    let total = match total {
        Some(total) => {
            let total = usize::try_from(total).map_err(|_| BundleError::SizeOverflow)?;
            if total > data.len() || total < header_len {
                return Err(BundleError::SizePastEnd {
                    total,
                    remain: data.len(),
                });
            }
            Some(total)
        }
        None => None,
    };
    Ok(CompressedHeader {
        method,
        version,
        header_len,
        total,
        uncompressed,
    })
}

/// A reader of a compressed bundle's payload, inflating as it is read.
fn inflater<'a>(method: Compression, payload: &'a [u8]) -> Result<Box<dyn Read + 'a>, BundleError> {
    Ok(match method {
        Compression::Zlib => Box::new(flate2::read::ZlibDecoder::new(payload)),
        Compression::Zstd => Box::new(
            ruzstd::decoding::StreamingDecoder::new(payload)
                .map_err(|e| BundleError::Zstd(e.to_string()))?,
        ),
    })
}

/// Parses a compressed bundle header and the entry table inside; returns the bundle and its
/// length in the section (`None` for v1, which does not record it).
fn parse_compressed(data: &[u8]) -> Result<(Bundle, Option<usize>), BundleError> {
    let header = compressed_header(data)?;
    let payload = &data[header.header_len..header.total.unwrap_or(data.len())];
    let (entries, _) =
        read_plain(&mut inflater(header.method, payload)?).map_err(|e| BundleError::Inside {
            method: header.method,
            error: Box::new(e),
        })?;
    Ok((
        Bundle {
            offset: 0,
            compressed: Some((header.method, header.version)),
            ids: entries.into_iter().map(|e| e.id).collect(),
        },
        header.total,
    ))
}

/// One device code object of a `.hip_fatbin` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeObject {
    /// The entry id (`hipv4-amdgcn-amd-amdhsa--gfx906`).
    pub id: String,
    /// The target id after the triple (`gfx906`, `gfx90a:xnack+`), as rocm-kpack names it.
    pub arch: String,
    /// Which bundle of the section (translation unit) it came from.
    pub bundle: usize,
    pub data: Vec<u8>,
}

/// A section's uncompressed bundles can be several (one per translation unit with
/// `-fgpu-rdc`, also inside one compressed bundle). Inflated payloads are bounded by what
/// their header says.
const MAX_INFLATED: u64 = 8 << 30;

/// Every device code object of a `.hip_fatbin` section, in section order: the bundles one
/// after the other (plain or compressed, zero padding between them), host entries left out.
/// rocm-kpack's `ccob_parser.extract_code_objects_from_fatbin` reads the same objects; this
/// reader bounds each plain bundle by its table rather than by the next magic string, and
/// refuses what the reference skips over (bytes that are neither a bundle nor padding).
pub fn code_objects(section: &[u8]) -> Result<Vec<CodeObject>, String> {
    let mut objects = Vec::new();
    let mut bundle = 0usize;
    let mut at = 0usize;
    loop {
        while at < section.len() && section[at] == 0 {
            at += 1;
        }
        if at >= section.len() {
            return Ok(objects);
        }
        let rest = &section[at..];
        let fail = |e: BundleError| format!("bundle at offset 0x{at:x}: {e}");
        let len = if rest.starts_with(BUNDLE_MAGIC) {
            plain_objects(rest, &mut bundle, &mut objects).map_err(fail)?
        } else if rest.starts_with(COMPRESSED_MAGIC) {
            let header = compressed_header(rest).map_err(fail)?;
            let end = header.total.unwrap_or(rest.len());
            if header.uncompressed > MAX_INFLATED {
                return Err(fail(BundleError::SizeOverflow));
            }
            let mut inflated = Vec::with_capacity(header.uncompressed as usize);
            inflater(header.method, &rest[header.header_len..end])
                .map_err(fail)?
                .take(header.uncompressed)
                .read_to_end(&mut inflated)
                .map_err(|error| {
                    fail(BundleError::Read {
                        what: "the compressed payload",
                        error,
                    })
                })?;
            let mut inner = 0usize;
            while inner < inflated.len() {
                if inflated[inner] == 0 {
                    inner += 1;
                    continue;
                }
                inner +=
                    plain_objects(&inflated[inner..], &mut bundle, &mut objects).map_err(|e| {
                        fail(BundleError::Inside {
                            method: header.method,
                            error: Box::new(e),
                        })
                    })?;
            }
            end
        } else {
            return Err(fail(BundleError::Unrecognised(at)));
        };
        at = at.saturating_add(len.max(1));
    }
}

/// Reads one plain bundle at the start of `data` into `objects`; returns its length.
fn plain_objects(
    data: &[u8],
    bundle: &mut usize,
    objects: &mut Vec<CodeObject>,
) -> Result<usize, BundleError> {
    let (entries, len) = parse_plain(data)?;
    for entry in entries {
        if entry.id.starts_with("host") {
            continue;
        }
        // rocm-kpack's `extract_architecture_from_target`: everything after the last "--".
        let Some((_, arch)) = entry.id.rsplit_once("--") else {
            continue;
        };
        if arch.is_empty() {
            continue;
        }
        // parse_plain checked every entry against the bundle's length.
        let (start, size) = (entry.offset as usize, entry.size as usize);
        objects.push(CodeObject {
            arch: arch.to_string(),
            id: entry.id.clone(),
            bundle: *bundle,
            data: data[start..start + size].to_vec(),
        });
    }
    *bundle += 1;
    Ok(len)
}

fn read_exact(
    reader: &mut impl Read,
    buf: &mut [u8],
    what: &'static str,
) -> Result<(), BundleError> {
    reader
        .read_exact(buf)
        .map_err(|error| BundleError::Read { what, error })
}

fn read_u64(reader: &mut impl Read, what: &'static str) -> Result<u64, BundleError> {
    let mut buf = [0u8; 8];
    read_exact(reader, &mut buf, what)?;
    Ok(u64::from_le_bytes(buf))
}

fn read_u32(reader: &mut impl Read, what: &'static str) -> Result<u32, BundleError> {
    let mut buf = [0u8; 4];
    read_exact(reader, &mut buf, what)?;
    Ok(u32::from_le_bytes(buf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Builds a plain bundle the way clang-offload-bundler lays it out: the table, then each
    /// code object at a 4096-aligned offset.
    pub(crate) fn plain_bundle(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let table_len: usize = 32 + entries.iter().map(|(id, _)| 24 + id.len()).sum::<usize>();
        let mut offset = table_len.div_ceil(4096) * 4096;
        let mut table = BUNDLE_MAGIC.to_vec();
        table.extend_from_slice(&(entries.len() as u64).to_le_bytes());
        let mut body = Vec::new();
        for (id, code) in entries {
            table.extend_from_slice(&(offset as u64).to_le_bytes());
            table.extend_from_slice(&(code.len() as u64).to_le_bytes());
            table.extend_from_slice(&(id.len() as u64).to_le_bytes());
            table.extend_from_slice(id.as_bytes());
            body.push((offset, *code));
            offset = (offset + code.len()).div_ceil(4096) * 4096;
        }
        let end = body
            .last()
            .map_or(table.len(), |(at, code)| at + code.len());
        let mut out = vec![0u8; end];
        out[..table.len()].copy_from_slice(&table);
        for (at, code) in body {
            out[at..at + code.len()].copy_from_slice(code);
        }
        out
    }

    fn compressed_bundle(inner: &[u8], method: Compression, version: u16) -> Vec<u8> {
        let payload = match method {
            Compression::Zlib => {
                let mut encoder =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                encoder.write_all(inner).expect("compress");
                encoder.finish().expect("finish")
            }
            Compression::Zstd => ruzstd::encoding::compress_to_vec(
                inner,
                ruzstd::encoding::CompressionLevel::Fastest,
            ),
        };
        let method_code: u16 = if method == Compression::Zlib { 0 } else { 1 };
        let mut out = COMPRESSED_MAGIC.to_vec();
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&method_code.to_le_bytes());
        let header_len = match version {
            1 => 20,
            2 => 24,
            _ => 32,
        };
        let total = header_len + payload.len();
        match version {
            1 => out.extend_from_slice(&(inner.len() as u32).to_le_bytes()),
            2 => {
                out.extend_from_slice(&(total as u32).to_le_bytes());
                out.extend_from_slice(&(inner.len() as u32).to_le_bytes());
            }
            _ => {
                out.extend_from_slice(&(total as u64).to_le_bytes());
                out.extend_from_slice(&(inner.len() as u64).to_le_bytes());
            }
        }
        out.extend_from_slice(&0x1234_5678_9abc_def0u64.to_le_bytes());
        out.extend_from_slice(&payload);
        out
    }

    fn targets(scan: &SectionScan) -> Vec<Vec<&str>> {
        scan.bundles.iter().map(|b| b.targets().collect()).collect()
    }

    #[test]
    fn extracts_processors_from_entry_ids() {
        assert_eq!(
            gfx_target("hipv4-amdgcn-amd-amdhsa--gfx906"),
            Some("gfx906")
        );
        assert_eq!(
            gfx_target("openmp-amdgcn-amd-amdhsa--gfx1100"),
            Some("gfx1100")
        );
        assert_eq!(
            gfx_target("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
            Some("gfx90a")
        );
        assert_eq!(gfx_target("host-x86_64-unknown-linux"), None);
    }

    #[test]
    fn walks_several_aligned_bundles() {
        let one = plain_bundle(&[
            ("host-x86_64-unknown-linux", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", &[1u8; 300]),
            ("hipv4-amdgcn-amd-amdhsa--gfx906", &[2u8; 200]),
        ]);
        let two = plain_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx906", &[3u8; 100])]);
        let mut section = one.clone();
        section.resize(section.len().div_ceil(4096) * 4096, 0);
        let second_at = section.len();
        section.extend_from_slice(&two);
        section.push(0);
        let scan = scan_section(&section);
        assert_eq!(scan.error, None);
        assert_eq!(
            targets(&scan),
            vec![vec!["gfx1030", "gfx906"], vec!["gfx906"]]
        );
        assert_eq!(scan.bundles[1].offset, second_at);
    }

    #[test]
    fn reads_compressed_bundles() {
        let inner = plain_bundle(&[
            ("host-x86_64-unknown-linux", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx942", &[9u8; 5000]),
        ]);
        for (method, version) in [
            (Compression::Zlib, 2),
            (Compression::Zstd, 3),
            (Compression::Zstd, 2),
        ] {
            let mut section = compressed_bundle(&inner, method, version);
            section.resize(section.len().div_ceil(16) * 16, 0);
            section.extend_from_slice(&compressed_bundle(&inner, method, version));
            let scan = scan_section(&section);
            assert_eq!(scan.error, None, "{method:?} v{version}");
            assert_eq!(targets(&scan), vec![vec!["gfx942"], vec!["gfx942"]]);
            assert_eq!(scan.bundles[0].compressed, Some((method, version)));
        }
        // Version 1 has no total size: the first bundle is read, the walk stops there.
        let scan = scan_section(&compressed_bundle(&inner, Compression::Zlib, 1));
        assert_eq!(scan.error, None);
        assert_eq!(targets(&scan), vec![vec!["gfx942"]]);
    }

    #[test]
    fn reports_malformed_sections_with_offsets() {
        let good = plain_bundle(&[("hipv4-amdgcn-amd-amdhsa--gfx906", &[1u8; 10])]);
        let mut section = good.clone();
        section.extend_from_slice(b"\0\0garbage");
        let scan = scan_section(&section);
        assert_eq!(scan.bundles.len(), 1);
        let error = scan.error.expect("garbage");
        assert!(
            error.contains(&format!("offset 0x{:x}", good.len() + 2)),
            "{error}"
        );

        let truncated = &good[..40];
        let scan = scan_section(truncated);
        assert!(
            scan.error
                .expect("truncated")
                .contains("cannot read an entry")
        );

        let mut bad_method = compressed_bundle(&good, Compression::Zlib, 3);
        bad_method[6] = 7;
        let scan = scan_section(&bad_method);
        assert!(
            scan.error
                .expect("method")
                .contains("compression method 7 is unknown")
        );

        let mut absurd = BUNDLE_MAGIC.to_vec();
        absurd.extend_from_slice(&u64::MAX.to_le_bytes());
        let scan = scan_section(&absurd);
        assert!(
            scan.error
                .expect("absurd")
                .contains("is not a plausible bundle")
        );
    }
}
