//! Settings of `lock`, and the selection `checkout` shares with it: which projects, and for
//! each its origin and ref rule — an explicit flag, else the version preset the torch ref
//! selects (configs/presets.yaml), else the stack's defaults — each recorded with its source.

use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;
use pep440_rs::VersionSpecifiers;

use super::{Source, Sourced};
use crate::build::targets;
use crate::checkout::{self, Selection};
use crate::cli::{LockArgs, LockBuildArgs, SelectionArgs, flag};
use crate::context::Context;
use crate::env_vars;
use crate::git::{self, TransferLimits};
use crate::lock::PinOrigin;
use crate::lock::resolve::{RefRequest, Request};
use crate::stack::presets::{self, Choice, PresetTable, RefRule};
use crate::stack::{FamilyTable, PinSource, Stack, Target};
use crate::version::ReleaseType;

/// Everything `lock` needs.
#[derive(Debug)]
pub struct LockSettings {
    pub selection: Selection,
    pub lock_path: PathBuf,
    pub build: BuildInputs,
    pub dry_run: bool,
    pub json: bool,
}

/// What `lock` records beyond the sources.
#[derive(Debug)]
pub struct BuildInputs {
    /// The index the SDK comes from, and the spec its version must match; `None`: no SDK in
    /// the lock (unless the lock being reproduced has one).
    pub sdk: Option<SdkQuery>,
    pub targets: Option<Sourced<Vec<Target>>>,
    pub version_suffix: Option<String>,
    pub release_type: ReleaseType,
    pub build_number: u32,
}

#[derive(Debug)]
pub struct SdkQuery {
    pub index_url: String,
    pub find_links: Option<String>,
    pub spec_text: String,
    pub spec: VersionSpecifiers,
    pub pre: bool,
}

impl LockSettings {
    pub fn resolve(args: LockArgs, ctx: &Context) -> anyhow::Result<Self> {
        let LockArgs {
            selection,
            root_checkout_dir,
            lock,
            build,
            dry_run,
            json,
        } = args;
        let families = selection.config.family_table(ctx)?;
        let root = root_checkout_dir.map_or_else(|| ctx.cwd.clone(), |r| ctx.absolute(&r));
        let lock_path = ctx.absolute(&lock);
        let selection = resolve_selection(selection, &root, &lock_path, ctx)?;
        Ok(LockSettings {
            selection,
            lock_path,
            build: build_inputs(build, &families, ctx)?,
            dry_run,
            json,
        })
    }
}

fn build_inputs(
    args: LockBuildArgs,
    families: &FamilyTable,
    ctx: &Context,
) -> anyhow::Result<BuildInputs> {
    let LockBuildArgs {
        index_url,
        find_links,
        rocm_sdk_version,
        no_pre,
        pytorch_rocm_arch,
        amdgpu_family,
        max_targets,
        allow_many_targets,
        release_type,
        version_suffix,
        pytorch_build_number,
    } = args;
    let sdk = match index_url.filter(|u| !u.trim().is_empty()) {
        Some(index_url) => Some(SdkQuery {
            index_url,
            find_links,
            spec: crate::sdk::preflight::parse_spec(&rocm_sdk_version)?,
            spec_text: rocm_sdk_version,
            pre: !no_pre,
        }),
        None => None,
    };
    let env = ctx
        .env()
        .non_empty(env_vars::PYTORCH_ROCM_ARCH)
        .map(str::to_string);
    // Targets are recorded when asked for, or when --index-url names a family; `build --lock`
    // then builds exactly those. The rules are build's (`build::targets`: flag >
    // PYTORCH_ROCM_ARCH > family, each name checked against the family table).
    let family = match (&amdgpu_family, &pytorch_rocm_arch, &env, &sdk) {
        (Some(family), ..) => Some(Sourced {
            value: family.clone(),
            source: Source::Flag("--amdgpu-family".into()),
        }),
        (None, None, None, Some(query)) => targets::family_of_index(&query.index_url, families)
            .ok()
            .map(|family| Sourced {
                value: family,
                source: Source::Inferred("--index-url".into()),
            }),
        _ => None,
    };
    let targets = if pytorch_rocm_arch.is_some() || env.is_some() || family.is_some() {
        let request = targets::TargetRequest {
            flag: pytorch_rocm_arch,
            env,
            family,
            max: max_targets,
            allow_many: allow_many_targets,
            ..Default::default()
        };
        let choice = targets::resolve(families, &request, &[])
            .map_err(|e| crate::exit::usage(e.to_string()))?;
        let source = match &choice.source {
            targets::TargetSource::Env => Source::Env(env_vars::PYTORCH_ROCM_ARCH.into()),
            other => Source::Flag(other.to_string()),
        };
        Some(Sourced {
            value: choice.targets,
            source,
        })
    } else {
        None
    };
    Ok(BuildInputs {
        sdk,
        targets,
        version_suffix,
        release_type,
        build_number: pytorch_build_number,
    })
}

