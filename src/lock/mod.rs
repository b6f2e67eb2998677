//! The lock: one file that pins every source (commits of each project and submodule, the
//! hipify result) and, once built, every version. Every stage after `checkout`/`lock` reads it
//! and never re-resolves a branch, so a re-run of any job from the same lock produces the same
//! sources, versions and file names.

mod error;
pub mod manifest;
pub mod manifest_url;
pub mod mode;
pub mod plan;
pub mod related_commits;
pub mod resolve;

use std::path::Path;

use anyhow::Context as _;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::stack::Target;
pub use error::Error;
pub use mode::BuildMode;

/// The lock format version this rockbuild writes and reads.
pub const SCHEMA: u32 = 1;

/// Default lock file name inside the root checkout directory.
pub const DEFAULT_FILE_NAME: &str = "rockbuild.lock.json";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct Lock {
    pub schema: u32,
    /// `rockbuild <version>` that wrote it.
    pub generated_by: String,
    /// The stack config the pins were resolved from.
    pub stack: String,
    /// Projects in stack order.
    pub projects: IndexMap<String, LockedProject>,
    /// What `rockbuild build` resolved: SDK, targets, versions. Absent until a build ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<BuildRecord>,
}

/// One project's pinned source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct LockedProject {
    pub checkout_dir: String,
    /// Origin URL (never with credentials: those are refused at input).
    pub origin: String,
    /// The ref as asked for: branch, tag or SHA.
    pub requested_ref: String,
    /// The commit that ref resolved to.
    pub commit: String,
    /// The tree of that commit: what `--from-lock` must reproduce.
    pub tree: String,
    /// Where the ref came from.
    pub pin: PinOrigin,
    /// The version preset that chose origin and ref rule (configs/presets.yaml).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// The flag that named the origin, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_flag: Option<String>,
    /// Every submodule, recursively (paths relative to the project root, nested ones joined).
    pub submodules: Vec<LockedSubmodule>,
    /// The hipify result, once a checkout ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hipify: Option<HipifyStamp>,
}

/// Where a project's ref came from (for people reading the lock and for error messages).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", deny_unknown_fields)]
pub enum PinOrigin {
    /// A command-line flag (`--repo-hashtag`, `--hashtag NAME=REF`).
    Flag { flag: String },
    /// A row of a related_commits file.
    RelatedCommits { file: String, line: usize },
    /// A commit pin file (triton.txt).
    CommitFile { file: String },
    /// The release branch derived from a version file (`--release`).
    ReleaseBranch { file: String },
    /// A ref a version preset names (`nightly`, `master`).
    Preset { preset: String },
    /// The stack config's default ref.
    Default,
    /// Reproduced from a lock or TheRock manifest.
    Lock { file: String },
}

