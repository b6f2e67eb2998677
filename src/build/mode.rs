//! The build's mode. Per-family (TheRock's legacy layout, what `--index-url …/gfx110X-all/`
//! builds) ships each project's wheel as built. Multi-arch (TheRock's releases since April
//! 2026: `.github/workflows/multi_arch_build_portable_linux_pytorch_wheels.yml`) builds once for
//! the union of the requested targets, then splits the fat wheels of the projects whose recipe
//! says so (torch and torchvision) into a host wheel and one device wheel per target, all for
//! one index. Chosen by `--multi-arch`, by a family table whose index layout is multi-arch, or
//! by the lock's build record.

use serde::Serialize;

use crate::sourced::Source;
use crate::wheel::split::SplitSpec;

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
}

/// One fat wheel a multi-arch build splits, after its project is built.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SplitPlan {
    pub project: String,
    /// The fat wheel's file-name glob (the project's wheel).
    pub wheel_glob: String,
    pub spec: SplitSpec,
}

pub use crate::wheel::split::device_prefix;

/// What every device wheel requires: the SDK's device package of its target, at the SDK's
/// version (the reference's `--device-requires-dist "rocm-sdk-device-@GFXARCH@ == <SDK>"`).
pub fn device_requires(sdk_version: &str) -> Vec<String> {
    vec![format!("rocm-sdk-device-@GFXARCH@ == {sdk_version}")]
}
