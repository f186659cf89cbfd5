//! The conformance-style bundle (`nodedown bundle run`): `nodedown qualify` run as a Job inside
//! the cluster it qualifies, in the spirit of a Sonobuoy plugin — the objects it needs, built
//! here as values (pure; the effects are in `cluster::bundle` and `cli::bundle`).
//!
//! The Job's one container is nodedown's own image. It runs `nodedown bundle job`, which runs the
//! qualification as a child process (its output is the pod log), writes the child's exit code
//! next to the results, turns the pod Ready (`nodedown bundle ready` is the readiness probe) and
//! holds the results until the caller has fetched them (`nodedown bundle tar` through the
//! API server's exec: the image has no shell and no tar) or `--hold` runs out.

use serde_json::{json, Value};
use std::path::{Component, Path};
use std::time::Duration;

/// The Job (and the prefix of its pod's name).
pub const JOB: &str = "nodedown-qualify";
/// The ConfigMap holding the files the qualification reads (the testdriver file, a FromFile
/// manifest).
pub const INPUTS: &str = "nodedown-inputs";
/// Where the results are written in the pod (an emptyDir).
pub const RESULTS_DIR: &str = "/results";
/// Where the input files are mounted in the pod.
pub const INPUTS_DIR: &str = "/inputs";
/// Below the results: the qualification's own directory (`qualify --out`).
pub const QUALIFICATION_DIR: &str = "qualification";
/// Below the results: the qualification's exit code, written when it has ended.
pub const EXIT_CODE_FILE: &str = "exit-code";
/// Below the results: made when the caller has fetched them; the pod then ends.
pub const RETRIEVED_FILE: &str = ".retrieved";
/// The testdriver file's name below [`INPUTS_DIR`].
pub const TESTDRIVER_FILE: &str = "testdriver.yaml";
/// How long the pod may take to end after SIGTERM: the in-cluster qualification heals the
/// cluster in that time (a node back from a power-off, a kubelet restarted, a taint removed).
pub const GRACE: Duration = Duration::from_secs(600);
/// The flags `bundle run` gives the qualification itself; given after `--` they are refused.
pub const OWN_FLAGS: [&str; 5] = [
    "--context",
    "--allow-context",
    "--out",
    "--runner-node",
    "--testdriver",
];

/// A file the qualification reads, shipped in the ConfigMap: its path below [`INPUTS_DIR`]
/// (relative, no `..`) and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    pub path: String,
    pub text: String,
}

/// What `bundle run` deploys.
#[derive(Debug, Clone)]
pub struct BundlePlan {
    pub namespace: String,
    pub image: String,
    /// The arguments after `--`, for `nodedown qualify`.
    pub qualify_args: Vec<String>,
    /// The testdriver file first (at [`TESTDRIVER_FILE`]) when there is one.
    pub inputs: Vec<Input>,
    /// How long the pod keeps its results for the caller once the qualification ended.
    pub hold: Duration,
    /// Extra environment for the container (`--env NAME=VALUE`: power hooks, a Pushgateway).
    pub env: Vec<(String, String)>,
}

/// A path for a shipped file: relative and without `..`, as written (a FromFile manifest keeps
/// the path the testdriver file names it by). `Err` says why not.
pub fn input_path(written: &Path) -> Result<String, String> {
    let mut parts: Vec<String> = Vec::new();
    for c in written.components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::CurDir => {}
            _ => {
                return Err(format!(
                    "{}: the bundle ships the files the testdriver file names next to it; give a path relative to the testdriver file without `..`",
                    written.display()
                ))
            }
        }
    }
    if parts.is_empty() {
        return Err(format!("{}: not a file", written.display()));
    }
    Ok(parts.join("/"))
}

/// The first of [`OWN_FLAGS`] among the qualification's arguments (`--flag` or `--flag=…`).
pub fn own_flag(args: &[String]) -> Option<&'static str> {
    OWN_FLAGS.iter().copied().find(|f| {
        args.iter()
            .any(|a| a == f || a.starts_with(&format!("{f}=")))
    })
}

