//! The companions of a set (see `crate::wheel::companion`): the ROCm SDK wheels it carries.
//!
//! * [`check`] judges the companions a set holds: each is of the SDK release its products pin
//!   (`rocm[libraries]==V`), and each is byte for byte (SHA-256) the file of the same name on
//!   the SDK's index — its provenance. Nothing else: no tag policy, targets or pins of
//!   rockbuild's own.
//! * [`bring`] completes a set with the companions its products pin: the closure of their
//!   requirements into the SDK, resolved on the SDK's index as pip would (each requirement's
//!   extras, every environment its markers name), every file of each chosen version
//!   downloaded and checked against the index's hash. A part of the SDK published only as a
//!   source distribution (TheRock's `rocm` meta package) decides its requirements when it is
//!   built on the installing machine; then every part of that SDK release the index
//!   publishes is carried, so whatever it decides is there.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::Path;

use pep440_rs::Version;

use crate::context::Context;
use crate::index::client::{IndexClient, RemoteFile};
use crate::index::dist_name_and_version;
use crate::redact::redact_url;
use crate::ui::plural;
use crate::wheel::companion::{Role, applies_with, is_sdk_distribution, pinned_sdk_versions};
use crate::wheel::filename::normalize_name;
use crate::wheel::metadata::Requirement;
use crate::wheel::problem::Problem;
use crate::wheel::verify::{WheelReport, read_companion};

/// Why a set's companions could not be brought from the SDK's index.
#[derive(Debug, thiserror::Error)]
pub enum CompanionError {
    #[error(
        "'{requirement}' is not on the ROCm SDK's index: {index} has {listed}, so the set could \
         not be installed from where it is published\n\
         hint: give the index that publishes this SDK release (--index-url)"
    )]
    NotOnIndex {
        requirement: String,
        index: String,
        listed: String,
    },
    #[error(
        "{url}: the index lists sha256 {expected} for {file}, but the download has {actual}; \
         an SDK wheel is carried only as its index publishes it"
    )]
    HashMismatch {
        file: String,
        url: String,
        expected: String,
        actual: String,
    },
    #[error("{url}: {detail}")]
    Unreadable { url: String, detail: String },
    #[error("reading the ROCm SDK's index: {0}")]
    Index(#[from] crate::index::Error),
}

/// Problems of the companions a set holds, added to their reports: each must be of the SDK
/// release the products pin and the same bytes as the file the SDK's `index` publishes (none
/// given: a problem, since provenance cannot be shown). `scratch` holds downloads of files
/// whose index gives no hash.
pub(super) fn check(reports: &mut [WheelReport], index: Option<&IndexClient>, scratch: &Path) {
    let pinned = pinned_sdk_versions(
        reports
            .iter()
            .filter(|r| r.role == Role::Product)
            .filter_map(|r| r.metadata.as_ref())
            .flat_map(|m| &m.requires_dist),
    );
    let pinned_text: Vec<String> = pinned.iter().map(ToString::to_string).collect();
    let mut pages = IndexPages::new(index);
    for report in reports
        .iter_mut()
        .filter(|r| r.role == Role::Companion && r.ok())
    {
        let (Some(name), Some(version)) = (report.name.clone(), report.parsed_version()) else {
            continue;
        };
        if !pinned.contains(&version) {
            report.problems.push(Problem::CompanionVersion {
                name,
                version: version.to_string(),
                pinned: pinned_text.clone(),
            });
            continue;
        }
        let Some(sha256) = report.sha256.clone() else {
            continue;
        };
        match pages.provenance(&name, &report.file, &sha256, scratch) {
            Ok(source) => report.source = Some(source),
            Err(problem) => report.problems.push(problem),
        }
    }
}

/// The SDK's index, each project page read once: what provenance is checked against.
pub struct IndexPages<'a> {
    index: Option<&'a IndexClient>,
    read: HashMap<String, Result<Vec<RemoteFile>, String>>,
}

