//! `install-rocm`, `build` and `plan` on real parts: the stand-in ROCm SDK served over HTTP on
//! 127.0.0.1 and installed with pip and uv, the sample stack checked out from local git
//! origins, real hipcc compiles for gfx906 and gfx1030.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::http::{HttpServer, serve};
use crate::common::pyindex::{Hashes, install_from_index};
use crate::common::sample::{
    offload_targets, only_wheel, requires_dist, sample_origins, wheel_build_record, wheel_member,
    wheel_members,
};
use crate::common::sdk::sdk_index;
use crate::common::{TestEnv, run_ok, scrub, wheelhouse};

pub(crate) const SDK_VERSION: &str = "7.10.0a20251124";
const SDK_TARGETS: &[&str] = &["gfx906", "gfx1030"];
const SUFFIX: &str = "+rocm7.10.0a20251124";

/// A test world: hermetic env whose pip steps install offline from the wheelhouse, the
/// stand-in SDK on a local index, and (optionally) the sample stack checked out.
pub(crate) struct World {
    pub(crate) env: TestEnv,
    _server: HttpServer,
    index_url: String,
    pub(crate) stack_yaml: PathBuf,
    pub(crate) root: PathBuf,
}

impl World {
    pub(crate) fn new() -> World {
        let mut env = TestEnv::new();
        // Build steps (`pip install -r requirements.txt`) come from the wheelhouse; the SDK
        // install must not see these (it reads exactly the index it was given).
        env.set("PIP_NO_INDEX", "1");
        env.set("PIP_FIND_LINKS", wheelhouse().display().to_string());
        let server = serve(&sdk_index(SDK_VERSION, SDK_TARGETS));
        let index_url = format!("{}simple/", server.url());
        World {
            stack_yaml: PathBuf::new(),
            root: env.path("root"),
            env,
            _server: server,
            index_url,
        }
    }

    /// Checks the sample stack out into `<root>` with `rockbuild checkout` (which hipifies and
    /// writes `<root>/rockbuild.lock.json`).
    pub(crate) fn with_checkouts(self) -> World {
        self.with_checkouts_of(&[])
    }

    /// [`World::with_checkouts`] with more arguments (`--repo-hashtag release/2.9`).
    pub(crate) fn with_checkouts_of(mut self, extra: &[&str]) -> World {
        let origins = sample_origins(&self.env);
        self.stack_yaml = origins.stack_yaml.clone();
        let output = self
            .rockbuild()
            .arg("checkout")
            .arg("--config")
            .arg(&self.stack_yaml)
            .arg("--root-checkout-dir")
            .arg(&self.root)
            .args(extra)
            .output()
            .expect("run checkout");
        ok(&output);
        assert!(self.lock().is_file());
        self
    }

    fn lock(&self) -> PathBuf {
        self.root.join("rockbuild.lock.json")
    }

    pub(crate) fn out(&self) -> PathBuf {
        self.env.path("out")
    }

    fn rockbuild(&self) -> assert_cmd::Command {
        self.env.rockbuild()
    }

    /// `rockbuild <verb>` with the stack config, root, output and index.
    pub(crate) fn build_cmd(&self, verb: &str) -> assert_cmd::Command {
        let mut cmd = self.rockbuild();
        cmd.arg(verb)
            .arg("--config")
            .arg(&self.stack_yaml)
            .arg("--root-checkout-dir")
            .arg(&self.root)
            .arg("--output-dir")
            .arg(self.out());
        cmd
    }

    fn install_rocm(&self, extra: &[&str]) -> std::process::Output {
        self.rockbuild()
            .args(["install-rocm", "--index-url", &self.index_url])
            .arg("--output-dir")
            .arg(self.out())
            .args(extra)
            .output()
            .expect("run install-rocm")
    }
}

#[track_caller]
fn ok(output: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "failed ({}):\nstdout: {}\nstderr: {stderr}",
        output.status,
        String::from_utf8_lossy(&output.stdout)
    );
    stderr
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display())),
    )
    .expect("valid JSON")
}

/// `python -m rocm_sdk <args>` in a venv.
fn rocm_sdk(env: &TestEnv, venv: &Path, args: &[&str]) -> String {
    run_ok(
        env.command(venv.join("bin/python"))
            .args(["-m", "rocm_sdk"])
            .args(args),
    )
    .trim()
    .to_string()
}

#[test]
fn sdk_installs_from_a_local_index_with_pip_and_uv() {
    let world = World::new();
    // A lock in use: install-rocm records what it installed.
    let lock = world.env.path("rockbuild.lock.json");
    std::fs::write(
        &lock,
        r#"{"schema": 1, "generated_by": "test", "stack": "s", "projects": {}}"#,
    )
    .expect("lock");

    let stderr = ok(&world.install_rocm(&["--lock", lock.to_str().expect("utf-8")]));
    assert!(
        stderr.contains(&format!(
            "preflight: installing rocm {SDK_VERSION} (newest match)"
        )),
        "{stderr}"
    );
    // Targets in human lines are joined with `,`, as --pytorch-rocm-arch takes them (the
    // SDK's own `rocm-sdk targets` uses `;`).
    assert!(stderr.contains(", SDK targets gfx906,gfx1030"), "{stderr}");
    let venv = world.out().join("venv");
    assert_eq!(rocm_sdk(&world.env, &venv, &["version"]), SDK_VERSION);
    assert_eq!(rocm_sdk(&world.env, &venv, &["targets"]), "gfx906;gfx1030");
    let record = read_json(&venv.join("rockbuild-sdk.json"));
    assert_eq!(record["version"], SDK_VERSION);
    assert_eq!(
        record["root"].as_str(),
        Some(rocm_sdk(&world.env, &venv, &["path", "--root"]).as_str())
    );
    let locked = read_json(&lock);
    assert_eq!(locked["build"]["sdk_version"], SDK_VERSION);
    assert_eq!(
        locked["build"]["sdk_targets"],
        serde_json::json!(["gfx906", "gfx1030"])
    );
    assert_eq!(
        locked["build"]["index_url"].as_str(),
        Some(world.index_url.as_str())
    );
    // The installer's cache is rockbuild's own directory.
    assert!(world.env.path("rockbuild-cache/pip").is_dir());

    // Again, from the lock: reinstalled, same version, pinned by the lock.
    let stderr = ok(&world.install_rocm(&["--lock", lock.to_str().expect("utf-8")]));
    assert!(
        stderr.contains(&format!(
            "installing rocm {SDK_VERSION} (pinned by the lock)"
        )),
        "{stderr}"
    );

    // uv into another venv, with the hipcc of the installed SDK really compiling.
    let uv_venv = world.env.path("uv-venv");
    ok(&world.install_rocm(&[
        "--installer",
        "uv",
        "--venv",
        uv_venv.to_str().expect("utf-8"),
    ]));
    assert_eq!(rocm_sdk(&world.env, &uv_venv, &["version"]), SDK_VERSION);
    assert!(world.env.path("rockbuild-cache/uv").is_dir());
    let bin = PathBuf::from(rocm_sdk(&world.env, &uv_venv, &["path", "--bin"]));
    let source = world.env.path("k.hip");
    std::fs::write(
        &source,
        "#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n",
    )
    .expect("kernel");
    run_ok(
        world
            .env
            .command(bin.join("hipcc"))
            .args(["--offload-arch=gfx906", "-fPIC", "-shared", "-o"])
            .arg(world.env.path("libk.so"))
            .arg(&source),
    );
    assert_eq!(
        offload_targets(&std::fs::read(world.env.path("libk.so")).expect("lib")),
        ["gfx906"]
    );
}

#[test]
fn preflight_fails_fast_on_a_missing_sdk_version() {
    let world = World::new();
    let output = world.install_rocm(&["--rocm-sdk-version", "==7.99.0"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("error: no `rocm` version matching `==7.99.0` on index {}; nearest available: {SDK_VERSION}", world.index_url)),
        "{stderr}"
    );
    // Failed before any long step: no venv, nothing installed.
    assert!(!world.out().join("venv").exists());

    // A bare version gets the fix; an unreachable index fails as fast.
    let output = world.install_rocm(&["--rocm-sdk-version", "7.10.0"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output.stderr).contains("is a version, not a specifier: write `==7.10.0`"));
    let output = world
        .rockbuild()
        .args([
            "install-rocm",
            "--index-url",
            "http://127.0.0.1:1/simple/",
            "--venv",
        ])
        .arg(world.env.path("v"))
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("could not read http://127.0.0.1:1/simple/rocm/"),
        "{}",
        text(&output.stderr)
    );
}

