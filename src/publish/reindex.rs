//! `index`: the pages of a store prefix rewritten from what is stored there — the store's
//! listing read (`index::scan`), the pages rendered (the plan), then written, the root last.

use std::fmt::Write as _;

use serde::Serialize;

use crate::index::render::{Page, render_pages};
use crate::index::scan::{self, Scan};
use crate::store::Storage;
use crate::ui::human_bytes;

/// The pages `index` writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IndexPlan {
    pub url: String,
    pub projects: usize,
    pub files: usize,
    pub pages: Vec<PlannedPage>,
    #[serde(skip)]
    bodies: Vec<Page>,
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
    let bodies = render_pages(&scan.projects);
    IndexPlan {
        url: url.to_string(),
        projects: scan.projects.len(),
        files: scan.file_count(),
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

/// Writes the planned pages, each atomically, the root last.
pub fn apply(store: &dyn Storage, plan: &IndexPlan) -> Result<(), crate::index::Error> {
    Ok(scan::write_pages(store, &plan.bodies)?)
}
