//! Inspecting the world before the plan is made: which checkouts exist, what git says about
//! each selected one (commit, branch, digest; checked against the lock), and the files its
//! recipe reads. The plan is then a pure function of the settings and this snapshot.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::Error;
use super::select;
use super::source::{self, SourceState};
use crate::build::input::BuildSettings;
use crate::lock::LockedProject;
use crate::recipes::{CheckoutFiles, Recipes, SdkFacts};
use crate::stack::Project;

/// What the plan is computed from, besides the settings.
#[derive(Clone, Debug)]
pub struct Snapshot<'a> {
    pub sdk: SdkFacts,
    pub projects: Vec<ProjectSnapshot<'a>>,
    /// Things a reader of the plan should know (placeholders, ignored inputs).
    pub notes: Vec<String>,
}

/// One selected project, as found on disk.
#[derive(Clone, Debug)]
pub struct ProjectSnapshot<'a> {
    pub project: &'a Project,
    pub dir: PathBuf,
    pub locked: Option<&'a LockedProject>,
    pub source: SourceState,
    pub files: CheckoutFiles,
}

/// Selects the projects and reads what their recipes need. A project the reference does not
/// build for the plan's platform is left out with a note in `notes`, or refused when asked
/// for by name.
pub fn checkouts<'a>(
    settings: &'a BuildSettings,
    recipes: &Recipes,
    notes: &mut Vec<String>,
) -> Result<Vec<ProjectSnapshot<'a>>, Error> {
    let lock = settings.lock.as_ref().map(|l| &l.lock);
    let selected = select::select(&settings.stack, &settings.selection, lock, Path::is_dir)?;
    let mut projects = Vec::new();
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
        let source = source::inspect(name, &selected.dir, selected.locked, recipe.generates())?;
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
        });
    }
    Ok(projects)
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
