//! Wheel verification and version rewrite on a multi-GB wheel, each next to its baseline run
//! side by side on the same file: `rockbuild verify` vs `sha256sum`; the raw-copy version
//! rewrite vs a plain copy (`cp`) and vs a recompressing rewrite with Python's zipfile (what
//! unpack/repack promotion scripts do). Prints the figures and their ratios for
//! docs/performance.md.
//!
//! `cargo bench --bench wheel`. `ROCKBUILD_BENCH_GB` sets the wheel's compressed size
//! (default 4.5: over 4 GiB, so offsets and the largest entry need ZIP64);
//! `ROCKBUILD_BENCH_RUNS` the runs per measurement (best is kept, default 3). The wheel is
//! generated once (Python's zipfile; every library starts with a real hipcc-compiled ELF
//! file) and cached in the target directory.

// The bench starts its baselines as processes and prints its table on stdout.
#![allow(clippy::disallowed_methods, clippy::print_stdout)]

use rockbuild::wheel;
use std::path::PathBuf;
use std::process::Command;
use std::str::FromStr;
use std::time::{Duration, Instant};

const GENERATE: &str = r#"
import base64, hashlib, random, sys, zipfile
out, hip_lib, gigabytes = sys.argv[1], sys.argv[2], float(sys.argv[3])
version = "2.10.0a0+rocm7.13.0a20260430"
dist_info = f"torch-{version}.dist-info"
rng = random.Random(42)
# 16 symbols: deflate halves it, about what real shared objects compress to.
table = bytes.maketrans(bytes(range(256)), bytes((b % 16) * 17 for b in range(256)))
total = int(gigabytes * 2 * (1 << 30))
libraries = [("torch/lib/libtorch_hip.so", 0.46), ("torch/lib/libtorch_cpu.so", 0.30),
             ("torch/lib/libtorch_python.so", 0.06), ("torch/lib/libc10_hip.so", 0.04),
             ("torch/lib/libc10.so", 0.02), ("torch/lib/libaotriton_v2.so", 0.08)]
