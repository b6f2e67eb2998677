//! `stage`: a verified build output published to a staging index. Nothing is uploaded unless
//! every wheel passed; the wheels and their PEP 658 sidecars go up in parallel (retried,
//! never replacing published bytes) and the index pages are written last.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Destination, Error, Publication, PublishPlan, Transfer, upload_items};
use crate::context::Context;
use crate::index::client::IndexClient;
use crate::index::ordering::Release;
use crate::ui::{human_bytes, plural};
use crate::verify::{VerifyReport, companions};
use crate::wheel::companion::Role;

/// One wheel of the set: a verified product, or a companion carried from its index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StagedWheel {
    pub file: String,
    pub size: u64,
    pub sha256: String,
    pub role: Role,
    /// A companion's source: the index file it is byte for byte.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// What `stage` will do: the verified set and its publication.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StagePlan {
    /// The build output the wheels come from.
    pub input: PathBuf,
    /// The GPU targets every library was checked for (none: not checked).
    pub targets: Vec<String>,
    /// Where that list came from (`--targets`, `family gfx110X`, `lock <path>`).
    pub targets_from: Option<String>,
    pub wheels: Vec<StagedWheel>,
    pub publish: PublishPlan,
}

/// Completes a verified set with the companions its products pin (the ROCm SDK wheels,
/// from the SDK's `index_url`, into `dir`): a release prefix then installs with no other
/// index. A set that failed verification, or pins nothing of the SDK, is returned as it is.
pub fn bring_companions(
    ctx: &Context,
    mut report: VerifyReport,
    index_url: Option<&str>,
    dir: &Path,
) -> Result<VerifyReport, crate::verify::Error> {
    let seeds = companions::product_requirements(&report.wheels);
    let Some(index_url) = index_url.filter(|_| report.ok && !seeds.is_empty()) else {
        return Ok(report);
    };
    let index = IndexClient::new(index_url).map_err(crate::verify::Error::Index)?;
    let brought = companions::bring(ctx, seeds, &report.wheels, &index, dir)?;
    report.wheels.extend(brought);
    Ok(report)
}

/// The publication of a verified set: its wheels and sidecars as uploads, the versions it
/// brings. A set that failed verification is refused here, before any store is read.
pub fn publication(report: &VerifyReport, input: &Path, dest: &str) -> Result<Publication, Error> {
    if !report.ok {
        return Err(Error::NotVerified {
            what: what_failed(
                report.failed(),
                report.wheels.len(),
                report.set_problems.len(),
                &input.display().to_string(),
            ),
            dest: dest.to_string(),
        });
    }
    Ok(Publication {
        verb: "stage",
        transfer: Transfer::Upload,
        items: upload_items(&report.wheels)?,
        releases: report
            .wheels
            .iter()
            .filter_map(|w| {
                Some(Release {
                    project: w.name.clone()?,
                    version: w.version.clone()?,
                })
            })
            .collect(),
    })
}

/// The command that stages a refused set under a prefix of its own: `argv` as it was typed
/// (its first word spelled `rockbuild`), with `--to` set to `<to>-<set id>`. The set id is the
/// first 8 hex digits of the SHA-256 over the set's file names and digests, so one set always
/// gets one prefix (following the hint twice stages once) and another rebuild another one: no
/// existence check, which S3 would need a listing for. `None` when a word cannot be quoted
/// for a shell.
pub fn restage_command(argv: &[String], to: &str, report: &VerifyReport) -> Option<String> {
    let files = report
        .wheels
        .iter()
        .map(|w| (w.file.as_str(), w.sha256.as_deref().unwrap_or("")))
        .collect();
    command_with_prefix(argv, to, files)
}

fn command_with_prefix(argv: &[String], to: &str, mut files: Vec<(&str, &str)>) -> Option<String> {
    use sha2::{Digest, Sha256};
    files.sort_unstable();
    let mut hasher = Sha256::new();
    for (file, sha256) in files {
        hasher.update(format!("{file} {sha256}\n").as_bytes());
    }
    let id = hex::encode(hasher.finalize());
    let prefix = format!("{}-{}", to.trim_end_matches('/'), &id[..8]);
    let mut words: Vec<String> = vec!["rockbuild".into()];
    let mut replaced = false;
    let mut rest = argv.iter().skip(1);
    while let Some(word) = rest.next() {
        if word == "--to" {
            rest.next();
            words.extend(["--to".into(), prefix.clone()]);
            replaced = true;
        } else if word.starts_with("--to=") {
            words.push(format!("--to={prefix}"));
            replaced = true;
        } else {
            words.push(word.clone());
        }
    }
    if !replaced {
        words.extend(["--to".into(), prefix]);
    }
    let quoted: Result<Vec<String>, _> = words
        .iter()
        .map(|w| shlex::try_quote(w).map(|q| q.into_owned()))
        .collect();
    quoted.ok().map(|words| words.join(" "))
}

