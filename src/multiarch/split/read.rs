//! The first step of a split: the fat wheel opened, and every fat binary under the overlay
//! root read, unbundled (its code objects) and transformed (the host binary), in parallel.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::{SplitError, SplitSpec};
use crate::binary::offload::{self, CodeObject};
use crate::binary::transform::TransformError;
use crate::binary::{elf, pe};
use crate::wheel::metadata::WheelInfo;
use crate::wheel::rewrite::wheel::{Source, open_source};

/// A fat wheel, read: its entries, what a plan needs to know of it, its fat binaries.
pub(super) struct FatWheel<'a> {
    pub source: Source<'a>,
    /// Where the host wheel goes (the fat wheel's name in the output directory).
    pub host_path: PathBuf,
    pub facts: Facts,
    /// Largest first, ties by path (as the reference packs them), so the order (and the
    /// ordinals) never depend on which worker finished first.
    pub binaries: Vec<FatBinary>,
}

/// What a split plan needs to know of the fat wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Facts {
    pub wheel: PathBuf,
    /// The project's name as METADATA writes it, and METADATA itself.
    pub name: String,
    pub metadata: Vec<u8>,
    /// The version as METADATA writes it: the device wheels repeat it exactly.
    pub version: String,
    /// The host wheel's first tag, which the device wheels take.
    pub tag: String,
    /// The overlay root without slashes (`torch`).
    pub overlay: String,
    /// The packs' group: the host's name, lowercase, `-` → `_` (`torch`).
    pub group: String,
}

/// One fat binary, unbundled and transformed.
pub(super) struct FatBinary {
    pub index: usize,
    pub path: String,
    pub original_size: usize,
    pub objects: Vec<CodeObject>,
    /// The host binary after the surgery.
    pub transformed: Vec<u8>,
    pub bytes_removed: u64,
}

/// `../` for each directory between `path` and the overlay root, then the pack pattern.
fn search_pattern(path_under_overlay: &str, group: &str) -> String {
    let depth = path_under_overlay.matches('/').count();
    format!("{}.kpack/{group}_@GFXARCH@.kpack", "../".repeat(depth))
}

/// Opens `wheel` and reads its fat binaries.
pub(super) fn read<'a>(
    wheel: &'a Path,
    out_dir: &Path,
    spec: &SplitSpec,
) -> Result<FatWheel<'a>, SplitError> {
    let rewrite_error = |e: crate::wheel::rewrite::RewriteError| SplitError::Wheel(e.to_string());
    let source = open_source(wheel).map_err(rewrite_error)?;
    let host_path = out_dir.join(source.filename.to_string());
    if same_file(wheel, &host_path) {
        return Err(SplitError::SameFile(host_path));
    }
    let overlay = spec.overlay_root.trim_matches('/').to_string();
    let prefix = format!("{overlay}/");
    let candidates: Vec<usize> = source
        .archive
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.name.starts_with(&prefix) && !e.is_dir() && !e.is_symlink())
        .map(|(i, _)| i)
        .collect();
    if candidates.is_empty() {
        return Err(SplitError::NoOverlay {
            wheel: wheel.to_path_buf(),
            overlay,
        });
    }
    let group = source.metadata.name.to_lowercase().replace('-', "_");
    let mut binaries: Vec<FatBinary> = candidates
        .par_iter()
        .map(|&index| read_fat_binary(&source, index, &prefix, &group))
        .filter_map(Result::transpose)
        .collect::<Result<_, _>>()?;
    if binaries.is_empty() {
        return Err(SplitError::NoFatBinaries {
            wheel: wheel.to_path_buf(),
            overlay,
        });
    }
    binaries.sort_by(|a, b| {
        b.original_size
            .cmp(&a.original_size)
            .then_with(|| a.path.cmp(&b.path))
    });
    let version = metadata_version(&source)?;
    let tag =
        wheel_info(&source)?.tags.first().cloned().ok_or_else(|| {
            SplitError::Metadata(format!("{}: WHEEL has no Tag", wheel.display()))
        })?;
    Ok(FatWheel {
        facts: Facts {
            wheel: wheel.to_path_buf(),
            name: source.metadata.name.clone(),
            metadata: source.metadata.raw.clone(),
            version,
            tag,
            overlay,
            group,
        },
        source,
        host_path,
        binaries,
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (fs_err::canonicalize(a), fs_err::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn metadata_version(source: &Source<'_>) -> Result<String, SplitError> {
    // The version as METADATA writes it: the device wheels repeat it exactly.
    let text = String::from_utf8_lossy(&source.metadata.raw);
    text.lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.trim().eq_ignore_ascii_case("Version"))
                .map(|(_, v)| v.trim().to_string())
        })
        .ok_or_else(|| {
            SplitError::Metadata(format!(
                "{}: METADATA has no Version",
                source.path.display()
            ))
        })
}

