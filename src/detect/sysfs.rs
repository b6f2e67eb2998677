//! Reading what the kernel says about GPUs: the KFD topology and the PCI devices, under a root
//! that is `/` on a real machine and a fake tree in tests. The only I/O of detection; every
//! decision is made later, on the [`Snapshot`] this returns.
//!
//! Formats (Linux):
//! - `sys/class/kfd/kfd/topology/nodes/<N>/properties`: one `name value` pair per line, values
//!   decimal (drivers/gpu/drm/amd/amdkfd/kfd_topology.c, `node_show`). CPU nodes report
//!   `simd_count 0`; GPU nodes carry `gfx_target_version`, `vendor_id`, `device_id` (decimal),
//!   `location_id` (PCI bus << 8 | devfn) and `domain`.
//! - `sys/bus/pci/devices/<domain:bus:dev.fn>/{vendor,device,class,revision}`: hex with `0x`
//!   and a newline (`0x1002`, `0x744c`, `0x030000`, `0xc8`) (Documentation/ABI/testing/sysfs-bus-pci).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::Error;

pub const KFD_NODES: &str = "sys/class/kfd/kfd/topology/nodes";
pub const PCI_DEVICES: &str = "sys/bus/pci/devices";
/// AMD's PCI vendor id.
pub const AMD_VENDOR: u16 = 0x1002;

/// What the kernel exposes, read once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub root: PathBuf,
    /// `None` when the topology directory does not exist (no amdgpu/KFD driver).
    pub kfd: Option<Vec<KfdNode>>,
    /// AMD display or accelerator functions, sorted by slot.
    pub pci: Vec<PciFunction>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KfdNode {
    pub id: u32,
    pub properties: BTreeMap<String, u64>,
}

impl KfdNode {
    pub fn get(&self, name: &str) -> Option<u64> {
        self.properties.get(name).copied()
    }

    /// A GPU node owns SIMDs; a CPU node reports none.
    pub fn is_gpu(&self) -> bool {
        self.get("simd_count").unwrap_or(0) > 0
    }

    /// `dddd:bb:dd.f`, from `domain` and `location_id`.
    pub fn pci_slot(&self) -> Option<String> {
        let location = self.get("location_id")?;
        let domain = self.get("domain").unwrap_or(0);
        Some(format!(
            "{domain:04x}:{:02x}:{:02x}.{:x}",
            (location >> 8) & 0xff,
            (location >> 3) & 0x1f,
            location & 0x7
        ))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PciFunction {
    pub slot: String,
    pub vendor: u16,
    pub device: u16,
    pub class: u32,
    pub revision: Option<u8>,
}

/// PCI base classes of GPUs: display controllers (0x03) and processing accelerators (0x12),
/// the three classes amdgpu binds by class (amdgpu_drv.c `pciidlist`).
pub fn is_gpu_class(class: u32) -> bool {
    class >> 16 == 0x03 || class >> 8 == 0x1200
}

/// Reads the KFD topology and the AMD GPU functions on the PCI bus under `root`.
pub fn read(root: &Path) -> Result<Snapshot, Error> {
    Ok(Snapshot {
        root: root.to_path_buf(),
        kfd: read_kfd(&root.join(KFD_NODES))?,
        pci: read_pci(&root.join(PCI_DEVICES))?,
    })
}

fn read_kfd(dir: &Path) -> Result<Option<Vec<KfdNode>>, Error> {
    let entries = match fs_err::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(Error::Read(error)),
    };
    let mut nodes = Vec::new();
    for entry in entries {
        let entry = entry.map_err(Error::Read)?;
        // Node directories are numbered; anything else is not a node.
        let Some(id) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let path = entry.path().join("properties");
        let text = crate::input::read_text(&path, crate::input::SYSFS).map_err(Error::Attribute)?;
        nodes.push(KfdNode {
            id,
            properties: parse_properties(&path, &text)?,
        });
    }
    nodes.sort_by_key(|n| n.id);
    Ok(Some(nodes))
}

/// Parses a KFD `properties` file: `name value` lines, values decimal.
pub fn parse_properties(path: &Path, text: &str) -> Result<BTreeMap<String, u64>, Error> {
    let mut properties = BTreeMap::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let malformed = || Error::Malformed {
            path: path.to_path_buf(),
            line: index + 1,
            text: line.to_string(),
            expected: "`name value` with a decimal value",
        };
        let (name, value) = line.split_once(' ').ok_or_else(malformed)?;
        let value = value.trim().parse::<u64>().map_err(|_| malformed())?;
        properties.insert(name.to_string(), value);
    }
    Ok(properties)
}

