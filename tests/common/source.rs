//! Reading the crate's own source for the tests that hold it to its rules (module graph,
//! platform seam, option variables).

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, in path order.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs_err::read_dir(dir).expect("read a source folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

/// The code of a file without its tests, as (line number, line): a `tests.rs`/`*_tests.rs`
/// file is all test, and an inline `#[cfg(test)] mod … {` ends the code; comments are dropped.
pub fn code_lines(file: &Path) -> Vec<(usize, String)> {
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name == "tests.rs" || name.ends_with("_tests.rs") {
        return Vec::new();
    }
    let text = fs_err::read_to_string(file).expect("source");
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let next = lines.get(index + 1).map(|l| l.trim()).unwrap_or_default();
        if line.trim() == "#[cfg(test)]" && next.starts_with("mod ") && next.ends_with('{') {
            break;
        }
        if line.trim_start().starts_with("//") {
            continue;
        }
        out.push((index + 1, line.to_string()));
    }
    out
}
