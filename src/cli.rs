//! The command line. Flag names follow TheRock's scripts so existing invocations keep working.
//! Flags can also be set through `ROCKBUILD_<FLAG>` (upper snake case of the long name; a unit
//! test enforces the rule): the variables are not declared here but in the one table of
//! [`options`], which attaches each to its flags. Precedence: default < environment < flag.
//! docs/cli.md is generated from these definitions (src/docgen.rs).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub mod options;

use crate::context::Context;
use crate::platform::Platform;
pub use crate::sdk::install::Installer;
use crate::stack::{FamilyTable, Stack};
use crate::store::S3ChecksumMode;
pub use crate::suite::catalog::TestConfig;
pub use crate::suite::gpu::{DeviceQueryMode, GpuPolicy};
use crate::ui::LogFormat;
pub use crate::version::ReleaseType;

#[derive(Debug, Parser)]
#[command(
    name = "rockbuild",
    version,
    about = "Build ROCm PyTorch wheels: check out the stack at consistent pins, install the ROCm SDK, \
             build, verify, stage and promote",
    max_term_width = 100,
    after_help = crate::exit::help_text(),
    disable_help_flag = true,
    mut_args = |arg| with_env("", arg),
    mut_subcommands = |verb| verb_with_env("", verb)
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// A usage error as one JSON line (`--log-format json`, or its variable, was given on the
    /// command line that did not parse, so it is read leniently), else `None`: clap prints it.
    pub fn usage_error_json(error: &clap::Error) -> Option<String> {
        use clap::CommandFactory;
        let asked = Cli::command()
            .ignore_errors(true)
            .try_get_matches()
            .ok()
            .and_then(|matches| matches.get_one::<LogFormat>("log_format").copied());
        (error.use_stderr() && asked == Some(LogFormat::Json)).then(|| {
            crate::ui::json_line(crate::ui::Level::Error, &error.render().to_string(), None)
        })
    }
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// More detail in logs (-v: debug, -vv: trace)
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Only errors and data on stdout
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Log format for stderr: `text` for people, `json` for machines
    #[arg(long, value_enum, default_value = "text", global = true)]
    pub log_format: LogFormat,
    /// Colour in log lines (`auto`: on a terminal, unless NO_COLOR is set)
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        default_value = "auto",
        global = true
    )]
    pub color: clap::ColorChoice,
    /// Print help
    #[arg(short, long, action = clap::ArgAction::HelpShort, global = true)]
    help: Option<bool>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check out the stack at consistent pins, hipify it and write the lock
    Checkout(CheckoutArgs),
    /// Resolve every pin, the SDK, targets and wheel names up front and write the lock,
    /// without working trees
    Lock(LockArgs),
    /// Print the version presets: which origin and ref each project uses for a torch ref
    Presets(PresetsArgs),
    /// Install the ROCm SDK Python packages into a venv
    InstallRocm(InstallRocmArgs),
    /// Build the stack's wheels for a list of gfx targets
    Build(BuildArgs),
    /// Print the build plan (commands, env, versions, wheel names) without running anything
    Plan(BuildArgs),
    /// Check wheels: archive, RECORD, metadata, GPU code for every target, RPATH, closure
    Verify(VerifyArgs),
    /// Verify and upload wheels to a staging index, then write its index pages
    Stage(StageArgs),
    /// Rewrite the index pages of a store prefix from what is stored there
    Index(IndexArgs),
    /// Install the staged set into a fresh venv, import it and run smoke checks
    Smoke(SmokeArgs),
    /// Promote a tested set from one index to another, all or nothing
    Promote(PromoteArgs),
    /// Find this machine's AMD GPUs: gfx target, family, index, and what a build would target
    Detect(DetectArgs),
    /// Check this machine before a build: tools, venv and SDK, hipcc for the targets, disk, index
    Doctor(DoctorArgs),
    /// What a venv or a set of wheels contains: versions, gfx targets, ROCm libraries, features
    Compat(CompatArgs),
    /// Give verified linux_<arch> wheels a manylinux tag their libraries' glibc needs allow
    Retag(RetagArgs),
    /// Put the ROCm SDK into a Windows torch wheel so that it installs standalone (a fat
    /// wheel), then verify that every DLL it imports resolves inside it or on Windows
    FatWheel(FatWheelArgs),
    /// Print the GitHub Actions matrix of a release type (JSON; also to $GITHUB_OUTPUT)
    Matrix(MatrixArgs),
    /// Run one shard of PyTorch's test suite (test/run_test.py) or the GPU smoke suite on the
    /// wheels of an index
    Test(TestArgs),
    /// Combine test shards into one summary and the test report promote reads
    TestReport(TestReportArgs),
    /// GitHub Actions workflows generated from the family and release tables
    #[command(subcommand)]
    Ci(CiCommand),
}

#[derive(Debug, Subcommand)]
pub enum CiCommand {
    /// Write the workflows (a reusable per-family chain and its nightly, release and
    /// pull-request callers) from configs/families.yaml and configs/releases.yaml
    Generate(CiGenerateArgs),
}

#[derive(Debug, Args)]
pub struct CiGenerateArgs {
    /// Directory the workflows are written to (copy it to .github/workflows/ to run them)
    #[arg(long, value_name = "DIR", default_value = "workflows")]
    pub output_dir: PathBuf,
    /// Write nothing: exit 5 naming every file that differs from what would be written
    #[arg(long, conflicts_with = "dry_run")]
    pub check: bool,
    /// Print the workflows' jobs and write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print the workflows as JSON, every step's command and env (with --dry-run)
    #[arg(long, requires = "dry_run")]
    pub json: bool,
    /// Family table to use instead of the built-in configs/families.yaml
    #[arg(long, value_name = "FILE")]
    pub families: Option<PathBuf>,
    /// Release table to use instead of the built-in configs/releases.yaml
    #[arg(long, value_name = "FILE")]
    pub releases: Option<PathBuf>,
    /// Multi-arch chains: one set per ref built for every family's targets, tested per
    /// family (default: the family table's index layout)
    #[arg(long)]
    pub multi_arch: bool,
}

/// Which stack config to use.
#[derive(Debug, Args, Clone, Default)]
pub struct ConfigArgs {
    /// Stack definition to use instead of the built-in configs/stack.yaml
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Family table to use instead of the built-in configs/families.yaml
    #[arg(long, value_name = "FILE")]
    pub families: Option<PathBuf>,
}

impl ConfigArgs {
    /// The stack definition: `--config` (relative to the working directory) or the built-in one.
    pub fn stack(&self, ctx: &Context) -> anyhow::Result<Stack> {
        Stack::load(self.config.as_deref().map(|p| ctx.absolute(p)).as_deref())
    }

    /// The family table: `--families` or the built-in one.
    pub fn family_table(&self, ctx: &Context) -> anyhow::Result<FamilyTable> {
        crate::stack::load_families(self.families.as_deref().map(|p| ctx.absolute(p)).as_deref())
    }
}

