//! The effectful edge of the index: reading what a store holds into a listing, and writing
//! the rendered pages back (project pages first, the root last).

use std::collections::{BTreeMap, HashMap};

use super::Error;
use super::readable::{TAIL, check_zip_tail};
use super::render::{DependsOn, Page};
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
    /// The stored `.metadata` sidecar of each wheel whose sidecar is its METADATA, by the
    /// wheel's key (a stored sidecar that differs is not one: see `regenerate`).
    pub sidecars: BTreeMap<String, ObjectInfo>,
    /// Sidecars a writer of this index must store before its pages: derived from their wheels
    /// where the stored one is missing or differs (pip would resolve from it).
    pub regenerate: Vec<Regenerated>,
    /// Objects that look like distributions but are not where the layout puts them.
    pub skipped: Vec<String>,
    /// What each project's distributions require, from their sidecars: the page order.
    pub depends_on: DependsOn,
}

impl Scan {
    pub fn file_count(&self) -> usize {
        self.projects.iter().map(|p| p.files.len()).sum()
    }
}

/// A sidecar to (re)write: its key, the wheel's METADATA, and whether a different one was
/// stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regenerated {
    pub key: String,
    pub bytes: Vec<u8>,
    pub replaces: bool,
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
/// (files it just wrote and verified), by key; everything else comes from the store
/// (recorded checksums, else the bytes), and every other `.whl` is checked to be a readable
/// zip: a prefix holding one that is not is refused, with each such file named.
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
    let unreadable: Vec<(String, String)> = placed
        .iter()
        .zip(&described)
        .filter_map(|(item, d)| {
            d.unreadable
                .clone()
                .map(|why| (item.object.key.clone(), why))
        })
        .collect();
    if !unreadable.is_empty() {
        return Err(Error::NotWheels {
            store: store.url(),
            files: unreadable,
        });
    }
    let mut projects: BTreeMap<String, Vec<DistFile>> = BTreeMap::new();
    let mut sidecars = BTreeMap::new();
    let mut regenerate = Vec::new();
    let mut depends_on = DependsOn::new();
    for (item, described) in placed.iter().zip(described) {
        depends_on
            .entry(item.project.clone())
            .or_default()
            .extend(described.requires);
        projects
            .entry(item.project.clone())
            .or_default()
            .push(described.file);
        match (described.metadata, &item.sidecar) {
            (
                Some(Metadata {
                    stored_matches: true,
                    ..
                }),
                Some(sidecar),
            ) => {
                sidecars.insert(item.object.key.clone(), sidecar.clone());
            }
            (Some(Metadata { bytes, .. }), stored) => regenerate.push(Regenerated {
                key: crate::index::metadata_key(&item.object.key),
                bytes,
                replaces: stored.is_some(),
            }),
            (None, _) => {}
        }
    }
    Ok(Scan {
        projects: projects
            .into_iter()
            .map(|(name, files)| ProjectListing { name, files })
            .collect(),
        sidecars,
        regenerate,
        skipped,
        depends_on,
    })
}

/// One distribution as the index lists it, what it requires, its METADATA (a wheel), and
/// why it is unreadable, if it is.
struct Described {
    file: DistFile,
    requires: Vec<String>,
    metadata: Option<Metadata>,
    unreadable: Option<String>,
}

/// A wheel's METADATA, derived from the wheel, and whether the stored sidecar holds it.
struct Metadata {
    bytes: Vec<u8>,
    stored_matches: bool,
}

