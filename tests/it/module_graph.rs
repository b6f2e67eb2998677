//! The top-level modules of `src/` import downward only: read from the `crate::<module>` paths
//! of their code (tests excluded), the graph between them has no cycle (docs/architecture.md,
//! "The module graph").

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::source::{code_lines, rust_files};

/// The top-level modules (a file `src/x.rs`, a folder `src/x/`, or both) and their files.
/// `build/` is a module like any other here.
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in fs_err::read_dir(src).expect("read src") {
        let path = entry.expect("entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.is_dir() {
            modules
                .entry(stem.to_string())
                .or_default()
                .extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") && !["lib", "main"].contains(&stem) {
            modules.entry(stem.to_string()).or_default().push(path);
        }
    }
    modules
}

/// The modules a line names through `crate::<module>`.
fn named(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        // `rockbuild_crate::` or `super_crate::` are other names.
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        assert!(
            !name.is_empty(),
            "`crate::{{…}}` hides the modules it names; write one `use crate::<module>` per module: {line}"
        );
        found.push(name);
    }
    found
}

/// Edges `from -> to` with where each is written.
fn graph(root: &Path) -> BTreeMap<(String, String), Vec<String>> {
    let modules = modules(&root.join("src"));
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (module, files) in &modules {
        for file in files {
            for (number, line) in code_lines(file) {
                for target in named(&line) {
                    if &target != module && modules.contains_key(&target) {
                        edges
                            .entry((module.clone(), target))
                            .or_default()
                            .push(format!(
                                "{}:{number}",
                                file.strip_prefix(root).unwrap_or(file).display()
                            ));
                    }
                }
            }
        }
    }
    edges
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn cycles(edges: &BTreeSet<(String, String)>) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        next: BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a str) {
        let index = state.index.len();
        state.index.insert(node, index);
        state.low.insert(node, index);
        state.stack.push(node);
        state.on_stack.insert(node);
        for next in state.next.get(node).cloned().unwrap_or_default() {
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = BTreeSet::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack.remove(member);
                component.insert(member.to_string());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        next: BTreeMap::new(),
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for (from, to) in edges {
        state.next.entry(from).or_default().push(to);
    }
    let nodes: Vec<&str> = state.next.keys().copied().collect();
    for node in nodes {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.found
}

#[test]
fn top_level_modules_import_downward_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let edges = graph(root);
    assert!(
        edges.contains_key(&("commands".to_string(), "build".to_string())),
        "the graph is read from the imports: commands names build"
    );
    let mut problems = Vec::new();
    let all: BTreeSet<(String, String)> = edges.keys().cloned().collect();
    for cycle in cycles(&all) {
        let mut text = format!(
            "a cycle between {}:",
            cycle.iter().cloned().collect::<Vec<_>>().join(", ")
        );
        for ((from, to), places) in &edges {
            if cycle.contains(from) && cycle.contains(to) {
                text.push_str(&format!("\n  {from} -> {to}: {}", places.join(", ")));
            }
        }
        problems.push(text);
    }
    assert!(
        problems.is_empty(),
        "the module graph (docs/architecture.md): a stage owns its input types (settings builds \
         them), a failure is data that diagnostics renders at the top\n{}",
        problems.join("\n")
    );
}

/// The modules at the edge, which meet every stage: the verbs, their settings, the rendering
/// of failures and the command line.
const EDGE: [&str; 5] = ["cli", "commands", "diagnostics", "docgen", "settings"];

#[test]
fn project_knowledge_is_asked_of_the_recipes_below_every_stage() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let edges = graph(root);
    let asking: BTreeSet<&str> = edges
        .keys()
        .filter(|(_, to)| to == "recipes")
        .map(|(from, _)| from.as_str())
        .collect();
    assert!(
        asking.contains("build") && asking.contains("checkout"),
        "the graph is read from the imports: build and checkout ask the recipes ({asking:?})"
    );
    let mut problems = Vec::new();
    for ((from, to), places) in &edges {
        if to == "build" && !EDGE.contains(&from.as_str()) {
            problems.push(format!(
                "{from} names the build stage ({}): ask `recipes` (or the core module that owns the type)",
                places.join(", ")
            ));
        }
        if from == "recipes" && (asking.contains(to.as_str()) || EDGE.contains(&to.as_str())) {
            problems.push(format!(
                "the recipes name {to}, which asks them ({})",
                places.join(", ")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "project knowledge lives in src/recipes/, below every stage (docs/architecture.md, \
         \"The module graph\")\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_reader_finds_cycles_and_the_modules_a_line_names() {
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    let edges: BTreeSet<_> = [
        pair("a", "b"),
        pair("b", "c"),
        pair("c", "a"),
        pair("c", "d"),
    ]
    .into_iter()
    .collect();
    let found = cycles(&edges);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0],
        ["a", "b", "c"].into_iter().map(String::from).collect()
    );
    assert_eq!(
        named("use crate::settings::build::BuildSettings; let _ = crate::cli::Cli::command();"),
        ["settings", "cli"]
    );
    assert!(named("let x = my_crate::y;").is_empty());
}
