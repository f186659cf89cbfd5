//! Phases and metrics of a run, computed from its events by ONE incremental [`Tracker`] (pure).
//! The runner feeds the same tracker the events as they are recorded and waits on its answers
//! (steady state, node NotReady, replacement Ready); the reports fold the recorded events through
//! it again. What the runner waited for is, by construction, what the report says happened.
//!
//! The fault (the first `fault-injected` event) is time zero. Every phase is the FIRST event at
//! or after the fault that matches it; its time is counted in milliseconds from the fault.
//! Events before the fault never make a phase, and without a fault there are no phases.
//!
//! **Watch gaps.** A `watch-gap` of a resource opens a window that its `watch-resumed` closes;
//! a phase first seen through that resource inside the window is *uncertain*: it happened
//! somewhere between the gap's start and the moment it was seen. It keeps both bounds and is
//! never turned into a metric (a number nobody observed is absent, not guessed).
//!
//! **The failover window.** Failover is what happens while the node is down and before the
//! harness gives up. The window closes at the first `recovery-timeout` or `fault-healed`
//! event: after that the node may come back and its kubelet finishes what the failover could
//! not (deletes the old pod, a pod starts again on the healed node). Counting that as failover
//! would make a run that never recovered look recovered, so only the `recovery-timeout` and
//! `fault-healed` phases themselves are recorded once the window is closed.
//!
//! **The target.** The target pod and its uid (the *old* pod) come from the last
//! `workload-ready` before the fault. The target node is the node the fault acted on (the
//! `fault-injected` node); without a fault, the node of that `workload-ready`. A pod event of
//! the old uid never counts as a replacement; without a known old uid there is no replacement
//! at all (any pod could be the old one).

use super::{ClusterFacts, ConditionStatus, Event, EventKind, PodPhase, Resource, TimeZeroBasis};
use std::collections::BTreeMap;

/// Taint the node lifecycle controller puts on a node that stopped reporting.
pub const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";
/// Taint that declares a node out of service (non-graceful node shutdown, KEP-2268).
pub const OUT_OF_SERVICE_TAINT: &str = "node.kubernetes.io/out-of-service";

/// A step of a failover, in the order they usually happen. One type from the tracker to the
/// pixels: results.json writes it by its kebab-case [`Phase::name`], and every renderer matches
/// on it exhaustively (a new phase does not compile until each of them gives it its colour).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// The fault was applied (time zero).
    FaultInjected,
    /// The target node's Ready condition is no longer `True`.
    NodeNotReady,
    /// The `node.kubernetes.io/unreachable` taint was added to the target node.
    UnreachableTaint,
    /// The old pod got a deletionTimestamp.
    PodTerminating,
    /// The kubelet's graceful node shutdown ended the old pod before the node went down (its
    /// status Failed with reason `Terminated`, as the shutdown manager sets it).
    PodShutDownByKubelet,
    /// A storage fence (csi-addons `NetworkFence`) of the target node was requested.
    FenceRequested,
    /// The storage's fence controller reported the fence in place (`status.result: Succeeded`):
    /// from here on the storage refuses the node's I/O.
    FenceSucceeded,
    /// The storage reported refusing an operation of the fenced node (an Event with reason
    /// `ClientRefused` on the run's NetworkFence): the old node's first write refused, seen.
    /// Recorded after the failover window too (a frozen node's writer resumes into the fence
    /// when it thaws).
    WriteRefused,
    /// The out-of-service taint was applied (by the harness, or seen on the target node).
    OutOfServiceTaint,
    /// The harness applied any remediation.
    RemediationApplied,
    /// The old pod is gone from the API server.
    OldPodDeleted,
    /// The target Node object is gone.
    NodeDeleted,
    /// The old pod's container runs again with a new start time (the kubelet restarted it):
    /// the same pod, a new incarnation of the workload.
    ContainerRestarted,
    /// The volume attachment on the target node is detached or deleted.
    VolumeDetached,
    /// A pod of the workload other than the old one exists (whatever its name).
    ReplacementCreated,
    /// The replacement is bound to a node.
    ReplacementScheduled,
    /// The attach/detach controller refused to attach the volume for the replacement because
    /// it is still attached to another node: a Warning event `FailedAttachVolume` with a
    /// `Multi-Attach error` on a workload pod.
    MultiAttachError,
    /// A volume is attached to a node other than the target.
    VolumeAttached,
    /// The replacement's phase is Running and it is not terminating.
    ReplacementRunning,
    /// The replacement is Ready and not terminating.
    ReplacementReady,
    /// Two different pods of the workload were Running (and not terminating) at the same time,
    /// as the API server saw them.
    TwoPodsRunning,
    /// The fault was undone.
    FaultHealed,
    /// The storage fence is gone (its finalizer unfenced the node first): the storage serves
    /// the node again. Recorded after the failover window too, like `fault-healed`.
    Unfenced,
    /// The recovery timeout elapsed before the replacement was Ready.
    RecoveryTimeout,
}

impl Phase {
    /// Every phase, in the usual order of a failover.
    pub const ALL: [Phase; 24] = [
        Phase::FaultInjected,
        Phase::NodeNotReady,
        Phase::UnreachableTaint,
        Phase::PodTerminating,
        Phase::PodShutDownByKubelet,
        Phase::FenceRequested,
        Phase::FenceSucceeded,
        Phase::WriteRefused,
        Phase::OutOfServiceTaint,
        Phase::RemediationApplied,
        Phase::OldPodDeleted,
        Phase::NodeDeleted,
        Phase::ContainerRestarted,
        Phase::VolumeDetached,
        Phase::ReplacementCreated,
        Phase::ReplacementScheduled,
        Phase::MultiAttachError,
        Phase::VolumeAttached,
        Phase::ReplacementRunning,
        Phase::ReplacementReady,
        Phase::TwoPodsRunning,
        Phase::FaultHealed,
        Phase::Unfenced,
        Phase::RecoveryTimeout,
    ];

