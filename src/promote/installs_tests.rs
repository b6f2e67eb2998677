//! Promoted sets on real tools: setuptools builds the wheels, `wheel::rewrite` rewrites them,
//! the verify stage accepts them (closure included), pip and uv install them.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::platform::Platform;
use crate::wheel::rewrite::{Promotion, PublicVersion, rewrite_set};

fn tools() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/venv/bin")
}

/// A command with a clean environment: no PIP_* or VIRTUAL_ENV from the shell.
fn command(program: impl AsRef<std::ffi::OsStr>, home: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", tools().display()))
        .env("HOME", home)
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("PIP_NO_INPUT", "1")
        .env("UV_NO_CACHE", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    command
}

#[track_caller]
fn run(command: &mut Command) -> String {
    let output = command.output().expect("spawn");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A setuptools project with a version file, a pin and a data file; built by pip.
fn build_wheel(root: &Path, name: &str, version: &str, requires: &[&str], out: &Path) -> PathBuf {
    let project = root.join(format!("src-{name}"));
    fs_err::create_dir_all(project.join(name)).expect("mkdir");
    fs_err::create_dir_all(project.join("share")).expect("mkdir");
    fs_err::write(
        project.join(name).join("__init__.py"),
        "from .version import __version__\n",
    )
    .expect("write");
    fs_err::write(
        project.join(name).join("version.py"),
        format!("__version__ = '{version}'\ngit_version = 'abc{version}'\n"),
    )
    .expect("write");
    fs_err::write(project.join("share/notes.txt"), format!("{name} data\n")).expect("write");
    fs_err::write(
                project.join("setup.py"),
                format!(
                    "from setuptools import setup\nsetup(name={name:?}, version={version:?}, packages=[{name:?}], \
                     install_requires={requires:?}, data_files=[('share/{name}-test', ['share/notes.txt'])])\n"
                ),
            )
            .expect("write");
    run(command(tools().join("python"), root)
        .args([
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
        ])
        .arg(out)
        .arg(&project));
    fs_err::read_dir(out)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .find(|p| {
            p.file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with(&format!("{name}-")))
        })
        .expect("built wheel")
}

fn raw_bytes(wheel: &Path, entry: &str) -> Vec<u8> {
    let mut archive = zip::ZipArchive::new(fs_err::File::open(wheel).expect("open")).expect("zip");
    let mut raw = Vec::new();
    let index = archive.index_for_name(entry).expect("entry");
    // `by_index_raw` reads the stored (compressed) bytes.
    archive
        .by_index_raw(index)
        .expect("entry")
        .read_to_end(&mut raw)
        .expect("read");
    raw
}

#[test]
fn promoted_sets_verify_and_pip_and_uv_install_them() {
    let root = tempfile::tempdir().expect("tempdir");
    let root = root.path();
    let staged = root.join("staged");
    let torch = build_wheel(
        root,
        "torch",
        "2.10.0a0+rocm7.13.0a20260430",
        &["triton==3.5.0a0+git1a2b3c4d"],
        &staged,
    );
    let triton = build_wheel(root, "triton", "3.5.0a0+git1a2b3c4d", &[], &staged);

    let released = root.join("released");
    let rewritten = rewrite_set(
        &[torch.clone(), triton.clone()],
        Promotion::Final,
        PublicVersion::Promote,
        None,
        &released,
    )
    .expect("rewrites");
    let files: Vec<String> = rewritten
        .iter()
        .map(|r| {
            r.path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        files,
        [
            "torch-2.10.0+rocm7.13.0a20260430-py3-none-any.whl",
            "triton-3.5.0+git1a2b3c4d-py3-none-any.whl"
        ]
    );
    assert_eq!(
        rewritten[0].requirements,
        vec![(
            "triton==3.5.0a0+git1a2b3c4d".to_string(),
            "triton==3.5.0+git1a2b3c4d".to_string()
        )]
    );
    assert_eq!(rewritten[0].version_files, vec!["torch/version.py"]);
    assert!(rewritten[0].raw_copied >= 3, "{:?}", rewritten[0]);
    // Unchanged entries keep their compressed bytes: copied, not recompressed.
    assert_eq!(
        raw_bytes(&torch, "torch/__init__.py"),
        raw_bytes(&rewritten[0].path, "torch/__init__.py")
    );

    // The strict verifier accepts the result, closure included (these pure-Python
    // stand-ins have no GPU libraries, so the HIP runtime rule is off).
    let stack = crate::stack::Stack::load(None).expect("stack");
    // These pure-Python stand-ins have no GPU libraries, so no recipe expectations apply.
    let options = crate::verify::Expectations::for_stack(&stack, Default::default());
    let report = crate::verify::verify_set(
        &[rewritten[0].path.clone(), rewritten[1].path.clone()],
        &options,
    )
    .expect("verifies");
    assert!(
        report.ok,
        "{:?}",
        report
            .wheels
            .iter()
            .map(|w| &w.problems)
            .collect::<Vec<_>>()
    );

    for installer in ["pip", "uv"] {
        let venv = root.join(format!("venv-{installer}"));
        run(command("python3", root)
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv));
        let python = Platform::host().venv_python(&venv);
        match installer {
            "pip" => run(command(tools().join("python"), root)
                .args(["-m", "pip", "--python"])
                .arg(&python)
                .args(["install", "-q", "--no-index", "--find-links"])
                .arg(&released)
                .arg("torch==2.10.0+rocm7.13.0a20260430")),
            _ => run(command(tools().join("uv"), root)
                .args([
                    "pip",
                    "install",
                    "-q",
                    "--offline",
                    "--no-index",
                    "--python",
                ])
                .arg(&python)
                .arg("--find-links")
                .arg(&released)
                .arg("torch==2.10.0+rocm7.13.0a20260430")),
        };
        let seen = run(command(&python, root).args([
                    "-c",
                    "import torch, triton, importlib.metadata as m; print(torch.__version__, m.version('torch'), m.version('triton'), triton.__version__)",
                ]));
        assert_eq!(
            seen.trim(),
            "2.10.0+rocm7.13.0a20260430 2.10.0+rocm7.13.0a20260430 3.5.0+git1a2b3c4d 3.5.0+git1a2b3c4d",
            "{installer}"
        );
        // The .data directory was renamed with the dist-info: its file lands in share/.
        assert!(
            venv.join("share/torch-test/notes.txt").exists(),
            "{installer}: data file not installed"
        );
        // Text that merely contains the version is left alone.
        let version_py = fs_err::read_to_string(
            fs_err::read_dir(venv.join("lib"))
                .expect("lib")
                .next()
                .expect("python dir")
                .expect("entry")
                .path()
                .join("site-packages/torch/version.py"),
        )
        .expect("version.py");
        assert!(
            version_py.contains("git_version = 'abc2.10.0a0+rocm7.13.0a20260430'"),
            "{version_py}"
        );
    }
}

#[test]
fn defective_sources_are_refused_and_nothing_is_written() {
    let root = tempfile::tempdir().expect("tempdir");
    let root = root.path();
    let staged = root.join("staged");
    let wheel = build_wheel(root, "triton", "3.5.0a0+git1a2b3c4d", &[], &staged);
    let bytes = fs_err::read(&wheel).expect("read");
    let broken = root.join("broken");
    fs_err::create_dir_all(&broken).expect("mkdir");
    // A truncated upload, and a file renamed without its metadata (TheRock W6).
    let truncated = broken.join("triton-3.5.0a0+git1a2b3c4d-py3-none-any.whl");
    fs_err::write(&truncated, &bytes[..bytes.len() - 30]).expect("write");
    let renamed = broken.join("triton-3.6.0a0-py3-none-any.whl");
    fs_err::write(&renamed, &bytes).expect("write");
    let out = root.join("out");
    for (source, expected) in [
        (&truncated, "the archive is truncated"),
        (
            &renamed,
            "METADATA says version 3.5.0a0+git1a2b3c4d but the file name says 3.6.0a0",
        ),
    ] {
        let error = rewrite_set(
            std::slice::from_ref(source),
            Promotion::Final,
            PublicVersion::Promote,
            None,
            &out,
        )
        .expect_err("refused")
        .to_string();
        assert!(error.starts_with(&source.display().to_string()), "{error}");
        assert!(error.contains(expected), "{error}");
    }
    let left = fs_err::read_dir(&out).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0, "files left in {}", out.display());
}

