//! Carrying out a remediation (effectful): the dispatch from the experiment's remediation to
//! the API calls (and, for a fenced taint, the power-off), each undo journaled before its
//! action. The runner decides when; this decides how.

use super::{
    add_out_of_service_taint, delete_node, delete_volume_attachments, force_delete_pod, get_node,
    RemediationError, OUT_OF_SERVICE_KEY,
};
use crate::faults::{self, NodeControl};
use crate::journal::{Journal, Undo};
use crate::spec::{FaultKind, Fence, RemediationSpec};
use crate::timeline::{EventKind, FenceState};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use std::sync::Arc;

/// Why a remediation could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Api(#[from] RemediationError),
    /// The undo could not be journaled: the action was not taken.
    #[error("journal: {0}; the action was not taken")]
    Journal(#[from] std::io::Error),
    /// No backend here can power the node off, so the fenced taint was not applied.
    #[error("fence {node}: {reason}")]
    NoFence {
        node: String,
        reason: crate::faults::NoBackend,
    },
    /// Powering the node off (or confirming it off) failed.
    #[error("fence {node}: {source}")]
    Fence {
        node: String,
        source: crate::faults::NodeError,
    },
    /// The storage fence could not be made, or the storage did not confirm it: the taint was
    /// not applied.
    #[error("storage fence of {node}: {source}")]
    StorageFence {
        node: String,
        source: Box<super::fence::FenceError>,
    },
}

/// What a remediation acts on.
pub struct Target<'a> {
    pub client: &'a kube::Client,
    /// The workload's namespace and its pods on the dead node (one per instance).
    pub namespace: &'a str,
    pub pods: &'a [String],
    pub node: &'a str,
    /// The backend that applied the fault (it fences, when it can power nodes off).
    pub fault_control: &'a Arc<dyn NodeControl>,
    /// Every backend of the invocation (the fault's among them).
    pub controls: &'a [Arc<dyn NodeControl>],
}

/// Carries out `remediation` on `target`, journaling each undo first. Returns what was done
/// (for the `remediation-applied` event), or `None` when there was nothing to do (no
/// remediation, an external one, a Node already gone). `note` records what the run should
/// know on the way (a confirmed fence, the storage fence's states) as events.
pub async fn apply(
    remediation: &RemediationSpec,
    target: &Target<'_>,
    journal: &Journal,
    record: impl Fn(EventKind),
) -> Result<Option<String>, ApplyError> {
    let note = |message: String| record(EventKind::Note { message });
    let Target {
        client,
        namespace: ns,
        pods,
        node,
        ..
    } = *target;
    let force_delete = || async {
        let api: Api<Pod> = Api::namespaced(client.clone(), ns);
        for pod in pods {
            force_delete_pod(&api, pod).await?;
        }
        Ok::<String, ApplyError>(match pods {
            [] => "no pod of the workload on it".to_string(),
            [one] => format!("pod {one} deleted with grace period 0"),
            many => format!(
                "{} pods deleted with grace period 0 ({})",
                many.len(),
                many.join(", ")
            ),
        })
    };
    let nodes: Api<Node> = Api::all(client.clone());
    let jrec = |u: Undo| journal.record(u).map(|_| ());
    // Fence first, whatever the action: the node powered off, or refused by its storage.
    match remediation.fence() {
        Fence::None => {}
        Fence::Storage => {
            storage_fence(target, journal, &record)
                .await
                .map_err(|source| ApplyError::StorageFence {
                    node: node.into(),
                    source: Box::new(source),
                })?;
        }
        Fence::Power => {
            // Make sure the node is really off before telling the cluster it is: through the
            // fault's own backend when it can power nodes off, else any that can.
            let caps: Vec<_> = target.controls.iter().map(|c| c.capability()).collect();
            let own = target
                .controls
                .iter()
                .position(|c| Arc::ptr_eq(c, target.fault_control))
                .unwrap_or(usize::MAX);
            let power = faults::choose_fence(&caps, own)
                .map(|i| target.controls[i].clone())
                .map_err(|reason| ApplyError::NoFence {
                    node: node.into(),
                    reason,
                })?;
            jrec(Undo::HealFault {
                backend: power.backend(),
                fault: FaultKind::NodeShutdown,
                node: node.into(),
            })?;
            faults::fence(power.as_ref(), node)
                .await
                .map_err(|source| ApplyError::Fence {
                    node: node.into(),
                    source,
                })?;
            note(format!(
                "fenced: {node} powered off through {} and confirmed off",
                power.backend().as_str()
            ));
        }
    }
    let detail = match remediation {
        RemediationSpec::None | RemediationSpec::External => return Ok(None),
        RemediationSpec::OutOfServiceTaint { .. } => {
            jrec(Undo::RemoveTaint {
                node: node.into(),
                key: OUT_OF_SERVICE_KEY.into(),
            })?;
            add_out_of_service_taint(&nodes, node).await?;
            super::out_of_service_detail()
        }
        RemediationSpec::ForceDeletePod { .. } => force_delete().await?,
        RemediationSpec::DeleteNode { .. } => {
            let Some(obj) = get_node(&nodes, node).await? else {
                return Ok(None);
            };
            let object = serde_json::to_value(&obj).expect("a Node serializes");
            jrec(Undo::RestoreNode {
                node: node.into(),
                object,
            })?;
            delete_node(&nodes, node).await?;
            format!("Node {node} deleted")
        }
        RemediationSpec::DeleteVolumeattachment { .. } => {
            let done = force_delete().await?;
            let deleted = delete_volume_attachments(client, ns, node).await?;
            if deleted.is_empty() {
                format!("{done}; no VolumeAttachment of its volumes on {node} to delete")
            } else {
                format!(
                    "{done}; VolumeAttachment {} on {node} deleted",
                    deleted.join(", ")
                )
            }
        }
    };
    Ok(Some(detail))
}

