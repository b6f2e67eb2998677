//! Work that only a later run needs, kept off the CPU this run waits on.

/// Lowers the calling thread to nice 19, for good: on Linux each thread has its own nice
/// value, and the threads and processes it starts inherit it. Call it on a thread of its own
/// (or a pool's), never on one that goes on to do work something waits for.
#[expect(unsafe_code, reason = "setpriority(2) has no safe wrapper in std")]
pub fn lower_this_thread() {
    // SAFETY: setpriority only reads its integer arguments; a failure leaves the priority as
    // it was, which costs speed only.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
    }
}

/// Runs `work` on a thread of its own at nice 19 and waits for it.
pub fn at_lowest<T: Send>(work: impl FnOnce() -> T + Send) -> std::thread::Result<T> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                lower_this_thread();
                work()
            })
            .join()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread's nice value, from /proc (its `stat` line's 19th field).
    fn nice_of_this_thread() -> i64 {
        let stat = fs_err::read_to_string("/proc/thread-self/stat").expect("stat");
        let after_name = stat.rsplit(')').next().expect("fields");
        after_name
            .split_whitespace()
            .nth(16)
            .expect("nice")
            .parse()
            .expect("number")
    }

    #[test]
    fn work_runs_at_nice_19_and_the_caller_keeps_its_priority() {
        let before = nice_of_this_thread();
        assert_eq!(at_lowest(nice_of_this_thread).expect("joined"), 19);
        assert_eq!(nice_of_this_thread(), before);
    }
}
