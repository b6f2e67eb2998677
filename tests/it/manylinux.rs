//! The platform tag policy on real ELF libraries compiled here (glibc 2.36 assigns
//! `pthread_create` the version GLIBC_2.34, `memcpy` GLIBC_2.14): `verify` and `stage` refuse
//! `linux_x86_64` unless told it is a local build, a manylinux tag must cover what the
//! libraries need, and `retag` gives a fitting wheel its manylinux tag, all or nothing.

use std::path::{Path, PathBuf};

use crate::common::wheels::{WheelBuilder, c_library};
use crate::common::{TestEnv, run_ok};

/// Needs at most GLIBC_2.14 (memcpy): fits manylinux_2_28.
const OLD_GLIBC: &str =
    "#include <string.h>\nvoid copy(char *d, const char *s, size_t n) { memcpy(d, s, n); }\n";
/// Needs GLIBC_2.34 (pthread_create moved into libc): does not fit manylinux_2_28.
const NEW_GLIBC: &str = "#include <pthread.h>\nstatic void *run(void *a) { return a; }\nint start(void) { pthread_t t; return pthread_create(&t, 0, run, 0); }\n";

fn wheel(dir: &Path, name: &str, tag: &str, library: Option<&str>) -> PathBuf {
    let mut builder = WheelBuilder::new(name, "1.0").tag(tag);
    if let Some(source) = library {
        builder = builder.file_from(&format!("{name}/_native.so"), &c_library(source));
    }
    builder.build(dir)
}

fn listing(dir: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    files
}

/// `in 0.1s` → `in [T]s`: timings vary from run to run.
fn mask_seconds(text: &str) -> String {
    text.lines()
        .map(|line| match line.rsplit_once(" in ") {
            Some((head, tail))
                if tail.ends_with('s') && tail[..tail.len() - 1].parse::<f64>().is_ok() =>
            {
                format!("{head} in [T]s")
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + if text.ends_with('\n') { "\n" } else { "" }
}

/// Runs rockbuild, expecting `code`; returns stdout and stderr with the temp dir masked.
#[track_caller]
fn rockbuild(env: &TestEnv, args: &[&str], code: i32) -> (String, String) {
    let output = env.rockbuild().args(args).assert().code(code);
    let output = output.get_output();
    let root = env.root().to_str().expect("utf-8");
    let mask = |bytes: &[u8]| mask_seconds(&String::from_utf8_lossy(bytes).replace(root, "[TMP]"));
    (mask(&output.stdout), mask(&output.stderr))
}

#[test]
fn release_staging_refuses_linux_tags_and_retag_fixes_them() {
    let mut env = TestEnv::new();
    env.set("ROCKBUILD_ALLOW_LINUX_TAG", "false");
    let out = env.path("out");
    wheel(&out, "oldlib", "cp311-cp311-linux_x86_64", Some(OLD_GLIBC));
    wheel(&out, "newlib", "cp311-cp311-linux_x86_64", Some(NEW_GLIBC));
    wheel(&out, "purelib", "py3-none-any", None);
    let before = listing(&out);

    let (_, verify) = rockbuild(&env, &["verify", "out"], 5);
    let (_, stage) = rockbuild(&env, &["stage", "--input", "out", "--to", "staging"], 5);
    assert!(!env.path("staging").exists(), "nothing staged");
    let (plan, _) = rockbuild(
        &env,
        &[
            "retag",
            "out",
            "--platform",
            "manylinux_2_28_x86_64",
            "--dry-run",
        ],
        5,
    );
    let (_, refused) = rockbuild(
        &env,
        &["retag", "out", "--platform", "manylinux_2_28_x86_64"],
        5,
    );
    assert_eq!(listing(&out), before, "a refusal changes no wheel");
    insta::assert_snapshot!(format!(
        "$ rockbuild verify out\n{verify}\n$ rockbuild stage --input out --to staging\n{stage}\n\
         $ rockbuild retag out --platform manylinux_2_28_x86_64 --dry-run\n{plan}\n\
         $ rockbuild retag out --platform manylinux_2_28_x86_64\n{refused}"
    ));

    // Without the library that needs glibc 2.34, the set is retagged and passes as released.
    std::fs::remove_file(out.join(&before[0])).expect("remove newlib");
    let (_, retagged) = rockbuild(
        &env,
        &["retag", "out", "--platform", "manylinux_2_28_x86_64"],
        0,
    );
    assert_eq!(
        listing(&out),
        [
            "oldlib-1.0-cp311-cp311-manylinux_2_28_x86_64.whl",
            "purelib-1.0-py3-none-any.whl"
        ]
    );
    insta::assert_snapshot!(retagged, @r"
    retag to manylinux_2_28_x86_64
      retag   oldlib-1.0-cp311-cp311-linux_x86_64.whl -> oldlib-1.0-cp311-cp311-manylinux_2_28_x86_64.whl (needs glibc 2.14)
      keep    purelib-1.0-py3-none-any.whl (platform tag any is not linux_<arch>)
    retagged 1 wheel to manylinux_2_28_x86_64
    ");
    rockbuild(&env, &["verify", "out"], 0);
    rockbuild(&env, &["stage", "--input", "out", "--to", "staging"], 0);
    // pip takes the retagged wheel as what its name says (RECORD and WHEEL agree with it).
    let retagged = out.join("oldlib-1.0-cp311-cp311-manylinux_2_28_x86_64.whl");
    run_ok(
        env.command("python3")
            .args([
                "-m",
                "pip",
                "install",
                "--isolated",
                "--no-index",
                "--quiet",
                "--target",
            ])
            .arg(env.path("site"))
            .arg(&retagged),
    );
    let wheel_file = std::fs::read_to_string(env.path("site/oldlib-1.0.dist-info/WHEEL"))
        .expect("installed WHEEL");
    assert!(
        wheel_file
            .lines()
            .any(|l| l == "Tag: cp311-cp311-manylinux_2_28_x86_64"),
        "{wheel_file}"
    );
}

/// A manylinux tag that claims an older glibc than a library needs is refused whatever the
/// linux-tag policy; `--allow-linux-tag` lets a local build through.
#[test]
fn a_manylinux_tag_must_cover_the_glibc_its_libraries_need() {
    let mut env = TestEnv::new();
    let out = env.path("out");
    wheel(
        &out,
        "newlib",
        "cp311-cp311-manylinux_2_28_x86_64",
        Some(NEW_GLIBC),
    );
    wheel(
        &out,
        "locallib",
        "cp311-cp311-linux_x86_64",
        Some(NEW_GLIBC),
    );
    let (_, allowed) = rockbuild(&env, &["verify", "out", "--allow-linux-tag"], 5);
    env.set("ROCKBUILD_ALLOW_LINUX_TAG", "false");
    let (_, strict) = rockbuild(&env, &["verify", "out"], 5);
    insta::assert_snapshot!(format!(
        "$ rockbuild verify out --allow-linux-tag\n{allowed}\n$ rockbuild verify out\n{strict}"
    ));
}
