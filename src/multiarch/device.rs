//! What a split names and declares: device packages, their metadata, and the extras the host
//! wheel gains. The rules are rocm-systems' `shared/kpack` wheel splitter
//! (`rocm_kpack/wheel_splitter.py`) with rocm-bootstrap's target hierarchy (`targets.py`),
//! as TheRock's multi-arch workflows run them:
//!
//! - a code object's target (`gfx942:xnack+`) goes to the device package of its processor
//!   (`gfx942`): `<prefix>-<processor>` (`amd-torch-device-gfx942`), same version and tags as
//!   the host wheel, requiring `<host> == <version>` and the `--device-requires-dist`
//!   templates with `@GFXARCH@` replaced by the processor
//!   (`rocm-sdk-device-gfx942 == <SDK version>`);
//! - the host wheel requires `rocm-bootstrap` and offers one extra per target,
//!   `device-<processor>`, requiring that device package at the host's version, and
//!   `device-all`, requiring every device package.

use crate::wheel::filename::escape_name;

/// The device package prefix of a distribution, as the reference names them
/// (`amd-torch-device`, `amd-torchvision-device`).
pub fn device_prefix(dist: &str) -> String {
    format!(
        "amd-{}-device",
        crate::wheel::filename::normalize_name(dist)
    )
}

/// Whether `file_name` is a device wheel of the device packages `prefix` names
/// (`amd_torch_device_gfx906-….whl` for `amd-torch-device`), of any processor or version.
pub fn is_device_wheel(prefix: &str, file_name: &str) -> bool {
    file_name.starts_with(&format!("{}_", escape_name(prefix))) && file_name.ends_with(".whl")
}

/// The device package of a processor: `amd-torch-device` + `gfx942`.
pub fn device_name(prefix: &str, processor: &str) -> String {
    format!("{prefix}-{processor}")
}

/// The name `[pip install "torch[<extra>]"]` uses for a processor.
pub fn extra_name(processor: &str) -> String {
    format!("device-{processor}")
}

pub const ALL_EXTRA: &str = "device-all";
/// rocm-bootstrap finds the GPUs and the packs at run time; every host wheel requires it.
pub const BOOTSTRAP: &str = "rocm-bootstrap";

/// `Requires-Dist` templates with `@GFXARCH@` for the processor.
pub fn expand(template: &str, processor: &str) -> String {
    template.replace("@GFXARCH@", processor)
}

/// METADATA of a device wheel.
pub fn device_metadata(
    host_name: &str,
    version: &str,
    prefix: &str,
    processor: &str,
    requires: &[String],
) -> String {
    let mut lines = vec![
        "Metadata-Version: 2.4".to_string(),
        format!("Name: {}", device_name(prefix, processor)),
        format!("Version: {version}"),
        format!("Summary: AMD device kernels ({processor}) for {host_name}"),
        format!("Requires-Dist: {host_name} == {version}"),
    ];
    lines.extend(
        requires
            .iter()
            .map(|r| format!("Requires-Dist: {}", expand(r, processor))),
    );
    lines.join("\n") + "\n"
}

/// WHEEL of a device wheel: the host wheel's first tag.
pub fn device_wheel_file(tag: &str) -> String {
    format!("Wheel-Version: 1.0\nGenerator: rockbuild\nRoot-Is-Purelib: false\nTag: {tag}\n")
}

