//! Building the stack's wheels: which projects ([`select`]), target selection ([`targets`]),
//! what is known of the SDK ([`sdk_facts`]), recipes as data ([`recipes`]), the plan
//! ([`plan`]), the DAG executor ([`execute`]), compiler caches ([`compilers`]) and the build
//! report, which is also the build cache's index ([`report`](mod@report)).

pub mod compilers;
pub mod execute;
pub mod plan;
pub mod recipes;
pub mod report;
pub mod sdk_facts;
pub mod select;
pub mod source;
pub mod targets;

use indexmap::IndexMap;

use crate::lock::BuildRecord;
use execute::ProjectOutcome;
use plan::Plan;
use report::{BuildReport, CompilerCacheReport, ProjectReport, Status};

/// What the lock records about a build: every computed version, before anything runs, so a
/// re-run from the same lock names its wheels the same way.
pub fn build_record(plan: &Plan, index_url: Option<String>) -> BuildRecord {
    BuildRecord {
        sdk_version: plan.sdk.info.version.clone(),
        index_url,
        sdk_targets: plan.sdk.info.targets.clone(),
        targets: plan.targets.targets.clone(),
        release_type: plan.release_type.as_str().to_string(),
        version_suffix: plan.suffix.clone(),
        versions: plan
            .projects
            .iter()
            .map(|p| (p.name.clone(), p.version.clone()))
            .collect(),
        stems: plan
            .projects
            .iter()
            .map(|p| {
                let dist = crate::wheel::filename::escape_name(&p.dist);
                (p.name.clone(), format!("{dist}-{}", p.version))
            })
            .collect(),
    }
}

/// The report of a finished (or failed) build.
pub fn report(
    plan: &Plan,
    outcomes: &[ProjectOutcome],
    started_at: jiff::Timestamp,
    wall: std::time::Duration,
    compiler_stats: Option<String>,
) -> BuildReport {
    let mut projects = IndexMap::new();
    for project in &plan.projects {
        let outcome = outcomes.iter().find(|o| o.name == project.name);
        let status = outcome.map_or(Status::Skipped, |o| o.status);
        let wheel = outcome.and_then(|o| o.wheel.as_ref());
        projects.insert(
            project.name.clone(),
            ProjectReport {
                status,
                dist: project.dist.clone(),
                version: project.version.clone(),
                wheel: wheel.map(|w| w.name.clone()),
                sha256: wheel.map(|w| w.sha256.clone()),
                size: wheel.map(|w| w.size),
                start_seconds: outcome.map_or(0.0, |o| o.started.as_secs_f64()),
                duration_seconds: outcome.map_or(0.0, |o| o.duration.as_secs_f64()),
                targets: plan.targets.targets.iter().map(|t| t.to_string()).collect(),
                cache_hit: status == Status::Cached,
                fingerprint: project.fingerprint.clone(),
                after: project.after.clone(),
                log: project.log.display().to_string(),
                error: outcome.and_then(|o| o.error.as_ref()).map(|e| {
                    e.chain()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join("\n  caused by: ")
                }),
            },
        );
    }
    BuildReport {
        schema: report::SCHEMA,
        generated_by: format!("rockbuild {}", env!("CARGO_PKG_VERSION")),
        started_at: started_at.to_string(),
        wall_seconds: wall.as_secs_f64(),
        critical_path_seconds: report::critical_path(&projects),
        serial_seconds: projects.values().map(|p| p.duration_seconds).sum(),
        sdk_version: plan.sdk.info.version.clone(),
        targets: plan.targets.targets.iter().map(|t| t.to_string()).collect(),
        target_source: plan.targets.source.to_string(),
        release_type: plan.release_type.as_str().to_string(),
        version_suffix: plan.suffix.clone(),
        jobs: plan.jobs,
        compiler_cache: plan
            .compiler_cache
            .name()
            .zip(compiler_stats)
            .map(|(tool, stats)| CompilerCacheReport {
                tool: tool.to_string(),
                stats,
            }),
        projects,
    }
}

/// A build in which some projects failed: each failure as the user should read it (its
/// message, the last lines of its log, the repro line, hints), then what was skipped.
#[derive(Debug, thiserror::Error)]
#[error("{}", render_failures(failures, skipped, *total))]
pub struct BuildFailed {
    pub failures: Vec<(String, String)>,
    pub skipped: Vec<String>,
    pub total: usize,
}

fn render_failures(failures: &[(String, String)], skipped: &[String], total: usize) -> String {
    let names: Vec<&str> = failures.iter().map(|(n, _)| n.as_str()).collect();
    let mut text = format!(
        "{} of {total} project(s) failed: {}",
        failures.len(),
        names.join(", ")
    );
    if !skipped.is_empty() {
        text.push_str(&format!(
            "; skipped (they build against a failed project): {}",
            skipped.join(", ")
        ));
    }
    for (name, rendered) in failures {
        text.push_str(&format!("\n\n--- {name} ---\n{rendered}"));
    }
    text
}
