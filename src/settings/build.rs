//! `build` and `plan`: the flags, the stack and family tables, the lock and the environment,
//! resolved once into [`BuildSettings`]. Nothing else in the build reads a flag or an
//! environment variable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::sdk::{expect_locked_sdk, install_settings, resolve_venv};
use super::{Source, Sourced};
use crate::build::Error;
use crate::build::compilers::CompilerCache;
use crate::build::mode::ModeChoice;
use crate::build::select::Selection;
use crate::build::targets::{self, TargetRequest};
use crate::cli::{BuildArgs, ReferenceProjectArgs, SdkArgs, flag};
use crate::context::Context;
use crate::env_vars::{self, Environment};
use crate::lock::{self, Lock};
use crate::platform::Platform;
use crate::recipes::{OptionValues, Recipes};
use crate::sdk::Venv;
use crate::stack::{FamilyTable, IndexLayout, Stack};

pub use crate::build::input::{BuildSettings, LockFile, SdkSettings};

impl BuildSettings {
    pub fn resolve(args: BuildArgs, ctx: &Context, recipes: &Recipes) -> anyhow::Result<Self> {
        let BuildArgs {
            config,
            output_dir,
            install_rocm,
            sdk: sdk_args,
            root_checkout_dir,
            dirs,
            build,
            skip,
            reference,
            lock,
            pytorch_rocm_arch,
            amdgpu_family,
            arch_from_sdk,
            multi_arch,
            max_targets,
            allow_many_targets,
            pytorch_build_number,
            enable_pytorch_flash_attention,
            no_enable_pytorch_flash_attention,
            recipe_options,
            version_suffix,
            release_type,
            use_ccache,
            use_sccache,
            sccache_no_wrap,
            clean,
            jobs,
            dry_run,
            json,
            platform,
        } = args;
        let platform = platform.unwrap_or(Platform::host());
        if !platform.is_host() && !dry_run {
            return Err(Error::ForeignPlatform {
                platform,
                host: Platform::host(),
            }
            .into());
        }
        let output_dir = ctx.absolute(&output_dir);
        let stack = config.stack(ctx)?;
        let families = config.family_table(ctx)?;
        let (pytorch_rocm_arch, amdgpu_family) =
            super::detect::auto_targets(ctx, &families, pytorch_rocm_arch, amdgpu_family)?;
        let (lock, root) = lock_and_root(ctx, root_checkout_dir, lock)?;
        let lock_build = lock.as_ref().and_then(|l| l.lock.build.as_ref());
        let mut mode = ModeChoice::resolve(
            multi_arch,
            families.index_layout() == IndexLayout::MultiArch,
            lock_build.and_then(|b| b.recorded_mode()),
        );
        if let Some(url) = sdk_args
            .index_url
            .as_deref()
            .filter(|u| !super::detect::is_auto(Some(u)))
        {
            mode = mode.with_index(&families, "--index-url", url, "the build")?;
        }
        let sdk_args = SdkArgs {
            index_url: super::detect::auto_index_url_for(
                ctx,
                sdk_args.index_url,
                &families,
                mode.mode,
            )?,
            ..sdk_args
        };

        let selection = select_projects(
            ctx,
            &stack,
            recipes,
            root,
            ProjectFlags {
                dirs,
                build,
                skip,
                reference,
            },
        )?;
        let sdk = sdk_settings(
            ctx,
            &sdk_args,
            install_rocm,
            &output_dir,
            lock.as_ref(),
            platform,
        )?;
        let mut targets = TargetRequest {
            flag: pytorch_rocm_arch,
            env: ctx
                .env()
                .get(env_vars::PYTORCH_ROCM_ARCH)
                .map(str::to_string),
            family: amdgpu_family,
            from_sdk: arch_from_sdk,
            lock: lock_build
                .map(|b| b.targets.clone())
                .filter(|t| !t.is_empty()),
            max: max_targets,
            allow_many: allow_many_targets,
            unnamed_index: None,
        };
        infer_family(&mut targets, sdk_args.index_url.as_deref(), &families);

        // The reference's flag for torch's option is the torch recipe's to interpret.
        let options = OptionValues::resolve(
            recipes,
            &stack,
            &[(
                "enable-pytorch-flash-attention",
                flag(
                    enable_pytorch_flash_attention,
                    no_enable_pytorch_flash_attention,
                ),
            )],
            &recipe_options,
        )
        .map_err(Error::Recipes)?;
        let compiler_cache = CompilerCache::locate(
            use_ccache,
            use_sccache,
            sccache_no_wrap,
            ctx.env(),
            platform,
        )?;
        Ok(BuildSettings {
            stack,
            families,
            output_dir,
            selection,
            lock,
            sdk,
            targets,
            mode,
            release_type,
            version_suffix,
            build_number: pytorch_build_number,
            options,
            compiler_cache,
            clean,
            jobs,
            dry_run,
            json,
            base_env: base_env(ctx, platform),
            platform,
        })
    }
}