fn wheel_info(source: &Source<'_>) -> Result<WheelInfo, SplitError> {
    let name = format!("{}/WHEEL", source.dist_info);
    let index = source
        .archive
        .entries
        .iter()
        .position(|e| e.name == name)
        .ok_or_else(|| SplitError::Metadata(format!("{}: no {name}", source.path.display())))?;
    let raw = source
        .read(index)
        .map_err(|e| SplitError::Wheel(e.to_string()))?;
    WheelInfo::parse(&name, &raw).map_err(|e| SplitError::Metadata(e.to_string()))
}

/// Reads entry `index`; `Some` when it is a fat binary (unbundled and transformed).
fn read_fat_binary(
    source: &Source<'_>,
    index: usize,
    prefix: &str,
    group: &str,
) -> Result<Option<FatBinary>, SplitError> {
    let entry = &source.archive.entries[index];
    let fail = |detail: String| SplitError::Binary {
        wheel: source.path.to_path_buf(),
        path: entry.name.clone(),
        detail,
    };
    let mut reader = source
        .archive
        .reader(entry, source.spans[index])
        .map_err(|e| fail(e.to_string()))?;
    let mut magic = [0u8; 4];
    let mut head = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(&mut reader, magic.len() as u64),
        &mut head,
    )
    .map_err(|e| fail(e.to_string()))?;
    if head.len() < 2 {
        return Ok(None);
    }
    magic[..head.len()].copy_from_slice(&head);
    let is_elf = magic == *b"\x7fELF";
    let is_pe = magic[..2] == *b"MZ";
    if !is_elf && !is_pe {
        return Ok(None);
    }
    let mut data = head;
    data.reserve(entry.size as usize);
    std::io::Read::read_to_end(&mut reader, &mut data).map_err(|e| fail(e.to_string()))?;
    let under = &entry.name[prefix.len()..];
    let search = [search_pattern(under, group)];
    // The same split for both formats; only the section names and the surgery differ.
    let section = if is_pe {
        pe::fatbin_section(&data).map_err(|e| fail(e.to_string()))?
    } else {
        elf::fatbin_section(&data).map_err(|e| fail(e.to_string()))?
    };
    let Some(section) = section else {
        return Ok(None);
    };
    let objects = offload::code_objects(section).map_err(fail)?;
    let transformed = if is_pe {
        pe::transform(&data, &search, under)
    } else {
        elf::transform(&data, &search, under)
    };
    let (transformed, bytes_removed) = match transformed {
        Ok(t) => (t.data, t.bytes_removed),
        Err(TransformError::NotFat(_)) => return Ok(None),
        Err(e) => return Err(fail(e.to_string())),
    };
    Ok(Some(FatBinary {
        index,
        path: entry.name.clone(),
        original_size: data.len(),
        objects,
        transformed,
        bytes_removed,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_patterns_climb_to_the_overlay_root() {
        assert_eq!(
            search_pattern("lib/libtorch_hip.so", "torch"),
            "../.kpack/torch_@GFXARCH@.kpack"
        );
        assert_eq!(
            search_pattern("_C.so", "torchvision"),
            ".kpack/torchvision_@GFXARCH@.kpack"
        );
        assert_eq!(
            search_pattern("a/b/c.so", "torch"),
            "../../.kpack/torch_@GFXARCH@.kpack"
        );
    }
}
