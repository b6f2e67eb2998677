//! The checkout plan: what each project's tree must become (the [`Target`], from resolution),
//! what it is (the [`TreeState`], inspected), and — a pure function of the two — what to do:
//! nothing (up to date), fetch a new commit into it, or repair it at the same commit; each with
//! its steps (objects from the cache, checkout, tags, submodules, hipify, hipify commits).

use std::path::PathBuf;

use indexmap::IndexMap;
use serde::Serialize;

use super::error::Error;
use crate::hipify::cache::Record;
use crate::lock::{HipifyStamp, PinOrigin};

/// What a project's checkout must be.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    pub project: String,
    pub checkout_dir: String,
    /// Absolute checkout directory (not printed: plans are compared across roots).
    #[serde(skip)]
    pub dir: PathBuf,
    pub origin: String,
    pub reference: String,
    pub pin: PinOrigin,
    pub preset: Option<String>,
    pub commit: String,
    pub upstream_tree: String,
    /// Every submodule that must be checked out (empty when submodules are off).
    pub submodules: Vec<SubmoduleTarget>,
    pub hipify: HipifyTarget,
    pub commit_hipify: bool,
    /// The files its recipe has the checkout write (triton's build_env.json), when hipify
    /// applies.
    pub files: Vec<CheckoutFile>,
    /// `--force`: user changes may be discarded.
    pub force: bool,
}

/// A file the checkout writes into the tree for the project's recipe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckoutFile {
    /// Relative to the checkout.
    pub path: String,
    pub content: String,
}

impl CheckoutFile {
    /// The paths of `files`, for people (`build_env.json`).
    pub fn paths(files: &[CheckoutFile]) -> String {
        files
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubmoduleTarget {
    pub path: String,
    pub commit: String,
}

/// Whether and how hipify applies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum HipifyTarget {
    /// Off by flag or by the project's policy.
    Off,
    /// The policy names a script the commit does not have.
    NoScript { script: String },
    /// Run the script.
    Run {
        script: String,
        script_sha256: String,
        key: String,
    },
    /// The cache has this tree hipified by this script: check the result out.
    Cached {
        script: String,
        script_sha256: String,
        key: String,
        record: Box<Record>,
    },
}

impl HipifyTarget {
    fn script_sha256(&self) -> Option<&str> {
        match self {
            HipifyTarget::Run { script_sha256, .. }
            | HipifyTarget::Cached { script_sha256, .. } => Some(script_sha256),
            _ => None,
        }
    }
}

/// A checkout directory as inspected.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeState {
    /// `.git` exists.
    pub git: bool,
    /// The previous checkout stopped half-way (its marker is still there).
    pub interrupted: bool,
    pub stamp: Option<HipifyStamp>,
    /// The root and every checked-out submodule, parents first; empty without a HEAD.
    pub nodes: Vec<NodeState>,
    /// Each node's stat digest, taken before its status was read (empty when the nodes came
    /// from an unchanged snapshot): what an up-to-date run records for the next one.
    pub digests: Vec<Option<String>>,
}

/// One repository of a checkout (the root or a submodule). Serialized as the stat
/// snapshot's record of it (`snapshot.rs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct NodeState {
    /// Path relative to the project root; empty for the root.
    pub rel: String,
    pub head: String,
    /// When HEAD is rockbuild's hipify commit: its parent.
    pub hipify_parent: Option<String>,
    /// The commit the parent records (the root: its HEAD).
    pub recorded: String,
    /// Uncommitted changes, `git status --porcelain` style.
    pub changes: Vec<String>,
    /// The tree of the working state (HEAD's tree when clean).
    pub state_tree: String,
    /// The tree of `recorded`, when readable.
    pub upstream_tree: Option<String>,
}

/// What happens to one project.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Action {
    UpToDate,
    /// Move to a new commit (`from`: the commit it was at; none for a new checkout).
    Fetch {
        from: Option<String>,
    },
    /// Same commit, wrong state.
    Repair {
        reason: String,
    },
    /// Nothing: the tree holds changes that are not rockbuild's, and the checkout would refuse
    /// them (a dry run reports this; a checkout fails on it).
    Refuse {
        changes: Vec<String>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "step")]
