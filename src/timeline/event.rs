//! The events of a run: one JSON object per line of `events.jsonl`.
//!
//! Effectful code (watchers, the runner) creates them, stamped on receipt; pure code only
//! reads them. `at_ms` is monotonic milliseconds since the run started; `wall` is the wall
//! clock at the same moment (RFC 3339, UTC, milliseconds), for humans and for correlating with
//! container timestamps.

use serde::{Deserialize, Serialize};

/// A Node condition's status, as the API reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl ConditionStatus {
    /// From the API's string; anything unexpected is `Unknown`.
    pub fn parse(s: &str) -> ConditionStatus {
        match s {
            "True" => ConditionStatus::True,
            "False" => ConditionStatus::False,
            _ => ConditionStatus::Unknown,
        }
    }
}

/// A Pod's `status.phase`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PodPhase {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
}

impl PodPhase {
    /// From the API's string; a pod without a phase yet is `Pending`.
    pub fn parse(s: Option<&str>) -> PodPhase {
        match s {
            None | Some("Pending") => PodPhase::Pending,
            Some("Running") => PodPhase::Running,
            Some("Succeeded") => PodPhase::Succeeded,
            Some("Failed") => PodPhase::Failed,
            Some(_) => PodPhase::Unknown,
        }
    }
}

/// The API resource a watcher follows; a watch gap names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resource {
    Nodes,
    Pods,
    VolumeAttachments,
    Events,
    PersistentVolumeClaims,
    /// Events about NetworkFences (namespace `default`).
    FenceEvents,
    /// csi-addons NetworkFences made by someone else.
    NetworkFences,
}

/// One node as its kubelet describes itself (`status.nodeInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    pub name: String,
    pub os_image: String,
    pub kernel: String,
    pub container_runtime: String,
    pub kubelet: String,
}

/// Where a run happened, read from the cluster at setup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterFacts {
    /// The API server's version (`gitVersion`).
    pub kubernetes: String,
    pub nodes: Vec<NodeInfo>,
    pub storage_class: String,
    /// The StorageClass's provisioner (absent when the class does not exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioner: Option<String>,
    /// The CSIDriver's `attachRequired`, when the provisioner is a CSI driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach_required: Option<bool>,
}

/// The simulated cluster of a run (provider kwok): kwok's nodes against a real control plane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SimulatedCluster {
    /// The API server's version (`gitVersion`).
    pub kubernetes: String,
    /// Simulated nodes in the cluster during the run.
    pub nodes: usize,
    /// kwok's version.
    pub kwok: String,
    /// How long kwok's node Leases last.
    pub kwok_lease_seconds: u32,
    /// The kind cluster (its control plane).
    pub cluster: String,
}

/// The state of a storage fence (`network-fence` events).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FenceState {
    Requested,
    Succeeded,
    Failed,
    Unfenced,
}

/// What a fault's time zero (its `fault-injected` instant) was taken from, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeZeroBasis {
    /// The container runtime's own record of the node dying (Docker's `die` event, `timeNano`).
    RuntimeDieEvent,
    /// The fault is a rule or a stopped service: in effect when the command that put it in
    /// place returned.
    CommandReturned,
    /// No better evidence: the moment the request to apply the fault returned (an upper bound).
    RequestReturned,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub at_ms: u64,
    pub wall: String,
    #[serde(flatten)]
    pub what: EventKind,
}

/// A stage of a run: where its wall time went.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Namespace, volumes, the workload deployed.
    Setup,
    /// Waiting for the workload Running and Ready (and its first acknowledged write).
    SteadyState,
    /// The failover itself: inject, remediate, recover.
    Fault,
    /// Reading the ledger back after the failover.
    Collect,
    /// Undoing what the run did.
    Heal,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Setup => "setup",
            Stage::SteadyState => "steady-state",
            Stage::Fault => "fault",
            Stage::Collect => "collect",
            Stage::Heal => "heal",
        }
    }
}

