//! The host-binary transformation of a kpack split on Windows: a fat PE/COFF image (a DLL or
//! an extension module) becomes a host image that points at its device code in a kernel pack.
//!
//! The steps and every layout decision follow rocm-kpack's `coff/kpack_transform.py`
//! (`kpack_offload_binary`) with its `surgery.py` and `zero_page.py`, so that the same image
//! gives the same bytes. Section names in an image have 8 characters: clang's `.hip_fatbin`
//! and `.hipFatBinSegment` are `.hip_fat` and `.hipFatB` there (as MSVC's link and lld-link
//! write them), and the marker is `.kpackrf`.
//!
//! 1. A `.kpackrf` section (MessagePack `{kpack_search_paths, kernel_name}`, readable
//!    initialized data) is added: its header after the last one (there must be room before
//!    `SizeOfHeaders`), its data at the first `FileAlignment` boundary after every section's
//!    data, its RVA at the first `SectionAlignment` boundary after every section.
//!    `NumberOfSections` and `SizeOfImage` grow.
//! 2. Every `__CudaFatBinaryWrapper` of `.hipFatB` (24 bytes: magic, version, binary
//!    pointer, reserved) gets its pointer set to the marker's VA (`ImageBase` + RVA; the base
//!    relocation that covered the old pointer relocates the new one), magic `HIPF` → `HIPK`,
//!    and its index in the low 32 bits of `reserved` (the runtime's `co_index`). No base
//!    relocation may still point into `.hip_fat`.
//! 3. `.hip_fat`'s whole pages are cut out of the file: its `SizeOfRawData` shrinks (the
//!    loader zero-fills up to its `VirtualSize`, which stays) and the data of every later
//!    section moves down by as much.
//!
//! Where the reference would leave a header stale, this keeps it true; on the images MSVC's
//! link and lld-link write (no COFF symbol table, no checksum by default) both give the same
//! bytes:
//! - a non-zero `CheckSum` (GNU ld writes one) is recomputed; the reference keeps the old one;
//! - data after the last section (the COFF symbol table GNU ld leaves in an image) stays where
//!   it is and the marker's data goes after it; `PointerToSymbolTable` and the debug
//!   directory's file pointers move with the bytes they point at;
//! - an image with no `.hipFatB` (its kernels could never be found), with a wrapper pointer no
//!   base relocation covers although the image is relocated, or with a signature (data
//!   directory 4, which the change would break) is refused.
//!
//! The result is checked by rockbuild's own PE reader ([`crate::binary::pe::layout_problems`])
//! before it is returned.

use std::borrow::Cow;

use crate::binary::kpack::{self, Marker};

pub const MARKER_SECTION: &[u8; 8] = b".kpackrf";
const FATBIN_SECTION: &[u8; 8] = b".hip_fat";
const WRAPPER_SECTION: &[u8; 8] = b".hipFatB";

/// The reference zero-pages in 4 KiB pages (`coff/types.py` `PAGE_SIZE`), the x86-64 page.
const PAGE: u64 = 0x1000;
const SECTION_HEADER: u64 = 40;
const WRAPPER_SIZE: u64 = 24;
const HIPF: u32 = 0x4849_5046;
const HIPK: u32 = 0x4B50_4948;
const PE32_PLUS: u16 = 0x20b;
const IMAGE_SCN_CNT_INITIALIZED_DATA: u32 = 0x40;
const IMAGE_SCN_MEM_READ: u32 = 0x4000_0000;
const SECURITY_DIRECTORY: usize = 4;
const BASE_RELOCATION_DIRECTORY: usize = 5;
const DEBUG_DIRECTORY: usize = 6;
const DEBUG_ENTRY: u64 = 28;
const IMAGE_REL_BASED_HIGHLOW: u16 = 3;
const IMAGE_REL_BASED_DIR64: u16 = 10;
/// The loader refuses more (and so does rockbuild's reader).
const MAX_SECTIONS: u64 = 96;

