//! Build recipes: everything that makes a project of the stack special, one file per recipe.
//! A recipe says which files of its checkout it reads, how its version is computed, which
//! projects it builds against and pins, when it starts among ready projects, the environment
//! and steps that turn the checkout into a wheel, what verification expects of that wheel, and
//! hints for its known failures.
//!
//! Recipes are data: they return commands with their own explicit environment, and nothing
//! here starts a process, reads a file or touches the process environment (W10). The
//! inspection reads what they ask for; the executor runs what they return; `plan` prints it.
//!
//! Adding a project: a file here with a type implementing [`Recipe`], its line in
//! [`Recipes::builtin`], and its entry in configs/stack.yaml (`recipe: <name>`).

mod apex;
mod audio;
mod env;
mod error;
mod options;
pub mod step;
mod steps;
mod torch;
mod triton;
mod vision;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::env_vars::Environment;
use crate::lock::PinOrigin;
use crate::platform::Platform;
use crate::sdk::install::Installer;
use crate::sdk::{SdkInfo, Venv};
use crate::stack::{FamilyTable, Project, Stack, Target};
use crate::version::{self, ReleaseType};
use crate::wheel::filename::normalize_name;
use crate::wheel::verify::WheelExpectation;

pub use env::{append_flags, build_path, cmake_list, common_env, prepend_path};
pub use error::Error;
pub use options::{OptionValues, ProjectOptions, RecipeOption};
pub use step::{Action, EnvDiff, Step, VenvUse};
pub use steps::Steps;

/// A known failure of one recipe's build: a text its failed step prints, and the fix.
pub type Hint = (&'static str, &'static str);

/// What a project makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Artifact {
    /// A wheel: built, verified, staged, imported by `smoke`, a column of `compat`.
    Wheel,
    /// A source tree other projects of the stack build against, with no wheel of its own
    /// (as PyTorch's ROCm build compiles composable_kernel's headers from its source tree,
    /// `third_party/composable_kernel`): locked, checked out and handed to the recipes that
    /// build against it ([`RecipeInput::source_dir`]); its recipe's steps, often none, are its
    /// build; verify, stage, compat and smoke pass it by.
    Source,
}

/// One project kind of the stack. Implemented once per project, in a file of its own.
pub trait Recipe: Send + Sync {
    /// The name stack.yaml gives in `recipe:`.
    fn name(&self) -> &'static str;

    /// What the project makes; stack.yaml names a wheel (`wheel:`, `smoke:`) exactly when it
    /// is one.
    fn artifact(&self) -> Artifact {
        Artifact::Wheel
    }

