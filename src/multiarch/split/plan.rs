//! The pure step of a split: from the fat wheel's facts and its fat binaries' code objects,
//! every pack (its target, path and kernels in order) and every device wheel (its name, file
//! name, metadata and packs), and the host wheel's METADATA, decided before anything is
//! written.

use std::collections::BTreeMap;

use super::read::{Facts, FatBinary};
use super::{SplitError, SplitSpec};
use crate::binary::target_id;
use crate::multiarch::device;
use crate::wheel::filename::escape_name;

/// What a split writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitPlan {
    /// The host wheel's METADATA, the device extras added.
    pub host_metadata: Vec<u8>,
    /// One kernel pack per target (`gfx90a:xnack+`), in target order.
    pub packs: Vec<PackPlan>,
    /// One device wheel per processor, in processor order.
    pub devices: Vec<DevicePlan>,
}

/// A kernel pack: the code objects of one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackPlan {
    pub arch: String,
    /// Its path in the device wheel (`torch/.kpack/torch_gfx906.kpack`).
    pub path: String,
    /// Its kernels in order: the key (`lib/libtorch_hip.so#0`), the fat binary and the code
    /// object of that binary.
    pub kernels: Vec<(String, usize, usize)>,
}

/// A device wheel: the packs of one processor's targets and its `.dist-info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevicePlan {
    pub processor: String,
    pub name: String,
    pub file_name: String,
    pub dist_info: String,
    pub metadata: String,
    pub wheel_file: String,
    pub top_level: String,
    /// Indexes into [`SplitPlan::packs`].
    pub packs: Vec<usize>,
}

