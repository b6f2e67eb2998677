//! One writer at a time per index prefix. `stage`, `promote` and `index` take the prefix's
//! lease before they read what it holds and keep it until their pages are written:
//!
//! * a local directory store: the lock file `<dir>/.rockbuild-lease`, held with `flock(2)`
//!   ([`crate::flock`]); the kernel releases it when its run dies, so it never goes stale;
//! * S3: the object `<prefix>/.rockbuild-lease`, a JSON holder record created with
//!   `If-None-Match: *` (the server refuses it while another run's lease exists) and carrying
//!   an expiry. An expired lease, or one broken with `--break-lease`, is taken over with
//!   `If-Match: <its ETag>`, so of two runs taking over the same lease only one wins. Servers
//!   that ignore the conditions (garage) still meet the read before each write, which turns
//!   all but a write-write race within one round trip into a refusal.
//!
//! A lease whose holder ran on this host and whose process no longer exists is taken over
//! like an expired one (a killed run on the same machine does not block the next for the
//! lease's lifetime); a holder on another host is trusted until its lease expires.
//!
//! Before the pages are written, [`Lease::confirm`] checks that the lease is still this
//! run's (and renews an S3 lease's expiry): a run whose lease was broken or taken over after
//! expiry stops there, with its objects stored but no page changed. Taking a lease also
//! removes what a killed run left: the `.rockbuild-*.tmp` files of its unfinished writes.

use std::time::Duration;

use super::{LocalDir, S3Store, Storage, StoreError};
use crate::exit::{ExitStatus, HasExitStatus};
use crate::flock::{Holder, LockError, LockFile};

/// The lease's name: a file in a directory store, an object under an S3 prefix. Its
/// leading `.rockbuild-` keeps it out of listings and pages.
pub const LEASE_KEY: &str = ".rockbuild-lease";

/// How leases are taken (`--break-lease`, `--lease-ttl`, `--lease-wait`).
#[derive(Clone, Debug)]
pub struct LeaseSettings {
    /// Take the lease even when another run holds it.
    pub break_lease: bool,
    /// How long an S3 lease is valid without renewal.
    pub ttl: Duration,
    /// How long to wait for a lease another run holds before refusing (zero: refuse at once).
    pub wait: Duration,
}

/// How often a waiting run looks at the lease again.
const POLL: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error(
        "{store} is being written by {}; nothing was changed{}{}\n{}",
        holder.as_ref().map_or_else(|| "another run (its record is not readable)".to_string(), Holder::describe),
        expiry(holder.as_ref()),
        waited.map_or_else(String::new, |waited| format!(" (waited {} s for it: --lease-wait)", waited.as_secs())),
        hint
    )]
    Held {
        store: String,
        holder: Option<Holder>,
        hint: &'static str,
        /// How long this run waited for the lease before giving up, if it waited.
        waited: Option<Duration>,
    },
    #[error(
        "{store}: this run's lease was taken by {}; nothing more was written and the index pages are as that run left them\n\
         run this command again once that run has finished",
        holder.as_ref().map_or_else(|| "another run".to_string(), Holder::describe)
    )]
    Lost {
        store: String,
        holder: Option<Holder>,
    },
    #[error(
        "{store}: the lease record {key} is not rockbuild's ({reason}); remove it if nothing else uses it"
    )]
    Foreign {
        store: String,
        key: String,
        reason: String,
    },
    #[error("taking the lease of {store}: {error}")]
    Lock { store: String, error: LockError },
    #[error("taking the lease")]
    Store(#[from] StoreError),
}

/// Another run holds the lease (or took ours): busy, retry later. Anything else went wrong
/// reading or writing the lease: a failed step.
impl HasExitStatus for LeaseError {
    fn exit_status(&self) -> ExitStatus {
        match self {
            LeaseError::Held { .. } | LeaseError::Lost { .. } => ExitStatus::Busy,
            LeaseError::Foreign { .. } | LeaseError::Lock { .. } | LeaseError::Store(_) => {
                ExitStatus::Failure
            }
        }
    }
}

const LOCAL_HINT: &str = "a local lease is held by a live process (a dead run's lease is released by the kernel): \
     wait for that run to finish, or stop it; `--break-lease` takes the lease anyway, and the run it is taken from \
     stops before writing its index pages";
