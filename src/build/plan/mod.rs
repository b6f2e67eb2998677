//! The build plan: for every project its version, wheel name, dependencies, environment and
//! steps, computed before anything runs by a pure function of the settings and the inspected
//! world ([`assemble`]). `plan` and `build --dry-run` print it ([`render`]); the executor
//! walks it; the build cache fingerprints it ([`fingerprint`]).

mod fingerprint;
pub mod render;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::compilers::CompilerCache;
use super::error::Error;
use super::inspect::{ProjectSnapshot, Reused, Snapshot};
use super::mode::{self, BuildMode, ModeChoice, SplitPlan};
use super::source::SourceState;
use super::targets::{self, TargetChoice};
use crate::binary::kpack::archive::Compression;
use crate::build::input::BuildSettings;
use crate::exec::Cmd;
use crate::multiarch::split::SplitSpec;
use crate::platform::Platform;
use crate::recipes::{
    self, Hint, Pin, RecipeInput, Recipes, SdkFacts, Shared, VersionInput, Versions, WheelVersion,
};
use crate::sdk::Venv;
use crate::sdk::install::Installer;
use crate::sourced::Sourced;
use crate::version::{self, ReleaseType};

pub use crate::recipes::step::{Action, CopyIn, EnvDiff, FileIn, Step, VenvUse};

/// Why a project waits for another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// It compiles against the other's wheel, installed into the venv.
    BuildsAgainst,
    /// Its wheel requires exactly the other's version: a pin to a wheel that was never built
    /// would be a pin to nothing.
    Pins,
    /// One of the two changes the venv, so they take turns in it, in the reference's order
    /// (the plan's venv rule: [`Plan::venv_turns`]).
    VenvTurn,
}

impl Reason {
    pub fn describe(self) -> &'static str {
        match self {
            Reason::BuildsAgainst => "builds against its installed wheel",
            Reason::Pins => "pins its wheel",
            Reason::VenvTurn => "takes turns with it in the venv",
        }
    }
}

/// A project another one waits for, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Dependency {
    pub project: String,
    pub reasons: Vec<Reason>,
}

impl Dependency {
    /// Whether this project needs the other's wheel: when the other fails (or is skipped),
    /// this one is skipped. A venv turn alone only orders the two.
    pub fn needs_wheel(&self) -> bool {
        self.reasons
            .iter()
            .any(|r| matches!(r, Reason::BuildsAgainst | Reason::Pins))
    }
}

/// One project's part of the plan.
#[derive(Clone, Debug)]
pub struct ProjectPlan {
    pub name: String,
    /// Distribution name of the wheel (`torch`, `torchaudio`, ...); `None`: a source
    /// component, which makes no wheel.
    pub dist: Option<String>,
    /// The recipe that builds it.
    pub recipe: &'static str,
    /// Among projects ready at once, lower starts first ([`recipes::Recipe::start_priority`]).
    pub priority: u8,
    pub dir: PathBuf,
    /// The version the wheel carries (normalized PEP 440): given to the build, predicted, or
    /// decided by the build.
    pub version: WheelVersion,
    /// `torch-2.10.0a0+rocm7.10.0-*.whl` (`triton-*-*.whl` when the build decides);
    /// `None` for a source component.
    pub wheel_glob: Option<String>,
    /// Projects that run before this one starts, each with its reasons.
    pub after: Vec<Dependency>,
    /// What the project does to the venv (the largest use of its steps).
    pub venv: VenvUse,
    pub env: EnvDiff,
    pub steps: Vec<Step>,
    pub log: PathBuf,
    pub source: SourceState,
    /// Cache key over every input; `None` when the sources cannot be fingerprinted (no git).
    /// For a project left out, the key its reused wheel was built with.
    pub fingerprint: Option<String>,
    /// Left out of this build: the earlier build's wheel used as it is (no step runs but
    /// installing it where the venv lacks it).
    pub reuse: Option<Reused>,
    /// The recipe's known failures, and what to suspect when the version comes out wrong.
    pub hints: &'static [Hint],
    pub version_hint: &'static str,
}

