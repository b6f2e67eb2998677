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

use std::path::PathBuf;

use crate::context::Context;
use crate::lock::Lock;

pub use crate::sourced::{Source, Sourced};

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