/// What the build steps inherit: this machine's environment, or for a plan for another
/// platform a stand-in that shows where that machine's variables go (`%PATH%`): its PATH,
/// and libuv_ROOT, which a Windows build machine sets for gloo.
fn base_env(ctx: &Context, platform: Platform) -> Environment {
    if platform.is_host() {
        return ctx.env().clone();
    }
    let inherited = [env_vars::PATH, env_vars::LIBUV_ROOT];
    Environment::from_pairs(inherited.map(|name| (name, platform.inherited(name))))
}

/// The lock: `--lock`, or `<root>/rockbuild.lock.json` when it exists. The checkout root:
/// `--root-checkout-dir`, else the lock's directory, else the working directory.
fn lock_and_root(
    ctx: &Context,
    root_checkout_dir: Option<PathBuf>,
    lock: Option<PathBuf>,
) -> anyhow::Result<(Option<LockFile>, Sourced<PathBuf>)> {
    let explicit_root = root_checkout_dir.map(|d| ctx.absolute(&d));
    let default_lock = explicit_root
        .as_ref()
        .unwrap_or(&ctx.cwd)
        .join(lock::DEFAULT_FILE_NAME);
    let lock_path = match lock {
        Some(path) => Some(ctx.absolute(&path)),
        None => default_lock.is_file().then_some(default_lock),
    };
    let lock = match lock_path {
        Some(path) => Some(LockFile {
            lock: Lock::read(&path)?,
            path,
        }),
        None => None,
    };
    let root = match (explicit_root, lock.as_ref().and_then(|l| l.path.parent())) {
        (Some(dir), _) => sourced(dir, Source::Flag("--root-checkout-dir".into())),
        (None, Some(dir)) => sourced(
            dir.to_path_buf(),
            Source::Inferred("the lock's directory".into()),
        ),
        (None, None) => sourced(
            ctx.cwd.clone(),
            Source::Inferred("the working directory".into()),
        ),
    };
    Ok((lock, root))
}

/// The venv, the install `--install-rocm` asks for (held to the lock's SDK), and the index
/// the lock's build record will name.
fn sdk_settings(
    ctx: &Context,
    args: &SdkArgs,
    install_rocm: bool,
    output_dir: &Path,
    lock: Option<&LockFile>,
    platform: Platform,
) -> anyhow::Result<SdkSettings> {
    let venv = resolve_venv(ctx, args.venv.as_deref(), Some(output_dir))?;
    let venv = Venv::for_platform(venv.dir, platform);
    if let Some(lock) = lock {
        expect_locked_sdk(&lock.lock, &lock.path, args)?;
    }
    let locked_version = lock.map(|l| l.lock.sdk_version()).transpose()?.flatten();
    let install = if install_rocm {
        Some(install_settings(
            ctx,
            args,
            venv.clone(),
            output_dir.join("logs/install-rocm.log"),
            locked_version.clone(),
        )?)
    } else {
        None
    };
    let record_index_url = install
        .as_ref()
        .and_then(|s| s.index_url.as_deref())
        .map(crate::redact::redact_url)
        .or_else(|| {
            lock.and_then(|l| l.lock.build.as_ref())
                .and_then(|b| b.index_url.clone())
        });
    Ok(SdkSettings {
        venv,
        install,
        spec_text: args.rocm_sdk_version.clone(),
        installer: args.installer,
        cache_dir: args.cache_dir(ctx),
        locked_version,
        record_index_url,
    })
}

