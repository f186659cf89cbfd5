//! The words every layer shares (pure, at the bottom of the imports): what a fault is and what
//! carried it out. Experiments name them (`spec`), events record them (`timeline`), the
//! backends act on them (`faults`); defined once here so that each of those can use them
//! without importing another.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// Power off: the node container is killed.
    NodeShutdown,
    /// The kubelet is stopped; the node's containers keep running (and writing).
    KubeletStop,
    /// The node is cut off from the control plane and the other nodes with iptables; its
    /// containers keep running (and writing to local and host-shared storage).
    NetworkPartition,
    /// The whole node is frozen (on kind: the node container is paused), not dead; with
    /// `duration` it thaws mid-run and its old pod resumes writing: the zombie writer.
    NodeFreeze,
    /// The workload's pod is deleted gracefully through the API; the node is fine. The
    /// controller makes a new pod (a StatefulSet: same name, new uid).
    PodDelete,
    /// The workload pod's main container gets SIGKILL in the node's container runtime; the pod
    /// and the node are fine. The kubelet restarts the container (same pod, new start time).
    ContainerKill,
}

impl FaultKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            FaultKind::NodeShutdown => "node-shutdown",
            FaultKind::KubeletStop => "kubelet-stop",
            FaultKind::NetworkPartition => "network-partition",
            FaultKind::NodeFreeze => "node-freeze",
            FaultKind::PodDelete => "pod-delete",
            FaultKind::ContainerKill => "container-kill",
        }
    }

    /// The fault acts on the pod or its container, not on the node: nothing to remediate, and
    /// the node never goes NotReady.
    pub fn is_pod_fault(&self) -> bool {
        matches!(self, FaultKind::PodDelete | FaultKind::ContainerKill)
    }
}

/// Which backend carried out a fault; recorded with every journaled heal.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
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
    /// kwok's simulated nodes (a node stops heartbeating).
    Kwok,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Docker => "docker",
            Backend::PowerHooks => "power-hooks",
            Backend::Agent => "agent",
            Backend::Api => "api",
            Backend::Kwok => "kwok",
        }
    }
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