const S3_HINT: &str = "wait for that run to finish and run this again; if it is gone (cancelled job, lost machine), \
     run again with `--break-lease` to take its lease over (an expired lease is taken over without it)";

fn expiry(holder: Option<&Holder>) -> String {
    match holder.and_then(|h| h.expires) {
        Some(seconds) => match jiff::Timestamp::from_second(seconds) {
            Ok(at) => format!("; its lease expires at {at}"),
            Err(_) => String::new(),
        },
        None => String::new(),
    }
}

/// A held lease; released when dropped.
#[derive(Debug)]
pub enum Lease<'a> {
    Local(LockFile),
    S3 {
        store: &'a S3Store,
        holder: Holder,
        ttl: Duration,
    },
}

/// Takes the lease of `store` for `verb`, then clears what killed runs left behind. While
/// another run holds it, waits up to `settings.wait` (polling every [`POLL`]) before refusing:
/// CI jobs promoting several refs into one family's index queue here instead of failing.
pub fn acquire<'a>(
    ctx: &crate::context::Context,
    store: &'a dyn Storage,
    verb: &str,
    settings: &LeaseSettings,
) -> Result<Lease<'a>, LeaseError> {
    let started = std::time::Instant::now();
    let mut announced = false;
    loop {
        match try_acquire(ctx, store, verb, settings) {
            Err(LeaseError::Held {
                store: url,
                holder,
                hint,
                ..
            }) => {
                let waited = started.elapsed();
                if waited >= settings.wait {
                    return Err(LeaseError::Held {
                        store: url,
                        holder,
                        hint,
                        waited: (!settings.wait.is_zero()).then_some(waited),
                    });
                }
                if !announced {
                    announced = true;
                    ctx.ui.warn(format!(
                        "{url} is being written by {}; waiting up to {} s for its lease (--lease-wait)",
                        holder.as_ref().map_or_else(|| "another run".to_string(), Holder::describe),
                        settings.wait.as_secs()
                    ));
                }
                std::thread::sleep(POLL.min(settings.wait - waited));
            }
            taken => return taken,
        }
    }
}

fn try_acquire<'a>(
    ctx: &crate::context::Context,
    store: &'a dyn Storage,
    verb: &str,
    settings: &LeaseSettings,
) -> Result<Lease<'a>, LeaseError> {
    let holder = Holder::this_run(verb);
    if let Some(local) = store.as_any().downcast_ref::<LocalDir>() {
        local.create_root()?;
        let path = local.root().join(LEASE_KEY);
        let (lock, broken) = LockFile::acquire(&path, &holder, settings.break_lease).map_err(
            |error| match error {
                LockError::Held { holder, .. } => LeaseError::Held {
                    store: store.url(),
                    holder,
                    hint: LOCAL_HINT,
                    waited: None,
                },
                error => LeaseError::Lock {
                    store: store.url(),
                    error,
                },
            },
        )?;
        if let Some(broken) = broken {
            ctx.ui.warn(format!(
                "--break-lease: took the lease of {} from {}",
                store.url(),
                broken.describe()
            ));
        }
        let removed = local.remove_stale_temporaries()?;
        if removed > 0 {
            ctx.ui.warn(format!(
                "removed {removed} temporary file{} an interrupted run left in {}",
                crate::ui::plural(removed),
                store.url()
            ));
        }
        return Ok(Lease::Local(lock));
    }
    let Some(s3) = store.as_any().downcast_ref::<S3Store>() else {
        return Err(StoreError::Backend {
            store: store.url(),
            op: "lease",
            key: LEASE_KEY.into(),
            message: "this kind of store has no lease".into(),
            transient: false,
        }
        .into());
    };
    let ttl = settings.ttl;
    let holder = with_expiry(holder, ttl);
    // A few rounds: each lost one means another run changed the lease between our read and
    // our conditional write.
    for _ in 0..4 {
        let written = match s3.get_tagged(LEASE_KEY)? {
            None => s3.put_conditional(LEASE_KEY, &record(&holder), None)?,
            Some((bytes, etag)) => {
                let current = parse(s3, &bytes)?;
                let expired = current
                    .expires
                    .is_some_and(|at| at <= jiff::Timestamp::now().as_second());
                let gone = current.is_gone_from(&holder.host);
                if !expired && !gone && !settings.break_lease {
                    return Err(LeaseError::Held {
                        store: store.url(),
                        holder: Some(current),
                        hint: S3_HINT,
                        waited: None,
                    });
                }
                let taken = s3.put_conditional(LEASE_KEY, &record(&holder), Some(&etag))?;
                if taken {
                    ctx.ui.warn(format!(
                        "{}: took the lease of {} from {}",
                        match (expired, gone) {
                            (true, _) => "expired",
                            (false, true) => "its run is gone",
                            (false, false) => "--break-lease",
                        },
                        store.url(),
                        current.describe()
                    ));
                }
                taken
            }
        };
        // Read back: a server that ignores the conditions lets the last writer win.
        if written && is_ours(s3, &holder)?.0 {
            return Ok(Lease::S3 {
                store: s3,
                holder,
                ttl,
            });
        }
    }
    Err(LeaseError::Held {
        store: store.url(),
        holder: current_holder(s3)?,
        hint: S3_HINT,
        waited: None,
    })
}

