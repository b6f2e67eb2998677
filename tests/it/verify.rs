//! `rockbuild verify` on real wheels: a good set (with a real HIP library compiled by hipcc and
//! a pin resolved through a PEP 503 index served over HTTP) passes; each wheel of a corpus of
//! broken ones fails with a precise message and exit 5; real PyPI wheels pass.

use std::path::{Path, PathBuf};

use crate::common::snapshot;
use crate::common::wheels::{
    HttpServer, WheelBuilder, cpu_library, hip_library, truncate, write_simple_index,
};
use crate::common::{TestEnv, wheelhouse};

const TORCH: &str = "2.10.0a0+rocm7.13.0a20260430";
const TRITON: &str = "3.5.0+git1a2b3c4d";
const VISION: &str = "0.25.0a0+rocm7.13.0a20260430";
const SDK: &str = "7.13.0a20260430";

fn torch(targets: &[&str]) -> WheelBuilder {
    WheelBuilder::new("torch", TORCH)
        .file_from("torch/lib/libtorch_hip.so", &hip_library(targets))
        .file(
            "torch/version.py",
            format!("__version__ = '{TORCH}'\nhip = '5.2'\n"),
        )
        .requires("filelock")
        .requires(&format!("triton=={TRITON}"))
        .requires(&format!("rocm[libraries]=={SDK}"))
}

fn triton() -> WheelBuilder {
    WheelBuilder::new("triton", TRITON).file(
        "triton/_C/libtriton.so",
        std::fs::read(cpu_library(Some("$ORIGIN/../lib"))).expect("lib"),
    )
}

fn vision() -> WheelBuilder {
    WheelBuilder::new("torchvision", VISION)
        .file_from("torchvision/_C.so", &hip_library(&["gfx906", "gfx1030"]))
        .requires(&format!("torch=={TORCH}"))
}

/// The ROCm SDK meta package on a PEP 503 index served over HTTP.
fn sdk_index(env: &TestEnv) -> HttpServer {
    let staging = env.path("sdk-wheels");
    let rocm = WheelBuilder::new("rocm", SDK)
        .tag("py3-none-any")
        .provides_extra("libraries")
        .build(&staging);
    let root = env.path("index");
    write_simple_index(&root, "rocm", &[rocm]);
    HttpServer::serve(&root)
}

fn good_set(dir: &Path) -> Vec<PathBuf> {
    vec![
        torch(&["gfx906", "gfx1030"]).build(dir),
        triton().build(dir),
        vision().build(dir),
    ]
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_good_set_passes_and_its_json_report_is_complete() {
    let env = TestEnv::new();
    let dist = env.path("dist");
    let wheels = good_set(&dist);
    let server = sdk_index(&env);
    let output = env
        .rockbuild()
        .args([
            "verify",
            "dist",
            "--targets",
            "gfx906,gfx1030",
            "--json",
            "--index-url",
        ])
        .arg(format!("{}/", server.url))
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    snapshot::settings(&env)
        .bind(|| insta::assert_snapshot!("verify_good_set_stderr", stderr(&output)));

    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("stdout is JSON");
    assert_eq!(report["ok"], true);
    assert_eq!(report["problem_count"], 0);
    assert_eq!(report["targets"], serde_json::json!(["gfx906", "gfx1030"]));
    assert_eq!(report["index_url"], format!("{}/", server.url));
    let listed = report["wheels"].as_array().expect("wheels");
    assert_eq!(listed.len(), 3);
    for wheel in &wheels {
        let file = wheel
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let entry = listed
            .iter()
            .find(|w| w["file"] == file.as_str())
            .unwrap_or_else(|| panic!("{file} missing"));
        let bytes = std::fs::read(wheel).expect("read");
        assert_eq!(
            entry["sha256"],
            hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes))
        );
        assert_eq!(entry["size"], bytes.len());
        assert_eq!(entry["problems"], serde_json::json!([]));
    }
    let torch = listed.iter().find(|w| w["name"] == "torch").expect("torch");
    assert_eq!(torch["version"], TORCH);
    assert_eq!(torch["metadata"]["requires_python"], ">=3.9");
    assert_eq!(
        torch["metadata"]["requires_dist"][1]["raw"],
        format!("triton=={TRITON}")
    );
    let library = &torch["libraries"][0];
    assert_eq!(library["entry"], "torch/lib/libtorch_hip.so");
    assert_eq!(library["targets"], serde_json::json!(["gfx1030", "gfx906"]));
    assert_eq!(library["bundles"], 1);
    assert!(
        library["needed"]
            .as_array()
            .expect("needed")
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.starts_with("libamdhip64.so")))
    );
    let triton = listed
        .iter()
        .find(|w| w["name"] == "triton")
        .expect("triton");
    assert_eq!(
        triton["libraries"][0]["runpath"],
        serde_json::json!(["$ORIGIN/../lib"])
    );
}

