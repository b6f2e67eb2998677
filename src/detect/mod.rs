//! Finding the machine's AMD GPUs and what to build for them.
//!
//! [`sysfs::read`] takes a [`sysfs::Snapshot`] of the kernel's view (the KFD topology, else the
//! PCI bus); [`resolve`] — pure — turns it, the device and family tables and the runtime's
//! environment variables into a [`Detection`]: every GPU with its gfx target, family and index,
//! and the [`Selection`] a build would use, with what decided it. The KFD topology wins when it
//! lists GPUs (the kernel knows the ISA); the PCI device table is the fallback for machines
//! without the driver (containers, build hosts). A device neither knows is reported as unknown:
//! detection never guesses a target.

pub mod devices;
pub mod isa;
mod report;
pub mod sysfs;

use std::path::PathBuf;

use crate::env_vars::{HIP_VISIBLE_DEVICES, HSA_OVERRIDE_GFX_VERSION, PYTORCH_ROCM_ARCH};
use crate::exit::{ExitStatus, HasExitStatus};
use crate::stack::{ConfigError, FamilyTable, IndexLayout, NameError, Target};

pub use devices::{DeviceTable, Kind};
use isa::IsaVersion;
use sysfs::{AMD_VENDOR, KfdNode, PciFunction, Snapshot};

/// The runtime's environment variables that change what a build must target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeEnv {
    /// `HSA_OVERRIDE_GFX_VERSION`: the ROCm runtime reports (and loads code for) this ISA on
    /// every GPU instead of the hardware's.
    pub hsa_override_gfx_version: Option<String>,
    /// `HIP_VISIBLE_DEVICES`: the GPUs HIP shows, by index, in this order.
    pub hip_visible_devices: Option<String>,
    /// `PYTORCH_ROCM_ARCH`: the target list a PyTorch build uses; beats detection.
    pub pytorch_rocm_arch: Option<String>,
}

/// Where the GPU list came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    Kfd,
    Pci,
    None,
}

/// What named a GPU's target.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum TargetFrom {
    /// KFD's `gfx_target_version` property.
    Kfd { gfx_target_version: u64 },
    /// The PCI device table (configs/amd-gpus.yaml).
    DeviceTable,
    /// `HSA_OVERRIDE_GFX_VERSION`, replacing the hardware's ISA.
    Override { value: String },
}

/// One AMD GPU.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Gpu {
    /// Position in enumeration order (KFD node order, else PCI slot order).
    pub index: usize,
    /// The device index HIP gives it, or `None` when `HIP_VISIBLE_DEVICES` hides it.
    pub hip_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kfd_node: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pci_slot: Option<String>,
    /// `1002:744c`.
    pub pci_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Chip and product from the device table; `None` for a device it does not list.
    pub name: Option<String>,
    /// `None` when neither KFD nor the table says.
    pub kind: Option<Kind>,
    /// The hardware's ISA, when known.
    pub hardware_target: Option<String>,
    /// The ISA the runtime uses (the override, else the hardware's).
    pub target: Option<String>,
    pub target_from: Option<TargetFrom>,
    pub family: Option<String>,
    pub index_url: Option<String>,
    /// Why this GPU cannot be built for, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// What decided the selection's target list.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum DecidedBy {
    PytorchRocmArch { value: String },
    HsaOverride { value: String },
    Kfd,
    DeviceTable,
}

impl std::fmt::Display for DecidedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecidedBy::PytorchRocmArch { value } => write!(f, "{PYTORCH_ROCM_ARCH}={value}"),
            DecidedBy::HsaOverride { value } => write!(f, "{HSA_OVERRIDE_GFX_VERSION}={value}"),
            DecidedBy::Kfd => write!(f, "the KFD topology (gfx_target_version)"),
            DecidedBy::DeviceTable => write!(f, "the PCI device table (configs/amd-gpus.yaml)"),
        }
    }
}

/// What to build for: the targets, their families and the families' indexes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Selection {
    pub targets: Vec<Target>,
    pub families: Vec<String>,
    pub index_urls: Vec<String>,
    /// What kind of index those are.
    #[serde(skip)]
    pub index_layout: IndexLayout,
    pub decided_by: DecidedBy,
}

