//! The fat Windows torch wheel: the ROCm SDK's files put into torch's wheel, so that it
//! installs and loads without the SDK's own wheels (TheRock's
//! `external-builds/pytorch/windows_patch_fat_wheel.py` does the same).
//!
//! What changes, as the reference changes it:
//! - the SDK root's files go under `torch/lib/rocm/`, except what torch does not need on
//!   Windows: the compiler (`lib/llvm/**`), the static-only system dependencies
//!   (`lib/rocm_sysdeps/**`), the host math libraries (`lib/host-math/**`) and the programs
//!   (`bin/*.exe`); symbolic links are not followed;
//! - `torch/__init__.py`: `torch/lib/rocm/bin` is put first in the DLL directories torch's
//!   Windows loader adds before it loads its own DLLs (a line before `for dll_path in
//!   dll_paths:`);
//! - the version gains the local label `rocm` (`2.10.0` → `2.10.0+rocm`, `2.10.0+abc` →
//!   `2.10.0+rocm.abc`), so the fat wheel is never mistaken for the thin one.
//!
//! What rockbuild does beyond the reference, because an installer checks it: METADATA's
//! Version and the `.dist-info` directory follow the new version, RECORD lists every file
//! with its hash (the reference writes neither, so pip refuses its output as inconsistent);
//! the requirements on the SDK's distributions (`rocm[libraries]==V`) are dropped, since the
//! wheel now carries the SDK; and `torch/_rocm_init.py`, which initializes the SDK from its
//! `rocm_sdk` package (written by the reference's `build_prod_wheels.py` after the fat-wheel
//! script was), no longer imports a package the standalone install does not have.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pep440_rs::Version;
use serde::Serialize;

use crate::platform::Platform;
use crate::wheel::companion::is_sdk_distribution;
use crate::wheel::metadata::Requirement;
use crate::wheel::record;
use crate::wheel::rewrite::wheel::{carried_record, open_source};
use crate::wheel::zipwrite::ZipOut;

/// Where the SDK goes in the wheel, and where its DLLs are.
pub const SDK_DIR: &str = "torch/lib/rocm";
/// The line of torch's Windows DLL loader the search-path line goes before.
const LOADER_ANCHOR: &str = "for dll_path in dll_paths:";
const INIT_PY: &str = "torch/__init__.py";
const ROCM_INIT_PY: &str = "torch/_rocm_init.py";

/// `_rocm_init.py` of a fat wheel: nothing to initialize.
const STANDALONE_ROCM_INIT: &str = "# The ROCm SDK is part of this wheel (torch/lib/rocm): torch/__init__.py puts its DLL\n\
# directory (torch/lib/rocm/bin) on the DLL search path before it loads torch's own DLLs,\n\
# so there is no separate rocm_sdk package to initialize.\n\n\ndef initialize():\n    pass\n";

