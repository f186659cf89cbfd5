//! Phases and metrics of a run, computed from its events (pure).
//!
//! The fault (the first `fault-injected` event) is time zero. Every phase is the FIRST event at
//! or after the fault that matches it; its time is counted in milliseconds from the fault.
//! Events before the fault never make a phase, and without a fault there are no phases.
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

use super::{Event, EventKind};
use std::collections::BTreeMap;

/// Taint the node lifecycle controller puts on a node that stopped reporting.
pub const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";
/// Taint that declares a node out of service (non-graceful node shutdown, KEP-2268).
pub const OUT_OF_SERVICE_TAINT: &str = "node.kubernetes.io/out-of-service";

/// A step of a failover, in the order they usually happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// The fault was applied (time zero).
    FaultInjected,
    /// The target node's Ready condition is no longer `True`.
    NodeNotReady,
    /// The `node.kubernetes.io/unreachable` taint was added to the target node.
    UnreachableTaint,
    /// The old pod got a deletionTimestamp.
    PodTerminating,
    /// The out-of-service taint was applied (by the harness, or seen on the target node).
    OutOfServiceTaint,
    /// The harness applied any remediation.
    RemediationApplied,
    /// The old pod is gone from the API server.
    OldPodDeleted,
    /// The target Node object is gone.
    NodeDeleted,
    /// The volume attachment on the target node is detached or deleted.
    VolumeDetached,
    /// A pod with the target's name and a new uid exists.
    ReplacementCreated,
    /// The replacement is bound to a node.
    ReplacementScheduled,
    /// A volume is attached to a node other than the target.
    VolumeAttached,
    /// The replacement's phase is Running.
    ReplacementRunning,
    /// The replacement is Ready.
    ReplacementReady,
    /// The fault was undone.
    FaultHealed,
    /// The recovery timeout elapsed before the replacement was Ready.
    RecoveryTimeout,
}

impl Phase {
    /// Every phase, in the usual order of a failover.
    pub const ALL: [Phase; 16] = [
        Phase::FaultInjected,
        Phase::NodeNotReady,
        Phase::UnreachableTaint,
        Phase::PodTerminating,
        Phase::OutOfServiceTaint,
        Phase::RemediationApplied,
        Phase::OldPodDeleted,
        Phase::NodeDeleted,
        Phase::VolumeDetached,
        Phase::ReplacementCreated,
        Phase::ReplacementScheduled,
        Phase::VolumeAttached,
        Phase::ReplacementRunning,
        Phase::ReplacementReady,
        Phase::FaultHealed,
        Phase::RecoveryTimeout,
    ];

    /// The kebab-case name used in reports, e.g. `node-not-ready`.
    pub fn name(self) -> &'static str {
        match self {
            Phase::FaultInjected => "fault-injected",
            Phase::NodeNotReady => "node-not-ready",
            Phase::UnreachableTaint => "unreachable-taint",
            Phase::PodTerminating => "pod-terminating",
            Phase::OutOfServiceTaint => "out-of-service-taint",
            Phase::RemediationApplied => "remediation-applied",
            Phase::OldPodDeleted => "old-pod-deleted",
            Phase::NodeDeleted => "node-deleted",
            Phase::VolumeDetached => "volume-detached",
            Phase::ReplacementCreated => "replacement-created",
            Phase::ReplacementScheduled => "replacement-scheduled",
            Phase::VolumeAttached => "volume-attached",
            Phase::ReplacementRunning => "replacement-running",
            Phase::ReplacementReady => "replacement-ready",
            Phase::FaultHealed => "fault-healed",
            Phase::RecoveryTimeout => "recovery-timeout",
        }
    }

    /// The phase of a kebab-case name.
    pub fn from_name(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name() == name)
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A duration measured from the fault to a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

/// What the events of one run say about its failover.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Timeline {
    /// The node the fault acted on.
    pub target_node: Option<String>,
    /// The workload pod on the target node (from the last `workload-ready` before the fault).
    pub target_pod: Option<String>,
    /// The uid of the target pod before the fault: the old pod.
    pub old_uid: Option<String>,
    /// `at_ms` of the first `fault-injected` event (time zero of the phases).
    pub fault_at_ms: Option<u64>,
    /// The node of the replacement: where it became Ready, else where it was scheduled.
    pub replacement_node: Option<String>,
    /// The uid of the replacement: the one that became Ready, else the first one created.
    pub replacement_uid: Option<String>,
    /// The remediation of the first `remediation-applied` event in the failover window.
    pub remediation: Option<String>,
    /// Phases that happened, in time order (ties in the order of [`Phase::ALL`]), with their
    /// time in milliseconds from the fault.
    pub phases: Vec<(Phase, u64)>,
    /// How long after the fault the failover was observed: until the failover window closed
    /// (recovery timeout or fault healed), else until the last event. `None` without a fault.
    pub observed_ms: Option<u64>,
}

impl Timeline {
    /// Milliseconds from the fault to `phase`, when it happened.
    pub fn at(&self, phase: Phase) -> Option<u64> {
        self.phases
            .iter()
            .find(|(p, _)| *p == phase)
            .map(|(_, ms)| *ms)
    }

