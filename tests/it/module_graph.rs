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

/// Each cycle of `edges`, with every import on it and where it is written.
fn cycle_reports(edges: &BTreeMap<(String, String), Vec<String>>) -> Vec<String> {
    let all: BTreeSet<(String, String)> = edges.keys().cloned().collect();
    cycles(&all)
        .into_iter()
        .map(|cycle| {
            let mut text = format!(
                "a cycle between {}:",
                cycle.iter().cloned().collect::<Vec<_>>().join(", ")
            );
            for ((from, to), places) in edges {
                if cycle.contains(from) && cycle.contains(to) {
                    text.push_str(&format!("\n  {from} -> {to}: {}", places.join(", ")));
                }
            }
            text
        })
        .collect()
}

#[test]
fn top_level_modules_import_downward_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let edges = graph(root);
    assert!(
        edges.contains_key(&("commands".to_string(), "build".to_string())),
        "the graph is read from the imports: commands names build"
    );
    let problems = cycle_reports(&edges);
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

/// The core modules `binary` may stand on: it reads and writes bytes, and knows nothing of
/// wheels, of multi-arch packaging or of any stage.
const BELOW_BINARY: [&str; 7] = [
    "env_vars", "exit", "fsutil", "platform", "redact", "sourced", "version",
];

#[test]
fn binary_wheel_and_multiarch_stand_in_that_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let edges = graph(root);
    assert!(
        edges.contains_key(&("multiarch".to_string(), "wheel".to_string()))
            && edges.contains_key(&("wheel".to_string(), "binary".to_string())),
        "the graph is read from the imports: multiarch names wheel, wheel names binary"
    );
    let mut problems = Vec::new();
    for ((from, to), places) in &edges {
        if from == "binary" && !BELOW_BINARY.contains(&to.as_str()) {
            problems.push(format!(
                "binary names {to} ({}): binary formats know nothing above them; move the \
                 code that needs {to} up, or what it needs down",
                places.join(", ")
            ));
        }
        if from == "wheel" && to == "multiarch" {
            problems.push(format!(
                "wheel names multiarch ({}): one wheel knows nothing of device wheels and \
                 splits; move what both need into wheel or binary",
                places.join(", ")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "binary ◀─ wheel ◀─ multiarch (docs/architecture.md, \"The module graph\")\n{}",
        problems.join("\n")
    );
}

/// The module of each Rust file under `src/<layer>/` (`binary::elf` for
/// `src/binary/elf/mod.rs`, `binary::elf::transform` for `src/binary/elf/transform.rs`).
fn layer_modules(src: &Path, layer: &str) -> BTreeMap<String, PathBuf> {
    rust_files(&src.join(layer))
        .into_iter()
        .map(|file| {
            let relative = file
                .strip_prefix(src)
                .expect("under src")
                .with_extension("");
            let mut parts: Vec<String> = relative
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            (parts.join("::"), file)
        })
        .collect()
}

/// The paths a piece of code names through `crate::` or `super::`, as segments from the crate
/// root (`super` resolved against `module`), brace groups expanded.
fn named_paths(code: &str, module: &str) -> Vec<(usize, Vec<String>)> {
    fn ident(rest: &str) -> &str {
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        &rest[..end]
    }
    /// The paths of `rest` (just after `prefix::`), appended to `out`; returns what it read.
    fn paths(rest: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
        let mut at = 0;
        let mut path = prefix;
        loop {
            let tail = &rest[at..];
            if let Some(group) = tail.strip_prefix('{') {
                let mut read = 1;
                let mut depth = 0;
                let mut start = 0;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth > 0 => depth -= 1,
                        ',' | '}' if depth == 0 => {
                            let item = group[start..i].trim();
                            if !item.is_empty() {
                                paths(item, path.clone(), out);
                            }
                            start = i + 1;
                            if c == '}' {
                                read += i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                return at + read;
            }
            let name = ident(tail);
            if name.is_empty() || name == "self" {
                out.push(path);
                return at + name.len();
            }
            path.push(name.to_string());
            at += name.len();
            match rest[at..].strip_prefix("::") {
                Some(_) => at += 2,
                None => {
                    out.push(path);
                    return at;
                }
            }
        }
    }
    let mut found = Vec::new();
    let line_of = |at: usize| code[..at].matches('\n').count();
    for anchor in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(offset) = code[from..].find(anchor) {
            let at = from + offset;
            from = at + anchor.len();
            if code[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
            {
                continue;
            }
            let mut base: Vec<String> = if anchor == "crate::" {
                Vec::new()
            } else {
                let mut parent: Vec<String> = module.split("::").map(String::from).collect();
                parent.pop();
                parent
            };
            // `super::super::…`
            let mut rest = &code[from..];
            while let Some(more) = rest.strip_prefix("super::") {
                base.pop();
                rest = more;
                from += "super::".len();
            }
            let mut out = Vec::new();
            paths(rest, base, &mut out);
            found.extend(out.into_iter().map(|p| (line_of(at), p)));
        }
    }
    found
}

/// Edges between the modules of a layer (`binary::elf` → `binary::kpack`), with where each is
/// written. A module naming one of its own submodules is made of it: no edge.
fn layer_graph(root: &Path, layer: &str) -> BTreeMap<(String, String), Vec<String>> {
    let src = root.join("src");
    let modules = layer_modules(&src, layer);
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (module, file) in &modules {
        let lines = code_lines(file);
        let code: String = lines
            .iter()
            .map(|(_, l)| l.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        for (line, path) in named_paths(&code, module) {
            // The longest module the path starts with.
            let target = (1..=path.len())
                .rev()
                .map(|n| path[..n].join("::"))
                .find(|m| modules.contains_key(m));
            let Some(target) = target else { continue };
            if &target == module || target.starts_with(&format!("{module}::")) {
                continue;
            }
            let place = format!(
                "{}:{}",
                file.strip_prefix(root).unwrap_or(file).display(),
                lines[line].0
            );
            let places = edges.entry((module.clone(), target)).or_default();
            if places.last() != Some(&place) {
                places.push(place);
            }
        }
    }
    edges
}

#[test]
fn the_modules_of_binary_wheel_and_multiarch_form_no_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = Vec::new();
    for layer in ["binary", "wheel", "multiarch"] {
        let edges = layer_graph(root, layer);
        assert!(
            !edges.is_empty(),
            "the graph of {layer} is read from its imports"
        );
        problems.extend(cycle_reports(&edges));
    }
    assert!(
        problems.is_empty(),
        "inside a layer, modules import one way too (a reader does not name its writer, a \
         format does not name its policy)\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_zip_reader_names_no_verify_type() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let edges = layer_graph(root, "wheel");
    let mut problems: Vec<String> = edges
        .iter()
        .filter(|((from, to), _)| {
            from.starts_with("wheel::archive") && !to.starts_with("wheel::archive") && to != "wheel"
        })
        .map(|((from, to), places)| format!("{from} names {to} ({})", places.join(", ")))
        .collect();
    for file in rust_files(&root.join("src/wheel/archive")) {
        for (number, line) in code_lines(&file) {
            if line.contains("Problem") || named(&line).iter().any(|m| m == "verify") {
                problems.push(format!(
                    "{}:{number}: {}",
                    file.strip_prefix(root).unwrap_or(&file).display(),
                    line.trim()
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "the zip reader returns its own findings (`archive::Defect`) and errors; verify maps \
         them to its problems\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_layer_reader_resolves_paths_and_groups() {
    let found = |code: &str, module: &str| -> Vec<String> {
        named_paths(code, module)
            .into_iter()
            .map(|(_, p)| p.join("::"))
            .collect()
    };
    assert_eq!(
        found(
            "use crate::binary::{elf, pe::transform as t};\nuse super::{\n    Elf, ElfError,\n};",
            "binary::elf::transform"
        ),
        [
            "binary::elf",
            "binary::pe::transform",
            "binary::elf::Elf",
            "binary::elf::ElfError"
        ]
    );
    assert_eq!(
        found(
            "let x = super::super::offload::scan(a);",
            "binary::elf::transform"
        ),
        ["binary::offload::scan"]
    );
    assert!(found("let y = my_crate::z; let w = a::super_x;", "wheel").is_empty());
}
