//! The sample stack of examples/: local git origins (examples/make_origins.py), venvs built
//! offline from the wheelhouse, and readers for what the sample builds produce (wheel
//! members, build records, offload bundles in `.hip_fatbin`).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use super::{TestEnv, repo_root, run_ok, tools_bin, wheelhouse};

/// What examples/make_origins.py created, read from its `origins.json`.
#[derive(Debug, Deserialize)]
pub struct SampleOrigins {
    /// The directory given to the script.
    pub dir: PathBuf,
    /// The generated rockbuild stack config (schema of configs/stack.yaml).
    pub stack_yaml: PathBuf,
    /// By project name: torch, audio, vision, triton, apex, and the submodules kineto, fmt.
    pub repos: BTreeMap<String, SampleRepo>,
}

/// One bare origin.
#[derive(Debug, Deserialize)]
pub struct SampleRepo {
    /// The bare repository on disk.
    pub path: PathBuf,
    /// Its `file://` URL.
    pub url: String,
    /// `main`, or `master` for apex.
    pub default_branch: String,
    /// Branch name -> commit SHA.
    pub branches: BTreeMap<String, String>,
    /// Tag name -> tag.
    pub tags: BTreeMap<String, SampleTag>,
}

#[derive(Debug, Deserialize)]
pub struct SampleTag {
    /// The commit the tag points at (peeled).
    pub commit: String,
    /// The tag object for annotated tags, the commit for lightweight ones.
    pub object: String,
    pub annotated: bool,
}

impl SampleOrigins {
    #[track_caller]
    pub fn repo(&self, project: &str) -> &SampleRepo {
        self.repos.get(project).unwrap_or_else(|| {
            panic!(
                "no sample origin for '{project}' (have {:?})",
                self.repos.keys()
            )
        })
    }
}

impl SampleRepo {
    #[track_caller]
    pub fn branch(&self, name: &str) -> &str {
        self.branches.get(name).unwrap_or_else(|| {
            panic!(
                "no branch '{name}' in {} (have {:?})",
                self.url,
                self.branches.keys()
            )
        })
    }

    /// The SHA at the tip of the default branch.
    pub fn head(&self) -> &str {
        self.branch(&self.default_branch)
    }
}

/// Runs examples/make_origins.py into `<env>/sample` and returns what it made.
#[track_caller]
pub fn sample_origins(env: &TestEnv) -> SampleOrigins {
    sample_origins_in(env, &env.path("sample"))
}

/// Runs examples/make_origins.py into `dir` (replacing a previous run's output there).
#[track_caller]
pub fn sample_origins_in(env: &TestEnv, dir: &Path) -> SampleOrigins {
    run_ok(
        env.command("python3")
            .arg(repo_root().join("examples/make_origins.py"))
            .arg(dir),
    );
    let text = std::fs::read_to_string(dir.join("origins.json")).expect("read origins.json");
    serde_json::from_str(&text).expect("parse origins.json")
}

/// `git clone` of `url` at `reference` (branch, tag or SHA; HEAD detached) into `dest`, with
/// every submodule, recursively. File submodules need `protocol.file.allow=always`.
#[track_caller]
pub fn clone_recursive(env: &TestEnv, url: &str, reference: &str, dest: &Path) {
    run_ok(env.command("git").args(["clone", "-q", url]).arg(dest));
    // A branch exists only as origin/<name> in the clone; tags and SHAs resolve as given.
    let commit = [
        format!("refs/remotes/origin/{reference}"),
        reference.to_string(),
    ]
    .into_iter()
    .find_map(|candidate| {
        let output = env
            .command("git")
            .arg("-C")
            .arg(dest)
            .args([
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{candidate}^{{commit}}"),
            ])
            .output()
            .expect("run git rev-parse");
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    })
    .unwrap_or_else(|| panic!("'{reference}' is not a branch, tag or commit of {url}"));
    run_ok(
        env.command("git")
            .arg("-C")
            .arg(dest)
            .args(["checkout", "-q", "--detach", &commit]),
    );
    run_ok(env.command("git").arg("-C").arg(dest).args([
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "update",
        "-q",
        "--init",
        "--recursive",
    ]));
}

/// A virtual environment with pip, setuptools, wheel, build and packaging, installed offline
/// from .tools/wheelhouse (a fraction of a second with uv).
pub struct Venv {
    pub dir: PathBuf,
}

impl Venv {
    #[track_caller]
    pub fn create(env: &TestEnv, dir: &Path) -> Venv {
        run_ok(
            env.command("python3")
                .args(["-m", "venv", "--without-pip"])
                .arg(dir),
        );
        let venv = Venv {
            dir: dir.to_path_buf(),
        };
        run_ok(
            env.command(tools_bin().join("uv"))
                .args([
                    "pip",
                    "install",
                    "-q",
                    "--offline",
                    "--no-index",
                    "--python",
                ])
                .arg(venv.python())
                .arg("--find-links")
                .arg(wheelhouse())
                .args(["pip", "setuptools", "wheel", "build", "packaging"]),
        );
        venv
    }

    pub fn python(&self) -> PathBuf {
        self.dir.join("bin/python")
    }

    pub fn bin(&self) -> PathBuf {
        self.dir.join("bin")
    }

    /// `uv pip install --python <venv> ARGS...` with the test's environment.
    pub fn uv_install(&self, env: &TestEnv) -> Command {
        let mut command = env.command(tools_bin().join("uv"));
        command
            .args(["pip", "install", "-q", "--python"])
            .arg(self.python());
        command
    }

    /// The venv's python with the test's environment.
    pub fn python_command(&self, env: &TestEnv) -> Command {
        env.command(self.python())
    }

