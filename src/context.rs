//! The one context every verb receives: output, the process runner (which holds the
//! start-up environment), and the working directory.

use std::path::{Path, PathBuf};

use tracing_subscriber::EnvFilter;

use crate::env_vars::{self, Environment};
use crate::exec::{Heartbeat, Runner};

/// Silence after which a running step is reported (and again as often while it stays
/// silent): long enough that a step printing progress never shows it, short enough that a
/// quiet compile is not mistaken for a hang.
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(60);
use crate::ui::{LogFormat, Ui};

#[derive(Clone, Debug)]
pub struct Context {
    pub ui: Ui,
    pub runner: Runner,
    pub cwd: PathBuf,
}

impl Context {
    /// Captures the environment, sets up logging and signal handling.
    /// `quiet`, `verbose`, `log_format` and `color` are the global flags.
    pub fn new(quiet: bool, verbose: u8, log_format: LogFormat, color: clap::ColorChoice) -> Self {
        let env = Environment::capture();
        let ui = Ui::new(&env, quiet, log_format);
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let ansi = colour(color, &env, terminal);
        init_logging(&env, &ui, quiet, verbose, log_format, ansi);
        crate::fault::arm(env.get(env_vars::ROCKBUILD_FAULT));
        let status = ui.clone();
        let runner = Runner::new(env).with_heartbeat(Heartbeat {
            every: HEARTBEAT,
            sink: std::sync::Arc::new(move |line: &str| status.status(line)),
        });
        if let Err(error) = runner.install_signal_handlers() {
            ui.warn(format!("could not install signal handlers: {error}"));
        }
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Context { ui, runner, cwd }
    }

    /// A context over exactly these environment variables instead of the process's, for a
    /// program that runs rockbuild's stages in-process (the integration tests do, to build a
    /// project whose recipe rockbuild does not ship). No signal handlers are installed.
    pub fn with_environment(
        vars: impl IntoIterator<Item = (String, String)>,
        cwd: PathBuf,
    ) -> Self {
        let env = Environment::from_pairs(vars);
        let ui = Ui::new(&env, false, LogFormat::Text);
        Context {
            ui,
            runner: Runner::new(env),
            cwd,
        }
    }

    /// The start-up environment (never the live process environment).
    pub fn env(&self) -> &Environment {
        self.runner.base_env()
    }

    /// Makes a user-given path absolute against the working directory.
    pub fn absolute(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.cwd.join(path)
        }
    }
}

/// Whether log lines are coloured: `--color always` or `never` as told; `auto` on a terminal
/// unless NO_COLOR is set (no-color.org).
fn colour(color: clap::ColorChoice, env: &Environment, terminal: bool) -> bool {
    match color {
        clap::ColorChoice::Always => true,
        clap::ColorChoice::Never => false,
        clap::ColorChoice::Auto => terminal && env.get(env_vars::NO_COLOR).is_none(),
    }
}

fn init_logging(
    env: &Environment,
    ui: &Ui,
    quiet: bool,
    verbose: u8,
    log_format: LogFormat,
    ansi: bool,
) {
    let default_level = match (quiet, verbose) {
        (true, _) => "error",
        // The AWS SDK warns with its debug structures (a region or credentials provider of
        // the chain that found nothing); what matters reaches the user as rockbuild's error.
        (false, 0) => "warn,rockbuild=info,aws=error",
        (false, 1) => "info,rockbuild=debug",
        (false, _) => "debug,rockbuild=trace",
    };
    let filter = env
        .non_empty(env_vars::ROCKBUILD_LOG)
        .and_then(|spec| EnvFilter::try_new(spec).ok())
        .unwrap_or_else(|| EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(crate::redact::RedactingWriter::new(
            ui.log_writer(),
            crate::redact::Secrets::of_env(env.iter()),
        ))
        .with_target(false)
        .without_time()
        .with_ansi(ansi);
    let _ = match log_format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_follows_the_color_flag_then_the_terminal_and_no_color() {
        use clap::ColorChoice::{Always, Auto, Never};
        let plain = Environment::from_pairs([("HOME", "/h")]);
        let no_color = Environment::from_pairs([("NO_COLOR", "1")]);
        assert!(colour(Always, &no_color, false));
        assert!(!colour(Never, &plain, true));
        assert!(colour(Auto, &plain, true));
        assert!(!colour(Auto, &plain, false));
        assert!(!colour(Auto, &no_color, true));
    }
}
