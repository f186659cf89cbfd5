//! Remediations (effectful): what operators do about a dead node, done through the API server.

mod apply;
pub mod fence;
pub use apply::{apply, ApplyError, Target};

use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::Api;

pub use crate::vocab::{OUT_OF_SERVICE_KEY, OUT_OF_SERVICE_VALUE};

#[derive(Debug, thiserror::Error)]
pub enum RemediationError {
    #[error("{action} on {object}: {source}")]
    Api {
        action: &'static str,
        object: String,
        source: kube::Error,
    },
    #[error("update taints on {node}: the Node changed under each of {attempts} attempts (someone else writes it as fast as nodedown reads it)")]
    Conflicts { node: String, attempts: usize },
}

fn api_err(action: &'static str, object: &str) -> impl FnOnce(kube::Error) -> RemediationError {
    let object = object.to_string();
    move |source| RemediationError::Api {
        action,
        object,
        source,
    }
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_conflict())
}

pub fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_not_found())
}

/// The field manager of every write nodedown makes to a Node: its taint edits show under this
/// name in managedFields, the way nodedown tells an external remediator's taint from its own.
pub const FIELD_MANAGER: &str = "nodedown";

/// How many write conflicts a taint edit rides out before giving up.
const TAINT_RETRIES: usize = 10;

/// Changes a node's taints with get + replace (optimistic concurrency on the resourceVersion,
/// as the node lifecycle controller patches taints), retrying a bounded number of times on
/// write conflicts. Returns false when the node does not exist.
///
/// Not server-side apply: `spec.taints` is an atomic list for SSA (kubernetes#117142 is open),
/// so an apply of nodedown's one taint would take over the whole list and, applied again
/// without the others, remove the node lifecycle controller's and everybody else's taints.
async fn edit_taints(
    nodes: &Api<Node>,
    node: &str,
    edit: impl Fn(&mut Vec<Taint>),
) -> Result<bool, RemediationError> {
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    for _ in 0..TAINT_RETRIES {
        let mut obj = match nodes.get_opt(node).await.map_err(api_err("get", node))? {
            Some(n) => n,
            None => return Ok(false),
        };
        let spec = obj.spec.get_or_insert_with(Default::default);
        let mut taints = spec.taints.take().unwrap_or_default();
        edit(&mut taints);
        spec.taints = if taints.is_empty() {
            None
        } else {
            Some(taints)
        };
        match nodes.replace(node, &params, &obj).await {
            Ok(_) => return Ok(true),
            Err(e) if is_conflict(&e) => continue,
            Err(e) => return Err(api_err("update taints", node)(e)),
        }
    }
    Err(RemediationError::Conflicts {
        node: node.into(),
        attempts: TAINT_RETRIES,
    })
}

pub async fn add_out_of_service_taint(
    nodes: &Api<Node>,
    node: &str,
) -> Result<bool, RemediationError> {
    edit_taints(nodes, node, |taints| {
        if !taints.iter().any(|t| t.key == OUT_OF_SERVICE_KEY) {
            taints.push(Taint {
                key: OUT_OF_SERVICE_KEY.into(),
                value: Some(OUT_OF_SERVICE_VALUE.into()),
                effect: "NoExecute".into(),
                time_added: None,
            });
        }
    })
    .await
}

/// What the out-of-service taint is, as `remediation-applied` says it.
pub fn out_of_service_detail() -> String {
    format!("{OUT_OF_SERVICE_KEY}={OUT_OF_SERVICE_VALUE}:NoExecute")
}

/// Appends the out-of-service taint in one write, with no read first: a JSON patch that the API
/// server applies to its latest Node (retrying its own conflicts), so a node lifecycle
/// controller writing the same Node at that moment costs no extra round trip — the reaction of
/// a burst of lost nodes is one watch delivery and one write each. When the patch cannot apply
/// (the Node has no taints list yet, or already carries the taint: refused as invalid), falls
/// back to [`add_out_of_service_taint`]'s read-edit-write. `Ok(false)`: the Node is gone.
pub async fn append_out_of_service_taint(
    nodes: &Api<Node>,
    node: &str,
) -> Result<bool, RemediationError> {
    let patch = serde_json::from_value(serde_json::json!([{
        "op": "add",
        "path": "/spec/taints/-",
        "value": {"key": OUT_OF_SERVICE_KEY, "value": OUT_OF_SERVICE_VALUE, "effect": "NoExecute"},
    }]))
    .expect("a valid JSON patch");
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    match nodes.patch(node, &params, &Patch::Json::<()>(patch)).await {
        Ok(_) => Ok(true),
        Err(e) if is_not_found(&e) => Ok(false),
        Err(kube::Error::Api(s)) if s.code == 422 || s.code == 500 => {
            add_out_of_service_taint(nodes, node).await
        }
        Err(e) => Err(api_err("patch taints", node)(e)),
    }
}

