//! The kpack split against the reference's splitter, on the same fat wheels: rockbuild's
//! `multiarch::split::split_wheel` next to `rocm_kpack.wheel_splitter.WheelSplitter` (rocm-systems
//! `shared/kpack`, the class behind `python -m rocm_kpack.tools.split_python_wheels`), called
//! with the arguments of TheRock's multi-arch workflow.
//!
//! It checks that the whole outputs are equal and prints the figures for docs/performance.md:
//! - the same wheels (file names), the same entries with the same Unix modes in each;
//! - every entry byte for byte (host binaries, Python files, METADATA of host and device
//!   wheels, top_level.txt), except: a kernel pack by its table of contents (as a value, all
//!   but `zstd_size`, the compressed length) and its decompressed code objects, each pack read
//!   by both readers (rockbuild's and rocm-kpack's `PackedKernelArchive.read`), since the zstd
//!   streams differ (level 3 against ruzstd's fastest); RECORD by its lines for every entry of
//!   equal bytes; WHEEL without its `Generator` line;
//! - the time of each split (rockbuild on all cores and on one; the reference with `-j 1` and
//!   `-j <cores>`), and the packs' sizes.
//!
//! `benches/kpack-reference.sh` runs it the recorded way (the reference pinned, the sample
//! stack built multi-arch for gfx906 and gfx1030). By hand: `cargo bench --bench kpack` with
//! `ROCKBUILD_BENCH_PYTHON` a Python that imports `rocm_kpack.wheel_splitter` and
//! `rocm_bootstrap` (`ROCKBUILD_KPACK_REFERENCE` says which, printed) and
//! clang-offload-bundler on PATH; `ROCKBUILD_BENCH_WHEELS` fat wheels to split,
//! space-separated (two more are always made here, cached: a Linux wheel with two libraries
//! hipcc compiles for Debian's 14 targets, gfx90a as xnack+ and xnack-, and a Windows wheel
//! whose DLL carries the same targets' code objects, linked by MinGW-w64); `ROCKBUILD_BENCH_SDK` the SDK version
//! the device wheels require; `ROCKBUILD_BENCH_RUNS` the runs per measurement (best kept,
//! default 3).

// The bench starts the reference as a process and prints its table on stdout.
#![allow(clippy::disallowed_methods, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rockbuild::binary::kpack::archive::{Compression, Pack};
use rockbuild::binary::kpack::msgpack::Value;
use rockbuild::multiarch::split::{SplitSpec, split_wheel};

/// Debian's hipcc (ROCm 5.2) targets, gfx90a as its two xnack variants (clang takes a
/// feature on all of a processor's targets or none): the reference packs each apart
/// (`torch_gfx90a:xnack+.kpack`, `torch_gfx90a:xnack-.kpack`) in gfx90a's one device wheel.
const TARGETS: &[&str] = &[
    "gfx900",
    "gfx906",
    "gfx908",
    "gfx90a:xnack-",
    "gfx90a:xnack+",
    "gfx1010",
    "gfx1011",
    "gfx1012",
    "gfx1030",
    "gfx1031",
    "gfx1032",
    "gfx1033",
    "gfx1034",
    "gfx1035",
    "gfx1036",
];

/// A translation unit with `KERNELS` kernels (templates over a seed), so that code objects
/// have a realistic spread of sizes.
const KERNEL_SOURCE: &str = r#"
#include <hip/hip_runtime.h>
template <int S> __global__ void k(float* x, const float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float acc = 0;
  for (int j = 0; j < (S % 7) + 1; ++j) acc += y[(i + j * S) % n] * (S + j);
  if (i < n) x[i] = acc * x[i] + S;
}
#define K(S) template __global__ void k<S>(float*, const float*, int);
"#;