impl SdkArgs {
    /// The installer's cache: `--pip-cache-dir`, else rockbuild's own cache directory per
    /// installer (so a reinstall never depends on `pip cache remove`).
    pub fn cache_dir(&self, ctx: &Context) -> PathBuf {
        match &self.pip_cache_dir {
            Some(dir) => ctx.absolute(dir),
            None => crate::sdk::cache_root(ctx.env()).join(self.installer.as_str()),
        }
    }
}

/// Supervision of network transfers (git fetches).
#[derive(Debug, Args, Clone)]
pub struct NetworkArgs {
    /// Seconds one transfer may take before it is stopped
    #[arg(
        value_parser = positive::<u64>,
        long,
        value_name = "SECS",
        default_value_t = 1800
    )]
    pub fetch_timeout: u64,
    /// Seconds without any progress before a transfer is stopped (watchdog)
    #[arg(
        value_parser = positive::<u64>,
        long,
        value_name = "SECS",
        default_value_t = 300
    )]
    pub stall_timeout: u64,
    /// Attempts for a transfer that stalls or fails with a transient error (backoff 2s, 4s,
    /// ...)
    #[arg(
        value_parser = positive::<u32>,
        long,
        value_name = "N",
        default_value_t = 3
    )]
    pub fetch_attempts: u32,
}

/// What to resolve: shared by `checkout` and `lock`.
#[derive(Debug, Args, Clone)]
pub struct SelectionArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Project to act on (repeatable; default: the whole stack)
    #[arg(long = "project", value_name = "NAME")]
    pub projects: Vec<String>,
    /// Ref (branch, tag or full SHA) for torch, or for the single --project
    #[arg(long, value_name = "REF")]
    pub repo_hashtag: Option<String>,
    /// Origin URL for torch, or for the single --project
    #[arg(long, value_name = "URL")]
    pub gitrepo_origin: Option<String>,
    /// Origin URL override for any project (repeatable)
    #[arg(long = "origin", value_name = "NAME=URL")]
    pub origins: Vec<String>,
    /// Ref override for any project (repeatable)
    #[arg(long = "hashtag", value_name = "NAME=REF")]
    pub hashtags: Vec<String>,
    /// Pin triton to the release branch release/X.Y.x from torch's triton_version.txt
    #[arg(long)]
    pub release: bool,
    /// A project pinned by related_commits without a row there is an error
    #[arg(long)]
    pub require_related_commit: bool,
    /// Reproduce the commits of a lock (or of a TheRock source manifest)
    #[arg(long, value_name = "FILE")]
    pub from_lock: Option<PathBuf>,
    /// Reproduce the commits of a TheRock source manifest downloaded from an http(s) URL (as
    /// checkout_from_manifest.py --manifest-url); each request waits up to --stall-timeout,
    /// tried --fetch-attempts times
    #[arg(long, value_name = "URL", conflicts_with = "from_lock")]
    pub manifest_url: Option<String>,
    /// Fetch submodules (default)
    #[arg(long, overrides_with = "no_submodules")]
    pub submodules: bool,
    /// Skip submodules
    #[arg(long, overrides_with = "submodules")]
    pub no_submodules: bool,
    /// Shallow fetch depth
    #[arg(value_parser = positive::<u32>, long, value_name = "N")]
    pub depth: Option<u32>,
    /// Parallel submodule fetches per repository
    #[arg(value_parser = positive::<usize>, long, value_name = "N", default_value_t = 8)]
    pub jobs: usize,
    /// Cache of git mirrors (one per origin) and hipify results; safe to share between
    /// checkouts and to restore in CI (default: $XDG_CACHE_HOME/rockbuild, else
    /// ~/.cache/rockbuild)
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Version presets to use instead of the built-in configs/presets.yaml
    #[arg(long, value_name = "FILE")]
    pub presets: Option<PathBuf>,
    #[command(flatten)]
    pub network: NetworkArgs,
}

#[derive(Debug, Args)]
pub struct CheckoutArgs {
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// Directory holding one checkout per project (pytorch/, pytorch_audio/, ...)
    #[arg(long, value_name = "DIR", conflicts_with = "checkout_dir")]
    pub root_checkout_dir: Option<PathBuf>,
    /// Checkout directory of the single --project
    #[arg(long, value_name = "DIR")]
    pub checkout_dir: Option<PathBuf>,
    /// Run hipify (default)
    #[arg(long, overrides_with = "no_hipify")]
    pub hipify: bool,
    /// Do not run hipify
    #[arg(long, overrides_with = "hipify")]
    pub no_hipify: bool,
    /// Commit hipify's changes as `DO NOT SUBMIT: HIPIFY` (default)
    #[arg(long, overrides_with = "no_commit_hipify")]
    pub commit_hipify: bool,
    /// Leave hipify's changes uncommitted
    #[arg(long, overrides_with = "commit_hipify")]
    pub no_commit_hipify: bool,
    /// Python that runs the hipify scripts (default: python3 on PATH)
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Discard uncommitted changes that hipify did not make
    #[arg(long)]
    pub force: bool,
    /// Fail when hipify leaves CUDA-only includes (default: report them in the summary, the
    /// report and the lock, and go on; `hipify: leftover-cuda: refuse` in the stack config
    /// does this for one project)
    #[arg(long)]
    pub strict: bool,
    /// Where to write the lock (default: <root>/rockbuild.lock.json)
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Resolve and print the plan (per project: fetch, repair or up to date) and stop
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan as JSON (with --dry-run)
    #[arg(long, requires = "dry_run")]
    pub json: bool,
    /// Write each project's outcome and phase timings as JSON to FILE
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
}

/// What `lock` resolves beyond the sources: the SDK version (through the index preflight),
/// the gfx targets and every wheel's name. Each part is recorded when its inputs are given.
#[derive(Debug, Args, Clone)]
pub struct LockBuildArgs {
    /// Package index the SDK will be installed from: the newest `rocm` matching
    /// --rocm-sdk-version there is locked
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,
    /// Extra find-links page or directory for the SDK
    #[arg(long, value_name = "URL")]
    pub find_links: Option<String>,
    /// Version specifier of the `rocm` package (e.g. `==7.10.0a20251124`)
    #[arg(long, value_name = "SPEC", default_value = ">1.0")]
    pub rocm_sdk_version: String,
    /// Only final SDK versions (default: pre-releases allowed)
    #[arg(long)]
    pub no_pre: bool,
    /// gfx targets, comma separated
    #[arg(long, value_name = "gfxA,gfxB")]
    pub pytorch_rocm_arch: Option<String>,
    /// GPU families, `;` separated, expanded through the family table
    #[arg(long, value_name = "FAM[;FAM]")]
    pub amdgpu_family: Option<String>,
    /// Refuse target lists longer than this
    #[arg(
        value_parser = positive::<usize>,
        long,
        value_name = "N",
        default_value_t = 8
    )]
    pub max_targets: usize,
    /// Allow target lists longer than --max-targets
    #[arg(long)]
    pub allow_many_targets: bool,
    /// Release channel (decides version suffixes)
    #[arg(long, value_enum, default_value = "nightly")]
    pub release_type: ReleaseType,
    /// Local version suffix (default: derived from the locked SDK version)
    #[arg(long, value_name = "S")]
    pub version_suffix: Option<String>,
    /// PYTORCH_BUILD_NUMBER / BUILD_NUMBER
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub pytorch_build_number: u32,
}

