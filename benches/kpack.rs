//! The kpack split against the reference's tools, on the same fat wheel: rockbuild's
//! `wheel::split::split_wheel` next to rocm-kpack's own Python functions called the way the
//! reference wheel splitter (rocm-systems `shared/kpack`, `split_python_wheels`) calls them:
//! `BundledBinary.unbundle` for the code objects, `PackedKernelArchive` with
//! `ZstdCompressor(3)` for the packs, `kpack_offload_binary` for the host binaries.
//!
//! It checks that the outputs are equal and prints the figures for docs/performance.md:
//! - every transformed host binary: the same bytes;
//! - every kernel pack: the same table of contents (as a value, and byte for byte), and the
//!   same decompressed code objects, each pack read by both readers (rockbuild's and
//!   rocm-kpack's `PackedKernelArchive.read`);
//! - the time of each split (rockbuild on all cores and on one; the reference serially, as
//!   `split_python_wheels -j 1`), and the packs' sizes (zstd level 3 against ruzstd's fastest).
//!
//! `cargo bench --bench kpack`, with `ROCKBUILD_KPACK_SRC` naming a checkout of
//! ROCm/rocm-kpack (its `python/` is put on the path; nothing of it is built or installed).
//! `ROCKBUILD_BENCH_PYTHON` is a Python with `zstandard` and `msgpack` (default: a venv made
//! in the target directory with both from PyPI); `ROCKBUILD_BENCH_WHEEL` a fat wheel to split
//! (default: one made here from libraries Debian's hipcc compiles for its 14 targets, cached);
//! `ROCKBUILD_BENCH_RUNS` the runs per measurement (best kept, default 3).

// The bench starts the reference as a process and prints its table on stdout.
#![allow(clippy::disallowed_methods, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rockbuild::wheel::kpack::archive::{Compression, Pack};
use rockbuild::wheel::split::{SplitSpec, split_wheel};

/// Debian's hipcc (ROCm 5.2) targets.
const TARGETS: &[&str] = &[
    "gfx900", "gfx906", "gfx908", "gfx90a", "gfx1010", "gfx1011", "gfx1012", "gfx1030", "gfx1031",
    "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
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
out, build = sys.argv[1], sys.argv[2]
version = "2.10.0a0+rocm7.10.0a20251124"
dist_info = f"torch-{version}.dist-info"
record = []
files = [("torch/lib/libtorch_hip.so", f"{build}/libtorch_hip.so"),
         ("torch/lib/libc10_hip.so", f"{build}/libc10_hip.so"),
         ("torch/_C.so", f"{build}/libhost.so")]
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
    add(f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: false\nTag: cp312-cp312-linux_x86_64\n")
    zf.writestr(f"{dist_info}/RECORD", "\n".join(record + [f"{dist_info}/RECORD,,"]) + "\n")
"#;

/// The reference's split of the wheel's fat binaries, with rocm-kpack's functions in the
/// order and with the arguments of its wheel splitter: unbundle each fat binary (largest
/// first; ties by path), one `PackedKernelArchive` per target with `ZstdCompressor(3)` under
/// the keys `<path>#<n>`, `kpack_offload_binary` with the `@GFXARCH@` search path. The wheel
/// is unpacked first and the outputs zipped, as the splitter does. Mode `read` prints the
/// SHA-256 of every code object of the packs given, read with `PackedKernelArchive.read`.
const REFERENCE: &str = r#"
import hashlib, json, os, shutil, sys, tempfile, time, zipfile
from collections import defaultdict
from pathlib import Path
sys.path.insert(0, str(Path(sys.argv[1]) / "python"))
from rocm_kpack.artifact_utils import extract_architecture_from_target
from rocm_kpack.binutils import BundledBinary
from rocm_kpack.compression import ZstdCompressor
from rocm_kpack.kpack import PackedKernelArchive
from rocm_kpack.kpack_transform import is_fat_binary, kpack_offload_binary

if sys.argv[2] == "read":
    out = {}
    for pack in sys.argv[3:]:
        archive = PackedKernelArchive.read(Path(pack))
        out[pack] = {f"{b}|{a}": hashlib.sha256(archive.get_kernel(b, a)).hexdigest()
                     for b, arches in archive.toc.items() for a in arches}
    print(json.dumps(out))
    sys.exit(0)

wheel, out, overlay = Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
start = time.monotonic()
root = Path(tempfile.mkdtemp(dir=out))
with zipfile.ZipFile(wheel) as zf:
    zf.extractall(root)
group = "torch"
fat = [p for p in sorted((root / overlay).rglob("*")) if p.is_file() and is_fat_binary(p)]
fat.sort(key=lambda p: -p.stat().st_size)
refs = defaultdict(list)
for path in fat:
    rel = path.relative_to(root / overlay).as_posix()
    index = defaultdict(int)
    with BundledBinary(path).unbundle() as unbundled:
        for target, file_name in unbundled.target_list:
            arch = extract_architecture_from_target(target)
            if arch:
                refs[arch].append((f"{rel}#{index[arch]}", (unbundled.dest_dir / file_name).read_bytes()))
                index[arch] += 1
(out / "kpack").mkdir()
for arch, kernels in refs.items():
    archive = PackedKernelArchive(group_name=group, gfx_arch_family=arch, gfx_arches=[arch],
                                  compressor=ZstdCompressor(compression_level=3))
    for key, data in kernels:
        archive.add_kernel(archive.prepare_kernel(relative_path=key, gfx_arch=arch, hsaco_data=data))
    archive.finalize_archive()
    archive.write(out / "kpack" / f"{group}_{arch}.kpack")
(out / "host").mkdir()
for path in fat:
    rel = path.relative_to(root / overlay).as_posix()
    depth = rel.count("/")
    pattern = "../" * depth + f".kpack/{group}_@GFXARCH@.kpack"
    target = out / "host" / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    kpack_offload_binary(path, target, kpack_search_paths=[pattern], kernel_name=rel)
    shutil.copy2(target, path)
with zipfile.ZipFile(out / "host.whl", "w", zipfile.ZIP_DEFLATED) as zf:
    for p in sorted(root.rglob("*")):
        if p.is_file():
            zf.write(p, p.relative_to(root).as_posix())
for arch in refs:
    with zipfile.ZipFile(out / f"device_{arch}.whl", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(out / "kpack" / f"{group}_{arch}.kpack", f"{overlay}/.kpack/{group}_{arch}.kpack")
shutil.rmtree(root)
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

/// A Python with zstandard and msgpack: the one given, or a venv made once.
fn python() -> PathBuf {
    if let Some(python) = env("ROCKBUILD_BENCH_PYTHON") {
        return PathBuf::from(python);
    }
    let venv = bench_dir().join("venv");
    let python = rockbuild::Platform::host().venv_python(&venv);
    if !python.exists() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
        run(Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--isolated",
            "--quiet",
            "zstandard==0.25.0",
            "msgpack==1.2.4",
        ]));
    }
    python
}