/// Writes the fat wheel from the compiled libraries: torch/lib/libtorch_hip.so (two
/// translation units, two bundles), torch/lib/libc10_hip.so, torch/_C.so (a host-only ELF
/// file, no device code), Python files, METADATA with a description body.
const MAKE_WHEEL: &str = r#"
import base64, hashlib, sys, zipfile
out, tag = sys.argv[1], sys.argv[2]
version = "2.10.0a0+rocm7.10.0a20251124"
dist_info = f"torch-{version}.dist-info"
record = []
files = [arg.split("=", 1) for arg in sys.argv[3:]]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
    def add(name, data, mode=0o644):
        info = zipfile.ZipInfo(name, date_time=(2025, 11, 24, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o100000 | mode) << 16
        zf.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    for i in range(200):
        add(f"torch/module{i // 20}/file{i}.py", f"def f{i}(x):\n    return x * {i}\n".encode())
    for name, path in files:
        add(name, open(path, "rb").read(), 0o755)
    add(f"{dist_info}/METADATA", (f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n"
        "Requires-Dist: rocm[libraries]==7.10.0a20251124\n\nTensors and Dynamic neural networks.\n").encode())
    add(f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: false\nTag: " + tag.encode() + b"\n")
    zf.writestr(f"{dist_info}/RECORD", "\n".join(record + [f"{dist_info}/RECORD,,"]) + "\n")
"#;

/// The reference's split, run as TheRock's multi-arch workflow runs it
/// (`split_python_wheels --device-package-prefix amd-<name>-device --overlay-root <name>/
/// --device-requires-dist "rocm-sdk-device-@GFXARCH@ == <SDK>" --compression zstd -j <jobs>`):
/// rocm-kpack's `WheelSplitter` called with those arguments. rocm-kpack needs Python 3.12
/// (`TemporaryDirectory(delete=False)`); on 3.11 that one keyword is given its 3.12 meaning.
/// Mode `read` prints the SHA-256 of every code object of the packs given, read with
/// `PackedKernelArchive.read`.
const REFERENCE: &str = r#"
import hashlib, json, sys, tempfile, time
from pathlib import Path
if sys.version_info < (3, 12):
    class _TemporaryDirectory(tempfile.TemporaryDirectory):
        def __init__(self, *args, delete=True, **kwargs):
            super().__init__(*args, **kwargs)
            if not delete:
                self._finalizer.detach()
    tempfile.TemporaryDirectory = _TemporaryDirectory
from rocm_kpack.kpack import PackedKernelArchive

if sys.argv[1] == "read":
    out = {}
    for pack in sys.argv[2:]:
        archive = PackedKernelArchive.read(Path(pack))
        out[pack] = {f"{b}|{a}": hashlib.sha256(archive.get_kernel(b, a)).hexdigest()
                     for b, arches in archive.toc.items() for a in arches}
    print(json.dumps(out))
    sys.exit(0)

from rocm_kpack.binutils import Toolchain
from rocm_kpack.wheel_splitter import WheelSplitter
wheel, out, prefix, overlay, requires, jobs = sys.argv[1:7]
start = time.monotonic()
splitter = WheelSplitter(device_package_prefix=prefix, overlay_root=overlay,
                         toolchain=Toolchain(), device_requires_dist=[requires],
                         compression="zstd", compression_level=3, jobs=int(jobs))
splitter.split(Path(wheel).resolve(), Path(out).resolve())
print(json.dumps({"seconds": time.monotonic() - start}))
"#;

fn run(command: &mut Command) -> String {
    let output = command.output().expect("start");
    assert!(
        output.status.success(),
        "{command:?}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn bench_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/kpack-bench");
    fs_err::create_dir_all(&dir).expect("bench dir");
    dir
}

/// The fat wheels: the ones given, then one made from hipcc-compiled libraries.
fn fat_wheels() -> Vec<PathBuf> {
    let mut wheels: Vec<PathBuf> = env("ROCKBUILD_BENCH_WHEELS")
        .map(|w| w.split_whitespace().map(PathBuf::from).collect())
        .unwrap_or_default();
    wheels.push(fixture_wheel());
    wheels.push(windows_fixture_wheel());
    wheels
}

/// A torch wheel with two libraries compiled for every target Debian's hipcc has (cached).
fn fixture_wheel() -> PathBuf {
    let dir = bench_dir().join("fixture");
    let wheel = dir.join("torch-2.10.0a0+rocm7.10.0a20251124-cp312-cp312-linux_x86_64.whl");
    if wheel.exists() {
        return wheel;
    }
    fs_err::create_dir_all(&dir).expect("fixture dir");
    let arches: Vec<String> = TARGETS
        .iter()
        .map(|t| format!("--offload-arch={t}"))
        .collect();
    let source = |name: &str, first: usize, count: usize| {
        let mut text = KERNEL_SOURCE.to_string();
        for s in first..first + count {
            text.push_str(&format!("K({s})\n"));
        }
        let path = dir.join(name);
        fs_err::write(&path, text).expect("source");
        path
    };
    let tu1 = source("hip1.hip", 1, 48);
    let tu2 = source("hip2.hip", 100, 32);
    let c10 = source("c10.hip", 200, 16);
    println!(
        "compiling the fixture libraries for {} targets...",
        TARGETS.len()
    );
    run(Command::new("hipcc")
        .args(["-O2", "-fPIC", "-shared"])
        .args(&arches)
        .arg(&tu1)
        .arg(&tu2)
        .arg("-o")
        .arg(dir.join("libtorch_hip.so")));
    run(Command::new("hipcc")
        .args(["-O2", "-fPIC", "-shared"])
        .args(&arches)
        .arg(&c10)
        .arg("-o")
        .arg(dir.join("libc10_hip.so")));
    let host = dir.join("host.c");
    fs_err::write(&host, "int host_only(int x) { return x + 1; }\n").expect("host source");
    run(Command::new("cc")
        .args(["-fPIC", "-shared"])
        .arg(&host)
        .arg("-o")
        .arg(dir.join("libhost.so")));
    run(Command::new("python3")
        .args(["-c", MAKE_WHEEL])
        .arg(&wheel)
        .arg("cp312-cp312-linux_x86_64")
        .arg(format!(
            "torch/lib/libtorch_hip.so={}",
            dir.join("libtorch_hip.so").display()
        ))
        .arg(format!(
            "torch/lib/libc10_hip.so={}",
            dir.join("libc10_hip.so").display()
        ))
        .arg(format!("torch/_C.so={}", dir.join("libhost.so").display())));
    wheel
}

/// torch_hip.dll as MSVC's link or lld-link would write it, by Debian's MinGW-w64: the code
/// objects of `hip1.hip` for every target in one offload bundle (Debian's
/// clang-offload-bundler), 4096-aligned in `.hip_fat`; its `__CudaFatBinaryWrapper` in
/// `.hipFatB`, registered by a module constructor through `__hipRegisterFatBinary` (imported
/// from `amdhip64_7.dll`), as clang lays out a HIP host object (CGCUDANV.cpp); no symbol table,
/// no time stamp, no checksum, base 0x180000000. Then c10.dll without device code.
/// `$1`: the kernel source; `$2`: the targets, space-separated.
const WINDOWS_DLLS: &str = r#"set -eu
bundle=host-x86_64-pc-windows-msvc inputs=-input=host.o
: > host.o
for t in $2; do
  hipcc -O2 --cuda-device-only --no-gpu-bundle-output --offload-arch=$t -c "$1" -o "$t.co"
  bundle="$bundle,hipv4-amdgcn-amd-amdhsa--$t" inputs="$inputs -input=$t.co"
done
/usr/lib/llvm-15/bin/clang-offload-bundler -type=o -targets=$bundle $inputs -output=fat.bin
printf '	.section .hip_fat,"dr"
	.p2align 12
	.globl __hip_fatbin
__hip_fatbin:
	.incbin "fat.bin"
' > fatbin.s
cat > module.c <<'C'
struct wrapper { unsigned magic, version; const void *binary; void *reserved; };
extern const char __hip_fatbin[];
__attribute__((section(".hipFatB"), used, aligned(8)))
static const struct wrapper __hip_fatbin_wrapper = { 0x48495046u, 1u, __hip_fatbin, 0 };
void **__hipRegisterFatBinary(const void *);
void **__hip_gpubin_handle;
__attribute__((constructor)) static void __hip_module_ctor(void) {
  __hip_gpubin_handle = __hipRegisterFatBinary(&__hip_fatbin_wrapper);
}
__declspec(dllexport) int torch_hip_ready(void) { return __hip_gpubin_handle != 0; }
C
printf 'LIBRARY amdhip64_7.dll
EXPORTS
__hipRegisterFatBinary
' > amdhip.def
x86_64-w64-mingw32-dlltool -d amdhip.def -l libamdhip.a
x86_64-w64-mingw32-as fatbin.s -o fatbin.o
x86_64-w64-mingw32-gcc -O2 -c module.c -o module.o
printf '__declspec(dllexport) int c10_tick(int x) { return x + 1; }
' > c10.c
link="-shared -s -Wl,--no-insert-timestamp,--image-base=0x180000000"
x86_64-w64-mingw32-gcc $link -o torch_hip.dll module.o fatbin.o libamdhip.a
x86_64-w64-mingw32-gcc -O2 $link -o c10.dll c10.c
for dll in torch_hip.dll c10.dll; do
  python3 -c 'import struct, sys
image = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<I", image, struct.unpack_from("<I", image, 0x3c)[0] + 24 + 64, 0)
open(sys.argv[1], "wb").write(image)' "$dll"
done
"#;

/// A Windows torch wheel with torch_hip.dll for every target Debian's hipcc has (cached).
fn windows_fixture_wheel() -> PathBuf {
    let dir = bench_dir().join("fixture-windows");
    let wheel = dir.join("torch-2.10.0a0+rocm7.10.0a20251124-cp312-cp312-win_amd64.whl");
    if wheel.exists() {
        return wheel;
    }
    fs_err::create_dir_all(&dir).expect("fixture dir");
    let mut text = KERNEL_SOURCE.to_string();
    for s in 1..49 {
        text.push_str(&format!("K({s})\n"));
    }
    fs_err::write(dir.join("hip1.hip"), text).expect("source");
    println!(
        "compiling the Windows fixture DLL for {} targets...",
        TARGETS.len()
    );
    run(Command::new("sh").current_dir(&dir).args([
        "-c",
        WINDOWS_DLLS,
        "sh",
        "hip1.hip",
        &TARGETS.join(" "),
    ]));
    run(Command::new("python3")
        .args(["-c", MAKE_WHEEL])
        .arg(&wheel)
        .arg("cp312-cp312-win_amd64")
        .arg(format!(
            "torch/lib/torch_hip.dll={}",
            dir.join("torch_hip.dll").display()
        ))
        .arg(format!(
            "torch/lib/c10.dll={}",
            dir.join("c10.dll").display()
        )));
    wheel
}

/// One zip entry: its bytes and Unix mode.
struct Member {
    data: Vec<u8>,
    mode: Option<u32>,
}

/// Every entry of a zip file, by name.
fn unzip(path: &Path) -> BTreeMap<String, Member> {
    let mut zip = zip::ZipArchive::new(fs_err::File::open(path).expect("open")).expect("zip");
    let mut out = BTreeMap::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).expect("entry");
        let name = entry.name().expect("name").to_string();
        let mode = entry.unix_mode();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).expect("read");
        out.insert(name, Member { data, mode });
    }
    out
}