impl PinOrigin {
    /// Where a ref came from, as plans and summaries print it.
    pub fn describe(&self) -> String {
        match self {
            PinOrigin::Flag { flag } => flag.clone(),
            PinOrigin::RelatedCommits { file, line } => format!("{file}:{line}"),
            PinOrigin::CommitFile { file } | PinOrigin::ReleaseBranch { file } => file.clone(),
            PinOrigin::Preset { preset } => format!("preset {preset}"),
            PinOrigin::Default => "stack default".into(),
            PinOrigin::Lock { file } => format!("lock {file}"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct LockedSubmodule {
    pub path: String,
    pub commit: String,
    pub url: String,
}

/// Proof of what hipify did: the tree it started from, the script that ran, the tree it left.
/// hipify never runs twice on a tree whose stamp matches (upstream build_amd.py is not
/// idempotent: pytorch#160579).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct HipifyStamp {
    pub upstream_tree: String,
    pub script_sha256: String,
    /// Tree of the hipified root repository (including changed submodule pointers).
    pub result_tree: String,
    /// Hipified tree of each submodule hipify changed, by path.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub submodule_trees: IndexMap<String, String>,
    /// Files hipify changed or created (root and submodules).
    pub changed_files: usize,
    /// CUDA-only includes the leftover check found after hipify (`file:line: …`), reported
    /// rather than refused (`hipify: leftover-cuda: report`, no `--strict`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub leftovers: Vec<String>,
}

/// What a build resolved, so every later job builds, names and verifies the same thing.
/// `install-rocm` writes the SDK part; `build` fills in the rest before it compiles anything.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct BuildRecord {
    /// Installed `rocm` version.
    pub sdk_version: String,
    /// The index the SDK came from, credentials masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_url: Option<String>,
    /// What `python -m rocm_sdk targets` reported (not necessarily what was built).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sdk_targets: Vec<String>,
    /// The targets the wheels were built for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<Target>,
    /// Per-family (left out), or multi-arch: the fat wheels split per target.
    #[serde(default, skip_serializing_if = "BuildMode::is_per_family")]
    pub mode: BuildMode,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub release_type: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version_suffix: String,
    /// Wheel version per project (PEP 440, normalized).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub versions: IndexMap<String, String>,
    /// Wheel file-name stem per project (`torch-2.9.0+rocm7.10.0`): what every wheel file of
    /// the project starts with, whatever its Python and platform tags.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub stems: IndexMap<String, String>,
    /// Projects whose wheel version the build decides, and why rockbuild could not predict it
    /// (or what it predicted instead): `versions` and `stems` gain their entries from the
    /// built wheels once the build has run, and every later verb checks against those.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub decided: IndexMap<String, String>,
}

impl BuildRecord {
    /// The record says one thing once: its SDK version and wheel versions are PEP 440, and
    /// every file-name stem names the version `versions` gives its project (verify checks the
    /// one, promote the other: an edited lock must not pass one and fail the other). The
    /// error is the field and what is wrong with it.
    fn check(&self) -> Result<(), (String, String)> {
        let version = |text: &str| text.parse::<pep440_rs::Version>();
        if !self.sdk_version.is_empty()
            && let Err(error) = version(&self.sdk_version)
        {
            return Err((
                "build.sdk_version".into(),
                format!("`{}` is not a PEP 440 version ({error})", self.sdk_version),
            ));
        }
        for (project, text) in &self.versions {
            if let Err(error) = version(text) {
                return Err((
                    format!("build.versions.{project}"),
                    format!("`{text}` is not a PEP 440 version ({error})"),
                ));
            }
        }
        for (project, stem) in &self.stems {
            let field = format!("build.stems.{project}");
            let Some((_, stem_text)) = stem.split_once('-') else {
                return Err((field, format!("`{stem}` is not `<name>-<version>`")));
            };
            let stem_version = version(stem_text).map_err(|error| {
                (
                    field.clone(),
                    format!("`{stem}` does not end in a PEP 440 version ({error})"),
                )
            })?;
            if let Some(text) = self.versions.get(project)
                && version(text).ok().as_ref() != Some(&stem_version)
            {
                return Err((
                    field,
                    format!("`{stem}` disagrees with build.versions.{project} `{text}`"),
                ));
            }
        }
        Ok(())
    }
}

impl BuildRecord {
    /// The mode the record names: a build's (it recorded its targets), or multi-arch from
    /// install-rocm's multi-arch index. An SDK-only record from another index names none (the
    /// per-family default is not written, so it cannot be told from an absent one).
    pub fn recorded_mode(&self) -> Option<BuildMode> {
        (!self.targets.is_empty() || !self.mode.is_per_family()).then_some(self.mode)
    }
}

impl Lock {
    /// The SDK version the build record holds, if any.
    pub fn sdk_version(&self) -> Result<Option<pep440_rs::Version>, Error> {
        let Some(record) = self.build.as_ref().filter(|b| !b.sdk_version.is_empty()) else {
            return Ok(None);
        };
        record
            .sdk_version
            .parse()
            .map(Some)
            .map_err(|e: pep440_rs::VersionParseError| Error::BadSdkVersion {
                version: record.sdk_version.clone(),
                reason: e.to_string(),
            })
    }

    /// Refuses an SDK the lock does not name: `accepts(locked)` says whether what was found
    /// (`found`, from `found_where`) is the locked version. No SDK in the lock: nothing to check.
    pub fn expect_sdk(
        &self,
        path: &Path,
        found_where: &str,
        found: &str,
        accepts: impl Fn(&str) -> bool,
    ) -> Result<(), Error> {
        match self.build.as_ref().map(|b| b.sdk_version.as_str()) {
            Some(locked) if !locked.is_empty() && !accepts(locked) => Err(Error::Drift {
                lock: path.to_path_buf(),
                what: "the ROCm SDK version".into(),
                locked: locked.to_string(),
                found: found.to_string(),
                found_where: found_where.to_string(),
                fix:
                    "drop the flag to use the lock's SDK, or write a new lock with `rockbuild lock`"
                        .into(),
            }),
            _ => Ok(()),
        }
    }

    /// Refuses a target list other than the lock's (order aside). No targets in the lock:
    /// nothing to check.
    pub fn expect_targets(
        &self,
        path: &Path,
        found_where: &str,
        found: &[Target],
    ) -> Result<(), Error> {
        let Some(locked) = self
            .build
            .as_ref()
            .map(|b| &b.targets)
            .filter(|t| !t.is_empty())
        else {
            return Ok(());
        };
        let sorted = |targets: &[Target]| {
            let mut names: Vec<String> = targets.iter().map(ToString::to_string).collect();
            names.sort();
            names
        };
        if sorted(locked) == sorted(found) {
            return Ok(());
        }
        let list = |targets: &[Target]| {
            targets
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        Err(Error::Drift {
            lock: path.to_path_buf(),
            what: "the gfx targets".into(),
            locked: list(locked),
            found: list(found),
            found_where: found_where.to_string(),
            fix:
                "drop the target flags to use the lock's, or write a new lock with `rockbuild lock`"
                    .into(),
        })
    }

    /// Refuses wheel versions other than the lock's, project by project. Projects the lock
    /// has no version for are not checked.
    pub fn expect_versions<'a>(
        &self,
        path: &Path,
        found_where: &str,
        found: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), Error> {
        let Some(record) = &self.build else {
            return Ok(());
        };
        for (project, version) in found {
            if let Some(locked) = record.versions.get(project)
                && locked != version
            {
                return Err(Error::Drift {
                    lock: path.to_path_buf(),
                    what: format!("the version of '{project}'"),
                    locked: locked.clone(),
                    found: version.to_string(),
                    found_where: found_where.to_string(),
                    fix: "build from the lock's sources and settings (same SDK, release type, suffix and build number), or write a new lock with `rockbuild lock`".into(),
                });
            }
        }
        Ok(())
    }

    /// Refuses wheels whose version differs from the lock's for their distribution (by the
    /// file-name stems `lock` recorded: `torchaudio-2.9.0+rocm7.10.0`). Distributions the lock
    /// has no stem for are not checked.
    pub fn expect_wheels<'a>(
        &self,
        path: &Path,
        found_where: &str,
        wheels: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), Error> {
        let Some(record) = &self.build else {
            return Ok(());
        };
        let normalize =
            |v: &str| crate::version::normalize("", v).unwrap_or_else(|_| v.to_string());
        for (dist, version) in wheels {
            let wanted = crate::wheel::filename::escape_name(dist);
            let locked = record.stems.values().find_map(|stem| {
                let (name, locked) = stem.split_once('-')?;
                (crate::wheel::filename::escape_name(name) == wanted).then_some(locked)
            });
            if let Some(locked) = locked
                && normalize(locked) != normalize(version)
            {
                return Err(Error::Drift {
                    lock: path.to_path_buf(),
                    what: format!("the version of {dist}"),
                    locked: locked.to_string(),
                    found: version.to_string(),
                    found_where: found_where.to_string(),
                    fix: "promote the set built from this lock, or pass the lock it was built from"
                        .into(),
                });
            }
        }
        Ok(())
    }

    /// The SDK's index the build record names, when it can be read again: the lock keeps a
    /// URL with its password masked, and such a URL cannot be.
    pub fn sdk_index_url(&self) -> Option<String> {
        self.build
            .as_ref()
            .and_then(|build| build.index_url.clone())
            .filter(|url| !crate::redact::is_masked(url))
    }

    /// Writes what the installed SDK reported into the build record (creating it), with the
    /// mode its index says when it says one; the index URL is stored with credentials masked.
    pub fn record_sdk(
        &mut self,
        info: &crate::sdk::SdkInfo,
        index_url: Option<&str>,
        mode: Option<BuildMode>,
    ) {
        let index_url = index_url.map(crate::redact::redact_url);
        match self.build.as_mut() {
            Some(record) => {
                record.sdk_version = info.version.clone();
                record.sdk_targets = info.targets.clone();
                if index_url.is_some() {
                    record.index_url = index_url;
                }
                if let Some(mode) = mode {
                    record.mode = mode;
                }
            }
            None => {
                self.build = Some(BuildRecord {
                    sdk_version: info.version.clone(),
                    index_url,
                    sdk_targets: info.targets.clone(),
                    targets: Vec::new(),
                    mode: mode.unwrap_or_default(),
                    release_type: String::new(),
                    version_suffix: String::new(),
                    versions: Default::default(),
                    stems: Default::default(),
                    decided: Default::default(),
                });
            }
        }
    }

    pub fn new(stack: &str) -> Self {
        Lock {
            schema: SCHEMA,
            generated_by: format!("rockbuild {}", env!("CARGO_PKG_VERSION")),
            stack: stack.to_string(),
            projects: IndexMap::new(),
            build: None,
        }
    }

    /// Reads a lock, refusing other schema versions with a clear message.
    pub fn read(path: &Path) -> Result<Lock, Error> {
        let text =
            crate::input::read_text(path, crate::input::LOCK).map_err(|e| Error::Unreadable {
                path: path.to_path_buf(),
                reason: e.reason(),
            })?;
        let lock: Lock = crate::input::strict::json(&text).map_err(|error| Error::NotALock {
            path: path.to_path_buf(),
            line: error.line(),
            column: error.column(),
            reason: crate::input::strict::json_message(&error),
        })?;
        if lock.schema != SCHEMA {
            return Err(Error::Schema {
                path: path.to_path_buf(),
                found: lock.schema,
            });
        }
        if let Some(build) = &lock.build {
            build
                .check()
                .map_err(|(field, problem)| Error::Inconsistent {
                    path: path.to_path_buf(),
                    field,
                    problem,
                })?;
        }
        Ok(lock)
    }

    /// Writes the lock atomically: a killed run leaves the previous lock or none, never half.
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let mut text = serde_json::to_string_pretty(self).context("serializing the lock")?;
        text.push('\n');
        crate::fsutil::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing the lock {}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_other_schemas() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(DEFAULT_FILE_NAME);
        let mut lock = Lock::new("configs/stack.yaml");
        lock.projects.insert(
            "torch".into(),
            LockedProject {
                checkout_dir: "pytorch".into(),
                origin: "file:///o/torch".into(),
                requested_ref: "main".into(),
                commit: "a".repeat(40),
                tree: "b".repeat(40),
                pin: PinOrigin::RelatedCommits {
                    file: "pytorch/related_commits".into(),
                    line: 3,
                },
                preset: Some("rocm-release".into()),
                origin_flag: None,
                submodules: vec![],
                hipify: None,
            },
        );
        lock.write(&path).expect("write");
        assert_eq!(Lock::read(&path).expect("read"), lock);

        let text = fs_err::read_to_string(&path)
            .expect("text")
            .replace("\"schema\": 1", "\"schema\": 9");
        fs_err::write(&path, text).expect("rewrite");
        let error = Lock::read(&path).expect_err("schema 9");
        assert!(
            error.to_string().contains("lock schema 9 is not supported"),
            "{error}"
        );
    }

