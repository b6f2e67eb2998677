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
//! The image is read by [`Image::parse`], and the result checked by the same reader
//! ([`crate::binary::pe::layout_problems`]) before it is returned.

use super::{
    FATBIN_SECTION, Image, MARKER_SECTION, Section, WRAPPER_SECTION, checksum, is_pe32_plus,
    layout_problems, le_u32, le_u64, mapped, round_up, whole_pages,
};
use crate::binary::kpack::{self, HIPF, HIPK, WRAPPER_SIZE};
use crate::binary::transform::{TransformError, Transformed};

const SECTION_HEADER: u64 = 40;
const IMAGE_SCN_CNT_INITIALIZED_DATA: u32 = 0x40;
const IMAGE_SCN_MEM_READ: u32 = 0x4000_0000;
const SECURITY_DIRECTORY: usize = 4;
const BASE_RELOCATION_DIRECTORY: usize = 5;
const DEBUG_DIRECTORY: usize = 6;
const DEBUG_ENTRY: u64 = 28;
const IMAGE_REL_BASED_HIGHLOW: u16 = 3;
const IMAGE_REL_BASED_DIR64: u16 = 10;

/// A PE32+ image being edited in memory, from the headers [`Image::parse`] read.
struct Editor {
    data: Vec<u8>,
    /// File offsets of the COFF file header, the optional header and the section table.
    coff: u64,
    optional: u64,
    table: u64,
    directories: Vec<(u64, u64)>,
    sections: Vec<Section>,
}

impl Editor {
    fn new(image: &Image<'_>, data: &[u8]) -> Result<Editor, TransformError> {
        if !image.pe32_plus {
            return Err(TransformError::Unsupported(
                "PE32+ image (a 64-bit Windows DLL or executable)",
            ));
        }
        Ok(Editor {
            data: data.to_vec(),
            coff: image.coff,
            optional: image.optional,
            table: image.table,
            directories: image
                .directories
                .iter()
                .map(|&(rva, size)| (u64::from(rva), u64::from(size)))
                .collect(),
            sections: image.sections.clone(),
        })
    }

    fn u16(&self, at: u64) -> u16 {
        u16::from_le_bytes([self.data[at as usize], self.data[at as usize + 1]])
    }

    fn u32(&self, at: u64) -> u32 {
        le_u32(&self.data, at as usize)
    }

    fn u64(&self, at: u64) -> u64 {
        le_u64(&self.data, at as usize)
    }

