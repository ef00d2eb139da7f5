//! The `bpflog` library's public API, listed in `crates/bpflog/public-api.txt`, so that a change
//! to it is seen in review: every item a user can name (modules, types, functions, constants),
//! every public field, variant and method with its signature, and every trait implemented,
//! one a line, sorted; the file starts with the counts a reader weighs the API by.
//!
//! The listing is read from rustdoc's JSON (`--output-format json`, unstable: the stable
//! toolchain emits it with `RUSTC_BOOTSTRAP=1`) with `rustdoc-types`, whose version must match
//! the JSON's format version. When the API changes on purpose,
//! `BPFLOG_BLESS=1 cargo test --test public_api` rewrites the file; without it, the test fails
//! when the file is not the API.

use rustdoc_types::{
    Attribute, Crate, GenericArg, GenericArgs, GenericBound, GenericParamDef, GenericParamDefKind,
    Generics, Id, Item, ItemEnum, Path, StructKind, Term, Type, VariantKind, Visibility,
    WherePredicate,
};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::Command;

/// The library's rustdoc JSON, built with its default features into a target directory of its
/// own (the test's build is not waited on).
fn rustdoc_json() -> Crate {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("public-api");
    let status = Command::new(env!("CARGO"))
        .args([
            "doc",
            "--quiet",
            "--locked",
            "--no-deps",
            "--lib",
            "-p",
            "bpflog",
        ])
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", &target)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTDOCFLAGS", "-Z unstable-options --output-format json")
        .status()
        .expect("cargo doc runs");
    assert!(status.success(), "cargo doc --output-format json failed");
    let text = std::fs::read_to_string(target.join("doc/bpflog.json")).unwrap();
    let version: serde_json::Value = serde_json::from_str(&text).unwrap();
    let version = version["format_version"].as_u64().unwrap_or(0);
    assert_eq!(
        version,
        u64::from(rustdoc_types::FORMAT_VERSION),
        "this toolchain's rustdoc writes JSON format {version}; the dev-dependency rustdoc-types \
         reads format {}: set it (Cargo.toml) to the release for format {version} \
         (rustdoc-types 0.{version}.x)",
        rustdoc_types::FORMAT_VERSION
    );
    serde_json::from_str(&text).unwrap()
}

/// The listing's lines and the counts of its items.
#[derive(Default)]
struct Listing<'c> {
    krate: Option<&'c Crate>,
    /// Each item reached, by the path it is reached at.
    paths: HashMap<Id, String>,
    /// The paths of a first walk: types are named by them wherever they appear.
    known: HashMap<Id, String>,
    lines: BTreeSet<String>,
    /// Types, functions, traits, constants and statics a user can name.
    named: usize,
    /// ... of which at the crate's root.
    root: usize,
    fields: usize,
    non_exhaustive: usize,
    methods: usize,
}

