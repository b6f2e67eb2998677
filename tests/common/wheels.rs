//! Building wheels for tests: valid ones (a real zip with METADATA, WHEEL and a correct RECORD,
//! which pip and uv install) and deliberately broken ones (entries outside RECORD, edited
//! RECORD lines, a file name that disagrees with the metadata, truncation). GPU libraries are
//! real: compiled once per test run by Debian's hipcc and cached under the target directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine as _;
use sha2::Digest as _;

/// A wheel under construction. `build` writes `<dir>/<file name>`.
pub struct WheelBuilder {
    name: String,
    version: String,
    tag: String,
    files: Vec<(String, Vec<u8>)>,
    unlisted: Vec<(String, Vec<u8>)>,
    requires: Vec<String>,
    provides_extra: Vec<String>,
    file_name_version: Option<String>,
    record_edit: Option<Box<dyn Fn(String) -> String>>,
}

impl WheelBuilder {
    /// A wheel of `name` (the distribution name, e.g. `torch`) at `version`, tagged
    /// `cp311-cp311-linux_x86_64`, holding `<package>/__init__.py`.
    pub fn new(name: &str, version: &str) -> Self {
        let package = name.replace('-', "_");
        WheelBuilder {
            name: name.to_string(),
            version: version.to_string(),
            tag: "cp311-cp311-linux_x86_64".to_string(),
            files: vec![(
                format!("{package}/__init__.py"),
                format!("__version__ = '{version}'\n").into_bytes(),
            )],
            unlisted: Vec::new(),
            requires: Vec::new(),
            provides_extra: Vec::new(),
            file_name_version: None,
            record_edit: None,
        }
    }

    pub fn tag(mut self, tag: &str) -> Self {
        self.tag = tag.to_string();
        self
    }

    /// A file listed in RECORD.
    pub fn file(mut self, path: &str, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.push((path.to_string(), bytes.into()));
        self
    }

    /// A file listed in RECORD, replacing one of the same path (the default `__init__.py`).
    pub fn replace(mut self, path: &str, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.retain(|(existing, _)| existing != path);
        self.file(path, bytes)
    }

    /// A file listed in RECORD, copied from disk (a compiled library).
    #[track_caller]
    pub fn file_from(self, path: &str, source: &Path) -> Self {
        let bytes =
            std::fs::read(source).unwrap_or_else(|e| panic!("read {}: {e}", source.display()));
        self.file(path, bytes)
    }

    /// An archive entry RECORD does not list (for zip-slip and unlisted-content cases).
    pub fn unlisted(mut self, path: &str, bytes: impl Into<Vec<u8>>) -> Self {
        self.unlisted.push((path.to_string(), bytes.into()));
        self
    }

    /// A `Requires-Dist` line.
    pub fn requires(mut self, requirement: &str) -> Self {
        self.requires.push(requirement.to_string());
        self
    }

    pub fn provides_extra(mut self, extra: &str) -> Self {
        self.provides_extra.push(extra.to_string());
        self
    }

    /// Writes another version into the file name only (what TheRock's W6 did).
    pub fn file_name_version(mut self, version: &str) -> Self {
        self.file_name_version = Some(version.to_string());
        self
    }

    /// Edits the finished RECORD text before it is written.
    pub fn edit_record(mut self, edit: impl Fn(String) -> String + 'static) -> Self {
        self.record_edit = Some(Box::new(edit));
        self
    }

    pub fn file_name(&self) -> String {
        let version = self.file_name_version.as_deref().unwrap_or(&self.version);
        format!("{}-{version}-{}.whl", self.name.replace('-', "_"), self.tag)
    }

    pub fn dist_info(&self) -> String {
        format!("{}-{}.dist-info", self.name.replace('-', "_"), self.version)
    }