fn sha256(data: &[u8]) -> String {
    rockbuild::fsutil::sha256_hex(data)
}

fn best(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..runs).map(|_| f()).min().unwrap_or_default()
}

/// What two splits of one wheel were found to share.
#[derive(Default)]
struct Equal {
    wheels: usize,
    files: usize,
    binaries: usize,
    packs: usize,
    code_objects: usize,
    our_pack_bytes: usize,
    their_pack_bytes: usize,
    /// The reference's RECORDs that do not list themselves.
    records_without_self: usize,
    /// The reference's RECORD lines with a hex digest (the spec's form is urlsafe base64).
    hex_record_lines: usize,
}

/// The wheels of the reference's output directory (it leaves its staging directories there).
fn wheels_in(dir: &Path) -> BTreeMap<String, PathBuf> {
    fs_err::read_dir(dir)
        .expect("reference outputs")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .map(|p| {
            (
                p.file_name().expect("name").to_string_lossy().into_owned(),
                p,
            )
        })
        .collect()
}

/// A pack's table of contents without `zstd_size`, the length of its compressed blob (the
/// one field a different zstd encoder changes).
fn without_zstd_size(toc: &Value) -> Value {
    match toc {
        Value::Map(fields) => Value::Map(
            fields
                .iter()
                .filter(|(k, _)| *k != Value::Str("zstd_size".into()))
                .cloned()
                .collect(),
        ),
        other => other.clone(),
    }
}

