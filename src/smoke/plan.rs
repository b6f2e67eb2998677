//! The smoke test as data: every check with its command and the check it waits for, and
//! the files written before the first one. A pure function of the settings, the selected
//! set and the start-up environment (whose `PIP_*`/`UV_*` variables each step removes).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::{Selected, requirements};
use crate::env_vars::Environment;
use crate::exec::Cmd;
use crate::platform::Platform;

/// How long one import or smoke command may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(900);

/// Everything a smoke run needs, resolved from the flags.
#[derive(Debug)]
pub struct Settings {
    pub index_url: String,
    pub extra_index_urls: Vec<String>,
    /// The venv directory; none: one in the run's work directory.
    pub venv: Option<PathBuf>,
    /// The venv directory holds an earlier venv to be emptied first.
    pub clear_venv: bool,
    pub python: PathBuf,
    pub log_dir: PathBuf,
}

/// One check of the run; its outcome goes into the test report.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub kind: &'static str,
    pub project: Option<String>,
    pub cmd: Cmd,
    /// The check that must pass before this one runs (an earlier one); none: always runs.
    pub after: Option<usize>,
}

/// What a smoke run will do.
#[derive(Clone, Debug)]
pub struct SmokePlan {
    pub index_url: String,
    /// The venv's interpreter.
    pub python: PathBuf,
    /// Written before the first check: the set's requirements with and without hashes.
    pub files: Vec<(PathBuf, String)>,
    /// pip's reports of the two installs (the set, then its dependencies), each with the
    /// check that writes it: every file they name that the index under test lists is
    /// evidence.
    pub pip_reports: Vec<(usize, PathBuf)>,
    pub checks: Vec<Check>,
}

/// Plans the checks: a fresh venv, the set installed hash-checked from the index (no
/// dependencies), the dependencies from the extra indexes, `pip check`, then for each
/// project an import of every top-level package and its smoke command. `work_dir` is an
/// empty directory the checks run in (so nothing is imported from the cwd).
pub fn plan(
    env: &Environment,
    settings: &Settings,
    selected: &[Selected],
    work_dir: &Path,
) -> SmokePlan {
    let venv = settings
        .venv
        .clone()
        .unwrap_or_else(|| work_dir.join("venv"));
    let python = Platform::host().venv_python(&venv);
    let requirements_file = work_dir.join("requirements.txt");
    let plain_file = work_dir.join("set.txt");
    let set_report = work_dir.join("pip-report-set.json");
    let dependencies_report = work_dir.join("pip-report-dependencies.json");
    let steps = Steps {
        env,
        python: &python,
        work_dir,
    };
    let mut checks = Vec::new();
    let mut add = |name: String, kind, project: Option<&str>, cmd, after| {
        checks.push(Check {
            name,
            kind,
            project: project.map(String::from),
            cmd,
            after,
        });
        checks.len() - 1
    };
    let create = scrubbed(env, Cmd::new(&settings.python))
        .label("smoke: venv")
        .args(["-m", "venv"])
        // A venv left by an earlier run is emptied: smoke always starts fresh.
        .args(settings.clear_venv.then_some("--clear"))
        .arg(&venv)
        .log_to(settings.log_dir.join("venv.log"))
        .timeout(Duration::from_secs(300));
    let venv_made = add("create venv".into(), "install", None, create, None);
    let install = steps
        .pip("smoke: install the set")
        .args([
            "install",
            "--no-deps",
            "--require-hashes",
            "--only-binary",
            ":all:",
            "--report",
        ])
        .arg(&set_report)
        .args(["--index-url", &settings.index_url])
        .arg("-r")
        .arg(&requirements_file)
        .log_to(settings.log_dir.join("install-set.log"));
    let installed = add(
        "install the set (hash-checked)".into(),
        "install",
        None,
        install,
        Some(venv_made),
    );
    let mut dependencies = steps
        .pip("smoke: install dependencies")
        .args(["install", "--report"])
        .arg(&dependencies_report)
        .args(["--index-url", &settings.index_url]);
    for extra in &settings.extra_index_urls {
        dependencies = dependencies.args(["--extra-index-url", extra]);
    }
    let dependencies = dependencies
        .arg("-r")
        .arg(&plain_file)
        .log_to(settings.log_dir.join("install-dependencies.log"));
    let dependencies = add(
        "install dependencies".into(),
        "install",
        None,
        dependencies,
        Some(installed),
    );
    let consistent = steps
        .python()
        .label("smoke: pip check")
        .args(["-m", "pip", "check"])
        .log_to(settings.log_dir.join("pip-check.log"))
        .timeout(Duration::from_secs(300));
    let consistent = add(
        "pip check".into(),
        "install",
        None,
        consistent,
        Some(dependencies),
    );
    for item in selected {
        let name = &item.project.name;
        let wheel = &item.wheel;
        let import = steps
            .python()
            .label(format!("smoke: import {wheel}"))
            .args(["-I", "-c", IMPORT_SCRIPT, wheel, &item.version])
            .log_to(settings.log_dir.join(format!("{name}-import.log")))
            .timeout(CHECK_TIMEOUT);
        let imported = add(
            format!("import {wheel}"),
            "import",
            Some(name),
            import,
            Some(consistent),
        );
        let smoke = steps
            .python()
            .label(format!("smoke: {name}"))
            .args(["-I", "-c", &item.smoke])
            .log_to(settings.log_dir.join(format!("{name}-smoke.log")))
            .timeout(CHECK_TIMEOUT);
        add(
            format!("smoke {name}"),
            "smoke",
            Some(name),
            smoke,
            Some(imported),
        );
    }
    SmokePlan {
        index_url: settings.index_url.clone(),
        python,
        files: vec![
            (requirements_file, requirements(selected, true)),
            (plain_file, requirements(selected, false)),
        ],
        pip_reports: vec![(installed, set_report), (dependencies, dependencies_report)],
        checks,
    }
}

