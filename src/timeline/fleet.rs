//! A fleet (pure): the instances of one run's workload, each read by its own [`Tracker`].
//!
//! Every event goes to the instance it belongs to — a pod (by name: `<instance>-<ordinal>`),
//! its claim (`data-<pod>`), that claim's volume and its VolumeAttachments, the Kubernetes
//! events about that pod — and an event that belongs to no instance (nodes, taints, the fault,
//! the remediation, stages, counters) goes to every instance. So an instance's phases mean
//! exactly what a run's phases mean with one instance, and a run of one instance is read as it
//! always was: with a single instance, every event goes to it unfiltered.
//!
//! The run's own timeline is its slowest instance's (one that did not recover, else the last
//! to be Ready): a run "recovered" when every instance did, and its `time-to-ready` is the
//! time until all instances were Ready. [`FleetMetrics`] gives the distributions over
//! instances.

use super::{Event, EventKind, Metric, Phase, Timeline, Tracker};
use std::collections::BTreeMap;

/// Where an event goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    All,
    One(usize),
    Nowhere,
}

/// The run's instances, each with its own tracker.
#[derive(Debug, Clone)]
pub struct Fleet {
    names: Vec<String>,
    /// Instance name → its position in `names`.
    index: std::collections::HashMap<String, usize>,
    trackers: Vec<Tracker>,
    /// PersistentVolume → instance (from `claim-bound` events).
    volumes: BTreeMap<String, usize>,
    /// The run's namespace (its `run-scope` event): the volumes nodedown makes are
    /// `<namespace>-data-<pod>`.
    namespace: Option<String>,
}

impl Fleet {
    /// A fleet of the instances `names` (see `spec::instance_names`); no names is one unnamed
    /// instance.
    pub fn new(names: Vec<String>) -> Fleet {
        let names = if names.is_empty() {
            vec![String::new()]
        } else {
            names
        };
        Fleet {
            trackers: vec![Tracker::new(); names.len()],
            index: names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i))
                .collect(),
            names,
            volumes: BTreeMap::new(),
            namespace: None,
        }
    }

    /// The instances' names, in order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The instances' trackers, in the order of [`Fleet::names`].
    pub fn trackers(&self) -> &[Tracker] {
        &self.trackers
    }

    /// The member a pod belongs to: the pod itself when each replica is a member (see
    /// `spec::members`), else its instance, `<instance>-<ordinal>`.
    pub fn instance_of_pod(&self, pod: &str) -> Option<usize> {
        if let Some(i) = self.index.get(pod) {
            return Some(*i);
        }
        let (name, ordinal) = pod.rsplit_once('-')?;
        if ordinal.is_empty() || !ordinal.chars().all(|c| c.is_ascii_digit()) {
            return None;
        }
        self.index.get(name).copied()
    }

    fn by_pod(&self, pod: &str) -> Route {
        self.instance_of_pod(pod).map_or(Route::Nowhere, Route::One)
    }

    fn by_volume(&self, pv: Option<&str>) -> Route {
        let Some(pv) = pv else { return Route::All };
        if let Some(i) = self.volumes.get(pv) {
            return Route::One(*i);
        }
        let made = self.namespace.as_deref().and_then(|ns| {
            pv.strip_prefix(ns)
                .and_then(|rest| rest.strip_prefix("-data-"))
        });
        match made.and_then(|pod| self.instance_of_pod(pod)) {
            Some(i) => Route::One(i),
            // Not attributable to an instance: each tracker's own rule decides (another
            // tenant's volume is nobody's).
            None => Route::All,
        }
    }

    fn route(&mut self, e: &Event) -> Route {
        if self.names.len() == 1 {
            return Route::All;
        }
        match &e.what {
            EventKind::RunScope { namespace, .. } => {
                self.namespace = Some(namespace.clone());
                Route::All
            }
            EventKind::Pod { pod, .. }
            | EventKind::PodDeleted { pod, .. }
            | EventKind::WorkloadReady { pod, .. }
            | EventKind::ProbeFailing { pod, .. }
            | EventKind::ProbeRecovered { pod, .. } => self.by_pod(pod),
            EventKind::ClaimBound { claim, pv } => {
                let route = claim
                    .strip_prefix("data-")
                    .map_or(Route::Nowhere, |pod| self.by_pod(pod));
                if let Route::One(i) = route {
                    self.volumes.insert(pv.clone(), i);
                }
                route
            }
            EventKind::VolumeAttachment { pv, .. }
            | EventKind::VolumeAttachmentDeleted { pv, .. } => self.by_volume(pv.as_deref()),
            EventKind::KubeEvent { object, .. } => match object.strip_prefix("Pod/") {
                Some(pod) => self.by_pod(pod),
                None => Route::All,
            },
            _ => Route::All,
        }
    }

    /// Takes in the next recorded event.
    pub fn observe(&mut self, e: &Event) {
        match self.route(e) {
            Route::All => self.trackers.iter_mut().for_each(|t| t.observe(e)),
            Route::One(i) => self.trackers[i].observe(e),
            Route::Nowhere => {}
        }
    }

    /// Whether `done` holds for every instance.
    pub fn all(&self, done: impl Fn(&Tracker) -> bool) -> bool {
        self.trackers.iter().all(done)
    }

    /// Whether `done` holds for every instance the fault took (see [`Timeline::affected`]):
    /// a replica on a node the fault left alone has nothing to wait for.
    pub fn all_affected(&self, done: impl Fn(&Tracker) -> bool) -> bool {
        self.trackers.iter().filter(|t| t.affected()).all(done)
    }

    /// Every instance's timeline, with its name, in order.
    pub fn timelines(&self) -> Vec<(String, Timeline)> {
        self.names
            .iter()
            .cloned()
            .zip(self.trackers.iter().map(Tracker::timeline))
            .collect()
    }
}