/// RECORD as path → line.
fn record_lines(data: &[u8]) -> BTreeMap<String, String> {
    String::from_utf8_lossy(data)
        .lines()
        .map(|l| {
            (
                l.rsplitn(3, ',').last().unwrap_or(l).to_string(),
                l.to_string(),
            )
        })
        .collect()
}

/// The whole outputs, wheel by wheel and entry by entry: the same wheel file names, entry names
/// and Unix modes; every entry byte for byte, except that a pack is compared by its table (as
/// a value, all but the compressed size) and its decompressed code objects (the zstd streams
/// differ: level 3 against ruzstd's fastest), RECORD by its lines for the entries whose bytes
/// are equal (digest and size; the reference writes hex digests where it regenerates a RECORD,
/// and its device wheels leave out RECORD's own line: both counted), and WHEEL without its
/// `Generator` line.
fn compare(split: &rockbuild::multiarch::split::Split, theirs: &Path) -> (Equal, Vec<PathBuf>) {
    let mut ours: BTreeMap<String, PathBuf> = std::iter::once(&split.host)
        .chain(split.devices.iter().map(|d| &d.path))
        .map(|p| {
            (
                p.file_name().expect("name").to_string_lossy().into_owned(),
                p.clone(),
            )
        })
        .collect();
    let theirs = wheels_in(theirs);
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>(),
        "the wheels' file names differ"
    );
    let mut equal = Equal::default();
    let mut our_packs = Vec::new();
    for (name, their_path) in &theirs {
        let (a, b) = (
            unzip(&ours.remove(name).expect("same names")),
            unzip(their_path),
        );
        assert_eq!(
            a.keys().collect::<Vec<_>>(),
            b.keys().collect::<Vec<_>>(),
            "{name}: the entries differ"
        );
        let mut same_bytes = Vec::new();
        for (entry, ours) in &a {
            let theirs = &b[entry];
            assert_eq!(ours.mode, theirs.mode, "{name}: {entry}: Unix modes differ");
            if entry.ends_with(".kpack") {
                let (p, q) = (
                    Pack::parse(&ours.data).expect("ours parses"),
                    Pack::parse(&theirs.data).expect("theirs parses"),
                );
                // The tables agree in everything but the size of the compressed blobs.
                assert_eq!(
                    without_zstd_size(&p.toc),
                    without_zstd_size(&q.toc),
                    "{name}: {entry}: tables of contents differ"
                );
                let objects = p.code_objects().expect("ours decompress");
                assert_eq!(
                    objects,
                    q.code_objects().expect("theirs decompress"),
                    "{name}: {entry}: code objects differ"
                );
                equal.packs += 1;
                equal.code_objects += objects.len();
                equal.our_pack_bytes += ours.data.len();
                equal.their_pack_bytes += theirs.data.len();
                our_packs.push((entry.clone(), ours.data.clone()));
            } else if entry.ends_with(".dist-info/RECORD") {
                let (p, mut q) = (record_lines(&ours.data), record_lines(&theirs.data));
                // The reference writes a device wheel's RECORD after hashing the tree, so the
                // file does not list itself; the wheel spec (and rockbuild) lists it, unhashed.
                if !q.contains_key(entry) && p.get(entry).is_some_and(|l| l.ends_with(",,")) {
                    q.insert(entry.clone(), p[entry].clone());
                    equal.records_without_self += 1;
                }
                assert_eq!(
                    p.keys().collect::<Vec<_>>(),
                    q.keys().collect::<Vec<_>>(),
                    "{name}: RECORD lists other files"
                );
                // Each line names the file's digest and size: rockbuild in the spec's form
                // (urlsafe base64), the reference as SHA-256 hex when it wrote the RECORD.
                for path in &same_bytes {
                    let bytes = &a[path].data;
                    let spec = format!(
                        "{path},{},{}",
                        rockbuild::wheel::record::record_hash(bytes),
                        bytes.len()
                    );
                    let hex = format!("{path},sha256={},{}", sha256(bytes), bytes.len());
                    assert_eq!(p[path], spec, "{name}: rockbuild's RECORD line of {path}");
                    if q[path] == hex {
                        equal.hex_record_lines += 1;
                    } else {
                        assert_eq!(
                            q[path], spec,
                            "{name}: the reference's RECORD line of {path}"
                        );
                    }
                }
                equal.files += 1;
            } else if entry.ends_with(".dist-info/WHEEL") {
                let lines = |d: &[u8]| {
                    String::from_utf8_lossy(d)
                        .lines()
                        .filter(|l| !l.starts_with("Generator:"))
                        .map(String::from)
                        .collect::<Vec<_>>()
                };
                assert_eq!(lines(&ours.data), lines(&theirs.data), "{name}: {entry}");
                equal.files += 1;
            } else {
                assert_eq!(
                    sha256(&ours.data),
                    sha256(&theirs.data),
                    "{name}: {entry}: the bytes differ"
                );
                if split.fat_binaries.contains(entry) {
                    equal.binaries += 1;
                }
                same_bytes.push(entry.clone());
                equal.files += 1;
            }
        }
        equal.wheels += 1;
    }
    let dir = tempfile::tempdir_in(bench_dir()).expect("pack dir");
    let paths = our_packs
        .into_iter()
        .map(|(entry, data)| {
            let path = dir.path().join(entry.replace('/', "_"));
            fs_err::write(&path, data).expect("pack copy");
            path
        })
        .collect();
    std::mem::forget(dir);
    (equal, paths)
}

