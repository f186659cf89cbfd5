//! The events of a run: one JSON object per line of `events.jsonl`.
//!
//! Effectful code (watchers, the runner) creates them, stamped on receipt; pure code only
//! reads them. `at_ms` is monotonic milliseconds since the run started; `wall` is the wall
//! clock at the same moment (RFC 3339, UTC, milliseconds), for humans and for correlating with
//! container timestamps.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub at_ms: u64,
    pub wall: String,
    #[serde(flatten)]
    pub what: EventKind,
}

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
    /// The workload's target pod ran and was Ready before the fault: the steady state.
    WorkloadReady {
        pod: String,
        uid: String,
        node: String,
    },
    /// The fault is about to be applied (its undo is already in the journal).
    FaultInjecting { fault: String, node: String },
    /// The fault was applied (e.g. the node container is killed).
    FaultInjected { fault: String, node: String },
    /// The fault was undone (e.g. the node container runs again).
    FaultHealed { fault: String, node: String },
    /// A Node's Ready condition as observed (emitted when it changes).
    NodeReady {
        node: String,
        /// "True", "False" or "Unknown".
        status: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A taint appeared on (added = true) or disappeared from a Node.
    NodeTaint {
        node: String,
        key: String,
        effect: String,
        added: bool,
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
        /// Pending, Running, Succeeded, Failed, Unknown.
        phase: String,
        /// deletionTimestamp is set.
        terminating: bool,
        ready: bool,
        /// The container's `state.running.startedAt` as the kubelet reported it (seconds).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started_at: Option<String>,
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
    /// Free-form note from the harness (e.g. a step it took).
    Note { message: String },
    /// The run's observation ended (last line of a complete events.jsonl).
    RunFinished {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}