/// Everything detection found.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Detection {
    pub sysfs_root: PathBuf,
    pub topology: Topology,
    pub gpus: Vec<Gpu>,
    pub selection: Option<Selection>,
    /// Why there is no selection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub notes: Vec<String>,
    /// What kind of index the family table's URLs are.
    #[serde(skip)]
    pub index_layout: IndexLayout,
    /// What a reader of the GPUs' indexes should know about them (TheRock's legacy layout).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_note: Option<&'static str>,
    #[serde(skip)]
    selection_error: Option<SelectionError>,
}

impl Selection {
    /// The one index the selection's family publishes to (what `--index-url auto` means).
    pub fn index_url(&self) -> Result<&str, SelectionError> {
        match self.index_urls.as_slice() {
            [one] => Ok(one),
            [] => Err(SelectionError::NoIndexTemplate),
            several => Err(SelectionError::SeveralIndexes {
                families: self.families.clone(),
                urls: several.to_vec(),
                layout: self.index_layout,
            }),
        }
    }

    /// `gfx1100,gfx1201`.
    pub fn target_list(&self) -> String {
        crate::stack::families::join(&self.targets)
    }

    /// `gfx1100 (family gfx110X-all), decided by …`: what was chosen and why, in one line.
    pub fn summary(&self) -> String {
        format!(
            "{} (famil{} {}), decided by {}",
            self.target_list(),
            if self.families.len() == 1 { "y" } else { "ies" },
            self.families.join(", "),
            self.decided_by
        )
    }
}

impl Detection {
    /// The selection, or the reason there is none.
    pub fn selection(&self) -> Result<&Selection, SelectionError> {
        match (&self.selection, &self.selection_error) {
            (Some(selection), _) => Ok(selection),
            (None, Some(error)) => Err(error.clone()),
            (None, None) => Err(SelectionError::NoGpu {
                looked: self.sysfs_root.display().to_string(),
                hidden: 0,
            }),
        }
    }

    pub fn to_text(&self) -> String {
        report::to_text(self)
    }
}

/// Why no target list can be chosen.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    #[error("{PYTORCH_ROCM_ARCH}: {0}")]
    Arch(NameError),
    #[error(
        "no AMD GPU {}found under {looked}: pass the targets yourself (--pytorch-rocm-arch gfxNNN or --amdgpu-family FAMILY)",
        if *hidden > 0 { "visible (HIP_VISIBLE_DEVICES hides every one) " } else { "" }
    )]
    NoGpu { looked: String, hidden: usize },
    #[error(
        "cannot tell the gfx target of {}: rockbuild does not guess one. Load the amdgpu driver so KFD reports it (/sys/class/kfd), set {HSA_OVERRIDE_GFX_VERSION}, or pass --pytorch-rocm-arch; add the device to configs/amd-gpus.yaml with its source",
        gpus.join(", ")
    )]
    Unidentified { gpus: Vec<String> },
    #[error(
        "{target} ({gpu}) is in no GPU family of configs/families.yaml, so there is no SDK index to build it from; pass --pytorch-rocm-arch with a supported target, or hide it with HIP_VISIBLE_DEVICES"
    )]
    NoFamily { target: String, gpu: String },
    #[error(
        "the GPUs here belong to {} families ({}), each with its own {}: pass --index-url with one of them ({}), or hide the other GPUs with HIP_VISIBLE_DEVICES",
        families.len(),
        families.join(", "),
        layout.label(),
        urls.join(" or ")
    )]
    SeveralIndexes {
        families: Vec<String>,
        urls: Vec<String>,
        layout: IndexLayout,
    },
    #[error(
        "configs/families.yaml has no index-url template, so `auto` cannot name an index: pass --index-url"
    )]
    NoIndexTemplate,
}

/// Why detection could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("reading the kernel's GPU information: {0}")]
    Read(#[source] std::io::Error),
    /// A sysfs attribute that is not a small regular file.
    #[error("reading the kernel's GPU information: {0}")]
    Attribute(crate::input::InputError),
    #[error("{}:{line}: `{text}` is not {expected}", path.display())]
    Malformed {
        path: PathBuf,
        line: usize,
        text: String,
        expected: &'static str,
    },
    #[error(
        "{HSA_OVERRIDE_GFX_VERSION}='{value}' is not major.minor.stepping with minor and stepping 0-15 (e.g. 11.0.0 for gfx1100, 9.0.10 for gfx90a)"
    )]
    BadOverride { value: String },
    #[error("the GPU device table: {0}")]
    DeviceTable(ConfigError),
    #[error(transparent)]
    Selection(#[from] SelectionError),
    #[error(
        "--index-url auto for a multi-arch set needs the family table's multi-arch-index-url: add it to the table, or pass --index-url"
    )]
    NoMultiArchIndex,
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Read(_) | Error::Attribute(_) | Error::Malformed { .. } => ExitStatus::Failure,
            Error::BadOverride { .. } | Error::DeviceTable(_) | Error::NoMultiArchIndex => {
                ExitStatus::Usage
            }
            Error::Selection(error) => error.exit_status(),
        }
    }
}