    /// Writes the wheel into `dir` and returns its path.
    #[track_caller]
    pub fn build(self, dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir).expect("create wheel dir");
        let dist_info = self.dist_info();
        let mut metadata = format!(
            "Metadata-Version: 2.1\nName: {}\nVersion: {}\nSummary: test wheel\nRequires-Python: >=3.9\n",
            self.name, self.version
        );
        for requirement in &self.requires {
            metadata.push_str(&format!("Requires-Dist: {requirement}\n"));
        }
        for extra in &self.provides_extra {
            metadata.push_str(&format!("Provides-Extra: {extra}\n"));
        }
        let wheel = format!(
            "Wheel-Version: 1.0\nGenerator: rockbuild-tests\nRoot-Is-Purelib: false\nTag: {}\n",
            self.tag
        );
        let mut listed = self.files.clone();
        listed.push((format!("{dist_info}/METADATA"), metadata.into_bytes()));
        listed.push((format!("{dist_info}/WHEEL"), wheel.into_bytes()));
        let mut record = String::new();
        for (path, bytes) in &listed {
            record.push_str(&format!("{path},{},{}\n", record_hash(bytes), bytes.len()));
        }
        record.push_str(&format!("{dist_info}/RECORD,,\n"));
        if let Some(edit) = &self.record_edit {
            record = edit(record);
        }
        let path = dir.join(self.file_name());
        let file = std::fs::File::create(&path).expect("create wheel");
        let mut writer = zip::ZipWriter::new(file);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(0o644);
        let record_entry = (format!("{dist_info}/RECORD"), record.into_bytes());
        for (entry, bytes) in listed
            .iter()
            .chain(&self.unlisted)
            .chain(std::iter::once(&record_entry))
        {
            writer
                .start_file(entry.as_str(), options)
                .expect("start entry");
            writer.write_all(bytes).expect("write entry");
        }
        writer.finish().expect("finish wheel");
        path
    }
}

/// `sha256=<urlsafe-b64-nopad>` as RECORD writes it.
pub fn record_hash(bytes: &[u8]) -> String {
    format!(
        "sha256={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes))
    )
}

/// Cuts a file to `len` bytes (a truncated upload).
pub fn truncate(path: &Path, len: u64) {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    file.set_len(len).expect("truncate");
}

/// Where compiled test libraries are cached between tests and runs.
fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rockbuild-native-cache")
}