    /// Files of the checkout the recipe reads (relative paths); the inspection reads each one
    /// (or notes it absent) before the plan is made, so planning reads nothing itself.
    fn reads(&self) -> &'static [&'static str] {
        &["version.txt"]
    }

    /// Files rockbuild writes into the checkout before building: left out of the source
    /// digest, and the inspection notes which of them git ignores.
    fn generates(&self) -> &'static [&'static str] {
        &[]
    }

    /// Files the checkout writes into the tree where the reference's checkout does (its
    /// "hipify" of a project without a script, stack.yaml's `hipify: {mode: recipe-files}`),
    /// for the commit as it was pinned: (relative path, content). Excluded locally
    /// (`.git/info/exclude`), never committed.
    fn checkout_files(&self, pin: &PinOrigin) -> Vec<(&'static str, String)> {
        let _ = pin;
        Vec::new()
    }

    /// Directories of the SDK root the recipe looks for (optional parts of the SDK).
    fn sdk_dirs(&self) -> &'static [&'static str] {
        &[]
    }

    /// The version handed to the build and the one its wheel carries. By default F28:
    /// `version.txt` + the stack's suffix, with the source commit in the local segment for
    /// dev builds, handed to the build; a version.txt that holds no version (absent, empty,
    /// computed by the build) leaves it to the build ([`WheelVersion::Decided`]).
    fn version(&self, input: &VersionInput<'_>) -> Result<Versions, Error> {
        Ok(match version_txt(input, true)? {
            Ok(version) => Versions::given(version),
            Err(why) => Versions::decided(why),
        })
    }

    /// Recipes whose wheel must be built and installed into the venv before this one starts
    /// (it compiles against them).
    fn builds_against(&self) -> &'static [&'static str] {
        &[]
    }

    /// Recipes whose wheel version this one's wheel pins exactly (`==`), when they are part of
    /// the same build. The version is known up front, but the wheel must exist: this project
    /// waits for the pinned one and is skipped when it fails (never a pin to nothing).
    fn pins(&self) -> &'static [&'static str] {
        &[]
    }

    /// Among projects ready at the same moment, lower starts first; the built-in recipes
    /// follow the reference's serial order, so `--jobs 1` runs exactly its sequence.
    fn start_priority(&self) -> u8;

    /// The project's environment and steps. `env` is the environment every project gets.
    fn steps(&self, input: &RecipeInput<'_>, env: EnvDiff) -> Result<ProjectSteps, Error>;

    /// What verification expects of the wheel.
    fn wheel(&self) -> WheelExpectation {
        WheelExpectation::default()
    }

    /// In a multi-arch build, the package directory of the wheel whose fat binaries are split
    /// into per-target device wheels (`torch`); `None`: the wheel ships as built. The
    /// reference splits torch and torchvision only: torchaudio and triton have no fat binaries,
    /// and apex's ROCm fork ships JIT loaders (TheRock's multi-arch workflow, "Split fat wheels").
    fn device_split(&self) -> Option<&'static str> {
        None
    }

    /// Why builds for `platform` leave this project out, as the reference's do; `None`: it
    /// builds there. A project left out by default is an error when asked for by name.
    fn not_built_on(&self, platform: Platform) -> Option<&'static str> {
        let _ = platform;
        None
    }

    /// The options this recipe answers ([`RecipeOption`]): a build passes each one's value
    /// as given (on, off or unset) in [`RecipeInput::options`], and the recipe decides.
    fn options(&self) -> &'static [RecipeOption] {
        &[]
    }

    /// Known failures of this project's build.
    fn failure_hints(&self) -> &'static [Hint] {
        &[]
    }

    /// Distribution names upstream publishes this project's wheel under (PyPI, PyTorch's
    /// index), besides the stack's own: a venv or set with one of those holds this project.
    fn upstream_wheels(&self) -> &'static [&'static str] {
        &[]
    }

    /// The name the reference's build script gives the project in its per-project flags
    /// (`pytorch-audio`: `--pytorch-audio-dir`, `--[no-]build-pytorch-audio`), if any.
    fn reference_name(&self) -> Option<&'static str> {
        None
    }

    /// The column `compat` lists the project under, as ROCm's PyTorch compatibility page
    /// names it; `None`: the name of the project's wheel.
    fn compat_column(&self) -> Option<&'static str> {
        None
    }

    /// What to suspect when the wheel's version is not the planned one.
    fn version_mismatch_hint(&self) -> &'static str {
        "the build ignored BUILD_VERSION"
    }
}

/// The recipes a build knows, by name.
pub struct Recipes {
    recipes: Vec<Box<dyn Recipe>>,
}

impl Recipes {
    /// The recipes of the ROCm PyTorch stack.
    pub fn builtin() -> Recipes {
        Recipes {
            recipes: vec![
                Box::new(torch::Torch),
                Box::new(audio::Audio),
                Box::new(vision::Vision),
                Box::new(triton::Triton),
                Box::new(apex::Apex),
            ],
        }
    }

    /// These recipes and one more (replacing a recipe of the same name).
    pub fn with(mut self, recipe: impl Recipe + 'static) -> Recipes {
        self.recipes.retain(|r| r.name() != recipe.name());
        self.recipes.push(Box::new(recipe));
        self
    }

    /// The recipe a project of `stack` names; an unknown name is an error at its line.
    pub fn of(&self, stack: &Stack, project: &Project) -> Result<&dyn Recipe, Error> {
        if let Some(recipe) = self.recipes.iter().find(|r| r.name() == project.recipe) {
            return artifact_agrees(stack, project, recipe.as_ref()).map(|()| recipe.as_ref());
        }
        let names: Vec<&str> = self.recipes.iter().map(|r| r.name()).collect();
        let hint = crate::stack::source::did_you_mean(&project.recipe, names.iter().copied())
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        Err(Error::Config(crate::stack::ConfigError {
            file: stack.source_name.clone(),
            line: project.recipe_line,
            column: None,
            message: format!(
                "project '{}' names recipe `{}`, which this rockbuild does not have{hint}; recipes: {}",
                project.name,
                project.recipe,
                names.join(", ")
            ),
        }))
    }