impl HasExitStatus for SelectionError {
    fn exit_status(&self) -> ExitStatus {
        match self {
            SelectionError::Arch(_)
            | SelectionError::NoFamily { .. }
            | SelectionError::SeveralIndexes { .. }
            | SelectionError::NoIndexTemplate => ExitStatus::Usage,
            SelectionError::NoGpu { .. } | SelectionError::Unidentified { .. } => {
                ExitStatus::Failure
            }
        }
    }
}

/// The tables detection maps devices through.
pub struct Tables<'a> {
    pub families: &'a FamilyTable,
    pub devices: &'a DeviceTable,
}

/// Turns what the kernel reported into GPUs and a selection. Pure.
pub fn resolve(snapshot: &Snapshot, tables: &Tables, env: &RuntimeEnv) -> Result<Detection, Error> {
    let override_isa = match env.hsa_override_gfx_version.as_deref() {
        Some(value) => Some((
            value.to_string(),
            IsaVersion::from_override(value).ok_or_else(|| Error::BadOverride {
                value: value.to_string(),
            })?,
        )),
        None => None,
    };
    let mut notes = Vec::new();
    let kfd_gpus: Vec<&KfdNode> = snapshot
        .kfd
        .iter()
        .flatten()
        .filter(|node| node.is_gpu())
        .collect();
    let (topology, mut gpus) = if !kfd_gpus.is_empty() {
        let gpus = kfd_gpus
            .iter()
            .enumerate()
            .map(|(index, node)| from_kfd(index, node, tables.devices, &snapshot.pci))
            .collect();
        (Topology::Kfd, gpus)
    } else {
        match &snapshot.kfd {
            None => notes.push(format!(
                "no KFD topology at {}: the amdgpu driver is not loaded (or /sys is not the host's); GPUs come from the PCI bus and the device table",
                snapshot.root.join(sysfs::KFD_NODES).display()
            )),
            Some(_) if !snapshot.pci.is_empty() => notes.push(
                "the KFD topology lists no GPU node: the driver did not bring up compute on the PCI devices below (check dmesg for amdgpu/kfd errors)".to_string(),
            ),
            Some(_) => {}
        }
        let gpus: Vec<Gpu> = snapshot
            .pci
            .iter()
            .enumerate()
            .map(|(index, function)| from_pci(index, function, tables.devices))
            .collect();
        let topology = if gpus.is_empty() {
            Topology::None
        } else {
            Topology::Pci
        };
        (topology, gpus)
    };

    for gpu in &mut gpus {
        if let Some((value, isa)) = &override_isa {
            let target = isa.target_name();
            if gpu.hardware_target.as_deref() != Some(target.as_str()) {
                notes.push(format!(
                    "{HSA_OVERRIDE_GFX_VERSION}={value}: the runtime loads {target} code on GPU {} ({})",
                    gpu.index,
                    gpu.hardware_target.as_deref().unwrap_or("unknown hardware target")
                ));
            }
            gpu.target = Some(target);
            gpu.target_from = Some(TargetFrom::Override {
                value: value.clone(),
            });
            gpu.problem = None;
        }
        if let Some(target) = gpu.target.clone() {
            match tables
                .families
                .target(&target)
                .ok()
                .and_then(|t| tables.families.family_of(&t).cloned())
            {
                Some(family) => {
                    gpu.index_url = tables.families.index_url(&family);
                    gpu.family = Some(family.name);
                }
                None => {
                    gpu.problem = Some(format!(
                        "{target} is in no GPU family of configs/families.yaml"
                    ))
                }
            }
        }
    }
    let hidden = apply_visible_devices(&mut gpus, env.hip_visible_devices.as_deref(), &mut notes);

    let selection = select(
        &gpus,
        topology,
        tables.families,
        env,
        override_isa.is_some(),
        snapshot,
        hidden,
    );
    if let Ok(selection) = &selection {
        let visible: Vec<&Gpu> = gpus.iter().filter(|g| g.hip_index.is_some()).collect();
        let integrated: Vec<&&Gpu> = visible
            .iter()
            .filter(|g| g.kind == Some(Kind::Integrated))
            .collect();
        // HIP_VISIBLE_DEVICES counts every GPU, hidden or not: suggest enumeration indices.
        let discrete: Vec<usize> = visible
            .iter()
            .filter(|g| g.kind == Some(Kind::Discrete))
            .map(|g| g.index)
            .collect();
        if matches!(
            selection.decided_by,
            DecidedBy::Kfd | DecidedBy::DeviceTable | DecidedBy::HsaOverride { .. }
        ) && !integrated.is_empty()
            && !discrete.is_empty()
        {
            let names: Vec<String> = integrated
                .iter()
                .map(|g| format!("GPU {} ({})", g.index, g.target.as_deref().unwrap_or("?")))
                .collect();
            notes.push(format!(
                "the targets include the integrated {}; to build for the discrete card{} only, set {HIP_VISIBLE_DEVICES}={}",
                names.join(", "),
                if discrete.len() > 1 { "s" } else { "" },
                discrete.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
            ));
        }
    }
    let index_note = tables
        .families
        .index_layout()
        .note()
        .filter(|_| gpus.iter().any(|g| g.index_url.is_some()));
    let (selection, problem, selection_error) = match selection {
        Ok(selection) => (Some(selection), None, None),
        Err(error) => (None, Some(error.to_string()), Some(error)),
    };
    Ok(Detection {
        sysfs_root: snapshot.root.clone(),
        topology,
        gpus,
        selection,
        problem,
        notes,
        index_layout: tables.families.index_layout(),
        index_note,
        selection_error,
    })
}

