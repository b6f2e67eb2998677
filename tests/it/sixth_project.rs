//! Adding a project to the stack is one recipe and one stack.yaml entry. The recipe below is
//! the whole of what rockbuild learns about `torch_ops` (tests/fixtures/torch_ops, a small
//! real setuptools extension with one HIP kernel): it is checked out, built against the torch
//! of the same build for a real gfx target, and verified (GPU code for the target, the HIP
//! runtime linked, torch pinned exactly) with nothing else in rockbuild changed.

use std::path::{Path, PathBuf};

use clap::Parser;
use rockbuild::build::Error;
use rockbuild::build::recipes::{EnvDiff, ProjectSteps, Recipe, RecipeInput, Recipes, Steps};
use rockbuild::cli::{Cli, Command, ConfigArgs};
use rockbuild::context::Context;
use rockbuild::exit::ExitStatus;
use rockbuild::verify::{Expectations, verify_set};
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

impl Recipe for TorchExtension {
    fn name(&self) -> &'static str {
        "torch-extension"
    }

    fn reads(&self) -> &'static [&'static str] {
        &["version.txt", "requirements-build.txt"]
    }

    fn builds_against(&self) -> &'static [&'static str] {
        &["torch"]
    }

    fn pins(&self) -> &'static [&'static str] {
        &["torch"]
    }

    fn start_priority(&self) -> u8 {
        5
    }

    fn steps(&self, input: &RecipeInput<'_>, mut env: EnvDiff) -> Result<ProjectSteps, Error> {
        env.insert("BUILD_VERSION".into(), input.build_version.to_string());
        if let Some(torch) = input.pinned.get("torch") {
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

    fn wheel(&self) -> WheelExpectation {
        WheelExpectation {
            links_hip_runtime: true,
            ..WheelExpectation::default()
        }
    }
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

/// The sample stack's config with the sixth project's entry appended.
fn six_project_stack(env: &TestEnv, sample_stack: &Path, origin: &str) -> PathBuf {
    let mut text = std::fs::read_to_string(sample_stack).expect("read the sample stack");
    text.push_str(&format!(
        "\n  ops:\n    checkout-dir: torch_ops\n    origin: \"{origin}\"\n    ref: main\n    wheel: torch_ops\n    recipe: torch-extension\n    submodules: false\n    hipify: {{mode: off}}\n    smoke: \"import torch_ops\"\n"
    ));
    let path = env.path("six.yaml");
    std::fs::write(&path, text).expect("write the stack");
    path
}

#[test]
fn a_sixth_project_builds_and_verifies_with_its_recipe_and_stack_entry() {
    let mut env = TestEnv::new();
    env.set("PIP_NO_INDEX", "1");
    env.set("PIP_FIND_LINKS", wheelhouse().display().to_string());
    let server = serve(&sdk_index(SDK_VERSION, &["gfx906", "gfx1030"]));
    let origins = sample_origins(&env);
    let stack = six_project_stack(&env, &origins.stack_yaml, &torch_ops_origin(&env));
    let root = env.path("root");
    let out = env.path("out");
    let index_url = format!("{}simple/", server.url());

    // The checkout knows nothing of recipes: the sixth project is checked out like the others.
    let output = env
        .rockbuild()
        .arg("checkout")
        .arg("--config")
        .arg(&stack)
        .arg("--root-checkout-dir")
        .arg(&root)
        .output()
        .expect("run checkout");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(root.join("torch_ops/setup.py").is_file());

    // The rockbuild binary has no such recipe: the stack entry is refused, at its line.
    let output = env
        .rockbuild()
        .arg("plan")
        .arg("--config")
        .arg(&stack)
        .arg("--root-checkout-dir")
        .arg(&root)
        .args([
            "--output-dir",
            "out",
            "--rocm-sdk-version",
            &format!("=={SDK_VERSION}"),
        ])
        .output()
        .expect("run plan");
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
            "error: {}:{line}: project 'ops' names recipe `torch-extension`, which this rockbuild does not have (did you mean `torch`?); recipes: torch, audio, vision, triton, apex\n",
            stack.display()
        )
    );

    // The build, in-process with the recipe added; torch and torch_ops only (generic --skip).
    let argv: Vec<String> = [
        "rockbuild",
        "build",
        "--config",
        &stack.display().to_string(),
        "--root-checkout-dir",
        &root.display().to_string(),
        "--output-dir",
        &out.display().to_string(),
        "--install-rocm",
        "--index-url",
        &index_url,
        "--pytorch-rocm-arch",
        "gfx906",
    ]
    .into_iter()
    .map(str::to_string)
    .chain(
        ["audio", "vision", "triton", "apex"]
            .into_iter()
            .flat_map(|name| ["--skip".to_string(), name.to_string()]),
    )
    .collect();
    let Command::Build(args) = Cli::try_parse_from(&argv).expect("parses").command else {
        panic!("not a build command");
    };
    let ctx = Context::with_environment(env.vars().clone(), env.root().to_path_buf());
    let recipes = Recipes::builtin().with(TorchExtension);
    let status = rockbuild::commands::build::run(args, &ctx, &recipes)
        .unwrap_or_else(|error| panic!("{}", rockbuild::diagnostics::render(&error)));
    assert_eq!(status, ExitStatus::Success);

    let torch = only_wheel(&out, "torch");
    let ops = only_wheel(&out, "torch_ops");
    let torch_version = format!("2.10.0a0+rocm{SDK_VERSION}");
    assert_eq!(
        ops.file_name().and_then(|n| n.to_str()).expect("name"),
        format!(
            "torch_ops-0.1.0+rocm{SDK_VERSION}-{}.whl",
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
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("build-report.json")).expect("report"),
    )
    .expect("JSON");
    assert_eq!(
        report["projects"]["ops"]["after"],
        serde_json::json!(["torch"])
    );
    assert!(
        report["projects"]["ops"]["start_seconds"].as_f64()
            >= report["projects"]["torch"]["duration_seconds"].as_f64()
    );

    // Verified with what the recipes expect of each wheel, the sixth's included.
    let stack = ConfigArgs {
        config: Some(stack),
        families: None,
    }
    .stack(&ctx)
    .expect("stack");
    let mut options = Expectations::for_stack(
        &stack,
        recipes.wheel_expectations(&stack).expect("expectations"),
    );
    options.wheels.targets = vec![
        rockbuild::cli::ConfigArgs::default()
            .family_table(&ctx)
            .expect("families")
            .target("gfx906")
            .expect("target"),
    ];
    // torch's pin on the SDK resolves on the index it was installed from.
    options.index_url = Some(index_url);
    // Built here, outside the manylinux image: the local build's `linux_x86_64` tag.
    options.wheels.allow_linux_tag = true;
    let report = verify_set(&[torch, ops], &options).expect("verifies");
    assert!(report.ok, "{:#?}", report.wheels);
    let ops = report
        .wheels
        .iter()
        .find(|w| w.name.as_deref() == Some("torch-ops"))
        .expect("torch_ops verified");
    assert!(
        ops.libraries
            .iter()
            .any(|l| l.targets == ["gfx906"]
                && l.needed.iter().any(|n| n.starts_with("libamdhip64"))),
        "{:#?}",
        ops.libraries
    );
}
