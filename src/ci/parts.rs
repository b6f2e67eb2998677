//! The small constructors every generated workflow is written with: a `rockbuild` step, a
//! pinned action, an artifact moved up or down, a job on a runner in an image.

use super::workflow::{Action, Arg, Container, Job, JobBody, Shell, Step, StepRun, is_shell_safe};

/// Actions the workflows use, pinned by full commit SHA (the release tag named beside it).
pub const UPLOAD_ARTIFACT: Action = Action {
    repo: "actions/upload-artifact",
    sha: "bbbca2ddaa5d8feaa63e36b76fdaad77386f024f",
    version: "v7.0.0",
};
pub const DOWNLOAD_ARTIFACT: Action = Action {
    repo: "actions/download-artifact",
    sha: "3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c",
    version: "v8.0.1",
};
pub const CACHE: Action = Action {
    repo: "actions/cache",
    sha: "27d5ce7f107fe9357f9df03efb73ab90386fccae",
    version: "v5.0.5",
};
pub const CHECKOUT: Action = Action {
    repo: "actions/checkout",
    sha: "3d3c42e5aac5ba805825da76410c181273ba90b1",
    version: "v7.0.1",
};
pub const CONFIGURE_AWS_CREDENTIALS: Action = Action {
    repo: "aws-actions/configure-aws-credentials",
    sha: "e6de054238d6b7531b4efff3b6587d9aade6a06c",
    version: "v6.2.3",
};
/// The Windows jobs' CPython (the Linux jobs' is in the build and test images).
pub const SETUP_PYTHON: Action = Action {
    repo: "actions/setup-python",
    sha: "5fda3b95a4ea91299a34e894583c3862153e4b97",
    version: "v7.0.0",
};
/// vcvars64 for the job's later steps (what the reference's Windows builds use).
pub const MSVC_DEV_CMD: Action = Action {
    repo: "ilammy/msvc-dev-cmd",
    sha: "0b201ec74fa43914dc39ae48a89fd1d8cb592756",
    version: "v1.13.0",
};

/// The hosted runner of the light jobs (matrix, lock, stage, reports, promote): they run in
/// the build image and need no GPU and little disk.
pub const LIGHT_RUNNER: &str = "ubuntu-24.04";

pub fn lit(word: &str) -> Arg {
    debug_assert!(is_shell_safe(word), "{word}");
    Arg::Literal(word.to_string())
}

pub fn var(name: &str) -> Arg {
    Arg::Var(name.to_string())
}

pub fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub fn rockbuild(name: &str, env: &[(&str, &str)], args: Vec<Arg>) -> Step {
    Step {
        id: None,
        name: name.to_string(),
        condition: None,
        env: pairs(env),
        run: StepRun::Rockbuild { args },
    }
}

/// `program ARGS...`: a program of the runner's other than rockbuild.
pub fn command(name: &str, env: &[(&str, &str)], program: &str, args: Vec<Arg>) -> Step {
    debug_assert!(is_shell_safe(program), "{program}");
    Step {
        id: None,
        name: name.to_string(),
        condition: None,
        env: pairs(env),
        run: StepRun::Command {
            program: program.to_string(),
            args,
        },
    }
}

/// Puts the directory `$var` (of `env`) on the PATH of the job's later steps.
pub fn add_to_path(name: &str, env: &[(&str, &str)], var: &str) -> Step {
    Step {
        id: None,
        name: name.to_string(),
        condition: None,
        env: pairs(env),
        run: StepRun::AddToPath {
            var: var.to_string(),
        },
    }
}

pub fn action(name: &str, action: Action, with: &[(&str, &str)]) -> Step {
    Step {
        id: None,
        name: name.to_string(),
        condition: None,
        env: Vec::new(),
        run: StepRun::Action {
            action,
            with: pairs(with),
        },
    }
}

pub fn when(step: Step, condition: &str) -> Step {
    Step {
        condition: Some(condition.to_string()),
        ..step
    }
}

