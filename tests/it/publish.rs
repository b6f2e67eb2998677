//! Publishing on real parts: index pages pip and uv install from over HTTP (hash-checked),
//! smoke tests in real venvs, promotion gated on their reports, the embedded S3 server.

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

struct World {
    env: TestEnv,
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

    fn smoke(&self, index_url: &str, report: &str) -> assert_cmd::assert::Assert {
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

fn stderr(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

fn stdout(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
}

#[test]
fn generated_index_installs_with_pip_and_uv_with_hashes() {
    let world = World::new();
    let set = world.build_set("rocm7.0.0", 0);
    let staged = world.env.path("staged");
    world.stage_by_hand(&staged, &set);
    // What a rewrite of the pages would write, and that a dry run writes nothing.
    let page = staged.join("rock-torch/index.html");
    std::fs::remove_file(&page).expect("remove a page");
    for (name, extra) in [
        ("index_dry_run", None),
        ("index_dry_run_json", Some("--json")),
    ] {
        let dry = world
            .env
            .rockbuild()
            .args(["index", "staged", "--dry-run"])
            .args(extra)
            .assert()
            .success();
        snapshot::settings(&world.env).bind(|| insta::assert_snapshot!(name, stdout(&dry)));
    }
    assert!(!page.exists(), "a dry run writes nothing");
    world
        .env
        .rockbuild()
        .args(["index", "staged"])
        .assert()
        .success();

    let page = std::fs::read_to_string(staged.join("rock-torch/index.html")).expect("page");
    let sha = sha256_file(&set[0]);
    assert!(
        page.contains(&format!(
            "<a href=\"rock_torch-1.0%2Brocm7.0.0-py3-none-any.whl#sha256={sha}\" data-requires-python=\"&gt;=3.8\" data-dist-info-metadata=\"sha256="
        )),
        "{page}"
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(staged.join("rock-torch/index.json")).expect("json"),
    )
    .expect("parse");
    assert_eq!(json["files"][0]["hashes"]["sha256"], sha);
    assert_eq!(json["meta"]["api-version"], "1.1");
    let root = std::fs::read_to_string(staged.join("index.html")).expect("root");
    assert!(
        root.contains("<a href=\"rock-torch/\">rock-torch</a>")
            && root.contains("<a href=\"rock-vision/\">"),
        "{root}"
    );

    let server = http::serve(&staged);
    let requirements = hashed_requirements(&[
        ("rock-torch", "1.0+rocm7.0.0", &set[0]),
        ("rock-vision", "0.1+rocm7.0.0", &set[1]),
    ]);
    let (pip, uv) = install_with_pip_and_uv(&world.env, &server.url(), &requirements, "staged");
    for python_bin in [pip, uv] {
        assert_eq!(
            python(
                &world.env,
                &python_bin,
                "import rock_torch, rock_vision; print(rock_torch.__version__, rock_vision.__version__)"
            ),
            "1.0+rocm7.0.0 0.1+rocm7.0.0"
        );
    }
}

#[test]
fn smoke_then_promote_then_install_from_the_release_index() {
    let world = World::new();
    let set = world.build_set("rocm7.0.0", 0);
    let staged = world.env.path("staged");
    world.stage_by_hand(&staged, &set);
    let server = http::serve(&staged);

    let smoke = world.smoke(&server.url(), "smoke.json").success();
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
    let again = world
        .promote("staged", "release", &["--test-report", "smoke.json"])
        .success();
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
    // A report that was named but cannot be read or parsed is a usage error up front, not
    // a denial that suggests --test-report again.
    let missing = world
        .promote("staged", "release", &["--test-report", "absent.json"])
        .code(2);
    assert!(
        stderr(&missing).contains("absent.json"),
        "{}",
        stderr(&missing)
    );
    assert!(
        stderr(&missing).contains("--test-report ")
            && stderr(&missing).contains("hint: pass the report `rockbuild smoke --report FILE`")
            && !stderr(&missing).contains("promotion denied"),
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

/// Copies a staged tree's objects (not its pages) into an S3 prefix behind the server's back,
/// as another upload tool would (no checksum metadata).
fn plant_tree(server: &S3Server, local: &Path, prefix: &str) {
    for entry in walkdir::WalkDir::new(local) {
        let entry = entry.expect("walk");
        let relative = entry
            .path()
            .strip_prefix(local)
            .expect("prefix")
            .to_str()
            .expect("utf-8")
            .to_string();
        if entry.file_type().is_file()
            && !relative.ends_with("index.html")
            && !relative.ends_with("index.json")
        {
            server.plant(
                &format!("{prefix}/{relative}"),
                &std::fs::read(entry.path()).expect("read"),
            );
        }
    }
}

fn s3_env(world: &mut World, server: &S3Server) {
    for (key, value) in server.env() {
        world.env.set(key, value);
    }
}

#[test]
fn s3_index_promotion_with_multipart_copies_and_no_overwrite() {
    let mut world = World::new();
    let server = S3Server::start(&world.env.path("s3"));
    s3_env(&mut world, &server);
    let s3 = server.store_args();
    // A 12 MiB torch wheel: above the 1 MiB threshold, so promotion copies it with
    // UploadPartCopy in 5 MiB parts.
    let set = world.build_set("rocm7.0.0", 12 << 20);

    // Smoke the set from a local copy: the report names the bytes, wherever they are stored.
    let local = world.env.path("local-staged");
    world.stage_by_hand(&local, &set);
    let web = http::serve(&local);
    world.smoke(&web.url(), "smoke.json").success();

    // The same objects in an S3 staging prefix, uploaded by another tool (no checksum
    // metadata): `rockbuild index` reads their bytes for the hashes.
    plant_tree(&server, &local, "staging");
    world
        .env
        .rockbuild()
        .args(["index", &server.url("staging")])
        .args(&s3)
        .assert()
        .success();
    let staged_page =
        std::fs::read_to_string(server.object_path("staging/rock-torch/index.html")).expect("page");
    assert!(staged_page.contains(&sha256_file(&set[0])), "{staged_page}");

    let mut extra: Vec<&str> = vec![
        "--test-report",
        "smoke.json",
        "--multipart-threshold",
        "1048576",
    ];
    extra.extend(s3.iter().map(String::as_str));
    world
        .promote(&server.url("staging"), &server.url("release"), &extra)
        .success();
    let torch_key = format!("release/rock-torch/{TORCH}");
    assert_eq!(
        sha256_file(&server.object_path(&torch_key)),
        sha256_file(&set[0]),
        "the multipart copy is byte-identical"
    );
    assert!(
        server
            .object_path(&format!("{torch_key}.metadata"))
            .exists()
    );

    // pip and uv install from the release prefix: its objects, served as files.
    let mirror = world.env.path("release-mirror");
    copy_tree(&server.object_path("release"), &mirror);
    let web = http::serve(&mirror);
    let requirements = hashed_requirements(&[
        ("rock-torch", "1.0+rocm7.0.0", &set[0]),
        ("rock-vision", "0.1+rocm7.0.0", &set[1]),
    ]);
    install_with_pip_and_uv(&world.env, &web.url(), &requirements, "s3-release");

    // A released object with other bytes is never replaced.
    let vision_key = format!("release2/rock-vision/{VISION}");
    server.plant(&vision_key, b"not the staged wheel");
    let conflict = world
        .promote(&server.url("staging"), &server.url("release2"), &extra)
        .code(6);
    assert!(
        stderr(&conflict).contains(&format!(
            "'rock-vision/{VISION}' is already published with sha256"
        )),
        "{}",
        stderr(&conflict)
    );
    assert_eq!(
        std::fs::read(server.object_path(&vision_key)).expect("object"),
        b"not the staged wheel"
    );
    assert!(
        !server
            .object_path(&format!("release2/rock-torch/{TORCH}"))
            .exists()
    );
}

#[test]
fn a_promotion_killed_between_copies_and_index_leaves_the_index_and_a_rerun_completes() {
    let mut world = World::new();
    let server = S3Server::start(&world.env.path("s3"));
    s3_env(&mut world, &server);
    let s3 = server.store_args();

    // Release 1 is published normally.
    let first = world.build_set("rocm7.0.0", 0);
    let second = world.build_set("rocm7.1.0", 0);
    for (name, set) in [("one", &first), ("two", &second)] {
        let local = world.env.path(&format!("{name}-local"));
        world.stage_by_hand(&local, set);
        let web = http::serve(&local);
        world.smoke(&web.url(), &format!("{name}.json")).success();
        plant_tree(&server, &local, &format!("staging-{name}"));
        world
            .env
            .rockbuild()
            .args(["index", &server.url(&format!("staging-{name}"))])
            .args(&s3)
            .assert()
            .success();
    }
    let release = server.url("release");
    let with_s3 = |report: &'static str| -> Vec<&str> {
        let mut extra = vec!["--test-report", report];
        extra.extend(s3.iter().map(String::as_str));
        extra
    };
    world
        .promote(&server.url("staging-one"), &release, &with_s3("one.json"))
        .success();
    let pages = [
        "release/index.html",
        "release/index.json",
        "release/rock-torch/index.html",
        "release/rock-vision/index.json",
    ];
    let before: Vec<Vec<u8>> = pages
        .iter()
        .map(|p| std::fs::read(server.object_path(p)).expect("page"))
        .collect();

    // Release 2: the server holds the first index page write; the run is killed right there,
    // after every wheel was copied.
    server.set_write_rule("release/rock-torch/index.html", WriteRule::Hold);
    let mut command = world.env.command(env!("CARGO_BIN_EXE_rockbuild"));
    command
        .args([
            "promote",
            "--from",
            &server.url("staging-two"),
            "--to",
            &release,
            "--test-report",
            "two.json",
        ])
        .args(&s3)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = command.spawn().expect("start promote");
    let held = server.wait_for_held_write(Duration::from_secs(120));
    child.kill().expect("kill");
    let status = child.wait().expect("wait");
    server.clear_write_rule();
    assert_eq!(held.as_deref(), Some("release/rock-torch/index.html"));
    assert!(!status.success());
    let torch2 = "release/rock-torch/rock_torch-1.0+rocm7.1.0-py3-none-any.whl";
    assert_eq!(
        sha256_file(&server.object_path(torch2)),
        sha256_file(&second[0]),
        "the copies were done"
    );
    let after: Vec<Vec<u8>> = pages
        .iter()
        .map(|p| std::fs::read(server.object_path(p)).expect("page"))
        .collect();
    assert_eq!(before, after, "the published index is unchanged");
    let page = String::from_utf8(after[2].clone()).expect("utf-8");
    assert!(!page.contains("rocm7.1.0"), "{page}");

    // The re-run skips the copies and writes the index.
    let rerun = world
        .promote(&server.url("staging-two"), &release, &with_s3("two.json"))
        .success();
    assert!(
        stderr(&rerun).contains("(0 objects copied, 0 B; 4 already there)"),
        "{}",
        stderr(&rerun)
    );
    let page =
        std::fs::read_to_string(server.object_path("release/rock-torch/index.html")).expect("page");
    assert!(
        page.contains("rock_torch-1.0%2Brocm7.0.0") && page.contains("rock_torch-1.0%2Brocm7.1.0"),
        "{page}"
    );
}

#[test]
fn bad_store_urls_and_waivers_are_usage_errors() {
    let world = World::new();
    let url = world
        .env
        .rockbuild()
        .args(["index", "https://example.com/simple/"])
        .assert()
        .code(2);
    std::fs::write(
        world.env.path("w.yaml"),
        "waivers:\n  - wheel: x\n    owner: me\n    reason: r\n    expires: soon\n",
    )
    .expect("waiver");
    let waiver = world.promote("a", "b", &["--waiver", "w.yaml"]).code(2);
    let same = world.promote("a", "a", &[]).code(2);
    let text = [url, waiver, same].iter().map(stderr).collect::<Vec<_>>();
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("usage_errors", text.join("\n")));
}

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
        "the report names the set, not its dependencies"
    );
}

// ---- `rockbuild stage` and `promote --rewrite-version`, on wheels verify accepts ----

/// The real project names, with smoke commands the test wheels can pass.
const GPU_STACK: &str = r#"schema: 1
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

fn gpu_world() -> World {
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

#[test]
fn stage_then_rewrite_to_rc_then_final_and_install_each_with_pip_and_uv() {
    let world = gpu_world();
    let set = gpu_set(&world.env.path("dist"), "7.13.0a20260430");

    // --dry-run verifies and lists every upload and page; it writes nothing.
    let dry = stage(&world, "dist", "staged", &["--dry-run"]).success();
    snapshot::settings(&world.env).bind(|| insta::assert_snapshot!("stage_dry_run", stdout(&dry)));
    let json = stage(&world, "dist", "staged", &["--dry-run", "--json"]).success();
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("stage_dry_run_json", stdout(&json)));
    assert!(
        !world.env.path("staged").exists(),
        "a dry run writes nothing"
    );

    let staged_run = stage(&world, "dist", "staged", &[]).success();
    let text = stderr(&staged_run);
    assert!(
        text.contains("staged 3 wheels (6 objects uploaded,") && text.contains("0 already there"),
        "{text}"
    );
    let staged = world.env.path("staged");
    for wheel in &set {
        let file = wheel.file_name().and_then(|f| f.to_str()).expect("name");
        let project = file.split('-').next().expect("name");
        let stored = staged.join(project).join(file);
        assert_eq!(sha256_file(&stored), sha256_file(wheel), "{file}");
        assert_eq!(
            std::fs::read(staged.join(project).join(format!("{file}.metadata"))).expect("sidecar"),
            wheel_metadata(wheel),
            "the PEP 658 sidecar is the wheel's METADATA, byte for byte"
        );
    }
    let page = std::fs::read_to_string(staged.join("torch/index.html")).expect("page");
    assert!(
        page.contains(&format!(
            "torch-2.10.0a0%2Brocm7.13.0a20260430-cp311-cp311-linux_x86_64.whl#sha256={}",
            sha256_file(&set[0])
        )) && page.contains("data-dist-info-metadata=\"sha256="),
        "{page}"
    );

    // The same bytes again: nothing uploaded, the pages rewritten.
    let again = stage(&world, "dist", "staged", &[]).success();
    assert!(
        stderr(&again).contains("(0 objects uploaded, 0 B; 6 already there)"),
        "{}",
        stderr(&again)
    );

    let web = http::serve(&staged);
    assert_eq!(
        install_and_import(&world.env, &web.url(), &set, "staged"),
        vec!["2.10.0a0+rocm7.13.0a20260430 0.25.0a0+rocm7.13.0a20260430 3.5.0+git1a2b3c4d"; 2]
    );
    world.smoke(&web.url(), "nightly.json").success();

    // Nightly → rc1: torch and torchvision are rewritten (torchvision's pin follows torch),
    // triton is final already and goes as it is.
    let dry = world
        .promote(
            "staged",
            "rc",
            &[
                "--test-report",
                "nightly.json",
                "--rewrite-version",
                "rc",
                "--dry-run",
            ],
        )
        .success();
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("promote_rewrite_dry_run", stdout(&dry)));
    assert!(!world.env.path("rc").exists(), "a dry run writes nothing");
    let promoted = world
        .promote(
            "staged",
            "rc",
            &["--test-report", "nightly.json", "--rewrite-version", "rc"],
        )
        .success();
    let text = stderr(&promoted);
    assert!(
        text.contains("rewrote 2 wheels to ") && !text.contains("would rewrite"),
        "{text}"
    );
    let rc = wheels_under(&world.env.path("rc"));
    let names: Vec<String> = rc
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "torch-2.10.0rc1+rocm7.13.0a20260430-cp311-cp311-linux_x86_64.whl",
            "torchvision-0.25.0rc1+rocm7.13.0a20260430-cp311-cp311-linux_x86_64.whl",
            "triton-3.5.0+git1a2b3c4d-cp311-cp311-linux_x86_64.whl",
        ]
    );
    assert_eq!(
        sha256_file(&rc[2]),
        sha256_file(&set[1]),
        "triton is copied as it is"
    );
    // The rewritten wheels pass `rockbuild verify` on their own.
    world
        .env
        .rockbuild()
        .args([
            "verify",
            "--config",
            "stack.yaml",
            "--targets",
            "gfx906,gfx1030",
        ])
        .args(&rc)
        .assert()
        .success();
    let web = http::serve(&world.env.path("rc"));
    assert_eq!(
        install_and_import(&world.env, &web.url(), &rc, "rc"),
        vec!["2.10.0rc1+rocm7.13.0a20260430 0.25.0rc1+rocm7.13.0a20260430 3.5.0+git1a2b3c4d"; 2]
    );
    // The rc set is tested in its turn, then goes final.
    world.smoke(&web.url(), "rc.json").success();
    world
        .promote(
            "rc",
            "release",
            &["--test-report", "rc.json", "--rewrite-version", "final"],
        )
        .success();
    let release = wheels_under(&world.env.path("release"));
    let web = http::serve(&world.env.path("release"));
    assert_eq!(
        install_and_import(&world.env, &web.url(), &release, "final"),
        vec!["2.10.0+rocm7.13.0a20260430 0.25.0+rocm7.13.0a20260430 3.5.0+git1a2b3c4d"; 2]
    );

    // Final already: nothing to rewrite, a usage error that writes nothing.
    world.smoke(&web.url(), "final.json").success();
    let none = world
        .promote(
            "release",
            "again",
            &["--test-report", "final.json", "--rewrite-version", "rc"],
        )
        .code(2);
    assert!(
        stderr(&none)
            .contains("nothing to rewrite: every wheel of the set already has a final version"),
        "{}",
        stderr(&none)
    );
    assert!(!world.env.path("again").exists());
}

