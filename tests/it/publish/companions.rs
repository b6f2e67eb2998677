//! Products and companions on real parts: a set built on the stand-in ROCm SDK (served over
//! HTTP, as TheRock publishes its `rocm`, `rocm-sdk-*` wheels), retagged, verified, staged
//! with the SDK wheels it pins, smoke-tested, promoted as it is and as rc and final, and
//! installed with pip and uv from each release index alone.

use super::*;
use crate::common::sdk::sdk_index;
use crate::common::wheels::{WheelBuilder, cpu_library, hip_library};

/// The SDK the set is built on (the quickstart's), and the releases it is promoted to.
const SDK: &str = "7.10.0a20251124";
const SDK_RC: &str = "7.10.0rc1";
const SDK_FINAL: &str = "7.10.0";
const TARGETS: [&str; 2] = ["gfx906", "gfx1030"];

/// What the quickstart builds from release/2.9 on SDK `sdk` (versions and contents as the
/// sample projects write them, examples/stack): torch `2.9.0+rocm<sdk>` with a HIP library,
/// pinning `rocm[libraries]==<sdk>` and triton, whose `_rocm_init.py` checks the installed
/// SDK (TheRock's `rocm_sdk.initialize_process(check_version=…)`, here failing on a
/// mismatch), triton `3.4.0+git8518ca6a.rocm<sdk>`, torchvision pinning torch.
fn quickstart_set(dir: &Path, sdk: &str) -> Vec<PathBuf> {
    let torch = format!("2.9.0+rocm{sdk}");
    let triton = format!("3.4.0+git8518ca6a.rocm{sdk}");
    let vision = format!("0.24.0+rocm{sdk}");
    vec![
        WheelBuilder::new("torch", &torch)
            .replace(
                "torch/__init__.py",
                "from .version import __version__\nfrom . import _rocm_init\n\n_rocm_init.initialize()\n",
            )
            .file(
                "torch/_rocm_init.py",
                format!(
                    "def initialize():\n    import rocm_sdk\n\n    rocm_sdk.initialize_process(\n        \
                     check_version=\"{sdk}\",\n        fail_on_version_mismatch=True,\n    )\n"
                ),
            )
            .file("torch/version.py", format!("__version__ = '{torch}'\n"))
            .file_from("torch/lib/libtorch_hip.so", &hip_library(&TARGETS))
            .requires(&format!("rocm[libraries]=={sdk}"))
            .requires(&format!("triton=={triton}"))
            .build(dir),
        WheelBuilder::new("triton", &triton)
            .file_from(
                "triton/_C/libtriton.so",
                &cpu_library(Some("$ORIGIN/../lib")),
            )
            .build(dir),
        WheelBuilder::new("torchvision", &vision)
            .file_from("torchvision/_C.so", &hip_library(&TARGETS))
            .file(
                "torchvision/version.py",
                format!("__version__ = '{vision}'\n"),
            )
            .requires(&format!("torch=={torch}"))
            .build(dir),
    ]
}

/// The stand-in SDK release `version`, served: (server, its `simple/` index URL, its wheels).
fn serve_sdk(version: &str) -> (http::HttpServer, String, PathBuf) {
    let dir = sdk_index(version, &TARGETS);
    let server = http::serve(&dir);
    let url = format!("{}simple/", server.url());
    (server, url, dir.join("wheels"))
}

/// Installs every file of a release prefix, hash-checked, with pip and with uv from that
/// index alone, and reports what torch, torchvision, triton (its distribution: triton's
/// `__version__` is its public version only) and the SDK say they are (importing torch runs
/// its ROCm check against the installed SDK).
fn install_release(env: &TestEnv, url: &str, root: &Path, tag: &str) -> Vec<String> {
    let (pip, uv) = install_with_pip_and_uv(env, url, &pins_for(&wheels_under(root)), tag);
    [pip, uv]
        .iter()
        .map(|bin| {
            python(
                env,
                bin,
                "import importlib.metadata, torch, torchvision.version, triton, rocm_sdk; \
                 print(torch.__version__, torchvision.version.__version__, \
                 importlib.metadata.version('triton'), rocm_sdk.__version__)",
            )
        })
        .collect()
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .and_then(|f| f.to_str())
        .expect("file name")
        .to_string()
}

/// The SDK wheels under a prefix, each with whether it is byte for byte the file of the same
/// name in `sdk_wheels`.
fn carried(root: &Path, sdk_wheels: &Path) -> Vec<(String, bool)> {
    wheels_under(root)
        .iter()
        .map(|path| file_name(path))
        .filter(|file| file.starts_with("rocm"))
        .map(|file| {
            let same = sha256_file(&root.join(project_of(&file)).join(&file))
                == sha256_file(&sdk_wheels.join(&file));
            (file, same)
        })
        .collect()
}