impl<'a> IndexPages<'a> {
    pub fn new(index: Option<&'a IndexClient>) -> Self {
        IndexPages {
            index,
            read: HashMap::new(),
        }
    }

    fn files(&mut self, name: &str) -> Result<&[RemoteFile], String> {
        let Some(index) = self.index else {
            return Err("no index was given".into());
        };
        let entry = self.read.entry(normalize_name(name)).or_insert_with(|| {
            index
                .project(name)
                .map(Option::unwrap_or_default)
                .map_err(|e| e.to_string())
        });
        entry.as_ref().map(Vec::as_slice).map_err(Clone::clone)
    }

    /// Whether `file` with `sha256` is the file of that name `name`'s index page lists: its
    /// URL (masked) when it is, the problem when it is not. `scratch` holds the download of a
    /// file whose page gives no hash.
    pub fn provenance(
        &mut self,
        name: &str,
        file: &str,
        sha256: &str,
        scratch: &Path,
    ) -> Result<String, Problem> {
        let index = self.index.map(IndexClient::display_url);
        let problem = |detail: String| Problem::Provenance {
            index: index.clone(),
            detail,
        };
        let files = self
            .files(name)
            .map_err(|error| match &index {
                None => problem("no index was given to check it against".into()),
                Some(_) => problem(format!("the index could not be read: {error}")),
            })?
            .to_vec();
        let Some(listed) = files.iter().find(|f| f.filename == file) else {
            return Err(problem(format!(
                "its page for {} lists no {file} ({})",
                normalize_name(name),
                listing(&files)
            )));
        };
        let published = match &listed.sha256 {
            Some(published) => published.clone(),
            // The page gives no hash: the published file itself is the reference.
            None => {
                let client = self.index.ok_or_else(|| problem("no index".into()))?;
                let path = scratch.join(format!(".provenance-{file}"));
                let (published, _) = client
                    .download(listed, &path)
                    .map_err(|e| problem(format!("downloading its {file}: {e}")))?;
                let _ = fs_err::remove_file(&path);
                published
            }
        };
        if published != sha256 {
            return Err(problem(format!(
                "its SHA-256 is {sha256}, the index publishes {file} with {published}"
            )));
        }
        Ok(redact_url(&listed.url))
    }
}

/// The versions an index page offers, for messages: `only 1.0, 1.1`.
fn listing(files: &[RemoteFile]) -> String {
    let versions: BTreeSet<Version> = files
        .iter()
        .filter_map(|f| dist_name_and_version(&f.filename).map(|(_, v)| v))
        .collect();
    if versions.is_empty() {
        return "no files".into();
    }
    let shown: Vec<String> = versions.iter().map(ToString::to_string).collect();
    format!("only {}", shown.join(", "))
}

/// The requirements of the products of a set on the ROCm SDK, whatever their markers (a
/// product may be installed with any of its extras, in any environment).
pub fn product_requirements(reports: &[WheelReport]) -> Vec<Requirement> {
    reports
        .iter()
        .filter(|r| r.role == Role::Product)
        .filter_map(|r| r.metadata.as_ref())
        .flat_map(|m| m.requires_dist.iter())
        .filter(|r| is_sdk_distribution(&r.name) && r.url.is_none())
        .cloned()
        .collect()
}