fn from_kfd(index: usize, node: &KfdNode, devices: &DeviceTable, pci: &[PciFunction]) -> Gpu {
    let pci_slot = node.pci_slot();
    // KFD has no revision; the PCI function at the node's location does.
    let revision = pci
        .iter()
        .find(|f| Some(&f.slot) == pci_slot.as_ref())
        .and_then(|f| f.revision);
    let vendor = node
        .get("vendor_id")
        .and_then(|v| u16::try_from(v).ok())
        .unwrap_or(AMD_VENDOR);
    let device = node.get("device_id").and_then(|v| u16::try_from(v).ok());
    let info = device.and_then(|d| devices.get(d));
    let reported = node.get("gfx_target_version").filter(|v| *v != 0);
    let isa = reported.and_then(IsaVersion::from_kfd);
    let (hardware_target, target_from, problem) = match (reported, isa, info) {
        (Some(value), Some(isa), _) => (
            Some(isa.target_name()),
            Some(TargetFrom::Kfd {
                gfx_target_version: value,
            }),
            None,
        ),
        // Kernels before gfx_target_version existed: the device id still names the chip.
        (None, _, Some(info)) => (
            Some(info.target_at(revision).to_string()),
            Some(TargetFrom::DeviceTable),
            None,
        ),
        (Some(value), None, _) => (
            None,
            None,
            Some(format!(
                "KFD reports gfx_target_version {value}, which names no gfx target"
            )),
        ),
        (None, _, None) => (
            None,
            None,
            Some(
                "KFD reports no gfx_target_version and the device is not in configs/amd-gpus.yaml"
                    .to_string(),
            ),
        ),
    };
    Gpu {
        index,
        hip_index: Some(index),
        kfd_node: Some(node.id),
        pci_slot,
        pci_id: format!(
            "{vendor:04x}:{}",
            device
                .map(|d| format!("{d:04x}"))
                .unwrap_or_else(|| "????".into())
        ),
        revision: revision.map(|r| format!("{r:02x}")),
        name: info.map(|i| i.display_name()),
        kind: info.map(|i| i.kind),
        target: hardware_target.clone(),
        hardware_target,
        target_from,
        family: None,
        index_url: None,
        problem,
    }
}

fn from_pci(index: usize, function: &PciFunction, devices: &DeviceTable) -> Gpu {
    let info = devices.get(function.device);
    let target = info.map(|i| i.target_at(function.revision).to_string());
    Gpu {
        index,
        hip_index: Some(index),
        kfd_node: None,
        pci_slot: Some(function.slot.clone()),
        pci_id: format!("{:04x}:{:04x}", function.vendor, function.device),
        revision: function.revision.map(|r| format!("{r:02x}")),
        name: info.map(|i| i.display_name()),
        kind: info.map(|i| i.kind),
        target: target.clone(),
        hardware_target: target,
        target_from: info.map(|_| TargetFrom::DeviceTable),
        family: None,
        index_url: None,
        problem: info.is_none().then(|| {
            format!(
                "PCI device {:04x}:{:04x} is not in configs/amd-gpus.yaml",
                function.vendor, function.device
            )
        }),
    }
}

