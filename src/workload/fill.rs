//! Nodes filled to their attach limit (`workload.fillAttachLimit`): before the fault, every
//! node the replacement may go to gets pods holding one claim of the class each until the
//! driver's published limit (its CSINode allocatable count) is reached, so the failover meets
//! nodes with no room for another volume of the driver. The filler pods live in the run's
//! namespace and go with it at the heal.

use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass, VolumeAttachment};
use kube::api::{Api, ListParams, PostParams};
use kube::Client;
use serde_json::json;
use tokio::time::Instant;

use super::{api, label_value, WorkloadError};
use crate::spec::WorkloadSpec;
use crate::vocab::RUN_LABEL;

/// The `app` label of the filler pods (not the workload's: its selector never matches them).
pub const FILLER_APP: &str = "nodedown-filler";

/// One node brought to its attach limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Filled {
    pub node: String,
    /// The driver's published limit on the node (CSINode `allocatable.count`).
    pub limit: i32,
    /// Volumes of the driver attached there before (its VolumeAttachments).
    pub attached: usize,
    /// Filler pods placed there, each Running with its volume.
    pub fillers: u32,
}

impl Filled {
    pub fn describe(&self, driver: &str) -> String {
        format!(
            "attach limit: {} filled to {} of {} volumes of {driver} (CSINode allocatable count; {} attached before, {} filler pods Running)",
            self.node,
            self.attached + self.fillers as usize,
            self.limit,
            self.attached,
            self.fillers
        )
    }
}

/// The attach limit `driver` publishes on a node: its CSINode's `allocatable.count`; `None`
/// when the driver is not on the node or publishes no limit.
pub fn attach_limit(csinode: &CSINode, driver: &str) -> Option<i32> {
    csinode
        .spec
        .drivers
        .iter()
        .find(|d| d.name == driver)
        .and_then(|d| d.allocatable.as_ref())
        .and_then(|a| a.count)
}

/// Whether a VolumeAttachment is on its way out: being deleted, or of a volume whose claim's
/// namespace is gone or terminating (an earlier run's, deleted at its heal). Counted as there,
/// it would make its node look fuller than it stays once it is gone.
pub fn leaving(
    va: &VolumeAttachment,
    claim_namespace: &std::collections::HashMap<String, String>,
    live_namespaces: &std::collections::HashSet<String>,
) -> bool {
    if va.metadata.deletion_timestamp.is_some() {
        return true;
    }
    va.spec
        .source
        .persistent_volume_name
        .as_ref()
        .and_then(|pv| claim_namespace.get(pv))
        .is_some_and(|ns| !live_namespaces.contains(ns))
}

/// The driver's VolumeAttachments once none of those on `nodes` is leaving ([`leaving`]),
/// waiting until `deadline`.
async fn settled_attachments(
    client: &Client,
    driver: &str,
    nodes: &[String],
    deadline: Instant,
) -> Result<Vec<VolumeAttachment>, WorkloadError> {
    use k8s_openapi::api::core::v1::{Namespace, PersistentVolume};
    loop {
        let attachments = Api::<VolumeAttachment>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map_err(api("list VolumeAttachments"))?
            .items;
        let claim_namespace: std::collections::HashMap<String, String> =
            Api::<PersistentVolume>::all(client.clone())
                .list(&ListParams::default())
                .await
                .map_err(api("list PersistentVolumes"))?
                .items
                .into_iter()
                .filter_map(|pv| {
                    let ns = pv.spec.as_ref()?.claim_ref.as_ref()?.namespace.clone()?;
                    Some((pv.metadata.name?, ns))
                })
                .collect();
        let live: std::collections::HashSet<String> = Api::<Namespace>::all(client.clone())
            .list(&ListParams::default())
            .await
            .map_err(api("list namespaces"))?
            .items
            .into_iter()
            .filter(|n| n.metadata.deletion_timestamp.is_none())
            .filter_map(|n| n.metadata.name)
            .collect();
        let going: Vec<String> = attachments
            .iter()
            .filter(|va| va.spec.attacher == driver && nodes.contains(&va.spec.node_name))
            .filter(|va| leaving(va, &claim_namespace, &live))
            .filter_map(|va| va.metadata.name.clone())
            .collect();
        if going.is_empty() {
            return Ok(attachments);
        }
        if Instant::now() >= deadline {
            return Err(WorkloadError::AttachLimit(format!(
                "fillAttachLimit: VolumeAttachments of {driver} still going away from the nodes to fill (an earlier run's?): {}",
                going.join(", ")
            )));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// How many VolumeAttachments of `driver` name `node`.
pub fn attached_on(attachments: &[VolumeAttachment], driver: &str, node: &str) -> usize {
    attachments
        .iter()
        .filter(|va| va.spec.attacher == driver && va.spec.node_name == node)
        .count()
}

/// The filler StatefulSet for `node` (the `index`-th filled node): `count` pods at once, each
/// with one claim of the workload's class, required on that node, doing nothing but holding
/// the volume (`nodedown hold`).
pub fn filler(
    spec: &WorkloadSpec,
    index: usize,
    node: &str,
    count: u32,
    image: &str,
    pull_never: bool,
    run_id: &str,
) -> StatefulSet {
    let name = format!("filler-{index}");
    let labels =
        json!({"app": FILLER_APP, "nodedown.dev/filler": name, RUN_LABEL: label_value(run_id)});
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": count,
            "serviceName": name,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": FILLER_APP, "nodedown.dev/filler": name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{
                        "name": "hold",
                        "image": image,
                        "imagePullPolicy": if pull_never { "Never" } else { "IfNotPresent" },
                        "command": ["/usr/local/bin/nodedown", "hold"],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    }],
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
                        ]}]
                    }}},
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