/// Durations (`12.3s`) and sizes (`4.2 KiB`, `512 B`) masked: they are measurements.
fn mask_measures(text: &str) -> String {
    const UNITS: [&str; 4] = ["s", " B", " KiB", " MiB"];
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_digit()) {
        let end = rest[start..]
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map_or(rest.len(), |len| start + len);
        let at_word_start = !rest[..start].ends_with(|c: char| c.is_alphanumeric());
        let unit = UNITS.iter().find(|unit| {
            rest[end..].starts_with(**unit)
                && !rest[end + unit.len()..].starts_with(|c: char| c.is_alphanumeric())
        });
        out.push_str(&rest[..start]);
        match unit {
            Some(unit) if at_word_start => out.push_str(&format!("[N]{unit}")),
            _ => out.push_str(&rest[start..end]),
        }
        rest = &rest[end + unit.filter(|_| at_word_start).map_or(0, |u| u.len())..];
    }
    out.push_str(rest);
    out
}

/// `rockbuild plan` with these arguments: (exit code, stdout, stderr).
/// A Windows plan of the sample for gfx1100 (aotriton has kernels for it), installing the
/// SDK from an index that is never contacted: a plan is pure.
pub(crate) fn windows_plan_args() -> Vec<String> {
    [
        "--platform",
        "windows",
        "--install-rocm",
        "--index-url",
        "http://127.0.0.1:1/v2/gfx110X-all/",
        "--rocm-sdk-version",
        &format!("=={SDK_VERSION}"),
        "--pytorch-rocm-arch",
        "gfx1100",
    ]
    .map(String::from)
    .to_vec()
}

pub(crate) fn plan(world: &World, args: &[&str]) -> (Option<i32>, String, String) {
    let output = world
        .build_cmd("plan")
        .args(args)
        .output()
        .expect("run plan");
    (
        output.status.code(),
        text(&output.stdout),
        text(&output.stderr),
    )
}

#[test]
fn plan_and_dry_run_run_nothing() {
    let world = World::new().with_checkouts();
    // An index nothing listens on: any network access would fail the command.
    let dead_index = [
        "--install-rocm",
        "--index-url",
        "http://127.0.0.1:1/simple/",
        "--rocm-sdk-version",
    ];
    let mut printed = Vec::new();
    for verb in [vec!["plan"], vec!["build", "--dry-run"]] {
        let mut cmd = world.build_cmd(verb[0]);
        let output = cmd
            .args(&verb[1..])
            .args(dead_index)
            .arg(format!("=={SDK_VERSION}"))
            .args(["--pytorch-rocm-arch", "gfx906,gfx1030", "--lock"])
            .arg(world.lock())
            .output()
            .expect("run");
        assert_eq!(
            ok(&output),
            "targets: gfx906,gfx1030 (2 targets, from --pytorch-rocm-arch)\n"
        );
        printed.push(text(&output.stdout));
        // Nothing happened: no output directory (so no venv, no logs, no report), the lock
        // untouched, no build tree in the checkouts.
        assert!(
            !world.out().exists(),
            "{verb:?} created {}",
            world.out().display()
        );
        assert!(read_json(&world.lock()).get("build").is_none());
        assert!(
            !world.root.join("pytorch/build").exists()
                && !world.root.join("pytorch/torch/_rocm_init.py").exists()
        );
    }
    assert_eq!(printed[0], printed[1], "plan is build --dry-run");
    insta::assert_snapshot!("sample_plan_two_targets", scrub(&printed[0], &world.env));
}

