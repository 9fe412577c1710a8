//! The workspace's layering, checked from its sources (no browser: a test binary of its own).
//! Cargo keeps the arrows between crates one way, as long as no crate tunnels another through a
//! wholesale re-export; this checks that, and keeps the arrows one way inside each crate.
//!
//! Within a crate the units are the top-level modules of `src/` (a folder, or a file); a unit's
//! modules may use units below it, and
//! - no crate re-exports another crate whole (`pub use other_crate;`, `… as x;`, `…::*;`);
//! - no cycle of uses may join a folder to another unit (files of one folder are one unit and
//!   may use each other freely; single files side by side in `src/` may, too);
//! - no module may use an item the crate root defines itself: the root composes the units (it
//!   declares and re-exports them), so it sits above all of them;
//! - no function outside tests is longer than [`MAX_FN_LINES`] lines (the harness crate, `tests`,
//!   is all tests): a longer one is split one function per case.
//!
//! Every module the compiler sees outside tests is read, parsed with `syn` (a module declared
//! after a test module included), and every path in it counts: `use` trees and paths in code,
//! from `crate::`, `super::` or `self::`. A path through one of the root's re-exports is an edge
//! to the unit the re-export names.

use std::collections::{BTreeMap, BTreeSet};

/// The longest a function outside tests may be, signature to closing brace.
const MAX_FN_LINES: usize = 120;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// One crate's `src/` as units and the arrows between them.
#[derive(Default, Debug)]
struct Crate {
    /// Unit name → whether it is a folder.
    units: BTreeMap<String, bool>,
    /// Unit → units it uses.
    edges: BTreeMap<String, BTreeSet<String>>,
    /// (unit, unit it uses) → the first file and path that makes the edge.
    witness: BTreeMap<(String, String), String>,
    /// Items the root defines itself.
    root_items: BTreeSet<String>,
    /// Names the root re-exports → the path (from the root) they stand for.
    root_reexports: BTreeMap<String, Vec<String>>,
    /// What breaks a rule, one line each.
    problems: Vec<String>,
    /// Functions longer than [`MAX_FN_LINES`], one line each.
    long_fns: Vec<String>,
}

/// Whether the attributes compile an item only for tests: `#[cfg(test)]`, or `#[cfg(all(…))]`
/// with `test` among its conditions.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    fn needs_test(m: &syn::Meta) -> bool {
        match m {
            syn::Meta::Path(p) => p.is_ident("test"),
            syn::Meta::List(l) if l.path.is_ident("all") => l
                .parse_args_with(
                    syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
                )
                .is_ok_and(|all| all.iter().any(needs_test)),
            _ => false,
        }
    }
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Meta>().is_ok_and(|m| needs_test(&m))
    })
}

/// `#[path = "…"]`, if any.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Every path a use tree names, as segments (`self`, `super`, `crate` kept).
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push(path);
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push(path);
        }
        syn::UseTree::Glob(_) => {
            let mut path = prefix.clone();
            path.push("*".into());
            out.push(path);
        }
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

/// A path used in module `module` (segments from the root), which declares the modules
/// `children`, made absolute: `None` when it does not start in this crate (another crate, std,
/// a local name).
fn absolute(
    module: &[String],
    children: &BTreeSet<String>,
    path: &[String],
) -> Option<Vec<String>> {
    let first = path.first()?;
    let (mut at, rest): (Vec<String>, &[String]) = match first.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (module.to_vec(), &path[1..]),
        "super" => {
            let mut m = module.to_vec();
            m.pop()?;
            (m, &path[1..])
        }
        // A child module, named as edition 2018 allows.
        child if children.contains(child) => (module.to_vec(), path),
        _ => return None,
    };
    for seg in rest {
        match seg.as_str() {
            "super" => {
                at.pop()?;
            }
            "self" => {}
            s => at.push(s.to_owned()),
        }
    }
    Some(at)
}