    /// The stack's projects that make wheels, in stack order.
    pub fn wheel_projects<'a>(&self, stack: &'a Stack) -> Result<Vec<&'a Project>, Error> {
        let mut out = Vec::new();
        for project in stack.projects.values() {
            if self.of(stack, project)?.artifact() == Artifact::Wheel {
                out.push(project);
            }
        }
        Ok(out)
    }

    /// The recipe the reference's per-project flags of `name` belong to.
    pub fn answering_to(&self, name: &str) -> Option<&dyn Recipe> {
        self.recipes
            .iter()
            .find(|r| r.reference_name() == Some(name))
            .map(AsRef::as_ref)
    }

    /// Every project of `stack` names a recipe of these: checked before anything is fetched.
    pub fn check(&self, stack: &Stack) -> Result<(), Error> {
        for project in stack.projects.values() {
            self.of(stack, project)?;
        }
        Ok(())
    }

    /// The optional SDK directories the environment and the recipes look for.
    pub fn sdk_dirs(&self) -> Vec<&'static str> {
        let mut dirs: Vec<&'static str> = env::COMMON_SDK_DIRS.to_vec();
        for dir in self.recipes.iter().flat_map(|r| r.sdk_dirs()) {
            if !dirs.contains(dir) {
                dirs.push(dir);
            }
        }
        dirs
    }

    /// By project: the normalized distribution names its wheel goes by, the stack's first,
    /// then upstream's ([`Recipe::upstream_wheels`]).
    pub fn distribution_names(
        &self,
        stack: &Stack,
    ) -> Result<BTreeMap<String, Vec<String>>, Error> {
        let mut out = BTreeMap::new();
        for project in stack.projects.values() {
            let recipe = self.of(stack, project)?;
            let Some(wheel) = &project.wheel else {
                continue;
            };
            let mut names = vec![normalize_name(wheel)];
            for name in recipe.upstream_wheels() {
                let name = normalize_name(name);
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            out.insert(project.name.clone(), names);
        }
        Ok(out)
    }

    /// What verification expects of each wheel of the stack, by normalized wheel name: the
    /// recipe's expectation, with its pins named by the stack's wheels.
    /// The stack's projects whose wheels a multi-arch build splits ([`Recipe::device_split`]).
    pub fn split_projects<'a>(&self, stack: &'a Stack) -> Result<Vec<&'a Project>, Error> {
        let mut out = Vec::new();
        for project in stack.projects.values() {
            if self.of(stack, project)?.device_split().is_some() {
                out.push(project);
            }
        }
        Ok(out)
    }

    pub fn wheel_expectations(
        &self,
        stack: &Stack,
    ) -> Result<BTreeMap<String, WheelExpectation>, Error> {
        let mut out = BTreeMap::new();
        for project in stack.projects.values() {
            let recipe = self.of(stack, project)?;
            let Some(wheel) = &project.wheel else {
                continue;
            };
            let mut expectation = recipe.wheel();
            for pinned in recipe.pins() {
                let wheels = stack.projects.values().filter(|p| p.recipe == *pinned);
                for other in wheels.filter_map(|p| p.wheel.as_deref()) {
                    expectation.pins.insert(normalize_name(other));
                }
            }
            out.insert(normalize_name(wheel), expectation);
        }
        Ok(out)
    }
}

/// The recipe's artifact and the stack's entry agree: a wheel is named (`wheel:`) exactly when
/// the recipe makes one.
fn artifact_agrees(stack: &Stack, project: &Project, recipe: &dyn Recipe) -> Result<(), Error> {
    let message = match (recipe.artifact(), &project.wheel) {
        (Artifact::Wheel, None) => format!(
            "project '{}' names recipe `{}`, which makes a wheel: name it with `wheel:` (its distribution name) and `smoke:`",
            project.name,
            recipe.name()
        ),
        (Artifact::Source, Some(wheel)) => format!(
            "project '{}' names wheel `{wheel}`, but its recipe `{}` makes no wheel (a source tree other projects build against): drop `wheel:` and `smoke:`",
            project.name,
            recipe.name()
        ),
        _ => return Ok(()),
    };
    Err(Error::Config(crate::stack::ConfigError {
        file: stack.source_name.clone(),
        line: project.recipe_line,
        column: None,
        message,
    }))
}

