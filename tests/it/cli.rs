//! The command line as a user meets it: the help of rockbuild and of each verb, whole.

use crate::common::TestEnv;
use crate::common::snapshot;

#[track_caller]
fn help(args: &[&str]) -> String {
    help_in(&TestEnv::new(), args)
}

#[track_caller]
fn help_in(env: &TestEnv, args: &[&str]) -> String {
    // Help shows the values of the variables that are set; the harness sets some (the cache
    // directory, linux tags for its test wheels).
    let mut command = env.rockbuild();
    for option in rockbuild::cli::options::ENV_OPTIONS {
        command.env_remove(option.var);
    }
    let output = command.args(args).output().expect("runs");
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).expect("utf-8")
}

#[test]
fn help_lists_every_verb_and_the_exit_codes() {
    let text = help(&["--help"]);
    snapshot::plain().bind(|| insta::assert_snapshot!("help", text));
}

/// Every verb and sub-verb of the command line (`ci generate`), from its definition.
fn verbs() -> Vec<Vec<String>> {
    use clap::CommandFactory;
    fn walk(command: &clap::Command, path: &[String], out: &mut Vec<Vec<String>>) {
        for sub in command.get_subcommands() {
            let mut path = path.to_vec();
            path.push(sub.get_name().to_string());
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(&rockbuild::cli::Cli::command(), &[], &mut out);
    out
}

/// One help style: every verb's help is the compact one (`-h` and `--help` print the same),
/// with the global options under their own heading; each is snapshotted whole.
#[test]
fn help_of_every_verb() {
    let verbs = verbs();
    assert!(verbs.len() >= 20, "{verbs:?}");
    for verb in verbs {
        let args = |flag: &'static str| {
            let mut args: Vec<&str> = verb.iter().map(String::as_str).collect();
            args.push(flag);
            args
        };
        let env = TestEnv::new();
        let text = help_in(&env, &args("--help"));
        assert_eq!(
            text,
            help_in(&env, &args("-h")),
            "{verb:?}: --help and -h differ"
        );
        let global = text
            .split_once("\nGlobal options:\n")
            .map(|(_, global)| global)
            .unwrap_or_else(|| panic!("{verb:?}: no Global options heading\n{text}"));
        for flag in ["--quiet", "--log-format", "--color", "--help"] {
            assert!(
                global.contains(flag),
                "{verb:?}: {flag} not under Global options"
            );
        }
        let name = verb.join("-");
        snapshot::plain().bind(|| insta::assert_snapshot!(format!("help_{name}"), text));
    }
}

/// The family flag is `--amdgpu-family` wherever a verb takes a family; `--family` and
/// `--amdgpu-families` are its aliases, shown in the help.
#[test]
fn the_family_flag_has_one_name() {
    use clap::CommandFactory;
    let mut command = rockbuild::cli::Cli::command();
    command.build();
    let mut seen = 0;
    for verb in command.get_subcommands() {
        for arg in verb.get_arguments() {
            let names: Vec<&str> = arg
                .get_long_and_visible_aliases()
                .unwrap_or_default()
                .into_iter()
                .collect();
            if names
                .iter()
                .any(|n| *n != "families" && n.contains("famil"))
            {
                seen += 1;
                assert_eq!(
                    names,
                    ["amdgpu-family", "family", "amdgpu-families"],
                    "{}",
                    verb.get_name()
                );
            }
        }
    }
    assert!(seen >= 7, "{seen}");
}

#[test]
fn unknown_flags_are_usage_errors() {
    let env = TestEnv::new();
    env.rockbuild()
        .args(["checkout", "--no-such-flag"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "unexpected argument '--no-such-flag'",
        ));
}

#[test]
fn json_plans_need_a_dry_run() {
    let env = TestEnv::new();
    let output = env
        .rockbuild()
        .args(["index", "out/staging", "--json"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let text = String::from_utf8_lossy(&output.stderr).into_owned();
    snapshot::plain().bind(|| insta::assert_snapshot!("json_without_dry_run", text));
}

/// Every switch of every verb that reads a `ROCKBUILD_…` variable: (verb path, variable).
fn boolean_variables() -> Vec<(Vec<String>, String)> {
    use clap::CommandFactory;
    fn walk(command: &clap::Command, path: &[String], out: &mut Vec<(Vec<String>, String)>) {
        for arg in command.get_arguments() {
            if let Some(env) = arg.get_env()
                && matches!(arg.get_action(), clap::ArgAction::SetTrue)
                && !path.is_empty()
            {
                out.push((path.to_vec(), env.to_string_lossy().into_owned()));
            }
        }
        for sub in command.get_subcommands() {
            let mut path = path.to_vec();
            path.push(sub.get_name().to_string());
            walk(sub, &path, out);
        }
    }
    let mut command = rockbuild::cli::Cli::command();
    command.build();
    let mut out = Vec::new();
    walk(&command, &[], &mut out);
    out
}

/// Boolean variables take 1/0, true/false, yes/no, on/off in any case, and an empty value
/// counts as unset (GitHub passes an input nobody set as ""); anything else is a usage error
/// that names the variable, for every verb.
#[test]
fn boolean_variables_take_yes_no_words_and_name_themselves_when_wrong() {
    let switches = boolean_variables();
    assert!(switches.len() >= 9, "{switches:?}");
    for (path, variable) in &switches {
        let env = TestEnv::new();
        let output = env
            .rockbuild()
            .env(variable, "maybe")
            .args(path)
            .output()
            .expect("runs");
        assert_eq!(output.status.code(), Some(2), "{path:?} {variable}");
        assert_eq!(
            String::from_utf8_lossy(&output.stderr),
            format!(
                "error: {variable}=maybe is not a yes/no value: use one of true, 1, yes, on, false, 0, no, off (any case), or leave it empty for unset\n"
            ),
            "{path:?}"
        );
    }

    // The two of the report, on a real verb: a linux-tagged wheel passes with
    // ROCKBUILD_ALLOW_LINUX_TAG=1 and quietly with ROCKBUILD_QUIET=Yes; `0` and "" refuse it.
    let env = TestEnv::new();
    crate::common::wheels::WheelBuilder::new("local", "1.0").build(&env.path("out"));
    let verify = |allow: &str, quiet: &str| {
        env.rockbuild()
            .env("ROCKBUILD_ALLOW_LINUX_TAG", allow)
            .env("ROCKBUILD_QUIET", quiet)
            .args(["verify", "out"])
            .output()
            .expect("runs")
    };
    let allowed = verify("1", "Yes");
    assert_eq!(allowed.status.code(), Some(0), "{allowed:?}");
    assert_eq!(String::from_utf8_lossy(&allowed.stderr), "");
    let loud = verify("ON", "");
    assert_eq!(loud.status.code(), Some(0), "{loud:?}");
    assert!(
        String::from_utf8_lossy(&loud.stderr).contains("all 1 wheel passed"),
        "{loud:?}"
    );
    for refused in ["0", ""] {
        let output = verify(refused, "1");
        assert_eq!(
            output.status.code(),
            Some(5),
            "ROCKBUILD_ALLOW_LINUX_TAG={refused:?}"
        );
    }
}
