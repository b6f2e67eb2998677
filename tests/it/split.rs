//! The kpack split on a real fat wheel: a library Debian's hipcc compiled for gfx906 and
//! gfx1030 becomes a host library pointing at kernel packs, and each target's code objects go
//! to that target's device wheel, named and declared as the reference's splitter does.

use std::io::Read;
use std::path::Path;
use std::process::Command;

use rockbuild::binary::elf;
use rockbuild::binary::kpack::archive::{Compression, Pack};
use rockbuild::multiarch::split::{SplitError, SplitSpec, split_wheel};
use rockbuild::wheel::verify::{WheelExpectations, verify_wheels};

use crate::common::TestEnv;
use crate::common::http;
use crate::common::sdk::sdk_index;
use crate::common::wheels::{WheelBuilder, cpu_library, hip_library};

const VERSION: &str = "2.10.0a0+rocm7.10.0a20251124";
const SDK: &str = "7.10.0a20251124";

fn spec() -> SplitSpec {
    spec_for(SDK)
}

/// torch's split as the reference configures it, for a set built against SDK `sdk`.
pub(crate) fn spec_for(sdk: &str) -> SplitSpec {
    SplitSpec {
        device_prefix: "amd-torch-device".into(),
        overlay_root: "torch/".into(),
        device_requires: vec![format!("rocm-sdk-device-@GFXARCH@ == {sdk}")],
        compression: Compression::Zstd,
    }
}

pub(crate) fn entries(wheel: &Path) -> Vec<(String, Vec<u8>)> {
    let file = std::fs::File::open(wheel).expect("open");
    let mut zip = zip::ZipArchive::new(file).expect("zip");
    (0..zip.len())
        .map(|i| {
            let mut entry = zip.by_index(i).expect("entry");
            let mut data = Vec::new();
            entry.read_to_end(&mut data).expect("read");
            (entry.name().expect("name").to_string(), data)
        })
        .collect()
}

pub(crate) fn entry(wheel: &Path, name: &str) -> Vec<u8> {
    entries(wheel)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name} in {}", wheel.display()))
        .1
}