/// Collects the paths of one module's code (its own items; nested modules are walked apart).
struct Paths {
    found: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if let syn::Item::Mod(_) = item {
            return;
        }
        if item_attrs(item).is_some_and(test_only) {
            return;
        }
        syn::visit::visit_item(self, item);
    }
    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Fn(f) => &f.attrs,
            syn::ImplItem::Const(c) => &c.attrs,
            syn::ImplItem::Type(t) => &t.attrs,
            _ => return syn::visit::visit_impl_item(self, item),
        };
        if !test_only(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        use_paths(&u.tree, &mut Vec::new(), &mut self.found);
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() {
            self.found
                .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Paths inside a macro's tokens (`format!("{}", crate::x::Y)`) as well.
        macro_paths(m.tokens.clone(), &mut self.found);
        syn::visit::visit_macro(self, m);
    }
}

/// The `a::b::c` runs of identifiers in `tokens`, nested groups included.
fn macro_paths(tokens: proc_macro2::TokenStream, out: &mut Vec<Vec<String>>) {
    let mut path: Vec<String> = Vec::new();
    let mut colons = 0;
    let mut flush = |path: &mut Vec<String>| {
        if path.len() > 1 {
            out.push(std::mem::take(path));
        }
        path.clear();
    };
    let mut groups = Vec::new();
    for t in tokens {
        match t {
            proc_macro2::TokenTree::Ident(i) => {
                if colons != 2 {
                    flush(&mut path);
                }
                path.push(i.to_string());
                colons = 0;
            }
            proc_macro2::TokenTree::Punct(p) if p.as_char() == ':' => colons += 1,
            proc_macro2::TokenTree::Group(g) => {
                flush(&mut path);
                colons = 0;
                groups.push(g.stream());
            }
            _ => {
                flush(&mut path);
                colons = 0;
            }
        }
    }
    flush(&mut path);
    for g in groups {
        macro_paths(g, out);
    }
}

/// Functions of one module's code (nested modules are walked apart) longer than
/// [`MAX_FN_LINES`]: (name, first line, lines).
struct Lengths {
    long: Vec<(String, usize, usize)>,
}

impl Lengths {
    fn check(&mut self, name: &syn::Ident, from: proc_macro2::Span, to: proc_macro2::Span) {
        let (first, last) = (from.start().line, to.end().line);
        let lines = last + 1 - first;
        if lines > MAX_FN_LINES {
            self.long.push((name.to_string(), first, lines));
        }
    }
}

impl<'ast> Visit<'ast> for Lengths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if matches!(item, syn::Item::Mod(_)) || item_attrs(item).is_some_and(test_only) {
            return;
        }
        syn::visit::visit_item(self, item);
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.check(
            &f.sig.ident,
            f.sig.fn_token.span,
            f.block.brace_token.span.close(),
        );
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if test_only(&f.attrs) {
            return;
        }
        self.check(
            &f.sig.ident,
            f.sig.fn_token.span,
            f.block.brace_token.span.close(),
        );
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.check(
                &f.sig.ident,
                f.sig.fn_token.span,
                block.brace_token.span.close(),
            );
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

fn item_attrs(item: &syn::Item) -> Option<&[syn::Attribute]> {
    Some(match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => return None,
    })
}

/// One module to read: its path from the root, its items, and the directory its child
/// modules' files are in.
struct Module {
    path: Vec<String>,
    items: Vec<syn::Item>,
    child_dir: PathBuf,
    file: PathBuf,
}

impl Module {
    /// The modules it declares (test modules too: a path into one is no path to another crate).
    fn children(&self) -> BTreeSet<String> {
        self.items
            .iter()
            .filter_map(|i| match i {
                syn::Item::Mod(m) => Some(m.ident.to_string()),
                _ => None,
            })
            .collect()
    }
}