#[derive(Debug, Args)]
pub struct PresetsArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Version presets to print instead of the built-in configs/presets.yaml
    #[arg(long, value_name = "FILE")]
    pub presets: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LockArgs {
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// Directory whose existing torch checkout provides pins for projects pinned by it,
    /// when torch itself is not selected
    #[arg(long, value_name = "DIR")]
    pub root_checkout_dir: Option<PathBuf>,
    /// Where to write the lock
    #[arg(long, value_name = "FILE")]
    pub lock: PathBuf,
    #[command(flatten)]
    pub build: LockBuildArgs,
    /// Resolve and print the lock's plan without writing it
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan as JSON (the lock as it would be written)
    #[arg(long)]
    pub json: bool,
}

/// Where and how to install the ROCm SDK packages.
#[derive(Debug, Args, Clone)]
pub struct SdkArgs {
    /// Virtual environment to install into (default: $VIRTUAL_ENV, else <output-dir>/venv)
    #[arg(long, value_name = "DIR")]
    pub venv: Option<PathBuf>,
    /// Package index to install the SDK from (PEP 503); `auto`: the index of this machine's GPU
    /// family (`rockbuild detect`)
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,
    /// Extra find-links page or directory
    #[arg(long, value_name = "URL")]
    pub find_links: Option<String>,
    /// Cache directory owned by rockbuild for SDK downloads
    #[arg(long, value_name = "DIR")]
    pub pip_cache_dir: Option<PathBuf>,
    /// Version specifier of the `rocm` package (e.g. `==7.10.0a20251124`)
    #[arg(long, value_name = "SPEC", default_value = ">1.0")]
    pub rocm_sdk_version: String,
    /// Allow pre-release SDK versions (default)
    #[arg(long, overrides_with = "no_pre")]
    pub pre: bool,
    /// Only final SDK versions
    #[arg(long, overrides_with = "pre")]
    pub no_pre: bool,
    /// Extra extras of the `rocm` package, comma separated (e.g. device-gfx942)
    #[arg(long, value_name = "LIST")]
    pub rocm_extras: Option<String>,
    /// Installer to use
    #[arg(long, value_enum, default_value = "pip")]
    pub installer: Installer,
    /// Interpreter that creates the venv, and so the CPython the wheels are built for (e.g.
    /// /opt/python/cp312-cp312/bin/python in the build image; default: python3 on PATH)
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Seconds one request to the SDK index may wait for an answer (the preflight, and pip's
    /// `--timeout` / uv's UV_HTTP_TIMEOUT)
    #[arg(
        value_parser = positive::<u64>,
        long,
        value_name = "SECS",
        default_value_t = 60
    )]
    pub index_timeout: u64,
    /// Retries of a request to the SDK index that timed out or could not connect (pip's
    /// `--retries`, uv's UV_HTTP_RETRIES)
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub index_retries: u32,
}

#[derive(Debug, Args)]
pub struct InstallRocmArgs {
    #[command(flatten)]
    pub sdk: SdkArgs,
    /// Lock whose SDK version the install must match (and whose index it uses without --index-url)
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Directory for the default venv and logs when --venv and $VIRTUAL_ENV are unset
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Print the install plan (version, sources, commands) without reading any index or
    /// changing anything
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Where wheels, logs and the build report go
    #[arg(long, value_name = "DIR")]
    pub output_dir: PathBuf,
    /// Install the ROCm SDK first
    #[arg(long)]
    pub install_rocm: bool,
    #[command(flatten)]
    pub sdk: SdkArgs,
    /// Directory holding the project checkouts
    #[arg(long, value_name = "DIR")]
    pub root_checkout_dir: Option<PathBuf>,
    /// Checkout of a project of the stack, by its name there (overrides the root; repeatable)
    #[arg(long = "dir", value_name = "NAME=DIR")]
    pub dirs: Vec<String>,
    /// Build only this project (repeatable); its checkout must exist. The others are used as
    /// they are: their wheels of an earlier build (default: every project whose checkout
    /// exists)
    #[arg(long = "build", value_name = "NAME")]
    pub build: Vec<String>,
    /// Leave this project out: its wheel of an earlier build is used as it is (repeatable)
    #[arg(long = "skip", value_name = "NAME")]
    pub skip: Vec<String>,
    #[command(flatten)]
    pub reference: ReferenceProjectArgs,
    /// The lock written by checkout (default: <root>/rockbuild.lock.json when present)
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// gfx targets, comma separated (beats PYTORCH_ROCM_ARCH and --amdgpu-family); `auto`: the
    /// targets of this machine's GPUs (`rockbuild detect`)
    #[arg(long, value_name = "gfxA,gfxB")]
    pub pytorch_rocm_arch: Option<String>,
    /// GPU families to build for, `;` separated, expanded through the family table; `auto`:
    /// the families of this machine's GPUs (`rockbuild detect`)
    #[arg(long, value_name = "FAM[;FAM]")]
    pub amdgpu_family: Option<String>,
    /// Take the targets from `rocm-sdk targets` (only when asked: TheRock#4687)
    #[arg(long)]
    pub arch_from_sdk: bool,
    /// Multi-arch: build once for every target, then split torch's and torchvision's fat
    /// wheels into a host wheel and one device wheel per target (`torch[device-gfxNNN]`), as
    /// TheRock's releases are (default: the family table's index layout, else the lock's)
    #[arg(long)]
    pub multi_arch: bool,
    /// Refuse target lists longer than this (TheRock#3442)
    #[arg(
        value_parser = positive::<usize>,
        long,
        value_name = "N",
        default_value_t = 8
    )]
    pub max_targets: usize,
    /// Build even when the target list is longer than --max-targets
    #[arg(long)]
    pub allow_many_targets: bool,
    /// PYTORCH_BUILD_NUMBER / BUILD_NUMBER
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub pytorch_build_number: u32,
    /// Force flash-attention on (default: on when a target supports it and triton is built)
    #[arg(long, overrides_with = "no_enable_pytorch_flash_attention")]
    pub enable_pytorch_flash_attention: bool,
    #[arg(long, overrides_with = "enable_pytorch_flash_attention", hide = true)]
    pub no_enable_pytorch_flash_attention: bool,
    /// Set an option a project's recipe declares (`torch.flash-attention=off`); unset, the
    /// recipe decides (repeatable)
    #[arg(long = "recipe-option", value_name = "P.OPT=on|off")]
    pub recipe_options: Vec<String>,
    /// Local version suffix (default: derived from the installed rocm version)
    #[arg(long, value_name = "S")]
    pub version_suffix: Option<String>,
    /// Release channel
    #[arg(long, value_enum, default_value = "nightly")]
    pub release_type: ReleaseType,
    /// Compile through ccache
    #[arg(long, conflicts_with = "use_sccache")]
    pub use_ccache: bool,
    /// Compile through sccache (HIP device code too, via HIP_CLANG_LAUNCHER)
    #[arg(long)]
    pub use_sccache: bool,
    /// With --use-sccache: do not route hipcc's clang through sccache
    #[arg(long, requires = "use_sccache")]
    pub sccache_no_wrap: bool,
    /// Rebuild from scratch (clears build/ and ignores the build cache)
    #[arg(long)]
    pub clean: bool,
    /// Projects built at the same time
    #[arg(
        value_parser = positive::<usize>,
        long,
        value_name = "N",
        default_value_t = 3
    )]
    pub jobs: usize,
    /// Print the plan and stop (same as `rockbuild plan`)
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan as JSON (with --dry-run or `plan`)
    #[arg(long)]
    pub json: bool,
    /// The platform to plan for (default: this machine's); a plan for another platform is
    /// printed here and built there
    #[arg(long, value_enum, value_name = "PLATFORM")]
    pub platform: Option<Platform>,
}

