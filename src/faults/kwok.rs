//! Faults on kwok's simulated nodes: a simulated node is alive while kwok manages it (renews
//! its Lease); kwok manages the nodes labelled [`MANAGED_LABEL`]`=up`. A node-shutdown removes
//! the label: kwok stops renewing the Lease and stops acting on the node's pods, as a powered
//! off kubelet would, and the real node lifecycle controller marks it NotReady after its grace
//! period. Healing puts the label back: kwok takes the Lease again and the node is Ready.
//! Powering off (fencing) is the same act. There is no data path to cut, so this backend
//! carries out node-shutdown only.

use super::{Backend, Effect, NodeControl, NodeError, NodeFault, PowerState};
use crate::spec::FaultKind;
use crate::timeline::TimeZeroBasis;
use futures::future::BoxFuture;
use futures::FutureExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use std::time::SystemTime;

pub use crate::vocab::{KWOK_MANAGED_LABEL as MANAGED_LABEL, SIMULATED_LABEL};

#[derive(Clone)]
pub struct KwokNodeControl {
    client: Client,
}

impl KwokNodeControl {
    pub fn new(client: Client) -> KwokNodeControl {
        KwokNodeControl { client }
    }

    async fn set_managed(&self, node: &str, up: bool) -> Result<(), NodeError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let value = if up {
            serde_json::Value::String("up".into())
        } else {
            serde_json::Value::Null
        };
        let patch = serde_json::json!({"metadata": {"labels": {MANAGED_LABEL: value}}});
        nodes
            .patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ())
            .map_err(|e| NodeError::Node {
                node: node.into(),
                detail: format!("label {MANAGED_LABEL}: {e}"),
            })
    }

    async fn node(&self, node: &str) -> Result<Node, NodeError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        match nodes.get_opt(node).await {
            Ok(Some(n)) => Ok(n),
            Ok(None) => Err(NodeError::Node {
                node: node.into(),
                detail: "no such node".into(),
            }),
            Err(e) => Err(NodeError::Node {
                node: node.into(),
                detail: e.to_string(),
            }),
        }
    }
}

/// Whether a Node object is one of nodedown's simulated nodes.
pub fn is_simulated(node: &Node) -> bool {
    node.metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.get(SIMULATED_LABEL).map(String::as_str) == Some("true"))
}

fn managed(node: &Node) -> bool {
    node.metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.get(MANAGED_LABEL).map(String::as_str) == Some("up"))
}

impl NodeControl for KwokNodeControl {
    fn capability(&self) -> super::Capability {
        super::Capability::kwok()
    }

    fn check_node<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async move {
            let n = self.node(node).await?;
            if is_simulated(&n) {
                Ok(())
            } else {
                Err(NodeError::Node {
                    node: node.into(),
                    detail: format!(
                        "not a simulated node (no {SIMULATED_LABEL}=true label): the kwok backend acts only on the nodes nodedown's simulated provider made"
                    ),
                })
            }
        }
        .boxed()
    }

    fn apply<'a>(&'a self, fault: &'a NodeFault) -> BoxFuture<'a, Result<Effect, NodeError>> {
        async move {
            if fault.kind != FaultKind::NodeShutdown || fault.graceful {
                return Err(NodeError::Unsupported {
                    backend: Backend::Kwok.as_str(),
                    fault: fault.kind.as_str().into(),
                });
            }
            self.set_managed(&fault.node, false).await?;
            // kwok sees the label go through its watch (a DELETED event for its selector) and
            // stops renewing: the heartbeat stops when the patch is applied, up to the watch's
            // delay. The patch's return is the best instant there is.
            Ok(Effect {
                at: SystemTime::now(),
                basis: TimeZeroBasis::RequestReturned,
            })
        }
        .boxed()
    }

    fn heal<'a>(&'a self, _kind: FaultKind, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async move { self.set_managed(node, true).await }.boxed()
    }

    fn power_off<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>> {
        async move { self.set_managed(node, false).await }.boxed()
    }

    fn power_state<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<PowerState, NodeError>> {
        async move {
            let n = self.node(node).await?;
            Ok(if managed(&n) {
                PowerState::On
            } else {
                PowerState::Off
            })
        }
        .boxed()
    }
}
