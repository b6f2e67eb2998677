//! The plan is a pure function of settings and an inspected world: these tests build both as
//! values (no repositories, no files) and check versions, pins, order, environments and the
//! printed plan.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::*;
use crate::build::inspect::{ProjectSnapshot, Snapshot};
use crate::build::select::Selection;
use crate::build::targets::{TargetRequest, family_of_index};
use crate::env_vars::Environment;
use crate::recipes::{CheckoutFiles, OptionValues, Recipes, SdkFacts, built_version};
use crate::sdk::SdkInfo;
use crate::settings::build::{BuildSettings, SdkSettings};
use crate::settings::{Source, Sourced};
use crate::stack::{Project, Stack};

const SDK_VERSION: &str = "7.10.0a20251124";

fn settings() -> BuildSettings {
    BuildSettings {
        stack: Stack::load(None).expect("stack"),
        families: crate::stack::load_families(None).expect("families"),
        output_dir: PathBuf::from("/out"),
        selection: Selection {
            root: Sourced {
                value: PathBuf::from("/src"),
                source: Source::Flag("--root-checkout-dir".into()),
            },
            dirs: BTreeMap::new(),
            build: BTreeMap::new(),
            narrowed: false,
        },
        lock: None,
        sdk: SdkSettings {
            venv: Venv::new("/out/venv"),
            install: None,
            spec_text: ">1.0".into(),
            installer: Installer::Pip,
            cache_dir: PathBuf::from("/cache/pip"),
            locked_version: None,
            record_index_url: None,
        },
        targets: targets("gfx906,gfx1030"),
        mode: ModeChoice::resolve(false, false, None),
        release_type: ReleaseType::Nightly,
        version_suffix: None,
        build_number: 1,
        options: OptionValues::default(),
        compiler_cache: CompilerCache::None,
        clean: false,
        jobs: 3,
        dry_run: true,
        platform: crate::platform::Platform::Linux,
        json: false,
        base_env: Environment::from_pairs([
            ("PATH", "/usr/bin:/bin"),
            ("LD_LIBRARY_PATH", "/opt/lib"),
        ]),
    }
}

fn targets(list: &str) -> TargetRequest {
    TargetRequest {
        flag: Some(list.into()),
        max: 8,
        ..TargetRequest::default()
    }
}

/// An SDK not installed yet (placeholder paths), as `plan` sees it.
fn planned_sdk() -> SdkFacts {
    let root = PathBuf::from("/sdk");
    SdkFacts {
        info: SdkInfo {
            version: SDK_VERSION.into(),
            bin: root.join("bin"),
            cmake: root.join("lib/cmake"),
            root,
            targets: vec![],
            python: "3.11.7".into(),
        },
        known: false,
        dirs: BTreeSet::new(),
    }
}

/// An installed SDK that ships gfx906 and gfx1030, with the optional directories.
fn installed_sdk() -> SdkFacts {
    let mut sdk = planned_sdk();
    sdk.known = true;
    sdk.info.targets = vec!["gfx906".into(), "gfx1030".into()];
    sdk.dirs = ["lib/rocm_sysdeps", "lib/llvm/amdgcn/bitcode"]
        .map(String::from)
        .into();
    sdk
}

/// A checkout's contents as its recipe reads them: `given` files, the rest absent.
fn files(
    recipes: &Recipes,
    stack: &Stack,
    project: &Project,
    given: &[(&str, &str)],
) -> CheckoutFiles {
    let recipe = recipes.of(stack, project).expect("recipe");
    CheckoutFiles {
        files: recipe
            .reads()
            .iter()
            .map(|path| {
                let text = given
                    .iter()
                    .find(|(p, _)| p == path)
                    .map(|(_, t)| t.to_string());
                (path.to_string(), text)
            })
            .collect(),
        ignored: recipe.generates().iter().map(|p| p.to_string()).collect(),
    }
}

/// A git checkout at `commit` on `branch` (`None`: detached, as after `rockbuild checkout`).
fn source(commit: char, branch: Option<&str>) -> SourceState {
    let head = commit.to_string().repeat(40);
    SourceState {
        head: Some(head.clone()),
        branch: branch.map(str::to_string),
        upstream: Some(head),
        digest: Some(format!("digest-{commit}")),
        epoch: Some(1_767_225_600),
    }
}