    /// The kebab-case name used in reports, e.g. `node-not-ready`.
    pub fn name(self) -> &'static str {
        match self {
            Phase::FaultInjected => "fault-injected",
            Phase::NodeNotReady => "node-not-ready",
            Phase::UnreachableTaint => "unreachable-taint",
            Phase::PodTerminating => "pod-terminating",
            Phase::PodShutDownByKubelet => "pod-shut-down-by-kubelet",
            Phase::FenceRequested => "fence-requested",
            Phase::FenceSucceeded => "fence-succeeded",
            Phase::WriteRefused => "write-refused",
            Phase::OutOfServiceTaint => "out-of-service-taint",
            Phase::RemediationApplied => "remediation-applied",
            Phase::OldPodDeleted => "old-pod-deleted",
            Phase::NodeDeleted => "node-deleted",
            Phase::ContainerRestarted => "container-restarted",
            Phase::VolumeDetached => "volume-detached",
            Phase::ReplacementCreated => "replacement-created",
            Phase::ReplacementScheduled => "replacement-scheduled",
            Phase::MultiAttachError => "multi-attach-error",
            Phase::VolumeAttached => "volume-attached",
            Phase::ReplacementRunning => "replacement-running",
            Phase::ReplacementReady => "replacement-ready",
            Phase::TwoPodsRunning => "two-pods-running",
            Phase::FaultHealed => "fault-healed",
            Phase::Unfenced => "unfenced",
            Phase::RecoveryTimeout => "recovery-timeout",
        }
    }

    /// The phase of a kebab-case name.
    pub fn from_name(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// The attach/detach controller's Multi-Attach refusal, as a Kubernetes Event on a pod
/// (`FailedAttachVolume`, "Multi-Attach error for volume … Volume is already exclusively attached
/// to one node and can't be attached to another").
pub fn is_multi_attach_error(object: &str, reason: &str, message: &str) -> bool {
    object.starts_with("Pod/") && reason == "FailedAttachVolume" && message.contains("Multi-Attach")
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A duration measured from the fault to a phase. In results its kebab-case name keys the
/// metrics maps (`time-to-ready`), which list them in this order: a failover's.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    TimeToNotReady,
    TimeToRemediation,
    /// Until the old pod is deleted.
    TimeToDelete,
    TimeToDetach,
    TimeToSchedule,
    TimeToAttach,
    TimeToRunning,
    TimeToReady,
}

impl Metric {
    pub const ALL: [Metric; 8] = [
        Metric::TimeToNotReady,
        Metric::TimeToRemediation,
        Metric::TimeToDelete,
        Metric::TimeToDetach,
        Metric::TimeToSchedule,
        Metric::TimeToAttach,
        Metric::TimeToRunning,
        Metric::TimeToReady,
    ];

    /// The kebab-case name used in reports, e.g. `time-to-ready`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::TimeToNotReady => "time-to-not-ready",
            Metric::TimeToRemediation => "time-to-remediation",
            Metric::TimeToDelete => "time-to-delete",
            Metric::TimeToDetach => "time-to-detach",
            Metric::TimeToSchedule => "time-to-schedule",
            Metric::TimeToAttach => "time-to-attach",
            Metric::TimeToRunning => "time-to-running",
            Metric::TimeToReady => "time-to-ready",
        }
    }

    /// The metric of a kebab-case name.
    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The phase whose time this metric is.
    pub fn phase(self) -> Phase {
        match self {
            Metric::TimeToNotReady => Phase::NodeNotReady,
            Metric::TimeToRemediation => Phase::RemediationApplied,
            Metric::TimeToDelete => Phase::OldPodDeleted,
            Metric::TimeToDetach => Phase::VolumeDetached,
            Metric::TimeToSchedule => Phase::ReplacementScheduled,
            Metric::TimeToAttach => Phase::VolumeAttached,
            Metric::TimeToRunning => Phase::ReplacementRunning,
            Metric::TimeToReady => Phase::ReplacementReady,
        }
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A phase as it was observed: when, and — when it was first seen at the end of a watch gap —
/// the earliest moment it could have happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseAt {
    pub phase: Phase,
    /// Milliseconds from the fault to the first observation.
    pub at_ms: u64,
    /// `Some(lower bound)` when uncertain (seen inside a watch gap that began then).
    pub since_ms: Option<u64>,
}

/// How time zero was taken, and the bounds around it (ms relative to time zero: the request
/// was made `requested_ms` (≤ 0) and the call returned at `returned_ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeZero {
    pub basis: TimeZeroBasis,
    pub requested_ms: Option<i64>,
    pub returned_ms: Option<i64>,
}

/// What the events of one run say about its failover.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Timeline {
    /// The node the fault acted on.
    pub target_node: Option<String>,
    /// Every node a fault took (its `fault-injected` events), in order.
    pub faulted_nodes: Vec<String>,
    /// When the harness began undoing the run (its `heal` stage), ms from the fault: what
    /// happens to the workload from then on is the teardown's doing, not the failover's.
    pub heal_at_ms: Option<u64>,
    /// The workload pod on the target node (from the last `workload-ready` before the fault).
    pub target_pod: Option<String>,
    /// The uid of the target pod before the fault: the old pod.
    pub old_uid: Option<String>,
    /// `at_ms` of the first `fault-injected` event (time zero of the phases).
    pub fault_at_ms: Option<u64>,
    /// Where time zero came from.
    pub time_zero: Option<TimeZero>,
    /// The node of the replacement: where it became Ready, else where it was scheduled.
    pub replacement_node: Option<String>,
    /// The pod name of the replacement (a Deployment's replacement has a new name).
    pub replacement_pod: Option<String>,
    /// The uid of the replacement: the one that became Ready, else the first one created.
    pub replacement_uid: Option<String>,
    /// The remediation of the first `remediation-applied` event in the failover window.
    pub remediation: Option<String>,
    /// What that remediation did, as recorded (for `external`: what the remediator did and who).
    pub remediation_detail: Option<String>,
    /// Phases that happened, in time order (ties in the order of [`Phase::ALL`]).
    pub phases: Vec<PhaseAt>,
    /// How long after the fault the failover was observed: until the failover window closed
    /// (recovery timeout or fault healed), else until the last event. `None` without a fault.
    pub observed_ms: Option<u64>,
    /// Watch gaps after the fault: (resource, from ms, until ms or `None` if never resumed).
    pub gaps: Vec<(Resource, u64, Option<u64>)>,
    /// Where the run happened (from the `cluster-facts` event).
    pub facts: Option<ClusterFacts>,
    /// The node-control backend that applied the fault.
    pub backend: Option<crate::vocab::Backend>,
    /// Wall time per stage of the harness (`stage` events), in ms: each stage lasts until the
    /// next one begins or the run finishes. In the order they ran.
    pub stages: Vec<(crate::timeline::Stage, u64)>,
    /// The field manager that put the out-of-service taint on the target node (first seen),
    /// when the API names it.
    pub out_of_service_by: Option<String>,
    /// kube-controller-manager's forced-detach and PodGC counters before the fault and after
    /// recovery (the `controller-counters` events), when they could be read.
    pub counters_before: Option<BTreeMap<String, u64>>,
    pub counters_after: Option<BTreeMap<String, u64>>,
    /// Wall clock (RFC 3339) of those two readings: the window in which another run's
    /// failover would show in the same cluster-wide counters.
    pub counters_window: (Option<String>, Option<String>),
    /// The run's scope (the `run-scope` event): its namespace, lane and lane nodes.
    pub namespace: Option<String>,
    pub lane: Option<u32>,
    pub lane_nodes: Vec<String>,
    /// The invocation was confined to some nodes (`--nodes`): other invocations may have run
    /// beside it on the others.
    pub confined: bool,
}

impl Timeline {
    /// The observation of `phase`, when it happened.
    pub fn phase(&self, phase: Phase) -> Option<&PhaseAt> {
        self.phases.iter().find(|p| p.phase == phase)
    }

    /// Milliseconds from the fault to the first observation of `phase`, certain or not.
    pub fn at(&self, phase: Phase) -> Option<u64> {
        self.phase(phase).map(|p| p.at_ms)
    }

    /// Whether `phase` happened.
    pub fn has(&self, phase: Phase) -> bool {
        self.phase(phase).is_some()
    }

    /// Milliseconds from the fault for `metric`; `None` (not zero) when its phase never happened
    /// or was only seen at the end of a watch gap (see [`Timeline::bounds`]).
    pub fn metric(&self, metric: Metric) -> Option<u64> {
        self.phase(metric.phase())
            .filter(|p| p.since_ms.is_none())
            .map(|p| p.at_ms)
    }

    /// The interval `metric` lies in: `(t, t)` when observed, `(since, seen)` when uncertain.
    pub fn bounds(&self, metric: Metric) -> Option<(u64, u64)> {
        self.phase(metric.phase())
            .map(|p| (p.since_ms.unwrap_or(p.at_ms), p.at_ms))
    }

    /// Every metric that has a value, by name.
    pub fn metrics(&self) -> BTreeMap<Metric, u64> {
        Metric::ALL
            .into_iter()
            .filter_map(|m| self.metric(m).map(|ms| (m, ms)))
            .collect()
    }