/// Every non-test module of the crate rooted at `root_file`, in declaration order.
fn modules(root_file: &Path) -> Result<Vec<Module>, String> {
    let parse = |file: &Path| -> Result<syn::File, String> {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        syn::parse_file(&text).map_err(|e| format!("{}: {e}", file.display()))
    };
    let root = parse(root_file)?;
    let dir = root_file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let mut todo = vec![Module {
        path: Vec::new(),
        items: root.items,
        child_dir: dir,
        file: root_file.to_path_buf(),
    }];
    let mut out = Vec::new();
    while let Some(m) = todo.pop() {
        for item in &m.items {
            let syn::Item::Mod(decl) = item else {
                continue;
            };
            if test_only(&decl.attrs) {
                continue;
            }
            let name = decl.ident.to_string();
            let mut path = m.path.clone();
            path.push(name.clone());
            if let Some((_, items)) = &decl.content {
                todo.push(Module {
                    path,
                    items: items.clone(),
                    child_dir: m.child_dir.join(&name),
                    file: m.file.clone(),
                });
                continue;
            }
            let file = match path_attr(&decl.attrs) {
                Some(p) => m.child_dir.join(p),
                None => {
                    let flat = m.child_dir.join(format!("{name}.rs"));
                    if flat.is_file() {
                        flat
                    } else {
                        m.child_dir.join(&name).join("mod.rs")
                    }
                }
            };
            let parsed = parse(&file)?;
            // A `foo.rs` or `foo/mod.rs` keeps its children in `foo/`.
            todo.push(Module {
                path,
                items: parsed.items,
                child_dir: m.child_dir.join(&name),
                file,
            });
        }
        out.push(m);
    }
    Ok(out)
}

/// Reads the crate whose root file is `root_file` (`src/lib.rs` or `src/main.rs`).
fn read_crate(root_file: &Path) -> Result<Crate, String> {
    let src = root_file.parent().unwrap_or(Path::new("."));
    let modules = modules(root_file)?;
    let mut krate = Crate::default();
    let root = modules
        .iter()
        .find(|m| m.path.is_empty())
        .expect("the root");
    for item in &root.items {
        if item_attrs(item).is_some_and(test_only) {
            continue;
        }
        match item {
            syn::Item::Mod(m) => {
                let name = m.ident.to_string();
                let folder = src.join(&name).is_dir();
                krate.units.insert(name, folder);
            }
            syn::Item::Use(u) => {
                let mut paths = Vec::new();
                use_paths(&u.tree, &mut Vec::new(), &mut paths);
                for p in paths {
                    if let Some(abs) = absolute(&[], &root.children(), &p) {
                        if let Some(name) = abs.last().filter(|n| *n != "*") {
                            krate.root_reexports.insert(name.clone(), abs.clone());
                        }
                    }
                }
                wholesale_reexport(u, &root.children(), &mut krate.problems, &root.file);
            }
            other => {
                if let Some(name) = defined_name(other) {
                    krate.root_items.insert(name);
                }
            }
        }
    }
    for m in &modules {
        let mut lengths = Lengths { long: Vec::new() };
        for item in &m.items {
            lengths.visit_item(item);
        }
        for (name, line, lines) in lengths.long {
            krate.long_fns.push(format!(
                "{}:{line}: fn {name} is {lines} lines (at most {MAX_FN_LINES} outside tests: split it, one function per case)",
                m.file.display()
            ));
        }
        if m.path.is_empty() {
            continue;
        }
        let children = m.children();
        for item in &m.items {
            if let syn::Item::Use(u) = item {
                wholesale_reexport(u, &children, &mut krate.problems, &m.file);
            }
        }
        let unit = m.path[0].clone();
        let mut paths = Paths { found: Vec::new() };
        for item in &m.items {
            paths.visit_item(item);
        }
        for p in paths.found {
            let Some(abs) = absolute(&m.path, &children, &p) else {
                continue;
            };
            let Some(first) = abs.first() else {
                continue;
            };
            let target = if krate.units.contains_key(first) {
                Some(first.clone())
            } else if let Some(to) = krate.root_reexports.get(first) {
                to.first().filter(|u| krate.units.contains_key(*u)).cloned()
            } else if krate.root_items.contains(first) {
                krate.problems.push(format!(
                    "{} uses {}, an item the crate root defines (the root sits above every module)",
                    m.file.display(),
                    abs.join("::")
                ));
                None
            } else {
                None
            };
            if let Some(target) = target.filter(|t| *t != unit) {
                krate
                    .witness
                    .entry((unit.clone(), target.clone()))
                    .or_insert_with(|| format!("{}: {}", m.file.display(), abs.join("::")));
                krate.edges.entry(unit.clone()).or_default().insert(target);
            }
        }
    }
    Ok(krate)
}

