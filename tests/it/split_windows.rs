//! The kpack split of a fat Windows wheel: torch_hip.dll, linked by MinGW-w64 with an offload
//! bundle hipcc compiled for gfx906 and gfx1030 in `.hip_fat` and its wrapper in `.hipFatB`,
//! becomes a host DLL pointing at kernel packs through `.kpackrf`, and each target's code
//! object goes to that target's device wheel, named as for Linux wheels. The host DLL is read
//! back by two readers that are not rockbuild's: MinGW's objdump and Python's pefile.

use std::path::{Path, PathBuf};
use std::process::Command;

use rockbuild::binary::kpack::archive::Pack;
use rockbuild::binary::{elf, pe};
use rockbuild::multiarch::split::{SplitError, SplitSpec, split_wheel};

use crate::common::snapshot;
use crate::common::wheels::{HttpServer, WheelBuilder, write_simple_index};
use crate::common::{TestEnv, tools_bin};
use crate::split::{entries, entry, spec_for};
use crate::windows_dlls::{sdk_core, torch, torch_hip_image};

/// The versions of tests/it/windows_dlls.rs's Windows torch and SDK.
const TORCH: &str = "2.10.0a0+rocm7.13.0a20260430";
const SDK: &str = "7.13.0a20260430";

fn spec() -> SplitSpec {
    spec_for(SDK)
}

/// pefile's reading of an image: its warnings (but the share of zero bytes, a heuristic),
/// whether its checksum holds, its sections, base relocations, imports, the bytes of
/// `.kpackrf` and the fat binary wrappers.
const PEFILE_REPORT: &str = "import sys, pefile
pe = pefile.PE(sys.argv[1])
for w in pe.get_warnings():
    if not w.startswith('Byte 0x00 makes up'):
        print('warning', w)
opt = pe.OPTIONAL_HEADER
print('checksum', 'zero' if opt.CheckSum == 0 else ('valid' if pe.verify_checksum() else 'WRONG'))
print('SizeOfImage 0x%x SizeOfHeaders 0x%x FileAlignment 0x%x' % (opt.SizeOfImage, opt.SizeOfHeaders, opt.FileAlignment))
for s in pe.sections:
    print('%-8s rva 0x%05x vsize 0x%05x raw 0x%05x at 0x%05x flags 0x%08x' % (s.Name.rstrip(b'\\0').decode(), s.VirtualAddress, s.Misc_VirtualSize, s.SizeOfRawData, s.PointerToRawData, s.Characteristics))
print('base relocations', sum(len(b.entries) for b in pe.DIRECTORY_ENTRY_BASERELOC))
print('imports', ', '.join(d.dll.decode() for d in pe.DIRECTORY_ENTRY_IMPORT))
base, marker_va, data = opt.ImageBase, None, b''
for s in pe.sections:
    if s.Name.rstrip(b'\\0') == b'.kpackrf':
        print('marker', s.get_data()[:s.Misc_VirtualSize].hex())
        marker_va = base + s.VirtualAddress
    if s.Name.rstrip(b'\\0') == b'.hipFatB':
        data = s.get_data()[:s.Misc_VirtualSize]
