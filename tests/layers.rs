//! The layering of the crate, checked: a pure module never reaches the effectful edge (neither
//! a module of nodedown's edge nor kube, tokio, Docker, processes or the clock), each layer
//! imports only itself and the layers below (pure < store < edge < runner < cli: nothing below
//! imports `cli`, nothing but `cli` imports `runner`), and the top-level modules form no cycle.
//! Each violation is named with its file and line.
//!
//! Production code only: each file is read up to its first `#[cfg(test)]` (tests may use
//! fixtures across layers).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom up. A module may import its own layer and the layers below it.
const LAYERS: [(&str, &[&str]); 5] = [
    (
        "pure",
        &[
            "vocab",
            "outcome",
            "units",
            "jsonl",
            "spec",
            "plan",
            "timeline",
            "integrity",
            "verdict",
            "report",
        ],
    ),
    // Reads a run directory back into the pure model (files only).
    ("store", &["store"]),
    (
        "edge",
        &[
            "cluster",
            "faults",
            "journal",
            "observe",
            "remediation",
            "workload",
        ],
    ),
    ("runner", &["runner"]),
    ("cli", &["cli"]),
];

/// What a pure module (and `store`) must not name: the effectful world.
const EFFECTS: [&str; 8] = [
    "kube::",
    "k8s_openapi::",
    "tokio::",
    "bollard::",
    "std::process",
    "SystemTime::now",
    "Instant::now",
    "std::net::",
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, ms)| ms.contains(&module))
}

/// One `crate::x` reference: in file, at line, to module.
#[derive(Debug, Clone)]
struct Use {
    file: PathBuf,
    line: usize,
    from: String,
    to: String,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module of a file below `src`: `src/<m>.rs` or `src/<m>/...`.
fn top_module(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The production part of a file, line by line (cut at its first `#[cfg(test)]`), without
/// comments.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let cut = text.find("#[cfg(test)]").unwrap_or(text.len());
    text[..cut]
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let code = match l.find("//") {
                Some(at) => &l[..at],
                None => l,
            };
            (i + 1, code.to_string())
        })
        .collect()
}

/// Every `crate::<module>` a line names.
fn crate_refs(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        let tail = &rest[at + "crate::".len()..];
        let name: String = tail
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
            .collect();
        // `nodedown_crate::` or `$crate::` are not this crate's paths.
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') && !name.is_empty()
        {
            out.push(name);
        }
        rest = tail;
    }
    out
}

