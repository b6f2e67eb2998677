//! The stack model: which projects make up the ROCm PyTorch stack, where each one's pin comes
//! from, how it is hipified, which recipe builds it. Loaded from configs/stack.yaml (embedded
//! in the binary; `--config` replaces it) and validated before anything runs.

pub mod families;
pub mod presets;
pub mod source;

use std::path::Path;

use indexmap::IndexMap;
use serde::Deserialize;

pub use families::{FamilyTable, IndexKind, IndexLayout, NameError, Target};
pub use presets::PresetTable;
pub use source::{ConfigError, ConfigSource};

/// The shipped stack and family table, compiled in so the binary works from any directory.
pub const DEFAULT_STACK: &str = include_str!("../../configs/stack.yaml");
pub const DEFAULT_FAMILIES: &str = include_str!("../../configs/families.yaml");

/// The name presets use for a project's own `origin:`.
pub const UPSTREAM: &str = "upstream";

/// How a project's tree is prepared after checkout.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "mode")]
pub enum HipifyPolicy {
    /// Run the repository's own hipify script (when it exists in the checked-out tree).
    Script {
        script: String,
        /// Directories whose sources must be free of CUDA-only includes after hipify, in
        /// addition to every file hipify changed.
        check_paths: Vec<String>,
        /// Globs exempt from the leftover-include check.
        allow: Vec<String>,
        /// The submodules the script edits (paths from the project root): hipify waits for
        /// these alone while the others are still being checked out. `None`: it waits for
        /// every submodule.
        edits_submodules: Option<Vec<String>>,
        /// The line of `edits-submodules:` in the stack config (for the warning that asks to
        /// extend it).
        #[serde(skip)]
        edits_submodules_line: Option<usize>,
        /// What a CUDA-only include left after hipify does to the checkout.
        leftover_cuda: LeftoverPolicy,
    },
    /// The reference's "hipify" of a project without a script: the checkout writes the files
    /// its recipe names (triton's build_env.json), as the reference does.
    RecipeFiles,
    /// Nothing to do (apex).
    Off,
}

/// What the leftover-CUDA check does with what it finds (`hipify: leftover-cuda:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeftoverPolicy {
    /// Reported (warning, checkout report, lock, step summary); the checkout goes on, as the
    /// reference's does (it has no such check).
    #[default]
    Report,
    /// The checkout fails (as `--strict` makes it for every project).
    Refuse,
}

/// Where a project's ref comes from when no flag names one.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum PinSource {
    /// The config's default ref (torch).
    Explicit,
    /// A row of another project's related_commits file: `os|source|project|branch|commit|origin`.
    RelatedCommits {
        from: String,
        file: String,
        os: String,
        key: String,
    },
    /// Triton: a commit file in another project, or with `--release` the branch
    /// `release/X.Y.x` derived from a version file.
    CommitFile {
        from: String,
        commit_file: String,
        release_version_file: Option<String>,
    },
}

impl PinSource {
    /// The project whose tree holds this project's pin, if any.
    pub fn pinned_by(&self) -> Option<&str> {
        match self {
            PinSource::Explicit => None,
            PinSource::RelatedCommits { from, .. } | PinSource::CommitFile { from, .. } => {
                Some(from)
            }
        }
    }
}

/// One project of the stack, validated.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Project {
    pub name: String,
    pub checkout_dir: String,
    pub origin: String,
    /// Other origins presets may name (torch's `rocm-fork`), by name.
    pub origins: IndexMap<String, String>,
    pub default_ref: String,
    /// The distribution name of the wheel it builds; `None`: it makes no wheel, as its recipe
    /// answers ([`crate::recipes::Artifact`]: a source tree other projects build against), and
    /// the stages that deal in wheels (verify, stage, compat, smoke) pass it by.
    pub wheel: Option<String>,
    /// The name of the build recipe that builds it (`recipes`). Checked against the
    /// recipes rockbuild has when a build or a verification needs it, not at load: checkout
    /// and lock do not build.
    pub recipe: String,
    /// Line of `recipe:` in the stack file, for errors about it.
    pub recipe_line: Option<usize>,
    pub submodules: bool,
    pub pin: PinSource,
    pub hipify: HipifyPolicy,
    /// Python code run by `rockbuild smoke` after installing the set; given exactly when
    /// `wheel` is.
    pub smoke: Option<String>,
}

/// The whole stack, validated, projects in file order.
#[derive(Clone, Debug)]
pub struct Stack {
    pub source_name: String,
    pub projects: IndexMap<String, Project>,
    pub cuda_only_headers: Vec<String>,
}