for i in range(len(data) // 24):
    magic, version, pointer, reserved = __import__('struct').unpack_from('<IIQQ', data, i * 24)
    print('wrapper', i, magic.to_bytes(4, 'little').decode(), version, 'at marker' if pointer == marker_va else hex(pointer), reserved)
";

/// The independent readers' view of `image` (written to `scratch`): objdump must read it
/// without a word on stderr; pefile's report is returned.
fn read_back(image: &[u8], scratch: &Path) -> String {
    std::fs::write(scratch, image).expect("write");
    let objdump = Command::new("x86_64-w64-mingw32-objdump")
        .args(["-h", "-p", "-t"])
        .arg(scratch)
        .output()
        .expect("objdump");
    let stderr = String::from_utf8_lossy(&objdump.stderr);
    assert!(objdump.status.success(), "objdump fails: {stderr}");
    assert!(stderr.trim().is_empty(), "objdump warns: {stderr}");
    let pefile = Command::new(tools_bin().join("python"))
        .args(["-c", PEFILE_REPORT])
        .arg(scratch)
        .output()
        .expect("pefile");
    assert!(
        pefile.status.success(),
        "pefile: {}",
        String::from_utf8_lossy(&pefile.stderr)
    );
    String::from_utf8(pefile.stdout).expect("utf-8")
}

fn fat_wheel(env: &TestEnv, stripped: bool) -> PathBuf {
    torch(&torch_hip_image(&["gfx906", "gfx1030"], &[], stripped)).build(&env.path(if stripped {
        "fat"
    } else {
        "fat-gnu"
    }))
}

#[test]
fn splits_a_fat_windows_wheel_into_a_host_wheel_and_one_device_wheel_per_target() {
    let env = TestEnv::new();
    let fat = fat_wheel(&env, true);
    let split = split_wheel(&fat, &env.path("dist"), &spec()).expect("splits");
    assert_eq!(split.host.file_name(), fat.file_name());
    assert_eq!(split.fat_binaries, ["torch/lib/torch_hip.dll"]);

    // The host DLL: a marker the runtime reads through the wrapper, no whole page of device
    // code left, a layout both independent readers accept (checksum included).
    let fat_dll = entry(&fat, "torch/lib/torch_hip.dll");
    let host_dll = entry(&split.host, "torch/lib/torch_hip.dll");
    let marker = pe::read_marker(&host_dll).expect("reads").expect("marker");
    assert_eq!(marker.kernel_name, "lib/torch_hip.dll");
    assert_eq!(marker.search_paths, ["../.kpack/torch_@GFXARCH@.kpack"]);
    assert_eq!((marker.wrappers, marker.fatbin_file_bytes), (1, 0));
    assert_eq!(pe::fatbin_section(&host_dll).expect("parses"), None);
    assert_eq!(
        fat_dll.len() as u64 - split.bytes_removed + 0x200,
        host_dll.len() as u64,
        "one page of .hip_fat cut, one FileAlignment unit of marker added"
    );
    let before = read_back(&fat_dll, &env.path("fat.dll"));
    let after = read_back(&host_dll, &env.path("host.dll"));
    let warnings = |report: &str| {
        let lines: Vec<String> = report
            .lines()
            .filter(|l| l.starts_with("warning"))
            .map(str::to_string)
            .collect();
        lines
    };
    assert_eq!(
        warnings(&before),
        warnings(&after),
        "pefile's warnings are the input's"
    );
    assert!(
        rockbuild::binary::pe::layout_problems(&host_dll)
            .expect("parses")
            .is_empty()
    );
    // The DLLs without device code are copied as they were.
    for name in ["torch/lib/c10.dll", "torch/_C.cp311-win_amd64.pyd"] {
        assert_eq!(entry(&split.host, name), entry(&fat, name), "{name}");
    }

    // Each device wheel: the Linux split's names and layout, for the Windows tag.
    let mut devices = Vec::new();
    for (device, target) in split.devices.iter().zip(["gfx1030", "gfx906"]) {
        let file = device.path.file_name().expect("name").to_string_lossy();
        let bytes = entry(&device.path, &format!("torch/.kpack/torch_{target}.kpack"));
        let pack = Pack::parse(&bytes).expect("pack");
        let objects = pack.code_objects().expect("decompresses");
        for ((key, arch), code) in &objects {
            assert_eq!(elf::code_object_target(code).expect("target"), *arch);
            devices.push(format!("{file}: {key} ({arch})"));
        }
        for (name, bytes) in entries(&device.path) {
            devices.push(format!("  {name}"));
            if name.ends_with("/METADATA") {
                let text = String::from_utf8(bytes).expect("utf-8");
                devices.push(format!("    {}", text.trim_end().replace('\n', "\n    ")));
            }
        }
    }

    snapshot::settings(&env).bind(|| {
        insta::assert_snapshot!(
            "split_windows_host_dll",
            format!("before:\n{before}\nafter:\n{after}")
        );
        insta::assert_snapshot!("split_windows_device_wheels", devices.join("\n"));
    });

    // Splitting the host wheel again finds nothing to split, and says so.
    let error = split_wheel(&split.host, &env.path("again"), &spec()).expect_err("no fat");
    assert!(error.to_string().contains("split already?"), "{error}");
}

/// The SDK's Windows index: the meta package, its core wheel, rocm-bootstrap (which host
/// wheels of a split require) and the per-target device packages the device wheels require.
fn windows_sdk_index(env: &TestEnv) -> HttpServer {
    let wheels = env.path("sdk-wheels");
    let rocm = WheelBuilder::new("rocm", SDK)
        .tag("py3-none-any")
        .provides_extra("libraries")
        .requires(&format!("rocm-sdk-core=={SDK}"))
        .build(&wheels);
    let bootstrap = WheelBuilder::new("rocm-bootstrap", "0.3.0")
        .tag("py3-none-any")
        .build(&wheels);
    let root = env.path("index");
    write_simple_index(&root, "rocm", &[rocm]);
    write_simple_index(&root, "rocm-sdk-core", &[sdk_core(&wheels)]);
    write_simple_index(&root, "rocm-bootstrap", &[bootstrap]);
    for target in ["gfx906", "gfx1030"] {
        let device = WheelBuilder::new(&format!("rocm-sdk-device-{target}"), SDK)
            .tag("py3-none-win_amd64")
            .build(&wheels);
        write_simple_index(&root, &format!("rocm-sdk-device-{target}"), &[device]);
    }
    HttpServer::serve(&root)
}

#[test]
fn verify_reads_the_windows_split_against_its_device_wheels() {
    let env = TestEnv::new();
    let fat = fat_wheel(&env, true);
    let dist = env.path("dist");
    let split = split_wheel(&fat, &dist, &spec()).expect("splits");
    // The set carries the SDK's wheels, as stage gives them to verify.
    sdk_core(&dist);
    let server = windows_sdk_index(&env);
    let run = || {
        let output = env
            .rockbuild()
            .args(["verify", "dist", "--json", "--targets", "gfx906,gfx1030"])
            .arg("--index-url")
            .arg(format!("{}/", server.url))
            .output()
            .expect("runs");
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
        (output.status.code(), report)
    };
    let (code, report) = run();
    assert_eq!(code, Some(0), "{report:#}");
    let torch = report["wheels"]
        .as_array()
        .expect("wheels")
        .iter()
        .find(|w| w["name"] == "torch")
        .expect("torch")
        .clone();
    snapshot::settings(&env).bind(|| {
        insta::assert_snapshot!(
            "split_windows_verify_host_libraries",
            serde_json::to_string_pretty(&torch["libraries"]).expect("json")
        );
    });

    // The gfx906 device wheel holding gfx1030's pack under gfx906's name: its code and the
    // host DLL's marker both fail by name.
    let gfx906 = &split.devices[1];
    std::fs::remove_file(&gfx906.path).expect("remove");
    WheelBuilder::new("amd-torch-device-gfx906", TORCH)
        .tag("cp311-cp311-win_amd64")
        .replace("amd_torch_device_gfx906/__init__.py", Vec::new())
        .file(
            "torch/.kpack/torch_gfx906.kpack",
            entry(&split.devices[0].path, "torch/.kpack/torch_gfx1030.kpack"),
        )
        .requires(&format!("torch == {TORCH}"))
        .build(&dist);
    let (code, report) = run();
    assert_eq!(code, Some(5), "{report:#}");
    let text = report.to_string();
    assert!(
        text.contains("it holds gfx1030 code in the device wheel for gfx906"),
        "{text}"
    );
    assert!(
        text.contains("has no pack where it looks (../.kpack/torch_@GFXARCH@.kpack)"),
        "{text}"
    );
}

#[test]
fn a_gnu_linked_image_keeps_its_symbol_table_and_checksum() {
    let env = TestEnv::new();
    let fat = fat_wheel(&env, false);
    let split = split_wheel(&fat, &env.path("dist"), &spec()).expect("splits");
    let fat_dll = entry(&fat, "torch/lib/torch_hip.dll");
    let host_dll = entry(&split.host, "torch/lib/torch_hip.dll");
    let report = read_back(&host_dll, &env.path("host.dll"));
    assert!(report.contains("\nchecksum valid\n"), "{report}");
    // objdump -t reads the symbol table where the header now points: the same symbols.
    let symbols = |path: &Path| {
        let out = Command::new("x86_64-w64-mingw32-nm")
            .arg(path)
            .output()
            .expect("nm");
        assert!(out.status.success());
        String::from_utf8(out.stdout).expect("utf-8")
    };
    std::fs::write(env.path("fat.dll"), &fat_dll).expect("write");
    let (old, new) = (
        symbols(&env.path("fat.dll")),
        symbols(&env.path("host.dll")),
    );
    assert!(old.contains("__hip_fatbin_wrapper"), "{old}");
    assert_eq!(
        old.lines().count(),
        new.lines().count(),
        "the symbol table moved with its bytes"
    );
    assert!(new.contains("__hip_fatbin_wrapper"), "{new}");
}

#[test]
fn a_dll_without_wrappers_or_with_a_signature_is_refused_by_name() {
    let env = TestEnv::new();
    let dll = std::fs::read(torch_hip_image(&["gfx906"], &[], true)).expect("read");
    let optional = u32::from_le_bytes(dll[0x3c..0x40].try_into().expect("4")) as usize + 24;
    let table = optional
        + usize::from(u16::from_le_bytes(
            dll[optional - 4..optional - 2].try_into().expect("2"),
        ));
    let wrappers = (0..20)
        .map(|i| table + i * 40)
        .find(|at| &dll[*at..*at + 8] == b".hipFatB")
        .expect(".hipFatB");
    let mut unwrapped = dll.clone();
    unwrapped[wrappers + 7] = b'X';
    let mut signed = dll.clone();
    signed[optional + 112 + 4 * 8..optional + 112 + 4 * 8 + 8]
        .copy_from_slice(&[0, 0x10, 0, 0, 0x10, 0, 0, 0]);
    for (name, image, expected) in [
        (
            "unwrapped",
            unwrapped,
            "no .hipFatB section: the fat binary wrappers cannot be redirected",
        ),
        (
            "signed",
            signed,
            "the image is signed (it has a certificate table)",
        ),
    ] {
        let path = env.path(name).join("torch_hip.dll");
        std::fs::create_dir_all(path.parent().expect("dir")).expect("dir");
        std::fs::write(&path, image).expect("write");
        let fat = torch(&path).build(&env.path(name));
        let error =
            split_wheel(&fat, &env.path(&format!("{name}-dist")), &spec()).expect_err("refused");
        assert!(matches!(error, SplitError::Binary { .. }), "{error}");
        let text = error.to_string();
        assert!(
            text.contains("'torch/lib/torch_hip.dll'") && text.contains(expected),
            "{text}"
        );
        assert!(
            !env.path(&format!("{name}-dist")).exists()
                || std::fs::read_dir(env.path(&format!("{name}-dist")))
                    .expect("dir")
                    .next()
                    .is_none(),
            "nothing half-written"
        );
    }
}