/// One planned check as `--dry-run --json` shows it.
#[derive(Serialize)]
struct CheckView<'a> {
    name: &'a str,
    kind: &'a str,
    project: Option<&'a str>,
    after: Option<&'a str>,
    command: String,
}

impl SmokePlan {
    /// What `--dry-run` prints: each check, what it waits for, and its command (the import
    /// script, the same for every project, once at the end).
    pub fn to_text(&self) -> String {
        let script = shlex::try_quote(IMPORT_SCRIPT)
            .map(|quoted| quoted.into_owned())
            .unwrap_or_default();
        let mut out = format!(
            "would smoke-test from {} in {} checks:\n",
            crate::redact::redact_url(&self.index_url),
            self.checks.len()
        );
        for (name, text) in &self.files {
            let _ = writeln!(
                out,
                "  write {} ({} line{})",
                name.display(),
                text.lines().count(),
                crate::ui::plural(text.lines().count())
            );
        }
        for check in &self.checks {
            let after = check
                .after
                .map(|i| format!(" (after {})", self.checks[i].name))
                .unwrap_or_default();
            let command = check.cmd.repro().replace(&script, "\"$IMPORT_SCRIPT\"");
            let _ = writeln!(out, "  {}{after}\n    $ {command}", check.name);
        }
        let _ = write!(out, "where IMPORT_SCRIPT is:{IMPORT_SCRIPT}");
        out
    }

    /// The plan as JSON for `--dry-run --json`.
    pub fn to_json(&self) -> serde_json::Result<String> {
        let checks: Vec<CheckView<'_>> = self
            .checks
            .iter()
            .map(|check| CheckView {
                name: &check.name,
                kind: check.kind,
                project: check.project.as_deref(),
                after: check.after.map(|i| self.checks[i].name.as_str()),
                command: check.cmd.repro(),
            })
            .collect();
        serde_json::to_string_pretty(&serde_json::json!({
            "index_url": crate::redact::redact_url(&self.index_url),
            "checks": checks,
        }))
    }
}

