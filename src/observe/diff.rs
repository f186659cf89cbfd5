//! Pure: from one observed object (and what was observed of it before) to timeline events.
//! Only changes are recorded, so a resync or a re-list does not repeat events.

use crate::timeline::{ConditionStatus, EventKind, PodPhase};
use k8s_openapi::api::core::v1::{Event as KubeEvent, Node, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use std::collections::{BTreeSet, HashMap};

#[derive(Debug, Clone, PartialEq)]
pub struct NodeState {
    pub name: String,
    pub ready: ConditionStatus,
    pub taints: BTreeSet<(String, String)>,
}

pub fn diff_node(prev: Option<&NodeState>, node: &Node) -> (NodeState, Vec<EventKind>) {
    let name = node.metadata.name.clone().unwrap_or_default();
    let ready_cond = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    let ready = ready_cond
        .map(|c| ConditionStatus::parse(&c.status))
        .unwrap_or(ConditionStatus::Unknown);
    let reason = ready_cond.and_then(|c| c.reason.clone());
    let taints: BTreeSet<(String, String)> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .map(|t| {
            t.iter()
                .map(|t| (t.key.clone(), t.effect.clone()))
                .collect()
        })
        .unwrap_or_default();
    let by = taints_manager(node);
    let mut events = Vec::new();
    let empty = BTreeSet::new();
    let (prev_ready, prev_taints) = match prev {
        Some(p) => (Some(p.ready), &p.taints),
        None => {
            events.push(EventKind::NodeAdded { node: name.clone() });
            (None, &empty)
        }
    };
    if prev_ready != Some(ready) {
        events.push(EventKind::NodeReady {
            node: name.clone(),
            status: ready,
            reason,
        });
    }
    for (key, effect) in taints.difference(prev_taints) {
        events.push(EventKind::NodeTaint {
            node: name.clone(),
            key: key.clone(),
            effect: effect.clone(),
            added: true,
            by: by.clone(),
        });
    }
    for (key, effect) in prev_taints.difference(&taints) {
        events.push(EventKind::NodeTaint {
            node: name.clone(),
            key: key.clone(),
            effect: effect.clone(),
            added: false,
            by: by.clone(),
        });
    }
    (
        NodeState {
            name,
            ready,
            taints,
        },
        events,
    )
}

/// The field manager that last wrote the Node's `spec.taints` (the newest managedFields entry
/// owning it). Taints are an atomic list, so that manager set the whole list.
pub fn taints_manager(node: &Node) -> Option<String> {
    node.metadata
        .managed_fields
        .as_ref()?
        .iter()
        .filter(|m| {
            m.fields_v1
                .as_ref()
                .and_then(|f| f.0.get("f:spec"))
                .and_then(|spec| spec.get("f:taints"))
                .is_some()
        })
        .max_by(|a, b| {
            a.time
                .as_ref()
                .map(|t| t.0)
                .cmp(&b.time.as_ref().map(|t| t.0))
        })
        .and_then(|m| m.manager.clone())
}

pub fn node_gone(prev: &NodeState) -> Option<EventKind> {
    Some(EventKind::NodeDeleted {
        node: prev.name.clone(),
    })
}

#[derive(Debug, Clone, PartialEq)]
pub struct PodState {
    pub name: String,
    pub uid: String,
    pub node: Option<String>,
    pub phase: PodPhase,
    pub terminating: bool,
    pub ready: bool,
    pub started_at: Option<String>,
    pub reason: Option<String>,
}

pub fn pod_state(pod: &Pod) -> PodState {
    let status = pod.status.as_ref();
    PodState {
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone().unwrap_or_default(),
        node: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
        phase: PodPhase::parse(status.and_then(|s| s.phase.as_deref())),
        terminating: pod.metadata.deletion_timestamp.is_some(),
        ready: super::pod_is_ready(pod),
        started_at: status
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.first())
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.running.as_ref())
            .and_then(|r| r.started_at.as_ref())
            .map(|t| t.0.to_string()),
        reason: status.and_then(|s| s.reason.clone()),
    }
}

