//! The chain's tables resolved into the workflow model for one mode and platform: each row a
//! [`Job`], each step row a [`Step`], placeholders filled and artifact names spelled out.
//! Pure; `workflow` renders the result.

use super::tables::{
    Artifact, JobRow, OnWindows, PYTHON, StepRow, TEST_ENV, WINDOWS_PYTHON, Word, test_args,
};
use crate::ci::parts::{
    CACHE, action, add_to_path, aws_credentials, command, download, job, lit, rockbuild, steps,
    upload, var, when, windows_steps,
};
use crate::ci::workflow::{Arg, Job, Step};
use crate::lock::mode::BuildMode;
use crate::platform::Platform;

/// The jobs of the rows, in their order, for the chain of `mode` on `platform`.
pub fn jobs(rows: &[JobRow], mode: BuildMode, platform: Platform) -> Vec<Job> {
    let fill = Fill { mode, platform };
    rows.iter().map(|row| fill.job(row)).collect()
}

/// Fills the tables' placeholders (see `tables`) for one mode and platform.
#[derive(Clone, Copy)]
struct Fill {
    mode: BuildMode,
    platform: Platform,
}

impl Fill {
    fn text(self, text: &str) -> String {
        let (chain, family, family_part, family_dir) = match self.mode {
            BuildMode::PerFamily => (
                "${{ inputs.family }}",
                "${{ inputs.family }}",
                "",
                "/${{ inputs.family }}",
            ),
            BuildMode::MultiArch => (
                "multi-arch",
                "${{ matrix.family }}",
                "-${{ matrix.family }}",
                "",
            ),
        };
        let (chain, python, platform_part) = match self.platform {
            Platform::Linux => (chain.to_string(), PYTHON, ""),
            Platform::Windows => (format!("{chain} on Windows"), WINDOWS_PYTHON, "-windows"),
        };
        text.replace("{chain}", &chain)
            .replace("{family-part}", family_part)
            .replace("{family-dir}", family_dir)
            .replace("{family}", family)
            .replace("{python}", python)
            .replace("{platform-part}", platform_part)
    }

    fn pairs(self, pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), self.text(v)))
            .collect()
    }

    fn job(self, row: &JobRow) -> Job {
        let outputs = self.pairs(row.outputs);
        let mut env = self.pairs(row.env);
        let runner = match (self.platform, row.windows) {
            (Platform::Windows, OnWindows::Runner { setup, env: more }) => Some((setup, more)),
            _ => None,
        };
        let mut all: Vec<Step> = Vec::new();
        if let Some((setup, more)) = runner {
            env.extend(self.pairs(more));
            all.extend(setup.iter().filter_map(|s| self.step(s)));
        }
        all.extend(row.steps.iter().filter_map(|s| self.step(s)));
        let body = match runner {
            Some(_) => windows_steps(
                &self.text(row.runs.on),
                row.runs.timeout,
                &borrow(&outputs),
                &borrow(&env),
                all,
            ),
            None => steps(row.runs, &borrow(&outputs), &borrow(&env), all),
        };
        let mut out = job(row.id, &self.text(row.name), row.needs, body);
        out.condition = row.condition.map(str::to_string);
        out.matrix = row.matrix.map(str::to_string);
        if row.oidc {
            out.permissions = vec![("id-token".into(), "write".into())];
        }
        out
    }

    /// The step of a row, or none when the row is only for the other platform.
    fn step(self, row: &StepRow) -> Option<Step> {
        Some(match *row {
            StepRow::Run { name, env, args } => self.run(name, env, args),
            StepRow::Upload {
                name,
                artifact,
                paths,
            } => upload(name, &self.artifact(artifact), paths),
            StepRow::Download {
                name,
                artifact,
                path,
            } => download(name, &self.artifact(artifact), path),
            StepRow::Cache { name, with } => action(name, CACHE, with),
            StepRow::Command {
                name,
                env,
                program,
                args,
            } => {
                let (args, env) = self.args_and_env(env, args);
                command(name, &borrow(&env), program, args)
            }
            StepRow::Action {
                name,
                id,
                action: which,
                with,
            } => {
                let with = self.pairs(with);
                Step {
                    id: id.map(str::to_string),
                    ..action(name, which, &borrow(&with))
                }
            }
            StepRow::AddToPath { name, env, var } => {
                add_to_path(name, &borrow(&self.pairs(env)), var)
            }
            StepRow::Credentials => aws_credentials(),
            StepRow::Test { name, sources } => self.run(name, TEST_ENV, &test_args(sources)),
            StepRow::When(condition, inner) => when(self.step(inner)?, condition),
            StepRow::Only(platform, inner) if platform == self.platform => self.step(inner)?,
            StepRow::Only(..) => return None,
        })
    }

    /// A `rockbuild` step: the mode's words, and of the env only what they use (a variable
    /// only the other mode's words read is left out).
    fn run(self, name: &str, env: &[(&str, &str)], words: &[Word]) -> Step {
        let (args, env) = self.args_and_env(env, words);
        rockbuild(name, &borrow(&env), args)
    }

    fn args_and_env(
        self,
        env: &[(&str, &str)],
        words: &[Word],
    ) -> (Vec<Arg>, Vec<(String, String)>) {
        let mut args = Vec::new();
        self.args(words, &mut args);
        let env: Vec<(String, String)> = self
            .pairs(env)
            .into_iter()
            .filter(|(key, _)| args.iter().any(|a| matches!(a, Arg::Var(v) if v == key)))
            .collect();
        (args, env)
    }

    fn args(self, words: &[Word], out: &mut Vec<Arg>) {
        for word in words {
            let only = |words, mode: Option<BuildMode>, platform: Option<Platform>| {
                (mode.is_none_or(|m| m == self.mode) && platform.is_none_or(|p| p == self.platform))
                    .then_some(words)
            };
            let inner = match *word {
                Word::Lit(word) => {
                    out.push(lit(word));
                    None
                }
                Word::Var(name) => {
                    out.push(var(name));
                    None
                }
                Word::PerFamily(words) => only(words, Some(BuildMode::PerFamily), None),
                Word::MultiArch(words) => only(words, Some(BuildMode::MultiArch), None),
                Word::Linux(words) => only(words, None, Some(Platform::Linux)),
                Word::Windows(words) => only(words, None, Some(Platform::Windows)),
            };
            if let Some(words) = inner {
                self.args(words, out);
            }
        }
    }

    /// `<kind>-<ref slug>-<chain><rest>`: artifact names are unique per run, and one chain's
    /// artifacts never match another's pattern. A Windows chain's are
    /// `<kind>-<ref slug>-windows-<chain><rest>`: the callers run both platforms' chains of a
    /// ref and family in one run.
    fn artifact(self, artifact: Artifact) -> String {
        let chain = match self.mode {
            BuildMode::PerFamily => "${{ inputs.family }}",
            BuildMode::MultiArch => "multi-arch",
        };
        let platform = match self.platform {
            Platform::Linux => "",
            Platform::Windows => "windows-",
        };
        self.text(&format!(
            "{}-${{{{ inputs.ref-slug }}}}-{platform}{chain}{}",
            artifact.kind, artifact.rest
        ))
    }
}

fn borrow(pairs: &[(String, String)]) -> Vec<(&str, &str)> {
    pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect()
}
