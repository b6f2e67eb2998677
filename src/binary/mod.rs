//! Binary formats, read and written below every wheel: ELF files and PE/COFF images, the
//! offload bundles of their HIP fat binary sections, the DLLs Windows provides, and kpack's
//! formats (kernel packs, their MessagePack tables and zstd frames, the host binaries'
//! markers).
//!
//! - [`elf`], [`pe`]: one reader per format, with the host-binary transformation of a kpack
//!   split beside it (`elf::transform`, `pe::transform`); [`transform`]: what both return or
//!   refuse.
//! - [`offload`]: clang offload bundles, plain and compressed (`CCOB`).
//! - [`system_dlls`]: what every Windows machine provides.
//! - [`target_id`]: the processor of an AMDGPU target ID.
//! - [`kpack`]: `.kpack` archives, MessagePack, zstd frames and the marker of a host binary.
//!
//! Nothing here knows wheels: a caller hands bytes in and gets facts or bytes back.

pub mod elf;
pub mod kpack;
pub mod offload;
pub mod pe;
pub mod system_dlls;
pub mod target_id;
pub mod transform;