// ---- the file format (kept apart from the validated model) ----

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct StackFile {
    schema: u32,
    #[serde(default)]
    cuda_only_headers: Vec<String>,
    projects: IndexMap<String, ProjectEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct ProjectEntry {
    checkout_dir: String,
    origin: String,
    #[serde(default)]
    origins: IndexMap<String, String>,
    #[serde(rename = "ref")]
    default_ref: String,
    #[serde(default)]
    wheel: Option<String>,
    recipe: String,
    #[serde(default = "default_true")]
    submodules: bool,
    #[serde(default)]
    pinned_by: Option<PinnedByEntry>,
    hipify: HipifyEntry,
    #[serde(default)]
    smoke: Option<String>,
}

fn default_true() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct PinnedByEntry {
    project: String,
    #[serde(default)]
    related_commits: Option<RelatedCommitsEntry>,
    #[serde(default)]
    commit_file: Option<String>,
    #[serde(default)]
    release_version_file: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct RelatedCommitsEntry {
    file: String,
    os: String,
    key: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct HipifyEntry {
    mode: HipifyMode,
    #[serde(default)]
    script: Option<String>,
    #[serde(default)]
    check_paths: Vec<String>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    edits_submodules: Option<Vec<String>>,
    #[serde(default)]
    leftover_cuda: Option<LeftoverPolicy>,
}

#[derive(Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum HipifyMode {
    Script,
    // The name it had when triton was the one project with such files.
    #[serde(alias = "triton-build-env")]
    RecipeFiles,
    Off,
}

impl Stack {
    /// Loads the embedded default or the file given with `--config`.
    pub fn load(config: Option<&Path>) -> anyhow::Result<Stack> {
        let source = ConfigSource::flag_or_embedded(config, "configs/stack.yaml", DEFAULT_STACK)?;
        Stack::parse(&source).map_err(|e| crate::exit::Classified::from(e).into())
    }

    pub fn parse(source: &ConfigSource) -> Result<Stack, ConfigError> {
        let file: StackFile = source.parse()?;
        source.check_schema(file.schema)?;
        if file.projects.is_empty() {
            return Err(source.error_at(&["projects"], "the stack has no projects"));
        }
        let names: Vec<String> = file.projects.keys().cloned().collect();
        let mut projects = IndexMap::new();
        for (name, entry) in file.projects {
            let project = validate_project(source, &names, &name, entry)?;
            if let Some(other) = projects
                .values()
                .find(|p: &&Project| p.checkout_dir == project.checkout_dir)
            {
                return Err(source.error_at(
                    &["projects", &name, "checkout-dir"],
                    format!(
                        "projects '{}' and '{name}' share the checkout directory '{}'",
                        other.name, project.checkout_dir
                    ),
                ));
            }
            projects.insert(name, project);
        }
        // A pin must come from a project pinned explicitly: chains would need an order the
        // checkout does not promise.
        for project in projects.values() {
            if let Some(from) = project.pin.pinned_by()
                && projects
                    .get(from)
                    .is_some_and(|p| p.pin != PinSource::Explicit)
            {
                return Err(source.error_at(
                    &["projects", &project.name, "pinned-by", "project"],
                    format!("'{}' is pinned by '{from}', which is itself pinned by another project; pin sources must be pinned explicitly", project.name),
                ));
            }
        }
        Ok(Stack {
            source_name: source.name.clone(),
            projects,
            cuda_only_headers: file.cuda_only_headers,
        })
    }

    /// Looks a project up by name, with a suggestion when it is misspelled.
    pub fn project(&self, name: &str) -> anyhow::Result<&Project> {
        self.projects.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.projects.keys().map(String::as_str).collect();
            let hint = source::did_you_mean(name, names.iter().copied())
                .map(|s| format!(" (did you mean '{s}'?)"))
                .unwrap_or_default();
            crate::exit::usage(format!(
                "unknown project '{name}'{hint}; projects in {}: {}",
                self.source_name,
                names.join(", ")
            ))
        })
    }
}

