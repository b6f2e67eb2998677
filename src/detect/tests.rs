//! Resolution on snapshots built in memory: the runtime variables, mixed machines, unknown
//! devices. (The fake sysfs trees of tests/it/local.rs cover reading and the whole command.)

use std::path::PathBuf;

use super::*;
use crate::stack::load_families;

fn cpu(id: u32) -> KfdNode {
    KfdNode {
        id,
        properties: [
            ("cpu_cores_count", 16),
            ("simd_count", 0),
            ("gfx_target_version", 0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
    }
}

fn gpu(id: u32, gfx_target_version: u64, device_id: u16, bus: u64) -> KfdNode {
    KfdNode {
        id,
        properties: [
            ("simd_count", 384),
            ("gfx_target_version", gfx_target_version),
            ("vendor_id", 0x1002),
            ("device_id", u64::from(device_id)),
            ("location_id", bus << 8),
            ("domain", 0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
    }
}

fn pci(bus: u8, device: u16, class: u32) -> PciFunction {
    PciFunction {
        slot: format!("0000:{bus:02x}:00.0"),
        vendor: AMD_VENDOR,
        device,
        class,
        revision: Some(0xc8),
    }
}

fn snapshot(kfd: Option<Vec<KfdNode>>, pci: Vec<PciFunction>) -> Snapshot {
    Snapshot {
        root: PathBuf::from("/"),
        kfd,
        pci,
    }
}

fn run(snapshot: &Snapshot, env: &RuntimeEnv) -> Result<Detection, Error> {
    let families = load_families(None).expect("families");
    let devices = DeviceTable::builtin().expect("devices");
    resolve(
        snapshot,
        &Tables {
            families: &families,
            devices: &devices,
        },
        env,
    )
}

fn targets(detection: &Detection) -> String {
    let selection = detection.selection().expect("a selection");
    selection
        .targets
        .iter()
        .map(|t| t.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// APU (Raphael, gfx1036) and a Navi 31 card.
fn apu_and_card() -> Snapshot {
    snapshot(
        Some(vec![
            cpu(0),
            gpu(1, 110000, 0x744c, 0x03),
            gpu(2, 100306, 0x164e, 0x0e),
        ]),
        vec![],
    )
}

#[test]
fn kfd_decides_and_the_table_names() {
    let detection = run(&apu_and_card(), &RuntimeEnv::default()).expect("resolves");
    assert_eq!(detection.topology, Topology::Kfd);
    assert_eq!(targets(&detection), "gfx1100,gfx1036");
    let selection = detection.selection().expect("selection");
    assert_eq!(selection.families, ["gfx110X-all", "gfx103X-all"]);
    assert_eq!(selection.decided_by, DecidedBy::Kfd);
    assert_eq!(detection.gpus[0].kind, Some(Kind::Discrete));
    assert_eq!(detection.gpus[1].kind, Some(Kind::Integrated));
    assert_eq!(detection.gpus[1].pci_slot.as_deref(), Some("0000:0e:00.0"));
    assert_eq!(
        detection.notes,
        [
            "the targets include the integrated GPU 1 (gfx1036); to build for the discrete card only, set HIP_VISIBLE_DEVICES=0"
        ]
    );
}

#[test]
fn hip_visible_devices_hides_and_reorders() {
    let env = RuntimeEnv {
        hip_visible_devices: Some("1,0".into()),
        ..Default::default()
    };
    let detection = run(&apu_and_card(), &env).expect("resolves");
    assert_eq!(detection.gpus[0].hip_index, Some(1));
    assert_eq!(detection.gpus[1].hip_index, Some(0));
    assert_eq!(targets(&detection), "gfx1036,gfx1100");

    let env = RuntimeEnv {
        hip_visible_devices: Some("0".into()),
        ..Default::default()
    };
    let detection = run(&apu_and_card(), &env).expect("resolves");
    assert_eq!(targets(&detection), "gfx1100");
    assert_eq!(detection.gpus[1].hip_index, None);
    assert!(detection.notes.is_empty(), "{:?}", detection.notes);

    // An invalid entry ends the list (as PyTorch reads it); every GPU hidden is no GPU.
    let env = RuntimeEnv {
        hip_visible_devices: Some("7,0".into()),
        ..Default::default()
    };
    let detection = run(&apu_and_card(), &env).expect("resolves");
    assert_eq!(
        detection.selection().expect_err("nothing visible"),
        SelectionError::NoGpu {
            looked: "/".into(),
            hidden: 2
        }
    );
    assert_eq!(
        detection.notes,
        [
            "HIP_VISIBLE_DEVICES=7,0: `7` is not the index of a GPU here (0-1), so it and what follows are ignored"
        ]
    );
}

#[test]
fn hsa_override_replaces_every_target_and_says_so() {
    // A Navi 22 (gfx1031) run as gfx1030, the classic override.
    let machine = snapshot(Some(vec![cpu(0), gpu(1, 100301, 0x73df, 0x03)]), vec![]);
    let env = RuntimeEnv {
        hsa_override_gfx_version: Some("10.3.0".into()),
        ..Default::default()
    };
    let detection = run(&machine, &env).expect("resolves");
    assert_eq!(targets(&detection), "gfx1030");
    assert_eq!(
        detection.selection().expect("selection").decided_by,
        DecidedBy::HsaOverride {
            value: "10.3.0".into()
        }
    );
    assert_eq!(
        detection.gpus[0].hardware_target.as_deref(),
        Some("gfx1031")
    );
    assert_eq!(
        detection.notes,
        ["HSA_OVERRIDE_GFX_VERSION=10.3.0: the runtime loads gfx1030 code on GPU 0 (gfx1031)"]
    );
    let env = RuntimeEnv {
        hsa_override_gfx_version: Some("10.3".into()),
        ..Default::default()
    };
    let error = run(&machine, &env).expect_err("malformed");
    assert_eq!(
        error.to_string(),
        "HSA_OVERRIDE_GFX_VERSION='10.3' is not major.minor.stepping with minor and stepping 0-15 (e.g. 11.0.0 for gfx1100, 9.0.10 for gfx90a)"
    );
    assert_eq!(error.exit_status(), ExitStatus::Usage);
}

#[test]
fn pytorch_rocm_arch_beats_detection_and_is_checked() {
    let env = RuntimeEnv {
        pytorch_rocm_arch: Some("gfx942;gfx90a".into()),
        ..Default::default()
    };
    let detection = run(&apu_and_card(), &env).expect("resolves");
    assert_eq!(targets(&detection), "gfx942,gfx90a");
    assert_eq!(
        detection.selection().expect("selection").families,
        ["gfx94X-dcgpu", "gfx90a"]
    );
    let env = RuntimeEnv {
        pytorch_rocm_arch: Some("gfx94x".into()),
        ..Default::default()
    };
    let error = run(&apu_and_card(), &env)
        .expect("resolves")
        .selection()
        .expect_err("typo");
    assert_eq!(
        error.to_string(),
        "PYTORCH_ROCM_ARCH: unknown gfx target 'gfx94x': did you mean family 'gfx94X-dcgpu' (targets gfx942)?"
    );
    assert_eq!(error.exit_status(), ExitStatus::Usage);
}

#[test]
fn pci_fallback_uses_the_table_and_never_guesses() {
    // No driver: a Navi 48 card, its HDMI audio function (not a GPU class: filtered at read),
    // and a device the table does not know.
    let machine = snapshot(
        None,
        vec![pci(0x03, 0x7550, 0x030000), pci(0x05, 0x7fff, 0x030000)],
    );
    let detection = run(&machine, &RuntimeEnv::default()).expect("resolves");
    assert_eq!(detection.topology, Topology::Pci);
    assert_eq!(detection.gpus[0].target.as_deref(), Some("gfx1201"));
    assert_eq!(detection.gpus[1].target, None);
    let error = detection.selection().expect_err("unknown device");
    assert_eq!(
        error,
        SelectionError::Unidentified {
            gpus: vec!["GPU 1 (1002:7fff at 0000:05:00.0)".into()]
        }
    );
    assert_eq!(error.exit_status(), ExitStatus::Failure);
    // Hiding the unknown device makes the rest buildable.
    let env = RuntimeEnv {
        hip_visible_devices: Some("0".into()),
        ..Default::default()
    };
    let detection = run(&machine, &env).expect("resolves");
    assert_eq!(targets(&detection), "gfx1201");
    assert_eq!(
        detection.selection().expect("ok").decided_by,
        DecidedBy::DeviceTable
    );
}

#[test]
fn early_silicon_and_familyless_targets_are_named_not_built() {
    // MI300X revision 0 reports gfx941 (kfd_device.c), which no family builds.
    let mut early = pci(0x03, 0x74a1, 0x038000);
    early.revision = Some(0x00);
    let detection = run(&snapshot(None, vec![early]), &RuntimeEnv::default()).expect("resolves");
    assert_eq!(detection.gpus[0].target.as_deref(), Some("gfx941"));
    assert_eq!(
        detection.gpus[0].problem.as_deref(),
        Some("gfx941 is in no GPU family of configs/families.yaml")
    );
    let error = detection.selection().expect_err("no family");
    assert!(
        matches!(error, SelectionError::NoFamily { ref target, .. } if target == "gfx941"),
        "{error}"
    );
}

#[test]
fn kfd_without_gpus_falls_back_to_pci_and_says_why() {
    let machine = snapshot(Some(vec![cpu(0)]), vec![pci(0x03, 0x744c, 0x030000)]);
    let detection = run(&machine, &RuntimeEnv::default()).expect("resolves");
    assert_eq!(detection.topology, Topology::Pci);
    assert_eq!(targets(&detection), "gfx1100");
    assert_eq!(detection.notes.len(), 1);
    assert!(
        detection.notes[0].starts_with("the KFD topology lists no GPU node"),
        "{:?}",
        detection.notes
    );
    // A GPU node with a number that names no ISA is reported, not decoded by guesswork.
    let machine = snapshot(Some(vec![cpu(0), gpu(1, 90016, 0x7fff, 0x03)]), vec![]);
    let detection = run(&machine, &RuntimeEnv::default()).expect("resolves");
    assert_eq!(
        detection.gpus[0].problem.as_deref(),
        Some("KFD reports gfx_target_version 90016, which names no gfx target")
    );
    assert!(detection.selection().is_err());
}
