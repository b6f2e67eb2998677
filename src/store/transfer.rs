//! Running many uploads or copies at once: a fixed number of workers, retries with backoff for
//! transient failures, one progress line, and a stop on the first real failure or an
//! interrupt (no new transfer starts; those in flight finish).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::StoreError;
use crate::context::Context;
use crate::ui::human_bytes;

/// First wait before retrying a transient failure; doubled for each further attempt.
const BACKOFF: Duration = Duration::from_secs(1);
/// Minimum time between two progress updates.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(2);

/// Runs `op` on every item with `jobs` workers. Returns the results in item order, or every
/// failure (each names its object) once the workers have stopped.
pub fn run_all<T, R, F>(
    ctx: &Context,
    title: &str,
    items: &[T],
    jobs: usize,
    attempts: u32,
    size_of: impl Fn(&T) -> u64 + Sync,
    op: F,
) -> Result<Vec<R>, TransferError>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> Result<R, StoreError> + Sync,
{
    let total_bytes: u64 = items.iter().map(&size_of).sum();
    let task = ctx.ui.task(title);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let bytes_done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let results: Mutex<Vec<Option<R>>> = Mutex::new(items.iter().map(|_| None).collect());
    let failures: Mutex<Vec<StoreError>> = Mutex::new(Vec::new());
    let progress = |done: usize, bytes: u64| {
        if total_bytes == 0 {
            format!("{done}/{} files", items.len())
        } else {
            format!(
                "{done}/{} files, {} of {}",
                items.len(),
                human_bytes(bytes),
                human_bytes(total_bytes)
            )
        }
    };
    // At most one progress update per interval: in CI logs every update is a line.
    let last_update = Mutex::new(Instant::now());
    let report = |done: usize, bytes: u64| {
        if let Ok(mut last) = last_update.lock()
            && last.elapsed() >= PROGRESS_INTERVAL
        {
            *last = Instant::now();
            task.phase(progress(done, bytes));
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            scope.spawn(|| {
                loop {
                    if stop.load(Ordering::SeqCst) || ctx.runner.interrupted().is_some() {
                        return;
                    }
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(item) = items.get(index) else { return };
                    match with_retries(attempts, || op(item)) {
                        Ok(result) => {
                            if let Ok(mut results) = results.lock() {
                                results[index] = Some(result);
                            }
                            let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
                            let bytes = bytes_done.fetch_add(size_of(item), Ordering::SeqCst)
                                + size_of(item);
                            report(finished, bytes);
                        }
                        Err(error) => {
                            stop.store(true, Ordering::SeqCst);
                            if let Ok(mut failures) = failures.lock() {
                                failures.push(error);
                            }
                        }
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap_or_default();
    if let Some(signal) = ctx.runner.interrupted() {
        task.finish("interrupted");
        return Err(TransferError {
            failures,
            interrupted: Some(signal),
        });
    }
    if !failures.is_empty() {
        task.finish(format!(
            "failed after {}",
            progress(
                done.load(Ordering::SeqCst),
                bytes_done.load(Ordering::SeqCst)
            )
        ));
        return Err(TransferError {
            failures,
            interrupted: None,
        });
    }
    task.finish(format!(
        "{} in {:.1}s",
        progress(items.len(), total_bytes),
        task.elapsed().as_secs_f64()
    ));
    let results = results.into_inner().unwrap_or_default();
    Ok(results.into_iter().flatten().collect())
}

/// Runs `op`, again after a backoff while it fails transiently.
pub fn with_retries<R>(
    attempts: u32,
    mut op: impl FnMut() -> Result<R, StoreError>,
) -> Result<R, StoreError> {
    let mut backoff = BACKOFF;
    let mut attempt = 1;
    loop {
        match op() {
            Err(error) if error.is_transient() && attempt < attempts.max(1) => {
                tracing::warn!(
                    "{error}; attempt {attempt} of {attempts} failed, retrying in {}s",
                    backoff.as_secs()
                );
                std::thread::sleep(backoff);
                backoff *= 2;
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// Why a batch of transfers stopped.
#[derive(Debug)]
pub struct TransferError {
    pub failures: Vec<StoreError>,
    pub interrupted: Option<i32>,
}

impl TransferError {
    /// True when one of the failures is a refusal to replace a published object.
    pub fn is_conflict(&self) -> bool {
        self.failures
            .iter()
            .any(|f| matches!(f, StoreError::Conflict { .. }))
    }
}

impl std::fmt::Display for TransferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(signal) = self.interrupted {
            write!(
                f,
                "interrupted by signal {signal}; transfers in flight were finished, no new one was started"
            )?;
        } else {
            write!(f, "{} transfer(s) failed", self.failures.len())?;
        }
        for failure in &self.failures {
            write!(f, "\n  - {failure}")?;
        }
        Ok(())
    }
}

impl std::error::Error for TransferError {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn transient() -> StoreError {
        StoreError::Backend {
            store: "s".into(),
            op: "upload",
            key: "k".into(),
            message: "reset".into(),
            transient: true,
        }
    }

    #[test]
    fn retries_only_transient_failures() {
        let calls = Cell::new(0);
        let result = with_retries(3, || {
            calls.set(calls.get() + 1);
            if calls.get() < 2 {
                Err(transient())
            } else {
                Ok(7)
            }
        });
        assert_eq!(result.expect("second attempt"), 7);
        assert_eq!(calls.get(), 2);

        calls.set(0);
        let result: Result<(), _> = with_retries(3, || {
            calls.set(calls.get() + 1);
            Err(StoreError::NotFound {
                store: "s".into(),
                key: "k".into(),
            })
        });
        assert!(result.is_err());
        assert_eq!(calls.get(), 1, "a permanent failure is not retried");
    }
}
