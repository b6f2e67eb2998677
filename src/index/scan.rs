//! The effectful edge of the index: reading what a store holds into a listing, and writing
//! the rendered pages back (project pages first, the root last).

use std::collections::{BTreeMap, HashMap};

use super::Error;
use super::render::{Page, render_pages};
use super::{
    DistFile, ProjectListing, dist_name_and_version, is_distribution, metadata_key, normalize_name,
};
use crate::context::Context;
use crate::store::transfer;
use crate::store::{ObjectInfo, Storage, StoreError, put_page};

/// What a store holds, as an index sees it.
#[derive(Debug, Default)]
pub struct Scan {
    pub projects: Vec<ProjectListing>,
    /// The `.metadata` sidecar of each distribution that has one, by the distribution's key.
    pub sidecars: BTreeMap<String, ObjectInfo>,
    /// Objects that look like distributions but are not where the layout puts them.
    pub skipped: Vec<String>,
}

impl Scan {
    pub fn file_count(&self) -> usize {
        self.projects.iter().map(|p| p.files.len()).sum()
    }
}

/// A distribution found where the layout puts it: `<normalized-name>/<file>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub project: String,
    pub object: ObjectInfo,
    pub sidecar: Option<ObjectInfo>,
}

/// Sorts a store listing into the distributions of this index (and what is misplaced),
/// without reading any object.
pub fn layout(objects: &[ObjectInfo]) -> (Vec<Placed>, Vec<String>) {
    let by_key: HashMap<&str, &ObjectInfo> = objects.iter().map(|o| (o.key.as_str(), o)).collect();
    let mut placed = Vec::new();
    let mut skipped = Vec::new();
    for object in objects {
        let Some((dir, file)) = object.key.split_once('/') else {
            if is_distribution(&object.key) {
                skipped.push(format!("{}: not inside a project directory", object.key));
            }
            continue;
        };
        // Deeper keys belong to nested indexes (e.g. one per family); they are not ours.
        if file.contains('/') || !is_distribution(file) {
            continue;
        }
        let Some((name, _version)) = dist_name_and_version(file) else {
            skipped.push(format!("{}: not a wheel or sdist file name", object.key));
            continue;
        };
        let project = normalize_name(&name);
        if dir != project {
            skipped.push(format!(
                "{}: belongs in '{project}/', not '{dir}/'",
                object.key
            ));
            continue;
        }
        let sidecar = by_key
            .get(metadata_key(&object.key).as_str())
            .map(|o| (*o).clone());
        placed.push(Placed {
            project,
            object: object.clone(),
            sidecar,
        });
    }
    (placed, skipped)
}

/// Reads the listing of an index prefix. `known` holds SHA-256s the caller already has
/// (files it just wrote), by key; everything else comes from the store (recorded checksums,
/// else the bytes).
pub fn scan(
    ctx: &Context,
    store: &dyn Storage,
    known: &HashMap<String, String>,
    jobs: usize,
) -> Result<Scan, Error> {
    let objects = store.list()?;
    let (placed, skipped) = layout(&objects);
    let described = transfer::run_all(
        ctx,
        "index",
        &placed,
        jobs,
        3,
        |p| p.sidecar.as_ref().map_or(0, |s| s.size),
        |p| describe(store, p, known),
    )
    .map_err(Error::Listing)?;
    let mut projects: BTreeMap<String, Vec<DistFile>> = BTreeMap::new();
    let mut sidecars = BTreeMap::new();
    for (item, file) in placed.iter().zip(described) {
        projects.entry(item.project.clone()).or_default().push(file);
        if let Some(sidecar) = &item.sidecar {
            sidecars.insert(item.object.key.clone(), sidecar.clone());
        }
    }
    Ok(Scan {
        projects: projects
            .into_iter()
            .map(|(name, files)| ProjectListing { name, files })
            .collect(),
        sidecars,
        skipped,
    })
}

fn describe(
    store: &dyn Storage,
    pending: &Placed,
    known: &HashMap<String, String>,
) -> Result<DistFile, StoreError> {
    let key = &pending.object.key;
    let sha256 = match known.get(key) {
        Some(sha) => sha.clone(),
        None => match store.head(key)?.and_then(|info| info.sha256) {
            Some(sha) => sha,
            None => store.content_sha256(key)?,
        },
    };
    let (requires_python, metadata_sha256) = match &pending.sidecar {
        Some(sidecar) => {
            let bytes = store.get(&sidecar.key)?;
            let text = String::from_utf8_lossy(&bytes);
            (
                crate::wheel::metadata::requires_python(&text),
                Some(crate::fsutil::sha256_hex(&bytes)),
            )
        }
        None => (None, None),
    };
    let filename = key.rsplit('/').next().unwrap_or(key).to_string();
    Ok(DistFile {
        filename,
        sha256,
        size: pending.object.size,
        requires_python,
        metadata_sha256,
    })
}