fn project_of(file: &str) -> String {
    file.split('-').next().expect("name").replace('_', "-")
}

fn listing(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| file_name(&e.expect("entry").path()))
        .collect();
    files.sort();
    files
}

/// The reference's flow, from build output to release: TheRock's SDK wheels are
/// `linux_x86_64` and sit beside the set (here the runtime and the development package a
/// build installed). They are companions: retag leaves them as their index publishes them,
/// verify and stage check their bytes against that index instead of the tag policy, stage
/// brings the rest of what the set pins (`rocm`, `rocm-sdk-libraries`), smoke and promote
/// need nothing but the staging prefix and the evidence for the products, and the release
/// installs with pip and uv from itself alone.
#[test]
fn a_retagged_set_with_the_sdk_wheels_beside_it_goes_from_verify_to_a_release_that_installs_alone()
{
    let mut world = gpu_world();
    world.env.set("ROCKBUILD_ALLOW_LINUX_TAG", "false");
    let (_sdk, sdk_url, sdk_wheels) = serve_sdk(SDK);
    let out = world.env.path("out");
    quickstart_set(&out, SDK);
    for part in ["rocm_sdk_core", "rocm_sdk_devel"] {
        let file = format!("{part}-{SDK}-py3-none-linux_x86_64.whl");
        std::fs::copy(sdk_wheels.join(&file), out.join(&file)).expect("copy an SDK wheel");
    }

    let retag = world
        .env
        .rockbuild()
        .args(["retag", "out", "--platform", "manylinux_2_28_x86_64"])
        .assert()
        .success();
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("companions_retag", stderr(&retag)));
    for part in ["rocm_sdk_core", "rocm_sdk_devel"] {
        let file = format!("{part}-{SDK}-py3-none-linux_x86_64.whl");
        assert_eq!(
            sha256_file(&out.join(&file)),
            sha256_file(&sdk_wheels.join(&file)),
            "retag leaves {file} as its index publishes it"
        );
    }

    let verify = world
        .env
        .rockbuild()
        .args([
            "verify",
            "out",
            "--config",
            "stack.yaml",
            "--index-url",
            &sdk_url,
        ])
        .args(["--targets", "gfx906,gfx1030"])
        .assert()
        .success();
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("companions_verify", stderr(&verify)));

    let staged = stage(&world, "out", "staging", &["--index-url", &sdk_url]).success();
    assert!(
        stderr(&staged)
            .contains("staged 3 wheels and 4 ROCm SDK files they pin (14 objects uploaded"),
        "{}",
        stderr(&staged)
    );
    let staging = world.env.path("staging");
    assert_eq!(
        carried(&staging, &sdk_wheels),
        [
            (format!("rocm-{SDK}-py3-none-any.whl"), true),
            (
                format!("rocm_sdk_core-{SDK}-py3-none-linux_x86_64.whl"),
                true
            ),
            (
                format!("rocm_sdk_devel-{SDK}-py3-none-linux_x86_64.whl"),
                true
            ),
            (
                format!("rocm_sdk_libraries-{SDK}-py3-none-linux_x86_64.whl"),
                true
            ),
        ],
        "the SDK's wheels are staged as the SDK's index publishes them"
    );
    assert_eq!(
        listing(&staging.join("rocm")),
        [
            "index.html".to_string(),
            "index.json".into(),
            format!("rocm-{SDK}-py3-none-any.whl"),
            format!("rocm-{SDK}-py3-none-any.whl.metadata"),
        ]
    );

    let web = http::serve(world.env.root());
    let staging_url = format!("{}staging/", web.url());
    world.smoke(&staging_url, "smoke.json").success();
    let promoted = world
        .promote(
            "staging",
            "release",
            &["--test-report", "smoke.json", "--index-url", &sdk_url],
        )
        .success();
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("companions_promote", stderr(&promoted)));

    let release = world.env.path("release");
    assert_eq!(carried(&release, &sdk_wheels).len(), 4);
    assert!(carried(&release, &sdk_wheels).iter().all(|(_, same)| *same));
    assert_eq!(
        install_release(
            &world.env,
            &format!("{}release/", web.url()),
            &release,
            "release"
        ),
        vec![format!("2.9.0+rocm{SDK} 0.24.0+rocm{SDK} 3.4.0+git8518ca6a.rocm{SDK} {SDK}"); 2]
    );
}

