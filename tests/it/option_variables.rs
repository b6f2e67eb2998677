//! A variable of the options table (src/cli/options.rs) is spelled out once in the crate's
//! code: in the table, or as the `env_vars` constant the table and the code that reads it
//! directly share. The workflow generator (src/ci/) is left out: its tables are the text of
//! generated YAML, where a job sets the variables for the steps it runs.

use std::collections::BTreeMap;
use std::path::Path;

use rockbuild::cli::options::ENV_OPTIONS;

use crate::common::source::{code_lines, rust_files};

#[test]
fn every_option_variable_is_declared_once() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut seen: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for file in rust_files(&src) {
        if file.starts_with(src.join("ci")) {
            continue;
        }
        for (number, line) in code_lines(&file) {
            for option in ENV_OPTIONS {
                let quoted = format!("\"{}\"", option.var);
                for _ in line.matches(&quoted) {
                    seen.entry(option.var)
                        .or_default()
                        .push(format!("{}:{number}", file.display()));
                }
            }
        }
    }
    for option in ENV_OPTIONS {
        let places = seen.get(option.var).cloned().unwrap_or_default();
        assert_eq!(
            places.len(),
            1,
            "{} is spelled out in {places:?}",
            option.var
        );
    }
}
