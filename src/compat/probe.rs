//! Reading a venv or a set of wheels: versions from dist-info METADATA, gfx targets and
//! DT_NEEDED from each shared library (crate::binary::elf, crate::binary::offload), and — for a
//! venv — torch's own answers from one `python -c` run through the runner.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::binary::elf;
use crate::exec::{Cmd, Runner};
use crate::sdk::{ROCM_DIST, Venv};
use crate::wheel::archive::Archive;
use crate::wheel::filename::{WheelFilename, normalize_name};
use crate::wheel::metadata::CoreMetadata;

use super::Error;

/// How long importing torch and asking it may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(180);

/// What the probe found.
#[derive(Clone, Debug, Default)]
pub struct Probed {
    pub subject: String,
    /// Distribution (normalized name) → version.
    pub distributions: Vec<(String, String)>,
    /// The ROCm SDK version: the installed `rocm`, else the `rocm==` pin torch requires.
    pub sdk: Option<String>,
    /// `torch.version.hip`.
    pub hip: Option<String>,
    pub python: Option<String>,
    pub libraries: Vec<Library>,
    /// torch's answers, for a venv.
    pub torch: Option<TorchAnswers>,
}

impl Probed {
    pub fn version_of(&self, distribution: &str) -> Option<String> {
        self.distributions
            .iter()
            .find(|(name, _)| name == distribution)
            .map(|(_, version)| version.clone())
    }
}

/// A shared library of a stack distribution.
#[derive(Clone, Debug)]
pub struct Library {
    /// Path inside site-packages or the wheel (`torch/lib/libtorch_hip.so`).
    pub path: String,
    pub distribution: String,
    /// gfx targets of its `.hip_fatbin`, in order of appearance.
    pub targets: Vec<String>,
    pub needed: Vec<String>,
}

/// What `import torch` answered. Each call's result is kept as JSON, or the exception.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct TorchAnswers {
    pub hip: Option<String>,
    pub config: Result<String, String>,
    pub flash_attention: Result<serde_json::Value, String>,
    pub cudnn_available: Result<serde_json::Value, String>,
    pub distributed_available: Result<serde_json::Value, String>,
}

impl TorchAnswers {
    /// `Build settings: K=V, K=V, ` of `torch.__config__.show()`, as pairs.
    pub fn build_settings(&self) -> Vec<(String, String)> {
        let Ok(config) = &self.config else {
            return Vec::new();
        };
        let Some(line) = config
            .lines()
            .find_map(|l| l.trim().strip_prefix("- Build settings:"))
        else {
            return Vec::new();
        };
        // CXX_FLAGS holds spaces but no ", ": torch joins the pairs with ", " and ends with one.
        line.trim()
            .trim_end_matches(',')
            .split(", ")
            .filter_map(|pair| pair.trim().split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect()
    }
}

/// The script the venv's Python runs: imports torch, asks the questions real torch answers,
/// prints one JSON object. Every call is guarded: a missing API is an answer too.
const PROBE_SCRIPT: &str = r#"
import importlib, json
def ask(module, name):
    try:
        value = getattr(importlib.import_module(module), name)()
        return {"Ok": value if isinstance(value, (bool, int, float, str, type(None))) else repr(value)}
    except Exception as error:
        return {"Err": f"{type(error).__name__}: {error}"}
import torch
print(json.dumps({
    "hip": getattr(getattr(torch, "version", None), "hip", None),
    "config": ask("torch.__config__", "show"),
    "flash_attention": ask("torch.backends.cuda", "is_flash_attention_available"),
    "cudnn_available": ask("torch.backends.cudnn", "is_available"),
    "distributed_available": ask("torch.distributed", "is_available"),
}))
"#;

/// Probes a venv: its site-packages and torch's answers.
pub fn venv(runner: &Runner, dir: &Path, stack_distributions: &[String]) -> Result<Probed, Error> {
    let venv = Venv::new(dir);
    let site = venv.site_packages().ok_or_else(|| Error::Read {
        path: dir.display().to_string(),
        detail: "no lib/python3.*/site-packages: not a usable venv".into(),
    })?;
    let mut probed = Probed {
        subject: dir.display().to_string(),
        python: venv.python_version(),
        ..Default::default()
    };
    let entries = fs_err::read_dir(&site).map_err(|e| read_error(&site, e))?;
    let mut dist_infos: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "dist-info"))
        .collect();
    dist_infos.sort();
    for dist_info in dist_infos {
        let metadata_path = dist_info.join("METADATA");
        let raw = fs_err::read(&metadata_path).map_err(|e| read_error(&metadata_path, e))?;
        let metadata =
            CoreMetadata::parse(&metadata_path.display().to_string(), raw).map_err(|e| {
                Error::Read {
                    path: metadata_path.display().to_string(),
                    detail: e.to_string(),
                }
            })?;
        let name = normalize_name(&metadata.name);
        if name == ROCM_DIST {
            probed.sdk = Some(metadata.version.to_string());
        }
        if stack_distributions.contains(&name) {
            let record = dist_info.join("RECORD");
            let text = fs_err::read_to_string(&record).map_err(|e| read_error(&record, e))?;
            for relative in text
                .lines()
                .filter_map(|l| l.split(',').next())
                .filter(|p| is_shared_library(p))
            {
                let path = site.join(relative);
                let bytes = fs_err::read(&path).map_err(|e| read_error(&path, e))?;
                probed
                    .libraries
                    .push(library(relative, &name, &bytes, &path)?);
            }
        }
        probed
            .distributions
            .push((name, metadata.version.to_string()));
    }
    let torch = torch_answers(runner, &venv)?;
    probed.hip = torch.as_ref().and_then(|t| t.hip.clone());
    probed.torch = torch;
    Ok(probed)
}

