//! Faults (effectful edge): the **node-control seam**. A fault acts on ONE node through a
//! [`NodeControl`] backend, which applies it, heals it, and powers nodes off and on. The runner
//! journals the heal — naming the backend — before it applies the fault, so `nodedown cleanup`
//! asks the same backend to undo it.
//!
//! Backends: [`DockerNodeControl`] for kind nodes (containers reached through the Docker API).
//! A node agent (a privileged pod on the target node) and power hooks (the user's commands) are
//! the next implementations; each says which faults it can carry out.

pub mod agent;
mod api;
mod docker;
pub mod hooks;
pub mod partition;

pub use agent::AgentNodeControl;
pub use api::ApiPodControl;
pub use docker::DockerNodeControl;
pub use hooks::{HooksNodeControl, PowerHooks};
pub use partition::{heal_partition_script, partition_script, PARTITION_CHAIN};

use crate::spec::FaultKind;
use crate::timeline::TimeZeroBasis;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use std::time::SystemTime;

/// Which backend carried out a fault; recorded with every journaled heal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// kind node containers through the Docker API.
    #[default]
    Docker,
    /// The user's power commands.
    PowerHooks,
    /// `nodedown agent`, a privileged pod on the target node.
    Agent,
    /// The API server (pod faults: a graceful pod delete).
    Api,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Docker => "docker",
            Backend::PowerHooks => "power-hooks",
            Backend::Agent => "agent",
            Backend::Api => "api",
        }
    }
}

/// A fault bound to its target node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeFault {
    pub kind: FaultKind,
    pub node: String,
    /// For a partition: the addresses to cut the node off from (the other nodes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peers: Vec<String>,
    /// How long the fault may last at most: a backend that can (the agent) undoes it by itself
    /// then, even when the harness is gone.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::spec::optional_duration"
    )]
    pub lease: Option<std::time::Duration>,
    /// For a power-off: a clean shutdown (`systemctl poweroff` in the node) instead of a hard one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub graceful: bool,
    /// For a pod fault: the pod (and its main container) acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodTarget>,
}

/// The workload pod a pod fault acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodTarget {
    pub namespace: String,
    pub name: String,
    /// The main container's runtime id (`containerd://…` as the pod status gives it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
}

/// When a fault took effect, and what that instant was taken from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effect {
    pub at: SystemTime,
    pub basis: TimeZeroBasis,
}

/// Whether a node's machine runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PowerState {
    On,
    Off,
}

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterError),
    #[error("the {backend} backend cannot carry out {fault}")]
    Unsupported {
        backend: &'static str,
        fault: String,
    },
    #[error("node {node}: {detail}")]
    Node { node: String, detail: String },
}

/// Control over the nodes of one cluster: one job, one fault at a time, each with its heal.
pub trait NodeControl: Send + Sync {
    fn backend(&self) -> Backend;
    /// Whether this backend can apply (and heal) `kind`.
    fn supports(&self, kind: FaultKind) -> bool;
    /// Checks that `node` is one this backend can reach, before anything is journaled.
    fn check_node<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>>;
    /// Applies the fault; returns when it is in effect, with the best evidence of when.
    fn apply<'a>(&'a self, fault: &'a NodeFault) -> BoxFuture<'a, Result<Effect, NodeError>>;
    /// Undoes a fault of `kind` on `node` (idempotent: harmless when it is not in place).
    fn heal<'a>(&'a self, kind: FaultKind, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>>;
    /// Hard power-off (fencing); harmless when already off.
    fn power_off<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<(), NodeError>>;
    fn power_state<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Result<PowerState, NodeError>>;
    /// Whether this backend can shut a node down cleanly (`graceful: true`), not only hard.
    fn supports_graceful_shutdown(&self) -> bool {
        false
    }
}

/// Fencing: power the node off and confirm it is off (polling `power_state` for up to 5 s).
pub async fn fence(control: &dyn NodeControl, node: &str) -> Result<(), NodeError> {
    control.power_off(node).await?;
    for _ in 0..50 {
        if control.power_state(node).await? == PowerState::Off {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(NodeError::Node {
        node: node.into(),
        detail: "still powered on 5s after the power-off (fence not confirmed)".into(),
    })
}
