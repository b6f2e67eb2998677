//! The build's mode. Per-family (TheRock's legacy layout, what `--index-url …/gfx110X-all/`
//! builds) ships each project's wheel as built. Multi-arch (TheRock's releases since April
//! 2026: `.github/workflows/multi_arch_build_portable_linux_pytorch_wheels.yml`) builds once for
//! the union of the requested targets, then splits the fat wheels of the projects whose recipe
//! says so (torch and torchvision) into a host wheel and one device wheel per target, all for
//! one index. Chosen by `--multi-arch`, by a family table whose index layout is multi-arch, or
//! by the lock's build record.

use serde::Serialize;

use crate::exit::{ExitStatus, HasExitStatus};
use crate::multiarch::split::SplitSpec;
use crate::sourced::Source;
use crate::stack::{FamilyTable, IndexKind};

pub use crate::lock::mode::BuildMode;

/// The mode and what chose it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ModeChoice {
    pub mode: BuildMode,
    pub source: Source,
}

impl ModeChoice {
    /// `--multi-arch`, else the family table's index layout, else the lock's record, else
    /// per-family.
    pub fn resolve(flag: bool, table_multi_arch: bool, locked: Option<BuildMode>) -> ModeChoice {
        let (mode, source) = if flag {
            (BuildMode::MultiArch, Source::Flag("--multi-arch".into()))
        } else if table_multi_arch {
            (
                BuildMode::MultiArch,
                Source::Config("the family table's index-layout: multi-arch".into()),
            )
        } else if let Some(mode) = locked {
            (mode, Source::Lock("build record".into()))
        } else {
            (BuildMode::PerFamily, Source::Default)
        };
        ModeChoice { mode, source }
    }

    /// Holds the mode to an index URL given by `flag` ([`IndexKind`] by the family table's
    /// rules). An index of the other mode chooses the mode when only a default or the table's
    /// layout did; against `--multi-arch` or the lock's record it is an error that says what to
    /// pass instead. An index that is neither (a local one) changes nothing.
    pub fn with_index(
        self,
        table: &FamilyTable,
        flag: &str,
        url: &str,
        subject: &str,
    ) -> Result<ModeChoice, IndexMismatch> {
        let kind = table.index_kind(url);
        let (mode, what) = match &kind {
            IndexKind::Unknown => return Ok(self),
            IndexKind::PerFamily { family } => (
                BuildMode::PerFamily,
                format!("the per-family index of {family}"),
            ),
            IndexKind::MultiArch => (
                BuildMode::MultiArch,
                "the multi-arch index (one for every family)".to_string(),
            ),
        };
        let url = crate::redact::redact_url(url);
        if mode == self.mode {
            return Ok(self);
        }
        if matches!(self.source, Source::Default | Source::Config(_)) {
            return Ok(ModeChoice {
                mode,
                source: Source::Inferred(format!("{flag} {url}, {what}")),
            });
        }
        let fix = match mode {
            BuildMode::PerFamily => format!(
                "a multi-arch set installs from and publishes to one index for every family: pass {}",
                table
                    .multi_arch_index_url()
                    .map(|u| format!("the multi-arch index ({u})"))
                    .unwrap_or_else(|| "the multi-arch index".into())
            ),
            BuildMode::MultiArch => format!(
                "a per-family set installs from and publishes to its family's index: pass the family's index{}",
                table
                    .families()
                    .next()
                    .and_then(|f| table.per_family_index_url(f))
                    .map(|u| format!(" (such as {u})"))
                    .unwrap_or_default()
            ),
        };
        Err(IndexMismatch {
            flag: flag.to_string(),
            url,
            what,
            subject: subject.to_string(),
            mode: self.mode,
            chosen_by: self.source,
            fix,
        })
    }
}

/// An index of one mode given to a set of the other.
#[derive(Debug, thiserror::Error)]
#[error("{flag} {url} is {what}, but {subject} is {mode} (from {chosen_by}): {fix}")]
pub struct IndexMismatch {
    pub flag: String,
    pub url: String,
    pub what: String,
    pub subject: String,
    pub mode: BuildMode,
    pub chosen_by: Source,
    pub fix: String,
}

impl HasExitStatus for IndexMismatch {
    fn exit_status(&self) -> ExitStatus {
        ExitStatus::Usage
    }
}

/// One fat wheel a multi-arch build splits, after its project is built.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SplitPlan {
    pub project: String,
    /// The fat wheel's file-name glob (the project's wheel).
    pub wheel_glob: String,
    pub spec: SplitSpec,
}

pub use crate::multiarch::device::device_prefix;

/// What every device wheel requires: the SDK's device package of its target, at the SDK's
/// version (the reference's `--device-requires-dist "rocm-sdk-device-@GFXARCH@ == <SDK>"`).
pub fn device_requires(sdk_version: &str) -> Vec<String> {
    vec![format!("rocm-sdk-device-@GFXARCH@ == {sdk_version}")]
}
