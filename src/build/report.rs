//! What a build leaves behind for people and later jobs: `<output>/build-report.json` (per
//! project: status, version, wheel, sha256, size, timing, targets, cache hit, fingerprint)
//! and a Markdown summary (also appended to the GitHub step summary). The previous report is
//! also the build cache's index: a project whose fingerprint matches a wheel it lists, with
//! the same bytes, is not rebuilt.

use crate::ui::Markdown;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use super::execute::ProjectOutcome;
use super::plan::Plan;
use crate::recipes::WheelVersion;

/// The report format version.
pub const SCHEMA: u32 = 1;
pub const REPORT_FILE: &str = "build-report.json";
pub const SUMMARY_FILE: &str = "build-summary.md";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Built in this run.
    Built,
    /// Unchanged inputs: the wheel of an earlier run was reused.
    Cached,
    Failed,
    /// Not attempted because a project it builds against failed or was skipped.
    Skipped,
    /// Left out of this build: the wheel an earlier build left is used as it is.
    Reused,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Built => "built",
            Status::Cached => "cached",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::Reused => "reused",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct BuildReport {
    pub schema: u32,
    pub generated_by: String,
    pub started_at: String,
    pub wall_seconds: f64,
    /// The longest chain of dependent project durations: the best wall time any schedule
    /// could reach with unlimited --jobs.
    pub critical_path_seconds: f64,
    /// Sum of all project durations: the wall time of a serial build.
    pub serial_seconds: f64,
    pub sdk_version: String,
    pub targets: Vec<String>,
    pub target_source: String,
    pub release_type: String,
    pub version_suffix: String,
    pub jobs: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler_cache: Option<CompilerCacheReport>,
    pub projects: IndexMap<String, ProjectReport>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct CompilerCacheReport {
    pub tool: String,
    /// `--show-stats` output after the build.
    pub stats: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct ProjectReport {
    pub status: Status,
    /// `None`: a source component, which makes no wheel.
    #[serde(default)]
    pub dist: Option<String>,
    pub version: String,
    /// When the plan did not hand the build this version: decided by the build (and why), or
    /// predicted otherwise than built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_decided: Option<String>,
    /// Wheel file name in the output directory.
    #[serde(default)]
    pub wheel: Option<String>,
    #[serde(default)]
    pub sha256: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    /// When the project started, in seconds after the build started.
    pub start_seconds: f64,
    pub duration_seconds: f64,
    pub targets: Vec<String>,
    pub cache_hit: bool,
    #[serde(default)]
    pub fingerprint: Option<String>,
    pub after: Vec<String>,
    pub log: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A multi-arch build's split of this project's fat wheel (the wheel, sha256 and size
    /// above are the fat wheel's, as built, kept in `fat/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitReport>,
}

/// What the split of one fat wheel wrote to the output directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct SplitReport {
    /// Where the fat wheel is kept, relative to the output directory (`fat/<wheel>`).
    pub fat_wheel: String,
    /// The host wheel: the fat wheel's name, its binaries without device code.
    pub host: WheelFile,
    /// The binaries whose device code moved to the packs, by path in the wheel.
    pub fat_binaries: Vec<String>,
    /// Bytes the host wheel's binaries lost.
    pub bytes_removed: u64,
    /// One per target, in the splitter's order.
    pub devices: Vec<DeviceReport>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct WheelFile {
    pub wheel: String,
    pub sha256: String,
    pub size: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct DeviceReport {
    /// The distribution (`amd-torch-device-gfx906`).
    pub name: String,
    /// The gfx target whose code objects it holds.
    pub target: String,
    #[serde(flatten)]
    pub file: WheelFile,
    pub code_objects: usize,
}

impl BuildReport {
    /// The previous report in `output_dir`, if there is a readable one of this schema.
    pub fn read(output_dir: &Path) -> Option<BuildReport> {
        let text =
            crate::input::read_text(&output_dir.join(REPORT_FILE), crate::input::RECORD).ok()?;
        let report: BuildReport = crate::input::strict::json(&text).ok()?;
        (report.schema == SCHEMA).then_some(report)
    }

    pub fn write(&self, output_dir: &Path) -> anyhow::Result<PathBuf> {
        let path = output_dir.join(REPORT_FILE);
        let mut text =
            serde_json::to_string_pretty(self).context("serializing the build report")?;
        text.push('\n');
        crate::fsutil::write_atomic(&path, text.as_bytes())?;
        Ok(path)
    }

    /// The wheel an earlier build produced with exactly this fingerprint, if it is still in
    /// `output_dir` with the bytes the report recorded.
    pub fn cached_wheel(
        &self,
        output_dir: &Path,
        project: &str,
        fingerprint: &str,
    ) -> Option<(String, String, u64)> {
        let (entry, sha256, size) = self.wheel_of(output_dir, project)?;
        (entry.fingerprint.as_deref() == Some(fingerprint)).then(|| {
            let wheel = entry.wheel.clone().unwrap_or_default();
            (wheel, sha256, size)
        })
    }

    /// The project's entry, when the wheel it records is still in `output_dir` (or, after a
    /// multi-arch build, in its `fat/`, where the split keeps the built wheel) with the
    /// recorded bytes: what a build that leaves the project out uses. Returns the entry, the
    /// wheel's sha256 and size.
    pub fn wheel_of(
        &self,
        output_dir: &Path,
        project: &str,
    ) -> Option<(&ProjectReport, String, u64)> {
        let entry = self.projects.get(project)?;
        if !matches!(
            entry.status,
            Status::Built | Status::Cached | Status::Reused
        ) {
            return None;
        }
        let wheel = entry.wheel.as_deref()?;
        let fat = output_dir.join(super::split::FAT_DIR).join(wheel);
        let path = if fat.is_file() {
            fat
        } else {
            output_dir.join(wheel)
        };
        let (sha256, size) = crate::fsutil::sha256_file(&path).ok()?;
        (Some(&sha256) == entry.sha256.as_ref()).then_some((entry, sha256, size))
    }

    /// The Markdown summary: one row per project, then the totals.
    pub fn markdown(&self) -> Markdown {
        let rows: Vec<Vec<Markdown>> = self
            .projects
            .iter()
            .map(|(name, p)| {
                vec![
                    Markdown::text(name),
                    Markdown::text(p.status.as_str()),
                    Markdown::code(&p.version),
                    p.wheel
                        .as_deref()
                        .map_or_else(|| Markdown::lit("—"), Markdown::code),
                    Markdown::text(
                        &p.size
                            .map(crate::ui::human_bytes)
                            .unwrap_or_else(|| "—".into()),
                    ),
                    Markdown::text(&format!("{:.1}s", p.duration_seconds)),
                ]
            })
            .collect();
        let mut out = Markdown::lit("### rockbuild build\n\nROCm SDK ");
        out.push(Markdown::code(&self.sdk_version))
            .push_lit(", targets ")
            .push(Markdown::code(&self.targets.join(",")))
            .push_text(&format!(
                " ({} from {}), release type ",
                self.targets.len(),
                self.target_source
            ))
            .push(Markdown::code(&self.release_type))
            .push_lit("\n\n")
            .push(crate::ui::markdown_table_of(
                &["project", "status", "version", "wheel", "size", "time"],
                rows,
            ))
            .push_lit("\n")
            .push_text(&format!(
                "wall time {:.1}s (critical path {:.1}s, serial {:.1}s, {} job(s))",
                self.wall_seconds, self.critical_path_seconds, self.serial_seconds, self.jobs
            ))
            .push_lit("\n");
        for (name, split) in self
            .projects
            .iter()
            .filter_map(|(name, p)| Some((name, p.split.as_ref()?)))
        {
            out.push_lit("\nsplit ")
                .push_text(name)
                .push_lit(": host ")
                .push(Markdown::code(&split.host.wheel))
                .push_text(&format!(
                    " ({}), {}",
                    crate::ui::human_bytes(split.host.size),
                    split
                        .devices
                        .iter()
                        .map(|d| format!(
                            "{} ({}, {})",
                            d.name,
                            d.target,
                            crate::ui::human_bytes(d.file.size)
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .push_lit("\n");
        }
        if let Some(cache) = &self.compiler_cache {
            out.push_lit("\n<details><summary>")
                .push_text(&format!("{} statistics", cache.tool))
                .push_lit("</summary>\n\n")
                .push(Markdown::code_block(&cache.stats))
                .push_lit("</details>\n");
        }
        out
    }
}

/// The report of a finished (or failed) build.
/// What the report says of a version the plan did not hand the build.
fn decided(planned: &WheelVersion, built: Option<&str>) -> Option<String> {
    match (planned, built) {
        (WheelVersion::Decided { why }, _) => Some(format!("by the build: {why}")),
        (WheelVersion::Predicted { version, from }, Some(built)) if built != version => Some(
            format!("by the build: {built}, where rockbuild predicted {version} ({from})"),
        ),
        _ => None,
    }
}

pub fn of_build(
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
                version: outcome
                    .and_then(|o| o.version.clone())
                    .unwrap_or_else(|| project.version.shown().to_string()),
                version_decided: decided(
                    &project.version,
                    outcome.and_then(|o| o.version.as_deref()),
                ),
                wheel: wheel.map(|w| w.name.clone()),
                sha256: wheel.map(|w| w.sha256.clone()),
                size: wheel.map(|w| w.size),
                start_seconds: outcome.map_or(0.0, |o| o.started.as_secs_f64()),
                duration_seconds: outcome.map_or(0.0, |o| o.duration.as_secs_f64()),
                targets: plan.targets.targets.iter().map(|t| t.to_string()).collect(),
                cache_hit: status == Status::Cached,
                fingerprint: project.fingerprint.clone(),
                after: project.after.iter().map(|d| d.project.clone()).collect(),
                log: project.log.display().to_string(),
                error: outcome.and_then(|o| o.error.as_ref()).map(|e| {
                    e.chain()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join("\n  caused by: ")
                }),
                split: None,
            },
        );
    }
    BuildReport {
        schema: SCHEMA,
        generated_by: format!("rockbuild {}", env!("CARGO_PKG_VERSION")),
        started_at: started_at.to_string(),
        wall_seconds: wall.as_secs_f64(),
        critical_path_seconds: critical_path(&projects),
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

/// The longest dependency chain of durations. `after` may name a project listed later (torch
/// waits for triton), so finishing times are relaxed until they settle (at most one round per
/// project: the plan has no cycles).
pub fn critical_path(projects: &IndexMap<String, ProjectReport>) -> f64 {
    let mut finish: IndexMap<&str, f64> = projects
        .iter()
        .map(|(name, p)| (name.as_str(), p.duration_seconds))
        .collect();
    for _ in 0..projects.len() {
        let mut changed = false;
        for (name, project) in projects {
            let start = project
                .after
                .iter()
                .filter_map(|d| finish.get(d.as_str()))
                .fold(0.0_f64, |a, b| a.max(*b));
            let end = start + project.duration_seconds;
            if finish.get(name.as_str()).is_some_and(|f| end > *f) {
                finish.insert(name, end);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    finish.values().fold(0.0_f64, |a, b| a.max(*b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(after: &[&str], seconds: f64) -> ProjectReport {
        ProjectReport {
            status: Status::Built,
            dist: Some("d".into()),
            version: "1".into(),
            version_decided: None,
            wheel: Some("d-1-py3-none-any.whl".into()),
            sha256: None,
            size: Some(2048),
            start_seconds: 0.0,
            duration_seconds: seconds,
            targets: vec![],
            cache_hit: false,
            fingerprint: None,
            after: after.iter().map(|s| s.to_string()).collect(),
            log: "l".into(),
            error: None,
            split: None,
        }
    }

    #[test]
    fn critical_path_follows_dependencies() {
        let mut projects = IndexMap::new();
        projects.insert("torch".to_string(), project(&[], 10.0));
        projects.insert("audio".to_string(), project(&["torch"], 3.0));
        projects.insert("vision".to_string(), project(&["torch"], 5.0));
        projects.insert("triton".to_string(), project(&[], 12.0));
        assert_eq!(critical_path(&projects), 15.0);
        // torch waits for triton, which the report lists after it.
        projects.insert("torch".to_string(), project(&["triton"], 10.0));
        assert_eq!(critical_path(&projects), 27.0);
    }
}