#[test]
fn splits_a_fat_wheel_into_a_host_wheel_and_one_device_wheel_per_target() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fat = WheelBuilder::new("torch", VERSION)
        .file_from(
            "torch/lib/libtorch_hip.so",
            &hip_library(&["gfx906", "gfx1030"]),
        )
        .file_from("torch/_C.so", &cpu_library(None))
        .requires(&format!("rocm[libraries]=={SDK}"))
        .build(&dir.path().join("fat"));
    let out = dir.path().join("dist");
    let split = split_wheel(&fat, &out, &spec()).expect("splits");

    // The host wheel keeps the fat wheel's name; one device wheel per target.
    assert_eq!(split.host.file_name(), fat.file_name());
    let names: Vec<String> = split
        .devices
        .iter()
        .map(|d| {
            d.path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        names,
        [
            format!("amd_torch_device_gfx1030-{VERSION}-cp311-cp311-linux_x86_64.whl"),
            format!("amd_torch_device_gfx906-{VERSION}-cp311-cp311-linux_x86_64.whl"),
        ]
    );
    assert_eq!(split.fat_binaries, ["torch/lib/libtorch_hip.so"]);

    // Every output is a valid wheel (RECORD, names, dist-info) by rockbuild's own checks.
    let mut all = vec![split.host.clone()];
    all.extend(split.devices.iter().map(|d| d.path.clone()));
    let local = WheelExpectations {
        allow_linux_tag: true,
        ..WheelExpectations::default()
    };
    for report in verify_wheels(&all, &local, 1 << 30) {
        assert!(report.ok(), "{}: {:?}", report.file, report.problems);
    }

    // The host library: no device code left, a marker naming the packs.
    let host_lib = entry(&split.host, "torch/lib/libtorch_hip.so");
    assert_eq!(elf::fatbin_section(&host_lib).expect("parses"), None);
    let marker = elf::read_marker(&host_lib).expect("reads").expect("marker");
    assert_eq!(marker.kernel_name, "lib/libtorch_hip.so");
    assert_eq!(marker.search_paths, ["../.kpack/torch_@GFXARCH@.kpack"]);
    assert_eq!(marker.wrappers, 1);
    let scratch = dir.path().join("libtorch_hip.so");
    std::fs::write(&scratch, &host_lib).expect("write");
    let readelf = Command::new("readelf")
        .args(["-lSdW"])
        .arg(&scratch)
        .output()
        .expect("readelf");
    assert!(readelf.status.success());
    let stderr = String::from_utf8_lossy(&readelf.stderr);
    assert!(stderr.trim().is_empty(), "readelf warns: {stderr}");
    // A library without device code is copied as it was.
    assert_eq!(
        entry(&split.host, "torch/_C.so"),
        std::fs::read(cpu_library(None)).expect("read")
    );
    let metadata = String::from_utf8(entry(
        &split.host,
        &format!("torch-{VERSION}.dist-info/METADATA"),
    ))
    .expect("utf-8");
    for line in [
        "Requires-Dist: rocm-bootstrap".to_string(),
        "Provides-Extra: device-gfx906".to_string(),
        format!("Requires-Dist: amd-torch-device-gfx906 == {VERSION}; extra == \"device-gfx906\""),
        format!("Requires-Dist: amd-torch-device-gfx1030 == {VERSION}; extra == \"device-all\""),
    ] {
        assert!(metadata.lines().any(|l| l == line), "{line}\n{metadata}");
    }

    // Each device wheel: one pack with its target's code object, and nothing else.
    for (device, target) in split.devices.iter().zip(["gfx1030", "gfx906"]) {
        let files: Vec<String> = entries(&device.path).into_iter().map(|(n, _)| n).collect();
        let dist_info = format!("amd_torch_device_{target}-{VERSION}.dist-info");
        assert_eq!(
            files,
            [
                format!("torch/.kpack/torch_{target}.kpack"),
                format!("{dist_info}/METADATA"),
                format!("{dist_info}/WHEEL"),
                format!("{dist_info}/top_level.txt"),
                format!("{dist_info}/RECORD"),
            ]
        );
        let pack_bytes = entry(&device.path, &format!("torch/.kpack/torch_{target}.kpack"));
        let pack = Pack::parse(&pack_bytes).expect("pack");
        assert_eq!(
            (pack.group_name.as_str(), pack.arches.clone()),
            ("torch", vec![target.to_string()])
        );
        let objects = pack.code_objects().expect("decompresses");
        let keys: Vec<(String, String)> = objects.keys().cloned().collect();
        assert_eq!(
            keys,
            [("lib/libtorch_hip.so#0".to_string(), target.to_string())]
        );
        for code in objects.values() {
            assert_eq!(elf::code_object_target(code).expect("target"), target);
        }
        let metadata = String::from_utf8(entry(&device.path, &format!("{dist_info}/METADATA")))
            .expect("utf-8");
        assert_eq!(
            metadata,
            format!(
                "Metadata-Version: 2.4\nName: amd-torch-device-{target}\nVersion: {VERSION}\n\
                 Summary: AMD device kernels ({target}) for torch\n\
                 Requires-Dist: torch == {VERSION}\n\
                 Requires-Dist: rocm-sdk-device-{target} == {SDK}\n"
            )
        );
    }

    // Splitting the host wheel again finds nothing to split, and says so.
    let error = split_wheel(&split.host, &dir.path().join("again"), &spec()).expect_err("no fat");
    assert!(matches!(error, SplitError::NoFatBinaries { .. }), "{error}");
    assert!(error.to_string().contains("split already?"), "{error}");
    // The host wheel never replaces its input.
    let error = split_wheel(&fat, fat.parent().expect("dir"), &spec()).expect_err("same file");
    assert!(matches!(error, SplitError::SameFile(_)), "{error}");
}

/// The split set of `splits_a_fat_wheel…` in `env`'s `dist/`.
fn split_set(env: &TestEnv) -> rockbuild::multiarch::split::Split {
    let fat = WheelBuilder::new("torch", VERSION)
        .file_from(
            "torch/lib/libtorch_hip.so",
            &hip_library(&["gfx906", "gfx1030"]),
        )
        .requires(&format!("rocm[libraries]=={SDK}"))
        .build(&env.path("fat"));
    split_wheel(&fat, &env.path("dist"), &spec()).expect("splits")
}

