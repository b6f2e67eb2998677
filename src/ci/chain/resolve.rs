//! The chain's tables resolved into the workflow model: each row a [`Job`], each step row a
//! [`Step`], artifact names spelled out. Pure; `workflow` renders the result.

use super::tables::{Artifact, JobRow, StepRow, TEST_ENV, Word, test_args};
use crate::ci::parts::{
    CACHE, action, aws_credentials, download, job, lit, pairs, rockbuild, steps, upload, var, when,
};
use crate::ci::workflow::{Arg, Job, Step};

/// The jobs of the rows, in their order.
pub fn jobs(rows: &[JobRow]) -> Vec<Job> {
    rows.iter().map(resolve_job).collect()
}

fn resolve_job(row: &JobRow) -> Job {
    let body = steps(
        row.runs,
        row.outputs,
        row.env,
        row.steps.iter().map(resolve_step).collect(),
    );
    let mut out = job(row.id, row.name, row.needs, body);
    out.condition = row.condition.map(str::to_string);
    out.matrix = row.matrix.map(str::to_string);
    if row.oidc {
        out.permissions = pairs(&[("id-token", "write")]);
    }
    out
}

fn resolve_step(row: &StepRow) -> Step {
    match *row {
        StepRow::Run { name, env, args } => rockbuild(name, env, args.iter().map(arg).collect()),
        StepRow::Upload {
            name,
            artifact,
            paths,
        } => upload(name, &artifact_name(artifact), paths),
        StepRow::Download {
            name,
            artifact,
            path,
        } => download(name, &artifact_name(artifact), path),
        StepRow::Cache { name, with } => action(name, CACHE, with),
        StepRow::Credentials => aws_credentials(),
        StepRow::Test { name, sources } => {
            rockbuild(name, TEST_ENV, test_args(sources).iter().map(arg).collect())
        }
        StepRow::When(condition, inner) => when(resolve_step(inner), condition),
    }
}

fn arg(word: &Word) -> Arg {
    match *word {
        Word::Lit(word) => lit(word),
        Word::Var(name) => var(name),
    }
}

/// `<kind>-<ref slug>-<family><rest>`: artifact names are unique per run, and one chain's
/// artifacts never match another's pattern.
fn artifact_name(artifact: Artifact) -> String {
    format!(
        "{}-${{{{ inputs.ref-slug }}}}-${{{{ inputs.family }}}}{}",
        artifact.kind, artifact.rest
    )
}