/// The name an item defines, for the items a module could use from the root.
fn defined_name(item: &syn::Item) -> Option<String> {
    Some(match item {
        syn::Item::Const(i) => i.ident.to_string(),
        syn::Item::Enum(i) => i.ident.to_string(),
        syn::Item::Fn(i) => i.sig.ident.to_string(),
        syn::Item::Static(i) => i.ident.to_string(),
        syn::Item::Struct(i) => i.ident.to_string(),
        syn::Item::Trait(i) => i.ident.to_string(),
        syn::Item::Type(i) => i.ident.to_string(),
        syn::Item::Union(i) => i.ident.to_string(),
        _ => return None,
    })
}

/// `pub use other_crate;`, `pub use other_crate as x;`, `pub use other_crate::*;`.
fn wholesale_reexport(
    u: &syn::ItemUse,
    children: &BTreeSet<String>,
    problems: &mut Vec<String>,
    file: &Path,
) {
    if matches!(u.vis, syn::Visibility::Inherited) {
        return;
    }
    let mut paths = Vec::new();
    use_paths(&u.tree, &mut Vec::new(), &mut paths);
    for p in paths {
        let Some(first) = p.first() else { continue };
        if ["crate", "self", "super", "std", "core", "alloc"].contains(&first.as_str())
            || children.contains(first)
        {
            continue;
        }
        let whole = p.len() == 1 || (p.len() == 2 && p[1] == "*");
        if whole {
            problems.push(format!(
                "{} re-exports the crate `{first}` whole: name the items, or let the user declare it",
                file.display()
            ));
        }
    }
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

/// Every rule broken in the crate rooted at `root_file`.
fn problems(name: &str, root_file: &Path) -> Vec<String> {
    let krate = match read_crate(root_file) {
        Ok(k) => k,
        Err(e) => return vec![format!("{name}: cannot read {e}")],
    };
    let mut out: Vec<String> = krate
        .problems
        .iter()
        .map(|p| format!("{name}: {p}"))
        .collect();
    // The harness is all tests.
    if name != "tests" {
        out.extend(krate.long_fns.iter().map(|p| format!("{name}: {p}")));
    }
    for cycle in cycles(&krate) {
        if cycle.iter().any(|u| krate.units[u]) {
            let edges: Vec<String> = krate
                .witness
                .iter()
                .filter(|((a, b), _)| cycle.contains(a) && cycle.contains(b))
                .map(|((a, b), w)| format!("  {a} → {b} ({w})"))
                .collect();
            out.push(format!(
                "{name}: a cycle of uses joins {}:\n{}",
                cycle.join(", "),
                edges.join("\n")
            ));
        }
    }
    out
}

#[test]
fn no_crate_uses_upward_tunnels_another_or_joins_a_folder_into_a_cycle() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut found = Vec::new();
    let mut crates = 0;
    for e in std::fs::read_dir(workspace).unwrap().flatten() {
        let dir = e.path();
        if !dir.join("Cargo.toml").is_file() {
            continue;
        }
        for root in ["src/lib.rs", "src/main.rs"] {
            if dir.join(root).is_file() {
                crates += 1;
                let name = e.file_name().to_string_lossy().into_owned();
                found.extend(problems(&name, &dir.join(root)));
            }
        }
    }
    assert!(
        crates >= 11,
        "found only {crates} crate roots under {workspace:?}"
    );
    assert!(found.is_empty(), "layering:\n{}", found.join("\n"));
}

/// A crate written to `dir` from (path, text) pairs.
fn plant(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, text) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

fn planted_problems(files: &[(&str, &str)]) -> Vec<String> {
    let dir = plant(files);
    problems("planted", &dir.path().join("src/lib.rs"))
}

#[test]
fn a_clean_crate_passes() {
    let found = planted_problems(&[
        ("src/lib.rs", "mod a;\nmod b;\npub use a::Thing;\n"),
        (
            "src/a/mod.rs",
            "mod inner;\npub struct Thing;\nuse crate::b::Helper;\n",
        ),
        (
            "src/a/inner.rs",
            "use super::Thing;\nfn f() -> super::super::b::Helper { todo!() }\n",
        ),
        ("src/b.rs", "pub struct Helper;\n"),
    ]);
    assert_eq!(found, Vec::<String>::new());
}