/// torch's answers, or `None` when torch is not installed.
fn torch_answers(runner: &Runner, venv: &Venv) -> Result<Option<TorchAnswers>, Error> {
    if venv.installed_version("torch").is_none() {
        return Ok(None);
    }
    let cmd = Cmd::new(venv.python())
        .args(["-I", "-c", PROBE_SCRIPT])
        .label("python: import torch and ask how it was built")
        .env("PYTHONUTF8", "1")
        .timeout(PROBE_TIMEOUT)
        .capture_stdout();
    let failed = |detail: String| Error::Probe {
        venv: venv.dir.display().to_string(),
        detail,
    };
    let output = runner.run(&cmd).map_err(|e| failed(e.to_string()))?;
    let answers = serde_json::from_str(output.stdout.trim()).map_err(|e| {
        failed(format!(
            "its answer is not the expected JSON ({e}): {}",
            output.stdout.trim()
        ))
    })?;
    Ok(Some(answers))
}

/// Probes wheels: each one's METADATA and libraries.
pub fn wheels(paths: &[PathBuf], stack_distributions: &[String]) -> Result<Probed, Error> {
    let mut probed = Probed {
        subject: paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        ..Default::default()
    };
    for path in paths {
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let filename = WheelFilename::parse(&file_name).map_err(|e| Error::Read {
            path: path.display().to_string(),
            detail: e.to_string(),
        })?;
        let name = filename.normalized_name();
        let file = fs_err::File::open(path).map_err(|e| read_error(path, e))?;
        let mut defects = Vec::new();
        let archive = Archive::open(file.into(), &mut defects).map_err(|e| Error::Read {
            path: path.display().to_string(),
            detail: e.to_string(),
        })?;
        let read = |entry_name: &str| -> Result<Option<Vec<u8>>, Error> {
            let Some(entry) = archive.entries.iter().find(|e| e.name == entry_name) else {
                return Ok(None);
            };
            archive
                .read_small(entry, u64::MAX, &mut Vec::new())
                .map(Some)
                .map_err(|detail| Error::Read {
                    path: format!("{}:{entry_name}", path.display()),
                    detail: detail.to_string(),
                })
        };
        let metadata_name = format!("{}/METADATA", filename.dist_info_dir());
        let raw = read(&metadata_name)?.ok_or_else(|| Error::Read {
            path: path.display().to_string(),
            detail: format!("no {metadata_name}"),
        })?;
        let metadata = CoreMetadata::parse(&metadata_name, raw).map_err(|e| Error::Read {
            path: path.display().to_string(),
            detail: e.to_string(),
        })?;
        if name == ROCM_DIST {
            probed.sdk = Some(metadata.version.to_string());
        }
        if name == "torch" {
            // TheRock's torch pins the SDK it was built with: rocm[libraries]==<version>.
            if probed.sdk.is_none() {
                probed.sdk = metadata
                    .requires_dist
                    .iter()
                    .filter(|r| r.name == ROCM_DIST)
                    .find_map(|r| crate::sdk::preflight::exact_pin(&r.specifiers))
                    .map(|v| v.to_string());
            }
            if let Some(text) = read("torch/version.py")? {
                probed.hip = python_string(&String::from_utf8_lossy(&text), "hip");
            }
            probed.python = filename.tags().iter().find_map(|tag| python_of_tag(tag));
        }
        if stack_distributions.contains(&name) {
            for entry in archive
                .entries
                .iter()
                .filter(|e| is_shared_library(&e.name))
            {
                if let Some(bytes) = read(&entry.name)? {
                    probed
                        .libraries
                        .push(library(&entry.name, &name, &bytes, path)?);
                }
            }
        }
        probed
            .distributions
            .push((name, metadata.version.to_string()));
    }
    Ok(probed)
}

