//! Adding a project to the stack is one recipe and one stack.yaml entry. The recipe below is
//! the whole of what rockbuild learns about `torch_ops` (tests/fixtures/torch_ops, a small
//! real setuptools extension with one HIP kernel, laid out as upstream torch extensions such
//! as torchvision are: setup.py + version.txt + csrc/): the registry that holds it is the one
//! value every verb gets (`commands::run`, as `main` calls it), and the project is locked,
//! checked out, built against the torch of the same build for a real gfx target, verified
//! (GPU code for the target, the HIP runtime linked, torch pinned exactly), staged and listed
//! by `compat` with nothing else in rockbuild changed. (`matrix` asks nothing of projects: it
//! is refs × families × Python versions, so a sixth project has nothing to carry there.)

use std::path::{Path, PathBuf};

use clap::Parser;
use rockbuild::cli::Cli;
use rockbuild::context::Context;
use rockbuild::exit::ExitStatus;
use rockbuild::recipes::Error;
use rockbuild::recipes::{
    Artifact, EnvDiff, ProjectSteps, Recipe, RecipeInput, RecipeOption, Recipes, Steps,
    VersionInput, Versions,
};
use rockbuild::wheel::verify::WheelExpectation;

use crate::common::git::RepoBuilder;
use crate::common::http::serve;
use crate::common::sample::{
    offload_targets, only_wheel, requires_dist, sample_origins, wheel_member,
};
use crate::common::sdk::sdk_index;
use crate::common::{TestEnv, repo_root, wheelhouse};

const SDK_VERSION: &str = "7.10.0a20251124";

/// The recipe of the sixth project: a torch extension built with `python -m build` against
/// the torch installed in the venv, requiring exactly that torch.
struct TorchExtension;

/// The sixth project's own option, declared here alone: whether its wheel requires exactly the
/// torch of the build (setup.py's TORCH_REQUIREMENT) or any torch.
const PIN_TORCH: RecipeOption = RecipeOption {
    name: "pin-torch",
    reference_flag: None,
    about: "require exactly the torch of the build; unset: on",
};

impl Recipe for TorchExtension {
    fn name(&self) -> &'static str {
        "torch-extension"
    }

    fn reads(&self) -> &'static [&'static str] {
        &["version.txt", "requirements-build.txt"]
    }

    fn builds_against(&self) -> &'static [&'static str] {
        &["torch", "composable-kernel"]
    }

    fn pins(&self) -> &'static [&'static str] {
        &["torch"]
    }

    fn start_priority(&self) -> u8 {
        5
    }

    fn steps(&self, input: &RecipeInput<'_>, mut env: EnvDiff) -> Result<ProjectSteps, Error> {
        input.set_build_version(&mut env, "BUILD_VERSION");
        if let Some(ck) = input.source_dir("composable-kernel") {
            env.insert(
                "CK_INCLUDE_DIR".into(),
                ck.join("include").display().to_string(),
            );
        }
        if let Some(torch) = input
            .pinned
            .get("torch")
            .filter(|_| input.options.get(&PIN_TORCH) != Some(false))
        {
            env.insert("TORCH_REQUIREMENT".into(), torch.requirement());
        }
        let mut steps = Steps::new(input, env);
        steps.clean(input.dir);
        // `--no-isolation`: the project's build requirements go into the venv first.
        steps.install_requirements("requirements-build.txt");
        steps.build(
            "build wheel",
            &["-m", "build", "--wheel", "--no-isolation"],
            input.dir,
        );
        steps.collect(&input.path("dist"));
        Ok(steps.finish())
    }

    fn options(&self) -> &'static [RecipeOption] {
        &[PIN_TORCH]
    }

    fn wheel(&self) -> WheelExpectation {
        WheelExpectation {
            links_hip_runtime: true,
            ..WheelExpectation::default()
        }
    }
}

/// A component that is not a wheel: a header-only source tree another project compiles
/// against, as PyTorch's ROCm build compiles composable_kernel's headers
/// (third_party/composable_kernel/include). Its build is nothing; its checkout is what it
/// gives.
struct ComposableKernel;

