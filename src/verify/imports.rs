//! Whether the DLLs a set's PE images import can be found where the set is installed: in a
//! wheel of the set (a product, or a ROCm SDK companion), or on every Windows machine
//! (`crate::binary::system_dlls`). By file name, as the Windows loader looks them up: a product
//! makes its DLL directories known (torch adds `torch/lib`, the fat wheel `torch/lib/rocm/bin`)
//! and DLLs of other wheels are loaded by the package that carries them first.
//!
//! Only products are judged: a companion's imports are its SDK's business. Delay-loaded DLLs
//! are reported and not judged: an image may delay-load what is optional.

use std::collections::BTreeSet;

use crate::binary::system_dlls::provided_by_system;
use crate::wheel::companion::Role;
use crate::wheel::problem::Problem;
use crate::wheel::verify::{NativeFormat, WheelReport};

/// Adds an [`Problem::UnresolvedImport`] to each product for every DLL one of its PE images
/// imports that resolves nowhere.
pub(super) fn check(reports: &mut [WheelReport]) {
    let in_set: BTreeSet<String> = reports
        .iter()
        .flat_map(|r| r.dlls.iter().cloned())
        .collect();
    let carries_sdk = reports.iter().any(|r| r.role == Role::Companion);
    for report in reports.iter_mut().filter(|r| r.role == Role::Product) {
        let mut found = Vec::new();
        for library in report
            .libraries
            .iter()
            .filter(|l| l.format == NativeFormat::Pe)
        {
            for dll in &library.needed {
                if in_set.contains(&dll.to_ascii_lowercase()) || provided_by_system(dll).is_some() {
                    continue;
                }
                found.push(Problem::UnresolvedImport {
                    entry: library.entry.clone(),
                    dll: dll.clone(),
                    detail: if carries_sdk {
                        "no wheel of the set holds it (the products and the ROCm SDK wheels \
                         the set carries), and it is not a DLL of Windows, its C/C++ runtime or \
                         Python"
                            .into()
                    } else {
                        "no wheel of the set holds it, and it is not a DLL of Windows, its \
                         C/C++ runtime or Python (the set carries no ROCm SDK wheels: verify \
                         it with them, as stage does)"
                            .into()
                    },
                });
            }
        }
        report.problems.extend(found);
    }
}