#[test]
fn stage_refuses_bad_wheels_and_unknown_families_and_uploads_nothing() {
    use crate::common::wheels::{WheelBuilder, hip_library};
    let world = gpu_world();
    // A family's wheels go to <to>/<family>/, checked against the family's targets.
    let set = gpu_set(&world.env.path("dist"), "7.13.0a20260430");
    world
        .env
        .rockbuild()
        .args([
            "stage",
            "--config",
            "stack.yaml",
            "--input",
            "dist",
            "--to",
            "staged",
            "--family",
            "gfx906",
        ])
        .assert()
        .success();
    let staged = world.env.path("staged");
    assert!(staged.join("gfx906/torch/index.html").exists());
    assert!(staged.join("gfx906/index.json").exists());
    // Promoting from the root instead of the family's prefix: told where the set is.
    let empty = world.promote("staged", "release", &[]).code(1);
    let before = tree(&staged);

    let unknown = world
        .env
        .rockbuild()
        .args([
            "stage",
            "--config",
            "stack.yaml",
            "--input",
            "dist",
            "--to",
            "staged",
            "--family",
            "gfx1030",
        ])
        .assert()
        .code(2);

    // A later build with one bad wheel among good ones: verification fails (exit 5), and
    // nothing at all is uploaded, the good wheels included.
    let next = world.env.path("next");
    let good = gpu_set(&next, "7.13.0a20260501");
    std::fs::remove_file(&good[2]).expect("replace torchvision");
    WheelBuilder::new("torchvision", "0.25.0a0+rocm7.13.0a20260501")
        .file_from("torchvision/_C.so", &hip_library(&["gfx906"]))
        .requires("torch==2.10.0a0+rocm7.13.0a20260501")
        .build(&next);
    let refused = world
        .env
        .rockbuild()
        .args([
            "stage",
            "--config",
            "stack.yaml",
            "--input",
            "next",
            "--to",
            "staged",
            "--family",
            "gfx103X-all",
        ])
        .assert()
        .code(5);
    let settings = snapshot::settings(&world.env);
    settings.bind(|| {
        insta::assert_snapshot!("promote_from_a_family_root", stderr(&empty));
        insta::assert_snapshot!("stage_unknown_family", stderr(&unknown));
        insta::assert_snapshot!("stage_refused_by_verification", stderr(&refused));
    });
    let refused = stage(&world, "next", "staged/gfx906", &[]).code(5);
    let text = stderr(&refused);
    assert!(
        text.contains(
            "GPU library 'torchvision/_C.so' has no code for requested target gfx1030 (its offload bundles carry: gfx906)"
        ) && text.contains("1 of 3 wheels in "),
        "{text}"
    );

    // Every wheel fine on its own, but the lock's build record lists torchvision and the set
    // has none: a problem of the set alone, counted as such.
    let partial = world.env.path("partial");
    let good = gpu_set(&partial, "7.13.0a20260502");
    std::fs::remove_file(&good[2]).expect("drop torchvision");
    let lock = serde_json::json!({
        "schema": 1,
        "generated_by": "rockbuild test",
        "stack": "stack.yaml",
        "projects": {},
        "build": {
            "sdk_version": "7.13.0a20260502",
            "targets": ["gfx906", "gfx1030"],
            "release_type": "nightly",
            "version_suffix": "+rocm7.13.0a20260502",
            "versions": {
                "torch": "2.10.0a0+rocm7.13.0a20260502",
                "triton": TRITON_V,
                "vision": "0.25.0a0+rocm7.13.0a20260502"
            }
        }
    });
    std::fs::write(
        world.env.path("partial.lock.json"),
        serde_json::to_string_pretty(&lock).expect("json"),
    )
    .expect("write lock");
    let refused = stage(
        &world,
        "partial",
        "staged/gfx906",
        &["--lock", "partial.lock.json"],
    )
    .code(5);
    let text = stderr(&refused);
    assert!(
        text.contains("the set has no torchvision wheel")
            && text.contains("the 2 wheels in ")
            && text.contains(
                "passed one by one, but the set has 1 problem (above); nothing was uploaded to "
            )
            && !text.contains("0 of 2"),
        "{text}"
    );
    assert_eq!(
        tree(&staged),
        before,
        "nothing was uploaded, the index is unchanged"
    );
    drop(set);
}