/// What the inspection read of a checkout for its recipe.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckoutFiles {
    /// Each path of [`Recipe::reads`], with its text (`None`: absent).
    pub files: BTreeMap<String, Option<String>>,
    /// Paths of [`Recipe::generates`] that git ignores in this checkout.
    pub ignored: BTreeSet<String>,
}

impl CheckoutFiles {
    /// The text of a file the recipe reads.
    pub fn text(&self, path: &str) -> Option<&str> {
        debug_assert!(
            self.files.contains_key(path),
            "{path} is not among the recipe's reads()"
        );
        self.files.get(path).and_then(Option::as_deref)
    }

    pub fn exists(&self, path: &str) -> bool {
        self.text(path).is_some()
    }
}

/// What git says of a checkout: what a version rule and a build-time file are made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceState {
    /// HEAD's commit; `None` when the directory is not a git checkout.
    pub head: Option<String>,
    /// The checked-out branch; `None` when HEAD is detached (as after `rockbuild checkout`).
    pub branch: Option<String>,
    /// The upstream commit the sources come from (the lock's, else HEAD or, when HEAD is the
    /// hipify commit, its parent): what dev versions carry as `git<sha8>`.
    pub upstream: Option<String>,
    /// SHA-256 over HEAD and the uncommitted changes; `None` without git (never cached).
    pub digest: Option<String>,
    /// The upstream commit's committer time (Unix seconds): the build's SOURCE_DATE_EPOCH, so
    /// unchanged sources give unchanged wheel bytes where the build allows.
    pub epoch: Option<i64>,
}

/// What a version rule is computed from.
#[derive(Clone, Debug)]
pub struct VersionInput<'a> {
    pub project: &'a str,
    pub dir: &'a Path,
    pub files: &'a CheckoutFiles,
    pub source: &'a SourceState,
    /// The stack's local version suffix (`+rocm7.10.0`).
    pub suffix: &'a str,
    pub release_type: ReleaseType,
    pub build_number: u32,
}

/// A project's versions: the one handed to the build (none: the build decides), and what its
/// wheel will carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versions {
    pub build: Option<String>,
    pub wheel: WheelVersion,
}

impl Versions {
    /// Handed to the build, and carried by its wheel as given.
    pub fn given(version: String) -> Versions {
        Versions {
            build: Some(version.clone()),
            wheel: WheelVersion::Given { version },
        }
    }

    /// Read from the tree's own rule, nothing handed to the build.
    pub fn predicted(version: String, from: String) -> Versions {
        Versions {
            build: None,
            wheel: WheelVersion::Predicted { version, from },
        }
    }

    /// Not predictable: the built wheel says.
    pub fn decided(why: String) -> Versions {
        Versions {
            build: None,
            wheel: WheelVersion::Decided { why },
        }
    }
}

/// What the plan knows of a wheel's version before it is built. The artifact is the truth:
/// a prediction is a hint, and what rockbuild cannot predict the build decides; either way
/// what pins the project pins the version its built wheel carries.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "rule")]
pub enum WheelVersion {
    /// Handed to the build (`BUILD_VERSION`, `PYTORCH_BUILD_VERSION`): its wheel must carry
    /// it, and one that does not is refused (the build ignored the instruction).
    Given { version: String },
    /// What the tree's own rule computes (`from`: where rockbuild read it), nothing handed to
    /// the build: a built wheel of another version is taken as it is, and its version pinned.
    Predicted { version: String, from: String },
    /// Not predictable (`why`): the built wheel's version is the project's.
    Decided { why: String },
}

impl WheelVersion {
    /// The version known before the build, if any.
    pub fn known(&self) -> Option<&str> {
        match self {
            WheelVersion::Given { version } | WheelVersion::Predicted { version, .. } => {
                Some(version)
            }
            WheelVersion::Decided { .. } => None,
        }
    }

    /// As the plan and messages show it.
    pub fn shown(&self) -> &str {
        self.known().unwrap_or("(decided by the build)")
    }

    /// How a pin on the project reads in its consumers' steps: the version itself when it is
    /// given, else a placeholder the build fills in with the built wheel's ([`built_version`]).
    pub fn pinned(&self, project: &str) -> String {
        match self {
            WheelVersion::Given { version } => version.clone(),
            _ => built_version(project),
        }
    }
}

