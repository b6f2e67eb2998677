//! The effects of publishing: reading the destination before the plan, moving the objects
//! and writing the index pages after it.

use std::collections::HashMap;

use super::plan::check_ordering;
use super::{Error, Publication, PublishPlan, SetObject, Source};
use crate::context::Context;
use crate::index::content_type_of;
use crate::index::ordering::{self, Release};
use crate::index::render::{Page, render_pages};
use crate::index::scan::{self, Scan, layout};
use crate::store::lease::Lease;
use crate::store::transfer;
use crate::store::{
    Body, ObjectInfo, Outcome, Storage, StoreError, StoreSettings, StoreUrl, copy_immutable,
    put_immutable,
};
use crate::ui::human_bytes;
use crate::wheel::filename::distribution_identity;

/// What the destination holds, as far as a plan needs to know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Destination {
    pub url: String,
    /// The releases it already publishes (for the ordering lint and the page list).
    pub published: Vec<Release>,
    /// The SHA-256 at each key of the set; `None`: absent.
    pub state: HashMap<String, Option<String>>,
    /// The key of every distribution it holds, by what installers take it for
    /// (`wheel::filename::distribution_identity`).
    pub identities: HashMap<String, String>,
}

/// Reads what the destination publishes, then the SHA-256 at every key of the set (in
/// parallel). A destination nested in or holding another index, and versions that would
/// sort below published ones, are refused from the listing alone, before any object is read.
pub fn inspect(
    ctx: &Context,
    url: &StoreUrl,
    dest: &dyn Storage,
    publication: &Publication,
    settings: &StoreSettings,
) -> Result<Destination, Error> {
    let listing = dest.list().map_err(Error::List)?;
    super::nesting::check(publication.verb, url, &listing, settings)?;
    let (placed, _) = layout(&listing);
    let identities = placed
        .iter()
        .filter_map(|p| {
            let file = p.object.key.rsplit('/').next()?;
            Some((distribution_identity(file)?, p.object.key.clone()))
        })
        .collect();
    let published = ordering::published(&placed);
    check_ordering(publication, &dest.url(), &published)?;
    let objects: Vec<&SetObject> = publication.items.iter().map(|i| &i.object).collect();
    let found = transfer::run_all(
        ctx,
        "check",
        &objects,
        settings.jobs,
        settings.attempts,
        |_| 0,
        |object| {
            let sha = match dest.head(&object.key)? {
                None => None,
                Some(ObjectInfo {
                    sha256: Some(sha), ..
                }) => Some(sha),
                Some(info) => Some(dest.content_sha256(&info.key)?),
            };
            Ok((object.key.clone(), sha))
        },
    )
    .map_err(|error| Error::Check {
        dest: dest.url(),
        error,
    })?;
    Ok(Destination {
        url: dest.url(),
        published,
        state: found.into_iter().collect(),
        identities,
    })
}

/// A finished publish: the plan it executed and the index it wrote.
pub struct Done {
    pub plan: PublishPlan,
    pub index: Scan,
    pub pages: Vec<Page>,
}

impl Done {
    /// The line a finished publish ends with: `{what} ({detail; }N objects uploaded, size;
    /// M already there) {route}; wrote P index pages listing F files`.
    pub fn summary(&self, what: &str, detail: Option<&str>, route: &str) -> String {
        let Done { plan, index, pages } = self;
        let detail = detail.map(|d| format!("{d}; ")).unwrap_or_default();
        format!(
            "{what} ({detail}{} objects {}, {}; {} already there) {route}; wrote {} index pages listing {} files",
            plan.transfers.len(),
            plan.transfer.done(),
            human_bytes(plan.bytes()),
            plan.present.len(),
            pages.len(),
            index.file_count()
        )
    }
}

/// Moves every planned object (in parallel, with retries, verified), then rewrites the
/// destination's index pages, if the destination's lease is still this run's. `source` is
/// where `Source::Copy` objects come from.
pub fn apply(
    ctx: &Context,
    source: Option<&dyn Storage>,
    dest: &dyn Storage,
    lease: &mut Lease<'_>,
    plan: PublishPlan,
    settings: &StoreSettings,
) -> Result<Done, Error> {
    crate::fault::point("transfer");
    let outcomes = transfer::run_all(
        ctx,
        plan.verb,
        &plan.transfers,
        settings.jobs,
        settings.attempts,
        |t| t.object.size,
        |item| {
            let object = &item.object;
            let content_type = content_type_of(&object.key);
            match &item.source {
                Source::Copy { from_key } => {
                    let source = source.ok_or_else(|| StoreError::Backend {
                        store: dest.url(),
                        op: "copy",
                        key: object.key.clone(),
                        message: "no source store".into(),
                        transient: false,
                    })?;
                    let info = ObjectInfo {
                        key: from_key.clone(),
                        size: object.size,
                        sha256: Some(object.sha256.clone()),
                    };
                    copy_immutable(
                        dest,
                        source,
                        from_key,
                        &object.key,
                        &info,
                        &object.sha256,
                        content_type,
                    )
                }
                Source::File { path } => put_immutable(
                    dest,
                    &object.key,
                    Body::File(path),
                    &object.sha256,
                    content_type,
                ),
                Source::Bytes { bytes } => put_immutable(
                    dest,
                    &object.key,
                    Body::Bytes(bytes),
                    &object.sha256,
                    content_type,
                ),
            }
        },
    )
    .map_err(Error::Transfer)?;
    let raced = outcomes
        .iter()
        .filter(|o| **o == Outcome::Unchanged)
        .count();
    if raced > 0 {
        tracing::info!(
            "{raced} objects were already there with the same bytes (written by a concurrent run)"
        );
    }
    // The SHA-256s just written spare re-reading those objects for the index.
    let known: HashMap<String, String> = plan
        .transfers
        .iter()
        .map(|t| &t.object)
        .chain(&plan.present)
        .map(|o| (o.key.clone(), o.sha256.clone()))
        .collect();
    let index = scan::scan(ctx, dest, &known, settings.jobs).map_err(Error::Index)?;
    let pages = render_pages(&index.projects, &index.depends_on);
    lease.confirm()?;
    scan::write_sidecars(ctx, dest, &index.regenerate).map_err(|e| Error::Index(e.into()))?;
    scan::write_pages(dest, &pages).map_err(|e| Error::Index(e.into()))?;
    Ok(Done { plan, index, pages })
}