/// Writes the pages in order (each page atomically; the root last).
pub fn write_pages(store: &dyn Storage, pages: &[Page]) -> Result<(), StoreError> {
    for page in pages {
        transfer::with_retries(3, || {
            put_page(store, &page.key, &page.body, page.content_type)
        })?;
    }
    Ok(())
}

/// Scans a store and rewrites its index pages; returns the listing it wrote.
pub fn reindex(
    ctx: &Context,
    store: &dyn Storage,
    known: &HashMap<String, String>,
    jobs: usize,
) -> Result<(Scan, Vec<Page>), Error> {
    let scan = scan(ctx, store, known, jobs)?;
    let pages = render_pages(&scan.projects);
    write_pages(store, &pages)?;
    Ok((scan, pages))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Body, LocalDir, PutOptions};

    fn test_context() -> Context {
        let env = crate::env_vars::Environment::default();
        Context {
            ui: crate::ui::Ui::new(&env, true, crate::ui::LogFormat::Text),
            runner: crate::exec::Runner::new(env),
            cwd: std::env::temp_dir(),
        }
    }

    #[test]
    fn scans_the_layout_and_reads_sidecars() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LocalDir::new(dir.path().to_path_buf());
        let put = |key: &str, bytes: &[u8]| {
            store
                .put(key, Body::Bytes(bytes), &PutOptions::default())
                .expect("put");
        };
        put(
            "torch/torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl",
            b"torch wheel",
        );
        put(
            "torch/torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl.metadata",
            b"Metadata-Version: 2.1\nName: torch\nRequires-Python: >=3.10\n\nbody",
        );
        put(
            "torchvision/torchvision-0.24.0-cp311-cp311-linux_x86_64.whl",
            b"vision",
        );
        put(
            "torch/torchvision-0.24.0-cp311-cp311-linux_x86_64.whl",
            b"misplaced",
        );
        put("stray-1.0-py3-none-any.whl", b"top level");
        put(
            "gfx94X-dcgpu/torch/torch-2.9.0-cp311-cp311-linux_x86_64.whl",
            b"nested index",
        );
        put("torch/index.html", b"old page");

        let known = HashMap::from([(
            "torchvision/torchvision-0.24.0-cp311-cp311-linux_x86_64.whl".to_string(),
            "f".repeat(64),
        )]);
        let ctx = test_context();
        let scan = scan(&ctx, &store, &known, 2).expect("scan");
        assert_eq!(
            scan.projects,
            vec![
                ProjectListing {
                    name: "torch".into(),
                    files: vec![DistFile {
                        filename: "torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl".into(),
                        sha256: crate::fsutil::sha256_hex(b"torch wheel"),
                        size: 11,
                        requires_python: Some(">=3.10".into()),
                        metadata_sha256: Some(crate::fsutil::sha256_hex(
                            b"Metadata-Version: 2.1\nName: torch\nRequires-Python: >=3.10\n\nbody"
                        )),
                    }],
                },
                ProjectListing {
                    name: "torchvision".into(),
                    files: vec![DistFile {
                        filename: "torchvision-0.24.0-cp311-cp311-linux_x86_64.whl".into(),
                        sha256: "f".repeat(64),
                        size: 6,
                        requires_python: None,
                        metadata_sha256: None,
                    }],
                },
            ]
        );
        assert_eq!(
            scan.skipped,
            vec![
                "stray-1.0-py3-none-any.whl: not inside a project directory".to_string(),
                "torch/torchvision-0.24.0-cp311-cp311-linux_x86_64.whl: belongs in 'torchvision/', not 'torch/'".to_string(),
            ]
        );

        let (_, pages) = reindex(&ctx, &store, &known, 2).expect("reindex");
        assert_eq!(pages.last().map(|p| p.key.as_str()), Some("index.json"));
        let page = fs_err::read_to_string(dir.path().join("torch/index.html")).expect("page");
        assert!(
            page.contains("data-requires-python=\"&gt;=3.10\""),
            "{page}"
        );
        assert!(dir.path().join("index.json").exists());
    }
}