fn validate_project(
    source: &ConfigSource,
    names: &[String],
    name: &str,
    entry: ProjectEntry,
) -> Result<Project, ConfigError> {
    let at = |keys: &[&'static str]| {
        let mut path = vec!["projects", name];
        path.extend_from_slice(keys);
        path
    };
    // A project's name names files and directories (its build log, its test results): a
    // name, never a path.
    if let Err(reason) = check_name(name) {
        return Err(source.error_at(
            &["projects", name],
            format!("project name `{name}` is not a name: {reason}"),
        ));
    }
    if let Some(wheel) = &entry.wheel
        && let Err(reason) = check_name(wheel)
    {
        return Err(source.error_at(
            &at(&["wheel"]),
            format!("wheel `{wheel}` is not a distribution name: {reason}"),
        ));
    }
    // A wheel is imported by `smoke`; a project without one has nothing to import.
    match (&entry.wheel, &entry.smoke) {
        (Some(_), None) => {
            return Err(source.error_at(
                &["projects", name],
                format!("project '{name}' names its wheel but no `smoke:` (the Python `rockbuild smoke` runs to import it)"),
            ));
        }
        (None, Some(_)) => {
            return Err(source.error_at(
                &at(&["smoke"]),
                format!("project '{name}' has `smoke:` but no `wheel:`: a project that makes no wheel has nothing to import; drop `smoke:` or name its wheel"),
            ));
        }
        _ => {}
    }
    // Paths of files in the project's tree stay inside it.
    let mut paths: Vec<(Vec<&str>, &str)> = Vec::new();
    if let Some(script) = &entry.hipify.script {
        paths.push((at(&["hipify", "script"]), script));
    }
    for path in &entry.hipify.check_paths {
        paths.push((at(&["hipify", "check-paths"]), path));
    }
    for path in entry.hipify.edits_submodules.iter().flatten() {
        paths.push((at(&["hipify", "edits-submodules"]), path));
    }
    if let Some(by) = &entry.pinned_by {
        if let Some(related) = &by.related_commits {
            paths.push((at(&["pinned-by", "related-commits"]), &related.file));
        }
        if let Some(file) = &by.commit_file {
            paths.push((at(&["pinned-by", "commit-file"]), file));
        }
        if let Some(file) = &by.release_version_file {
            paths.push((at(&["pinned-by", "release-version-file"]), file));
        }
    }
    for (keys, path) in paths {
        if let Err(reason) = crate::input::check_relative(path) {
            return Err(source.error_at(
                &keys,
                format!(
                    "`{path}` is not a path inside the project's checkout: {reason}; give it \
                     relative to the checkout"
                ),
            ));
        }
    }
    if entry.checkout_dir.is_empty()
        || entry.checkout_dir.contains('/')
        || entry.checkout_dir.starts_with('.')
    {
        return Err(source.error_at(
            &at(&["checkout-dir"]),
            format!(
                "checkout-dir '{}' must be a plain directory name",
                entry.checkout_dir
            ),
        ));
    }
    if let Err(invalid) = crate::git::Origin::parse(&entry.origin) {
        return Err(source.error_at(&at(&["origin"]), invalid.to_string()));
    }
    if let Err(invalid) = crate::git::RefName::parse(&entry.default_ref) {
        return Err(source.error_at(&at(&["ref"]), invalid.to_string()));
    }
    for (origin_name, url) in &entry.origins {
        let message = if origin_name == UPSTREAM {
            Some(format!(
                "`{UPSTREAM}` is the name of the project's own `origin:`; give this origin another name"
            ))
        } else {
            crate::git::Origin::parse(url).err().map(|e| e.to_string())
        };
        if let Some(message) = message {
            return Err(source.error_at(&["projects", name, "origins", origin_name], message));
        }
    }
    let pin = match entry.pinned_by {
        None => PinSource::Explicit,
        Some(by) => {
            if !names.contains(&by.project) || by.project == name {
                let hint = source::did_you_mean(&by.project, names.iter().map(String::as_str))
                    .map(|s| format!(" (did you mean '{s}'?)"))
                    .unwrap_or_default();
                return Err(source.error_at(
                    &at(&["pinned-by", "project"]),
                    format!(
                        "'{name}' is pinned by unknown project '{}'{hint}",
                        by.project
                    ),
                ));
            }
            match (by.related_commits, by.commit_file) {
                (Some(related), None) => {
                    if by.release_version_file.is_some() {
                        return Err(source.error_at(
                            &at(&["pinned-by", "release-version-file"]),
                            "release-version-file only applies to commit-file pins",
                        ));
                    }
                    PinSource::RelatedCommits {
                        from: by.project,
                        file: related.file,
                        os: related.os,
                        key: related.key,
                    }
                }
                (None, Some(commit_file)) => PinSource::CommitFile {
                    from: by.project,
                    commit_file,
                    release_version_file: by.release_version_file,
                },
                _ => {
                    return Err(source.error_at(
                        &at(&["pinned-by"]),
                        "pinned-by needs exactly one of related-commits or commit-file",
                    ));
                }
            }
        }
    };
    let hipify = match entry.hipify.mode {
        HipifyMode::Script => {
            HipifyPolicy::Script {
                script: entry.hipify.script.ok_or_else(|| {
                    source.error_at(
                        &at(&["hipify"]),
                        "hipify mode `script` needs `script:` (e.g. tools/amd_build/build_amd.py)",
                    )
                })?,
                check_paths: entry.hipify.check_paths,
                allow: entry.hipify.allow,
                edits_submodules_line: entry.hipify.edits_submodules.as_ref().and_then(|_| {
                    source::locate(&source.text, &at(&["hipify", "edits-submodules"]))
                }),
                edits_submodules: entry.hipify.edits_submodules,
                leftover_cuda: entry.hipify.leftover_cuda.unwrap_or_default(),
            }
        }
        HipifyMode::RecipeFiles | HipifyMode::Off
            if entry.hipify.script.is_some()
                || !entry.hipify.check_paths.is_empty()
                || !entry.hipify.allow.is_empty()
                || entry.hipify.edits_submodules.is_some()
                || entry.hipify.leftover_cuda.is_some() =>
        {
            return Err(source.error_at(
                &at(&["hipify"]),
                "script, check-paths, allow, edits-submodules and leftover-cuda only apply to hipify mode `script`",
            ));
        }
        HipifyMode::RecipeFiles => HipifyPolicy::RecipeFiles,
        HipifyMode::Off => HipifyPolicy::Off,
    };
    Ok(Project {
        name: name.to_string(),
        checkout_dir: entry.checkout_dir,
        origin: entry.origin,
        origins: entry.origins,
        default_ref: entry.default_ref,
        wheel: entry.wheel,
        recipe: entry.recipe,
        recipe_line: source::locate(&source.text, &at(&["recipe"])),
        submodules: entry.submodules,
        pin,
        hipify,
        smoke: entry.smoke,
    })
}

