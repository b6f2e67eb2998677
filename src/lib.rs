//! rockbuild as a library: the stage modules behind the `rockbuild` binary. The binary
//! (`main.rs`) and the benchmarks use it; only what they need is public, so the compiler still
//! finds code nothing calls.
//!
//! Modules import downward only: `commands` (one file per verb, glue) → stages (`checkout`,
//! `build`, `smoke`, `promote`, …) → project knowledge (`recipes`) → core services (`exec`, `git`, `multiarch` → `wheel` → `binary`, `index`, `store`,
//! `version`, `stack`, …).

pub mod binary;
pub mod cli;
pub mod commands;
pub mod context;
pub mod diagnostics;
pub mod exit;
pub mod fsutil;
pub mod multiarch;
pub mod recipes;
pub mod wheel;

pub mod build;
mod checkout;
mod ci;
mod compat;
mod detect;
#[cfg(test)]
mod docgen;
mod doctor;
mod env_vars;
mod exec;
mod fault;
mod flock;
mod git;
mod hipify;
mod index;
mod input;
mod junit;
mod lock;
mod pip;
mod platform;
pub use platform::Platform;
mod promote;
mod publish;
mod redact;
mod sdk;
mod settings;
mod smoke;
mod sourced;
mod stack;
mod store;
mod suite;
/// run_test.py's sharding rule, public for the test that checks it against upstream's own.
pub use suite::shards;
mod ui;
pub mod verify;
mod version;
