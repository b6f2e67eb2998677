//! What publishing will do, decided as a pure function of the set and what the destination
//! holds.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::Serialize;

use super::apply::Destination;
use super::{Error, Item, Publication, SetObject, Source};
use crate::index::ordering::{self, Release};
use crate::index::render::page_keys;
use crate::ui::human_bytes;
use crate::wheel::filename::distribution_identity;

/// How a set's objects get to the destination, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transfer {
    /// Local files and sidecars (`stage`).
    Upload,
    /// Objects of the source store, copied unchanged (`promote`).
    Copy,
    /// Rewritten wheels uploaded, the others copied (`promote --rewrite-version`).
    Write,
}

impl Transfer {
    /// The verb for the plan: `would upload 6 objects`.
    pub fn verb(self) -> &'static str {
        match self {
            Transfer::Upload => "upload",
            Transfer::Copy => "copy",
            Transfer::Write => "write",
        }
    }

    /// The participle for results: `nothing was uploaded`.
    pub fn done(self) -> &'static str {
        match self {
            Transfer::Upload => "uploaded",
            Transfer::Copy => "copied",
            Transfer::Write => "written",
        }
    }
}

/// Different bytes under a key the destination already publishes, or a distribution it
/// already publishes under another spelling of its name or version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Conflict {
    pub key: String,
    pub existing: String,
    pub new: String,
    /// The key that already holds this distribution under another spelling (`torch-01.00`
    /// for `torch-1.0`, `foo.bar` for `Foo_Bar`); pip would take either for the other.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spelled: Option<String>,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.spelled {
            Some(other) => write!(
                f,
                "'{}' is the distribution '{other}' already is (one PEP 503 name, one PEP 440 \
                 version, the same tags): pip would take whichever it met last",
                self.key
            ),
            None => write!(
                f,
                "'{}' is already published with sha256 {}, the set has {}",
                self.key, self.existing, self.new
            ),
        }
    }
}

/// What publishing will do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PublishPlan {
    #[serde(skip)]
    pub verb: &'static str,
    pub transfer: Transfer,
    /// The destination's URL.
    pub dest: String,
    pub transfers: Vec<Item>,
    /// Already in the destination with the same bytes (a re-run): skipped.
    pub present: Vec<SetObject>,
    /// The index pages written afterwards, in order.
    pub pages: Vec<String>,
}

/// Refuses versions that would sort below builds the destination already publishes: pip
/// would keep installing those.
pub(super) fn check_ordering(
    publication: &Publication,
    dest: &str,
    published: &[Release],
) -> Result<(), Error> {
    let problems = ordering::check(&publication.releases, published);
    if problems.is_empty() {
        return Ok(());
    }
    Err(Error::Ordering {
        verb: publication.verb,
        dest: dest.to_string(),
        nothing: publication.transfer.done(),
        problems,
    })
}

/// Decides what to move: objects absent from the destination are transferred, the same
/// bytes again are skipped, different bytes under a published key stop the whole plan, as
/// do versions that would sort below published ones.
pub fn plan(publication: Publication, dest: &Destination) -> Result<PublishPlan, Error> {
    check_ordering(&publication, &dest.url, &dest.published)?;
    let Publication {
        verb,
        transfer,
        items,
        releases,
    } = publication;
    let mut transfers = Vec::new();
    let mut present = Vec::new();
    let mut conflicts = Vec::new();
    // What each distribution is to an installer: one key per identity, in the destination and
    // in the set together.
    let mut identities = dest.identities.clone();
    for item in items {
        let file = item
            .object
            .key
            .rsplit('/')
            .next()
            .unwrap_or(&item.object.key);
        if let Some(identity) = distribution_identity(file) {
            match identities.get(&identity) {
                Some(other) if *other != item.object.key => {
                    conflicts.push(Conflict {
                        key: item.object.key.clone(),
                        existing: String::new(),
                        new: item.object.sha256.clone(),
                        spelled: Some(other.clone()),
                    });
                    continue;
                }
                _ => {
                    identities.insert(identity, item.object.key.clone());
                }
            }
        }
        match dest.state.get(&item.object.key).cloned().flatten() {
            None => transfers.push(item),
            Some(existing) if existing == item.object.sha256 => present.push(item.object),
            Some(existing) => conflicts.push(Conflict {
                key: item.object.key.clone(),
                existing,
                new: item.object.sha256.clone(),
                spelled: None,
            }),
        }
    }
    if !conflicts.is_empty() {
        return Err(Error::Conflicts {
            verb,
            dest: dest.url.clone(),
            nothing: transfer.done(),
            conflicts,
            restage: None,
        });
    }
    // The destination's projects after publishing: each gets its pages rewritten.
    let projects: BTreeSet<&str> = dest
        .published
        .iter()
        .map(|r| r.project.as_str())
        .chain(releases.iter().map(|r| r.project.as_str()))
        .collect();
    Ok(PublishPlan {
        verb,
        transfer,
        dest: dest.url.clone(),
        transfers,
        present,
        pages: page_keys(&projects.into_iter().collect::<Vec<_>>()),
    })
}