/// Every instance's timeline, from the run's events.
pub fn analyze_fleet(names: Vec<String>, events: &[Event]) -> Vec<(String, Timeline)> {
    let mut fleet = Fleet::new(names);
    for e in events {
        fleet.observe(e);
    }
    fleet.timelines()
}

/// The instance whose timeline is the run's: among those the fault took (see
/// [`Timeline::affected`]), the first (in order) that did not recover, else the one Ready last
/// (the first of equals). `None` for no instances, or none the fault took.
pub fn slowest(timelines: &[(String, Timeline)]) -> Option<usize> {
    let affected = |(_, t): &(usize, &(String, Timeline))| t.1.affected();
    if let Some((i, _)) = timelines
        .iter()
        .enumerate()
        .filter(affected)
        .find(|(_, (_, t))| !t.recovered())
    {
        return Some(i);
    }
    timelines
        .iter()
        .enumerate()
        .filter(affected)
        .max_by(|(ia, (_, a)), (ib, (_, b))| {
            let at = |t: &Timeline| t.metric(Metric::TimeToReady).unwrap_or(0);
            at(a).cmp(&at(b)).then(ib.cmp(ia))
        })
        .map(|(i, _)| i)
}

/// How one metric spread over a fleet's instances (those that have it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetSpread {
    pub metric: Metric,
    /// The one distribution type (`count`: how many instances have the metric).
    pub spread: crate::units::Spread,
    /// The instance with the largest value (the first of equals).
    pub max_instance: String,
}

/// When one phase happened across a fleet's instances: how many had it, the first and the
/// last time, and the rate between them — what the controllers' throughput was (PodGC's
/// deletions, the attach/detach controller's detaches and attaches).
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseWindow {
    pub phase: Phase,
    pub count: usize,
    pub first_ms: u64,
    pub last_ms: u64,
    /// `(count - 1)` intervals over `last - first`, per second: absent with fewer than two
    /// instances or when all happened in the same millisecond.
    pub per_second: Option<f64>,
}

/// The phases whose windows a fleet reports.
pub const WINDOW_PHASES: [Phase; 4] = [
    Phase::OldPodDeleted,
    Phase::VolumeDetached,
    Phase::VolumeAttached,
    Phase::ReplacementReady,
];

