//! Hipify results kept in the cache directory, keyed by (upstream tree, script hash, whether
//! submodules were there): hipify is deterministic for a given tree and script (the checkout
//! refuses a run that is not), so a checkout of an already-hipified pin in a new root checks
//! the hipified commits out instead of running the script again.
//!
//! The record (`<cache>/hipify/<key>.json`) names the hipify commit of every repository the
//! script changed; the commits themselves live in the mirrors of those repositories
//! (`refs/rockbuild/hipify/<sha>`), so a record whose commits are gone is simply a miss.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::Error;
use crate::lock::HipifyStamp;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct Record {
    pub stamp: HipifyStamp,
    /// The hipify commit (on top of the upstream commit) of each repository hipify changed,
    /// by path relative to the project root (`""`: the root).
    pub commits: IndexMap<String, String>,
}

/// The cache key of a hipify run.
pub fn key(upstream_tree: &str, script_sha256: &str, submodules: bool) -> String {
    let script = script_sha256.get(..16).unwrap_or(script_sha256);
    let subs = if submodules { "s" } else { "n" };
    format!("{upstream_tree}-{script}-{subs}")
}

pub fn record_path(cache_dir: &Path, key: &str) -> PathBuf {
    cache_dir.join("hipify").join(format!("{key}.json"))
}

/// The record for `key`, if there is a readable one (anything else is a miss).
pub fn read(cache_dir: &Path, key: &str) -> Option<Record> {
    let text = fs_err::read_to_string(record_path(cache_dir, key)).ok()?;
    serde_json::from_str(&text).ok()
}

pub fn write(cache_dir: &Path, key: &str, record: &Record) -> Result<(), Error> {
    let path = record_path(cache_dir, key);
    let failed = |reason: String| Error::Cache {
        path: path.clone(),
        reason,
    };
    let text = serde_json::to_string_pretty(record).map_err(|e| failed(e.to_string()))?;
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).map_err(|e| failed(e.to_string()))?;
    }
    crate::fsutil::write_atomic(&path, text.as_bytes()).map_err(|e| failed(format!("{e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_separate_scripts_and_submodule_sets() {
        let tree = "a".repeat(40);
        let one = key(&tree, &"1".repeat(64), true);
        assert_eq!(one, format!("{tree}-1111111111111111-s"));
        assert_ne!(one, key(&tree, &"2".repeat(64), true));
        assert_ne!(one, key(&tree, &"1".repeat(64), false));
    }

    #[test]
    fn records_round_trip_and_garbage_is_a_miss() {
        let dir = tempfile::tempdir().expect("tempdir");
        let record = Record {
            stamp: HipifyStamp {
                upstream_tree: "a".repeat(40),
                script_sha256: "1".repeat(64),
                result_tree: "b".repeat(40),
                submodule_trees: IndexMap::new(),
                changed_files: 3,
                leftovers: Vec::new(),
            },
            commits: IndexMap::from([(String::new(), "c".repeat(40))]),
        };
        write(dir.path(), "k", &record).expect("write");
        assert_eq!(read(dir.path(), "k"), Some(record));
        fs_err::write(record_path(dir.path(), "k"), "{").expect("garble");
        assert_eq!(read(dir.path(), "k"), None);
    }
}