    /// A replacement pod became Ready within the failover window.
    pub fn recovered(&self) -> bool {
        self.has(Phase::ReplacementReady)
    }

    /// Whether the fault took this workload's node: true without a fault or before knowing
    /// the workload's node, false for a replica that served on a node no fault took (one
    /// StatefulSet's other replicas): it has nothing to recover from.
    pub fn affected(&self) -> bool {
        match &self.target_node {
            Some(node) if !self.faulted_nodes.is_empty() => self.faulted_nodes.contains(node),
            _ => true,
        }
    }

    /// The failover window closed (recovery timeout or fault healed) within the events.
    pub fn window_closed(&self) -> bool {
        self.has(Phase::RecoveryTimeout) || self.has(Phase::FaultHealed)
    }
}

/// The latest observed state of one pod of the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    pub name: String,
    pub uid: String,
    pub node: Option<String>,
    pub phase: PodPhase,
    pub terminating: bool,
    pub ready: bool,
}

impl PodView {
    /// Running, Ready, bound to a node and not terminating: it serves the workload.
    pub fn serving(&self) -> bool {
        self.phase == PodPhase::Running && self.ready && !self.terminating && self.node.is_some()
    }

    fn running(&self) -> bool {
        self.phase == PodPhase::Running && !self.terminating
    }
}

