//! Promotion between directory stores: gated on evidence, never replacing published objects
//! or shadowing published versions.

use super::*;
use crate::common::json_lines::assert_json_lines;

#[test]
fn smoke_then_promote_then_install_from_the_release_index() {
    let world = World::new();
    let set = world.build_set("rocm7.0.0", 0);
    let staged = world.env.path("staged");
    world.stage_by_hand(&staged, &set);
    let server = http::serve(&staged);

    // Smoke logs JSON here: its success path speaks it too (json_logs has no torch to smoke).
    let smoke = world
        .env
        .rockbuild()
        .args(["--log-format", "json", "smoke", "--config", "stack.yaml"])
        .args(["--index-url", &server.url(), "--report", "smoke.json"])
        .assert()
        .success();
    assert_json_lines("smoke", &smoke.get_output().stderr);
    assert!(
        stderr(&smoke).contains("smoke rock-torch") || stderr(&smoke).contains("smoke torch"),
        "{}",
        stderr(&smoke)
    );
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(world.env.path("smoke.json")).expect("report"),
    )
    .expect("json");
    assert_eq!(report["result"], "passed");
    let tested: Vec<(String, String)> = report["wheels"]
        .as_array()
        .expect("wheels")
        .iter()
        .map(|w| {
            (
                w["filename"].as_str().expect("filename").to_string(),
                w["sha256"].as_str().expect("sha").to_string(),
            )
        })
        .collect();
    assert_eq!(
        tested,
        vec![
            (TORCH.to_string(), sha256_file(&set[0])),
            (VISION.to_string(), sha256_file(&set[1]))
        ],
        "the report names the exact bytes pip installed"
    );
    let checks: Vec<&str> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        checks,
        [
            "create venv",
            "install the set (hash-checked)",
            "install dependencies",
            "pip check",
            "import rock-torch",
            "smoke torch",
            "import rock-vision",
            "smoke vision"
        ]
    );

    let dry = world
        .promote(
            "staged",
            "release",
            &["--test-report", "smoke.json", "--dry-run"],
        )
        .success();
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("promote_dry_run", stdout(&dry)));
    assert!(
        !world.env.path("release").exists(),
        "a dry run writes nothing"
    );

    let promoted = world
        .promote("staged", "release", &["--test-report", "smoke.json"])
        .success();
    assert!(
        stderr(&promoted).contains("promoted 2 wheels (4 objects copied"),
        "{}",
        stderr(&promoted)
    );
    let release = world.env.path("release");
    assert_eq!(
        sha256_file(&release.join("rock-torch").join(TORCH)),
        sha256_file(&set[0])
    );
    let server = http::serve(&release);
    let requirements = hashed_requirements(&[
        ("rock-torch", "1.0+rocm7.0.0", &set[0]),
        ("rock-vision", "0.1+rocm7.0.0", &set[1]),
    ]);
    let (pip, uv) = install_with_pip_and_uv(&world.env, &server.url(), &requirements, "release");
    for python_bin in [pip, uv] {
        assert_eq!(
            python(
                &world.env,
                &python_bin,
                "import rock_vision; print(rock_vision.__version__)"
            ),
            "0.1+rocm7.0.0"
        );
    }

    // Again: the same bytes are already there, nothing is copied, the pages are rewritten.
    // This run logs JSON: a promotion that succeeds speaks it as well as a denied one.
    let again = world
        .promote(
            "staged",
            "release",
            &["--test-report", "smoke.json", "--log-format", "json"],
        )
        .success();
    assert_json_lines("promote", &again.get_output().stderr);
    assert!(
        stderr(&again).contains("(0 objects copied, 0 B; 4 already there)"),
        "{}",
        stderr(&again)
    );
}