impl Lease<'_> {
    /// Still this run's lease (an S3 lease's expiry is pushed out again): called before the
    /// index pages are written.
    pub fn confirm(&mut self) -> Result<(), LeaseError> {
        crate::fault::point("confirm");
        match self {
            Lease::Local(lock) => lock.confirm().map_err(|error| match error {
                LockError::Lost { holder, .. } => LeaseError::Lost {
                    store: lock
                        .path()
                        .parent()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default(),
                    holder,
                },
                error => LeaseError::Lock {
                    store: lock.path().display().to_string(),
                    error,
                },
            }),
            Lease::S3 { store, holder, ttl } => {
                let (ours, current, etag) = is_ours(store, holder)?;
                if !ours {
                    return Err(LeaseError::Lost {
                        store: store.url(),
                        holder: current,
                    });
                }
                let renewed = with_expiry(holder.clone(), *ttl);
                if store.put_conditional(LEASE_KEY, &record(&renewed), etag.as_deref())? {
                    *holder = renewed;
                    return Ok(());
                }
                Err(LeaseError::Lost {
                    store: store.url(),
                    holder: current_holder(store)?,
                })
            }
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        // A local lock releases itself. An S3 lease is deleted only while it is still ours;
        // if the delete fails, the lease expires on its own.
        if let Lease::S3 { store, holder, .. } = self
            && let Ok((true, _, _)) = is_ours(store, holder)
            && let Err(error) = store.delete(LEASE_KEY)
        {
            tracing::warn!("releasing the lease: {error}; it expires on its own");
        }
    }
}

fn with_expiry(mut holder: Holder, ttl: Duration) -> Holder {
    let ttl = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX / 2);
    holder.expires = Some(jiff::Timestamp::now().as_second().saturating_add(ttl));
    holder
}

fn record(holder: &Holder) -> Vec<u8> {
    let mut text = serde_json::to_string_pretty(holder).unwrap_or_default();
    text.push('\n');
    text.into_bytes()
}

fn parse(store: &S3Store, bytes: &[u8]) -> Result<Holder, LeaseError> {
    serde_json::from_slice(bytes).map_err(|error| LeaseError::Foreign {
        store: store.url(),
        key: LEASE_KEY.into(),
        reason: error.to_string(),
    })
}

/// Who holds the lease now, if anyone (and its record is readable).
fn current_holder(store: &S3Store) -> Result<Option<Holder>, LeaseError> {
    Ok(store
        .get_tagged(LEASE_KEY)?
        .and_then(|(bytes, _)| serde_json::from_slice(&bytes).ok()))
}

/// Whether the stored lease is `holder`'s, the stored record, and its ETag.
fn is_ours(
    store: &S3Store,
    holder: &Holder,
) -> Result<(bool, Option<Holder>, Option<String>), LeaseError> {
    Ok(match store.get_tagged(LEASE_KEY)? {
        None => (false, None, None),
        Some((bytes, etag)) => {
            let current: Option<Holder> = serde_json::from_slice(&bytes).ok();
            let ours = current.as_ref().is_some_and(|c| c.token == holder.token);
            (ours, current, Some(etag))
        }
    })
}
