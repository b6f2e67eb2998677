//! Wheels: reading them strictly, verifying sets of them, rewriting their versions.
//!
//! - [`filename`]: wheel file names, PEP 503 normalization, PEP 427 escaping.
//! - [`archive`]: the strict zip reader (ZIP64, header consistency, positioned reads).
//! - [`companion`]: products (built here) and companions (the ROCm SDK, carried as published).
//! - [`record`], [`metadata`]: RECORD, METADATA (core metadata, PEP 658 bytes), WHEEL.
//! - [`manylinux`]: the platform tag against the glibc versions the libraries need.
//! - [`verify`]: [`verify::verify_wheels`], each wheel on its own (a set's checks are
//!   `crate::verify`'s); [`problem`]: what it finds.
//! - [`retag`]: [`retag::plan`], a verified `linux_<arch>` wheel to its manylinux tag.
//! - [`rewrite`]: [`rewrite::rewrite_set`], promotion's a → rc → final version rewrite.
//!
//! The binaries inside a wheel are read by [`crate::binary`]; what makes device wheels of a
//! fat wheel is [`crate::multiarch`].

pub mod archive;
pub mod companion;
pub mod filename;
pub mod manylinux;
pub mod metadata;
pub mod problem;
pub mod record;
pub mod retag;
pub mod rewrite;
pub mod verify;
pub mod zipwrite;