/// A wheel of another SDK release in the build output, or SDK bytes that are not the
/// index's, are refused by name; so is a staged SDK wheel whose bytes changed, at promote.
#[test]
fn sdk_wheels_of_another_release_or_with_other_bytes_are_refused() {
    let world = gpu_world();
    let (_sdk, sdk_url, sdk_wheels) = serve_sdk(SDK);
    let out = world.env.path("out");
    quickstart_set(&out, SDK);
    // A stale runtime from an older build, and a libraries wheel of the right name and
    // version rebuilt here: neither is what the SDK's index publishes for this set.
    WheelBuilder::new("rocm-sdk-core", "7.9.0")
        .tag("py3-none-linux_x86_64")
        .build(&out);
    WheelBuilder::new("rocm-sdk-libraries", SDK)
        .tag("py3-none-linux_x86_64")
        .build(&out);
    let refused = world
        .env
        .rockbuild()
        .args([
            "verify",
            "out",
            "--config",
            "stack.yaml",
            "--index-url",
            &sdk_url,
        ])
        .args(["--targets", "gfx906,gfx1030"])
        .assert()
        .code(5);
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("companions_verify_refused", stderr(&refused)));
    stage(&world, "out", "staging", &["--index-url", &sdk_url]).code(5);
    assert!(!world.env.path("staging").exists(), "nothing staged");

    // Staged as they should be, then one SDK wheel's bytes replaced in staging.
    let clean = world.env.path("clean");
    quickstart_set(&clean, SDK);
    stage(&world, "clean", "staging", &["--index-url", &sdk_url]).success();
    let web = http::serve(&world.env.path("staging"));
    world.smoke(&web.url(), "smoke.json").success();
    let core = format!("rocm_sdk_core-{SDK}-py3-none-linux_x86_64.whl");
    let rebuilt = WheelBuilder::new("rocm-sdk-core", SDK)
        .tag("py3-none-linux_x86_64")
        .build(&world.env.path("rebuilt"));
    std::fs::copy(
        &rebuilt,
        world.env.path("staging/rocm-sdk-core").join(&core),
    )
    .expect("swap");
    world
        .env
        .rockbuild()
        .args(["index", "staging"])
        .assert()
        .success();
    // Without an index the provenance cannot be shown either.
    let unchecked = world
        .promote("staging", "release", &["--test-report", "smoke.json"])
        .code(5);
    assert!(
        stderr(&unchecked).contains("no index was given to check it against"),
        "{}",
        stderr(&unchecked)
    );
    let denied = world
        .promote(
            "staging",
            "release",
            &["--test-report", "smoke.json", "--index-url", &sdk_url],
        )
        .code(5);
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("companions_promote_denied", stderr(&denied)));
    assert!(!world.env.path("release").exists(), "nothing copied");
    assert_ne!(sha256_file(&rebuilt), sha256_file(&sdk_wheels.join(&core)));
}

