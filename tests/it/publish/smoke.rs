//! Smoke tests that need dependencies from outside the set.

use super::*;

#[test]
fn smoke_installs_the_rocm_sdk_the_set_pins_from_an_extra_index() {
    let world = World::new();
    let sdk = http::serve(&crate::common::sdk::sdk_index(
        "7.10.0a20251124",
        &["gfx906"],
    ));
    let dir = world.wheels.join("pinned");
    // Like torch: a wheel that pins the SDK it was built against.
    let set = vec![
        build_wheel(
            &world.env,
            &dir,
            "rock-torch",
            "1.0+rocm7.10.0a20251124",
            json!({"requires": ["rocm[libraries]==7.10.0a20251124"], "code": "import rocm_sdk\n"}),
        ),
        build_wheel(
            &world.env,
            &dir,
            "rock-vision",
            "0.1+rocm7.10.0a20251124",
            json!({"requires": ["rock-torch==1.0+rocm7.10.0a20251124"]}),
        ),
    ];
    let staged = world.env.path("staged");
    world.stage_by_hand(&staged, &set);
    let server = http::serve(&staged);

    // The staging index alone cannot satisfy the pin (TheRock#4904): the dependency step fails
    // and names what is missing.
    let alone = world.smoke(&server.url(), "alone.json").code(1);
    let text = stderr(&alone);
    assert!(
        text.contains("install dependencies") && text.contains("rocm"),
        "{text}"
    );
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(world.env.path("alone.json")).expect("report"),
    )
    .expect("json");
    assert_eq!(report["result"], "failed");

    let sdk_simple = format!("{}simple/", sdk.url());
    let smoke = world
        .env
        .rockbuild()
        .args([
            "smoke",
            "--config",
            "stack.yaml",
            "--index-url",
            &server.url(),
            "--extra-index-url",
            &sdk_simple,
        ])
        .args(["--report", "smoke.json"])
        .assert()
        .success();
    drop(smoke);
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(world.env.path("smoke.json")).expect("report"),
    )
    .expect("json");
    assert_eq!(report["result"], "passed");
    let names: Vec<&str> = report["wheels"]
        .as_array()
        .expect("wheels")
        .iter()
        .map(|w| w["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        ["rock-torch", "rock-vision"],
        "evidence is what came from the index under test: the SDK came from the extra index"
    );
}

// ---- `rockbuild stage` and `promote --rewrite-version`, on wheels verify accepts ----
