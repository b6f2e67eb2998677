//! Version presets: for a requested torch ref, the origin, ref and pin rule of every project
//! (configs/presets.yaml, embedded; `--presets FILE` replaces it). The table's shape is checked
//! at load, its references to the stack (origin names, pin rules) when a preset is chosen — both
//! with the file and line of the entry at fault.

use std::path::Path;

use indexmap::IndexMap;
use serde::Deserialize;

use super::source::{self, ConfigError, ConfigSource};
use super::{PinSource, Project, Stack, UPSTREAM};

pub const DEFAULT_PRESETS: &str = include_str!("../../configs/presets.yaml");

/// The `ref:` value that stands for the torch ref which selected the preset.
pub const REQUESTED: &str = "requested";

/// The choice for the stack's own default torch ref when no preset lists it: every project
/// as the stack config has it.
pub const STACK_DEFAULTS: &str = "stack";

/// What a preset says about one project's ref.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "value")]
pub enum RefRule {
    /// The torch ref that selected the preset.
    Requested,
    /// A fixed branch, tag or SHA.
    Fixed(String),
    /// Follow the project's `pinned-by` rule; `fallback` when not required and no pin exists
    /// (`None`: the project's default ref).
    Pin {
        required: bool,
        fallback: Option<String>,
    },
}

/// One project's row of a preset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub origin: String,
    pub reference: RefRule,
    pub line: Option<usize>,
}

/// A validated preset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preset {
    pub name: String,
    pub description: String,
    /// Torch refs that select it (empty for the default): exact refs, or patterns in which
    /// `*` stands for any run of characters within one `/`-separated part (`release/*`).
    pub torch_refs: Vec<String>,
    pub line: Option<usize>,
    pub rules: IndexMap<String, Rule>,
}

/// The whole table, validated.
#[derive(Clone, Debug)]
pub struct PresetTable {
    pub source_name: String,
    pub presets: Vec<Preset>,
    pub default: Preset,
}

/// A project's origin and ref rule under a chosen preset, checked against the stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectRule {
    /// The origin's name (`upstream`, `rocm-fork`) and URL.
    pub origin_name: String,
    pub origin: String,
    pub reference: RefRule,
    /// `file:line` of the row, for messages (`None`: the stack's own default).
    pub at: Option<String>,
}

/// The preset chosen for a torch ref, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub name: String,
    pub description: String,
    /// One sentence: which ref matched which row, or that none did.
    pub reason: String,
    pub rules: IndexMap<String, ProjectRule>,
}