fn pod_event(s: &PodState) -> EventKind {
    EventKind::Pod {
        pod: s.name.clone(),
        uid: s.uid.clone(),
        node: s.node.clone(),
        phase: s.phase,
        terminating: s.terminating,
        ready: s.ready,
        started_at: s.started_at.clone(),
        reason: s.reason.clone(),
    }
}

pub fn diff_pod(prev: Option<&PodState>, pod: &Pod) -> (PodState, Vec<EventKind>) {
    let next = pod_state(pod);
    let mut events = Vec::new();
    match prev {
        Some(p) if p == &next => {}
        Some(p) if p.uid != next.uid => {
            // The old pod's deletion was not seen (e.g. during a re-list): say it is gone first.
            events.extend(pod_gone(p));
            events.push(pod_event(&next));
        }
        _ => events.push(pod_event(&next)),
    }
    (next, events)
}

pub fn pod_gone(prev: &PodState) -> Option<EventKind> {
    Some(EventKind::PodDeleted {
        pod: prev.name.clone(),
        uid: prev.uid.clone(),
        node: prev.node.clone(),
    })
}

#[derive(Debug, Clone, PartialEq)]
pub struct VaState {
    pub name: String,
    pub node: String,
    pub pv: Option<String>,
    pub attached: bool,
}

pub fn diff_volume_attachment(
    prev: Option<&VaState>,
    va: &VolumeAttachment,
) -> (VaState, Vec<EventKind>) {
    let next = VaState {
        name: va.metadata.name.clone().unwrap_or_default(),
        node: va.spec.node_name.clone(),
        pv: va.spec.source.persistent_volume_name.clone(),
        attached: va.status.as_ref().map(|s| s.attached).unwrap_or(false),
    };
    let events = if prev.map(|p| p.attached) == Some(next.attached) {
        vec![]
    } else {
        vec![EventKind::VolumeAttachment {
            name: next.name.clone(),
            node: next.node.clone(),
            pv: next.pv.clone(),
            attached: next.attached,
        }]
    };
    (next, events)
}

pub fn va_gone(prev: &VaState) -> Option<EventKind> {
    Some(EventKind::VolumeAttachmentDeleted {
        name: prev.name.clone(),
        node: prev.node.clone(),
        pv: prev.pv.clone(),
    })
}

/// A claim's bound volume: recorded when it first names one (or a different one).
pub fn diff_claim(
    prev: Option<&Option<String>>,
    pvc: &PersistentVolumeClaim,
) -> (Option<String>, Vec<EventKind>) {
    let pv = pvc
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.clone())
        .filter(|v| !v.is_empty());
    let events = match &pv {
        Some(v) if prev.and_then(|p| p.as_ref()) != Some(v) => vec![EventKind::ClaimBound {
            claim: pvc.metadata.name.clone().unwrap_or_default(),
            pv: v.clone(),
        }],
        _ => vec![],
    };
    (pv, events)
}

/// Kubernetes Events: recorded when new or when their count grows.
pub fn diff_kube_event(prev: Option<&i32>, ev: &KubeEvent) -> (i32, Vec<EventKind>) {
    let count = ev.count.unwrap_or(1);
    if prev.is_some_and(|p| *p >= count) {
        return (count, vec![]);
    }
    let object = format!(
        "{}/{}",
        ev.involved_object.kind.clone().unwrap_or_default(),
        ev.involved_object.name.clone().unwrap_or_default()
    );
    (
        count,
        vec![EventKind::KubeEvent {
            object,
            reason: ev.reason.clone().unwrap_or_default(),
            message: ev.message.clone().unwrap_or_default(),
            kind: ev.type_.clone().unwrap_or_default(),
        }],
    )
}

/// What was last seen of a NetworkFence someone else made: the node it fences and its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceSeen {
    pub node: Option<String>,
    pub state: Option<crate::timeline::FenceState>,
}