/// The window of `phase` over the instances that had it with an observed time.
pub fn phase_window(timelines: &[(String, Timeline)], phase: Phase) -> Option<PhaseWindow> {
    let times: Vec<u64> = timelines
        .iter()
        .filter_map(|(_, t)| {
            t.phase(phase)
                .filter(|p| p.since_ms.is_none())
                .map(|p| p.at_ms)
        })
        .collect();
    let (first, last) = (*times.iter().min()?, *times.iter().max()?);
    let per_second = (times.len() >= 2 && last > first)
        .then(|| (times.len() - 1) as f64 * 1000.0 / (last - first) as f64);
    Some(PhaseWindow {
        phase,
        count: times.len(),
        first_ms: first,
        last_ms: last,
        per_second,
    })
}

/// What a fleet's instances say together.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetMetrics {
    pub instances: usize,
    /// The members no fault took (replicas that served on other nodes), by name; the other
    /// figures are over the rest.
    pub unaffected: Vec<String>,
    /// How many instances recovered (a replacement Ready in the failover window).
    pub recovered: usize,
    /// From the fault until every instance was Ready again: the largest `time-to-ready`, only
    /// when every instance recovered with an observed time; otherwise absent.
    pub time_to_all_ready: Option<u64>,
    /// The instance whose timeline is the run's (see [`slowest`]).
    pub slowest: Option<String>,
    /// Every metric at least one instance has, in the order of [`Metric::ALL`].
    pub spreads: Vec<FleetSpread>,
    /// The windows of [`WINDOW_PHASES`] that at least one instance had.
    pub windows: Vec<PhaseWindow>,
}