fn describe(
    store: &dyn Storage,
    pending: &Placed,
    known: &HashMap<String, String>,
) -> Result<Described, StoreError> {
    let key = &pending.object.key;
    let size = pending.object.size;
    let filename = key.rsplit('/').next().unwrap_or(key).to_string();
    let is_wheel = key.ends_with(".whl");
    let (sha256, unreadable) = match known.get(key) {
        Some(sha) => (sha.clone(), None),
        None => {
            let unreadable = match is_wheel {
                true => check_zip_tail(&store.get_tail(key, size, TAIL)?, size)
                    .err()
                    .map(String::from),
                false => None,
            };
            let sha = match store.head(key)?.and_then(|info| info.sha256) {
                Some(sha) => sha,
                None => store.content_sha256(key)?,
            };
            (sha, unreadable)
        }
    };
    let unlisted = |unreadable| Described {
        file: DistFile {
            filename: filename.clone(),
            sha256: sha256.clone(),
            size,
            requires_python: None,
            metadata_sha256: None,
        },
        requires: Vec::new(),
        metadata: None,
        unreadable,
    };
    if !is_wheel || unreadable.is_some() {
        // Only a wheel has a METADATA to derive a sidecar from.
        return Ok(unlisted(unreadable));
    }
    // The stored sidecar's bytes, hashed: a checksum recorded beside an object is whatever
    // its writer said, and a sidecar is small.
    let stored_sha = |sidecar: &ObjectInfo| -> Result<String, StoreError> {
        match known.get(&sidecar.key) {
            Some(sha) => Ok(sha.clone()),
            None => store.content_sha256(&sidecar.key),
        }
    };
    // A wheel and sidecar this run wrote were checked against each other before they were
    // (the sidecar was derived from the very bytes uploaded or copied): the stored sidecar
    // is read. Any other wheel's METADATA is derived from the wheel itself.
    let bytes = match &pending.sidecar {
        Some(sidecar) if known.contains_key(key) && known.contains_key(&sidecar.key) => {
            store.get(&sidecar.key)?
        }
        _ => match super::sidecar::derive(store, key, size) {
            Ok(bytes) => bytes,
            Err(why) => return Ok(unlisted(Some(why))),
        },
    };
    let metadata_sha256 = crate::fsutil::sha256_hex(&bytes);
    let stored_matches = match &pending.sidecar {
        Some(sidecar) => stored_sha(sidecar)? == metadata_sha256,
        None => false,
    };
    let text = String::from_utf8_lossy(&bytes);
    Ok(Described {
        file: DistFile {
            filename,
            sha256,
            size,
            requires_python: crate::wheel::metadata::requires_python(&text),
            metadata_sha256: Some(metadata_sha256),
        },
        requires: crate::wheel::metadata::required_projects(&text),
        metadata: Some(Metadata {
            bytes,
            stored_matches,
        }),
        unreadable: None,
    })
}

/// Stores the sidecars the scan derived (missing, or replacing one that differed from its
/// wheel's METADATA, with a warning naming it). Writers of an index call this before the
/// pages that list the sidecars' hashes.
pub fn write_sidecars(
    ctx: &Context,
    store: &dyn Storage,
    regenerate: &[Regenerated],
) -> Result<(), StoreError> {
    for sidecar in regenerate {
        if sidecar.replaces {
            ctx.ui.warn(format!(
                "{}: the stored sidecar is not the METADATA of its wheel (edited in the store?); \
                 replaced by the wheel's",
                sidecar.key
            ));
        }
        transfer::with_retries(3, || {
            store
                .put(
                    &sidecar.key,
                    crate::store::Body::Bytes(&sidecar.bytes),
                    &crate::store::PutOptions {
                        content_type: Some(crate::index::content_type_of(&sidecar.key)),
                        sha256: Some(crate::fsutil::sha256_hex(&sidecar.bytes)),
                        ..Default::default()
                    },
                )
                .map(drop)
        })?;
    }
    Ok(())
}