/// The container's arguments: `bundle job` around `qualify` in the cluster, its output below
/// the results, the testdriver file from the inputs.
pub fn container_args(plan: &BundlePlan) -> Vec<String> {
    let mut args: Vec<String> = [
        "bundle",
        "job",
        "--results",
        RESULTS_DIR,
        "--hold",
        &humantime::format_duration(plan.hold).to_string(),
        "--",
        "qualify",
        "--context",
        crate::vocab::IN_CLUSTER,
        "--allow-context",
        crate::vocab::IN_CLUSTER,
        "--out",
        &format!("{RESULTS_DIR}/{QUALIFICATION_DIR}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if plan.inputs.iter().any(|i| i.path == TESTDRIVER_FILE) {
        args.push("--testdriver".into());
        args.push(format!("{INPUTS_DIR}/{TESTDRIVER_FILE}"));
    }
    args.extend(plan.qualify_args.iter().cloned());
    args
}

/// The namespace, the ServiceAccount and its least-privilege RBAC (the same table as
/// deploy/rbac.yaml), the inputs' ConfigMap and the Job, in the order they are applied.
pub fn objects(plan: &BundlePlan) -> Vec<Value> {
    let ns = plan.namespace.as_str();
    let labels = json!({"app.kubernetes.io/managed-by": "nodedown", "app.kubernetes.io/component": "bundle"});
    let mut out: Vec<Value> = super::access::rbac_bundle_yaml(ns)
        .split("\n---\n")
        .filter(|d| d.lines().any(|l| l.starts_with("kind:")))
        .map(|d| serde_saphyr::from_str::<Value>(d).expect("the generated RBAC is YAML"))
        .collect();
    for o in out.iter_mut() {
        o["metadata"]["labels"] = labels.clone();
    }
    let data: serde_json::Map<String, Value> = plan
        .inputs
        .iter()
        .enumerate()
        .map(|(i, f)| (format!("f{i}"), Value::String(f.text.clone())))
        .collect();
    let items: Vec<Value> = plan
        .inputs
        .iter()
        .enumerate()
        .map(|(i, f)| json!({"key": format!("f{i}"), "path": f.path}))
        .collect();
    out.push(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": INPUTS, "namespace": ns, "labels": labels},
        "data": data,
    }));
    let mut env = vec![
        json!({"name": "NODEDOWN_RUNNER_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}),
        json!({"name": "NODEDOWN_WORKLOAD_IMAGE", "value": plan.image}),
    ];
    env.extend(plan.env.iter().map(|(k, v)| json!({"name": k, "value": v})));
    let nodedown = "/usr/local/bin/nodedown";
    out.push(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": JOB, "namespace": ns, "labels": labels},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "nodedown", "app.kubernetes.io/component": "bundle"}},
                "spec": {
                    "serviceAccountName": "nodedown",
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": GRACE.as_secs(),
                    "containers": [{
                        "name": "nodedown",
                        "image": plan.image,
                        "command": [nodedown],
                        "args": container_args(plan),
                        "workingDir": RESULTS_DIR,
                        "env": env,
                        "readinessProbe": {
                            "exec": {"command": [nodedown, "bundle", "ready", "--results", RESULTS_DIR]},
                            "periodSeconds": 2,
                        },
                        "volumeMounts": [
                            {"name": "inputs", "mountPath": INPUTS_DIR, "readOnly": true},
                            {"name": "results", "mountPath": RESULTS_DIR},
                        ],
                    }],
                    "volumes": [
                        {"name": "inputs", "configMap": {"name": INPUTS, "items": items}},
                        {"name": "results", "emptyDir": {}},
                    ],
                },
            },
        },
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> BundlePlan {
        BundlePlan {
            namespace: "nd-bundle".into(),
            image: "localhost/nodedown:abc".into(),
            qualify_args: vec!["--quick".into(), "--storage-class".into(), "x".into()],
            inputs: vec![
                Input {
                    path: TESTDRIVER_FILE.into(),
                    text: "DriverInfo: {Name: d}\n".into(),
                },
                Input {
                    path: "deploy/sc.yaml".into(),
                    text: "kind: StorageClass\n".into(),
                },
            ],
            hold: Duration::from_secs(3600),
            env: vec![("NODEDOWN_PUSHGATEWAY".into(), "http://pg:9091".into())],
        }
    }

    #[test]
    fn the_job_runs_qualify_in_the_cluster_below_the_results() {
        let args = container_args(&plan());
        let joined = args.join(" ");
        assert_eq!(
            joined,
            "bundle job --results /results --hold 1h -- qualify --context in-cluster --allow-context in-cluster --out /results/qualification --testdriver /inputs/testdriver.yaml --quick --storage-class x"
        );
    }

    #[test]
    fn objects_are_rbac_then_inputs_then_the_job_all_in_the_namespace() {
        let objs = objects(&plan());
        let kinds: Vec<&str> = objs.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds.first(), Some(&"Namespace"));
        assert_eq!(&kinds[kinds.len() - 2..], &["ConfigMap", "Job"]);
        assert!(kinds.contains(&"ClusterRole") && kinds.contains(&"ClusterRoleBinding"));
        let sa = objs.iter().find(|o| o["kind"] == "ServiceAccount").unwrap();
        assert_eq!(sa["metadata"]["namespace"], "nd-bundle");
        let binding = objs
            .iter()
            .find(|o| o["kind"] == "ClusterRoleBinding")
            .unwrap();
        assert_eq!(binding["subjects"][0]["namespace"], "nd-bundle");
        // Cluster-scoped names carry the namespace: two bundles in two namespaces do not meet.
        assert!(binding["metadata"]["name"]
            .as_str()
            .unwrap()
            .contains("nd-bundle"));
        let job = objs.last().unwrap();
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(pod["terminationGracePeriodSeconds"], 600);
        let c = &pod["containers"][0];
        assert_eq!(c["image"], "localhost/nodedown:abc");
        assert_eq!(c["readinessProbe"]["exec"]["command"][1], "bundle");
        let env: Vec<&str> = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            env,
            [
                "NODEDOWN_RUNNER_NODE",
                "NODEDOWN_WORKLOAD_IMAGE",
                "NODEDOWN_PUSHGATEWAY"
            ]
        );
        let cm = &objs[objs.len() - 2];
        assert_eq!(cm["data"]["f1"], "kind: StorageClass\n");
        assert_eq!(
            pod["volumes"][0]["configMap"]["items"][1],
            json!({"key": "f1", "path": "deploy/sc.yaml"})
        );
        for o in &objs {
            assert_eq!(
                o["metadata"]["labels"]["app.kubernetes.io/managed-by"],
                "nodedown"
            );
        }
    }

    #[test]
    fn shipped_paths_stay_below_the_inputs() {
        assert_eq!(
            input_path(Path::new("./deploy/sc.yaml")).unwrap(),
            "deploy/sc.yaml"
        );
        assert!(input_path(Path::new("../sc.yaml"))
            .unwrap_err()
            .contains("without `..`"));
        assert!(input_path(Path::new("/etc/sc.yaml")).is_err());
    }

    #[test]
    fn flags_the_bundle_sets_itself_are_found() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(own_flag(&a(&["--quick", "--out=x"])), Some("--out"));
        assert_eq!(own_flag(&a(&["--context", "c"])), Some("--context"));
        assert_eq!(own_flag(&a(&["--quick", "--outline"])), None);
    }
}
