//! One index per prefix, never one inside another: writing a prefix that lies inside another
//! index (`--to staging/torch`, where `staging` is an index and `torch` one of its projects)
//! would overwrite that index's pages, and writing a prefix that holds another index below
//! its projects would mix the two. Both are refused before anything is written.
//!
//! An index is recognised by its PEP 691 root or project page (`index.json` with
//! `meta.api-version` and `projects` or `files`): any directory of a website may hold an
//! `index.html`, only an index holds that.

use super::Error;
use crate::index::{HTML_PAGE, JSON_PAGE};
use crate::store::{self, ObjectInfo, StoreSettings, StoreUrl};

/// Refuses `url` when an enclosing prefix is an index, or when `listing` (what `url` holds)
/// has index pages deeper than its own projects' pages.
pub fn check(
    verb: &'static str,
    url: &StoreUrl,
    listing: &[ObjectInfo],
    settings: &StoreSettings,
) -> Result<(), Error> {
    if let Some(inner) = nested_index(listing) {
        return Err(Error::Nested {
            verb,
            dest: url.to_string(),
            other: join(url, &inner),
            relation: "holds another index at",
        });
    }
    let (root, ancestors) = enclosing(url);
    if ancestors.is_empty() {
        return Ok(());
    }
    let root_store = store::open(&root, settings).map_err(Error::List)?;
    for ancestor in ancestors {
        let key = if ancestor.is_empty() {
            JSON_PAGE.to_string()
        } else {
            format!("{ancestor}/{JSON_PAGE}")
        };
        let bytes = match root_store.get(&key) {
            Ok(bytes) => bytes,
            Err(store::StoreError::NotFound { .. }) => continue,
            // A prefix we may not read, or a directory we may not enter, is not an index we
            // could overwrite either.
            Err(store::StoreError::Backend { .. } | store::StoreError::BadKey { .. }) => continue,
            Err(error) => return Err(Error::List(error)),
        };
        if is_index_page(&bytes) {
            return Err(Error::Nested {
                verb,
                dest: url.to_string(),
                other: join(&root, &ancestor),
                relation: "lies inside the index at",
            });
        }
    }
    Ok(())
}

/// The first directory (relative to the prefix) holding a nested index: a page two or more
/// levels down (`<dir>/<project>/index.json`) means `<dir>` is an index of its own.
fn nested_index(listing: &[ObjectInfo]) -> Option<String> {
    listing.iter().find_map(|object| {
        let (dir, page) = object.key.rsplit_once('/')?;
        if page != JSON_PAGE && page != HTML_PAGE {
            return None;
        }
        let (outer, _project) = dir.rsplit_once('/')?;
        Some(outer.to_string())
    })
}

/// The top of `url`'s namespace (the bucket, or `/`) and every enclosing prefix of `url`
/// relative to it, nearest first.
fn enclosing(url: &StoreUrl) -> (StoreUrl, Vec<String>) {
    let (root, path) = match url {
        StoreUrl::S3 { bucket, prefix } => (
            StoreUrl::S3 {
                bucket: bucket.clone(),
                prefix: String::new(),
            },
            prefix.clone(),
        ),
        StoreUrl::Local(path) => (
            StoreUrl::Local("/".into()),
            path.to_string_lossy().trim_start_matches('/').to_string(),
        ),
    };
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let ancestors = (0..segments.len())
        .rev()
        .map(|n| segments[..n].join("/"))
        .collect();
    (root, ancestors)
}

fn join(url: &StoreUrl, relative: &str) -> String {
    match relative {
        "" => url.to_string(),
        _ => match url {
            StoreUrl::Local(path) => path.join(relative).display().to_string(),
            StoreUrl::S3 { bucket, prefix } if prefix.is_empty() => {
                format!("s3://{bucket}/{relative}")
            }
            StoreUrl::S3 { bucket, prefix } => format!("s3://{bucket}/{prefix}/{relative}"),
        },
    }
}

/// A PEP 691 page: `meta.api-version` plus `projects` (a root) or `files` (a project).
fn is_index_page(bytes: &[u8]) -> bool {
    let Ok(page) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return false;
    };
    page.pointer("/meta/api-version").is_some()
        && (page.get("projects").is_some() || page.get("files").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(key: &str) -> ObjectInfo {
        ObjectInfo {
            key: key.into(),
            size: 1,
            sha256: None,
        }
    }

    #[test]
    fn pages_below_the_projects_are_a_nested_index() {
        let own = [
            object("index.json"),
            object("torch/index.html"),
            object("torch/torch-1-py3-none-any.whl"),
        ];
        assert_eq!(nested_index(&own), None);
        let family = [
            object("index.json"),
            object("gfx94X-dcgpu/index.json"),
            object("gfx94X-dcgpu/torch/index.html"),
        ];
        assert_eq!(nested_index(&family).as_deref(), Some("gfx94X-dcgpu"));
    }

    #[test]
    fn enclosing_prefixes_nearest_first() {
        let (root, ancestors) = enclosing(&StoreUrl::S3 {
            bucket: "b".into(),
            prefix: "v2/staging/torch".into(),
        });
        assert_eq!(root.to_string(), "s3://b");
        assert_eq!(ancestors, ["v2/staging", "v2", ""]);
        let (root, ancestors) = enclosing(&StoreUrl::Local("/srv/www".into()));
        assert_eq!(root, StoreUrl::Local("/".into()));
        assert_eq!(ancestors, ["srv", ""]);
        assert_eq!(
            join(&StoreUrl::Local("/".into()), "srv"),
            "/srv".to_string()
        );
    }

    #[test]
    fn only_simple_api_pages_count() {
        assert!(is_index_page(
            br#"{"meta":{"api-version":"1.1"},"projects":[]}"#
        ));
        assert!(is_index_page(
            br#"{"meta":{"api-version":"1.0"},"name":"torch","files":[]}"#
        ));
        assert!(!is_index_page(br#"{"name":"a website's index.json"}"#));
        assert!(!is_index_page(b"<html>"));
    }
}
