//! The library's modules are layered as ARCHITECTURE.md's table says: no module of the `bpflog`
//! crate names a module of a higher layer in its code, and no modules of the library or of the
//! command import one another in a circle. Every line of production code is read (comments,
//! the insides of literals and what `#[cfg(test)]` marks aside, wherever it stands); a path is
//! followed to the module it names: `crate::`, `super::` and `self::` paths, `use` groups, and a
//! name a module imports, re-exports included (`crate::Program` is `program`'s). A new import
//! that runs upwards or closes a circle, or a module missing from the table, fails here.

use std::collections::{BTreeMap, BTreeSet};
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

/// A source text's production code, as two texts of the same lines: with every comment gone
/// and the insides of string and character literals blanked (for reading paths and brackets),
/// and with the literals as written; in both, every item or statement under `#[cfg(test)]` is
/// left out, wherever it stands in the file.
fn production_code(text: &str) -> (String, String) {
    let written: Vec<char> = text.chars().collect();
    let (code, literals) = blanked(&written);
    let mut keep = vec![true; code.len()];
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + marker.len() <= code.len() {
        if code[i..].starts_with(&marker) {
            let end = item_end(&code, i + marker.len());
            keep[i..end].iter_mut().for_each(|k| *k = false);
            i = end;
        } else {
            i += 1;
        }
    }
    let kept = |chars: &[char]| -> String {
        (chars.iter().zip(&keep))
            .map(|(&c, &k)| if k || c == '\n' { c } else { ' ' })
            .collect()
    };
    (kept(&code), kept(&literals))
}