/// The plan of a split of the fat wheel `fat` whose fat binaries are `binaries`, as `spec`
/// says.
pub(super) fn plan(
    fat: &Facts,
    binaries: &[FatBinary],
    spec: &SplitSpec,
) -> Result<SplitPlan, SplitError> {
    let prefix = format!("{}/", fat.overlay);
    let mut by_target: BTreeMap<&str, Vec<(String, usize, usize)>> = BTreeMap::new();
    for (b, binary) in binaries.iter().enumerate() {
        let under = &binary.path[prefix.len()..];
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for (o, object) in binary.objects.iter().enumerate() {
            let n = counts.entry(&object.arch).or_default();
            by_target
                .entry(&object.arch)
                .or_default()
                .push((format!("{under}#{n}"), b, o));
            *n += 1;
        }
    }
    let packs: Vec<PackPlan> = by_target
        .into_iter()
        .map(|(arch, kernels)| PackPlan {
            arch: arch.to_string(),
            path: format!("{}/.kpack/{}_{arch}.kpack", fat.overlay, fat.group),
            kernels,
        })
        .collect();
    // Targets with features (gfx942:xnack+) share their processor's device wheel.
    let mut by_processor: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, pack) in packs.iter().enumerate() {
        let processor = target_id::processor(&pack.arch).map_err(|detail| SplitError::Binary {
            wheel: fat.wheel.clone(),
            path: binaries
                .iter()
                .find(|b| b.objects.iter().any(|o| o.arch == pack.arch))
                .map(|b| b.path.clone())
                .unwrap_or_default(),
            detail,
        })?;
        by_processor
            .entry(processor.to_string())
            .or_default()
            .push(index);
    }
    let processors: Vec<String> = by_processor.keys().cloned().collect();
    let host_metadata = device::host_metadata(
        &fat.metadata,
        &spec.device_prefix,
        &fat.version,
        &processors,
    )
    .map_err(|_| SplitError::Metadata("METADATA is not UTF-8".into()))?;
    let (name, version, tag) = (&fat.name, &fat.version, &fat.tag);
    let devices = by_processor
        .into_iter()
        .map(|(processor, packs)| {
            let device_name = device::device_name(&spec.device_prefix, &processor);
            DevicePlan {
                file_name: format!("{}-{version}-{tag}.whl", escape_name(&device_name)),
                dist_info: format!("{}-{version}.dist-info", escape_name(&device_name)),
                metadata: device::device_metadata(
                    name,
                    version,
                    &spec.device_prefix,
                    &processor,
                    &spec.device_requires,
                ),
                wheel_file: device::device_wheel_file(tag),
                top_level: format!("{}\n", fat.overlay),
                name: device_name,
                processor,
                packs,
            }
        })
        .collect();
    Ok(SplitPlan {
        host_metadata,
        packs,
        devices,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::kpack::archive::Compression;
    use crate::binary::offload::CodeObject;

    fn binary(path: &str, arches: &[&str]) -> FatBinary {
        FatBinary {
            index: 0,
            path: path.to_string(),
            original_size: 0,
            objects: arches
                .iter()
                .map(|arch| CodeObject {
                    id: format!("hipv4-amdgcn-amd-amdhsa--{arch}"),
                    arch: arch.to_string(),
                    bundle: 0,
                    data: Vec::new(),
                })
                .collect(),
            transformed: Vec::new(),
            bytes_removed: 0,
        }
    }

    fn facts() -> Facts {
        Facts {
            wheel: "torch-2.10.0-cp311-cp311-linux_x86_64.whl".into(),
            name: "torch".into(),
            metadata: b"Metadata-Version: 2.1\nName: torch\nVersion: 2.10.0\n".to_vec(),
            version: "2.10.0".into(),
            tag: "cp311-cp311-linux_x86_64".into(),
            overlay: "torch".into(),
            group: "torch".into(),
        }
    }

    fn spec() -> SplitSpec {
        SplitSpec {
            device_prefix: "amd-torch-device".into(),
            overlay_root: "torch/".into(),
            device_requires: vec!["rocm-sdk-device-@GFXARCH@ == 7.10.0".into()],
            compression: Compression::Zstd,
        }
    }

    #[test]
    fn packs_per_target_and_device_wheels_per_processor() {
        let binaries = [
            binary(
                "torch/lib/libtorch_hip.so",
                &["gfx906", "gfx90a:xnack+", "gfx90a:xnack-", "gfx906"],
            ),
            binary("torch/_C.so", &["gfx906"]),
        ];
        let plan = plan(&facts(), &binaries, &spec()).expect("plans");
        // A pack as (target, path, kernels as (key, fat binary, code object)).
        type Pack<'a> = (&'a str, &'a str, Vec<(&'a str, usize, usize)>);
        let packs: Vec<Pack<'_>> = plan
            .packs
            .iter()
            .map(|p| {
                let kernels = p.kernels.iter().map(|(k, b, o)| (k.as_str(), *b, *o));
                (p.arch.as_str(), p.path.as_str(), kernels.collect())
            })
            .collect();
        assert_eq!(
            packs,
            [
                (
                    "gfx906",
                    "torch/.kpack/torch_gfx906.kpack",
                    vec![
                        ("lib/libtorch_hip.so#0", 0, 0),
                        ("lib/libtorch_hip.so#1", 0, 3),
                        ("_C.so#0", 1, 0)
                    ]
                ),
                (
                    "gfx90a:xnack+",
                    "torch/.kpack/torch_gfx90a:xnack+.kpack",
                    vec![("lib/libtorch_hip.so#0", 0, 1)]
                ),
                (
                    "gfx90a:xnack-",
                    "torch/.kpack/torch_gfx90a:xnack-.kpack",
                    vec![("lib/libtorch_hip.so#0", 0, 2)]
                ),
            ]
        );
        let devices: Vec<(&str, &str, &str, &[usize])> = plan
            .devices
            .iter()
            .map(|d| {
                (
                    d.processor.as_str(),
                    d.file_name.as_str(),
                    d.dist_info.as_str(),
                    d.packs.as_slice(),
                )
            })
            .collect();
        assert_eq!(
            devices,
            [
                (
                    "gfx906",
                    "amd_torch_device_gfx906-2.10.0-cp311-cp311-linux_x86_64.whl",
                    "amd_torch_device_gfx906-2.10.0.dist-info",
                    &[0][..]
                ),
                (
                    "gfx90a",
                    "amd_torch_device_gfx90a-2.10.0-cp311-cp311-linux_x86_64.whl",
                    "amd_torch_device_gfx90a-2.10.0.dist-info",
                    &[1, 2][..]
                ),
            ]
        );
        assert_eq!(plan.devices[1].top_level, "torch\n");
        assert!(
            plan.devices[1]
                .metadata
                .contains("Requires-Dist: rocm-sdk-device-gfx90a == 7.10.0\n")
        );
        let host = String::from_utf8(plan.host_metadata).expect("utf-8");
        assert!(host.contains("Provides-Extra: device-gfx90a\n"), "{host}");
    }

    #[test]
    fn a_generic_target_is_refused_naming_its_binary() {
        let binaries = [
            binary("torch/lib/libtorch_hip.so", &["gfx906"]),
            binary("torch/lib/libgeneric.so", &["gfx11-generic"]),
        ];
        let error = plan(&facts(), &binaries, &spec()).expect_err("generic");
        let text = error.to_string();
        assert!(
            text.contains("'torch/lib/libgeneric.so'") && text.contains("LLVM generic target"),
            "{text}"
        );
    }
}