/// The reference's per-project flags (build_prod_wheels.py), kept with the same behaviour:
/// each names the project its recipe builds (`--pytorch-audio-dir DIR` is `--dir audio=DIR`
/// in the shipped stack).
#[derive(Debug, Args, Default)]
pub struct ReferenceProjectArgs {
    /// Same as --dir for the project of the `torch` recipe
    #[arg(long, value_name = "DIR")]
    pub pytorch_dir: Option<PathBuf>,
    /// Same as --dir for the project of the `audio` recipe
    #[arg(long, value_name = "DIR")]
    pub pytorch_audio_dir: Option<PathBuf>,
    /// Same as --dir for the project of the `vision` recipe
    #[arg(long, value_name = "DIR")]
    pub pytorch_vision_dir: Option<PathBuf>,
    /// Same as --dir for the project of the `triton` recipe
    #[arg(long, value_name = "DIR")]
    pub triton_dir: Option<PathBuf>,
    /// Same as --dir for the project of the `apex` recipe
    #[arg(long, value_name = "DIR")]
    pub apex_dir: Option<PathBuf>,
    /// Requires the checkout of the project of the `triton` recipe, as --build but leaving the others in (--no-build-triton: --skip)
    #[arg(long, overrides_with = "no_build_triton")]
    pub build_triton: bool,
    #[arg(long, overrides_with = "build_triton", hide = true)]
    pub no_build_triton: bool,
    /// Requires the checkout of the project of the `audio` recipe, as --build but leaving the others in (--no-…: --skip)
    #[arg(long, overrides_with = "no_build_pytorch_audio")]
    pub build_pytorch_audio: bool,
    #[arg(long, overrides_with = "build_pytorch_audio", hide = true)]
    pub no_build_pytorch_audio: bool,
    /// Requires the checkout of the project of the `vision` recipe, as --build but leaving the others in (--no-…: --skip)
    #[arg(long, overrides_with = "no_build_pytorch_vision")]
    pub build_pytorch_vision: bool,
    #[arg(long, overrides_with = "build_pytorch_vision", hide = true)]
    pub no_build_pytorch_vision: bool,
    /// Requires the checkout of the project of the `apex` recipe, as --build but leaving the others in (--no-build-apex: --skip)
    #[arg(long, overrides_with = "no_build_apex")]
    pub build_apex: bool,
    #[arg(long, overrides_with = "build_apex", hide = true)]
    pub no_build_apex: bool,
}

/// One project's reference flags as given, by the reference's name for the project
/// (`pytorch-audio` in `--pytorch-audio-dir`): the project whose recipe answers to that name
/// takes them.
#[derive(Debug, PartialEq, Eq)]
pub struct ReferenceFlags {
    pub name: &'static str,
    /// `--<name>-dir`.
    pub dir: Option<PathBuf>,
    /// `--[no-]build-<name>`.
    pub build: Option<bool>,
}

impl ReferenceProjectArgs {
    /// The flags given, by the reference's project name, in the reference's order.
    pub fn given(self) -> Vec<ReferenceFlags> {
        let ReferenceProjectArgs {
            pytorch_dir,
            pytorch_audio_dir,
            pytorch_vision_dir,
            triton_dir,
            apex_dir,
            build_triton,
            no_build_triton,
            build_pytorch_audio,
            no_build_pytorch_audio,
            build_pytorch_vision,
            no_build_pytorch_vision,
            build_apex,
            no_build_apex,
        } = self;
        [
            // torch has no build flag: it builds whenever its checkout exists.
            ("pytorch", pytorch_dir, None),
            (
                "pytorch-audio",
                pytorch_audio_dir,
                flag(build_pytorch_audio, no_build_pytorch_audio),
            ),
            (
                "pytorch-vision",
                pytorch_vision_dir,
                flag(build_pytorch_vision, no_build_pytorch_vision),
            ),
            ("triton", triton_dir, flag(build_triton, no_build_triton)),
            ("apex", apex_dir, flag(build_apex, no_build_apex)),
        ]
        .into_iter()
        .filter(|(_, dir, build)| dir.is_some() || build.is_some())
        .map(|(name, dir, build)| ReferenceFlags { name, dir, build })
        .collect()
    }
}