// ---- the file format ----

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct PresetsFile {
    schema: u32,
    presets: IndexMap<String, PresetEntry>,
    default: DefaultEntry,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct PresetEntry {
    description: String,
    torch_refs: Vec<String>,
    projects: IndexMap<String, RuleEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct DefaultEntry {
    description: String,
    projects: IndexMap<String, RuleEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct RuleEntry {
    #[serde(default)]
    origin: Option<String>,
    #[serde(default, rename = "ref")]
    reference: Option<String>,
    #[serde(default)]
    pin: Option<PinRequirement>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
enum PinRequirement {
    Required,
    Optional,
}

impl PresetTable {
    /// Loads the embedded table or the file given with `--presets`.
    pub fn load(path: Option<&Path>) -> anyhow::Result<PresetTable> {
        let source = ConfigSource::flag_or_embedded(path, "configs/presets.yaml", DEFAULT_PRESETS)?;
        PresetTable::parse(&source).map_err(|e| crate::exit::Classified::from(e).into())
    }

    pub fn parse(source: &ConfigSource) -> Result<PresetTable, ConfigError> {
        let file: PresetsFile = source.parse()?;
        source.check_schema(file.schema)?;
        let mut presets: Vec<Preset> = Vec::new();
        for (name, entry) in file.presets {
            if entry.torch_refs.is_empty() {
                return Err(source.error_at(
                    &["presets", &name, "torch-refs"],
                    format!("preset '{name}' lists no torch refs"),
                ));
            }
            for reference in &entry.torch_refs {
                // A pattern is a ref name once its wildcards are filled in.
                if let Err(invalid) = crate::git::RefName::parse(&reference.replace('*', "x")) {
                    return Err(source.error_at(
                        &["presets", &name, "torch-refs"],
                        format!(
                            "preset '{name}': `{reference}` is not a valid ref or ref pattern: {}",
                            invalid.reason
                        ),
                    ));
                }
                if let Some(other) = presets.iter().find(|p| p.torch_refs.contains(reference)) {
                    return Err(source.error_at(
                        &["presets", &name, "torch-refs"],
                        format!(
                            "torch ref '{reference}' is listed by preset '{}' (line {}) and by '{name}'; a ref selects one preset",
                            other.name,
                            other.line.unwrap_or_default()
                        ),
                    ));
                }
            }
            let rules = rules(source, &["presets", &name], entry.projects)?;
            presets.push(Preset {
                line: source::locate(&source.text, &["presets", &name]),
                name,
                description: entry.description,
                torch_refs: entry.torch_refs,
                rules,
            });
        }
        let default = Preset {
            name: "default".into(),
            description: file.default.description,
            torch_refs: Vec::new(),
            line: source::locate(&source.text, &["default"]),
            rules: rules(source, &["default"], file.default.projects)?,
        };
        Ok(PresetTable {
            source_name: source.name.clone(),
            presets,
            default,
        })
    }

    /// The preset a torch ref selects, else the default; the rules are checked against the
    /// stack. An exact entry wins over every pattern, a more specific pattern (more characters
    /// that are not `*`) over a less specific one: exceptions to a rule such as `release/*` are
    /// rows of their own. Two presets matching equally well is an error naming both.
    ///
    /// `requested` says whether the torch ref was asked for (a flag) or is the stack's own
    /// default ref: a requested ref no preset lists takes the default (the reference's rule
    /// for every ref but nightly); the stack's own ref, when no preset lists it, keeps the
    /// stack config's origins and pins followed where present ([`STACK_DEFAULTS`]).
    pub fn choose(
        &self,
        stack: &Stack,
        torch_ref: &str,
        requested: bool,
    ) -> Result<Choice, ConfigError> {
        let mut best: Vec<(Rank, &Preset, &str)> = Vec::new();
        for preset in &self.presets {
            for entry in &preset.torch_refs {
                let Some(rank) = rank(entry, torch_ref) else {
                    continue;
                };
                match best.first() {
                    Some((top, ..)) if *top > rank => {}
                    Some((top, ..)) if *top == rank => best.push((rank, preset, entry)),
                    _ => best = vec![(rank, preset, entry)],
                }
            }
        }
        let (preset, reason) = match best.as_slice() {
            [] if !requested => {
                let preset = Preset {
                    name: STACK_DEFAULTS.into(),
                    description: "the stack config's origins, pins followed where present".into(),
                    torch_refs: Vec::new(),
                    line: None,
                    rules: IndexMap::new(),
                };
                return Ok(Choice {
                    reason: format!(
                        "torch ref '{torch_ref}' is the stack's own default ({}) and no preset lists it: the stack's origins, pins followed where present",
                        stack.source_name
                    ),
                    rules: self.project_rules(stack, &preset)?,
                    name: preset.name,
                    description: preset.description,
                });
            }
            [] => (
                &self.default,
                format!(
                    "no preset lists or matches torch ref '{torch_ref}'; the default applies ({})",
                    self.at(self.default.line)
                ),
            ),
            [(Rank::Exact, preset, _)] => (
                *preset,
                format!(
                    "torch ref '{torch_ref}' is listed by preset '{}' ({})",
                    preset.name,
                    self.at(preset.line)
                ),
            ),
            [(_, preset, entry)] => (
                *preset,
                format!(
                    "torch ref '{torch_ref}' matches '{entry}' of preset '{}' ({})",
                    preset.name,
                    self.at(preset.line)
                ),
            ),
            [(_, first, first_entry), (_, second, second_entry), ..] => {
                return Err(ConfigError {
                    file: self.source_name.clone(),
                    line: second.line,
                    column: None,
                    message: format!(
                        "torch ref '{torch_ref}' matches '{first_entry}' of preset '{}' (line {}) and '{second_entry}' of preset '{}' equally well; list the ref exactly under the preset it belongs to, or make one pattern more specific",
                        first.name,
                        first.line.unwrap_or_default(),
                        second.name
                    ),
                });
            }
        };
        Ok(Choice {
            name: preset.name.clone(),
            description: preset.description.clone(),
            reason,
            rules: self.project_rules(stack, preset)?,
        })
    }

    fn at(&self, line: Option<usize>) -> String {
        match line {
            Some(line) => format!("{}:{line}", self.source_name),
            None => self.source_name.clone(),
        }
    }

    /// Every stack project's rule under `preset`: its row, or the stack's defaults.
    fn project_rules(
        &self,
        stack: &Stack,
        preset: &Preset,
    ) -> Result<IndexMap<String, ProjectRule>, ConfigError> {
        let error = |line: Option<usize>, message: String| ConfigError {
            file: self.source_name.clone(),
            line,
            column: None,
            message,
        };
        for (name, rule) in &preset.rules {
            if !stack.projects.contains_key(name) {
                let hint = source::did_you_mean(name, stack.projects.keys().map(String::as_str))
                    .map(|s| format!(" (did you mean '{s}'?)"))
                    .unwrap_or_default();
                return Err(error(
                    rule.line,
                    format!(
                        "preset '{}' names project '{name}', which is not in {}{hint}",
                        preset.name, stack.source_name
                    ),
                ));
            }
        }
        let primary = primary_project(stack);
        let mut out = IndexMap::new();
        for project in stack.projects.values() {
            let Some(rule) = preset.rules.get(&project.name) else {
                out.insert(project.name.clone(), stack_default(project, primary));
                continue;
            };
            let origin = project.origin_named(&rule.origin).ok_or_else(|| {
                let names = project.origin_names();
                let hint = source::did_you_mean(&rule.origin, names.iter().copied())
                    .map(|s| format!(" (did you mean '{s}'?)"))
                    .unwrap_or_default();
                error(
                    rule.line,
                    format!(
                        "preset '{}' takes '{}' from origin '{}'{hint}, which {} does not define for it (it has: {}); add it under the project's `origins:`",
                        preset.name,
                        project.name,
                        rule.origin,
                        stack.source_name,
                        names.join(", ")
                    ),
                )
            })?;
            match &rule.reference {
                RefRule::Pin { .. } if project.pin == PinSource::Explicit => {
                    return Err(error(
                        rule.line,
                        format!(
                            "preset '{}' pins '{}', which has no `pinned-by` in {}",
                            preset.name, project.name, stack.source_name
                        ),
                    ));
                }
                RefRule::Requested if Some(project.name.as_str()) != primary => {
                    return Err(error(
                        rule.line,
                        format!(
                            "preset '{}': `ref: {REQUESTED}` only applies to '{}', whose ref selects the preset",
                            preset.name,
                            primary.unwrap_or("torch")
                        ),
                    ));
                }
                _ => {}
            }
            out.insert(
                project.name.clone(),
                ProjectRule {
                    origin_name: rule.origin.clone(),
                    origin: origin.to_string(),
                    reference: rule.reference.clone(),
                    at: Some(self.at(rule.line)),
                },
            );
        }
        Ok(out)
    }

    /// The table as `rockbuild presets` prints it: one row per preset and project, origins
    /// as the stack resolves them.
    pub fn to_text(&self, stack: &Stack) -> String {
        let primary = primary_project(stack);
        let mut rows = Vec::new();
        for preset in self.presets.iter().chain(std::iter::once(&self.default)) {
            let refs = if preset.torch_refs.is_empty() {
                "(any other)".to_string()
            } else {
                preset.torch_refs.join(" ")
            };
            for (index, project) in stack.projects.values().enumerate() {
                let (origin, reference) = match preset.rules.get(&project.name) {
                    Some(rule) => (
                        project
                            .origin_named(&rule.origin)
                            .map(crate::redact::redact_url)
                            .unwrap_or_else(|| format!("({} undefined)", rule.origin)),
                        rule.reference.clone(),
                    ),
                    None => {
                        let rule = stack_default(project, primary);
                        (rule.origin, rule.reference)
                    }
                };
                // A related_commits row names its own origin (the stack's is the fallback).
                let origin = match (&reference, &project.pin) {
                    (RefRule::Pin { .. }, PinSource::RelatedCommits { .. }) => {
                        format!("the row's, else {origin}")
                    }
                    _ => origin,
                };
                let reference = describe_ref(&reference, project);
                let first = index == 0;
                rows.push(vec![
                    if first {
                        preset.name.clone()
                    } else {
                        String::new()
                    },
                    if first { refs.clone() } else { String::new() },
                    project.name.clone(),
                    origin,
                    reference,
                ]);
            }
        }
        let mut text =
            crate::ui::text_table(&["preset", "torch ref", "project", "origin", "ref"], &rows);
        text.push_str(&format!("\n\nfrom {}", self.source_name));
        for preset in self.presets.iter().chain(std::iter::once(&self.default)) {
            text.push_str(&format!("\n  {}: {}", preset.name, preset.description));
        }
        text.push('\n');
        text
    }
}

/// How well a `torch-refs:` entry matches a ref.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    /// A pattern, by how many of its characters are not `*`.
    Pattern(usize),
    Exact,
}

/// Whether `entry` selects `reference`, and how specifically.
fn rank(entry: &str, reference: &str) -> Option<Rank> {
    if !entry.contains('*') {
        return (entry == reference).then_some(Rank::Exact);
    }
    glob_matches(entry.as_bytes(), reference.as_bytes())
        .then(|| Rank::Pattern(entry.chars().filter(|c| *c != '*').count()))
}

/// `*` matches any run of characters but `/` (one part of a ref name), as a shell glob does
/// for paths; every other character matches itself.
fn glob_matches(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => {
            let part = text.iter().position(|c| *c == b'/').unwrap_or(text.len());
            (0..=part).any(|skip| glob_matches(rest, &text[skip..]))
        }
        Some((c, rest)) => text.first() == Some(c) && glob_matches(rest, &text[1..]),
    }
}

/// How a ref rule reads in the table and in messages.
pub fn describe_ref(rule: &RefRule, project: &Project) -> String {
    let pin = || match &project.pin {
        PinSource::RelatedCommits { from, file, .. } => format!("{from}'s {file}"),
        PinSource::CommitFile {
            from, commit_file, ..
        } => {
            let name = commit_file.rsplit('/').next().unwrap_or(commit_file);
            format!("{from}'s {name}")
        }
        PinSource::Explicit => "no pin".to_string(),
    };
    match rule {
        RefRule::Requested => "the requested ref".into(),
        RefRule::Fixed(reference) => reference.clone(),
        RefRule::Pin { required: true, .. } => format!("{} (required)", pin()),
        RefRule::Pin {
            required: false,
            fallback,
        } => format!(
            "{}, else {}",
            pin(),
            fallback.as_deref().unwrap_or(&project.default_ref)
        ),
    }
}

/// The project whose ref selects the preset: the first one nothing pins (torch).
pub fn primary_project(stack: &Stack) -> Option<&str> {
    stack
        .projects
        .values()
        .find(|p| p.pin.pinned_by().is_none())
        .map(|p| p.name.as_str())
}

/// A project a preset does not name: the stack's own origin, an optional pin or its ref.
fn stack_default(project: &Project, primary: Option<&str>) -> ProjectRule {
    let reference = if Some(project.name.as_str()) == primary {
        RefRule::Requested
    } else if project.pin.pinned_by().is_some() {
        RefRule::Pin {
            required: false,
            fallback: None,
        }
    } else {
        RefRule::Fixed(project.default_ref.clone())
    };
    ProjectRule {
        origin_name: UPSTREAM.into(),
        origin: project.origin.clone(),
        reference,
        at: None,
    }
}

fn rules(
    source: &ConfigSource,
    at: &[&str],
    entries: IndexMap<String, RuleEntry>,
) -> Result<IndexMap<String, Rule>, ConfigError> {
    let mut out = IndexMap::new();
    for (project, entry) in entries {
        let mut path = at.to_vec();
        path.extend(["projects", project.as_str()]);
        if let Some(reference) = entry.reference.as_deref().filter(|r| *r != REQUESTED)
            && let Err(invalid) = crate::git::RefName::parse(reference)
        {
            let mut at_ref = path.clone();
            at_ref.push("ref");
            return Err(source.error_at(&at_ref, format!("'{project}': {invalid}")));
        }
        let reference = match (entry.reference, entry.pin) {
            (Some(reference), None) if reference == REQUESTED => RefRule::Requested,
            (Some(reference), None) => RefRule::Fixed(reference),
            (None, Some(PinRequirement::Required)) => RefRule::Pin {
                required: true,
                fallback: None,
            },
            (fallback, Some(PinRequirement::Optional))
                if fallback.as_deref() != Some(REQUESTED) =>
            {
                RefRule::Pin {
                    required: false,
                    fallback,
                }
            }
            (None, None) => {
                return Err(source.error_at(
                    &path,
                    format!("'{project}' needs `ref:` or `pin:` (required or optional)"),
                ));
            }
            (Some(_), Some(_)) | (None, Some(PinRequirement::Optional)) => {
                return Err(source.error_at(
                    &path,
                    format!(
                        "'{project}': a required pin has no fallback, and `{REQUESTED}` cannot be one; drop `ref:` or make the pin optional"
                    ),
                ));
            }
        };
        out.insert(
            project.clone(),
            Rule {
                origin: entry.origin.unwrap_or_else(|| UPSTREAM.to_string()),
                reference,
                line: source::locate(&source.text, &path),
            },
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<PresetTable, ConfigError> {
        PresetTable::parse(&ConfigSource {
            name: "presets.yaml".into(),
            text: text.into(),
        })
    }

    fn shipped() -> (PresetTable, Stack) {
        (
            PresetTable::load(None).expect("presets load"),
            Stack::load(None).expect("stack loads"),
        )
    }

    /// Every torch ref the release table builds (configs/releases.yaml, as shipped).
    fn release_table_refs() -> Vec<String> {
        let table: yaml_serde::Value =
            yaml_serde::from_str(include_str!("../../configs/releases.yaml")).expect("yaml");
        let mut refs: Vec<String> = table["release-types"]
            .as_mapping()
            .expect("release types")
            .values()
            .flat_map(|release| release["pytorch-refs"].as_sequence().cloned())
            .flatten()
            .map(|r| r.as_str().expect("a ref").to_string())
            .collect();
        refs.sort();
        refs.dedup();
        refs
    }

    /// The reference's rule (generate_pytorch_source_manifest.py: every ref but `nightly` from
    /// ROCm/pytorch with required related_commits pins), over every ref the release table
    /// builds, the versions earlier tables named, and one newer than every table.
    #[test]
    fn release_branches_build_the_rocm_fork_with_required_pins() {
        let (presets, stack) = shipped();
        let table = release_table_refs();
        assert!(table.len() > 1, "{table:?}");
        let releases = table.iter().filter(|r| *r != "nightly").map(String::as_str);
        for reference in releases.chain(["release/2.7", "release/2.10", "release/2.99"]) {
            let choice = presets.choose(&stack, reference, true).expect("valid");
            assert_eq!(choice.name, "rocm-release", "{reference}");
            assert_eq!(
                choice.reason,
                format!(
                    "torch ref '{reference}' matches 'release/*' of preset 'rocm-release' (configs/presets.yaml (built in):51)"
                )
            );
            assert_rocm_fork_with_required_pins(&choice, reference);
        }
    }

    /// The reference's rule for every ref but nightly: torch from ROCm/pytorch at the ref,
    /// every other project pinned, the pin required; triton from ROCm/triton.
    #[track_caller]
    fn assert_rocm_fork_with_required_pins(choice: &Choice, reference: &str) {
        let torch = &choice.rules["torch"];
        assert_eq!(
            (torch.origin.as_str(), &torch.reference),
            ("https://github.com/ROCm/pytorch.git", &RefRule::Requested),
            "{reference}"
        );
        for pinned in ["audio", "vision", "apex", "triton"] {
            assert_eq!(
                choice.rules[pinned].reference,
                RefRule::Pin {
                    required: true,
                    fallback: None
                },
                "{reference}: {pinned}"
            );
        }
        assert_eq!(
            choice.rules["triton"].origin,
            "https://github.com/ROCm/triton.git"
        );
    }

    #[test]
    fn nightly_builds_upstream() {
        let (presets, stack) = shipped();
        assert!(release_table_refs().iter().any(|r| r == "nightly"));
        let choice = presets.choose(&stack, "nightly", true).expect("valid");
        assert_eq!(choice.name, "nightly");
        let row = |name: &str| {
            let rule = &choice.rules[name];
            (rule.origin.as_str(), rule.reference.clone())
        };
        assert_eq!(
            row("torch"),
            ("https://github.com/pytorch/pytorch.git", RefRule::Requested)
        );
        assert_eq!(
            row("audio"),
            (
                "https://github.com/pytorch/audio.git",
                RefRule::Fixed("nightly".into())
            )
        );
        assert_eq!(
            row("vision"),
            (
                "https://github.com/pytorch/vision.git",
                RefRule::Fixed("nightly".into())
            )
        );
        assert_eq!(
            row("apex"),
            (
                "https://github.com/ROCm/apex.git",
                RefRule::Fixed("master".into())
            )
        );
        assert_eq!(
            row("triton"),
            (
                "https://github.com/ROCm/triton.git",
                RefRule::Pin {
                    required: true,
                    fallback: None
                }
            )
        );
    }

    /// The reference's rule for every ref but nightly, applied to refs no preset lists: a
    /// tag (`v2.12.0`), a SHA or a branch of one's own goes to the ROCm fork with every pin
    /// required; the stack's own default ref, asked for by no one, keeps the stack's origins
    /// and optional pins.
    #[test]
    fn other_refs_take_the_rocm_fork_with_required_pins() {
        let (presets, stack) = shipped();
        for reference in [
            "v2.12.0",
            "0123456789abcdef0123456789abcdef01234567",
            "my-feature",
        ] {
            let choice = presets.choose(&stack, reference, true).expect("valid");
            assert_eq!(choice.name, "default", "{reference}");
            assert_eq!(
                choice.reason,
                format!(
                    "no preset lists or matches torch ref '{reference}'; the default applies (configs/presets.yaml (built in):68)"
                )
            );
            assert_rocm_fork_with_required_pins(&choice, reference);
        }
        let own = presets.choose(&stack, "my-feature", false).expect("valid");
        assert_eq!(own.name, STACK_DEFAULTS);
        assert_eq!(
            own.reason,
            "torch ref 'my-feature' is the stack's own default (configs/stack.yaml (built in)) and no preset lists it: the stack's origins, pins followed where present"
        );
        assert_eq!(
            own.rules["torch"].origin,
            "https://github.com/pytorch/pytorch.git"
        );
        assert_eq!(
            own.rules["audio"].reference,
            RefRule::Pin {
                required: false,
                fallback: None
            }
        );
        // The shipped stack's own ref is nightly, which its preset lists.
        let nightly = &stack.projects["torch"].default_ref;
        assert_eq!(
            presets.choose(&stack, nightly, false).expect("valid").name,
            "nightly"
        );
    }

    #[test]
    fn a_pattern_takes_one_part_of_a_ref_and_exact_rows_are_its_exceptions() {
        let stack = Stack::load(None).expect("stack loads");
        let text = VALID
            .replace("torch-refs: [release/2.9]", "torch-refs: [release/*]")
            .replace(
                "default:",
                "  older:\n    description: o\n    torch-refs: [release/1.*, release/2.6]\n    projects:\n      torch: {ref: requested}\ndefault:",
            )
            .replace("origin: fork", "origin: rocm-fork");
        let presets = table(&text).expect("valid");
        let chosen: Vec<(&str, String)> = [
            "release/2.13",
            "release/2.6",
            "release/1.13",
            "release/2.13/rc",
            "my-release/2.13",
            "release",
        ]
        .into_iter()
        .map(|r| (r, presets.choose(&stack, r, true).expect("valid").name))
        .collect();
        assert_eq!(
            chosen,
            [
                ("release/2.13", "rel".to_string()),
                ("release/2.6", "older".into()),
                ("release/1.13", "older".into()),
                ("release/2.13/rc", "default".into()),
                ("my-release/2.13", "default".into()),
                ("release", "default".into()),
            ]
        );
        // Two presets matching as specifically: an error naming both, not the first one listed.
        let tied = VALID.replace("torch-refs: [release/2.9]", "torch-refs: [release/*]").replace(
            "default:",
            "  other:\n    description: o\n    torch-refs: [rel*/2.13]\n    projects:\n      torch: {ref: requested}\ndefault:",
        );
        let error = table(&tied)
            .expect("valid")
            .choose(&stack, "release/2.13", true)
            .expect_err("ambiguous")
            .to_string();
        assert_eq!(
            error,
            "presets.yaml:9: torch ref 'release/2.13' matches 'release/*' of preset 'rel' (line 3) and 'rel*/2.13' of preset 'other' equally well; list the ref exactly under the preset it belongs to, or make one pattern more specific"
        );
    }

    #[test]
    fn the_table_prints_as_documented() {
        let (presets, stack) = shipped();
        insta::assert_snapshot!(presets.to_text(&stack));
    }

    /// docs/user-guide.md shows the table exactly as `rockbuild presets` prints it.
    #[test]
    fn the_user_guide_shows_the_table_as_printed() {
        let (presets, stack) = shipped();
        let guide = include_str!("../../docs/user-guide.md");
        assert!(
            guide.contains(&presets.to_text(&stack)),
            "docs/user-guide.md: paste the output of `rockbuild presets` into section 1"
        );
    }

    const VALID: &str = "schema: 1
presets:
  rel:
    description: r
    torch-refs: [release/2.9]
    projects:
      torch: {origin: fork, ref: requested}
      audio: {pin: required}
default:
  description: d
  projects:
    torch: {ref: requested}
";

    #[test]
    fn bad_tables_name_the_line() {
        let errors: Vec<String> = [
            VALID.replace("{pin: required}", "{pin: required, ref: main}"),
            VALID.replace("{pin: required}", "{origin: upstream}"),
            VALID.replace("torch-refs: [release/2.9]", "torch-refs: []"),
            VALID.replace("torch-refs: [release/2.9]", "torch-refs: [release/*..]"),
            VALID.replace("{pin: required}", "{pin: always}"),
            VALID.replace("description: r", "descripton: r"),
            VALID.replace(
                "default:",
                "  again:\n    description: a\n    torch-refs: [release/2.9]\n    projects: {}\ndefault:",
            ),
        ]
        .iter()
        .map(|text| table(text).expect_err("invalid").to_string())
        .collect();
        insta::assert_snapshot!(errors.join("\n"));
    }

    #[test]
    fn references_to_the_stack_are_checked_when_chosen() {
        let stack = Stack::load(None).expect("stack loads");
        let errors: Vec<String> = [
            VALID.to_string(),
            VALID.replace("audio: {pin: required}", "audoi: {pin: required}"),
            VALID
                .replace("torch: {origin: fork,", "torch: {origin: rocm-fork,")
                .replace("audio: {pin: required}", "apex: {ref: requested}"),
            VALID.replace(
                "torch: {origin: fork, ref: requested}",
                "torch: {origin: rocm-fork, pin: optional}",
            ),
        ]
        .iter()
        .map(|text| {
            let presets = table(text).expect("shape is valid");
            presets
                .choose(&stack, "release/2.9", true)
                .expect_err("stack mismatch")
                .to_string()
        })
        .collect();
        insta::assert_snapshot!(errors.join("\n"));
        // The default is not checked for a ref that selects another preset, and vice versa.
        let presets = table(VALID).expect("valid");
        assert_eq!(
            presets.choose(&stack, "main", true).expect("default").name,
            "default"
        );
    }
}