/// Fills each of `nodes` to the attach limit of the class's driver and waits until every
/// filler pod is Running on its node (its volume attached and mounted), within `timeout`.
/// Returns the driver and what each node holds.
#[allow(clippy::too_many_arguments)]
pub async fn fill(
    client: &Client,
    namespace: &str,
    spec: &WorkloadSpec,
    nodes: &[String],
    image: &str,
    pull_never: bool,
    run_id: &str,
    timeout: Duration,
) -> Result<(String, Vec<Filled>), WorkloadError> {
    let class = &spec.storage_class;
    let driver = Api::<StorageClass>::all(client.clone())
        .get(class)
        .await
        .map_err(api(format!("get StorageClass {class}")))?
        .provisioner;
    if nodes.is_empty() {
        return Err(WorkloadError::AttachLimit(
            "fillAttachLimit: no node but the fault's could take the replacement: nothing to fill (give the run a lane or cluster of two workers or more)".into(),
        ));
    }
    let deadline = Instant::now() + timeout;
    // What an earlier run left on its way out does not fill a node: wait until it is gone.
    let attachments = settled_attachments(client, &driver, nodes, deadline).await?;
    let csinodes: Api<CSINode> = Api::all(client.clone());
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), namespace);
    let mut filled = Vec::new();
    for (index, node) in nodes.iter().enumerate() {
        let csinode = csinodes
            .get(node)
            .await
            .map_err(api(format!("get CSINode {node}")))?;
        let limit = attach_limit(&csinode, &driver).ok_or_else(|| {
            WorkloadError::AttachLimit(format!(
                "fillAttachLimit: {driver} publishes no attach limit on node {node} (CSINode {node} has no allocatable count for it): the driver's NodeGetInfo gives no max_volumes_per_node; remove `fillAttachLimit`, or qualify a driver that publishes one"
            ))
        })?;
        let attached = attached_on(&attachments, &driver, node);
        let fillers = (limit.max(0) as usize).saturating_sub(attached) as u32;
        if fillers > 0 {
            let set = filler(spec, index, node, fillers, image, pull_never, run_id);
            sets.create(&PostParams::default(), &set)
                .await
                .map_err(api(format!("create filler StatefulSet filler-{index}")))?;
        }
        filled.push(Filled {
            node: node.clone(),
            limit,
            attached,
            fillers,
        });
    }
    let want: u32 = filled.iter().map(|f| f.fillers).sum();
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    loop {
        let list = pods
            .list(&ListParams::default().labels(&format!("app={FILLER_APP}")))
            .await
            .map_err(api("list filler pods"))?
            .items;
        let running = list.iter().filter(|p| is_running(p)).count() as u32;
        if running >= want {
            return Ok((driver, filled));
        }
        if Instant::now() >= deadline {
            let waiting: Vec<String> = list
                .iter()
                .filter(|p| !is_running(p))
                .map(|p| {
                    format!(
                        "{} ({})",
                        p.metadata.name.as_deref().unwrap_or("?"),
                        crate::observe::pod_not_ready_reason(p).unwrap_or_else(|| "Running".into())
                    )
                })
                .collect();
            return Err(WorkloadError::AttachLimit(format!(
                "fillAttachLimit: {running} of {want} filler pods Running after {}: {}",
                humantime::format_duration(timeout),
                if waiting.is_empty() {
                    "the others not made yet".to_string()
                } else {
                    waiting.join("; ")
                }
            )));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn is_running(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CSINode as testenv's kubelet writes it (recorded: `kubectl get csinode
    /// nodedown-worker -o json`, trimmed to the drivers).
    fn csinode() -> CSINode {
        serde_json::from_value(json!({
            "metadata": {"name": "nodedown-worker"},
            "spec": {"drivers": [
                {"allocatable": {"count": 3}, "name": "limits.csi.nodedown.dev",
                 "nodeID": "nodedown-worker", "topologyKeys": null},
                {"name": "csi.nodedown.dev", "nodeID": "nodedown-worker",
                 "topologyKeys": ["topology.kubernetes.io/zone"]}
            ]}
        }))
        .unwrap()
    }

    #[test]
    fn the_limit_is_the_drivers_allocatable_count_and_absent_when_unpublished() {
        let n = csinode();
        assert_eq!(attach_limit(&n, "limits.csi.nodedown.dev"), Some(3));
        assert_eq!(attach_limit(&n, "csi.nodedown.dev"), None);
        assert_eq!(attach_limit(&n, "ebs.csi.aws.com"), None);
    }

    #[test]
    fn attachments_are_counted_per_driver_and_node() {
        let va = |attacher: &str, node: &str| -> VolumeAttachment {
            serde_json::from_value(json!({
                "metadata": {"name": format!("csi-{attacher}-{node}")},
                "spec": {"attacher": attacher, "nodeName": node,
                         "source": {"persistentVolumeName": "pv"}}
            }))
            .unwrap()
        };
        let all = [
            va("limits.csi.nodedown.dev", "w1"),
            va("limits.csi.nodedown.dev", "w1"),
            va("limits.csi.nodedown.dev", "w2"),
            va("csi.nodedown.dev", "w1"),
        ];
        assert_eq!(attached_on(&all, "limits.csi.nodedown.dev", "w1"), 2);
        assert_eq!(attached_on(&all, "limits.csi.nodedown.dev", "w3"), 0);
        assert_eq!(attached_on(&all, "csi.nodedown.dev", "w1"), 1);
    }

    #[test]
    fn an_attachment_of_a_run_that_is_going_away_does_not_fill_a_node() {
        let va = |pv: &str, deleting: bool| -> VolumeAttachment {
            let mut meta = json!({"name": format!("csi-{pv}")});
            if deleting {
                meta["deletionTimestamp"] = json!("2026-12-07T10:00:00Z");
            }
            serde_json::from_value(json!({
                "metadata": meta,
                "spec": {"attacher": "limits.csi.nodedown.dev", "nodeName": "w1",
                         "source": {"persistentVolumeName": pv}}
            }))
            .unwrap()
        };
        let claims: std::collections::HashMap<String, String> = [
            ("pv-old".to_string(), "nd-earlier-run".to_string()),
            ("pv-now".to_string(), "nd-this-run".to_string()),
        ]
        .into();
        let live: std::collections::HashSet<String> = ["nd-this-run".to_string()].into();
        assert!(
            leaving(&va("pv-old", false), &claims, &live),
            "its namespace is gone"
        );
        assert!(!leaving(&va("pv-now", false), &claims, &live));
        assert!(
            leaving(&va("pv-now", true), &claims, &live),
            "being deleted"
        );
        // A volume nodedown knows no claim of (someone else's, static) stays counted.
        assert!(!leaving(&va("pv-other", false), &claims, &live));
    }

    #[test]
    fn a_filler_holds_one_claim_of_the_class_on_its_node_only() {
        let spec: WorkloadSpec = serde_json::from_value(
            json!({"kind": "ledger", "storageClass": "nodedown-limits", "fillAttachLimit": true}),
        )
        .unwrap();
        let set = serde_json::to_value(filler(&spec, 2, "w4", 3, "img", true, "r/1")).unwrap();
        assert_eq!(set["metadata"]["name"], "filler-2");
        assert_eq!(set["spec"]["replicas"], 3);
        assert_eq!(set["spec"]["podManagementPolicy"], "Parallel");
        let pod = &set["spec"]["template"]["spec"];
        assert_eq!(
            pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"][0]["matchExpressions"][0]["values"],
            json!(["w4"])
        );
        assert_eq!(pod["containers"][0]["command"][1], "hold");
        let claim = &set["spec"]["volumeClaimTemplates"][0]["spec"];
        assert_eq!(claim["storageClassName"], spec.storage_class.as_str());
        assert_eq!(claim["accessModes"], json!(["ReadWriteOnce"]));
        // Not the workload's pods: the run's selector never matches a filler.
        assert_ne!(
            set["spec"]["template"]["metadata"]["labels"]["app"],
            crate::workload::app_name(spec.kind)
        );
    }
}
