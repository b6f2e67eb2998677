//! Kernel packs (`.kpack`): the archive a device wheel carries, as rocm-kpack defines it
//! (docs/multi_arch_packaging_with_kpack.md, python/rocm_kpack/kpack.py and compression.py,
//! runtime/src/archive.cpp and toc_parser.cpp):
//!
//! ```text
//! 0x00  "KPAK"   u32 version (1)   u64 offset of the table of contents     (little-endian)
//! 0x10  zero padding to 64
//! 0x40  blob:  zstd-per-kernel: u32 count, then per code object u32 size + one zstd frame
//!              none:            the code objects back to back
//! toc   MessagePack map: format_version, group_name, gfx_arch_family, gfx_arches,
//!       toc {binary: {arch: {type: "hsaco", ordinal, original_size}}},
//!       compression_scheme, then zstd_offset + zstd_size, or blobs [{offset, size}]
//! ```
//!
//! The map is written in the reference's key order and integer forms, so a pack with the same
//! code objects in the same order has the same table bytes as the reference's.

use std::collections::BTreeMap;

use super::msgpack::{self, Value};
use super::zstd;

pub const MAGIC: &[u8; 4] = b"KPAK";
pub const FORMAT_VERSION: u32 = 1;
const HEADER_SIZE: usize = 16;
const BLOB_ALIGNMENT: usize = 64;
/// The runtime's own bounds (archive.cpp): a blob beyond 4 GiB or more than 1M kernels is
/// refused as a malformed file.
const MAX_BLOB: u64 = 4 << 30;
const MAX_KERNELS: u64 = 1 << 20;

/// How the code objects are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Compression {
    /// `none`: concatenated, each found by offset and size.
    None,
    /// `zstd-per-kernel`: one zstd frame each (the reference's default).
    Zstd,
}

impl Compression {
    pub fn scheme(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Zstd => "zstd-per-kernel",
        }
    }
}

/// One code object of a pack, as its table of contents lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TocEntry {
    /// The binary's key: its path under the overlay root and the code object's index in it
    /// (`lib/libtorch_hip.so#0`), what the runtime looks up as `kernel_name#co_index`.
    pub binary: String,
    /// The code object's target id (`gfx906`, `gfx90a:xnack+`).
    pub arch: String,
    pub kind: String,
    pub ordinal: u64,
    pub original_size: u64,
}

/// A pack being written: code objects are added in order; each gets the next ordinal.
pub struct PackWriter {
    group_name: String,
    arch_family: String,
    arches: Vec<String>,
    compression: Compression,
    entries: Vec<TocEntry>,
    blobs: Vec<Vec<u8>>,
}

/// Why a pack cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("'{binary}' has two code objects for {arch}")]
    Duplicate { binary: String, arch: String },
    #[error(transparent)]
    Zstd(#[from] zstd::ZstdError),
    #[error("not a kernel pack: {0}")]
    Format(String),
    #[error("table of contents: {0}")]
    Toc(String),
    #[error("code object '{binary}' for {arch}: {detail}")]
    Kernel {
        binary: String,
        arch: String,
        detail: String,
    },
}

impl PackWriter {
    pub fn new(group_name: &str, arch: &str, compression: Compression) -> PackWriter {
        PackWriter {
            group_name: group_name.to_string(),
            arch_family: arch.to_string(),
            arches: vec![arch.to_string()],
            compression,
            entries: Vec::new(),
            blobs: Vec::new(),
        }
    }

    /// Adds one code object (compressing it now); refuses a second one for the same binary
    /// key and target, as the reference does.
    pub fn add(&mut self, binary: &str, arch: &str, code: &[u8]) -> Result<(), PackError> {
        if self
            .entries
            .iter()
            .any(|e| e.binary == binary && e.arch == arch)
        {
            return Err(PackError::Duplicate {
                binary: binary.to_string(),
                arch: arch.to_string(),
            });
        }
        let blob = match self.compression {
            Compression::None => code.to_vec(),
            Compression::Zstd => zstd::compress(code)?,
        };
        self.entries.push(TocEntry {
            binary: binary.to_string(),
            arch: arch.to_string(),
            kind: "hsaco".to_string(),
            ordinal: self.entries.len() as u64,
            original_size: code.len() as u64,
        });
        self.blobs.push(blob);
        Ok(())
    }

    /// Code objects added so far.
    pub fn count(&self) -> usize {
        self.entries.len()
    }

