//! Inspecting the world before the plan is made: which checkouts exist, what git says about
//! each selected one (commit, branch, digest; checked against the lock), the files its
//! recipe reads, and for a project left out of the build the wheel of it the build cache
//! holds. The plan is then a pure function of the settings and this snapshot.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::Error;
use super::report::BuildReport;
use super::select::{self, LeftOutBy, Role};
use super::source::{self, SourceState};
use crate::build::input::BuildSettings;
use crate::lock::LockedProject;
use crate::recipes::{Artifact, CheckoutFiles, Recipes, SdkFacts};
use crate::stack::Project;

/// What the plan is computed from, besides the settings.
#[derive(Clone, Debug)]
pub struct Snapshot<'a> {
    pub sdk: SdkFacts,
    pub projects: Vec<ProjectSnapshot<'a>>,
    /// By recipe name: the checkouts of the source components, built or left out.
    pub sources: BTreeMap<String, PathBuf>,
    /// Things a reader of the plan should know (placeholders, ignored inputs).
    pub notes: Vec<String>,
    /// The tools the build's PATH resolves, by name ([`super::tools::resolve`]): what the
    /// build cache keys instead of the PATH.
    pub tools: BTreeMap<String, String>,
}

/// One selected project, as found on disk.
#[derive(Clone, Debug)]
pub struct ProjectSnapshot<'a> {
    pub project: &'a Project,
    pub dir: PathBuf,
    pub locked: Option<&'a LockedProject>,
    pub source: SourceState,
    pub files: CheckoutFiles,
    /// Left out of the build: the wheel used instead of building it.
    pub reuse: Option<Reused>,
}

/// A project left out of the build, used as it is: the wheel an earlier build left in the
/// output directory, as that build's report records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reused {
    /// Why it is left out (`--skip triton`, `--no-build-triton`, `not named by --build vision`).
    pub flag: String,
    pub wheel: String,
    pub sha256: String,
    pub size: u64,
    /// The wheel's version: what the others pin.
    pub version: String,
    /// Its cache key when it was built: what the projects built against it fingerprint.
    pub fingerprint: Option<String>,
}

/// The selected checkouts, and notes on projects left out with no wheel to use.
pub struct Checkouts<'a> {
    pub projects: Vec<ProjectSnapshot<'a>>,
    pub sources: BTreeMap<String, PathBuf>,
    pub notes: Vec<String>,
}

/// Selects the projects and reads what their recipes need. A project left out is used as
/// it is: its wheel from the build cache (the previous report's, with its recorded bytes).
/// Without one, a project left out by `--skip` stays out (nothing pins it, as in the
/// reference) and one `--build` did not name is built after all; a note says which.
pub fn checkouts<'a>(
    settings: &'a BuildSettings,
    recipes: &Recipes,
) -> Result<Checkouts<'a>, Error> {
    let lock = settings.lock.as_ref().map(|l| &l.lock);
    let selected = select::select(&settings.stack, &settings.selection, lock, Path::is_dir)?;
    let previous = BuildReport::read(&settings.output_dir);
    let mut projects = Vec::new();
    let mut sources = BTreeMap::new();
    let mut notes = Vec::new();
    for selected in selected {
        let recipe = recipes.of(&settings.stack, selected.project)?;
        let name = &selected.project.name;
        if let Some(why) = recipe.not_built_on(settings.platform) {
            if let Some(asked) = settings.selection.build.get(name).filter(|b| b.value) {
                return Err(crate::recipes::Error::Recipe {
                    project: name.clone(),
                    message: format!(
                        "asked for by {}, but not built for {}: {why}; drop {}",
                        asked.source, settings.platform, asked.source
                    ),
                }
                .into());
            }
            notes.push(format!(
                "{name} is left out of this {} build: {why}",
                settings.platform
            ));
            continue;
        }
        if recipe.artifact() == Artifact::Source {
            sources
                .entry(recipe.name().to_string())
                .or_insert_with(|| selected.dir.clone());
            // Left out, a source component is its checkout as it is: nothing of it is built.
            if let Role::LeftOut { flag, .. } = &selected.role {
                notes.push(format!(
                    "{name} is left out ({flag}): its checkout is used as it is (it makes no wheel)"
                ));
                continue;
            }
        }
        let reuse = match &selected.role {
            Role::Build => None,
            Role::LeftOut { flag, by } => {
                let found = previous
                    .as_ref()
                    .and_then(|p| p.wheel_of(&settings.output_dir, name));
                match (found, by) {
                    (Some((entry, sha256, size)), _) => Some(Reused {
                        flag: flag.clone(),
                        wheel: entry.wheel.clone().unwrap_or_default(),
                        sha256,
                        size,
                        version: entry.version.clone(),
                        fingerprint: entry.fingerprint.clone(),
                    }),
                    (None, LeftOutBy::Skip) => {
                        notes.push(format!(
                            "{name} is left out ({flag}) and {} holds no wheel of it from an earlier build: nothing in this build pins it",
                            settings.output_dir.display()
                        ));
                        continue;
                    }
                    (None, LeftOutBy::NotNamed) => {
                        notes.push(format!(
                            "{name} is {flag}, but {} holds no wheel of it from an earlier build: it is built",
                            settings.output_dir.display()
                        ));
                        None
                    }
                }
            }
        };
        // A project left out is what is there: its wheel of an earlier build is used, so its
        // checkout is not held to the lock (a local commit since does not stop the build).
        let locked = selected.locked.filter(|_| reuse.is_none());
        let source = source::inspect(name, &selected.dir, locked, recipe.generates())?;
        let files = CheckoutFiles {
            files: read_files(name, &selected.dir, recipe.reads())?,
            ignored: source::ignored(&selected.dir, recipe.generates()),
        };
        projects.push(ProjectSnapshot {
            project: selected.project,
            dir: selected.dir,
            locked: selected.locked,
            source,
            files,
            reuse,
        });
    }
    Ok(Checkouts {
        projects,
        sources,
        notes,
    })
}

/// Each file's text, `None` when it does not exist; read as the checkout's content (a
/// symbolic link is refused, never followed).
fn read_files(
    project: &str,
    dir: &Path,
    paths: &[&str],
) -> Result<BTreeMap<String, Option<String>>, Error> {
    let mut files = BTreeMap::new();
    for relative in paths {
        let text = crate::input::read_tree_text(dir, relative, crate::input::REPOSITORY_FILE)
            .map_err(|error| Error::Content {
                project: project.to_string(),
                error,
            })?;
        files.insert(relative.to_string(), text);
    }
    Ok(files)
}
