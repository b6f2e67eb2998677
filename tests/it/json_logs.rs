//! `--log-format json`: every line a verb writes to stderr is one JSON object, on success and
//! on failure, for every verb (usage errors included). The worlds are the sample fixtures the
//! other tests use: the sample stack checked out from its local origins, wheels from the
//! wheel builder, a fake sysfs tree, the stand-in SDK index.

use std::collections::BTreeMap;
use std::path::Path;

use crate::build::World;
use crate::common::TestEnv;
use crate::common::json_lines::assert_json_lines;
use crate::common::wheels::WheelBuilder;

/// Port 1 on the loopback: nothing listens there.
const CLOSED: &str = "http://127.0.0.1:1/simple/";

/// Each verb's runs: (succeeded, failed).
#[derive(Default)]
struct Seen(BTreeMap<String, (usize, usize)>);

impl Seen {
    /// `rockbuild --log-format json <args>`, checked as [`Seen::run`] does; the verb is the
    /// first word (two for `ci generate`).
    #[track_caller]
    fn json(&mut self, env: &TestEnv, args: &[&str]) -> std::process::Output {
        let verb = match args {
            ["ci", sub, ..] => format!("ci {sub}"),
            [verb, ..] => verb.to_string(),
            [] => String::new(),
        };
        let mut command = env.rockbuild();
        command.args(["--log-format", "json"]).args(args);
        self.run(command, &verb)
    }

    /// Runs `rockbuild --log-format json <args>` and checks every stderr line is a JSON object
    /// with a level and a message.
    #[track_caller]
    fn run(&mut self, mut command: assert_cmd::Command, verb: &str) -> std::process::Output {
        let output = command.output().expect("runs");
        assert_json_lines(verb, &output.stderr);
        let entry = self.0.entry(verb.to_string()).or_default();
        if output.status.success() {
            entry.0 += 1;
        } else {
            entry.1 += 1;
        }
        output
    }
}