/// Turns the shared selection flags into a [`Selection`]: the stack, the projects in stack
/// order, each project's origin and ref rule (flags over the chosen preset over the stack),
/// the lock being reproduced, transfer limits, the cache.
pub fn resolve_selection(
    args: SelectionArgs,
    root: &Path,
    lock_path: &Path,
    ctx: &Context,
) -> anyhow::Result<Selection> {
    let SelectionArgs {
        config,
        projects,
        repo_hashtag,
        gitrepo_origin,
        origins,
        hashtags,
        release,
        require_related_commit,
        from_lock,
        manifest_url,
        submodules,
        no_submodules,
        depth,
        jobs,
        cache_dir,
        presets,
        network,
    } = args;
    if let Some(0) = depth {
        return Err(crate::exit::usage("--depth must be at least 1"));
    }
    let stack = config.stack(ctx)?;
    for name in &projects {
        stack.project(name)?;
    }
    let (cache_dir, temporary_cache) = cache_dir_of(cache_dir.as_deref(), ctx)?;
    let limits = TransferLimits {
        timeout: Duration::from_secs(network.fetch_timeout.max(1)),
        stall: Duration::from_secs(network.stall_timeout.max(1)),
        attempts: network.fetch_attempts.max(1),
    };
    let selection = |projects, requests, preset, from_lock| Selection {
        stack: stack.clone(),
        projects,
        root: root.to_path_buf(),
        requests,
        preset,
        release,
        from_lock,
        submodules: flag(submodules, no_submodules).unwrap_or(true),
        depth,
        jobs,
        limits,
        cache_dir: cache_dir.value.clone(),
        _temporary_cache: temporary_cache,
        lock_path: lock_path.to_path_buf(),
    };
    let in_stack_order = |keep: &dyn Fn(&str) -> bool| -> Vec<String> {
        stack
            .projects
            .keys()
            .filter(|name| keep(name))
            .cloned()
            .collect()
    };

    let reproducing = match (&from_lock, &manifest_url) {
        (Some(_), _) => Some("--from-lock"),
        (None, Some(_)) => Some("--manifest-url"),
        (None, None) => None,
    };
    if let Some(flag) = reproducing
        && (repo_hashtag.is_some()
            || gitrepo_origin.is_some()
            || !origins.is_empty()
            || !hashtags.is_empty()
            || release)
    {
        return Err(crate::exit::usage(format!(
            "{flag} reproduces the commits it names exactly; it cannot be combined with --repo-hashtag, --gitrepo-origin, --origin, --hashtag or --release",
        )));
    }
    let reproduce = match (from_lock, manifest_url) {
        (Some(path), _) => {
            let path = ctx.absolute(&path);
            let pins = crate::lock::manifest::read_pins(&path, &stack)?;
            Some((path, pins))
        }
        (None, Some(url)) => {
            let waits = crate::lock::manifest_url::Waits {
                timeout: limits.stall.min(limits.timeout),
                attempts: limits.attempts,
            };
            let (shown, pins) = crate::lock::manifest_url::read_pins(&url, waits, &stack)?;
            // Where the pins came from, as the lock records it: the (masked) URL.
            Some((PathBuf::from(shown), pins))
        }
        (None, None) => None,
    };
    if let Some((path, pins)) = reproduce {
        // Default selection: what the lock being reproduced holds.
        let selected = in_stack_order(&|name| {
            if projects.is_empty() {
                pins.contains_key(name)
            } else {
                projects.iter().any(|p| p == name)
            }
        });
        return Ok(selection(
            selected,
            IndexMap::new(),
            Some(format!("none: reproducing {}", path.display())),
            Some((path, pins)),
        ));
    }

    let selected =
        in_stack_order(&|name| projects.is_empty() || projects.iter().any(|p| p == name));
    // --repo-hashtag / --gitrepo-origin apply to torch, or to the single --project.
    let primary = match projects.as_slice() {
        [only] => only.clone(),
        _ => presets::primary_project(&stack)
            .unwrap_or_default()
            .to_string(),
    };
    let overrides = overrides(
        &stack,
        &primary,
        repo_hashtag,
        gitrepo_origin,
        &origins,
        &hashtags,
    )?;
    let table = PresetTable::load(presets.map(|p| ctx.absolute(&p)).as_deref())?;
    let torch = presets::primary_project(&stack).unwrap_or_default();
    let torch_ref = match overrides.get(torch).and_then(|o| o.reference.clone()) {
        Some(flagged) => flagged,
        None => Sourced {
            value: stack.projects[torch].default_ref.clone(),
            source: Source::Config(stack.source_name.clone()),
        },
    };
    // Asked for (a flag or its variable), or the stack's own default ref.
    let requested = !matches!(torch_ref.source, Source::Config(_));
    let choice = table
        .choose(&stack, &torch_ref.value, requested)
        .map_err(|e| anyhow::Error::from(crate::exit::Classified::from(e)))?;
    let requests = selected
        .iter()
        .map(|name| {
            let flags = overrides.get(name.as_str());
            let request = request(
                &stack,
                &choice,
                name,
                &torch_ref,
                flags,
                require_related_commit,
            );
            (name.clone(), request)
        })
        .collect();
    let preset = format!("{} — {}", choice.name, choice.reason);
    Ok(selection(selected, requests, Some(preset), None))
}