/// The placeholder for the version of `project`'s built wheel, in the environment and
/// arguments of what pins it; the executor replaces it once that wheel exists.
pub fn built_version(project: &str) -> String {
    format!("<version of {project}'s built wheel>")
}

/// F28 over `version.txt`: its first line + the suffix; the upstream commit merged into the
/// local segment for dev builds when `tags_commit`. `Ok(Err(why))`: the file holds no version
/// rockbuild can read (absent, empty, not a version: computed by the build), so the build
/// decides; an error is a suffix that makes no valid version.
pub fn version_txt(
    input: &VersionInput<'_>,
    tags_commit: bool,
) -> Result<Result<String, String>, Error> {
    let Some(text) = input.files.text("version.txt") else {
        return Ok(Err(
            "it has no version.txt, so its build computes the version".into(),
        ));
    };
    let base = text.lines().next().unwrap_or_default().trim();
    if base.is_empty() {
        return Ok(Err("its version.txt is empty".into()));
    }
    if base.parse::<pep440_rs::Version>().is_err() {
        return Ok(Err(format!(
            "version.txt:1 `{base}` is not a version (computed by the build?)"
        )));
    }
    let commit = input
        .source
        .upstream
        .as_deref()
        .filter(|_| tags_commit && input.release_type.tags_commit());
    Ok(Ok(version::project_version(
        input.project,
        base,
        input.suffix,
        commit,
    )?))
}

/// What the SDK looks like to the recipes. `known` is false when `plan` runs without an
/// installed SDK: paths are then placeholders and optional SDK directories count as present.
#[derive(Clone, Debug)]
pub struct SdkFacts {
    pub info: SdkInfo,
    pub known: bool,
    /// Which of the directories the recipes look for ([`Recipe::sdk_dirs`]) the root has.
    pub dirs: BTreeSet<String>,
}

impl SdkFacts {
    /// Whether `<root>/<relative>` is a directory (assumed when the SDK is not known yet).
    pub fn has_dir(&self, relative: &str) -> bool {
        !self.known || self.dirs.contains(relative)
    }

    pub fn path(&self, relative: &str) -> String {
        self.info.root.join(relative).display().to_string()
    }
}

/// Inputs shared by every project of a build.
#[derive(Clone, Debug)]
pub struct Shared<'a> {
    /// The platform the build is for (venv layout, path lists, executable names).
    pub platform: Platform,
    pub sdk: &'a SdkFacts,
    pub venv: &'a Venv,
    pub installer: Installer,
    pub cache_dir: &'a Path,
    pub output_dir: &'a Path,
    pub logs_dir: &'a Path,
    /// The targets the build compiles for.
    pub targets: &'a [Target],
    pub families: &'a FamilyTable,
    /// The stack's local version suffix (`+rocm7.10.0`).
    pub suffix: &'a str,
    pub build_number: u32,
    pub clean: bool,
    /// The compiler cache's launcher variables (`CMAKE_<LANG>_COMPILER_LAUNCHER`, …).
    pub compiler_env: &'a [(String, String)],
    pub base_env: &'a Environment,
}

/// A wheel of the same build that a recipe pins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    pub dist: String,
    pub version: String,
}

impl Pin {
    /// `dist==version`.
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.dist, self.version)
    }
}

/// One project's inputs.
#[derive(Clone, Debug)]
pub struct RecipeInput<'a> {
    pub project: &'a Project,
    pub dir: &'a Path,
    pub files: &'a CheckoutFiles,
    /// The version handed to the build ([`Versions::build`]); `None`: the build decides it.
    pub build_version: Option<&'a str>,
    /// By recipe name: the wheels of this build that the recipe pins ([`Recipe::pins`]).
    pub pinned: &'a BTreeMap<&'static str, Pin>,
    /// The values given to the recipe's options ([`Recipe::options`]).
    pub options: ProjectOptions<'a>,
    /// By recipe name: the checkouts of the build's source components ([`Artifact::Source`]).
    pub sources: &'a BTreeMap<String, PathBuf>,
    pub shared: &'a Shared<'a>,
}

