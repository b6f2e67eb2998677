//! Process groups: every child runs in its own, so a timeout or a signal to rockbuild stops
//! the child together with what it started (git-remote-http, compiler drivers).

use std::collections::HashSet;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Between SIGTERM and SIGKILL when a step is stopped.
const KILL_GRACE: Duration = Duration::from_secs(3);

/// Process groups of running children, so a signal to rockbuild stops them all.
#[derive(Debug, Default)]
pub(super) struct ChildRegistry {
    groups: Mutex<HashSet<i32>>,
    /// The signal that interrupted rockbuild, 0 while running normally.
    interrupted_by: AtomicI32,
}

impl ChildRegistry {
    pub(super) fn insert(&self, pgid: i32) {
        if let Ok(mut groups) = self.groups.lock() {
            groups.insert(pgid);
        }
    }

    pub(super) fn remove(&self, pgid: i32) {
        if let Ok(mut groups) = self.groups.lock() {
            groups.remove(&pgid);
        }
    }

    fn signal_all(&self, signal: i32) {
        if let Ok(groups) = self.groups.lock() {
            for pgid in groups.iter() {
                signal_group(*pgid, signal);
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

/// Installs handlers so that SIGINT, SIGTERM and SIGHUP stop every running child group; a
/// second signal stops everything at once and exits.
pub(super) fn install_handlers(children: &Arc<ChildRegistry>) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let children = Arc::clone(children);
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                let first = children.interrupted_by.swap(signal, Ordering::SeqCst) == 0;
                children.signal_all(libc::SIGTERM);
                if !first {
                    // A second signal: the user means it. Stop everything now.
                    children.signal_all(libc::SIGKILL);
                    std::process::exit(128 + signal);
                }
            }
        })?;
    Ok(())
}

#[expect(unsafe_code, reason = "kill(2) has no safe wrapper in std")]
pub(super) fn signal_group(pgid: i32, signal: i32) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is shared.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// SIGTERM the group, then SIGKILL it if it is still there after a grace period.
pub(super) fn stop_group(pgid: i32, child: &mut std::process::Child) {
    signal_group(pgid, libc::SIGTERM);
    let deadline = Instant::now() + KILL_GRACE;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    signal_group(pgid, libc::SIGKILL);
    let _ = child.wait();
}