    /// Whether `phase` happened.
    pub fn has(&self, phase: Phase) -> bool {
        self.at(phase).is_some()
    }

    /// Milliseconds from the fault for `metric`; `None` (not zero) when its phase never happened.
    pub fn metric(&self, metric: Metric) -> Option<u64> {
        self.at(metric.phase())
    }

    /// Every metric that has a value, by name.
    pub fn metrics(&self) -> BTreeMap<String, u64> {
        Metric::ALL
            .into_iter()
            .filter_map(|m| self.metric(m).map(|ms| (m.name().to_string(), ms)))
            .collect()
    }

    /// A replacement pod became Ready within the failover window.
    pub fn recovered(&self) -> bool {
        self.has(Phase::ReplacementReady)
    }

    /// The failover window closed (recovery timeout or fault healed) within the events.
    pub fn window_closed(&self) -> bool {
        self.has(Phase::RecoveryTimeout) || self.has(Phase::FaultHealed)
    }
}

/// Computes the timeline of one run from its events, in the order they were recorded.
pub fn analyze(events: &[Event]) -> Timeline {
    let fault_idx = events
        .iter()
        .position(|e| matches!(e.what, EventKind::FaultInjected { .. }));
    let before = &events[..fault_idx.unwrap_or(events.len())];
    let steady = before.iter().rev().find_map(|e| match &e.what {
        EventKind::WorkloadReady { pod, uid, node } => Some((pod, uid, node)),
        _ => None,
    });

    let mut tl = Timeline {
        target_pod: steady.map(|(pod, _, _)| pod.clone()),
        old_uid: steady.map(|(_, uid, _)| uid.clone()),
        target_node: steady.map(|(_, _, node)| node.clone()),
        ..Timeline::default()
    };

    let Some(fault_idx) = fault_idx else {
        return tl;
    };
    let fault_at = events[fault_idx].at_ms;
    tl.fault_at_ms = Some(fault_at);
    if let EventKind::FaultInjected { node, .. } = &events[fault_idx].what {
        tl.target_node = Some(node.clone());
    }

    let target_node = tl.target_node.clone();
    let target_pod = tl.target_pod.clone();
    let old_uid = tl.old_uid.clone();
    let on_target = |node: &str| target_node.as_deref() == Some(node);
    let is_old = |uid: &str| old_uid.as_deref() == Some(uid);
    // A replacement: the target's name with a uid that is not the old one (needs both known).
    let is_replacement = |pod: &str, uid: &str| {
        target_pod.as_deref() == Some(pod) && old_uid.as_deref().is_some_and(|old| old != uid)
    };

    let mut first: [Option<u64>; Phase::ALL.len()] = [None; Phase::ALL.len()];
    let mut scheduled_on: Option<String> = None;
    let mut ready_on: Option<(String, Option<String>)> = None;
    let mut created_uid: Option<String> = None;
    let mut closed_at: Option<u64> = None;
    let mut last_at = fault_at;

    for e in &events[fault_idx..] {
        if e.at_ms < fault_at {
            continue;
        }
        let t = e.at_ms - fault_at;
        last_at = last_at.max(e.at_ms);
        let mut hit: Vec<Phase> = Vec::new();
        match &e.what {
            EventKind::FaultHealed { .. } => hit.push(Phase::FaultHealed),
            EventKind::RecoveryTimeout { .. } => hit.push(Phase::RecoveryTimeout),
            _ => {}
        }
        if closed_at.is_none() {
            match &e.what {
                EventKind::FaultInjected { .. } => hit.push(Phase::FaultInjected),
                EventKind::NodeReady { node, status, .. }
                    if on_target(node) && status != "True" =>
                {
                    hit.push(Phase::NodeNotReady)
                }
                EventKind::NodeTaint {
                    node,
                    key,
                    added: true,
                    ..
                } if on_target(node) => {
                    if key == UNREACHABLE_TAINT {
                        hit.push(Phase::UnreachableTaint);
                    } else if key == OUT_OF_SERVICE_TAINT {
                        hit.push(Phase::OutOfServiceTaint);
                    }
                }
                EventKind::RemediationApplied { remediation, .. } => {
                    if tl.remediation.is_none() {
                        tl.remediation = Some(remediation.clone());
                    }
                    if remediation == "out-of-service-taint" {
                        hit.push(Phase::OutOfServiceTaint);
                    }
                    hit.push(Phase::RemediationApplied);
                }
                EventKind::PodDeleted { uid, .. } if is_old(uid) => hit.push(Phase::OldPodDeleted),
                EventKind::NodeDeleted { node } if on_target(node) => hit.push(Phase::NodeDeleted),
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
                EventKind::Pod {
                    pod,
                    uid,
                    node,
                    phase,
                    terminating,
                    ready,
                    ..
                } => {
                    if is_old(uid) {
                        if *terminating {
                            hit.push(Phase::PodTerminating);
                        }
                    } else if is_replacement(pod, uid) {
                        hit.push(Phase::ReplacementCreated);
                        if created_uid.is_none() {
                            created_uid = Some(uid.clone());
                        }
                        if let Some(n) = node {
                            hit.push(Phase::ReplacementScheduled);
                            if scheduled_on.is_none() {
                                scheduled_on = Some(n.clone());
                            }
                        }
                        if phase == "Running" {
                            hit.push(Phase::ReplacementRunning);
                        }
                        if *ready {
                            hit.push(Phase::ReplacementReady);
                            if ready_on.is_none() {
                                ready_on = Some((uid.clone(), node.clone()));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        for p in hit {
            first[p.index()].get_or_insert(t);
        }
        if closed_at.is_none()
            && matches!(
                e.what,
                EventKind::RecoveryTimeout { .. } | EventKind::FaultHealed { .. }
            )
        {
            closed_at = Some(t);
        }
    }

    let mut phases: Vec<(Phase, u64)> = Phase::ALL
        .into_iter()
        .filter_map(|p| first[p.index()].map(|t| (p, t)))
        .collect();
    // Stable: equal times keep the order of Phase::ALL.
    phases.sort_by_key(|&(_, t)| t);
    tl.phases = phases;
    tl.observed_ms = Some(closed_at.unwrap_or(last_at - fault_at));
    match ready_on {
        Some((uid, node)) => {
            tl.replacement_uid = Some(uid);
            tl.replacement_node = node.or(scheduled_on);
        }
        None => {
            tl.replacement_uid = created_uid;
            tl.replacement_node = scheduled_on;
        }
    }
    tl
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const OOS_TAINT: &str = include_str!("../../tests/fixtures/events/oos-taint.jsonl");
    pub(crate) const NONE_TIMEOUT: &str =
        include_str!("../../tests/fixtures/events/none-timeout.jsonl");
    pub(crate) const FORCE_DELETE: &str =
        include_str!("../../tests/fixtures/events/force-delete.jsonl");

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
            phase: phase.into(),
            terminating,
            ready,
            started_at: None,
        }
    }

    fn names(tl: &Timeline) -> Vec<(&'static str, u64)> {
        tl.phases.iter().map(|(p, t)| (p.name(), *t)).collect()
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
                ("volume-detached", 28564),
                ("volume-attached", 29208),
                ("replacement-running", 31802),
                ("replacement-ready", 39700),
                ("fault-healed", 41208),
            ]
        );
        let m = tl.metrics();
        let expect: BTreeMap<String, u64> = [
            ("time-to-not-ready", 20911),
            ("time-to-remediation", 21300),
            ("time-to-delete", 27908),
            ("time-to-detach", 28564),
            ("time-to-schedule", 28053),
            ("time-to-attach", 29208),
            ("time-to-running", 31802),
            ("time-to-ready", 39700),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
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
    fn force_delete_run_waits_for_the_forced_detach() {
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
                ("volume-detached", 411180),
                ("volume-attached", 412040),
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
                    status: "False".into(),
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
                    fault: "node-shutdown".into(),
                    node: "w1".into(),
                },
            ),
            ev(
                150,
                EventKind::NodeReady {
                    node: "w2".into(),
                    status: "False".into(),
                    reason: None,
                },
            ),
        ];
        let tl = analyze(&events);
        assert_eq!(names(&tl), vec![("fault-injected", 0)]);
        assert!(!tl.recovered());
        assert_eq!(tl.observed_ms, Some(50));
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
                    fault: "node-shutdown".into(),
                    node: "w1".into(),
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
    fn the_old_uid_never_counts_as_replacement() {
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
                    fault: "node-shutdown".into(),
                    node: "w1".into(),
                },
            ),
            // The old pod flapping, even "moving" to another node in a bogus event.
            ev(20, pod("old", Some("w1"), "Running", false, false)),
            ev(30, pod("old", Some("w2"), "Running", false, true)),
            ev(40, pod("old", Some("w1"), "Running", true, true)),
            // Another pod's name with a new uid is not a replacement either.
            ev(
                50,
                EventKind::Pod {
                    pod: "writer-1".into(),
                    uid: "other".into(),
                    node: Some("w2".into()),
                    phase: "Running".into(),
                    terminating: false,
                    ready: true,
                    started_at: None,
                },
            ),
        ];
        let tl = analyze(&events);
        assert_eq!(
            names(&tl),
            vec![("fault-injected", 0), ("pod-terminating", 30)]
        );
        assert!(!tl.recovered());
        assert_eq!(tl.replacement_uid, None);
    }

    #[test]
    fn without_a_known_old_uid_there_is_no_replacement() {
        let events = vec![
            ev(
                10,
                EventKind::FaultInjected {
                    fault: "node-shutdown".into(),
                    node: "w1".into(),
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
                    fault: "node-shutdown".into(),
                    node: "w1".into(),
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
                },
            ),
            ev(
                25,
                EventKind::NodeTaint {
                    node: "w2".into(),
                    key: UNREACHABLE_TAINT.into(),
                    effect: "NoExecute".into(),
                    added: true,
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
