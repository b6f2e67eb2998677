//! Whole outputs as insta snapshots: the one place that decides which parts of an output
//! change from run to run (temp directories, ports, digests of wheels compiled on this
//! machine, sizes, times) and replaces them by placeholders.

use insta::Settings;

use crate::common::TestEnv;

/// Snapshot settings for the outputs of commands run in `env`: its temp directory becomes
/// `[TMP]`, other temporary directories `[SCRATCH]`, ports `[PORT]`, SHA-256 digests
/// `[SHA256]`, sizes `[SIZE]`, durations `[TIME]`.
pub fn settings(env: &TestEnv) -> Settings {
    let mut settings = Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.add_filter(&regex_escape(&env.root().display().to_string()), "[TMP]");
    for (pattern, replacement) in FILTERS {
        settings.add_filter(pattern, *replacement);
    }
    settings
}

/// Settings for outputs that are the same on every run (`--help`, usage errors): nothing
/// is replaced.
pub fn plain() -> Settings {
    let mut settings = Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings
}

const FILTERS: &[(&str, &str)] = &[
    // Scratch directories rockbuild and tempfile create (`/tmp/rockbuild-promote-AbC123`).
    (r"/tmp/(rockbuild-[a-z]+-|\.tmp)[A-Za-z0-9]{6}", "[SCRATCH]"),
    (r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]"),
    (r"\b[0-9a-f]{64}\b", "[SHA256]"),
    (r"\b\d+(\.\d)? (B|KiB|MiB|GiB)\b", "[SIZE]"),
    (r#""size": \d+"#, r#""size": "[SIZE]""#),
    (r"\b\d+\.\ds\b", "[TIME]"),
];

fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
