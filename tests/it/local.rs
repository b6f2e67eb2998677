//! Local developer rebuilds: `detect` on fake sysfs trees written in the kernel's formats,
//! `doctor` on this machine and on broken ones, `compat` on a built sample stack.

use std::process::Output;

use std::path::Path;

use crate::common::http::{HttpServer, serve};
use crate::common::sample::sample_origins;
use crate::common::sdk::sdk_index;
use crate::common::sysfs::{self, FakeSysfs};
use crate::common::{TestEnv, wheelhouse};

/// stdout and stderr with the temp dir replaced, plus the exit code.
fn transcript(env: &TestEnv, output: &Output) -> String {
    let root = env.root().display().to_string();
    let clean = |bytes: &[u8]| String::from_utf8_lossy(bytes).replace(&root, "[TMP]");
    format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        output
            .status
            .code()
            .map_or("signal".to_string(), |c| c.to_string()),
        clean(&output.stdout),
        clean(&output.stderr)
    )
}

fn detect(env: &TestEnv, fake: &FakeSysfs, extra: &[&str]) -> Output {
    env.rockbuild()
        .arg("detect")
        .arg("--sysfs-root")
        .arg(&fake.root)
        .args(extra)
        .output()
        .expect("run detect")
}

/// Text and JSON of one fake machine, each as a snapshot; returns the JSON.
#[track_caller]
fn detect_snapshots(name: &str, env: &TestEnv, fake: &FakeSysfs) -> serde_json::Value {
    let text = detect(env, fake, &[]);
    insta::assert_snapshot!(format!("detect_{name}"), transcript(env, &text));
    let json = detect(env, fake, &["--json"]);
    assert_eq!(
        json.status.code(),
        text.status.code(),
        "same exit for --json"
    );
    insta::assert_snapshot!(format!("detect_{name}_json"), transcript(env, &json));
    serde_json::from_slice(&json.stdout).expect("--json prints JSON")
}

fn machine(env: &TestEnv) -> std::path::PathBuf {
    env.path("machine")
}

#[test]
fn detect_one_rdna3_card() {
    let env = TestEnv::new();
    let fake = sysfs::rdna3(&machine(&env));
    let json = detect_snapshots("rdna3", &env, &fake);
    assert_eq!(json["selection"]["targets"], serde_json::json!(["gfx1100"]));
    assert_eq!(
        json["selection"]["families"],
        serde_json::json!(["gfx110X-all"])
    );

    // PYTORCH_ROCM_ARCH decides over the hardware, and says so.
    let mut env = env;
    env.set("PYTORCH_ROCM_ARCH", "gfx1100;gfx1201");
    let output = detect(&env, &fake, &[]);
    insta::assert_snapshot!("detect_rdna3_pytorch_rocm_arch", transcript(&env, &output));
    env.set("PYTORCH_ROCM_ARCH", "gfx1100,gfx110X-all");
    let output = detect(&env, &fake, &[]);
    insta::assert_snapshot!(
        "detect_rdna3_pytorch_rocm_arch_typo",
        transcript(&env, &output)
    );
}