/// The five checkouts of the shipped stack as the real projects lay them out: version.txt
/// (torch, audio, vision, apex), triton's setup.py at the root with its TRITON_VERSION (as
/// since ~2.9) and the build_env.json its checkout writes.
fn contents(name: &str) -> (Vec<(&'static str, &'static str)>, SourceState) {
    match name {
        "torch" => (
            vec![
                ("version.txt", "2.10.0a0\n"),
                ("requirements.txt", "numpy\n"),
                ("requirements-build.txt", "cmake\nninja\n"),
                (
                    "pyproject.toml",
                    "[build-system]\nbuild-backend = \"scikit_build_core.build\"\n",
                ),
            ],
            source('1', None),
        ),
        "audio" => (vec![("version.txt", "2.10.0a0\n")], source('2', None)),
        "vision" => (vec![("version.txt", "0.25.0a0\n")], source('3', None)),
        "triton" => (
            vec![
                (
                    "setup.py",
                    "import os\nTRITON_VERSION = \"3.5.0\" + get_triton_version_suffix()\nsetup(\n    name=\"triton\",\n    version=TRITON_VERSION,\n)\n",
                ),
                (
                    "build_env.json",
                    "{\"TRITON_WHEEL_VERSION_SUFFIX\": \"\", \"EXTRA\": \"x\"}",
                ),
            ],
            source('4', Some("main")),
        ),
        _ => (vec![("version.txt", "1.10.0\n")], source('5', None)),
    }
}

fn world<'a>(settings: &'a BuildSettings, recipes: &Recipes, sdk: SdkFacts) -> Snapshot<'a> {
    world_of(settings, recipes, sdk, &[])
}

/// The world with `skip`'s checkouts absent.
fn world_of<'a>(
    settings: &'a BuildSettings,
    recipes: &Recipes,
    sdk: SdkFacts,
    skip: &[&str],
) -> Snapshot<'a> {
    let projects = settings
        .stack
        .projects
        .values()
        .filter(|p| !skip.contains(&p.name.as_str()))
        .map(|project| {
            let (given, source) = contents(&project.name);
            ProjectSnapshot {
                project,
                dir: settings.selection.root.value.join(&project.checkout_dir),
                locked: None,
                source,
                files: files(recipes, &settings.stack, project, &given),
                reuse: None,
            }
        })
        .collect();
    Snapshot {
        sdk,
        projects,
        sources: BTreeMap::new(),
        notes: vec![],
        tools: BTreeMap::from([("cc".to_string(), "/usr/bin/gcc sha256:00".to_string())]),
    }
}

fn assemble_with(settings: &BuildSettings, sdk: SdkFacts) -> Result<Plan, Error> {
    let recipes = Recipes::builtin();
    assemble(settings, &recipes, &world(settings, &recipes, sdk))
}

fn project<'a>(plan: &'a Plan, name: &str) -> &'a ProjectPlan {
    plan.projects
        .iter()
        .find(|p| p.name == name)
        .expect("project in plan")
}

