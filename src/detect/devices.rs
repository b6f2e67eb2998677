//! The AMD GPU device table (configs/amd-gpus.yaml): PCI device id → gfx target, product name,
//! integrated or discrete. Data, validated at load with file:line errors; the sources of every
//! row are named in the file.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::Deserialize;

use crate::stack::families::is_target_shaped;
use crate::stack::{ConfigError, ConfigSource};

/// The shipped table, compiled in.
pub const DEFAULT_DEVICES: &str = include_str!("../../configs/amd-gpus.yaml");

/// Integrated (an APU sharing memory with the CPU) or a discrete card.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    Integrated,
    Discrete,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Integrated => "integrated",
            Kind::Discrete => "discrete",
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct File {
    schema: u32,
    chips: Vec<ChipEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct ChipEntry {
    chip: String,
    target: String,
    kind: Kind,
    #[serde(default)]
    revisions: IndexMap<String, String>,
    devices: IndexMap<String, String>,
}

/// What the table says about one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub chip: String,
    /// The product name from pci.ids; empty when it has none.
    pub product: String,
    pub kind: Kind,
    pub target: String,
    /// Targets of early silicon revisions that KFD names differently (revision → target).
    revisions: BTreeMap<u8, String>,
}

impl DeviceInfo {
    /// `Navi 31 [Radeon RX 7900 XT/7900 XTX]`, or the chip alone when pci.ids has no name.
    pub fn display_name(&self) -> String {
        if self.product.is_empty() {
            self.chip.clone()
        } else {
            format!("{} [{}]", self.chip, self.product)
        }
    }

