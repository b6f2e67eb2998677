//! Work that only a later run needs, kept off the CPU this run waits on.

use crate::platform::host;

/// Lowers the calling thread's priority for good (nice 19 on Linux, where each thread has
/// its own nice value and the threads and processes it starts inherit it). Call it on a
/// thread of its own (or a pool's), never on one that goes on to do work something waits for.
pub fn lower_this_thread() {
    host::lower_this_thread_priority();
}

/// Runs `work` on a thread of its own at the lowest priority and waits for it.
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