#[test]
fn s3_stage_survives_a_refused_put_then_promotes_as_rc_from_s3_to_s3() {
    let mut world = gpu_world();
    let server = S3Server::start(&world.env.path("s3"));
    s3_env(&mut world, &server);
    let s3 = server.store_args();
    let s3_args: Vec<&str> = s3.iter().map(String::as_str).collect();
    let first = gpu_set(&world.env.path("one"), "7.13.0a20260430");
    let second = gpu_set(&world.env.path("two"), "7.13.0a20260501");
    let staging = server.url("staging");

    stage(&world, "one", &staging, &s3_args).success();
    let mirror = world.env.path("mirror-one");
    copy_tree(&server.object_path("staging"), &mirror);
    let web = http::serve(&mirror);
    assert_eq!(
        install_and_import(&world.env, &web.url(), &first, "s3-one"),
        vec!["2.10.0a0+rocm7.13.0a20260430 0.25.0a0+rocm7.13.0a20260430 3.5.0+git1a2b3c4d"; 2]
    );
    let pages = [
        "staging/index.html",
        "staging/index.json",
        "staging/torch/index.html",
        "staging/torchvision/index.json",
    ];
    let read_pages = || -> Vec<Vec<u8>> {
        pages
            .iter()
            .map(|p| std::fs::read(server.object_path(p)).expect("page"))
            .collect()
    };
    let before = read_pages();

    // The server refuses the upload of one wheel: the stage fails (exit 1) after the other
    // uploads, and the published pages are the old ones.
    let vision = "torchvision-0.25.0a0+rocm7.13.0a20260501-cp311-cp311-linux_x86_64.whl";
    server.set_write_rule(&format!("staging/torchvision/{vision}"), WriteRule::Deny);
    let failed = stage(&world, "two", &staging, &s3_args).code(1);
    server.clear_write_rule();
    let text = stderr(&failed);
    assert!(
        text.contains(vision) && text.contains("the index pages were not changed"),
        "{text}"
    );
    assert_eq!(read_pages(), before, "the published index is unchanged");
    assert!(
        !String::from_utf8_lossy(&read_pages()[2]).contains("rocm7.13.0a20260501"),
        "the new torch is not listed"
    );

    // The re-run uploads what is missing and writes the index.
    let rerun = stage(&world, "two", &staging, &s3_args).success();
    assert!(
        stderr(&rerun).contains("already there)"),
        "{}",
        stderr(&rerun)
    );
    let page =
        std::fs::read_to_string(server.object_path("staging/torch/index.html")).expect("page");
    assert!(
        page.contains("rocm7.13.0a20260430") && page.contains("rocm7.13.0a20260501"),
        "{page}"
    );
    let mirror = world.env.path("mirror-two");
    copy_tree(&server.object_path("staging"), &mirror);
    let web = http::serve(&mirror);
    assert_eq!(
        install_and_import(&world.env, &web.url(), &second, "s3-two"),
        vec!["2.10.0a0+rocm7.13.0a20260501 0.25.0a0+rocm7.13.0a20260501 3.5.0+git1a2b3c4d"; 2]
    );

    // A candidate prefix holding one build, smoke-tested, promoted S3 to S3 as rc1: the
    // tested wheels are downloaded (and checked against the report), rewritten, uploaded.
    let candidates = server.url("candidates");
    stage(&world, "two", &candidates, &s3_args).success();
    let mirror = world.env.path("mirror-candidates");
    copy_tree(&server.object_path("candidates"), &mirror);
    let web = http::serve(&mirror);
    world.smoke(&web.url(), "candidates.json").success();
    let mut extra = vec![
        "--test-report",
        "candidates.json",
        "--rewrite-version",
        "rc",
    ];
    extra.extend(&s3_args);
    let promoted = world
        .promote(&candidates, &server.url("rc"), &extra)
        .success();
    assert!(
        stderr(&promoted).contains("promoted 3 wheels as rc1 (2 rewritten, 1 as they were;"),
        "{}",
        stderr(&promoted)
    );
    let mirror = world.env.path("mirror-rc");
    copy_tree(&server.object_path("rc"), &mirror);
    let rc = wheels_under(&mirror);
    let web = http::serve(&mirror);
    assert_eq!(
        install_and_import(&world.env, &web.url(), &rc, "s3-rc"),
        vec!["2.10.0rc1+rocm7.13.0a20260501 0.25.0rc1+rocm7.13.0a20260501 3.5.0+git1a2b3c4d"; 2]
    );
}
