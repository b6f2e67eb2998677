//! `rockbuild verify` on Windows wheels holding real PE images linked by MinGW-w64: imports
//! resolved against the set's DLLs, the ROCm SDK's companion wheels and the rule for what
//! Windows provides; GPU targets read from the offload bundle in `.hip_fat`; a wheel whose
//! DLLs import what nothing provides, miss a target or are not PE images fails by name.

use std::path::{Path, PathBuf};

use crate::common::TestEnv;
use crate::common::json_lines::assert_json_lines;
use crate::common::snapshot;
use crate::common::wheels::{HttpServer, WheelBuilder, write_simple_index};
use crate::common::windows::{Image, Import, pe_image};

const TORCH: &str = "2.10.0a0+rocm7.13.0a20260430";
const SDK: &str = "7.13.0a20260430";
const WIN: &str = "cp311-cp311-win_amd64";

/// c10.dll as torch's core library: KERNEL32 and the C runtime only.
pub fn c10_dll() -> PathBuf {
    pe_image(Image {
        name: "c10.dll",
        source: "#include <windows.h>\n\
                 __declspec(dllexport) DWORD c10_tick(void) { return GetTickCount(); }\n",
        ..Image::default()
    })
}

/// torch_hip.dll: c10.dll, the HIP runtime of the SDK (`amdhip64_7.dll`, ROCm 7's name on
/// Windows), `extra` DLLs, a delay-loaded `amd_comgr0702.dll`, and device code for `targets`.
pub fn torch_hip_dll(targets: &[&str], extra: &[Import<'_>]) -> PathBuf {
    torch_hip_image(targets, extra, false)
}

/// [`torch_hip_dll`], linked `stripped` or not (see `Image::stripped`).
pub fn torch_hip_image(targets: &[&str], extra: &[Import<'_>], stripped: bool) -> PathBuf {
    let mut imports = vec![
        Import {
            dll: "c10.dll",
            functions: &["c10_tick"],
        },
        Import {
            dll: "amdhip64_7.dll",
            functions: &["hipDeviceSynchronize", "__hipRegisterFatBinary"],
        },
    ];
    imports.extend_from_slice(extra);
    let calls: String = extra
        .iter()
        .flat_map(|i| i.functions)
        .map(|f| format!("int {f}(void);\n"))
        .collect();
    let uses: String = extra
        .iter()
        .flat_map(|i| i.functions)
        .map(|f| format!(" + {f}()"))
        .collect();
    let source = format!(
        "#include <windows.h>\n\
         __declspec(dllimport) DWORD c10_tick(void);\n\
         int hipDeviceSynchronize(void);\nint amd_comgr_get_version(void);\n{calls}\
         __declspec(dllexport) int torch_hip_sync(void) {{\n\
           return (int)c10_tick() + hipDeviceSynchronize() + amd_comgr_get_version(){uses};\n}}\n"
    );
    pe_image(Image {
        name: "torch_hip.dll",
        source: &source,
        imports: &imports,
        delay_imports: &[Import {
            dll: "amd_comgr0702.dll",
            functions: &["amd_comgr_get_version"],
        }],
        gpu_targets: targets,
        stripped,
    })
}

/// torch's extension module: the interpreter's DLL and torch_hip.dll.
pub fn torch_c_pyd() -> PathBuf {
    pe_image(Image {
        name: "_C.cp311-win_amd64.pyd",
        source: "int torch_hip_sync(void); void* PyModule_Create2(void*, int);\n\
                 __declspec(dllexport) void* PyInit__C(void) {\n\
                   return torch_hip_sync() ? PyModule_Create2(0, 1013) : 0;\n}\n",
        imports: &[
            Import {
                dll: "python311.dll",
                functions: &["PyModule_Create2"],
            },
            Import {
                dll: "torch_hip.dll",
                functions: &["torch_hip_sync"],
            },
        ],
        ..Image::default()
    })
}

/// The SDK's HIP runtime as a DLL of its own name.
pub fn amdhip_dll() -> PathBuf {
    pe_image(Image {
        name: "amdhip64_7.dll",
        source: "__declspec(dllexport) int hipDeviceSynchronize(void) { return 0; }\n\
                 __declspec(dllexport) void **__hipRegisterFatBinary(const void *w) {\n\
                   return (void **)w;\n}\n",
        ..Image::default()
    })
}

/// The SDK's code object manager, which torch_hip.dll delay-loads.
pub fn comgr_dll() -> PathBuf {
    pe_image(Image {
        name: "amd_comgr0702.dll",
        source: "__declspec(dllexport) int amd_comgr_get_version(void) { return 3; }\n",
        ..Image::default()
    })
}

/// torch for Windows, as the reference builds it: its DLLs in `torch/lib`, the extension
/// module at the top, pinned to the SDK.
pub fn torch(torch_hip: &Path) -> WheelBuilder {
    WheelBuilder::new("torch", TORCH)
        .tag(WIN)
        .file_from("torch/lib/c10.dll", &c10_dll())
        .file_from("torch/lib/torch_hip.dll", torch_hip)
        .file_from("torch/_C.cp311-win_amd64.pyd", &torch_c_pyd())
        .requires(&format!("rocm[libraries]=={SDK}"))
}

/// The SDK's core wheel on Windows: its DLLs under `_rocm_sdk_core/bin`
/// (TheRock's build_tools/packaging/python/templates/rocm-sdk-core layout).
pub fn sdk_core(dir: &Path) -> PathBuf {
    WheelBuilder::new("rocm-sdk-core", SDK)
        .tag("py3-none-win_amd64")
        .file_from("_rocm_sdk_core/bin/amdhip64_7.dll", &amdhip_dll())
        .file_from("_rocm_sdk_core/bin/amd_comgr0702.dll", &comgr_dll())
        .build(dir)
}

/// The SDK's index: the meta package and the core wheel, served over HTTP.
fn sdk_index(env: &TestEnv, core: &Path) -> HttpServer {
    let rocm = WheelBuilder::new("rocm", SDK)
        .tag("py3-none-any")
        .provides_extra("libraries")
        .requires(&format!("rocm-sdk-core=={SDK}"))
        .build(&env.path("sdk-wheels"));
    let root = env.path("index");
    write_simple_index(&root, "rocm", &[rocm]);
    write_simple_index(&root, "rocm-sdk-core", &[core.to_path_buf()]);
    HttpServer::serve(&root)
}

fn verify(env: &TestEnv, server: &HttpServer, targets: &str) -> std::process::Output {
    env.rockbuild()
        .args([
            "verify",
            "dist",
            "--json",
            "--targets",
            targets,
            "--index-url",
        ])
        .arg(format!("{}/", server.url))
        .output()
        .expect("runs")
}

#[test]
fn a_windows_set_with_its_sdk_passes_and_reports_each_image() {
    let env = TestEnv::new();
    let dist = env.path("dist");
    torch(&torch_hip_dll(&["gfx906", "gfx1030"], &[])).build(&dist);
    let core = sdk_core(&dist);
    let server = sdk_index(&env, &core);
    let output = verify(&env, &server, "gfx906,gfx1030");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let torch = report["wheels"]
        .as_array()
        .expect("wheels")
        .iter()
        .find(|w| w["name"] == "torch")
        .expect("torch");
    let settings = snapshot::settings(&env);
    settings.bind(|| {
        insta::assert_snapshot!("windows_verify_good_set_stderr", stderr);
        insta::assert_snapshot!(
            "windows_verify_torch_libraries",
            serde_json::to_string_pretty(&torch["libraries"]).expect("json")
        );
    });
}

#[test]
fn unknown_imports_missing_targets_and_broken_images_fail_by_name() {
    let env = TestEnv::new();
    let dist = env.path("dist");
    let hipblaslt = [Import {
        dll: "hipblaslt.dll",
        functions: &["hipblasLtCreate"],
    }];
    let broken = std::fs::read(c10_dll()).expect("c10");
    torch(&torch_hip_dll(&["gfx906"], &hipblaslt))
        // A truncated image (its section data is cut off) and a text file under a DLL name.
        .file("torch/lib/fbgemm.dll", broken[..1500].to_vec())
        .file("torch/lib/asmjit.dll", b"not a DLL\n".to_vec())
        .build(&dist);
    let core = sdk_core(&dist);
    let server = sdk_index(&env, &core);
    let output = verify(&env, &server, "gfx906,gfx1030");
    assert_eq!(output.status.code(), Some(5));
    snapshot::settings(&env).bind(|| {
        insta::assert_snapshot!(
            "windows_verify_broken_set_stderr",
            String::from_utf8_lossy(&output.stderr)
        );
    });
}

#[test]
fn without_the_sdk_wheels_its_dlls_do_not_resolve() {
    let env = TestEnv::new();
    let dist = env.path("dist");
    torch(&torch_hip_dll(&["gfx906"], &[])).build(&dist);
    let output = env
        .rockbuild()
        .args(["verify", "dist"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(5));
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(
        text.contains(
            "'torch/lib/torch_hip.dll' imports amdhip64_7.dll, which Windows would not find: \
             no wheel of the set holds it"
        ) && text.contains("the set carries no ROCm SDK wheels"),
        "{text}"
    );
}

/// torch/__init__.py as a Windows torch wheel has it: the DLL loader `_load_dll_libraries`
/// (pytorch/pytorch torch/__init__.py) cut to what the fat-wheel patch reads, and the
/// `_rocm_init` hook of ROCm's builds.
const TORCH_INIT: &str = r#"import os
import sys

if sys.platform == "win32":

    def _load_dll_libraries() -> None:
        th_dll_path = os.path.join(os.path.dirname(__file__), "lib")
        dll_paths = [p for p in (th_dll_path,) if os.path.exists(p)]
        for dll_path in dll_paths:
            os.add_dll_directory(dll_path)

    _load_dll_libraries()
    del _load_dll_libraries

try:
    from . import _rocm_init
except ImportError:
    pass
else:
    _rocm_init.initialize()
"#;

/// `_rocm_init.py` as TheRock's build_prod_wheels.py writes it on Windows.
const ROCM_INIT: &str = "\ndef initialize():\n    import rocm_sdk\n    rocm_sdk.initialize_process(\n        preload_shortnames=['amd_comgr', 'amdhip64'],\n        check_version='7.13.0a20260430')\n";

/// A Windows ROCm SDK root as TheRock's build/dist/rocm lays it out: DLLs in bin/, with what
/// the fat wheel leaves out (programs, the compiler, system dependencies, host math). The
/// left-out files' content is never read: they are left out by their paths.
fn sdk_root(env: &TestEnv) -> PathBuf {
    let root = env.path("rocm");
    let put = |relative: &str, bytes: &[u8]| {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, bytes).expect("write");
    };
    put(
        "bin/amdhip64_7.dll",
        &std::fs::read(amdhip_dll()).expect("dll"),
    );
    put(
        "bin/amd_comgr0702.dll",
        &std::fs::read(comgr_dll()).expect("dll"),
    );
    put(
        "include/hip/hip_version.h",
        b"#define HIP_VERSION_MAJOR 7\n#define HIP_VERSION_MINOR 13\n",
    );
    for left_out in [
        "bin/hipcc.exe",
        "lib/llvm/bin/clang.exe",
        "lib/rocm_sysdeps/lib/zstd.lib",
        "lib/host-math/lib/openblas.lib",
    ] {
        put(left_out, b"left out by its path\n");
    }
    root
}

fn windows_torch(dist: &Path) -> PathBuf {
    torch(&torch_hip_dll(&["gfx906", "gfx1030"], &[]))
        .replace("torch/__init__.py", TORCH_INIT)
        .file("torch/_rocm_init.py", ROCM_INIT)
        .build(dist)
}

/// Installs a win_amd64 wheel with pip (for Windows, into a target directory: pip checks the
/// wheel's metadata and RECORD as on Windows) from nothing but the wheel itself.
fn pip_install_alone(env: &TestEnv, wheel: &Path, target: &Path) -> std::process::Output {
    let python = crate::common::pyindex::venv(env, &env.path("venv"));
    env.command(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--isolated",
            "--no-index",
            "--quiet",
        ])
        .args(["--platform", "win_amd64", "--python-version", "3.11"])
        .args([
            "--implementation",
            "cp",
            "--abi",
            "cp311",
            "--only-binary",
            ":all:",
        ])
        .arg("--target")
        .arg(target)
        .arg(wheel)
        .output()
        .expect("pip runs")
}

/// The files under a directory, relative, sorted.
fn listing(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let relative = path.strip_prefix(root).expect("relative");
                out.push(relative.display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_fat_wheel_carries_the_sdk_verifies_and_installs_alone() {
    let env = TestEnv::new();
    let thin = windows_torch(&env.path("dist"));
    sdk_root(&env);
    // The thin wheel needs the SDK's wheels from an index.
    let refused = pip_install_alone(&env, &thin, &env.path("thin-site"));
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("rocm"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    let output = env
        .rockbuild()
        .arg("fat-wheel")
        .arg(&thin)
        .args(["--rocm", "rocm", "--output-dir", "fat", "--json"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let mut done: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    // The DLLs' sizes are the linker's on this machine.
    assert!(done["sdk_bytes"].as_u64().is_some_and(|bytes| bytes > 0));
    done["sdk_bytes"] = "[SIZE]".into();
    let fat = PathBuf::from(done["path"].as_str().expect("path"));
    assert_eq!(
        fat.file_name().expect("name").to_string_lossy(),
        "torch-2.10.0a0+rocm.rocm7.13.0a20260430-cp311-cp311-win_amd64.whl"
    );
    snapshot::settings(&env).bind(|| {
        insta::assert_snapshot!("fat_wheel_stderr", stderr);
        insta::assert_snapshot!(
            "fat_wheel_json",
            serde_json::to_string_pretty(&done).expect("json")
        );
    });

    // The same patch with JSON logs: every stderr line is a JSON object.
    let logged = env
        .rockbuild()
        .arg("fat-wheel")
        .arg(&thin)
        .args([
            "--rocm",
            "rocm",
            "--output-dir",
            "fat-json",
            "--log-format",
            "json",
        ])
        .output()
        .expect("runs");
    assert_eq!(logged.status.code(), Some(0));
    assert_json_lines("fat-wheel", &logged.stderr);

    // The fat wheel passes verify on its own: no SDK wheels beside it.
    let verified = env
        .rockbuild()
        .args(["verify", "--targets", "gfx906,gfx1030"])
        .arg(&fat)
        .output()
        .expect("runs");
    assert_eq!(
        verified.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );

    let site = env.path("site");
    let installed = pip_install_alone(&env, &fat, &site);
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let files = listing(&site);
    snapshot::plain()
        .bind(|| insta::assert_snapshot!("fat_wheel_installed_files", files.join("\n")));
    let init = std::fs::read_to_string(site.join("torch/__init__.py")).expect("init");
    assert!(init.contains(
        "        dll_paths.insert(0, os.path.join(th_dll_path, 'rocm', 'bin'))\n        for dll_path in dll_paths:\n"
    ));
    // The standalone _rocm_init imports nothing the install lacks.
    let python = env.path("venv").join("bin/python");
    let hook = env
        .command(&python)
        .arg("-c")
        .arg("import importlib.util, sys; spec = importlib.util.spec_from_file_location('h', sys.argv[1]); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); m.initialize()")
        .arg(site.join("torch/_rocm_init.py"))
        .output()
        .expect("python runs");
    assert!(
        hook.status.success(),
        "{}",
        String::from_utf8_lossy(&hook.stderr)
    );
}

#[test]
fn a_fat_wheel_is_refused_for_a_linux_wheel_a_missing_sdk_or_an_unknown_loader() {
    let env = TestEnv::new();
    let dist = env.path("dist");
    let rocm = sdk_root(&env);
    let linux = WheelBuilder::new("torch", TORCH).build(&dist);
    let no_loader = torch(&torch_hip_dll(&["gfx906"], &[])).build(&env.path("other"));
    let windows = windows_torch(&env.path("win"));
    let run = |wheel: &Path, root: &Path| {
        let output = env
            .rockbuild()
            .arg("fat-wheel")
            .arg(wheel)
            .arg("--rocm")
            .arg(root)
            .args(["--output-dir", "fat"])
            .output()
            .expect("runs");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let mut text = String::new();
    for (wheel, root) in [
        (&linux, rocm.clone()),
        (&no_loader, rocm.clone()),
        (&windows, env.path("dist")),
    ] {
        let (code, stderr) = run(wheel, &root);
        assert_eq!(code, Some(2), "{stderr}");
        text.push_str(&stderr);
    }
    assert!(!env.path("fat").exists() || listing(&env.path("fat")).is_empty());
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("fat_wheel_refusals", text));
}
