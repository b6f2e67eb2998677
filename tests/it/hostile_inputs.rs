//! Hostile inputs: values that git would read as options or programs, credentials in URLs,
//! secrets in verbose logs, indexes that never answer, extras that did not install, and the
//! exit code of each kind of failure. Each vector is refused where it was written, with the
//! place named, and nothing runs: the payload would create a file named `pwned`.

use std::path::Path;

use assert_cmd::assert::Assert;

use crate::common::git::StackWorld;
use crate::common::{TestEnv, scrub, snapshot};

/// A token given as the URL's user name, as CI scripts do.
const TOKEN: &str = "ghp_hostile0token0in0the0user0part";

/// What an attacker hopes git runs (`git fetch --upload-pack=…` executes it).
const PAYLOAD: &str = "--upload-pack=touch pwned";
/// A remote helper that runs a program by design.
const EXT_PAYLOAD: &str = "ext::sh -c touch% pwned";

/// Fails when any file named `pwned` exists anywhere below `dir`.
fn assert_nothing_ran(dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            assert!(
                entry.file_name() != "pwned",
                "{} was created",
                path.display()
            );
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
}

/// Runs one vector: exit 2, nothing ran, no lock; returns the titled stderr for the snapshot
/// (without the progress lines of parallel projects, whose order varies).
fn refused(env: &TestEnv, title: &str, assert: Assert) -> String {
    let output = assert.get_output().clone();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{title}: {stderr}");
    assert_nothing_ran(env.root());
    assert!(!env.path("ws/rockbuild.lock.json").exists(), "{title}");
    let shown: Vec<&str> = stderr
        .lines()
        .filter(|line| !line.starts_with("  ") && !line.is_empty())
        .collect();
    format!("## {title}\n{}\n", scrub(&shown.join("\n"), env))
}

fn checkout(env: &TestEnv, config: &Path, extra: &[&str]) -> assert_cmd::Command {
    let mut command = env.rockbuild();
    command
        .args(["checkout", "--config"])
        .arg(config)
        .args(["--root-checkout-dir", "ws", "--no-hipify"])
        .args(extra);
    command
}

fn lock(env: &TestEnv, config: &Path, extra: &[&str]) -> assert_cmd::Command {
    let mut command = env.rockbuild();
    command
        .args(["lock", "--config"])
        .arg(config)
        .args(["--lock", "ws/rockbuild.lock.json"])
        .args(extra);
    command
}

#[test]
fn flag_values_never_reach_git_as_options() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let mut out = String::new();
    for (title, args) in [
        (
            "--repo-hashtag",
            vec!["--project", "torch", "--repo-hashtag", PAYLOAD],
        ),
        (
            "--hashtag NAME=REF",
            vec![
                "--project",
                "vision",
                "--hashtag",
                "vision=--upload-pack=touch pwned",
            ],
        ),
        (
            "--origin NAME=URL",
            vec![
                "--project",
                "vision",
                "--origin",
                "vision=--upload-pack=touch pwned",
            ],
        ),
        (
            "--gitrepo-origin",
            vec!["--project", "torch", "--gitrepo-origin", PAYLOAD],
        ),
        (
            "--gitrepo-origin with a remote helper",
            vec!["--project", "torch", "--gitrepo-origin", EXT_PAYLOAD],
        ),
    ] {
        // `--flag=value`: clap would refuse a separate value that starts with `--`.
        let mut joined: Vec<String> = Vec::new();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg {
                "--repo-hashtag" | "--hashtag" | "--origin" | "--gitrepo-origin" => {
                    joined.push(format!("{arg}={}", args.next().unwrap_or_default()));
                }
                other => joined.push(other.to_string()),
            }
        }
        let joined: Vec<&str> = joined.iter().map(String::as_str).collect();
        out.push_str(&refused(
            &env,
            title,
            checkout(&env, &world.config, &joined).assert(),
        ));
    }
    // The environment variable behind --repo-hashtag is the same entry point.
    out.push_str(&refused(
        &env,
        "ROCKBUILD_REPO_HASHTAG",
        checkout(&env, &world.config, &["--project", "torch"])
            .env("ROCKBUILD_REPO_HASHTAG", PAYLOAD)
            .assert(),
    ));
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("hostile_flags", out));
}

