//! Python packaging pieces for publishing tests: small but complete wheels (METADATA, WHEEL,
//! RECORD with hashes) written with Python's zipfile, and hash-checked installs with pip and uv.

use std::path::{Path, PathBuf};

use super::{TestEnv, run_ok};

/// Writes `<name>-<version>-py3-none-any.whl` into `out` and returns its path. `spec` is JSON:
/// `requires` (list), `requires_python`, `code` (appended to `__init__.py`), `blob` (bytes of
/// incompressible data, stored, to make large wheels).
const BUILD_WHEEL: &str = r#"
import base64, hashlib, json, os, random, sys, zipfile
out, name, version, spec = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
dist = name.replace("-", "_")
package = spec.get("package", dist)
files = {f"{package}/__init__.py": (f"__version__ = {version!r}\n" + spec.get("code", "")).encode()}
if spec.get("blob"):
    files[f"{package}/blob.bin"] = random.Random(name + version).randbytes(spec["blob"])
info = f"{dist}-{version}.dist-info"
metadata = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
if spec.get("requires_python"):
    metadata.append(f"Requires-Python: {spec['requires_python']}")
metadata += [f"Requires-Dist: {r}" for r in spec.get("requires", [])]
files[f"{info}/METADATA"] = ("\n".join(metadata) + "\n\n").encode()
files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: rockbuild-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
files[f"{info}/top_level.txt"] = f"{package}\n".encode()
record = []
for path, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(data)}")
record.append(f"{info}/RECORD,,")
files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
path = os.path.join(out, f"{dist}-{version}-py3-none-any.whl")
with zipfile.ZipFile(path, "w") as z:
    for name_in_zip, data in files.items():
        method = zipfile.ZIP_STORED if name_in_zip.endswith("blob.bin") else zipfile.ZIP_DEFLATED
        z.writestr(zipfile.ZipInfo(name_in_zip, (2024, 1, 1, 0, 0, 0)), data, compress_type=method)
print(path)
"#;

/// Builds a wheel; see [`BUILD_WHEEL`] for `spec`.
#[track_caller]
pub fn build_wheel(
    env: &TestEnv,
    out: &Path,
    name: &str,
    version: &str,
    spec: serde_json::Value,
) -> PathBuf {
    std::fs::create_dir_all(out).expect("create wheel dir");
    let printed = run_ok(
        env.command("python3")
            .args(["-c", BUILD_WHEEL])
            .arg(out)
            .args([name, version, &spec.to_string()]),
    );
    PathBuf::from(printed.trim())
}

/// The wheel's METADATA bytes (what a PEP 658 sidecar holds).
#[track_caller]
pub fn wheel_metadata(wheel: &Path) -> Vec<u8> {
    let member = super::sample::wheel_members(wheel)
        .into_iter()
        .find(|m| m.ends_with(".dist-info/METADATA"))
        .unwrap_or_else(|| panic!("{} has no METADATA", wheel.display()));
    super::sample::wheel_member(wheel, &member)
}

pub fn sha256_file(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(
        std::fs::read(path).expect("read file"),
    ))
}

/// A fresh venv with pip (installed offline from the wheelhouse); returns its python.
#[track_caller]
pub fn venv(env: &TestEnv, dir: &Path) -> PathBuf {
    super::sample::Venv::create(env, dir).python()
}

/// `name==version --hash=sha256:…` lines, the hashes computed here from the files.
pub fn hashed_requirements(pins: &[(&str, &str, &Path)]) -> String {
    pins.iter()
        .map(|(name, version, wheel)| {
            format!("{name}=={version} --hash=sha256:{}\n", sha256_file(wheel))
        })
        .collect()
}

/// Installs hash-pinned requirements from an index with pip, then with uv into a second
/// venv; returns both pythons.
#[track_caller]
pub fn install_with_pip_and_uv(
    env: &TestEnv,
    index_url: &str,
    requirements: &str,
    tag: &str,
) -> (PathBuf, PathBuf) {
    install_from_index(env, index_url, requirements, Hashes::Required, tag)
}

/// Whether the installers must check every file against a `--hash` of the requirements.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Hashes {
    Required,
    Unchecked,
}

/// Installs `requirements` (a requirements file's text) from `index_url` alone with pip
/// (`--isolated`: none of the machine's PIP_* settings) into one new venv, then with uv into
/// another; returns both pythons.
#[track_caller]
pub fn install_from_index(
    env: &TestEnv,
    index_url: &str,
    requirements: &str,
    hashes: Hashes,
    tag: &str,
) -> (PathBuf, PathBuf) {
    let req = env.path(&format!("{tag}-requirements.txt"));
    std::fs::write(&req, requirements).expect("write requirements");
    let require_hashes = (hashes == Hashes::Required).then_some("--require-hashes");
    let pip_python = venv(env, &env.path(&format!("{tag}-pip-venv")));
    run_ok(
        env.command(&pip_python)
            .args(["-m", "pip", "install", "--isolated", "--no-cache-dir"])
            .args(require_hashes)
            .args(["--index-url", index_url, "-r"])
            .arg(&req),
    );
    let uv_venv = env.path(&format!("{tag}-uv-venv"));
    run_ok(
        env.command("uv")
            .args(["venv", "--no-cache", "--python", "python3"])
            .arg(&uv_venv),
    );
    let uv_python = uv_venv.join("bin/python");
    run_ok(
        env.command("uv")
            .args(["pip", "install", "--no-cache"])
            .args(require_hashes)
            .args(["--index-url", index_url, "--python"])
            .arg(&uv_python)
            .arg("-r")
            .arg(&req),
    );
    (pip_python, uv_python)
}

/// Runs Python code in a venv and returns what it printed.
#[track_caller]
pub fn python(env: &TestEnv, python: &Path, code: &str) -> String {
    let out = run_ok(env.command(python).args(["-c", code]));
    out.trim().to_string()
}

/// A recursive copy (to serve an S3 prefix's objects, which s3s-fs keeps as plain files).
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.expect("walk");
        let target = to.join(entry.path().strip_prefix(from).expect("prefix"));
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}
