//! `rockbuild test`: flags, the lock, the family table, the skip lists, configs/pytorch-tests.yaml
//! and the environment, resolved once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Source, Sourced};
use crate::build::mode::ModeChoice;
use crate::cli::TestArgs;
use crate::context::Context;
use crate::env_vars::{self, Environment};
use crate::lock::Lock;
use crate::stack::FamilyTable;
use crate::stack::families::is_target_shaped;
use crate::suite::Error;
use crate::suite::catalog::{Catalog, TestConfig};
use crate::suite::gpu::{DeviceQueryMode, GpuPolicy};
use crate::suite::preflight::RunnerFacts;
use crate::suite::runtest::Shard;
use crate::suite::skips::{KMode, MajorMinor, Platform, SkipLists};

pub use crate::suite::input::{LockFacts, Requirements, TestSettings};

/// Resolved here, where flags, files and the environment meet; the type is the test stage's
/// own input (`suite::input`).
impl TestSettings {
    pub fn resolve(args: TestArgs, ctx: &Context) -> anyhow::Result<Self> {
        let TestArgs {
            index_url,
            extra_index_url,
            find_links,
            lock,
            pytorch_dir,
            test_config,
            shard,
            include,
            exclude,
            timeout,
            run_timeout,
            no_keep_going,
            allow_version_mismatch,
            amdgpu_family,
            pytorch_version,
            platform,
            device_query,
            gpu_policy,
            allow_no_gpu,
            skip_lists,
            only_skipped,
            no_exclude_jit_executor,
            no_exclude_distributed,
            no_exclude_quantization,
            test_requirements,
            output_dir,
            venv,
            python,
            families,
            print_skips,
            dry_run,
            json,
            passthrough,
        } = args;
        let flag = |flag: &'static str, message: String| Error::Flag { flag, message };

        let families =
            crate::stack::load_families(families.as_deref().map(|p| ctx.absolute(p)).as_deref())?;
        let catalog = Catalog::builtin(&families).map_err(Error::from)?;
        let (skip_lists, skip_lists_source) =
            skip_lists_from(ctx, skip_lists.as_deref(), &families)?;

        let shard = parse_shard(shard.as_deref())?;
        let pytorch_dir = pytorch_dir.map(|dir| ctx.absolute(&dir));
        let index_url = check_what_runs(
            test_config,
            index_url,
            pytorch_dir.as_deref(),
            &include,
            &exclude,
            print_skips,
        )?;

        let (family, family_targets) = family_from(&families, amdgpu_family)?;
        let pytorch_version = pytorch_version
            .map(|text| {
                MajorMinor::parse(&text).ok_or_else(|| {
                    flag(
                        "--pytorch-version",
                        format!("'{text}' is not a major.minor version like 2.12"),
                    )
                })
            })
            .transpose()?;

        let (device_query, gpu_policy) = gpu_choices(test_config, device_query, gpu_policy);
        let platform = match platform {
            Some(value) => Sourced {
                value,
                source: Source::Flag("--platform".into()),
            },
            None => Sourced {
                value: Platform::host(),
                source: Source::Default,
            },
        };
        let lock = lock
            .map(|path| lock_facts(ctx, &path, &families, index_url.as_deref()))
            .transpose()?;
        let env = ctx.env();
        let test_env = test_env(env, &catalog, family.as_deref());
        let runner = runner_facts(env, &families)?;
        let requirements = match test_requirements {
            Some(path) => {
                let path = ctx.absolute(&path);
                if !path.is_file() {
                    return Err(flag(
                        "--test-requirements",
                        format!("{} is not a file", path.display()),
                    )
                    .into());
                }
                Requirements::File(path)
            }
            None => Requirements::Lines(catalog.requirements.clone()),
        };
        let output_dir = ctx.absolute(&output_dir.unwrap_or_else(|| {
            PathBuf::from("test-results")
                .join(format!("{}-{}-{}", test_config, shard.number, shard.total))
        }));

        Ok(TestSettings {
            config: test_config,
            shard,
            index_url,
            extra_index_urls: extra_index_url,
            find_links,
            lock,
            pytorch_dir,
            include,
            exclude,
            passthrough,
            timeout_secs: timeout,
            run_timeout: Duration::from_secs(run_timeout),
            keep_going: !no_keep_going,
            allow_version_mismatch,
            family,
            family_targets,
            pytorch_version,
            platform,
            device_query,
            gpu_policy,
            allow_no_gpu,
            preset_visible_devices: env
                .non_empty(env_vars::HIP_VISIBLE_DEVICES)
                .map(String::from),
            gpu_device_ordinal: env.get(env_vars::GPU_DEVICE_ORDINAL).map(String::from),
            skip_lists,
            skip_lists_source,
            k_mode: if only_skipped {
                KMode::Only
            } else {
                KMode::Skip
            },
            exclude_jit_executor: !no_exclude_jit_executor,
            exclude_distributed: !no_exclude_distributed,
            exclude_quantization: !no_exclude_quantization,
            requirements,
            test_env,
            catalog,
            runner,
            output_dir,
            venv: venv.map(|v| ctx.absolute(&v)),
            python: python
                .map(|p| ctx.absolute(&p))
                .unwrap_or_else(|| "python3".into()),
            print_skips,
            dry_run,
            json,
        })
    }
}