#[derive(Debug, Args)]
pub struct DetectArgs {
    /// Directory under which the kernel's sys/ tree is read (KFD topology, PCI devices); a
    /// copy or a fake tree can stand in for a machine
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub sysfs_root: PathBuf,
    /// Family table to use instead of the built-in configs/families.yaml
    #[arg(long, value_name = "FILE")]
    pub families: Option<PathBuf>,
    /// Print the detection as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Virtual environment with the ROCm SDK (default: $VIRTUAL_ENV, else <output-dir>/venv)
    #[arg(long, value_name = "DIR")]
    pub venv: Option<PathBuf>,
    /// Where wheels and logs will go (default: the working directory)
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Directory holding the project checkouts (default: the working directory)
    #[arg(long, value_name = "DIR")]
    pub root_checkout_dir: Option<PathBuf>,
    /// rockbuild's cache directory (default: ~/.cache/rockbuild)
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Lock to check the SDK, targets and index against (default: <root>/rockbuild.lock.json)
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// gfx targets hipcc must compile for (default: the lock's)
    #[arg(long, value_name = "gfxA,gfxB")]
    pub pytorch_rocm_arch: Option<String>,
    /// GPU families whose targets hipcc must compile for
    #[arg(long, value_name = "FAM[;FAM]")]
    pub amdgpu_family: Option<String>,
    /// Family table to use instead of the built-in configs/families.yaml
    #[arg(long, value_name = "FILE")]
    pub families: Option<PathBuf>,
    /// Package index the SDK comes from (default: the lock's)
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,
    /// Only look for the device libraries; do not compile a test kernel
    #[arg(long)]
    pub no_compile: bool,
    /// Seconds the index may take to answer
    #[arg(
        value_parser = positive::<u64>,
        long,
        value_name = "SECS",
        default_value_t = 10
    )]
    pub network_timeout: u64,
    /// Print the report as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompatArgs {
    /// A venv, or wheels and directories of wheels
    #[arg(value_name = "VENV|WHEEL|DIR", required = true)]
    pub paths: Vec<PathBuf>,
    /// Lock whose versions, SDK and targets the stack must match (exit 5 when it does not)
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Print the report as JSON instead of Markdown
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Wheels or directories of wheels
    #[arg(value_name = "WHEEL|DIR", required = true)]
    pub paths: Vec<PathBuf>,
    /// Lock whose versions and targets the wheels must match
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// gfx targets every GPU library must contain, comma separated
    #[arg(long, value_name = "gfxA,gfxB")]
    pub targets: Option<String>,
    /// Index that must provide every pinned dependency not in the set: the ROCm SDK's, whose
    /// wheels in the set must be the bytes it publishes (default: the lock's)
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,
    /// Print the report as JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// Accept `linux_<arch>` platform tags (local builds; CI builds in the manylinux image
    /// and retags)
    #[arg(long)]
    pub allow_linux_tag: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// How to reach an object store (S3 settings are ignored for directories and file:// URLs).
#[derive(Debug, Args, Clone)]
pub struct StoreArgs {
    /// S3 endpoint URL (for S3-compatible servers)
    #[arg(long, value_name = "URL")]
    pub s3_endpoint: Option<String>,
    /// S3 region
    #[arg(long, value_name = "REGION")]
    pub s3_region: Option<String>,
    /// Use path-style S3 addressing (needed by most S3-compatible servers)
    #[arg(long)]
    pub s3_path_style: bool,
    /// When the S3 client computes and checks checksums (`when-required` for servers such as
    /// garage that reject the SDK's checksum trailers)
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        default_value = "when-supported"
    )]
    pub s3_checksums: S3ChecksumMode,
    /// Copies and uploads above this many bytes go multipart (S3 CopyObject and PutObject stop
    /// at 5 GiB)
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 30)]
    pub multipart_threshold: u64,
    /// Parallel uploads or copies
    #[arg(
        value_parser = positive::<usize>,
        long,
        value_name = "N",
        default_value_t = 8
    )]
    pub transfer_jobs: usize,
    /// Attempts per transfer that fails with a transient error (backoff 1s, 2s, ...)
    #[arg(
        value_parser = positive::<u32>,
        long,
        value_name = "N",
        default_value_t = 3
    )]
    pub transfer_attempts: u32,
    /// Seconds an S3 request may wait to connect and then for each read of its answer
    /// before it counts as failed (and is retried)
    #[arg(
        value_parser = positive::<u64>,
        long,
        value_name = "SECONDS",
        default_value_t = 60,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub s3_timeout: u64,
    /// Attempts per S3 request (the first included) before its failure is reported
    #[arg(
        value_parser = positive::<u32>,
        long,
        value_name = "N",
        default_value_t = 3,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub s3_attempts: u32,
    /// Take the store prefix's lease even when another run holds it (a stale lease: its run
    /// is gone). The run it is taken from stops before writing index pages.
    #[arg(long)]
    pub break_lease: bool,
    /// Seconds an S3 lease stays valid; an expired lease is taken over without --break-lease
    #[arg(
        value_parser = positive::<u64>,
        long,
        value_name = "SECONDS",
        default_value_t = 6 * 3600,
        value_parser = clap::value_parser!(u64).range(60..)
    )]
    pub lease_ttl: u64,
    /// Seconds to wait for the prefix's lease while another run holds it, before exiting 7
    /// (0: refuse at once)
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub lease_wait: u64,
}