impl<'c> Listing<'c> {
    fn krate(&self) -> &'c Crate {
        self.krate.unwrap()
    }

    /// Every public item of module `id`, at `path`, re-exports followed to the items they name
    /// (those of the crate: the object and log crates are listed as the re-exports they are).
    fn module(&mut self, id: &Id, path: &str, at_root: bool) {
        let ItemEnum::Module(module) = &self.krate().index[id].inner else {
            unreachable!()
        };
        for child in &module.items {
            let item = &self.krate().index[child];
            if item.visibility != Visibility::Public {
                continue;
            }
            match &item.inner {
                ItemEnum::Use(u) => match u.id.filter(|t| self.krate().index.contains_key(t)) {
                    Some(target) if !u.is_glob => {
                        self.item(&target, &format!("{path}::{}", u.name), at_root)
                    }
                    _ => {
                        let glob = if u.is_glob { "::*" } else { "" };
                        self.lines
                            .insert(format!("pub use {path}::{} = {}{glob}", u.name, u.source));
                    }
                },
                _ => {
                    let name = item.name.clone().unwrap_or_default();
                    self.item(child, &format!("{path}::{name}"), at_root)
                }
            }
        }
    }

    fn item(&mut self, id: &Id, path: &str, at_root: bool) {
        if self.paths.contains_key(id) {
            return;
        }
        self.paths.insert(*id, path.to_owned());
        let item = &self.krate().index[id];
        let marks = if item.attrs.contains(&Attribute::NonExhaustive) {
            self.non_exhaustive += 1;
            "#[non_exhaustive] "
        } else {
            ""
        };
        let named = !matches!(item.inner, ItemEnum::Module(_));
        if named {
            self.named += 1;
            self.root += usize::from(at_root);
        }
        match &item.inner {
            ItemEnum::Module(_) => {
                self.lines.insert(format!("pub mod {path}"));
                self.module(id, path, false);
            }
            ItemEnum::Struct(s) => {
                let g = self.generics(&s.generics);
                self.lines.insert(format!(
                    "{marks}pub struct {path}{g}{}",
                    self.wheres(&s.generics)
                ));
                match &s.kind {
                    StructKind::Unit => {}
                    StructKind::Tuple(fields) => {
                        for (i, field) in fields.iter().enumerate() {
                            if let Some(field) = field {
                                self.field(field, &format!("{path}::{i}"));
                            }
                        }
                    }
                    StructKind::Plain { fields, .. } => {
                        for field in fields {
                            let name = self.krate().index[field].name.clone().unwrap_or_default();
                            self.field(field, &format!("{path}::{name}"));
                        }
                    }
                }
                self.impls(&s.impls, path);
            }
            ItemEnum::Enum(e) => {
                let g = self.generics(&e.generics);
                self.lines.insert(format!(
                    "{marks}pub enum {path}{g}{}",
                    self.wheres(&e.generics)
                ));
                for variant in &e.variants {
                    self.variant(variant, path);
                }
                self.impls(&e.impls, path);
            }
            ItemEnum::Union(u) => {
                self.lines.insert(format!("pub union {path}"));
                self.impls(&u.impls, path);
            }
            ItemEnum::Function(_) => {
                let line = self.function(item, path);
                self.lines.insert(line);
            }
            ItemEnum::Trait(t) => {
                let g = self.generics(&t.generics);
                self.lines.insert(format!("pub trait {path}{g}"));
                for member in &t.items {
                    let member_item = &self.krate().index[member];
                    let name = member_item.name.clone().unwrap_or_default();
                    let line = self.member(member_item, &format!("{path}::{name}"));
                    self.lines.insert(line);
                }
            }
            ItemEnum::TypeAlias(t) => {
                let g = self.generics(&t.generics);
                let line = format!("pub type {path}{g} = {}", self.ty(&t.type_));
                self.lines.insert(line);
            }
            ItemEnum::Constant { type_, .. } => {
                let line = format!("pub const {path}: {}", self.ty(type_));
                self.lines.insert(line);
            }
            ItemEnum::Static(s) => {
                let line = format!("pub static {path}: {}", self.ty(&s.type_));
                self.lines.insert(line);
            }
            ItemEnum::Macro(_) | ItemEnum::ProcMacro(_) => {
                self.lines.insert(format!("macro {path}"));
            }
            other => panic!("{path}: an item this listing does not know: {other:?}"),
        }
    }

    fn field(&mut self, id: &Id, path: &str) {
        let item = &self.krate().index[id];
        if item.visibility != Visibility::Public {
            return;
        }
        self.fields += 1;
        let ItemEnum::StructField(ty) = &item.inner else {
            unreachable!()
        };
        let line = format!("pub {path}: {}", self.ty(ty));
        self.lines.insert(line);
    }

    fn variant(&mut self, id: &Id, path: &str) {
        let item = &self.krate().index[id];
        let ItemEnum::Variant(v) = &item.inner else {
            unreachable!()
        };
        let name = item.name.clone().unwrap_or_default();
        let marks = if item.attrs.contains(&Attribute::NonExhaustive) {
            "#[non_exhaustive] "
        } else {
            ""
        };
        let shape = match &v.kind {
            VariantKind::Plain => String::new(),
            VariantKind::Tuple(fields) => {
                let fields: Vec<String> = (fields.iter())
                    .map(|f| f.as_ref().map_or("_".into(), |f| self.field_type(f)))
                    .collect();
                format!("({})", fields.join(", "))
            }
            VariantKind::Struct { fields, .. } => {
                let fields: Vec<String> = (fields.iter())
                    .map(|f| {
                        let name = self.krate().index[f].name.clone().unwrap_or_default();
                        format!("{name}: {}", self.field_type(f))
                    })
                    .collect();
                format!(" {{ {} }}", fields.join(", "))
            }
        };
        self.lines
            .insert(format!("{marks}pub {path}::{name}{shape}"));
    }

    fn field_type(&self, id: &Id) -> String {
        match &self.krate().index[id].inner {
            ItemEnum::StructField(ty) => self.ty(ty),
            _ => unreachable!(),
        }
    }

    /// The methods of a type's own impls, and the traits it implements (not those every type
    /// gets from the compiler or a blanket impl).
    fn impls(&mut self, impls: &[Id], path: &str) {
        for id in impls {
            let ItemEnum::Impl(i) = &self.krate().index[id].inner else {
                continue;
            };
            if i.is_synthetic || i.blanket_impl.is_some() {
                continue;
            }
            match &i.trait_ {
                Some(t) => {
                    let not = if i.is_negative { "!" } else { "" };
                    let line = format!("impl {not}{} for {}", self.path(t), self.ty(&i.for_));
                    self.lines.insert(line);
                }
                None => {
                    for member in &i.items {
                        let item = &self.krate().index[member];
                        if item.visibility != Visibility::Public {
                            continue;
                        }
                        self.methods += 1;
                        let name = item.name.clone().unwrap_or_default();
                        let line = self.member(item, &format!("{path}::{name}"));
                        self.lines.insert(line);
                    }
                }
            }
        }
    }

    /// A function, method or associated item.
    fn member(&self, item: &Item, path: &str) -> String {
        match &item.inner {
            ItemEnum::Function(_) => self.function(item, path),
            ItemEnum::AssocConst { type_, .. } => format!("pub const {path}: {}", self.ty(type_)),
            ItemEnum::AssocType { type_, .. } => match type_ {
                Some(ty) => format!("type {path} = {}", self.ty(ty)),
                None => format!("type {path}"),
            },
            other => panic!("{path}: a member this listing does not know: {other:?}"),
        }
    }

    fn function(&self, item: &Item, path: &str) -> String {
        let ItemEnum::Function(f) = &item.inner else {
            unreachable!()
        };
        let inputs: Vec<String> = (f.sig.inputs.iter())
            .map(|(name, ty)| match (name.as_str(), ty) {
                ("self", Type::Generic(s)) if s == "Self" => "self".to_owned(),
                ("self", Type::BorrowedRef { is_mutable, .. }) => {
                    format!("&{}self", if *is_mutable { "mut " } else { "" })
                }
                _ => format!("{name}: {}", self.ty(ty)),
            })
            .collect();
        let output = f
            .sig
            .output
            .as_ref()
            .map_or_else(String::new, |o| format!(" -> {}", self.ty(o)));
        let konst = if f.header.is_const { "const " } else { "" };
        format!(
            "pub {konst}fn {path}{}({}){output}{}",
            self.generics(&f.generics),
            inputs.join(", "),
            self.wheres(&f.generics)
        )
    }

    fn generics(&self, g: &Generics) -> String {
        let params: Vec<String> = (g.params.iter())
            .filter(|p| {
                !matches!(
                    p.kind,
                    GenericParamDefKind::Type {
                        is_synthetic: true,
                        ..
                    }
                )
            })
            .map(|p| self.param(p))
            .collect();
        if params.is_empty() {
            String::new()
        } else {
            format!("<{}>", params.join(", "))
        }
    }

    fn param(&self, p: &GenericParamDef) -> String {
        match &p.kind {
            GenericParamDefKind::Lifetime { outlives } if outlives.is_empty() => p.name.clone(),
            GenericParamDefKind::Lifetime { outlives } => {
                format!("{}: {}", p.name, outlives.join(" + "))
            }
            GenericParamDefKind::Type { bounds, .. } if bounds.is_empty() => p.name.clone(),
            GenericParamDefKind::Type { bounds, .. } => {
                format!("{}: {}", p.name, self.bounds(bounds))
            }
            GenericParamDefKind::Const { type_, .. } => {
                format!("const {}: {}", p.name, self.ty(type_))
            }
        }
    }

    fn wheres(&self, g: &Generics) -> String {
        let predicates: Vec<String> = (g.where_predicates.iter())
            .map(|w| match w {
                WherePredicate::BoundPredicate { type_, bounds, .. } => {
                    format!("{}: {}", self.ty(type_), self.bounds(bounds))
                }
                WherePredicate::LifetimePredicate { lifetime, outlives } => {
                    format!("{lifetime}: {}", outlives.join(" + "))
                }
                WherePredicate::EqPredicate { lhs, rhs } => {
                    format!("{} = {}", self.ty(lhs), self.term(rhs))
                }
            })
            .collect();
        if predicates.is_empty() {
            String::new()
        } else {
            format!(" where {}", predicates.join(", "))
        }
    }

    fn bounds(&self, bounds: &[GenericBound]) -> String {
        let bounds: Vec<String> = (bounds.iter())
            .map(|b| match b {
                GenericBound::TraitBound { trait_, .. } => self.path(trait_),
                GenericBound::Outlives(lifetime) => lifetime.clone(),
                GenericBound::Use(_) => "use<..>".to_owned(),
            })
            .collect();
        bounds.join(" + ")
    }

    fn term(&self, t: &Term) -> String {
        match t {
            Term::Type(ty) => self.ty(ty),
            Term::Constant(c) => c.expr.clone(),
        }
    }

    /// A path, by where a user reaches it: the path the listing reached it at, else the path
    /// rustdoc knows it by.
    fn path(&self, p: &Path) -> String {
        let name = (self.known.get(&p.id).cloned())
            .or_else(|| (self.krate().paths.get(&p.id)).map(|s| s.path.join("::")))
            .unwrap_or_else(|| p.path.clone());
        let args = p.args.as_deref().map_or_else(String::new, |a| self.args(a));
        format!("{name}{args}")
    }

    fn args(&self, a: &GenericArgs) -> String {
        match a {
            GenericArgs::AngleBracketed { args, constraints } => {
                let mut all: Vec<String> = (args.iter())
                    .map(|a| match a {
                        GenericArg::Lifetime(l) => l.clone(),
                        GenericArg::Type(t) => self.ty(t),
                        GenericArg::Const(c) => c.expr.clone(),
                        GenericArg::Infer => "_".to_owned(),
                    })
                    .collect();
                all.extend(constraints.iter().map(|c| match &c.binding {
                    rustdoc_types::AssocItemConstraintKind::Equality(t) => {
                        format!("{} = {}", c.name, self.term(t))
                    }
                    rustdoc_types::AssocItemConstraintKind::Constraint(b) => {
                        format!("{}: {}", c.name, self.bounds(b))
                    }
                }));
                if all.is_empty() {
                    String::new()
                } else {
                    format!("<{}>", all.join(", "))
                }
            }
            GenericArgs::Parenthesized { inputs, output } => {
                let inputs: Vec<String> = inputs.iter().map(|t| self.ty(t)).collect();
                let output = output
                    .as_ref()
                    .map_or_else(String::new, |o| format!(" -> {}", self.ty(o)));
                format!("({}){output}", inputs.join(", "))
            }
            GenericArgs::ReturnTypeNotation => "(..)".to_owned(),
        }
    }

    fn ty(&self, t: &Type) -> String {
        match t {
            Type::ResolvedPath(p) => self.path(p),
            Type::DynTrait(d) => {
                let mut parts: Vec<String> =
                    d.traits.iter().map(|t| self.path(&t.trait_)).collect();
                parts.extend(d.lifetime.clone());
                format!("dyn {}", parts.join(" + "))
            }
            Type::Generic(name) | Type::Primitive(name) => name.clone(),
            Type::FunctionPointer(f) => {
                let inputs: Vec<String> = f.sig.inputs.iter().map(|(_, t)| self.ty(t)).collect();
                let output = (f.sig.output.as_ref())
                    .map_or_else(String::new, |o| format!(" -> {}", self.ty(o)));
                format!("fn({}){output}", inputs.join(", "))
            }
            Type::Tuple(types) => {
                let types: Vec<String> = types.iter().map(|t| self.ty(t)).collect();
                format!("({})", types.join(", "))
            }
            Type::Slice(t) => format!("[{}]", self.ty(t)),
            Type::Array { type_, len } => format!("[{}; {len}]", self.ty(type_)),
            Type::Pat { type_, .. } => self.ty(type_),
            Type::ImplTrait(bounds) => format!("impl {}", self.bounds(bounds)),
            Type::Infer => "_".to_owned(),
            Type::RawPointer { is_mutable, type_ } => {
                let kind = if *is_mutable { "mut" } else { "const" };
                format!("*{kind} {}", self.ty(type_))
            }
            Type::BorrowedRef {
                lifetime,
                is_mutable,
                type_,
            } => {
                let lifetime = lifetime
                    .as_ref()
                    .map_or_else(String::new, |l| format!("{l} "));
                let m = if *is_mutable { "mut " } else { "" };
                format!("&{lifetime}{m}{}", self.ty(type_))
            }
            Type::QualifiedPath {
                name,
                self_type,
                trait_,
                ..
            } => match trait_ {
                Some(t) => format!("<{} as {}>::{name}", self.ty(self_type), self.path(t)),
                None => format!("{}::{name}", self.ty(self_type)),
            },
        }
    }
}