/// One broken wheel next to the good ones: verify fails with exit 5 and names the problem.
#[track_caller]
fn assert_fails(env: &TestEnv, extra_args: &[&str], expected: &[&str]) -> String {
    let output = env
        .rockbuild()
        .arg("verify")
        .arg("dist")
        .args(extra_args)
        .output()
        .expect("runs");
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(5), "{text}");
    for needle in expected {
        assert!(text.contains(needle), "stderr lacks {needle:?}:\n{text}");
    }
    text
}

#[test]
fn each_broken_wheel_fails_with_a_precise_message() {
    use crate::common::wheels::record_hash;
    // (the snapshot, the project whose good wheel it replaces, how to build it)
    type Case = (&'static str, &'static str, fn(&Path) -> PathBuf);
    let cases: Vec<Case> = vec![
        ("zip-slip entry", "triton", |dist| {
            triton().unlisted("../../evil.pth", "import os").build(dist)
        }),
        ("RECORD hash mismatch", "triton", |dist| {
            triton()
                .file("triton/language.py", "x = 1\n")
                .edit_record(|r| r.replace(&record_hash(b"x = 1\n"), &record_hash(b"x = 2\n")))
                .build(dist)
        }),
        ("missing RECORD line", "triton", |dist| {
            triton()
                .file("triton/language.py", "x = 1\n")
                .edit_record(|r| {
                    r.lines()
                        .filter(|l| !l.starts_with("triton/language.py,"))
                        .map(|l| format!("{l}\n"))
                        .collect()
                })
                .build(dist)
        }),
        ("wrong version in the file name", "triton", |dist| {
            triton().file_name_version("3.6.0").build(dist)
        }),
        ("truncated archive", "triton", |dist| {
            let path = triton().build(dist);
            let len = std::fs::metadata(&path).expect("stat").len();
            truncate(&path, len / 2);
            path
        }),
        (
            "a library missing a requested gfx target",
            "torchvision",
            |dist| {
                WheelBuilder::new("torchvision", VISION)
                    .file_from("torchvision/_C.so", &hip_library(&["gfx906"]))
                    .requires(&format!("torch=={TORCH}"))
                    .build(dist)
            },
        ),
        ("a torch library without libamdhip64", "torch", |dist| {
            WheelBuilder::new("torch", TORCH)
                .file_from("torch/lib/libtorch_cpu.so", &cpu_library(None))
                .requires(&format!("triton=={TRITON}"))
                .build(dist)
        }),
        ("an absolute RPATH", "triton", |dist| {
            WheelBuilder::new("triton", TRITON)
                .file_from(
                    "triton/_C/libtriton.so",
                    &cpu_library(Some("/home/runner/work/venv/lib:$ORIGIN")),
                )
                .build(dist)
        }),
        (
            "a Requires-Dist pin not in the set",
            "torchvision",
            |dist| {
                WheelBuilder::new("torchvision", VISION)
                    .file_from("torchvision/_C.so", &hip_library(&["gfx906", "gfx1030"]))
                    .requires("torch==2.9.0+rocm7.12.0")
                    .build(dist)
            },
        ),
    ];
    for (what, replaces, make) in cases {
        let env = TestEnv::new();
        let dist = env.path("dist");
        make(&dist);
        // The rest of a consistent set, so the broken wheel is the only thing wrong.
        for (project, builder) in [
            ("torch", torch(&["gfx906", "gfx1030"])),
            ("triton", triton()),
            ("torchvision", vision()),
        ] {
            if project != replaces {
                builder.build(&dist);
            }
        }
        // torch pins rocm[libraries], which the set does not carry: the index serves it.
        let server = sdk_index(&env);
        let index = format!("{}/", server.url);
        let text = assert_fails(
            &env,
            &["--targets", "gfx906,gfx1030", "--index-url", &index],
            &[],
        );
        assert_eq!(
            text.matches("  FAIL  ").count(),
            1,
            "{what}: only the broken wheel fails:\n{text}"
        );
        let name = format!("broken_{}", what.replace([' ', '-'], "_"));
        snapshot::settings(&env).bind(|| insta::assert_snapshot!(name, text));

        // Nor can the set be staged: nothing is uploaded and the index stays as it was.
        let staged = env.path("staged");
        std::fs::create_dir_all(&staged).expect("staged");
        env.rockbuild().arg("index").arg(&staged).assert().success();
        let before = files_with_bytes(&staged);
        let output = env
            .rockbuild()
            .args(["stage", "--input", "dist", "--to", "staged"])
            .args(["--targets", "gfx906,gfx1030", "--index-url", &index])
            .output()
            .expect("runs");
        let stage_text = stderr(&output);
        assert_eq!(output.status.code(), Some(5), "{what}: {stage_text}");
        assert_eq!(
            report_lines(&stage_text),
            report_lines(&text),
            "{what}: stage shows the report verify shows"
        );
        assert!(
            stage_text.ends_with(&format!(
                "error: 1 of 3 wheels in {} failed verification (above); nothing was uploaded to {}\n",
                dist.display(),
                staged.display()
            )),
            "{what}: {stage_text}"
        );
        assert_eq!(
            files_with_bytes(&staged),
            before,
            "{what}: the store is unchanged"
        );
    }
}

