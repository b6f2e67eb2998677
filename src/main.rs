//! rockbuild: parse the command line, set up output, run the verb, map the result to an exit
//! code. Everything else lives in the library's stage modules.

use clap::Parser;
use rockbuild::recipes::Recipes;
use rockbuild::{cli, commands, context, diagnostics};

fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
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