pub enum Step {
    /// `reset --hard` + `clean` in these repositories (deepest first).
    Discard {
        repositories: Vec<String>,
    },
    /// Objects from the mirror cache (hard links, or a local copy).
    Objects,
    Checkout {
        commit: String,
    },
    TagUpstream,
    Submodules {
        count: usize,
    },
    Hipify {
        how: HipifyStep,
    },
    /// Commit (or check out the cached commits of) hipify's changes and tag them.
    CommitHipify,
    /// Up to date: move tags that are missing or elsewhere.
    EnsureTags,
    /// Write the files the project's recipe names (excluded locally, never committed).
    WriteFiles {
        files: Vec<CheckoutFile>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum HipifyStep {
    Run { script: String },
    FromCache { key: String, changed_files: usize },
    NoScript { script: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProjectPlan {
    pub project: String,
    pub checkout_dir: String,
    pub origin: String,
    pub reference: String,
    pub pin: PinOrigin,
    pub preset: Option<String>,
    pub commit: String,
    pub action: Action,
    pub steps: Vec<Step>,
}

/// The whole checkout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckoutPlan {
    /// Which preset chose the refs and why (none when reproducing a lock).
    pub preset: Option<String>,
    pub projects: Vec<ProjectPlan>,
    /// The lock already at the path this checkout writes, when the checkout resolves refs
    /// anew instead of reproducing it: what its pins become.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock: Option<LockBefore>,
}

/// The lock a checkout that resolves refs would write over (build reads it by default).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct LockBefore {
    pub path: String,
    /// Why the lock could not be read (its pins are then unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// The commit the lock pins per planned project (none: not in the lock).
    pub pins: IndexMap<String, Option<String>>,
}

/// What a dry run shows where the checkout would refuse the tree's own changes.
pub fn refused(target: &Target, changes: Vec<String>) -> ProjectPlan {
    ProjectPlan {
        project: target.project.clone(),
        checkout_dir: target.checkout_dir.clone(),
        origin: target.origin.clone(),
        reference: target.reference.clone(),
        pin: target.pin.clone(),
        preset: target.preset.clone(),
        commit: target.commit.clone(),
        action: Action::Refuse { changes },
        steps: Vec::new(),
    }
}

/// Plans one project. Refuses user changes unless forced (or left by an interrupted run).
pub fn project(target: &Target, state: &TreeState) -> Result<ProjectPlan, Error> {
    let stamp = state.stamp.as_ref();
    let user_changes: Vec<String> = state
        .nodes
        .iter()
        .filter(|n| !n.changes.is_empty() && !explained(stamp, n))
        .flat_map(|n| {
            n.changes
                .iter()
                .map(move |c| format!("{}{c}", prefix(&n.rel)))
        })
        .collect();
    if !user_changes.is_empty() && !target.force && !state.interrupted {
        return Err(Error::Dirty {
            project: target.project.clone(),
            dir: target.dir.clone(),
            changes: user_changes,
        });
    }
    let plan = |action, steps| ProjectPlan {
        action,
        steps,
        ..refused(target, Vec::new())
    };
    let Some(reason) = stale(target, state) else {
        let mut steps = vec![Step::EnsureTags];
        steps.extend(files_step(target));
        return Ok(plan(Action::UpToDate, steps));
    };
    let root = state.nodes.first();
    let action = match root {
        None => Action::Fetch { from: None },
        Some(root)
            if root.head == target.commit
                || root.hipify_parent.as_deref() == Some(&target.commit) =>
        {
            Action::Repair { reason }
        }
        Some(root) => Action::Fetch {
            from: Some(
                root.hipify_parent
                    .clone()
                    .unwrap_or_else(|| root.head.clone()),
            ),
        },
    };
    let mut steps = Vec::new();
    let dirty: Vec<String> = state
        .nodes
        .iter()
        .rev()
        .filter(|n| !n.changes.is_empty())
        .map(|n| label(&n.rel).to_string())
        .collect();
    if !dirty.is_empty() {
        steps.push(Step::Discard {
            repositories: dirty,
        });
    }
    steps.push(Step::Objects);
    let checkout = match &target.hipify {
        HipifyTarget::Cached { record, .. } if target.commit_hipify => record
            .commits
            .get("")
            .cloned()
            .unwrap_or_else(|| target.commit.clone()),
        _ => target.commit.clone(),
    };
    steps.push(Step::Checkout { commit: checkout });
    steps.push(Step::TagUpstream);
    if !target.submodules.is_empty() {
        steps.push(Step::Submodules {
            count: target.submodules.len(),
        });
    }
    match &target.hipify {
        HipifyTarget::Off => {}
        HipifyTarget::NoScript { script } => steps.push(Step::Hipify {
            how: HipifyStep::NoScript {
                script: script.clone(),
            },
        }),
        HipifyTarget::Run { script, .. } => steps.push(Step::Hipify {
            how: HipifyStep::Run {
                script: script.clone(),
            },
        }),
        HipifyTarget::Cached { key, record, .. } => steps.push(Step::Hipify {
            how: HipifyStep::FromCache {
                key: key.clone(),
                changed_files: record.stamp.changed_files,
            },
        }),
    }
    if target.commit_hipify && target.hipify.script_sha256().is_some() {
        steps.push(Step::CommitHipify);
    }
    steps.extend(files_step(target));
    Ok(plan(action, steps))
}

fn files_step(target: &Target) -> Option<Step> {
    (!target.files.is_empty()).then(|| Step::WriteFiles {
        files: target.files.clone(),
    })
}

/// The changes of `node` are exactly what the recorded hipify run left.
fn explained(stamp: Option<&HipifyStamp>, node: &NodeState) -> bool {
    let Some(stamp) = stamp else {
        return false;
    };
    let expected = if node.rel.is_empty() {
        Some(&stamp.result_tree)
    } else {
        stamp.submodule_trees.get(&node.rel)
    };
    expected == Some(&node.state_tree)
}

/// Why the checkout is not exactly the target; `None` when it is (up to date).
fn stale(target: &Target, state: &TreeState) -> Option<String> {
    let Some(root) = state.nodes.first() else {
        return Some("no checkout yet".into());
    };
    if state.interrupted {
        return Some("the previous checkout was interrupted".into());
    }
    let stamp = match target.hipify.script_sha256() {
        Some(script) => match &state.stamp {
            Some(stamp)
                if stamp.upstream_tree == target.upstream_tree && stamp.script_sha256 == script =>
            {
                Some(stamp)
            }
            _ => return Some("hipify has not run on this tree with this script".into()),
        },
        None => None,
    };
    let hipify_commits = stamp.is_some() && target.commit_hipify;
    let is_at = |node: &NodeState, commit: &str| {
        node.head == commit || (hipify_commits && node.hipify_parent.as_deref() == Some(commit))
    };
    if !is_at(root, &target.commit) {
        return Some(format!("HEAD is {}", short(&root.head)));
    }
    let nodes: &[NodeState] = if target.submodules.is_empty() {
        &state.nodes[..1]
    } else {
        let mut have: Vec<(&str, &str)> = state.nodes[1..]
            .iter()
            .map(|n| (n.rel.as_str(), n.recorded.as_str()))
            .collect();
        let mut want: Vec<(&str, &str)> = target
            .submodules
            .iter()
            .map(|s| (s.path.as_str(), s.commit.as_str()))
            .collect();
        have.sort();
        want.sort();
        if have != want {
            return Some("the submodules are not all checked out".into());
        }
        &state.nodes
    };
    for node in nodes {
        let recorded = if node.rel.is_empty() {
            target.commit.as_str()
        } else {
            node.recorded.as_str()
        };
        if !is_at(node, recorded) {
            return Some(format!("{} is at {}", label(&node.rel), short(&node.head)));
        }
        if !node.changes.is_empty() && (hipify_commits || !explained(stamp, node)) {
            return Some(format!("{} has uncommitted changes", label(&node.rel)));
        }
        let expected = match stamp {
            Some(stamp) if node.rel.is_empty() => Some(stamp.result_tree.as_str()),
            Some(stamp) => stamp
                .submodule_trees
                .get(&node.rel)
                .map(String::as_str)
                .or(node.upstream_tree.as_deref()),
            None => node.upstream_tree.as_deref(),
        };
        if expected != Some(node.state_tree.as_str()) {
            return Some(format!(
                "{} differs from its expected tree",
                label(&node.rel)
            ));
        }
    }
    None
}

fn label(rel: &str) -> &str {
    if rel.is_empty() { "." } else { rel }
}

fn prefix(rel: &str) -> String {
    if rel.is_empty() {
        String::new()
    } else {
        format!("{rel}/")
    }
}

pub fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

impl ProjectPlan {
    pub fn to_text(&self) -> String {
        let head = match &self.action {
            Action::UpToDate => format!("up to date at {}", short(&self.commit)),
            Action::Fetch { from: None } => format!("fetch {} (new checkout)", short(&self.commit)),
            Action::Fetch { from: Some(from) } => {
                format!("fetch {} (from {})", short(&self.commit), short(from))
            }
            Action::Repair { reason } => format!("repair at {} ({reason})", short(&self.commit)),
            Action::Refuse { changes } => format!(
                "would refuse: {} uncommitted change{} hipify did not make ({}); commit or stash \
                 them, or pass --force to discard them",
                changes.len(),
                crate::ui::plural(changes.len()),
                changes.join(", ")
            ),
        };
        let mut why = self.pin.describe();
        if let Some(preset) = &self.preset
            && !matches!(&self.pin, PinOrigin::Preset { .. })
        {
            why.push_str(&format!("; preset {preset}"));
        }
        let reference = if crate::git::is_full_sha(&self.reference) {
            short(&self.reference).to_string()
        } else {
            self.reference.clone()
        };
        let steps: Vec<String> = self.steps.iter().map(Step::to_text).collect();
        format!(
            "{} ({}): {head}\n  ref     {reference} ({why})\n  origin  {}\n  steps   {}",
            self.project,
            self.checkout_dir,
            crate::redact::redact_url(&self.origin),
            steps.join("; ")
        )
    }
}

impl Step {
    fn to_text(&self) -> String {
        match self {
            Step::Discard { repositories } => {
                format!("discard changes in {}", repositories.join(", "))
            }
            Step::Objects => "objects from the cache".into(),
            Step::Checkout { commit } => format!("checkout {}", short(commit)),
            Step::TagUpstream => format!("tag {}", crate::git::UPSTREAM_TAG),
            Step::Submodules { count } => format!("{count} submodule{}", crate::ui::plural(*count)),
            Step::Hipify { how } => match how {
                HipifyStep::Run { script } => format!("hipify (run {script})"),
                HipifyStep::FromCache { key, changed_files } => {
                    format!(
                        "hipify from the cache ({changed_files} files, {})",
                        short(key)
                    )
                }
                HipifyStep::NoScript { script } => format!("hipify: no {script} at this commit"),
            },
            Step::CommitHipify => format!("commit hipify, tag {}", crate::git::HIPIFY_TAG),
            Step::EnsureTags => "check tags".into(),
            Step::WriteFiles { files } => format!("write {}", CheckoutFile::paths(files)),
        }
    }
}

impl CheckoutPlan {
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if let Some(preset) = &self.preset {
            out.push_str(&format!("preset: {preset}\n\n"));
        }
        let projects: Vec<String> = self.projects.iter().map(ProjectPlan::to_text).collect();
        out.push_str(&projects.join("\n"));
        out.push('\n');
        if let Some(lock) = &self.lock {
            out.push_str(&lock.to_text(&self.projects));
        }
        out
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

impl LockBefore {
    /// The lock's pins beside this checkout's, and how to keep them instead.
    fn to_text(&self, projects: &[ProjectPlan]) -> String {
        if let Some(reason) = &self.unreadable {
            return format!(
                "\nlock {}: cannot be read ({reason}); this checkout writes a new one\n",
                self.path
            );
        }
        let width = projects.iter().map(|p| p.project.len()).max().unwrap_or(0);
        let mut out = format!(
            "\nlock {}: this checkout resolves the refs again and writes over it \
             (`--from-lock {}` checks out its pins instead)\n",
            self.path, self.path
        );
        for plan in projects {
            let locked = self.pins.get(&plan.project).and_then(Option::as_deref);
            let change = match locked {
                None => format!("not in the lock; pinned at {}", short(&plan.commit)),
                Some(commit) if commit == plan.commit => format!("{} (unchanged)", short(commit)),
                Some(commit) => format!("{} -> {}", short(commit), short(&plan.commit)),
            };
            out.push_str(&format!("  {:width$}  {change}\n", plan.project));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use indexmap::IndexMap;

    use super::*;

    const C1: &str = "1111111111111111111111111111111111111111";
    const C2: &str = "2222222222222222222222222222222222222222";
    const H1: &str = "4444444444444444444444444444444444444444";
    const T1: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const TH: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    const K: &str = "cccccccccccccccccccccccccccccccccccccccc";
    const KH: &str = "dddddddddddddddddddddddddddddddddddddddd";
    const KT: &str = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";
    const SCRIPT: &str = "5555555555555555555555555555555555555555555555555555555555555555";

    fn target() -> Target {
        Target {
            project: "torch".into(),
            checkout_dir: "pytorch".into(),
            dir: "/ws/pytorch".into(),
            origin: "https://github.com/ROCm/pytorch.git".into(),
            reference: "release/2.9".into(),
            pin: PinOrigin::Flag {
                flag: "--repo-hashtag".into(),
            },
            preset: Some("rocm-release".into()),
            commit: C1.into(),
            upstream_tree: T1.into(),
            submodules: vec![SubmoduleTarget {
                path: "third_party/kineto".into(),
                commit: K.into(),
            }],
            hipify: HipifyTarget::Run {
                script: "tools/amd_build/build_amd.py".into(),
                script_sha256: SCRIPT.into(),
                key: format!("{T1}-5555555555555555-s"),
            },
            commit_hipify: true,
            files: Vec::new(),
            force: false,
        }
    }

    fn stamp() -> HipifyStamp {
        HipifyStamp {
            upstream_tree: T1.into(),
            script_sha256: SCRIPT.into(),
            result_tree: TH.into(),
            submodule_trees: IndexMap::from([("third_party/kineto".to_string(), KH.to_string())]),
            changed_files: 4,
            leftovers: Vec::new(),
        }
    }

    /// A tree hipified and committed at C1.
    fn hipified() -> TreeState {
        TreeState {
            git: true,
            interrupted: false,
            stamp: Some(stamp()),
            digests: Vec::new(),
            nodes: vec![
                NodeState {
                    rel: String::new(),
                    head: H1.into(),
                    hipify_parent: Some(C1.into()),
                    recorded: H1.into(),
                    changes: vec![],
                    state_tree: TH.into(),
                    upstream_tree: Some(TH.into()),
                },
                NodeState {
                    rel: "third_party/kineto".into(),
                    head: "9999999999999999999999999999999999999999".into(),
                    hipify_parent: Some(K.into()),
                    recorded: K.into(),
                    changes: vec![],
                    state_tree: KH.into(),
                    upstream_tree: Some(KT.into()),
                },
            ],
        }
    }

    fn render(plans: &[Result<ProjectPlan, Error>]) -> String {
        plans
            .iter()
            .map(|p| match p {
                Ok(plan) => plan.to_text(),
                Err(error) => format!("error: {error}"),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn every_kind_of_tree_gets_its_plan() {
        let fresh = project(&target(), &TreeState::default());
        let up_to_date = project(&target(), &hipified());

        let mut moved_target = target();
        moved_target.commit = C2.into();
        let moved = project(&moved_target, &hipified());

        let mut interrupted = hipified();
        interrupted.interrupted = true;
        interrupted.nodes[0].changes = vec!["M csrc/kernel.cu".into()];
        let repaired = project(&target(), &interrupted);

        let mut new_script = target();
        new_script.hipify = HipifyTarget::Run {
            script: "tools/amd_build/build_amd.py".into(),
            script_sha256: "6".repeat(64),
            key: "k".into(),
        };
        let rehipify = project(&new_script, &hipified());

        let mut cached = target();
        cached.hipify = HipifyTarget::Cached {
            script: "tools/amd_build/build_amd.py".into(),
            script_sha256: SCRIPT.into(),
            key: format!("{T1}-5555555555555555-s"),
            record: Box::new(Record {
                stamp: stamp(),
                commits: IndexMap::from([(String::new(), H1.to_string())]),
            }),
        };
        let from_cache = project(&cached, &TreeState::default());

        insta::assert_snapshot!(render(&[
            fresh, up_to_date, moved, repaired, rehipify, from_cache
        ]));
    }

    #[test]
    fn user_changes_are_refused_unless_forced() {
        let mut dirty = hipified();
        dirty.nodes[1].changes = vec!["M platform.h".into()];
        dirty.nodes[1].state_tree = "f".repeat(40);
        let refused = project(&target(), &dirty);
        let mut forced_target = target();
        forced_target.force = true;
        let forced = project(&forced_target, &dirty);
        insta::assert_snapshot!(render(&[refused, forced]));
    }

    #[test]
    fn uncommitted_hipify_matching_its_stamp_is_up_to_date() {
        let mut target = target();
        target.commit_hipify = false;
        target.submodules.clear();
        let state = TreeState {
            git: true,
            interrupted: false,
            stamp: Some(stamp()),
            digests: Vec::new(),
            nodes: vec![NodeState {
                rel: String::new(),
                head: C1.into(),
                hipify_parent: None,
                recorded: C1.into(),
                changes: vec![" M csrc/kernel.cu".into()],
                state_tree: TH.into(),
                upstream_tree: Some(T1.into()),
            }],
        };
        let plan = project(&target, &state).expect("plan");
        assert_eq!(plan.action, Action::UpToDate);
        // The same tree with committed hipify wanted: redone from the pristine tree.
        target.commit_hipify = true;
        let plan = project(&target, &state).expect("plan");
        assert_eq!(
            plan.action,
            Action::Repair {
                reason: ". has uncommitted changes".into()
            }
        );
        assert_eq!(
            plan.steps[0],
            Step::Discard {
                repositories: vec![".".into()]
            }
        );
    }

    #[test]
    fn plans_serialize_for_json_output() {
        let plan = CheckoutPlan {
            preset: Some("torch ref 'release/2.9' is listed by preset 'rocm-release'".into()),
            projects: vec![project(&target(), &TreeState::default()).expect("plan")],
            lock: None,
        };
        insta::assert_snapshot!(plan.to_json());
    }

    /// Moved, unchanged and new pins against the lock in the root; a lock that cannot be read.
    #[test]
    fn the_lock_in_the_root_is_shown_with_what_its_pins_become() {
        let torch = project(&target(), &TreeState::default()).expect("plan");
        let mut vision = torch.clone();
        vision.project = "vision".into();
        let mut apex = torch.clone();
        apex.project = "apex".into();
        let commit = torch.commit.clone();
        let mut plan = CheckoutPlan {
            preset: None,
            projects: vec![torch, vision, apex],
            lock: Some(LockBefore {
                path: "/ws/rockbuild.lock.json".into(),
                unreadable: None,
                pins: IndexMap::from([
                    (
                        "torch".to_string(),
                        Some("0123456789abcdef0123".to_string()),
                    ),
                    ("vision".to_string(), Some(commit)),
                    ("apex".to_string(), None),
                ]),
            }),
        };
        let mut text = plan.to_text();
        if let Some(lock) = &mut plan.lock {
            lock.unreadable = Some("not a rockbuild lock".into());
        }
        text.push_str(&plan.to_text());
        insta::assert_snapshot!(text);
    }
}
