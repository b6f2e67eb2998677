//! The smoke test of a staged set: a fresh venv, the set installed from its index with pip
//! (hash-checked), the installed versions compared with the set, every package imported, each
//! project's smoke command from the stack config run — and a test report that records the
//! exact wheels (SHA-256) and every check, which `promote` takes as evidence.
//!
//! The install is two steps. The set's own wheels go first, `--no-deps --require-hashes`
//! against the SHA-256s the index publishes, so pip installs exactly those bytes. Then the
//! same requirements without hashes pull their dependencies from outside the set (the ROCm SDK
//! packages torch pins, numpy, …) from `--extra-index-url`; the set is already satisfied at
//! its pinned versions, and the versions check afterwards proves nothing replaced it
//! (TheRock#4824: pip quietly backtracked to a month-old build).
//!
//! In the shape every verb takes: [`select`] reads the set from the index, [`plan`] lays out
//! every check as data, [`apply`] runs them and builds the report.

mod apply;
mod error;
mod plan;
mod select;

pub use apply::{SmokeRun, apply, summary_line, write_report};
pub use error::Error;
pub use plan::{Settings, plan};
pub use select::{Selected, requirements, select};
