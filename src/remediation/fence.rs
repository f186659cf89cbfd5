//! The storage fence (effectful): a csi-addons `NetworkFence` for a node, made the way a storage
//! platform makes it (Rook creates one when a node gets the out-of-service taint): the node's
//! addresses as CIDR blocks, the `NetworkFenceClass` whose provisioner is the workload's CSI
//! driver, `fenceState: Fenced`; then the fence controller's `status.result` is awaited. Undone
//! by deleting it: the controller's finalizer unfences the node before the object goes.

use super::{api_err, is_not_found, RemediationError};
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim};
use kube::api::{DeleteParams, DynamicObject, ListParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::{Api, Client};
use std::collections::HashMap;
use std::time::Duration;

use crate::observe::{csi_addons_resource as resource, network_fence_resource};

/// How long the storage may take to report a fence in place, or to unfence and let the object go.
pub const FENCE_TIMEOUT: Duration = Duration::from_secs(60);

fn fences(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &network_fence_resource())
}

/// Every node's addresses as the single-address blocks a fence names (`172.18.0.2/32` →
/// node): what tells whose fence a NetworkFence someone else made is.
pub async fn node_clients(client: &Client) -> Result<HashMap<String, String>, FenceError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let list = nodes
        .list(&ListParams::default())
        .await
        .map_err(api_err("list", "Nodes"))?;
    let mut out = HashMap::new();
    for n in list {
        let name = n.metadata.name.clone().unwrap_or_default();
        for a in n.status.and_then(|s| s.addresses).unwrap_or_default() {
            if let Some(block) = address_block(&a.address) {
                out.insert(block, name.clone());
            }
        }
    }
    Ok(out)
}

/// Why a storage fence cannot be made, or did not take.
#[derive(Debug, thiserror::Error)]
pub enum FenceError {
    #[error(transparent)]
    Api(#[from] RemediationError),
    /// The cluster has no way to fence the workload's storage.
    #[error("{0}")]
    Unavailable(String),
    /// The fence controller reported `status.result: Failed`.
    #[error("NetworkFence {name}: the storage reported Failed: {message}")]
    Failed { name: String, message: String },
    #[error("NetworkFence {name}: {what} within {}s", FENCE_TIMEOUT.as_secs())]
    Timeout { name: String, what: &'static str },
    /// The node's kubelet could not say which pods it runs.
    #[error("the kubelet of {node}: {detail}")]
    Kubelet { node: String, detail: String },
}

/// The CSI drivers of the workload's volumes (the PersistentVolumes bound to the claims of
/// namespace `ns`), sorted, each once.
pub async fn workload_drivers(client: &Client, ns: &str) -> Result<Vec<String>, FenceError> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let list = claims
        .list(&ListParams::default())
        .await
        .map_err(api_err("list the claims of", ns))?;
    let mut drivers = Vec::new();
    for claim in list {
        let Some(pv) = claim.spec.and_then(|s| s.volume_name) else {
            continue;
        };
        let pv = pvs
            .get(&pv)
            .await
            .map_err(api_err("get PersistentVolume", &pv))?;
        if let Some(csi) = pv.spec.and_then(|s| s.csi) {
            drivers.push(csi.driver);
        }
    }
    drivers.sort();
    drivers.dedup();
    Ok(drivers)
}

/// The `NetworkFenceClass` whose provisioner is `driver` (the first by name), if the cluster
/// has the API and such a class.
pub async fn class_for(client: &Client, driver: &str) -> Result<Option<String>, FenceError> {
    let classes: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &resource("NetworkFenceClass", "networkfenceclasses"),
    );
    let list = match classes.list(&ListParams::default()).await {
        Ok(list) => list,
        Err(e) if is_not_found(&e) => return Ok(None), // no csi-addons CRDs here
        Err(e) => return Err(api_err("list", "NetworkFenceClasses")(e).into()),
    };
    let mut names: Vec<String> = list
        .into_iter()
        .filter(|c| c.data["spec"]["provisioner"].as_str() == Some(driver))
        .filter_map(|c| c.metadata.name)
        .collect();
    names.sort();
    Ok(names.into_iter().next())
}

/// The node's addresses (InternalIP, ExternalIP) as single-address CIDR blocks: what its
/// storage clients connect from.
pub async fn node_cidrs(client: &Client, node: &str) -> Result<Vec<String>, FenceError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let n = nodes.get(node).await.map_err(api_err("get Node", node))?;
    let mut cidrs = Vec::new();
    for a in n.status.and_then(|s| s.addresses).unwrap_or_default() {
        if a.type_ != "InternalIP" && a.type_ != "ExternalIP" {
            continue;
        }
        if let Some(block) = address_block(&a.address) {
            cidrs.push(block);
        }
    }
    cidrs.sort();
    cidrs.dedup();
    Ok(cidrs)
}

/// A node address as the single-address block a fence names (`172.18.0.2/32`); `None` for
/// what is not an IP address.
fn address_block(address: &str) -> Option<String> {
    let ip = address.parse::<std::net::IpAddr>().ok()?;
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    Some(format!("{ip}/{bits}"))
}