/// Why `name` is not a name (of a project, of a distribution): ASCII letters and digits, with
/// `-`, `_` and `.` between them (PEP 508's rule for distribution names).
pub fn check_name(name: &str) -> Result<(), &'static str> {
    let inner = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let ends = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if name.len() > 100 {
        return Err("a name is at most 100 characters long");
    }
    if !ends(name.chars().next()) || !ends(name.chars().last()) || !name.chars().all(inner) {
        return Err(
            "a name holds ASCII letters, digits, `-`, `_` and `.`, and starts and ends with a \
             letter or digit",
        );
    }
    Ok(())
}

impl Project {
    /// The URL of a named origin: `upstream` is the project's own `origin:`.
    pub fn origin_named(&self, name: &str) -> Option<&str> {
        if name == UPSTREAM {
            Some(&self.origin)
        } else {
            self.origins.get(name).map(String::as_str)
        }
    }

    /// Every origin name this project knows, `upstream` first.
    pub fn origin_names(&self) -> Vec<&str> {
        std::iter::once(UPSTREAM)
            .chain(self.origins.keys().map(String::as_str))
            .collect()
    }
}

/// Loads the family table: the embedded default or `--families FILE`.
pub fn load_families(path: Option<&Path>) -> anyhow::Result<FamilyTable> {
    let source = ConfigSource::flag_or_embedded(path, "configs/families.yaml", DEFAULT_FAMILIES)?;
    FamilyTable::load(&source).map_err(|e| crate::exit::Classified::from(e).into())
}

#[cfg(test)]
mod examples_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Stack, ConfigError> {
        Stack::parse(&ConfigSource {
            name: "stack.yaml".into(),
            text: text.into(),
        })
    }

    #[test]
    fn shipped_stack_matches_the_reference_layout() {
        let stack = Stack::load(None).expect("loads");
        let dirs: Vec<(&str, &str)> = stack
            .projects
            .values()
            .map(|p| (p.name.as_str(), p.checkout_dir.as_str()))
            .collect();
        assert_eq!(
            dirs,
            [
                ("torch", "pytorch"),
                ("audio", "pytorch_audio"),
                ("vision", "pytorch_vision"),
                ("triton", "triton"),
                ("apex", "apex")
            ]
        );
        assert_eq!(stack.projects["apex"].hipify, HipifyPolicy::Off);
        assert_eq!(stack.projects["triton"].hipify, HipifyPolicy::RecipeFiles);
        assert_eq!(
            stack.projects["vision"].pin,
            PinSource::RelatedCommits {
                from: "torch".into(),
                file: "related_commits".into(),
                os: "ubuntu".into(),
                key: "torchvision".into()
            }
        );
        assert!(
            stack
                .cuda_only_headers
                .contains(&"cuda_runtime.h".to_string())
        );
    }

    const MINIMAL: &str = "schema: 1