/// The report of a verification as stderr shows it (no progress lines).
fn report_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| {
            l.starts_with("  ok  ")
                || l.starts_with("  FAIL  ")
                || l.starts_with("        ")
                || l.starts_with("verify: ")
        })
        .collect()
}

/// Every file under `root` with its bytes.
fn files_with_bytes(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = walkdir::WalkDir::new(root)
        .into_iter()
        .map(|e| e.expect("walk"))
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let bytes = std::fs::read(e.path()).expect("read");
            (e.into_path(), bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn one_run_reports_every_problem_of_every_wheel() {
    let env = TestEnv::new();
    let dist = env.path("dist");
    triton()
        .unlisted("/etc/evil", "x")
        .file_name_version("3.6.0")
        .build(&dist);
    WheelBuilder::new("torch", TORCH)
        .file_from(
            "torch/lib/libtorch_cpu.so",
            &cpu_library(Some("/opt/build/lib")),
        )
        .requires(&format!("triton=={TRITON}"))
        .requires(&format!("rocm[libraries]=={SDK}"))
        .build(&dist);
    let output = env
        .rockbuild()
        .args(["verify", "dist", "--json"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    // Every problem of both wheels, on stderr and in the JSON report. torch pins triton
    // 3.5.0; the set's triton says 3.6.0 in its file name but 3.5.0 in its metadata:
    // resolution goes by the metadata, so the mismatch is reported on triton alone.
    let settings = snapshot::settings(&env);
    settings.bind(|| {
        insta::assert_snapshot!("verify_failing_set_stderr", stderr(&output));
        insta::assert_snapshot!(
            "verify_failing_set_json",
            String::from_utf8_lossy(&output.stdout)
        );
    });
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(
        report["problem_count"].as_u64(),
        Some(
            report["wheels"]
                .as_array()
                .expect("w")
                .iter()
                .map(|w| w["problems"].as_array().expect("p").len() as u64)
                .sum()
        )
    );
}

#[test]
fn a_pin_missing_from_the_index_names_the_index_and_what_it_has() {
    let env = TestEnv::new();
    let dist = env.path("dist");
    WheelBuilder::new("torch", TORCH)
        .file_from(
            "torch/lib/libtorch_hip.so",
            &hip_library(&["gfx906", "gfx1030"]),
        )
        .requires("rocm[libraries]==7.14.0")
        .requires("rocm-sdk-core==7.13.0a20260430")
        .build(&dist);
    let server = sdk_index(&env);
    let url = format!("{}/", server.url);
    assert_fails(
        &env,
        &["--index-url", &url],
        &[
            &format!(
                "Requires-Dist 'rocm[libraries]==7.14.0' does not resolve: the set has no rocm wheel, and the index {}/rocm/ has only 7.13.0a20260430",
                server.url
            ),
            &format!(
                "Requires-Dist 'rocm-sdk-core==7.13.0a20260430' does not resolve: the set has no rocm-sdk-core wheel, and the index {}/rocm-sdk-core/ has no files for it",
                server.url
            ),
        ],
    );
}

#[test]
fn a_missing_extra_is_a_problem_pip_would_only_warn_about() {
    let env = TestEnv::new();
    let dist = env.path("dist");
    WheelBuilder::new("rocm", SDK)
        .tag("py3-none-any")
        .build(&dist);
    WheelBuilder::new("torch", TORCH)
        .file_from(
            "torch/lib/libtorch_hip.so",
            &hip_library(&["gfx906", "gfx1030"]),
        )
        .requires(&format!("rocm[libraries]=={SDK}"))
        .build(&dist);
    assert_fails(
        &env,
        &[],
        &[
            "Requires-Dist 'rocm[libraries]==7.13.0a20260430' asks for extra 'libraries' but rocm-7.13.0a20260430-py3-none-any.whl does not provide it",
        ],
    );
}

#[test]
fn the_lock_build_record_sets_versions_and_targets() {
    let env = TestEnv::new();
    let dist = env.path("dist");
    torch(&["gfx906"]).build(&dist);
    triton().build(&dist);
    let lock = serde_json::json!({
        "schema": 1,
        "generated_by": "rockbuild test",
        "stack": "configs/stack.yaml",
        "projects": {},
        "build": {
            "sdk_version": SDK,
            "targets": ["gfx906", "gfx1030"],
            "release_type": "nightly",
            "version_suffix": "+rocm7.13.0a20260430",
            "versions": {"torch": TORCH, "triton": "3.5.0+git9999999", "vision": VISION}
        }
    });
    std::fs::write(
        env.path("rockbuild.lock.json"),
        serde_json::to_string_pretty(&lock).expect("json"),
    )
    .expect("write lock");
    let server = sdk_index(&env);
    let url = format!("{}/", server.url);
    assert_fails(
        &env,
        &["--lock", "rockbuild.lock.json", "--index-url", &url],
        &[
            "GPU library 'torch/lib/libtorch_hip.so' has no code for requested target gfx1030 (its offload bundles carry: gfx906)",
            "the lock's build record expects triton 3.5.0+git9999999, this wheel is 3.5.0+git1a2b3c4d",
            "set: the lock's build record lists project 'vision' (torchvision 0.25.0a0+rocm7.13.0a20260430) but the set has no torchvision wheel",
        ],
    );
}

/// As the quickstart leaves it: a lock whose build record names the SDK's index, served by a
/// server that has stopped since. Verification needs the network only when asked: with the
/// lock alone it passes with a warning; `--index-url` makes the index required.
#[test]
fn a_lock_whose_index_is_gone_verifies_offline_unless_the_index_is_asked_for() {
    let env = TestEnv::new();
    good_set(&env.path("dist"));
    let server = sdk_index(&env);
    let url = format!("{}/", server.url);
    let lock = serde_json::json!({
        "schema": 1,
        "generated_by": "rockbuild test",
        "stack": "configs/stack.yaml",
        "projects": {},
        "build": {
            "sdk_version": SDK,
            "index_url": url,
            "targets": ["gfx906", "gfx1030"],
        }
    });
    std::fs::write(
        env.path("rockbuild.lock.json"),
        serde_json::to_string_pretty(&lock).expect("json"),
    )
    .expect("write lock");
    let verify = |extra: &[&str]| {
        env.rockbuild()
            .args(["verify", "dist", "--lock", "rockbuild.lock.json"])
            .args(extra)
            .output()
            .expect("runs")
    };
    let online = verify(&[]);
    assert_eq!(online.status.code(), Some(0), "{}", stderr(&online));
    assert!(
        !stderr(&online).contains("cannot be read"),
        "{}",
        stderr(&online)
    );
    drop(server);

    let offline = verify(&[]);
    let said = stderr(&offline);
    assert_eq!(offline.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "warning: the SDK's index the lock names, {url}, cannot be read ("
        )) && said.contains("pass --index-url to require it"),
        "{said}"
    );
    let asked = verify(&["--index-url", &url]);
    assert_ne!(asked.status.code(), Some(0), "{}", stderr(&asked));
    assert!(stderr(&asked).contains(&url), "{}", stderr(&asked));
}

#[test]
fn nothing_to_verify_and_bad_targets_are_errors() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.path("empty")).expect("mkdir");
    triton().build(&env.path("dist"));
    // An empty build output is a failed verification; a wrong path or target a usage error.
    let mut text = String::new();
    for (args, code) in [
        (&["verify", "empty"][..], 5),
        (&["verify", "missing-dir"][..], 2),
        (&["verify", "dist", "--targets", "gfx94x"][..], 2),
    ] {
        let output = env.rockbuild().args(args).output().expect("runs");
        assert_eq!(output.status.code(), Some(code), "{}", stderr(&output));
        text.push_str(&format!(
            "$ rockbuild {}\n{}",
            args.join(" "),
            stderr(&output)
        ));
    }
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("verify_usage_errors", text));
}

