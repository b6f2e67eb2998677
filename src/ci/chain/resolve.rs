//! The chain's tables resolved into the workflow model for one mode: each row a [`Job`], each
//! step row a [`Step`], placeholders filled and artifact names spelled out. Pure; `workflow`
//! renders the result.

use super::tables::{Artifact, JobRow, StepRow, TEST_ENV, Word, test_args};
use crate::ci::parts::{
    CACHE, action, aws_credentials, download, job, lit, rockbuild, steps, upload, var, when,
};
use crate::ci::workflow::{Arg, Job, Step};
use crate::lock::mode::BuildMode;

/// The jobs of the rows, in their order, for the chain of `mode`.
pub fn jobs(rows: &[JobRow], mode: BuildMode) -> Vec<Job> {
    let fill = Fill(mode);
    rows.iter().map(|row| fill.job(row)).collect()
}

/// Fills the tables' placeholders (see `tables`) for one mode.
#[derive(Clone, Copy)]
struct Fill(BuildMode);

impl Fill {
    fn text(self, text: &str) -> String {
        let (chain, family, family_part, family_dir) = match self.0 {
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
        text.replace("{chain}", chain)
            .replace("{family-part}", family_part)
            .replace("{family-dir}", family_dir)
            .replace("{family}", family)
    }

    fn pairs(self, pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), self.text(v)))
            .collect()
    }

    fn job(self, row: &JobRow) -> Job {
        let outputs = self.pairs(row.outputs);
        let env = self.pairs(row.env);
        let body = steps(
            row.runs,
            &borrow(&outputs),
            &borrow(&env),
            row.steps.iter().map(|s| self.step(s)).collect(),
        );
        let mut out = job(row.id, &self.text(row.name), row.needs, body);
        out.condition = row.condition.map(str::to_string);
        out.matrix = row.matrix.map(str::to_string);
        if row.oidc {
            out.permissions = vec![("id-token".into(), "write".into())];
        }
        out
    }

    fn step(self, row: &StepRow) -> Step {
        match *row {
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
            StepRow::Credentials => aws_credentials(),
            StepRow::Test { name, sources } => self.run(name, TEST_ENV, &test_args(sources)),
            StepRow::When(condition, inner) => when(self.step(inner), condition),
        }
    }

    /// A `rockbuild` step: the mode's words, and of the env only what they use (a variable
    /// only the other mode's words read is left out).
    fn run(self, name: &str, env: &[(&str, &str)], words: &[Word]) -> Step {
        let mut args = Vec::new();
        self.args(words, &mut args);
        let env: Vec<(String, String)> = self
            .pairs(env)
            .into_iter()
            .filter(|(key, _)| args.iter().any(|a| matches!(a, Arg::Var(v) if v == key)))
            .collect();
        rockbuild(name, &borrow(&env), args)
    }

    fn args(self, words: &[Word], out: &mut Vec<Arg>) {
        for word in words {
            match (*word, self.0) {
                (Word::Lit(word), _) => out.push(lit(word)),
                (Word::Var(name), _) => out.push(var(name)),
                (Word::PerFamily(words), BuildMode::PerFamily)
                | (Word::MultiArch(words), BuildMode::MultiArch) => self.args(words, out),
                (Word::PerFamily(_) | Word::MultiArch(_), _) => {}
            }
        }
    }

    /// `<kind>-<ref slug>-<chain><rest>`: artifact names are unique per run, and one chain's
    /// artifacts never match another's pattern.
    fn artifact(self, artifact: Artifact) -> String {
        self.text(&format!(
            "{}-${{{{ inputs.ref-slug }}}}-{{chain}}{}",
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