#[test]
fn json_logs_are_json_on_every_verb() {
    let world = World::new().with_checkouts();
    let env = &world.env;
    let text = |p: &Path| p.display().to_string();
    let (root, stack) = (text(&world.root), text(&world.stack_yaml));
    let lock = text(&world.root.join("rockbuild.lock.json"));
    let wheels = env.path("wheels");
    WheelBuilder::new("local", "1.0").build(&wheels);
    let out = text(&wheels);
    let broken = env.path("broken");
    std::fs::create_dir_all(&broken).expect("dir");
    std::fs::write(broken.join("bad-1.0-py3-none-any.whl"), b"not a zip").expect("write");
    let broken = text(&broken);
    let (staging, release) = (text(&env.path("staging")), text(&env.path("release")));
    let sysfs = env.path("sysfs");
    crate::common::sysfs::rdna3(&sysfs);
    let sysfs = text(&sysfs);
    let (sdk, workflows, none) = (
        text(&env.path("sdk")),
        text(&env.path("workflows")),
        text(&env.path("none")),
    );
    let mut seen = Seen::default();

    // Usage errors, before any verb runs: through the flag and through its variable.
    for verb in ["verify", "build", "matrix"] {
        seen.json(env, &[verb, "--no-such-flag"]);
    }
    let mut by_env = env.rockbuild();
    by_env
        .env("ROCKBUILD_LOG_FORMAT", "json")
        .args(["stage", "--bogus"]);
    seen.run(by_env, "stage");

    // checkout up to date (the world checked it out), lock's plan; a lock that is not there.
    seen.json(
        env,
        &["checkout", "--config", &stack, "--root-checkout-dir", &root],
    );
    seen.json(
        env,
        &[
            "checkout",
            "--root-checkout-dir",
            &root,
            "--from-lock",
            "missing.json",
        ],
    );
    seen.json(
        env,
        &["lock", "--config", &stack, "--lock", "l.json", "--dry-run"],
    );
    seen.json(
        env,
        &["lock", "--lock", "l.json", "--from-lock", "missing.json"],
    );
    seen.json(env, &["presets"]);
    seen.json(env, &["presets", "--presets", "missing.yaml"]);

    // install-rocm: a dry run reads no index; a real one against a closed index fails.
    seen.json(
        env,
        &[
            "install-rocm",
            "--index-url",
            CLOSED,
            "--output-dir",
            &sdk,
            "--dry-run",
        ],
    );
    seen.json(
        env,
        &["install-rocm", "--index-url", CLOSED, "--output-dir", &sdk],
    );

    // plan and build --dry-run of the sample stack; a build whose root does not exist.
    let sdk_version = format!("=={}", crate::build::SDK_VERSION);
    for verb in ["plan", "build"] {
        let mut command = world.build_cmd(verb);
        command
            .args([
                "--log-format",
                "json",
                "--pytorch-rocm-arch",
                "gfx906",
                "--lock",
                &lock,
            ])
            .args(["--rocm-sdk-version", &sdk_version])
            .args((verb == "build").then_some("--dry-run"));
        seen.run(command, verb);
        seen.json(
            env,
            &[
                verb,
                "--output-dir",
                "o",
                "--root-checkout-dir",
                "/nonexistent",
            ],
        );
    }

    // verify: a good wheel, a broken one (its report table is one object), a missing path.
    seen.json(env, &["verify", &out]);
    seen.json(env, &["verify", &broken]);
    seen.json(env, &["verify", "missing"]);

    // stage to a directory, index and compat; promote without evidence; retag; fat-wheel.
    seen.json(
        env,
        &[
            "stage",
            "--to",
            &staging,
            "--input",
            &out,
            "--targets",
            "gfx906",
        ],
    );
    seen.json(env, &["stage", "--to", &staging, "--input", &broken]);
    seen.json(env, &["index", &staging]);
    seen.json(env, &["index", "s3://"]);
    seen.json(env, &["compat", &out]);
    seen.json(env, &["compat", "missing"]);
    seen.json(
        env,
        &["promote", "--from", &staging, "--to", &release, "--dry-run"],
    );
    seen.json(env, &["promote", "--from", &out, "--to", &release]);
    let manylinux = "manylinux_2_28_x86_64";
    seen.json(env, &["retag", &out, "--platform", manylinux, "--dry-run"]);
    seen.json(env, &["retag", "missing", "--platform", manylinux]);
    seen.json(env, &["fat-wheel", "missing.whl", "--rocm", "r"]);

    // smoke: the staged index over HTTP (a dry run reads it: it holds no torch), and a closed one.
    let server = crate::common::http::serve(&env.path("staging"));
    seen.json(env, &["smoke", "--dry-run", "--index-url", &server.url()]);
    seen.json(env, &["smoke", "--index-url", CLOSED]);

    // detect on a fake machine and on none; doctor (its disk check may fail here: either way).
    seen.json(env, &["detect", "--sysfs-root", &sysfs]);
    seen.json(env, &["detect", "--sysfs-root", "/nonexistent"]);
    seen.json(env, &["doctor", "--no-compile", "--lock", "missing.json"]);
    seen.json(env, &["doctor", "--no-compile", "--output-dir", &sdk]);

    seen.json(env, &["matrix", "--release-type", "nightly"]);
    seen.json(
        env,
        &[
            "matrix",
            "--release-type",
            "nightly",
            "--amdgpu-family",
            "gfx9999",
        ],
    );

    // test: its dry run; without a version to pick skip lists by. test-report without shards.
    let gpu_smoke = ["--test-config", "gpu-smoke"];
    seen.json(
        env,
        &[
            &["test", "--dry-run", "--index-url", CLOSED][..],
            &gpu_smoke,
            &["--pytorch-version", "2.9"],
        ]
        .concat(),
    );
    seen.json(
        env,
        &[
            &["test", "--dry-run", "--index-url", CLOSED][..],
            &gpu_smoke,
        ]
        .concat(),
    );
    seen.json(env, &["test-report", &out]);

    seen.json(env, &["ci", "generate", "--output-dir", &workflows]);
    seen.json(env, &["ci", "generate", "--check", "--output-dir", &none]);

    // Every verb ran and failed at least once; each succeeded too except where success needs
    // what this world has not. Those verbs' success paths are checked in the tests whose worlds
    // have it: smoke and promote in publish/promotion.rs (a torch set and its evidence),
    // fat-wheel in windows_dlls.rs (a Windows SDK), test-report in suite.rs (shard results).
    let verbs: Vec<String> = {
        use clap::CommandFactory;
        let command = rockbuild::cli::Cli::command();
        let mut verbs = Vec::new();
        for sub in command.get_subcommands() {
            if sub.has_subcommands() {
                for nested in sub.get_subcommands() {
                    verbs.push(format!("{} {}", sub.get_name(), nested.get_name()));
                }
            } else {
                verbs.push(sub.get_name().to_string());
            }
        }
        verbs
    };
    // doctor passes or not with this machine's disk and tools; either way its lines are JSON.
    let unsuccessful: Vec<&str> = verbs
        .iter()
        .map(String::as_str)
        .filter(|v| *v != "doctor" && seen.0.get(*v).is_none_or(|(ok, _)| *ok == 0))
        .collect();
    for verb in &verbs {
        let (_, failed) = seen.0.get(verb).copied().unwrap_or_default();
        assert!(failed > 0, "{verb}: no failing run with --log-format json");
    }
    assert_eq!(
        unsuccessful,
        ["smoke", "promote", "fat-wheel", "test-report"],
        "{:?}",
        seen.0
    );
}