/// The plan of the sample stack for other target sources, release types and selections,
/// whole: as JSON for a family and a dev build with a build number, as text for a family
/// inferred from the index URL with the reference's per-project flags.
#[test]
fn plans_of_the_sample_stack() {
    let world = World::new().with_checkouts();
    let pin = format!("=={SDK_VERSION}");
    let (code, stdout, stderr) = plan(
        &world,
        &[
            "--json",
            "--rocm-sdk-version",
            &pin,
            "--amdgpu-family",
            "gfx101X-dgpu",
            "--release-type",
            "dev",
            "--pytorch-build-number",
            "2",
            "--skip",
            "apex",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let json: Value = serde_json::from_str(&stdout).expect("JSON plan");
    insta::assert_snapshot!(
        "sample_plan_family_dev_json",
        scrub(
            &serde_json::to_string_pretty(&json).expect("JSON"),
            &world.env
        )
    );

    let vision = world.root.join("pytorch_vision").display().to_string();
    let (code, stdout, stderr) = plan(
        &world,
        &[
            "--install-rocm",
            "--index-url",
            "http://127.0.0.1:1/v2/gfx103X-all/",
            "--rocm-sdk-version",
            &pin,
            "--release-type",
            "prerelease",
            "--no-build-triton",
            "--pytorch-vision-dir",
            &vision,
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        stderr,
        "targets: gfx1030,gfx1031,gfx1032,gfx1033,gfx1034,gfx1035,gfx1036 (7 targets, from family gfx103X-all, inferred from the last path segment of --index-url http://127.0.0.1:1/v2/gfx103X-all/)\n"
    );
    insta::assert_snapshot!("sample_plan_inferred_family", scrub(&stdout, &world.env));
    assert!(!world.out().exists());
}

/// A plan for Windows made on this Linux machine: pure (no SDK, no process, nothing written)
/// and in Windows terms where the platform decides: the venv's `Scripts\python.exe`, `;`
/// between PATH entries, the build machine's PATH as `%PATH%`. Building it here is refused.
#[test]
fn a_windows_plan_on_a_linux_host() {
    let world = World::new().with_checkouts();
    let owned = windows_plan_args();
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let (code, stdout, stderr) = plan(&world, &args);
    assert_eq!(code, Some(0), "{stderr}");
    insta::assert_snapshot!("sample_plan_windows", scrub(&stdout, &world.env));
    assert!(!world.out().exists());

    let output = world.build_cmd("build").args(args).output().expect("runs");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).lines().next(),
        Some(
            "error: --platform windows: this machine runs linux; a windows build is planned here (`rockbuild plan --platform windows`) and built on windows"
        )
    );
    assert!(!world.out().exists());
}

/// The reference's per-project flags and the generic ones are the same flags (the
/// reference's `--build-pytorch-vision` only requires the checkout, as there; rockbuild's
/// `--build vision` would also leave the others out).
#[test]
fn per_project_flags_have_generic_spellings() {
    let world = World::new().with_checkouts();
    let pin = format!("=={SDK_VERSION}");
    let common = ["--rocm-sdk-version", &pin, "--pytorch-rocm-arch", "gfx906"];
    let audio = world.root.join("pytorch_audio").display().to_string();
    let reference = plan(
        &world,
        &[
            &common[..],
            &[
                "--pytorch-audio-dir",
                &audio,
                "--no-build-triton",
                "--build-pytorch-vision",
                "--no-build-apex",
            ],
        ]
        .concat(),
    );
    let generic = plan(
        &world,
        &[
            &common[..],
            &[
                "--dir",
                &format!("audio={audio}"),
                "--skip",
                "triton",
                "--skip",
                "apex",
            ],
        ]
        .concat(),
    );
    assert_eq!(reference.0, Some(0), "{}", reference.2);
    // The notes on the projects left out name the flag as given.
    let reference = (
        reference.0,
        reference
            .1
            .replace("(--no-build-triton)", "(--skip triton)")
            .replace("(--no-build-apex)", "(--skip apex)"),
        reference.2,
    );
    assert_eq!(reference, generic);
    let names: Vec<&str> = reference
        .1
        .lines()
        .filter(|l| l.contains(" -> "))
        .map(|l| l.split(' ').next().unwrap_or_default())
        .collect();
    assert_eq!(names, ["torch", "audio", "vision"]);
}

/// Every refusal of `plan`/`build` before anything runs: exit 2, the message naming the
/// flag, file or value and the fix.
#[test]
fn build_errors_name_the_fix() {
    let world = World::new().with_checkouts();
    std::fs::remove_dir_all(world.root.join("apex")).expect("remove the apex checkout");
    let pin = format!("=={SDK_VERSION}");
    let cases: Vec<(Vec<&str>, Option<&str>)> = vec![
        // Checkouts and project names, in both spellings.
        (
            vec![
                "--pytorch-rocm-arch",
                "gfx906",
                "--pytorch-dir",
                "no-such-dir",
            ],
            None,
        ),
        (
            vec![
                "--pytorch-rocm-arch",
                "gfx906",
                "--dir",
                "torch=no-such-dir",
            ],
            None,
        ),
        (vec!["--pytorch-rocm-arch", "gfx906", "--build-apex"], None),
        (
            vec!["--pytorch-rocm-arch", "gfx906", "--build", "apex"],
            None,
        ),
        (
            vec!["--pytorch-rocm-arch", "gfx906", "--build", "visoin"],
            None,
        ),
        (
            vec!["--pytorch-rocm-arch", "gfx906", "--dir", "pytorch=x"],
            None,
        ),
        (
            vec!["--pytorch-rocm-arch", "gfx906", "--dir", "torch"],
            None,
        ),
        (
            vec![
                "--pytorch-rocm-arch",
                "gfx906",
                "--build-triton",
                "--skip",
                "triton",
            ],
            None,
        ),
        (
            vec![
                "--pytorch-rocm-arch",
                "gfx906",
                "--enable-pytorch-flash-attention",
                "--skip",
                "triton",
            ],
            None,
        ),
        // Targets and families.
        (vec!["--pytorch-rocm-arch", "gfx906,gfx94x"], None),
        (vec!["--amdgpu-family", "gfx942"], None),
        (vec!["--amdgpu-family", "gfx11"], None),
        (vec![], Some("gfx110X-all")),
        (vec![], None),
        (
            vec!["--max-targets", "4"],
            Some("gfx900;gfx906;gfx908;gfx90a;gfx1030"),
        ),
        // An index URL that names no family, one that is close to a family, and a family
        // whose targets are too many.
        (
            vec![
                "--install-rocm",
                "--index-url",
                "http://127.0.0.1:1/simple/",
            ],
            None,
        ),
        (
            vec![
                "--install-rocm",
                "--index-url",
                "http://127.0.0.1:1/v2/gfx103x-all/",
            ],
            None,
        ),
        (
            vec![
                "--install-rocm",
                "--index-url",
                "http://127.0.0.1:1/v2/gfx103X-all/",
                "--max-targets",
                "4",
            ],
            None,
        ),
        (vec!["--jobs", "0", "--pytorch-rocm-arch", "gfx906"], None),
        // A per-family index for a multi-arch build.
        (
            vec![
                "--install-rocm",
                "--index-url",
                "http://127.0.0.1:1/v2/gfx103X-all/",
                "--pytorch-rocm-arch",
                "gfx906,gfx1030",
                "--multi-arch",
            ],
            None,
        ),
    ];
    let mut report = Vec::new();
    for (args, env) in cases {
        let mut cmd = world.build_cmd("plan");
        cmd.args(["--rocm-sdk-version", &pin]).args(&args);
        if let Some(value) = env {
            cmd.env("PYTORCH_ROCM_ARCH", value);
        }
        let output = cmd.output().expect("run plan");
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&output.stderr)
        );
        assert!(output.stdout.is_empty());
        let given = match env {
            Some(value) => format!("PYTORCH_ROCM_ARCH={value} plan {}", args.join(" ")),
            None => format!("plan {}", args.join(" ")),
        };
        report.push(format!(
            "$ {given}\n{}",
            scrub(&text(&output.stderr), &world.env)
        ));
    }
    insta::assert_snapshot!(report.join("\n"));
    assert!(!world.out().exists());

    // A family expands through the table; too many targets pass when allowed.
    let (_, _, stderr) = plan(
        &world,
        &[
            "--rocm-sdk-version",
            &pin,
            "--amdgpu-family",
            "gfx101X-dgpu",
        ],
    );
    assert_eq!(
        stderr,
        "targets: gfx1010,gfx1011,gfx1012 (3 targets, from --amdgpu-family gfx101X-dgpu)\n"
    );

    // The multi-arch index (its last path segment is the table's `whl-multi-arch`, on any
    // host) makes the build multi-arch without the flag.
    let (code, stdout, stderr) = plan(
        &world,
        &[
            "--rocm-sdk-version",
            &pin,
            "--install-rocm",
            "--index-url",
            "http://127.0.0.1:1/whl-multi-arch/",
            "--pytorch-rocm-arch",
            "gfx906,gfx1030",
            "--json",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let json: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(json["mode"]["mode"], "multi-arch", "{stdout}");
    assert_eq!(
        json["mode"]["source"]["detail"],
        "--index-url http://127.0.0.1:1/whl-multi-arch/, the multi-arch index (one for every family)"
    );
}

/// Reads a sample build record from a wheel: (env, start, end).
fn record_of(wheel: &Path, package: &str) -> (serde_json::Map<String, Value>, f64) {
    let record = wheel_build_record(wheel, package);
    let env = record["env"].as_object().expect("env").clone();
    (env, record["start"].as_f64().expect("start"))
}

#[test]
fn builds_the_sample_stack_for_two_targets() {
    let mut world = World::new().with_checkouts();
    let summary = world.env.path("step-summary.md");
    world
        .env
        .set("GITHUB_STEP_SUMMARY", summary.display().to_string());
    let lock = world.lock();
    let output = world
        .build_cmd("build")
        .args([
            "--install-rocm",
            "--index-url",
            &world.index_url,
            "--pytorch-rocm-arch",
            "gfx906,gfx1030",
            "--lock",
        ])
        .arg(&lock)
        .output()
        .expect("run build");
    let stderr = ok(&output);
    assert!(
        stderr.contains("targets: gfx906,gfx1030 (2 targets, from --pytorch-rocm-arch)"),
        "{stderr}"
    );
    let out = world.out();

    // Exactly one wheel per project, with the planned versions.
    let torch = only_wheel(&out, "torch");
    let audio = only_wheel(&out, "torchaudio");
    let vision = only_wheel(&out, "torchvision");
    let triton = only_wheel(&out, "triton");
    let apex = only_wheel(&out, "apex");
    let report = read_json(&out.join("build-report.json"));
    let version = |name: &str| {
        report["projects"][name]["version"]
            .as_str()
            .expect("version")
            .to_string()
    };
    assert_eq!(version("torch"), format!("2.10.0a0{SUFFIX}"));
    assert_eq!(version("vision"), format!("0.25.0a0{SUFFIX}"));
    assert_eq!(version("apex"), format!("1.10.0{SUFFIX}"));
    let triton_version = version("triton");
    assert!(
        triton_version.starts_with("3.5.0+git") && triton_version.ends_with(".rocm7.10.0a20251124"),
        "{triton_version}"
    );
    for (name, wheel) in [
        ("torch", &torch),
        ("audio", &audio),
        ("vision", &vision),
        ("triton", &triton),
        ("apex", &apex),
    ] {
        let entry = &report["projects"][name];
        assert_eq!(entry["status"], "built", "{name}");
        assert_eq!(entry["cache_hit"], false);
        let file_name = wheel
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert_eq!(entry["wheel"].as_str(), Some(file_name.as_str()));
        let bytes = std::fs::read(wheel).expect("wheel");
        assert_eq!(entry["size"].as_u64(), Some(bytes.len() as u64));
        assert_eq!(entry["sha256"].as_str(), Some(sha256_hex(&bytes).as_str()));
        assert_eq!(entry["targets"], serde_json::json!(["gfx906", "gfx1030"]));
        assert!(
            out.join("logs").join(format!("{name}.log")).is_file(),
            "{name} log"
        );
    }
    let markdown = std::fs::read_to_string(out.join("build-summary.md")).expect("summary");
    insta::assert_snapshot!(mask_measures(&scrub(&markdown, &world.env)));
    assert!(
        std::fs::read_to_string(&summary)
            .expect("step summary")
            .contains(&markdown)
    );

    // Real device code for both targets in torch's and vision's libraries.
    for (wheel, library) in [
        (&torch, "torch/lib/libtorch_hip.so"),
        (&vision, "torchvision/_C_hip.so"),
    ] {
        let mut targets = offload_targets(&wheel_member(wheel, library));
        targets.sort();
        assert_eq!(targets, ["gfx1030", "gfx906"], "{library}");
    }

    // Requires-Dist: torch pins the SDK and the triton built beside it; audio and vision pin torch.
    let requires = requires_dist(&torch);
    assert!(
        requires.contains(&format!("rocm[libraries]=={SDK_VERSION}")),
        "{requires:?}"
    );
    assert!(
        requires.contains(&format!("triton=={triton_version}")),
        "{requires:?}"
    );
    for wheel in [&audio, &vision] {
        assert!(
            requires_dist(wheel).contains(&format!("torch==2.10.0a0{SUFFIX}")),
            "{}",
            wheel.display()
        );
    }
    assert!(wheel_members(&torch).contains(&"torch/_rocm_init.py".to_string()));
    let rocm_init = text(&wheel_member(&torch, "torch/_rocm_init.py"));
    assert!(
        rocm_init.contains(&format!("check_version=\"{SDK_VERSION}\"")),
        "{rocm_init}"
    );

    // Each project saw its own environment, and nothing of the others'.
    let root = rocm_sdk(&world.env, &out.join("venv"), &["path", "--root"]);
    let (torch_env, _) = record_of(&torch, "torch");
    let get = |env: &serde_json::Map<String, Value>, key: &str| {
        env.get(key).and_then(Value::as_str).map(str::to_string)
    };
    assert_eq!(get(&torch_env, "USE_ROCM").as_deref(), Some("ON"));
    assert_eq!(
        get(&torch_env, "PYTORCH_ROCM_ARCH").as_deref(),
        Some("gfx906;gfx1030")
    );
    assert_eq!(get(&torch_env, "ROCM_HOME"), Some(root.clone()));
    assert_eq!(
        get(&torch_env, "USE_FLASH_ATTENTION").as_deref(),
        Some("OFF")
    );
    assert_eq!(
        get(&torch_env, "LD_LIBRARY_PATH"),
        Some(format!("{root}/lib/rocm_sysdeps/lib"))
    );
    let (triton_env, _) = record_of(&triton, "triton");
    assert_eq!(
        get(&triton_env, "TRITON_WHEEL_VERSION_SUFFIX").as_deref(),
        Some(SUFFIX)
    );
    assert_eq!(
        get(&triton_env, "TRITON_APPEND_CMAKE_ARGS").as_deref(),
        Some("-DCMAKE_FIND_USE_CMAKE_ENVIRONMENT_PATH=FALSE")
    );
    let (vision_env, _) = record_of(&vision, "torchvision");
    assert_eq!(get(&vision_env, "FORCE_CUDA").as_deref(), Some("1"));
    assert_eq!(
        get(&vision_env, "BUILD_VERSION"),
        Some(format!("0.25.0a0{SUFFIX}"))
    );
    let (audio_env, _) = record_of(&audio, "torchaudio");
    assert_eq!(get(&audio_env, "USE_ROCM").as_deref(), Some("1"));
    for (name, env) in [
        ("audio", &audio_env),
        ("vision", &vision_env),
        ("triton", &triton_env),
    ] {
        assert_eq!(
            get(env, "LD_LIBRARY_PATH"),
            None,
            "{name} got torch's LD_LIBRARY_PATH"
        );
        assert_eq!(
            get(env, "PYTORCH_BUILD_VERSION"),
            None,
            "{name} got torch's env"
        );
        assert!(
            !env.contains_key("TRITON_WHEEL_VERSION_SUFFIX") || name == "triton",
            "{name}"
        );
    }

    // audio and vision built at the same time (both after torch).
    let span = |dir: &str| {
        let record = crate::common::sample::build_record(&world.root.join(dir));
        (
            record["start"].as_f64().expect("start"),
            record["end"].as_f64().expect("end"),
        )
    };
    let (audio_start, audio_end) = span("pytorch_audio");
    let (vision_start, vision_end) = span("pytorch_vision");
    let (_, torch_end) = span("pytorch");
    assert!(
        audio_start < vision_end && vision_start < audio_end,
        "audio {audio_start}-{audio_end} and vision {vision_start}-{vision_end} do not overlap"
    );
    assert!(
        audio_start >= torch_end && vision_start >= torch_end,
        "audio/vision started before torch was built"
    );

    // The lock records the SDK, targets and every version.
    let locked = read_json(&lock);
    assert_eq!(locked["build"]["sdk_version"], SDK_VERSION);
    assert_eq!(
        locked["build"]["targets"],
        serde_json::json!(["gfx906", "gfx1030"])
    );
    assert_eq!(locked["build"]["release_type"], "nightly");
    assert_eq!(locked["build"]["version_suffix"], SUFFIX);
    assert_eq!(
        locked["build"]["versions"]["triton"].as_str(),
        Some(triton_version.as_str())
    );

    // What the build produced passes the checks staging applies: GPU targets from the lock,
    // no build-machine RPATH (setuptools extensions included), pins closed over the set.
    let output = world
        .rockbuild()
        .arg("verify")
        .arg(&out)
        .arg("--lock")
        .arg(&lock)
        .output()
        .expect("verify");
    let stderr = ok(&output);
    assert!(stderr.contains("targets gfx906,gfx1030"), "{stderr}");

    // Unchanged inputs: every project is a cache hit, the wheels are untouched. The targets
    // now come from the lock.
    let modified = std::fs::metadata(&torch)
        .expect("meta")
        .modified()
        .expect("mtime");
    let output = world
        .build_cmd("build")
        .arg("--lock")
        .arg(&lock)
        .output()
        .expect("rebuild");
    let stderr = ok(&output);
    assert!(
        stderr.contains("targets: gfx906,gfx1030 (2 targets, from the lock)"),
        "{stderr}"
    );
    let report = read_json(&out.join("build-report.json"));
    for name in ["torch", "audio", "vision", "triton", "apex"] {
        assert_eq!(
            report["projects"][name]["status"], "cached",
            "{name}: {stderr}"
        );
        assert_eq!(report["projects"][name]["cache_hit"], true);
    }
    assert_eq!(
        std::fs::metadata(&torch)
            .expect("meta")
            .modified()
            .expect("mtime"),
        modified
    );
    // The same run with --log-format json: its table and summary are JSON lines too.
    let output = world
        .build_cmd("build")
        .args(["--log-format", "json", "--lock"])
        .arg(&lock)
        .output()
        .expect("rebuild");
    let stderr = ok(&output);
    for line in stderr.lines() {
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}\n{stderr}"));
        assert!(value["fields"]["message"].is_string(), "{line}");
    }
    assert!(stderr.contains("cached"), "{stderr}");

    // Unchanged sources give unchanged bytes: vision rebuilt from scratch (`--clean`) is the
    // wheel it was, as SOURCE_DATE_EPOCH (its commit's time) fixes the times in the archive.
    let vision_bytes = std::fs::read(&vision).expect("vision wheel");
    let output = world
        .build_cmd("build")
        .args(["--clean", "--build", "vision", "--lock"])
        .arg(&lock)
        .output()
        .expect("rebuild vision");
    let stderr = ok(&output);
    assert_eq!(
        read_json(&out.join("build-report.json"))["projects"]["vision"]["status"],
        "built",
        "{stderr}"
    );
    assert!(
        std::fs::read(&vision).expect("vision wheel") == vision_bytes,
        "the rebuilt vision wheel differs from the first build's"
    );

    // Leaving projects out means using what is there (docs/local.md §4): after an edit to
    // vision, the others' wheels are reused as they are, torch keeps its triton pin (a cache
    // hit), the set verifies, and the next full build rebuilds nothing.
    let statuses = |out: &Path| -> Vec<(String, String)> {
        let report = read_json(&out.join("build-report.json"));
        report["projects"]
            .as_object()
            .expect("projects")
            .iter()
            .map(|(name, p)| (name.clone(), p["status"].as_str().unwrap_or("").to_string()))
            .collect()
    };
    let expect = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect()
    };
    let edit = |line: &str| {
        let setup = world.root.join("pytorch_vision/setup.py");
        let mut text = std::fs::read_to_string(&setup).expect("setup.py");
        text.push_str(line);
        std::fs::write(&setup, text).expect("edit");
    };
    edit("# a local edit\n");
    let output = world
        .build_cmd("build")
        .args([
            "--no-build-triton",
            "--no-build-pytorch-audio",
            "--no-build-apex",
            "--lock",
        ])
        .arg(&lock)
        .output()
        .expect("build vision");
    let stderr = ok(&output);
    assert_eq!(
        statuses(&out),
        expect(&[
            ("torch", "cached"),
            ("audio", "reused"),
            ("vision", "built"),
            ("triton", "reused"),
            ("apex", "reused"),
        ]),
        "{stderr}"
    );
    assert!(
        requires_dist(&only_wheel(&out, "torch")).contains(&format!("triton=={triton_version}"))
    );
    ok(&world
        .rockbuild()
        .arg("verify")
        .arg(&out)
        .arg("--lock")
        .arg(&lock)
        .output()
        .expect("verify"));
    let output = world
        .build_cmd("build")
        .arg("--lock")
        .arg(&lock)
        .output()
        .expect("full build");
    let stderr = ok(&output);
    assert_eq!(
        statuses(&out),
        expect(&[
            ("torch", "cached"),
            ("audio", "cached"),
            ("vision", "cached"),
            ("triton", "cached"),
            ("apex", "cached"),
        ]),
        "{stderr}"
    );

    // `--build vision` builds vision alone and takes the rest from the cache. A project left
    // out is what is there: triton's checkout moved on past the lock's commit (a local commit)
    // is not held to the lock, as its wheel of the earlier build is used.
    edit("# another local edit\n");
    crate::common::git::git_in(
        &world.root.join("triton"),
        &[
            "-c",
            "user.name=dev",
            "-c",
            "user.email=dev@example.com",
            "commit",
            "--allow-empty",
            "-q",
            "-m",
            "local work",
        ],
    );
    let output = world
        .build_cmd("build")
        .args(["--build", "vision", "--lock"])
        .arg(&lock)
        .output()
        .expect("build --build vision");
    let stderr = ok(&output);
    assert_eq!(
        statuses(&out),
        expect(&[
            ("torch", "reused"),
            ("audio", "reused"),
            ("vision", "built"),
            ("triton", "reused"),
            ("apex", "reused"),
        ]),
        "{stderr}"
    );
}