#[test]
fn detect_an_mi300x_node_with_eight_gpus() {
    let env = TestEnv::new();
    let fake = sysfs::mi300x_node(&machine(&env));
    let json = detect_snapshots("mi300x", &env, &fake);
    let gpus = json["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 8);
    assert!(
        gpus.iter()
            .all(|g| g["target"] == "gfx942" && g["kind"] == "discrete")
    );
    assert_eq!(
        gpus.iter()
            .map(|g| g["kfd_node"].as_u64().expect("node"))
            .collect::<Vec<_>>(),
        [2, 3, 4, 5, 6, 7, 8, 9],
        "both CPU nodes skipped"
    );
    assert_eq!(
        json["selection"]["index_urls"],
        serde_json::json!(["https://rocm.nightlies.amd.com/v2/gfx94X-dcgpu/"])
    );

    // HIP_VISIBLE_DEVICES picks GPUs by index, in its order.
    let mut env = env;
    env.set("HIP_VISIBLE_DEVICES", "6,7");
    let output = detect(&env, &fake, &["--json"]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let hip: Vec<serde_json::Value> = json["gpus"]
        .as_array()
        .expect("gpus")
        .iter()
        .map(|g| g["hip_index"].clone())
        .collect();
    assert_eq!(
        hip,
        serde_json::json!([null, null, null, null, null, null, 0, 1])
            .as_array()
            .expect("array")
            .clone()
    );
}

#[test]
fn detect_an_apu_plus_a_discrete_card() {
    let mut env = TestEnv::new();
    let fake = sysfs::apu_and_card(&machine(&env));
    let json = detect_snapshots("apu_and_card", &env, &fake);
    assert_eq!(json["gpus"][0]["kind"], "integrated");
    assert_eq!(json["gpus"][1]["kind"], "discrete");

    // The note's advice, followed: only the card.
    env.set("HIP_VISIBLE_DEVICES", "1");
    let output = detect(&env, &fake, &[]);
    insta::assert_snapshot!("detect_apu_and_card_card_only", transcript(&env, &output));
    // And the runtime told to treat every GPU as gfx1100.
    env.set("HIP_VISIBLE_DEVICES", "");
    env.set("HSA_OVERRIDE_GFX_VERSION", "11.0.0");
    let output = detect(&env, &fake, &[]);
    insta::assert_snapshot!("detect_apu_and_card_override", transcript(&env, &output));
    env.set("HSA_OVERRIDE_GFX_VERSION", "11.0");
    let output = detect(&env, &fake, &[]);
    insta::assert_snapshot!(
        "detect_apu_and_card_bad_override",
        transcript(&env, &output)
    );
}

#[test]
fn detect_an_unknown_device_without_guessing() {
    let env = TestEnv::new();
    let fake = sysfs::unknown_device(&machine(&env));
    let json = detect_snapshots("unknown_device", &env, &fake);
    assert_eq!(json["gpus"][0]["target"], serde_json::Value::Null);
    assert_eq!(json["selection"], serde_json::Value::Null);
}

#[test]
fn detect_no_amd_gpu() {
    let env = TestEnv::new();
    let fake = sysfs::no_gpu(&machine(&env));
    let json = detect_snapshots("no_gpu", &env, &fake);
    assert_eq!(json["topology"], "none");
    // A malformed topology file is an error naming the file and line, not a wrong answer.
    let broken = sysfs::rdna3(&env.path("broken"));
    let properties = broken
        .root
        .join("sys/class/kfd/kfd/topology/nodes/1/properties");
    let text = std::fs::read_to_string(&properties).expect("read");
    std::fs::write(
        &properties,
        text.replace("gfx_target_version 110000", "gfx_target_version gfx1100"),
    )
    .expect("write");
    let output = detect(&env, &broken, &[]);
    insta::assert_snapshot!("detect_malformed_properties", transcript(&env, &output));
}

// ---- doctor -------------------------------------------------------------------------------

const SDK_VERSION: &str = "7.10.0a20251124";
const TARGETS: &str = "gfx906,gfx1030";

/// A developer's machine after `checkout` and `install-rocm`: sample checkouts with a lock,
/// the stand-in SDK from a local index in `<out>/venv`, the lock recording it.
struct Workspace {
    env: TestEnv,
    _server: HttpServer,
    index_url: String,
}

impl Workspace {
    fn new() -> Workspace {
        let mut env = TestEnv::new();
        env.set("PIP_NO_INDEX", "1");
        env.set("PIP_FIND_LINKS", wheelhouse().display().to_string());
        let server = serve(&sdk_index(SDK_VERSION, &["gfx906", "gfx1030"]));
        let index_url = format!("{}simple/", server.url());
        let origins = sample_origins(&env);
        let workspace = Workspace {
            env,
            _server: server,
            index_url,
        };
        workspace.ok(workspace
            .env
            .rockbuild()
            .arg("checkout")
            .arg("--config")
            .arg(&origins.stack_yaml)
            .arg("--root-checkout-dir")
            .arg(workspace.root()));
        workspace.ok(workspace
            .env
            .rockbuild()
            .args(["install-rocm", "--index-url", &workspace.index_url])
            .arg("--output-dir")
            .arg(workspace.out())
            .arg("--lock")
            .arg(workspace.lock()));
        workspace
    }

    fn root(&self) -> std::path::PathBuf {
        self.env.path("src")
    }

    fn out(&self) -> std::path::PathBuf {
        self.env.path("out")
    }

    fn lock(&self) -> std::path::PathBuf {
        self.root().join("rockbuild.lock.json")
    }

    #[track_caller]
    fn ok(&self, command: &mut assert_cmd::Command) -> Output {
        let output = command.output().expect("runs");
        assert!(
            output.status.success(),
            "{}",
            transcript(&self.env, &output)
        );
        output
    }

    /// `rockbuild doctor` for this workspace (the cache inside the temp dir, like TestEnv's).
    fn doctor(&self, extra: &[&str]) -> assert_cmd::Command {
        let mut command = self.env.rockbuild();
        command
            .arg("doctor")
            .arg("--root-checkout-dir")
            .arg(self.root())
            .arg("--output-dir")
            .arg(self.out())
            .args(["--pytorch-rocm-arch", TARGETS])
            .args(extra);
        command
    }
}

/// What differs between machines in a doctor report: tool versions, free space, ports, the
/// system ROCm's paths; with `disk_masked`, also the disk verdict (it depends on the machine's
/// free space, which the caller checks against df instead).
fn doctor_filters(disk_masked: bool) -> Vec<(&'static str, &'static str)> {
    let mut filters = vec![
        (r"git version \d[^\s;]*", "git version [V]"),
        (r"Python \d+\.\d+\.\d+", "Python [V]"),
        (r"ccache version \d[^\s;]*", "ccache version [V]"),
        (r"sccache \d[^\s;]*", "sccache [V]"),
        (r"\d+\.\d (B|KiB|MiB|GiB|TiB) free", "[N] free"),
        (r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]"),
        (
            r"/usr/bin/hipcc|/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
            "[SYSTEM ROCM]",
        ),
    ];
    if disk_masked {
        filters.extend([
            (r"(?m)^(pass|warn|FAIL)  disk ", "[DISK]  disk "),
            (r"(?m)^ +→ free space or move .*\n", ""),
            (r"\d+ passed, \d+ warnings?, \d+ failed", "[SUMMARY]"),
            // Below the floor the disk is one more problem and alone makes doctor exit 1:
            // the callers check the exit code and the other verdicts themselves.
            (r"(?m)^exit: [01]$", "exit: [CODE]"),
            (
                r"(?m)^error: doctor found 1 problem to fix first: disk\n?",
                "",
            ),
            (
                r"(?m)^(error: doctor found )\d+ problems?",
                "${1}[N] problem(s)",
            ),
            (r"(?m)^(error: doctor found .*?)(, disk\b|\bdisk, )", "$1"),
        ]);
    }
    filters
}

#[track_caller]
fn doctor_snapshot(name: &str, text: &str, disk_masked: bool) {
    insta::with_settings!({filters => doctor_filters(disk_masked)}, {
        insta::assert_snapshot!(name, text);
    });
}

fn checks(output: &Output) -> Vec<(String, String)> {
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("doctor --json");
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            (
                c["id"].as_str().expect("id").to_string(),
                c["status"].as_str().expect("status").to_string(),
            )
        })
        .collect()
}