fn read_pci(dir: &Path) -> Result<Vec<PciFunction>, Error> {
    let entries = match fs_err::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(Error::Read(error)),
    };
    let mut functions = Vec::new();
    for entry in entries {
        let entry = entry.map_err(Error::Read)?;
        let dir = entry.path();
        let vendor = read_hex(&dir.join("vendor"))?;
        if vendor != u64::from(AMD_VENDOR) {
            continue;
        }
        let class = read_hex(&dir.join("class"))?;
        let Ok(class) = u32::try_from(class) else {
            continue;
        };
        if !is_gpu_class(class) {
            continue;
        }
        let device = read_hex(&dir.join("device"))?;
        // Old kernels lack the attribute; a device's revision only matters for early silicon.
        let revision_file = dir.join("revision");
        let revision = match revision_file.exists() {
            true => Some(read_hex(&revision_file)?),
            false => None,
        };
        functions.push(PciFunction {
            slot: entry.file_name().to_string_lossy().into_owned(),
            vendor: AMD_VENDOR,
            device: u16::try_from(device).map_err(|_| Error::Malformed {
                path: dir.join("device"),
                line: 1,
                text: format!("{device:#x}"),
                expected: "a 16-bit PCI device id",
            })?,
            class,
            revision: revision.and_then(|r| u8::try_from(r).ok()),
        });
    }
    functions.sort_by(|a, b| a.slot.cmp(&b.slot));
    Ok(functions)
}

/// A sysfs hex attribute: `0x1002\n`.
fn read_hex(path: &Path) -> Result<u64, Error> {
    let text = crate::input::read_text(path, crate::input::SYSFS).map_err(Error::Attribute)?;
    let trimmed = text.trim();
    trimmed
        .strip_prefix("0x")
        .and_then(|digits| u64::from_str_radix(digits, 16).ok())
        .ok_or_else(|| Error::Malformed {
            path: path.to_path_buf(),
            line: 1,
            text: trimmed.to_string(),
            expected: "a hex number with 0x, as sysfs writes it",
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_parse_and_refuse_what_kfd_never_writes() {
        let path = Path::new("nodes/1/properties");
        let parsed =
            parse_properties(path, "simd_count 256\ngfx_target_version 90010\n\n").expect("parses");
        assert_eq!(parsed.get("gfx_target_version"), Some(&90010));
        for (text, line) in [("simd_count\n", 1), ("a 1\nvendor_id 0x1002\n", 2)] {
            let error = parse_properties(path, text).expect_err(text);
            assert!(
                matches!(error, Error::Malformed { line: l, .. } if l == line),
                "{error}"
            );
        }
    }

    #[test]
    fn kfd_location_is_a_pci_slot() {
        let node = KfdNode {
            id: 1,
            properties: [
                ("location_id".to_string(), 0x0300),
                ("domain".to_string(), 0),
            ]
            .into_iter()
            .collect(),
        };
        assert_eq!(node.pci_slot().as_deref(), Some("0000:03:00.0"));
        let node = KfdNode {
            id: 2,
            properties: [
                ("location_id".to_string(), 0xc1_0a),
                ("domain".to_string(), 1),
            ]
            .into_iter()
            .collect(),
        };
        assert_eq!(node.pci_slot().as_deref(), Some("0001:c1:01.2"));
    }

    #[test]
    fn gpu_classes_are_display_and_accelerators() {
        assert!(is_gpu_class(0x030000)); // VGA
        assert!(is_gpu_class(0x038000)); // display, other (Instinct)
        assert!(is_gpu_class(0x120000)); // processing accelerator
        assert!(!is_gpu_class(0x040300)); // the card's HDMI audio function
        assert!(!is_gpu_class(0x060400)); // a PCI bridge
    }
}
