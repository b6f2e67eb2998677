//! `index`: the pages of a store prefix rewritten from what is stored there — the store's
//! listing read (`index::scan`), the pages rendered (the plan), then written, the root last.

use std::fmt::Write as _;

use serde::Serialize;

use crate::context::Context;
use crate::index::render::{Page, render_pages};
use crate::index::scan::{self, Regenerated, Scan};
use crate::store::Storage;
use crate::store::lease::Lease;
use crate::ui::human_bytes;

/// The pages `index` writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IndexPlan {
    pub url: String,
    pub projects: usize,
    pub files: usize,
    /// Sidecars written first: derived from their wheels, where the stored one is missing or
    /// differs.
    pub sidecars: Vec<PlannedSidecar>,
    pub pages: Vec<PlannedPage>,
    #[serde(skip)]
    bodies: Vec<Page>,
    #[serde(skip)]
    regenerate: Vec<Regenerated>,
}

/// One sidecar, as the plan shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannedSidecar {
    pub key: String,
    /// A stored sidecar differed from the wheel's METADATA.
    pub replaces: bool,
}

/// One page, as the plan shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannedPage {
    pub key: String,
    pub content_type: &'static str,
    pub size: usize,
    pub sha256: String,
}

/// Renders every page of the listing a scan of `url` found.
pub fn plan(url: &str, scan: &Scan) -> IndexPlan {
    let bodies = render_pages(&scan.projects, &scan.depends_on);
    IndexPlan {
        url: url.to_string(),
        projects: scan.projects.len(),
        files: scan.file_count(),
        sidecars: scan
            .regenerate
            .iter()
            .map(|s| PlannedSidecar {
                key: s.key.clone(),
                replaces: s.replaces,
            })
            .collect(),
        pages: bodies
            .iter()
            .map(|page| PlannedPage {
                key: page.key.clone(),
                content_type: page.content_type,
                size: page.body.len(),
                sha256: crate::fsutil::sha256_hex(page.body.as_bytes()),
            })
            .collect(),
        bodies,
        regenerate: scan.regenerate.clone(),
    }
}

impl IndexPlan {
    /// What `--dry-run` prints.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "would write {} index pages for {} files of {} projects at {}\n",
            self.pages.len(),
            self.files,
            self.projects,
            self.url
        );
        for sidecar in &self.sidecars {
            let why = if sidecar.replaces {
                "replacing one that is not its wheel's METADATA"
            } else {
                "the wheel's METADATA"
            };
            let _ = writeln!(out, "  write {} ({why})", sidecar.key);
        }
        for page in &self.pages {
            let _ = writeln!(
                out,
                "  write {} ({}, sha256 {})",
                page.key,
                human_bytes(page.size as u64),
                page.sha256
            );
        }
        out
    }

    /// The line a finished rewrite ends with.
    pub fn summary(&self) -> String {
        format!(
            "wrote {} index pages for {} files of {} projects at {}",
            self.pages.len(),
            self.files,
            self.projects,
            self.url
        )
    }
}

/// Writes the planned pages, each atomically, dependencies first and the root last, if the
/// store's lease is still this run's.
pub fn apply(
    ctx: &Context,
    store: &dyn Storage,
    lease: &mut Lease<'_>,
    plan: &IndexPlan,
) -> Result<(), super::Error> {
    lease.confirm()?;
    scan::write_sidecars(ctx, store, &plan.regenerate)
        .map_err(|e| super::Error::Index(e.into()))?;
    scan::write_pages(store, &plan.bodies).map_err(|e| super::Error::Index(e.into()))
}
