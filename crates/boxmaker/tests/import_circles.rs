//! No two files of a crate import each other (issue 33): a circle between files is a sign
//! that a type lives in the wrong one, and it makes a reader hold both to understand either.
//!
//! This reads every crate's `src/` as text (no build), resolves each path a file names —
//! `crate::…`, `super::…`, `self::…`, and a submodule it declares (`child::…`) — to the file
//! of the deepest module it reaches, and fails listing every strongly connected set of files
//! with the paths that tie them. A file may name its own ancestors — the crate root (`lib.rs`,
//! `main.rs`: the table of contents and re-exports) and the `mod.rs` that declares it (which
//! holds what its files share, e.g. the type their `impl` blocks extend): that is not a
//! circle. Comments and a file's `#[cfg(test)] mod tests` are not read.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A file's module path, from the crate root (`[]` for the root).
type Module = Vec<String>;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut m: Module = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(m.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        m.pop();
    }
    m
}

/// The code of a file without its comments and its test module.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut prev_cfg_test = false;
    for line in text.lines() {
        let t = line.trim();
        if prev_cfg_test && (t.starts_with("mod tests") || t.starts_with("pub(crate) mod tests")) {
            break;
        }
        if !t.is_empty() {
            prev_cfg_test = t == "#[cfg(test)]";
        }
        let line = match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        };
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Every path of the code (`a::b::c`), use trees flattened (`a::{b, c::d}` gives `a::b`
/// and `a::c::d`), with the line it is on.
fn paths(code: &str) -> Vec<(Vec<String>, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    // The prefix each open brace adds (`Some` after `path::{`), innermost last.
    let mut braces: Vec<Option<Vec<String>>> = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '"' {
            // a string: skipped whole
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == '}' {
            braces.pop();
            i += 1;
        } else if c == '{' {
            braces.push(None);
            i += 1;
        } else if ident(c) && (i == 0 || !ident(chars[i - 1])) {
            let mut segs = Vec::new();
            loop {
                let start = i;
                while i < chars.len() && ident(chars[i]) {
                    i += 1;
                }
                segs.push(chars[start..i].iter().collect::<String>());
                if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
                    i += 2;
                    if chars.get(i).is_some_and(|&c| ident(c)) {
                        continue;
                    }
                    if chars.get(i) == Some(&'{') {
                        braces.push(Some(segs));
                        i += 1;
                    }
                    break;
                }
                let mut full = group_prefix(&braces);
                full.extend(segs);
                out.push((full, line));
                break;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The prefix of a path inside nested use groups: the run of groups at the top of the stack.
fn group_prefix(braces: &[Option<Vec<String>>]) -> Vec<String> {
    let run: Vec<&Vec<String>> = braces.iter().rev().map_while(|b| b.as_ref()).collect();
    run.into_iter().rev().flatten().cloned().collect()
}

/// The module `path` names from `module` (whose file declares `children`), if it is one of
/// the crate's own.
fn absolute(module: &Module, children: &BTreeSet<String>, path: &[String]) -> Option<Module> {
    let first = path.first()?.as_str();
    match first {
        "crate" => Some(path[1..].to_vec()),
        "self" => Some(module.iter().chain(&path[1..]).cloned().collect()),
        "super" => {
            let mut m = module.clone();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                m.pop()?;
                rest = &rest[1..];
            }
            m.extend(rest.iter().cloned());
            Some(m)
        }
        c if children.contains(c) && path.len() > 1 => {
            Some(module.iter().chain(path).cloned().collect())
        }
        _ => None,
    }
}

#[derive(Default)]
struct Graph {
    /// `(from, to)` → the first line of `from` that names `to`, and the path it names.
    edges: BTreeMap<(Module, Module), (usize, String)>,
    files: BTreeMap<Module, PathBuf>,
}

fn graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut g = Graph::default();
    for f in &files {
        g.files.insert(module_of(src, f), f.clone());
    }
    for (module, file) in &g.files.clone() {
        if module.is_empty() {
            continue;
        }
        let text = code(&std::fs::read_to_string(file).unwrap());
        let children: BTreeSet<String> = text
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                let l = l.strip_prefix("pub ").unwrap_or(l);
                let l = l.strip_prefix("pub(crate) ").unwrap_or(l);
                l.strip_prefix("mod ")?
                    .strip_suffix(';')
                    .map(str::to_string)
            })
            .collect();
        for (path, line) in paths(&text) {
            let Some(mut abs) = absolute(module, &children, &path) else {
                continue;
            };
            // the deepest module of the crate the path reaches; a module may name its own
            // ancestors (the module that declares it and holds what its files share)
            while !abs.is_empty() && !g.files.contains_key(&abs) {
                abs.pop();
            }
            if module.starts_with(&abs) {
                continue;
            }
            g.edges
                .entry((module.clone(), abs))
                .or_insert((line, path.join("::")));
        }
    }
    g
}

