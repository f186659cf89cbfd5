//! The Helm chart (charts/nodedown) with the real helm (helm.sh/helm/v4 from the Go module
//! proxy, built by scripts/test): it lints, and what it renders is what nodedown needs — the
//! RBAC of deploy/rbac.yaml for the release, the experiments in a ConfigMap, a CronJob on the
//! schedule or a Job without one, the runner's node from the downward API — and it refuses to
//! render without an image. Installing it into testenv and running through it is in
//! tests/e2e.rs.

use std::path::{Path, PathBuf};
use std::process::Command;

fn helm() -> Command {
    let bin = std::env::var_os("NODEDOWN_HELM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/nodedown/helm-v4.3.2/helm"));
    assert!(
        bin.is_file(),
        "{} missing: scripts/test installs it (go install helm.sh/helm/v4/cmd/helm@v4.3.2), or set NODEDOWN_HELM",
        bin.display()
    );
    let mut c = Command::new(bin);
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn docs(text: &str) -> Vec<serde_json::Value> {
    text.split("\n---\n")
        .map(|d| serde_saphyr::from_str::<serde_json::Value>(d).unwrap())
        .filter(|d| !d.is_null())
        .collect()
}

fn template(sets: &[&str]) -> std::process::Output {
    let mut c = helm();
    c.args(["template", "nd", "charts/nodedown", "--namespace", "chaos"]);
    for s in sets {
        c.args(["--set", s]);
    }
    c.output().unwrap()
}

#[test]
fn the_chart_lints_and_renders_what_nodedown_needs() {
    let lint = helm()
        .args([
            "lint",
            "charts/nodedown",
            "--set",
            "image.repository=r/nodedown,image.tag=1",
        ])
        .output()
        .unwrap();
    assert!(
        lint.status.success(),
        "{}{}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
    let out = template(&["image.repository=r/nodedown", "image.tag=1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = docs(&String::from_utf8(out.stdout).unwrap());
    let kind = |k: &str| {
        rendered
            .iter()
            .find(|d| d["kind"] == k)
            .unwrap_or_else(|| panic!("no {k}"))
    };
    // The release's RBAC: the ClusterRole's rules are deploy/rbac.yaml's.
    let shipped = docs(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/rbac.yaml"))
            .unwrap(),
    );
    let shipped_role = shipped.iter().find(|d| d["kind"] == "ClusterRole").unwrap();
    assert_eq!(kind("ClusterRole")["rules"], shipped_role["rules"]);
    assert_eq!(kind("ClusterRole")["metadata"]["name"], "chaos-nd");
    assert_eq!(kind("ServiceAccount")["metadata"]["namespace"], "chaos");
    assert_eq!(kind("ClusterRoleBinding")["subjects"][0]["name"], "nd");
    assert_eq!(kind("Role")["metadata"]["namespace"], "default");
    // The experiments, parsed as nodedown parses them.
    let data = kind("ConfigMap")["data"].as_object().unwrap();
    for (file, text) in data {
        nodedown::spec::parse_str(text.as_str().unwrap(), Path::new(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
    }
    // A CronJob on the schedule, its pod as the release's ServiceAccount, the runner's node from
    // the downward API, the image also the workload's.
    let cron = kind("CronJob");
    assert_eq!(cron["spec"]["schedule"], "0 3 * * *");
    let pod = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "nd");
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "r/nodedown:1");
    let env = c["env"].as_array().unwrap();
    assert!(env.iter().any(|e| e["name"] == "NODEDOWN_RUNNER_NODE"
        && e["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"));
    assert!(env
        .iter()
        .any(|e| e["name"] == "NODEDOWN_WORKLOAD_IMAGE" && e["value"] == "r/nodedown:1"));
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        &args[..6],
        [
            "run",
            "/experiments",
            "--context",
            "in-cluster",
            "--allow-context",
            "in-cluster"
        ]
    );
    // No schedule: one Job; a Pushgateway and power hooks reach the pod's environment.
    let out = template(&[
        "image.repository=r/nodedown",
        "image.tag=1",
        "schedule=",
        "metrics.pushgateway=http://pgw:9091",
        "powerHooks.secretName=hooks",
        "results.persistentVolumeClaim=keep",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = docs(&String::from_utf8(out.stdout).unwrap());
    assert!(rendered.iter().all(|d| d["kind"] != "CronJob"));
    let job = rendered.iter().find(|d| d["kind"] == "Job").unwrap();
    let pod = &job["spec"]["template"]["spec"];
    let env = pod["containers"][0]["env"].as_array().unwrap();
    assert!(env
        .iter()
        .any(|e| e["name"] == "NODEDOWN_PUSHGATEWAY" && e["value"] == "http://pgw:9091"));
    assert!(env
        .iter()
        .any(|e| e["name"] == "NODEDOWN_POWER_OFF"
            && e["valueFrom"]["secretKeyRef"]["name"] == "hooks"));
    assert_eq!(
        pod["volumes"][1]["persistentVolumeClaim"]["claimName"],
        "keep"
    );
    // Without an image: refused, saying what to give.
    let out = template(&[]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("image.repository is required"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
