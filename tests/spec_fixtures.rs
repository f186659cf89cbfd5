//! Every file in tests/fixtures/bad fails to load with the line, field and message listed in
//! tests/fixtures/bad/EXPECTED.tsv; every file in tests/fixtures/good loads.

use nodedown::spec::{load_file, load_paths, Provider, RemediationSpec, SpecError};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

struct Expected {
    file: String,
    line: usize,
    field: Option<String>,
    message: String,
}

fn expected() -> Vec<Expected> {
    let path = fixtures().join("bad/EXPECTED.tsv");
    let text = std::fs::read_to_string(&path).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(
                cols.len(),
                4,
                "{}: want file, line, field, message: {l:?}",
                path.display()
            );
            Expected {
                file: cols[0].to_string(),
                line: cols[1]
                    .parse()
                    .unwrap_or_else(|_| panic!("bad line number in {l:?}")),
                field: (cols[2] != "-").then(|| cols[2].to_string()),
                message: cols[3].to_string(),
            }
        })
        .collect()
}

fn yaml_files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
        .collect()
}

#[test]
fn expected_tsv_covers_every_bad_fixture() {
    let rows = expected();
    let listed: BTreeSet<String> = rows.iter().map(|r| r.file.clone()).collect();
    assert_eq!(
        listed.len(),
        rows.len(),
        "a file is listed twice in EXPECTED.tsv"
    );
    assert_eq!(
        listed,
        yaml_files(&fixtures().join("bad")),
        "EXPECTED.tsv and the bad fixtures differ"
    );
    assert!(rows.len() >= 15, "only {} bad fixtures", rows.len());
}

#[test]
fn every_bad_fixture_fails_where_expected() {
    let mut failures = Vec::new();
    for row in expected() {
        let path = fixtures().join("bad").join(&row.file);
        let err = match load_file(&path) {
            Ok(_) => {
                failures.push(format!("{}: loaded, but should fail", row.file));
                continue;
            }
            Err(err) => err,
        };
        let message = err.to_string();
        let mut problems = Vec::new();
        if err.line() != Some(row.line) {
            problems.push(format!("line {:?}, want {}", err.line(), row.line));
        }
        if err.field() != row.field.as_deref() {
            problems.push(format!("field {:?}, want {:?}", err.field(), row.field));
        }
        if !message.contains(&row.message) {
            problems.push(format!("message lacks {:?}", row.message));
        }
        let prefix = format!("{}:{}:", path.display(), row.line);
        if !message.starts_with(&prefix) {
            problems.push(format!("message does not start with {prefix:?}"));
        }
        if message.contains('\n') {
            problems.push("message spans several lines".to_string());
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{}: {}\n    got: {message}",
                row.file,
                problems.join("; ")
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn every_good_fixture_loads() {
    let dir = fixtures().join("good");
    let files = yaml_files(&dir);
    assert_eq!(files.len(), 3);
    for name in &files {
        if let Err(e) = load_file(&dir.join(name)) {
            panic!("{e}");
        }
    }

    let exp = load_file(&dir.join("node-shutdown.yaml")).unwrap();
    let variants: Vec<_> = exp.variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        variants,
        ["baseline", "oos-taint", "force-delete", "delete-node"]
    );
    let remediations: Vec<_> = exp
        .variants
        .iter()
        .map(|v| v.remediation.as_ref().unwrap().name())
        .collect();
    assert_eq!(
        remediations,
        [
            "none",
            "out-of-service-taint",
            "force-delete-pod",
            "delete-node"
        ]
    );
    assert_eq!(
        exp.variants[2].remediation,
        Some(RemediationSpec::ForceDeletePod {
            after: Duration::from_secs(30),
            fence: nodedown::spec::Fence::None,
        })
    );
    assert_eq!(exp.repeat, 3);

    let exp = load_file(&dir.join("existing-cluster.yaml")).unwrap();
    assert_eq!(exp.cluster.provider, Provider::Existing);
    assert_eq!(exp.timeouts.recovery, Duration::from_secs(600));
}

#[test]
fn load_paths_takes_directories_and_files() {
    let good = fixtures().join("good");
    let loaded = load_paths(std::slice::from_ref(&good)).unwrap();
    let files: Vec<_> = loaded
        .iter()
        .map(|(p, _)| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(
        files,
        [
            "existing-cluster.yaml",
            "minimal.yaml",
            "node-shutdown.yaml"
        ],
        "sorted by name"
    );
    assert!(
        loaded.iter().all(|(p, _)| p.starts_with(&good)),
        "paths as given, joined with the file name"
    );

    let loaded = load_paths(&[good.join("minimal.yaml")]).unwrap();
    assert_eq!(loaded[0].1.name, "minimal");

    // A directory with an invalid file fails with that file's error.
    let err = load_paths(&[fixtures().join("bad")]).unwrap_err();
    assert!(err.line().is_some(), "{err}");

    // A directory without *.yaml / *.yml files.
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("notes.txt"), "name: not-yaml\n").unwrap();
    let err = load_paths(&[empty.path().to_path_buf()]).unwrap_err();
    assert!(matches!(err, SpecError::NoFiles { .. }), "{err}");
}

#[test]
fn unreadable_files_name_the_path() {
    let missing = fixtures().join("bad/no-such-file.yaml");
    let err = load_file(&missing).unwrap_err();
    assert!(matches!(err, SpecError::Io { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with(&format!("{}: cannot read it", missing.display())),
        "{err}"
    );
    assert_eq!(err.line(), None);
    assert_eq!(err.field(), None);

    let err = load_paths(std::slice::from_ref(&missing)).unwrap_err();
    assert!(
        err.to_string().contains(&missing.display().to_string()),
        "{err}"
    );
}