/// Why an image cannot be transformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransformError {
    #[error("not a PE32+ image (a 64-bit Windows DLL or executable)")]
    NotPe32Plus,
    #[error("the file is truncated or a header points outside it ({0})")]
    Bounds(String),
    #[error("no .hip_fat section: there is no device code to move")]
    NotFat,
    #[error("it already has a .kpackrf section (split twice?)")]
    AlreadySplit,
    #[error("no .hipFatB section: the fat binary wrappers cannot be redirected")]
    NoWrappers,
    #[error(".hipFatB is {0} bytes, not a whole number of 24-byte wrappers")]
    WrapperSize(u64),
    #[error("wrapper {index} has magic 0x{magic:08x}, not HIPF")]
    WrapperMagic { index: u64, magic: u32 },
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
    #[error("{count} base relocation(s) still point into .hip_fat (first at RVA 0x{first:x})")]
    Relocations { count: usize, first: u64 },
    #[error(".hip_fat holds {raw} bytes in the file, fewer than its whole pages and the rest need")]
    FatbinShort { raw: u64 },
    #[error("the transformed image fails its structural check: {0}")]
    Verify(String),
}

/// What a transformation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transformed {
    pub data: Vec<u8>,
    /// Fat binary wrappers redirected (code objects per target the runtime will ask for).
    pub wrappers: u64,
    /// Bytes of `.hip_fat` cut from the file.
    pub bytes_removed: u64,
    pub marker_rva: u64,
}

/// One entry of the section table (the fields the transformation reads or writes).
#[derive(Debug, Clone, Copy)]
struct Section {
    name: [u8; 8],
    virtual_size: u64,
    rva: u64,
    raw_size: u64,
    raw_offset: u64,
}

impl Section {
    fn end_rva(&self) -> u64 {
        self.rva + self.virtual_size
    }
}

/// A parsed PE32+ image: borrowed to be read, owned to be edited (a torch DLL is gigabytes:
/// reading it must not copy it).
struct Pe<'a> {
    data: Cow<'a, [u8]>,
    /// File offsets of the COFF file header, the optional header and the section table.
    coff: u64,
    optional: u64,
    table: u64,
    directories: Vec<(u64, u64)>,
    sections: Vec<Section>,
}

fn round_up(value: u64, align: u64) -> u64 {
    if align == 0 {
        value
    } else {
        value.div_ceil(align) * align
    }
}