fn sourced<T>(value: T, source: Source) -> Sourced<T> {
    Sourced { value, source }
}

/// With no target flag, no `PYTORCH_ROCM_ARCH` and no targets in the lock, an `--index-url`
/// whose last path segment is a family (TheRock's per-family indexes) stands for
/// `--amdgpu-family` of it. When it names none, the error for missing targets says so.
fn infer_family(request: &mut TargetRequest, index_url: Option<&str>, families: &FamilyTable) {
    let given = |value: Option<&String>| value.is_some_and(|v| !v.trim().is_empty());
    let no_targets = !given(request.flag.as_ref())
        && !given(request.env.as_ref())
        && !given(request.family.as_ref().map(|f| &f.value))
        && !request.from_sdk
        && request.lock.is_none();
    let Some(url) = index_url.filter(|u| !u.trim().is_empty()) else {
        return;
    };
    if !no_targets {
        return;
    }
    match targets::family_of_index(url, families) {
        Ok(family) => {
            request.family = Some(sourced(
                family,
                Source::Inferred(format!(
                    "the last path segment of --index-url {}",
                    crate::redact::redact_url(url)
                )),
            ));
        }
        Err(unnamed) => request.unnamed_index = Some(unnamed),
    }
}

/// The command line's flags that choose projects and their checkouts.
struct ProjectFlags {
    /// `--dir NAME=DIR`.
    dirs: Vec<String>,
    /// `--build NAME`.
    build: Vec<String>,
    /// `--skip NAME`.
    skip: Vec<String>,
    reference: ReferenceProjectArgs,
}

/// Which projects to build and where their checkouts are, from the generic flags and the
/// reference's per-project ones. The same project named twice with different answers is an
/// error, never a silent choice.
fn select_projects(
    ctx: &Context,
    stack: &Stack,
    recipes: &Recipes,
    root: Sourced<PathBuf>,
    flags: ProjectFlags,
) -> Result<Selection, Error> {
    let ProjectFlags {
        dirs,
        build,
        skip,
        reference,
    } = flags;
    let mut selection = Selection {
        root,
        dirs: BTreeMap::new(),
        build: BTreeMap::new(),
        // rockbuild's own `--build NAME` narrows the build to what it names; the reference's
        // `--build-…` only requires the checkout, as there.
        narrowed: !build.is_empty(),
    };
    for given in dirs {
        let Some((name, dir)) = given
            .split_once('=')
            .filter(|(name, dir)| !name.trim().is_empty() && !dir.is_empty())
        else {
            return Err(Error::DirSyntax { given });
        };
        let name = project_named(stack, "--dir", name.trim())?;
        let flag = format!("--dir {name}");
        choose(&mut selection.dirs, name, ctx.absolute(dir.as_ref()), flag)?;
    }
    for (names, value, verb) in [(build, true, "--build"), (skip, false, "--skip")] {
        for name in names {
            let name = project_named(stack, verb, &name)?;
            let flag = format!("{verb} {name}");
            choose(&mut selection.build, name, value, flag)?;
        }
    }
    // The reference's per-project flags: the dir flags first, then the build flags, each
    // taken by the project whose recipe answers to the reference's name.
    let given = reference.given();
    for reference in &given {
        if let Some(dir) = &reference.dir {
            let flag = format!("--{}-dir", reference.name);
            let name = project_of_reference(stack, recipes, &flag, reference.name)?;
            choose(&mut selection.dirs, name, ctx.absolute(dir), flag)?;
        }
    }
    for reference in given {
        if let Some(value) = reference.build {
            let flag = match value {
                true => format!("--build-{}", reference.name),
                false => format!("--no-build-{}", reference.name),
            };
            let project = project_of_reference(stack, recipes, &flag, reference.name)?;
            choose(&mut selection.build, project, value, flag)?;
        }
    }
    Ok(selection)
}

