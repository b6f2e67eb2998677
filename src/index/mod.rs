//! (filled in by its issue)

pub mod client;