/// The runner's GPUs and driver, read as `rockbuild detect` reads them (sysfs under `/`, or
/// `$ROCKBUILD_SYSFS_ROOT`). A tree that cannot be read is a fact too: no GPU, and why.
fn runner_facts(env: &Environment, families: &FamilyTable) -> anyhow::Result<RunnerFacts> {
    let root = env
        .non_empty(env_vars::ROCKBUILD_SYSFS_ROOT)
        .map_or_else(|| PathBuf::from("/"), PathBuf::from);
    let devices = super::detect::device_table()?;
    let tables = crate::detect::Tables {
        families,
        devices: &devices,
    };
    Ok(crate::detect::sysfs::read(&root)
        .and_then(|snapshot| {
            crate::detect::resolve(&snapshot, &tables, &super::detect::runtime_env(env))
        })
        .map_or_else(
            |error| RunnerFacts::unreadable(&root.display().to_string(), error.to_string()),
            |detection| RunnerFacts::of(&detection),
        ))
}

/// The skip lists: `--skip-lists DIR`, else the built-in configs/skip-tests.
fn skip_lists_from(
    ctx: &Context,
    dir: Option<&Path>,
    families: &FamilyTable,
) -> anyhow::Result<(SkipLists, Source)> {
    Ok(match dir {
        Some(dir) => (
            SkipLists::read_dir(&ctx.absolute(dir), families)?,
            Source::Flag(format!("--skip-lists {}", dir.display())),
        ),
        None => (
            SkipLists::builtin(families).map_err(Error::from)?,
            Source::Config("configs/skip-tests".into()),
        ),
    })
}

/// `--shard N M` (default: the whole suite, 1 of 1).
fn parse_shard(values: Option<&[String]>) -> Result<Shard, Error> {
    let Some(values) = values else {
        return Ok(Shard {
            number: 1,
            total: 1,
        });
    };
    let numbers: Vec<u32> = values.iter().filter_map(|v| v.parse().ok()).collect();
    match numbers[..] {
        [number, total] if number >= 1 && number <= total => Ok(Shard { number, total }),
        _ => Err(Error::Flag {
            flag: "--shard",
            message: format!(
                "`{}` is not a shard: N and M are whole numbers from 1 and N is at most M (--shard 2 6)",
                values.join(" ")
            ),
        }),
    }
}

/// What the config runs needs what was given: an index under test (unless only the skip
/// lists are printed), the checkout for run_test.py, module selections only for run_test.py.
fn check_what_runs(
    config: TestConfig,
    index_url: Option<String>,
    pytorch_dir: Option<&Path>,
    include: &[String],
    exclude: &[String],
    print_skips: bool,
) -> Result<Option<String>, Error> {
    if index_url.is_none() && !print_skips {
        return Err(Error::Flag {
            flag: "--index-url",
            message:
                "the index under test is required (the staging index the wheels are installed from)"
                    .into(),
        });
    }
    let runs_run_test = config != TestConfig::GpuSmoke;
    if runs_run_test && pytorch_dir.is_none() && !print_skips {
        return Err(Error::Flag {
            flag: "--pytorch-dir",
            message: format!(
                "the {config} config runs the checkout's test/run_test.py: pass the PyTorch checkout at the tested version"
            ),
        });
    }
    if !runs_run_test && (!include.is_empty() || !exclude.is_empty()) {
        return Err(Error::Flag {
            flag: if include.is_empty() {
                "--exclude"
            } else {
                "--include"
            },
            message: "selects run_test.py modules; the gpu-smoke config runs the built-in suite"
                .into(),
        });
    }
    Ok(index_url)
}

/// `--amdgpu-family`: its name and the targets it stands for.
fn family_from(
    families: &FamilyTable,
    given: Option<String>,
) -> Result<(Option<String>, Option<Vec<String>>), Error> {
    match given.map(|f| f.trim().to_string()) {
        None => Ok((None, None)),
        Some(name) if name.is_empty() => Ok((None, None)),
        Some(name) => {
            let targets = family_targets(families, &name).map_err(|message| Error::Flag {
                flag: "--amdgpu-family",
                message,
            })?;
            Ok((Some(name), Some(targets)))
        }
    }
}