impl std::fmt::Display for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The stage of a run that is the failover itself (fault to recovery: inject, remediate,
/// recover); every other stage is the harness's own time.
pub const FAILOVER_STAGE: Stage = Stage::Fault;

/// Every kind of event. Serialized with an `event` tag in kebab-case, e.g.
/// `{"at_ms":1200,"wall":"…","event":"node-ready","node":"w1","status":"False"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum EventKind {
    /// The run began (first line of every events.jsonl).
    RunStarted {
        run: String,
        experiment: String,
        variant: String,
        repetition: u32,
    },
    /// Where the run happened (versions, storage), read at setup.
    ClusterFacts(ClusterFacts),
    /// What is this run's own, recorded at setup before anything is deployed: its namespace,
    /// and in a parallel invocation its lane (1-based) and the lane's nodes. From this event on,
    /// the timeline counts only VolumeAttachments of the run's own volumes (its claims' volumes,
    /// or the ones nodedown made for it, named `<namespace>-…`). Absent in runs recorded before
    /// it existed: those attribute every VolumeAttachment on the target node, as they did.
    RunScope {
        namespace: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lane: Option<u32>,
        /// The nodes the workload is confined to (empty: the whole cluster).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        nodes: Vec<String>,
        /// The invocation was confined to some of the cluster's nodes (`--nodes`): another
        /// invocation may run on the others meanwhile, unseen by this one.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        confined: bool,
    },
    /// A claim of the run's namespace is bound to a PersistentVolume (`spec.volumeName`).
    ClaimBound { claim: String, pv: String },
    /// The workload's target pod ran and was Ready before the fault: the steady state.
    WorkloadReady {
        pod: String,
        uid: String,
        node: String,
    },
    /// The fault is about to be applied (its undo is already in the journal).
    FaultInjecting {
        fault: crate::vocab::FaultKind,
        node: String,
    },
    /// The fault took effect: time zero of the phases. `at_ms` is the best evidence of the
    /// effect (see `basis`), which can be earlier than the moment this line was written; the
    /// `fault-injecting` event before it and `returned_ms` bound it.
    FaultInjected {
        fault: crate::vocab::FaultKind,
        node: String,
        #[serde(default = "default_basis")]
        basis: TimeZeroBasis,
        /// The node-control backend that applied it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backend: Option<crate::vocab::Backend>,
        /// Run clock when the call that applied the fault returned.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        returned_ms: Option<u64>,
    },
    /// The fault was undone (e.g. the node container runs again).
    FaultHealed {
        fault: crate::vocab::FaultKind,
        node: String,
    },
    /// A Node's Ready condition as observed (emitted when it changes).
    NodeReady {
        node: String,
        status: ConditionStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A taint appeared on (added = true) or disappeared from a Node.
    NodeTaint {
        node: String,
        key: String,
        effect: String,
        added: bool,
        /// The field manager that owns the Node's taints after the change (from
        /// `metadata.managedFields`): who added or removed it, where the API says so.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// A Node object was seen for the first time / again.
    NodeAdded { node: String },
    /// A Node object disappeared.
    NodeDeleted { node: String },
    /// A workload pod as observed (emitted when any of these fields change).
    Pod {
        pod: String,
        uid: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
        phase: PodPhase,
        /// deletionTimestamp is set.
        terminating: bool,
        ready: bool,
        /// The container's `state.running.startedAt` as the kubelet reported it (seconds).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started_at: Option<String>,
        /// `status.reason` (e.g. `Terminated` when the kubelet's graceful node shutdown ended
        /// the pod, `Evicted`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A workload pod object is gone from the API server.
    PodDeleted {
        pod: String,
        uid: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        node: Option<String>,
    },
    /// A VolumeAttachment as observed (emitted when `attached` changes).
    VolumeAttachment {
        name: String,
        node: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pv: Option<String>,
        attached: bool,
    },
    /// A VolumeAttachment object is gone.
    VolumeAttachmentDeleted {
        name: String,
        node: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pv: Option<String>,
    },
    /// The harness applied a remediation (e.g. the taint is on the API server now).
    RemediationApplied {
        remediation: String,
        node: String,
        detail: String,
    },
    /// A csi-addons `NetworkFence` for the target node, as the harness asked for it and as its
    /// `status.result` was observed: `requested` when nodedown created it (its undo already in
    /// the journal), `succeeded` / `failed` when the storage's fence controller said so,
    /// `unfenced` when it was gone again (its finalizer unfenced the node first).
    NetworkFence {
        name: String,
        node: String,
        cidrs: Vec<String>,
        state: FenceState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The harness undid a remediation (e.g. removed the taint after the node came back).
    RemediationUndone {
        remediation: String,
        node: String,
        detail: String,
    },
    /// A Kubernetes Event about an object of the experiment.
    KubeEvent {
        object: String,
        reason: String,
        message: String,
        #[serde(rename = "type")]
        kind: String,
    },
    /// The recovery timeout elapsed before the replacement was Ready.
    RecoveryTimeout { after_ms: u64 },
    /// A watcher lost its stream (an error; it retries with backoff). Until the matching
    /// `watch-resumed`, changes of `resource` are seen late or not at all: a phase first seen in
    /// that window is uncertain.
    WatchGap { resource: Resource, error: String },
    /// The watcher delivers again; `relisted`: it listed every object anew (changes in between
    /// were coalesced).
    WatchResumed { resource: Resource, relisted: bool },
    /// A probe of the workload (the ledger's status through the API server's pod proxy) began
    /// failing. Expected while its node is down; recorded as evidence, not shown as an error.
    ProbeFailing { pod: String, error: String },
    /// The probe answers again after `failures` failed attempts.
    ProbeRecovered { pod: String, failures: u64 },
    /// kube-controller-manager's counters of forced detaches and PodGC force deletes, read
    /// `stage` (`before-fault`, `after-recovery`) from pod `source`: which path freed the volume
    /// and the pod.
    ControllerCounters {
        stage: String,
        source: String,
        counters: std::collections::BTreeMap<String, u64>,
    },
    /// The harness began a stage of the run: `setup`, `steady-state`, `fault` (inject,
    /// remediate, recover), `collect` (the ledger), `heal`. Where a run's wall time went.
    Stage { stage: Stage },
    /// Free-form note from the harness (e.g. a step it took).
    Note { message: String },
    /// The simulated cluster a run of provider kwok ran on, recorded once its nodes were
    /// placed.
    SimulatedCluster(SimulatedCluster),
    /// What the control plane's processes, kwok and nodedown used from a simulated run's fault
    /// to the end of its recovery, as the run measured it.
    ProcessCost {
        usage: Vec<crate::timeline::scale::Usage>,
    },
    /// The run's observation ended (last line of a complete events.jsonl).
    RunFinished {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// Where a run's wall time went: each `stage` event's stage, lasting until the next one or
/// the end of the run (`run-finished`), in the order they ran.
pub fn stages(events: &[Event]) -> Vec<(Stage, u64)> {
    let mut out = Vec::new();
    let mut open: Option<(Stage, u64)> = None;
    for e in events {
        match &e.what {
            EventKind::Stage { stage } => {
                if let Some((s, from)) = open.replace((*stage, e.at_ms)) {
                    out.push((s, e.at_ms.saturating_sub(from)));
                }
            }
            EventKind::RunFinished { .. } => {
                if let Some((s, from)) = open.take() {
                    out.push((s, e.at_ms.saturating_sub(from)));
                }
            }
            _ => {}
        }
    }
    out
}

impl TimeZeroBasis {
    pub fn as_str(self) -> &'static str {
        match self {
            TimeZeroBasis::RuntimeDieEvent => "runtime-die-event",
            TimeZeroBasis::CommandReturned => "command-returned",
            TimeZeroBasis::RequestReturned => "request-returned",
        }
    }
}

fn default_basis() -> TimeZeroBasis {
    TimeZeroBasis::RequestReturned
}

impl EventKind {
    /// The watched resource this event was derived from; `None` for what the harness itself
    /// did or noted.
    pub fn resource(&self) -> Option<Resource> {
        match self {
            EventKind::NodeReady { .. }
            | EventKind::NodeTaint { .. }
            | EventKind::NodeAdded { .. }
            | EventKind::NodeDeleted { .. } => Some(Resource::Nodes),
            EventKind::Pod { .. } | EventKind::PodDeleted { .. } => Some(Resource::Pods),
            EventKind::VolumeAttachment { .. } | EventKind::VolumeAttachmentDeleted { .. } => {
                Some(Resource::VolumeAttachments)
            }
            EventKind::KubeEvent { object, .. } if object.starts_with("NetworkFence/") => {
                Some(Resource::FenceEvents)
            }
            EventKind::KubeEvent { .. } => Some(Resource::Events),
            EventKind::ClaimBound { .. } => Some(Resource::PersistentVolumeClaims),
            _ => None,
        }
    }
}