#[derive(Debug, Args)]
pub struct StageArgs {
    /// Staging store: a directory, file://, or s3://bucket/prefix
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// Directory holding the built wheels
    #[arg(long, value_name = "DIR", default_value = "out")]
    pub input: PathBuf,
    /// Family the set was built for (stages under <to>/<family>/)
    #[arg(long = "amdgpu-family", value_name = "FAMILY")]
    pub family: Option<String>,
    /// Lock whose versions the wheels must match
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// gfx targets every GPU library must contain (default: the lock's build record, else
    /// the --amdgpu-family's targets)
    #[arg(long, value_name = "gfxA,gfxB")]
    pub targets: Option<String>,
    /// Index of the ROCm SDK the set pins: pins outside the set must resolve there, and the
    /// SDK wheels they pin are brought from there (default: the index the lock's build
    /// record installed the SDK from)
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,
    /// Verify, then print exactly what would be uploaded and written
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan as JSON (with --dry-run)
    #[arg(long, requires = "dry_run")]
    pub json: bool,
    /// Accept `linux_<arch>` platform tags (local builds; CI builds in the manylinux image
    /// and retags)
    #[arg(long)]
    pub allow_linux_tag: bool,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// Store prefix: a directory, file://, or s3://bucket/prefix
    #[arg(value_name = "URL")]
    pub url: String,
    /// Read the store, then print the pages that would be written
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan as JSON (with --dry-run)
    #[arg(long, requires = "dry_run")]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct SmokeArgs {
    /// Index to install the set from
    #[arg(long, value_name = "URL")]
    pub index_url: String,
    /// Lock naming the set (versions) to install (default: the newest of each project)
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Where to write the test report (JSON)
    #[arg(long, value_name = "FILE", default_value = "smoke-report.json")]
    pub report: PathBuf,
    /// Extra index for dependencies outside the set (e.g. the ROCm SDK)
    #[arg(long, value_name = "URL")]
    pub extra_index_url: Vec<String>,
    /// Directory for the smoke venv, emptied first if it holds one (default: a temporary one)
    #[arg(long, value_name = "DIR")]
    pub venv: Option<PathBuf>,
    /// Python used to create the venv
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// The GPU targets this runner tests, comma separated, or a family: from a multi-arch
    /// index, each product's device wheel of each target (`amd-torch-device-gfxNNN`, what
    /// `torch[device-gfxNNN]` installs) goes in with the set; `auto`: this machine's GPUs
    /// (`rockbuild detect`)
    #[arg(long, value_name = "TARGETS")]
    pub targets: Option<String>,
    /// Read the set from the index, then print every check and its command
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan as JSON (with --dry-run)
    #[arg(long, requires = "dry_run")]
    pub json: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Which version kind `promote --rewrite-version` produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RewriteTo {
    Rc,
    Final,
}

#[derive(Debug, Args)]
pub struct PromoteArgs {
    /// Source store (staging)
    #[arg(long, value_name = "URL")]
    pub from: String,
    /// Destination store (release)
    #[arg(long, value_name = "URL")]
    pub to: String,
    /// Passing evidence for exactly these wheels (rockbuild JSON or JUnit XML), or a directory
    /// of them; repeatable
    #[arg(long = "test-report", value_name = "FILE|DIR")]
    pub test_reports: Vec<PathBuf>,
    /// Waivers (owner, reason, expiry) for missing or failing evidence
    #[arg(long, value_name = "FILE")]
    pub waiver: Option<PathBuf>,
    /// Promote pre-release builds as release candidates (rc1) or final releases: the tested
    /// wheels are rewritten with the new version, verified, then uploaded
    #[arg(long, value_enum, value_name = "KIND")]
    pub rewrite_version: Option<RewriteTo>,
    /// With --rewrite-version, also move the pre-release public version of wheels with a
    /// local label (2.10.0a0+rocm7.13.0a20260430 -> 2.10.0rc1+rocm7.13.0rc1); by default it is
    /// kept and only the label follows the SDK, as the reference's promote_packages.py does
    #[arg(long, requires = "rewrite_version")]
    pub rewrite_public_version: bool,
    /// Print exactly what would be copied (or rewritten) and written
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan as JSON (with --dry-run)
    #[arg(long, requires = "dry_run")]
    pub json: bool,
    /// Lock the set was built from: every wheel's version must be the one it names
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// Index of the ROCm SDK the promoted set carries: its staged SDK wheels must be the
    /// bytes it publishes (default: the lock's index); with --rewrite-version, the index of
    /// the promoted SDK release, whose wheels replace the staged ones
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct RetagArgs {
    /// Wheels or directories of wheels (rewritten in place: renamed, WHEEL and RECORD updated)
    #[arg(value_name = "WHEEL|DIR", required = true)]
    pub paths: Vec<PathBuf>,
    /// The manylinux tag to give them, e.g. manylinux_2_28_x86_64 (the build image's glibc)
    #[arg(long, value_name = "TAG")]
    pub platform: String,
    /// Print what would be retagged (or refused) and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan as JSON (with --dry-run)
    #[arg(long, requires = "dry_run")]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct FatWheelArgs {
    /// The Windows torch wheel (win_amd64), verified before it is changed
    #[arg(value_name = "WHEEL")]
    pub wheel: PathBuf,
    /// Root of the Windows ROCm SDK to carry, with bin/ and lib/ (TheRock's build/dist/rocm,
    /// or an installed SDK's `rocm-sdk path --root`)
    #[arg(long, value_name = "DIR")]
    pub rocm: PathBuf,
    /// Directory to write the fat wheel to [default: the input wheel's]
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Print what was done as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

/// The matrix is computed from the family table and the release table; these narrow it.
#[derive(Debug, Args)]
pub struct MatrixArgs {
    /// Release type: its row of the release table decides refs, families, Pythons and tests
    #[arg(long, value_enum)]
    pub release_type: ReleaseType,
    /// PyTorch refs to build, comma separated (default, or empty: the release type's)
    #[arg(long, value_name = "REF[,REF]")]
    pub pytorch_ref: Option<String>,
    /// GPU families to build, `;` or `,` separated (default, or empty: the release type's)
    #[arg(long = "amdgpu-family", value_name = "FAM[;FAM]")]
    pub amdgpu_families: Option<String>,
    /// Python versions to build, comma separated: some of the release type's (default, or
    /// empty: all of them)
    #[arg(long, value_name = "3.X[,3.Y]")]
    pub python_version: Option<String>,
    /// Family table to use instead of the built-in configs/families.yaml
    #[arg(long, value_name = "FILE")]
    pub families: Option<PathBuf>,
    /// Release table to use instead of the built-in configs/releases.yaml
    #[arg(long, value_name = "FILE")]
    pub releases: Option<PathBuf>,
    /// Multi-arch: one build per ref and Python for every family's targets, tests still per
    /// family (default: the family table's index layout)
    #[arg(long)]
    pub multi_arch: bool,
    /// Also run the release table's `full-tests` (PyTorch's full suite, per ref) on top of the
    /// release type's own tests
    #[arg(long)]
    pub full_tests: bool,
    /// Print the matrix as JSON on stdout instead of the summary (`$GITHUB_OUTPUT` gets it
    /// either way)
    #[arg(long)]
    pub json: bool,
}

/// Resolves a `--x` / `--no-x` pair: `Some(true)`, `Some(false)`, or `None` when neither given.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// Index under test (the staging index): torch and the dependencies it has are installed
    /// from it, and the report names every file installed from it
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,
    /// Extra index for what the index under test does not have (pytest, numpy, ...); repeatable
    #[arg(long, value_name = "URL")]
    pub extra_index_url: Vec<String>,
    /// Directory or page of wheels pip may also install from (pip --find-links); repeatable
    #[arg(long, value_name = "PATH")]
    pub find_links: Vec<String>,
    /// Lock naming the torch version and commit under test (default: the newest torch on the
    /// index, and no commit check)
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
    /// PyTorch checkout at the tested version, without hipify or submodules: its test/run_test.py
    /// runs the tests
    #[arg(long, value_name = "DIR")]
    pub pytorch_dir: Option<PathBuf>,
    /// Which tests: default, quick (the default config's core modules), distributed, inductor
    /// (run_test.py) or gpu-smoke (built in)
    #[arg(long, value_enum, default_value = "default")]
    pub test_config: TestConfig,
    /// Run shard N of M (1-based), as run_test.py --shard N M
    #[arg(long, num_args = 2, value_names = ["N", "M"])]
    pub shard: Option<Vec<String>>,
    /// Only these test modules (run_test.py --include test_nn nn/test_pooling ...)
    #[arg(long, num_args = 1.., value_name = "TEST")]
    pub include: Vec<String>,
    /// Also exclude these test modules (run_test.py --exclude), besides the hang list
    #[arg(long, num_args = 1.., value_name = "TEST")]
    pub exclude: Vec<String>,
    /// Seconds one test may run before pytest-timeout stops it (0: no limit)
    #[arg(long, value_name = "SECS", default_value_t = 900)]
    pub timeout: u64,
    /// Seconds one run_test.py invocation may run before rockbuild stops it
    #[arg(
        value_parser = positive::<u64>,
        long,
        value_name = "SECS",
        default_value_t = 6 * 3600
    )]
    pub run_timeout: u64,
    /// Stop at the first failing test module (run_test.py without --keep-going)
    #[arg(long)]
    pub no_keep_going: bool,
    /// Run tests from sources of another major.minor than the wheel, or another commit than
    /// the lock's
    #[arg(long)]
    pub allow_version_mismatch: bool,
    /// GPU family under test: which devices are used (gfx94X-dcgpu: targets starting with
    /// gfx94; gfx950-dcgpu: gfx950) and which skip-list sections apply
    #[arg(long, value_name = "FAMILY")]
    pub amdgpu_family: Option<String>,
    /// PyTorch version whose skip lists apply (default: the wheel's major.minor)
    #[arg(long, value_name = "X.Y")]
    pub pytorch_version: Option<String>,
    /// Platform whose skip lists apply (default: this one)
    #[arg(long, value_enum)]
    pub platform: Option<Platform>,
    /// GPU selection, stage 1: unique (first device of each target) or all devices
    /// (default: all for distributed, else unique)
    #[arg(long, value_enum)]
    pub device_query: Option<DeviceQueryMode>,
    /// GPU selection, stage 2: single (one device visible) or all candidates
    /// (default: all for distributed, else single)
    #[arg(long, value_enum)]
    pub gpu_policy: Option<GpuPolicy>,
    /// Run even without a usable GPU: GPU checks are reported as skipped, never as passed
    #[arg(long)]
    pub allow_no_gpu: bool,
    /// Directory of skip-list files to use instead of the built-in configs/skip-tests
    #[arg(long, value_name = "DIR")]
    pub skip_lists: Option<PathBuf>,
    /// Run only the tests the skip lists name (do they pass again?)
    #[arg(long)]
    pub only_skipped: bool,
    /// Keep the JIT executor tests (no run_test.py --exclude-jit-executor)
    #[arg(long)]
    pub no_exclude_jit_executor: bool,
    /// Keep the distributed tests in the default config (no --exclude-distributed-tests)
    #[arg(long)]
    pub no_exclude_distributed: bool,
    /// Keep the quantization tests (no --exclude-quantization-tests)
    #[arg(long)]
    pub no_exclude_quantization: bool,
    /// pip requirements file for the test venv besides the wheels (default: the list in
    /// configs/pytorch-tests.yaml)
    #[arg(long, value_name = "FILE")]
    pub test_requirements: Option<PathBuf>,
    /// Where the shard's results go: shard.json, junit/, logs/ (default:
    /// test-results/<config>-<N>-<M>)
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Directory for the test venv, emptied first if it holds one (default: a temporary one)
    #[arg(long, value_name = "DIR")]
    pub venv: Option<PathBuf>,
    /// Python used to create the venv
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Family table to use instead of the built-in configs/families.yaml
    #[arg(long, value_name = "FILE")]
    pub families: Option<PathBuf>,
    /// Print which skip lists and sections apply to this run and why, then exit
    #[arg(long)]
    pub print_skips: bool,
    /// Print the plan without installing or running anything
    #[arg(long)]
    pub dry_run: bool,
    /// With --dry-run or --print-skips: print JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// Arguments for run_test.py after `--` (it hands what it does not know to pytest)
    #[arg(last = true, value_name = "ARGS")]
    pub passthrough: Vec<String>,
}