/// Why a wheel cannot be made fat.
#[derive(Debug, thiserror::Error)]
pub enum FatError {
    #[error(transparent)]
    Wheel(#[from] crate::wheel::rewrite::RewriteError),
    #[error("{}: {detail}", wheel.display())]
    Refused { wheel: PathBuf, detail: String },
    #[error("--rocm {}: {detail}", root.display())]
    Sdk { root: PathBuf, detail: String },
    #[error("{}: {}", wheel.display(), problems.join("; "))]
    Unsound {
        wheel: PathBuf,
        problems: Vec<String>,
    },
    #[error("writing {}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl crate::exit::HasExitStatus for FatError {
    fn exit_status(&self) -> crate::exit::ExitStatus {
        use crate::exit::ExitStatus;
        match self {
            FatError::Wheel(_) | FatError::Unsound { .. } => ExitStatus::VerificationFailed,
            FatError::Refused { .. } | FatError::Sdk { .. } => ExitStatus::Usage,
            FatError::Write { .. } => ExitStatus::Failure,
        }
    }
}

/// What the patch did.
#[derive(Debug, Clone, Serialize)]
pub struct FatWheel {
    pub source: PathBuf,
    pub path: PathBuf,
    pub old_version: String,
    pub new_version: String,
    /// Files of the SDK added under [`SDK_DIR`], and their bytes.
    pub sdk_files: usize,
    pub sdk_bytes: u64,
    /// SDK files left out by the exclusion rule.
    pub sdk_excluded: usize,
    /// The requirements on the SDK dropped from METADATA.
    pub dropped_requirements: Vec<String>,
    /// Whether `torch/_rocm_init.py` was replaced.
    pub rocm_init_replaced: bool,
}

/// Whether an SDK file (its path under the SDK root, `/`-separated) stays out of the wheel.
pub fn excluded(relative: &str) -> bool {
    ["lib/llvm/", "lib/rocm_sysdeps/", "lib/host-math/"]
        .iter()
        .any(|dir| relative.starts_with(dir))
        || relative
            .strip_prefix("bin/")
            .is_some_and(|file| !file.contains('/') && file.to_ascii_lowercase().ends_with(".exe"))
}

/// The version of the fat wheel: the local label `rocm` first.
pub fn fat_version(version: &Version) -> Result<Version, String> {
    let text = version.to_string();
    let new = match text.split_once('+') {
        Some((public, local)) => format!("{public}+rocm.{local}"),
        None => format!("{text}+rocm"),
    };
    new.parse().map_err(|e| format!("'{new}': {e}"))
}

/// The SDK root's files to add, as (path under the root, file), sorted, and how many the rule
/// left out.
fn sdk_files(root: &Path) -> Result<(Vec<(String, PathBuf)>, usize), FatError> {
    let fail = |detail: String| FatError::Sdk {
        root: root.to_path_buf(),
        detail,
    };
    let mut files = Vec::new();
    let mut excluded_count = 0;
    let mut pending = vec![(String::new(), root.to_path_buf())];
    while let Some((prefix, dir)) = pending.pop() {
        let entries = fs_err::read_dir(&dir).map_err(|e| fail(e.to_string()))?;
        for entry in entries {
            let entry = entry.map_err(|e| fail(e.to_string()))?;
            let name = entry.file_name();
            let name = name.to_str().ok_or_else(|| {
                fail(format!(
                    "'{}' is not a UTF-8 file name; a wheel entry must be",
                    entry.path().display()
                ))
            })?;
            let relative = format!("{prefix}{name}");
            let kind = entry.file_type().map_err(|e| fail(e.to_string()))?;
            if kind.is_dir() {
                pending.push((format!("{relative}/"), entry.path()));
            } else if kind.is_file() {
                if excluded(&relative) {
                    excluded_count += 1;
                } else {
                    files.push((relative, entry.path()));
                }
            }
        }
    }
    files.sort();
    let has_dll = files.iter().any(|(relative, _)| {
        relative
            .strip_prefix("bin/")
            .is_some_and(|f| !f.contains('/') && f.to_ascii_lowercase().ends_with(".dll"))
    });
    if !has_dll {
        return Err(fail(
            "no bin/*.dll: not the root of a Windows ROCm SDK (give the SDK's root, the \
             directory with bin/ and lib/, e.g. `rocm-sdk path --root`)"
                .into(),
        ));
    }
    Ok((files, excluded_count))
}

/// `torch/__init__.py` with the SDK's DLL directory put first.
fn patch_init(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len() + 96);
    let mut found = 0;
    for line in text.split_inclusive('\n') {
        if line.trim() == LOADER_ANCHOR {
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push_str(&format!(
                "{indent}dll_paths.insert(0, os.path.join(th_dll_path, 'rocm', 'bin'))\n"
            ));
            found += 1;
        }
        out.push_str(line);
    }
    match found {
        1 => Ok(out),
        0 => Err(format!(
            "'{INIT_PY}' has no '{LOADER_ANCHOR}' line (torch's Windows DLL loader, \
             _load_dll_libraries): it is not a Windows torch wheel, or its loader changed"
        )),
        n => Err(format!(
            "'{INIT_PY}' has {n} '{LOADER_ANCHOR}' lines; torch's Windows loader has one"
        )),
    }
}

