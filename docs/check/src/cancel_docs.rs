//! Every public async fn of the libraries documents `# Cancel safety` (how it behaves when its
//! future is dropped at an await), and so does every public fn that returns a future
//! (`-> impl Future`: `SessionClient`'s requests, sent when called). Read from the sources with
//! `syn`: free functions, inherent methods, and the methods public traits declare.

use std::path::Path;

use crate::lint::sources;
use syn::{Attribute, ImplItem, Item, ReturnType, Signature, Visibility};

/// Is `sig` an async fn, or one returning `impl Future`?
fn is_async(sig: &Signature) -> bool {
    let returns_future = match &sig.output {
        ReturnType::Type(_, ty) => quote_like(ty).contains("impl Future"),
        ReturnType::Default => false,
    };
    sig.asyncness.is_some() || returns_future
}

/// The type as written, near enough for matching `impl Future<...>`.
fn quote_like(ty: &syn::Type) -> String {
    match ty {
        syn::Type::ImplTrait(t) => {
            let bounds: Vec<String> = t
                .bounds
                .iter()
                .filter_map(|b| match b {
                    syn::TypeParamBound::Trait(t) => t.path.segments.last().map(|s| s.ident.to_string()),
                    _ => None,
                })
                .collect();
            format!("impl {}", bounds.join(" + "))
        }
        _ => String::new(),
    }
}

/// Does the doc comment among `attrs` have a `# Cancel safety` section?
fn documents_cancel_safety(attrs: &[Attribute]) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("doc")).any(|a| match &a.meta {
        syn::Meta::NameValue(nv) => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => {
                s.value().trim() == "# Cancel safety"
            }
            _ => false,
        },
        _ => false,
    })
}

/// The public async fns under `items` (in `file`) without the section: `file: name`.
fn undocumented(file: &Path, items: &[Item], in_test: bool, found: &mut Vec<String>) {
    let public = |vis: &Visibility| matches!(vis, Visibility::Public(_));
    for item in items {
        let test_only = |attrs: &[Attribute]| {
            attrs.iter().any(|a| a.path().is_ident("cfg") && a.meta.to_token_stream_string().contains("test"))
        };
        match item {
            Item::Fn(f)
                if !in_test && public(&f.vis) && is_async(&f.sig) && !documents_cancel_safety(&f.attrs) =>
            {
                found.push(format!("{}: {}", file.display(), f.sig.ident));
            }
            // Inherent methods; a trait's methods are documented where the trait declares them.
            Item::Impl(block) if !in_test && block.trait_.is_none() => {
                for member in &block.items {
                    if let ImplItem::Fn(f) = member {
                        if public(&f.vis) && is_async(&f.sig) && !documents_cancel_safety(&f.attrs) {
                            found.push(format!("{}: {}", file.display(), f.sig.ident));
                        }
                    }
                }
            }
            Item::Trait(t) if !in_test && public(&t.vis) => {
                for member in &t.items {
                    if let syn::TraitItem::Fn(f) = member {
                        if is_async(&f.sig) && !documents_cancel_safety(&f.attrs) {
                            found.push(format!("{}: {}", file.display(), f.sig.ident));
                        }
                    }
                }
            }
            Item::Mod(m) => {
                if let Some((_, content)) = &m.content {
                    undocumented(file, content, in_test || test_only(&m.attrs), found);
                }
            }
            _ => {}
        }
    }
}

/// A meta's tokens as text.
trait TokensText {
    fn to_token_stream_string(&self) -> String;
}

impl TokensText for syn::Meta {
    fn to_token_stream_string(&self) -> String {
        match self {
            syn::Meta::List(list) => list.tokens.to_string(),
            _ => String::new(),
        }
    }
}

/// The offenders in the libraries under `root`.
fn offenders(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for krate in ["zkr-connection", "zkr-recipes"] {
        sources(&root.join("crates").join(krate).join("src"), &mut files);
    }
    let mut found = Vec::new();
    // A module of unit tests in a file of its own (`#[cfg(test)] mod tests;`).
    for file in files.into_iter().filter(|f| !f.ends_with("tests.rs")) {
        let text = std::fs::read_to_string(&file).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let relative = file.strip_prefix(root).unwrap_or(&file).to_path_buf();
        undocumented(&relative, &parsed.items, false, &mut found);
    }
    found.sort();
    found
}

#[test]
fn every_public_async_fn_documents_its_cancel_safety() {
    let found = offenders(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    assert!(found.is_empty(), "{} without `# Cancel safety`:\n{}", found.len(), found.join("\n"));
}

#[test]
fn the_check_finds_an_undocumented_future() {
    let source = r#"
        /// Sends it.
        pub async fn documented() {}
        pub trait T {
            /// Runs.
            async fn run(&self);
        }
        impl T for X {
            async fn run(&self) {}
        }
        impl X {
            /// Reads it.
            ///
            /// # Cancel safety
            /// Cancel safe.
            pub fn read(&self) -> impl Future<Output = ()> + Send { async {} }
            /// Writes it.
            pub fn write(&self) -> impl std::future::Future<Output = ()> { async {} }
            fn private(&self) -> impl Future<Output = ()> { async {} }
        }
        #[cfg(test)]
        mod tests { pub async fn helper() {} }
    "#;
    let parsed = syn::parse_file(source).unwrap();
    let mut found = Vec::new();
    undocumented(Path::new("x.rs"), &parsed.items, false, &mut found);
    assert_eq!(found, ["x.rs: documented", "x.rs: run", "x.rs: write"]);
}