/// The fleet's metrics over its instances' timelines: over those the fault took, when it left
/// some alone (a StatefulSet's replicas on other nodes: named in `unaffected`).
pub fn fleet_metrics(all: &[(String, Timeline)]) -> FleetMetrics {
    let unaffected: Vec<String> = all
        .iter()
        .filter(|(_, t)| !t.affected())
        .map(|(n, _)| n.clone())
        .collect();
    let some;
    let timelines = if unaffected.is_empty() {
        all
    } else {
        some = all
            .iter()
            .filter(|(_, t)| t.affected())
            .cloned()
            .collect::<Vec<_>>();
        some.as_slice()
    };
    let recovered = timelines.iter().filter(|(_, t)| t.recovered()).count();
    let ready: Vec<Option<u64>> = timelines
        .iter()
        .map(|(_, t)| t.metric(Metric::TimeToReady))
        .collect();
    let time_to_all_ready = if !timelines.is_empty() && ready.iter().all(Option::is_some) {
        ready.iter().flatten().max().copied()
    } else {
        None
    };
    let spreads = Metric::ALL
        .into_iter()
        .filter_map(|metric| {
            let values: Vec<(usize, u64)> = timelines
                .iter()
                .enumerate()
                .filter_map(|(i, (_, t))| t.metric(metric).map(|v| (i, v)))
                .collect();
            let just: Vec<u64> = values.iter().map(|(_, v)| *v).collect();
            let (imax, _) = values
                .iter()
                .copied()
                .max_by(|(ia, a), (ib, b)| a.cmp(b).then(ib.cmp(ia)))?;
            Some(FleetSpread {
                metric,
                spread: crate::units::spread(&just)?,
                max_instance: timelines[imax].0.clone(),
            })
        })
        .collect();
    FleetMetrics {
        instances: all.len(),
        unaffected,
        recovered,
        time_to_all_ready,
        slowest: slowest(timelines).map(|i| timelines[i].0.clone()),
        spreads,
        windows: WINDOW_PHASES
            .into_iter()
            .filter_map(|p| phase_window(timelines, p))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{Phase, PodPhase};

    // A synthetic fleet (written by hand, not recorded): three instances on w1, powered off;
    // the taint frees them; their replacements come up on w2 at 20 s, 25 s and (for the last,
    // in `stuck`) never. Each volume detaches from w1 and attaches to w2; another tenant's
    // volume detaches from w1 too and belongs to no instance.
    fn ev(at_ms: u64, what: EventKind) -> Event {
        Event {
            at_ms,
            wall: format!("t+{at_ms}"),
            what,
        }
    }

    fn pod(name: &str, uid: &str, node: &str, ready: bool, terminating: bool) -> EventKind {
        EventKind::Pod {
            pod: name.into(),
            uid: uid.into(),
            node: Some(node.into()),
            phase: PodPhase::Running,
            terminating,
            ready,
            started_at: None,
            reason: None,
        }
    }

    fn va(pv: &str, node: &str, attached: bool) -> EventKind {
        EventKind::VolumeAttachment {
            name: format!("csi-{pv}-{node}"),
            node: node.into(),
            pv: Some(pv.into()),
            attached,
        }
    }

    const NAMES: [&str; 3] = ["ledger", "ledger-i1", "ledger-i2"];

    fn events(stuck: bool) -> Vec<Event> {
        let mut e = vec![ev(
            0,
            EventKind::RunScope {
                namespace: "ns".into(),
                lane: None,
                nodes: vec![],
                confined: false,
            },
        )];
        for (i, n) in NAMES.iter().enumerate() {
            let p = format!("{n}-0");
            e.push(ev(
                10 + i as u64,
                EventKind::ClaimBound {
                    claim: format!("data-{p}"),
                    pv: format!("ns-data-{p}"),
                },
            ));
            e.push(ev(20, pod(&p, &format!("old{i}"), "w1", true, false)));
            e.push(ev(30, va(&format!("ns-data-{p}"), "w1", true)));
            e.push(ev(
                40,
                EventKind::WorkloadReady {
                    pod: p.clone(),
                    uid: format!("old{i}"),
                    node: "w1".into(),
                },
            ));
        }
        e.push(ev(
            1000,
            EventKind::FaultInjected {
                fault: crate::vocab::FaultKind::NodeShutdown,
                node: "w1".into(),
                basis: crate::timeline::TimeZeroBasis::CommandReturned,
                backend: None,
                returned_ms: None,
            },
        ));
        e.push(ev(
            6000,
            EventKind::NodeReady {
                node: "w1".into(),
                status: crate::timeline::ConditionStatus::Unknown,
                reason: None,
            },
        ));
        e.push(ev(7000, va("pvc-other-tenant", "w1", false)));
        e.push(ev(
            8000,
            EventKind::RemediationApplied {
                remediation: "out-of-service-taint".into(),
                node: "w1".into(),
                detail: "taint".into(),
            },
        ));
        for (i, n) in NAMES.iter().enumerate() {
            let p = format!("{n}-0");
            let t = 10_000 + 1000 * i as u64;
            e.push(ev(
                t,
                EventKind::PodDeleted {
                    pod: p.clone(),
                    uid: format!("old{i}"),
                    node: Some("w1".into()),
                },
            ));
            e.push(ev(t + 100, va(&format!("ns-data-{p}"), "w1", false)));
            if stuck && i == 2 {
                e.push(ev(
                    t + 200,
                    EventKind::KubeEvent {
                        object: format!("Pod/{p}"),
                        reason: "FailedAttachVolume".into(),
                        message: "Multi-Attach error for volume".into(),
                        kind: "Warning".into(),
                    },
                ));
                continue;
            }
            e.push(ev(t + 500, va(&format!("ns-data-{p}"), "w2", true)));
            e.push(ev(
                t + 9000 + 5000 * i as u64,
                pod(&p, &format!("new{i}"), "w2", true, false),
            ));
        }
        e.push(ev(60_000, EventKind::RecoveryTimeout { after_ms: 59_000 }));
        e
    }

    fn names() -> Vec<String> {
        NAMES.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn pods_belong_to_their_instance_by_name() {
        let f = Fleet::new(names());
        assert_eq!(f.instance_of_pod("ledger-0"), Some(0));
        assert_eq!(f.instance_of_pod("ledger-i1-0"), Some(1));
        assert_eq!(f.instance_of_pod("ledger-i2-3"), Some(2));
        assert_eq!(f.instance_of_pod("ledger-i3-0"), None);
        assert_eq!(f.instance_of_pod("ledger-7d9f8c-24567"), None);
    }

    #[test]
    fn each_instance_keeps_its_own_phases() {
        let tls = analyze_fleet(names(), &events(false));
        assert_eq!(tls.len(), 3);
        for (i, (name, tl)) in tls.iter().enumerate() {
            assert_eq!(name, NAMES[i]);
            assert_eq!(tl.target_pod.as_deref(), Some(format!("{name}-0").as_str()));
            // Shared: the node and the remediation; its own: deletion, detach, Ready.
            assert_eq!(tl.at(Phase::NodeNotReady), Some(5000));
            assert_eq!(tl.at(Phase::RemediationApplied), Some(7000));
            let t = 9000 + 1000 * i as u64;
            assert_eq!(tl.at(Phase::OldPodDeleted), Some(t), "{name}");
            assert_eq!(
                tl.at(Phase::VolumeDetached),
                Some(t + 100),
                "{name}: not the other tenant's at 6000"
            );
            assert_eq!(tl.at(Phase::VolumeAttached), Some(t + 500), "{name}");
            assert_eq!(
                tl.metric(Metric::TimeToReady),
                Some(t + 9000 + 5000 * i as u64),
                "{name}"
            );
            assert!(
                !tl.has(Phase::TwoPodsRunning),
                "{name}: one pod of its own at a time"
            );
        }
    }

    #[test]
    fn fleet_metrics_name_the_slowest_and_time_all_ready() {
        let tls = analyze_fleet(names(), &events(false));
        let m = fleet_metrics(&tls);
        assert_eq!((m.instances, m.recovered), (3, 3));
        // time-to-ready: 18 s, 24 s, 30 s.
        assert_eq!(m.time_to_all_ready, Some(30_000));
        assert_eq!(m.slowest.as_deref(), Some("ledger-i2"));
        let ready = m
            .spreads
            .iter()
            .find(|s| s.metric == Metric::TimeToReady)
            .unwrap();
        assert_eq!(
            (
                ready.spread.count,
                ready.spread.p50_ms,
                ready.spread.p90_ms,
                ready.spread.max_ms
            ),
            (3, 24_000, Some(30_000), 30_000)
        );
        assert_eq!(ready.max_instance, "ledger-i2");
        // Deleted at 9.0, 10.0 and 11.0 s: two intervals in 2 s.
        let deleted = m
            .windows
            .iter()
            .find(|w| w.phase == Phase::OldPodDeleted)
            .unwrap();
        assert_eq!(
            (deleted.count, deleted.first_ms, deleted.last_ms),
            (3, 9000, 11_000)
        );
        assert_eq!(deleted.per_second, Some(1.0));
    }

    #[test]
    fn an_instance_that_does_not_recover_is_the_runs_and_no_all_ready_time() {
        let tls = analyze_fleet(names(), &events(true));
        let m = fleet_metrics(&tls);
        assert_eq!(m.recovered, 2);
        assert_eq!(m.time_to_all_ready, None, "not every instance came back");
        assert_eq!(m.slowest.as_deref(), Some("ledger-i2"));
        assert_eq!(slowest(&tls), Some(2));
        let stuck = &tls[2].1;
        assert!(
            stuck.has(Phase::MultiAttachError),
            "its own Kubernetes event"
        );
        assert!(
            !tls[0].1.has(Phase::MultiAttachError),
            "not another instance's"
        );
    }

    // A synthetic StatefulSet of three replicas (written by hand, not recorded): ledger-0 on
    // w1, ledger-1 on w2, ledger-2 on w3; w2 is powered off, tainted, and ledger-1 comes back
    // on w4. The other two serve on; ledger-2's container restarts meanwhile in `restart`.
    fn replica_events(restart: bool) -> Vec<Event> {
        let mut e = vec![ev(
            0,
            EventKind::RunScope {
                namespace: "ns".into(),
                lane: None,
                nodes: vec![],
                confined: false,
            },
        )];
        for (i, node) in ["w1", "w2", "w3"].iter().enumerate() {
            let p = format!("ledger-{i}");
            e.push(ev(20, pod(&p, &format!("old{i}"), node, true, false)));
            e.push(ev(
                40,
                EventKind::WorkloadReady {
                    pod: p,
                    uid: format!("old{i}"),
                    node: node.to_string(),
                },
            ));
        }
        e.push(ev(
            1000,
            EventKind::FaultInjected {
                fault: crate::vocab::FaultKind::NodeShutdown,
                node: "w2".into(),
                basis: crate::timeline::TimeZeroBasis::CommandReturned,
                backend: None,
                returned_ms: None,
            },
        ));
        e.push(ev(
            6000,
            EventKind::NodeReady {
                node: "w2".into(),
                status: crate::timeline::ConditionStatus::Unknown,
                reason: None,
            },
        ));
        e.push(ev(
            8000,
            EventKind::RemediationApplied {
                remediation: "out-of-service-taint".into(),
                node: "w2".into(),
                detail: "taint".into(),
            },
        ));
        e.push(ev(
            9000,
            EventKind::PodDeleted {
                pod: "ledger-1".into(),
                uid: "old1".into(),
                node: Some("w2".into()),
            },
        ));
        if restart {
            e.push(ev(9500, pod("ledger-2", "old2", "w3", false, true)));
        }
        e.push(ev(12_000, pod("ledger-1", "new1", "w4", true, false)));
        // The teardown deletes the namespace: every pod terminates, nobody's failover.
        e.push(ev(
            20_000,
            EventKind::Stage {
                stage: crate::timeline::Stage::Heal,
            },
        ));
        e.push(ev(20_500, pod("ledger-0", "old0", "w1", true, true)));
        e.push(ev(60_000, EventKind::RecoveryTimeout { after_ms: 59_000 }));
        e
    }

    fn replica_names() -> Vec<String> {
        (0..3).map(|i| format!("ledger-{i}")).collect()
    }

    #[test]
    fn each_replica_is_its_own_member_and_only_the_faulted_one_fails_over() {
        let f = Fleet::new(replica_names());
        assert_eq!(f.instance_of_pod("ledger-1"), Some(1), "by its own name");
        assert_eq!(f.instance_of_pod("ledger-3"), None);
        let tls = analyze_fleet(replica_names(), &replica_events(false));
        let affected: Vec<bool> = tls.iter().map(|(_, t)| t.affected()).collect();
        assert_eq!(affected, [false, true, false]);
        let (_, one) = &tls[1];
        assert_eq!(one.metric(Metric::TimeToReady), Some(11_000));
        assert_eq!(one.replacement_node.as_deref(), Some("w4"));
        for i in [0, 2] {
            let (name, tl) = &tls[i];
            assert!(!tl.has(Phase::NodeNotReady), "{name}: not its node");
            assert!(!tl.has(Phase::ReplacementCreated), "{name}");
            assert!(!tl.has(Phase::RemediationApplied), "{name}: not its node's");
        }
        let m = fleet_metrics(&tls);
        assert_eq!(m.instances, 3);
        assert_eq!(m.unaffected, ["ledger-0", "ledger-2"]);
        assert_eq!((m.recovered, m.time_to_all_ready), (1, Some(11_000)));
        assert_eq!(m.slowest.as_deref(), Some("ledger-1"));
        assert_eq!(
            slowest(&tls),
            Some(1),
            "an undisturbed replica never is the run's"
        );

        let mut live = Fleet::new(replica_names());
        for e in replica_events(false) {
            live.observe(&e);
        }
        assert!(live.all_affected(|t| t.has(Phase::ReplacementReady)));
        assert!(!live.all(|t| t.has(Phase::ReplacementReady)));
    }

    #[test]
    fn a_replica_on_a_node_no_fault_took_is_judged_undisturbed() {
        let tls = analyze_fleet(replica_names(), &replica_events(false));
        let x = crate::verdict::undisturbed(&tls[0].1);
        assert_eq!(x.verdict, crate::report::Verdict::Pass, "{}", x.evidence);
        assert!(
            x.evidence
                .contains("ledger-0 on w1, which no fault took (w2)"),
            "{}",
            x.evidence
        );
        assert!(
            x.evidence
                .contains("until the teardown began 19.0s after the fault"),
            "its pod terminating in the teardown is not a disturbance: {}",
            x.evidence
        );
        let tls = analyze_fleet(replica_names(), &replica_events(true));
        let x = crate::verdict::undisturbed(&tls[2].1);
        assert_eq!(x.verdict, crate::report::Verdict::Fail);
        assert!(
            x.evidence.contains("pod-terminating at 8.5s"),
            "{}",
            x.evidence
        );
    }

    #[test]
    fn one_instance_reads_every_event_as_before() {
        let events = events(false);
        let one = analyze_fleet(vec!["ledger".into()], &events);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].1, crate::timeline::analyze(&events));
    }
}