/// What one build's projects saw of the venv: per project, installed at start and at end.
fn venv_views(world: &World) -> Vec<(String, Value, Value)> {
    [
        ("triton", "triton"),
        ("torch", "pytorch"),
        ("audio", "pytorch_audio"),
        ("vision", "pytorch_vision"),
        ("apex", "apex"),
    ]
    .iter()
    .map(|(name, dir)| {
        let record = crate::common::sample::build_record(&world.root.join(dir));
        (
            name.to_string(),
            record["installed"].clone(),
            record["installed_at_end"].clone(),
        )
    })
    .collect()
}

/// One venv for every project, as the reference has: with `--jobs 3` each build sees exactly
/// the venv the reference's serial order (triton, torch, audio, vision, apex; triton and
/// torch installed before the next) gives it, and nothing changes under a running build.
/// The sample torch's requirements.txt asks for setuptools>=70.1 as PyTorch's does, so its
/// install upgrades the venv's setuptools: what triton builds with must not change then.
#[test]
fn builds_in_one_venv_take_turns_in_the_reference_order() {
    let world = World::new().with_checkouts();
    let mut seen = Vec::new();
    for jobs in ["1", "3"] {
        let out = world.env.path(&format!("out-jobs-{jobs}"));
        let output = world
            .rockbuild()
            .arg("build")
            .arg("--config")
            .arg(&world.stack_yaml)
            .arg("--root-checkout-dir")
            .arg(&world.root)
            .arg("--output-dir")
            .arg(&out)
            .args([
                "--install-rocm",
                "--index-url",
                &world.index_url,
                "--pytorch-rocm-arch",
                "gfx906",
                "--jobs",
                jobs,
            ])
            .output()
            .expect("run build");
        ok(&output);
        let report = read_json(&out.join("build-report.json"));
        seen.push((venv_views(&world), report));
    }
    let (serial, _) = &seen[0];
    let (parallel, report) = &seen[1];
    let version = |name: &str| report["projects"][name]["version"].as_str().expect("v");
    for ((name, start, end), (_, serial_start, _)) in parallel.iter().zip(serial) {
        assert_eq!(start, end, "{name}: the venv changed while it built");
        assert_eq!(
            start, serial_start,
            "{name}: with --jobs 3 it saw another venv than the serial order gives it"
        );
    }
    let installed = |name: &str, dist: &str| {
        parallel
            .iter()
            .find(|(n, _, _)| n == name)
            .and_then(|(_, start, _)| start[dist].as_str())
            .map(str::to_string)
    };
    // triton first: no torch yet, its own wheel uninstalled.
    assert_eq!(installed("triton", "triton"), None);
    assert_eq!(installed("triton", "torch"), None);
    // torch after triton is installed, with its own requirements applied.
    assert_eq!(
        installed("torch", "triton").as_deref(),
        Some(version("triton"))
    );
    assert_eq!(installed("torch", "setuptools").as_deref(), Some("80.9.0"));
    assert_eq!(installed("torch", "torch"), None);
    // audio, vision and apex against the installed torch.
    for name in ["audio", "vision", "apex"] {
        assert_eq!(
            installed(name, "torch").as_deref(),
            Some(version("torch")),
            "{name}"
        );
    }
    // The edges that made it so are in the report; audio and vision still built together.
    assert_eq!(
        report["projects"]["torch"]["after"],
        serde_json::json!(["triton"])
    );
    let span = |name: &str| {
        let start = report["projects"][name]["start_seconds"]
            .as_f64()
            .expect("start");
        (
            start,
            start
                + report["projects"][name]["duration_seconds"]
                    .as_f64()
                    .expect("d"),
        )
    };
    let ((audio_start, audio_end), (vision_start, vision_end)) = (span("audio"), span("vision"));
    assert!(
        audio_start < vision_end && vision_start < audio_end,
        "audio {audio_start}-{audio_end} and vision {vision_start}-{vision_end} do not overlap"
    );
}