/// Plans the stage: the verified wheels and what publishing them into `dest` does.
pub fn plan(
    input: &Path,
    targets_from: Option<String>,
    report: &VerifyReport,
    publication: Publication,
    dest: &Destination,
) -> Result<StagePlan, Error> {
    Ok(StagePlan {
        input: input.to_path_buf(),
        targets: report.targets.clone(),
        targets_from,
        wheels: report
            .wheels
            .iter()
            .map(|w| StagedWheel {
                file: w.file.clone(),
                size: w.size,
                sha256: w.sha256.clone().unwrap_or_default(),
                role: w.role,
                source: w.source.clone(),
            })
            .collect(),
        publish: super::plan(publication, dest)?,
    })
}

impl StagePlan {
    /// What `--dry-run` prints.
    pub fn to_text(&self) -> String {
        let products = self
            .wheels
            .iter()
            .filter(|w| w.role == Role::Product)
            .count();
        let companions = self.wheels.len() - products;
        let mut out = format!(
            "stage {products} verified wheel{} from {}{} to {}\n",
            plural(products),
            self.input.display(),
            match companions {
                0 => String::new(),
                n => format!(" and {n} ROCm SDK file{} they pin", plural(n)),
            },
            self.publish.dest
        );
        match (&self.targets_from, self.targets.is_empty()) {
            (Some(from), false) => {
                let _ = writeln!(
                    out,
                    "every GPU library carries code for {} (from {from})",
                    self.targets.join(",")
                );
            }
            _ => out.push_str("GPU libraries were checked for HIP code, not for targets\n"),
        }
        for wheel in &self.wheels {
            let _ = match (&wheel.role, &wheel.source) {
                (Role::Companion, Some(source)) => writeln!(
                    out,
                    "  carried  {} ({}, sha256 {}, as {source} publishes it)",
                    wheel.file,
                    human_bytes(wheel.size),
                    wheel.sha256
                ),
                _ => writeln!(
                    out,
                    "  verified {} ({}, sha256 {})",
                    wheel.file,
                    human_bytes(wheel.size),
                    wheel.sha256
                ),
            };
        }
        out.push_str(&self.publish.to_text());
        out
    }
}

/// What failed verification: wheels on their own, the set as a whole (a pin between two
/// wheels, a missing project), or both.
fn what_failed(failed: usize, wheels: usize, set_problems: usize, input: &str) -> String {
    let set = format!("{set_problems} problem{}", plural(set_problems));
    match (failed, set_problems) {
        (_, 0) => format!(
            "{failed} of {wheels} wheel{} in {input} failed verification",
            plural(wheels)
        ),
        (0, _) => format!(
            "the {wheels} wheel{} in {input} passed one by one, but the set has {set}",
            plural(wheels)
        ),
        _ => format!(
            "{failed} of {wheels} wheel{} in {input} failed verification, and the set has {set}",
            plural(wheels)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::{command_with_prefix, what_failed};

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn a_refused_restage_gets_a_prefix_named_after_its_set() {
        let set = vec![("torch-1.whl", "aa"), ("vision-1.whl", "bb")];
        let command = |words: &[&str], to: &str, set: Vec<(&str, &str)>| {
            command_with_prefix(&argv(words), to, set).expect("quotable")
        };
        let given = [
            "target/debug/rockbuild",
            "stage",
            "--input",
            "out dir",
            "--to",
            "staging/",
            "--allow-linux-tag",
        ];
        let first = command(&given, "staging/", set.clone());
        let prefix = first
            .split(" --to staging-")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .expect("a new --to");
        assert_eq!(prefix.len(), 8, "{first}");
        assert_eq!(
            first,
            format!("rockbuild stage --input 'out dir' --to staging-{prefix} --allow-linux-tag")
        );
        // The same set, listed in another order: the same prefix; another set: another one.
        let reversed = set.iter().rev().copied().collect();
        assert_eq!(command(&given, "staging/", reversed), first);
        assert_ne!(
            command(
                &given,
                "staging/",
                vec![("torch-1.whl", "aa"), ("vision-1.whl", "cc")]
            ),
            first
        );
        // `--to=URL`, and a --to taken from ROCKBUILD_STAGE_TO (not on the command line).
        assert_eq!(
            command(
                &["rockbuild", "stage", "--to=s3://b/staging"],
                "s3://b/staging",
                set.clone()
            ),
            format!("rockbuild stage '--to=s3://b/staging-{prefix}'")
        );
        assert_eq!(
            command(&["rockbuild", "stage"], "s3://b/staging", set),
            format!("rockbuild stage --to s3://b/staging-{prefix}")
        );
    }

    #[test]
    fn the_refusal_counts_wheel_and_set_problems() {
        assert_eq!(
            what_failed(1, 3, 0, "dist"),
            "1 of 3 wheels in dist failed verification"
        );
        assert_eq!(
            what_failed(0, 3, 1, "dist"),
            "the 3 wheels in dist passed one by one, but the set has 1 problem"
        );
        assert_eq!(
            what_failed(2, 3, 2, "dist"),
            "2 of 3 wheels in dist failed verification, and the set has 2 problems"
        );
    }
}
