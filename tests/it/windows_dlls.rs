//! `rockbuild verify` on Windows wheels holding real PE images linked by MinGW-w64: imports
//! resolved against the set's DLLs, the ROCm SDK's companion wheels and the rule for what
//! Windows provides; GPU targets read from the offload bundle in `.hip_fat`; a wheel whose
//! DLLs import what nothing provides, miss a target or are not PE images fails by name.

use std::path::{Path, PathBuf};

use crate::common::TestEnv;
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
    let mut imports = vec![
        Import {
            dll: "c10.dll",
            functions: &["c10_tick"],
        },
        Import {
            dll: "amdhip64_7.dll",
            functions: &["hipDeviceSynchronize"],
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
        source: "__declspec(dllexport) int hipDeviceSynchronize(void) { return 0; }\n",
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