/// Records `value` for `project`; the same answer twice is fine, a different one is not.
fn choose<T: PartialEq>(
    choices: &mut BTreeMap<String, Sourced<T>>,
    project: String,
    value: T,
    flag: String,
) -> Result<(), Error> {
    match choices.get(&project) {
        Some(earlier) if earlier.value != value => Err(Error::Contradiction {
            project,
            first: earlier.source.to_string(),
            second: flag,
        }),
        Some(_) => Ok(()),
        None => {
            choices.insert(project, sourced(value, Source::Flag(flag)));
            Ok(())
        }
    }
}

/// A project named on the command line, with a suggestion when it is misspelled or named by
/// its checkout directory.
fn project_named(stack: &Stack, flag: &str, name: &str) -> Result<String, Error> {
    if stack.projects.contains_key(name) {
        return Ok(name.to_string());
    }
    let names: Vec<&str> = stack.projects.keys().map(String::as_str).collect();
    let hint = match stack.projects.values().find(|p| p.checkout_dir == name) {
        Some(project) => format!(
            " (did you mean '{}'? '{name}' is its checkout directory)",
            project.name
        ),
        None => crate::stack::source::did_you_mean(name, names.iter().copied())
            .map(|s| format!(" (did you mean '{s}'?)"))
            .unwrap_or_default(),
    };
    Err(Error::UnknownProject {
        flag: flag.to_string(),
        name: name.to_string(),
        hint,
        stack: stack.source_name.clone(),
        known: names.join(", "),
    })
}

/// The project a reference flag means: the first of the stack built by `recipe`.
fn project_of_reference(
    stack: &Stack,
    recipes: &Recipes,
    flag: &str,
    reference: &str,
) -> Result<String, Error> {
    let recipe = recipes
        .answering_to(reference)
        .map_or(reference, |recipe| recipe.name());
    stack
        .projects
        .values()
        .find(|p| p.recipe == recipe)
        .map(|p| p.name.clone())
        .ok_or_else(|| Error::NoProjectForRecipe {
            flag: flag.to_string(),
            recipe: recipe.to_string(),
            stack: stack.source_name.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> TargetRequest {
        TargetRequest {
            max: 8,
            ..TargetRequest::default()
        }
    }

    #[test]
    fn the_index_url_names_the_family_only_when_nothing_else_gives_targets() {
        let families = crate::stack::load_families(None).expect("families");
        let url = "https://rocm.nightlies.amd.com/v2/gfx110X-all/";
        let mut inferred = request();
        infer_family(&mut inferred, Some(url), &families);
        assert_eq!(
            inferred.family,
            Some(sourced(
                "gfx110X-all".to_string(),
                Source::Inferred(format!("the last path segment of --index-url {url}"))
            ))
        );
        let given = [
            TargetRequest {
                flag: Some("gfx906".into()),
                ..request()
            },
            TargetRequest {
                env: Some("gfx906".into()),
                ..request()
            },
            TargetRequest {
                from_sdk: true,
                ..request()
            },
            TargetRequest {
                lock: Some(vec![families.target("gfx906").expect("target")]),
                ..request()
            },
        ];
        for mut request in given {
            let before = request.clone();
            infer_family(&mut request, Some(url), &families);
            assert_eq!(
                (request.family, request.unnamed_index),
                (before.family, None)
            );
        }
        let mut unnamed = request();
        infer_family(
            &mut unnamed,
            Some("https://pypi.example/simple/"),
            &families,
        );
        assert_eq!(unnamed.family, None);
        assert_eq!(
            unnamed.unnamed_index.map(|u| u.segment).as_deref(),
            Some("simple")
        );
        let mut none = request();
        infer_family(&mut none, Some("  "), &families);
        assert_eq!((none.family, none.unnamed_index), (None, None));
    }

    #[test]
    fn one_project_one_answer() {
        let mut choices = BTreeMap::new();
        choose(&mut choices, "triton".into(), true, "--build-triton".into()).expect("first");
        choose(&mut choices, "triton".into(), true, "--build triton".into()).expect("same");
        assert_eq!(
            choose(&mut choices, "triton".into(), false, "--skip triton".into())
                .expect_err("contradiction")
                .to_string(),
            "--build-triton and --skip triton contradict each other for project 'triton': keep one"
        );
        assert_eq!(
            choices["triton"].source,
            Source::Flag("--build-triton".into())
        );
    }
}
