//! After hipify, no source may still include a CUDA-only header that has a HIP equivalent.
//! When one does, hipify skipped or mistranslated that file, and the build would fail much
//! later with "cuda_runtime_api.h not found" (TheRock#7266, #7591) — or worse, succeed
//! without GPU code. Scanned: every file hipify changed or created, plus every source under
//! the project's `check-paths`; files matching `allow` globs are exempt.

use std::collections::BTreeSet;
use std::path::Path;

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Extensions of C/C++/CUDA/HIP sources and headers.
const SOURCE_EXTENSIONS: &[&str] = &[
    "c", "cc", "cpp", "cxx", "cu", "cuh", "h", "hh", "hpp", "hxx", "hip", "inl",
];

/// One surviving CUDA include.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    pub file: String,
    pub line: usize,
    pub header: String,
}

impl std::fmt::Display for Leftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: still includes <{}>",
            self.file, self.line, self.header
        )
    }
}

/// Builds the allow-list matcher; a bad glob is a config error naming it.
pub fn allow_set(globs: &[String]) -> anyhow::Result<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        builder.add(Glob::new(glob).map_err(|e| {
            crate::exit::usage(format!("hipify allow glob `{glob}` is invalid: {e}"))
        })?);
    }
    Ok(builder.build()?)
}

/// Scans `changed` (paths relative to `root`) and every source under `check_paths`.
pub fn scan(
    root: &Path,
    changed: &[String],
    check_paths: &[String],
    allow: &GlobSet,
    headers: &[String],
) -> anyhow::Result<Vec<Leftover>> {
    let mut files: BTreeSet<String> = changed.iter().cloned().collect();
    for dir in check_paths {
        let base = root.join(dir);
        if !base.exists() {
            continue;
        }
        for entry in walkdir::WalkDir::new(&base)
            .into_iter()
            .filter_entry(|e| e.file_name() != ".git")
        {
            let entry = entry?;
            if entry.file_type().is_file()
                && let Ok(relative) = entry.path().strip_prefix(root)
            {
                files.insert(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    let mut found = Vec::new();
    for file in files {
        let is_source = Path::new(&file)
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| SOURCE_EXTENSIONS.contains(&e));
        if !is_source || allow.is_match(&file) {
            continue;
        }
        let Ok(bytes) = fs_err::read(root.join(&file)) else {
            continue; // deleted by hipify
        };
        found.extend(scan_text(&file, &String::from_utf8_lossy(&bytes), headers));
    }
    Ok(found)
}

/// The CUDA-only includes of one file's text.
pub fn scan_text(file: &str, text: &str, headers: &[String]) -> Vec<Leftover> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let Some(included) = included_header(line) else {
            continue;
        };
        if headers.iter().any(|h| h == included) {
            found.push(Leftover {
                file: file.to_string(),
                line: index + 1,
                header: included.to_string(),
            });
        }
    }
    found
}

/// `#  include <x.h>` / `#include "x.h"` → `x.h`.
fn included_header(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("include")?.trim_start();
    let (open, close) = match rest.chars().next()? {
        '<' => ('<', '>'),
        '"' => ('"', '"'),
        _ => return None,
    };
    let rest = rest.strip_prefix(open)?;
    rest.find(close).map(|end| &rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers() -> Vec<String> {
        ["cuda_runtime.h", "cuda.h", "cublas_v2.h"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn finds_angle_and_quote_includes() {
        let text = "#include <hip/hip_runtime.h>\n#  include \"cuda.h\"\n// #include <cuda_runtime.h> in a comment is fine? no: it is a line\n  #include <cuda_runtime.h>\n#include <cuda_runtime_extra.h>\n";
        let found = scan_text("k.hip", text, &headers());
        assert_eq!(
            found.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "k.hip:2: still includes <cuda.h>",
                "k.hip:4: still includes <cuda_runtime.h>"
            ]
        );
    }

    #[test]
    fn scans_changed_files_and_check_paths_with_an_allow_list() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for (path, text) in [
            ("csrc/ok.hip", "#include <hip/hip_runtime.h>\n"),
            ("csrc/missed.cu", "#include <cuda_runtime.h>\n"),
            ("csrc/vendor/blas.cpp", "#include <cublas_v2.h>\n"),
            ("elsewhere/changed.cpp", "\n#include <cuda.h>\n"),
            ("elsewhere/untouched.cpp", "#include <cuda.h>\n"),
            ("csrc/README.md", "#include <cuda.h>\n"),
        ] {
            let full = root.join(path);
            fs_err::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            fs_err::write(full, text).expect("write");
        }
        let allow = allow_set(&["csrc/vendor/**".to_string()]).expect("globs");
        let found = scan(
            root,
            &["elsewhere/changed.cpp".into()],
            &["csrc".into()],
            &allow,
            &headers(),
        )
        .expect("scan");
        assert_eq!(
            found.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "csrc/missed.cu:1: still includes <cuda_runtime.h>",
                "elsewhere/changed.cpp:2: still includes <cuda.h>"
            ]
        );
        assert!(allow_set(&["[".to_string()]).is_err());
    }
}