#[test]
fn a_zip64_wheel_is_rewritten_by_raw_copy() {
    let root = tempfile::tempdir().expect("tempdir");
    let root = root.path();
    let staged = root.join("staged");
    fs_err::create_dir_all(&staged).expect("mkdir");
    // Python's zipfile with a tiny ZIP64 limit writes ZIP64 records and extra fields,
    // as it does for wheels over 4 GiB.
    let script = r#"
import base64, hashlib, random, sys, zipfile
zipfile.ZIP64_LIMIT = 1024
files = {"big/__init__.py": b"from .version import __version__\n", "big/version.py": b"__version__ = '1.0a3'\n", "big/blob.bin": random.Random(7).randbytes(50000),
         "big-1.0a3.dist-info/METADATA": b"Metadata-Version: 2.1\nName: big\nVersion: 1.0a3\n",
         "big-1.0a3.dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
record = "".join(f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}\n" for n, d in files.items())
files["big-1.0a3.dist-info/RECORD"] = (record + "big-1.0a3.dist-info/RECORD,,\n").encode()
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for n, d in files.items():
        z.writestr(n, d)
"#;
    let source = staged.join("big-1.0a3-py3-none-any.whl");
    run(command("python3", root).arg("-c").arg(script).arg(&source));
    let stack = crate::stack::Stack::load(None).expect("stack");
    let options = crate::verify::Expectations::for_stack(&stack, Default::default());
    let before =
        crate::verify::verify_set(std::slice::from_ref(&source), &options).expect("verifies");
    assert!(before.ok && before.wheels[0].zip64, "{before:?}");

    let out = root.join("out");
    let rewritten = rewrite_set(
        std::slice::from_ref(&source),
        Promotion::ReleaseCandidate(1),
        PublicVersion::Keep,
        None,
        &out,
    )
    .expect("rewrites");
    assert_eq!(rewritten[0].path, out.join("big-1.0rc1-py3-none-any.whl"));
    assert_eq!(
        raw_bytes(&source, "big/blob.bin"),
        raw_bytes(&rewritten[0].path, "big/blob.bin")
    );
    let after = crate::verify::verify_set(std::slice::from_ref(&rewritten[0].path), &options)
        .expect("verifies");
    assert!(after.ok, "{:?}", after.wheels[0].problems);
    // uv is the strict one (zip's own raw copy produced wheels it refuses).
    let venv = root.join("venv");
    run(command("python3", root)
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv));
    run(command(tools().join("uv"), root)
        .args([
            "pip",
            "install",
            "-q",
            "--offline",
            "--no-index",
            "--python",
        ])
        .arg(Platform::host().venv_python(&venv))
        .arg(&rewritten[0].path));
    let seen = run(command(Platform::host().venv_python(&venv), root).args([
        "-c",
        "import big, importlib.metadata as m; print(big.__version__, m.version('big'))",
    ]));
    assert_eq!(seen.trim(), "1.0rc1 1.0rc1");
    // No temporary file is left next to the result.
    let names: Vec<String> = fs_err::read_dir(&out)
        .expect("list")
        .map(|e| e.expect("e").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["big-1.0rc1-py3-none-any.whl"]);
}