impl<'a> Pe<'a> {
    /// `Ok(None)` when the file is not a PE32+ image.
    fn parse(data: Cow<'a, [u8]>) -> Result<Option<Pe<'a>>, TransformError> {
        let u32_at = |at: u64| -> Option<u32> {
            let at = usize::try_from(at).ok()?;
            data.get(at..at + 4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        if !data.starts_with(b"MZ") {
            return Ok(None);
        }
        let Some(e_lfanew) = u32_at(0x3c) else {
            return Ok(None);
        };
        let signature = u64::from(e_lfanew);
        if data.get(signature as usize..signature as usize + 4) != Some(b"PE\0\0") {
            return Ok(None);
        }
        let coff = signature + 4;
        let header = data
            .get(coff as usize..coff as usize + 20)
            .ok_or_else(|| TransformError::Bounds("the COFF file header".into()))?;
        let count = u64::from(u16::from_le_bytes([header[2], header[3]]));
        let optional_size = u64::from(u16::from_le_bytes([header[16], header[17]]));
        let optional = coff + 20;
        let magic = data
            .get(optional as usize..optional as usize + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]));
        if magic != Some(PE32_PLUS) {
            return Ok(None);
        }
        if optional_size < 112 || count > MAX_SECTIONS {
            return Err(TransformError::Bounds(
                "the optional header or section count".into(),
            ));
        }
        let directory_count = u64::from(
            u32_at(optional + 108)
                .ok_or_else(|| TransformError::Bounds("the optional header".into()))?,
        );
        if 112 + directory_count * 8 > optional_size {
            return Err(TransformError::Bounds("the data directories".into()));
        }
        let directories = (0..directory_count)
            .map(|i| {
                let at = optional + 112 + i * 8;
                match (u32_at(at), u32_at(at + 4)) {
                    (Some(rva), Some(size)) => Ok((u64::from(rva), u64::from(size))),
                    _ => Err(TransformError::Bounds("the data directories".into())),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let table = optional + optional_size;
        let mut sections = Vec::new();
        for index in 0..count {
            let at = table + index * SECTION_HEADER;
            let header = data
                .get(at as usize..(at + SECTION_HEADER) as usize)
                .ok_or_else(|| TransformError::Bounds("the section table".into()))?;
            let word = |i: usize| {
                u64::from(u32::from_le_bytes([
                    header[i],
                    header[i + 1],
                    header[i + 2],
                    header[i + 3],
                ]))
            };
            let section = Section {
                name: std::array::from_fn(|i| header[i]),
                virtual_size: word(8),
                rva: word(12),
                raw_size: word(16),
                raw_offset: word(20),
            };
            if section.raw_offset + section.raw_size > data.len() as u64 {
                return Err(TransformError::Bounds(format!(
                    "the data of section {}",
                    String::from_utf8_lossy(&section.name).trim_end_matches('\0')
                )));
            }
            sections.push(section);
        }
        Ok(Some(Pe {
            data,
            coff,
            optional,
            table,
            directories,
            sections,
        }))
    }

    fn u16(&self, at: u64) -> u16 {
        u16::from_le_bytes([self.data[at as usize], self.data[at as usize + 1]])
    }

    fn u32(&self, at: u64) -> u32 {
        let at = at as usize;
        u32::from_le_bytes([
            self.data[at],
            self.data[at + 1],
            self.data[at + 2],
            self.data[at + 3],
        ])
    }

    fn u64(&self, at: u64) -> u64 {
        u64::from_le_bytes(std::array::from_fn(|i| self.data[at as usize + i]))
    }

    fn put_u32(&mut self, at: u64, value: u32) {
        self.data.to_mut()[at as usize..at as usize + 4].copy_from_slice(&value.to_le_bytes());
    }

    fn image_base(&self) -> u64 {
        self.u64(self.optional + 24)
    }

    fn section_alignment(&self) -> u64 {
        u64::from(self.u32(self.optional + 32))
    }

    fn file_alignment(&self) -> u64 {
        u64::from(self.u32(self.optional + 36))
    }

    fn find(&self, name: &[u8; 8]) -> Option<usize> {
        self.sections.iter().position(|s| &s.name == name)
    }

    fn directory(&self, index: usize) -> Option<(u64, u64)> {
        self.directories
            .get(index)
            .copied()
            .filter(|(rva, size)| *rva != 0 || *size != 0)
    }

    /// The file offset of `len` bytes at `rva`, all within one section's file data.
    fn offset(&self, rva: u64, len: u64) -> Option<u64> {
        self.sections
            .iter()
            .find(|s| rva >= s.rva && rva < s.end_rva())
            .filter(|s| rva - s.rva + len <= s.raw_size)
            .map(|s| s.raw_offset + rva - s.rva)
    }

    fn offset_or(&self, rva: u64, len: u64, what: &str) -> Result<u64, TransformError> {
        self.offset(rva, len)
            .ok_or_else(|| TransformError::Bounds(format!("{what} at RVA 0x{rva:x}")))
    }

    /// A section's bytes: its raw data, cut to its virtual size.
    fn content(&self, index: usize) -> &[u8] {
        let s = self.sections[index];
        let len = s.raw_size.min(s.virtual_size);
        &self.data[s.raw_offset as usize..(s.raw_offset + len) as usize]
    }

    fn write_section(&mut self, index: usize) {
        let s = self.sections[index];
        let at = self.table + index as u64 * SECTION_HEADER;
        self.data.to_mut()[at as usize..at as usize + 8].copy_from_slice(&s.name);
        for (field, value) in [
            (8, s.virtual_size),
            (12, s.rva),
            (16, s.raw_size),
            (20, s.raw_offset),
        ] {
            // Every value was read from (or computed within) a 32-bit field's range.
            self.put_u32(at + field, value as u32);
        }
    }

    /// Step 1: the marker section, as `CoffSurgery.add_section` lays it out.
    fn add_section(&mut self, name: &[u8; 8], content: &[u8]) -> Result<usize, TransformError> {
        let headers_end = self.table + self.sections.len() as u64 * SECTION_HEADER;
        let size_of_headers = u64::from(self.u32(self.optional + 60));
        if headers_end + SECTION_HEADER > size_of_headers {
            return Err(TransformError::NoHeaderRoom {
                end: headers_end + SECTION_HEADER,
                size: size_of_headers,
            });
        }
        let file_alignment = self.file_alignment();
        let data_end = self
            .sections
            .iter()
            .filter(|s| s.raw_size > 0)
            .map(|s| s.raw_offset + s.raw_size)
            .max()
            .unwrap_or(size_of_headers);
        // Bytes after the last section (a COFF symbol table) stay where they are.
        let raw_offset = round_up(data_end.max(self.data.len() as u64), file_alignment);
        let rva = round_up(
            self.sections
                .iter()
                .map(Section::end_rva)
                .max()
                .unwrap_or(0),
            self.section_alignment(),
        );
        let raw_size = round_up(content.len() as u64, file_alignment);
        let data = self.data.to_mut();
        data.resize(raw_offset as usize, 0);
        data.extend_from_slice(content);
        data.resize((raw_offset + raw_size) as usize, 0);
        let section = Section {
            name: *name,
            virtual_size: content.len() as u64,
            rva,
            raw_size,
            raw_offset,
        };
        self.sections.push(section);
        let index = self.sections.len() - 1;
        self.write_section(index);
        let characteristics = IMAGE_SCN_MEM_READ | IMAGE_SCN_CNT_INITIALIZED_DATA;
        self.put_u32(headers_end + 36, characteristics);
        let count = self.sections.len() as u16;
        let at = (self.coff + 2) as usize;
        self.data.to_mut()[at..at + 2].copy_from_slice(&count.to_le_bytes());
        let size_of_image = rva + round_up(content.len() as u64, self.section_alignment());
        self.put_u32(self.optional + 56, size_of_image as u32);
        Ok(index)
    }

    /// Every base relocation: (target RVA, type), padding entries left out.
    fn base_relocations(&self) -> Result<Vec<(u64, u16)>, TransformError> {
        let Some((rva, size)) = self.directory(BASE_RELOCATION_DIRECTORY) else {
            return Ok(Vec::new());
        };
        let start = self.offset_or(rva, size, "the base relocation table")?;
        let mut relocations = Vec::new();
        let mut at = start;
        while at + 8 <= start + size {
            let page = u64::from(self.u32(at));
            let block = u64::from(self.u32(at + 4));
            if block < 8 || at + block > start + size {
                return Err(TransformError::Bounds(format!(
                    "a base relocation block of {block} bytes at RVA 0x{:x}",
                    rva + at - start
                )));
            }
            for entry in (at + 8..at + block - 1).step_by(2) {
                let word = self.u16(entry);
                let kind = word >> 12;
                if kind != 0 {
                    relocations.push((page + u64::from(word & 0xfff), kind));
                }
            }
            at += block;
        }
        Ok(relocations)
    }

    /// Step 3: `.hip_fat`'s whole pages cut from the file (`conservative_zero_page`).
    fn zero_page(&mut self, index: usize) -> Result<u64, TransformError> {
        let section = self.sections[index];
        if section.raw_size == 0 {
            return Ok(0);
        }
        let Some((start, size)) = whole_pages(section.rva, section.virtual_size) else {
            return Ok(0);
        };
        let into = start - section.rva;
        let rest = section.virtual_size - size;
        let kept = if rest == 0 {
            0
        } else {
            round_up(rest, self.file_alignment())
        };
        if kept + size > section.raw_size {
            return Err(TransformError::FatbinShort {
                raw: section.raw_size,
            });
        }
        let cut = section.raw_offset + into;
        // File pointers past the cut move down with their bytes: the sections' data (as the
        // reference moves them), the symbol table and the debug data (which it leaves). The
        // debug directory is found before any section moves (it is written where it is now).
        if let Some((rva, len)) = self.directory(DEBUG_DIRECTORY) {
            let table = self.offset_or(rva, len, "the debug directory")?;
            for entry in 0..len / DEBUG_ENTRY {
                let pointer_at = table + entry * DEBUG_ENTRY + 24;
                let pointer = u64::from(self.u32(pointer_at));
                if pointer > cut {
                    self.put_u32(pointer_at, (pointer - size) as u32);
                }
            }
        }
        for (i, other) in self.sections.clone().iter().enumerate() {
            if other.raw_offset > section.raw_offset {
                self.sections[i].raw_offset -= size;
                self.write_section(i);
            }
        }
        self.sections[index].raw_size = kept;
        self.write_section(index);
        let symbols_at = self.coff + 8;
        let symbols = u64::from(self.u32(symbols_at));
        if symbols > cut {
            self.put_u32(symbols_at, (symbols - size) as u32);
        }
        self.data
            .to_mut()
            .drain(cut as usize..(cut + size) as usize);
        Ok(size)
    }
}

/// The whole pages of `[rva, rva + size)`: (first page's RVA, bytes), `None` when none.
fn whole_pages(rva: u64, size: u64) -> Option<(u64, u64)> {
    let start = round_up(rva, PAGE);
    let end = (rva + size) / PAGE * PAGE;
    (start < end).then_some((start, end - start))
}

/// The `.hip_fat` section of a PE32+ image: `Ok(None)` when it has none, is the host image of
/// a split (its `.hip_fat` keeps only the bytes around the pages that were cut) or is no PE32+
/// image (HIP device code is 64-bit only).
pub fn fatbin_section(data: &[u8]) -> Result<Option<&[u8]>, TransformError> {
    let Some(pe) = Pe::parse(Cow::Borrowed(data))? else {
        return Ok(None);
    };
    if pe.find(MARKER_SECTION).is_some() {
        return Ok(None);
    }
    Ok(pe.find(FATBIN_SECTION).map(|i| {
        let s = pe.sections[i];
        // Within the file: parse checked every section's data against it.
        &data[s.raw_offset as usize..(s.raw_offset + s.raw_size.min(s.virtual_size)) as usize]
    }))
}

/// Transforms the fat image `data`: its device code is to be found through `search_paths`
/// (relative to the image, `@GFXARCH@` for the target) under `kernel_name` in the packs'
/// tables (the runtime appends `#<wrapper index>`).
pub fn transform(
    data: &[u8],
    search_paths: &[String],
    kernel_name: &str,
) -> Result<Transformed, TransformError> {
    let mut pe = Pe::parse(Cow::Owned(data.to_vec()))?.ok_or(TransformError::NotPe32Plus)?;
    let fatbin = pe.find(FATBIN_SECTION).ok_or(TransformError::NotFat)?;
    if pe.find(MARKER_SECTION).is_some() {
        return Err(TransformError::AlreadySplit);
    }
    if pe.directory(SECURITY_DIRECTORY).is_some() {
        return Err(TransformError::Signed);
    }
    let segment = pe.find(WRAPPER_SECTION).ok_or(TransformError::NoWrappers)?;
    let segment = pe.sections[segment];
    if segment.virtual_size % WRAPPER_SIZE != 0 {
        return Err(TransformError::WrapperSize(segment.virtual_size));
    }
    let wrappers = segment.virtual_size / WRAPPER_SIZE;
    let original_checksum = pe.u32(pe.optional + 64);

    let marker = kpack::marker_bytes(search_paths, kernel_name);
    let marker_index = pe.add_section(MARKER_SECTION, &marker)?;
    let marker_rva = pe.sections[marker_index].rva;
    let marker_va = pe.image_base() + marker_rva;

    let relocations = pe.base_relocations()?;
    for index in 0..wrappers {
        let wrapper_rva = segment.rva + index * WRAPPER_SIZE;
        let at = pe.offset_or(wrapper_rva, WRAPPER_SIZE, "a fat binary wrapper")?;
        let magic = pe.u32(at);
        if magic != HIPF {
            return Err(TransformError::WrapperMagic { index, magic });
        }
        let pointer_rva = wrapper_rva + 8;
        if pe.directory(BASE_RELOCATION_DIRECTORY).is_some()
            && !relocations.contains(&(pointer_rva, IMAGE_REL_BASED_DIR64))
        {
            return Err(TransformError::Unrelocated(index));
        }
        pe.data.to_mut()[(at + 8) as usize..(at + 16) as usize]
            .copy_from_slice(&marker_va.to_le_bytes());
        pe.put_u32(at, HIPK);
        pe.put_u32(at + 16, index as u32);
    }

    let fatbin_section = pe.sections[fatbin];
    let inside = |target: u64| target >= fatbin_section.rva && target < fatbin_section.end_rva();
    let image_base = pe.image_base();
    let stale: Vec<u64> = relocations
        .iter()
        .filter_map(|&(rva, kind)| {
            let value = match kind {
                IMAGE_REL_BASED_DIR64 => pe.offset(rva, 8).map(|at| pe.u64(at)),
                IMAGE_REL_BASED_HIGHLOW => pe.offset(rva, 4).map(|at| u64::from(pe.u32(at))),
                _ => None,
            }?;
            inside(value.wrapping_sub(image_base)).then_some(rva)
        })
        .collect();
    if let Some(first) = stale.first() {
        return Err(TransformError::Relocations {
            count: stale.len(),
            first: *first,
        });
    }

    let bytes_removed = pe.zero_page(fatbin)?;
    if original_checksum != 0 {
        let sum = crate::binary::pe::checksum(&pe.data, (pe.optional + 64) as usize);
        pe.put_u32(pe.optional + 64, sum);
    }
    let problems = crate::binary::pe::layout_problems(&pe.data)
        .map_err(|e| TransformError::Verify(e.to_string()))?;
    if !problems.is_empty() {
        return Err(TransformError::Verify(problems.join("; ")));
    }
    Ok(Transformed {
        data: pe.data.into_owned(),
        wrappers,
        bytes_removed,
        marker_rva,
    })
}

/// Reads the `.kpackrf` marker of a host image, `None` when it has none.
pub fn read_marker(data: &[u8]) -> Result<Option<Marker>, String> {
    let pe = Pe::parse(Cow::Borrowed(data))
        .map_err(|e| e.to_string())?
        .ok_or("not a PE32+ image")?;
    let Some(index) = pe.find(MARKER_SECTION) else {
        return Ok(None);
    };
    let (search_paths, kernel_name) = kpack::marker_fields(pe.content(index))?;
    let marker_va = pe.image_base() + pe.sections[index].rva;
    let mut wrappers = 0;
    if let Some(segment) = pe.find(WRAPPER_SECTION) {
        let segment = pe.sections[segment];
        for index in 0..segment.virtual_size / WRAPPER_SIZE {
            let rva = segment.rva + index * WRAPPER_SIZE;
            let at = pe
                .offset_or(rva, WRAPPER_SIZE, "a fat binary wrapper")
                .map_err(|e| e.to_string())?;
            if pe.u32(at) == HIPK && pe.u64(at + 8) == marker_va {
                wrappers += 1;
            }
        }
    }
    let fatbin_file_bytes = pe
        .find(FATBIN_SECTION)
        .map(|i| pe.sections[i])
        .map_or(0, |s| {
            let pages = whole_pages(s.rva, s.virtual_size).map_or(0, |(_, size)| size);
            let rest = s.virtual_size - pages;
            let kept = if rest == 0 {
                0
            } else {
                round_up(rest, pe.file_alignment())
            };
            s.raw_size.saturating_sub(kept)
        });
    Ok(Some(Marker {
        search_paths,
        kernel_name,
        wrappers,
        fatbin_file_bytes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_pages_of_a_section() {
        assert_eq!(whole_pages(0x6000, 0x1869), Some((0x6000, 0x1000)));
        assert_eq!(whole_pages(0x6010, 0x2000), Some((0x7000, 0x1000)));
        assert_eq!(whole_pages(0x6000, 0xfff), None);
        assert_eq!(whole_pages(0x6800, 0x1000), None);
    }

    #[test]
    fn refuses_what_is_not_a_pe32_plus_image() {
        assert_eq!(fatbin_section(b"\x7fELF\x02\x01").expect("not PE"), None);
        assert_eq!(
            transform(b"MZ", &[], "x").expect_err("refused"),
            TransformError::NotPe32Plus
        );
    }
}