#[derive(Debug, Args)]
pub struct TestReportArgs {
    /// Directories holding shard results (searched for shard.json), e.g. downloaded artifacts
    #[arg(required = true, value_name = "DIR")]
    pub results: Vec<PathBuf>,
    /// A config every shard of which must be there: CONFIG, or CONFIG=SHARDS; repeatable or
    /// comma separated (default: the configs found, with the shard counts they declare)
    #[arg(long, value_name = "CONFIG[=SHARDS]", value_delimiter = ',')]
    pub expect: Vec<String>,
    /// Where to write the combined test report (JSON) that promote reads
    #[arg(long, value_name = "FILE", default_value = "test-report.json")]
    pub report: PathBuf,
    /// Also write the Markdown summary to this file (it goes to $GITHUB_STEP_SUMMARY anyway)
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Print the summary as JSON on stdout
    #[arg(long)]
    pub json: bool,
}

pub fn flag(yes: bool, no: bool) -> Option<bool> {
    match (yes, no) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    }
}

/// A count of workers or attempts, a depth, a wait or a limit: 0 would mean no worker, no
/// attempt, no time, so it is refused where it is given instead of doing nothing.
fn positive<T: std::str::FromStr + PartialEq + From<u8>>(text: &str) -> Result<T, String> {
    match text.trim().parse::<T>() {
        Ok(value) if value == T::from(0) => {
            Err("must be at least 1 (0 would mean no worker, no attempt or no time)".into())
        }
        Ok(value) => Ok(value),
        Err(_) => Err(format!("`{text}` is not a whole number")),
    }
}

/// The values a boolean environment variable takes (any case); an empty value counts as unset,
/// as GitHub Actions passes an input nobody set.
const TRUE_WORDS: [&str; 4] = ["true", "1", "yes", "on"];
const FALSE_WORDS: [&str; 4] = ["false", "0", "no", "off"];

/// The parser of every boolean flag's `ROCKBUILD_…` variable (a switch takes no value on the
/// command line, so a value only ever comes from the environment): the words of
/// [`TRUE_WORDS`] and [`FALSE_WORDS`], and an error that names the variable, not the flag.
#[derive(Clone, Copy, Debug)]
pub struct EnvBool;

impl clap::builder::TypedValueParser for EnvBool {
    type Value = bool;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<bool, clap::Error> {
        let text = value.to_string_lossy();
        let word = text.trim().to_ascii_lowercase();
        if word.is_empty() || FALSE_WORDS.contains(&word.as_str()) {
            return Ok(false);
        }
        if TRUE_WORDS.contains(&word.as_str()) {
            return Ok(true);
        }
        let name = arg
            .and_then(clap::Arg::get_env)
            .map(|env| env.to_string_lossy().into_owned())
            .or_else(|| arg.map(|a| a.to_string()))
            .unwrap_or_else(|| "the variable".into());
        let shown = shlex::try_quote(&text).unwrap_or_else(|_| text.clone());
        let message = format!(
            "{name}={shown} is not a yes/no value: use one of {} (any case), or leave it empty for unset\n",
            TRUE_WORDS
                .iter()
                .chain(&FALSE_WORDS)
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        );
        Err(clap::Error::raw(clap::error::ErrorKind::InvalidValue, message).with_cmd(cmd))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        // Help shows true/false, as for any switch; the other words are accepted all the same.
        Some(Box::new(TRUE_WORDS.iter().chain(&FALSE_WORDS).map(
            |word| {
                clap::builder::PossibleValue::new(*word).hide(*word != "true" && *word != "false")
            },
        )))
    }
}

/// An argument of `verb` (`""`: the global options) gets its variable from the table of
/// [`options`]; a switch that reads one gets [`EnvBool`], the one place every boolean variable
/// of every verb is declared lenient.
fn with_env(verb: &str, arg: clap::Arg) -> clap::Arg {
    let arg = options::with_aliases(options::attach(verb, arg));
    if arg.get_env().is_some() && matches!(arg.get_action(), clap::ArgAction::SetTrue) {
        arg.value_parser(EnvBool)
    } else {
        arg
    }
}