/// Applies `HIP_VISIBLE_DEVICES` as HIP reads it: a comma-separated list of device indices, in
/// the order given. Like PyTorch's reading of the variable (torch/cuda/__init__.py,
/// `_parse_visible_devices`), the list ends at the first entry that is not a valid, unused
/// index. Returns how many GPUs it hides.
fn apply_visible_devices(gpus: &mut [Gpu], value: Option<&str>, notes: &mut Vec<String>) -> usize {
    let Some(value) = value else {
        return 0;
    };
    let mut order: Vec<usize> = Vec::new();
    for entry in value.split(',') {
        let parsed = entry
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|i| *i < gpus.len() && !order.contains(i));
        match parsed {
            Some(index) => order.push(index),
            None => {
                notes.push(format!(
                    "{HIP_VISIBLE_DEVICES}={value}: `{}` is not the index of a GPU here (0-{}), so it and what follows are ignored",
                    entry.trim(),
                    gpus.len().saturating_sub(1)
                ));
                break;
            }
        }
    }
    for gpu in gpus.iter_mut() {
        gpu.hip_index = order.iter().position(|i| *i == gpu.index);
    }
    gpus.iter().filter(|g| g.hip_index.is_none()).count()
}

fn select(
    gpus: &[Gpu],
    topology: Topology,
    families: &FamilyTable,
    env: &RuntimeEnv,
    overridden: bool,
    snapshot: &Snapshot,
    hidden: usize,
) -> Result<Selection, SelectionError> {
    let (targets, decided_by) = match env.pytorch_rocm_arch.as_deref() {
        Some(value) => (
            families.targets(value).map_err(SelectionError::Arch)?,
            DecidedBy::PytorchRocmArch {
                value: value.to_string(),
            },
        ),
        None => {
            let mut visible: Vec<&Gpu> = gpus.iter().filter(|g| g.hip_index.is_some()).collect();
            visible.sort_by_key(|g| g.hip_index);
            if visible.is_empty() {
                return Err(SelectionError::NoGpu {
                    looked: snapshot.root.display().to_string(),
                    hidden,
                });
            }
            let unknown: Vec<String> = visible
                .iter()
                .filter(|g| g.target.is_none())
                .map(|g| describe(g))
                .collect();
            if !unknown.is_empty() {
                return Err(SelectionError::Unidentified { gpus: unknown });
            }
            let mut targets: Vec<Target> = Vec::new();
            for gpu in &visible {
                let name = gpu.target.as_deref().unwrap_or_default();
                let target = families
                    .target(name)
                    .map_err(|_| SelectionError::NoFamily {
                        target: name.to_string(),
                        gpu: describe(gpu),
                    })?;
                if !targets.contains(&target) {
                    targets.push(target);
                }
            }
            let decided_by = match (&env.hsa_override_gfx_version, overridden, topology) {
                (Some(value), true, _) => DecidedBy::HsaOverride {
                    value: value.clone(),
                },
                (_, _, Topology::Kfd) => DecidedBy::Kfd,
                _ => DecidedBy::DeviceTable,
            };
            (targets, decided_by)
        }
    };
    let mut family_names: Vec<String> = Vec::new();
    let mut index_urls: Vec<String> = Vec::new();
    for target in &targets {
        if let Some(family) = families.family_of(target)
            && !family_names.contains(&family.name)
        {
            family_names.push(family.name.clone());
            // A multi-arch table's one index serves every family: named once.
            if let Some(url) = families.index_url(family)
                && !index_urls.contains(&url)
            {
                index_urls.push(url);
            }
        }
    }
    Ok(Selection {
        targets,
        families: family_names,
        index_urls,
        index_layout: families.index_layout(),
        decided_by,
    })
}

/// `GPU 1 (1002:7fff at 0000:05:00.0)`.
fn describe(gpu: &Gpu) -> String {
    match &gpu.pci_slot {
        Some(slot) => format!("GPU {} ({} at {slot})", gpu.index, gpu.pci_id),
        None => format!("GPU {} ({})", gpu.index, gpu.pci_id),
    }
}

#[cfg(test)]
mod tests;
