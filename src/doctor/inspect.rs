//! The I/O of doctor: every program through the runner with a timeout, every file read once.
//! Nothing here decides pass or fail.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::env_vars;
use crate::exec::{Cmd, Runner};
use crate::sdk::{ROCM_DIST, SdkInfo, Venv};

use super::disk::{self, FsFacts, Role};

/// How long a version query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the test compile may take (hipcc for a few targets takes seconds).
const COMPILE_TIMEOUT: Duration = Duration::from_secs(300);
/// How many entries of a checkout the longest-name scan looks at before it stops.
const SCAN_LIMIT: usize = 500_000;

/// What a program answered: its first output line, or why it could not be asked.
pub type Probe = Result<String, String>;

/// Everything doctor looked at.
#[derive(Clone, Debug)]
pub struct Facts {
    pub git: Probe,
    pub python: Probe,
    pub venv: VenvFacts,
    pub hipcc: HipccFacts,
    pub ccache: Probe,
    pub sccache: Probe,
    pub locations: Vec<Location>,
    pub index: Option<IndexFacts>,
    pub commits: CommitFacts,
}

#[derive(Clone, Debug)]
pub struct VenvFacts {
    pub dir: PathBuf,
    pub exists: bool,
    /// `<venv>/bin/python --version`.
    pub python: Option<Probe>,
    /// The installed `rocm` distribution's version.
    pub rocm: Option<String>,
}

#[derive(Clone, Debug)]
pub struct HipccFacts {
    /// The hipcc doctor found, and where it looked.
    pub hipcc: Option<PathBuf>,
    pub searched: String,
    /// The device-library directory and the targets whose ISA bitcode it lacks.
    pub device_libs: Option<PathBuf>,
    pub device_libs_searched: Vec<PathBuf>,
    pub missing_bitcode: Vec<String>,
    /// The test compile, when one ran: the targets it failed for (empty: compiled).
    pub compile: Option<CompileFacts>,
}