#[test]
fn a_super_cycle_is_found() {
    let found = planted_problems(&[
        ("src/lib.rs", "mod a;\nmod c;\n"),
        ("src/a/mod.rs", "mod b;\npub struct Y;\n"),
        ("src/a/b.rs", "fn f() { let _ = super::super::c::X; }\n"),
        ("src/c.rs", "pub struct X;\nuse crate::a::Y;\n"),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("a cycle of uses joins a, c"), "{found:?}");
}

#[test]
fn a_module_declared_after_the_tests_is_read() {
    let found = planted_problems(&[
        ("src/lib.rs", "mod a;\nmod c;\n"),
        ("src/a/mod.rs", "#[cfg(test)]\nmod tests;\nmod late;\n"),
        ("src/a/tests.rs", "use crate::c::X;\n"),
        (
            "src/a/late.rs",
            "pub(crate) fn f() -> crate::c::X { todo!() }\n",
        ),
        (
            "src/c.rs",
            "pub struct X;\nfn g() { crate::a::late::f(); }\n",
        ),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("a cycle of uses joins a, c"), "{found:?}");
    // The test module alone makes no edge.
    let found = planted_problems(&[
        ("src/lib.rs", "mod a;\nmod c;\n"),
        (
            "src/a/mod.rs",
            "#[cfg(test)]\nmod tests;\n#[cfg(all(test, unix))]\nmod unix_tests { use crate::c::X; }\npub struct Y;\n",
        ),
        ("src/a/tests.rs", "use crate::c::X;\n"),
        ("src/c.rs", "pub struct X;\nuse crate::a::Y;\n"),
    ]);
    assert_eq!(found, Vec::<String>::new());
}

#[test]
fn a_path_through_a_root_reexport_is_an_edge_to_its_unit() {
    let found = planted_problems(&[
        (
            "src/lib.rs",
            "mod writer;\nmod traffic;\npub use writer::Emit;\n",
        ),
        (
            "src/writer/mod.rs",
            "pub struct Emit;\nuse crate::traffic::Reader;\n",
        ),
        ("src/traffic.rs", "pub struct Reader;\nuse crate::{Emit};\n"),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("joins traffic, writer"), "{found:?}");
}

#[test]
fn root_items_and_whole_crate_reexports_are_refused() {
    let found = planted_problems(&[
        (
            "src/lib.rs",
            "mod a;\npub struct Config;\npub use other_crate as other;\npub use another::*;\npub use third::Item;\n",
        ),
        ("src/a.rs", "fn f(_: &crate::Config) {}\n"),
    ]);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(
        found
            .iter()
            .any(|p| p.contains("crate::Config") || p.contains("uses Config")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p.contains("`other_crate` whole")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p.contains("`another` whole")),
        "{found:?}"
    );
}

#[test]
fn a_long_function_is_found_and_a_long_test_is_not() {
    let body = "    let _ = 1;\n".repeat(MAX_FN_LINES);
    let found = planted_problems(&[
        ("src/lib.rs", "mod a;\n"),
        (
            "src/a.rs",
            &format!(
                "fn short() {{\n{}}}\nfn long() {{\n{body}}}\nstruct S;\nimpl S {{\n    fn method() {{\n{body}    }}\n}}\n#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{body}    }}\n}}\n",
                "    let _ = 1;\n".repeat(MAX_FN_LINES - 2)
            ),
        ),
    ]);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("fn long is 122 lines"), "{found:?}");
    assert!(found[1].contains("fn method is 122 lines"), "{found:?}");
}

#[test]
fn paths_inside_macros_count() {
    let found = planted_problems(&[
        ("src/lib.rs", "mod a;\nmod c;\n"),
        (
            "src/a/mod.rs",
            "pub struct Y;\nfn f() { println!(\"{}\", crate::c::NAME); }\n",
        ),
        (
            "src/c.rs",
            "pub const NAME: &str = \"\";\nuse crate::a::Y;\n",
        ),
    ]);
    assert_eq!(found.len(), 1, "{found:?}");
}
