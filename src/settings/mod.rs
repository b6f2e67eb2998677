//! Settings: the one place where flags, config files, the lock and the environment meet. One
//! `<Verb>Settings::resolve` per verb, each in a file of its own; commands call it first and
//! never read flags or the environment themselves.

pub mod build;
pub mod checkout;
pub mod ci;
pub mod compat;
pub mod detect;
pub mod doctor;
pub mod index;
pub mod install_rocm;
pub mod lock;
pub mod matrix;
pub mod promote;
pub mod retag;
pub mod sdk;
pub mod smoke;
pub mod stage;
pub mod store;
pub mod test;
pub mod test_report;
pub mod verify;

use std::fmt;
use std::path::PathBuf;

use crate::context::Context;
use crate::lock::Lock;

/// Where a resolved value came from; printed beside the value.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "detail")]
pub enum Source {
    Default,
    Flag(String),
    Env(String),
    Config(String),
    Lock(String),
    Preset(String),
    Inferred(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => write!(f, "default"),
            Source::Flag(flag) => write!(f, "{flag}"),
            Source::Env(name) => write!(f, "${name}"),
            Source::Config(place) => write!(f, "{place}"),
            Source::Lock(place) => write!(f, "lock {place}"),
            Source::Preset(name) => write!(f, "preset {name}"),
            Source::Inferred(why) => write!(f, "{why}"),
        }
    }
}

/// A value with where it came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Sourced<T> {
    pub value: T,
    pub source: Source,
}

/// The lock a `--lock FILE` names (relative to the working directory), read, with its path.
pub fn read_lock(
    ctx: &Context,
    path: Option<PathBuf>,
) -> Result<Option<(PathBuf, Lock)>, crate::lock::Error> {
    path.map(|path| {
        let path = ctx.absolute(&path);
        Lock::read(&path).map(|lock| (path, lock))
    })
    .transpose()
}