/// One incremental reading of a run's event stream. Feed it every event in recorded order with
/// [`Tracker::observe`]; ask it what is true now; [`Tracker::timeline`] is the report's view.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    tl: Timeline,
    /// Pods of the workload as last seen, by uid (deleted ones removed).
    pods: BTreeMap<String, PodView>,
    /// Nodes' Ready condition as last seen.
    nodes: BTreeMap<String, ConditionStatus>,
    /// Open watch gaps: resource → run-clock ms the gap began.
    open_gaps: BTreeMap<Resource, u64>,
    first: BTreeMap<Phase, PhaseAt>,
    requested_at: Option<u64>,
    created_uid: Option<(String, String)>,
    scheduled_on: Option<String>,
    ready_as: Option<(String, String, Option<String>)>,
    /// The last `startedAt` seen per pod uid, and the old pod's at the fault: a later one on the
    /// old pod is its container restarted.
    started: BTreeMap<String, Option<String>>,
    old_started: Option<String>,
    closed: bool,
    last_at: u64,
    /// The open stage: its name and start.
    stage: Option<(crate::timeline::Stage, u64)>,
    /// The volumes of the run's claims (`claim-bound` events).
    volumes: std::collections::BTreeSet<String>,
    /// The storage fence requested for the target node (`NetworkFence/<name>`).
    fence_object: Option<String>,
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker::default()
    }

    /// Whether a VolumeAttachment of `pv` is this run's: every one in a run recorded without
    /// a scope; else one of its claims' volumes, or a volume nodedown made for it
    /// (`<namespace>-…`).
    fn owns_volume(&self, pv: Option<&str>) -> bool {
        let Some(ns) = &self.tl.namespace else {
            return true;
        };
        pv.is_some_and(|pv| {
            self.volumes.contains(pv)
                || pv
                    .strip_prefix(ns.as_str())
                    .is_some_and(|rest| rest.starts_with('-'))
        })
    }

    /// The pod that serves the workload now (Running, Ready, not terminating), preferring the
    /// one named `name` when given. With more than one serving pod, the first by name.
    pub fn serving_pod(&self, name: Option<&str>) -> Option<&PodView> {
        let mut serving = self.pods.values().filter(|p| p.serving());
        match name {
            Some(n) => serving.find(|p| p.name == n),
            None => serving.min_by(|a, b| a.name.cmp(&b.name)),
        }
    }

    /// The pod to read the workload's own evidence from: the one serving it, else one whose
    /// object still exists and runs, even evicted (on a node whose kubelet is stopped it keeps
    /// running, and the API server still reaches it).
    pub fn evidence_pod(&self) -> Option<&PodView> {
        self.serving_pod(None).or_else(|| {
            self.pods
                .values()
                .find(|p| p.phase == PodPhase::Running && p.node.is_some())
        })
    }

    /// Every pod of the workload as last seen.
    pub fn pods(&self) -> impl Iterator<Item = &PodView> {
        self.pods.values()
    }

    /// Whether `phase` has happened (after the fault).
    pub fn has(&self, phase: Phase) -> bool {
        self.first.contains_key(&phase)
    }

    /// Whether the fault took this workload's node so far (see [`Timeline::affected`]).
    pub fn affected(&self) -> bool {
        self.tl.affected()
    }

    /// The timeline so far.
    pub fn timeline(&self) -> Timeline {
        let mut tl = self.tl.clone();
        let mut phases: Vec<PhaseAt> = Phase::ALL
            .into_iter()
            .filter_map(|p| self.first.get(&p).copied())
            .collect();
        // Stable: equal times keep the order of Phase::ALL.
        phases.sort_by_key(|p| p.at_ms);
        tl.phases = phases;
        if let Some(fault_at) = tl.fault_at_ms {
            if !self.closed {
                tl.observed_ms = Some(self.last_at.saturating_sub(fault_at));
            }
            for (resource, since) in &self.open_gaps {
                if !tl
                    .gaps
                    .iter()
                    .any(|(r, _, end)| r == resource && end.is_none())
                {
                    tl.gaps
                        .push((*resource, since.saturating_sub(fault_at), None));
                }
            }
        }
        match &self.ready_as {
            Some((pod, uid, node)) => {
                tl.replacement_pod = Some(pod.clone());
                tl.replacement_uid = Some(uid.clone());
                tl.replacement_node = node.clone().or_else(|| self.scheduled_on.clone());
            }
            None => {
                tl.replacement_pod = self.created_uid.as_ref().map(|(p, _)| p.clone());
                tl.replacement_uid = self.created_uid.as_ref().map(|(_, u)| u.clone());
                tl.replacement_node = self.scheduled_on.clone();
            }
        }
        tl
    }

    /// Takes in the next recorded event.
    pub fn observe(&mut self, e: &Event) {
        self.last_at = self.last_at.max(e.at_ms);
        // Live state, before and after the fault alike.
        match &e.what {
            EventKind::Pod {
                pod,
                uid,
                node,
                phase,
                terminating,
                ready,
                started_at,
                ..
            } => {
                self.started.insert(uid.clone(), started_at.clone());
                self.pods.insert(
                    uid.clone(),
                    PodView {
                        name: pod.clone(),
                        uid: uid.clone(),
                        node: node.clone(),
                        phase: *phase,
                        terminating: *terminating,
                        ready: *ready,
                    },
                );
            }
            EventKind::PodDeleted { uid, .. } => {
                self.pods.remove(uid);
                self.started.remove(uid);
            }
            EventKind::NodeReady { node, status, .. } => {
                self.nodes.insert(node.clone(), *status);
            }
            EventKind::NodeDeleted { node } => {
                self.nodes.remove(node);
            }
            EventKind::FaultInjected { node, .. } if !self.tl.faulted_nodes.contains(node) => {
                self.tl.faulted_nodes.push(node.clone());
            }
            EventKind::Stage { stage } => {
                if *stage == crate::timeline::Stage::Heal && self.tl.heal_at_ms.is_none() {
                    if let Some(f) = self.tl.fault_at_ms {
                        self.tl.heal_at_ms = Some(e.at_ms.saturating_sub(f));
                    }
                }
                if let Some((name, from)) = self.stage.take() {
                    self.tl.stages.push((name, e.at_ms.saturating_sub(from)));
                }
                self.stage = Some((*stage, e.at_ms));
            }
            EventKind::RunFinished { .. } => {
                if let Some((name, from)) = self.stage.take() {
                    self.tl.stages.push((name, e.at_ms.saturating_sub(from)));
                }
            }
            EventKind::ControllerCounters {
                stage, counters, ..
            } => match stage.as_str() {
                "before-fault" => {
                    self.tl.counters_before = Some(counters.clone());
                    self.tl.counters_window.0 = Some(e.wall.clone());
                }
                "after-recovery" => {
                    self.tl.counters_after = Some(counters.clone());
                    self.tl.counters_window.1 = Some(e.wall.clone());
                }
                _ => {}
            },
            EventKind::RunScope {
                namespace,
                lane,
                nodes,
                confined,
            } => {
                self.tl.namespace = Some(namespace.clone());
                self.tl.lane = *lane;
                self.tl.lane_nodes = nodes.clone();
                self.tl.confined = *confined;
            }
            EventKind::ClaimBound { pv, .. } => {
                self.volumes.insert(pv.clone());
            }
            EventKind::WatchGap { resource, .. } => {
                self.open_gaps.entry(*resource).or_insert(e.at_ms);
            }
            EventKind::WatchResumed { resource, .. } => {
                if let Some(since) = self.open_gaps.remove(resource) {
                    if let Some(f) = self.tl.fault_at_ms {
                        if e.at_ms >= f {
                            self.tl.gaps.push((
                                *resource,
                                since.saturating_sub(f),
                                Some(e.at_ms - f),
                            ));
                        }
                    }
                }
            }
            _ => {}
        }
        let Some(fault_at) = self.tl.fault_at_ms else {
            self.before_fault(e);
            return;
        };
        if e.at_ms < fault_at {
            return;
        }
        let t = e.at_ms - fault_at;
        let mut hit: Vec<Phase> = Vec::new();
        match &e.what {
            EventKind::FaultHealed { .. } => hit.push(Phase::FaultHealed),
            EventKind::NetworkFence {
                state: super::FenceState::Unfenced,
                node,
                ..
            } if self.tl.target_node.as_deref() == Some(node.as_str()) => hit.push(Phase::Unfenced),
            // The fence's evidence, like its lifting, counts after the failover window too: a
            // frozen node's writer resumes into the fence when it thaws, after the failover.
            EventKind::KubeEvent { object, reason, .. }
                if reason == crate::vocab::FENCE_REFUSED_REASON
                    && self.fence_object.as_ref() == Some(object) =>
            {
                hit.push(Phase::WriteRefused)
            }
            EventKind::RecoveryTimeout { .. } => hit.push(Phase::RecoveryTimeout),
            _ => {}
        }
        if !self.closed {
            self.failover_phases(e, &mut hit);
        }
        let since = e
            .what
            .resource()
            .and_then(|r| self.open_gaps.get(&r))
            .map(|since| since.saturating_sub(fault_at));
        for phase in hit {
            self.first.entry(phase).or_insert(PhaseAt {
                phase,
                at_ms: t,
                since_ms: since,
            });
        }
        if !self.closed
            && matches!(
                e.what,
                EventKind::RecoveryTimeout { .. } | EventKind::FaultHealed { .. }
            )
        {
            self.closed = true;
            self.tl.observed_ms = Some(t);
        }
    }

    fn before_fault(&mut self, e: &Event) {
        match &e.what {
            EventKind::WorkloadReady { pod, uid, node } => {
                self.tl.target_pod = Some(pod.clone());
                self.tl.old_uid = Some(uid.clone());
                self.tl.target_node = Some(node.clone());
            }
            EventKind::FaultInjecting { .. } => self.requested_at = Some(e.at_ms),
            EventKind::ClusterFacts(facts) => self.tl.facts = Some(facts.clone()),
            EventKind::FaultInjected {
                node,
                basis,
                returned_ms,
                backend,
                ..
            } => {
                self.tl.backend = *backend;
                self.tl.fault_at_ms = Some(e.at_ms);
                // The workload's own node when it was recorded Ready there (a zone's nodes are
                // faulted together: each instance fails over from its own), else this one.
                self.tl.target_node.get_or_insert_with(|| node.clone());
                self.old_started = self
                    .tl
                    .old_uid
                    .as_ref()
                    .and_then(|u| self.started.get(u).cloned().flatten());
                let rel = |ms: u64| ms as i64 - e.at_ms as i64;
                self.tl.time_zero = Some(TimeZero {
                    basis: *basis,
                    requested_ms: self.requested_at.map(rel),
                    returned_ms: returned_ms.map(rel),
                });
                self.first.insert(
                    Phase::FaultInjected,
                    PhaseAt {
                        phase: Phase::FaultInjected,
                        at_ms: 0,
                        since_ms: None,
                    },
                );
                // Two pods running already at the fault is a fact of the steady state, not a
                // phase of the failover.
            }
            _ => {}
        }
    }

    fn failover_phases(&mut self, e: &Event, hit: &mut Vec<Phase>) {
        let target_node = self.tl.target_node.clone();
        let on_target = |node: &str| target_node.as_deref() == Some(node);
        let old_uid = self.tl.old_uid.clone();
        let is_old = |uid: &str| old_uid.as_deref() == Some(uid);
        match &e.what {
            EventKind::NodeReady { node, status, .. }
                if on_target(node) && *status != ConditionStatus::True =>
            {
                hit.push(Phase::NodeNotReady)
            }
            EventKind::NodeTaint {
                node,
                key,
                added: true,
                by,
                ..
            } if on_target(node) => {
                if key == UNREACHABLE_TAINT {
                    hit.push(Phase::UnreachableTaint);
                } else if key == OUT_OF_SERVICE_TAINT {
                    hit.push(Phase::OutOfServiceTaint);
                    if self.tl.out_of_service_by.is_none() {
                        self.tl.out_of_service_by = by.clone();
                    }
                }
            }
            // A zone's nodes are remediated one by one: an instance's remediation is its node's.
            EventKind::RemediationApplied {
                remediation,
                detail,
                node,
            } if on_target(node) => {
                if self.tl.remediation.is_none() {
                    self.tl.remediation = Some(remediation.clone());
                    self.tl.remediation_detail = Some(detail.clone());
                }
                if remediation == "out-of-service-taint" {
                    hit.push(Phase::OutOfServiceTaint);
                }
                hit.push(Phase::RemediationApplied);
            }
            EventKind::NetworkFence {
                node, state, name, ..
            } if on_target(node) => match state {
                super::FenceState::Requested => {
                    self.fence_object = Some(format!("NetworkFence/{name}"));
                    hit.push(Phase::FenceRequested)
                }
                super::FenceState::Succeeded => hit.push(Phase::FenceSucceeded),
                super::FenceState::Failed | super::FenceState::Unfenced => {}
            },
            EventKind::PodDeleted { uid, .. } if is_old(uid) => hit.push(Phase::OldPodDeleted),
            EventKind::NodeDeleted { node } if on_target(node) => hit.push(Phase::NodeDeleted),
            // Only the run's own volumes: another volume's detach on the same node (another
            // lane's, another tenant's) is not this failover.
            EventKind::VolumeAttachment { pv, .. }
            | EventKind::VolumeAttachmentDeleted { pv, .. }
                if !self.owns_volume(pv.as_deref()) => {}
            EventKind::VolumeAttachment { node, attached, .. } => {
                if !attached && on_target(node) {
                    hit.push(Phase::VolumeDetached);
                } else if *attached && !on_target(node) {
                    hit.push(Phase::VolumeAttached);
                }
            }
            EventKind::VolumeAttachmentDeleted { node, .. } if on_target(node) => {
                hit.push(Phase::VolumeDetached)
            }
            EventKind::KubeEvent {
                object,
                reason,
                message,
                ..
            } if is_multi_attach_error(object, reason, message) => {
                hit.push(Phase::MultiAttachError)
            }
            EventKind::Pod {
                pod,
                uid,
                node,
                phase,
                terminating,
                ready,
                started_at,
                reason,
            } => {
                if is_old(uid) {
                    if *terminating {
                        hit.push(Phase::PodTerminating);
                    }
                    // pkg/kubelet/nodeshutdown: phase Failed, reason "Terminated".
                    if *phase == PodPhase::Failed && reason.as_deref() == Some("Terminated") {
                        hit.push(Phase::PodShutDownByKubelet);
                    }
                    // The same pod with its container started again: a new incarnation, which
                    // serves as the replacement (a container kill, a crash).
                    let restarted = started_at.is_some()
                        && self.old_started.is_some()
                        && *started_at != self.old_started;
                    if restarted && !terminating {
                        hit.push(Phase::ContainerRestarted);
                        if *phase == PodPhase::Running {
                            hit.push(Phase::ReplacementRunning);
                        }
                        if *ready {
                            hit.push(Phase::ReplacementReady);
                            if self.ready_as.is_none() {
                                self.ready_as = Some((pod.clone(), uid.clone(), node.clone()));
                            }
                        }
                    }
                } else if old_uid.is_some() {
                    // Any other pod of the workload: a replacement, whatever its name.
                    hit.push(Phase::ReplacementCreated);
                    if self.created_uid.is_none() {
                        self.created_uid = Some((pod.clone(), uid.clone()));
                    }
                    if let Some(n) = node {
                        hit.push(Phase::ReplacementScheduled);
                        if self.scheduled_on.is_none() {
                            self.scheduled_on = Some(n.clone());
                        }
                    }
                    if *phase == PodPhase::Running && !terminating {
                        hit.push(Phase::ReplacementRunning);
                    }
                    if *ready && !terminating {
                        hit.push(Phase::ReplacementReady);
                        if self.ready_as.is_none() {
                            self.ready_as = Some((pod.clone(), uid.clone(), node.clone()));
                        }
                    }
                }
                if self.pods.values().filter(|p| p.running()).count() >= 2 {
                    hit.push(Phase::TwoPodsRunning);
                }
            }
            _ => {}
        }
    }
}

