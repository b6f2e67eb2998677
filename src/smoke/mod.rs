//! The smoke test of a staged set: a fresh venv, the set installed from its index with pip
//! (hash-checked), the installed versions compared with the set, every package imported, each
//! project's smoke command from the stack config run — and a test report that records the
//! exact wheels (SHA-256) and every check, which `promote` takes as evidence.
//!
//! The install is two steps. The set's own wheels go first, `--no-deps --require-hashes`
//! against the SHA-256s the index publishes, so pip installs exactly those bytes. Then the
//! same requirements without hashes pull their dependencies from outside the set (the ROCm SDK
//! packages torch pins, numpy, …) from `--extra-index-url`; the set is already satisfied at
//! its pinned versions, and the versions check afterwards proves nothing replaced it
//! (TheRock#4824: pip quietly backtracked to a month-old build).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use indexmap::IndexMap;
use serde::Deserialize;

use crate::context::Context;
use crate::exec::{Cmd, ProcessError, Retry};
use crate::index::client::{IndexClient, RemoteFile};
use crate::index::{dist_name_and_version, normalize_name};
use crate::promote::evidence::{Check, Outcome, REPORT_SCHEMA, TestReport, TestedWheel};
use crate::stack::{Project, Stack};

/// How long one install may take, and how long it may print nothing.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(3600);
const INSTALL_IDLE: Duration = Duration::from_secs(600);
/// How long one import or smoke command may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(900);

/// Everything a smoke run needs, resolved by the command.
#[derive(Debug)]
pub struct Settings {
    pub index_url: String,
    pub extra_index_urls: Vec<String>,
    pub venv: PathBuf,
    /// The venv directory holds an earlier venv to be emptied first.
    pub clear_venv: bool,
    pub python: PathBuf,
    pub log_dir: PathBuf,
    /// An empty directory the checks run in (so nothing is imported from the cwd).
    pub work_dir: PathBuf,
}

/// One project of the set as the index offers it.
#[derive(Clone, Debug)]
pub struct Selected {
    pub project: Project,
    pub version: String,
    /// Every file of that version (pip picks the one matching this interpreter).
    pub files: Vec<RemoteFile>,
}