/// The fat wheel: the one given, or one made from hipcc-compiled libraries (cached).
fn fat_wheel() -> PathBuf {
    if let Some(wheel) = env("ROCKBUILD_BENCH_WHEEL") {
        return PathBuf::from(wheel);
    }
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
        .arg(&dir));
    wheel
}

/// The entries of a zip file whose names satisfy `keep`.
fn unzip(path: &Path, keep: impl Fn(&str) -> bool) -> BTreeMap<String, Vec<u8>> {
    let mut zip = zip::ZipArchive::new(fs_err::File::open(path).expect("open")).expect("zip");
    let mut out = BTreeMap::new();
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).expect("entry");
        let name = entry.name().expect("name").to_string();
        if keep(&name) {
            let mut data = Vec::new();
            entry.read_to_end(&mut data).expect("read");
            out.insert(name, data);
        }
    }
    out
}

fn sha256(data: &[u8]) -> String {
    rockbuild::fsutil::sha256_hex(data)
}

fn best(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..runs).map(|_| f()).min().unwrap_or_default()
}

fn main() {
    let Some(kpack_src) = env("ROCKBUILD_KPACK_SRC") else {
        println!("ROCKBUILD_KPACK_SRC is not set: give a checkout of ROCm/rocm-kpack");
        return;
    };
    let runs: usize = env("ROCKBUILD_BENCH_RUNS")
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let python = python();
    let wheel = fat_wheel();
    let spec = SplitSpec {
        device_prefix: "amd-torch-device".into(),
        overlay_root: "torch".into(),
        device_requires: vec!["rocm-sdk-device-@GFXARCH@ == 7.10.0a20251124".into()],
        compression: Compression::Zstd,
    };
    let work = tempfile::tempdir_in(bench_dir()).expect("work dir");

    // rockbuild, on every core and on one.
    let ours = work.path().join("rockbuild");
    let split_once = |threads: usize, dir: &Path| {
        let _ = fs_err::remove_dir_all(dir);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        let start = Instant::now();
        let split = pool
            .install(|| split_wheel(&wheel, dir, &spec))
            .expect("rockbuild split");
        (start.elapsed(), split)
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let ours_all = best(runs, || split_once(cores, &ours).0);
    let ours_one = best(runs, || split_once(1, &ours).0);
    let (_, split) = split_once(cores, &ours);

    // The reference.
    let theirs = work.path().join("reference");
    let mut reference_time = Duration::MAX;
    for _ in 0..runs {
        let _ = fs_err::remove_dir_all(&theirs);
        fs_err::create_dir_all(&theirs).expect("reference dir");
        let start = Instant::now();
        run(Command::new(&python)
            .args(["-c", REFERENCE, &kpack_src])
            .arg(&wheel)
            .arg(&theirs)
            .arg("torch"));
        reference_time = reference_time.min(start.elapsed());
    }

    // Host binaries: byte for byte.
    let host = unzip(&split.host, |n| split.fat_binaries.iter().any(|f| f == n));
    let mut binaries_equal = 0;
    for (name, data) in &host {
        let reference = fs_err::read(theirs.join("host").join(name.trim_start_matches("torch/")))
            .expect("reference binary");
        assert_eq!(
            sha256(data),
            sha256(&reference),
            "{name}: the transformed binaries differ"
        );
        binaries_equal += 1;
    }
    // Packs: tables and code objects, each read by both readers.
    let mut packs_equal = 0;
    let mut objects_equal = 0;
    let (mut our_bytes, mut their_bytes) = (0usize, 0usize);
    let mut our_packs = Vec::new();
    for device in &split.devices {
        for (name, data) in unzip(&device.path, |n| n.ends_with(".kpack")) {
            let file = Path::new(&name).file_name().expect("name").to_owned();
            let reference = fs_err::read(theirs.join("kpack").join(&file)).expect("reference pack");
            let (a, b) = (
                Pack::parse(&data).expect("ours parses"),
                Pack::parse(&reference).expect("theirs parses"),
            );
            assert_eq!(a.toc, b.toc, "{name}: tables of contents differ");
            let toc_bytes = |pack: &[u8]| {
                let at = u64::from_le_bytes(pack[8..16].try_into().expect("8 bytes")) as usize;
                pack[at..].to_vec()
            };
            assert_eq!(
                toc_bytes(&data),
                toc_bytes(&reference),
                "{name}: table bytes"
            );
            let (ours, theirs_objects) = (
                a.code_objects().expect("ours decompress"),
                b.code_objects().expect("theirs decompress"),
            );
            assert_eq!(ours, theirs_objects, "{name}: code objects differ");
            objects_equal += ours.len();
            packs_equal += 1;
            our_bytes += data.len();
            their_bytes += reference.len();
            let path = work.path().join(&file);
            fs_err::write(&path, &data).expect("pack copy");
            our_packs.push((path, ours));
        }
    }
    // rocm-kpack reads rockbuild's packs.
    let read = run(Command::new(&python)
        .args(["-c", REFERENCE, &kpack_src, "read"])
        .args(our_packs.iter().map(|(p, _)| p)));
    let read: serde_json::Value = serde_json::from_str(&read).expect("json");
    for (path, objects) in &our_packs {
        let listed = &read[path.to_string_lossy().as_ref()];
        for ((binary, arch), data) in objects {
            assert_eq!(
                listed[format!("{binary}|{arch}")].as_str(),
                Some(sha256(data).as_str()),
                "rocm-kpack reads {binary} {arch} differently"
            );
        }
    }

    let wheel_mb = fs_err::metadata(&wheel).expect("wheel").len() as f64 / 1e6;
    println!("fat wheel: {} ({wheel_mb:.1} MB)", wheel.display());
    println!(
        "equal: {binaries_equal} host binaries (bytes), {packs_equal} packs (tables, bytes), \
         {objects_equal} code objects (both readers)"
    );
    println!(
        "packs: rockbuild {our_bytes} bytes, reference {their_bytes} bytes ({:.2}x)",
        our_bytes as f64 / their_bytes as f64
    );
    let secs = |d: Duration| d.as_secs_f64();
    println!(
        "reference (rocm-kpack functions, serial): {:.2} s",
        secs(reference_time)
    );
    println!(
        "rockbuild, {cores} threads: {:.2} s ({:.3}x)",
        secs(ours_all),
        secs(ours_all) / secs(reference_time)
    );
    println!(
        "rockbuild, 1 thread: {:.2} s ({:.3}x)",
        secs(ours_one),
        secs(ours_one) / secs(reference_time)
    );
}