/// METADATA with the new version and without requirements on the SDK.
fn patch_metadata(raw: &[u8], version: &Version) -> Result<(String, Vec<String>), String> {
    let text = std::str::from_utf8(raw).map_err(|_| "METADATA is not UTF-8".to_string())?;
    let mut out = String::with_capacity(text.len());
    let mut dropped = Vec::new();
    let mut in_headers = true;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        if in_headers && content.is_empty() {
            in_headers = false;
        }
        if in_headers && let Some((key, value)) = content.split_once(':') {
            if key.trim().eq_ignore_ascii_case("Version") {
                out.push_str(&format!("{key}: {version}{}", &line[content.len()..]));
                continue;
            }
            if key.trim().eq_ignore_ascii_case("Requires-Dist") {
                let requirement = Requirement::parse(value)
                    .map_err(|e| format!("Requires-Dist '{}': {e}", value.trim()))?;
                if is_sdk_distribution(&requirement.name) {
                    dropped.push(requirement.raw.clone());
                    continue;
                }
            }
        }
        out.push_str(line);
    }
    Ok((out, dropped))
}

/// Makes `wheel` (a Windows torch wheel) fat with the SDK at `sdk_root`, into `out_dir`
/// (a temporary file renamed into place: nothing half-written is left behind).
pub fn make_fat(wheel: &Path, sdk_root: &Path, out_dir: &Path) -> Result<FatWheel, FatError> {
    let source = open_source(wheel)?;
    let refuse = |detail: String| FatError::Refused {
        wheel: wheel.to_path_buf(),
        detail,
    };
    if !source
        .filename
        .platform
        .split('.')
        .all(|p| Platform::of_wheel_tag(p) == Some(Platform::Windows))
    {
        return Err(refuse(format!(
            "platform tag '{}' is not Windows: the fat wheel is the Windows torch wheel's",
            source.filename.platform
        )));
    }
    let find = |name: &str| source.archive.entries.iter().position(|e| e.name == name);
    let init_index = find(INIT_PY).ok_or_else(|| refuse(format!("no '{INIT_PY}'")))?;
    if let Some(entry) = source
        .archive
        .entries
        .iter()
        .find(|e| e.name.starts_with(&format!("{SDK_DIR}/")))
    {
        return Err(refuse(format!(
            "it already has '{}': it is fat already",
            entry.name
        )));
    }
    let init_text = String::from_utf8(source.read(init_index)?)
        .map_err(|_| refuse(format!("'{INIT_PY}' is not UTF-8")))?;
    let new_init = patch_init(&init_text).map_err(&refuse)?;
    let new_version = fat_version(&source.metadata.version).map_err(&refuse)?;
    let (new_metadata, dropped) =
        patch_metadata(&source.metadata.raw, &new_version).map_err(&refuse)?;
    let rocm_init_index = find(ROCM_INIT_PY);
    let (files, sdk_excluded) = sdk_files(sdk_root)?;

    let new_filename = source.filename.with_version(&new_version);
    let new_file = new_filename.to_string();
    let old_dist_info = format!("{}/", source.dist_info);
    let new_dist_info = format!("{}/", new_filename.dist_info_dir());
    let rename = |name: &str| match name.strip_prefix(&old_dist_info) {
        Some(rest) => format!("{new_dist_info}{rest}"),
        None => name.to_string(),
    };
    fs_err::create_dir_all(out_dir).map_err(|error| FatError::Write {
        path: out_dir.to_path_buf(),
        error,
    })?;
    let path = out_dir.join(&new_file);
    let write_error = |error: std::io::Error| FatError::Write {
        path: path.clone(),
        error,
    };
    let temp = tempfile::Builder::new()
        .prefix(".rockbuild-fat-")
        .suffix(".tmp")
        .tempfile_in(out_dir)
        .map_err(write_error)?;
    let mut out = ZipOut::new(temp.reopen().map_err(write_error)?);
    let record_name = format!("{}RECORD", old_dist_info);
    let patched = |index: usize| -> Option<&[u8]> {
        if index == init_index {
            Some(new_init.as_bytes())
        } else if index == source.metadata_index {
            Some(new_metadata.as_bytes())
        } else if Some(index) == rocm_init_index {
            Some(STANDALONE_ROCM_INIT.as_bytes())
        } else {
            None
        }
    };
    let mut new_hashes = std::collections::BTreeMap::new();
    for (index, (entry, span)) in source.archive.entries.iter().zip(&source.spans).enumerate() {
        if index == source.record_index {
            continue;
        }
        let name = rename(&entry.name);
        match patched(index) {
            Some(bytes) => {
                out.add(&name, bytes, entry).map_err(write_error)?;
                new_hashes.insert(name, (record::record_hash(bytes), bytes.len() as u64));
            }
            None => out
                .raw_copy(&source.archive, entry, *span, &name)
                .map_err(write_error)?,
        }
    }
    let mut record_lines = carried_record(&source, &record_name, &rename, &new_hashes);
    let template = &source.archive.entries[init_index];
    let mut sdk_bytes = 0;
    let taken: BTreeSet<&str> = source
        .archive
        .entries
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    for (relative, file) in &files {
        let name = format!("{SDK_DIR}/{relative}");
        if taken.contains(name.as_str()) {
            return Err(refuse(format!("'{name}' is in the wheel already")));
        }
        let bytes = fs_err::read(file).map_err(|e| FatError::Sdk {
            root: sdk_root.to_path_buf(),
            detail: e.to_string(),
        })?;
        out.add(&name, &bytes, template).map_err(write_error)?;
        sdk_bytes += bytes.len() as u64;
        record_lines.push((
            name,
            Some(record::record_hash(&bytes)),
            Some(bytes.len() as u64),
        ));
    }
    let new_record_name = rename(&record_name);
    record_lines.push((new_record_name.clone(), None, None));
    let record_text = record::render(
        record_lines
            .iter()
            .map(|(p, h, s)| (p.as_str(), h.as_deref(), *s)),
    );
    out.add(
        &new_record_name,
        record_text.as_bytes(),
        &source.archive.entries[source.record_index],
    )
    .map_err(write_error)?;
    let file = out.finish().map_err(write_error)?;
    file.sync_all().map_err(write_error)?;
    temp.persist(&path).map_err(|e| write_error(e.error))?;
    Ok(FatWheel {
        source: wheel.to_path_buf(),
        path,
        old_version: source.metadata.version.to_string(),
        new_version: new_version.to_string(),
        sdk_files: files.len(),
        sdk_bytes,
        sdk_excluded,
        dropped_requirements: dropped,
        rocm_init_replaced: rocm_init_index.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exclusion_rule_is_the_references() {
        for path in [
            "lib/llvm/bin/clang.exe",
            "lib/rocm_sysdeps/lib/z.lib",
            "lib/host-math/lib/openblas.lib",
            "bin/hipcc.exe",
            "bin/rocminfo.EXE",
        ] {
            assert!(excluded(path), "{path}");
        }
        for path in [
            "bin/amdhip64_7.dll",
            "bin/rocblas/library/TensileLibrary.dat",
            "bin/sub/tool.exe",
            "lib/amdhip64.lib",
            "lib/llvmish/x",
            "include/hip/hip_runtime.h",
        ] {
            assert!(!excluded(path), "{path}");
        }
    }

    #[test]
    fn the_version_gains_the_rocm_label() {
        let version = |v: &str| fat_version(&v.parse().expect("version")).expect("fat");
        assert_eq!(version("2.10.0").to_string(), "2.10.0+rocm");
        assert_eq!(
            version("2.10.0a0+rocm7.13.0a20260430").to_string(),
            "2.10.0a0+rocm.rocm7.13.0a20260430"
        );
    }

    #[test]
    fn the_loader_gets_the_sdk_first_once() {
        let init = "if sys.platform == 'win32':\n    def _load_dll_libraries():\n        for dll_path in dll_paths:\n            os.add_dll_directory(dll_path)\n";
        let patched = patch_init(init).expect("patched");
        assert!(patched.contains(
            "        dll_paths.insert(0, os.path.join(th_dll_path, 'rocm', 'bin'))\n        for dll_path in dll_paths:\n"
        ));
        assert!(patch_init("import os\n").is_err());
        assert!(patch_init(&format!("{init}{init}")).is_err());
    }

    #[test]
    fn the_sdk_pins_go_and_the_version_changes() {
        let raw = b"Metadata-Version: 2.1\nName: torch\nVersion: 2.10.0\nRequires-Dist: filelock\nRequires-Dist: rocm[libraries]==7.13.0\nRequires-Dist: rocm-sdk-core==7.13.0; extra == \"x\"\n\nbody Version: 1\n";
        let (text, dropped) =
            patch_metadata(raw, &"2.10.0+rocm".parse().expect("version")).expect("patched");
        assert_eq!(
            text,
            "Metadata-Version: 2.1\nName: torch\nVersion: 2.10.0+rocm\nRequires-Dist: filelock\n\nbody Version: 1\n"
        );
        assert_eq!(dropped.len(), 2);
    }
}