/// `--rewrite-version rc`, then `final`, on the set the quickstart stages: the products'
/// labels and every `rocm*` pin follow the SDK (`+rocm7.10.0a20251124` → `+rocm7.10.0rc1` →
/// `+rocm7.10.0`, torch's `_rocm_init.py` check too), and the promoted set carries the
/// SDK's own rc and final wheels, brought from where that SDK release is published (its
/// wheels are never rewritten). Each release installs from itself alone. A set staged
/// without the SDK is rewritten the same way, and installs with the SDK's index beside it.
#[test]
fn the_quickstart_set_is_promoted_to_rc_then_final_with_its_sdk() {
    let world = gpu_world();
    let (_sdk, sdk_url, _) = serve_sdk(SDK);
    let (_rc, rc_url, rc_wheels) = serve_sdk(SDK_RC);
    let (_final, final_url, final_wheels) = serve_sdk(SDK_FINAL);
    let set = quickstart_set(&world.env.path("dist"), SDK);
    stage(&world, "dist", "staged", &["--index-url", &sdk_url]).success();
    let web = http::serve(world.env.root());
    let url = |prefix: &str| format!("{}{prefix}/", web.url());
    world.smoke(&url("staged"), "nightly.json").success();

    // The rc's SDK wheels come from where the SDK's rc is published: without that index,
    // nothing is written.
    let refused = world
        .promote(
            "staged",
            "rc",
            &["--test-report", "nightly.json", "--rewrite-version", "rc"],
        )
        .code(2);
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("companions_rc_without_the_sdk_index", stderr(&refused)));
    assert!(!world.env.path("rc").exists());

    let rc_args = [
        "--test-report",
        "nightly.json",
        "--rewrite-version",
        "rc",
        "--index-url",
        rc_url.as_str(),
    ];
    let dry = world
        .promote("staged", "rc", &[&rc_args[..], &["--dry-run"]].concat())
        .success();
    snapshot::settings(&world.env)
        .bind(|| insta::assert_snapshot!("companions_rc_dry_run", stdout(&dry)));
    world.promote("staged", "rc", &rc_args).success();
    let rc = world.env.path("rc");
    assert!(carried(&rc, &rc_wheels).iter().all(|(_, same)| *same));
    assert_eq!(carried(&rc, &rc_wheels).len(), 3);
    assert_eq!(
        install_release(&world.env, &url("rc"), &rc, "rc"),
        vec![
            format!(
                "2.9.0+rocm{SDK_RC} 0.24.0+rocm{SDK_RC} 3.4.0+git8518ca6a.rocm{SDK_RC} {SDK_RC}"
            );
            2
        ]
    );

    world.smoke(&url("rc"), "rc.json").success();
    world
        .promote(
            "rc",
            "final",
            &[
                "--test-report",
                "rc.json",
                "--rewrite-version",
                "final",
                "--index-url",
                &final_url,
            ],
        )
        .success();
    let fin = world.env.path("final");
    assert!(carried(&fin, &final_wheels).iter().all(|(_, same)| *same));
    assert_eq!(
        install_release(&world.env, &url("final"), &fin, "final"),
        vec![
            format!(
                "2.9.0+rocm{SDK_FINAL} 0.24.0+rocm{SDK_FINAL} 3.4.0+git8518ca6a.rocm{SDK_FINAL} {SDK_FINAL}"
            );
            2
        ]
    );

    // The same set staged without the SDK (the reference's layout when the SDK has an index
    // of its own): the rewrite is the same, the pins are checked on the rc SDK's index.
    world.stage_by_hand(&world.env.path("bare"), &set);
    world
        .env
        .rockbuild()
        .args([
            "smoke",
            "--config",
            "stack.yaml",
            "--index-url",
            &url("bare"),
        ])
        .args(["--extra-index-url", &sdk_url, "--report", "bare.json"])
        .assert()
        .success();
    world
        .promote(
            "bare",
            "bare-rc",
            &[
                "--test-report",
                "bare.json",
                "--rewrite-version",
                "rc",
                "--index-url",
                &rc_url,
            ],
        )
        .success();
    let bare_rc = world.env.path("bare-rc");
    assert_eq!(
        wheels_under(&bare_rc)
            .iter()
            .map(|p| file_name(p))
            .collect::<Vec<_>>(),
        [
            format!("torch-2.9.0+rocm{SDK_RC}-cp311-cp311-linux_x86_64.whl"),
            format!("torchvision-0.24.0+rocm{SDK_RC}-cp311-cp311-linux_x86_64.whl"),
            format!("triton-3.4.0+git8518ca6a.rocm{SDK_RC}-cp311-cp311-linux_x86_64.whl"),
        ]
    );
    for installer in [Installer::Pip, Installer::Uv] {
        let python_bin = install_from_two(&world.env, installer, &url("bare-rc"), &rc_url);
        assert_eq!(
            python(
                &world.env,
                &python_bin,
                "import torch, rocm_sdk; print(torch.__version__, rocm_sdk.__version__)"
            ),
            format!("2.9.0+rocm{SDK_RC} {SDK_RC}")
        );
    }
}

#[derive(Clone, Copy, Debug)]
enum Installer {
    Pip,
    Uv,
}

/// Installs torch, torchvision and triton from `index` with the SDK's `sdk_index` beside it.
fn install_from_two(env: &TestEnv, installer: Installer, index: &str, sdk_index: &str) -> PathBuf {
    let tag = format!("{installer:?}-two").to_lowercase();
    let packages = ["torch", "torchvision", "triton"];
    match installer {
        Installer::Pip => {
            let python_bin = crate::common::pyindex::venv(env, &env.path(&tag));
            crate::common::run_ok(
                env.command(&python_bin)
                    .args([
                        "-m",
                        "pip",
                        "install",
                        "--no-cache-dir",
                        "--index-url",
                        index,
                    ])
                    .args(["--extra-index-url", sdk_index])
                    .args(packages),
            );
            python_bin
        }
        Installer::Uv => {
            let venv = env.path(&tag);
            crate::common::run_ok(
                env.command("uv")
                    .args(["venv", "--no-cache", "--python", "python3"])
                    .arg(&venv),
            );
            let python_bin = venv.join("bin/python");
            // uv takes a package from the first index that has it; the two indexes hold
            // different projects.
            crate::common::run_ok(
                env.command("uv")
                    .args(["pip", "install", "--no-cache", "--index-url", index])
                    .args(["--extra-index-url", sdk_index, "--python"])
                    .arg(&python_bin)
                    .args(packages),
            );
            python_bin
        }
    }
}
