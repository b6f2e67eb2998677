//! Local developer rebuilds: `detect` on fake sysfs trees written in the kernel's formats,
//! `doctor` on this machine and on broken ones, `compat` on a built sample stack.

use std::process::Output;

use crate::common::TestEnv;
use crate::common::sysfs::{self, FakeSysfs};

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