impl PublishPlan {
    pub fn bytes(&self) -> u64 {
        self.transfers.iter().map(|t| t.object.size).sum()
    }

    /// What `--dry-run` prints: every object and every page, nothing left out; each line
    /// says what happens to its object.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "would {} {} objects ({}) to {}\n",
            self.transfer.verb(),
            self.transfers.len(),
            human_bytes(self.bytes()),
            self.dest
        );
        for item in &self.transfers {
            let from = match &item.source {
                Source::Copy { from_key } if *from_key == item.object.key => String::new(),
                Source::Copy { from_key } => format!(" from {from_key}"),
                Source::File { path } => format!(" from {}", path.display()),
                Source::Bytes { .. } => String::new(),
            };
            let _ = writeln!(
                out,
                "  {} {}{from} ({}, sha256 {})",
                item.source.verb(),
                item.object.key,
                human_bytes(item.object.size),
                item.object.sha256
            );
        }
        for object in &self.present {
            let _ = writeln!(
                out,
                "  keep {} (already published with the same sha256)",
                object.key
            );
        }
        let _ = writeln!(out, "would then write {} index pages:", self.pages.len());
        for page in &self.pages {
            let _ = writeln!(out, "  write {page}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn object(key: &str, sha: char) -> SetObject {
        SetObject {
            key: key.into(),
            size: 10,
            sha256: sha.to_string().repeat(64),
        }
    }

    fn copy(key: &str, sha: char) -> Item {
        Item {
            object: object(key, sha),
            source: Source::Copy {
                from_key: key.into(),
            },
        }
    }

    fn publication(items: Vec<Item>, releases: &[(&str, &str)]) -> Publication {
        Publication {
            verb: "promote",
            transfer: Transfer::Copy,
            items,
            releases: releases
                .iter()
                .map(|(project, version)| Release {
                    project: project.to_string(),
                    version: version.to_string(),
                })
                .collect(),
        }
    }

    fn destination(state: &[(&str, Option<char>)], published: &[(&str, &str)]) -> Destination {
        Destination {
            url: "s3://wheels/release".into(),
            published: publication(Vec::new(), published).releases,
            state: state
                .iter()
                .map(|(key, sha)| (key.to_string(), sha.map(|c| c.to_string().repeat(64))))
                .collect::<HashMap<_, _>>(),
            identities: HashMap::new(),
        }
    }

    #[test]
    fn plans_copies_skips_and_every_page() {
        let items = vec![
            copy("torch/a.whl", 'a'),
            copy("torch/a.whl.metadata", 'b'),
            copy("vision/v.whl", 'c'),
        ];
        let found = destination(
            &[("torch/a.whl", None), ("torch/a.whl.metadata", Some('b'))],
            &[("audio", "0.9")],
        );
        let plan = plan(
            publication(items.clone(), &[("torch", "1.0"), ("vision", "0.2")]),
            &found,
        )
        .expect("plan");
        assert_eq!(plan.transfers, vec![items[0].clone(), items[2].clone()]);
        assert_eq!(plan.present, vec![object("torch/a.whl.metadata", 'b')]);
        insta::assert_snapshot!(plan.to_text(), @r"
        would copy 2 objects (20 B) to s3://wheels/release
          copy torch/a.whl (10 B, sha256 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa)
          copy vision/v.whl (10 B, sha256 cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc)
          keep torch/a.whl.metadata (already published with the same sha256)
        would then write 8 index pages:
          write audio/index.html
          write audio/index.json
          write torch/index.html
          write torch/index.json
          write vision/index.html
          write vision/index.json
          write index.html
          write index.json
        ");
    }

    #[test]
    fn different_bytes_or_lower_versions_refuse_the_whole_set() {
        let items = vec![copy("vision/v.whl", 'c')];
        let found = destination(&[("vision/v.whl", Some('d'))], &[]);
        let error = plan(publication(items.clone(), &[]), &found).expect_err("conflict");
        assert!(
            matches!(&error, Error::Conflicts { conflicts, .. } if *conflicts == [Conflict {
                key: "vision/v.whl".into(),
                existing: "d".repeat(64),
                new: "c".repeat(64),
                spelled: None,
            }]),
            "{error}"
        );
        let found = destination(&[("vision/v.whl", None)], &[("vision", "0.2+rocm7.15")]);
        let error =
            plan(publication(items, &[("vision", "0.2+rocm10.0")]), &found).expect_err("lower");
        assert!(matches!(error, Error::Ordering { .. }), "{error}");
    }
}