/// Computes the timeline of one run from its events, in the order they were recorded.
/// The storage fence of a run as its events recorded it: the fenced node, when the fence was
/// seen Succeeded and when it was seen gone again (wall clock, ms since the Unix epoch). `None`
/// when no fence succeeded.
pub fn fence_window(events: &[Event]) -> Option<(String, u64, Option<u64>)> {
    use super::FenceState;
    let wall_ms = |w: &str| {
        humantime::parse_rfc3339(w)
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_millis() as u64)
    };
    let (node, fenced) = events.iter().find_map(|e| match &e.what {
        EventKind::NetworkFence {
            node,
            state: FenceState::Succeeded,
            ..
        } => Some((node.clone(), wall_ms(&e.wall)?)),
        _ => None,
    })?;
    let unfenced = events.iter().find_map(|e| match &e.what {
        EventKind::NetworkFence {
            node: n,
            state: FenceState::Unfenced,
            ..
        } if *n == node => wall_ms(&e.wall),
        _ => None,
    });
    Some((node, fenced, unfenced))
}

pub fn analyze(events: &[Event]) -> Timeline {
    let mut tracker = Tracker::new();
    for e in events {
        tracker.observe(e);
    }
    tracker.timeline()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const OOS_TAINT: &str =
        include_str!("../../tests/fixtures/synthetic/events/oos-taint.jsonl");
    pub(crate) const NONE_TIMEOUT: &str =
        include_str!("../../tests/fixtures/synthetic/events/none-timeout.jsonl");
    pub(crate) const FORCE_DELETE: &str =
        include_str!("../../tests/fixtures/synthetic/events/force-delete.jsonl");

    /// Parses an events.jsonl text; panics with the line number on a bad line.
    pub(crate) fn parse(text: &str) -> Vec<Event> {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("line {}: {e}: {l}", i + 1))
            })
            .collect()
    }

    fn ev(at_ms: u64, what: EventKind) -> Event {
        Event {
            at_ms,
            wall: format!("t+{at_ms}"),
            what,
        }
    }

    fn pod(
        uid: &str,
        node: Option<&str>,
        phase: &str,
        terminating: bool,
        ready: bool,
    ) -> EventKind {
        EventKind::Pod {
            pod: "writer-0".into(),
            uid: uid.into(),
            node: node.map(Into::into),
            phase: PodPhase::parse(Some(phase)),
            terminating,
            ready,
            started_at: None,
            reason: None,
        }
    }

    fn names(tl: &Timeline) -> Vec<(&'static str, u64)> {
        tl.phases
            .iter()
            .map(|p| (p.phase.name(), p.at_ms))
            .collect()
    }

    #[test]
    fn out_of_service_taint_run_recovers_in_about_40s() {
        let tl = analyze(&parse(OOS_TAINT));
        assert_eq!(tl.target_node.as_deref(), Some("kind-worker"));
        assert_eq!(tl.target_pod.as_deref(), Some("writer-0"));
        assert_eq!(
            tl.old_uid.as_deref(),
            Some("6f1c2d3e-8a4b-4c5d-9e0f-1a2b3c4d5e6f")
        );
        assert_eq!(tl.fault_at_ms, Some(10402));
        assert_eq!(tl.replacement_node.as_deref(), Some("kind-worker2"));
        assert_eq!(
            tl.replacement_uid.as_deref(),
            Some("b7e9a0c1-2d3e-4f50-8a6b-7c8d9e0f1a2b")
        );
        assert_eq!(
            names(&tl),
            vec![
                ("fault-injected", 0),
                ("node-not-ready", 20911),
                ("unreachable-taint", 20938),
                ("out-of-service-taint", 21300),
                ("remediation-applied", 21300),
                ("pod-terminating", 21358),
                ("old-pod-deleted", 27908),
                ("replacement-created", 28000),
                ("replacement-scheduled", 28053),
                ("replacement-running", 31802),
                ("replacement-ready", 39700),
                ("fault-healed", 41208),
            ]
        );
        let m = tl.metrics();
        let expect: BTreeMap<Metric, u64> = [
            ("time-to-not-ready", 20911),
            ("time-to-remediation", 21300),
            ("time-to-delete", 27908),
            ("time-to-schedule", 28053),
            ("time-to-running", 31802),
            ("time-to-ready", 39700),
        ]
        .into_iter()
        .map(|(k, v)| (Metric::from_name(k).unwrap(), v))
        .collect();
        assert_eq!(m, expect);
        assert!(tl.recovered());
        assert_eq!(tl.observed_ms, Some(41208));
        assert_eq!(tl.remediation.as_deref(), Some("out-of-service-taint"));
    }

    #[test]
    fn none_run_never_recovers_and_post_timeout_events_do_not_count() {
        let tl = analyze(&parse(NONE_TIMEOUT));
        assert_eq!(
            tl.old_uid.as_deref(),
            Some("3a4b5c6d-7e8f-4a0b-9c1d-2e3f4a5b6c7d")
        );
        assert_eq!(
            names(&tl),
            vec![
                ("fault-injected", 0),
                ("node-not-ready", 20602),
                ("unreachable-taint", 20625),
                ("pod-terminating", 30700),
                ("recovery-timeout", 120000),
                ("fault-healed", 121380),
            ]
        );
        // The pod came back on the healed node after the timeout: not a failover.
        assert!(!tl.recovered());
        assert_eq!(tl.metric(Metric::TimeToNotReady), Some(20602));
        for m in [
            Metric::TimeToRemediation,
            Metric::TimeToDelete,
            Metric::TimeToDetach,
            Metric::TimeToSchedule,
            Metric::TimeToAttach,
            Metric::TimeToRunning,
            Metric::TimeToReady,
        ] {
            assert_eq!(tl.metric(m), None, "{m} must be absent, not zero");
        }
        assert_eq!(tl.metrics().len(), 1);
        assert_eq!(tl.replacement_node, None);
        assert_eq!(tl.replacement_uid, None);
        assert_eq!(tl.observed_ms, Some(120000));
        assert!(tl.window_closed());
    }

    #[test]
    fn force_delete_run_recovers_without_a_taint() {
        let tl = analyze(&parse(FORCE_DELETE));
        assert_eq!(
            names(&tl),
            vec![
                ("fault-injected", 0),
                ("node-not-ready", 20800),
                ("unreachable-taint", 20821),
                ("pod-terminating", 30850),
                ("remediation-applied", 50800),
                ("old-pod-deleted", 50832),
                ("replacement-created", 50920),
                ("replacement-scheduled", 50971),
                ("replacement-running", 414680),
                ("replacement-ready", 422740),
                ("fault-healed", 424130),
            ]
        );
        assert!(!tl.has(Phase::OutOfServiceTaint));
        assert_eq!(tl.metric(Metric::TimeToRemediation), Some(50800));
        assert_eq!(tl.metric(Metric::TimeToReady), Some(422740));
        assert_eq!(tl.replacement_node.as_deref(), Some("kind-worker2"));
        assert!(tl.recovered());
    }

    #[test]
    fn no_fault_means_no_phases() {
        let mut events = parse(OOS_TAINT);
        events.retain(|e| !matches!(e.what, EventKind::FaultInjected { .. }));
        let tl = analyze(&events);
        assert!(tl.phases.is_empty());
        assert_eq!(tl.fault_at_ms, None);
        assert_eq!(tl.observed_ms, None);
        assert!(tl.metrics().is_empty());
        assert!(!tl.recovered());
        // The steady state is still known.
        assert_eq!(tl.target_pod.as_deref(), Some("writer-0"));
        assert_eq!(tl.target_node.as_deref(), Some("kind-worker"));
        assert!(analyze(&[]).phases.is_empty());
    }

    #[test]
    fn events_before_the_fault_are_ignored() {
        let events = vec![
            ev(
                0,
                EventKind::NodeReady {
                    node: "w1".into(),
                    status: ConditionStatus::False,
                    reason: None,
                },
            ),
            ev(10, pod("old", Some("w1"), "Running", false, true)),
            ev(
                20,
                EventKind::WorkloadReady {
                    pod: "writer-0".into(),
                    uid: "old".into(),
                    node: "w1".into(),
                },
            ),
            ev(30, pod("new", Some("w2"), "Running", false, true)),
            ev(
                40,
                EventKind::RemediationApplied {
                    remediation: "x".into(),
                    node: "w1".into(),
                    detail: "".into(),
                },
            ),
            ev(
                100,
                EventKind::FaultInjected {
                    fault: crate::vocab::FaultKind::NodeShutdown,
                    node: "w1".into(),
                    basis: TimeZeroBasis::RequestReturned,
                    backend: None,
                    returned_ms: None,
                },
            ),
            ev(
                150,
                EventKind::NodeReady {
                    node: "w2".into(),
                    status: ConditionStatus::False,
                    reason: None,
                },
            ),
        ];
        let tl = analyze(&events);
        assert_eq!(names(&tl), vec![("fault-injected", 0)]);
        assert!(!tl.recovered());
        assert_eq!(tl.observed_ms, Some(50));
    }

    /// Synthetic, a Deployment's shape: pods have generated names; the replacement has another
    /// name, both live at once for a while, and the one serving afterwards is the new one.
    #[test]
    fn a_renamed_replacement_is_the_replacement_and_two_live_pods_are_seen() {
        let p = |name: &str, uid: &str, node: &str, phase: &str, term: bool, ready: bool| {
            EventKind::Pod {
                pod: name.into(),
                uid: uid.into(),
                node: Some(node.into()),
                phase: PodPhase::parse(Some(phase)),
                terminating: term,
                ready,
                started_at: None,
                reason: None,
            }
        };
        let events = vec![
            ev(0, p("ledger-7d9-aaaaa", "u1", "w1", "Running", false, true)),
            ev(
                1,
                EventKind::WorkloadReady {
                    pod: "ledger-7d9-aaaaa".into(),
                    uid: "u1".into(),
                    node: "w1".into(),
                },
            ),
            fault(10),
            // The old pod still Running (its node only partitioned), a new one appears.
            ev(
                30,
                p("ledger-7d9-bbbbb", "u2", "w2", "Pending", false, false),
            ),
            ev(
                40,
                p("ledger-7d9-bbbbb", "u2", "w2", "Running", false, false),
            ),
            ev(
                45,
                p("ledger-7d9-bbbbb", "u2", "w2", "Running", false, true),
            ),
            ev(50, p("ledger-7d9-aaaaa", "u1", "w1", "Running", true, true)),
        ];
        let mut t = Tracker::new();
        for e in &events {
            t.observe(e);
        }
        let tl = t.timeline();
        assert_eq!(tl.at(Phase::ReplacementCreated), Some(20));
        assert_eq!(tl.at(Phase::TwoPodsRunning), Some(30));
        assert_eq!(tl.at(Phase::ReplacementReady), Some(35));
        assert_eq!(tl.at(Phase::PodTerminating), Some(40));
        assert_eq!(tl.replacement_pod.as_deref(), Some("ledger-7d9-bbbbb"));
        assert_eq!(tl.replacement_uid.as_deref(), Some("u2"));
        assert_eq!(tl.replacement_node.as_deref(), Some("w2"));
        // The serving pod by label, whatever its name: the new one (the old is terminating).
        assert_eq!(t.serving_pod(None).map(|p| p.uid.as_str()), Some("u2"));
        assert_eq!(t.serving_pod(Some("ledger-7d9-aaaaa")), None);
        assert_eq!(t.pods().count(), 2);
    }

    /// Synthetic, as pkg/kubelet/nodeshutdown reports a pod it ended: Failed, reason Terminated.
    #[test]
    fn a_pod_ended_by_the_kubelets_graceful_shutdown_is_its_own_phase() {
        let mut shut = pod("old", Some("w1"), "Failed", false, false);
        if let EventKind::Pod { reason, .. } = &mut shut {
            *reason = Some("Terminated".into());
        }
        let mut evicted = pod("old", Some("w1"), "Failed", false, false);
        if let EventKind::Pod { reason, .. } = &mut evicted {
            *reason = Some("Evicted".into());
        }
        let base = vec![
            ev(0, pod("old", Some("w1"), "Running", false, true)),
            ready(1),
            fault(10),
        ];
        let mut events = base.clone();
        events.push(ev(25, shut));
        assert_eq!(analyze(&events).at(Phase::PodShutDownByKubelet), Some(15));
        let mut events = base;
        events.push(ev(25, evicted));
        assert!(!analyze(&events).has(Phase::PodShutDownByKubelet));
    }

    /// Synthetic: stage events as the runner records them; each stage lasts until the next.
    #[test]
    fn stages_last_until_the_next_one_or_the_end_of_the_run() {
        use crate::timeline::Stage;
        let st = |at, stage| ev(at, EventKind::Stage { stage });
        let events = vec![
            st(0, Stage::Setup),
            st(1500, Stage::SteadyState),
            st(9000, Stage::Fault),
            st(40_000, Stage::Collect),
            st(43_000, Stage::Heal),
            ev(55_000, EventKind::RunFinished { error: None }),
        ];
        let tl = analyze(&events);
        let got: Vec<(&str, u64)> = tl.stages.iter().map(|(s, ms)| (s.name(), *ms)).collect();
        assert_eq!(
            got,
            vec![
                ("setup", 1500),
                ("steady-state", 7500),
                ("fault", 31_000),
                ("collect", 3000),
                ("heal", 12_000)
            ]
        );
    }

    /// Synthetic (the shape of a container kill as the kubelet reports it): the same pod uid,
    /// not Ready with no running container, then Running and Ready with a new `startedAt`.
    #[test]
    fn a_restarted_container_is_the_new_incarnation() {
        let p = |uid: &str, ready: bool, started: Option<&str>| EventKind::Pod {
            pod: "ledger-0".into(),
            uid: uid.into(),
            node: Some("w1".into()),
            phase: PodPhase::Running,
            terminating: false,
            ready,
            started_at: started.map(String::from),
            reason: None,
        };
        let events = vec![
            ev(10, p("u1", true, Some("2026-12-03T10:00:00Z"))),
            ev(
                20,
                EventKind::WorkloadReady {
                    pod: "ledger-0".into(),
                    uid: "u1".into(),
                    node: "w1".into(),
                },
            ),
            ev(
                100,
                EventKind::FaultInjected {
                    fault: crate::vocab::FaultKind::ContainerKill,
                    node: "w1".into(),
                    basis: TimeZeroBasis::CommandReturned,
                    backend: None,
                    returned_ms: None,
                },
            ),
            ev(900, p("u1", false, None)),
            ev(1900, p("u1", false, Some("2026-12-03T10:00:05Z"))),
            ev(2600, p("u1", true, Some("2026-12-03T10:00:05Z"))),
        ];
        let tl = analyze(&events);
        assert_eq!(
            names(&tl),
            vec![
                ("fault-injected", 0),
                ("container-restarted", 1800),
                ("replacement-running", 1800),
                ("replacement-ready", 2500),
            ]
        );
        assert!(tl.recovered());
        assert_eq!(tl.replacement_uid.as_deref(), Some("u1"));
        assert_eq!(tl.metric(Metric::TimeToReady), Some(2500));
        // The same stream without a new start time is no recovery.
        let stuck: Vec<Event> = events[..4].to_vec();
        assert!(!analyze(&stuck).recovered());
    }

    #[test]
    fn the_last_workload_ready_before_the_fault_is_the_old_pod() {
        let events = vec![
            ev(
                0,
                EventKind::WorkloadReady {
                    pod: "writer-0".into(),
                    uid: "first".into(),
                    node: "w2".into(),
                },
            ),
            ev(
                5,
                EventKind::WorkloadReady {
                    pod: "writer-0".into(),
                    uid: "old".into(),
                    node: "w1".into(),
                },
            ),
            ev(
                10,
                EventKind::FaultInjected {
                    fault: crate::vocab::FaultKind::NodeShutdown,
                    node: "w1".into(),
                    basis: TimeZeroBasis::RequestReturned,
                    backend: None,
                    returned_ms: None,
                },
            ),
            ev(
                15,
                EventKind::WorkloadReady {
                    pod: "writer-0".into(),
                    uid: "later".into(),
                    node: "w3".into(),
                },
            ),
            ev(20, pod("first", Some("w2"), "Running", false, true)),
        ];
        let tl = analyze(&events);
        assert_eq!(tl.old_uid.as_deref(), Some("old"));
        assert_eq!(tl.target_node.as_deref(), Some("w1"));
        // "first" is not the old uid, so it is a replacement.
        assert!(tl.recovered());
        assert_eq!(tl.replacement_uid.as_deref(), Some("first"));
    }

    #[test]
    fn the_old_uid_never_counts_as_replacement_any_other_pod_does() {
        let events = vec![
            ev(
                0,
                EventKind::WorkloadReady {
                    pod: "writer-0".into(),
                    uid: "old".into(),
                    node: "w1".into(),
                },
            ),
            ev(
                10,
                EventKind::FaultInjected {
                    fault: crate::vocab::FaultKind::NodeShutdown,
                    node: "w1".into(),
                    basis: TimeZeroBasis::RequestReturned,
                    backend: None,
                    returned_ms: None,
                },
            ),
            // The old pod flapping, even "moving" to another node in a bogus event.
            ev(20, pod("old", Some("w1"), "Running", false, false)),
            ev(30, pod("old", Some("w2"), "Running", false, true)),
            ev(40, pod("old", Some("w1"), "Running", true, true)),
            // Any other pod of the workload is a replacement, whatever its name (a
            // Deployment's replacement has a new one).
            ev(
                50,
                EventKind::Pod {
                    pod: "writer-1".into(),
                    uid: "other".into(),
                    node: Some("w2".into()),
                    phase: PodPhase::Running,
                    terminating: false,
                    ready: true,
                    started_at: None,
                    reason: None,
                },
            ),
        ];
        let tl = analyze(&events);
        assert_eq!(
            names(&tl),
            vec![
                ("fault-injected", 0),
                ("pod-terminating", 30),
                ("replacement-created", 40),
                ("replacement-scheduled", 40),
                ("replacement-running", 40),
                ("replacement-ready", 40),
            ]
        );
        assert!(tl.recovered());
        assert_eq!(tl.replacement_uid.as_deref(), Some("other"));
        assert_eq!(tl.replacement_pod.as_deref(), Some("writer-1"));
        assert!(
            !tl.has(Phase::TwoPodsRunning),
            "the old pod was terminating"
        );
    }

    fn fault(at: u64) -> Event {
        ev(
            at,
            EventKind::FaultInjected {
                fault: crate::vocab::FaultKind::NetworkPartition,
                node: "w1".into(),
                basis: TimeZeroBasis::CommandReturned,
                backend: Some(crate::vocab::Backend::Agent),
                returned_ms: Some(at + 3),
            },
        )
    }

    fn ready(at: u64) -> Event {
        ev(
            at,
            EventKind::WorkloadReady {
                pod: "writer-0".into(),
                uid: "old".into(),
                node: "w1".into(),
            },
        )
    }

    #[test]
    fn two_pods_running_at_once_is_a_phase() {
        let events = vec![
            ev(0, pod("old", Some("w1"), "Running", false, true)),
            ready(1),
            ev(
                5,
                EventKind::FaultInjecting {
                    fault: crate::vocab::FaultKind::NetworkPartition,
                    node: "w1".into(),
                },
            ),
            fault(10),
            // A force-deleted pod's replacement runs while the old one never stopped (its
            // node is partitioned) — but the API server no longer lists the old one.
            ev(
                20,
                EventKind::PodDeleted {
                    pod: "writer-0".into(),
                    uid: "old".into(),
                    node: Some("w1".into()),
                },
            ),
            ev(30, pod("new", Some("w2"), "Running", false, true)),
        ];
        let tl = analyze(&events);
        assert!(
            !tl.has(Phase::TwoPodsRunning),
            "one pod as far as the API knows"
        );
        let tz = tl.time_zero.unwrap();
        assert_eq!(tz.basis, TimeZeroBasis::CommandReturned);
        assert_eq!((tz.requested_ms, tz.returned_ms), (Some(-5), Some(3)));

        // A Deployment-like replacement while the old pod still counts as Running.
        let events = vec![
            ev(0, pod("old", Some("w1"), "Running", false, true)),
            ready(1),
            fault(10),
            ev(30, pod("new", Some("w2"), "Running", false, false)),
        ];
        let tl = analyze(&events);
        assert_eq!(tl.at(Phase::TwoPodsRunning), Some(20));
    }

    #[test]
    fn a_phase_seen_inside_a_watch_gap_is_uncertain_and_no_metric() {
        use crate::timeline::Resource;
        let events = vec![
            ev(0, pod("old", Some("w1"), "Running", false, true)),
            ready(1),
            fault(10),
            ev(
                12,
                EventKind::NodeReady {
                    node: "w1".into(),
                    status: ConditionStatus::False,
                    reason: None,
                },
            ),
            ev(
                15,
                EventKind::WatchGap {
                    resource: Resource::Pods,
                    error: "connection reset".into(),
                },
            ),
            // Seen in the relist: it happened some time after the gap began.
            ev(50, pod("new", Some("w2"), "Running", false, true)),
            ev(
                51,
                EventKind::WatchResumed {
                    resource: Resource::Pods,
                    relisted: true,
                },
            ),
        ];
        let tl = analyze(&events);
        let ready = tl.phase(Phase::ReplacementReady).unwrap();
        assert_eq!((ready.at_ms, ready.since_ms), (40, Some(5)));
        assert_eq!(
            tl.metric(Metric::TimeToReady),
            None,
            "uncertain: not a number"
        );
        assert_eq!(tl.bounds(Metric::TimeToReady), Some((5, 40)));
        // The node watch had no gap: its phase is certain.
        assert_eq!(tl.metric(Metric::TimeToNotReady), Some(2));
        assert_eq!(tl.gaps, vec![(Resource::Pods, 5, Some(41))]);
        assert!(tl.recovered());
    }

    #[test]
    fn without_a_known_old_uid_there_is_no_replacement() {
        let events = vec![
            ev(
                10,
                EventKind::FaultInjected {
                    fault: crate::vocab::FaultKind::NodeShutdown,
                    node: "w1".into(),
                    basis: TimeZeroBasis::RequestReturned,
                    backend: None,
                    returned_ms: None,
                },
            ),
            ev(20, pod("new", Some("w2"), "Running", false, true)),
        ];
        let tl = analyze(&events);
        assert_eq!(tl.target_node.as_deref(), Some("w1"));
        assert!(!tl.recovered());
    }

    #[test]
    fn phases_of_node_deletion_and_taints_seen_on_the_node() {
        let events = vec![
            ev(
                0,
                EventKind::WorkloadReady {
                    pod: "writer-0".into(),
                    uid: "old".into(),
                    node: "w1".into(),
                },
            ),
            ev(
                10,
                EventKind::FaultInjected {
                    fault: crate::vocab::FaultKind::NodeShutdown,
                    node: "w1".into(),
                    basis: TimeZeroBasis::RequestReturned,
                    backend: None,
                    returned_ms: None,
                },
            ),
            // Someone else's out-of-service taint, seen on the node before the harness reports.
            ev(
                20,
                EventKind::NodeTaint {
                    node: "w1".into(),
                    key: OUT_OF_SERVICE_TAINT.into(),
                    effect: "NoExecute".into(),
                    added: true,
                    by: None,
                },
            ),
            ev(
                25,
                EventKind::NodeTaint {
                    node: "w2".into(),
                    key: UNREACHABLE_TAINT.into(),
                    effect: "NoExecute".into(),
                    added: true,
                    by: None,
                },
            ),
            ev(
                30,
                EventKind::RemediationApplied {
                    remediation: "out-of-service-taint".into(),
                    node: "w1".into(),
                    detail: "".into(),
                },
            ),
            ev(40, EventKind::NodeDeleted { node: "w2".into() }),
            ev(50, EventKind::NodeDeleted { node: "w1".into() }),
            ev(
                60,
                EventKind::VolumeAttachmentDeleted {
                    name: "va".into(),
                    node: "w1".into(),
                    pv: None,
                },
            ),
            ev(
                70,
                EventKind::VolumeAttachment {
                    name: "vb".into(),
                    node: "w1".into(),
                    pv: None,
                    attached: true,
                },
            ),
        ];
        let tl = analyze(&events);
        assert_eq!(
            names(&tl),
            vec![
                ("fault-injected", 0),
                ("out-of-service-taint", 10),
                ("remediation-applied", 20),
                ("node-deleted", 40),
                ("volume-detached", 50),
            ]
        );
    }

    /// Synthetic: a run in a lane, and VolumeAttachments of three volumes on its target node
    /// and elsewhere — its claim's (bound), one nodedown made for it, and another run's.
    #[test]
    fn a_scoped_run_counts_only_its_own_volumes() {
        let va = |at, name: &str, node: &str, pv: &str, attached| {
            ev(
                at,
                EventKind::VolumeAttachment {
                    name: name.into(),
                    node: node.into(),
                    pv: Some(pv.into()),
                    attached,
                },
            )
        };
        let start = |scoped: bool| {
            let mut e = vec![];
            if scoped {
                e.push(ev(
                    0,
                    EventKind::RunScope {
                        namespace: "nd-a-1-abcde".into(),
                        lane: Some(2),
                        nodes: vec!["w3".into(), "w4".into()],
                        confined: false,
                    },
                ));
            }
            e.push(ev(
                1,
                EventKind::ClaimBound {
                    claim: "data-ledger-0".into(),
                    pv: "pvc-1234".into(),
                },
            ));
            e.push(ev(
                2,
                EventKind::WorkloadReady {
                    pod: "ledger-0".into(),
                    uid: "old".into(),
                    node: "w3".into(),
                },
            ));
            e.push(ev(
                10,
                EventKind::FaultInjected {
                    fault: crate::vocab::FaultKind::NodeShutdown,
                    node: "w3".into(),
                    basis: TimeZeroBasis::RequestReturned,
                    backend: None,
                    returned_ms: None,
                },
            ));
            e
        };
        // Another run's volume detaches from w3 first and attaches on w4 first.
        let others = [
            va(20, "v-other", "w3", "nd-b-1-fffff-data-ledger-0", false),
            va(25, "v-other2", "w4", "nd-b-1-fffff-data-ledger-0", true),
        ];
        let own = [
            va(40, "v-own", "w3", "pvc-1234", false),
            va(60, "v-made", "w4", "nd-a-1-abcde-data-ledger-0", true),
        ];
        let scoped: Vec<Event> = start(true)
            .into_iter()
            .chain(others.clone())
            .chain(own.clone())
            .collect();
        let tl = analyze(&scoped);
        assert_eq!((tl.lane, tl.lane_nodes.len()), (Some(2), 2));
        assert_eq!(tl.at(Phase::VolumeDetached), Some(30), "its claim's volume");
        assert_eq!(
            tl.at(Phase::VolumeAttached),
            Some(50),
            "the volume made for it"
        );
        // The same events without a scope (as recorded before it existed) take the first.
        let unscoped: Vec<Event> = start(false).into_iter().chain(others).chain(own).collect();
        let tl = analyze(&unscoped);
        assert_eq!(tl.at(Phase::VolumeDetached), Some(10));
        assert_eq!(tl.at(Phase::VolumeAttached), Some(15));
    }

    #[test]
    fn names_round_trip() {
        for p in Phase::ALL {
            assert_eq!(Phase::from_name(p.name()), Some(p));
        }
        for m in Metric::ALL {
            assert_eq!(Metric::from_name(m.name()), Some(m));
        }
        assert_eq!(Phase::from_name("nope"), None);
    }
}