record = []
def add(zf, name, chunks, big=False):
    digest, size = hashlib.sha256(), 0
    info = zipfile.ZipInfo(name, date_time=(2026, 4, 30, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o100644 << 16
    # Streaming an entry of unknown size past 2 GiB needs ZIP64 headers up front.
    with zf.open(info, "w", force_zip64=big) as f:
        for chunk in chunks:
            digest.update(chunk); size += len(chunk); f.write(chunk)
    record.append(f"{name},sha256={base64.urlsafe_b64encode(digest.digest()).rstrip(b'=').decode()},{size}")
def blob(n, head=b""):
    yield head
    n -= len(head)
    while n > 0:
        step = min(n, 8 << 20)
        yield rng.randbytes(step).translate(table)
        n -= step
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
    for i in range(3000):
        text = "".join(f"def f{i}_{j}(x):\n    return x * {j} + {rng.random()}\n" for j in range(120)).encode()
        add(zf, f"torch/module{i // 100}/file{i}.py", [text])
    head = open(hip_lib, "rb").read()
    for name, share in libraries:
        # Every library starts as a real ELF file (with a .hip_fatbin), padded to size.
        add(zf, name, blob(int(total * share), head), big=True)
    add(zf, f"{dist_info}/METADATA", [f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\nRequires-Dist: filelock\n".encode()])
    add(zf, f"{dist_info}/WHEEL", [b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n"])
    zf.writestr(f"{dist_info}/RECORD", "\n".join(record + [f"{dist_info}/RECORD,,"]) + "\n")
"#;

/// What unpack/repack promotion does: inflate every entry, deflate it again (zlib's default
/// level), renaming the .dist-info and rewriting METADATA and RECORD on the way.
const RECOMPRESS: &str = r#"
import shutil, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
old, new = "torch-2.10.0a0+rocm7.13.0a20260430", "torch-2.10.0+rocm7.13.0a20260430"
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
    for info in zin.infolist():
        name = info.filename.replace(f"{old}.dist-info/", f"{new}.dist-info/")
        target = zipfile.ZipInfo(name, date_time=info.date_time)
        target.compress_type = zipfile.ZIP_DEFLATED
        target.external_attr = info.external_attr
        if name.endswith((".dist-info/METADATA", ".dist-info/RECORD")):
            text = zin.read(info).decode().replace("2.10.0a0+rocm7.13.0a20260430", "2.10.0+rocm7.13.0a20260430")
            zout.writestr(target, text)
            continue
        with zin.open(info) as r, zout.open(target, "w", force_zip64=True) as w:
            shutil.copyfileobj(r, w, 8 << 20)
"#;

fn target_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-wheel")
}

#[track_caller]
fn run(command: &mut Command) {
    let output = command.output().expect("spawn");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn best_of(runs: usize, mut f: impl FnMut() -> Duration) -> Duration {
    (0..runs).map(|_| f()).min().unwrap_or_default()
}

fn timed(f: impl FnOnce()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

fn wheel(gigabytes: f64) -> PathBuf {
    let dir = target_dir();
    std::fs::create_dir_all(&dir).expect("bench dir");
    let path = dir.join(format!(
        "{gigabytes}GB/torch-2.10.0a0+rocm7.13.0a20260430-cp311-cp311-linux_x86_64.whl"
    ));
    if path.exists() {
        return path;
    }
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
    let source = dir.join("kernel.hip");
    std::fs::write(
        &source,
        "#include <hip/hip_runtime.h>\n__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n\
         extern \"C\" void launch(float* x) { hipLaunchKernelGGL(k, dim3(1), dim3(64), 0, 0, x); }\n",
    )
    .expect("source");
    let library = dir.join("libkernel.so");
    run(Command::new("/usr/bin/hipcc")
        .env("ROCM_PATH", "/usr")
        .args([
            "--offload-arch=gfx906",
            "--offload-arch=gfx1030",
            "-fPIC",
            "-shared",
            "-o",
        ])
        .arg(&library)
        .arg(&source));
    eprintln!(
        "generating a {gigabytes} GB wheel (once; cached in {})",
        dir.display()
    );
    let partial = path.with_extension("partial");
    run(Command::new("python3")
        .arg("-c")
        .arg(GENERATE)
        .arg(&partial)
        .arg(&library)
        .arg(gigabytes.to_string()));
    std::fs::rename(&partial, &path).expect("publish");
    path
}

fn main() {
    let gigabytes: f64 = std::env::var("ROCKBUILD_BENCH_GB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4.5);
    let runs: usize = std::env::var("ROCKBUILD_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let wheel = wheel(gigabytes);
    let size = std::fs::metadata(&wheel).expect("stat").len();
    let scratch = target_dir().join("out");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("scratch");
    // Warm the page cache so every contender reads from memory alike.
    run(Command::new("cat")
        .arg(&wheel)
        .stdout(std::process::Stdio::null()));

    let rockbuild = env!("CARGO_BIN_EXE_rockbuild");
    let sha256sum = best_of(runs, || {
        timed(|| {
            run(Command::new("sha256sum")
                .arg(&wheel)
                .stdout(std::process::Stdio::null()))
        })
    });
    let verify = best_of(runs, || {
        timed(|| {
            run(Command::new(rockbuild)
                .args(["--quiet", "verify", "--targets", "gfx906,gfx1030"])
                .arg(&wheel)
                .env("NO_COLOR", "1"))
        })
    });

    let copy_target = scratch.join("copy.whl");
    let copy = best_of(runs, || {
        let _ = std::fs::remove_file(&copy_target);
        timed(|| run(Command::new("cp").arg(&wheel).arg(&copy_target)))
    });
    let _ = std::fs::remove_file(&copy_target);
    let new_version = pep440_rs::Version::from_str("2.10.0+rocm7.13.0a20260430").expect("version");
    let released = scratch.join("released");
    let mut rewritten = None;
    let rewrite = best_of(runs, || {
        let _ = std::fs::remove_dir_all(&released);
        timed(|| {
            rewritten = Some(
                wheel::rewrite::rewrite_version(
                    &wheel,
                    &new_version,
                    &wheel::rewrite::VersionMap::default(),
                    &released,
                )
                .expect("rewrite"),
            );
        })
    });
    let rewritten = rewritten.expect("rewritten");
    // The result must pass the same strict verification.
    run(Command::new(rockbuild)
        .args(["--quiet", "verify", "--targets", "gfx906,gfx1030"])
        .arg(&rewritten.path));
    let recompressed = scratch.join("recompressed.whl");
    // One run: it takes minutes.
    let recompress = timed(|| {
        run(Command::new("python3")
            .arg("-c")
            .arg(RECOMPRESS)
            .arg(&wheel)
            .arg(&recompressed))
    });
    let _ = std::fs::remove_file(&recompressed);

    let gib = size as f64 / (1u64 << 30) as f64;
    let rate = |d: Duration| gib / d.as_secs_f64();
    println!(
        "wheel: {} ({gib:.2} GiB, {} entries raw-copied)",
        wheel.display(),
        rewritten.raw_copied
    );
    println!("| measurement | time | throughput | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| `sha256sum` (baseline) | {:.2} s | {:.2} GiB/s | 1.00 |",
        sha256sum.as_secs_f64(),
        rate(sha256sum)
    );
    println!(
        "| `rockbuild verify --targets gfx906,gfx1030` | {:.2} s | {:.2} GiB/s | {:.2} × sha256sum |",
        verify.as_secs_f64(),
        rate(verify),
        verify.as_secs_f64() / sha256sum.as_secs_f64()
    );
    println!(
        "| `cp` (baseline) | {:.2} s | {:.2} GiB/s | 1.00 |",
        copy.as_secs_f64(),
        rate(copy)
    );
    println!(
        "| raw-copy version rewrite | {:.2} s | {:.2} GiB/s | {:.2} × cp |",
        rewrite.as_secs_f64(),
        rate(rewrite),
        rewrite.as_secs_f64() / copy.as_secs_f64()
    );
    println!(
        "| recompressing rewrite (Python zipfile) | {:.2} s | {:.2} GiB/s | {:.2} × cp; raw-copy rewrite is {:.0}× faster |",
        recompress.as_secs_f64(),
        rate(recompress),
        recompress.as_secs_f64() / copy.as_secs_f64(),
        recompress.as_secs_f64() / rewrite.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&scratch);
}
