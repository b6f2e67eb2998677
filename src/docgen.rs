//! Generated documentation: docs/cli.md (every verb, flag, default and environment variable,
//! from the clap definition) and docs/exit-codes.md (from `ExitStatus::table`). A test fails
//! when the checked-in files drift; `ROCKBUILD_BLESS=1 cargo test docgen` rewrites them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use clap::CommandFactory;

use crate::cli::Cli;
use crate::cli::options::ENV_OPTIONS;
use crate::exit::ExitStatus;

fn render_cli() -> String {
    let mut out = String::from(
        "# rockbuild command line\n\n\
         Generated from `src/cli.rs` by `ROCKBUILD_BLESS=1 cargo test docgen`; do not edit.\n\n\
         Every flag that takes a value can also be set through the environment variable shown.\n\
         Precedence: default < environment < flag. A switch's variable takes `1`/`0`, `true`/`false`,\n\
         `yes`/`no` or `on`/`off` in any case, and an empty value counts as unset (as GitHub\n\
         Actions passes an input nobody set).\n\n\
         stdout carries data only (plans, JSON, tables a script reads); what is for people goes to\n\
         stderr. With `--log-format json` every line on stderr is one JSON object, usage errors\n\
         included: `{\"level\":\"INFO\",\"fields\":{\"message\":\"…\"}}` (`WARN` and `ERROR` for\n\
         warnings and errors; a line of one project's progress also has `fields.task`).\n",
    );
    let command = Cli::command();
    write_args(&mut out, &command, "Global options");
    write_subcommands(&mut out, &command, "rockbuild");
    write_env_list(&mut out, &command);
    out
}

/// The variables of the options table (src/cli/options.rs), each with the flag it sets and
/// the verbs whose flag reads it, as the built command has them.
fn write_env_list(out: &mut String, command: &clap::Command) {
    out.push_str(
        "\n## Environment variables\n\n\
         Every variable a flag reads, from the options table in `src/cli/options.rs`.\n\n\
         | variable | flag | verbs |\n|---|---|---|\n",
    );
    let mut verbs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    collect_env_verbs(command, "", &mut verbs);
    for option in ENV_OPTIONS {
        let listed = verbs.get(option.var).map_or_else(String::new, |verbs| {
            verbs
                .iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ")
        });
        let _ = writeln!(out, "| `{}` | `--{}` | {listed} |", option.var, option.flag);
    }
}

/// Variable → the verbs (`global` for the global options) whose arguments read it.
fn collect_env_verbs(command: &clap::Command, path: &str, out: &mut BTreeMap<String, Vec<String>>) {
    for arg in command.get_arguments() {
        let Some(env) = arg.get_env() else { continue };
        if !path.is_empty() && arg.is_global_set() {
            continue;
        }
        let verb = if path.is_empty() { "global" } else { path };
        out.entry(env.to_string_lossy().into_owned())
            .or_default()
            .push(verb.to_string());
    }
    for sub in command.get_subcommands() {
        let name = match path {
            "" => sub.get_name().to_string(),
            path => format!("{path} {}", sub.get_name()),
        };
        collect_env_verbs(sub, &name, out);
    }
}

/// One section per verb, then one per sub-verb (`rockbuild ci generate`), depth first.
fn write_subcommands(out: &mut String, command: &clap::Command, prefix: &str) {
    for sub in command.get_subcommands() {
        let name = format!("{prefix} {}", sub.get_name());
        let _ = write!(
            out,
            "\n## `{name}`\n\n{}\n",
            sub.get_about().map(ToString::to_string).unwrap_or_default()
        );
        write_args(out, sub, "");
        write_subcommands(out, sub, &name);
    }
}

fn write_args(out: &mut String, command: &clap::Command, heading: &str) {
    let args: Vec<&clap::Arg> = command
        .get_arguments()
        .filter(|a| !a.is_hide_set() && a.get_id() != "help" && a.get_id() != "version")
        .filter(|a| heading.is_empty() || a.is_global_set())
        .filter(|a| !heading.is_empty() || !a.is_global_set())
        .collect();
    if args.is_empty() {
        return;
    }
    if !heading.is_empty() {
        let _ = write!(out, "\n## {heading}\n");
    }
    out.push_str("\n| option | description | default | environment |\n|---|---|---|---|\n");
    for arg in args {
        let aliases: String = arg
            .get_visible_aliases()
            .unwrap_or_default()
            .iter()
            .map(|alias| format!(", `--{alias}`"))
            .collect();
        let name = match (arg.get_long(), arg.get_short()) {
            (Some(long), Some(short)) => format!("`-{short}`, `--{long}`{aliases}"),
            (Some(long), None) => format!("`--{long}`{aliases}"),
            (None, _) => format!(
                "`{}`",
                arg.get_value_names()
                    .and_then(|v| v.first())
                    .map_or_else(|| arg.get_id().to_string(), ToString::to_string)
            ),
        };
        let value = match (arg.get_long(), arg.get_value_names()) {
            (Some(_), Some(names)) if arg.get_action().takes_values() => {
                format!(
                    " `{}`",
                    names
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            }
            _ => String::new(),
        };
        let help = arg
            .get_help()
            .map(ToString::to_string)
            .unwrap_or_default()
            .replace('|', "\\|");
        let mut possible: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        if arg.get_action().takes_values() && !possible.is_empty() && possible.len() < 10 {
            possible.sort();
        } else {
            possible.clear();
        }
        let help = if possible.is_empty() {
            help
        } else {
            format!("{help} (one of {})", possible.join(", "))
        };
        let default = arg
            .get_default_values()
            .iter()
            .map(|v| format!("`{}`", v.to_string_lossy()))
            .collect::<Vec<_>>()
            .join(", ");
        let env = arg
            .get_env()
            .map(|e| format!("`{}`", e.to_string_lossy()))
            .unwrap_or_default();
        let _ = writeln!(out, "| {name}{value} | {help} | {default} | {env} |");
    }
}

fn render_exit_codes() -> String {
    let mut out = String::from(
        "# rockbuild exit codes\n\n\
         Generated from `src/exit.rs` by `ROCKBUILD_BLESS=1 cargo test docgen`; do not edit.\n\n\
         | code | meaning | when |\n|---|---|---|\n",
    );
    for (code, name, meaning) in ExitStatus::table() {
        let _ = writeln!(out, "| {code} | {name} | {meaning} |");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The variables of docs/cli.md's list, in its order.
    fn env_list(doc: &str) -> Vec<&str> {
        doc.split_once("\n## Environment variables\n")
            .map(|(_, list)| list)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|line| line.split_once('`'))
            .map(|(var, _)| var)
            .collect()
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the bless switch is for developers running tests"
    )]
    fn docgen_generated_docs_are_current() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
        let bless = std::env::var_os("ROCKBUILD_BLESS").is_some();
        for (file, text) in [
            ("cli.md", render_cli()),
            ("exit-codes.md", render_exit_codes()),
        ] {
            let path = root.join(file);
            if bless {
                fs_err::write(&path, &text).expect("write generated doc");
                continue;
            }
            let current = fs_err::read_to_string(&path).unwrap_or_default();
            if file == "cli.md" {
                assert_eq!(
                    env_list(&current),
                    ENV_OPTIONS.iter().map(|o| o.var).collect::<Vec<_>>(),
                    "docs/cli.md's environment variables are not the options table's"
                );
            }
            assert!(
                current == text,
                "docs/{file} is out of date; run `ROCKBUILD_BLESS=1 cargo test docgen` and commit it"
            );
        }
    }
}
