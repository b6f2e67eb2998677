//! The one context every verb receives: output, the process runner (which holds the
//! start-up environment), and the working directory.

use std::path::{Path, PathBuf};

use tracing_subscriber::EnvFilter;

use crate::env_vars::{self, Environment};
use crate::exec::Runner;
use crate::ui::{LogFormat, Ui};

#[derive(Clone, Debug)]
pub struct Context {
    pub ui: Ui,
    pub runner: Runner,
    pub cwd: PathBuf,
}

impl Context {
    /// Captures the environment, sets up logging and signal handling.
    /// `quiet`, `verbose` and `log_format` are the global flags.
    pub fn new(quiet: bool, verbose: u8, log_format: LogFormat) -> Self {
        let env = Environment::capture();
        let ui = Ui::new(&env, quiet, log_format);
        init_logging(&env, &ui, quiet, verbose, log_format);
        crate::fault::arm(env.get(env_vars::ROCKBUILD_FAULT));
        let runner = Runner::new(env);
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

fn init_logging(env: &Environment, ui: &Ui, quiet: bool, verbose: u8, log_format: LogFormat) {
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
    let no_color = env.get(env_vars::NO_COLOR).is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(crate::redact::RedactingWriter::new(
            ui.log_writer(),
            crate::redact::Secrets::of_env(env.iter()),
        ))
        .with_target(false)
        .without_time()
        .with_ansi(!no_color && std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let _ = match log_format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
