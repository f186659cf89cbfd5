//! The one readiness rule, for nodes and for pods: the object's `Ready` condition is present
//! and `True` (what `kubectl wait --for=condition=Ready` waits for). Anything else — False,
//! Unknown, missing, no status — is not ready.

use k8s_openapi::api::core::v1::{Node, Pod};

fn ready<'a>(mut conditions: impl Iterator<Item = (&'a str, &'a str)>) -> bool {
    conditions.any(|(kind, status)| kind == "Ready" && status == "True")
}

/// Whether a node's Ready condition is True.
pub fn node_is_ready(node: &Node) -> bool {
    ready(
        node.status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .map(|c| (c.type_.as_str(), c.status.as_str())),
    )
}

/// Whether a pod's Ready condition is True.
pub fn pod_is_ready(pod: &Pod) -> bool {
    ready(
        pod.status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .map(|c| (c.type_.as_str(), c.status.as_str())),
    )
}

/// Why a pod is not Ready, in the words of whoever holds it up: the scheduler (PodScheduled
/// False: e.g. a volume node affinity conflict), the kubelet (a container waiting, e.g. on its
/// volume), or its deletion; `None` for a Ready pod.
pub fn pod_not_ready_reason(pod: &Pod) -> Option<String> {
    if pod_is_ready(pod) {
        return None;
    }
    let status = pod.status.as_ref();
    let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    if pod.metadata.deletion_timestamp.is_some() {
        return Some(format!(
            "terminating{}",
            node.map(|n| format!(" on {n}")).unwrap_or_default()
        ));
    }
    let unscheduled = status.and_then(|s| s.conditions.as_ref()).and_then(|c| {
        c.iter()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")
    });
    if let Some(c) = unscheduled {
        return Some(format!(
            "not scheduled ({}): {}",
            c.reason.as_deref().unwrap_or("no reason given"),
            c.message.as_deref().unwrap_or("no message").trim()
        ));
    }
    let waiting = status
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
        .find_map(|c| {
            c.state
                .as_ref()
                .and_then(|s| s.waiting.as_ref())
                .map(|w| (c.name.as_str(), w))
        });
    let on = node.map(|n| format!(" on {n}")).unwrap_or_default();
    Some(match waiting {
        Some((name, w)) => format!(
            "container {name} waiting{on} ({}){}",
            w.reason.as_deref().unwrap_or("no reason given"),
            w.message
                .as_deref()
                .map(|m| format!(": {}", m.trim()))
                .unwrap_or_default()
        ),
        None => format!(
            "{}{on}, not Ready",
            status
                .and_then(|s| s.phase.as_deref())
                .unwrap_or("no phase")
        ),
    })
}

/// Whether a node carries a control-plane role label.
pub fn is_control_plane(node: &Node) -> bool {
    node.metadata.labels.as_ref().is_some_and(|l| {
        crate::vocab::CONTROL_PLANE_LABELS
            .iter()
            .any(|k| l.contains_key(*k))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(conditions: serde_json::Value) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "w1"},
            "status": {"conditions": conditions}
        }))
        .unwrap()
    }

    fn pod(conditions: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"},
            "status": {"conditions": conditions}
        }))
        .unwrap()
    }

    /// The replacement of testenv's zone-lost row: the condition's reason and message as
    /// kube-scheduler v1.34.4 wrote them in a recorded run (2026-12-07).
    #[test]
    fn a_pod_not_ready_says_who_holds_it_up() {
        let unscheduled: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "ledger-0"},
            "spec": {"containers": []},
            "status": {"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/7 nodes are available: 3 node(s) had untolerated taint(s), 4 node(s) didn't match PersistentVolume's node affinity. no new claims to deallocate, preemption: 0/7 nodes are available: 7 Preemption is not helpful for scheduling."
            }]}
        }))
        .unwrap();
        let why = pod_not_ready_reason(&unscheduled).unwrap();
        assert!(
            why.starts_with("not scheduled (Unschedulable): 0/7 nodes"),
            "{why}"
        );
        assert!(
            why.contains("didn't match PersistentVolume's node affinity"),
            "{why}"
        );
        // A replacement waiting for its volume on a node (synthetic).
        let waiting: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "ledger-0"},
            "spec": {"nodeName": "w2", "containers": []},
            "status": {"phase": "Pending", "containerStatuses": [{
                "name": "ledger", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}}
            }]}
        }))
        .unwrap();
        assert_eq!(
            pod_not_ready_reason(&waiting).unwrap(),
            "container ledger waiting on w2 (ContainerCreating)"
        );
        let ready = pod(serde_json::json!([{"type": "Ready", "status": "True"}]));
        assert_eq!(pod_not_ready_reason(&ready), None);
    }

    #[test]
    fn only_a_true_ready_condition_is_ready() {
        use serde_json::json;
        let cases = [
            (json!([{"type": "Ready", "status": "True"}]), true),
            (
                json!([{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}]),
                true,
            ),
            (json!([{"type": "Ready", "status": "False"}]), false),
            (json!([{"type": "Ready", "status": "Unknown"}]), false),
            (
                json!([{"type": "ContainersReady", "status": "True"}]),
                false,
            ),
            (json!([]), false),
        ];
        for (conditions, want) in cases {
            assert_eq!(
                node_is_ready(&node(conditions.clone())),
                want,
                "{conditions}"
            );
            assert_eq!(pod_is_ready(&pod(conditions.clone())), want, "{conditions}");
        }
        assert!(!node_is_ready(&Node::default()));
        assert!(!pod_is_ready(&Pod::default()));
    }
}
