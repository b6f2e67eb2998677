//! rockbuild: parse the command line, set up output, run the verb, map the result to an exit
//! code. Everything else lives in the library's stage modules.

use clap::Parser;
use rockbuild::recipes::Recipes;
use rockbuild::{cli, commands, context, diagnostics};

fn main() -> std::process::ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(&error),
    };
    let global = &cli.global;
    let ctx = context::Context::new(
        global.quiet,
        global.verbose,
        global.log_format,
        global.color,
    );
    // The one registry of project knowledge for the whole run: every stage asks it.
    let recipes = Recipes::builtin();
    let status = match commands::run(cli.command, &ctx, &recipes) {
        Ok(status) => status,
        Err(error) => diagnostics::report(&ctx, &error),
    };
    // Exit codes above 255 cannot happen: signals are below 64.
    std::process::ExitCode::from(u8::try_from(status.code()).unwrap_or(1))
}

/// A command line that did not parse (or asked for help): clap's message, or one JSON line
/// on stderr when `--log-format json` was asked for all the same.
fn usage_error(error: &clap::Error) -> std::process::ExitCode {
    match cli::Cli::usage_error_json(error) {
        Some(line) => {
            let _ =
                std::io::Write::write_all(&mut std::io::stderr(), format!("{line}\n").as_bytes());
        }
        None => {
            let _ = error.print();
        }
    }
    std::process::ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2))
}
