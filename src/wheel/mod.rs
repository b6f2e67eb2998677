//! Wheels: reading them strictly, verifying sets of them, rewriting their versions.
//!
//! - [`filename`]: wheel file names, PEP 503 normalization, PEP 427 escaping.
//! - [`archive`]: the strict zip reader (ZIP64, header consistency, positioned reads).
//! - [`companion`]: products (built here) and companions (the ROCm SDK, carried as published).
//! - [`record`], [`metadata`]: RECORD, METADATA (core metadata, PEP 658 bytes), WHEEL.
//! - [`elf`], [`offload`]: DT_NEEDED, RPATH/RUNPATH and the gfx targets of `.hip_fatbin`.
//! - [`pe`], [`system_dlls`]: the imports, delay-loaded DLLs and HIP fat binary of PE/COFF
//!   images (Windows), and the DLLs every Windows machine provides.
//! - [`manylinux`]: the platform tag against the glibc versions the libraries need.
//! - [`verify`]: [`verify::verify_set`], the gate before staging and promotion.
//! - [`retag`]: [`retag::plan`], a verified `linux_<arch>` wheel to its manylinux tag.
//! - [`rewrite`]: [`rewrite::rewrite_set`], promotion's a → rc → final version rewrite.
//! - [`fat`]: the fat Windows torch wheel, the ROCm SDK carried inside.
//! - [`kpack`], [`split`]: kernel packs and the multi-arch split of a fat wheel into a host
//!   wheel and one device wheel per GPU target.

pub mod archive;
pub mod companion;
pub mod elf;
pub mod fat;
pub mod filename;
pub mod kpack;
pub mod manylinux;
pub mod metadata;
pub mod offload;
pub mod pe;
pub mod problem;
pub mod record;
pub mod retag;
pub mod rewrite;
pub mod split;
pub mod system_dlls;
pub mod verify;
pub mod zipwrite;