/// The strongly connected sets of more than one file (Tarjan's algorithm).
fn circles(g: &Graph) -> Vec<Vec<Module>> {
    let nodes: Vec<&Module> = g.files.keys().collect();
    let index_of: BTreeMap<&Module, usize> =
        nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut adj = vec![Vec::new(); nodes.len()];
    for (a, b) in g.edges.keys() {
        adj[index_of[a]].push(index_of[b]);
    }
    struct T<'a> {
        adj: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(t: &mut T, v: usize) {
        t.index[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on[v] = true;
        for &w in &t.adj[v].clone() {
            match t.index[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(iw) if t.on[w] => t.low[v] = t.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(t.low[v]) == t.index[v] {
            let mut set = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on[w] = false;
                set.push(w);
                if w == v {
                    break;
                }
            }
            if set.len() > 1 {
                t.out.push(set);
            }
        }
    }
    let mut t = T {
        adj: &adj,
        index: vec![None; nodes.len()],
        low: vec![0; nodes.len()],
        on: vec![false; nodes.len()],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..nodes.len() {
        if t.index[v].is_none() {
            visit(&mut t, v);
        }
    }
    t.out
        .into_iter()
        .map(|s| {
            let mut s: Vec<Module> = s.into_iter().map(|i| nodes[i].clone()).collect();
            s.sort();
            s
        })
        .collect()
}

fn report(root: &Path, g: &Graph, set: &[Module]) -> String {
    let mut s = String::new();
    for (a, b) in g.edges.keys() {
        if set.contains(a) && set.contains(b) {
            let (line, path) = &g.edges[&(a.clone(), b.clone())];
            let fa = g.files[a].strip_prefix(root).unwrap().display().to_string();
            let fb = g.files[b].strip_prefix(root).unwrap().display().to_string();
            s.push_str(&format!("  {fa}:{line} names {path} ({fb})\n"));
        }
    }
    s
}

/// The circles left, each with why it is not a type in the wrong file. The check fails on
/// any other, and on one of these once it is gone (take it off the list).
const KNOWN: &[(&str, &[&str], &str)] = &[
    (
        "gate",
        &[
            "anchor",
            "anchor::checkpoint",
            "anchor::key",
            "anchor::tree",
            "anchor::verify",
            "anchor::witness",
            "audit",
        ],
        "the log keeps the anchor's tree and checks each append against the checkpoints it \
         knows (audit names anchor), and the anchor reads and starts logs (anchor names \
         audit): ending it means moving the checks out of AuditLog, a change to the code \
         that keeps the log's promises, not a move",
    ),
    (
        "mcpclient",
        &["oauth", "oauth::flow", "remote"],
        "a sign-in's requests go through the remote client (every request one egress \
         decision; the oauth2 crate's requests too, through flow's Via), and the remote \
         client carries the sign-in of the server it talks to",
    ),
    (
        "policy",
        &["condition", "provenance", "typed"],
        "a condition holds the provenance and typed tests it runs, and each test reads the \
         condition's context: one language split by topic",
    ),
    (
        "runner",
        &["digest", "downstream", "run"],
        "the Runner's methods are split by topic (digest.rs, downstream/) and name the \
         Runner, whose state (the hub) run.rs holds: one type, its impl blocks in several files",
    ),
    (
        "sandbox",
        &["child", "helper"],
        "the box's init and the helper that starts it share one handshake (sandbox: unsafe, \
         left as it is)",
    ),
    (
        "sandbox",
        &["pool", "run"],
        "the zygote pool and the helper it forks share the helper's modes (sandbox: unsafe, \
         left as it is)",
    ),
];

#[test]
fn no_two_files_of_a_crate_import_each_other() {
    let root = workspace();
    let mut found = String::new();
    let mut seen = BTreeSet::new();
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    crates.sort();
    for krate in crates {
        let name = krate.file_name().unwrap().to_string_lossy().into_owned();
        let g = graph(&krate.join("src"));
        for set in circles(&g) {
            let files: Vec<String> = set.iter().map(|m| m.join("::")).collect();
            let known = KNOWN.iter().position(|(c, f, _)| {
                *c == name && f.iter().copied().eq(files.iter().map(String::as_str))
            });
            if let Some(i) = known {
                seen.insert(i);
                continue;
            }
            found.push_str(&format!("a circle in {name}:\n{}", report(&root, &g, &set)));
        }
    }
    for (i, (c, f, _)) in KNOWN.iter().enumerate() {
        if !seen.contains(&i) {
            found.push_str(&format!(
                "the known circle of {c} ({}) is gone or changed: take it off KNOWN\n",
                f.join(", ")
            ));
        }
    }
    assert!(
        found.is_empty(),
        "files of a crate import each other; move the type they share to the one file that \
         owns it:\n{found}"
    );
}

#[test]
fn the_check_sees_a_circle_through_use_groups_super_and_children() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("d")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a; mod b; mod d;").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::{x, b::{B, C}};\n").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "// use crate::a::A; (a comment)\nfn f() { let s = \"crate::a\"; crate::a::A::new(); }\n",
    )
    .unwrap();
    std::fs::write(src.join("d/mod.rs"), "mod e;\nmod f;\nuse e::E;\n").unwrap();
    std::fs::write(
        src.join("d/e.rs"),
        "pub struct E(super::D, super::f::F);\n#[cfg(test)]\nmod tests { use crate::a::A; }\n",
    )
    .unwrap();
    std::fs::write(src.join("d/f.rs"), "pub struct F(super::e::E);\n").unwrap();
    let g = graph(&src);
    let mut found = circles(&g);
    found.sort();
    let m = |s: &str| -> Module { s.split("::").map(str::to_string).collect() };
    assert_eq!(
        found,
        vec![vec![m("a"), m("b")], vec![m("d::e"), m("d::f")]]
    );
    assert!(
        !g.edges.contains_key(&(m("d::e"), m("a"))),
        "a test module is not read"
    );
    assert!(g.edges.contains_key(&(m("d"), m("d::e"))));
    assert!(
        !g.edges.contains_key(&(m("d::e"), m("d"))),
        "a file may name the module that declares it"
    );
}
