//! The library's modules are layered as ARCHITECTURE.md's table says: no module of the `bpflog`
//! crate names a module of a higher layer in its code (`crate::name`, also inside
//! `use crate::{...}`; doc links and unit tests aside). A new import that runs upwards, or a
//! module missing from the table, fails here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Module name (a file's stem, or a folder's name) to its layer, from the table's rows:
/// `| 7 | `explain/` | ...` and `| 1 | `escape.rs`, `style.rs` | ...`.
fn layers(architecture: &str) -> BTreeMap<String, u32> {
    let mut layers = BTreeMap::new();
    for row in architecture.lines() {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let [_, layer, modules, ..] = cells[..] else {
            continue;
        };
        let Ok(layer) = layer.parse::<u32>() else {
            continue;
        };
        for name in modules.split(',') {
            let name = name.trim().trim_matches('`');
            let name = name.trim_end_matches(".rs").trim_end_matches('/');
            layers.insert(name.to_owned(), layer);
        }
    }
    layers
}

/// The module names a source text names after `crate::` (single paths and `use crate::{...}`
/// groups, nested braces included).
fn named_modules(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The group up to its closing brace: every path in it starts at the crate root.
            let mut depth = 1;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(group.len(), |(i, _)| i);
            let mut level = 0;
            let mut item = String::new();
            for c in group[..end].chars() {
                match c {
                    '{' => level += 1,
                    '}' => level -= 1,
                    ',' if level == 0 => names.push(std::mem::take(&mut item)),
                    c if level == 0 => item.push(c),
                    _ => {}
                }
            }
            names.push(item);
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(rest.len());
            names.push(rest[..end].to_owned());
        }
    }
    names
        .into_iter()
        .filter_map(|item| {
            let (module, _) = item.trim().split_once("::")?;
            Some(module.to_owned())
        })
        .collect()
}

/// Every `.rs` file below `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_library_module_imports_one_above_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let layers = layers(&std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap());
    let src = root.join("crates/bpflog/src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut upwards = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        let module = relative.components().next().unwrap().as_os_str();
        let module = module.to_str().unwrap().trim_end_matches(".rs");
        if module == "lib" {
            continue;
        }
        let layer = *layers
            .get(module)
            .unwrap_or_else(|| panic!("{module} is not in ARCHITECTURE.md's table of layers"));
        let text = std::fs::read_to_string(&file).unwrap();
        // Code only: not the docs' links, not the unit tests (at the end of a file).
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for named in named_modules(&code) {
            if let Some(&above) = layers.get(&named).filter(|&&l| l > layer) {
                upwards.push(format!(
                    "{} (layer {layer}) names {named} (layer {above})",
                    relative.display()
                ));
            }
        }
    }
    assert!(upwards.is_empty(), "{upwards:#?}");
}

#[test]
fn the_reader_of_imports_sees_groups_and_paths() {
    let text = "use crate::diagnostic::Report;\nuse crate::{Program, sink::{Observer, decode}, \
                style::Palette};\nlet x = crate::explain::write(a);";
    assert_eq!(
        named_modules(text),
        ["diagnostic", "sink", "style", "explain"]
    );
}

/// The modules of the command (`crates/cli`) each import: module name (a file's stem, or a
/// folder's name) to the modules of the command it names in its code (`crate::name`, doc links
/// and unit tests aside). The crate root, `main.rs`, is left out: it declares every module, and
/// what the modules take from it are its items (`crate::Failure`), not modules.
fn cli_imports(root: &Path) -> BTreeMap<String, Vec<String>> {
    let cli = root.join("crates/cli");
    let mut files = Vec::new();
    sources(&cli, &mut files);
    let mut imports: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&cli).unwrap();
        let module = relative.components().next().unwrap().as_os_str();
        let module = module.to_str().unwrap().trim_end_matches(".rs").to_owned();
        imports.entry(module).or_default();
    }
    for file in files {
        let relative = file.strip_prefix(&cli).unwrap();
        let module = relative.components().next().unwrap().as_os_str();
        let module = module.to_str().unwrap().trim_end_matches(".rs");
        if module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut named: Vec<String> = named_modules(&code)
            .into_iter()
            .filter(|n| n != module && imports.contains_key(n))
            .collect();
        named.sort();
        named.dedup();
        imports.get_mut(module).unwrap().extend(named);
    }
    imports
}

/// A circle of imports among `imports`' modules, as the path around it, if there is one.
fn circle(imports: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    /// Depth first from `module`: `path` holds the modules being visited, `done` those whose
    /// imports are all visited.
    fn visit(
        module: &str,
        imports: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| m == module) {
            let mut around = path[at..].to_vec();
            around.push(module.to_owned());
            return Some(around);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_owned());
        for next in imports.get(module).into_iter().flatten() {
            if let Some(around) = visit(next, imports, path, done) {
                return Some(around);
            }
        }
        path.pop();
        done.insert(module.to_owned());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    imports
        .keys()
        .find_map(|m| visit(m, imports, &mut Vec::new(), &mut done))
}

#[test]
fn the_commands_modules_import_one_another_without_a_circle() {
    // Each subcommand's arguments are beside its code; the argument groups they share are in a
    // module that imports none of them (`args.rs`); the command line as a whole is the root's.
    let imports = cli_imports(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(imports.contains_key("args") && imports.contains_key("annotate"));
    assert!(
        imports["args"].is_empty(),
        "args imports {:?}",
        imports["args"]
    );
    assert_eq!(circle(&imports), None, "{imports:#?}");
}

#[test]
fn a_circle_of_imports_is_found() {
    let imports = |pairs: &[(&str, &[&str])]| -> BTreeMap<String, Vec<String>> {
        (pairs.iter())
            .map(|(m, to)| (m.to_string(), to.iter().map(|t| t.to_string()).collect()))
            .collect()
    };
    let chain = imports(&[("a", &["b"]), ("b", &["c"]), ("c", &[])]);
    assert_eq!(circle(&chain), None);
    let around = imports(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]);
    assert_eq!(circle(&around).unwrap(), ["a", "b", "c", "a"]);
}

#[test]
fn the_command_splits_no_log_into_lines_itself() {
    // Lines are found by the library's one loop (`sink::read_into`): the command looks for no
    // line end, but where it copies a piped log (`spool.rs`, which bounds a line's length as it
    // copies, before any line is read).
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/cli");
    let mut files = Vec::new();
    sources(&cli, &mut files);
    let mut splitting: Vec<String> = files
        .iter()
        .filter(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            code.lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .any(|l| l.contains("b'\\n'"))
        })
        .map(|file| file.strip_prefix(&cli).unwrap().display().to_string())
        .collect();
    splitting.sort();
    assert_eq!(splitting, ["spool.rs"]);
}
