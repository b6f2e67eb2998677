//! Smoke tests that need dependencies from outside the set.

use super::*;

#[test]
fn smoke_installs_the_rocm_sdk_the_set_pins_from_an_extra_index() {
    let world = World::new();
    let sdk = http::serve(&crate::common::sdk::sdk_index(
        "7.10.0a20251124",
        &["gfx906"],
    ));
    // Like torch: a wheel that pins the SDK it was built against.
    let set = world.build_sdk_pinned_set("7.10.0a20251124");
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
    assert_eq!(
        crate::common::tested_wheel_names(&report),
        ["rock-torch", "rock-vision"],
        "evidence is what came from the index under test: the SDK came from the extra index"
    );
}

// ---- `rockbuild stage` and `promote --rewrite-version`, on wheels verify accepts ----
