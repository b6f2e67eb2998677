//! Turning an error into what the user reads and the exit code the shell sees: the message,
//! its causes, and `hint:` lines that name a fix.

use crate::context::Context;
use crate::exec::ProcessError;
use crate::exit::{Classified, ExitStatus, HasExitStatus};

/// Prints the error (and hints) and returns the exit status it maps to.
pub fn report(ctx: &Context, error: &anyhow::Error) -> ExitStatus {
    let status = exit_status_of(ctx, error);
    if let Some(crate::checkout::Error::Failed { verb, failures, .. }) =
        error.downcast_ref::<crate::checkout::Error>()
    {
        for (name, failure) in failures {
            let text = render(failure).replacen("error: ", "", 1);
            ctx.ui
                .error_annotation(&format!("{verb} of {name} failed"), &text);
        }
    }
    let text = render(error);
    ctx.ui.error_annotation("rockbuild failed", &text);
    ctx.ui.error(&text);
    status
}

/// The exit status an error maps to: the first classified error in the chain decides. A
/// plain failure of a run that was interrupted is the interruption (128+n).
pub fn exit_status_of(ctx: &Context, error: &anyhow::Error) -> ExitStatus {
    let status = error
        .chain()
        .find_map(|cause| classify(cause).map(|stage| (cause, stage)))
        .map_or(ExitStatus::Failure, |(cause, stage)| match cause
            .downcast_ref::<crate::checkout::Error>()
        {
            Some(crate::checkout::Error::Failed { failures, .. }) => combined_status(ctx, failures),
            _ => stage.exit_status(),
        });
    match (status, ctx.runner.interrupted()) {
        (ExitStatus::Failure, Some(signal)) => ExitStatus::Signal(signal),
        (status, _) => status,
    }
}

/// Several projects' failures as one: a usage error only when every failure is one (a bad
/// ref, a dirty tree), else an interruption if one was, else a failure.
fn combined_status(ctx: &Context, failures: &[(String, anyhow::Error)]) -> ExitStatus {
    let statuses: Vec<ExitStatus> = failures
        .iter()
        .map(|(_, error)| exit_status_of(ctx, error))
        .collect();
    if statuses.iter().all(|s| *s == ExitStatus::Usage) {
        ExitStatus::Usage
    } else {
        statuses
            .iter()
            .find(|s| matches!(s, ExitStatus::Signal(_)))
            .copied()
            .unwrap_or(ExitStatus::Failure)
    }
}