/// Checks the installed versions of the set and imports every top-level package of each
/// distribution (from top_level.txt, else from its RECORD).
const IMPORT_SCRIPT: &str = r#"
import importlib, importlib.metadata as md, sys
name, expected = sys.argv[1], sys.argv[2]
dist = md.distribution(name)
if dist.version != expected:
    sys.exit(f"installed {name} is {dist.version}, expected {expected} from the set")
tops = set()
text = dist.read_text("top_level.txt")
if text:
    tops.update(line.strip() for line in text.splitlines() if line.strip())
else:
    for path in dist.files or []:
        parts = path.parts
        if not parts or parts[0] == ".." or parts[0].endswith((".dist-info", ".data")):
            continue
        if len(parts) > 1:
            tops.add(parts[0])
        elif parts[0].endswith(".py"):
            tops.add(parts[0][:-3])
tops = sorted(t for t in tops if t.isidentifier())
if not tops:
    sys.exit(f"{name} installs no importable top-level module")
for top in tops:
    module = importlib.import_module(top)
    print(f"imported {top} from {getattr(module, '__file__', '?')}")
"#;

/// The commands of a run: every one without the variables that would make a child Python or
/// pip ignore the venv or the index given to it.
struct Steps<'a> {
    env: &'a Environment,
    /// The venv's interpreter.
    python: &'a Path,
    work_dir: &'a Path,
}

impl Steps<'_> {
    /// The venv's Python, in the work directory.
    fn python(&self) -> Cmd {
        scrubbed(self.env, Cmd::new(self.python)).cwd(self.work_dir)
    }

    /// pip of the venv, reading only the indexes on its command line.
    fn pip(&self, label: &str) -> Cmd {
        crate::pip::pip(self.python(), label)
    }
}

/// Variables that would make a child Python or pip ignore the venv or the index we give it.
fn scrubbed(env: &Environment, mut cmd: Cmd) -> Cmd {
    cmd = crate::pip::without_installer_env(env, cmd);
    for name in [
        "PYTHONPATH",
        "PYTHONHOME",
        "PYTHONSTARTUP",
        "PYTHONUSERBASE",
        "VIRTUAL_ENV",
    ] {
        cmd = cmd.env_remove(name);
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::client::RemoteFile;
    use crate::stack::Stack;

    #[test]
    fn every_check_waits_for_the_one_before_and_drops_the_callers_pip_settings() {
        let stack = Stack::load(None).expect("stack");
        let selected: Vec<Selected> = ["torch", "vision"]
            .iter()
            .map(|name| {
                let project = stack.projects[*name].clone();
                let wheel = project.wheel.clone().expect("a wheel");
                let file = format!("{wheel}-1.0-cp311-cp311-linux_x86_64.whl");
                Selected {
                    smoke: project.smoke.clone().expect("smoke code"),
                    version: "1.0".into(),
                    files: vec![RemoteFile {
                        url: format!("http://127.0.0.1:8000/{wheel}/{file}"),
                        filename: file,
                        sha256: Some("a".repeat(64)),
                        requires_python: None,
                        metadata: None,
                        size: None,
                        yanked: false,
                    }],
                    devices: Vec::new(),
                    project,
                    wheel,
                }
            })
            .collect();
        let env = Environment::from_pairs([
            ("PATH", "/usr/bin:/bin"),
            ("PIP_INDEX_URL", "https://elsewhere.example/simple"),
        ]);
        let settings = Settings {
            index_url: "http://127.0.0.1:8000/".into(),
            extra_index_urls: vec!["https://sdk.example/simple".into()],
            venv: None,
            clear_venv: false,
            python: "python3".into(),
            log_dir: "/out/smoke-report.logs".into(),
        };
        let plan = plan(&env, &settings, &selected, Path::new("/work"));
        assert_eq!(
            plan.pip_reports
                .iter()
                .map(|(check, _)| *check)
                .collect::<Vec<_>>(),
            [1, 2],
            "both installs report what they installed"
        );
        insta::assert_snapshot!("smoke_plan_text", plan.to_text());
        insta::assert_snapshot!("smoke_plan_json", plan.to_json().expect("json"));
    }
}