/// Writes the pages in the order given (each page atomically; see `render_pages` for why
/// that order). The `page` test hook (`crate::fault`) can stop the process before any one.
pub fn write_pages(store: &dyn Storage, pages: &[Page]) -> Result<(), StoreError> {
    for page in pages {
        crate::fault::point("page");
        transfer::with_retries(3, || {
            put_page(store, &page.key, &page.body, page.content_type)
        })?;
    }
    Ok(())
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

    const TORCH_METADATA: &[u8] = b"Metadata-Version: 2.1\nName: torch\nRequires-Python: >=3.10\nRequires-Dist: triton==3.5.0\nRequires-Dist: numpy; extra == 'np'\n\nbody";

    #[test]
    fn scans_the_layout_and_derives_sidecars_from_the_wheels() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LocalDir::new(dir.path().to_path_buf());
        let put = |key: &str, bytes: &[u8]| {
            store
                .put(key, Body::Bytes(bytes), &PutOptions::default())
                .expect("put");
        };
        let wheel = tiny_wheel("torch-2.9.0+rocm7.0.0", TORCH_METADATA);
        put(
            "torch/torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl",
            &wheel,
        );
        // A sidecar edited in the store: never listed, derived again from the wheel.
        put(
            "torch/torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl.metadata",
            b"Metadata-Version: 2.1\nName: torch\nRequires-Dist: evil-pkg>=0\n",
        );
        let vision = tiny_wheel("torchvision-0.24.0", b"Name: torchvision\n");
        put(
            "torchvision/torchvision-0.24.0-cp311-cp311-linux_x86_64.whl",
            &vision,
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
                        sha256: crate::fsutil::sha256_hex(&wheel),
                        size: wheel.len() as u64,
                        requires_python: Some(">=3.10".into()),
                        metadata_sha256: Some(crate::fsutil::sha256_hex(TORCH_METADATA)),
                    }],
                },
                ProjectListing {
                    name: "torchvision".into(),
                    files: vec![DistFile {
                        filename: "torchvision-0.24.0-cp311-cp311-linux_x86_64.whl".into(),
                        sha256: "f".repeat(64),
                        size: vision.len() as u64,
                        requires_python: None,
                        metadata_sha256: Some(crate::fsutil::sha256_hex(b"Name: torchvision\n")),
                    }],
                },
            ]
        );
        assert!(scan.sidecars.is_empty(), "no stored sidecar is its wheel's");
        assert_eq!(
            scan.regenerate,
            vec![
                Regenerated {
                    key: "torch/torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl.metadata".into(),
                    bytes: TORCH_METADATA.to_vec(),
                    replaces: true,
                },
                Regenerated {
                    key: "torchvision/torchvision-0.24.0-cp311-cp311-linux_x86_64.whl.metadata"
                        .into(),
                    bytes: b"Name: torchvision\n".to_vec(),
                    replaces: false,
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

        assert_eq!(
            scan.depends_on["torch"],
            ["numpy".to_string(), "triton".to_string()].into()
        );
        let pages = crate::index::render::render_pages(&scan.projects, &scan.depends_on);
        write_pages(&store, &pages).expect("write");
        assert_eq!(pages.last().map(|p| p.key.as_str()), Some("index.json"));
        let page = fs_err::read_to_string(dir.path().join("torch/index.html")).expect("page");
        assert!(
            page.contains("data-requires-python=\"&gt;=3.10\""),
            "{page}"
        );
        assert!(dir.path().join("index.json").exists());
    }

    /// A wheel holding one module and `<stem>.dist-info/METADATA`.
    fn tiny_wheel(stem: &str, metadata: &[u8]) -> Vec<u8> {
        use std::io::Write as _;
        let mut bytes = Vec::new();
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(&mut bytes));
        let options = zip::write::SimpleFileOptions::default();
        writer
            .start_file("torch/__init__.py", options)
            .expect("start");
        writer.write_all(b"").expect("write");
        writer
            .start_file(format!("{stem}.dist-info/METADATA"), options)
            .expect("start");
        writer.write_all(metadata).expect("write");
        writer.finish().expect("finish");
        bytes
    }

    #[test]
    fn a_whl_that_is_not_a_zip_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LocalDir::new(dir.path().to_path_buf());
        for (key, bytes) in [
            (
                "torch/torch-2.9.0-py3-none-any.whl",
                tiny_wheel("torch-2.9.0", b"Name: torch\n"),
            ),
            (
                "torch/torch-9.9.9-py3-none-any.whl",
                b"<html>403 Forbidden</html>".to_vec(),
            ),
        ] {
            let written = store.put(key, Body::Bytes(&bytes), &PutOptions::default());
            assert!(written.is_ok(), "{key}");
        }
        let error = scan(&test_context(), &store, &HashMap::new(), 2).expect_err("refused");
        assert_eq!(
            error.to_string().replace(&store.url(), "[STORE]"),
            "[STORE] holds 1 .whl file that is not a readable wheel, and an index never lists one:\n  \
             - torch/torch-9.9.9-py3-none-any.whl: no zip end-of-central-directory record (not a zip archive, or cut short)\n\
             remove or replace it, then publish again (or run `rockbuild index`); no index page was changed"
        );
        // A wheel and sidecar this run wrote and checked against each other are not read
        // again (only the sidecar, for what the pages show).
        store
            .put(
                "torch/torch-9.9.9-py3-none-any.whl.metadata",
                Body::Bytes(b"Name: torch\n"),
                &PutOptions::default(),
            )
            .expect("put");
        let known = HashMap::from([
            (
                "torch/torch-9.9.9-py3-none-any.whl".to_string(),
                "0".repeat(64),
            ),
            (
                "torch/torch-9.9.9-py3-none-any.whl.metadata".to_string(),
                crate::fsutil::sha256_hex(b"Name: torch\n"),
            ),
        ]);
        assert!(scan(&test_context(), &store, &known, 2).is_ok());
    }
}