impl Recipe for ComposableKernel {
    fn name(&self) -> &'static str {
        "composable-kernel"
    }

    fn artifact(&self) -> Artifact {
        Artifact::Source
    }

    fn reads(&self) -> &'static [&'static str] {
        &[]
    }

    /// composable_kernel's version is its CMakeLists.txt's `project(... VERSION 1.1.0)`; the
    /// stand-in states it here, as nothing records a source tree's version but the lock's
    /// commit.
    fn version(&self, _input: &VersionInput<'_>) -> Result<Versions, Error> {
        Ok(Versions::given("1.1.0".into()))
    }

    fn start_priority(&self) -> u8 {
        0
    }

    fn steps(&self, input: &RecipeInput<'_>, env: EnvDiff) -> Result<ProjectSteps, Error> {
        Ok(Steps::new(input, env).finish())
    }
}

/// composable_kernel's stand-in as a git origin: one header under include/ck_tile, as
/// composable_kernel lays out its tile headers (include/ck_tile/core/...).
fn composable_kernel_origin(env: &TestEnv) -> String {
    let repo = RepoBuilder::new(env, "composable_kernel");
    repo.write(
        "include/ck_tile/scale.hpp",
        "// composable_kernel stand-in: one device function.\n#pragma once\n#include <hip/hip_runtime.h>\n\nnamespace ck_tile {\n__host__ __device__ inline float scale(float x, float factor) { return x * factor; }\n}  // namespace ck_tile\n",
    );
    repo.commit("composable_kernel headers");
    repo.publish();
    repo.url()
}

/// The fixture project as a git origin.
fn torch_ops_origin(env: &TestEnv) -> String {
    let repo = RepoBuilder::new(env, "torch_ops");
    let fixture = repo_root().join("tests/fixtures/torch_ops");
    for relative in [
        ".gitignore",
        "README.md",
        "version.txt",
        "pyproject.toml",
        "requirements-build.txt",
        "setup.py",
        "torch_ops/__init__.py",
        "csrc/scale.hip",
    ] {
        let text = std::fs::read_to_string(fixture.join(relative)).expect("read the fixture");
        repo.write(relative, &text);
    }
    repo.commit("torch_ops 0.1.0");
    repo.publish();
    repo.url()
}

/// The sample stack's config with the sixth project's entry appended, and the component it
/// compiles against (no `wheel:`, no `smoke:`: it makes no wheel).
fn six_project_stack(env: &TestEnv, sample_stack: &Path, origin: &str, ck: &str) -> PathBuf {
    let mut text = std::fs::read_to_string(sample_stack).expect("read the sample stack");
    text.push_str(&format!(
        "\n  ops:\n    checkout-dir: torch_ops\n    origin: \"{origin}\"\n    ref: main\n    wheel: torch_ops\n    recipe: torch-extension\n    submodules: false\n    hipify: {{mode: off}}\n    smoke: \"import torch_ops\"\n\n  ck:\n    checkout-dir: composable_kernel\n    origin: \"{ck}\"\n    ref: main\n    recipe: composable-kernel\n    submodules: false\n    hipify: {{mode: off}}\n"
    ));
    let path = env.path("six.yaml");
    std::fs::write(&path, text).expect("write the stack");
    path
}

/// `rockbuild <argv>` in-process through the same entry as `main`, with `recipes`.
fn run(ctx: &Context, recipes: &Recipes, argv: &[&str]) -> anyhow::Result<ExitStatus> {
    let cli = Cli::try_parse_from(std::iter::once("rockbuild").chain(argv.iter().copied()))
        .unwrap_or_else(|error| panic!("{argv:?}: {error}"));
    rockbuild::commands::run(cli.command, ctx, recipes)
}

/// As [`run`], and it must succeed.
#[track_caller]
fn succeeds(ctx: &Context, recipes: &Recipes, argv: &[&str]) {
    let status = run(ctx, recipes, argv)
        .unwrap_or_else(|error| panic!("{argv:?}: {}", rockbuild::diagnostics::render(&error)));
    assert_eq!(status, ExitStatus::Success, "{argv:?}");
}

