//! The text a person reads from `rockbuild detect`.

use std::fmt::Write as _;

use super::{Detection, Gpu, TargetFrom, Topology, sysfs};
use crate::stack::IndexLayout;

pub fn to_text(detection: &Detection) -> String {
    let mut out = String::new();
    let root = &detection.sysfs_root;
    match detection.topology {
        Topology::Kfd => {
            let _ = writeln!(
                out,
                "AMD GPUs (KFD topology, {})",
                root.join(sysfs::KFD_NODES).display()
            );
        }
        Topology::Pci => {
            let _ = writeln!(
                out,
                "AMD GPUs (PCI bus, {})",
                root.join(sysfs::PCI_DEVICES).display()
            );
        }
        Topology::None => {
            let _ = writeln!(
                out,
                "AMD GPUs: none (looked at {} and {})",
                root.join(sysfs::KFD_NODES).display(),
                root.join(sysfs::PCI_DEVICES).display()
            );
        }
    }
    for gpu in &detection.gpus {
        write_gpu(&mut out, gpu, detection.index_layout);
    }
    if !detection.notes.is_empty() || detection.index_note.is_some() {
        out.push('\n');
        for note in detection
            .notes
            .iter()
            .map(String::as_str)
            .chain(detection.index_note)
        {
            let _ = writeln!(out, "note: {note}");
        }
    }
    out.push('\n');
    match &detection.selection {
        Some(selection) => {
            let targets: Vec<&str> = selection.targets.iter().map(|t| t.as_str()).collect();
            let _ = writeln!(out, "Build for: {}", selection.summary());
            let families = selection.families.join(";");
            let _ = writeln!(
                out,
                "  rockbuild build --pytorch-rocm-arch auto   # {}",
                targets.join(",")
            );
            let _ = writeln!(
                out,
                "  rockbuild build --amdgpu-family auto       # {families}, every target of it"
            );
            match selection.index_urls.as_slice() {
                [url] => {
                    let _ = writeln!(out, "  rockbuild install-rocm --index-url auto    # {url}");
                }
                urls => {
                    for url in urls {
                        let _ = writeln!(out, "  rockbuild install-rocm --index-url {url}");
                    }
                }
            }
        }
        None => {
            // The reason is the command's error, printed once, on stderr.
            let _ = writeln!(out, "Build for: nothing (see the error)");
        }
    }
    out
}

fn write_gpu(out: &mut String, gpu: &Gpu, layout: IndexLayout) {
    let hip = match gpu.hip_index {
        Some(index) => format!("HIP {index}"),
        None => "hidden".to_string(),
    };
    let _ = writeln!(
        out,
        "  GPU {}  {:<8} {:<10} {}   [{hip}]",
        gpu.index,
        gpu.target.as_deref().unwrap_or("unknown"),
        gpu.kind.map_or("unknown", |k| k.as_str()),
        gpu.name.as_deref().unwrap_or("(not in the device table)"),
    );
    let mut place = gpu.pci_id.clone();
    if let Some(revision) = &gpu.revision {
        let _ = write!(place, " rev {revision}");
    }
    if let Some(slot) = &gpu.pci_slot {
        let _ = write!(place, " at {slot}");
    }
    if let Some(node) = gpu.kfd_node {
        let _ = write!(place, ", KFD node {node}");
    }
    let from = match &gpu.target_from {
        Some(TargetFrom::Kfd { gfx_target_version }) => {
            format!("target from gfx_target_version {gfx_target_version}")
        }
        Some(TargetFrom::DeviceTable) => "target from the device table".to_string(),
        Some(TargetFrom::Override { value }) => format!(
            "target from HSA_OVERRIDE_GFX_VERSION={value} (hardware: {})",
            gpu.hardware_target.as_deref().unwrap_or("unknown")
        ),
        None => "target unknown".to_string(),
    };
    let _ = writeln!(out, "         {place}; {from}");
    match (&gpu.family, &gpu.index_url) {
        (Some(family), Some(url)) => {
            let _ = writeln!(out, "         family {family}, {} {url}", layout.label());
        }
        (Some(family), None) => {
            let _ = writeln!(out, "         family {family}");
        }
        _ => {}
    }
    // A multi-arch index installs this GPU's kernels as an extra of the host wheels.
    if let Some(processor) = gpu
        .target
        .as_deref()
        .and_then(|t| crate::binary::target_id::processor(t).ok())
    {
        let extra = crate::multiarch::device::extra_name(processor);
        let _ = writeln!(
            out,
            "         device extra {extra} (multi-arch index: \"torch[{extra}]\" \"torchvision[{extra}]\")"
        );
    }
    if let Some(problem) = &gpu.problem {
        let _ = writeln!(out, "         problem: {problem}");
    }
}