    /// The tag of wheels with native code built by this interpreter (`cp311-cp311-linux_x86_64`).
    #[track_caller]
    pub fn wheel_tag(&self, env: &TestEnv) -> String {
        let code = "import sys, sysconfig; v = f'cp{sys.version_info[0]}{sys.version_info[1]}'; \
                    print(f\"{v}-{v}{getattr(sys, 'abiflags', '')}-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}\")";
        run_ok(self.python_command(env).args(["-c", code]))
            .trim()
            .to_string()
    }

    /// The file name suffix of extension modules (`.cpython-311-x86_64-linux-gnu.so`).
    #[track_caller]
    pub fn ext_suffix(&self, env: &TestEnv) -> String {
        let code = "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))";
        run_ok(self.python_command(env).args(["-c", code]))
            .trim()
            .to_string()
    }
}

/// The bytes of one member of a wheel (or any zip).
#[track_caller]
pub fn wheel_member(wheel: &Path, member: &str) -> Vec<u8> {
    let file =
        std::fs::File::open(wheel).unwrap_or_else(|e| panic!("open {}: {e}", wheel.display()));
    let mut archive = zip::ZipArchive::new(file).expect("read the wheel as a zip");
    let mut entry = archive
        .by_name(member)
        .unwrap_or_else(|e| panic!("{} has no member {member}: {e}", wheel.display()));
    let mut data = Vec::new();
    entry.read_to_end(&mut data).expect("read a wheel member");
    data
}

/// The names of a wheel's members.
#[track_caller]
pub fn wheel_members(wheel: &Path) -> Vec<String> {
    let file =
        std::fs::File::open(wheel).unwrap_or_else(|e| panic!("open {}: {e}", wheel.display()));
    let archive = zip::ZipArchive::new(file).expect("read the wheel as a zip");
    archive
        .file_names()
        .map(|name| name.expect("a member name").into_owned())
        .collect()
}

/// The one wheel in `dir` whose file name starts with `<distribution>-`.
#[track_caller]
pub fn only_wheel(dir: &Path, distribution: &str) -> PathBuf {
    let prefix = format!("{distribution}-");
    let wheels: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.starts_with(&prefix) && name.ends_with(".whl")
        })
        .collect();
    assert_eq!(
        wheels.len(),
        1,
        "expected one {distribution} wheel in {}, found {wheels:?}",
        dir.display()
    );
    wheels.into_iter().next().expect("one wheel")
}

/// `Requires-Dist` values of a wheel's METADATA.
#[track_caller]
pub fn requires_dist(wheel: &Path) -> Vec<String> {
    let metadata = wheel_dist_info_file(wheel, "METADATA");
    metadata
        .lines()
        .filter_map(|l| l.strip_prefix("Requires-Dist: "))
        .map(str::to_string)
        .collect()
}

/// A file of the wheel's `.dist-info` directory, as text.
#[track_caller]
pub fn wheel_dist_info_file(wheel: &Path, name: &str) -> String {
    let member = wheel_members(wheel)
        .into_iter()
        .find(|m| m.ends_with(&format!(".dist-info/{name}")) && m.matches('/').count() == 1)
        .unwrap_or_else(|| panic!("{} has no .dist-info/{name}", wheel.display()));
    String::from_utf8(wheel_member(wheel, &member)).expect("UTF-8 dist-info file")
}

/// The record a sample build wrote next to its build tree (`build/sample-build-record.json`).
#[track_caller]
pub fn build_record(source_dir: &Path) -> serde_json::Value {
    let path = source_dir.join("build/sample-build-record.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).expect("parse the build record")
}

/// The record a sample build put inside its wheel (`<package>/_sample_build_record.json`).
#[track_caller]
pub fn wheel_build_record(wheel: &Path, package: &str) -> serde_json::Value {
    let data = wheel_member(wheel, &format!("{package}/_sample_build_record.json"));
    serde_json::from_slice(&data).expect("parse the wheel's build record")
}

const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";

/// The entry IDs of every clang offload bundle in an ELF file's `.hip_fatbin` section
/// (`hipv4-amdgcn-amd-amdhsa--gfx906`, `host-x86_64-unknown-linux`, ...), in order, without
/// duplicates. Empty when the file has no `.hip_fatbin`.
#[track_caller]
pub fn offload_bundle_ids(elf: &[u8]) -> Vec<String> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(elf).expect("parse an ELF file");
    let Some(section) = file.section_by_name(".hip_fatbin") else {
        return Vec::new();
    };
    let data = section.data().expect(".hip_fatbin data");
    let u64_at = |at: usize| -> usize {
        let bytes: [u8; 8] = data[at..at + 8].try_into().expect("8 bytes");
        usize::try_from(u64::from_le_bytes(bytes)).expect("fits usize")
    };
    let mut ids = Vec::new();
    let mut start = 0;
    while let Some(found) = data[start..]
        .windows(BUNDLE_MAGIC.len())
        .position(|w| w == BUNDLE_MAGIC)
    {
        let bundle = start + found;
        let mut at = bundle + BUNDLE_MAGIC.len();
        let entries = u64_at(at);
        at += 8;
        for _ in 0..entries {
            let id_len = u64_at(at + 16);
            let id = String::from_utf8_lossy(&data[at + 24..at + 24 + id_len]).into_owned();
            if !ids.contains(&id) {
                ids.push(id);
            }
            at += 24 + id_len;
        }
        start = at;
    }
    ids
}

/// The gfx targets with device code in an ELF file (from `offload_bundle_ids`).
#[track_caller]
pub fn offload_targets(elf: &[u8]) -> Vec<String> {
    offload_bundle_ids(elf)
        .iter()
        .filter_map(|id| {
            id.split_once("amdgcn-amd-amdhsa--")
                .map(|(_, target)| target.to_string())
        })
        .collect()
}