/// Free bytes under `dir` as df sees them.
fn df_available(dir: &Path) -> u64 {
    let output = std::process::Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(dir)
        .output()
        .expect("df");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .expect("df prints the available bytes")
}

#[test]
fn doctor_on_this_machine_and_on_broken_ones() {
    let workspace = Workspace::new();
    let env = &workspace.env;

    // This machine, set up as the quickstart does: everything passes, the test compile
    // really runs hipcc for both targets; only the disk verdict depends on the machine.
    let output = workspace.doctor(&["--json"]).output().expect("doctor");
    let found = checks(&output);
    let disk_status = found
        .iter()
        .find(|(id, _)| id == "disk")
        .map(|(_, s)| s.clone())
        .expect("disk");
    let available = df_available(env.root());
    let expected_disk = if available < 45 << 30 {
        "fail"
    } else if available < 158 << 30 {
        "warn"
    } else {
        "pass"
    };
    assert_eq!(disk_status, expected_disk, "{available} bytes free");
    let not_passed: Vec<&(String, String)> = found
        .iter()
        .filter(|(id, s)| id != "disk" && s != "pass")
        .collect();
    assert!(not_passed.is_empty(), "{}", transcript(env, &output));
    assert_eq!(
        output.status.code(),
        Some(if expected_disk == "fail" { 1 } else { 0 })
    );
    let text = workspace.doctor(&[]).output().expect("doctor");
    doctor_snapshot("doctor_this_machine", &transcript(env, &text), true);

    // SDK drift: the lock moved on (a teammate's newer SDK), the venv did not.
    let drifted = env.path("drifted.lock.json");
    let lock = std::fs::read_to_string(workspace.lock()).expect("lock");
    assert!(
        lock.contains(&format!("\"sdk_version\": \"{SDK_VERSION}\"")),
        "{lock}"
    );
    std::fs::write(&drifted, lock.replace(SDK_VERSION, "7.10.0a20251201")).expect("write");
    let output = workspace
        .doctor(&["--no-compile", "--lock"])
        .arg(&drifted)
        .output()
        .expect("doctor");
    assert_eq!(output.status.code(), Some(1));
    let sdk: Vec<(String, String)> = checks(
        &workspace
            .doctor(&["--no-compile", "--json", "--lock"])
            .arg(&drifted)
            .output()
            .expect("json"),
    )
    .into_iter()
    .filter(|(id, _)| id == "sdk-lock")
    .collect();
    assert_eq!(sdk, [("sdk-lock".to_string(), "fail".to_string())]);
    doctor_snapshot("doctor_sdk_drift", &transcript(env, &output), true);

    // No hipcc: a venv without the SDK and a PATH without ROCm (git and python3 only).
    let bin = env.path("bin-without-rocm");
    std::fs::create_dir_all(&bin).expect("bin");
    for tool in ["git", "python3"] {
        let found = which(env, tool);
        std::os::unix::fs::symlink(&found, bin.join(tool)).expect("symlink");
    }
    let mut bare = TestEnv::new();
    bare.set("PATH", bin.display().to_string());
    let output = bare
        .rockbuild()
        .arg("doctor")
        .arg("--venv")
        .arg(bare.path("empty-venv"))
        .arg("--root-checkout-dir")
        .arg(workspace.root())
        .arg("--output-dir")
        .arg(bare.path("out"))
        .args(["--pytorch-rocm-arch", TARGETS])
        .output()
        .expect("doctor");
    assert_eq!(output.status.code(), Some(1));
    let masked = transcript(&bare, &output)
        .replace(&bin.display().to_string(), "[BIN]")
        .replace(&env.root().display().to_string(), "[WORKSPACE]");
    doctor_snapshot("doctor_no_hipcc", &masked, true);

    // A full disk: a 1 MiB tmpfs, mounted in a private mount namespace (unshare), holding
    // the checkout root, the output and the cache.
    let small = env.path("small-disk");
    std::fs::create_dir_all(&small).expect("mount point");
    let script = format!(
        "mount -t tmpfs -o size=1m tmpfs {dir} && mkdir {dir}/src {dir}/out {dir}/cache && exec \"$0\" \"$@\"",
        dir = small.display()
    );
    let output = env
        .command("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c", &script])
        .arg(env!("CARGO_BIN_EXE_rockbuild"))
        .arg("doctor")
        .arg("--no-compile")
        .arg("--venv")
        .arg(workspace.out().join("venv"))
        .arg("--root-checkout-dir")
        .arg(small.join("src"))
        .arg("--output-dir")
        .arg(small.join("out"))
        .arg("--cache-dir")
        .arg(small.join("cache"))
        .args(["--pytorch-rocm-arch", TARGETS])
        .output()
        .expect("unshare");
    let text = transcript(env, &output);
    assert!(
        !text.contains("unshare: "),
        "this test mounts a tmpfs in a user+mount namespace (`unshare --user --map-root-user --mount`); the machine refused: {text}"
    );
    doctor_snapshot("doctor_full_disk", &text, false);
}