#[test]
fn versions_pins_and_order() {
    let plan = assemble_with(&settings(), planned_sdk()).expect("plan");
    let versions: Vec<(&str, &str)> = plan
        .projects
        .iter()
        .map(|p| (p.name.as_str(), p.version.shown()))
        .collect();
    let triton = "3.5.0+git44444444.rocm7.10.0a20251124";
    assert_eq!(
        versions,
        [
            ("torch", "2.10.0a0+rocm7.10.0a20251124"),
            ("audio", "2.10.0a0+rocm7.10.0a20251124"),
            ("vision", "0.25.0a0+rocm7.10.0a20251124"),
            ("triton", triton),
            ("apex", "1.10.0+rocm7.10.0a20251124"),
        ]
    );
    // torch pins the triton its build makes: the prediction is a hint, shown for it.
    let torch = project(&plan, "torch");
    assert_eq!(
        torch.env["PYTORCH_EXTRA_INSTALL_REQUIREMENTS"],
        format!("rocm[libraries]=={SDK_VERSION}|triton==<version of triton's built wheel>")
    );
    assert!(
        plan.to_text().contains(&format!(
            "PYTORCH_EXTRA_INSTALL_REQUIREMENTS=rocm[libraries]=={SDK_VERSION}|triton=={triton}"
        )),
        "{}",
        plan.to_text()
    );
    assert_eq!(
        torch.env["USE_FLASH_ATTENTION"], "OFF",
        "gfx906/gfx1030 have no aotriton kernels"
    );
    // The edges, and why: triton first (torch pins its wheel, and both change the venv, so
    // they take turns); audio, vision and apex read the venv torch changed, and share it.
    let edges = |name: &str| -> Vec<(String, Vec<Reason>)> {
        project(&plan, name)
            .after
            .iter()
            .map(|d| (d.project.clone(), d.reasons.clone()))
            .collect()
    };
    assert!(edges("triton").is_empty());
    assert_eq!(
        edges("torch"),
        [("triton".to_string(), vec![Reason::Pins, Reason::VenvTurn])]
    );
    for (name, reasons) in [
        (
            "audio",
            vec![Reason::BuildsAgainst, Reason::Pins, Reason::VenvTurn],
        ),
        (
            "vision",
            vec![Reason::BuildsAgainst, Reason::Pins, Reason::VenvTurn],
        ),
        ("apex", vec![Reason::BuildsAgainst, Reason::VenvTurn]),
    ] {
        assert_eq!(edges(name), [("torch".to_string(), reasons)], "{name}");
    }
    let uses: Vec<(&str, VenvUse)> = plan
        .projects
        .iter()
        .map(|p| (p.name.as_str(), p.venv))
        .collect();
    assert_eq!(
        uses,
        [
            ("torch", VenvUse::Changes),
            ("audio", VenvUse::Reads),
            ("vision", VenvUse::Reads),
            ("triton", VenvUse::Changes),
            ("apex", VenvUse::Reads),
        ]
    );
    assert_eq!(
        Some(project(&plan, "audio").env["PYTORCH_VERSION"].as_str()),
        torch.version.known()
    );
    assert!(!project(&plan, "apex").env.contains_key("PYTORCH_VERSION"));
    // Start order among ready projects: the reference's serial order.
    let mut order: Vec<&ProjectPlan> = plan.projects.iter().collect();
    order.sort_by_key(|p| p.priority);
    let order: Vec<&str> = order.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(order, ["triton", "torch", "audio", "vision", "apex"]);
    // triton: build_env.json's keys go to triton only (W9), with the composed suffix.
    let triton_plan = project(&plan, "triton");
    assert_eq!(
        triton_plan.env["TRITON_WHEEL_VERSION_SUFFIX"],
        "+rocm7.10.0a20251124"
    );
    assert_eq!(triton_plan.env["EXTRA"], "x");
    assert!(!torch.env.contains_key("EXTRA"));
    // torch's library paths stay in torch's env and keep the user's (W10).
    assert_eq!(
        torch.env["LD_LIBRARY_PATH"],
        "/sdk/lib/rocm_sysdeps/lib:/opt/lib"
    );
    for other in ["audio", "vision", "triton", "apex"] {
        assert!(
            !project(&plan, other).env.contains_key("LD_LIBRARY_PATH"),
            "{other}"
        );
    }
    // Every step of a project carries the project's env explicitly.
    for step in &torch.steps {
        if let Action::Run(_) = &step.action {
            let view = render::StepView::of(step);
            assert_eq!(
                view.env.get("ROCM_HOME").cloned().flatten().as_deref(),
                Some("/sdk"),
                "{}",
                step.label
            );
        }
    }
}

