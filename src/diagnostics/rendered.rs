//! What a user reads when a stage fails: representative errors of each stage rendered as
//! `report` prints them (message, causes, hints) with the exit status they map to.

use std::path::PathBuf;

use super::{exit_status_of, render};
use crate::context::Context;
use crate::exec::ProcessError;

fn context() -> Context {
    let env = crate::env_vars::Environment::default();
    Context {
        ui: crate::ui::Ui::new(&env, true, crate::ui::LogFormat::Text),
        runner: crate::exec::Runner::new(env),
        cwd: PathBuf::from("/work"),
    }
}

/// Each error as `exit N` and its rendering, separated by blank lines.
fn rendered(errors: Vec<anyhow::Error>) -> String {
    let ctx = context();
    errors
        .iter()
        .map(|error| format!("exit {}\n{}\n", exit_status_of(&ctx, error), render(error)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn failed_step(label: &str, tail: &[&str]) -> ProcessError {
    ProcessError::Failed {
        label: label.into(),
        repro: "cd /work && python -m pip install rocm==7.10.0".into(),
        status: "exit status: 1".into(),
        code: Some(1),
        tail: tail.iter().map(|l| l.to_string()).collect(),
        log: Some("/work/out/logs/install-rocm.log".into()),
    }
}

#[test]
fn sdk_errors() {
    use crate::sdk::Error;
    let text = rendered(vec![
        Error::NoMatch {
            project: "rocm".into(),
            spec: "==7.11.0".into(),
            pre: false,
            sources: "index https://rocm.example/simple".into(),
            nearest: vec!["7.10.0".into(), "7.9.0".into()],
            hint: Some("pre-releases match: drop --no-pre".into()),
        }
        .into(),
        Error::Step(failed_step(
            "install-rocm: pip install",
            &["ERROR: No matching distribution found for rocm-sdk-core==7.10.0"],
        ))
        .into(),
        Error::Query {
            command: "python -m rocm_sdk path --root".into(),
            venv: "/work/venv".into(),
            source: Box::new(failed_step(
                "rocm_sdk path --root",
                &["ModuleNotFoundError: No module named 'rocm_sdk'"],
            )),
        }
        .into(),
        anyhow::Error::from(Error::BareVersion {
            spec: "7.10.0".into(),
            version: "7.10.0".into(),
        }),
    ]);
    insta::assert_snapshot!(text);
}

#[test]
fn store_and_index_errors() {
    use crate::store::StoreError;
    let text = rendered(vec![
        StoreError::BadUrl {
            url: "https://example.com/simple/".into(),
            reason: "`https://` is not a store rockbuild can write to; use a directory, file:// or s3://BUCKET/PREFIX".into(),
        }
        .into(),
        StoreError::Conflict {
            store: "s3://wheels/release".into(),
            key: "torch/torch-2.9.0-cp311-cp311-linux_x86_64.whl".into(),
            existing: "a".repeat(64),
            new: "b".repeat(64),
        }
        .into(),
        crate::index::Error::Status {
            url: "https://rocm.example/simple/rocm/".into(),
            status: 503,
        }
        .into(),
    ]);
    insta::assert_snapshot!(text);
}

#[test]
fn verify_and_publish_errors() {
    use crate::index::ordering::OrderingProblem;
    use crate::publish::{Conflict, Error};
    use crate::verify::companions::CompanionError;
    let text = rendered(vec![
        crate::verify::Error::from(crate::wheel::verify::CollectError::EmptyDirectory(
            "/work/out".into(),
        ))
        .into(),
        Error::NotVerified {
            what: "1 of 3 wheels in /work/out failed verification".into(),
            dest: "s3://wheels/staging/gfx942".into(),
        }
        .into(),
        Error::Ordering {
            verb: "stage",
            dest: "s3://wheels/staging".into(),
            nothing: "uploaded",
            problems: vec![OrderingProblem {
                project: "torch".into(),
                new: "2.9.0+rocm10.0.0".into(),
                existing: "2.9.0+rocm7.15.0".into(),
                explanation: "the local labels compare segment by segment, and 'rocm10' sorts before 'rocm7' as text".into(),
            }],
        }
        .into(),
        Error::SdkIndex {
            url: "http://127.0.0.1:52967/sdk/simple/".into(),
            from: "build.index_url of /work/src/rockbuild.lock.json, where install-rocm installed the SDK from".into(),
            message: "could not read http://127.0.0.1:52967/sdk/simple/rocm/: error sending request: tcp connect error: Connection refused (os error 111) (attempt 3 of 3; each request waits up to 120s)".into(),
            dest: "/work/staging".into(),
            fix: crate::index::reach::unreachable_fix("http://127.0.0.1:52967/sdk/simple/"),
        }
        .into(),
        Error::Conflicts {
            verb: "stage",
            dest: "file:///srv/staging".into(),
            nothing: "uploaded",
            conflicts: vec![Conflict {
                key: "torch/torch-2.9.0+rocm7.10.0-cp311-cp311-manylinux_2_28_x86_64.whl".into(),
                existing: "c".repeat(64),
                new: "d".repeat(64),
                spelled: None,
            }],
            restage: Some(
                "rockbuild stage --input /work/out --to /srv/staging-5d0c29a1 --lock /work/src/rockbuild.lock.json"
                    .into(),
            ),
        }
        .into(),
        Error::Conflicts {
            verb: "promote",
            dest: "s3://wheels/release".into(),
            nothing: "copied",
            conflicts: vec![Conflict {
                key: "torch/torch-2.9.0-cp311-cp311-linux_x86_64.whl".into(),
                existing: "a".repeat(64),
                new: "b".repeat(64),
                spelled: None,
            }],
            restage: None,
        }
        .into(),
        crate::verify::Error::from(CompanionError::NotOnIndex {
            requirement: "rocm-sdk-libraries-gfx94X-dcgpu==7.10.0rc1".into(),
            index: "https://rocm.example/v2/gfx94X-dcgpu/rocm-sdk-libraries-gfx94x-dcgpu/".into(),
            listed: "only 7.10.0a20251124".into(),
        })
        .into(),
        crate::verify::Error::from(CompanionError::HashMismatch {
            file: "rocm_sdk_core-7.10.0-py3-none-linux_x86_64.whl".into(),
            url: "https://rocm.example/v2/gfx94X-dcgpu/rocm_sdk_core-7.10.0-py3-none-linux_x86_64.whl".into(),
            expected: "a".repeat(64),
            actual: "b".repeat(64),
        })
        .into(),
    ]);
    insta::assert_snapshot!(text);
}

#[test]
fn promote_and_smoke_errors() {
    use crate::promote::Error;
    let text = rendered(vec![
        Error::SameStore("s3://wheels/release".into()).into(),
        Error::Denied {
            denied: 1,
            total: 3,
        }
        .into(),
        Error::NotAsPublished {
            denied: 1,
            total: 8,
        }
        .into(),
        Error::NoSdkIndex {
            promoted: "7.10.0rc1".into(),
        }
        .into(),
        Error::SeveralSdks {
            versions: vec!["7.10.0a20251124".into(), "7.10.0a20251201".into()],
        }
        .into(),
        Error::RewrittenNotVerified("s3://wheels/rc".into()).into(),
        crate::smoke::Error::NotOnIndex {
            wheel: "torch".into(),
            version: "2.9.0+rocm7.0.0".into(),
            url: "http://127.0.0.1:8000/".into(),
            have: "2.8.0+rocm7.0.0".into(),
        }
        .into(),
        crate::smoke::Error::Failed {
            failed: 1,
            total: 8,
            logs: "/work/smoke-report.logs".into(),
            details: "  - smoke torch:\n      RuntimeError: No HIP GPUs are available".into(),
        }
        .into(),
        crate::smoke::Error::Interrupted {
            signal: 15,
            report: "/work/smoke-report.json".into(),
        }
        .into(),
    ]);
    insta::assert_snapshot!(text);
}