pub fn upload(name: &str, artifact: &str, paths: &str) -> Step {
    action(
        name,
        UPLOAD_ARTIFACT,
        &[
            ("name", artifact),
            ("path", paths),
            ("if-no-files-found", "error"),
        ],
    )
}

/// Downloads one artifact into `path` (`.`: the workspace), or every artifact a pattern
/// matches, merged. An artifact's root is the common directory of what was uploaded (a single
/// `lock/rockbuild.lock.json` is stored as `rockbuild.lock.json`), so the path puts it back.
pub fn download(name: &str, artifact: &str, path: &str) -> Step {
    let key = if artifact.contains('*') {
        "pattern"
    } else {
        "name"
    };
    let mut with = vec![(key, artifact), ("path", path)];
    if key == "pattern" {
        with.push(("merge-multiple", "true"));
    }
    action(name, DOWNLOAD_ARTIFACT, &with)
}

/// The repository's tables (`configs/`), at the run's commit: what `rockbuild matrix` reads, so
/// a table edit takes effect when it is committed. Only that directory, and no token left in
/// the checkout.
pub fn checkout_tables() -> Step {
    action(
        "Check out the tables (configs/)",
        CHECKOUT,
        &[
            ("sparse-checkout", "configs"),
            ("persist-credentials", "false"),
        ],
    )
}

pub fn aws_credentials() -> Step {
    action(
        "Credentials for the stores (OIDC, no static keys)",
        CONFIGURE_AWS_CREDENTIALS,
        &[
            ("role-to-assume", "${{ inputs.aws-role }}"),
            ("aws-region", "${{ inputs.aws-region }}"),
        ],
    )
}

pub fn job(id: &str, name: &str, needs: &[&str], body: JobBody) -> Job {
    Job {
        id: id.to_string(),
        name: name.to_string(),
        needs: needs.iter().map(|n| n.to_string()).collect(),
        condition: None,
        matrix: None,
        permissions: Vec::new(),
        body,
    }
}

/// Where a job's steps run.
#[derive(Clone, Copy, Debug)]
pub struct Runs {
    pub on: &'static str,
    pub image: &'static str,
    /// The runner's GPU is passed into the container.
    pub gpu: bool,
    pub timeout: u32,
}

pub fn steps(
    runs: Runs,
    outputs: &[(&str, &str)],
    env: &[(&str, &str)],
    steps: Vec<Step>,
) -> JobBody {
    JobBody::Steps {
        runs_on: runs.on.to_string(),
        container: Some(Container {
            image: runs.image.to_string(),
            // The GPU runners' devices, as ROCm containers need them.
            options: runs
                .gpu
                .then(|| "--device=/dev/kfd --device=/dev/dri --group-add video".to_string()),
        }),
        shell: Shell::Posix,
        timeout_minutes: runs.timeout,
        outputs: pairs(outputs),
        env: pairs(env),
        steps,
    }
}

/// A job on a Windows runner: no container (the runner is the machine), PowerShell steps.
pub fn windows_steps(
    on: &str,
    timeout: u32,
    outputs: &[(&str, &str)],
    env: &[(&str, &str)],
    steps: Vec<Step>,
) -> JobBody {
    JobBody::Steps {
        runs_on: on.to_string(),
        container: None,
        shell: Shell::Pwsh,
        timeout_minutes: timeout,
        outputs: pairs(outputs),
        env: pairs(env),
        steps,
    }
}

/// The comment at the top of a generated file: how it is made, then what it is.
pub fn header(what: &[&str]) -> Vec<String> {
    let mut lines = vec![
        "Generated by `rockbuild ci generate` from configs/families.yaml and".to_string(),
        "configs/releases.yaml; do not edit (a test fails when this file differs from what it"
            .to_string(),
        "generates). Copy workflows/ to .github/workflows/ of the repository that runs it"
            .to_string(),
        "(docs/ci.md).".to_string(),
        String::new(),
    ];
    lines.extend(what.iter().map(|l| l.to_string()));
    lines
}