#[test]
fn config_and_preset_values_are_refused_where_written() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let config = std::fs::read_to_string(&world.config).expect("config");
    let mut out = String::new();

    let hostile_origin = env.path("origin-stack.yaml");
    let replaced = config.replacen(&world.vision.url(), PAYLOAD, 1);
    assert_ne!(replaced, config);
    std::fs::write(&hostile_origin, replaced).expect("write");
    out.push_str(&refused(
        &env,
        "stack config origin",
        checkout(&env, &hostile_origin, &["--project", "vision"]).assert(),
    ));

    let presets = std::fs::read_to_string(crate::common::repo_root().join("configs/presets.yaml"))
        .expect("presets");
    let hostile_presets = env.path("presets.yaml");
    let replaced = presets.replacen(
        "audio: {origin: upstream, ref: nightly}",
        "audio: {origin: upstream, ref: \"--upload-pack=touch pwned\"}",
        1,
    );
    assert_ne!(replaced, presets);
    std::fs::write(&hostile_presets, replaced).expect("write");
    out.push_str(&refused(
        &env,
        "presets table ref",
        checkout(&env, &world.config, &["--project", "audio", "--presets"])
            .arg(&hostile_presets)
            .assert(),
    ));
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("hostile_configs", out));
}

#[test]
fn repository_content_cannot_run_commands() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let related = format!(
        "ubuntu|pytorch|torchaudio|release/2.9|{}|{}\n\
         ubuntu|pytorch|torchvision|release/2.9|{}|{}\n\
         ubuntu|pytorch|apex|master|{}|{PAYLOAD}\n",
        world.audio_pin,
        world.audio.url(),
        world.vision_pin,
        world.vision.url(),
        world.apex_pin
    );
    let mut out = String::new();

    // `lock` touches no tree: repository content must not get code execution there.
    publish_torch(&world, "related_commits", &related, "hostile apex origin");
    out.push_str(&refused(
        &env,
        "related_commits origin field (lock)",
        lock(&env, &world.config, &[]).assert(),
    ));
    world.torch.git(&["revert", "--no-edit", "HEAD"]);

    publish_torch(
        &world,
        ".ci/docker/ci_commit_pins/triton.txt",
        &format!("{PAYLOAD}\n"),
        "hostile triton pin",
    );
    out.push_str(&refused(
        &env,
        "triton.txt pin",
        lock(
            &env,
            &world.config,
            &["--project", "torch", "--project", "triton"],
        )
        .assert(),
    ));
    world.torch.git(&["revert", "--no-edit", "HEAD"]);

    for (title, url) in [
        (".gitmodules url", PAYLOAD),
        (".gitmodules url with a remote helper", EXT_PAYLOAD),
    ] {
        world.torch.git(&[
            "config",
            "-f",
            ".gitmodules",
            "submodule.third_party/kineto.url",
            url,
        ]);
        world.torch.git(&["add", ".gitmodules"]);
        world.torch.commit(title);
        world.torch.publish();
        out.push_str(&refused(
            &env,
            title,
            lock(&env, &world.config, &["--project", "torch"]).assert(),
        ));
        world.torch.git(&["revert", "--no-edit", "HEAD"]);
    }
    // A submodule name becomes `.git/modules/<name>`: `..` would write outside the checkout
    // (CVE-2018-11235, which git's own submodule code refuses too).
    world.torch.git(&[
        "config",
        "-f",
        ".gitmodules",
        "--rename-section",
        "submodule.third_party/kineto",
        "submodule.../../../../escape",
    ]);
    world.torch.git(&["add", ".gitmodules"]);
    world.torch.commit(".gitmodules name escaping .git/modules");
    world.torch.publish();
    out.push_str(&refused(
        &env,
        ".gitmodules name escaping .git/modules",
        lock(&env, &world.config, &["--project", "torch"]).assert(),
    ));
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("hostile_repository_content", out));
}

