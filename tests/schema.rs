//! The JSON Schemas `nodedown schema` prints: the copies in schema/ are current, every shipped
//! experiment and every recorded results.json validates against them, and broken input does
//! not.

use std::path::Path;
use std::process::Command;

fn printed(which: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_nodedown"))
        .args(["schema", which])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn yaml(text: &str) -> serde_json::Value {
    serde_saphyr::from_str(text).unwrap()
}

/// `schema/*.json` (what the experiments' `yaml-language-server` lines point editors at) is what
/// this nodedown prints; regenerate with `nodedown schema experiment > schema/experiment.json`.
#[test]
fn the_schema_files_are_current() {
    for which in ["experiment", "results", "sheet"] {
        let file = root().join(format!("schema/{which}.json"));
        let stored: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert!(
            stored == printed(which),
            "{} is stale: run `nodedown schema {which} > schema/{which}.json`",
            file.display()
        );
    }
}

#[test]
fn every_shipped_experiment_validates_and_points_editors_at_the_schema() {
    let validator = jsonschema::validator_for(&printed("experiment")).unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(root().join("experiments")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# yaml-language-server: $schema=../schema/experiment.json\n"),
            "{}: first line",
            path.display()
        );
        let errors: Vec<String> = validator
            .iter_errors(&yaml(&text))
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
        n += 1;
    }
    assert!(n >= 10, "{n} experiments");
}

#[test]
fn broken_experiments_do_not_validate() {
    let validator = jsonschema::validator_for(&printed("experiment")).unwrap();
    let base = "name: x\nworkload: {kind: ledger}\nfault: {kind: node-shutdown, target: {nodeOf: ledger-0}}\n";
    assert!(validator.is_valid(&yaml(base)));
    for bad in [
        "timeouts: {recovery: 2 minutes}\n",
        "remediation: {kind: force-delete}\n",
        "workload: {kind: ledger, accesMode: ReadWriteOnce}\n",
        "expect: {recovered: yes please}\n",
    ] {
        let text = if bad.starts_with("workload") {
            base.replace("workload: {kind: ledger}\n", bad)
        } else {
            format!("{base}{bad}")
        };
        assert!(!validator.is_valid(&yaml(&text)), "{bad}");
    }
}

#[test]
fn every_recorded_results_json_validates() {
    let validator = jsonschema::validator_for(&printed("results")).unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(root().join("tests/fixtures/runs")).unwrap() {
        let file = entry.unwrap().path().join("results.json");
        if !file.is_file() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", file.display());
        n += 1;
    }
    assert!(n >= 5);
    // And a results.json with a verdict nobody defined does not.
    let mut bad: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("tests/fixtures/runs/node-shutdown/results.json"))
            .unwrap(),
    )
    .unwrap();
    bad["experiments"][0]["runs"][0]["verdict"] = "probably".into();
    assert!(!validator.is_valid(&bad));
}
