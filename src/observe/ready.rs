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