    /// The archive's bytes.
    pub fn finish(self) -> Vec<u8> {
        let blob_start = HEADER_SIZE.div_ceil(BLOB_ALIGNMENT) * BLOB_ALIGNMENT;
        let mut out = Vec::with_capacity(
            blob_start + self.blobs.iter().map(|b| b.len() + 4).sum::<usize>() + 1024,
        );
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.resize(blob_start, 0);
        let mut metadata: Vec<(&str, Value)> =
            vec![("compression_scheme", Value::str(self.compression.scheme()))];
        match self.compression {
            Compression::Zstd => {
                out.extend_from_slice(&(self.blobs.len() as u32).to_le_bytes());
                for blob in &self.blobs {
                    out.extend_from_slice(&(blob.len() as u32).to_le_bytes());
                    out.extend_from_slice(blob);
                }
                metadata.push(("zstd_offset", Value::uint(blob_start as u64)));
                metadata.push(("zstd_size", Value::uint((out.len() - blob_start) as u64)));
            }
            Compression::None => {
                let mut table = Vec::with_capacity(self.blobs.len());
                for blob in &self.blobs {
                    table.push(Value::map([
                        ("offset", Value::uint(out.len() as u64)),
                        ("size", Value::uint(blob.len() as u64)),
                    ]));
                    out.extend_from_slice(blob);
                }
                metadata.push(("blobs", Value::Array(table)));
            }
        }
        let toc_offset = out.len() as u64;
        let mut toc = Value::map([
            ("format_version", Value::uint(u64::from(FORMAT_VERSION))),
            ("group_name", Value::str(&self.group_name)),
            ("gfx_arch_family", Value::str(&self.arch_family)),
            (
                "gfx_arches",
                Value::Array(self.arches.iter().map(|a| Value::str(a)).collect()),
            ),
            ("toc", binaries_map(&self.entries)),
        ]);
        if let Value::Map(entries) = &mut toc {
            entries.extend(metadata.into_iter().map(|(k, v)| (Value::str(k), v)));
        }
        out.extend_from_slice(&toc.encode());
        out[8..16].copy_from_slice(&toc_offset.to_le_bytes());
        out
    }
}

/// `{binary: {arch: entry}}`, binaries and their arches in the order first added.
fn binaries_map(entries: &[TocEntry]) -> Value {
    let mut binaries: Vec<(String, Vec<(Value, Value)>)> = Vec::new();
    for entry in entries {
        let value = Value::map([
            ("type", Value::str(&entry.kind)),
            ("ordinal", Value::uint(entry.ordinal)),
            ("original_size", Value::uint(entry.original_size)),
        ]);
        let arch = (Value::str(&entry.arch), value);
        match binaries.iter_mut().find(|(b, _)| *b == entry.binary) {
            Some((_, arches)) => arches.push(arch),
            None => binaries.push((entry.binary.clone(), vec![arch])),
        }
    }
    Value::Map(
        binaries
            .into_iter()
            .map(|(b, arches)| (Value::Str(b), Value::Map(arches)))
            .collect(),
    )
}

/// A pack read back: its table of contents, checked, and its code objects on demand.
#[derive(Debug)]
pub struct Pack<'a> {
    data: &'a [u8],
    pub group_name: String,
    pub arch_family: String,
    pub arches: Vec<String>,
    pub compression: Compression,
    /// In table order.
    pub entries: Vec<TocEntry>,
    /// Where each ordinal's bytes are in the file.
    blobs: Vec<(usize, usize)>,
    /// The table of contents as decoded, for comparing packs as values.
    pub toc: Value,
}

fn toc_error(detail: impl Into<String>) -> PackError {
    PackError::Toc(detail.into())
}

impl<'a> Pack<'a> {
    /// Reads the header and table of contents of `data`, checking every offset, size and
    /// ordinal against the file (a kernel pack is input from outside).
    pub fn parse(data: &'a [u8]) -> Result<Pack<'a>, PackError> {
        if data.len() < HEADER_SIZE || &data[..4] != MAGIC {
            return Err(PackError::Format("no KPAK header".into()));
        }
        let version = u32::from_le_bytes([data[4], data[5], data[6], data[7]]);
        if version != FORMAT_VERSION {
            return Err(PackError::Format(format!(
                "format version {version} (this reader knows {FORMAT_VERSION})"
            )));
        }
        let toc_offset = u64::from_le_bytes(data[8..16].try_into().unwrap_or([0; 8]));
        let toc_at = usize::try_from(toc_offset)
            .ok()
            .filter(|at| *at >= HEADER_SIZE && *at < data.len())
            .ok_or_else(|| {
                PackError::Format(format!(
                    "table of contents offset {toc_offset} is outside the {} byte file",
                    data.len()
                ))
            })?;
        let (toc, _) = msgpack::decode(&data[toc_at..]).map_err(|e| toc_error(e.to_string()))?;
        let text = |key: &str| -> Result<String, PackError> {
            toc.get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| toc_error(format!("no string '{key}'")))
        };
        if toc.get("format_version").and_then(Value::as_u64) != Some(u64::from(FORMAT_VERSION)) {
            return Err(toc_error("format_version is not 1"));
        }
        let group_name = text("group_name")?;
        let arch_family = text("gfx_arch_family")?;
        let arches = toc
            .get("gfx_arches")
            .and_then(Value::as_array)
            .ok_or_else(|| toc_error("no array 'gfx_arches'"))?
            .iter()
            .map(|a| a.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| toc_error("'gfx_arches' holds a non-string"))?;
        let scheme = toc
            .get("compression_scheme")
            .and_then(Value::as_str)
            .unwrap_or("none");
        let (compression, blobs) = match scheme {
            "zstd-per-kernel" => (Compression::Zstd, zstd_frames(data, &toc, toc_at)?),
            "none" => (Compression::None, plain_blobs(&toc, toc_at)?),
            other => return Err(toc_error(format!("unknown compression_scheme '{other}'"))),
        };
        let entries = toc_entries(&toc, blobs.len())?;
        Ok(Pack {
            data,
            group_name,
            arch_family,
            arches,
            compression,
            entries,
            blobs,
            toc,
        })
    }

