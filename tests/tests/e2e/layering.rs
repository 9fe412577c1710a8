//! The workspace's layering, checked from its sources: Cargo keeps the arrows between crates one
//! way, this keeps them one way inside each crate. Within a crate, the units are the top-level
//! modules of `src/` (a folder, or a file); a unit's files may import from units below it, and
//!
//! - no import cycle may join a folder to another unit (files of one folder are one unit and may
//!   use each other freely; single files side by side in `src/` may, too);
//! - no file may import an item the crate root itself defines: the root composes the units
//!   (it declares and re-exports them), so it sits above all of them.
//!
//! Imports are read as `crate::name` paths and `use crate::{…}` groups, outside test modules and
//! comments.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One crate's `src/` as units and the arrows between them.
#[derive(Default)]
struct Crate {
    /// Unit name → whether it is a folder.
    units: BTreeMap<String, bool>,
    /// Unit → units it imports from.
    edges: BTreeMap<String, BTreeSet<String>>,
    /// "file imports crate::Name", for names the root defines.
    from_root: Vec<String>,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The source without its test modules: a `tests.rs` file is all test, and an inline
/// `#[cfg(test)] mod tests` runs to the end of the file by this project's habit.
fn production_part(file: &Path, text: &str) -> Option<String> {
    if file.file_name().is_some_and(|n| n == "tests.rs") {
        return None;
    }
    let cut = text
        .find("#[cfg(test)]\nmod tests")
        .or_else(|| text.find("#[cfg(test)]\npub(crate) mod tests"))
        .unwrap_or(text.len());
    // Comments name modules without importing them.
    let code = text[..cut]
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    Some(code)
}

/// The first path segment of every `crate::` import in `text`.
fn imported_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        // `$crate::`, `cdp_capture::`, … are not this crate.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut segment = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        names.insert(first_segment(&segment));
                        segment.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    segment.push(c);
                }
            }
            names.insert(first_segment(&segment));
        } else {
            names.insert(first_segment(rest));
        }
    }
    names.remove("");
    names
}

fn first_segment(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Names the crate root defines itself (not the ones it re-exports).
fn defined_in_root(root: &str) -> BTreeSet<String> {
    const KINDS: [&str; 8] = [
        "struct ", "enum ", "type ", "fn ", "const ", "static ", "trait ", "union ",
    ];
    let mut names = BTreeSet::new();
    for line in root.lines() {
        // Top-level items start in column 0.
        let mut l = line;
        for vis in ["pub(crate) ", "pub(super) ", "pub "] {
            l = l.strip_prefix(vis).unwrap_or(l);
        }
        l = l.strip_prefix("async ").unwrap_or(l);
        if let Some(kind) = KINDS.iter().find(|k| l.starts_with(**k)) {
            names.insert(first_segment(&l[kind.len()..]));
        }
    }
    names
}

fn read_crate(src: &Path) -> Crate {
    let mut krate = Crate::default();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // Binaries under src/bin are crates of their own.
        if name == "lib.rs" || name == "main.rs" || name == "bin" {
            continue;
        }
        if e.path().is_dir() {
            krate.units.insert(name, true);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            krate.units.entry(stem.to_owned()).or_insert(false);
        }
    }
    let root_text = ["lib.rs", "main.rs"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(src.join(f)).ok())
        .collect::<String>();
    let root_items = defined_in_root(&root_text);
    let mut files = Vec::new();
    rust_files(src, &mut files);
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        if first == "bin" {
            continue;
        }
        let unit = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
        if unit == "lib" || unit == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let Some(text) = production_part(&file, &text) else {
            continue;
        };
        for name in imported_names(&text) {
            if krate.units.contains_key(&name) {
                if name != unit {
                    krate.edges.entry(unit.clone()).or_default().insert(name);
                }
            } else if root_items.contains(&name) {
                krate
                    .from_root
                    .push(format!("{} imports crate::{name}", rel.display()));
            }
        }
    }
    krate
}

/// Strongly connected components with more than one unit (Tarjan).
fn cycles(krate: &Crate) -> Vec<Vec<String>> {
    struct Walk<'a> {
        krate: &'a Crate,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            for w in self.krate.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        krate,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for unit in krate.units.keys() {
        if !walk.index.contains_key(unit.as_str()) {
            walk.visit(unit);
        }
    }
    walk.found
}

#[test]
fn no_crate_imports_upward_or_joins_a_folder_into_a_cycle() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut problems = Vec::new();
    let mut crates = 0;
    for e in std::fs::read_dir(workspace).unwrap().flatten() {
        let dir = e.path();
        if !dir.join("Cargo.toml").is_file() || !dir.join("src").is_dir() {
            continue;
        }
        crates += 1;
        let name = e.file_name().to_string_lossy().into_owned();
        let krate = read_crate(&dir.join("src"));
        for cycle in cycles(&krate) {
            if cycle.iter().any(|u| krate.units[u]) {
                problems.push(format!(
                    "{name}: an import cycle joins {}",
                    cycle.join(", ")
                ));
            }
        }
        for line in &krate.from_root {
            problems.push(format!(
                "{name}: {line}, an item of the crate root above it"
            ));
        }
    }
    assert!(
        crates >= 10,
        "found only {crates} crates under {workspace:?}"
    );
    assert!(problems.is_empty(), "layering:\n{}", problems.join("\n"));
}

#[test]
fn the_reader_sees_groups_nested_paths_and_cycles() {
    let names = imported_names(
        "use crate::{a::{B, c}, d as e, f::*};\nlet x = crate::g::h();\nuse cdp_capture::i;\nmacro $crate::j",
    );
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["a", "d", "f", "g"].map(String::from)
    );
    assert_eq!(
        defined_in_root(
            "pub struct S;\npub(crate) type T = u8;\nfn f() {}\npub use x::Y;\n    fn inner() {}"
        ),
        ["S", "T", "f"].map(String::from).into_iter().collect()
    );
    let mut k = Crate::default();
    for (u, folder) in [("a", true), ("b", false), ("c", false)] {
        k.units.insert(u.into(), folder);
    }
    k.edges.entry("a".into()).or_default().insert("b".into());
    k.edges.entry("b".into()).or_default().insert("a".into());
    k.edges.entry("b".into()).or_default().insert("c".into());
    assert_eq!(cycles(&k), vec![vec!["a".to_owned(), "b".to_owned()]]);
}