/// The fix doctor prints for a venv that is gone is a command that runs as printed: it
/// reinstalls the SDK the lock pins from the index the lock records (PyPI has no ROCm SDK),
/// after which doctor passes the venv and the SDK.
#[test]
fn doctors_reinstall_hint_runs_as_printed() {
    let workspace = Workspace::new();
    let env = &workspace.env;
    std::fs::remove_dir_all(workspace.out().join("venv")).expect("remove the venv");
    let output = workspace
        .doctor(&["--no-compile", "--json", "--lock"])
        .arg(workspace.lock())
        .output()
        .expect("doctor");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("doctor --json");
    let fix = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == "venv")
        .and_then(|c| c["fix"].as_str())
        .unwrap_or_else(|| panic!("a fix for the venv: {}", transcript(env, &output)))
        .to_string();
    let words = shlex::split(&fix).expect("a shell command");
    assert_eq!(words[..2], ["rockbuild", "install-rocm"], "{fix}");
    assert!(!fix.contains('<'), "no placeholder to fill in: {fix}");
    let followed = workspace.ok(env.rockbuild().args(&words[1..]));
    let said = transcript(env, &followed);
    assert!(said.contains("--index-url from the lock"), "{said}");
    let after = checks(
        &workspace
            .doctor(&["--no-compile", "--json", "--lock"])
            .arg(workspace.lock())
            .output()
            .expect("doctor"),
    );
    for id in ["venv", "sdk-lock"] {
        assert!(
            after.contains(&(id.to_string(), "pass".to_string())),
            "{id}: {after:?}"
        );
    }
}