/// Brings the companions `seeds` (their requirements on the ROCm SDK) reach and `have` (the
/// companions the set holds) lacks from the SDK's `index` into `dir`: each one downloaded,
/// checked against the index's hash and read. Returns their reports (role companion, source
/// the file's URL), in the order they were reached.
pub fn bring(
    ctx: &Context,
    seeds: Vec<Requirement>,
    have: &[WheelReport],
    index: &IndexClient,
    dir: &Path,
) -> Result<Vec<WheelReport>, CompanionError> {
    let mut closure = Closure {
        ctx,
        index,
        dir,
        pages: HashMap::new(),
        held: have
            .iter()
            .filter(|r| r.role == Role::Companion)
            .cloned()
            .collect(),
        fetched: Vec::new(),
        expanded: BTreeSet::new(),
    };
    let mut queue: VecDeque<Requirement> = seeds
        .into_iter()
        .filter(|r| is_sdk_distribution(&r.name) && r.url.is_none())
        .collect();
    let mut visited: BTreeSet<(String, Version, Vec<String>)> = BTreeSet::new();
    while let Some(requirement) = queue.pop_front() {
        let (version, requires) = closure.resolve(&requirement)?;
        let mut extras = requirement.extras.clone();
        extras.sort();
        if !visited.insert((requirement.normalized_name(), version, extras.clone())) {
            continue;
        }
        let extras: BTreeSet<String> = extras.into_iter().collect();
        queue.extend(
            requires
                .into_iter()
                .filter(|r| is_sdk_distribution(&r.name) && r.url.is_none())
                .filter(|r| applies_with(r, &extras)),
        );
    }
    if !closure.fetched.is_empty() {
        let bytes: u64 = closure.fetched.iter().map(|r| r.size).sum();
        ctx.ui.status(format!(
            "brought {} ROCm SDK file{} ({}) the set pins from {}",
            closure.fetched.len(),
            plural(closure.fetched.len()),
            crate::ui::human_bytes(bytes),
            index.display_url()
        ));
    }
    Ok(closure.fetched)
}

struct Closure<'a> {
    ctx: &'a Context,
    index: &'a IndexClient,
    dir: &'a Path,
    pages: HashMap<String, Vec<RemoteFile>>,
    /// Companions of the set, then those fetched.
    held: Vec<WheelReport>,
    fetched: Vec<WheelReport>,
    /// SDK versions whose whole release was fetched (a source distribution was reached).
    expanded: BTreeSet<Version>,
}