/// How GPUs are found and handed out: the flags, else every GPU for the distributed config
/// and one per test process for the others.
fn gpu_choices(
    config: TestConfig,
    device_query: Option<DeviceQueryMode>,
    gpu_policy: Option<GpuPolicy>,
) -> (Sourced<DeviceQueryMode>, Sourced<GpuPolicy>) {
    let distributed = config == TestConfig::Distributed;
    let inferred = Source::Inferred(if distributed {
        "distributed config: every GPU".to_string()
    } else {
        "one GPU per test process".to_string()
    });
    let device_query = match device_query {
        Some(value) => Sourced {
            value,
            source: Source::Flag("--device-query".into()),
        },
        None => Sourced {
            value: if distributed {
                DeviceQueryMode::All
            } else {
                DeviceQueryMode::Unique
            },
            source: inferred.clone(),
        },
    };
    let gpu_policy = match gpu_policy {
        Some(value) => Sourced {
            value,
            source: Source::Flag("--gpu-policy".into()),
        },
        None => Sourced {
            value: if distributed {
                GpuPolicy::All
            } else {
                GpuPolicy::Single
            },
            source: inferred,
        },
    };
    (device_query, gpu_policy)
}

/// What the run takes from `--lock`: the torch version and commit it records. The index under
/// test must be of the mode the lock records (a multi-arch set is on the multi-arch index).
fn lock_facts(
    ctx: &Context,
    path: &Path,
    families: &FamilyTable,
    index_url: Option<&str>,
) -> anyhow::Result<LockFacts> {
    let path = ctx.absolute(path);
    let read = Lock::read(&path)?;
    if let (Some(mode), Some(url)) = (
        read.build.as_ref().and_then(|b| b.recorded_mode()),
        index_url,
    ) {
        ModeChoice::resolve(false, false, Some(mode)).with_index(
            families,
            "--index-url",
            url,
            "the set under test",
        )?;
    }
    Ok(LockFacts {
        torch_version: read
            .build
            .as_ref()
            .and_then(|b| b.versions.get("torch").cloned()),
        torch_commit: read.projects.get("torch").map(|p| p.commit.clone()),
        device_targets: read
            .build
            .as_ref()
            .filter(|b| b.recorded_mode() == Some(crate::build::mode::BuildMode::MultiArch))
            .map(|b| b.targets.iter().map(ToString::to_string).collect())
            .unwrap_or_default(),
        path,
    })
}

/// PyTorch's test environment: the defaults TheRock sets, where a value the job already set
/// wins.
fn test_env(
    env: &Environment,
    catalog: &Catalog,
    family: Option<&str>,
) -> Vec<(&'static str, Sourced<String>)> {
    let build_environment = catalog.build_environment(family).to_string();
    let defaults: [(&'static str, String, Source); 6] = [
        (env_vars::CI, "1".into(), Source::Default),
        (
            env_vars::BUILD_ENVIRONMENT,
            build_environment,
            Source::Config(format!(
                "configs/pytorch-tests.yaml build-environment{}",
                family.map(|f| format!(" for {f}")).unwrap_or_default()
            )),
        ),
        (
            env_vars::PYTORCH_TEST_WITH_ROCM,
            "1".into(),
            Source::Default,
        ),
        (
            env_vars::PYTORCH_TESTING_DEVICE_ONLY_FOR,
            "cuda".into(),
            Source::Default,
        ),
        (
            env_vars::PYTORCH_PRINT_REPRO_ON_FAILURE,
            "0".into(),
            Source::Default,
        ),
        (env_vars::OPENBLAS_NUM_THREADS, "1".into(), Source::Default),
    ];
    defaults
        .into_iter()
        .map(|(name, value, source)| {
            let sourced = match env.non_empty(name) {
                Some(set) => Sourced {
                    value: set.to_string(),
                    source: Source::Env(name.to_string()),
                },
                None => Sourced { value, source },
            };
            (name, sourced)
        })
        .collect()
}

/// The targets an `--amdgpu-family` value stands for: a family of the table, a target, or a
/// wildcard such as `gfx94X` (TheRock's rule: targets starting with gfx94).
fn family_targets(families: &FamilyTable, name: &str) -> Result<Vec<String>, String> {
    if let Ok(family) = families.family_named(name) {
        return Ok(family.targets.iter().map(|t| t.to_string()).collect());
    }
    let part = name.split('-').next().unwrap_or(name);
    if is_target_shaped(part) {
        return families
            .target(part)
            .map(|t| vec![t.to_string()])
            .map_err(|e| e.to_string());
    }
    if let Some(prefix) = part
        .strip_suffix(['X', 'x'])
        .filter(|p| p.starts_with("gfx"))
    {
        let targets: Vec<String> = families
            .families()
            .flat_map(|f| f.targets.iter())
            .filter(|t| t.as_str().starts_with(prefix))
            .map(|t| t.to_string())
            .collect();
        if !targets.is_empty() {
            return Ok(targets);
        }
    }
    Err(families
        .family_named(name)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_else(|| format!("unknown GPU family '{name}'")))
}
