//! Inspecting the world before planning: what a project's tree must become ([`target`]: the
//! resolved commit, the hipify script at that commit and whether the cache has its result) and
//! what the checkout directory holds ([`tree`]). Reads only; the plan decides.

use std::path::Path;

use git2::Oid;

use super::TreeOptions;
use super::plan::{CheckoutFile, HipifyTarget, NodeState, SubmoduleTarget, Target, TreeState};
use super::repos;
use super::resolve::Resolved;
use super::snapshot;
use crate::exec::Runner;
use crate::git::mirror::Mirror;
use crate::git::{Git, local};
use crate::hipify::{self, cache};
use crate::recipes::Recipes;
use crate::stack::{HipifyPolicy, Project, Stack};

/// Where `checkout` marks a tree in flux; the next run repairs a tree that still has it.
pub fn marker(dir: &Path) -> std::path::PathBuf {
    dir.join(".git/rockbuild/incomplete")
}

/// What `project`'s checkout must be, from its resolution and the options.
pub fn target(
    project: &Project,
    recipes: &Recipes,
    stack: &Stack,
    resolved: &Resolved,
    dir: &Path,
    options: &TreeOptions,
    cache_dir: &Path,
) -> anyhow::Result<Target> {
    let commit = Oid::from_str(&resolved.commit)?;
    let submodules_on = !resolved.submodules.is_empty();
    let hipify = match &project.hipify {
        HipifyPolicy::Script { script, .. } if options.hipify => {
            match local::read_file_at(&resolved.mirror.repo()?, commit, script)? {
                None => HipifyTarget::NoScript {
                    script: script.clone(),
                },
                Some(blob) => {
                    let script_sha256 = crate::fsutil::sha256_hex(&blob);
                    let key = cache::key(&resolved.tree, &script_sha256, submodules_on);
                    match cache::read(cache_dir, &key)
                        .filter(|r| cached_commits_present(r, resolved))
                    {
                        Some(record) => HipifyTarget::Cached {
                            script: script.clone(),
                            script_sha256,
                            key,
                            record: Box::new(record),
                        },
                        None => HipifyTarget::Run {
                            script: script.clone(),
                            script_sha256,
                            key,
                        },
                    }
                }
            }
        }
        _ => HipifyTarget::Off,
    };
    let files = match &project.hipify {
        HipifyPolicy::RecipeFiles if options.hipify => recipes
            .of(stack, project)?
            .checkout_files(&resolved.pin.pin)
            .into_iter()
            .map(|(path, content)| CheckoutFile {
                path: path.to_string(),
                content,
            })
            .collect(),
        _ => Vec::new(),
    };
    Ok(Target {
        project: project.name.clone(),
        checkout_dir: project.checkout_dir.clone(),
        dir: dir.to_path_buf(),
        origin: resolved.pin.origin.clone(),
        reference: resolved.pin.requested_ref.clone(),
        pin: resolved.pin.pin.clone(),
        preset: resolved.preset.clone(),
        commit: resolved.commit.clone(),
        upstream_tree: resolved.tree.clone(),
        submodules: resolved
            .submodules
            .iter()
            .map(|s| SubmoduleTarget {
                path: s.path.clone(),
                commit: s.commit.clone(),
            })
            .collect(),
        hipify,
        commit_hipify: options.commit_hipify,
        files,
        force: options.force,
    })
}

/// A cache record is only a hit when every commit it names is in the mirror of its repository.
fn cached_commits_present(record: &cache::Record, resolved: &Resolved) -> bool {
    record.commits.iter().all(|(path, commit)| {
        let mirror: Option<&Mirror> = if path.is_empty() {
            Some(&resolved.mirror)
        } else {
            resolved
                .submodules
                .iter()
                .find(|s| &s.path == path)
                .map(|s| &s.mirror)
        };
        mirror.is_some_and(|m| m.commit(commit).is_some())
    })
}

/// What the checkout directory holds. `recurse`: look into checked-out submodules.
pub fn tree(runner: &Runner, dir: &Path, recurse: bool) -> anyhow::Result<TreeState> {
    if !dir.join(".git").exists() {
        return Ok(TreeState::default());
    }
    let repo = local::open(dir)?;
    let mut state = TreeState {
        git: true,
        interrupted: marker(dir).exists(),
        stamp: hipify::read_stamp(dir),
        nodes: Vec::new(),
        digests: Vec::new(),
    };
    if local::head_commit(&repo).is_none() {
        return Ok(state);
    }
    if !state.interrupted
        && let Some(nodes) = snapshot::unchanged(dir, recurse)
    {
        state.nodes = nodes;
        return Ok(state);
    }
    let nodes = repos::discover(dir, recurse)?;
    let rels: Vec<String> = nodes.iter().map(|n| n.rel.clone()).collect();
    // Taken before the statuses: a change made meanwhile shows in the next run's digests.
    state.digests = snapshot::digests(dir, &rels, snapshot::Source::Disk);
    for node in nodes {
        state.nodes.extend(node_state(runner, &node, false)?);
    }
    Ok(state)
}

/// One repository's state (`None` without a HEAD). `known_clean`: the caller just wrote it
/// from a commit, so its status is not walked.
pub fn node_state(
    runner: &Runner,
    node: &repos::Node,
    known_clean: bool,
) -> anyhow::Result<Option<NodeState>> {
    let repo = local::open(&node.dir)?;
    let Some(head) = local::head_commit(&repo) else {
        return Ok(None);
    };
    let hipify_parent = repo
        .find_commit(head)
        .ok()
        .filter(|c| c.summary().ok().flatten() == Some(crate::git::HIPIFY_COMMIT_MESSAGE))
        .and_then(|c| c.parent_id(0).ok())
        .map(|p| p.to_string());
    let changes = if known_clean {
        Vec::new()
    } else {
        local::uncommitted_changes(&repo)?
    };
    let state_tree = if changes.is_empty() {
        local::tree_of(&repo, head)?.to_string()
    } else {
        hipify::working_tree_id(
            runner,
            &Git::new(&node.dir, node.label()),
            &node.gitlink_paths(),
        )?
    };
    let upstream_tree = Oid::from_str(&node.recorded)
        .ok()
        .and_then(|c| local::tree_of(&repo, c).ok())
        .map(|t| t.to_string());
    Ok(Some(NodeState {
        rel: node.rel.clone(),
        head: head.to_string(),
        hipify_parent,
        recorded: node.recorded.clone(),
        changes,
        state_tree,
        upstream_tree,
    }))
}