/// Picks the set from the index: each stack project's locked version (or its newest), with
/// the hashes of every file of that version. A locked project missing from the index is an
/// error that lists what the index has (TheRock#4746).
pub fn select(
    stack: &Stack,
    client: &IndexClient,
    versions: Option<&IndexMap<String, String>>,
) -> anyhow::Result<(Vec<Selected>, Vec<String>)> {
    let mut selected = Vec::new();
    let mut notes = Vec::new();
    for project in stack.projects.values() {
        let locked = versions.and_then(|v| v.get(&project.name));
        if versions.is_some() && locked.is_none() {
            notes.push(format!(
                "{}: not in the lock's build record; not tested",
                project.name
            ));
            continue;
        }
        let files = client
            .project(&project.wheel)
            .with_context(|| {
                format!(
                    "reading {}'s page from {}",
                    project.wheel,
                    client.display_url()
                )
            })?
            .unwrap_or_default();
        let files: Vec<RemoteFile> = files
            .into_iter()
            .filter(|f| !f.yanked && f.filename.ends_with(".whl"))
            .collect();
        let mut available: Vec<(pep440_rs::Version, String)> = files
            .iter()
            .filter_map(|f| dist_name_and_version(&f.filename))
            .map(|(_, v)| (v.clone(), v.to_string()))
            .collect();
        available.sort();
        available.dedup_by(|a, b| a.0 == b.0);
        let version = match locked {
            Some(version) => {
                let wanted: pep440_rs::Version = version.parse().map_err(|e| {
                    crate::exit::usage(format!(
                        "the lock's {} version '{version}' is not PEP 440: {e}",
                        project.name
                    ))
                })?;
                if !available.iter().any(|(v, _)| *v == wanted) {
                    let have: Vec<&str> = available.iter().map(|(_, text)| text.as_str()).collect();
                    anyhow::bail!(
                        "{}=={version} (locked) is not on {}; the index has {}",
                        project.wheel,
                        client.display_url(),
                        if have.is_empty() {
                            "no wheels of it".to_string()
                        } else {
                            have.join(", ")
                        }
                    );
                }
                wanted
            }
            None => match available.last() {
                Some((newest, _)) => newest.clone(),
                None => {
                    notes.push(format!(
                        "{}: no {} wheels on the index; not tested",
                        project.name, project.wheel
                    ));
                    continue;
                }
            },
        };
        let files: Vec<RemoteFile> = files
            .into_iter()
            .filter(|f| {
                dist_name_and_version(&f.filename).map(|(_, v)| v).as_ref() == Some(&version)
            })
            .collect();
        if let Some(unhashed) = files.iter().find(|f| f.sha256.is_none()) {
            anyhow::bail!(
                "{} on {} has no #sha256= hash; a hash-checked install needs one for every file",
                unhashed.filename,
                client.display_url()
            );
        }
        selected.push(Selected {
            project: project.clone(),
            version: version.to_string(),
            files,
        });
    }
    if selected.is_empty() {
        anyhow::bail!(
            "none of the stack's wheels ({}) is on {}",
            stack
                .projects
                .values()
                .map(|p| p.wheel.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            client.display_url()
        );
    }
    Ok((selected, notes))
}

/// The hash-pinned requirements of the set (pip's `--require-hashes` format).
pub fn requirements(selected: &[Selected], with_hashes: bool) -> String {
    let mut out = String::new();
    for item in selected {
        let _ = write!(out, "{}=={}", item.project.wheel, item.version);
        if with_hashes {
            for file in &item.files {
                if let Some(sha) = &file.sha256 {
                    let _ = write!(out, " \\\n    --hash=sha256:{sha}");
                }
            }
        }
        out.push('\n');
    }
    out
}

/// pip's `--report` output: what it installed, from where, with which hash.
#[derive(Deserialize)]
struct PipReport {
    install: Vec<PipInstalled>,
}

#[derive(Deserialize)]
struct PipInstalled {
    download_info: PipDownload,
    metadata: PipMetadata,
}

#[derive(Deserialize)]
struct PipDownload {
    url: String,
    #[serde(default)]
    archive_info: Option<PipArchive>,
}

#[derive(Deserialize)]
struct PipArchive {
    #[serde(default)]
    hashes: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct PipMetadata {
    name: String,
    version: String,
}

/// The wheels pip reports it installed, matched to the set.
fn tested_wheels(report: &str) -> anyhow::Result<Vec<TestedWheel>> {
    let report: PipReport = serde_json::from_str(report).context("reading pip's install report")?;
    Ok(report
        .install
        .into_iter()
        .map(|item| {
            let filename = item
                .download_info
                .url
                .rsplit('/')
                .next()
                .map(|segment| {
                    crate::index::client::percent_decode(
                        segment.split('#').next().unwrap_or(segment),
                    )
                })
                .unwrap_or_default();
            TestedWheel {
                name: item.metadata.name,
                version: item.metadata.version,
                filename,
                sha256: item
                    .download_info
                    .archive_info
                    .and_then(|a| a.hashes.get("sha256").cloned())
                    .unwrap_or_default()
                    .to_ascii_lowercase(),
            }
        })
        .collect())
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

/// A finished smoke run.
pub struct SmokeRun {
    pub report: TestReport,
    /// Set when a signal stopped the run.
    pub interrupted: Option<i32>,
}

/// The checks of a run so far.
struct Checks<'a> {
    ctx: &'a Context,
    task: crate::ui::Task,
    list: Vec<Check>,
    interrupted: Option<i32>,
}

impl Checks<'_> {
    /// Runs one check (`None`: skipped because an earlier step failed); true when it passed.
    fn run(&mut self, name: String, kind: &str, project: Option<&str>, cmd: Option<Cmd>) -> bool {
        let started = jiff::Timestamp::now();
        self.task.phase(name.clone());
        let cmd = cmd.filter(|_| self.interrupted.is_none());
        let (result, detail) = match cmd {
            None if self.interrupted.is_some() => {
                (Outcome::Cancelled, "the run was interrupted".to_string())
            }
            None => (Outcome::Skipped, "an earlier step failed".to_string()),
            Some(cmd) => match self.ctx.runner.run(&cmd) {
                Ok(output) => (Outcome::Passed, output.tail.join("\n")),
                Err(ProcessError::Interrupted { signal, .. }) => {
                    self.interrupted = Some(signal);
                    (
                        Outcome::Cancelled,
                        format!("interrupted by signal {signal}"),
                    )
                }
                Err(error) => (Outcome::Failed, error.to_string()),
            },
        };
        self.list.push(Check {
            name,
            kind: kind.to_string(),
            project: project.map(String::from),
            result,
            started,
            finished: jiff::Timestamp::now(),
            detail: tail(&detail, 30),
        });
        result == Outcome::Passed
    }
}

/// Runs the smoke test and returns its report (written by the caller).
pub fn run(ctx: &Context, settings: &Settings, selected: &[Selected]) -> anyhow::Result<SmokeRun> {
    let started = jiff::Timestamp::now();
    let mut wheels = Vec::new();
    let mut checks = Checks {
        ctx,
        task: ctx.ui.task("smoke"),
        list: Vec::new(),
        interrupted: None,
    };

    let python = settings.venv.join("bin/python");
    let create = self::python(ctx, &settings.python)
        .label("smoke: venv")
        .args(["-m", "venv"])
        // A venv left by an earlier run is emptied: smoke always starts fresh.
        .args(settings.clear_venv.then_some("--clear"))
        .arg(&settings.venv)
        .log_to(settings.log_dir.join("venv.log"))
        .timeout(Duration::from_secs(300));
    let venv_ok = checks.run("create venv".into(), "install", None, Some(create));

    let requirements_file = settings.work_dir.join("requirements.txt");
    let plain_file = settings.work_dir.join("set.txt");
    let pip_report = settings.work_dir.join("pip-report.json");
    crate::fsutil::write_atomic(&requirements_file, requirements(selected, true).as_bytes())?;
    crate::fsutil::write_atomic(&plain_file, requirements(selected, false).as_bytes())?;
    let install = venv_ok.then(|| {
        pip(ctx, &python, settings, "smoke: install the set")
            .args([
                "install",
                "--no-deps",
                "--require-hashes",
                "--only-binary",
                ":all:",
                "--report",
            ])
            .arg(&pip_report)
            .args(["--index-url", &settings.index_url])
            .arg("-r")
            .arg(&requirements_file)
            .log_to(settings.log_dir.join("install-set.log"))
    });
    let installed = checks.run(
        "install the set (hash-checked)".into(),
        "install",
        None,
        install,
    );
    if installed {
        match fs_err::read_to_string(&pip_report)
            .map_err(anyhow::Error::from)
            .and_then(|text| tested_wheels(&text))
        {
            Ok(found) => wheels = found,
            Err(error) => ctx.ui.warn(format!(
                "{error:#}; the report will not name the installed wheels"
            )),
        }
    }
    let dependencies = installed.then(|| {
        let mut cmd = pip(ctx, &python, settings, "smoke: install dependencies").args([
            "install",
            "--index-url",
            &settings.index_url,
        ]);
        for extra in &settings.extra_index_urls {
            cmd = cmd.args(["--extra-index-url", extra]);
        }
        cmd.arg("-r")
            .arg(&plain_file)
            .log_to(settings.log_dir.join("install-dependencies.log"))
    });
    let dependencies_ok = checks.run("install dependencies".into(), "install", None, dependencies);
    let consistent = dependencies_ok.then(|| {
        venv_python(ctx, &python, settings)
            .label("smoke: pip check")
            .args(["-m", "pip", "check"])
            .log_to(settings.log_dir.join("pip-check.log"))
            .timeout(Duration::from_secs(300))
    });
    let consistent_ok = checks.run("pip check".into(), "install", None, consistent);

    for item in selected {
        let name = &item.project.name;
        let import = consistent_ok.then(|| {
            venv_python(ctx, &python, settings)
                .label(format!("smoke: import {}", item.project.wheel))
                .args([
                    "-I",
                    "-c",
                    IMPORT_SCRIPT,
                    &item.project.wheel,
                    &item.version,
                ])
                .log_to(settings.log_dir.join(format!("{name}-import.log")))
                .timeout(CHECK_TIMEOUT)
        });
        let imported = checks.run(
            format!("import {}", item.project.wheel),
            "import",
            Some(name),
            import,
        );
        let smoke = imported.then(|| {
            venv_python(ctx, &python, settings)
                .label(format!("smoke: {name}"))
                .args(["-I", "-c", &item.project.smoke])
                .log_to(settings.log_dir.join(format!("{name}-smoke.log")))
                .timeout(CHECK_TIMEOUT)
        });
        checks.run(format!("smoke {name}"), "smoke", Some(name), smoke);
    }
    let Checks {
        task,
        list,
        interrupted,
        ..
    } = checks;
    let failed = list.iter().filter(|c| c.result == Outcome::Failed).count();
    let result = if interrupted.is_some() {
        Outcome::Cancelled
    } else if failed > 0 {
        Outcome::Failed
    } else {
        Outcome::Passed
    };
    task.finish(match result {
        Outcome::Passed => format!("{} checks passed", list.len()),
        Outcome::Cancelled => "interrupted".to_string(),
        _ => format!("{failed} of {} checks failed", list.len()),
    });
    let report = TestReport {
        schema: REPORT_SCHEMA,
        kind: "smoke".into(),
        generated_by: format!("rockbuild {}", env!("CARGO_PKG_VERSION")),
        index_url: crate::redact::redact_url(&settings.index_url),
        python: python_version(ctx, &python),
        started,
        finished: jiff::Timestamp::now(),
        result,
        wheels: wheels
            .into_iter()
            .filter(|w| {
                selected
                    .iter()
                    .any(|s| normalize_name(&s.project.wheel) == normalize_name(&w.name))
            })
            .collect(),
        checks: list,
    };
    Ok(SmokeRun {
        report,
        interrupted,
    })
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Variables that would make a child Python or pip ignore the venv or the index we give it.
fn scrubbed(ctx: &Context, mut cmd: Cmd) -> Cmd {
    let names: Vec<String> = ctx
        .env()
        .iter()
        .filter_map(|(key, _)| key.to_str().map(String::from))
        .filter(|key| key.starts_with("PIP_") || key.starts_with("UV_"))
        .collect();
    for name in names {
        cmd = cmd.env_remove(name);
    }
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

fn python(ctx: &Context, program: &Path) -> Cmd {
    scrubbed(ctx, Cmd::new(program))
}

fn venv_python(ctx: &Context, python: &Path, settings: &Settings) -> Cmd {
    scrubbed(ctx, Cmd::new(python)).cwd(&settings.work_dir)
}

fn pip(ctx: &Context, python: &Path, settings: &Settings, label: &str) -> Cmd {
    venv_python(ctx, python, settings)
        .label(label)
        .args(["-m", "pip"])
        // Only the indexes on this command line: no pip.conf, no cache from other runs.
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("PIP_NO_INPUT", "1")
        .env("PIP_NO_CACHE_DIR", "1")
        .timeout(INSTALL_TIMEOUT)
        .idle_timeout(INSTALL_IDLE)
        .retry(Retry {
            attempts: 3,
            backoff: Duration::from_secs(2),
            is_transient: pip_transient,
        })
}

/// pip failures worth another attempt: the network, not the resolver.
fn pip_transient(tail: &str) -> bool {
    [
        "Connection reset",
        "ConnectionError",
        "Read timed out",
        "timed out",
        "HTTP error 5",
        "Temporary failure in name resolution",
        "IncompleteRead",
    ]
    .iter()
    .any(|pattern| tail.contains(pattern))
}

fn python_version(ctx: &Context, python: &Path) -> Option<String> {
    let cmd = Cmd::new(python)
        .label("smoke: python version")
        .args(["-c", "import platform; print(platform.python_version())"])
        .capture_stdout();
    ctx.runner
        .run(&cmd)
        .ok()
        .map(|o| o.stdout.trim().to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_pin_versions_and_every_hash() {
        let stack = Stack::load(None).expect("stack");
        let file = |name: &str, sha: char| RemoteFile {
            filename: name.into(),
            url: format!("http://x/{name}"),
            sha256: Some(sha.to_string().repeat(64)),
            requires_python: None,
            metadata: None,
            size: None,
            yanked: false,
        };
        let selected = vec![Selected {
            project: stack.projects["torch"].clone(),
            version: "2.9.0+rocm7.0.0".into(),
            files: vec![
                file("torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl", 'a'),
                file("torch-2.9.0+rocm7.0.0-cp312-cp312-linux_x86_64.whl", 'b'),
            ],
        }];
        assert_eq!(
            requirements(&selected, true),
            format!(
                "torch==2.9.0+rocm7.0.0 \\\n    --hash=sha256:{} \\\n    --hash=sha256:{}\n",
                "a".repeat(64),
                "b".repeat(64)
            )
        );
        assert_eq!(requirements(&selected, false), "torch==2.9.0+rocm7.0.0\n");
    }

    #[test]
    fn pip_reports_name_the_installed_files() {
        let report = r#"{"version": "1", "install": [{
            "download_info": {"url": "http://127.0.0.1:8000/torch/torch-2.9.0%2Brocm7.0.0-cp311-cp311-linux_x86_64.whl",
                              "archive_info": {"hash": "sha256=AB", "hashes": {"sha256": "AB"}}},
            "requested": true,
            "metadata": {"name": "torch", "version": "2.9.0+rocm7.0.0", "metadata_version": "2.1"}}]}"#;
        assert_eq!(
            tested_wheels(report).expect("parse"),
            vec![TestedWheel {
                name: "torch".into(),
                version: "2.9.0+rocm7.0.0".into(),
                filename: "torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl".into(),
                sha256: "ab".into(),
            }]
        );
    }
}