/// A project's origin and ref rule under the chosen preset; flags first.
fn request(
    stack: &Stack,
    choice: &Choice,
    name: &str,
    torch_ref: &Sourced<String>,
    flags: Option<&Overrides>,
    require_related_commit: bool,
) -> Request {
    let project = &stack.projects[name];
    let rule = &choice.rules[name];
    let from_preset = |at: &Option<String>| match at {
        Some(_) => Source::Preset(choice.name.clone()),
        None => Source::Config(stack.source_name.clone()),
    };
    let origin = flags
        .and_then(|f| f.origin.clone())
        .unwrap_or_else(|| Sourced {
            value: rule.origin.clone(),
            source: from_preset(&rule.at),
        });
    let exact = |reference: &Sourced<String>| RefRequest::Exact {
        reference: reference.value.clone(),
        pin: match &reference.source {
            Source::Flag(flag) => PinOrigin::Flag { flag: flag.clone() },
            Source::Preset(preset) => PinOrigin::Preset {
                preset: preset.clone(),
            },
            _ => PinOrigin::Default,
        },
    };
    let rule = match (flags.and_then(|f| f.reference.as_ref()), &rule.reference) {
        (Some(flagged), _) => exact(flagged),
        (None, RefRule::Requested) => exact(torch_ref),
        (None, RefRule::Fixed(reference)) => exact(&Sourced {
            value: reference.clone(),
            source: from_preset(&rule.at),
        }),
        (None, RefRule::Pin { required, fallback }) => {
            let required_by = if *required {
                Some(format!(
                    "preset '{}', {}",
                    choice.name,
                    rule.at.clone().unwrap_or_default()
                ))
            } else if require_related_commit
                && matches!(project.pin, PinSource::RelatedCommits { .. })
            {
                Some("--require-related-commit".to_string())
            } else {
                None
            };
            RefRequest::Pinned {
                required_by,
                fallback: fallback
                    .clone()
                    .unwrap_or_else(|| project.default_ref.clone()),
                fallback_pin: match fallback {
                    Some(_) => PinOrigin::Preset {
                        preset: choice.name.clone(),
                    },
                    None => PinOrigin::Default,
                },
            }
        }
    };
    tracing::debug!(
        "{name}: origin {} ({}), ref rule {rule:?}",
        crate::redact::redact_url(&origin.value),
        origin.source
    );
    Request {
        origin_flag: match &origin.source {
            Source::Flag(flag) => Some(flag.clone()),
            _ => None,
        },
        origin: origin.value,
        rule,
        preset: Some(choice.name.clone()),
    }
}

/// Origins and refs named by flags, per project.
#[derive(Default)]
struct Overrides {
    origin: Option<Sourced<String>>,
    reference: Option<Sourced<String>>,
}

