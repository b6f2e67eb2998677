//! rockbuild: parse the command line, set up output, run the verb, map the result to an exit
//! code. Everything else lives in the stage modules.

mod build;
mod checkout;
mod cli;
mod commands;
mod context;
mod diagnostics;
#[cfg(test)]
mod docgen;
mod env_vars;
mod exec;
mod exit;
mod fsutil;
mod git;
mod hipify;
mod index;
mod lock;
mod promote;
mod redact;
mod sdk;
mod smoke;
mod stack;
mod store;
mod ui;
mod version;
mod wheel;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    let ctx = context::Context::new(&cli.global);
    let status = match commands::run(cli.command, &ctx) {
        Ok(status) => status,
        Err(error) => diagnostics::report(&ctx, &error),
    };
    // Exit codes above 255 cannot happen: signals are below 64.
    std::process::ExitCode::from(u8::try_from(status.code()).unwrap_or(1))
}