/// The whole build.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The platform the build is for.
    pub platform: Platform,
    pub root: Sourced<PathBuf>,
    pub output_dir: PathBuf,
    pub logs_dir: PathBuf,
    pub venv: Venv,
    pub installer: Installer,
    pub sdk: SdkFacts,
    /// The SDK install commands (`--install-rocm`), shown by `plan`.
    pub sdk_install: Vec<Cmd>,
    pub targets: TargetChoice,
    pub mode: ModeChoice,
    /// Multi-arch: the fat wheels split after the build, in stack order.
    pub splits: Vec<SplitPlan>,
    /// Multi-arch: where the fat wheels of the split are kept (the build cache's copies).
    pub fat_dir: PathBuf,
    pub release_type: ReleaseType,
    pub suffix: String,
    pub build_number: u32,
    pub compiler_cache: CompilerCache,
    pub jobs: usize,
    pub clean: bool,
    pub projects: Vec<ProjectPlan>,
    /// The venv's turns, in order: a project that changes it alone, or readers together.
    pub venv_turns: Vec<Vec<String>>,
    /// Things a reader of the plan should know (placeholders, ignored inputs).
    pub notes: Vec<String>,
}

/// The PATH every step of this build gets ([`recipes::build_path`]).
pub fn build_path(settings: &BuildSettings, sdk: &SdkFacts) -> String {
    recipes::build_path(
        settings.platform,
        sdk,
        &settings.sdk.venv,
        &settings.base_env,
    )
}