/// Pushes `branch` to the bare origin `bare`: from `base` (a branch) with `files` written over
/// it, or, without a base, a tree of exactly `files`. Returns the new commit.
fn push_branch(
    env: &TestEnv,
    bare: &Path,
    base: Option<&str>,
    branch: &str,
    files: &[(String, String)],
) -> String {
    let origin = bare
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let work = env.path(&format!("push-{origin}-{}", branch.replace('/', "-")));
    let git = |args: &[&str]| {
        let mut command = env.command("git");
        command
            .current_dir(&work)
            .envs([
                ("GIT_AUTHOR_NAME", "Fixture"),
                ("GIT_AUTHOR_EMAIL", "fixture@example.com"),
                ("GIT_COMMITTER_NAME", "Fixture"),
                ("GIT_COMMITTER_EMAIL", "fixture@example.com"),
            ])
            .args(args);
        run_ok(&mut command).trim().to_string()
    };
    std::fs::create_dir_all(&work).expect("work dir");
    git(&["init", "-q"]);
    git(&[
        "fetch",
        "-q",
        &bare.display().to_string(),
        "+refs/heads/*:refs/remotes/o/*",
    ]);
    match base {
        Some(base) => git(&["checkout", "-q", "-b", branch, &format!("o/{base}")]),
        None => git(&["checkout", "-q", "--orphan", branch]),
    };
    for (path, text) in files {
        let full = work.join(path);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(full, text).expect("write");
    }
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", &format!("{branch} (fixture)")]);
    git(&[
        "push",
        "-q",
        &bare.display().to_string(),
        &format!("{branch}:{branch}"),
    ]);
    git(&["rev-parse", "HEAD"])
}

/// ROCm/triton's release/3.3.x layout (tests/fixtures/triton_3_3: python/setup.py, version
/// `"3.3.1" + TRITON_WHEEL_VERSION_SUFFIX`, no git part), pinned by a torch `release/2.7` as
/// PyTorch's release/2.7 pins triton 3.3: the lock predicts the version its setup.py really
/// computes, the build accepts the wheel, torch pins that wheel and verify passes the set.
#[test]
fn a_triton_of_the_3_3_layout_is_locked_built_and_verified() {
    let world = World::new();
    let origins = sample_origins(&world.env);
    let fixture = crate::common::repo_root().join("tests/fixtures/triton_3_3");
    let files: Vec<(String, String)> = [
        ".gitignore",
        "README.md",
        "python/setup.py",
        "python/requirements.txt",
        "python/triton/__init__.py",
        "python/src/main.cc",
    ]
    .iter()
    .map(|path| {
        (
            path.to_string(),
            std::fs::read_to_string(fixture.join(path)).expect("fixture file"),
        )
    })
    .collect();
    let triton = push_branch(
        &world.env,
        &origins.repo("triton").path,
        None,
        "release/3.3.x",
        &files,
    );
    push_branch(
        &world.env,
        &origins.repo("torch").path,
        Some("release/2.9"),
        "release/2.7",
        &[
            (".ci/docker/triton_version.txt".into(), "3.3.1\n".into()),
            (
                ".ci/docker/ci_commit_pins/triton.txt".into(),
                format!("{triton}\n"),
            ),
        ],
    );
    let lock = world.env.path("ci.lock.json");
    let lock_cmd = |lock: &Path, extra: &[&str]| {
        world
            .rockbuild()
            .args(["lock", "--config"])
            .arg(&origins.stack_yaml)
            .args([
                "--repo-hashtag",
                "release/2.7",
                "--index-url",
                &world.index_url,
            ])
            .args(["--pytorch-rocm-arch", "gfx906", "--lock"])
            .arg(lock)
            .args(extra)
            .output()
            .expect("run lock")
    };
    ok(&lock_cmd(&lock, &[]));
    let locked = read_json(&lock);
    let want = format!("3.3.1{SUFFIX}");
    assert_eq!(locked["projects"]["triton"]["commit"], triton.as_str());
    assert_eq!(locked["build"]["versions"]["triton"], want.as_str());
    // Pinned to the release branch instead (--release), the version is the same: no git part.
    let by_branch = world.env.path("release.lock.json");
    ok(&lock_cmd(&by_branch, &["--release"]));
    assert_eq!(
        read_json(&by_branch)["build"]["versions"]["triton"],
        want.as_str()
    );

    let root = world.env.path("ws");
    ok(&world
        .rockbuild()
        .args(["checkout", "--config"])
        .arg(&origins.stack_yaml)
        .arg("--root-checkout-dir")
        .arg(&root)
        .arg("--from-lock")
        .arg(&lock)
        .output()
        .expect("run checkout"));
    assert!(root.join("triton/python/setup.py").is_file());
    let out = world.out();
    ok(&world
        .rockbuild()
        .arg("build")
        .arg("--config")
        .arg(&origins.stack_yaml)
        .arg("--root-checkout-dir")
        .arg(&root)
        .arg("--output-dir")
        .arg(&out)
        .args(["--install-rocm", "--index-url", &world.index_url, "--lock"])
        .arg(root.join("rockbuild.lock.json"))
        .output()
        .expect("run build"));
    let wheel = only_wheel(&out, "triton");
    assert!(
        wheel
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(&format!("triton-{want}-"))),
        "{}",
        wheel.display()
    );
    // torch pins the triton that was built, not one that does not exist.
    assert!(
        requires_dist(&only_wheel(&out, "torch")).contains(&format!("triton=={want}")),
        "{:?}",
        requires_dist(&only_wheel(&out, "torch"))
    );
    let output = world
        .rockbuild()
        .arg("verify")
        .arg(&out)
        .arg("--lock")
        .arg(root.join("rockbuild.lock.json"))
        .output()
        .expect("verify");
    ok(&output);
}