/// Commits `text` as `path` to torch and publishes it: repository content under test.
fn publish_torch(world: &StackWorld, path: &str, text: &str, message: &str) {
    world.torch.write(path, text);
    world.torch.commit(message);
    world.torch.publish();
}

/// A good lock of vision, as text (the lock file itself is removed again).
fn vision_lock(env: &TestEnv, world: &StackWorld) -> String {
    lock(env, &world.config, &["--project", "vision"])
        .assert()
        .success();
    let good = std::fs::read_to_string(env.path("ws/rockbuild.lock.json")).expect("lock");
    std::fs::remove_file(env.path("ws/rockbuild.lock.json")).expect("remove");
    good
}

#[test]
fn lock_and_manifest_fields_are_refused() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let good = vision_lock(&env, &world);
    let commit = &world.vision_pin;
    let mut out = String::new();
    for (field, from, to) in [
        ("origin", world.vision.url(), PAYLOAD.to_string()),
        (
            "commit",
            format!("\"commit\": \"{commit}\""),
            format!("\"commit\": \"{PAYLOAD}\""),
        ),
        (
            "requested_ref",
            "\"requested_ref\": \"main\"".to_string(),
            format!("\"requested_ref\": \"{PAYLOAD}\""),
        ),
    ] {
        let hostile = good.replace(&from, &to);
        assert_ne!(hostile, good, "{field}");
        std::fs::write(env.path("hostile.lock.json"), hostile).expect("write");
        out.push_str(&refused(
            &env,
            &format!("lock field {field}"),
            checkout(&env, &world.config, &["--from-lock", "hostile.lock.json"]).assert(),
        ));
    }
    for (field, entry) in [
        (
            "repo",
            serde_json::json!({"repo": PAYLOAD, "commit": world.torch.head()}),
        ),
        (
            "commit",
            serde_json::json!({"repo": world.torch.url(), "commit": PAYLOAD}),
        ),
        (
            "branch",
            serde_json::json!({"repo": world.torch.url(), "commit": world.torch.head(), "branch": PAYLOAD}),
        ),
    ] {
        let manifest = serde_json::json!({"schema_version": 1, "pytorch": entry});
        std::fs::write(
            env.path("therock-manifest.json"),
            serde_json::to_string_pretty(&manifest).expect("json"),
        )
        .expect("write");
        out.push_str(&refused(
            &env,
            &format!("TheRock manifest {field}"),
            checkout(
                &env,
                &world.config,
                &["--from-lock", "therock-manifest.json"],
            )
            .assert(),
        ));
    }
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("hostile_lock_fields", out));
}

/// Fails when `secret` is in any file below `dir` (locks, .git/config, mirrors, logs).
fn assert_not_stored(dir: &Path, secret: &str) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                let text = String::from_utf8_lossy(&bytes);
                assert!(!text.contains(secret), "{} holds the token", path.display());
            }
        }
    }
}

#[test]
fn a_token_as_user_name_is_masked_and_never_stored() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let url = format!("https://{TOKEN}@127.0.0.1:9/ROCm/pytorch.git");
    let mut out = String::new();
    out.push_str(&refused(
        &env,
        "--gitrepo-origin",
        checkout(
            &env,
            &world.config,
            &["--project", "torch", "--gitrepo-origin", &url],
        )
        .assert(),
    ));
    out.push_str(&refused(
        &env,
        "--origin NAME=URL, token and password",
        checkout(
            &env,
            &world.config,
            &[
                "--project",
                "torch",
                "--origin",
                &format!("torch=https://{TOKEN}:x-oauth-basic@127.0.0.1:9/x.git"),
            ],
        )
        .assert(),
    ));
    let config = std::fs::read_to_string(&world.config).expect("config");
    let with_token = env.path("token-stack.yaml");
    std::fs::write(&with_token, config.replacen(&world.vision.url(), &url, 1)).expect("write");
    out.push_str(&refused(
        &env,
        "stack config origin",
        checkout(&env, &with_token, &["--project", "vision"]).assert(),
    ));
    publish_torch(
        &world,
        "related_commits",
        &format!(
            "ubuntu|pytorch|torchaudio|release/2.9|{}|{url}\n",
            world.audio_pin
        ),
        "a token in a related_commits row",
    );
    out.push_str(&refused(
        &env,
        "related_commits origin field",
        lock(
            &env,
            &world.config,
            &["--project", "torch", "--project", "audio"],
        )
        .assert(),
    ));
    assert!(!out.contains(TOKEN), "{out}");
    // The fixture's own commit holds the token; everything rockbuild wrote must not.
    for written in ["ws", "home", "rockbuild-cache"] {
        assert_not_stored(&env.path(written), TOKEN);
    }
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("hostile_token_in_url", out));
}