    /// install-rocm from the multi-arch index records the mode; from another index it records
    /// none, and a built record names its own.
    #[test]
    fn the_record_names_a_mode_only_when_something_chose_one() {
        let sdk = crate::sdk::SdkInfo {
            version: "7.10.0a20251124".into(),
            root: "/r".into(),
            bin: "/r/bin".into(),
            cmake: "/r/cmake".into(),
            targets: vec!["gfx906".into()],
            python: "3.11.7".into(),
        };
        let mut lock = Lock::new("configs/stack.yaml");
        lock.record_sdk(&sdk, Some("http://127.0.0.1:1/simple/"), None);
        let record = lock.build.clone().expect("record");
        assert_eq!(record.recorded_mode(), None);
        let mut multi = Lock::new("configs/stack.yaml");
        multi.record_sdk(
            &sdk,
            Some("https://rocm.nightlies.amd.com/whl-multi-arch/"),
            Some(BuildMode::MultiArch),
        );
        let record = multi.build.clone().expect("record");
        assert_eq!(record.recorded_mode(), Some(BuildMode::MultiArch));
        let text = serde_json::to_string(&record).expect("json");
        assert!(text.contains("\"mode\":\"multi-arch\""), "{text}");
        // A later install into the same lock from an index that says nothing keeps it.
        multi.record_sdk(&sdk, Some("http://127.0.0.1:1/simple/"), None);
        assert_eq!(
            multi.build.as_ref().and_then(BuildRecord::recorded_mode),
            Some(BuildMode::MultiArch)
        );
        let built = BuildRecord {
            targets: vec![serde_json::from_str("\"gfx906\"").expect("target")],
            ..record
        };
        assert_eq!(
            BuildRecord {
                mode: BuildMode::PerFamily,
                ..built
            }
            .recorded_mode(),
            Some(BuildMode::PerFamily)
        );
    }

