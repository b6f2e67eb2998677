//! What the host-binary transformation of a kpack split returns or refuses, for ELF libraries
//! ([`crate::binary::elf::transform`]) and PE/COFF images ([`crate::binary::pe::transform`])
//! alike.

use crate::binary::elf::ElfError;
use crate::binary::pe::PeError;

/// What a host-binary transformation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transformed {
    pub data: Vec<u8>,
    /// Bytes of the fat binary section cut from the file.
    pub bytes_removed: u64,
}

/// Why a fat binary (an ELF library or a PE/COFF image) cannot be transformed. The section
/// names are the format's (`.hip_fatbin` or `.hip_fat`, `.hipFatBinSegment` or `.hipFatB`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransformError {
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error(transparent)]
    Pe(#[from] PeError),
    #[error("not a {0}")]
    Unsupported(&'static str),
    #[error("machine {0} is not supported (x86-64 and AArch64 are)")]
    Machine(u16),
    #[error("the file is truncated or a header points outside it ({0})")]
    Bounds(String),
    #[error("no {0} section: there is no device code to move")]
    NotFat(&'static str),
    #[error("it already has a {0} section (split twice?)")]
    AlreadySplit(&'static str),
    #[error("no {0} section: the fat binary wrappers cannot be redirected")]
    NoWrappers(&'static str),
    #[error("{section} is {size} bytes, not a whole number of 24-byte wrappers")]
    WrapperSize { section: &'static str, size: u64 },
    #[error("wrapper {index} has magic 0x{magic:08x}, not HIPF")]
    WrapperMagic { index: u64, magic: u32 },
    #[error("address 0x{0:x} is in no segment")]
    Unmapped(u64),
    #[error("{count} {kind}(s) still point into {section} (first at {first})")]
    Relocations {
        count: usize,
        /// `relocation` (ELF) or `base relocation` (PE).
        kind: &'static str,
        section: &'static str,
        /// `0x…` (ELF) or `RVA 0x…` (PE).
        first: String,
    },
    #[error(".hip_fatbin is not in a PT_LOAD segment")]
    FatbinNotLoaded,
    #[error(
        "no room for another section header: the headers end at 0x{end:x}, SizeOfHeaders is \
         0x{size:x} (relink with room for one more section)"
    )]
    NoHeaderRoom { end: u64, size: u64 },
    #[error(
        "the image is signed (it has a certificate table): the split would break the \
         signature; sign the host image after the split"
    )]
    Signed,
    #[error(
        "wrapper {0}'s binary pointer has no base relocation although the image is relocated: \
         the runtime would read the marker at the wrong address"
    )]
    Unrelocated(u64),
    #[error(".hip_fat holds {raw} bytes in the file, fewer than its whole pages and the rest need")]
    FatbinShort { raw: u64 },
    #[error("the transformed {what} fails its structural check: {detail}")]
    Verify {
        /// `file` (ELF) or `image` (PE).
        what: &'static str,
        detail: String,
    },
}