/// The listing of `krate`: its header of counts, then its lines.
fn listing(krate: &Crate) -> String {
    let walk = |known| {
        let mut listing = Listing {
            krate: Some(krate),
            known,
            ..Listing::default()
        };
        listing.paths.insert(krate.root, "bpflog".to_owned());
        listing.module(&krate.root, "bpflog", true);
        listing
    };
    let listing = walk(walk(HashMap::new()).paths);
    let mut text = format!(
        "# The public API of the bpflog library (tests/public_api.rs; \
         BPFLOG_BLESS=1 cargo test --test public_api rewrites it).\n\
         # {} named items ({} at the crate root), {} public fields, {} methods, \
         {} #[non_exhaustive] types or variants\n",
        listing.named, listing.root, listing.fields, listing.methods, listing.non_exhaustive
    );
    for line in &listing.lines {
        text.push_str(line);
        text.push('\n');
    }
    text
}

#[test]
fn the_public_api_is_the_listed_one() {
    let listed = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/bpflog/public-api.txt");
    let now = listing(&rustdoc_json());
    if std::env::var_os("BPFLOG_BLESS").is_some() {
        std::fs::write(&listed, &now).unwrap();
        return;
    }
    let before = std::fs::read_to_string(&listed).unwrap_or_default();
    if before != now {
        let before: BTreeSet<&str> = before.lines().collect();
        let after: BTreeSet<&str> = now.lines().collect();
        let gone: Vec<&&str> = before.difference(&after).collect();
        let new: Vec<&&str> = after.difference(&before).collect();
        panic!(
            "the public API is not the one crates/bpflog/public-api.txt lists:\n\
             gone: {gone:#?}\nnew: {new:#?}\n\
             if the change is meant, `BPFLOG_BLESS=1 cargo test --test public_api` rewrites \
             the file: commit it with the change"
        );
    }
}