#[test]
fn dev_builds_tag_the_commit_and_build_numbers_post() {
    let mut dev = settings();
    dev.targets = targets("gfx942");
    dev.release_type = ReleaseType::Dev;
    dev.build_number = 2;
    let plan = assemble_with(&dev, planned_sdk()).expect("plan");
    let torch = project(&plan, "torch");
    assert_eq!(
        torch.version.known(),
        Some("2.10.0a0+git11111111.rocm7.10.0a20251124.post2")
    );
    assert_eq!(
        torch.env["PYTORCH_BUILD_VERSION"],
        "2.10.0a0+git11111111.rocm7.10.0a20251124"
    );
    assert_eq!(
        project(&plan, "vision").version.known(),
        Some("0.25.0a0+git33333333.rocm7.10.0a20251124")
    );
    assert_eq!(
        project(&plan, "apex").version.known(),
        Some("1.10.0+rocm7.10.0a20251124"),
        "apex is never tagged"
    );
    // gfx942 has flash-attention kernels and triton is built: on.
    assert_eq!(torch.env["USE_FLASH_ATTENTION"], "ON");
    assert_eq!(torch.env["USE_MEM_EFF_ATTENTION"], "ON");
}

/// SOURCE_DATE_EPOCH is each project's commit time, unless the start-up environment has one.
#[test]
fn source_date_epoch_is_the_commit_time_unless_given() {
    let recipes = Recipes::builtin();
    let base = settings();
    let mut world = world(&base, &recipes, planned_sdk());
    world.projects[0].source.epoch = Some(1_700_000_000);
    let epoch = |settings: &BuildSettings, name: &str| {
        project(&assemble(settings, &recipes, &world).expect("plan"), name)
            .env
            .get("SOURCE_DATE_EPOCH")
            .cloned()
    };
    assert_eq!(epoch(&base, "torch").as_deref(), Some("1700000000"));
    assert_eq!(epoch(&base, "vision").as_deref(), Some("1767225600"));
    let mut given = settings();
    given.base_env = Environment::from_pairs([("PATH", "/bin"), ("SOURCE_DATE_EPOCH", "1")]);
    assert_eq!(epoch(&given, "torch"), None, "the inherited value stays");
}

#[test]
fn fingerprints_follow_inputs() {
    let recipes = Recipes::builtin();
    let base = settings();
    let key = |settings: &BuildSettings, world: &Snapshot<'_>, name: &str| {
        project(&assemble(settings, &recipes, world).expect("plan"), name)
            .fingerprint
            .clone()
            .expect("fingerprint")
    };
    let world = world(&base, &recipes, planned_sdk());
    assert_eq!(key(&base, &world, "torch"), key(&base, &world, "torch"));
    let mut other_targets = settings();
    other_targets.targets = targets("gfx906");
    assert_ne!(
        key(&base, &world, "torch"),
        key(&other_targets, &world, "torch")
    );
    // A source edit changes the project and what builds against it, not triton.
    let mut edited = world.clone();
    edited.projects[0].source.digest = Some("digest-edited".into());
    assert_ne!(key(&base, &world, "torch"), key(&base, &edited, "torch"));
    assert_ne!(key(&base, &world, "audio"), key(&base, &edited, "audio"));
    assert_eq!(key(&base, &world, "triton"), key(&base, &edited, "triton"));
    // Neither --clean nor a compiler cache changes what is built.
    let mut clean = settings();
    clean.clean = true;
    assert_eq!(key(&base, &world, "torch"), key(&clean, &world, "torch"));
    let mut cached = settings();
    cached.compiler_cache = CompilerCache::Ccache {
        program: "/usr/bin/ccache".into(),
    };
    assert_eq!(key(&base, &world, "triton"), key(&cached, &world, "triton"));
    // Without git there is nothing to fingerprint, for it and what builds against it.
    let mut no_git = world.clone();
    no_git.projects[0].source.digest = None;
    let plan = assemble(&base, &recipes, &no_git).expect("plan");
    assert!(project(&plan, "torch").fingerprint.is_none());
    assert!(project(&plan, "audio").fingerprint.is_none());
}

#[test]
fn plan_for_two_targets() {
    let plan = assemble_with(&settings(), planned_sdk()).expect("plan");
    insta::assert_snapshot!("two_targets", plan.to_text());
    insta::assert_snapshot!("two_targets_json", plan.to_json().expect("json"));
}

