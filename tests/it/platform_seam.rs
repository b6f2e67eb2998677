//! The platform seam stays the one place where Linux and Windows differ: outside
//! `src/platform/`, no source file names a host family or a host-only API (nor, outside its
//! tests, reads Linux's /proc), and none spells a venv layout or a path-list separator itself
//! (docs/architecture.md, "The platform seam").

use std::path::Path;

use crate::common::source::rust_files;

/// What only the seam may write, and what to use instead.
const HOST_ONLY: &[(&str, &str)] = &[
    ("cfg(unix)", "a function of platform::host"),
    ("cfg(windows)", "a function of platform::host"),
    ("cfg(not(unix))", "a function of platform::host"),
    ("cfg(not(windows))", "a function of platform::host"),
    ("cfg!(unix)", "Platform::host()"),
    ("cfg!(windows)", "Platform::host()"),
    ("target_os", "Platform::host()"),
    ("target_family", "Platform::host()"),
    ("std::os::unix", "a function of platform::host"),
    ("std::os::windows", "a function of platform::host"),
    ("os::unix::", "a function of platform::host"),
    // File descriptors are Unix's (and WASI's): Windows has handles.
    ("std::os::fd", "a function of platform::host"),
    ("os::fd::", "a function of platform::host"),
    ("libc::", "a function of platform::host"),
    ("signal_hook", "platform::host::on_interrupt"),
    ("process_group(", "platform::host::spawn"),
    ("\"bin/python\"", "Venv::python or Platform::venv_python"),
    ("join(\":\")", "Platform::join_path_list"),
];

/// What only the seam may rely on at run time (tests of Linux behaviour may name them).
const HOST_ONLY_AT_RUN_TIME: &[(&str, &str)] = &[
    // Linux's process file system: no such directory on Windows.
    ("\"/proc/", "a function of platform::host"),
];

#[test]
fn only_the_platform_seam_names_a_host() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let seam = root.join("src/platform");
    let mut files = rust_files(&root.join("src"));
    files.extend(rust_files(&root.join("benches")));
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&seam)) {
        let text = fs_err::read_to_string(file).expect("source");
        let mut in_tests = false;
        for (number, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            in_tests |= line.trim() == "#[cfg(test)]";
            let at_run_time = HOST_ONLY_AT_RUN_TIME.iter().filter(|_| !in_tests);
            for (pattern, instead) in HOST_ONLY.iter().chain(at_run_time) {
                if line.contains(pattern) {
                    found.push(format!(
                        "{}:{}: `{pattern}`: use {instead}",
                        file.strip_prefix(root).unwrap_or(file).display(),
                        number + 1
                    ));
                }
            }
        }
    }
    assert!(
        files.iter().any(|f| f.starts_with(&seam)),
        "the seam itself was not found under {}",
        seam.display()
    );
    assert!(
        found.is_empty(),
        "outside src/platform/:\n{}",
        found.join("\n")
    );
}