fn overrides(
    stack: &Stack,
    primary: &str,
    repo_hashtag: Option<String>,
    gitrepo_origin: Option<String>,
    origins: &[String],
    hashtags: &[String],
) -> anyhow::Result<IndexMap<String, Overrides>> {
    let flagged = |value: String, flag: &str| Sourced {
        value,
        source: Source::Flag(flag.to_string()),
    };
    // Refs and origins are checked where they were typed: a value git would read as an
    // option or a program never gets further than the flag that carried it.
    let checked = |value: &str, flag: &str, is_origin: bool| {
        let parsed = if is_origin {
            git::Origin::parse(value).map(drop)
        } else {
            git::RefName::parse(value).map(drop)
        };
        parsed.map_err(|invalid| crate::exit::usage(format!("{flag}: {invalid}")))
    };
    let mut out: IndexMap<String, Overrides> = IndexMap::new();
    if let Some(reference) = repo_hashtag {
        checked(&reference, "--repo-hashtag", false)?;
        out.entry(primary.to_string()).or_default().reference =
            Some(flagged(reference, "--repo-hashtag"));
    }
    if let Some(url) = gitrepo_origin {
        checked(&url, "--gitrepo-origin", true)?;
        out.entry(primary.to_string()).or_default().origin = Some(flagged(url, "--gitrepo-origin"));
    }
    for (flag_name, values, is_origin) in
        [("--origin", origins, true), ("--hashtag", hashtags, false)]
    {
        for value in values {
            let (name, rest) = value.split_once('=').ok_or_else(|| {
                crate::exit::usage(format!(
                    "{flag_name} {value}: expected NAME={}",
                    if is_origin { "URL" } else { "REF" }
                ))
            })?;
            stack.project(name)?;
            checked(rest, &format!("{flag_name} {name}"), is_origin)?;
            let entry = out.entry(name.to_string()).or_default();
            let slot = if is_origin {
                &mut entry.origin
            } else {
                &mut entry.reference
            };
            if let Some(previous) = slot
                && previous.value != rest
            {
                return Err(crate::exit::usage(format!(
                    "{flag_name} {value} contradicts {} {} for '{name}'",
                    previous.source, previous.value
                )));
            }
            *slot = Some(flagged(rest.to_string(), &format!("{flag_name} {value}")));
        }
    }
    Ok(out)
}

/// The mirror cache: `--cache-dir`, else `$XDG_CACHE_HOME/rockbuild`, else
/// `~/.cache/rockbuild`. The cache only saves work, so a default that cannot be used (no HOME,
/// a read-only home) is no error: the run gets a temporary cache of its own, removed at its
/// end, and fetches everything — as the reference, which has none, does — with a warning. A
/// `--cache-dir` that cannot be used is the user's to fix: the run fails naming it.
pub fn cache_dir_of(
    flag: Option<&Path>,
    ctx: &Context,
) -> anyhow::Result<(Sourced<PathBuf>, Option<tempfile::TempDir>)> {
    if let Some(dir) = flag {
        let cache = Sourced {
            value: ctx.absolute(dir),
            source: Source::Flag("--cache-dir".into()),
        };
        return Ok((cache, None));
    }
    let env = ctx.env();
    let default = if let Some(xdg) = env.non_empty(env_vars::XDG_CACHE_HOME) {
        Some(Sourced {
            value: PathBuf::from(xdg).join("rockbuild"),
            source: Source::Env(env_vars::XDG_CACHE_HOME.into()),
        })
    } else {
        env.non_empty(env_vars::HOME).map(|home| Sourced {
            value: PathBuf::from(home).join(".cache/rockbuild"),
            source: Source::Default,
        })
    };
    let problem = match &default {
        None => "neither XDG_CACHE_HOME nor HOME is set".to_string(),
        Some(cache) => match usable(&cache.value) {
            Ok(()) => return Ok((default.expect("matched Some"), None)),
            Err(error) => format!("{} cannot be used: {error}", cache.value.display()),
        },
    };
    let temporary = tempfile::Builder::new()
        .prefix("rockbuild-cache-")
        .tempdir()
        .map_err(|error| {
            crate::exit::usage(format!(
                "no cache directory ({problem}), and no temporary one either ({error}): pass --cache-dir DIR"
            ))
        })?;
    ctx.ui.warn(format!(
        "no cache of git mirrors and hipify results ({problem}): this run uses {} and removes it \
         at its end, so it fetches everything and the next run does again; pass --cache-dir DIR \
         (or set XDG_CACHE_HOME) to keep one",
        temporary.path().display()
    ));
    let cache = Sourced {
        value: temporary.path().to_path_buf(),
        source: Source::Inferred("a temporary cache for this run".into()),
    };
    Ok((cache, Some(temporary)))
}

/// Whether a cache can live at `dir`: it exists (or can be made) and takes a file.
fn usable(dir: &Path) -> std::io::Result<()> {
    fs_err::create_dir_all(dir)?;
    tempfile::tempfile_in(dir).map(drop)
}

/// The default lock of a root: `<root>/rockbuild.lock.json`.
pub fn default_lock_path(root: &Path) -> PathBuf {
    root.join(crate::lock::DEFAULT_FILE_NAME)
}

/// `checkout` and `lock` print which preset chose the refs before anything runs.
pub fn announce(selection: &checkout::Selection, ctx: &Context) {
    if let Some(preset) = &selection.preset {
        ctx.ui.status(format!("preset: {preset}"));
    }
}