/// The host METADATA with the bootstrap requirement and the device extras inserted after its
/// last header (before the description body, if any). `processors` must be sorted.
pub fn host_metadata(
    raw: &[u8],
    prefix: &str,
    version: &str,
    processors: &[String],
) -> Result<Vec<u8>, std::str::Utf8Error> {
    let text = std::str::from_utf8(raw)?;
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut lines = vec![format!("Requires-Dist: {BOOTSTRAP}")];
    for processor in processors {
        let extra = extra_name(processor);
        lines.push(format!("Provides-Extra: {extra}"));
        lines.push(format!(
            "Requires-Dist: {} == {version}; extra == \"{extra}\"",
            device_name(prefix, processor)
        ));
    }
    lines.push(format!("Provides-Extra: {ALL_EXTRA}"));
    let mut all: Vec<String> = processors.iter().map(|p| device_name(prefix, p)).collect();
    all.sort();
    for name in all {
        lines.push(format!(
            "Requires-Dist: {name} == {version}; extra == \"{ALL_EXTRA}\""
        ));
    }
    let block = lines.join(newline) + newline;
    let blank = format!("{newline}{newline}");
    Ok(match text.find(&blank) {
        Some(at) => {
            let split = at + newline.len();
            format!("{}{block}{}", &text[..split], &text[split..]).into_bytes()
        }
        None if text.is_empty() || text.ends_with('\n') => format!("{text}{block}").into_bytes(),
        None => format!("{text}{newline}{block}").into_bytes(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_its_device_wheels_by_name() {
        let prefix = "amd-torch-device";
        assert!(is_device_wheel(
            prefix,
            "amd_torch_device_gfx906-2.10.0-cp311-cp311-linux_x86_64.whl"
        ));
        assert!(!is_device_wheel(
            prefix,
            "amd_torchvision_device_gfx906-0.25.0-cp311-cp311-linux_x86_64.whl"
        ));
        assert!(!is_device_wheel(
            prefix,
            "torch-2.10.0-cp311-cp311-linux_x86_64.whl"
        ));
        assert!(!is_device_wheel(prefix, "amd_torch_device_gfx906.txt"));
    }

    #[test]
    fn names_device_packages_by_processor() {
        assert_eq!(
            device_name("amd-torch-device", "gfx906"),
            "amd-torch-device-gfx906"
        );
    }

    #[test]
    fn writes_device_metadata_as_the_reference() {
        let text = device_metadata(
            "torch",
            "2.10.0a0+rocm7.10.0a20251124",
            "amd-torch-device",
            "gfx1030",
            &["rocm-sdk-device-@GFXARCH@ == 7.10.0a20251124".to_string()],
        );
        assert_eq!(
            text,
            "Metadata-Version: 2.4\n\
             Name: amd-torch-device-gfx1030\n\
             Version: 2.10.0a0+rocm7.10.0a20251124\n\
             Summary: AMD device kernels (gfx1030) for torch\n\
             Requires-Dist: torch == 2.10.0a0+rocm7.10.0a20251124\n\
             Requires-Dist: rocm-sdk-device-gfx1030 == 7.10.0a20251124\n"
        );
    }

    #[test]
    fn inserts_extras_before_the_body() {
        let raw = b"Metadata-Version: 2.1\nName: torch\nVersion: 2.10.0\nRequires-Dist: rocm[libraries]==7.10.0\n\nThe description.\n";
        let processors = vec!["gfx1030".to_string(), "gfx906".to_string()];
        let out = host_metadata(raw, "amd-torch-device", "2.10.0", &processors).expect("utf-8");
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "Metadata-Version: 2.1\nName: torch\nVersion: 2.10.0\nRequires-Dist: rocm[libraries]==7.10.0\n\
             Requires-Dist: rocm-bootstrap\n\
             Provides-Extra: device-gfx1030\n\
             Requires-Dist: amd-torch-device-gfx1030 == 2.10.0; extra == \"device-gfx1030\"\n\
             Provides-Extra: device-gfx906\n\
             Requires-Dist: amd-torch-device-gfx906 == 2.10.0; extra == \"device-gfx906\"\n\
             Provides-Extra: device-all\n\
             Requires-Dist: amd-torch-device-gfx1030 == 2.10.0; extra == \"device-all\"\n\
             Requires-Dist: amd-torch-device-gfx906 == 2.10.0; extra == \"device-all\"\n\
             \nThe description.\n"
        );
        let bare = host_metadata(b"Name: torch\nVersion: 1", "p", "1", &[]).expect("utf-8");
        assert_eq!(
            String::from_utf8(bare).expect("utf-8"),
            "Name: torch\nVersion: 1\nRequires-Dist: rocm-bootstrap\nProvides-Extra: device-all\n"
        );
    }
}