#[test]
fn promotion_is_denied_without_passing_evidence() {
    let world = World::new();
    let set = world.build_set("rocm7.0.0", 0);
    let staged = world.env.path("staged");
    world.stage_by_hand(&staged, &set);

    // No report at all, and a report file that does not exist: default deny, exit 5.
    let denied = world.promote("staged", "release", &[]).code(5);
    assert!(
        stderr(&denied).contains(
            "promotion denied: 2 of 2 wheels have no passing test evidence; nothing was copied"
        ),
        "{}",
        stderr(&denied)
    );
    assert!(
        stderr(&denied).contains("no test report covers it"),
        "{}",
        stderr(&denied)
    );
    // A report that was named but is missing is no evidence (exit 5, docs/publishing.md),
    // said up front with the file named; one that cannot be parsed is a usage error (2).
    let missing = world
        .promote("staged", "release", &["--test-report", "absent.json"])
        .code(5);
    assert!(
        stderr(&missing).contains("absent.json"),
        "{}",
        stderr(&missing)
    );
    assert!(
        stderr(&missing).contains("--test-report ")
            && stderr(&missing).contains("hint: pass the report `rockbuild smoke --report FILE`")
            && stderr(&missing).contains("promotion denied: no evidence; nothing was copied"),
        "{}",
        stderr(&missing)
    );
    std::fs::write(world.env.path("garbled.json"), "{\"schema\": ").expect("report");
    let garbled = world
        .promote("staged", "release", &["--test-report", "garbled.json"])
        .code(2);
    assert!(
        stderr(&garbled).contains("garbled.json: ") && !stderr(&garbled).contains("DENIED"),
        "{}",
        stderr(&garbled)
    );
    assert!(!world.env.path("release").exists());

    // A failing smoke run (vision's smoke command raises) writes a failed report.
    let failing_stack = STACK.replace(
        "print('vision', rock_vision.__version__)",
        "raise SystemExit('vision smoke failed on purpose')",
    );
    std::fs::write(world.env.path("failing.yaml"), failing_stack).expect("stack");
    let server = http::serve(&staged);
    let smoke = world
        .env
        .rockbuild()
        .args([
            "smoke",
            "--config",
            "failing.yaml",
            "--index-url",
            &server.url(),
            "--report",
            "failed.json",
        ])
        .assert()
        .code(1);
    assert!(
        stderr(&smoke).contains("vision smoke failed on purpose"),
        "{}",
        stderr(&smoke)
    );
    let denied = world
        .promote("staged", "release", &["--test-report", "failed.json"])
        .code(5);
    assert!(
        stderr(&denied).contains("failed.json failed (smoke failed: smoke vision)"),
        "{}",
        stderr(&denied)
    );

    // A waiver that has expired does not count, and says so. (A failed run counts against
    // every wheel it installed: vision's failure may well be torch's fault.)
    std::fs::write(
        world.env.path("expired.yaml"),
        "waivers:\n  - wheel: \"rock_*\"\n    owner: jane.doe@example.com\n    reason: flaky vision smoke\n    expires: 2020-01-31\n",
    )
    .expect("waiver");
    let expired = world
        .promote(
            "staged",
            "release",
            &["--test-report", "failed.json", "--waiver", "expired.yaml"],
        )
        .code(5);
    assert!(
        stderr(&expired).contains("waiver 1 (")
            && stderr(&expired).contains(
                "owned by jane.doe@example.com expired on 2020-01-31; it was not counted"
            ),
        "{}",
        stderr(&expired)
    );
    assert!(!world.env.path("release").exists());

    // A valid waiver lets the set through, and is shown with its owner and reason.
    std::fs::write(
        world.env.path("valid.yaml"),
        std::fs::read_to_string(world.env.path("expired.yaml"))
            .expect("read")
            .replace("2020-01-31", "2999-12-31"),
    )
    .expect("waiver");
    let waived = world
        .promote(
            "staged",
            "release",
            &["--test-report", "failed.json", "--waiver", "valid.yaml"],
        )
        .success();
    assert!(
        stderr(&waived).contains("promoting on waiver 1"),
        "{}",
        stderr(&waived)
    );
    assert!(
        stderr(&waived)
            .contains("owned by jane.doe@example.com, until 2999-12-31: flaky vision smoke"),
        "{}",
        stderr(&waived)
    );

    // A passing run is evidence only for the bytes it installed.
    world.smoke(&server.url(), "passed.json").success();
    // Evidence for other bytes with the same file name does not count.
    let rebuilt = world.env.path("rebuilt");
    let other = build_wheel(
        &world.env,
        &rebuilt,
        "rock-torch",
        "1.0+rocm7.0.0",
        json!({"code": "# rebuilt\n"}),
    );
    world.stage_by_hand(&world.env.path("staged2"), &[other]);
    let mismatch = world
        .promote("staged2", "release2", &["--test-report", "passed.json"])
        .code(5);
    assert!(
        stderr(&mismatch).contains("passed.json tested another build of this file"),
        "{}",
        stderr(&mismatch)
    );
}

#[test]
fn published_objects_are_never_replaced_and_versions_must_sort_above_published_ones() {
    let world = World::new();
    let set = world.build_set("rocm7.15.0", 0);
    let staged = world.env.path("staged");
    world.stage_by_hand(&staged, &set);
    let server = http::serve(&staged);
    world.smoke(&server.url(), "smoke.json").success();

    // Different bytes under a released key: exit 6 before anything is copied.
    let release = world.env.path("release");
    std::fs::create_dir_all(release.join("rock-vision")).expect("mkdir");
    std::fs::write(
        release
            .join("rock-vision")
            .join("rock_vision-0.1+rocm7.15.0-py3-none-any.whl"),
        b"someone else's bytes",
    )
    .expect("plant");
    let conflict = world
        .promote("staged", "release", &["--test-report", "smoke.json"])
        .code(6);
    assert!(
        stderr(&conflict).contains("published objects are never replaced, and nothing was copied"),
        "{}",
        stderr(&conflict)
    );
    assert!(!release.join("rock-torch").exists(), "nothing was copied");
    std::fs::remove_dir_all(release.join("rock-vision")).expect("clean");
    world
        .promote("staged", "release", &["--test-report", "smoke.json"])
        .success();

    // rocm10 after rocm7.15: PEP 440 sorts it lower, pip would keep the old one.
    let newer = world.build_set("rocm10.1.0", 0);
    let staged10 = world.env.path("staged10");
    world.stage_by_hand(&staged10, &newer);
    let server10 = http::serve(&staged10);
    world.smoke(&server10.url(), "smoke10.json").success();
    let refused = world
        .promote("staged10", "release", &["--test-report", "smoke10.json"])
        .code(6);
    let text = stderr(&refused);
    assert!(
        text.contains("rock-torch 1.0+rocm10.1.0 would sort below rock-torch 1.0+rocm7.15.0, which is already published")
            && text.contains("compares the local segments 'rocm10' and 'rocm7' as strings"),
        "{text}"
    );
    assert!(
        !release
            .join("rock-torch")
            .join("rock_torch-1.0+rocm10.1.0-py3-none-any.whl")
            .exists()
    );
}