#[derive(Clone, Debug)]
pub struct CompileFacts {
    pub targets: Vec<String>,
    pub failed_targets: Vec<String>,
    /// The compiler's last lines when it failed.
    pub tail: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct Location {
    pub role: Role,
    pub path: PathBuf,
    pub fs: Result<FsFacts, String>,
    /// Whether a file can be created in the nearest existing ancestor.
    pub writable: Result<(), String>,
    /// The longest file name in the tree below `path` (when it exists), in bytes.
    pub longest_name: Option<(usize, PathBuf)>,
}

#[derive(Clone, Debug)]
pub struct IndexFacts {
    pub url: String,
    /// The HTTP status of the `rocm` project page, or why there was none.
    pub status: Result<u16, String>,
}

#[derive(Clone, Debug)]
pub struct CommitFacts {
    /// Seconds since the epoch, now.
    pub now: i64,
    /// (checkout, committer time of HEAD) for each checkout looked at.
    pub heads: Vec<(PathBuf, i64)>,
    /// Checkouts whose commit date could not be read.
    pub unreadable: Vec<(PathBuf, String)>,
}

/// What inspection needs to know.
pub struct Inputs<'a> {
    pub venv: &'a Path,
    pub locations: [(Role, &'a Path); 3],
    pub targets: Option<&'a [String]>,
    pub compile: bool,
    pub index_url: Option<&'a str>,
    pub network_timeout: Duration,
    /// Project checkouts to read commit dates from.
    pub checkouts: Vec<PathBuf>,
    /// A directory for the test compile's files.
    pub scratch: &'a Path,
}

pub fn inspect(runner: &Runner, inputs: &Inputs) -> Facts {
    let venv = inspect_venv(runner, inputs.venv);
    Facts {
        git: first_line(
            runner,
            Cmd::new("git").arg("--version").label("git --version"),
        ),
        python: first_line(
            runner,
            Cmd::new("python3")
                .arg("--version")
                .label("python3 --version"),
        ),
        hipcc: inspect_hipcc(runner, inputs, &venv),
        venv,
        ccache: first_line(
            runner,
            Cmd::new("ccache")
                .arg("--version")
                .label("ccache --version"),
        ),
        sccache: first_line(
            runner,
            Cmd::new("sccache")
                .arg("--version")
                .label("sccache --version"),
        ),
        locations: inputs
            .locations
            .iter()
            .map(|(role, path)| inspect_location(*role, path))
            .collect(),
        index: inputs.index_url.map(|url| IndexFacts {
            url: crate::redact::redact_url(url),
            status: index_status(url, inputs.network_timeout),
        }),
        commits: inspect_commits(runner, &inputs.checkouts),
    }
}

fn first_line(runner: &Runner, cmd: Cmd) -> Probe {
    let cmd = cmd.timeout(QUERY_TIMEOUT).capture_stdout();
    match runner.run(&cmd) {
        Ok(output) => {
            // `python3 --version` printed to stderr before Python 3.4; take whichever has text.
            let text = if output.stdout.trim().is_empty() {
                output.tail.join("\n")
            } else {
                output.stdout
            };
            Ok(text.lines().next().unwrap_or_default().trim().to_string())
        }
        Err(error) => Err(error
            .to_string()
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()),
    }
}

fn inspect_venv(runner: &Runner, dir: &Path) -> VenvFacts {
    let venv = Venv::new(dir);
    let exists = venv.exists();
    VenvFacts {
        dir: dir.to_path_buf(),
        exists,
        python: exists.then(|| {
            first_line(
                runner,
                Cmd::new(venv.python())
                    .arg("--version")
                    .label("venv python --version"),
            )
        }),
        rocm: exists.then(|| venv.installed_version(ROCM_DIST)).flatten(),
    }
}

/// The SDK's hipcc when the venv has an SDK (its recorded root, else the SDK's own answer),
/// else hipcc on PATH.
fn inspect_hipcc(runner: &Runner, inputs: &Inputs, venv: &VenvFacts) -> HipccFacts {
    let sdk = venv.rocm.as_ref().and_then(|_| {
        let venv = Venv::new(&venv.dir);
        SdkInfo::read_record(&venv).or_else(|| crate::sdk::query(runner, &venv).ok())
    });
    let (hipcc, searched) = match &sdk {
        Some(info) => {
            let path = info.bin.join("hipcc");
            (
                path.is_file().then_some(path),
                format!("the SDK in {}", venv.dir.display()),
            )
        }
        None => (which(runner, "hipcc"), "PATH".to_string()),
    };
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(info) = &sdk {
        candidates.push(info.root.join("lib/llvm/amdgcn/bitcode"));
    }
    let env = runner.base_env();
    if let Some(dir) = env.non_empty(env_vars::HIP_DEVICE_LIB_PATH) {
        candidates.push(PathBuf::from(dir));
    }
    if let Some(rocm) = env.non_empty(env_vars::ROCM_PATH) {
        candidates.push(Path::new(rocm).join("amdgcn/bitcode"));
        candidates.push(Path::new(rocm).join("lib/llvm/amdgcn/bitcode"));
    }
    // Where ROCm packages put them: /opt/rocm (AMD's), /usr/lib/<triple> (Debian's).
    for dir in [
        "/opt/rocm/amdgcn/bitcode",
        "/opt/rocm/lib/llvm/amdgcn/bitcode",
        "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
        "/usr/lib/amdgcn/bitcode",
    ] {
        candidates.push(PathBuf::from(dir));
    }
    let device_libs = candidates.iter().find(|d| d.is_dir()).cloned();
    let targets = inputs.targets.unwrap_or_default();
    let missing_bitcode = match &device_libs {
        Some(dir) => targets
            .iter()
            .filter(|t| !dir.join(isa_bitcode(t)).is_file())
            .cloned()
            .collect(),
        None => targets.to_vec(),
    };
    let compile = match (&hipcc, inputs.compile && !targets.is_empty()) {
        (Some(hipcc), true) => Some(test_compile(runner, hipcc, targets, inputs.scratch)),
        _ => None,
    };
    HipccFacts {
        hipcc,
        searched,
        device_libs,
        device_libs_searched: candidates,
        missing_bitcode,
        compile,
    }
}

/// The ROCm device library that holds a target's ISA constants (ROCm-Device-Libs names it
/// `oclc_isa_version_<digits>.bc`: gfx90a → 90a, gfx1100 → 1100).
pub fn isa_bitcode(target: &str) -> String {
    format!("oclc_isa_version_{}.bc", target.trim_start_matches("gfx"))
}

fn which(runner: &Runner, program: &str) -> Option<PathBuf> {
    let path = runner.base_env().get(env_vars::PATH)?.to_string();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

const TEST_KERNEL: &str = "// rockbuild doctor: does hipcc compile device code for the requested targets?\n\
#include <hip/hip_runtime.h>\n\
__global__ void rockbuild_doctor_scale(float* values, float factor) {\n\
  values[blockIdx.x * blockDim.x + threadIdx.x] *= factor;\n\
}\n";

/// Compiles a small kernel for every target at once; when that fails, once per target to name
/// the ones the compiler rejects.
fn test_compile(runner: &Runner, hipcc: &Path, targets: &[String], scratch: &Path) -> CompileFacts {
    let source = scratch.join("rockbuild_doctor.hip");
    if let Err(error) = crate::fsutil::write(&source, TEST_KERNEL.as_bytes()) {
        return CompileFacts {
            targets: targets.to_vec(),
            failed_targets: targets.to_vec(),
            tail: vec![error.to_string()],
        };
    }
    let compile = |targets: &[String]| {
        let cmd = Cmd::new(hipcc)
            .args(targets.iter().map(|t| format!("--offload-arch={t}")))
            .arg("-c")
            .arg(&source)
            .arg("-o")
            .arg(scratch.join("rockbuild_doctor.o"))
            .label(format!("hipcc test compile for {}", targets.join(",")))
            .timeout(COMPILE_TIMEOUT);
        runner.run(&cmd)
    };
    match compile(targets) {
        Ok(_) => CompileFacts {
            targets: targets.to_vec(),
            failed_targets: Vec::new(),
            tail: Vec::new(),
        },
        Err(error) => {
            let tail = error.tail().to_vec();
            let failed_targets: Vec<String> = if targets.len() == 1 {
                targets.to_vec()
            } else {
                targets
                    .iter()
                    .filter(|t| compile(std::slice::from_ref(t)).is_err())
                    .cloned()
                    .collect()
            };
            CompileFacts {
                targets: targets.to_vec(),
                // All compiled alone but not together: report every target.
                failed_targets: if failed_targets.is_empty() {
                    targets.to_vec()
                } else {
                    failed_targets
                },
                tail: if tail.is_empty() {
                    vec![error.to_string()]
                } else {
                    tail
                },
            }
        }
    }
}

fn inspect_location(role: Role, path: &Path) -> Location {
    let fs = disk::inspect(path).map_err(|e| e.to_string());
    let writable = match disk::existing_ancestor(path) {
        Some(dir) => tempfile::tempfile_in(dir)
            .map(drop)
            .map_err(|e| format!("cannot create a file in {}: {e}", dir.display())),
        None => Err(format!("no part of {} exists", path.display())),
    };
    Location {
        role,
        path: path.to_path_buf(),
        fs,
        writable,
        longest_name: path.is_dir().then(|| longest_name(path)).flatten(),
    }
}

/// The longest file name below `dir` (the scan stops after [`SCAN_LIMIT`] entries).
fn longest_name(dir: &Path) -> Option<(usize, PathBuf)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .take(SCAN_LIMIT)
        .map(|entry| (entry.file_name().len(), entry.into_path()))
        .max_by_key(|(len, _)| *len)
}

/// GETs the index's `rocm` project page (what install-rocm reads first).
fn index_status(url: &str, timeout: Duration) -> Result<u16, String> {
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        let dir = url.strip_prefix("file://").unwrap_or(url);
        return if Path::new(dir).join("rocm").is_dir() {
            Ok(200)
        } else {
            Err(format!("{dir}/rocm is not a directory"))
        };
    }
    let page = format!("{}/rocm/", url.trim_end_matches('/'));
    let client = reqwest::blocking::Client::builder()
        .connect_timeout(timeout)
        .timeout(timeout)
        .build()
        .map_err(|e| e.to_string())?;
    client
        .get(&page)
        .send()
        .map(|response| response.status().as_u16())
        .map_err(|error| {
            let kind = if error.is_timeout() {
                format!("no answer within {}s", timeout.as_secs())
            } else if error.is_connect() {
                "could not connect".to_string()
            } else {
                "request failed".to_string()
            };
            // reqwest's message carries the URL (ours names it already, masked); the innermost
            // cause says what happened ("Connection refused").
            let mut cause = String::new();
            let mut source = std::error::Error::source(&error);
            while let Some(inner) = source {
                cause = inner.to_string();
                source = inner.source();
            }
            if cause.is_empty() {
                kind
            } else {
                format!("{kind}: {cause}")
            }
        })
}

fn inspect_commits(runner: &Runner, checkouts: &[PathBuf]) -> CommitFacts {
    let mut heads = Vec::new();
    let mut unreadable = Vec::new();
    for dir in checkouts.iter().filter(|d| d.join(".git").exists()) {
        let cmd = crate::git::Git::new(dir, dir.display().to_string())
            .cmd(["log", "-1", "--format=%ct"])
            .timeout(QUERY_TIMEOUT)
            .capture_stdout();
        match runner.run(&cmd).map(|o| o.stdout.trim().parse::<i64>()) {
            Ok(Ok(time)) => heads.push((dir.clone(), time)),
            Ok(Err(error)) => unreadable.push((dir.clone(), error.to_string())),
            Err(error) => unreadable.push((
                dir.clone(),
                error
                    .to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            )),
        }
    }
    CommitFacts {
        now: jiff::Timestamp::now().as_second(),
        heads,
        unreadable,
    }
}