fn is_shared_library(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.ends_with(".so") || file.contains(".so.")
}

fn library(
    relative: &str,
    distribution: &str,
    bytes: &[u8],
    whole: &Path,
) -> Result<Library, Error> {
    let info = elf::inspect(bytes).map_err(|detail| Error::Read {
        path: format!("{} ({relative})", whole.display()),
        detail: detail.to_string(),
    })?;
    let mut targets: Vec<String> = Vec::new();
    for bundle in info.gpu.iter().flat_map(|scan| scan.bundles.iter()) {
        for target in bundle.targets() {
            if !targets.iter().any(|t| t == target) {
                targets.push(target.to_string());
            }
        }
    }
    Ok(Library {
        path: relative.to_string(),
        distribution: distribution.to_string(),
        targets,
        needed: info.needed,
    })
}

/// `hip = '5.2.21153'` in a generated version.py.
fn python_string(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        if key.trim() != name {
            return None;
        }
        let value = value.trim();
        let quoted = value
            .strip_prefix('\'')
            .and_then(|v| v.strip_suffix('\''))
            .or_else(|| value.strip_prefix('"').and_then(|v| v.strip_suffix('"')))?;
        Some(quoted.to_string())
    })
}

/// `cp311` → `3.11`.
fn python_of_tag(tag: &str) -> Option<String> {
    let digits = tag.split('-').next()?.strip_prefix("cp")?;
    let (major, minor) = digits.split_at(1);
    (!minor.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
        .then(|| format!("{major}.{minor}"))
}

fn read_error(path: &Path, error: std::io::Error) -> Error {
    Error::Read {
        path: path.display().to_string(),
        detail: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_settings_parse_as_torch_prints_them() {
        let answers = TorchAnswers {
            hip: None,
            config: Ok("PyTorch built with:\n  - GCC 12.2\n  - Build settings: TORCH_VERSION=2.10.0, CXX_FLAGS=-O2 -fPIC, USE_ROCM=ON, \n".into()),
            flash_attention: Ok(serde_json::Value::Bool(false)),
            cudnn_available: Ok(serde_json::Value::Bool(false)),
            distributed_available: Ok(serde_json::Value::Bool(false)),
        };
        assert_eq!(
            answers.build_settings(),
            [
                ("TORCH_VERSION".to_string(), "2.10.0".to_string()),
                ("CXX_FLAGS".to_string(), "-O2 -fPIC".to_string()),
                ("USE_ROCM".to_string(), "ON".to_string()),
            ]
        );
    }

    #[test]
    fn small_parsers() {
        assert_eq!(
            python_string("__version__ = '2.1'\nhip = '5.2.21153'\n", "hip").as_deref(),
            Some("5.2.21153")
        );
        assert_eq!(python_string("hip = None\n", "hip"), None);
        assert_eq!(python_of_tag("cp311").as_deref(), Some("3.11"));
        assert_eq!(python_of_tag("py3"), None);
        assert!(is_shared_library("torch/lib/libtorch_hip.so"));
        assert!(is_shared_library("torch/lib/libamdhip64.so.5"));
        assert!(!is_shared_library("torch/lib/notes.sofa"));
    }
}
