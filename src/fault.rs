//! A test hook that stops this process at a named point of a write, the way `kill -9` or a
//! lost machine would, so the tests can check what every reader sees at every point. Armed
//! by `ROCKBUILD_FAULT=<point>:<n>[:wait=<file>]` (read once, by `Context::new`):
//!
//! * `page:<n>`: before the index page write that follows `n` finished ones;
//! * `confirm:<n>`: before a run checks that its lease is still its own, its objects stored
//!   and its pages not yet written;
//! * `checkout:<n>`: right after `checkout` took its root's lock;
//! * `transfer:<n>`: after a publish (`stage`, `promote`) planned its transfers (the set
//!   verified, the destination read) and before the first object moves;
//! * `upload:<n>`: in a local directory store, after the `n+1`-th object's temporary file is
//!   written and before it is moved into place (what a kill mid-upload leaves).
//!
//! At that point the process sends itself SIGKILL: no destructor, no cleanup, no flush.
//! With `:wait=<file>` it instead creates `<file>.reached`, waits until `<file>` exists and
//! goes on: a test holds a run there (its lease taken, nothing of its pages written) while it
//! starts another. Unarmed, a point costs one relaxed atomic load.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[derive(Debug)]
struct Armed {
    point: String,
    at: usize,
    wait_for: Option<PathBuf>,
    hits: AtomicUsize,
}

static ARMED: OnceLock<Option<Armed>> = OnceLock::new();

/// Arms the hook from the variable's value; a value that does not parse arms nothing (and
/// says so: a test that meant to arm it must not pass by accident).
pub fn arm(spec: Option<&str>) {
    let armed = spec.and_then(|spec| {
        let parsed = parse(spec);
        if parsed.is_none() {
            tracing::warn!("ROCKBUILD_FAULT={spec:?} is not <point>:<n>[:wait=<file>]; ignored");
        }
        parsed
    });
    let _ = ARMED.set(armed);
}

fn parse(spec: &str) -> Option<Armed> {
    let mut parts = spec.splitn(3, ':');
    let point = parts.next()?.to_string();
    let at = parts.next()?.parse().ok()?;
    let wait_for = match parts.next() {
        None => None,
        Some(rest) => Some(PathBuf::from(rest.strip_prefix("wait=")?)),
    };
    Some(Armed {
        point,
        at,
        wait_for,
        hits: AtomicUsize::new(0),
    })
}

/// Marks one pass through `point`; stops or holds the process there when armed for it.
pub fn point(point: &str) {
    let Some(Some(armed)) = ARMED.get() else {
        return;
    };
    if armed.point != point || armed.hits.fetch_add(1, Ordering::SeqCst) != armed.at {
        return;
    }
    match &armed.wait_for {
        None => crate::platform::host::kill_this_process(),
        Some(file) => {
            let mut reached = file.clone().into_os_string();
            reached.push(".reached");
            let _ = crate::fsutil::write(std::path::Path::new(&reached), b"");
            while !file.exists() {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn specs() {
        let armed = parse("page:3").expect("page");
        assert_eq!((armed.point.as_str(), armed.at), ("page", 3));
        assert!(armed.wait_for.is_none());
        let armed = parse("upload:0:wait=/tmp/go").expect("wait");
        assert_eq!(
            armed.wait_for.as_deref(),
            Some(std::path::Path::new("/tmp/go"))
        );
        for bad in ["page", "page:x", "page:1:later"] {
            assert!(parse(bad).is_none(), "{bad}");
        }
    }
}