#[test]
fn real_pypi_wheels_pass() {
    let env = TestEnv::new();
    let output = env
        .rockbuild()
        .arg("verify")
        .arg(wheelhouse())
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("ok    pip-23.2.1-py3-none-any.whl"),
        "{}",
        stderr(&output)
    );
}

const ZIP64_SCRIPT: &str = r#"
import base64, hashlib, random, sys, zipfile, struct
# Force ZIP64 records and extra fields on a small archive: what >4 GiB wheels look like.
zipfile.ZIP64_LIMIT = 1024
out, mode = sys.argv[1], sys.argv[2]
files = {"big/data.bin": random.Random(1).randbytes(20000), "big/__init__.py": b"", "big-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: big\nVersion: 1.0\n", "big-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
record = "".join(f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}\n" for n, d in files.items()) + "big-1.0.dist-info/RECORD,,\n"
files["big-1.0.dist-info/RECORD"] = record.encode()
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for name, data in files.items():
        info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        if mode == "wheel692" and name == "big/__init__.py":
            # pypa/wheel#692: a ZIP64 field holding an offset while the sizes need none.
            info.extra = struct.pack("<HHQ", 1, 8, 0x854347cf)
        z.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
"#;

#[test]
fn zip64_wheels_pass_and_the_wheel_692_defect_is_caught() {
    let env = TestEnv::new();
    let script = env.path("make.py");
    std::fs::write(&script, ZIP64_SCRIPT).expect("script");
    let dist = env.path("dist");
    std::fs::create_dir_all(&dist).expect("dist");
    crate::common::run_ok(
        env.command("python3")
            .arg(&script)
            .arg(dist.join("big-1.0-py3-none-any.whl"))
            .arg("zip64"),
    );
    let output = env
        .rockbuild()
        .args(["verify", "dist", "--json"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(report["wheels"][0]["zip64"], true);

    let bad = env.path("bad");
    std::fs::create_dir_all(&bad).expect("bad");
    crate::common::run_ok(
        env.command("python3")
            .arg(&script)
            .arg(bad.join("big-1.0-py3-none-any.whl"))
            .arg("wheel692"),
    );
    let output = env
        .rockbuild()
        .args(["verify", "bad"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(5), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("zip entry 'big/__init__.py': the ZIP64 extra field in the local header is too long: it holds 8 bytes but the header's 0xFFFFFFFF sentinels call for 0 (uv refuses such archives; pypa/wheel#692)"),
        "{}",
        stderr(&output)
    );
}

/// What each project's build recipe expects of its wheel: torchvision is built against torch
/// (its recipe pins it), so with torch in the set it must require exactly that torch; a
/// looser requirement, or none, would let pip pair it with another torch (pain point D20).
#[test]
fn a_wheel_built_against_another_of_the_set_must_pin_it_exactly() {
    let env = TestEnv::new();
    let dist = env.path("dist");
    torch(&["gfx906", "gfx1030"]).build(&dist);
    triton().build(&dist);
    WheelBuilder::new("torchvision", VISION)
        .file_from("torchvision/_C.so", &hip_library(&["gfx906", "gfx1030"]))
        .requires("torch>=2.9")
        .build(&dist);
    let server = sdk_index(&env);
    let text = assert_fails(&env, &["--index-url", &format!("{}/", server.url)], &[]);
    // Everything but the lines with the time it took and the size (the compiler's).
    let report: Vec<&str> = text
        .lines()
        .filter(|l| !l.ends_with('s') && !l.contains("KiB"))
        .collect();
    insta::assert_snapshot!(report.join("\n"));
}