/// The reference stages torch next to the ROCm SDK's wheels in one per-family index
/// (TheRock's build_tools/github_actions/upload_python_packages.py uploads rocm, rocm-sdk-core,
/// rocm-sdk-libraries-… and torch to the same `v2-staging/<family>/` prefix). Smoke installs
/// the SDK from that prefix as the set's dependency. The SDK's wheels are companions: the
/// gate judges them by their bytes against the SDK's index, not by tests, so the development
/// package no test installs is promoted with the rest.
#[test]
fn a_prefix_holding_the_sdk_is_promoted_with_every_sdk_wheel_as_its_index_publishes_it() {
    const SDK: &str = "7.10.0a20251124";
    let world = World::new();
    let sdk_dir = crate::common::sdk::sdk_index(SDK, &["gfx906"]);
    let sdk = sdk_dir.join("wheels");
    let sdk_server = http::serve(&sdk_dir);
    let sdk_url = format!("{}simple/", sdk_server.url());
    let set = world.build_sdk_pinned_set(SDK);
    // What `rocm[libraries,devel]` brings: the meta package, the runtime, the libraries and
    // the development package.
    let sdk_wheels: Vec<PathBuf> = [
        format!("rocm-{SDK}-py3-none-any.whl"),
        format!("rocm_sdk_core-{SDK}-py3-none-linux_x86_64.whl"),
        format!("rocm_sdk_libraries-{SDK}-py3-none-linux_x86_64.whl"),
        format!("rocm_sdk_devel-{SDK}-py3-none-linux_x86_64.whl"),
    ]
    .iter()
    .map(|file| sdk.join(file))
    .collect();
    let staged = world.env.path("staged");
    world.stage_by_hand(&staged, &[set.clone(), sdk_wheels].concat());
    let server = http::serve(&staged);

    // Only the staging prefix: the SDK comes from it, as the dependency of rock-torch.
    world.smoke(&server.url(), "smoke.json").success();
    let text = std::fs::read_to_string(world.env.path("smoke.json")).expect("report");
    let report: serde_json::Value = serde_json::from_str(&text).expect("json");
    for wheel in report["wheels"].as_array().expect("wheels") {
        let name = wheel["name"].as_str().expect("name").replace('_', "-");
        let file = wheel["filename"].as_str().expect("filename");
        assert_eq!(
            wheel["sha256"].as_str(),
            Some(sha256_file(&staged.join(&name).join(file)).as_str()),
            "the report names the bytes the prefix holds: {file}"
        );
    }
    let mut settings = snapshot::settings(&world.env);
    settings.add_filter(r#""\d{4}-\d\d-\d\dT[0-9:.]+Z""#, r#""[TIMESTAMP]""#);
    settings.add_filter(r#""python": "3\.\d+\.\d+""#, r#""python": "[PYTHON]""#);
    // Outputs of pip and Python, which differ between their versions.
    settings.add_filter(r#""detail": "[^"]*""#, r#""detail": "[OUTPUT]""#);
    settings.add_filter(
        r#""generated_by": "rockbuild [^"]+""#,
        r#""generated_by": "rockbuild [VERSION]""#,
    );
    settings.bind(|| insta::assert_snapshot!("smoke_evidence_with_the_sdk", text));

    let promoted = world
        .promote(
            "staged",
            "release",
            &["--test-report", "smoke.json", "--index-url", &sdk_url],
        )
        .success();
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("promote_carries_the_sdk", stderr(&promoted)));
    let release = world.env.path("release");
    assert_eq!(wheels_under(&release).len(), 6);
    assert_eq!(
        sha256_file(
            &release
                .join("rocm-sdk-devel")
                .join(format!("rocm_sdk_devel-{SDK}-py3-none-linux_x86_64.whl"))
        ),
        sha256_file(&sdk.join(format!("rocm_sdk_devel-{SDK}-py3-none-linux_x86_64.whl")))
    );
}