/// Computes the plan from the settings and the inspected world. Reads nothing, runs nothing.
pub fn assemble(
    settings: &BuildSettings,
    recipes: &Recipes,
    world: &Snapshot<'_>,
) -> Result<Plan, Error> {
    let sdk = &world.sdk;
    let targets = targets::choose(&settings.families, &settings.targets, sdk)?;
    let suffix = match settings
        .version_suffix
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        Some(given) => given.to_string(),
        None => version::rocm_suffix(&sdk.info.version)?,
    };
    let output_dir = settings.output_dir.clone();
    let logs_dir = output_dir.join("logs");

    // Versions first: a project's pins name the versions of others (torch pins triton's,
    // audio and vision pin torch's): a version given to the build as it is, any other as the
    // placeholder the executor fills in from the built wheel.
    let mut versions: Vec<Versions> = Vec::new();
    for snapshot in &world.projects {
        let recipe = recipes.of(&settings.stack, snapshot.project)?;
        let mut version = recipe.version(&VersionInput {
            project: &snapshot.project.name,
            dir: &snapshot.dir,
            files: &snapshot.files,
            source: &snapshot.source,
            suffix: &suffix,
            release_type: settings.release_type,
            build_number: settings.build_number,
        })?;
        // A project left out is its reused wheel: what pins it pins that wheel's version,
        // known now; a version its build decides stays a pin on the built wheel, so the keys
        // of what pins it are those of the build that made the wheel.
        if let Some(reused) = &snapshot.reuse {
            let known = reused.version.clone();
            let from = format!("the wheel of an earlier build, {}", reused.wheel);
            version.wheel = match version.wheel {
                WheelVersion::Given { .. } => WheelVersion::Given { version: known },
                _ => WheelVersion::Predicted {
                    version: known,
                    from,
                },
            };
        }
        versions.push(version);
    }
    // By recipe: the project of this build it names, and its wheel (none for a source
    // component). With two projects of one recipe, the first in the stack is the one others
    // build against.
    let mut provided: BTreeMap<&str, (&str, Option<Pin>)> = BTreeMap::new();
    for (snapshot, version) in world.projects.iter().zip(&versions) {
        provided
            .entry(snapshot.project.recipe.as_str())
            .or_insert_with(|| {
                (
                    snapshot.project.name.as_str(),
                    snapshot.project.wheel.as_ref().map(|dist| Pin {
                        dist: dist.clone(),
                        version: version.wheel.pinned(&snapshot.project.name),
                    }),
                )
            });
    }

    let compiler_env = settings.compiler_cache.env(settings.platform);
    let shared = Shared {
        platform: settings.platform,
        sdk,
        venv: &settings.sdk.venv,
        installer: settings.sdk.installer,
        cache_dir: &settings.sdk.cache_dir,
        output_dir: &output_dir,
        logs_dir: &logs_dir,
        targets: &targets.targets,
        families: &settings.families,
        suffix: &suffix,
        build_number: settings.build_number,
        clean: settings.clean,
        compiler_env: &compiler_env,
        base_env: &settings.base_env,
    };
    let mut notes = world.notes.clone();
    let mut projects: Vec<ProjectPlan> = Vec::new();
    for (snapshot, version) in world.projects.iter().zip(&versions) {
        let (project, project_notes) = project_plan(
            settings, recipes, &shared, &provided, world, snapshot, version,
        )?;
        notes.extend(
            project_notes
                .into_iter()
                .chain(version_note(&project.version))
                .map(|note| format!("{}: {note}", project.name)),
        );
        projects.push(project);
    }
    let venv_turns = add_venv_turns(&mut projects)?;
    for (index, snapshot) in world.projects.iter().enumerate() {
        // The cache key covers what a project compiles against, not what it only pins or
        // takes turns with (a new triton source of the same version does not change torch),
        // unless the pinned version is the built wheel's: then the pinned project's key
        // stands for the version its build makes.
        let deps: Vec<Option<String>> = projects[index]
            .after
            .iter()
            .filter_map(|d| {
                let other = projects[..index].iter().find(|p| p.name == d.project);
                let built_pin = d.reasons.contains(&Reason::Pins)
                    && other.is_some_and(|p| !matches!(p.version, WheelVersion::Given { .. }));
                (d.reasons.contains(&Reason::BuildsAgainst) || built_pin)
                    .then(|| other.and_then(|p| p.fingerprint.clone()))
            })
            .collect();
        projects[index].fingerprint = match &snapshot.reuse {
            Some(reused) => reused.fingerprint.clone(),
            None => fingerprint::fingerprint(
                &projects[index],
                snapshot.locked,
                sdk,
                &targets,
                &world.tools,
                &deps,
            ),
        };
    }
    let splits = match settings.mode.mode {
        BuildMode::PerFamily => Vec::new(),
        BuildMode::MultiArch => world
            .projects
            .iter()
            .zip(&projects)
            .map(|(snapshot, plan)| {
                let recipe = recipes.of(&settings.stack, snapshot.project)?;
                let wheel = plan.dist.as_deref().zip(plan.wheel_glob.as_ref());
                Ok(recipe
                    .device_split()
                    .zip(wheel)
                    .map(|(overlay, (dist, glob))| SplitPlan {
                        project: plan.name.clone(),
                        wheel_glob: glob.clone(),
                        spec: SplitSpec {
                            device_prefix: mode::device_prefix(dist),
                            overlay_root: format!("{overlay}/"),
                            device_requires: mode::device_requires(&sdk.info.version),
                            compression: Compression::Zstd,
                        },
                    }))
            })
            .filter_map(Result::transpose)
            .collect::<Result<_, Error>>()?,
    };

    if !settings.platform.is_host() {
        notes.push(format!(
            "a plan for {} made on {}: {} (and any {}) stands for the build machine's variable",
            settings.platform,
            Platform::host(),
            settings.platform.inherited(crate::env_vars::PATH),
            settings.platform.inherited("NAME")
        ));
    }
    if let Some(note) = long_windows_root(settings.platform, &settings.selection.root.value) {
        notes.push(note);
    }
    let fat_dir = output_dir.join(super::split::FAT_DIR);
    Ok(Plan {
        platform: settings.platform,
        root: settings.selection.root.clone(),
        output_dir,
        logs_dir,
        venv: settings.sdk.venv.clone(),
        installer: settings.sdk.installer,
        sdk: sdk.clone(),
        sdk_install: settings
            .sdk
            .install
            .as_ref()
            .map(|s| vec![s.install_cmd(&sdk.info.version)])
            .unwrap_or_default(),
        targets,
        mode: settings.mode.clone(),
        splits,
        fat_dir,
        release_type: settings.release_type,
        suffix,
        build_number: settings.build_number,
        compiler_cache: settings.compiler_cache.clone(),
        jobs: settings.jobs,
        clean: settings.clean,
        projects,
        venv_turns,
        notes,
    })
}