    fn put_u32(&mut self, at: u64, value: u32) {
        self.data[at as usize..at as usize + 4].copy_from_slice(&value.to_le_bytes());
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

    fn find(&self, name: &str) -> Option<usize> {
        self.sections.iter().position(|s| s.name == name.as_bytes())
    }

    fn directory(&self, index: usize) -> Option<(u64, u64)> {
        self.directories
            .get(index)
            .copied()
            .filter(|(rva, size)| *rva != 0 || *size != 0)
    }

    /// The file offset of `len` bytes at `rva`, all within one section's file data.
    fn offset(&self, rva: u64, len: u64) -> Option<u64> {
        mapped(&self.sections, rva, len)
    }

    fn offset_or(&self, rva: u64, len: u64, what: &str) -> Result<u64, TransformError> {
        self.offset(rva, len)
            .ok_or_else(|| TransformError::Bounds(format!("{what} at RVA 0x{rva:x}")))
    }

    /// Writes the place of section `index` to its header (its name stays as it is).
    fn write_section(&mut self, index: usize) {
        let s = self.sections[index].clone();
        let at = self.table + index as u64 * SECTION_HEADER;
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
    fn add_section(&mut self, name: &str, content: &[u8]) -> Result<usize, TransformError> {
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
        let data = &mut self.data;
        data.resize(raw_offset as usize, 0);
        data.extend_from_slice(content);
        data.resize((raw_offset + raw_size) as usize, 0);
        let section = Section {
            name: name.as_bytes().to_vec(),
            virtual_size: content.len() as u64,
            rva,
            raw_size,
            raw_offset,
        };
        self.sections.push(section);
        let index = self.sections.len() - 1;
        let name_at = headers_end as usize;
        let mut short = [0u8; 8];
        short[..name.len()].copy_from_slice(name.as_bytes());
        self.data[name_at..name_at + 8].copy_from_slice(&short);
        self.write_section(index);
        let characteristics = IMAGE_SCN_MEM_READ | IMAGE_SCN_CNT_INITIALIZED_DATA;
        self.put_u32(headers_end + 36, characteristics);
        let count = self.sections.len() as u16;
        let at = (self.coff + 2) as usize;
        self.data[at..at + 2].copy_from_slice(&count.to_le_bytes());
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
        let section = self.sections[index].clone();
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
        self.data.drain(cut as usize..(cut + size) as usize);
        Ok(size)
    }
}

/// Transforms the fat image `data`: its device code is to be found through `search_paths`
/// (relative to the image, `@GFXARCH@` for the target) under `kernel_name` in the packs'
/// tables (the runtime appends `#<wrapper index>`).
pub fn transform(
    data: &[u8],
    search_paths: &[String],
    kernel_name: &str,
) -> Result<Transformed, TransformError> {
    if !is_pe32_plus(data) {
        return Err(TransformError::Unsupported(
            "PE32+ image (a 64-bit Windows DLL or executable)",
        ));
    }
    let mut pe = Editor::new(&Image::parse(data)?, data)?;
    let fatbin = pe
        .find(FATBIN_SECTION)
        .ok_or(TransformError::NotFat(FATBIN_SECTION))?;
    if pe.find(MARKER_SECTION).is_some() {
        return Err(TransformError::AlreadySplit(MARKER_SECTION));
    }
    if pe.directory(SECURITY_DIRECTORY).is_some() {
        return Err(TransformError::Signed);
    }
    let segment = pe
        .find(WRAPPER_SECTION)
        .ok_or(TransformError::NoWrappers(WRAPPER_SECTION))?;
    let segment = pe.sections[segment].clone();
    if segment.virtual_size % WRAPPER_SIZE != 0 {
        return Err(TransformError::WrapperSize {
            section: WRAPPER_SECTION,
            size: segment.virtual_size,
        });
    }
    let wrappers = segment.virtual_size / WRAPPER_SIZE;
    let original_checksum = pe.u32(pe.optional + 64);

    let marker = kpack::marker_bytes(search_paths, kernel_name);
    let marker_index = pe.add_section(MARKER_SECTION, &marker)?;
    let marker_va = pe.image_base() + pe.sections[marker_index].rva;

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
        pe.data[(at + 8) as usize..(at + 16) as usize].copy_from_slice(&marker_va.to_le_bytes());
        pe.put_u32(at, HIPK);
        pe.put_u32(at + 16, index as u32);
    }

    let fatbin_section = pe.sections[fatbin].clone();
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
            kind: "base relocation",
            section: FATBIN_SECTION,
            first: format!("RVA 0x{first:x}"),
        });
    }

    let bytes_removed = pe.zero_page(fatbin)?;
    if original_checksum != 0 {
        let sum = checksum(&pe.data, (pe.optional + 64) as usize);
        pe.put_u32(pe.optional + 64, sum);
    }
    let verify = |detail: String| TransformError::Verify {
        what: "image",
        detail,
    };
    let problems = layout_problems(&pe.data).map_err(|e| verify(e.to_string()))?;
    if !problems.is_empty() {
        return Err(verify(problems.join("; ")));
    }
    Ok(Transformed {
        data: pe.data,
        bytes_removed,
    })
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
        assert_eq!(
            super::super::fatbin_section(b"\x7fELF\x02\x01").expect("not PE"),
            None
        );
        assert_eq!(
            transform(b"MZ", &[], "x").expect_err("refused"),
            TransformError::Unsupported("PE32+ image (a 64-bit Windows DLL or executable)")
        );
    }
}
