//! THE subprocess runner. Every child process rockbuild starts (git, python, pip, uv, hipify,
//! setup.py, sccache) is described by a [`Cmd`] and started by a [`Runner`]:
//!
//! * argv only, never a shell string;
//! * an explicit environment: the start-up snapshot plus the command's own differences, so
//!   nothing leaks from one step into the next and the process environment is never mutated;
//! * a cwd, a log file per step (header with the repro line, every output line, footer with
//!   the exit status), secrets masked in all of it;
//! * a total timeout and a no-progress watchdog; the child runs in its own process group so
//!   that grandchildren (git-remote-http, compilers) are stopped with it;
//! * retries with backoff only for steps marked as network transfers, and only for failures
//!   that look transient;
//! * on failure: the last lines of output, the log path and a copy-paste repro line.
//!
//! `std::process::Command` is used directly (not duct): the watchdog needs to see both output
//! streams as they arrive and to signal the whole process group, which duct's API hides.
//!
//! The parts: [`command`] describes a step, [`runner`] runs it (retries, one attempt, the
//! outcome), [`pipes`] reads and watches the child's output, [`signals`] stops process groups
//! and turns a signal to rockbuild into stopped children, [`log`] writes the step's log file,
//! [`error`] says why a step did not succeed.

mod command;
mod error;
mod log;
mod pipes;
pub mod priority;
mod runner;
mod signals;

pub use command::{Cmd, Retry};
pub use error::ProcessError;
pub use runner::{Heartbeat, Runner};
