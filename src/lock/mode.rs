//! The build mode a lock's build record names: per-family or multi-arch (what each means and
//! how a build chooses it: `build::mode`). The record owns the type, so the lock names no stage.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuildMode {
    /// Each wheel ships as built, for the targets it was built for.
    #[default]
    PerFamily,
    /// One build for every target; fat wheels split into host and per-target device wheels.
    MultiArch,
}

impl BuildMode {
    pub fn as_str(self) -> &'static str {
        match self {
            BuildMode::PerFamily => "per-family",
            BuildMode::MultiArch => "multi-arch",
        }
    }

    pub fn is_per_family(&self) -> bool {
        *self == BuildMode::PerFamily
    }
}

impl fmt::Display for BuildMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