/// Fences the target node at its storage, as a platform does: a `NetworkFence` for the node's
/// addresses through the `NetworkFenceClass` of the workload's CSI driver, journaled before it
/// is made, then the storage's `status.result` awaited. Each step is an event
/// (`network-fence`: requested, then succeeded or failed).
async fn storage_fence(
    target: &Target<'_>,
    journal: &Journal,
    record: &impl Fn(EventKind),
) -> Result<(), super::fence::FenceError> {
    use super::fence::{self, FenceError};
    let Target {
        client,
        namespace: ns,
        node,
        ..
    } = *target;
    let drivers = fence::workload_drivers(client, ns).await?;
    let driver = match drivers.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(FenceError::Unavailable(format!(
                "no volume of namespace {ns} is a CSI volume: a storage fence needs a CSI driver with \
                 csi-addons network fencing (use `fence: true` to power the node off instead)"
            )))
        }
        many => {
            return Err(FenceError::Unavailable(format!(
                "the workload's volumes belong to {} CSI drivers ({}): one storage fence cannot cover them",
                many.len(),
                many.join(", ")
            )))
        }
    };
    let class = fence::class_for(client, &driver).await?.ok_or_else(|| {
        FenceError::Unavailable(format!(
            "no NetworkFenceClass (csiaddons.openshift.io/v1alpha1) names {driver} as its provisioner: \
             the storage cannot be asked to fence (install the driver's csi-addons support, or use \
             `fence: true` to power the node off)"
        ))
    })?;
    let cidrs = fence::node_cidrs(client, node).await?;
    if cidrs.is_empty() {
        return Err(FenceError::Unavailable(format!(
            "Node {node} reports no InternalIP or ExternalIP address to fence"
        )));
    }
    let name = fence::fence_name(ns, node);
    journal
        .record(Undo::DeleteNetworkFence {
            name: name.clone(),
            node: node.into(),
            namespace: ns.into(),
        })
        .map_err(|e| FenceError::Unavailable(format!("journal: {e}; the fence was not made")))?;
    let event = |state, message: Option<String>| EventKind::NetworkFence {
        name: name.clone(),
        node: node.into(),
        cidrs: cidrs.clone(),
        state,
        message,
    };
    record(event(
        FenceState::Requested,
        Some(format!("class {class} (driver {driver})")),
    ));
    fence::create(
        client,
        &name,
        &class,
        &cidrs,
        &[(crate::workload::RUN_LABEL, ns)],
    )
    .await?;
    match fence::await_result(client, &name).await {
        Ok(()) => {
            record(event(FenceState::Succeeded, None));
            Ok(())
        }
        Err(e) => {
            record(event(FenceState::Failed, Some(e.to_string())));
            Err(e)
        }
    }
}
