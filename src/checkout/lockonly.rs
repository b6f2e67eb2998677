//! `rockbuild lock`: resolve every pin to a commit — and every submodule, recursively — without
//! creating working trees. Objects are fetched shallowly into bare repositories in the cache
//! directory, one per origin URL, so a CI setup job can hand one lock to every later job and
//! every submodule commit is proven reachable before any build starts (TheRock#2129).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use git2::Oid;
use rayon::prelude::*;

use super::pins::{PinBoard, PinFiles};
use super::project::{self, Outcome, SummaryRow};
use super::{Selection, resolve_submodule_url};
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::git::{self, Git, local};
use crate::lock::{LockedProject, LockedSubmodule};
use crate::stack::Project;
use crate::ui::Task;

/// Resolves the selection and writes the lock.
pub fn run(selection: &Selection, cache: &Path, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let outcomes = super::run_projects(selection, ctx, |project, pins_from, posts_to, task| {
        resolve_project(ctx, selection, cache, project, pins_from, posts_to, task)
    })?;
    super::finish(selection, ctx, outcomes)
}

fn resolve_project(
    ctx: &Context,
    selection: &Selection,
    cache: &Path,
    project: &Project,
    pins_from: Option<&PinBoard>,
    posts_to: Option<&PinBoard>,
    task: &Task,
) -> anyhow::Result<Outcome> {
    let (resolved, fetch_ref) = project::resolve(project, selection, pins_from, task)?;
    task.phase(format!("resolving {}", resolved.requested_ref));
    let mirror = Mirror::open(cache, &resolved.origin)?;
    let commit = mirror.fetch(ctx, &fetch_ref, selection, &project.name)?;
    if let Some(board) = posts_to {
        board.post(Ok(PinFiles::Commit {
            repo_dir: mirror.dir.clone(),
            commit: commit.to_string(),
            display_prefix: format!("{}/", project.checkout_dir),
        }));
    }
    let repo = local::open(&mirror.dir)?;
    let tree = local::tree_of(&repo, commit)?;
    let submodules = if selection.submodules && project.submodules {
        task.phase("resolving submodules");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(selection.jobs.max(1))
            .build()
            .context("starting the submodule fetch pool")?;
        pool.install(|| {
            submodules_of(
                ctx,
                selection,
                cache,
                &mirror,
                &resolved.origin,
                commit,
                "",
                &project.name,
            )
        })?
    } else {
        Vec::new()
    };
    let row = SummaryRow {
        project: project.name.clone(),
        reference: resolved.requested_ref.clone(),
        commit: commit.to_string(),
        submodules: submodules.len(),
        hipify: "not run (lock)".to_string(),
        state: "resolved",
        elapsed: task.elapsed(),
    };
    Ok(Outcome {
        locked: LockedProject {
            checkout_dir: project.checkout_dir.clone(),
            origin: resolved.origin,
            requested_ref: resolved.requested_ref,
            commit: commit.to_string(),
            tree: tree.to_string(),
            pin: resolved.pin,
            submodules,
            hipify: None,
        },
        row,
    })
}

/// Every submodule below `commit`, recursively, each fetched to prove it is reachable.
#[expect(
    clippy::too_many_arguments,
    reason = "a recursive walk carrying its context"
)]
fn submodules_of(
    ctx: &Context,
    selection: &Selection,
    cache: &Path,
    mirror: &Mirror,
    origin: &str,
    commit: Oid,
    prefix: &str,
    project: &str,
) -> anyhow::Result<Vec<LockedSubmodule>> {
    let repo = local::open(&mirror.dir)?;
    let links = local::gitlinks_at(&repo, commit)?;
    let nested: Vec<anyhow::Result<Vec<LockedSubmodule>>> = links
        .par_iter()
        .map(|link| {
            let path = format!("{prefix}{}", link.path);
            if link.url.is_empty() {
                return Err(crate::exit::usage(format!(
                    "'{project}': submodule {path} has no url in .gitmodules at {}",
                    project::short(&commit.to_string())
                )));
            }
            let url = resolve_submodule_url(origin, &link.url);
            let child = Mirror::open(cache, &url)?;
            let child_commit = child
                .fetch(ctx, &link.commit, selection, project)
                .with_context(|| {
                    format!(
                        "'{project}': submodule {path} at {} is not reachable from {}",
                        link.commit,
                        crate::redact::redact_url(&url)
                    )
                })?;
            let mut found = vec![LockedSubmodule {
                path: path.clone(),
                commit: link.commit.clone(),
                url: link.url.clone(),
            }];
            found.extend(submodules_of(
                ctx,
                selection,
                cache,
                &child,
                &url,
                child_commit,
                &format!("{path}/"),
                project,
            )?);
            Ok(found)
        })
        .collect();
    let mut all = Vec::new();
    for result in nested {
        all.extend(result?);
    }
    Ok(all)
}

/// A bare repository in the cache holding objects of one origin URL.
struct Mirror {
    dir: PathBuf,
    origin: String,
}

impl Mirror {
    fn open(cache: &Path, origin: &str) -> anyhow::Result<Mirror> {
        let digest = crate::fsutil::sha256_hex(origin.as_bytes());
        let slug: String = origin
            .rsplit('/')
            .next()
            .unwrap_or("repo")
            .trim_end_matches(".git")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let dir = cache
            .join("git")
            .join(format!("{slug}-{}.git", &digest[..12]));
        if !dir.join("HEAD").exists() {
            fs_err::create_dir_all(&dir)?;
            git2::Repository::init_bare(&dir)
                .with_context(|| format!("creating the git cache {}", dir.display()))?;
        }
        Ok(Mirror {
            dir,
            origin: origin.to_string(),
        })
    }

    /// Fetches `reference` (shallow) unless it is a commit already here; returns the commit.
    fn fetch(
        &self,
        ctx: &Context,
        reference: &str,
        selection: &Selection,
        project: &str,
    ) -> anyhow::Result<Oid> {
        let repo = local::open(&self.dir)?;
        if git::is_full_sha(reference)
            && let Ok(oid) = Oid::from_str(reference)
            && repo.find_commit(oid).is_ok()
        {
            return Ok(oid);
        }
        // One fetch at a time per cache repository: FETCH_HEAD is shared.
        let lock_file = fs_err::File::create(self.dir.join("rockbuild.lock"))?;
        lock_file.file().lock().context("locking the git cache")?;
        let git = Git::new(&self.dir, project)
            .log_to(self.dir.join("rockbuild-fetch.log"))
            .allow_file_protocol(git::is_local_origin(&self.origin));
        let cmd = git.transfer(
            [
                "fetch",
                "--progress",
                "--depth=1",
                "--no-tags",
                &self.origin,
                reference,
            ],
            selection.limits,
        );
        ctx.runner
            .run(&cmd)
            .map_err(|error| git::fetch_failure(error, reference, project, &self.origin))?;
        let fetch_head = fs_err::read_to_string(self.dir.join("FETCH_HEAD"))?;
        let (object, _) = git::parse_fetch_head(&fetch_head).ok_or_else(|| {
            anyhow::anyhow!("could not read FETCH_HEAD in {}", self.dir.display())
        })?;
        local::peel_to_commit(&repo, Oid::from_str(&object)?)
    }
}
