//! The public names of a set of crates, read from their source with `syn`: items and the
//! modules that define or re-export them, and the members of each type and trait (methods,
//! associated items, variants, fields).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::lint::sources;
use syn::{ImplItem, Item, TraitItem, UseTree, Visibility};

/// The public names of the crates read.
#[derive(Debug, Default)]
pub(super) struct Index {
    /// Item name → the modules that define it or re-export it (`zkr_recipes::id`).
    items: HashMap<String, HashSet<String>>,
    /// Type, trait or variant name → its members.
    members: HashMap<String, HashSet<String>>,
    /// Every member name, of any type.
    all_members: HashSet<String>,
    /// Every module path, re-exported crates included (`zkr_connection::zookeeper_client`).
    modules: HashSet<String>,
    /// A module re-exported under another path → the module.
    module_aliases: HashMap<String, String>,
    /// Type alias or renamed import → the name it stands for.
    aliases: HashMap<String, String>,
    /// Type → the traits it implements.
    traits_of: HashMap<String, HashSet<String>>,
    /// `pub use source::*` in module `into`: (into, source).
    globs: Vec<(String, String)>,
    /// Every `pub use` of a name: (the module it is exported from, its name, the source path).
    uses: Vec<(String, String, String)>,
}

impl Index {
    /// Reads every `.rs` file under `src` as the crate `krate` (`zkr_connection`).
    ///
    /// # Panics
    /// On a file that cannot be read or parsed: the check cannot be trusted without it.
    pub(super) fn add_crate(&mut self, krate: &str, src: &Path) {
        let mut files = Vec::new();
        sources(src, &mut files);
        assert!(!files.is_empty(), "no sources under {}", src.display());
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let module = module_of(krate, src, &file);
            self.modules.insert(module.clone());
            self.items(&module, &parsed.items);
        }
    }

    /// Resolves the re-exports once every crate is read.
    pub(super) fn finish(&mut self) {
        for (into, name, source) in std::mem::take(&mut self.uses) {
            if self.modules.contains(&source) {
                self.modules.insert(format!("{into}::{name}"));
                self.module_aliases.insert(format!("{into}::{name}"), source);
            }
        }
        for (into, source) in std::mem::take(&mut self.globs) {
            for modules in self.items.values_mut() {
                if modules.contains(&source) {
                    modules.insert(into.clone());
                }
            }
        }
    }

    fn items(&mut self, module: &str, items: &[Item]) {
        for item in items {
            match item {
                Item::Struct(s) if public(&s.vis) => {
                    let name = s.ident.to_string();
                    self.item(module, &name);
                    self.derived(&name, &s.attrs);
                    for field in s.fields.iter().filter(|f| public(&f.vis)) {
                        if let Some(ident) = &field.ident {
                            self.member(&name, &ident.to_string());
                        }
                    }
                }
                Item::Enum(e) if public(&e.vis) => {
                    let name = e.ident.to_string();
                    self.item(module, &name);
                    self.derived(&name, &e.attrs);
                    for variant in &e.variants {
                        let variant_name = variant.ident.to_string();
                        self.member(&name, &variant_name);
                        for field in variant.fields.iter().filter_map(|f| f.ident.as_ref()) {
                            self.member(&variant_name, &field.to_string());
                        }
                    }
                }
                Item::Trait(t) if public(&t.vis) => {
                    let name = t.ident.to_string();
                    self.item(module, &name);
                    for member in &t.items {
                        let ident = match member {
                            TraitItem::Fn(f) => &f.sig.ident,
                            TraitItem::Const(c) => &c.ident,
                            TraitItem::Type(t) => &t.ident,
                            _ => continue,
                        };
                        self.member(&name, &ident.to_string());
                    }
                }
                Item::Fn(f) if public(&f.vis) => self.item(module, &f.sig.ident.to_string()),
                Item::Const(c) if public(&c.vis) => self.item(module, &c.ident.to_string()),
                Item::Static(s) if public(&s.vis) => self.item(module, &s.ident.to_string()),
                Item::Type(t) if public(&t.vis) => {
                    let name = t.ident.to_string();
                    self.item(module, &name);
                    if let syn::Type::Path(target) = &*t.ty {
                        if let Some(last) = target.path.segments.last() {
                            self.aliases.insert(name, last.ident.to_string());
                        }
                    }
                }
                Item::Mod(m) => {
                    let inner = format!("{module}::{}", m.ident);
                    self.modules.insert(inner.clone());
                    if let Some((_, content)) = &m.content {
                        self.items(&inner, content);
                    }
                }
                Item::Use(u) if public(&u.vis) => self.uses(module, &u.tree, &mut Vec::new()),
                Item::Impl(i) => self.impl_block(i),
                // The bodies of local macros: the methods they make, for any type.
                Item::Macro(m) if m.mac.path.is_ident("macro_rules") => {
                    let tokens: Vec<String> =
                        m.mac.tokens.to_string().split_whitespace().map(str::to_owned).collect();
                    for pair in tokens.windows(2).filter(|w| w[0] == "fn") {
                        self.all_members.insert(pair[1].clone());
                    }
                }
                _ => {}
            }
        }
    }

    /// The constructors of derived `Default` and `Clone` (`RetryOptions::default()`).
    fn derived(&mut self, name: &str, attrs: &[syn::Attribute]) {
        for attr in attrs.iter().filter(|a| a.path().is_ident("derive")) {
            let _ = attr.parse_nested_meta(|meta| {
                for (derive, method) in [("Default", "default"), ("Clone", "clone")] {
                    if meta.path.is_ident(derive) {
                        self.member(name, method);
                    }
                }
                // `thiserror::Error` (or `Error` imported): the type implements `std::error::Error`.
                if meta.path.segments.last().is_some_and(|s| s.ident == "Error") {
                    self.traits_of.entry(name.to_owned()).or_default().insert("Error".to_owned());
                }
                Ok(())
            });
        }
    }

    fn impl_block(&mut self, block: &syn::ItemImpl) {
        let syn::Type::Path(self_ty) = &*block.self_ty else { return };
        let Some(last) = self_ty.path.segments.last() else { return };
        let name = last.ident.to_string();
        let in_trait = block.trait_.is_some();
        if let Some((_, trait_path, _)) = &block.trait_ {
            if let Some(t) = trait_path.segments.last() {
                self.traits_of.entry(name.clone()).or_default().insert(t.ident.to_string());
            }
        }
        for member in &block.items {
            let (ident, vis) = match member {
                ImplItem::Fn(f) => (&f.sig.ident, &f.vis),
                ImplItem::Const(c) => (&c.ident, &c.vis),
                _ => continue,
            };
            if in_trait || public(vis) {
                self.member(&name, &ident.to_string());
            }
        }
    }

    fn uses(&mut self, module: &str, tree: &UseTree, prefix: &mut Vec<String>) {
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.uses(module, &p.tree, prefix);
                prefix.pop();
            }
            // `pub use a::b::{self, C}`: the module `b` itself.
            UseTree::Name(n) if n.ident == "self" && !prefix.is_empty() => {
                let (name, parent) = prefix.split_last().expect("not empty");
                self.export(module, name, name, parent);
            }
            UseTree::Name(n) => self.export(module, &n.ident.to_string(), &n.ident.to_string(), prefix),
            UseTree::Rename(r) => {
                let (source, name) = (r.ident.to_string(), r.rename.to_string());
                self.aliases.insert(name.clone(), source.clone());
                self.export(module, &source, &name, prefix);
            }
            UseTree::Glob(_) => self.globs.push((module.to_owned(), absolute(module, prefix))),
            UseTree::Group(g) => {
                for tree in &g.items {
                    self.uses(module, tree, prefix);
                }
            }
        }
    }

    fn export(&mut self, module: &str, source: &str, name: &str, prefix: &[String]) {
        self.item(module, name);
        let mut path = prefix.to_vec();
        path.push(source.to_owned());
        self.uses.push((module.to_owned(), name.to_owned(), absolute(module, &path)));
    }

    fn item(&mut self, module: &str, name: &str) {
        self.items.entry(name.to_owned()).or_default().insert(module.to_owned());
    }

    fn member(&mut self, owner: &str, name: &str) {
        self.members.entry(owner.to_owned()).or_default().insert(name.to_owned());
        self.all_members.insert(name.to_owned());
    }

    /// The public types defined in the crates `krates` (`zkr_recipes`) that implement
    /// `std::error::Error`, sorted.
    pub(super) fn error_types(&self, krates: &[&str]) -> Vec<String> {
        let in_krates = |m: &String| krates.iter().any(|k| m == k || m.starts_with(&format!("{k}::")));
        let mut found: Vec<String> = self
            .items
            .iter()
            .filter(|(name, modules)| modules.iter().any(in_krates) && self.implements(name, "Error"))
            .map(|(name, _)| name.clone())
            .collect();
        found.sort();
        found
    }

    /// Does the type `name` implement (or derive) the trait `tr`?
    pub(super) fn implements(&self, name: &str, tr: &str) -> bool {
        self.traits_of.get(name).is_some_and(|traits| traits.contains(tr))
    }

    /// Is `name` an item of any module?
    pub(super) fn is_item(&self, name: &str) -> bool {
        self.items.contains_key(name)
    }

    /// Is `name` a member of any type?
    pub(super) fn is_member(&self, name: &str) -> bool {
        self.all_members.contains(name)
    }

    /// Is `name` a member of `owner` (through its aliases and the traits it implements)?
    pub(super) fn has_member(&self, owner: &str, name: &str) -> bool {
        let mut owners = vec![owner.to_owned()];
        let mut seen = HashSet::new();
        while let Some(owner) = owners.pop() {
            if !seen.insert(owner.clone()) {
                continue;
            }
            if self.members.get(&owner).is_some_and(|m| m.contains(name)) {
                return true;
            }
            owners.extend(self.aliases.get(&owner).cloned());
            owners.extend(self.traits_of.get(&owner).into_iter().flatten().cloned());
        }
        false
    }

    /// The modules a module path names: itself when it is whole (`zkr_connection::path`), or
    /// every module it ends (`path`, `locks`, `protected`), aliases resolved.
    pub(super) fn modules_named(&self, path: &str) -> Vec<String> {
        let suffix = format!("::{path}");
        let mut found: Vec<String> =
            self.modules.iter().filter(|m| *m == path || m.ends_with(&suffix)).cloned().collect();
        let aliased: Vec<String> = found.iter().filter_map(|m| self.module_aliases.get(m).cloned()).collect();
        found.extend(aliased);
        found
    }

    /// Is `name` an item of `module`, or a module inside it?
    pub(super) fn in_module(&self, module: &str, name: &str) -> bool {
        self.items.get(name).is_some_and(|m| m.contains(module))
            || self.modules.contains(&format!("{module}::{name}"))
    }
}

