//! The Action executed, not only linted: act (github.com/nektos/act v0.2.89, which scripts/test
//! builds from the Go module proxy into the testenv cache) runs `tests/act/smoke.yml` with
//! GitHub's expression engine and composite-action semantics, in host mode
//! (`-P ubuntu-latest=-self-hosted`), against the testenv cluster. The job uses the Action as a
//! workflow does (`uses: ./`) and fails this test when one of the Action's inputs, outputs or
//! steps breaks: the outputs, the job summary and the uploaded run directory are all checked.
//!
//! GitHub's own actions cannot be fetched here; `--local-repository` maps them to stand-ins in
//! `tests/act/stand-ins/`:
//! - `actions/upload-artifact@v4`: copies the directory to `$NODEDOWN_ACT_ARTIFACTS/<name>/`;
//! - `actions/cache@v4` (used by the workflow's build job, not by this one): restores nothing.
//!
//! `actions/checkout@v4` without `repository`/`ref` is act's own: it copies the working tree.

use std::path::{Path, PathBuf};
use std::process::Command;

fn act() -> PathBuf {
    if let Some(p) = std::env::var_os("NODEDOWN_ACT") {
        return p.into();
    }
    let cache = std::env::var("NODEDOWN_CACHE").unwrap_or_else(|_| "/var/cache/nodedown".into());
    PathBuf::from(cache).join("act-v0.2.89/act")
}

fn cluster() -> String {
    std::env::var("NODEDOWN_TEST_CLUSTER").unwrap_or_else(|_| "nodedown".into())
}

/// The node image of the testenv cluster's control plane (what `kind` would need for the
/// Action's `node-image`; it is only inspected, never pulled).
fn node_image() -> String {
    let out = Command::new("docker")
        .args([
            "inspect",
            "--format",
            "{{.Config.Image}}",
            &format!("{}-control-plane", cluster()),
        ])
        .output()
        .expect("docker");
    assert!(out.status.success(), "the testenv cluster runs: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn the_action_runs_the_smoke_experiment_and_reports_through_its_outputs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let work = tempfile::tempdir().unwrap();
    let artifacts = work.path().join("artifacts");
    let outputs = work.path().join("outputs.txt");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_nodedown")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let stand_in = |action: &str, dir: &str| {
        format!(
            "{action}={}",
            root.join("tests/act/stand-ins").join(dir).display()
        )
    };
    let bin = act();
    let out = Command::new(&bin)
        .current_dir(root)
        .env("PATH", &path)
        .env("NODEDOWN_ACT_ARTIFACTS", &artifacts)
        .env("NODEDOWN_ACT_OUTPUTS", &outputs)
        .env("NODEDOWN_ACT_CLUSTER", cluster())
        .env("NODEDOWN_ACT_NODE_IMAGE", node_image())
        .args([
            "push",
            "--workflows",
            "tests/act/smoke.yml",
            "-P",
            "ubuntu-latest=-self-hosted",
            "--json",
            "--local-repository",
            &stand_in("actions/upload-artifact@v4", "upload-artifact"),
            "--local-repository",
            &stand_in("actions/cache@v4", "cache"),
            "--action-cache-path",
        ])
        .arg(work.path().join("act-cache"))
        // The workflow's `env` (the steps also inherit the host's environment in host mode).
        .arg("--env")
        .arg(format!("NODEDOWN_ACT_ARTIFACTS={}", artifacts.display()))
        .arg("--env")
        .arg(format!("NODEDOWN_ACT_OUTPUTS={}", outputs.display()))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "act at {} ({e}); run scripts/test to build it",
                bin.display()
            )
        });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let all: Vec<&str> = stdout.lines().collect();
    let tail = all[all.len().saturating_sub(60)..].join("\n");
    assert!(
        out.status.success(),
        "act failed ({}):\n{tail}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // act's JSON lines: every step of the Action ran and succeeded (a composite's own steps
    // are named in the message; `step` is the workflow step that uses the Action), and the job
    // succeeded.
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for step in [
        "Install nodedown",
        "Run experiments",
        "Heal the cluster",
        "Upload the run directory",
        "Verdict",
    ] {
        assert!(
            lines.iter().any(|l| l["stepResult"] == "success"
                && l["msg"]
                    .as_str()
                    .is_some_and(|m| m.contains(&format!("Success - Main {step}")))),
            "step {step:?} of the Action succeeded:\n{tail}"
        );
    }
    assert!(
        lines.iter().any(|l| l["jobResult"] == "success"),
        "the job succeeded:\n{tail}"
    );
    // The job summary the Action wrote: nodedown's Markdown summary.
    let summary: String = lines
        .iter()
        .filter(|l| l["command"] == "summary")
        .filter_map(|l| l["content"].as_str())
        .collect();
    assert!(
        summary.contains("nodedown: smoke") && summary.contains("smoke"),
        "job summary: {summary:?}"
    );
    // The Action's outputs, as the next step of the workflow saw them.
    let recorded = std::fs::read_to_string(&outputs).expect("the outputs step ran");
    let output = |name: &str| {
        recorded
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("output {name} in {recorded}"))
            .to_string()
    };
    assert_eq!(output("verdict"), "pass", "{recorded}");
    assert_eq!(output("run-dir"), "nodedown-act");
    assert_eq!(output("results-json"), "nodedown-act/results.json");
    assert_eq!(output("junit"), "nodedown-act/junit.xml");
    assert_eq!(output("summary-md"), "nodedown-act/summary.md");
    // What happened, beside the verdict: the smoke run came back, as expected.
    let outcome = output("outcome");
    assert!(
        outcome.starts_with("smoke/")
            && outcome.contains(": recovered in ")
            && outcome.contains("(as expected)"),
        "{recorded}"
    );
    // The uploaded run directory: the reports of a real run of the smoke experiment.
    let uploaded: Vec<PathBuf> = std::fs::read_dir(&artifacts)
        .expect("an artifact was uploaded")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(uploaded.len(), 1, "{uploaded:?}");
    let name = uploaded[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("nodedown-smoke-"), "artifact name {name}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(uploaded[0].join("results.json")).unwrap())
            .unwrap();
    let runs = results["experiments"][0]["runs"].as_array().unwrap();
    assert!(!runs.is_empty());
    assert!(runs.iter().all(|r| r["verdict"] == "pass"), "{results}");
    for file in ["junit.xml", "summary.md", "session.json"] {
        assert!(uploaded[0].join(file).is_file(), "{file} uploaded");
    }
}