    /// The code object of `entry`, decompressed and checked against its recorded size.
    pub fn code_object(&self, entry: &TocEntry) -> Result<Vec<u8>, PackError> {
        let fail = |detail: String| PackError::Kernel {
            binary: entry.binary.clone(),
            arch: entry.arch.clone(),
            detail,
        };
        let (at, len) = *self
            .blobs
            .get(entry.ordinal as usize)
            .ok_or_else(|| fail(format!("ordinal {} has no blob", entry.ordinal)))?;
        let blob = &self.data[at..at + len];
        match self.compression {
            Compression::Zstd => {
                zstd::decompress(blob, entry.original_size).map_err(|e| fail(e.to_string()))
            }
            Compression::None => {
                if blob.len() as u64 != entry.original_size {
                    return Err(fail(format!(
                        "{} bytes stored, {} recorded",
                        blob.len(),
                        entry.original_size
                    )));
                }
                Ok(blob.to_vec())
            }
        }
    }

    /// Every code object by (binary key, target), decompressed.
    pub fn code_objects(&self) -> Result<BTreeMap<(String, String), Vec<u8>>, PackError> {
        self.entries
            .iter()
            .map(|e| Ok(((e.binary.clone(), e.arch.clone()), self.code_object(e)?)))
            .collect()
    }
}

fn field_u64(value: &Value, key: &str) -> Result<u64, PackError> {
    value
        .get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| toc_error(format!("no unsigned '{key}'")))
}

/// The frame table of a `zstd-per-kernel` blob (archive.cpp's `build_zstd_frame_index`).
fn zstd_frames(data: &[u8], toc: &Value, toc_at: usize) -> Result<Vec<(usize, usize)>, PackError> {
    let offset = field_u64(toc, "zstd_offset")?;
    let size = field_u64(toc, "zstd_size")?;
    if size > MAX_BLOB
        || offset < HEADER_SIZE as u64
        || offset.saturating_add(size) > toc_at as u64
        || size < 4
    {
        return Err(toc_error(format!(
            "zstd blob [{offset}, +{size}) is not between the header and the table"
        )));
    }
    let (start, end) = (offset as usize, (offset + size) as usize);
    let count = u32::from_le_bytes(data[start..start + 4].try_into().unwrap_or([0; 4]));
    if u64::from(count) > MAX_KERNELS {
        return Err(toc_error(format!("{count} kernels is not plausible")));
    }
    let mut at = start + 4;
    let mut frames = Vec::with_capacity(count as usize);
    for ordinal in 0..count {
        let len = data
            .get(at..at + 4)
            .filter(|_| at + 4 <= end)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap_or([0; 4])) as usize)
            .ok_or_else(|| toc_error(format!("frame {ordinal}: its size is past the blob")))?;
        at += 4;
        if at + len > end {
            return Err(toc_error(format!(
                "frame {ordinal}: {len} bytes run past the blob"
            )));
        }
        frames.push((at, len));
        at += len;
    }
    Ok(frames)
}

/// The blob table of an uncompressed pack.
fn plain_blobs(toc: &Value, toc_at: usize) -> Result<Vec<(usize, usize)>, PackError> {
    let table = toc
        .get("blobs")
        .and_then(Value::as_array)
        .ok_or_else(|| toc_error("no array 'blobs'"))?;
    table
        .iter()
        .enumerate()
        .map(|(ordinal, blob)| {
            let offset = field_u64(blob, "offset")?;
            let size = field_u64(blob, "size")?;
            if offset < HEADER_SIZE as u64 || offset.saturating_add(size) > toc_at as u64 {
                return Err(toc_error(format!(
                    "blob {ordinal} [{offset}, +{size}) is outside the data"
                )));
            }
            Ok((offset as usize, size as usize))
        })
        .collect()
}

