//! What a publication moves: objects with their bytes' origin, and the versions they bring.

use std::path::PathBuf;

use serde::Serialize;

use super::Error;
use super::plan::Transfer;
use crate::index::ordering::Release;
use crate::index::{dist_key, metadata_key};
use crate::wheel::companion::Role;
use crate::wheel::verify::WheelReport;

/// One object of a set: where it goes and what its bytes are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SetObject {
    /// Key in the destination (relative to its prefix).
    pub key: String,
    pub size: u64,
    pub sha256: String,
}

/// Where an object's bytes come from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "from")]
pub enum Source {
    /// This key of the source store (promotion: a server-side copy where the backend can).
    Copy { from_key: String },
    /// A local file (a verified wheel).
    File { path: PathBuf },
    /// Bytes in memory (a PEP 658 sidecar: the wheel's METADATA, byte for byte).
    #[serde(rename = "metadata")]
    Bytes {
        #[serde(skip)]
        bytes: Vec<u8>,
    },
}

impl Source {
    /// What happens to an object from this source: `copy` or `upload`.
    pub(super) fn verb(&self) -> &'static str {
        match self {
            Source::Copy { .. } => "copy",
            Source::File { .. } | Source::Bytes { .. } => "upload",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Item {
    pub object: SetObject,
    pub source: Source,
}

/// What to publish: the objects, and the versions they bring (for the ordering lint).
#[derive(Clone, Debug)]
pub struct Publication {
    /// The verb for messages and the progress line (`stage`, `promote`).
    pub verb: &'static str,
    pub transfer: Transfer,
    pub items: Vec<Item>,
    pub releases: Vec<Release>,
}

/// The uploads that publish verified wheels: each wheel from its file, then its PEP 658
/// sidecar from the METADATA bytes verification read, at the layout's keys. Every report
/// must be a passing one (it then has a name, a SHA-256 and, for a product, metadata; a
/// companion that is a source distribution has no METADATA, and no sidecar).
pub fn upload_items(wheels: &[WheelReport]) -> Result<Vec<Item>, Error> {
    let mut items = Vec::with_capacity(2 * wheels.len());
    for wheel in wheels {
        let missing = |missing: &'static str| Error::Unverified {
            wheel: wheel.path.clone(),
            missing,
        };
        let name = wheel.name.as_deref().ok_or_else(|| missing("name"))?;
        let sha256 = wheel.sha256.clone().ok_or_else(|| missing("sha256"))?;
        let metadata = match (&wheel.metadata, wheel.role) {
            (Some(metadata), _) => Some(metadata),
            (None, Role::Companion) => None,
            (None, Role::Product) => return Err(missing("METADATA")),
        };
        let key = dist_key(name, &wheel.file);
        let sidecar = metadata_key(&key);
        items.push(Item {
            object: SetObject {
                key,
                size: wheel.size,
                sha256,
            },
            source: Source::File {
                path: wheel.path.clone(),
            },
        });
        let Some(metadata) = metadata else {
            continue;
        };
        let metadata_sha256 = wheel
            .metadata_sha256
            .clone()
            .ok_or_else(|| missing("METADATA hash"))?;
        items.push(Item {
            object: SetObject {
                key: sidecar,
                size: metadata.raw.len() as u64,
                sha256: metadata_sha256,
            },
            source: Source::Bytes {
                bytes: metadata.raw.clone(),
            },
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_verified_wheels_become_uploads() {
        let report = WheelReport {
            path: PathBuf::from("/dist/rock_torch-1.0-py3-none-any.whl"),
            file: "rock_torch-1.0-py3-none-any.whl".into(),
            role: Role::Product,
            source: None,
            size: 10,
            sha256: None,
            name: Some("rock-torch".into()),
            version: Some("1.0".into()),
            entries: 0,
            zip64: false,
            metadata: None,
            metadata_sha256: None,
            libraries: Vec::new(),
            dlls: Default::default(),
            packs: Vec::new(),
            problems: Vec::new(),
        };
        let error = upload_items(&[report]).expect_err("no sha256");
        assert!(
            matches!(&error, Error::Unverified { wheel, missing: "sha256" }
                if wheel == std::path::Path::new("/dist/rock_torch-1.0-py3-none-any.whl")),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "/dist/rock_torch-1.0-py3-none-any.whl: the verification report has no sha256, and only \
             verified wheels are published; run `rockbuild verify` on it, fix what it reports, then publish again"
        );
    }
}
