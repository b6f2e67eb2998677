//! kpack, ROCm's multi-arch packaging (ROCm/rocm-kpack): device code moved out of fat binaries
//! into per-target kernel packs that the HIP runtime loads on demand.
//!
//! - [`msgpack`]: the MessagePack the packs' tables and the binaries' markers are written in.
//! - [`zstd`]: one zstd frame per code object (`zstd-per-kernel`), with its content size.
//! - [`archive`]: `.kpack` files, written and read back.
//! - [`elf`]: the host-binary transformation (marker section, `HIPK` wrappers, zero-paged
//!   `.hip_fatbin`).

pub mod archive;
pub mod elf;
pub mod msgpack;
pub mod zstd;