/// `--multi-arch` for two families: one build for the union of their targets, then torch's and
/// vision's fat wheels split, each device wheel requiring the SDK's device package.
#[test]
fn plan_for_a_multi_arch_build_of_two_families() {
    let mut multi = settings();
    multi.targets = TargetRequest {
        family: Some(Sourced {
            value: "gfx906;gfx103X-all".into(),
            source: Source::Flag("--amdgpu-family".into()),
        }),
        max: 8,
        ..TargetRequest::default()
    };
    multi.mode = ModeChoice::resolve(true, false, None);
    let plan = assemble_with(&multi, planned_sdk()).expect("plan");
    let splits: Vec<(&str, &str, &str)> = plan
        .splits
        .iter()
        .map(|s| {
            (
                s.project.as_str(),
                s.spec.device_prefix.as_str(),
                s.spec.overlay_root.as_str(),
            )
        })
        .collect();
    assert_eq!(
        splits,
        [
            ("torch", "amd-torch-device", "torch/"),
            ("vision", "amd-torchvision-device", "torchvision/")
        ]
    );
    insta::assert_snapshot!("multi_arch_two_families", plan.to_text());
    let json: serde_json::Value =
        serde_json::from_str(&plan.to_json().expect("json")).expect("parses");
    assert_eq!(json["mode"]["mode"], "multi-arch");
    assert_eq!(json["mode"]["source"]["detail"], "--multi-arch");
    assert_eq!(
        json["splits"][0]["spec"]["device_requires"][0],
        format!("rocm-sdk-device-@GFXARCH@ == {SDK_VERSION}")
    );
    // Per-family plans name no mode and split nothing.
    let plain = assemble_with(&settings(), planned_sdk()).expect("plan");
    assert!(plain.splits.is_empty());
    assert!(!plain.to_json().expect("json").contains("\"mode\""));
    // The family table's multi-arch layout chooses the mode too; the lock's record next.
    assert_eq!(
        ModeChoice::resolve(false, true, None).mode,
        BuildMode::MultiArch
    );
    assert_eq!(
        ModeChoice::resolve(false, false, Some(BuildMode::MultiArch)).source,
        Source::Lock("build record".into())
    );
}

/// An index URL of one mode against a mode chosen by the flag or the lock is an error that
/// names both and the index to pass; against a default or the table's layout it chooses.
#[test]
fn an_index_of_the_other_mode_chooses_or_is_refused() {
    let table = settings().families;
    let per_family = "https://rocm.nightlies.amd.com/v2/gfx110X-all/";
    let multi = "https://rocm.nightlies.amd.com/whl-multi-arch/";
    let error = ModeChoice::resolve(true, false, None)
        .with_index(&table, "--index-url", per_family, "the build")
        .expect_err("per-family index, --multi-arch");
    assert_eq!(
        error.to_string(),
        "--index-url https://rocm.nightlies.amd.com/v2/gfx110X-all/ is the per-family index of gfx110X-all, but the build is multi-arch (from --multi-arch): a multi-arch set installs from and publishes to one index for every family: pass the multi-arch index (https://rocm.nightlies.amd.com/whl-multi-arch/)"
    );
    let error = ModeChoice::resolve(false, false, Some(BuildMode::PerFamily))
        .with_index(&table, "--index-url", multi, "the set the lock records")
        .expect_err("multi-arch index, per-family lock");
    assert_eq!(
        error.to_string(),
        "--index-url https://rocm.nightlies.amd.com/whl-multi-arch/ is the multi-arch index (one for every family), but the set the lock records is per-family (from lock build record): a per-family set installs from and publishes to its family's index: pass the family's index (such as https://rocm.nightlies.amd.com/v2/gfx94X-dcgpu/)"
    );
    let chosen = ModeChoice::resolve(false, false, None)
        .with_index(&table, "--index-url", multi, "the build")
        .expect("chooses");
    assert_eq!(chosen.mode, BuildMode::MultiArch);
    let chosen = ModeChoice::resolve(false, true, None)
        .with_index(&table, "--index-url", per_family, "the build")
        .expect("chooses");
    assert_eq!(chosen.mode, BuildMode::PerFamily);
    // A local index says nothing about the mode.
    let kept = ModeChoice::resolve(true, false, None)
        .with_index(
            &table,
            "--index-url",
            "http://127.0.0.1:1/simple/",
            "the build",
        )
        .expect("unknown kind");
    assert_eq!(kept, ModeChoice::resolve(true, false, None));
}

