//! Fake sysfs trees for `rockbuild detect --sysfs-root`, written in the kernel's own formats:
//!
//! - KFD topology (drivers/gpu/drm/amd/amdkfd/kfd_topology.c): `topology/generation_id`,
//!   `topology/system_properties`, and per node `nodes/<N>/{gpu_id,properties}`; `properties`
//!   holds the `node_show` lines, `name value` with decimal values, CPU nodes with
//!   `simd_count 0` and `gpu_id` 0. `gfx_target_version` is major*10000+minor*100+stepping as
//!   kfd_device.c assigns it; `location_id` is the PCI bus << 8 | devfn.
//! - PCI (Documentation/ABI/testing/sysfs-bus-pci): `bus/pci/devices/<slot>` are symlinks into
//!   `devices/pci<domain>:<bus>/`, holding `vendor`, `device`, `class`, `revision`,
//!   `subsystem_vendor`, `subsystem_device` as `0x`-prefixed hex lines.

use std::path::{Path, PathBuf};

pub struct FakeSysfs {
    pub root: PathBuf,
}

/// One GPU as KFD describes it.
pub struct KfdGpu {
    pub gfx_target_version: u64,
    pub device_id: u16,
    pub bus: u8,
    pub simd_count: u64,
    pub local_mem_size: u64,
    pub num_xcc: u64,
    pub hive_id: u64,
}

impl KfdGpu {
    pub fn new(gfx_target_version: u64, device_id: u16, bus: u8) -> KfdGpu {
        KfdGpu {
            gfx_target_version,
            device_id,
            bus,
            simd_count: 192,
            local_mem_size: 25_753_026_560,
            num_xcc: 1,
            hive_id: 0,
        }
    }
}

impl FakeSysfs {
    /// A machine with no KFD topology and an empty PCI bus.
    pub fn new(root: &Path) -> FakeSysfs {
        std::fs::create_dir_all(root.join("sys/bus/pci/devices")).expect("pci dir");
        std::fs::create_dir_all(root.join("sys/devices/pci0000:00")).expect("devices dir");
        FakeSysfs {
            root: root.to_path_buf(),
        }
    }

    fn topology(&self) -> PathBuf {
        self.root.join("sys/class/kfd/kfd/topology")
    }

    /// Loads "the driver": creates the topology with its system files.
    pub fn with_kfd(self) -> FakeSysfs {
        let topology = self.topology();
        std::fs::create_dir_all(topology.join("nodes")).expect("nodes");
        write(&topology.join("generation_id"), "1\n");
        write(
            &topology.join("system_properties"),
            "platform_oem 0\nplatform_id 0\nplatform_rev 0\n",
        );
        self
    }

    fn node(&self, id: u32, gpu_id: u64, properties: &[(&str, u64)]) {
        let dir = self.topology().join("nodes").join(id.to_string());
        std::fs::create_dir_all(&dir).expect("node dir");
        write(&dir.join("gpu_id"), &format!("{gpu_id}\n"));
        let text: String = properties
            .iter()
            .map(|(name, value)| format!("{name} {value}\n"))
            .collect();
        write(&dir.join("properties"), &text);
    }

    /// A CPU node (what KFD builds from the ACPI CRAT for each socket).
    pub fn cpu_node(self, id: u32, cores: u64) -> FakeSysfs {
        self.node(
            id,
            0,
            &[
                ("cpu_cores_count", cores),
                ("simd_count", 0),
                ("mem_banks_count", 1),
                ("caches_count", 0),
                ("io_links_count", 1),
                ("p2p_links_count", 0),
                ("cpu_core_id_base", u64::from(id) * cores),
                ("simd_id_base", 0),
                ("max_waves_per_simd", 0),
                ("lds_size_in_kb", 0),
                ("gds_size_in_kb", 0),
                ("num_gws", 0),
                ("wave_front_size", 0),
                ("array_count", 0),
                ("simd_arrays_per_engine", 0),
                ("cu_per_simd_array", 0),
                ("simd_per_cu", 0),
                ("max_slots_scratch_cu", 0),
                ("gfx_target_version", 0),
                ("vendor_id", 0),
                ("device_id", 0),
                ("location_id", 0),
                ("domain", 0),
                ("drm_render_minor", 0),
                ("hive_id", 0),
                ("num_sdma_engines", 0),
                ("num_sdma_xgmi_engines", 0),
                ("num_sdma_queues_per_engine", 0),
                ("num_cp_queues", 0),
                ("max_engine_clk_ccompute", 4_200),
            ],
        );
        self
    }

