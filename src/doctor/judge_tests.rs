//! Verdicts on facts built in memory: each check's pass, warn and fail, and its advice.

use std::path::PathBuf;

use super::*;
use crate::doctor::disk::FsFacts;
use crate::doctor::inspect::{CommitFacts, CompileFacts, HipccFacts, IndexFacts, VenvFacts};

const GIB: u64 = 1 << 30;

fn location(role: Role, path: &str, device: u64, available: u64) -> Location {
    Location {
        role,
        path: PathBuf::from(path),
        fs: Ok(FsFacts {
            existing: PathBuf::from(path),
            device,
            available,
            name_max: 255,
        }),
        writable: Ok(()),
        longest_name: None,
    }
}

/// A healthy machine: every check passes.
fn healthy() -> (Facts, Expectations) {
    let facts = Facts {
        git: Ok("git version 2.47.3".into()),
        python: Ok("Python 3.11.7".into()),
        venv: VenvFacts {
            dir: PathBuf::from("/w/venv"),
            exists: true,
            python: Some(Ok("Python 3.11.7".into())),
            rocm: Some("7.10.0a20251124".into()),
        },
        hipcc: HipccFacts {
            hipcc: Some(PathBuf::from(
                "/w/venv/lib/python3.11/site-packages/_rocm_sdk_devel/bin/hipcc",
            )),
            searched: "the SDK in /w/venv".into(),
            device_libs: Some(PathBuf::from("/sdk/lib/llvm/amdgcn/bitcode")),
            device_libs_searched: vec![PathBuf::from("/sdk/lib/llvm/amdgcn/bitcode")],
            missing_bitcode: vec![],
            compile: Some(CompileFacts {
                targets: vec!["gfx906".into(), "gfx1030".into()],
                failed_targets: vec![],
                tail: vec![],
            }),
        },
        ccache: Ok("ccache version 4.7.5".into()),
        sccache: Err("`sccache` not found in PATH".into()),
        locations: vec![
            location(Role::CheckoutRoot, "/w/src", 1, 500 * GIB),
            location(Role::OutputDir, "/w/out", 1, 500 * GIB),
            location(Role::CacheDir, "/home/u/.cache/rockbuild", 1, 500 * GIB),
        ],
        index: Some(IndexFacts {
            url: "http://127.0.0.1:8000/simple/".into(),
            status: Ok(200),
        }),
        commits: CommitFacts {
            now: 1_800_000_000,
            heads: vec![(PathBuf::from("/w/src/pytorch"), 1_799_000_000)],
            unreadable: vec![],
        },
    };
    let expect = Expectations {
        venv_from: "--venv".into(),
        lock: Some((
            PathBuf::from("/w/src/rockbuild.lock.json"),
            Some("7.10.0a20251124".into()),
        )),
        targets: Some((
            vec!["gfx906".into(), "gfx1030".into()],
            "--pytorch-rocm-arch".into(),
        )),
        index_from: Some("--index-url".into()),
        install_index: None,
        compile: true,
    };
    (facts, expect)
}

fn status_of(report: &Report, id: &str) -> Vec<Status> {
    report
        .checks
        .iter()
        .filter(|c| c.id == id)
        .map(|c| c.status)
        .collect()
}

fn only(report: &Report, id: &str) -> Check {
    let found: Vec<&Check> = report.checks.iter().filter(|c| c.id == id).collect();
    assert_eq!(found.len(), 1, "{id}: {found:?}");
    found[0].clone()
}

#[test]
fn a_healthy_machine_passes_everything() {
    let (facts, expect) = healthy();
    let report = judge(&facts, &expect);
    let not_passed: Vec<&Check> = report
        .checks
        .iter()
        .filter(|c| c.status != Status::Pass)
        .collect();
    assert!(not_passed.is_empty(), "{not_passed:#?}");
    assert_eq!(report.failures, 0);
    assert!(report.outcome().is_ok());
    assert_eq!(
        only(&report, "disk").detail,
        "checkout root /w/src, output dir /w/out, cache dir /home/u/.cache/rockbuild (one file system): 500.0 GiB free; a torch build needs 45.0 GiB there, 158.0 GiB to be comfortable"
    );
}