#[test]
fn plan_for_a_family_dev_build_with_ccache() {
    let mut dev = settings();
    dev.targets = TargetRequest {
        family: Some(Sourced {
            value: "gfx90a".into(),
            source: Source::Flag("--amdgpu-family".into()),
        }),
        max: 8,
        ..TargetRequest::default()
    };
    dev.release_type = ReleaseType::DevBkc;
    dev.build_number = 3;
    dev.compiler_cache = CompilerCache::Ccache {
        program: "/usr/bin/ccache".into(),
    };
    dev.clean = true;
    dev.jobs = 1;
    let plan = assemble_with(&dev, installed_sdk());
    // The installed SDK has no gfx90a: refused before anything is built.
    insta::assert_snapshot!(
        "family_not_in_sdk",
        plan.expect_err("gfx90a missing").to_string()
    );
    let mut sdk = installed_sdk();
    sdk.info.targets.push("gfx90a".into());
    let plan = assemble_with(&dev, sdk).expect("plan");
    insta::assert_snapshot!("family_dev_build", plan.to_text());
}

#[test]
fn plan_for_a_family_inferred_from_the_index_without_triton() {
    let recipes = Recipes::builtin();
    let mut inferred = settings();
    let url = "https://rocm.nightlies.amd.com/v2/gfx110X-all/";
    inferred.targets = TargetRequest {
        family: Some(Sourced {
            value: family_of_index(url, &inferred.families).expect("a family"),
            source: Source::Inferred(format!("the last path segment of --index-url {url}")),
        }),
        max: 8,
        ..TargetRequest::default()
    };
    inferred.release_type = ReleaseType::Prerelease;
    inferred.version_suffix = Some("+rocm7.10.0rc2".into());
    let world = world_of(&inferred, &recipes, planned_sdk(), &["triton", "apex"]);
    let plan = assemble(&inferred, &recipes, &world).expect("plan");
    insta::assert_snapshot!("family_inferred_without_triton", plan.to_text());

    // Forcing flash-attention on without triton is refused by torch's recipe.
    let forced = BuildSettings {
        options: OptionValues::resolve(
            &recipes,
            &inferred.stack,
            &[("enable-pytorch-flash-attention", Some(true))],
            &[],
        )
        .expect("options"),
        ..inferred.clone()
    };
    insta::assert_snapshot!(
        "flash_attention_without_triton",
        assemble(&forced, &recipes, &world)
            .expect_err("refused")
            .to_string()
    );
}

/// Every prediction the plan makes, with an input it cannot read: the plan is made all the
/// same, the version is left to the build (noted), nothing is handed to the build for it,
/// and what pins the project pins the placeholder the executor fills in from the built wheel.
#[test]
fn what_cannot_be_predicted_is_decided_by_the_build() {
    let recipes = Recipes::builtin();
    let base = settings();
    let good = world(&base, &recipes, planned_sdk());
    /// A project's file the predictor cannot read: (project index, file, content, the key
    /// that hands the build its version, who pins it and through which variable).
    type Unreadable = (
        usize,
        &'static str,
        Option<&'static str>,
        &'static str,
        Option<(&'static str, &'static str)>,
    );
    let cases: [Unreadable; 6] = [
        (
            0,
            "version.txt",
            None,
            "PYTORCH_BUILD_VERSION",
            Some(("audio", "PYTORCH_VERSION")),
        ),
        (
            0,
            "version.txt",
            Some("@TORCH_VERSION@\n"),
            "PYTORCH_BUILD_VERSION",
            Some(("vision", "PYTORCH_VERSION")),
        ),
        (1, "version.txt", Some("\n"), "BUILD_VERSION", None),
        (2, "version.txt", None, "VERSION_NAME", None),
        (
            3,
            "setup.py",
            Some("TRITON_VERSION = \"3.5.0\" + _version_suffix()\nsetup(version=TRITON_VERSION)\n"),
            "TRITON_WHEEL_VERSION_SUFFIX",
            Some(("torch", "PYTORCH_EXTRA_INSTALL_REQUIREMENTS")),
        ),
        (4, "version.txt", None, "BUILD_VERSION", None),
    ];
    let mut notes = Vec::new();
    for (index, file, content, handed, pinned_by) in cases {
        let mut world = good.clone();
        world.projects[index]
            .files
            .files
            .insert(file.into(), content.map(str::to_string));
        let plan = assemble(&base, &recipes, &world).expect("planned all the same");
        let name = world.projects[index].project.name.clone();
        let decided = project(&plan, &name);
        assert!(
            matches!(decided.version, WheelVersion::Decided { .. }),
            "{name}: {:?}",
            decided.version
        );
        assert_eq!(decided.version.known(), None);
        // Nothing handed to the build for its version (triton's suffix is its own input).
        if handed != "TRITON_WHEEL_VERSION_SUFFIX" {
            assert!(!decided.env.contains_key(handed), "{name}: {handed}");
        }
        if let Some((consumer, key)) = pinned_by {
            assert!(
                project(&plan, consumer).env[key].contains(&built_version(&name)),
                "{consumer}: {}",
                project(&plan, consumer).env[key]
            );
        }
        let note = plan
            .notes
            .iter()
            .find(|n| n.starts_with(&format!("{name}: version decided by the build")))
            .unwrap_or_else(|| panic!("{name}: {:?}", plan.notes));
        notes.push(note.clone());
        // The lock's record lists it as decided, with no version to check yet.
        let record = crate::build::apply::build_record(&plan, None);
        assert!(record.decided.contains_key(&name) && !record.versions.contains_key(&name));
    }
    insta::assert_snapshot!(notes.join("\n"));
}