impl RecipeInput<'_> {
    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.join(relative)
    }

    /// Hands the build its version in `key`, when rockbuild knows one; otherwise the build
    /// computes its own, and its wheel says which.
    pub fn set_build_version(&self, env: &mut EnvDiff, key: &str) {
        if let Some(version) = self.build_version {
            env.insert(key.into(), version.to_string());
        }
    }

    /// The checkout of the source component of recipe `recipe` this recipe builds against
    /// ([`Recipe::builds_against`]); `None` when the stack or the build has none.
    pub fn source_dir(&self, recipe: &str) -> Option<&Path> {
        self.sources.get(recipe).map(PathBuf::as_path)
    }
}

/// What a recipe produces for its project.
#[derive(Clone, Debug)]
pub struct ProjectSteps {
    /// The project's environment difference (every step runs with it).
    pub env: EnvDiff,
    pub steps: Vec<Step>,
    /// Things a reader of the plan should know about this project (added to the plan's notes).
    pub notes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::ConfigSource;

    #[test]
    fn unknown_recipes_are_named_at_their_line() {
        let stack = Stack::parse(&ConfigSource {
            name: "stack.yaml".into(),
            text: "schema: 1\nprojects:\n  torch:\n    checkout-dir: pytorch\n    origin: file:///o\n    ref: main\n    wheel: torch\n    recipe: torhc\n    hipify: {mode: off}\n    smoke: pass\n".into(),
        })
        .expect("parses");
        let error = Recipes::builtin()
            .of(&stack, &stack.projects["torch"])
            .err()
            .expect("unknown recipe");
        assert_eq!(
            error.to_string(),
            "stack.yaml:8: project 'torch' names recipe `torhc`, which this rockbuild does not have (did you mean `torch`?); recipes: torch, audio, vision, triton, apex"
        );
    }

    #[test]
    fn the_recipe_says_whether_the_project_is_a_wheel() {
        let text = "schema: 1\nprojects:\n  torch:\n    checkout-dir: pytorch\n    origin: file:///o\n    ref: main\n    recipe: torch\n    hipify: {mode: off}\n";
        let stack = Stack::parse(&ConfigSource {
            name: "stack.yaml".into(),
            text: text.into(),
        })
        .expect("parses");
        let error = Recipes::builtin()
            .of(&stack, &stack.projects["torch"])
            .err()
            .expect("torch makes a wheel");
        assert_eq!(
            error.to_string(),
            "stack.yaml:7: project 'torch' names recipe `torch`, which makes a wheel: name it with `wheel:` (its distribution name) and `smoke:`"
        );

        /// A source component: a tree others build against.
        struct Headers;
        impl Recipe for Headers {
            fn name(&self) -> &'static str {
                "headers"
            }
            fn artifact(&self) -> Artifact {
                Artifact::Source
            }
            fn start_priority(&self) -> u8 {
                0
            }
            fn steps(&self, input: &RecipeInput<'_>, env: EnvDiff) -> Result<ProjectSteps, Error> {
                Ok(Steps::new(input, env).finish())
            }
        }
        let recipes = Recipes::builtin().with(Headers);
        let named = Stack::parse(&ConfigSource {
            name: "stack.yaml".into(),
            text: text.replace(
                "recipe: torch",
                "recipe: headers\n    wheel: headers\n    smoke: pass",
            ),
        })
        .expect("parses");
        let error = recipes
            .of(&named, &named.projects["torch"])
            .err()
            .expect("headers make no wheel");
        assert_eq!(
            error.to_string(),
            "stack.yaml:7: project 'torch' names wheel `headers`, but its recipe `headers` makes no wheel (a source tree other projects build against): drop `wheel:` and `smoke:`"
        );
        let plain = Stack::parse(&ConfigSource {
            name: "stack.yaml".into(),
            text: text.replace("recipe: torch", "recipe: headers"),
        })
        .expect("parses");
        assert!(recipes.wheel_projects(&plain).expect("known").is_empty());
        assert!(
            recipes
                .wheel_expectations(&plain)
                .expect("known")
                .is_empty()
        );
    }

    #[test]
    fn expectations_name_pinned_wheels() {
        let stack = Stack::load(None).expect("stack");
        let expected = Recipes::builtin()
            .wheel_expectations(&stack)
            .expect("expectations");
        assert!(expected["torch"].links_hip_runtime);
        assert_eq!(
            expected["torch"].pins,
            BTreeSet::from(["triton".to_string()])
        );
        assert_eq!(
            expected["torchvision"].pins,
            BTreeSet::from(["torch".to_string()])
        );
        assert!(!expected["triton"].links_hip_runtime && expected["triton"].pins.is_empty());
    }
}