projects:
  torch:
    checkout-dir: pytorch
    origin: file:///o/torch
    ref: main
    wheel: torch
    recipe: torch
    hipify: {mode: off}
    smoke: pass
  audio:
    checkout-dir: audio
    origin: file:///o/audio
    ref: main
    wheel: torchaudio
    recipe: audio
    pinned-by:
      project: TORCHY
      related-commits: {file: related_commits, os: ubuntu, key: torchaudio}
    hipify: {mode: off}
    smoke: pass
";

    #[test]
    fn semantic_errors_name_the_line() {
        let error = parse(&MINIMAL.replace("TORCHY", "torhc")).expect_err("unknown project");
        assert_eq!(
            error.to_string(),
            "stack.yaml:18: 'audio' is pinned by unknown project 'torhc' (did you mean 'torch'?)"
        );
        let error = parse(
            &MINIMAL
                .replace("TORCHY", "torch")
                .replace("checkout-dir: audio", "checkout-dir: pytorch"),
        )
        .expect_err("shared dir");
        assert_eq!(
            error.to_string(),
            "stack.yaml:12: projects 'torch' and 'audio' share the checkout directory 'pytorch'"
        );
        // A recipe name is checked where it is used (recipes), with this line.
        let stack = parse(
            &MINIMAL
                .replace("TORCHY", "torch")
                .replace("recipe: audio", "recipe: audoi"),
        )
        .expect("recipes are not checked at load");
        assert_eq!(
            (
                stack.projects["audio"].recipe.as_str(),
                stack.projects["audio"].recipe_line
            ),
            ("audoi", Some(16))
        );
    }

    #[test]
    fn a_wheel_and_its_smoke_code_come_together() {
        let minimal = MINIMAL.replace("TORCHY", "torch");
        let error = parse(&minimal.replacen("    smoke: pass\n", "", 1)).expect_err("no smoke");
        assert_eq!(
            error.to_string(),
            "stack.yaml:3: project 'torch' names its wheel but no `smoke:` (the Python `rockbuild smoke` runs to import it)"
        );
        let error = parse(&minimal.replacen("    wheel: torch\n", "", 1)).expect_err("no wheel");
        assert_eq!(
            error.to_string(),
            "stack.yaml:9: project 'torch' has `smoke:` but no `wheel:`: a project that makes no wheel has nothing to import; drop `smoke:` or name its wheel"
        );
        // Neither: a project that makes no wheel (its recipe says whether that is right).
        let stack = parse(&minimal.replacen("    wheel: torch\n", "", 1).replacen(
            "    smoke: pass\n",
            "",
            1,
        ))
        .expect("a component that is not a wheel");
        assert_eq!(
            (
                &stack.projects["torch"].wheel,
                &stack.projects["torch"].smoke
            ),
            (&None, &None)
        );
    }

    #[test]
    fn edits_submodules_is_a_hipify_script_setting() {
        let stack = Stack::load(None).expect("loads");
        let HipifyPolicy::Script {
            edits_submodules, ..
        } = &stack.projects["torch"].hipify
        else {
            panic!("torch hipifies with its script");
        };
        assert_eq!(
            edits_submodules.as_deref(),
            Some(
                &[
                    "third_party/fbgemm",
                    "third_party/gloo",
                    "third_party/kineto",
                    "third_party/nvfuser",
                    "third_party/tensorpipe"
                ]
                .map(String::from)[..]
            )
        );
        let error = parse(&MINIMAL.replace("TORCHY", "torch").replacen(
            "hipify: {mode: off}",
            "hipify: {mode: off, edits-submodules: [third_party/gloo]}",
            1,
        ))
        .expect_err("not a script");
        assert_eq!(
            error.to_string(),
            "stack.yaml:9: script, check-paths, allow, edits-submodules and leftover-cuda only apply to hipify mode `script`"
        );
    }

    #[test]
    fn unknown_projects_are_usage_errors_with_a_suggestion() {
        let stack = Stack::load(None).expect("loads");
        let error = stack.project("vison").expect_err("unknown");
        assert_eq!(
            error.to_string(),
            "unknown project 'vison' (did you mean 'vision'?); projects in configs/stack.yaml (built in): torch, audio, vision, triton, apex"
        );
    }
}