/// Where the item or statement that starts at `code[i]` ends (its other attributes included):
/// after the `;` that ends it or the `}` that closes its block, outside any bracket.
fn item_end(code: &[char], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < code.len() {
        match code[i] {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' => depth -= 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            ';' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// `text` with its comments (line, block, nested, docs) as spaces, twice: with the insides of
/// its string, raw string and character literals as spaces too, so that no bracket, `;` or path
/// inside them counts; and with the literals as written. Line ends stay where they are.
fn blanked(text: &[char]) -> (Vec<char>, Vec<char>) {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut code = text.to_vec();
    let mut literals = text.to_vec();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        let to = to.min(out.len());
        for c in &mut out[from..to] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        let next = text.get(i + 1).copied();
        let before = i.checked_sub(1).map(|b| text[b]);
        let start = i;
        if c == '/' && next == Some('/') {
            while i < text.len() && text[i] != '\n' {
                i += 1;
            }
            blank(&mut code, start, i);
            blank(&mut literals, start, i);
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < text.len() {
                if text[i..].starts_with(&['/', '*']) {
                    depth += 1;
                    i += 2;
                } else if text[i..].starts_with(&['*', '/']) {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            blank(&mut code, start, i);
            blank(&mut literals, start, i);
        } else if c == 'r'
            && matches!(next, Some('"' | '#'))
            && (before.is_none_or(|b| !ident(b))
                || (before == Some('b') && (i < 2 || !ident(text[i - 2]))))
            && text[i + 1..].iter().find(|&&h| h != '#') == Some(&'"')
        {
            // A raw string: `r"…"`, `r#"…"#`, `br"…"`.
            let hashes = text[i + 1..].iter().take_while(|&&h| h == '#').count();
            i += 2 + hashes;
            let body = i;
            while i < text.len()
                && !(text[i] == '"'
                    && text[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes)
            {
                i += 1;
            }
            blank(&mut code, body, i);
            i += 1 + hashes;
        } else if c == '"' {
            i += 1;
            while i < text.len() && text[i] != '"' {
                i += if text[i] == '\\' { 2 } else { 1 };
            }
            blank(&mut code, start + 1, i);
            i += 1;
        } else if c == '\'' && (next == Some('\\') || text.get(i + 2) == Some(&'\'')) {
            // A character literal (a lifetime has no closing quote after one character).
            i += 1;
            while i < text.len() && text[i] != '\'' {
                i += if text[i] == '\\' { 2 } else { 1 };
            }
            blank(&mut code, start + 1, i);
            i += 1;
        } else {
            i += 1;
        }
    }
    (code, literals)
}

/// The paths a piece of code names from a module: each starting at `crate`, `super` or `self`
/// (or, with `bare`, at any name: a `use` declaration's paths), `use` groups expanded into one
/// path per item (`self` in a group is the group's own path; `a as b` is `a`). Each comes with
/// the name it is known by where it is imported (the last segment, or the `as` name).
fn paths(code: &str, bare: bool) -> Vec<(Vec<String>, String)> {
    let chars: Vec<char> = code.chars().collect();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !ident(chars[i]) || (i > 0 && (ident(chars[i - 1]) || chars[i - 1] == '$')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && ident(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        let anchored = matches!(word.as_str(), "crate" | "super" | "self");
        if (anchored || bare) && chars[i..].starts_with(&[':', ':']) {
            i = path_rest(&chars, i, vec![word], &mut found);
        } else if bare && anchored {
            found.push((vec![word.clone()], word));
        }
    }
    found
}

/// Reads the rest of a path from `chars[i]` (at `::`, or after its last segment) given the
/// segments read so far; pushes every full path it ends in; returns where it stops.
fn path_rest(
    chars: &[char],
    mut i: usize,
    mut segments: Vec<String>,
    found: &mut Vec<(Vec<String>, String)>,
) -> usize {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let skip_space = |mut i: usize| {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        if !chars[i..].starts_with(&[':', ':']) {
            break;
        }
        i = skip_space(i + 2);
        if chars.get(i) == Some(&'{') {
            i += 1;
            loop {
                i = skip_space(i);
                match chars.get(i) {
                    None => return i,
                    Some('}') => return i + 1,
                    Some(',') => i += 1,
                    Some(_) => {
                        let start = i;
                        while i < chars.len() && (ident(chars[i]) || chars[i] == '*') {
                            i += 1;
                        }
                        let word: String = chars[start..i].iter().collect();
                        if word.is_empty() {
                            i += 1;
                            continue;
                        }
                        let mut inner = segments.clone();
                        if word != "self" {
                            inner.push(word);
                        }
                        i = path_rest(chars, i, inner, found);
                    }
                }
            }
        }
        let start = i;
        while i < chars.len() && (ident(chars[i]) || chars[i] == '*') {
            i += 1;
        }
        if start == i {
            break;
        }
        segments.push(chars[start..i].iter().collect());
    }
    let mut name = segments.last().cloned().unwrap_or_default();
    let after = skip_space(i);
    if chars[after..].starts_with(&['a', 's', ' ']) {
        let start = skip_space(after + 2);
        let mut end = start;
        while end < chars.len() && ident(chars[end]) {
            end += 1;
        }
        name = chars[start..end].iter().collect();
        i = end;
    }
    found.push((segments, name));
    i
}

/// A crate's modules, each by its path (`annotate::writer`; the root is `crate`), and the
/// modules each one's production code names.
struct Modules {
    /// Module to the modules it imports: the modules its paths lead to (not itself nor a module
    /// it is inside of, whose items are its surroundings), and the modules it declares.
    imports: BTreeMap<String, BTreeSet<String>>,
}

/// The module of a file of a crate whose root file is `root` (`lib.rs`, `main.rs`): `x.rs`
/// and `x/mod.rs` are `[x]`, `x/y.rs` is `[x, y]`.
fn module_path(relative: &Path, root: &str) -> Vec<String> {
    let mut path: Vec<String> = relative
        .iter()
        .map(|p| p.to_str().unwrap().trim_end_matches(".rs").to_owned())
        .collect();
    if path.last().is_some_and(|l| l == "mod") || path == [root.trim_end_matches(".rs")] {
        path.pop();
    }
    path
}

fn name(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_owned()
    } else {
        module.join("::")
    }
}

/// The `use` declarations of a piece of code, each up to its `;`.
fn use_declarations(code: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = code.len() - rest.len() + at;
        let starts = code[..before]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || c == ')' || c == ';' || c == '{' || c == '}');
        rest = &rest[at + "use ".len()..];
        if starts {
            found.push(&rest[..rest.find(';').unwrap_or(rest.len())]);
        }
    }
    found
}

/// A path as written in `module` made absolute (from the crate root), or `None` for a path
/// outside the crate.
fn absolute(
    path: &[String],
    module: &[String],
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let mut at = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        child => {
            let mut at = module.to_vec();
            at.push(child.to_owned());
            if !modules.contains(&at) {
                return None;
            }
            at
        }
    };
    let mut rest = rest;
    while let Some(("super", more)) = rest.split_first().map(|(s, m)| (s.as_str(), m)) {
        at.pop()?;
        rest = more;
    }
    at.extend(rest.iter().cloned());
    Some(at)
}

/// The module an absolute path leads to: its longest prefix that is a module, through the names
/// that module imports (or re-exports) when the path goes on with one.
fn target(
    mut path: Vec<String>,
    modules: &BTreeSet<Vec<String>>,
    names: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
) -> Vec<String> {
    for _ in 0..16 {
        let len = (0..=path.len())
            .rev()
            .find(|&n| modules.contains(&path[..n]))
            .unwrap_or(0);
        let module = &path[..len];
        let Some(through) = path
            .get(len)
            .and_then(|next| names.get(module)?.get(next))
            .filter(|through| through[..] != path[..through.len().min(path.len())])
        else {
            return module.to_vec();
        };
        let mut next = through.clone();
        next.extend(path[len + 1..].iter().cloned());
        path = next;
    }
    panic!("{} names itself through imports", name(&path));
}

/// The modules of the crate whose sources are under `src` and whose root file is `root`.
fn modules(src: &Path, root: &str) -> Modules {
    let mut files = Vec::new();
    sources(src, &mut files);
    let code: BTreeMap<Vec<String>, String> = files
        .iter()
        .map(|file| {
            let module = module_path(file.strip_prefix(src).unwrap(), root);
            let (code, _) = production_code(&std::fs::read_to_string(file).unwrap());
            (module, code)
        })
        .collect();
    let modules: BTreeSet<Vec<String>> = code.keys().cloned().collect();
    // What each module's `use` declarations bring in, by the name they are known by there.
    let mut names: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (module, code) in &code {
        for declaration in use_declarations(code) {
            for (path, known_as) in paths(declaration, true) {
                if let Some(path) = absolute(&path, module, &modules) {
                    names
                        .entry(module.clone())
                        .or_default()
                        .insert(known_as, path);
                }
            }
        }
    }
    let mut imports: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in &code {
        let named = imports.entry(name(module)).or_default();
        for child in modules
            .iter()
            .filter(|m| m.len() == module.len() + 1 && m.starts_with(module))
        {
            named.insert(name(child));
        }
        for (path, _) in paths(code, false) {
            let Some(path) = absolute(&path, module, &modules) else {
                continue;
            };
            let to = target(path, &modules, &names);
            if !module.starts_with(&to) {
                named.insert(name(&to));
            }
        }
    }
    Modules { imports }
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

/// The library's imports that run upwards in ARCHITECTURE.md's table of layers, as messages.
fn upward_imports(root: &Path) -> Vec<String> {
    let layers = layers(&std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap());
    let library = modules(&root.join("crates/bpflog/src"), "lib.rs");
    let layer = |module: &str| -> Option<(String, u32)> {
        let top = module.split("::").next().unwrap();
        if top == "crate" {
            return None;
        }
        let layer = layers
            .get(top)
            .unwrap_or_else(|| panic!("{top} is not in ARCHITECTURE.md's table of layers"));
        Some((top.to_owned(), *layer))
    };
    let mut upwards = Vec::new();
    for (module, named) in &library.imports {
        let Some((_, below)) = layer(module) else {
            continue;
        };
        for to in named {
            if let Some((top, above)) = layer(to).filter(|&(_, l)| l > below) {
                upwards.push(format!(
                    "{module} (layer {below}) names {to} ({top}: layer {above})"
                ));
            }
        }
    }
    upwards
}

#[test]
fn no_library_module_imports_one_above_it() {
    let upwards = upward_imports(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(upwards.is_empty(), "{upwards:#?}");
}

#[test]
fn the_librarys_modules_import_one_another_without_a_circle() {
    // Modules of one layer, and the modules inside a folder (`annotate/writer.rs` and
    // `annotate/rich_keys.rs`), may import one another, but not both ways round.
    let library = modules(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/bpflog/src"),
        "lib.rs",
    );
    assert!(library.imports["annotate::writer"].contains("annotate::rich_keys"));
    assert_eq!(circle(&library.imports), None, "{:#?}", library.imports);
}

#[test]
fn the_reader_of_code_reads_every_production_line() {
    let text = "use crate::a::X; // crate::b::Y\n/* crate::c::{ */ let s = \"crate::d::Z {\";\n\
                #[cfg(test)]\nfn hook() { if x { crate::e::f(); } }\nfn g() {\n    \
                #[cfg(test)]\n    crate::f::g(|w| { w; });\n    let c = '{';\n    crate::h::i();\n}\n\
                #[cfg(test)]\nmod tests {\n    use crate::j::K;\n}\nuse super::{super::k, l::M as N};\n\
                let r = r#\"crate::m::n\"#;\nuse crate::o::P;\n";
    let (code, written) = production_code(text);
    assert_eq!(code.lines().count(), text.lines().count());
    let found: Vec<(String, String)> = paths(&code, false)
        .into_iter()
        .map(|(path, known_as)| (path.join("::"), known_as))
        .collect();
    let expected = [
        ("crate::a::X", "X"),
        ("crate::h::i", "i"),
        ("super::super::k", "k"),
        ("super::l::M", "N"),
        ("crate::o::P", "P"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(p, n)| (p.to_string(), n.to_string()))
        .collect();
    assert_eq!(found, expected);
    assert!(written.contains("'{'") && written.contains("\"crate::d::Z {\""));
    assert!(!written.contains("hook") && !written.contains("crate::f::g"));
}

#[test]
fn a_path_is_followed_to_the_module_it_names() {
    let modules: BTreeSet<Vec<String>> = [&[][..], &["a"], &["a", "b"], &["a", "c"], &["d"]]
        .iter()
        .map(|m| m.iter().map(|s| s.to_string()).collect())
        .collect();
    let path = |p: &str| -> Vec<String> { p.split("::").map(str::to_owned).collect() };
    let in_b = path("a::b");
    let from = |p: &str, m: &[String]| absolute(&path(p), m, &modules);
    assert_eq!(from("super::c::X", &in_b), Some(path("a::c::X")));
    assert_eq!(from("super::super::d::f", &in_b), Some(path("d::f")));
    assert_eq!(from("self::Y", &in_b), Some(path("a::b::Y")));
    assert_eq!(from("c::Z", &path("a")), Some(path("a::c::Z")));
    assert_eq!(from("std::io", &in_b), None);
    // `crate::X` where the root re-exports `d::X`, and `a`'s `use` of it.
    let mut names: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    names
        .entry(vec![])
        .or_default()
        .insert("X".into(), path("d::X"));
    names
        .entry(path("a"))
        .or_default()
        .insert("W".into(), path("X"));
    assert_eq!(target(path("X"), &modules, &names), path("d"));
    assert_eq!(target(path("a::W"), &modules, &names), path("d"));
    assert_eq!(target(path("a::b::V"), &modules, &names), path("a::b"));
}

/// A circle of imports among `imports`' modules, as the path around it, if there is one.
fn circle(imports: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    /// Depth first from `module`: `path` holds the modules being visited, `done` those whose
    /// imports are all visited.
    fn visit(
        module: &str,
        imports: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
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
    let mut done = BTreeSet::new();
    imports
        .keys()
        .find_map(|m| visit(m, imports, &mut Vec::new(), &mut done))
}

#[test]
fn the_commands_modules_import_one_another_without_a_circle() {
    // Each subcommand's arguments are beside its code; the argument groups they share are in a
    // module that imports none of them (`args.rs`); the command line as a whole is the root's.
    let command = modules(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/cli"),
        "main.rs",
    );
    assert!(command.imports["annotate"].contains("args"));
    assert!(
        command.imports["args"].is_empty(),
        "args imports {:?}",
        command.imports["args"]
    );
    assert_eq!(circle(&command.imports), None, "{:#?}", command.imports);
}

#[test]
fn a_circle_of_imports_is_found() {
    let imports = |pairs: &[(&str, &[&str])]| -> BTreeMap<String, BTreeSet<String>> {
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
            let (_, written) = production_code(&std::fs::read_to_string(file).unwrap());
            written.contains("b'\\n'")
        })
        .map(|file| file.strip_prefix(&cli).unwrap().display().to_string())
        .collect();
    splitting.sort();
    assert_eq!(splitting, ["spool.rs"]);
}

/// Lines of production code of a source text: not blank once comments and what `#[cfg(test)]`
/// marks are left out.
fn code_lines(text: &str) -> usize {
    let (code, _) = production_code(text);
    code.lines().filter(|l| !l.trim().is_empty()).count()
}

#[test]
fn no_source_file_holds_more_than_a_thousand_lines_of_code() {
    // A file that grows past this splits by concern (`select/`), so that a reader finds each
    // concern by a file's name.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "crates/bpflog/src",
        "crates/object/src",
        "crates/log/src",
        "crates/cli",
    ] {
        sources(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50);
    let mut long: Vec<(usize, String)> = files
        .iter()
        .map(|file| {
            let lines = code_lines(&std::fs::read_to_string(file).unwrap());
            (
                lines,
                file.strip_prefix(root).unwrap().display().to_string(),
            )
        })
        .filter(|(lines, _)| *lines > 1000)
        .collect();
    long.sort();
    assert_eq!(long, [], "files over 1,000 lines of code");
}

#[test]
fn lines_of_code_leave_out_comments_blanks_and_tests() {
    let text = "//! A module.\n\nfn a() {\n    // why\n    b();\n}\n/* a\n block */\n\
                #[cfg(test)]\nmod tests {\n    fn t() {}\n}\nfn c() {}\n";
    assert_eq!(code_lines(text), 4);
}

/// The lines (from 1) of the `#[cfg(test)]` marks of a source text that stand inside a
/// function's body: a test's hook in production code. A mark on a whole item outside any body
/// (a test module, a function or an import for tests) is none, and what it marks is passed over.
fn test_marks_in_bodies(text: &str) -> Vec<usize> {
    let written: Vec<char> = text.chars().collect();
    let (code, _) = blanked(&written);
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let line = |i: usize| code[..i].iter().filter(|&&c| c == '\n').count() + 1;
    let mut found = Vec::new();
    // Per open brace, whether it is inside a function's body (opens one, or one holds it) ...
    let mut bodies: Vec<bool> = Vec::new();
    // ... and where the text before the next brace starts.
    let mut head = 0;
    let mut i = 0;
    while i < code.len() {
        if code[i..].starts_with(&marker) {
            if bodies.last() == Some(&true) {
                found.push(line(i));
                i += marker.len();
            } else {
                i = item_end(&code, i + marker.len());
                head = i;
            }
            continue;
        }
        match code[i] {
            '{' => {
                let words: String = code[head..i].iter().collect();
                let fn_head =
                    (words.split(|c: char| !c.is_alphanumeric() && c != '_')).any(|w| w == "fn");
                bodies.push(bodies.last() == Some(&true) || fn_head);
                head = i + 1;
            }
            '}' => {
                bodies.pop();
                head = i + 1;
            }
            ';' => head = i + 1,
            _ => {}
        }
        i += 1;
    }
    found
}

#[test]
fn the_annotator_holds_no_test_hook_in_a_production_function() {
    // What the tests count of the annotator's work (lines classified, locations found, rich
    // lines put together) is counted by wrappers built for them, which the tests put in place
    // of the real functions, not by lines of its functions' bodies.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/bpflog/src");
    let mut files = vec![src.join("writing.rs"), src.join("sink.rs")];
    sources(&src.join("annotate"), &mut files);
    assert!(files.len() > 6);
    let hooks: Vec<String> = (files.iter())
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let name = file.strip_prefix(&src).unwrap().display().to_string();
            (test_marks_in_bodies(&text).into_iter()).map(move |l| format!("{name}:{l}"))
        })
        .collect();
    assert_eq!(
        hooks,
        Vec::<String>::new(),
        "test hooks in production functions"
    );
}

#[test]
fn a_test_mark_in_a_body_is_found() {
    let text = "fn a() {\n    #[cfg(test)]\n    hook();\n    let s = \"{\";\n}\n\
                #[cfg(test)]\nmod tests {\n    fn t() {\n        #[cfg(test)]\n        x();\n    }\n}\n\
                impl A {\n    #[cfg(test)]\n    fn b() {}\n    fn c() { if d { #[cfg(test)] e(); } }\n}\n";
    assert_eq!(test_marks_in_bodies(text), [2, 16]);
}