#[test]
fn a_locked_commit_missing_from_its_origin_is_named() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let good = vision_lock(&env, &world);
    let missing = "0123456789abcdef0123456789abcdef01234567";
    std::fs::write(
        env.path("gone.lock.json"),
        good.replace(&world.vision_pin, missing),
    )
    .expect("write");
    let output = checkout(&env, &world.config, &["--from-lock", "gone.lock.json"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(!env.path("ws/rockbuild.lock.json").exists());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("commit {missing} of 'vision'")),
        "{stderr}"
    );
    let shown: Vec<&str> = stderr.lines().filter(|l| !l.starts_with("  ")).collect();
    snapshot::settings(&env).bind(|| {
        insta::assert_snapshot!(
            "hostile_missing_locked_commit",
            scrub(&shown.join("\n"), &env)
        );
    });
}

/// Every exit code docs/exit-codes.md lists, for the cases that drifted from it: one row per
/// case, the whole table compared at once. 6 (publish conflict) and 128+n (interrupted) are
/// proven by tests/it/publish (`code(6)`) and checkout's interrupted-checkout test.
#[test]
fn exit_codes_match_the_documentation() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    std::fs::create_dir_all(env.path("empty")).expect("mkdir");
    std::fs::create_dir_all(env.path("staged")).expect("mkdir");
    let index = format!("file://{}", env.path("staged").display());
    let release = format!("file://{}", env.path("release").display());
    let config = world.config.display().to_string();
    let promote = |extra: &[&str]| -> Vec<String> {
        ["promote", "--from", &index, "--to", &release]
            .iter()
            .chain(extra)
            .map(|arg| arg.to_string())
            .collect()
    };
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("presets table", vec!["presets".into()]),
        (
            "unreachable origin",
            vec![
                "checkout",
                "--config",
                &config,
                "--root-checkout-dir",
                "ws",
                "--project",
                "vision",
                "--origin",
                "vision=file:///nonexistent/vision.git",
                "--fetch-attempts",
                "1",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
        ),
        (
            "whole-stack checkout, unknown ref",
            vec![
                "checkout",
                "--config",
                &config,
                "--root-checkout-dir",
                "ws",
                "--no-hipify",
                "--hashtag",
                "vision=no-such-branch",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
        ),
        (
            "whole-stack lock, bad --version-suffix",
            vec![
                "lock",
                "--config",
                &config,
                "--lock",
                "ws/l.json",
                "--pytorch-rocm-arch",
                "gfx942",
                "--version-suffix",
                "+not a suffix!",
            ]
            .into_iter()
            .map(String::from)
            .collect(),
        ),
        (
            "stage from an empty directory",
            vec![
                "stage".into(),
                "--input".into(),
                "empty".into(),
                "--to".into(),
                index.clone(),
            ],
        ),
        (
            "verify an empty directory",
            vec!["verify".into(), "empty".into()],
        ),
        (
            "retag an empty directory",
            vec![
                "retag".into(),
                "--platform".into(),
                "manylinux_2_28_x86_64".into(),
                "empty".into(),
            ],
        ),
        ("promote with nothing staged", promote(&[])),
        (
            "promote with a missing --test-report",
            promote(&["--test-report", "missing-report.json"]),
        ),
        (
            "promote with an empty --test-report directory",
            promote(&["--test-report", "empty"]),
        ),
    ];
    let mut table = String::from("| case | exit | first error line |\n|---|---|---|\n");
    for (case, args) in cases {
        let output = env.rockbuild().args(&args).output().expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        // The error line, and a project's own line under a multi-project summary.
        let first = [
            stderr.lines().find(|l| l.starts_with("error")),
            stderr.lines().find(|l| l.starts_with('[')),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
        table.push_str(&format!(
            "| {case} | {} | {} |\n",
            output
                .status
                .code()
                .map_or("signal".into(), |c| c.to_string()),
            scrub(&first, &env)
        ));
    }
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("hostile_exit_codes", table));
}