#[test]
fn a_failing_project_skips_its_dependants() {
    let mut world = World::new().with_checkouts();
    world
        .env
        .set("CCACHE_DIR", world.env.path("ccache").display().to_string());
    // Flash-attention forced on for targets aotriton has no kernels for: torch's configure
    // fails, as the real one does (aotriton#169). Compiles go through ccache.
    let output = world
        .build_cmd("build")
        .args([
            "--install-rocm",
            "--index-url",
            &world.index_url,
            "--pytorch-rocm-arch",
            "gfx906",
            "--enable-pytorch-flash-attention",
            "--use-ccache",
        ])
        .output()
        .expect("run build");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    // The failure as the user reads it: which failed, what was skipped because of it, the
    // log tail, a copy-paste repro (USE_FLASH_ATTENTION=ON among its env) and torch's hint.
    let failure = &stderr[stderr.find("error: ").expect("an error")..];
    insta::assert_snapshot!(scrub(failure, &world.env));
    // The independent project finished; the report says what happened to each.
    only_wheel(&world.out(), "triton");
    let report = read_json(&world.out().join("build-report.json"));
    let status = |name: &str| {
        report["projects"][name]["status"]
            .as_str()
            .expect("status")
            .to_string()
    };
    assert_eq!(status("torch"), "failed");
    assert_eq!(status("triton"), "built");
    for name in ["audio", "vision", "apex"] {
        assert_eq!(status(name), "skipped", "{name}");
    }
    assert!(
        report["projects"]["torch"]["error"]
            .as_str()
            .expect("error")
            .contains("build wheel failed")
    );

    // ccache was the launcher of triton's host compile, and its statistics were reported.
    let (triton_env, _) = record_of(&only_wheel(&world.out(), "triton"), "triton");
    let ccache = which("ccache");
    assert_eq!(
        triton_env
            .get("CMAKE_CXX_COMPILER_LAUNCHER")
            .and_then(Value::as_str),
        Some(ccache.as_str())
    );
    assert_eq!(report["compiler_cache"]["tool"], "ccache");
    assert!(
        report["compiler_cache"]["stats"]
            .as_str()
            .is_some_and(|s| !s.trim().is_empty())
    );
    assert!(stderr.contains("ccache statistics"), "{stderr}");
    assert!(world.env.path("ccache").is_dir());
}

/// The full path of a program the test's PATH finds.
fn which(program: &str) -> String {
    ["/usr/local/bin", "/usr/bin", "/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(program))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{program} not installed"))
        .display()
        .to_string()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// A PEP 503 index of the stand-in SDK for `targets`, served under `<prefix>/v2/<family>/`
/// as TheRock's per-family indexes are (`https://rocm.nightlies.amd.com/v2/gfx110X-all/`).
fn family_index(www: &Path, prefix: &str, family: &str, targets: &[&str]) {
    let sdk = sdk_index(SDK_VERSION, targets);
    let v2 = www.join(prefix).join("v2");
    std::fs::create_dir_all(&v2).expect("mkdir");
    // The pages link `../../wheels/<file>`: the wheels sit beside the family's directory.
    std::os::unix::fs::symlink(sdk.join("simple"), v2.join(family)).expect("symlink");
    std::os::unix::fs::symlink(sdk.join("wheels"), v2.join("wheels")).expect("symlink");
}

/// The reference's documented build command, `build --install-rocm --index-url
/// https://…/gfx110X-all/ --output-dir out/`, run in the checkout root: no target flag, so the
/// family is the one the index URL names, checked against the SDK installed from it. Here
/// with a family the test toolchain can compile (gfx101X-dgpu); first with a family whose
/// targets the SDK on that index lacks.
#[test]
fn the_family_an_index_url_names_is_built() {
    let world = World::new().with_checkouts();
    let www = world.env.path("www");
    family_index(&www, "a", "gfx103X-all", SDK_TARGETS);
    family_index(
        &www,
        "b",
        "gfx101X-dgpu",
        &["gfx1010", "gfx1011", "gfx1012"],
    );
    let server = serve(&www);
    let build = |index: &str, out: &str| {
        world
            .rockbuild()
            .current_dir(&world.root)
            .args(["build", "--install-rocm", "--index-url"])
            .arg(format!("{}{index}", server.url()))
            .args(["--output-dir", out])
            .output()
            .expect("run build")
    };

    // gfx103X-all has seven targets; the SDK behind that URL ships gfx906 and gfx1030.
    let output = build("a/v2/gfx103X-all/", "lacking/");
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    let stderr = text(&output.stderr).replace(&server.url(), "http://[INDEX]/");
    insta::assert_snapshot!(
        "index_family_not_in_sdk",
        &stderr[stderr.find("error: ").expect("an error")..]
    );
    assert!(!world.root.join("lacking/logs/torch.log").exists());

    let output = build("b/v2/gfx101X-dgpu/", "out/");
    let stderr = ok(&output);
    assert!(
        stderr.contains(&format!(
            "targets: gfx1010,gfx1011,gfx1012 (3 targets, from family gfx101X-dgpu, inferred from the last path segment of --index-url {}b/v2/gfx101X-dgpu/)\n",
            server.url()
        )),
        "{stderr}"
    );
    let out = world.root.join("out");
    let torch = only_wheel(&out, "torch");
    let mut targets = offload_targets(&wheel_member(&torch, "torch/lib/libtorch_hip.so"));
    targets.sort();
    assert_eq!(targets, ["gfx1010", "gfx1011", "gfx1012"]);
    for dist in ["torchaudio", "torchvision", "triton", "apex"] {
        only_wheel(&out, dist);
    }
    let locked = read_json(&world.lock());
    assert_eq!(
        locked["build"]["targets"],
        serde_json::json!(["gfx1010", "gfx1011", "gfx1012"])
    );
    assert_eq!(
        locked["build"]["index_url"],
        format!("{}b/v2/gfx101X-dgpu/", server.url())
    );
}

/// The files under a venv's site-packages, relative to it, that are kernel packs.
fn installed_packs(python: &Path) -> Vec<String> {
    let site = run_ok(std::process::Command::new(python).args([
        "-c",
        "import sysconfig; print(sysconfig.get_paths()['purelib'])",
    ]));
    let site = PathBuf::from(site.trim());
    let mut packs: Vec<String> = walkdir::WalkDir::new(&site)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "kpack"))
        .map(|e| {
            e.path()
                .strip_prefix(&site)
                .expect("under site-packages")
                .display()
                .to_string()
        })
        .collect();
    packs.sort();
    packs
}

/// The targets of the code objects in a kernel pack.
fn pack_targets(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).expect("read pack");
    let pack = rockbuild::binary::kpack::archive::Pack::parse(&bytes).expect("a kernel pack");
    // Each code object decompressed, its target read from its own metadata note.
    let mut targets: Vec<String> = pack
        .code_objects()
        .expect("code objects")
        .values()
        .map(|object| rockbuild::binary::elf::code_object_target(object).expect("target"))
        .collect();
    targets.sort();
    targets.dedup();
    targets
}

