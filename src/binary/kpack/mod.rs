//! kpack, ROCm's multi-arch packaging (ROCm/rocm-kpack): device code moved out of fat binaries
//! into per-target kernel packs that the HIP runtime loads on demand.
//!
//! - [`msgpack`]: the MessagePack the packs' tables and the binaries' markers are written in.
//! - [`zstd`]: one zstd frame per code object (`zstd-per-kernel`), with its content size.
//! - [`archive`]: `.kpack` files, written and read back.
//! - here: the marker of a host binary and the fat binary wrappers that point at it, which
//!   the host-binary transformation of ELF libraries (`crate::binary::elf::transform`) and of
//!   PE/COFF images (`crate::binary::pe::transform`) writes.

pub mod archive;
pub mod msgpack;
pub mod zstd;

/// A `__CudaFatBinaryWrapper` (magic, version, binary pointer, reserved) is 24 bytes.
pub(crate) const WRAPPER_SIZE: u64 = 24;
/// The magic of a wrapper whose pointer is the fat binary.
pub(crate) const HIPF: u32 = 0x4849_5046;
/// The magic of a wrapper redirected to a kernel pack (its index in `reserved`).
pub(crate) const HIPK: u32 = 0x4B50_4948;
/// The reference zero-pages in 4 KiB pages (`PAGE_SIZE` in rocm-kpack), the x86-64 page.
pub(crate) const PAGE: u64 = 0x1000;

/// The marker of a transformed binary: its search paths and kernel name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Marker {
    pub search_paths: Vec<String>,
    pub kernel_name: String,
    /// Wrappers whose magic is `HIPK` (each asks the pack for `kernel_name#<index>`).
    pub wrappers: u64,
    /// Bytes of device code its fat binary section still holds in the file: `.hip_fatbin`'s
    /// size unless it is `NOBITS` (ELF); the whole pages of `.hip_fat` left in the file (PE).
    pub fatbin_file_bytes: u64,
}

/// A host binary's marker: MessagePack `{kpack_search_paths, kernel_name}`, the same in ELF
/// and PE files (rocm-kpack's `add_kpack_ref_section`, `msgpack.packb(..., use_bin_type=True)`).
pub fn marker_bytes(search_paths: &[String], kernel_name: &str) -> Vec<u8> {
    msgpack::Value::map([
        (
            "kpack_search_paths",
            msgpack::Value::Array(
                search_paths
                    .iter()
                    .map(|p| msgpack::Value::str(p))
                    .collect(),
            ),
        ),
        ("kernel_name", msgpack::Value::str(kernel_name)),
    ])
    .encode()
}

/// The search paths and kernel name of a marker's bytes.
pub(crate) fn marker_fields(content: &[u8]) -> Result<(Vec<String>, String), String> {
    let (value, _) = msgpack::decode(content).map_err(|e| format!("marker: {e}"))?;
    let kernel_name = value
        .get("kernel_name")
        .and_then(msgpack::Value::as_str)
        .ok_or("marker has no kernel_name")?
        .to_string();
    let search_paths = value
        .get("kpack_search_paths")
        .and_then(msgpack::Value::as_array)
        .ok_or("marker has no kpack_search_paths")?
        .iter()
        .filter_map(|p| p.as_str().map(str::to_string))
        .collect::<Vec<_>>();
    if search_paths.is_empty() {
        return Err("marker lists no search path".into());
    }
    Ok((search_paths, kernel_name))
}