/// The crates a `use` path can start with.
const CRATES: [&str; 11] = [
    "zookeeper_client",
    "zkr_connection",
    "zkr_recipes",
    "zkr_testing",
    "std",
    "core",
    "alloc",
    "tokio",
    "futures",
    "serde",
    "serde_json",
];

fn public(vis: &Visibility) -> bool {
    matches!(vis, Visibility::Public(_))
}

/// A `use` path made absolute (`crate::`, `self::`, `super::` resolved against `module`).
fn absolute(module: &str, path: &[String]) -> String {
    let krate = module.split("::").next().unwrap_or(module);
    let mut at: Vec<&str> = module.split("::").collect();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => (at, rest) = (vec![krate], &path[1..]),
        Some("self") => rest = &path[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                at.pop();
                rest = &rest[1..];
            }
        }
        Some(first) if CRATES.contains(&first) => at.clear(),
        // A module of this one, in scope.
        _ => {}
    }
    at.iter().map(|s| s.to_string()).chain(rest.iter().cloned()).collect::<Vec<_>>().join("::")
}

/// The module of the file `file` of the crate `krate` whose sources are under `src`.
fn module_of(krate: &str, src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = vec![krate.to_owned()];
    parts.extend(relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    if matches!(parts.last().map(String::as_str), Some("lib" | "mod" | "main")) {
        parts.pop();
    }
    parts.join("::")
}