/// The name of the run's fence of `node`: the run's namespace (unique per run) and the node,
/// cut to a valid object name.
pub fn fence_name(namespace: &str, node: &str) -> String {
    let mut name: String = format!("{namespace}-{node}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(253)
        .collect();
    while name.ends_with(['-', '.']) {
        name.pop();
    }
    name
}

/// Creates the fence (`fenceState: Fenced`). An existing one of the same name is kept (a
/// retried remediation of the same run).
pub async fn create(
    client: &Client,
    name: &str,
    class: &str,
    cidrs: &[String],
    labels: &[(&str, &str)],
) -> Result<(), FenceError> {
    let mut obj = DynamicObject::new(name, &resource("NetworkFence", "networkfences"));
    obj.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    obj.data = serde_json::json!({
        "spec": {
            "networkFenceClassName": class,
            "fenceState": "Fenced",
            "cidrs": cidrs,
        }
    });
    match fences(client).create(&PostParams::default(), &obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(()),
        Err(e) => Err(api_err("create NetworkFence", name)(e).into()),
    }
}

/// The fence's `status.result` once the controller set it: `Ok(())` for Succeeded, the
/// controller's message for Failed.
pub async fn await_result(client: &Client, name: &str) -> Result<(), FenceError> {
    let decided = |o: Option<&DynamicObject>| {
        o.and_then(|o| o.data["status"]["result"].as_str())
            .is_some_and(|r| r == "Succeeded" || r == "Failed")
    };
    let found = tokio::time::timeout(
        FENCE_TIMEOUT,
        await_condition(fences(client), name, decided),
    )
    .await;
    let obj = match found {
        Err(_) => {
            return Err(FenceError::Timeout {
                name: name.into(),
                what: "no status.result from the storage's fence controller",
            })
        }
        Ok(Err(e)) => {
            return Err(FenceError::Unavailable(format!(
                "NetworkFence {name}: watching it: {e}"
            )))
        }
        Ok(Ok(obj)) => obj,
    };
    let status = obj.as_ref().map(|o| &o.data["status"]);
    match status.and_then(|s| s["result"].as_str()) {
        Some("Succeeded") => Ok(()),
        _ => Err(FenceError::Failed {
            name: name.into(),
            message: status
                .and_then(|s| s["message"].as_str())
                .unwrap_or("(no message)")
                .into(),
        }),
    }
}

/// Deletes the fence and waits until it is gone (the controller unfences the node, then lets
/// the object go). `Ok(false)`: there was none.
async fn delete_and_await_gone(client: &Client, name: &str) -> Result<bool, FenceError> {
    let api = fences(client);
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(e) if is_not_found(&e) => return Ok(false),
        Err(e) => return Err(api_err("delete NetworkFence", name)(e).into()),
    }
    let gone = tokio::time::timeout(
        FENCE_TIMEOUT,
        await_condition(api, name, kube::runtime::conditions::is_deleted("")),
    )
    .await;
    match gone {
        Ok(Ok(_)) => Ok(true),
        Ok(Err(e)) => Err(FenceError::Unavailable(format!(
            "NetworkFence {name}: watching its deletion: {e}"
        ))),
        Err(_) => Err(FenceError::Timeout {
            name: name.into(),
            what:
                "still there (its finalizer did not go: is the storage's fence controller running?)",
        }),
    }
}

/// How many pods of namespace `ns` the node's kubelet still runs, by its own account (its
/// `/pods` endpoint through the API server's node proxy): a pod deleted from the API while its
/// node was cut off keeps running there until the kubelet hears of it.
pub async fn kubelet_pods_of(client: &Client, node: &str, ns: &str) -> Result<usize, FenceError> {
    let kubelet = |detail: String| FenceError::Kubelet {
        node: node.to_string(),
        detail,
    };
    let request = http::Request::get(format!("/api/v1/nodes/{node}/proxy/pods"))
        .body(Vec::new())
        .map_err(|e| kubelet(e.to_string()))?;
    let text = tokio::time::timeout(Duration::from_secs(5), client.request_text(request))
        .await
        .map_err(|_| kubelet("no answer within 5s".into()))?
        .map_err(|e| kubelet(e.to_string()))?;
    let list: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| kubelet(e.to_string()))?;
    Ok(list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|p| p["metadata"]["namespace"].as_str() == Some(ns))
                .count()
        })
        .unwrap_or(0))
}

/// Lifts the fence `name` of `node` (deletes it and waits until it is gone: its finalizer
/// unfences first): the `unfenced` event to record, saying `why`, or `None` when there was no
/// such fence.
pub async fn lift(
    client: &Client,
    name: &str,
    node: &str,
    why: &str,
) -> Result<Option<crate::timeline::EventKind>, FenceError> {
    Ok(delete_and_await_gone(client, name).await?.then(|| {
        crate::timeline::EventKind::NetworkFence {
            name: name.to_string(),
            node: node.to_string(),
            cidrs: Vec::new(),
            state: crate::timeline::FenceState::Unfenced,
            message: Some(why.to_string()),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_is_named_after_the_run_and_the_node() {
        assert_eq!(
            fence_name("nd-storage-fence-1-ab12", "nodedown-worker"),
            "nd-storage-fence-1-ab12-nodedown-worker"
        );
        assert_eq!(fence_name("nd-x", "Node_1."), "nd-x-node-1");
        assert_eq!(fence_name(&"a".repeat(300), "n").len(), 253);
    }
}