fn verify(env: &TestEnv, sdk: &str) -> (Option<i32>, String) {
    let output = env
        .rockbuild()
        .args([
            "verify",
            "dist",
            "--targets",
            "gfx906,gfx1030",
            "--index-url",
            sdk,
        ])
        .output()
        .expect("runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn verify_reads_the_split_and_refuses_a_set_that_would_not_resolve_or_load() {
    let env = TestEnv::new();
    let split = split_set(&env);
    // The SDK's index: rocm, rocm-bootstrap and rocm-sdk-device-<target> resolve there.
    let server = http::serve(&sdk_index(SDK, &["gfx906", "gfx1030"]));
    let sdk = format!("{}simple/", server.url());
    let (code, text) = verify(&env, &sdk);
    assert_eq!(code, Some(0), "{text}");

    // A device wheel whose pack holds another target's code, under the right names.
    let gfx1030 = &split.devices[0];
    let pack = entry(&gfx1030.path, "torch/.kpack/torch_gfx1030.kpack");
    let gfx906 = &split.devices[1];
    std::fs::remove_file(&gfx906.path).expect("remove");
    WheelBuilder::new("amd-torch-device-gfx906", VERSION)
        .replace("amd_torch_device_gfx906/__init__.py", Vec::new())
        .file("torch/.kpack/torch_gfx906.kpack", pack)
        .requires(&format!("torch == {VERSION}"))
        .build(&env.path("dist"));
    let (code, text) = verify(&env, &sdk);
    assert_eq!(code, Some(5), "{text}");
    assert!(
        text.contains("it holds gfx1030 code in the device wheel for gfx906"),
        "{text}"
    );
    assert!(
        text.contains("has no pack where it looks (../.kpack/torch_@GFXARCH@.kpack)"),
        "{text}"
    );

    // Without it, the extras name a package the set does not have.
    std::fs::remove_file(
        env.path("dist")
            .join(gfx906.path.file_name().expect("name")),
    )
    .expect("remove");
    let (code, text) = verify(&env, &sdk);
    assert_eq!(code, Some(5), "{text}");
    assert!(
        text.contains(&format!(
            "extra 'device-gfx906' requires 'amd-torch-device-gfx906 == {VERSION}; extra == \"device-gfx906\"', which the set does not satisfy: the set has no amd-torch-device-gfx906 wheel"
        )),
        "{text}"
    );
    assert!(text.contains("extra 'device-all'"), "{text}");
}

/// Device wheels come from the one multi-arch index: smoke with `--targets` refuses a
/// per-family index before reaching it, and names the index to pass.
#[test]
fn smoke_of_device_wheels_refuses_a_per_family_index() {
    let env = TestEnv::new();
    let output = env
        .rockbuild()
        .args([
            "smoke",
            "--index-url",
            "http://127.0.0.1:1/v2/gfx103X-all/",
            "--targets",
            "gfx1030",
            "--dry-run",
        ])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.lines().next().unwrap_or_default(),
        "error: --index-url http://127.0.0.1:1/v2/gfx103X-all/ is the per-family index of gfx103X-all, but the set under test is multi-arch (from --targets (device wheels)): a multi-arch set installs from and publishes to one index for every family: pass the multi-arch index (https://rocm.nightlies.amd.com/whl-multi-arch/)"
    );
}

/// A multi-arch lock recording gfx906 and gfx1030: a set whose split lost gfx906 (its host
/// wheel's extras name gfx1030 only, so every extra resolves) fails verify by name.
#[test]
fn verify_of_a_multi_arch_lock_requires_a_device_wheel_for_every_target() {
    let env = TestEnv::new();
    let fat = WheelBuilder::new("torch", VERSION)
        .file_from("torch/lib/libtorch_hip.so", &hip_library(&["gfx1030"]))
        .requires(&format!("rocm[libraries]=={SDK}"))
        .build(&env.path("fat"));
    split_wheel(&fat, &env.path("dist"), &spec()).expect("splits");
    // The lock's build record as `build --multi-arch` writes it (src/lock/mod.rs BuildRecord).
    let lock = serde_json::json!({
        "schema": 1,
        "generated_by": "rockbuild",
        "stack": "stack.yaml",
        "projects": {},
        "build": {
            "sdk_version": SDK,
            "targets": ["gfx906", "gfx1030"],
            "mode": "multi-arch",
            "versions": {"torch": VERSION},
        },
    });
    let lock_path = env.path("rockbuild.lock.json");
    std::fs::write(&lock_path, lock.to_string()).expect("write lock");
    let server = http::serve(&sdk_index(SDK, &["gfx906", "gfx1030"]));
    let output = env
        .rockbuild()
        .args(["verify", "dist", "--json", "--lock"])
        .arg(&lock_path)
        .args(["--index-url", &format!("{}simple/", server.url())])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(5), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let text = report.to_string();
    assert!(text.contains("missing-device-wheel"), "{text}");
    assert!(
        text.contains(&format!(
            "the lock's build record is multi-arch for gfx906, but the set has no amd-torch-device-gfx906 {VERSION} (the gfx906 device code of project 'torch')"
        )),
        "{text}"
    );
    assert!(!text.contains("gfx1030, but"), "{text}");
}