/// `-vv` (and an explicit `ROCKBUILD_LOG=trace`) turn on the AWS SDK's debug and trace lines,
/// which carry the access key (credentials, `Credential=` of signatures) and signing
/// material: none of the credential values may reach stderr.
#[test]
fn verbose_logs_never_print_aws_credentials() {
    use crate::common::s3::{ACCESS_KEY, S3Server, SECRET_KEY};
    let env = TestEnv::new();
    let server = S3Server::start(&env.path("s3"));
    server.plant("staging/rock-torch/README", b"not a wheel\n");
    for (flag, log) in [("-vv", None), ("-v", Some("trace"))] {
        let mut command = env.rockbuild();
        command
            .envs(server.env())
            .env("AWS_SESSION_TOKEN", "session-token-rockbuild-test")
            .arg(flag)
            .args(["index", &server.url("staging")])
            .args(server.store_args());
        if let Some(log) = log {
            command.env("ROCKBUILD_LOG", log);
        }
        let output = command.output().expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.lines().count() > 20 && stderr.contains("aws"),
            "{flag}: the SDK's lines are shown: {stderr}"
        );
        for secret in [ACCESS_KEY, SECRET_KEY, "session-token-rockbuild-test"] {
            let leaked: Vec<&str> = stderr.lines().filter(|l| l.contains(secret)).collect();
            assert!(
                leaked.is_empty(),
                "{flag}: {secret} printed:\n{}",
                leaked.join("\n")
            );
        }
    }
}

/// An index that accepts connections and never answers: install-rocm ends after its waits
/// (`--index-timeout`, `--index-retries`), says what it waited for and exits 1.
#[test]
fn an_index_that_never_answers_ends_bounded_and_worded() {
    let env = TestEnv::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    // Accept and hold every connection, answering nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let output = env
        .rockbuild()
        .args(["install-rocm", "--index-url"])
        .arg(format!("http://127.0.0.1:{port}/simple/"))
        .args([
            "--index-timeout",
            "1",
            "--index-retries",
            "1",
            "--venv",
            "venv",
        ])
        // A hang fails the test instead of stalling the suite.
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(!env.path("venv").exists(), "nothing installed");
    snapshot::settings(&env).bind(|| {
        insta::assert_snapshot!(
            "hostile_index_never_answers",
            String::from_utf8_lossy(&output.stderr)
        );
    });
}

/// `--rocm-extras device-gfx942` against an SDK built for other targets: pip warns and
/// installs without it; install-rocm refuses, naming the extra and what the SDK provides.
#[test]
fn an_extra_that_did_not_install_is_an_error() {
    use crate::common::http::serve;
    use crate::common::sdk::sdk_index;
    let mut env = TestEnv::new();
    env.set("PIP_NO_INDEX", "1");
    env.set(
        "PIP_FIND_LINKS",
        crate::common::wheelhouse().display().to_string(),
    );
    let server = serve(&sdk_index("7.10.0a20251124", &["gfx906", "gfx1030"]));
    let output = env
        .rockbuild()
        .args(["install-rocm", "--index-url"])
        .arg(format!("{}simple/", server.url()))
        .args(["--rocm-extras", "device-gfx942", "--venv", "venv"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let error: Vec<&str> = stderr
        .lines()
        .skip_while(|l| !l.starts_with("error"))
        .collect();
    snapshot::settings(&env).bind(|| {
        insta::assert_snapshot!("hostile_missing_extra", error.join("\n"));
    });
    assert!(
        !env.path("venv/rockbuild-sdk.json").exists(),
        "no SDK record"
    );
}