/// Adds taint `key=value:effect` (replacing one of the same key).
pub async fn add_taint(
    nodes: &Api<Node>,
    node: &str,
    key: &str,
    value: &str,
    effect: &str,
) -> Result<bool, RemediationError> {
    edit_taints(nodes, node, |taints| {
        taints.retain(|t| t.key != key);
        taints.push(Taint {
            key: key.into(),
            value: Some(value.into()),
            effect: effect.into(),
            time_added: None,
        });
    })
    .await
}

pub async fn remove_taint(
    nodes: &Api<Node>,
    node: &str,
    key: &str,
) -> Result<bool, RemediationError> {
    edit_taints(nodes, node, |taints| taints.retain(|t| t.key != key)).await
}

/// `kubectl delete pod --force --grace-period=0`.
pub async fn force_delete_pod(pods: &Api<Pod>, pod: &str) -> Result<(), RemediationError> {
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    match pods.delete(pod, &params).await {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(api_err("force-delete", pod)(e)),
    }
}

/// Deletes the VolumeAttachments that attach the volumes claimed in namespace `ns` to `node`
/// (what operators do by hand to free a volume stuck on a dead node). Returns their names.
/// The external-attacher then calls the driver's ControllerUnpublish and removes its finalizer;
/// the object is gone when the storage says the volume is detached.
pub async fn delete_volume_attachments(
    client: &kube::Client,
    ns: &str,
    node: &str,
) -> Result<Vec<String>, RemediationError> {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use k8s_openapi::api::storage::v1::VolumeAttachment;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let volumes: std::collections::BTreeSet<String> = claims
        .list(&Default::default())
        .await
        .map_err(api_err("list PersistentVolumeClaims in", ns))?
        .items
        .into_iter()
        .filter_map(|c| c.spec.and_then(|s| s.volume_name))
        .collect();
    let vas: Api<VolumeAttachment> = Api::all(client.clone());
    let mut deleted = Vec::new();
    for va in vas
        .list(&Default::default())
        .await
        .map_err(api_err("list", "VolumeAttachments"))?
        .items
    {
        let on_node = va.spec.node_name == node;
        let ours = va
            .spec
            .source
            .persistent_volume_name
            .as_ref()
            .is_some_and(|pv| volumes.contains(pv));
        let Some(name) = va.metadata.name.clone() else {
            continue;
        };
        if on_node && ours {
            match vas.delete(&name, &DeleteParams::default()).await {
                Ok(_) => deleted.push(name),
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(api_err("delete VolumeAttachment", &name)(e)),
            }
        }
    }
    Ok(deleted)
}

/// Deletes the Node object; returns it as it was (for the journal: recreate it if the kubelet
/// does not re-register the node by itself).
pub async fn get_node(nodes: &Api<Node>, node: &str) -> Result<Option<Node>, RemediationError> {
    nodes.get_opt(node).await.map_err(api_err("get", node))
}

pub async fn delete_node(nodes: &Api<Node>, node: &str) -> Result<(), RemediationError> {
    match nodes.delete(node, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(e) if is_not_found(&e) => Ok(()),
        Err(e) => Err(api_err("delete", node)(e)),
    }
}

/// Recreates a Node object from what it was (metadata reduced to name and labels).
pub async fn recreate_node(
    nodes: &Api<Node>,
    saved: &serde_json::Value,
) -> Result<(), RemediationError> {
    let mut node: Node = serde_json::from_value(saved.clone()).unwrap_or_default();
    let name = node.metadata.name.clone().unwrap_or_default();
    node.metadata = kube::api::ObjectMeta {
        name: Some(name.clone()),
        labels: node.metadata.labels.take(),
        ..Default::default()
    };
    node.status = None;
    if let Some(spec) = node.spec.as_mut() {
        if let Some(t) = spec.taints.as_mut() {
            t.retain(|t| !t.key.starts_with("node.kubernetes.io/"));
        }
    }
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(()),
        Err(e) => Err(api_err("recreate", &name)(e)),
    }
}

pub use crate::observe::{is_control_plane, node_is_ready};