#[test]
fn what_the_plan_refuses() {
    let recipes = Recipes::builtin();
    let mut cases: Vec<(&str, String)> = Vec::new();
    let mut refuse = |what: &'static str, settings: &BuildSettings, world: &Snapshot<'_>| {
        let error = assemble(settings, &recipes, world).expect_err(what);
        cases.push((what, error.to_string()));
    };
    let base = settings();
    let good = world(&base, &recipes, planned_sdk());
    let with_targets = |request: TargetRequest| {
        let mut s = settings();
        s.targets = request;
        s
    };
    refuse(
        "unknown target",
        &with_targets(targets("gfx906,gfx94x")),
        &good,
    );
    refuse(
        "unknown family",
        &with_targets(TargetRequest {
            family: Some(Sourced {
                value: "gfx11".into(),
                source: Source::Flag("--amdgpu-family".into()),
            }),
            max: 8,
            ..TargetRequest::default()
        }),
        &good,
    );
    refuse(
        "too many targets",
        &with_targets(TargetRequest {
            max: 2,
            ..targets("gfx906,gfx908,gfx90a")
        }),
        &good,
    );
    refuse(
        "no targets",
        &with_targets(TargetRequest {
            max: 8,
            ..TargetRequest::default()
        }),
        &good,
    );
    refuse(
        "an index URL naming no family",
        &with_targets(TargetRequest {
            max: 8,
            unnamed_index: family_of_index("https://pypi.example/simple/", &base.families).err(),
            ..TargetRequest::default()
        }),
        &good,
    );
    refuse(
        "--arch-from-sdk without an SDK",
        &with_targets(TargetRequest {
            from_sdk: true,
            max: 8,
            ..TargetRequest::default()
        }),
        &good,
    );
    let mut broken = good.clone();
    broken.projects[3]
        .files
        .files
        .insert("build_env.json".into(), Some("{\n  \"A\": 1\n}".into()));
    refuse(
        "a build_env.json value that is not a string",
        &base,
        &broken,
    );
    let mut broken = good.clone();
    broken.projects[3]
        .files
        .files
        .insert("build_env.json".into(), Some("{\n  \"A\": \n".into()));
    refuse("a malformed build_env.json", &base, &broken);
    let mut broken = settings();
    broken.version_suffix = Some("+rocm 7!".into());
    refuse("a suffix that makes no version", &broken, &good);
    let mut no_sysdeps = installed_sdk();
    no_sysdeps.dirs.clear();
    refuse(
        "an SDK without lib/rocm_sysdeps",
        &base,
        &world(&base, &recipes, no_sysdeps),
    );
    let text: Vec<String> = cases
        .iter()
        .map(|(what, error)| format!("{what}:\n  {error}"))
        .collect();
    insta::assert_snapshot!(text.join("\n\n"));
}