/// The `toc` map as entries, each ordinal checked against the blobs and used once.
fn toc_entries(toc: &Value, blobs: usize) -> Result<Vec<TocEntry>, PackError> {
    let binaries = toc
        .get("toc")
        .and_then(Value::as_map)
        .ok_or_else(|| toc_error("no map 'toc'"))?;
    let mut seen = vec![false; blobs];
    let mut entries = Vec::new();
    for (binary, arches) in binaries {
        let binary = binary
            .as_str()
            .ok_or_else(|| toc_error("a binary key is not a string"))?;
        let arches = arches
            .as_map()
            .ok_or_else(|| toc_error(format!("'{binary}' is not a map of targets")))?;
        for (arch, entry) in arches {
            let arch = arch
                .as_str()
                .ok_or_else(|| toc_error(format!("'{binary}': a target is not a string")))?;
            let ordinal = field_u64(entry, "ordinal")?;
            let slot = seen.get_mut(ordinal as usize).ok_or_else(|| {
                toc_error(format!(
                    "'{binary}' {arch}: ordinal {ordinal} but the blob holds {blobs}"
                ))
            })?;
            if std::mem::replace(slot, true) {
                return Err(toc_error(format!(
                    "'{binary}' {arch}: ordinal {ordinal} is used twice"
                )));
            }
            entries.push(TocEntry {
                binary: binary.to_string(),
                arch: arch.to_string(),
                kind: entry
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("hsaco")
                    .to_string(),
                ordinal,
                original_size: field_u64(entry, "original_size")?,
            });
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_reads_both_schemes() {
        for compression in [Compression::Zstd, Compression::None] {
            let mut writer = PackWriter::new("torch", "gfx906", compression);
            writer
                .add("lib/libtorch_hip.so#0", "gfx906", &[7u8; 5000])
                .expect("add");
            writer
                .add("lib/libtorch_hip.so#1", "gfx906", b"second")
                .expect("add");
            writer
                .add("lib/libc10_hip.so#0", "gfx906", b"third")
                .expect("add");
            assert!(matches!(
                writer.add("lib/libc10_hip.so#0", "gfx906", b"again"),
                Err(PackError::Duplicate { .. })
            ));
            let bytes = writer.finish();
            assert_eq!(&bytes[..4], MAGIC);
            assert!(bytes[16..64].iter().all(|b| *b == 0));
            let pack = Pack::parse(&bytes).expect("parses");
            assert_eq!(pack.group_name, "torch");
            assert_eq!(pack.arches, ["gfx906"]);
            assert_eq!(pack.compression, compression);
            let ordinals: Vec<u64> = pack.entries.iter().map(|e| e.ordinal).collect();
            assert_eq!(ordinals, [0, 1, 2]);
            let objects = pack.code_objects().expect("decompresses");
            assert_eq!(
                objects[&("lib/libtorch_hip.so#1".to_string(), "gfx906".to_string())],
                b"second"
            );
            // The table's keys in the reference's order.
            let keys: Vec<&str> = pack
                .toc
                .as_map()
                .expect("map")
                .iter()
                .filter_map(|(k, _)| k.as_str())
                .collect();
            let tail: &[&str] = match compression {
                Compression::Zstd => &["compression_scheme", "zstd_offset", "zstd_size"],
                Compression::None => &["compression_scheme", "blobs"],
            };
            let mut expected = vec![
                "format_version",
                "group_name",
                "gfx_arch_family",
                "gfx_arches",
                "toc",
            ];
            expected.extend_from_slice(tail);
            assert_eq!(keys, expected);
        }
    }

    #[test]
    fn refuses_damaged_packs() {
        let mut writer = PackWriter::new("torch", "gfx1030", Compression::Zstd);
        writer.add("lib/a.so#0", "gfx1030", b"code").expect("add");
        let good = writer.finish();
        assert!(matches!(Pack::parse(b"KPAX"), Err(PackError::Format(_))));
        let mut far = good.clone();
        far[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(Pack::parse(&far), Err(PackError::Format(_))));
        let mut lying = good.clone();
        // The frame count says two frames; the blob holds one.
        lying[64..68].copy_from_slice(&2u32.to_le_bytes());
        assert!(matches!(Pack::parse(&lying), Err(PackError::Toc(_))));
        let mut corrupt = good.clone();
        corrupt[72] ^= 0xff;
        let pack = Pack::parse(&corrupt).expect("header still parses");
        assert!(pack.code_objects().is_err());
    }
}