    #[test]
    fn drift_from_the_lock_is_refused_naming_both_values() {
        let target = |name: &str| -> Target {
            serde_json::from_str(&format!("\"{name}\"")).expect("target")
        };
        let mut lock = Lock::new("configs/stack.yaml");
        lock.build = Some(BuildRecord {
            sdk_version: "7.10.0a20251124".into(),
            index_url: None,
            sdk_targets: vec![],
            targets: vec![target("gfx906"), target("gfx1030")],
            mode: Default::default(),
            release_type: "nightly".into(),
            version_suffix: "+rocm7.10.0a20251124".into(),
            versions: IndexMap::from([(
                "audio".to_string(),
                "2.9.0+rocm7.10.0a20251124".to_string(),
            )]),
            stems: IndexMap::from([(
                "audio".to_string(),
                "torchaudio-2.9.0+rocm7.10.0a20251124".to_string(),
            )]),
            decided: IndexMap::new(),
        });
        let path = Path::new("ci/rockbuild.lock.json");
        // What matches passes, whatever the order or spelling.
        lock.expect_sdk(path, "the venv", "7.10.0a20251124", |l| {
            l == "7.10.0a20251124"
        })
        .expect("same sdk");
        lock.expect_targets(
            path,
            "--pytorch-rocm-arch",
            &[target("gfx1030"), target("gfx906")],
        )
        .expect("same targets");
        lock.expect_versions(
            path,
            "the build plan",
            [("audio", "2.9.0+rocm7.10.0a20251124")],
        )
        .expect("same version");
        lock.expect_wheels(
            path,
            "the staged set",
            [("torchaudio", "2.9.0+rocm7.10.0a20251124")],
        )
        .expect("same wheel");
        let errors = [
            lock.expect_sdk(path, "--rocm-sdk-version", "==7.11.0", |_| false),
            lock.expect_targets(path, "--pytorch-rocm-arch", &[target("gfx90a")]),
            lock.expect_versions(
                path,
                "the build plan",
                [("audio", "2.9.1+rocm7.10.0a20251124")],
            ),
            lock.expect_wheels(
                path,
                "the staged set at s3://b/staging",
                [("torchaudio", "2.9.0+rocm7.11.0")],
            ),
        ];
        let text: Vec<String> = errors
            .into_iter()
            .map(|r| r.expect_err("drift").to_string())
            .collect();
        insta::assert_snapshot!(text.join("\n"));
    }
}
