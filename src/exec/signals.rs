//! Process trees: every child runs in its own (a process group, a Job Object: see
//! `platform::host`), so a timeout or a signal to rockbuild stops the child together with what
//! it started (git-remote-http, compiler drivers).

use std::collections::HashSet;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::platform::host::{self, Stop, TreeId};

/// Between SIGTERM and SIGKILL when a step is stopped.
const KILL_GRACE: Duration = Duration::from_secs(3);

/// Process trees of running children, so a signal to rockbuild stops them all.
#[derive(Debug, Default)]
pub(super) struct ChildRegistry {
    trees: Mutex<HashSet<TreeId>>,
    /// The signal that interrupted rockbuild, 0 while running normally.
    interrupted_by: AtomicI32,
}

impl ChildRegistry {
    pub(super) fn insert(&self, tree: TreeId) {
        if let Ok(mut trees) = self.trees.lock() {
            trees.insert(tree);
        }
    }

    pub(super) fn remove(&self, tree: TreeId) {
        if let Ok(mut trees) = self.trees.lock() {
            trees.remove(&tree);
        }
    }

    fn signal_all(&self, stop: Stop) {
        if let Ok(trees) = self.trees.lock() {
            for tree in trees.iter() {
                host::signal_tree(*tree, stop);
            }
        }
    }

    /// The signal that interrupted this run, if any.
    pub(super) fn interrupted(&self) -> Option<i32> {
        match self.interrupted_by.load(Ordering::SeqCst) {
            0 => None,
            signal => Some(signal),
        }
    }
}

/// Installs handlers so that SIGINT, SIGTERM and SIGHUP stop every running child tree; a
/// second signal stops everything at once and exits.
pub(super) fn install_handlers(children: &Arc<ChildRegistry>) -> std::io::Result<()> {
    let children = Arc::clone(children);
    host::on_interrupt(move |signal| {
        let first = children.interrupted_by.swap(signal, Ordering::SeqCst) == 0;
        children.signal_all(Stop::Terminate);
        if !first {
            // A second signal: the user means it. Stop everything now.
            children.signal_all(Stop::Kill);
            std::process::exit(128 + signal);
        }
    })
}

/// Stops a child's tree: politely, then for good after a grace period.
pub(super) fn stop_tree(child: &mut host::Child) {
    child.stop(KILL_GRACE);
}