/// One project's plan, without its fingerprint (which needs the others'), and its recipe's
/// notes.
fn project_plan(
    settings: &BuildSettings,
    recipes: &Recipes,
    shared: &Shared<'_>,
    provided: &BTreeMap<&str, (&str, Option<Pin>)>,
    world: &Snapshot<'_>,
    snapshot: &ProjectSnapshot<'_>,
    version: &Versions,
) -> Result<(ProjectPlan, Vec<String>), Error> {
    let project = snapshot.project;
    let recipe = recipes.of(&settings.stack, project)?;
    let pinned: BTreeMap<&'static str, Pin> = recipe
        .pins()
        .iter()
        .filter_map(|name| {
            provided
                .get(name)
                .and_then(|(_, pin)| pin.clone())
                .map(|pin| (*name, pin))
        })
        .collect();
    // Building against a project of this build, or pinning its wheel, means waiting for it;
    // without one in the build, the wheel already in the venv is used (or pinned as given).
    let mut after: Vec<Dependency> = Vec::new();
    for (recipes, reason) in [
        (recipe.builds_against(), Reason::BuildsAgainst),
        (recipe.pins(), Reason::Pins),
    ] {
        for (other, _) in recipes.iter().filter_map(|name| provided.get(name)) {
            if *other != project.name {
                depend(&mut after, other, reason);
            }
        }
    }
    let steps = recipe.steps(
        &RecipeInput {
            project,
            dir: &snapshot.dir,
            files: &snapshot.files,
            build_version: version.build.as_deref(),
            pinned: &pinned,
            options: settings.options.of(&project.name),
            sources: &world.sources,
            shared,
        },
        source_date_epoch(recipes::common_env(shared), settings, &snapshot.source),
    )?;
    let plan = ProjectPlan {
        name: project.name.clone(),
        dist: project.wheel.clone(),
        recipe: recipe.name(),
        priority: recipe.start_priority(),
        dir: snapshot.dir.clone(),
        version: version.wheel.clone(),
        wheel_glob: project.wheel.as_ref().map(|dist| {
            format!(
                "{}-{}-*.whl",
                crate::wheel::filename::escape_name(dist),
                version.wheel.known().unwrap_or("*")
            )
        }),
        after,
        venv: steps.steps.iter().map(|s| s.venv).max().unwrap_or_default(),
        env: steps.env,
        steps: steps.steps,
        log: shared.logs_dir.join(format!("{}.log", project.name)),
        source: snapshot.source.clone(),
        fingerprint: None,
        reuse: snapshot.reuse.clone(),
        hints: recipe.failure_hints(),
        version_hint: recipe.version_mismatch_hint(),
    };
    Ok((plan, steps.notes))
}

/// What the plan says of a version it does not hand to the build: predicted (a hint), or
/// decided by the build; either way what pins the project pins its built wheel's version.
fn version_note(version: &WheelVersion) -> Option<String> {
    match version {
        WheelVersion::Given { .. } => None,
        WheelVersion::Predicted { version, from } => Some(format!(
            "version {version} predicted ({from}): a hint; what pins it pins the version its built wheel carries"
        )),
        WheelVersion::Decided { why } => Some(format!(
            "version decided by the build ({why}): what pins it pins the version its built wheel carries, and the report and the lock record it"
        )),
    }
}

/// The longest checkout root the reference builds Windows wheels under (`C:/b/pytorch` in its
/// instructions, `B:/src` in its workflows): every compile command names its sources and
/// objects by full path, and PyTorch's deep trees under a longer root overrun Windows'
/// command-line and path-length limits.
const WINDOWS_ROOT_MAX: usize = "C:/b/pytorch".len();

/// A note when a Windows build's checkout root is longer than the reference keeps it.
fn long_windows_root(platform: Platform, root: &std::path::Path) -> Option<String> {
    let length = root.as_os_str().len();
    (platform == Platform::Windows && length > WINDOWS_ROOT_MAX).then(|| {
        format!(
            "the checkout root {} is {length} characters long: the reference builds Windows wheels under a root of at most {WINDOWS_ROOT_MAX} (B:/src, C:/b) for the compile commands' length limits; check out to a short root (`--root-checkout-dir C:/b`)",
            root.display()
        )
    })
}