    /// A GPU node, plus its PCI function (and the card's HDMI audio function, which detection
    /// must ignore).
    pub fn gpu_node(self, id: u32, gpu: &KfdGpu, class: u32) -> FakeSysfs {
        let location = u64::from(gpu.bus) << 8;
        self.node(
            id,
            0x1000 + u64::from(id),
            &[
                ("cpu_cores_count", 0),
                ("simd_count", gpu.simd_count),
                ("mem_banks_count", 1),
                ("caches_count", 206),
                ("io_links_count", 1),
                ("p2p_links_count", 0),
                ("cpu_core_id_base", 0),
                ("simd_id_base", 2_147_487_744),
                ("max_waves_per_simd", 16),
                ("lds_size_in_kb", 64),
                ("gds_size_in_kb", 0),
                ("num_gws", 64),
                ("wave_front_size", 32),
                ("array_count", 12),
                ("simd_arrays_per_engine", 2),
                ("cu_per_simd_array", 8),
                ("simd_per_cu", 2),
                ("max_slots_scratch_cu", 32),
                ("gfx_target_version", gpu.gfx_target_version),
                ("vendor_id", 4098),
                ("device_id", u64::from(gpu.device_id)),
                ("location_id", location),
                ("domain", 0),
                ("drm_render_minor", 128 + u64::from(id)),
                ("hive_id", gpu.hive_id),
                ("num_sdma_engines", 2),
                ("num_sdma_xgmi_engines", 0),
                ("num_sdma_queues_per_engine", 6),
                ("num_cp_queues", 8),
                ("max_engine_clk_fcompute", 2_482),
                ("local_mem_size", gpu.local_mem_size),
                ("fw_version", 2_390),
                ("capability", 671_588_992),
                ("debug_prop", 1_495),
                ("sdma_fw_version", 21),
                ("unique_id", 0x5a1e_0000 + u64::from(id)),
                ("num_xcc", gpu.num_xcc),
                ("max_engine_clk_ccompute", 4_200),
            ],
        );
        let slot = format!("0000:{:02x}:00.0", gpu.bus);
        self.pci_function(&slot, 0x1002, gpu.device_id, class, 0xc8)
            .pci_function(
                &format!("0000:{:02x}:00.1", gpu.bus),
                0x1002,
                0xab30,
                0x040300,
                0x00,
            )
    }

    /// One PCI function, as a symlink into the device tree like the kernel makes it.
    pub fn pci_function(
        self,
        slot: &str,
        vendor: u16,
        device: u16,
        class: u32,
        revision: u8,
    ) -> FakeSysfs {
        let real = self.root.join("sys/devices/pci0000:00").join(slot);
        std::fs::create_dir_all(&real).expect("device dir");
        write(&real.join("vendor"), &format!("{vendor:#06x}\n"));
        write(&real.join("device"), &format!("{device:#06x}\n"));
        write(&real.join("class"), &format!("{class:#08x}\n"));
        write(&real.join("revision"), &format!("{revision:#04x}\n"));
        write(&real.join("subsystem_vendor"), &format!("{vendor:#06x}\n"));
        write(&real.join("subsystem_device"), "0x0e3b\n");
        std::os::unix::fs::symlink(
            format!("../../../devices/pci0000:00/{slot}"),
            self.root.join("sys/bus/pci/devices").join(slot),
        )
        .expect("pci symlink");
        self
    }

    /// The host bridge and a virtio NIC every VM has: PCI devices that are no GPU.
    pub fn with_host_devices(self) -> FakeSysfs {
        self.pci_function("0000:00:00.0", 0x8086, 0x1237, 0x060000, 0x02)
            .pci_function("0000:00:03.0", 0x1af4, 0x1000, 0x020000, 0x00)
    }
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// One RDNA3 card (Navi 31, RX 7900 XTX) on a desktop with the driver loaded.
pub fn rdna3(root: &Path) -> FakeSysfs {
    FakeSysfs::new(root)
        .with_host_devices()
        .with_kfd()
        .cpu_node(0, 16)
        .gpu_node(1, &KfdGpu::new(110000, 0x744c, 0x03), 0x030000)
}

/// An MI300X node: two CPU sockets and eight GPUs in one XGMI hive (gfx942, 8 XCCs each).
pub fn mi300x_node(root: &Path) -> FakeSysfs {
    let mut fake = FakeSysfs::new(root)
        .with_host_devices()
        .with_kfd()
        .cpu_node(0, 96)
        .cpu_node(1, 96);
    for (index, bus) in [0x05u8, 0x15, 0x65, 0x75, 0x85, 0x95, 0xe5, 0xf5]
        .into_iter()
        .enumerate()
    {
        let gpu = KfdGpu {
            simd_count: 1_216,
            local_mem_size: 206_141_652_992,
            num_xcc: 8,
            hive_id: 0x6f0a_4c1b_22d3_9e01,
            ..KfdGpu::new(90402, 0x74a1, bus)
        };
        fake = fake.gpu_node(2 + index as u32, &gpu, 0x120000);
    }
    fake
}

/// A Ryzen 7000 desktop: the APU's integrated Radeon (Raphael, gfx1036) and a discrete
/// RX 7900 XTX.
pub fn apu_and_card(root: &Path) -> FakeSysfs {
    let igpu = KfdGpu {
        simd_count: 4,
        local_mem_size: 536_870_912,
        ..KfdGpu::new(100306, 0x164e, 0x0e)
    };
    FakeSysfs::new(root)
        .with_host_devices()
        .with_kfd()
        .cpu_node(0, 16)
        .gpu_node(1, &igpu, 0x030000)
        .gpu_node(2, &KfdGpu::new(110000, 0x744c, 0x03), 0x030000)
}

/// A container without the driver's topology, on a card the device table does not list.
pub fn unknown_device(root: &Path) -> FakeSysfs {
    FakeSysfs::new(root).with_host_devices().pci_function(
        "0000:03:00.0",
        0x1002,
        0x7fff,
        0x030000,
        0xc0,
    )
}

/// A VM with no AMD GPU at all (and no driver).
pub fn no_gpu(root: &Path) -> FakeSysfs {
    FakeSysfs::new(root).with_host_devices()
}