/// The multi-arch mode end to end on the sample stack: one build for gfx906 and gfx1030, torch
/// and torchvision split into host wheels and one device wheel per target, the lock recording
/// the mode, verify reading the split, stage publishing everything with the SDK's wheels to one
/// index, and `torch[device-gfx906]` / `torch[device-gfx1030]` installed from it over HTTP by
/// pip and uv, each venv holding exactly its target's kernels.
#[test]
fn a_multi_arch_build_is_split_verified_staged_and_installs_per_target() {
    let world = World::new().with_checkouts();
    let lock = world.lock();
    let output = world
        .build_cmd("build")
        .args([
            "--install-rocm",
            "--index-url",
            &world.index_url,
            "--pytorch-rocm-arch",
            "gfx906,gfx1030",
            "--multi-arch",
            "--lock",
        ])
        .arg(&lock)
        .output()
        .expect("run build");
    let stderr = ok(&output);
    let out = world.out();
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .expect("list")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".whl"))
        .map(|n| n.split('-').next().unwrap_or_default().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "amd_torch_device_gfx1030",
            "amd_torch_device_gfx906",
            "amd_torchvision_device_gfx1030",
            "amd_torchvision_device_gfx906",
            "apex",
            "torch",
            "torchaudio",
            "torchvision",
            "triton",
        ],
        "{stderr}"
    );
    assert!(
        stderr.contains("split torch: host torch-2.10.0a0"),
        "{stderr}"
    );
    let locked = read_json(&lock);
    assert_eq!(locked["build"]["mode"], "multi-arch");
    assert_eq!(
        locked["build"]["targets"],
        serde_json::json!(["gfx906", "gfx1030"])
    );

    // The report names each split: the fat wheel kept, the host wheel, one device wheel per
    // target, each with its digest and size as written.
    let report = read_json(&out.join("build-report.json"));
    for (project, prefix) in [
        ("torch", "amd-torch-device"),
        ("vision", "amd-torchvision-device"),
    ] {
        let split = &report["projects"][project]["split"];
        let fat_wheel = report["projects"][project]["wheel"]
            .as_str()
            .expect("wheel");
        assert_eq!(split["fat_wheel"], format!("fat/{fat_wheel}"), "{split}");
        assert_eq!(split["host"]["wheel"], fat_wheel);
        let mut targets = Vec::new();
        for file in
            std::iter::once(&split["host"]).chain(split["devices"].as_array().expect("devices"))
        {
            let path = out.join(file["wheel"].as_str().expect("wheel"));
            let bytes = std::fs::read(&path).expect("read");
            assert_eq!(file["size"], bytes.len() as u64, "{}", path.display());
            assert_eq!(file["sha256"], sha256_hex(&bytes), "{}", path.display());
            if let Some(target) = file["target"].as_str() {
                assert_eq!(file["name"], format!("{prefix}-{target}"));
                assert!(file["code_objects"].as_u64().expect("count") >= 1, "{file}");
                targets.push(target.to_string());
            }
        }
        targets.sort();
        assert_eq!(targets, ["gfx1030", "gfx906"], "{split}");
        assert!(
            split["bytes_removed"].as_u64().expect("bytes") > 0,
            "{split}"
        );
    }
    assert!(
        std::fs::read_to_string(out.join("build-summary.md"))
            .expect("summary")
            .contains("split torch: host `torch-"),
        "the summary names the split"
    );

    // The host libraries lost their device code; the fat wheels are kept for the cache.
    let torch = only_wheel(&out, "torch");
    assert!(
        offload_targets(&wheel_member(&torch, "torch/lib/libtorch_hip.so")).is_empty(),
        "the host torch still holds device code"
    );
    let fat = only_wheel(&out.join("fat"), "torch");
    let mut fat_targets = offload_targets(&wheel_member(&fat, "torch/lib/libtorch_hip.so"));
    fat_targets.sort();
    assert_eq!(fat_targets, ["gfx1030", "gfx906"]);
    let extras: Vec<String> = requires_dist(&torch)
        .into_iter()
        .filter(|r| r.contains("extra == "))
        .collect();
    let host = format!("2.10.0a0{SUFFIX}");
    assert_eq!(
        extras,
        [
            format!("amd-torch-device-gfx1030 == {host}; extra == \"device-gfx1030\""),
            format!("amd-torch-device-gfx906 == {host}; extra == \"device-gfx906\""),
            format!("amd-torch-device-gfx1030 == {host}; extra == \"device-all\""),
            format!("amd-torch-device-gfx906 == {host}; extra == \"device-all\""),
        ]
    );
    let device = only_wheel(&out, "amd_torch_device_gfx906");
    assert_eq!(
        requires_dist(&device),
        [
            format!("torch == {host}"),
            format!("rocm-sdk-device-gfx906 == {SDK_VERSION}")
        ]
    );

    // verify reads the split: packs, markers, every device extra resolved within the set.
    let verify = world
        .rockbuild()
        .arg("verify")
        .arg(&out)
        .arg("--lock")
        .arg(&lock)
        .args(["--index-url", &world.index_url])
        .output()
        .expect("verify");
    ok(&verify);

    // Rebuilding from the same lock: multi-arch from the lock, every project cached, split
    // again from the kept fat wheels.
    let output = world
        .build_cmd("build")
        .arg("--lock")
        .arg(&lock)
        .output()
        .expect("rebuild");
    let stderr = ok(&output);
    let report = read_json(&out.join("build-report.json"));
    assert_eq!(report["projects"]["torch"]["status"], "cached", "{stderr}");
    assert!(
        stderr.contains("split vision: host torchvision-"),
        "{stderr}"
    );
    assert_eq!(only_wheel(&out, "torch"), torch);

    // One index: products, device wheels and the SDK's wheels they pin.
    let staged = world
        .rockbuild()
        .args(["stage", "--config"])
        .arg(&world.stack_yaml)
        .arg("--input")
        .arg(&out)
        .arg("--to")
        .arg(world.env.path("staging"))
        .args(["--index-url", &world.index_url, "--lock"])
        .arg(&lock)
        .output()
        .expect("stage");
    let stage_err = ok(&staged);
    let web = serve(&world.env.path("staging"));
    for (target, other) in [("gfx906", "gfx1030"), ("gfx1030", "gfx906")] {
        let (pip, uv) = install_from_index(
            &world.env,
            &web.url(),
            &format!("torch[device-{target}]\n"),
            Hashes::Unchecked,
            target,
        );
        for python in [&pip, &uv] {
            let packs = installed_packs(python);
            assert_eq!(
                packs,
                [format!("torch/.kpack/torch_{target}.kpack")],
                "{}: {stage_err}",
                python.display()
            );
            let site = python
                .parent()
                .and_then(Path::parent)
                .expect("venv")
                .to_path_buf();
            let pack = walkdir::WalkDir::new(&site)
                .into_iter()
                .filter_map(Result::ok)
                .find(|e| e.path().extension().is_some_and(|x| x == "kpack"))
                .expect("the pack")
                .into_path();
            assert_eq!(pack_targets(&pack), [target.to_string()], "not {other}");
        }
    }

    // smoke on each target's runner: the set with that target's device wheels, named in the
    // report as evidence for promotion.
    let mut reports = Vec::new();
    for target in ["gfx906", "gfx1030"] {
        let report = world.env.path(&format!("smoke-{target}.json"));
        let smoke = world
            .rockbuild()
            .args(["smoke", "--config"])
            .arg(&world.stack_yaml)
            .args(["--index-url", &web.url(), "--targets", target, "--lock"])
            .arg(&lock)
            .arg("--report")
            .arg(&report)
            .output()
            .expect("smoke");
        let smoke_err = ok(&smoke);
        let json = read_json(&report);
        assert_eq!(json["result"], "passed", "{smoke_err}");
        let mut tested: Vec<String> = json["wheels"]
            .as_array()
            .expect("wheels")
            .iter()
            .map(|w| w["name"].as_str().expect("name").to_string())
            .filter(|n| n.contains("device"))
            .collect();
        tested.sort();
        assert_eq!(
            tested,
            [
                format!("amd-torch-device-{target}"),
                format!("amd-torchvision-device-{target}"),
                format!("rocm-sdk-device-{target}")
            ],
            "{smoke_err}"
        );
        reports.push(report);
    }

    // Promotion takes host and device wheels together, on the evidence of both runners.
    let release = world.env.path("release");
    let promoted = world
        .rockbuild()
        .arg("promote")
        .arg("--from")
        .arg(world.env.path("staging"))
        .arg("--to")
        .arg(&release)
        .arg("--test-report")
        .arg(&reports[0])
        .arg("--test-report")
        .arg(&reports[1])
        .args(["--index-url", &world.index_url])
        .output()
        .expect("promote");
    let promote_err = ok(&promoted);
    for device in [
        "amd-torch-device-gfx906",
        "amd-torch-device-gfx1030",
        "amd-torchvision-device-gfx906",
        "amd-torchvision-device-gfx1030",
        "torch",
        "torchvision",
    ] {
        assert!(
            release.join(device).join("index.html").is_file(),
            "{device} not promoted: {promote_err}"
        );
    }
}