/// A project of `venv` use and start `priority` that needs the wheels of `needs`.
fn bare(name: &str, priority: u8, venv: VenvUse, needs: &[&str]) -> ProjectPlan {
    ProjectPlan {
        name: name.into(),
        dist: Some(name.into()),
        recipe: "bare",
        priority,
        dir: PathBuf::from("/src").join(name),
        version: crate::recipes::WheelVersion::Given {
            version: "1.0".into(),
        },
        wheel_glob: None,
        after: needs
            .iter()
            .map(|n| Dependency {
                project: n.to_string(),
                reasons: vec![Reason::BuildsAgainst],
            })
            .collect(),
        venv,
        env: EnvDiff::new(),
        steps: vec![],
        log: PathBuf::from("/out/logs").join(name),
        source: source('0', None),
        fingerprint: None,
        reuse: None,
        hints: &[],
        version_hint: "",
    }
}

#[test]
fn the_venv_is_taken_in_turns_in_the_serial_order() {
    // Stack order d, b, a, e, c, n; priorities make the serial order a b c d e, and d needs
    // e's wheel, so e goes before d. n does not use the venv at all.
    let mut projects = vec![
        bare("d", 3, VenvUse::Changes, &["e"]),
        bare("b", 1, VenvUse::Reads, &[]),
        bare("a", 0, VenvUse::Changes, &[]),
        bare("e", 4, VenvUse::Reads, &[]),
        bare("c", 2, VenvUse::Reads, &[]),
        bare("n", 0, VenvUse::None, &[]),
    ];
    let turns = add_venv_turns(&mut projects).expect("no cycle");
    assert_eq!(
        turns,
        [vec!["a"], vec!["b", "c", "e"], vec!["d"]]
            .map(|t| t.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    );
    let after = |name: &str| -> Vec<(String, Vec<Reason>)> {
        projects
            .iter()
            .find(|p| p.name == name)
            .expect("project")
            .after
            .iter()
            .map(|d| (d.project.clone(), d.reasons.clone()))
            .collect()
    };
    let turn = |name: &str| (name.to_string(), vec![Reason::VenvTurn]);
    assert_eq!(after("a"), []);
    assert_eq!(after("b"), [turn("a")]);
    assert_eq!(after("c"), [turn("a")]);
    assert_eq!(after("e"), [turn("a")]);
    // d waits for the readers before it, and its needed wheel's edge carries both reasons.
    assert_eq!(
        after("d"),
        [
            (
                "e".to_string(),
                vec![Reason::BuildsAgainst, Reason::VenvTurn]
            ),
            turn("a"),
            turn("b"),
            turn("c"),
        ]
    );
    assert_eq!(after("n"), []);

    let mut cycle = vec![
        bare("x", 0, VenvUse::Reads, &["y"]),
        bare("y", 1, VenvUse::Reads, &["x"]),
        bare("z", 2, VenvUse::Reads, &[]),
    ];
    let error = add_venv_turns(&mut cycle).expect_err("cycle");
    assert_eq!(
        error.to_string(),
        "projects x, y wait for each other's wheels (their recipes' builds_against and pins): none of them can start; a recipe must not build against or pin a project that waits for it"
    );
}

#[test]
fn windows_roots_longer_than_the_references_are_noted() {
    assert_eq!(
        long_windows_root(Platform::Windows, Path::new("B:/src")),
        None
    );
    assert_eq!(
        long_windows_root(Platform::Windows, Path::new("C:/b/pytorch")),
        None
    );
    assert_eq!(
        long_windows_root(Platform::Linux, Path::new("/home/builder/src/rocm")),
        None
    );
    assert_eq!(
        long_windows_root(Platform::Windows, Path::new("C:/actions-runner/_work/src")),
        Some("the checkout root C:/actions-runner/_work/src is 27 characters long: the reference builds Windows wheels under a root of at most 12 (B:/src, C:/b) for the compile commands' length limits; check out to a short root (`--root-checkout-dir C:/b`)".into())
    );
}
