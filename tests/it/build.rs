//! `install-rocm`, `build` and `plan` on real parts: the stand-in ROCm SDK served over HTTP on
//! 127.0.0.1 and installed with pip and uv, the sample stack checked out from local git
//! origins, real hipcc compiles for gfx906 and gfx1030.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::http::{HttpServer, serve};
use crate::common::sample::{
    offload_targets, only_wheel, requires_dist, sample_origins, wheel_build_record, wheel_member,
    wheel_members,
};
use crate::common::sdk::sdk_index;
use crate::common::{TestEnv, run_ok, wheelhouse};

const SDK_VERSION: &str = "7.10.0a20251124";
const SDK_TARGETS: &[&str] = &["gfx906", "gfx1030"];
const SUFFIX: &str = "+rocm7.10.0a20251124";

/// A test world: hermetic env whose pip steps install offline from the wheelhouse, the
/// stand-in SDK on a local index, and (optionally) the sample stack checked out.
struct World {
    env: TestEnv,
    _server: HttpServer,
    index_url: String,
    stack_yaml: PathBuf,
    root: PathBuf,
}

impl World {
    fn new() -> World {
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
    fn with_checkouts(mut self) -> World {
        let origins = sample_origins(&self.env);
        self.stack_yaml = origins.stack_yaml.clone();
        let output = self
            .rockbuild()
            .arg("checkout")
            .arg("--config")
            .arg(&self.stack_yaml)
            .arg("--root-checkout-dir")
            .arg(&self.root)
            .output()
            .expect("run checkout");
        ok(&output);
        assert!(self.lock().is_file());
        self
    }

    fn lock(&self) -> PathBuf {
        self.root.join("rockbuild.lock.json")
    }

    fn out(&self) -> PathBuf {
        self.env.path("out")
    }

    fn rockbuild(&self) -> assert_cmd::Command {
        self.env.rockbuild()
    }

    /// `rockbuild <verb>` with the stack config, root, output and index.
    fn build_cmd(&self, verb: &str) -> assert_cmd::Command {
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
        let stderr = ok(&output);
        let stdout = text(&output.stdout);
        assert!(
            stderr.contains("targets: gfx906,gfx1030 (2 targets, from --pytorch-rocm-arch)"),
            "{stderr}"
        );
        assert!(
            stdout.contains(&format!(
                "torch 2.10.0a0{SUFFIX} -> torch-2.10.0a0{SUFFIX}-*.whl"
            )),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!(
                "vision 0.25.0a0{SUFFIX} -> torchvision-0.25.0a0{SUFFIX}-*.whl"
            )),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("rocm[libraries,devel]=={SDK_VERSION}")),
            "{stdout}"
        );
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