#[test]
fn sdk_drift_fails_with_the_reinstall_command() {
    let (mut facts, expect) = healthy();
    facts.venv.rocm = Some("7.9.0".into());
    let report = judge(&facts, &expect);
    let check = only(&report, "sdk-lock");
    assert_eq!(check.status, Status::Fail);
    assert_eq!(
        check.detail,
        "SDK drift: /w/venv has rocm 7.9.0, /w/src/rockbuild.lock.json pins 7.10.0a20251124"
    );
    assert_eq!(
        check.fix.as_deref(),
        Some("rockbuild install-rocm --venv /w/venv --lock /w/src/rockbuild.lock.json")
    );
    // PEP 440 spellings of the same version are the same version.
    facts.venv.rocm = Some("7.10.0-a20251124".into());
    assert_eq!(
        status_of(&judge(&facts, &expect), "sdk-lock"),
        [Status::Pass]
    );
    match report.outcome() {
        Err(crate::doctor::Error::Failed { failed }) => assert_eq!(failed, ["sdk-lock"]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn missing_tools_fail_and_say_what_to_install() {
    let (mut facts, expect) = healthy();
    facts.git = Err("`git` not found in PATH (/bin); install it or pass its full path".into());
    facts.hipcc.hipcc = None;
    facts.hipcc.searched = "PATH".into();
    facts.hipcc.compile = None;
    facts.ccache = Err("not found".into());
    let report = judge(&facts, &expect);
    assert_eq!(status_of(&report, "git"), [Status::Fail]);
    assert_eq!(only(&report, "hipcc").detail, "no hipcc in PATH");
    assert_eq!(only(&report, "compile").detail, "no hipcc to compile with");
    assert_eq!(status_of(&report, "compile"), [Status::Skip]);
    assert_eq!(status_of(&report, "compiler-cache"), [Status::Warn]);
    facts.git = Ok("git version 2.7.4".into());
    let git = only(&judge(&facts, &expect), "git");
    assert_eq!(git.status, Status::Fail);
    assert!(
        git.detail
            .starts_with("git version 2.7.4 is older than 2.9"),
        "{}",
        git.detail
    );
}

#[test]
fn unsupported_targets_fail_in_bitcode_and_compile() {
    let (mut facts, expect) = healthy();
    facts.hipcc.missing_bitcode = vec!["gfx942".into()];
    facts.hipcc.compile = Some(CompileFacts {
        targets: vec!["gfx906".into(), "gfx942".into()],
        failed_targets: vec!["gfx942".into()],
        tail: vec![
            "clang: error: invalid target ID 'gfx942'".into(),
            String::new(),
        ],
    });
    let report = judge(&facts, &expect);
    assert_eq!(
        only(&report, "device-libs").detail,
        "/sdk/lib/llvm/amdgcn/bitcode has no bitcode for gfx942 (oclc_isa_version_942.bc): this ROCm cannot build for it"
    );
    assert_eq!(
        only(&report, "compile").detail,
        "hipcc cannot compile for gfx942: clang: error: invalid target ID 'gfx942'"
    );
}

#[test]
fn disk_needs_add_up_on_one_file_system() {
    let (mut facts, expect) = healthy();
    // 50 GiB on the disk holding all three: above the 45 GiB floor, below comfort.
    for location in &mut facts.locations {
        if let Ok(fs) = &mut location.fs {
            fs.available = 50 * GIB;
        }
    }
    assert_eq!(status_of(&judge(&facts, &expect), "disk"), [Status::Warn]);
    // The cache on its own disk: the checkout + output disk needs 40 GiB, the cache 5.
    facts.locations[2] = location(Role::CacheDir, "/cache", 2, 6 * GIB);
    facts.locations[0].fs.as_mut().expect("fs").available = 41 * GIB;
    facts.locations[1].fs.as_mut().expect("fs").available = 41 * GIB;
    assert_eq!(
        status_of(&judge(&facts, &expect), "disk"),
        [Status::Warn, Status::Warn]
    );
    // A 1 MiB tmpfs holds nothing.
    for location in &mut facts.locations {
        if let Ok(fs) = &mut location.fs {
            fs.available = 1 << 20;
        }
    }
    assert_eq!(
        status_of(&judge(&facts, &expect), "disk"),
        [Status::Fail, Status::Fail]
    );
}

#[test]
fn path_problems_are_named() {
    let (mut facts, expect) = healthy();
    facts.locations[0].writable =
        Err("cannot create a file in /w/src: Permission denied (os error 13)".into());
    facts.locations[1].path = PathBuf::from("/home/u/My Builds/out");
    facts.locations[2].fs.as_mut().expect("fs").name_max = 143;
    facts.locations[2].longest_name = Some((160, PathBuf::from("/c/x")));
    let report = judge(&facts, &expect);
    assert_eq!(
        status_of(&report, "path"),
        [Status::Fail, Status::Warn, Status::Fail]
    );
    let details: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.id == "path")
        .map(|c| c.detail.clone())
        .collect();
    assert_eq!(
        details[2],
        "cache dir /home/u/.cache/rockbuild: /c/x has a 160-byte name; this file system allows 143"
    );
}

#[test]
fn index_and_clock_problems_fail() {
    let (mut facts, expect) = healthy();
    facts.index.as_mut().expect("index").status = Ok(404);
    facts
        .commits
        .heads
        .push((PathBuf::from("/w/src/triton"), 1_800_000_000 + 3 * 86_400));
    let report = judge(&facts, &expect);
    assert_eq!(status_of(&report, "index"), [Status::Fail]);
    let clock = only(&report, "clock");
    assert_eq!(clock.status, Status::Fail);
    assert!(
        clock
            .detail
            .starts_with("the clock is at least 3 days behind: HEAD of /w/src/triton"),
        "{}",
        clock.detail
    );
    facts.index.as_mut().expect("index").status = Err("no answer within 10s".into());
    assert_eq!(
        only(&judge(&facts, &expect), "index").detail,
        "http://127.0.0.1:8000/simple/ (--index-url) is not reachable: no answer within 10s"
    );
    // Nothing to check is a skip, never a pass.
    facts.index = None;
    facts.commits.heads.clear();
    let report = judge(&facts, &expect);
    assert_eq!(status_of(&report, "index"), [Status::Skip]);
    assert_eq!(status_of(&report, "clock"), [Status::Skip]);
}

#[test]
fn reinstall_commands_name_where_the_sdk_comes_from() {
    let (mut facts, mut expect) = healthy();
    facts.venv.rocm = None;
    let fix =
        |facts: &Facts, expect: &Expectations| only(&judge(facts, expect), "sdk-lock").fix.clone();
    // The lock records the index: install-rocm reads it there.
    assert_eq!(
        fix(&facts, &expect).as_deref(),
        Some("rockbuild install-rocm --venv /w/venv --lock /w/src/rockbuild.lock.json")
    );
    // An index given to doctor is passed on.
    expect.install_index = Some("https://h/v2/gfx110X-all/".into());
    assert_eq!(
        fix(&facts, &expect).as_deref(),
        Some(
            "rockbuild install-rocm --venv /w/venv --lock /w/src/rockbuild.lock.json --index-url https://h/v2/gfx110X-all/"
        )
    );
    // Nothing names one: this machine's family decides, never PyPI's default.
    expect.lock = None;
    expect.install_index = Some("auto".into());
    assert_eq!(
        fix(&facts, &expect).as_deref(),
        Some("rockbuild install-rocm --venv /w/venv --index-url auto")
    );
    facts.venv.exists = false;
    assert_eq!(
        only(&judge(&facts, &expect), "venv").fix.as_deref(),
        Some("rockbuild install-rocm --venv /w/venv --index-url auto")
    );
}
