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

/// What is done about the dead node, by kind (the experiment's `remediation.kind`; its
/// settings are `spec::RemediationSpec`'s): the word results, sheets and curves carry.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum RemediationKind {
    /// Nothing: what Kubernetes does by itself.
    None,
    /// Someone else's remediator, observed.
    External,
    OutOfServiceTaint,
    ForceDeletePod,
    DeleteNode,
    DeleteVolumeattachment,
}

impl RemediationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RemediationKind::None => "none",
            RemediationKind::External => "external",
            RemediationKind::OutOfServiceTaint => "out-of-service-taint",
            RemediationKind::ForceDeletePod => "force-delete-pod",
            RemediationKind::DeleteNode => "delete-node",
            RemediationKind::DeleteVolumeattachment => "delete-volumeattachment",
        }
    }
}

impl std::fmt::Display for RemediationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.as_str())
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

// The shared keys: labels, taints and storage classes that several layers name (the spec checks
// them, the workload and the backends write them, the runner and the reports read them).
// Defined once here; the modules that own their meaning re-export them.

/// The context name of the cluster nodedown runs in, reached through its pod's service account
/// (`--context in-cluster`, and the current context in a pod that has no kubeconfig).
pub const IN_CLUSTER: &str = "in-cluster";
/// The storage class of testenv's shared host directory; nodedown creates its PersistentVolumes.
pub const SHARED_CLASS: &str = "nodedown-shared";
/// Where every testenv node mounts the shared host directory.
pub const SHARED_NODE_PATH: &str = "/mnt/nodedown-shared";
/// testenv's node-local storage class: nodedown makes one PersistentVolume per worker node,
/// pinned to it; the data stays on that node (no failover possible without it).
pub const LOCAL_CLASS: &str = "nodedown-local";
/// Where a node-local volume lives inside its node.
pub const LOCAL_NODE_PATH: &str = "/var/lib/nodedown-local";
/// testenv's storage that attaches (its CSI driver, `testenv/csi`, with the real
/// external-attacher): volumes in the shared directory, attached to one node at a time through
/// VolumeAttachments. nodedown makes the PersistentVolumes (no provisioner runs).
pub const ATTACH_CLASS: &str = "nodedown-attach";
/// The CSI driver behind [`ATTACH_CLASS`].
pub const ATTACH_DRIVER: &str = "csi.nodedown.dev";
/// Where that driver keeps a volume, under the shared directory: `csi/volumes/<handle>`.
pub const ATTACH_VOLUMES_DIR: &str = "csi/volumes";
/// The host directory behind it on the testenv machine (the default of `--shared-dir`).
pub const DEFAULT_SHARED_DIR: &str = "/var/lib/nodedown/shared";
/// Label on everything nodedown creates, with the run id as value.
pub const RUN_LABEL: &str = "nodedown.dev/run";
/// Label on a StatefulSet's pods naming its instance (the StatefulSet): with `app`, its selector.
pub const INSTANCE_LABEL: &str = "nodedown.dev/instance";
/// The label kwok selects the nodes it simulates by (`--manage-nodes-with-label-selector`).
pub const KWOK_MANAGED_LABEL: &str = "nodedown.dev/kwok-managed";
/// Every simulated node carries this label (whether or not kwok manages it right now).
pub const SIMULATED_LABEL: &str = "nodedown.dev/simulated";
/// The taint every simulated node carries; the simulated workload tolerates it.
pub const SIMULATED_TAINT: &str = "nodedown.dev/simulated";
/// The taint that keeps a simulated run's instances off the nodes that will not be lost while
/// they are placed.
pub const PLACING_TAINT: &str = "nodedown.dev/placing";
/// KEP-2268's taint: pods without a matching toleration are deleted by the pod GC and their
/// volumes detached at once.
/// The reason of the Event a storage posts on a `NetworkFence` when it refused an operation of
/// a fenced client (testenv's fence controller does; nodedown reads it as the storage's word).
pub const FENCE_REFUSED_REASON: &str = "ClientRefused";
/// Where Events about cluster-scoped objects (a `NetworkFence`) are.
pub const CLUSTER_EVENTS_NAMESPACE: &str = "default";
pub const OUT_OF_SERVICE_KEY: &str = "node.kubernetes.io/out-of-service";
/// The value nodedown gives [`OUT_OF_SERVICE_KEY`] (the one the Kubernetes docs use).
pub const OUT_OF_SERVICE_VALUE: &str = "nodeshutdown";
/// The node-role labels of a control-plane node (the second is the pre-1.24 name).
pub const CONTROL_PLANE_LABELS: [&str; 2] = [
    "node-role.kubernetes.io/control-plane",
    "node-role.kubernetes.io/master",
];

/// The namespace of the invocation lock's Leases.
pub const LOCK_NAMESPACE: &str = "default";
/// The invocation lock: one Lease per node, `nodedown-node-<node>` (one nodedown invocation per
/// node at a time).
pub const LOCK_PREFIX: &str = "nodedown-node-";
/// The label every lock Lease carries (value `node`): how `cleanup` finds them.
pub const LOCK_LABEL: &str = "nodedown.dev/lock";
/// The label of everything an invocation makes that outlives one run's heal (its runs'
/// namespaces, the node agent's): the invocation's id, so its last wait and its heal see only
/// its own objects, never those of another invocation on other nodes.
pub const INVOCATION_LABEL: &str = "nodedown.dev/invocation";