    // The JSON form: per project argv, cwd, env, version, wheel and targets.
    let output = world
        .build_cmd("plan")
        .args([
            "--json",
            "--rocm-sdk-version",
            &format!("=={SDK_VERSION}"),
            "--pytorch-rocm-arch",
            "gfx906",
        ])
        .output()
        .expect("run");
    ok(&output);
    let plan: Value = serde_json::from_slice(&output.stdout).expect("JSON plan");
    let projects = plan["projects"].as_array().expect("projects");
    let names: Vec<&str> = projects
        .iter()
        .map(|p| p["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["torch", "audio", "vision", "triton", "apex"]);
    let torch = &projects[0];
    assert_eq!(torch["targets"], serde_json::json!(["gfx906"]));
    let build = torch["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["label"] == "build wheel")
        .expect("build step");
    assert_eq!(
        build["argv"].as_array().expect("argv")[1..5],
        serde_json::json!(["-m", "build", "--wheel", "--no-isolation"])
            .as_array()
            .expect("argv")[..]
    );
    assert_eq!(
        build["env"]["PYTORCH_BUILD_VERSION"],
        format!("2.10.0a0{SUFFIX}")
    );
    assert_eq!(projects[1]["after"], serde_json::json!(["torch"]));
    assert!(!world.out().exists());
}

#[test]
fn wrong_target_and_family_names_are_refused() {
    let world = World::new().with_checkouts();
    let plan = |args: &[&str], pytorch_rocm_arch_env: Option<&str>| {
        let mut cmd = world.build_cmd("plan");
        cmd.args(["--rocm-sdk-version", &format!("=={SDK_VERSION}")])
            .args(args);
        if let Some(value) = pytorch_rocm_arch_env {
            cmd.env("PYTORCH_ROCM_ARCH", value);
        }
        cmd.output().expect("run")
    };
    let cases: [(&[&str], Option<&str>, &str); 5] = [
        // A mistyped checkout directory is an error, not a project quietly left out.
        (
            &[
                "--pytorch-rocm-arch",
                "gfx906",
                "--pytorch-dir",
                "no-such-dir",
            ],
            None,
            "no-such-dir is not a directory: check the path, or drop the flag",
        ),
        (
            &["--pytorch-rocm-arch", "gfx906,gfx94x"],
            None,
            "error: --pytorch-rocm-arch: unknown gfx target 'gfx94x': did you mean family 'gfx94X-dcgpu' (targets gfx942)?",
        ),
        (
            &["--amdgpu-family", "gfx942"],
            None,
            "error: --amdgpu-family gfx942: 'gfx942' is a gfx target, not a GPU family: its family is 'gfx94X-dcgpu'",
        ),
        (
            &[],
            Some("gfx110X-all"),
            "error: PYTORCH_ROCM_ARCH: 'gfx110X-all' is a GPU family, not a gfx target: pass --amdgpu-family gfx110X-all",
        ),
        (
            &[],
            None,
            "error: no gfx targets given: pass --pytorch-rocm-arch",
        ),
    ];
    for (args, env, want) in cases {
        let output = plan(args, env);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&output.stderr)
        );
        assert!(
            text(&output.stderr).contains(want),
            "{args:?}:\n{}",
            text(&output.stderr)
        );
    }

    // Too many targets from PYTORCH_ROCM_ARCH: refused unless asked for.
    let many = "gfx900;gfx906;gfx908;gfx90a;gfx1010;gfx1011;gfx1012;gfx1030;gfx1031";
    let output = plan(&[], Some(many));
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("error: 9 targets from PYTORCH_ROCM_ARCH (gfx900,gfx906,gfx908,gfx90a,gfx1010,gfx1011,gfx1012,gfx1030,gfx1031) is more than --max-targets 8"),
        "{}",
        text(&output.stderr)
    );
    let output = plan(&["--allow-many-targets"], Some(many));
    let stderr = ok(&output);
    assert!(
        stderr.contains("(9 targets, from PYTORCH_ROCM_ARCH)"),
        "{stderr}"
    );
    assert!(text(&output.stdout).contains(
        "PYTORCH_ROCM_ARCH=gfx900;gfx906;gfx908;gfx90a;gfx1010;gfx1011;gfx1012;gfx1030;gfx1031"
    ));
    // A family expands through the table.
    let output = plan(&["--amdgpu-family", "gfx101X-dgpu"], None);
    assert!(
        ok(&output)
            .contains("gfx1010,gfx1011,gfx1012 (3 targets, from --amdgpu-family gfx101X-dgpu)")
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
    assert!(markdown.contains("| torch | built |"), "{markdown}");
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
    assert!(stderr.contains("error: 1 of 5 project(s) failed: torch; skipped (they build against a failed project): audio, vision, apex"), "{stderr}");
    assert!(
        stderr.contains("torch: build wheel failed (exit status: 1)"),
        "{stderr}"
    );
    assert!(stderr.contains("last "), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "repro: cd {} && env ",
            world.root.join("pytorch").display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("USE_FLASH_ATTENTION=ON"), "{stderr}");
    assert!(
        stderr.contains("hint: flash-attention is ON but no target has aotriton kernels"),
        "{stderr}"
    );
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