impl Closure<'_> {
    fn page(&mut self, name: &str) -> Result<&[RemoteFile], CompanionError> {
        let name = normalize_name(name);
        if !self.pages.contains_key(&name) {
            let files = self.index.project(&name)?.unwrap_or_default();
            self.pages.insert(name.clone(), files);
        }
        Ok(self.pages.get(&name).map(Vec::as_slice).unwrap_or_default())
    }

    /// The version `requirement` resolves to (held, else the highest the index offers) and
    /// the requirements of that version's distributions.
    fn resolve(
        &mut self,
        requirement: &Requirement,
    ) -> Result<(Version, Vec<Requirement>), CompanionError> {
        let name = requirement.normalized_name();
        let held = |reports: &[WheelReport]| {
            reports
                .iter()
                .filter(|r| r.name.as_deref() == Some(name.as_str()))
                .filter_map(|r| r.parsed_version())
                .filter(|v| requirement.specifiers.contains(v))
                .max()
        };
        let version = match held(&self.held) {
            Some(version) => version,
            None => self.fetch_version(requirement)?,
        };
        let of_version: Vec<&WheelReport> = self
            .held
            .iter()
            .filter(|r| r.name.as_deref() == Some(name.as_str()))
            .filter(|r| r.parsed_version().as_ref() == Some(&version))
            .collect();
        let mut requires = Vec::new();
        for report in &of_version {
            if let Some(metadata) = &report.metadata {
                requires.extend(metadata.requires_dist.iter().cloned());
            }
        }
        // Only source distributions: their requirements are decided at install time.
        if of_version.iter().all(|r| r.metadata.is_none()) {
            self.fetch_release(&version)?;
        }
        Ok((version, requires))
    }

    /// Fetches every file of the highest version the index offers for `requirement`.
    fn fetch_version(&mut self, requirement: &Requirement) -> Result<Version, CompanionError> {
        let name = requirement.normalized_name();
        let exact = requirement.pinned_version().is_some();
        let index = self.index.display_url();
        let files = self.page(&name)?.to_vec();
        let offered = |file: &&RemoteFile| exact || !file.yanked;
        let version = files
            .iter()
            .filter(offered)
            .filter_map(|f| dist_name_and_version(&f.filename).map(|(_, v)| v))
            .filter(|v| requirement.specifiers.contains(v))
            .max()
            .ok_or_else(|| CompanionError::NotOnIndex {
                requirement: requirement.raw.clone(),
                index: format!("{index}{name}/"),
                listed: listing(&files),
            })?;
        let chosen: Vec<RemoteFile> = files
            .iter()
            .filter(offered)
            .filter(|f| dist_name_and_version(&f.filename).is_some_and(|(_, v)| v == version))
            .cloned()
            .collect();
        for file in chosen {
            self.fetch(&file)?;
        }
        Ok(version)
    }

    /// Every part of SDK release `version` the index publishes (its root page's SDK
    /// projects, each one's files of that version).
    fn fetch_release(&mut self, version: &Version) -> Result<(), CompanionError> {
        if !self.expanded.insert(version.clone()) {
            return Ok(());
        }
        for project in self.index.projects()? {
            if !is_sdk_distribution(&project) {
                continue;
            }
            let files: Vec<RemoteFile> = self
                .page(&project)?
                .iter()
                .filter(|f| dist_name_and_version(&f.filename).is_some_and(|(_, v)| v == *version))
                .cloned()
                .collect();
            for file in files {
                self.fetch(&file)?;
            }
        }
        Ok(())
    }

    /// Downloads one file (unless the set holds it already), checks it against the index's
    /// hash and reads it.
    fn fetch(&mut self, file: &RemoteFile) -> Result<(), CompanionError> {
        if self.held.iter().any(|r| r.file == file.filename) {
            return Ok(());
        }
        let url = redact_url(&file.url);
        // A file name is a name, never a path (the index is outside input).
        if file.filename.contains(['/', '\\']) || file.filename.starts_with('.') {
            return Err(CompanionError::Unreadable {
                url,
                detail: format!("'{}' is not a file name", file.filename),
            });
        }
        let path = self.dir.join(&file.filename);
        let task = self.ctx.ui.task("bring");
        task.phase(file.filename.clone());
        let (sha256, size) = self.index.download(file, &path)?;
        task.finish(format!(
            "{} ({}) in {:.1}s",
            file.filename,
            crate::ui::human_bytes(size),
            task.elapsed().as_secs_f64()
        ));
        if let Some(expected) = &file.sha256
            && *expected != sha256
        {
            let _ = fs_err::remove_file(&path);
            return Err(CompanionError::HashMismatch {
                file: file.filename.clone(),
                url,
                expected: expected.clone(),
                actual: sha256,
            });
        }
        let mut report = read_companion(&path);
        if let Some(problem) = report.problems.first() {
            return Err(CompanionError::Unreadable {
                url,
                detail: problem.to_string(),
            });
        }
        report.source = Some(url);
        self.held.push(report.clone());
        self.fetched.push(report);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::Write;
    use std::path::PathBuf;

    use super::*;

    /// A PEP 503 index on disk (`file://`), in TheRock's layout: one page per project linking
    /// to the files beside them, with `#sha256=` fragments.
    struct DiskIndex {
        dir: tempfile::TempDir,
        projects: BTreeMap<String, Vec<(String, String)>>,
    }

    impl DiskIndex {
        fn new() -> Self {
            DiskIndex {
                dir: tempfile::tempdir().expect("tempdir"),
                projects: BTreeMap::new(),
            }
        }

        /// A wheel holding only METADATA (what the closure reads), listed under its project.
        fn wheel(&mut self, name: &str, version: &str, requires: &[&str], extras: &[&str]) {
            let mut metadata = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
            for extra in extras {
                metadata.push_str(&format!("Provides-Extra: {extra}\n"));
            }
            for requirement in requires {
                metadata.push_str(&format!("Requires-Dist: {requirement}\n"));
            }
            let dist = name.replace('-', "_");
            let mut cursor = std::io::Cursor::new(Vec::new());
            let mut zip = zip::ZipWriter::new(&mut cursor);
            zip.start_file(
                format!("{dist}-{version}.dist-info/METADATA"),
                zip::write::SimpleFileOptions::default(),
            )
            .expect("start");
            zip.write_all(metadata.as_bytes()).expect("write");
            zip.finish().expect("finish");
            let file = format!("{dist}-{version}-py3-none-linux_x86_64.whl");
            self.add(name, &file, &cursor.into_inner());
        }

        fn add(&mut self, name: &str, file: &str, bytes: &[u8]) {
            fs_err::create_dir_all(self.dir.path().join("files")).expect("mkdir");
            fs_err::write(self.dir.path().join("files").join(file), bytes).expect("write");
            self.projects
                .entry(normalize_name(name))
                .or_default()
                .push((file.to_string(), crate::fsutil::sha256_hex(bytes)));
        }

        /// Writes the pages; `url()` is the root.
        fn publish(&self) {
            let simple = self.dir.path().join("simple");
            let mut root = String::from("<html><body>\n");
            for (project, files) in &self.projects {
                root.push_str(&format!("<a href=\"{project}/\">{project}</a>\n"));
                let links: String = files
                    .iter()
                    .map(|(file, sha)| {
                        format!("<a href=\"../../files/{file}#sha256={sha}\">{file}</a>\n")
                    })
                    .collect();
                fs_err::create_dir_all(simple.join(project)).expect("mkdir");
                fs_err::write(simple.join(project).join("index.html"), links).expect("page");
            }
            fs_err::write(simple.join("index.html"), root).expect("root");
        }

        fn url(&self) -> String {
            format!("file://{}/simple/", self.dir.path().display())
        }
    }

    fn ctx() -> Context {
        Context::with_environment(
            [("NO_COLOR".to_string(), "1".to_string())],
            PathBuf::from("/"),
        )
    }

    fn requirement(text: &str) -> Requirement {
        Requirement::parse(text).expect("requirement")
    }

    /// TheRock's SDK release 1.0 (`_dist_info.py`: the meta package requires the runtime,
    /// extras add the libraries, the development package and device files), an older
    /// runtime, and a project of another namespace.
    fn sdk() -> DiskIndex {
        let mut index = DiskIndex::new();
        index.wheel(
            "rocm",
            "1.0",
            &[
                "rocm-sdk-core==1.0",
                "rocm-sdk-libraries==1.0; extra == \"libraries\"",
                "rocm-sdk-devel==1.0; extra == \"devel\"",
                "rocm-sdk-device-gfx906==1.0; extra == \"device-gfx906\" or extra == \"device-all\"",
                "numpy",
            ],
            &["libraries", "devel", "device-gfx906", "device-all"],
        );
        index.wheel("rocm-sdk-core", "1.0", &[], &[]);
        index.wheel("rocm-sdk-core", "0.9", &[], &[]);
        index.wheel("rocm-sdk-libraries", "1.0", &["rocm-sdk-core==1.0"], &[]);
        index.wheel("rocm-sdk-devel", "1.0", &["rocm-sdk-core==1.0"], &[]);
        index.wheel(
            "rocm-sdk-device-gfx906",
            "1.0",
            &["rocm-sdk-libraries==1.0"],
            &[],
        );
        index.wheel("numpy", "2.0", &[], &[]);
        index
    }

    fn files(reports: &[WheelReport]) -> Vec<String> {
        let mut files: Vec<String> = reports.iter().map(|r| r.file.clone()).collect();
        files.sort();
        files
    }

    #[test]
    fn the_closure_brings_what_the_pins_and_their_extras_reach() {
        let index = sdk();
        index.publish();
        let client = IndexClient::new(&index.url()).expect("client");
        let out = tempfile::tempdir().expect("tempdir");
        let brought = bring(
            &ctx(),
            vec![requirement("rocm[libraries]==1.0"), requirement("filelock")],
            &[],
            &client,
            out.path(),
        )
        .expect("bring");
        assert_eq!(
            files(&brought),
            [
                "rocm-1.0-py3-none-linux_x86_64.whl",
                "rocm_sdk_core-1.0-py3-none-linux_x86_64.whl",
                "rocm_sdk_libraries-1.0-py3-none-linux_x86_64.whl",
            ]
        );
        assert!(brought.iter().all(|r| {
            r.role == Role::Companion
                && r.source
                    .as_deref()
                    .is_some_and(|s| s.starts_with("file://"))
        }));

        // What the set already holds is not brought again; another extra reaches further.
        let held = brought
            .iter()
            .filter(|r| r.file.starts_with("rocm_sdk_core"))
            .cloned()
            .collect::<Vec<_>>();
        let out = tempfile::tempdir().expect("tempdir");
        let more = bring(
            &ctx(),
            vec![requirement("rocm[devel,device-all]==1.0")],
            &held,
            &client,
            out.path(),
        )
        .expect("bring");
        assert_eq!(
            files(&more),
            [
                "rocm-1.0-py3-none-linux_x86_64.whl",
                "rocm_sdk_devel-1.0-py3-none-linux_x86_64.whl",
                "rocm_sdk_device_gfx906-1.0-py3-none-linux_x86_64.whl",
                "rocm_sdk_libraries-1.0-py3-none-linux_x86_64.whl",
            ]
        );
    }

    /// TheRock publishes `rocm` as a source distribution whose requirements are decided when
    /// it is built on the installing machine: every part of that SDK release is carried.
    #[test]
    fn a_source_distribution_carries_its_whole_sdk_release() {
        let mut index = sdk();
        index.projects.remove("rocm");
        index.add(
            "rocm",
            "rocm-1.0.tar.gz",
            b"not read: an sdist is carried as it is",
        );
        index.publish();
        let client = IndexClient::new(&index.url()).expect("client");
        let out = tempfile::tempdir().expect("tempdir");
        let brought = bring(
            &ctx(),
            vec![requirement("rocm[libraries]==1.0")],
            &[],
            &client,
            out.path(),
        )
        .expect("bring");
        assert_eq!(
            files(&brought),
            [
                "rocm-1.0.tar.gz",
                "rocm_sdk_core-1.0-py3-none-linux_x86_64.whl",
                "rocm_sdk_devel-1.0-py3-none-linux_x86_64.whl",
                "rocm_sdk_device_gfx906-1.0-py3-none-linux_x86_64.whl",
                "rocm_sdk_libraries-1.0-py3-none-linux_x86_64.whl",
            ]
        );
        let sdist = brought.iter().find(|r| r.file == "rocm-1.0.tar.gz");
        assert!(sdist.is_some_and(|r| r.metadata.is_none() && r.version.as_deref() == Some("1.0")));
    }

    #[test]
    fn what_the_index_lacks_or_serves_differently_is_refused() {
        let mut index = sdk();
        index.publish();
        let client = IndexClient::new(&index.url()).expect("client");
        let out = tempfile::tempdir().expect("tempdir");
        let missing = bring(
            &ctx(),
            vec![requirement("rocm-sdk-core==2.0")],
            &[],
            &client,
            out.path(),
        )
        .expect_err("missing");
        let text = missing.to_string();
        assert!(
            text.starts_with("'rocm-sdk-core==2.0' is not on the ROCm SDK's index: file://")
                && text.contains("/rocm-sdk-core/ has only 0.9, 1.0"),
            "{text}"
        );
        // The file changed after the page was written: its bytes are not the listed ones.
        index.wheel("rocm-sdk-devel", "1.0", &["something-else"], &[]);
        let out = tempfile::tempdir().expect("tempdir");
        let changed = bring(
            &ctx(),
            vec![requirement("rocm-sdk-devel==1.0")],
            &[],
            &client,
            out.path(),
        )
        .expect_err("changed");
        assert!(
            matches!(&changed, CompanionError::HashMismatch { file, .. }
                if file == "rocm_sdk_devel-1.0-py3-none-linux_x86_64.whl"),
            "{changed}"
        );
        assert!(
            !out.path()
                .join("rocm_sdk_devel-1.0-py3-none-linux_x86_64.whl")
                .exists(),
            "nothing half-checked is left behind"
        );
    }
}