/// [`with_env`] over a verb's arguments and those of its own subcommands (`ci generate`).
fn verb_with_env(parent: &str, command: clap::Command) -> clap::Command {
    let verb = match parent {
        "" => command.get_name().to_string(),
        parent => format!("{parent} {}", command.get_name()),
    };
    let nested = verb.clone();
    command
        // The global `-h, --help` (compact, as every verb's help is) stands in for clap's own.
        .disable_help_flag(true)
        .mut_args(move |arg| with_env(&verb, arg))
        .mut_subcommands(move |sub| verb_with_env(&nested, sub))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Every environment variable of a flag is derived mechanically from its long name:
    /// `ROCKBUILD_<FLAG>`, or `ROCKBUILD_<VERB>_<FLAG>` where two verbs share a flag name
    /// with different meanings (`--to` of stage and promote; `--targets` of stage, the
    /// targets the set was built for, and of smoke, the runner's targets to install).
    #[test]
    fn env_names_follow_the_flag_names() {
        fn check(command: &clap::Command) {
            for arg in command.get_arguments() {
                if let (Some(env), Some(long)) = (arg.get_env(), arg.get_long()) {
                    let flag = long.to_uppercase().replace('-', "_");
                    let env = env.to_str().unwrap_or_default();
                    let mechanical = env == format!("ROCKBUILD_{flag}")
                        || ["BUILD", "STAGE", "PROMOTE", "TEST", "SMOKE"]
                            .iter()
                            .any(|verb| env == format!("ROCKBUILD_{verb}_{flag}"));
                    assert!(
                        mechanical,
                        "--{long} reads {env}, expected ROCKBUILD_[VERB_]{flag}"
                    );
                }
            }
            for sub in command.get_subcommands() {
                check(sub);
            }
        }
        check(&Cli::command());
    }

    /// The rockbuild command lines of a shell text: every line naming the binary, with its
    /// `\` continuations joined, split as the shell would (variables stay literal words);
    /// comments skipped.
    fn invocations(text: &str) -> Vec<Vec<String>> {
        let joined = text.replace("\\\n", " ");
        joined
            .lines()
            .filter(|line| !line.trim_start().starts_with('#'))
            .filter_map(|line| {
                let words = shlex::split(line.trim().trim_start_matches("run:"))?;
                let at = words
                    .iter()
                    .position(|w| w.ends_with("/rockbuild") || w == "$rockbuild")?;
                // A bare path (an artifact list, `chmod +x`) is not an invocation.
                (words.len() > at + 1).then(|| words[at..].to_vec())
            })
            .collect()
    }

    /// The quickstart runs the CLI this binary defines: a renamed or removed
    /// flag fails here rather than in CI or on a user's machine.
    #[test]
    fn shipped_scripts_use_the_real_cli() {
        // The generated workflows are checked where they are generated (ci::generate).
        for (file, text) in [("scripts/quickstart", include_str!("../scripts/quickstart"))] {
            let found = invocations(text);
            assert!(!found.is_empty(), "{file}: no rockbuild command found");
            for argv in found {
                if let Err(error) = Cli::try_parse_from(&argv) {
                    panic!("{file}: `{}` does not parse: {error}", argv.join(" "));
                }
            }
        }
    }

    /// Every switch that reads a variable, in every verb: (verb path, variable).
    pub(crate) fn env_switches() -> Vec<(Vec<String>, String)> {
        fn walk(command: &clap::Command, path: &[String], out: &mut Vec<(Vec<String>, String)>) {
            for arg in command.get_arguments() {
                if let Some(env) = arg.get_env()
                    && matches!(arg.get_action(), clap::ArgAction::SetTrue)
                {
                    out.push((path.to_vec(), env.to_string_lossy().into_owned()));
                }
            }
            for sub in command.get_subcommands() {
                let mut path = path.to_vec();
                path.push(sub.get_name().to_string());
                walk(sub, &path, out);
            }
        }
        let mut command = Cli::command();
        command.build();
        let mut out = Vec::new();
        walk(&command, &[], &mut out);
        out
    }

    #[test]
    fn every_boolean_variable_takes_yes_no_words_and_empty_is_unset() {
        use clap::builder::TypedValueParser as _;
        let switches = env_switches();
        let variables: std::collections::BTreeSet<&str> =
            switches.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(
            variables.into_iter().collect::<Vec<_>>(),
            [
                "ROCKBUILD_ALLOW_LINUX_TAG",
                "ROCKBUILD_ALLOW_NO_GPU",
                "ROCKBUILD_BREAK_LEASE",
                "ROCKBUILD_FULL_TESTS",
                "ROCKBUILD_INSTALL_ROCM",
                "ROCKBUILD_MULTI_ARCH",
                "ROCKBUILD_QUIET",
                "ROCKBUILD_RELEASE",
                "ROCKBUILD_REQUIRE_RELATED_COMMIT",
                "ROCKBUILD_S3_PATH_STYLE",
                "ROCKBUILD_STRICT",
                "ROCKBUILD_USE_SCCACHE",
            ]
        );
        let mut command = Cli::command();
        command.build();
        fn check(command: &clap::Command) {
            for arg in command.get_arguments() {
                let Some(env) = arg.get_env() else { continue };
                if !matches!(arg.get_action(), clap::ArgAction::SetTrue) {
                    continue;
                }
                let env = env.to_string_lossy();
                // The parser the command line really uses: EnvBool's words, hidden but accepted.
                let words: Vec<String> = arg
                    .get_value_parser()
                    .possible_values()
                    .map(|values| values.map(|v| v.get_name().to_string()).collect())
                    .unwrap_or_default();
                assert!(words.contains(&"yes".to_string()), "{env}: {words:?}");
                for (value, want) in [
                    ("1", true),
                    ("TRUE", true),
                    ("Yes", true),
                    ("on", true),
                    ("0", false),
                    ("false", false),
                    ("NO", false),
                    ("Off", false),
                    ("", false),
                ] {
                    let got = EnvBool
                        .parse_ref(command, Some(arg), std::ffi::OsStr::new(value))
                        .unwrap_or_else(|e| panic!("{env}={value}: {e}"));
                    assert_eq!(got, want, "{env}={value}");
                }
                let error = EnvBool
                    .parse_ref(command, Some(arg), std::ffi::OsStr::new("maybe so"))
                    .expect_err("not a boolean");
                assert_eq!(
                    error.to_string(),
                    format!(
                        "error: {env}='maybe so' is not a yes/no value: use one of true, 1, yes, on, false, 0, no, off (any case), or leave it empty for unset\n"
                    )
                );
            }
            for sub in command.get_subcommands() {
                check(sub);
            }
        }
        check(&command);
    }

    #[test]
    fn flag_pairs() {
        assert_eq!(flag(true, false), Some(true));
        assert_eq!(flag(false, true), Some(false));
        assert_eq!(flag(false, false), None);
    }
}
