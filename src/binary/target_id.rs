//! AMDGPU target IDs (`gfx90a:sramecc+:xnack-`: a processor and its target features, LLVM's
//! AMDGPUUsage "Target ID"), as code objects, offload bundles and kernel packs name them.

/// A target's processor (`gfx90a` for `gfx90a:sramecc+:xnack-`), checked to be a specific
/// gfx processor. LLVM's generic targets (`gfx11-generic`) have no per-target package in the
/// reference's hierarchy, so they are refused rather than given an invented name.
pub fn processor(arch: &str) -> Result<&str, String> {
    let processor = arch.split(':').next().unwrap_or(arch);
    let digits = processor.strip_prefix("gfx").unwrap_or("");
    let specific = digits.len() >= 3
        && digits.starts_with(|c: char| c.is_ascii_digit())
        && digits
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, 'a'..='f'));
    if specific {
        Ok(processor)
    } else if digits.contains("generic") {
        Err(format!(
            "'{arch}' is an LLVM generic target; device packages are per processor \
             (build for specific targets, e.g. gfx1100 rather than gfx11-generic)"
        ))
    } else {
        Err(format!("'{arch}' is not a gfx processor"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_processors_and_refuses_generic_targets() {
        assert_eq!(processor("gfx906"), Ok("gfx906"));
        assert_eq!(processor("gfx942:xnack+"), Ok("gfx942"));
        assert_eq!(processor("gfx90a:sramecc+:xnack-"), Ok("gfx90a"));
        assert_eq!(processor("gfx1151"), Ok("gfx1151"));
        assert!(
            processor("gfx11-generic")
                .expect_err("generic")
                .contains("generic target")
        );
        assert!(processor("sm_90").is_err());
        assert!(processor("gfx").is_err());
    }
}
