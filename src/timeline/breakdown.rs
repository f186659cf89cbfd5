//! Where the time of a recovery went (pure): the time from the fault to Ready cut at the
//! failover's milestones into consecutive segments — detection, remediation wait, pod deletion,
//! detach, attach, container start, readiness — a stacked bar whose parts add up to
//! `time-to-ready`. Computed from a run's metrics alone (observed times, never guessed), so the
//! runner's timeline and every report read the same segments.

use super::Metric;
use std::collections::BTreeMap;

/// One part of the bar, named by the milestone that ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    /// Fault → the node is NotReady (the node lifecycle controller's grace period).
    Detection,
    /// NotReady → the remediation applied (the `after` delay, or an external remediator).
    RemediationWait,
    /// → the old pod gone from the API (eviction, PodGC after the taint, a force delete).
    PodDeletion,
    /// → the volume detached from the dead node.
    Detach,
    /// → the volume attached to the replacement's node.
    Attach,
    /// → the replacement Running (image, mount, container start).
    ContainerStart,
    /// → the replacement Ready (its readiness probe).
    Readiness,
}

impl Segment {
    /// Every segment, in the order of a failover, with the metric that ends it.
    pub const ALL: [(Segment, Metric); 7] = [
        (Segment::Detection, Metric::TimeToNotReady),
        (Segment::RemediationWait, Metric::TimeToRemediation),
        (Segment::PodDeletion, Metric::TimeToDelete),
        (Segment::Detach, Metric::TimeToDetach),
        (Segment::Attach, Metric::TimeToAttach),
        (Segment::ContainerStart, Metric::TimeToRunning),
        (Segment::Readiness, Metric::TimeToReady),
    ];

    /// The kebab-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Segment::Detection => "detection",
            Segment::RemediationWait => "remediation-wait",
            Segment::PodDeletion => "pod-deletion",
            Segment::Detach => "detach",
            Segment::Attach => "attach",
            Segment::ContainerStart => "container-start",
            Segment::Readiness => "readiness",
        }
    }
}

/// One segment of a run: from `from_ms` to `until_ms` after the fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    pub segment: Segment,
    pub from_ms: u64,
    pub until_ms: u64,
}

impl Part {
    pub fn ms(&self) -> u64 {
        self.until_ms - self.from_ms
    }
}

/// The segments of a recovery, from a run's metrics by name (`time-to-…` → ms): each milestone
/// that was observed ends a segment that began at the previous one. A milestone earlier than
/// the one before it (a volume detached before its pod was deleted) ends no segment: its time
/// is part of the next. Empty unless the run recovered (`time-to-ready` observed), so the
/// parts always add up to `time-to-ready`.
pub fn breakdown(metrics: &BTreeMap<Metric, u64>) -> Vec<Part> {
    if !metrics.contains_key(&Metric::TimeToReady) {
        return vec![];
    }
    let mut parts = Vec::new();
    let mut at = 0;
    for (segment, metric) in Segment::ALL {
        let Some(&until) = metrics.get(&metric) else {
            continue;
        };
        if until < at {
            continue;
        }
        parts.push(Part {
            segment,
            from_ms: at,
            until_ms: until,
        });
        at = until;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(pairs: &[(Metric, u64)]) -> BTreeMap<Metric, u64> {
        pairs.iter().copied().collect()
    }

    /// The recorded replicated run's replica (tests/fixtures/runs/replicated, out-of-service
    /// taint): every milestone in order.
    #[test]
    fn a_taint_recovery_on_attaching_storage_has_every_segment() {
        let m = metrics(&[
            (Metric::TimeToNotReady, 15628),
            (Metric::TimeToRemediation, 15650),
            (Metric::TimeToDelete, 25482),
            (Metric::TimeToSchedule, 25566),
            (Metric::TimeToDetach, 25674),
            (Metric::TimeToAttach, 26285),
            (Metric::TimeToRunning, 27830),
            (Metric::TimeToReady, 27850),
        ]);
        let parts = breakdown(&m);
        let names: Vec<&str> = parts.iter().map(|p| p.segment.name()).collect();
        assert_eq!(
            names,
            [
                "detection",
                "remediation-wait",
                "pod-deletion",
                "detach",
                "attach",
                "container-start",
                "readiness"
            ]
        );
        assert_eq!(parts[2].ms(), 25482 - 15650);
        assert_eq!(parts.iter().map(Part::ms).sum::<u64>(), 27850);
    }

    /// Synthetic: no remediation and no attaching storage (a pod that comes back by itself),
    /// and a detach seen before the deletion folds into the next segment.
    #[test]
    fn missing_and_out_of_order_milestones_fold_into_the_next_segment() {
        let m = metrics(&[
            (Metric::TimeToNotReady, 15000),
            (Metric::TimeToDelete, 45000),
            (Metric::TimeToRunning, 47000),
            (Metric::TimeToReady, 47500),
        ]);
        let parts = breakdown(&m);
        assert_eq!(parts.len(), 4);
        assert_eq!(parts[1].segment, Segment::PodDeletion);
        assert_eq!((parts[1].from_ms, parts[1].until_ms), (15000, 45000));
        let m = metrics(&[
            (Metric::TimeToNotReady, 15000),
            (Metric::TimeToDelete, 20000),
            (Metric::TimeToDetach, 19000),
            (Metric::TimeToAttach, 21000),
            (Metric::TimeToReady, 24000),
        ]);
        let parts = breakdown(&m);
        assert!(parts.iter().all(|p| p.segment != Segment::Detach));
        assert_eq!(parts.iter().map(Part::ms).sum::<u64>(), 24000);
        assert!(
            breakdown(&metrics(&[(Metric::TimeToNotReady, 1)])).is_empty(),
            "not recovered"
        );
    }
}