#[test]
fn a_sixth_project_is_locked_built_verified_staged_and_listed_through_its_recipe() {
    let mut env = TestEnv::new();
    env.set("PIP_NO_INDEX", "1");
    env.set("PIP_FIND_LINKS", wheelhouse().display().to_string());
    let server = serve(&sdk_index(SDK_VERSION, &["gfx906", "gfx1030"]));
    let origins = sample_origins(&env);
    let stack = six_project_stack(
        &env,
        &origins.stack_yaml,
        &torch_ops_origin(&env),
        &composable_kernel_origin(&env),
    );
    let stack_arg = stack.display().to_string();
    let root = env.path("root");
    let root_arg = root.display().to_string();
    let out = env.path("out");
    let out_arg = out.display().to_string();
    let index_url = format!("{}simple/", server.url());
    let lock = env.path("six.lock.json");
    let lock_arg = lock.display().to_string();

    // The rockbuild binary has no such recipe: the stack entry is refused, at its line.
    let sdk_spec = format!("=={SDK_VERSION}");
    let lock_args = [
        "lock",
        "--config",
        &stack_arg,
        "--project",
        "torch",
        "--project",
        "ops",
        "--project",
        "ck",
        "--lock",
        &lock_arg,
        "--index-url",
        &index_url,
        "--rocm-sdk-version",
        &sdk_spec,
        "--pytorch-rocm-arch",
        "gfx906",
    ];
    let output = env.rockbuild().args(lock_args).output().expect("run lock");
    assert_eq!(output.status.code(), Some(2));
    let line = std::fs::read_to_string(&stack)
        .expect("stack")
        .lines()
        .position(|l| l.trim() == "recipe: torch-extension")
        .expect("the recipe line")
        + 1;
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "error: {stack_arg}:{line}: project 'ops' names recipe `torch-extension`, which this rockbuild does not have (did you mean `torch`?); recipes: torch, audio, vision, triton, apex\n"
        )
    );
    assert!(!lock.exists(), "nothing half-written");

    // From here on, the registry with the recipe added, as `main` would pass it.
    let ctx = Context::with_environment(env.vars().clone(), env.root().to_path_buf());
    let recipes = Recipes::builtin()
        .with(TorchExtension)
        .with(ComposableKernel);

    // lock: torch and torch_ops, their wheel versions named by their recipes up front.
    succeeds(&ctx, &recipes, &lock_args);
    let locked: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&lock).expect("lock")).expect("JSON");
    let ops_version = format!("0.1.0+rocm{SDK_VERSION}");
    assert_eq!(locked["build"]["versions"]["ops"], ops_version.as_str());
    assert!(
        locked["projects"]["ops"]["commit"].is_string(),
        "{locked:#}"
    );
    // The component is locked at a commit, and has no wheel version.
    assert!(locked["projects"]["ck"]["commit"].is_string(), "{locked:#}");
    assert!(
        locked["build"]["versions"].get("ck").is_none(),
        "{locked:#}"
    );

    // checkout from the lock: the sixth project is checked out like the others.
    succeeds(
        &ctx,
        &recipes,
        &[
            "checkout",
            "--config",
            &stack_arg,
            "--root-checkout-dir",
            &root_arg,
            "--from-lock",
            &lock_arg,
        ],
    );
    assert!(root.join("torch_ops/setup.py").is_file());
    assert!(
        root.join("composable_kernel/include/ck_tile/scale.hpp")
            .is_file()
    );
    let root_lock = root.join("rockbuild.lock.json").display().to_string();

    // build against the lock: torch and torch_ops only (generic --skip).
    let mut build = vec![
        "build",
        "--config",
        &stack_arg,
        "--root-checkout-dir",
        &root_arg,
        "--output-dir",
        &out_arg,
        "--install-rocm",
        "--index-url",
        &index_url,
        "--lock",
        &root_lock,
    ];
    for name in ["audio", "vision", "triton", "apex"] {
        build.extend(["--skip", name]);
    }
    // The recipe's own option is known to the generic flag with no edit outside the recipe:
    // a misspelt one is refused naming what the recipe declares, before anything is built.
    let mut misspelt = build.clone();
    misspelt.extend(["--recipe-option", "ops.pin-torh=on"]);
    let error = run(&ctx, &recipes, &misspelt).expect_err("no such option");
    assert_eq!(
        rockbuild::diagnostics::render(&error),
        "error: --recipe-option ops.pin-torh=on: project 'ops' has no option `pin-torh` (did you mean `pin-torch`?); its recipe `torch-extension` declares pin-torch"
    );
    assert!(!out.exists(), "nothing built");
    build.extend(["--recipe-option", "ops.pin-torch=on"]);
    succeeds(&ctx, &recipes, &build);

    let torch = only_wheel(&out, "torch");
    let ops = only_wheel(&out, "torch_ops");
    let torch_version = format!("2.10.0a0+rocm{SDK_VERSION}");
    assert_eq!(
        ops.file_name().and_then(|n| n.to_str()).expect("name"),
        format!(
            "torch_ops-{ops_version}-{}.whl",
            torch
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.splitn(3, '-').nth(2))
                .and_then(|tags| tags.strip_suffix(".whl"))
                .expect("tags")
        )
    );
    assert_eq!(requires_dist(&ops), [format!("torch=={torch_version}")]);
    assert_eq!(
        offload_targets(&wheel_member(&ops, "torch_ops/_scale_hip.so")),
        ["gfx906"]
    );
    // The builds of the two were ordered by the recipe's edge: torch installed first.
    let log = std::fs::read_to_string(out.join("logs/ops.log")).expect("ops log");
    assert!(log.contains("collected"), "{log}");
    // torch_ops compiled against the component's headers, handed to it by its recipe.
    let ck_include = root.join("composable_kernel/include");
    assert!(
        log.contains(&format!("-I{}", ck_include.display())) && log.contains("-DTORCH_OPS_WITH_CK"),
        "{log}"
    );
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("build-report.json")).expect("report"),
    )
    .expect("JSON");
    assert_eq!(
        report["projects"]["ops"]["after"],
        serde_json::json!(["torch", "ck"])
    );
    // The component was built as nothing, and left no wheel.
    assert_eq!(report["projects"]["ck"]["status"], "built", "{report:#}");
    assert!(report["projects"]["ck"]["wheel"].is_null(), "{report:#}");
    let wheels: Vec<String> = std::fs::read_dir(&out)
        .expect("out")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".whl"))
        .collect();
    assert_eq!(wheels.len(), 2, "{wheels:?}");
    assert!(
        report["projects"]["ops"]["start_seconds"].as_f64()
            >= report["projects"]["torch"]["duration_seconds"].as_f64()
    );

    // verify against the lock, with what the recipes expect of each wheel (the sixth's: GPU
    // code for the lock's target, the HIP runtime linked, torch pinned). Built here, outside
    // the manylinux image: the local build's `linux_x86_64` tag.
    let verify = [
        "verify",
        &out_arg,
        "--config",
        &stack_arg,
        "--lock",
        &root_lock,
        "--allow-linux-tag",
    ];
    succeeds(&ctx, &recipes, &verify);
    // verify asks the registry it is given, not one of its own: without the recipe, the
    // stack entry is refused.
    let error = run(&ctx, &Recipes::builtin(), &verify).expect_err("no such recipe");
    assert!(
        rockbuild::diagnostics::render(&error).contains("names recipe `torch-extension`"),
        "{}",
        rockbuild::diagnostics::render(&error)
    );

    // stage: verified again, then the wheels and the index pages written.
    let staged = env.path("staged");
    succeeds(
        &ctx,
        &recipes,
        &[
            "stage",
            "--config",
            &stack_arg,
            "--input",
            &out_arg,
            "--to",
            &staged.display().to_string(),
            "--lock",
            &root_lock,
            "--allow-linux-tag",
        ],
    );
    let page = std::fs::read_to_string(staged.join("torch-ops/index.html")).expect("page");
    assert!(
        page.contains(&format!("torch_ops-{}", ops_version.replace('+', "%2B")))
            || page.contains(&format!("torch_ops-{ops_version}")),
        "{page}"
    );

    // compat: torch_ops is a column of the report, compared with the lock.
    let compat = [
        "compat", &out_arg, "--config", &stack_arg, "--lock", &root_lock,
    ];
    succeeds(&ctx, &recipes, &compat);
    let mut drifted = locked.clone();
    // A lock says one thing once: its version and its file stem move together.
    drifted["build"]["versions"]["ops"] = serde_json::json!("0.0.9");
    drifted["build"]["stems"]["ops"] = serde_json::json!("torch_ops-0.0.9");
    let drifted_lock = env.path("drifted.lock.json");
    std::fs::write(&drifted_lock, drifted.to_string()).expect("write");
    let drifted_arg = drifted_lock.display().to_string();
    let error = run(
        &ctx,
        &recipes,
        &[
            "compat",
            &out_arg,
            "--config",
            &stack_arg,
            "--lock",
            &drifted_arg,
        ],
    )
    .expect_err("the lock differs");
    assert_eq!(
        rockbuild::diagnostics::render(&error),
        format!(
            "error: the stack differs from {drifted_arg} in 1 place; the first: torch_ops is {ops_version}, the lock has 0.0.9"
        )
    );
}
