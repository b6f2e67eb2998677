//! Publishing on real parts: index pages pip and uv install from over HTTP (hash-checked),
//! smoke tests in real venvs, promotion gated on their reports, the embedded S3 server.
//! This file holds the worlds the tests build; each area is a module of its own.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use crate::common::TestEnv;
use crate::common::http;
use crate::common::pyindex::{
    build_wheel, copy_tree, hashed_requirements, install_with_pip_and_uv, python, sha256_file,
    wheel_metadata,
};
use crate::common::s3::{S3Server, WriteRule};
use crate::common::snapshot;

mod companions;
mod index;
mod promotion;
mod s3;
mod smoke;
mod staging;

const TORCH: &str = "rock_torch-1.0+rocm7.0.0-py3-none-any.whl";

const VISION: &str = "rock_vision-0.1+rocm7.0.0-py3-none-any.whl";

/// A two-project stack whose wheels the tests build (names differ from the real stack's so
/// nothing from a real index could be confused with them).
const STACK: &str = r#"schema: 1
projects:
  torch:
    checkout-dir: pytorch
    origin: file:///nonexistent/torch
    ref: main
    wheel: rock-torch
    recipe: torch
    hipify: {mode: off}
    smoke: "import rock_torch; print('torch', rock_torch.__version__)"
  vision:
    checkout-dir: vision
    origin: file:///nonexistent/vision
    ref: main
    wheel: rock-vision
    recipe: vision
    pinned-by:
      project: torch
      related-commits: {file: related_commits, os: ubuntu, key: vision}
    hipify: {mode: off}
    smoke: "import rock_vision; print('vision', rock_vision.__version__)"
"#;

pub(crate) struct World {
    pub(crate) env: TestEnv,
    wheels: PathBuf,
}

impl World {
    fn new() -> World {
        let env = TestEnv::new();
        std::fs::write(env.path("stack.yaml"), STACK).expect("stack");
        let wheels = env.path("dist");
        World { env, wheels }
    }

    /// The torch/vision pair at a local version, vision pinning torch exactly.
    fn build_set(&self, local: &str, blob: usize) -> Vec<PathBuf> {
        let dir = self.wheels.join(local);
        vec![
            build_wheel(
                &self.env,
                &dir,
                "rock-torch",
                &format!("1.0+{local}"),
                json!({"requires_python": ">=3.8", "blob": blob}),
            ),
            build_wheel(
                &self.env,
                &dir,
                "rock-vision",
                &format!("0.1+{local}"),
                json!({"requires": [format!("rock-torch==1.0+{local}")], "requires_python": ">=3.8"}),
            ),
        ]
    }

    /// The torch/vision pair built against ROCm `sdk`: like TheRock's torch, rock-torch pins
    /// `rocm[libraries]` at that version (and imports rocm_sdk), vision pins torch.
    fn build_sdk_pinned_set(&self, sdk: &str) -> Vec<PathBuf> {
        let dir = self.wheels.join(format!("pinned-{sdk}"));
        vec![
            build_wheel(
                &self.env,
                &dir,
                "rock-torch",
                &format!("1.0+rocm{sdk}"),
                json!({"requires": [format!("rocm[libraries]=={sdk}")], "code": "import rocm_sdk\n"}),
            ),
            build_wheel(
                &self.env,
                &dir,
                "rock-vision",
                &format!("0.1+rocm{sdk}"),
                json!({"requires": [format!("rock-torch==1.0+rocm{sdk}")]}),
            ),
        ]
    }

    /// Lays wheels out the way stage does (`<name>/<file>` + `.metadata`), then indexes.
    fn stage_by_hand(&self, dir: &Path, wheels: &[PathBuf]) {
        for wheel in wheels {
            let file = wheel.file_name().and_then(|f| f.to_str()).expect("name");
            let project = file.split('-').next().expect("name").replace('_', "-");
            std::fs::create_dir_all(dir.join(&project)).expect("mkdir");
            std::fs::copy(wheel, dir.join(&project).join(file)).expect("copy");
            std::fs::write(
                dir.join(&project).join(format!("{file}.metadata")),
                wheel_metadata(wheel),
            )
            .expect("sidecar");
        }
        self.env
            .rockbuild()
            .arg("index")
            .arg(dir)
            .assert()
            .success();
    }

    pub(crate) fn smoke(&self, index_url: &str, report: &str) -> assert_cmd::assert::Assert {
        self.env
            .rockbuild()
            .args([
                "smoke",
                "--config",
                "stack.yaml",
                "--index-url",
                index_url,
                "--report",
                report,
            ])
            .assert()
    }

    fn promote(&self, from: &str, to: &str, extra: &[&str]) -> assert_cmd::assert::Assert {
        self.env
            .rockbuild()
            .args(["promote", "--from", from, "--to", to])
            .args(extra)
            .assert()
    }
}