fn which(env: &TestEnv, program: &str) -> std::path::PathBuf {
    let output = env
        .command("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .expect("sh");
    std::path::PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

// ---- compat -------------------------------------------------------------------------------

/// The Markdown and JSON of `compat` with the temp dir and the machine's Python masked.
#[track_caller]
fn compat_snapshot(name: &str, env: &TestEnv, output: &Output) {
    insta::with_settings!({filters => vec![
        // The hipify commit's id (rockbuild commits hipify's changes at checkout time).
        (r"\b[0-9a-f]{40}\b", "[SHA]"),
        (r"\b3\.1\d\.\d+\b", "[PYTHON]"),
        (r"python3\.1\d\b", "python3.X"),
        (r"cp31\d", "cp3XX"),
        (r"\b3\.1\d\b", "[PYTHON]"),
    ]}, {
        insta::assert_snapshot!(name, transcript(env, output));
    });
}

/// ROCm's triton as PyTorch publishes it, `pytorch-triton-rocm` (PyPI, download.pytorch.org):
/// the real PyPI wheel of that name fills the Triton column, and says under which name.
#[test]
fn compat_knows_upstream_distribution_names() {
    let env = TestEnv::new();
    let wheel = wheelhouse().join("pytorch_triton_rocm-0.0.1-py3-none-any.whl");
    let output = env
        .rockbuild()
        .arg("compat")
        .arg(&wheel)
        .arg("--json")
        .output()
        .expect("compat");
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let triton = report["components"]
        .as_array()
        .expect("components")
        .iter()
        .find(|c| c["name"] == "Triton")
        .expect("a Triton column");
    assert_eq!(
        triton,
        &serde_json::json!({
            "name": "Triton",
            "distribution": "pytorch-triton-rocm",
            "upstream": true,
            "installed": "0.0.1",
            "lock": null,
            "matches": null,
        })
    );
    let markdown = env
        .rockbuild()
        .arg("compat")
        .arg(&wheel)
        .output()
        .expect("compat");
    assert!(
        String::from_utf8_lossy(&markdown.stdout)
            .contains("| installed | — | — | — | 0.0.1 (pytorch-triton-rocm) | — |"),
        "{}",
        String::from_utf8_lossy(&markdown.stdout)
    );
}

#[test]
fn compat_on_a_built_and_installed_sample_stack() {
    let workspace = Workspace::new();
    let env = &workspace.env;
    let origins = sample_origins(env);
    workspace.ok(workspace
        .env
        .rockbuild()
        .arg("build")
        .arg("--config")
        .arg(&origins.stack_yaml)
        .arg("--root-checkout-dir")
        .arg(workspace.root())
        .arg("--output-dir")
        .arg(workspace.out())
        .args(["--pytorch-rocm-arch", TARGETS, "--lock"])
        .arg(workspace.lock()));

    // As the quickstart's last step: a fresh venv, the five wheels and the SDK installed with pip.
    let venv = env.path("try");
    crate::common::run_ok(env.command("python3").arg("-m").arg("venv").arg(&venv));
    let sdk_wheels = sdk_index(SDK_VERSION, &["gfx906", "gfx1030"]).join("wheels");
    crate::common::run_ok(
        env.command(venv.join("bin/python"))
            .args([
                "-m",
                "pip",
                "install",
                "--isolated",
                "--quiet",
                "--no-index",
                "--find-links",
            ])
            .arg(workspace.out())
            .arg("--find-links")
            .arg(&sdk_wheels)
            .args(["torch", "torchaudio", "torchvision", "triton", "apex"]),
    );

    let compat = |args: &[&std::ffi::OsStr]| {
        env.rockbuild()
            .arg("compat")
            .args(args)
            .arg("--config")
            .arg(&origins.stack_yaml)
            .output()
            .expect("compat")
    };
    let lock = workspace.lock();
    let output = compat(&[venv.as_os_str(), "--lock".as_ref(), lock.as_os_str()]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        transcript(env, &output)
    );
    compat_snapshot("compat_venv", env, &output);
    let json = compat(&[
        venv.as_os_str(),
        "--lock".as_ref(),
        lock.as_os_str(),
        "--json".as_ref(),
    ]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(report["mismatches"], serde_json::json!([]));
    assert_eq!(
        report["lock_targets"],
        serde_json::json!(["gfx906", "gfx1030"])
    );
    let torch_libraries: Vec<&serde_json::Value> = report["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .filter(|t| t["distribution"] == "torch")
        .collect();
    assert_eq!(torch_libraries.len(), 1);
    assert_eq!(
        torch_libraries[0]["targets"],
        serde_json::json!(["gfx906", "gfx1030"]),
        "in the lock's order"
    );
    compat_snapshot("compat_venv_json", env, &json);

    // The wheels themselves, before anyone installed them: no import, so what the libraries
    // link and what torch's METADATA pins decide.
    let output = compat(&[
        workspace.out().as_os_str(),
        "--lock".as_ref(),
        lock.as_os_str(),
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        transcript(env, &output)
    );
    compat_snapshot("compat_wheels", env, &output);

    // A lock that asked for other targets and another SDK: every difference listed, exit 5.
    let other = env.path("other.lock.json");
    let text = std::fs::read_to_string(&lock).expect("lock");
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("lock json");
    value["build"]["targets"] = serde_json::json!(["gfx90a", "gfx1030"]);
    value["build"]["sdk_version"] = serde_json::json!("7.10.0a20251201");
    std::fs::write(&other, serde_json::to_string_pretty(&value).expect("json")).expect("write");
    let output = compat(&[venv.as_os_str(), "--lock".as_ref(), other.as_os_str()]);
    assert_eq!(output.status.code(), Some(5));
    compat_snapshot("compat_venv_other_lock", env, &output);

    // Neither a venv nor wheels.
    let output = compat(&[workspace.root().as_os_str()]);
    assert_eq!(output.status.code(), Some(2));
    compat_snapshot("compat_not_a_stack", env, &output);
}

// ---- auto ---------------------------------------------------------------------------------

/// `build`/`plan` and `install-rocm` asked to take targets and the index from this machine
/// (here: fake sysfs trees through ROCKBUILD_SYSFS_ROOT).
#[test]
fn auto_takes_targets_and_the_index_from_detection() {
    let mut workspace = Workspace::new();
    let origins = sample_origins(&workspace.env);
    // A Radeon RX 6800 (Navi 21, gfx1030): a target the stand-in SDK has.
    let navi21 = FakeSysfs::new(&workspace.env.path("navi21"))
        .with_kfd()
        .cpu_node(0, 16)
        .gpu_node(1, &sysfs::KfdGpu::new(100300, 0x73bf, 0x03), 0x030000);
    workspace
        .env
        .set("ROCKBUILD_SYSFS_ROOT", navi21.root.display().to_string());
    let plan = |workspace: &Workspace, targets: &[&str]| {
        workspace
            .env
            .rockbuild()
            .arg("plan")
            .arg("--config")
            .arg(&origins.stack_yaml)
            .arg("--root-checkout-dir")
            .arg(workspace.root())
            .arg("--output-dir")
            .arg(workspace.out())
            .args(targets)
            .args(["--json"])
            .output()
            .expect("plan")
    };
    let output = plan(&workspace, &["--pytorch-rocm-arch", "auto"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        transcript(&workspace.env, &output)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("plan json");
    assert_eq!(
        json["targets"]["targets"],
        serde_json::json!(["gfx1030"]),
        "{json:#}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(
        stderr.lines().find(|l| l.contains("auto")),
        Some(
            "--pytorch-rocm-arch auto: gfx1030 (family gfx103X-all), decided by the KFD topology (gfx_target_version)"
        )
    );

    // The index of the family, and what kind of index it is (TheRock's legacy layout).
    let output = plan(
        &workspace,
        &[
            "--pytorch-rocm-arch",
            "gfx1030",
            "--install-rocm",
            "--index-url",
            "auto",
            "--rocm-sdk-version",
            "==7.10.0a20251124",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("--index-url auto") || l.starts_with("note: "))
        .collect();
    assert_eq!(
        said,
        [
            "--index-url auto: https://rocm.nightlies.amd.com/v2/gfx103X-all/ (the legacy per-family index of family gfx103X-all, this machine's gfx1030, decided by the KFD topology (gfx_target_version))",
            "note: the per-family indexes (`v2/<family>/`) are TheRock's legacy layout: TheRock publishes no new per-family releases there and may delete old ones (its docs/packaging/legacy_per_family_releases.md); its current releases are multi-arch, one index for every family (https://rocm.nightlies.amd.com/whl-multi-arch/)",
        ],
        "{stderr}"
    );

    // The whole family: the stand-in SDK has only two of its seven targets, and says so.
    let output = plan(&workspace, &["--amdgpu-family", "auto"]);
    insta::assert_snapshot!(
        "auto_family_beyond_the_sdk",
        transcript(&workspace.env, &output)
    );

    // install-rocm: one index per family, so a machine with two families must choose.
    let two = sysfs::apu_and_card(&workspace.env.path("two-families"));
    workspace
        .env
        .set("ROCKBUILD_SYSFS_ROOT", two.root.display().to_string());
    let output = workspace
        .env
        .rockbuild()
        .args(["install-rocm", "--index-url", "auto", "--output-dir"])
        .arg(workspace.env.path("other-out"))
        .output()
        .expect("install-rocm");
    insta::assert_snapshot!(
        "auto_index_two_families",
        transcript(&workspace.env, &output)
    );

    // No GPU: auto has nothing to go on.
    let none = sysfs::no_gpu(&workspace.env.path("no-gpu"));
    workspace
        .env
        .set("ROCKBUILD_SYSFS_ROOT", none.root.display().to_string());
    let output = plan(&workspace, &["--amdgpu-family", "auto"]);
    insta::assert_snapshot!("auto_no_gpu", transcript(&workspace.env, &output));
}

// ---- the walk ---------------------------------------------------------------------------

/// One command of docs/local.md's `console walk` blocks, and the exit status the doc gives
/// it (`# exits N` after the command; 0 when it says none).
struct WalkStep {
    line: String,
    exit: i32,
}

fn walk_steps() -> Vec<WalkStep> {
    let doc = std::fs::read_to_string(crate::common::repo_root().join("docs/local.md"))
        .expect("docs/local.md");
    let mut steps = Vec::new();
    let mut inside = false;
    for line in doc.lines() {
        if let Some(fence) = line.strip_prefix("```") {
            inside = fence.trim() == "console walk";
            continue;
        }
        if let (true, Some(command)) = (inside, line.strip_prefix("$ ")) {
            let exit = command
                .split_once("# exits ")
                .map_or(0, |(_, n)| n.trim().parse().expect("`# exits N`"));
            steps.push(WalkStep {
                line: command.to_string(),
                exit,
            });
        }
    }
    steps
}

/// The world `scripts/quickstart` leaves, made by its own steps (the SDK's index as a
/// `file://` directory, lock, checkout --from-lock, install-rocm, build, stage), without the
/// smoke, test and promote that leave nothing the walk reads. Returns its directory.
fn quickstart_world(env: &TestEnv) -> std::path::PathBuf {
    let qs = env.path("quickstart");
    let origins = crate::common::sample::sample_origins_in(env, &qs);
    std::os::unix::fs::symlink(
        sdk_index(SDK_VERSION, &["gfx906", "gfx1030"]),
        qs.join("sdk"),
    )
    .expect("the SDK's directory");
    let index = format!("file://{}/sdk/simple/", qs.display());
    let lock = qs.join("src/rockbuild.lock.json");
    let ok = |command: &mut assert_cmd::Command| {
        let output = command.output().expect("runs");
        assert!(output.status.success(), "{}", transcript(env, &output));
    };
    ok(env
        .rockbuild()
        .args(["lock", "--config"])
        .arg(&origins.stack_yaml)
        .args(["--repo-hashtag", "release/2.9", "--index-url", &index])
        .args(["--pytorch-rocm-arch", TARGETS, "--lock"])
        .arg(qs.join("rockbuild.lock.json")));
    ok(env
        .rockbuild()
        .args(["checkout", "--config"])
        .arg(&origins.stack_yaml)
        .arg("--root-checkout-dir")
        .arg(qs.join("src"))
        .arg("--from-lock")
        .arg(qs.join("rockbuild.lock.json")));
    ok(env
        .rockbuild()
        .args(["install-rocm", "--index-url", &index, "--output-dir"])
        .arg(qs.join("out"))
        .arg("--lock")
        .arg(&lock));
    ok(env
        .rockbuild()
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", wheelhouse())
        .args(["build", "--config"])
        .arg(&origins.stack_yaml)
        .arg("--root-checkout-dir")
        .arg(qs.join("src"))
        .arg("--output-dir")
        .arg(qs.join("out")));
    ok(env
        .rockbuild()
        .arg("stage")
        .arg("--input")
        .arg(qs.join("out"))
        .arg("--to")
        .arg(qs.join("staging"))
        .arg("--lock")
        .arg(&lock)
        .arg("--allow-linux-tag"));
    qs
}

/// docs/local.md §6 as written, on the quickstart's leftovers: each command of its walk
/// blocks runs from the repository root (a line's `export` carries into the ones after it)
/// with the exit status the doc gives it, and every command rockbuild prints for the user to
/// run (an indented `rockbuild …` line) is run as printed and must succeed.
#[test]
fn the_walk_on_the_quickstarts_leftovers() {
    let mut env = TestEnv::new();
    let qs = quickstart_world(&env);
    env.set("QUICKSTART_DIR", qs.display().to_string());
    // The doc's flags say everything; nothing from the harness decides for them.
    env.unset("ROCKBUILD_ALLOW_LINUX_TAG");
    let steps = walk_steps();
    assert!(steps.len() >= 5, "the walk blocks of docs/local.md");
    // `rockbuild` is the binary under test, as the doc's alias makes it, with the PATH the
    // world was built under (the build cache keys it).
    let mut exports = format!(
        "rockbuild() {{ {} \"$@\"; }}\n",
        env!("CARGO_BIN_EXE_rockbuild")
    );
    let mut said = String::new();
    let shown = |text: &str| text.replace(&qs.display().to_string(), "$QS");
    let run = |exports: &str, line: &str| {
        env.command("bash")
            .current_dir(crate::common::repo_root())
            .arg("-c")
            .arg(format!("set -e\n{exports}\n{line}"))
            .output()
            .expect("bash")
    };
    let mut hints = 0;
    for step in &steps {
        if step.line.starts_with("export ") {
            exports.push_str(&step.line);
            exports.push('\n');
            said.push_str(&format!("$ {}\n", step.line));
            continue;
        }
        let output = run(&exports, &step.line);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        said.push_str(&format!(
            "$ {}\n{}[exit {}]\n",
            step.line,
            shown(&text),
            output
                .status
                .code()
                .map_or("signal".into(), |c| c.to_string())
        ));
        assert_eq!(
            output.status.code(),
            Some(step.exit),
            "the walk so far:\n{said}"
        );
        let rows = |status: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.split_whitespace().nth(1) == Some(status))
                .filter_map(|l| l.split_whitespace().next())
                // The table's rows, not the progress lines (`vision: built …`).
                .filter(|project| !project.ends_with(':'))
                .map(str::to_string)
                .collect()
        };
        if step.line.starts_with("rockbuild build ") {
            if step.line.contains("--build vision") {
                assert_eq!(rows("built"), ["vision"], "{}", shown(&text));
                assert_eq!(rows("reused").len(), 4, "{}", shown(&text));
            } else {
                assert_eq!(
                    rows("cached").len(),
                    5,
                    "the cache, reused: {}",
                    shown(&text)
                );
            }
        }
        // Every command rockbuild tells the user to run, run as printed.
        for hint in text
            .lines()
            .filter(|l| l.starts_with(' ') && l.trim_start().starts_with("rockbuild "))
        {
            let hint = hint.trim();
            hints += 1;
            for attempt in ["", " (again)"] {
                let followed = run(&exports, hint);
                let out = format!(
                    "{}{}",
                    String::from_utf8_lossy(&followed.stdout),
                    String::from_utf8_lossy(&followed.stderr)
                );
                said.push_str(&format!(
                    "$ {}   # printed above{attempt}\n{}[exit {}]\n",
                    shown(hint),
                    shown(&out),
                    followed
                        .status
                        .code()
                        .map_or("signal".into(), |c| c.to_string())
                ));
                assert!(
                    followed.status.success(),
                    "{hint}{attempt}:\n{}",
                    shown(&out)
                );
            }
        }
    }
    assert!(
        hints > 0,
        "the refused stage prints the command to run:\n{said}"
    );
    assert!(
        said.contains("(0 objects uploaded, 0 B; 16 already there)"),
        "the re-stage command run twice stages once:\n{said}"
    );
}
