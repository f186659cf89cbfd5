//! The GitHub Action (action.yml) and the project's workflows pass actionlint, which also checks
//! the inputs the workflows give the local action against action.yml. No GitHub runner can be
//! reached from here: this is the check they get. actionlint must be installed (scripts/test
//! installs it from the Go module proxy into the testenv cache); a missing one is a failure.

use std::path::PathBuf;
use std::process::Command;

fn actionlint() -> PathBuf {
    if let Some(p) = std::env::var_os("NODEDOWN_ACTIONLINT") {
        return p.into();
    }
    let cache = std::env::var("NODEDOWN_CACHE").unwrap_or_else(|_| "/var/cache/nodedown".into());
    PathBuf::from(cache).join("actionlint-v1.7.12/actionlint")
}

#[test]
fn workflows_and_action_pass_actionlint() {
    let bin = actionlint();
    let out = Command::new(&bin)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("-no-color")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "actionlint at {} ({e}); run scripts/test to install it",
                bin.display()
            )
        });
    assert!(
        out.status.success(),
        "actionlint:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // It did look at the workflow that uses the action.
    let listed = Command::new(&bin)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["-verbose", "-no-color"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listed.stderr);
    assert!(
        text.contains("ci.yml"),
        "actionlint saw the workflow: {text}"
    );
    // The workflow tests/act.rs executes with act is linted too, and the documented matrix of
    // clusters for `nodedown bundle run`.
    for file in ["tests/act/smoke.yml", "docs/examples/qualify-matrix.yml"] {
        let linted = Command::new(&bin)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["-no-color", file])
            .output()
            .unwrap();
        assert!(
            linted.status.success(),
            "actionlint {file}:\n{}",
            String::from_utf8_lossy(&linted.stdout)
        );
    }
}

/// A broken input name is caught (the check can fail).
#[test]
fn a_wrong_action_input_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/action.yml"),
        root.join("action.yml"),
    )
    .unwrap();
    std::fs::write(
        root.join(".github/workflows/bad.yml"),
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - uses: ./\n        with:\n          experiment: x.yaml\n",
    )
    .unwrap();
    // actionlint finds a project by its git repository.
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(root)
        .status()
        .unwrap();
    assert!(init.success());
    let out = Command::new(actionlint())
        .current_dir(root)
        .arg("-no-color")
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "the misspelt input `experiment` is reported"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("experiment"));
}