    /// The target of this device at a given PCI revision.
    pub fn target_at(&self, revision: Option<u8>) -> &str {
        revision
            .and_then(|r| self.revisions.get(&r))
            .unwrap_or(&self.target)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceTable {
    devices: BTreeMap<u16, DeviceInfo>,
}

impl DeviceTable {
    pub fn builtin() -> Result<DeviceTable, ConfigError> {
        DeviceTable::load(&ConfigSource::embedded(
            "configs/amd-gpus.yaml",
            DEFAULT_DEVICES,
        ))
    }

    pub fn load(source: &ConfigSource) -> Result<DeviceTable, ConfigError> {
        let file: File = source.parse()?;
        source.check_schema(file.schema)?;
        let mut devices = BTreeMap::new();
        for chip in file.chips {
            let at = |message: String| {
                source.error_at(&["chips"], format!("chip '{}': {message}", chip.chip))
            };
            if !is_target_shaped(&chip.target) {
                return Err(at(format!(
                    "'{}' is not a gfx target (gfx + 3-4 hex digits)",
                    chip.target
                )));
            }
            let mut revisions = BTreeMap::new();
            for (revision, target) in &chip.revisions {
                let parsed = parse_hex(revision, 2).ok_or_else(|| {
                    at(format!(
                        "revision '{revision}' is not two lowercase hex digits"
                    ))
                })?;
                if !is_target_shaped(target) {
                    return Err(at(format!(
                        "'{target}' (revision {revision}) is not a gfx target"
                    )));
                }
                revisions.insert(parsed as u8, target.clone());
            }
            for (id, product) in &chip.devices {
                let parsed = parse_hex(id, 4).ok_or_else(|| {
                    at(format!("device id '{id}' is not four lowercase hex digits"))
                })?;
                let info = DeviceInfo {
                    chip: chip.chip.clone(),
                    product: product.clone(),
                    kind: chip.kind,
                    target: chip.target.clone(),
                    revisions: revisions.clone(),
                };
                if let Some(other) = devices.insert(parsed as u16, info) {
                    return Err(source.error_at(
                        &["chips"],
                        format!(
                            "device id {id} is listed under both '{}' and '{}'",
                            other.chip, chip.chip
                        ),
                    ));
                }
            }
        }
        Ok(DeviceTable { devices })
    }

    pub fn get(&self, device_id: u16) -> Option<&DeviceInfo> {
        self.devices.get(&device_id)
    }

    #[cfg(test)]
    fn targets(&self) -> std::collections::BTreeSet<&str> {
        self.devices.values().map(|d| d.target.as_str()).collect()
    }
}

fn parse_hex(text: &str, digits: usize) -> Option<u32> {
    (text.len() == digits
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then(|| u32::from_str_radix(text, 16).ok())
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::load_families;

    fn parse(text: &str) -> Result<DeviceTable, ConfigError> {
        DeviceTable::load(&ConfigSource {
            name: "amd-gpus.yaml".into(),
            text: text.into(),
        })
    }

    #[test]
    fn shipped_table_covers_every_family_it_can() {
        let table = DeviceTable::builtin().expect("the shipped table loads");
        let families = load_families(None).expect("families");
        let covered = table.targets();
        let missing: Vec<&str> = families
            .families()
            .flat_map(|f| f.targets.iter().map(|t| t.as_str()))
            .filter(|t| !covered.contains(t))
            .collect();
        // Documented in configs/amd-gpus.yaml: no public PCI id for these yet.
        assert_eq!(missing, ["gfx1153", "gfx1250"]);
    }

    #[test]
    fn shipped_table_knows_the_reference_devices() {
        let table = DeviceTable::builtin().expect("loads");
        let row = |id: u16| {
            let info = table.get(id).expect("listed");
            (info.target.as_str(), info.kind)
        };
        assert_eq!(row(0x744c), ("gfx1100", Kind::Discrete));
        assert_eq!(row(0x747e), ("gfx1101", Kind::Discrete));
        assert_eq!(row(0x74a1), ("gfx942", Kind::Discrete));
        assert_eq!(row(0x74a0), ("gfx942", Kind::Integrated));
        assert_eq!(row(0x740f), ("gfx90a", Kind::Discrete));
        assert_eq!(row(0x164e), ("gfx1036", Kind::Integrated));
        assert_eq!(row(0x1586), ("gfx1151", Kind::Integrated));
        assert_eq!(row(0x1114), ("gfx1152", Kind::Integrated));
        assert_eq!(row(0x7550), ("gfx1201", Kind::Discrete));
        assert_eq!(row(0x75a3), ("gfx950", Kind::Discrete));
        assert!(table.get(0x7fff).is_none());
        let mi300x = table.get(0x74a1).expect("listed");
        assert_eq!(mi300x.target_at(Some(0x00)), "gfx941");
        assert_eq!(mi300x.target_at(Some(0x01)), "gfx942");
        assert_eq!(mi300x.target_at(None), "gfx942");
        assert_eq!(
            table.get(0x744c).expect("listed").display_name(),
            "Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]"
        );
        assert_eq!(
            table.get(0x7410).expect("listed").display_name(),
            "Aldebaran (MI200)"
        );
    }

    #[test]
    fn bad_rows_are_refused_with_their_place() {
        let head = "schema: 1\nchips:\n  - chip: X\n    kind: discrete\n";
        let cases = [
            (
                format!("{head}    target: gfx94X\n    devices: {{\"7448\": a}}\n"),
                "amd-gpus.yaml:2: chip 'X': 'gfx94X' is not a gfx target (gfx + 3-4 hex digits)",
            ),
            (
                format!("{head}    target: gfx1100\n    devices: {{\"744C\": a}}\n"),
                "amd-gpus.yaml:2: chip 'X': device id '744C' is not four lowercase hex digits",
            ),
            (
                format!(
                    "{head}    target: gfx1100\n    revisions: {{\"0\": gfx940}}\n    devices: {{}}\n"
                ),
                "amd-gpus.yaml:2: chip 'X': revision '0' is not two lowercase hex digits",
            ),
            (
                format!(
                    "{head}    target: gfx1100\n    devices: {{\"7448\": a}}\n  - chip: Y\n    kind: discrete\n    target: gfx1101\n    devices: {{\"7448\": b}}\n"
                ),
                "amd-gpus.yaml:2: device id 7448 is listed under both 'X' and 'Y'",
            ),
            (
                "schema: 2\nchips: []\n".to_string(),
                "amd-gpus.yaml:1: unsupported schema 2 (this rockbuild reads schema 1)",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(&text).expect_err(&text).to_string(), expected);
        }
        let unknown = parse(&format!(
            "{head}    target: gfx1100\n    devices: {{}}\n    family: x\n"
        ))
        .expect_err("unknown key");
        assert!(
            unknown.to_string().starts_with("amd-gpus.yaml:7:"),
            "{unknown}"
        );
    }
}