/// The project's environment with SOURCE_DATE_EPOCH: its upstream commit's time, so a wheel
/// rebuilt from unchanged sources has unchanged bytes where its build allows (archive times
/// first). One set in the start-up environment is the user's choice and stays.
fn source_date_epoch(mut env: EnvDiff, settings: &BuildSettings, source: &SourceState) -> EnvDiff {
    if settings
        .base_env
        .get(crate::env_vars::SOURCE_DATE_EPOCH)
        .is_none()
        && let Some(epoch) = source.epoch
    {
        env.insert(
            crate::env_vars::SOURCE_DATE_EPOCH.to_string(),
            epoch.to_string(),
        );
    }
    env
}

/// Adds `reason` to the dependency on `project`.
fn depend(after: &mut Vec<Dependency>, project: &str, reason: Reason) {
    match after.iter_mut().find(|d| d.project == project) {
        Some(dependency) if !dependency.reasons.contains(&reason) => {
            dependency.reasons.push(reason);
        }
        Some(_) => {}
        None => after.push(Dependency {
            project: project.to_string(),
            reasons: vec![reason],
        }),
    }
}

/// The venv rule. Every project builds in one venv, so a project that changes it (installs
/// requirements, uninstalls, installs its wheel) has it to itself: it starts after every
/// project before it that uses the venv has finished, and every later one waits for it.
/// Projects that only read the venv share it. "Before" is the reference's serial order:
/// what each project waits for on its wheels first, then the recipes' start priority, then
/// the stack's order. So every build sees exactly the venv the reference's serial run gives
/// it, and nothing changes under a running build.
///
/// Returns the turns: one project that changes the venv, or the readers that share it.
fn add_venv_turns(projects: &mut [ProjectPlan]) -> Result<Vec<Vec<String>>, Error> {
    let order = serial_order(projects)?;
    let mut turns: Vec<Vec<String>> = Vec::new();
    let mut changer: Option<usize> = None;
    let mut readers: Vec<usize> = Vec::new();
    for index in order {
        let name = projects[index].name.clone();
        let before: Vec<usize> = match projects[index].venv {
            VenvUse::None => continue,
            VenvUse::Reads => {
                match turns.last_mut() {
                    Some(turn) if !readers.is_empty() => turn.push(name),
                    _ => turns.push(vec![name]),
                }
                readers.push(index);
                changer.into_iter().collect()
            }
            VenvUse::Changes => {
                turns.push(vec![name]);
                let before = changer.into_iter().chain(readers.drain(..)).collect();
                changer = Some(index);
                before
            }
        };
        for other in before {
            let name = projects[other].name.clone();
            depend(&mut projects[index].after, &name, Reason::VenvTurn);
        }
    }
    Ok(turns)
}

/// The projects in the order a serial run takes them: a project after those whose wheels it
/// needs, and among those ready, by start priority, then stack order. Two projects that
/// need each other's wheels are an error.
fn serial_order(projects: &[ProjectPlan]) -> Result<Vec<usize>, Error> {
    let mut order: Vec<usize> = Vec::with_capacity(projects.len());
    while order.len() < projects.len() {
        let ready = (0..projects.len())
            .filter(|i| !order.contains(i))
            .filter(|&i| {
                projects[i]
                    .after
                    .iter()
                    .filter(|d| d.needs_wheel())
                    .all(|d| {
                        order.iter().any(|&done| projects[done].name == d.project)
                            || !projects.iter().any(|p| p.name == d.project)
                    })
            })
            .min_by_key(|&i| (projects[i].priority, i));
        match ready {
            Some(next) => order.push(next),
            None => {
                return Err(Error::Cycle {
                    projects: (0..projects.len())
                        .filter(|i| !order.contains(i))
                        .map(|i| projects[i].name.clone())
                        .collect(),
                });
            }
        }
    }
    Ok(order)
}
