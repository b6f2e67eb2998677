//! The verify stage: a set of wheels checked against what the stack, the lock and the flags
//! expect, before it is staged or promoted. Each wheel on its own is `wheel::verify`'s; the
//! set as a whole (unique files, every locked project present, pins that resolve in the set
//! or on the index) is [`set`]'s, with the DLLs its PE images import (`imports`); [`report`] says what was found, for people and machines.
//!
//! `verify`, `stage` and `promote` all verify through [`run`].

pub mod companions;
mod error;
mod imports;
pub mod report;
mod set;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

pub use error::Error;
pub use report::VerifyReport;

use crate::context::Context;
use crate::index::client::IndexClient;
use crate::stack::Stack;
use crate::ui::{human_bytes, plural};
use crate::wheel::companion::is_sdk_distribution;
use crate::wheel::filename::normalize_name;
use crate::wheel::verify::{
    CollectError, DEFAULT_MEMORY_BUDGET, WheelExpectation, WheelExpectations, collect_wheels,
    verify_wheels,
};

/// What a set is checked against.
#[derive(Debug, Clone)]
pub struct Expectations {
    /// What each wheel must satisfy on its own.
    pub wheels: WheelExpectations,
    /// Normalized names of the stack's wheels (`torch`, `torchvision`, `triton`, …).
    pub stack_wheels: BTreeSet<String>,
    /// Index that may provide pinned stack dependencies the set does not hold.
    pub index_url: Option<String>,
    /// Bound on ELF bytes held in memory at once (bigger files still pass, one at a time).
    pub memory_budget: u64,
    /// Whether a pin on a stack project the set holds no wheel of must resolve (on
    /// `index_url`). Off to re-check a set whose versions promotion rewrote: its pins
    /// outside the set are the verified original's, unchanged.
    pub check_pins_outside_set: bool,
    /// The device wheels a multi-arch lock's record requires, by normalized name
    /// (`amd-torch-device-gfx906`): one per split project and target.
    pub devices: BTreeMap<String, ExpectedDevice>,
}

/// A device wheel the set must hold: the split project's device code for one target, at the
/// project's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedDevice {
    pub project: String,
    pub target: String,
    pub version: pep440_rs::Version,
}

impl Expectations {
    /// Expectations of a stack: its wheel names count as "inside the stack" for the closure
    /// check, and each wheel must meet what its recipe expects of it (`recipes`, by
    /// normalized wheel name).
    pub fn for_stack(stack: &Stack, recipes: BTreeMap<String, WheelExpectation>) -> Expectations {
        Expectations {
            wheels: WheelExpectations {
                targets: Vec::new(),
                recipes,
                versions: Default::default(),
                allow_linux_tag: false,
            },
            stack_wheels: stack
                .projects
                .values()
                .filter_map(|p| p.wheel.as_deref().map(normalize_name))
                .collect(),
            index_url: None,
            memory_budget: DEFAULT_MEMORY_BUDGET,
            check_pins_outside_set: true,
            devices: BTreeMap::new(),
        }
    }

    /// Whether a (normalized) project name belongs to the stack: its wheels plus the ROCm SDK
    /// (`rocm`, `rocm-*`: `crate::wheel::companion`), which must come from the same release.
    pub fn inside_stack(&self, name: &str) -> bool {
        self.stack_wheels.contains(name) || is_sdk_distribution(name)
    }

    /// The targets every GPU library must carry, for messages.
    pub fn targets_text(&self) -> String {
        if self.wheels.targets.is_empty() {
            "no gfx targets requested".to_string()
        } else {
            format!(
                "targets {}",
                crate::stack::families::join(&self.wheels.targets)
            )
        }
    }
}

/// Expands the command line's wheels and directories (their `*.whl` files, not recursive)
/// into a sorted list of wheel paths. An empty directory is an error, never a pass (W5).
pub fn collect(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    Ok(collect_wheels(inputs)?)
}

/// Verifies a set of wheels (paths to `.whl` files; see [`collect`] for directories).
/// Returns every problem found; `Err` only when nothing could be verified.
pub fn verify_set(wheels: &[PathBuf], expect: &Expectations) -> Result<VerifyReport, Error> {
    if wheels.is_empty() {
        return Err(CollectError::NoWheels.into());
    }
    let index = expect
        .index_url
        .as_deref()
        .map(IndexClient::new)
        .transpose()
        .map_err(Error::Index)?;
    let mut reports = verify_wheels(wheels, &expect.wheels, expect.memory_budget);
    let set_problems = set::check_set(&mut reports, expect, index.as_ref());
    imports::check(&mut reports);
    let scratch = tempfile::Builder::new()
        .prefix("rockbuild-verify-")
        .tempdir()
        .map_err(Error::Scratch)?;
    companions::check(&mut reports, index.as_ref(), scratch.path());
    let problem_count =
        set_problems.len() + reports.iter().map(|r| r.problems.len()).sum::<usize>();
    Ok(VerifyReport {
        ok: problem_count == 0,
        targets: expect
            .wheels
            .targets
            .iter()
            .map(ToString::to_string)
            .collect(),
        index_url: expect.index_url.as_deref().map(crate::redact::redact_url),
        problem_count,
        wheels: reports,
        set_problems,
    })
}

/// Adds to each product of `reports` the DLLs its PE images import that neither a wheel of
/// `reports` holds nor Windows provides (what [`verify_set`] checks of a set).
pub fn check_imports(reports: &mut [crate::wheel::verify::WheelReport]) {
    imports::check(reports);
}

/// Verifies a set with a progress line, then shows every problem (stderr, GitHub
/// annotations, step summary). What a failed verification means is the caller's to say.
pub fn run(
    ctx: &Context,
    wheels: &[PathBuf],
    expect: &Expectations,
) -> Result<VerifyReport, Error> {
    let bytes: u64 = wheels
        .iter()
        .filter_map(|w| fs_err::metadata(w).ok())
        .map(|m| m.len())
        .sum();
    let targets_text = expect.targets_text();
    let task = ctx.ui.task("verify");
    task.phase(format!(
        "{} wheel{} ({}), {targets_text}",
        wheels.len(),
        plural(wheels.len()),
        human_bytes(bytes)
    ));
    let report = verify_set(wheels, expect)?;
    task.finish(format!(
        "{} wheel{} in {:.1}s",
        wheels.len(),
        plural(wheels.len()),
        task.elapsed().as_secs_f64()
    ));
    report::show(ctx, &report, &targets_text);
    Ok(report)
}
