//! rockbuild's integration tests: one test binary (link time is the cost on 2 cores), one
//! module per area. Every test builds its own world from real parts in a temp dir: git
//! origins, venvs, a package index served over HTTP, the stand-in ROCm SDK, an S3 server.

// Tests start git, python and servers directly; the product goes through exec::Runner.
#![allow(clippy::disallowed_methods)]
// Their worlds are Linux's: Debian's ROCm hipcc, ELF files, `bin/python` venvs, symlinks and
// FIFOs. On Windows the crate's unit tests run instead (.config/nextest.toml, `windows`).
#![cfg(unix)]

#[path = "../common/mod.rs"]
mod common;

mod build;
mod checkout;
mod ci;
mod ci_chain;
mod ci_files;
mod cli;
mod dry_runs;
mod hostile_content;
mod hostile_inputs;
mod hostile_output;
mod hostile_writers;
mod json_logs;
mod local;
mod manylinux;
mod module_graph;
mod option_variables;
mod platform_seam;
mod publish;
mod sample;
mod sixth_project;
mod split;
mod split_windows;
mod stacks;
mod suite;
mod verify;
mod windows_dlls;
mod windows_plan;