/// One error of a chain as a stage error, if its type is one. Every stage error type that
/// implements [`HasExitStatus`] is listed here, and only here.
fn classify<'a>(cause: &'a (dyn std::error::Error + 'static)) -> Option<&'a dyn HasExitStatus> {
    macro_rules! stage_errors {
        ($($error:ty),* $(,)?) => {
            $(if let Some(error) = cause.downcast_ref::<$error>() {
                return Some(error);
            })*
        };
    }
    stage_errors!(
        Classified,
        ProcessError,
        crate::build::Error,
        crate::build::mode::IndexMismatch,
        crate::recipes::Error,
        crate::checkout::Error,
        crate::lock::Error,
        crate::git::Error,
        crate::hipify::Error,
        crate::detect::Error,
        crate::detect::SelectionError,
        crate::doctor::Error,
        crate::compat::Error,
        crate::ci::Error,
        crate::hipify::leftover::Error,
        crate::suite::Error,
        crate::wheel::retag::RetagError,
        crate::multiarch::fat::FatError,
        crate::sdk::Error,
        crate::store::StoreError,
        crate::store::lease::LeaseError,
        crate::flock::LockError,
        crate::index::Error,
        crate::input::InputError,
        crate::verify::Error,
        crate::publish::Error,
        crate::promote::Error,
        crate::smoke::Error,
    );
    None
}

/// `error: ...`, then each cause on its own line, then hints.
pub fn render(error: &anyhow::Error) -> String {
    render_with(error, &[])
}

/// [`render`], with more known failures (a build recipe's) to recognise.
/// A failed build's or checkout's projects follow its line, each rendered (a build's with its
/// recipe's hints).
pub fn render_with(error: &anyhow::Error, known: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (index, cause) in error.chain().enumerate() {
        out.push_str(if index == 0 {
            "error: "
        } else {
            "\n  caused by: "
        });
        out.push_str(&cause.to_string());
        if let Some(crate::checkout::Error::Failed { failures, .. }) =
            cause.downcast_ref::<crate::checkout::Error>()
        {
            for (name, failure) in failures {
                let text = render(failure).replacen("error: ", "", 1);
                out.push_str(&format!("\n\n[{name}] {}", text.replace('\n', "\n  ")));
            }
        }
        if let Some(crate::build::Error::Failed { failures, .. }) =
            cause.downcast_ref::<crate::build::Error>()
        {
            for failure in failures {
                out.push_str(&format!(
                    "\n\n--- {} ---\n{}",
                    failure.name,
                    render_with(&failure.error, failure.hints)
                ));
            }
        }
    }
    for hint in hints_with(error, known) {
        out.push_str(&format!("\n\nhint: {hint}"));
    }
    out
}

/// Known failures recognised in the output tail of a failed step, each with its fix.
const KNOWN_FAILURES: &[(&str, &str)] = &[
    (
        "cannot find -lamdhip64",
        "the linker cannot find the HIP runtime: install the ROCm SDK (`rockbuild install-rocm`) and build with `--install-rocm`, or check that ROCM_HOME points at it",
    ),
    (
        "unsupported offload arch",
        "hipcc does not know one of the requested gfx targets: check the target list (`--pytorch-rocm-arch`) against what this SDK supports",
    ),
    (
        "No space left on device",
        "the disk is full: free space or point --output-dir and the build directories at a larger disk",
    ),
    (
        "Could not resolve host",
        "DNS failed: check the network or the origin URL",
    ),
    (
        "Permission denied (publickey)",
        "ssh authentication failed: use an https origin or configure an ssh key for this host",
    ),
    (
        "terminal prompts disabled",
        "the origin needs credentials: configure a git credential helper (rockbuild never puts credentials in URLs)",
    ),
    (
        "not our ref",
        "the server no longer has this commit (force-pushed or garbage-collected): pick another ref or update the pin",
    ),
    (
        "killed: out of memory",
        "a process was killed, most likely by the OOM killer: reduce parallelism (MAX_JOBS, --jobs) or add memory",
    ),
    // Build failures: the tail of a failed project's log (src/build).
    (
        "Killed signal terminated program",
        "the compiler was killed, most likely by the OOM killer: lower MAX_JOBS (fewer parallel compiles per project) or --jobs (fewer projects at once)",
    ),
    (
        "No module named 'rocm_sdk'",
        "the ROCm SDK is not installed in the build's venv: run `rockbuild install-rocm` or add --install-rocm",
    ),
    (
        "No matching distribution found for",
        "pip could not find a package on the configured index: check --index-url / --find-links and that the index has the pinned version (the SDK preflight lists what it offers)",
    ),
    (
        "Could not find a package configuration file provided by \"hip\"",
        "CMake cannot find HIP: CMAKE_PREFIX_PATH must be the SDK's `rocm-sdk path --cmake`; check that rocm[devel] is installed",
    ),
    (
        "cannot find ROCm device library",
        "clang cannot find the device libraries: HIP_DEVICE_LIB_PATH must point at <sdk root>/lib/llvm/amdgcn/bitcode (rockbuild sets it when the SDK has it)",
    ),
    (
        "invalid target ID",
        "a gfx target reached the compiler in a form it does not accept: pass plain targets (gfx942), not families (gfx94X-dcgpu)",
    ),
];

/// Hints for an error: known failure patterns in the tail of a failed step.
pub fn hints(error: &anyhow::Error) -> Vec<String> {
    hints_with(error, &[])
}

fn hints_with(error: &anyhow::Error, known: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut text = String::new();
    for cause in error.chain() {
        // A failed build's projects are rendered below it, each with its own hints.
        if matches!(
            cause.downcast_ref::<crate::build::Error>(),
            Some(crate::build::Error::Failed { .. })
        ) {
            continue;
        }
        if let Some(stage) = classify(cause) {
            text.push_str(&stage.output_tail().join("\n"));
        }
        text.push_str(&cause.to_string());
    }
    for (pattern, hint) in KNOWN_FAILURES.iter().chain(known) {
        if text.contains(pattern) && !out.iter().any(|h: &String| h == hint) {
            out.push((*hint).to_string());
        }
    }
    if let Some(missing) = missing_header(&text) {
        out.push(format!("a header is missing: `{missing}`; if it is a CUDA header, hipify did not translate this source (check the hipify step's log), otherwise install the package that provides it"));
    }
    out
}

/// `fatal error: foo.h: No such file or directory` (gcc) or `'foo.h' file not found` (clang).
fn missing_header(text: &str) -> Option<String> {
    for line in text.lines() {
        if let Some(index) = line.find(": No such file or directory")
            && let Some(start) = line[..index].rfind("fatal error: ")
        {
            return Some(line[start + "fatal error: ".len()..index].to_string());
        }
        if let Some(index) = line.find("' file not found")
            && let Some(start) = line[..index].rfind('\'')
        {
            return Some(line[start + 1..index].to_string());
        }
    }
    None
}

#[cfg(test)]
mod rendered;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_missing_headers_from_gcc_and_clang() {
        assert_eq!(
            missing_header(
                "x.cpp:3:10: fatal error: cuda_runtime_api.h: No such file or directory"
            ),
            Some("cuda_runtime_api.h".into())
        );
        assert_eq!(
            missing_header("k.hip:1:10: fatal error: 'cuda.h' file not found"),
            Some("cuda.h".into())
        );
        assert_eq!(missing_header("all good"), None);
    }

    #[test]
    fn build_failures_get_the_recipes_hints() {
        let error = anyhow::Error::new(ProcessError::Failed {
            label: "audio: build wheel".into(),
            repro: "python setup.py bdist_wheel".into(),
            status: "exit status: 1".into(),
            code: Some(1),
            tail: vec!["ModuleNotFoundError: No module named 'torch'".into()],
            log: None,
        });
        assert!(hints(&error).is_empty());
        let known = [("No module named 'torch'", "build torch first")];
        assert!(render_with(&error, &known).ends_with("\n\nhint: build torch first"));
    }

    #[test]
    fn hints_come_from_the_failed_step_tail() {
        let error = anyhow::Error::new(ProcessError::Failed {
            label: "torch: build".into(),
            repro: "python -m build".into(),
            status: "exit status: 1".into(),
            code: Some(1),
            tail: vec!["ld.lld: error: cannot find -lamdhip64".into()],
            log: None,
        });
        let hints = hints(&error);
        assert_eq!(hints.len(), 1);
        assert!(hints[0].starts_with("the linker cannot find the HIP runtime"));
        assert!(render(&error).contains("\n\nhint: the linker cannot find"));
    }
}