pub(crate) fn stderr(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

fn stdout(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
}

/// The real project names, with smoke commands the test wheels can pass.
pub(crate) const GPU_STACK: &str = r#"schema: 1
projects:
  torch:
    checkout-dir: pytorch
    origin: file:///nonexistent/torch
    ref: main
    wheel: torch
    recipe: torch
    hipify: {mode: off}
    smoke: "import torch; print('torch', torch.__version__)"
  triton:
    checkout-dir: triton
    origin: file:///nonexistent/triton
    ref: main
    wheel: triton
    recipe: triton
    pinned-by:
      project: torch
      related-commits: {file: related_commits, os: ubuntu, key: triton}
    hipify: {mode: off}
    smoke: "import triton; print('triton', triton.__version__)"
  vision:
    checkout-dir: vision
    origin: file:///nonexistent/vision
    ref: main
    wheel: torchvision
    recipe: vision
    pinned-by:
      project: torch
      related-commits: {file: related_commits, os: ubuntu, key: torchvision}
    hipify: {mode: off}
    smoke: "import torchvision; print('vision', torchvision.__version__)"
"#;

const TRITON_V: &str = "3.5.0+git1a2b3c4d";

/// A nightly set that passes verification: torch with a real HIP library (gfx906 and
/// gfx1030, linking libamdhip64) pinning triton, torchvision with GPU code pinning torch.
/// `sdk` is the SDK build in the local label; a later build sorts higher.
fn gpu_set(dir: &Path, sdk: &str) -> Vec<PathBuf> {
    use crate::common::wheels::{WheelBuilder, cpu_library, hip_library};
    let torch = format!("2.10.0a0+rocm{sdk}");
    let vision = format!("0.25.0a0+rocm{sdk}");
    vec![
        WheelBuilder::new("torch", &torch)
            .file_from(
                "torch/lib/libtorch_hip.so",
                &hip_library(&["gfx906", "gfx1030"]),
            )
            .file("torch/version.py", format!("__version__ = '{torch}'\n"))
            .requires(&format!("triton=={TRITON_V}"))
            .build(dir),
        WheelBuilder::new("triton", TRITON_V)
            .file_from(
                "triton/_C/libtriton.so",
                &cpu_library(Some("$ORIGIN/../lib")),
            )
            .build(dir),
        WheelBuilder::new("torchvision", &vision)
            .file_from("torchvision/_C.so", &hip_library(&["gfx906", "gfx1030"]))
            .file(
                "torchvision/version.py",
                format!("__version__ = '{vision}'\n"),
            )
            .requires(&format!("torch=={torch}"))
            .build(dir),
    ]
}

/// Hash-pinned requirements for every wheel in `wheels` (name and version from the file name).
fn pins_for(wheels: &[PathBuf]) -> String {
    wheels
        .iter()
        .map(|wheel| {
            let file = wheel.file_name().and_then(|f| f.to_str()).expect("name");
            let mut fields = file.split('-');
            let name = fields.next().expect("name");
            let version = fields.next().expect("version");
            format!("{name}=={version} --hash=sha256:{}\n", sha256_file(wheel))
        })
        .collect()
}

/// The wheels under an index prefix (`<project>/<file>.whl`), sorted by file name.
fn wheels_under(root: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .min_depth(2)
        .max_depth(2)
        .into_iter()
        .map(|e| e.expect("walk").into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    found.sort_by_key(|p| p.file_name().map(|n| n.to_owned()));
    found
}

/// Every file under `root` with its bytes: what "nothing changed" compares.
fn tree(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = walkdir::WalkDir::new(root)
        .into_iter()
        .map(|e| e.expect("walk"))
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(root).expect("prefix").to_path_buf(),
                std::fs::read(e.path()).expect("read"),
            )
        })
        .collect();
    files.sort();
    files
}

/// Installs `wheels` hash-checked from `index` with pip and uv, and imports them; returns
/// the versions each install reports (from the version files a rewrite regenerates).
fn install_and_import(env: &TestEnv, index: &str, wheels: &[PathBuf], tag: &str) -> Vec<String> {
    let (pip, uv) = install_with_pip_and_uv(env, index, &pins_for(wheels), tag);
    [pip, uv]
        .iter()
        .map(|bin| {
            python(
                env,
                bin,
                "import torch.version, torchvision.version, triton; print(torch.version.__version__, torchvision.version.__version__, triton.__version__)",
            )
        })
        .collect()
}

pub(crate) fn gpu_world() -> World {
    let world = World::new();
    std::fs::write(world.env.path("stack.yaml"), GPU_STACK).expect("stack");
    world
}

fn stage(world: &World, input: &str, to: &str, extra: &[&str]) -> assert_cmd::assert::Assert {
    world
        .env
        .rockbuild()
        .args([
            "stage",
            "--config",
            "stack.yaml",
            "--input",
            input,
            "--to",
            to,
            "--targets",
            "gfx906,gfx1030",
        ])
        .args(extra)
        .assert()
}