/// Compiles once per distinct command and caches the output; concurrent test processes
/// wait for the one that compiles (a lock file), so hipcc never runs twice for one library.
#[track_caller]
pub fn cached_build(
    key_parts: &[&str],
    source_name: &str,
    source: &str,
    build: impl Fn(&Path, &Path) -> Command,
) -> PathBuf {
    let key = hex::encode(&sha2::Sha256::digest(format!("{key_parts:?}{source}").as_bytes())[..8]);
    let dir = cache_dir().join(&key);
    let output = dir.join("lib.so");
    if output.exists() {
        return output;
    }
    std::fs::create_dir_all(&dir).expect("cache dir");
    let lock = dir.join("lock");
    let started = Instant::now();
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
        {
            Ok(_) => break,
            Err(_) if output.exists() => return output,
            Err(_) => {
                // A lock older than five minutes belongs to a killed run.
                let stale = std::fs::metadata(&lock)
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t.elapsed().unwrap_or_default() > Duration::from_secs(300));
                if stale {
                    let _ = std::fs::remove_file(&lock);
                }
                assert!(
                    started.elapsed() < Duration::from_secs(600),
                    "waited 10 minutes for {}",
                    lock.display()
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    let work = tempfile::tempdir_in(&dir).expect("work dir");
    let source_path = work.path().join(source_name);
    std::fs::write(&source_path, source).expect("write source");
    let temp_output = work.path().join("lib.so");
    let mut command = build(&source_path, &temp_output);
    let result = command.output().expect("spawn compiler");
    let _ = std::fs::remove_file(&lock);
    assert!(
        result.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&result.stdout),
        String::from_utf8_lossy(&result.stderr)
    );
    std::fs::rename(&temp_output, &output).expect("publish library");
    output
}

const HIP_SOURCE: &str = r#"#include <hip/hip_runtime.h>
__global__ void scale(float* x, float f) { x[threadIdx.x] *= f; }
extern "C" int rockbuild_scale(float* x, float f) {
    hipLaunchKernelGGL(scale, dim3(1), dim3(64), 0, 0, x, f);
    return hipDeviceSynchronize() == hipSuccess ? 0 : 1;
}
"#;

/// A shared library with a real HIP kernel for `targets` (gfx906, gfx1030, …), compiled by
/// Debian's hipcc: its `.hip_fatbin` holds an offload bundle listing exactly those targets,
/// and it links libamdhip64.
#[track_caller]
pub fn hip_library(targets: &[&str]) -> PathBuf {
    let mut key = vec!["hipcc"];
    key.extend_from_slice(targets);
    cached_build(&key, "kernel.hip", HIP_SOURCE, |source, output| {
        let mut command = Command::new("/usr/bin/hipcc");
        // Debian's hipcc finds clang through ROCM_PATH.
        command.env("ROCM_PATH", "/usr");
        for target in targets {
            command.arg(format!("--offload-arch={target}"));
        }
        command
            .args(["-fPIC", "-shared", "-o"])
            .arg(output)
            .arg(source);
        command
    })
}

const C_SOURCE: &str = "int rockbuild_cpu_only(int x) { return x * 2; }\n";

/// A plain C shared library (no GPU code, no HIP runtime), with an optional RPATH entry.
#[track_caller]
pub fn cpu_library(rpath: Option<&str>) -> PathBuf {
    let flag = rpath.map(|r| format!("-Wl,-rpath,{r}")).unwrap_or_default();
    cached_build(&["cc", &flag], "cpu.c", C_SOURCE, |source, output| {
        let mut command = Command::new("cc");
        command
            .args(["-fPIC", "-shared", "-o"])
            .arg(output)
            .arg(source);
        if !flag.is_empty() {
            command.arg(&flag);
        }
        command
    })
}

/// A C shared library compiled from `source` by the system compiler (glibc symbol versions
/// as this machine's glibc assigns them).
#[track_caller]
pub fn c_library(source: &str) -> PathBuf {
    cached_build(&["cc"], "lib.c", source, |source, output| {
        let mut command = Command::new("cc");
        command
            .args(["-fPIC", "-shared", "-o"])
            .arg(output)
            .arg(source);
        command
    })
}

/// `python3 -m http.server` over a directory on 127.0.0.1; stopped on drop.
pub struct HttpServer {
    child: std::process::Child,
    pub url: String,
}

impl HttpServer {
    #[track_caller]
    pub fn serve(dir: &Path) -> HttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let child = Command::new("python3")
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
                "--directory",
            ])
            .arg(dir)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start http.server");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "http.server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        HttpServer {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes a PEP 503 project page `<root>/<name>/index.html` linking `files` (which are copied
/// next to it), as a static index http.server can serve.
#[track_caller]
pub fn write_simple_index(root: &Path, name: &str, files: &[PathBuf]) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("index dir");
    let mut html = String::from("<!DOCTYPE html><html><body>\n");
    for file in files {
        let file_name = file
            .file_name()
            .expect("file name")
            .to_string_lossy()
            .into_owned();
        std::fs::copy(file, dir.join(&file_name)).expect("copy into index");
        let digest = hex::encode(sha2::Sha256::digest(std::fs::read(file).expect("read")));
        let href = file_name.replace('+', "%2B");
        html.push_str(&format!(
            "<a href=\"{href}#sha256={digest}\">{file_name}</a><br/>\n"
        ));
    }
    html.push_str("</body></html>\n");
    std::fs::write(dir.join("index.html"), html).expect("write page");
}