/// The sample stack's origins with files written over the default branches: `(project,
/// files)`; torch's triton.txt is pointed at triton's new commit when triton changes.
/// Returns the stack config.
fn sample_with(world: &World, changes: &[(&str, Vec<(String, String)>)]) -> PathBuf {
    let origins = sample_origins(&world.env);
    let mut torch_files: Vec<(String, String)> = Vec::new();
    for (project, files) in changes {
        if *project == "torch" {
            torch_files.extend(files.iter().cloned());
            continue;
        }
        let repo = origins.repo(project);
        let branch = repo.default_branch.as_str();
        let commit = push_branch(&world.env, &repo.path, Some(branch), branch, files);
        if *project == "triton" {
            torch_files.push((
                ".ci/docker/ci_commit_pins/triton.txt".into(),
                format!("{commit}\n"),
            ));
        }
    }
    if !torch_files.is_empty() {
        let torch = origins.repo("torch");
        let branch = torch.default_branch.as_str();
        push_branch(&world.env, &torch.path, Some(branch), branch, &torch_files);
    }
    origins.stack_yaml.clone()
}

/// A sample file with one exact text replaced (failing when the sample no longer has it).
#[track_caller]
fn sample_file_with(path: &str, from: &str, to: &str) -> String {
    let text =
        std::fs::read_to_string(crate::common::repo_root().join("examples/stack").join(path))
            .expect("sample file");
    assert!(text.contains(from), "{path} no longer contains {from:?}");
    text.replace(from, to)
}

/// Checks out `stack_yaml` into `<root>` and builds it with `extra` (SDK from the local
/// index, gfx906), then plans it again: the plan's fingerprints are the report's (one way of
/// computing the cache key for the same tree). Returns the build's stderr and the plan.
fn check_out_and_build(world: &World, stack_yaml: &Path, extra: &[&str]) -> String {
    ok(&world
        .rockbuild()
        .args(["checkout", "--config"])
        .arg(stack_yaml)
        .arg("--root-checkout-dir")
        .arg(&world.root)
        .output()
        .expect("run checkout"));
    let run = |verb: &str, more: &[&str]| {
        world
            .rockbuild()
            .args([verb, "--config"])
            .arg(stack_yaml)
            .arg("--root-checkout-dir")
            .arg(&world.root)
            .arg("--output-dir")
            .arg(world.out())
            .args(["--pytorch-rocm-arch", "gfx906"])
            .args(extra)
            .args(more)
            .output()
            .expect("run rockbuild")
    };
    let build = run(
        "build",
        &["--install-rocm", "--index-url", &world.index_url],
    );
    ok(&build);
    let json = run("plan", &["--json"]);
    ok(&json);
    let plan: Value = serde_json::from_slice(&json.stdout).expect("plan JSON");
    let report = read_json(&world.out().join("build-report.json"));
    for project in plan["projects"].as_array().expect("projects") {
        let name = project["name"].as_str().expect("name");
        assert_eq!(
            project["fingerprint"], report["projects"][name]["fingerprint"],
            "{name}: the plan's cache key is the build's"
        );
    }
    let text_plan = run("plan", &[]);
    ok(&text_plan);
    format!("{}\n{}", text(&build.stderr), text(&text_plan.stdout))
}

/// The version a wheel's file name carries.
fn version_of(wheel: &Path) -> String {
    let name = wheel.file_name().and_then(|n| n.to_str()).expect("name");
    name.split('-').nth(1).expect("a version part").to_string()
}

/// What a build whose `project` (wheel `dist`) had its version decided by the build leaves:
/// the plan's note naming why (`why`), the wheel, the lock's record of it (versions, stems,
/// `decided`) and the report's, the status line, and a set verify accepts against that lock.
/// Returns the version the wheel carries.
#[track_caller]
fn assert_decided(world: &World, output: &str, project: &str, dist: &str, why: &str) -> String {
    assert!(
        output.contains(&format!("{project}: version decided by the build ({why})")),
        "{output}"
    );
    let built = version_of(&only_wheel(&world.out(), dist));
    let lock = read_json(&world.root.join("rockbuild.lock.json"));
    assert_eq!(lock["build"]["versions"][project], built.as_str());
    assert_eq!(
        lock["build"]["stems"][project],
        format!("{dist}-{built}").as_str()
    );
    assert!(
        lock["build"]["decided"][project]
            .as_str()
            .is_some_and(|recorded| why.contains(recorded)),
        "{lock}"
    );
    let report = read_json(&world.out().join("build-report.json"));
    assert_eq!(report["projects"][project]["version"], built.as_str());
    assert_eq!(
        report["projects"][project]["version_decided"],
        format!(
            "by the build: {}",
            lock["build"]["decided"][project]
                .as_str()
                .unwrap_or_default()
        )
        .as_str()
    );
    assert!(
        output.contains(&format!(
            "records the versions the build decided: {project} {built} (decided by the build)"
        )),
        "{output}"
    );
    ok(&world
        .rockbuild()
        .arg("verify")
        .arg(world.out())
        .arg("--lock")
        .arg(world.root.join("rockbuild.lock.json"))
        .output()
        .expect("verify"));
    built
}

/// Upstream's version rule with its helper renamed (`TRITON_VERSION = "3.5.0" +
/// _version_suffix()`): rockbuild cannot predict it, so the build decides. triton builds
/// first, torch pins the triton that was built (Requires-Dist from
/// PYTORCH_EXTRA_INSTALL_REQUIREMENTS), the lock and the report say what was decided, and
/// verify against the lock accepts the set.
#[test]
fn a_triton_rockbuild_cannot_predict_builds_and_torch_pins_what_was_built() {
    let world = World::new();
    let setup = sample_file_with(
        "triton/setup.py",
        "get_triton_version_suffix",
        "_version_suffix",
    );
    let stack = sample_with(&world, &[("triton", vec![("setup.py".into(), setup)])]);
    let output = check_out_and_build(
        &world,
        &stack,
        &["--skip", "audio", "--skip", "vision", "--skip", "apex"],
    );
    let built = assert_decided(
        &world,
        &output,
        "triton",
        "triton",
        "setup.py:80 computes triton's version as `\"3.5.0\" + _version_suffix()`, and rockbuild cannot predict `_version_suffix()`",
    );
    assert!(built.starts_with("3.5.0+git"), "{built}");
    let torch = only_wheel(&world.out(), "torch");
    assert!(
        requires_dist(&torch).contains(&format!("triton=={built}")),
        "{:?}",
        requires_dist(&torch)
    );
}

/// A torch whose version file is computed by its build (version.txt a template the build
/// fills in, `@BASE_VERSION@`): rockbuild hands no PYTORCH_BUILD_VERSION, torch's own rule
/// decides, and vision pins the torch that was built (`torch==<it>`, from PYTORCH_VERSION).
#[test]
fn a_torch_whose_version_file_is_computed_builds_and_vision_pins_what_was_built() {
    let world = World::new();
    let backend = sample_file_with(
        "pytorch/tools/build_backend/torch_build_backend.py",
        "version = (ROOT / \"version.txt\").read_text().strip()",
        "version = (ROOT / \"version.txt\").read_text().strip().replace(\"@BASE_VERSION@\", (ROOT / \"tools/base_version\").read_text().strip())",
    );
    let stack = sample_with(
        &world,
        &[(
            "torch",
            vec![
                ("version.txt".into(), "@BASE_VERSION@\n".into()),
                ("tools/base_version".into(), "2.10.0a0\n".into()),
                ("tools/build_backend/torch_build_backend.py".into(), backend),
            ],
        )],
    );
    let output = check_out_and_build(
        &world,
        &stack,
        &["--skip", "audio", "--skip", "triton", "--skip", "apex"],
    );
    let built = assert_decided(
        &world,
        &output,
        "torch",
        "torch",
        "version.txt:1 `@BASE_VERSION@` is not a version (computed by the build?)",
    );
    assert!(built.starts_with("2.10.0a0+git"), "{built}");
    let vision = only_wheel(&world.out(), "torchvision");
    assert!(
        requires_dist(&vision).contains(&format!("torch=={built}")),
        "{:?}",
        requires_dist(&vision)
    );
}