/// A NetworkFence (as JSON: `spec.cidrs`, `spec.fenceState`, `status.result`) against the
/// nodes' addresses (`"172.18.0.2/32"` → node): a fence whose blocks name a node is recorded
/// `requested` when first seen Fenced without a result, then `succeeded` / `failed` as its
/// result says, `unfenced` when its fenceState turns Unfenced. A fence of no known node is
/// ignored.
pub fn diff_network_fence(
    prev: Option<&FenceSeen>,
    name: &str,
    obj: &serde_json::Value,
    clients: &HashMap<String, String>,
) -> (FenceSeen, Vec<EventKind>) {
    use crate::timeline::FenceState;
    let cidrs: Vec<String> = obj["spec"]["cidrs"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let node = cidrs.iter().find_map(|c| {
        clients
            .get(c)
            .or_else(|| clients.get(&format!("{c}/32")))
            .cloned()
    });
    let state = match (
        obj["spec"]["fenceState"].as_str().unwrap_or("Fenced"),
        obj["status"]["result"].as_str(),
    ) {
        ("Unfenced", _) => Some(FenceState::Unfenced),
        (_, Some("Succeeded")) => Some(FenceState::Succeeded),
        (_, Some("Failed")) => Some(FenceState::Failed),
        _ => Some(FenceState::Requested),
    };
    let seen = FenceSeen { node, state };
    let Some(node) = seen.node.clone() else {
        return (seen, vec![]);
    };
    if prev.is_some_and(|p| p.state == seen.state) {
        return (seen, vec![]);
    }
    let mut events = Vec::new();
    let mut push = |state| {
        events.push(EventKind::NetworkFence {
            name: name.to_string(),
            node: node.clone(),
            cidrs: cidrs.clone(),
            state,
            message: obj["status"]["message"].as_str().map(String::from),
        })
    };
    // First seen already decided: it was requested before (the creation is the request).
    if prev.is_none() && seen.state != Some(FenceState::Requested) {
        push(FenceState::Requested);
    }
    if let Some(s) = seen.state {
        push(s);
    }
    (seen, events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(yaml: &str) -> Node {
        serde_saphyr::from_str(yaml).unwrap()
    }
    fn pod(yaml: &str) -> Pod {
        serde_saphyr::from_str(yaml).unwrap()
    }

    const READY_NODE: &str = "metadata: {name: w1}\nstatus:\n  conditions:\n  - {type: Ready, status: 'True', reason: KubeletReady}\n";
    const NOT_READY_TAINTED: &str = "metadata: {name: w1}\nspec:\n  taints:\n  - {key: node.kubernetes.io/unreachable, effect: NoExecute}\nstatus:\n  conditions:\n  - {type: Ready, status: Unknown, reason: NodeStatusUnknown}\n";

    /// Synthetic NetworkFence objects, in the shape of the csi-addons CRD.
    #[test]
    fn a_fence_made_by_someone_else_is_recorded_for_the_node_it_names() {
        use crate::timeline::FenceState;
        let clients: HashMap<String, String> =
            [("172.18.0.2/32".to_string(), "w1".to_string())].into();
        let made =
            serde_json::json!({"spec": {"cidrs": ["172.18.0.2/32"], "fenceState": "Fenced"}});
        let (s1, e1) = diff_network_fence(None, "rook-w1", &made, &clients);
        assert!(matches!(
            &e1[..],
            [EventKind::NetworkFence { node, state: FenceState::Requested, .. }] if node == "w1"
        ));
        let done = serde_json::json!({"spec": {"cidrs": ["172.18.0.2/32"], "fenceState": "Fenced"},
            "status": {"result": "Succeeded", "message": "fencing operation successful"}});
        let (s2, e2) = diff_network_fence(Some(&s1), "rook-w1", &done, &clients);
        assert!(matches!(
            &e2[..],
            [EventKind::NetworkFence {
                state: FenceState::Succeeded,
                ..
            }]
        ));
        // The same state again: nothing new.
        assert!(diff_network_fence(Some(&s2), "rook-w1", &done, &clients)
            .1
            .is_empty());
        // First seen already Succeeded: requested, then succeeded.
        let (_, e) = diff_network_fence(None, "rook-w1", &done, &clients);
        assert_eq!(e.len(), 2);
        // Another node's fence (or an address nodedown does not know): nothing.
        let other = serde_json::json!({"spec": {"cidrs": ["10.0.0.9/32"], "fenceState": "Fenced"}});
        assert!(diff_network_fence(None, "x", &other, &clients).1.is_empty());
        // A bare address counts as its /32.
        let bare = serde_json::json!({"spec": {"cidrs": ["172.18.0.2"], "fenceState": "Unfenced"}});
        let (_, e) = diff_network_fence(Some(&s2), "rook-w1", &bare, &clients);
        assert!(matches!(
            &e[..],
            [EventKind::NetworkFence {
                state: FenceState::Unfenced,
                ..
            }]
        ));
    }

    #[test]
    fn node_first_sight_then_not_ready_with_taint() {
        let (s1, e1) = diff_node(None, &node(READY_NODE));
        assert_eq!(e1.len(), 2, "{e1:?}");
        assert!(
            matches!(&e1[1], EventKind::NodeReady { status, .. } if *status == ConditionStatus::True)
        );
        let (s2, e2) = diff_node(Some(&s1), &node(NOT_READY_TAINTED));
        assert_eq!(e2.len(), 2, "{e2:?}");
        assert!(
            matches!(&e2[0], EventKind::NodeReady { status, reason: Some(r), .. } if *status == ConditionStatus::Unknown && r == "NodeStatusUnknown")
        );
        assert!(
            matches!(&e2[1], EventKind::NodeTaint { key, added: true, .. } if key == "node.kubernetes.io/unreachable")
        );
        // unchanged object: nothing new
        let (_, e3) = diff_node(Some(&s2), &node(NOT_READY_TAINTED));
        assert!(e3.is_empty());
        // back to ready: Ready=True and the taint removed
        let (_, e4) = diff_node(Some(&s2), &node(READY_NODE));
        assert!(matches!(&e4[1], EventKind::NodeTaint { added: false, .. }));
    }

    /// Synthetic managedFields in the API's shape: the newest owner of `f:spec.f:taints` is who
    /// changed the taints.
    #[test]
    fn the_taints_manager_is_the_newest_owner_of_the_taints() {
        let n = node(
            "metadata:\n  name: w1\n  managedFields:\n  - {manager: kube-controller-manager, operation: Update, time: '2026-12-03T10:00:00Z', fieldsType: FieldsV1, fieldsV1: {'f:spec': {'f:taints': {}}}}\n  - {manager: medik8s, operation: Update, time: '2026-12-03T10:00:05Z', fieldsType: FieldsV1, fieldsV1: {'f:spec': {'f:taints': {}}}}\n  - {manager: kubelet, operation: Update, time: '2026-12-03T10:00:09Z', fieldsType: FieldsV1, fieldsV1: {'f:status': {}}}\nspec:\n  taints:\n  - {key: node.kubernetes.io/out-of-service, effect: NoExecute}\n",
        );
        assert_eq!(taints_manager(&n).as_deref(), Some("medik8s"));
        let (_, events) = diff_node(None, &n);
        assert!(events
            .iter()
            .any(|e| matches!(e, EventKind::NodeTaint { by: Some(b), .. } if b == "medik8s")));
        assert_eq!(taints_manager(&node(READY_NODE)), None);
    }

    #[test]
    fn pod_replacement_with_missed_delete_reports_the_old_uid_gone() {
        let old = pod("metadata: {name: writer-0, uid: a}\nspec: {nodeName: w1, containers: []}\nstatus: {phase: Running}\n");
        let new = pod("metadata: {name: writer-0, uid: b}\nspec: {containers: []}\nstatus: {phase: Pending}\n");
        let (s1, e1) = diff_pod(None, &old);
        assert_eq!(e1.len(), 1);
        let (_, e2) = diff_pod(Some(&s1), &new);
        assert!(matches!(&e2[0], EventKind::PodDeleted { uid, .. } if uid == "a"));
        assert!(matches!(&e2[1], EventKind::Pod { uid, node: None, .. } if uid == "b"));
    }

    #[test]
    fn pod_terminating_and_ready_are_seen() {
        let p = pod("metadata: {name: writer-0, uid: a, deletionTimestamp: '2026-01-01T00:00:00Z'}\nspec: {nodeName: w1, containers: []}\nstatus:\n  phase: Running\n  conditions: [{type: Ready, status: 'True'}]\n");
        let s = pod_state(&p);
        assert!(s.terminating && s.ready);
    }
}
