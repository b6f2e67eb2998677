//! The stand-in ROCm SDK (examples/sdk/build_sdk.py) as a package index on disk, built once
//! per (version, targets, builder sources) and shared by every test of the run.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::repo_root;

/// A stand-in SDK index for `version` and `targets`: a directory holding `simple/` (PEP 503,
/// serve it and use `<url>simple/` as the index URL) and `wheels/` (the wheels, plus a flat
/// `index.html` usable as `--find-links`).
///
/// Built under `$CARGO_TARGET_TMPDIR/stand-in-sdk/`, keyed by the inputs and a hash of the
/// builder's sources; safe when tests run in parallel processes (nextest): the first one
/// builds under an exclusive file lock, the others wait and reuse the result.
#[track_caller]
pub fn sdk_index(version: &str, targets: &[&str]) -> PathBuf {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("stand-in-sdk");
    std::fs::create_dir_all(&cache).expect("create the SDK cache dir");
    let key = cache_key(version, targets);
    let dir = cache.join(&key);
    let lock = std::fs::File::create(cache.join(".lock")).expect("create the SDK cache lock");
    lock.lock().expect("lock the SDK cache");
    if !dir.join("simple").join("index.html").exists() {
        let staging = cache.join(format!("{key}.tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        let output = Command::new("python3")
            .arg(repo_root().join("examples/sdk/build_sdk.py"))
            .args([
                "--version",
                version,
                "--targets",
                &targets.join(","),
                "--out",
            ])
            .arg(&staging)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .expect("run build_sdk.py");
        assert!(
            output.status.success(),
            "build_sdk.py --version {version} --targets {} failed:\n{}",
            targets.join(","),
            String::from_utf8_lossy(&output.stderr)
        );
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&staging, &dir).expect("move the SDK index into the cache");
    }
    lock.unlock().expect("unlock the SDK cache");
    dir
}

fn cache_key(version: &str, targets: &[&str]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(version.as_bytes());
    hasher.update([0]);
    hasher.update(targets.join(",").as_bytes());
    let sources = repo_root().join("examples/sdk");
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(&sources)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && !is_bytecode(e.path()))
        .map(|e| e.into_path())
        .collect();
    files.sort();
    for file in files {
        hasher.update(
            file.strip_prefix(&sources)
                .expect("under examples/sdk")
                .to_string_lossy()
                .as_bytes(),
        );
        hasher.update([0]);
        hasher.update(std::fs::read(&file).expect("read an SDK source"));
    }
    let digest = hex::encode(hasher.finalize());
    let readable: String = format!("{version}-{}", targets.join("_"))
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{readable}-{}", &digest[..16])
}

fn is_bytecode(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "pyc")
        || path.components().any(|c| c.as_os_str() == "__pycache__")
}