/// rocm-kpack reads rockbuild's packs: every code object rockbuild wrote, by key and target.
fn reference_reads(python: &Path, packs: &[PathBuf]) -> usize {
    let read = run(Command::new(python)
        .args(["-c", REFERENCE, "read"])
        .args(packs));
    let read: serde_json::Value = serde_json::from_str(&read).expect("json");
    let mut objects = 0;
    for path in packs {
        let data = fs_err::read(path).expect("pack");
        let listed = &read[path.to_string_lossy().as_ref()];
        for ((binary, arch), object) in Pack::parse(&data)
            .expect("parses")
            .code_objects()
            .expect("decompress")
        {
            assert_eq!(
                listed[format!("{binary}|{arch}")].as_str(),
                Some(sha256(&object).as_str()),
                "rocm-kpack reads {binary} {arch} differently"
            );
            objects += 1;
        }
    }
    objects
}

fn main() {
    let Some(python) = env("ROCKBUILD_BENCH_PYTHON").map(PathBuf::from) else {
        println!(
            "run benches/kpack-reference.sh, or set ROCKBUILD_BENCH_PYTHON to a Python that \
             imports rocm_kpack.wheel_splitter and rocm_bootstrap"
        );
        return;
    };
    let reference = env("ROCKBUILD_KPACK_REFERENCE").unwrap_or_else(|| "(not recorded)".into());
    let sdk = env("ROCKBUILD_BENCH_SDK").unwrap_or_else(|| "7.10.0a20251124".into());
    let runs: usize = env("ROCKBUILD_BENCH_RUNS")
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let secs = |d: Duration| d.as_secs_f64();
    println!("reference: {reference}");
    println!(
        "| wheel | equal | rockbuild {cores} threads | rockbuild 1 thread | reference -j {cores} | reference -j 1 | packs: rockbuild / reference bytes |"
    );
    println!("|---|---|---|---|---|---|---|");
    for wheel in fat_wheels() {
        let name = rockbuild::wheel::filename::WheelFilename::parse(
            &wheel.file_name().expect("name").to_string_lossy(),
        )
        .expect("a wheel file name")
        .name
        .to_string();
        let spec = SplitSpec {
            device_prefix: format!("amd-{name}-device"),
            overlay_root: name.clone(),
            device_requires: vec![format!("rocm-sdk-device-@GFXARCH@ == {sdk}")],
            compression: Compression::Zstd,
        };
        let work = tempfile::tempdir_in(bench_dir()).expect("work dir");
        let ours = work.path().join("rockbuild");
        let split_once = |threads: usize| {
            let _ = fs_err::remove_dir_all(&ours);
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool");
            let start = Instant::now();
            let split = pool
                .install(|| split_wheel(&wheel, &ours, &spec))
                .expect("rockbuild split");
            (start.elapsed(), split)
        };
        let ours_all = best(runs, || split_once(cores).0);
        let ours_one = best(runs, || split_once(1).0);
        let (_, split) = split_once(cores);

        let theirs = work.path().join("reference");
        let reference_once = |jobs: usize| {
            let _ = fs_err::remove_dir_all(&theirs);
            let start = Instant::now();
            run(Command::new(&python)
                .args(["-c", REFERENCE])
                .arg(&wheel)
                .arg(&theirs)
                .args([
                    &spec.device_prefix,
                    &format!("{name}/"),
                    &spec.device_requires[0],
                ])
                .arg(jobs.to_string()));
            start.elapsed()
        };
        // With -j > 1 the reference adds code objects to a pack in the order its worker
        // processes finish, so its packs' ordinals vary run to run; -j 1 is its defined order
        // (largest binary first), the one compared, so it runs last.
        let theirs_all = best(runs, || reference_once(cores));
        let theirs_one = best(runs, || reference_once(1));

        let (equal, packs) = compare(&split, &theirs);
        let read = reference_reads(&python, &packs);
        assert_eq!(
            read, equal.code_objects,
            "rocm-kpack read every code object"
        );
        let ratio = |d: Duration| format!("{:.2} s ({:.2}x)", secs(d), secs(d) / secs(theirs_one));
        println!(
            "| {} ({:.1} MB) | {} wheels, {} files ({} host binaries) byte for byte, {} packs (tables; {} code objects, read by both); reference RECORDs: {} without their own line, {} lines with hex digests | {} | {} | {} | {:.2} s (1.00x) | {} / {} ({:.2}x) |",
            wheel.file_name().expect("name").to_string_lossy(),
            fs_err::metadata(&wheel).expect("wheel").len() as f64 / 1e6,
            equal.wheels,
            equal.files,
            equal.binaries,
            equal.packs,
            equal.code_objects,
            equal.records_without_self,
            equal.hex_record_lines,
            ratio(ours_all),
            ratio(ours_one),
            ratio(theirs_all),
            secs(theirs_one),
            equal.our_pack_bytes,
            equal.their_pack_bytes,
            equal.our_pack_bytes as f64 / equal.their_pack_bytes as f64,
        );
    }
}
