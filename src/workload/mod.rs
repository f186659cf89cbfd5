//! Workloads (effectful edge + pure manifests): the StatefulSet under test, its storage, and
//! the container image nodedown builds of itself.

pub mod image;
pub mod ledger;
pub mod writer;

use crate::spec::{WorkloadKind, WorkloadSpec};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolume};
use serde_json::json;

/// The storage class of testenv's shared host directory; nodedown creates its PersistentVolumes.
pub const SHARED_CLASS: &str = "nodedown-shared";
/// Where every testenv node mounts the shared host directory.
pub const SHARED_NODE_PATH: &str = "/mnt/nodedown-shared";
/// The host directory behind it.
pub fn shared_host_dir() -> std::path::PathBuf {
    std::env::var_os("NODEDOWN_SHARED_DIR")
        .map(Into::into)
        .unwrap_or_else(|| "/var/lib/nodedown/shared".into())
}
/// Label on everything nodedown creates, with the run id as value.
pub const RUN_LABEL: &str = "nodedown.dev/run";

pub fn app_name(kind: WorkloadKind) -> &'static str {
    crate::spec::statefulset_name(kind)
}

/// `app=<name>`: the selector of the workload's pods.
pub fn pod_selector(kind: WorkloadKind) -> String {
    format!("app={}", app_name(kind))
}

pub fn namespace(name: &str, run_id: &str) -> Namespace {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {RUN_LABEL: label_value(run_id)}}
    }))
    .expect("valid Namespace")
}

/// Label values allow [A-Za-z0-9._-]; run ids have `/`.
pub fn label_value(run_id: &str) -> String {
    run_id.replace('/', ".").chars().take(63).collect()
}

/// The claim a StatefulSet pod gets: `data-<pod>`.
pub fn claim_name(pod: &str) -> String {
    format!("data-{pod}")
}

/// A PersistentVolume on the shared host directory, pre-bound to the claim of `pod`, without
/// node affinity: the pod can fail over to any node and find its data.
pub fn shared_volume(ns: &str, pod: &str, size: &str, run_id: &str) -> PersistentVolume {
    serde_json::from_value(json!({
        "metadata": {"name": format!("{ns}-{}", claim_name(pod)), "labels": {RUN_LABEL: label_value(run_id)}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": SHARED_CLASS,
            "claimRef": {"namespace": ns, "name": claim_name(pod)},
            "hostPath": {"path": format!("{SHARED_NODE_PATH}/{ns}/{}", claim_name(pod)), "type": "DirectoryOrCreate"}
        }
    }))
    .expect("valid PersistentVolume")
}

/// The port the ledger serves its status on.
pub const LEDGER_PORT: u16 = 8080;

fn container(
    kind: WorkloadKind,
    name: &str,
    image: &str,
    pull_never: bool,
    env: serde_json::Value,
) -> serde_json::Value {
    let mut c = json!({
        "name": name,
        "image": image,
        "imagePullPolicy": if pull_never { "Never" } else { "IfNotPresent" },
        "env": env,
        "volumeMounts": [{"name": "data", "mountPath": "/data"}]
    });
    match kind {
        WorkloadKind::Writer => {
            c["command"] = json!(["/usr/local/bin/nodedown", "writer", "--dir", "/data"])
        }
        WorkloadKind::Ledger => {
            c["command"] = json!([
                "/usr/local/bin/nodedown",
                "ledger",
                "--dir",
                "/data",
                "--port",
                LEDGER_PORT.to_string()
            ]);
            c["ports"] = json!([{"name": "status", "containerPort": LEDGER_PORT}]);
            c["readinessProbe"] = json!({"httpGet": {"path": ledger::status_url_path(), "port": LEDGER_PORT}, "periodSeconds": 1});
        }
    }
    c
}

/// The StatefulSet under test.
pub fn statefulset(
    spec: &WorkloadSpec,
    image: &str,
    pull_never: bool,
    run_id: &str,
) -> StatefulSet {
    let name = app_name(spec.kind);
    let env = json!([
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    ]);
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": name, RUN_LABEL: label_value(run_id)}},
        "spec": {
            "replicas": spec.replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, RUN_LABEL: label_value(run_id)}},
                "spec": {
                    "terminationGracePeriodSeconds": 5,
                    "containers": [container(spec.kind, name, image, pull_never, env)]
                }
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": spec.storage_class,
                    "resources": {"requests": {"storage": spec.size}}
                }
            }]
        }
    }))
    .expect("valid StatefulSet")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_fit_together() {
        let spec = WorkloadSpec {
            kind: WorkloadKind::Writer,
            replicas: 1,
            storage_class: SHARED_CLASS.into(),
            size: "1Gi".into(),
            image: None,
        };
        let sts = statefulset(&spec, "img:1", true, "exp/v/1");
        let tpl = sts.spec.as_ref().unwrap();
        assert_eq!(
            tpl.volume_claim_templates.as_ref().unwrap()[0]
                .metadata
                .name
                .as_deref(),
            Some("data")
        );
        let pv = shared_volume("ns1", "writer-0", "1Gi", "exp/v/1");
        let claim = pv.spec.as_ref().unwrap().claim_ref.as_ref().unwrap();
        assert_eq!(claim.name.as_deref(), Some("data-writer-0"));
        assert_eq!(pv.metadata.labels.as_ref().unwrap()[RUN_LABEL], "exp.v.1");
        assert!(pv.spec.as_ref().unwrap().node_affinity.is_none());
    }
}