struct Crate {
    src: PathBuf,
    modules: BTreeSet<String>,
    uses: Vec<Use>,
    /// (file, line, what) for each effect a pure or store module names.
    effects: Vec<(PathBuf, usize, String, &'static str)>,
}

fn read_crate(src: &Path) -> Crate {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut modules = BTreeSet::new();
    let mut uses = Vec::new();
    let mut effects = Vec::new();
    for file in &files {
        let from = top_module(src, file);
        if from == "main" || from == "lib" {
            continue;
        }
        modules.insert(from.clone());
        let text = std::fs::read_to_string(file).unwrap();
        let pure = layer_of(&from).is_some_and(|l| l <= 1);
        for (line, code) in code_lines(&text) {
            for to in crate_refs(&code) {
                if to != from {
                    uses.push(Use {
                        file: file.clone(),
                        line,
                        from: from.clone(),
                        to,
                    });
                }
            }
            if pure {
                for e in EFFECTS {
                    if code.contains(e) {
                        effects.push((file.clone(), line, from.clone(), e));
                    }
                }
            }
        }
    }
    Crate {
        src: src.to_path_buf(),
        modules,
        uses,
        effects,
    }
}

/// The violations of the layering in a crate's `src`, one line each.
fn violations(src: &Path) -> Vec<String> {
    let c = read_crate(src);
    let mut out = Vec::new();
    for m in &c.modules {
        if layer_of(m).is_none() {
            out.push(format!(
                "{}: module `{m}` is in no layer: add it to tests/layers.rs LAYERS",
                c.src.join(format!("{m}.rs")).display()
            ));
        }
    }
    for u in &c.uses {
        let (Some(from), Some(to)) = (layer_of(&u.from), layer_of(&u.to)) else {
            continue;
        };
        if to > from {
            out.push(format!(
                "{}:{}: `{}` ({}) imports `{}` ({}): a lower layer may not import a higher one",
                u.file.display(),
                u.line,
                u.from,
                LAYERS[from].0,
                u.to,
                LAYERS[to].0
            ));
        }
    }
    for (file, line, module, effect) in &c.effects {
        out.push(format!(
            "{}:{line}: `{module}` is pure but names `{effect}`",
            file.display()
        ));
    }
    // Cycles among top-level modules: every edge that closes one is named.
    let mut edges: BTreeMap<&str, BTreeMap<&str, &Use>> = BTreeMap::new();
    for u in &c.uses {
        if c.modules.contains(&u.to) {
            edges
                .entry(u.from.as_str())
                .or_default()
                .entry(u.to.as_str())
                .or_insert(u);
        }
    }
    let reaches = |from: &str, to: &str| -> bool {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(m) = stack.pop() {
            if m == to {
                return true;
            }
            if seen.insert(m) {
                stack.extend(edges.get(m).into_iter().flat_map(|e| e.keys().copied()));
            }
        }
        false
    };
    for (from, tos) in &edges {
        for (to, u) in tos {
            if reaches(to, from) {
                out.push(format!(
                    "{}:{}: `{from}` imports `{to}`, and `{to}` reaches `{from}` back: an import cycle",
                    u.file.display(),
                    u.line
                ));
            }
        }
    }
    out
}

#[test]
fn the_crate_keeps_its_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let v = violations(&src);
    assert!(v.is_empty(), "{} violation(s):\n{}", v.len(), v.join("\n"));
}

/// The check can fail: a copy of `src` with a cycle, an edge import in a pure module and a
/// `cli` import from below added on purpose is refused, each named with its file and line.
#[test]
fn the_check_names_a_cycle_and_a_wrong_import_added_on_purpose() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    for f in &files {
        let to = copy.join(f.strip_prefix(&src).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(f, &to).unwrap();
    }
    let append = |rel: &str, text: &str| {
        let p = copy.join(rel);
        let mut s = std::fs::read_to_string(&p).unwrap();
        // Before any test module, so that it counts as production code.
        let at = s.find("#[cfg(test)]").unwrap_or(s.len());
        s.insert_str(at, text);
        std::fs::write(&p, s).unwrap();
    };
    // cluster -> faults while faults -> cluster: a cycle within the edge.
    append(
        "cluster/mod.rs",
        "\npub fn added_on_purpose() -> crate::faults::Backend { crate::faults::Backend::Docker }\n",
    );
    // A pure module reaching the edge.
    append(
        "verdict/mod.rs",
        "\npub const ADDED: &str = crate::workload::ATTACH_CLASS;\n",
    );
    // The runner importing the command line.
    append(
        "runner/progress.rs",
        "\npub const ADDED_EXIT: u8 = crate::cli::EXIT_OK;\n",
    );
    let v = violations(&copy);
    let joined = v.join("\n");
    assert!(
        v.iter().any(|l| l.contains("cluster/mod.rs:")
            && l.contains("`cluster` imports `faults`")
            && l.contains("import cycle")),
        "{joined}"
    );
    assert!(
        v.iter().any(|l| l.contains("verdict/mod.rs:")
            && l.contains("`verdict` (pure) imports `workload` (edge)")),
        "{joined}"
    );
    assert!(
        v.iter()
            .any(|l| l.contains("runner/progress.rs:") && l.contains("imports `cli` (cli)")),
        "{joined}"
    );
    // And nothing else: every line is about one of the three imports added.
    for l in &v {
        assert!(
            [
                "`cluster`",
                "`faults`",
                "`verdict`",
                "`workload`",
                "`runner`",
                "`cli`"
            ]
            .iter()
            .filter(|m| l.contains(*m))
            .count()
                == 2,
            "{l}"
        );
    }
}
