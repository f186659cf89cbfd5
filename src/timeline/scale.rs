//! Failure at scale on simulated nodes (pure): what was observed of each lost node and each
//! affected instance, as milliseconds after the fault, and the curve row computed from it.
//!
//! One meaning per milestone, each the first instant nodedown's watches saw the object in that
//! state (or, for the taint nodedown applies, the instant its patch returned):
//! - `not-ready`: the lost node's Ready condition is no longer True (the node lifecycle
//!   controller, after its grace period without a Lease renewal);
//! - `unreachable-taint`: the controller's `node.kubernetes.io/unreachable:NoExecute` taint;
//! - `out-of-service-taint`: nodedown's taint (remediation `out-of-service-taint`);
//! - `pod-deleted`: the instance's pod on the lost node is gone from the API (force-deleted by
//!   PodGC once the node is tainted out of service; never without a remediation);
//! - `volume-detached`: the VolumeAttachment of its volume to the lost node is gone;
//! - `replacement-running`: a new pod of the instance is Running on another node (simulated:
//!   kwok makes a scheduled pod Running at once; it does not wait for the volume);
//! - `volume-attached`: the volume's VolumeAttachment to the replacement's node says attached;
//! - `replacement-ready`: both of the last two (the later of them): what a real kubelet would
//!   need before the container starts.

use serde::{Deserialize, Serialize};

/// What was seen of one lost node (ms after the fault's time zero).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LostNode {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_ready_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable_taint_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_service_taint_ms: Option<u64>,
}

/// What was seen of one instance whose pod was on a lost node (ms after time zero).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AffectedInstance {
    pub name: String,
    pub node: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_deleted_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_detached_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement_running_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_attached_ms: Option<u64>,
}

impl AffectedInstance {
    /// The later of replacement-running and volume-attached; absent until both were seen.
    pub fn replacement_ready_ms(&self) -> Option<u64> {
        Some(self.replacement_running_ms?.max(self.volume_attached_ms?))
    }
}

/// The milestones of the curve, in the order a recovery reaches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Milestone {
    NotReady,
    UnreachableTaint,
    OutOfServiceTaint,
    PodDeleted,
    VolumeDetached,
    ReplacementRunning,
    VolumeAttached,
    ReplacementReady,
}

impl Milestone {
    pub const ALL: [Milestone; 8] = [
        Milestone::NotReady,
        Milestone::UnreachableTaint,
        Milestone::OutOfServiceTaint,
        Milestone::PodDeleted,
        Milestone::VolumeDetached,
        Milestone::ReplacementRunning,
        Milestone::VolumeAttached,
        Milestone::ReplacementReady,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Milestone::NotReady => "not-ready",
            Milestone::UnreachableTaint => "unreachable-taint",
            Milestone::OutOfServiceTaint => "out-of-service-taint",
            Milestone::PodDeleted => "pod-deleted",
            Milestone::VolumeDetached => "volume-detached",
            Milestone::ReplacementRunning => "replacement-running",
            Milestone::VolumeAttached => "volume-attached",
            Milestone::ReplacementReady => "replacement-ready",
        }
    }

    /// Whether the milestone is a node's (else an instance's).
    pub fn of_nodes(self) -> bool {
        matches!(
            self,
            Milestone::NotReady | Milestone::UnreachableTaint | Milestone::OutOfServiceTaint
        )
    }
}

/// One milestone over the objects it applies to: how many reached it, and when (nearest-rank
/// p50 and the last). Absent figures when none reached it: nothing observed is not zero.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MilestoneFigure {
    pub milestone: Milestone,
    pub reached: usize,
    pub of: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ms: Option<u64>,
}

impl MilestoneFigure {
    /// Time until every object reached it; absent unless all did.
    pub fn all_ms(&self) -> Option<u64> {
        (self.reached == self.of && self.of > 0)
            .then_some(self.max_ms)
            .flatten()
    }
}

/// nodedown's own reaction: from a node seen NotReady to its out-of-service taint applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reaction {
    pub count: usize,
    pub p50_ms: u64,
    pub p99_ms: u64,
    pub max_ms: u64,
}

/// Everything observed in one simulated run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScaleObservations {
    pub nodes: Vec<LostNode>,
    pub instances: Vec<AffectedInstance>,
}

impl ScaleObservations {
    fn values(&self, m: Milestone) -> (Vec<u64>, usize) {
        if m.of_nodes() {
            let v = self
                .nodes
                .iter()
                .filter_map(|n| match m {
                    Milestone::NotReady => n.not_ready_ms,
                    Milestone::UnreachableTaint => n.unreachable_taint_ms,
                    _ => n.out_of_service_taint_ms,
                })
                .collect();
            (v, self.nodes.len())
        } else {
            let v = self
                .instances
                .iter()
                .filter_map(|i| match m {
                    Milestone::PodDeleted => i.pod_deleted_ms,
                    Milestone::VolumeDetached => i.volume_detached_ms,
                    Milestone::ReplacementRunning => i.replacement_running_ms,
                    Milestone::VolumeAttached => i.volume_attached_ms,
                    _ => i.replacement_ready_ms(),
                })
                .collect();
            (v, self.instances.len())
        }
    }

    /// The figure of each milestone; `out-of-service-taint` only when `tainted` (the run's
    /// remediation applies it; without it the milestone does not exist, rather than unreached).
    pub fn figures(&self, tainted: bool) -> Vec<MilestoneFigure> {
        Milestone::ALL
            .iter()
            .filter(|m| tainted || **m != Milestone::OutOfServiceTaint)
            .map(|&m| {
                let (v, of) = self.values(m);
                MilestoneFigure {
                    milestone: m,
                    reached: v.len(),
                    of,
                    p50_ms: crate::units::percentile(&v, 50),
                    max_ms: v.iter().copied().max(),
                }
            })
            .collect()
    }

    /// nodedown's taint reaction over the nodes it tainted; `None` when it tainted none.
    pub fn taint_reaction(&self) -> Option<Reaction> {
        let v: Vec<u64> = self
            .nodes
            .iter()
            .filter_map(|n| Some(n.out_of_service_taint_ms?.saturating_sub(n.not_ready_ms?)))
            .collect();
        Some(Reaction {
            count: v.len(),
            p50_ms: crate::units::percentile(&v, 50)?,
            p99_ms: crate::units::percentile(&v, 99)?,
            max_ms: *v.iter().max()?,
        })
    }

    /// Whether every affected instance has a ready replacement.
    pub fn recovered(&self) -> bool {
        !self.instances.is_empty()
            && self
                .instances
                .iter()
                .all(|i| i.replacement_ready_ms().is_some())
    }
}

/// What a process used over a stretch of time: average cores and peak memory seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub name: String,
    /// CPU seconds over the stretch divided by its wall seconds.
    pub cores: f64,
    pub cpu_seconds: f64,
    pub max_rss_mib: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    // Synthetic observations (hand-written, not recorded): two nodes, three instances.
    fn obs() -> ScaleObservations {
        ScaleObservations {
            nodes: vec![
                LostNode {
                    name: "sim-0000".into(),
                    not_ready_ms: Some(16_000),
                    unreachable_taint_ms: Some(16_100),
                    out_of_service_taint_ms: Some(16_050),
                },
                LostNode {
                    name: "sim-0001".into(),
                    not_ready_ms: Some(18_000),
                    unreachable_taint_ms: Some(18_200),
                    out_of_service_taint_ms: Some(18_400),
                },
            ],
            instances: vec![
                AffectedInstance {
                    name: "i0000".into(),
                    node: "sim-0000".into(),
                    pod_deleted_ms: Some(30_000),
                    volume_detached_ms: Some(30_500),
                    replacement_running_ms: Some(30_200),
                    volume_attached_ms: Some(31_000),
                },
                AffectedInstance {
                    name: "i0001".into(),
                    node: "sim-0001".into(),
                    pod_deleted_ms: Some(35_000),
                    volume_detached_ms: Some(36_000),
                    replacement_running_ms: Some(35_100),
                    volume_attached_ms: None,
                },
                AffectedInstance {
                    name: "i0002".into(),
                    node: "sim-0000".into(),
                    pod_deleted_ms: Some(31_000),
                    volume_detached_ms: Some(31_000),
                    replacement_running_ms: Some(32_000),
                    volume_attached_ms: Some(31_500),
                },
            ],
        }
    }

    #[test]
    fn a_milestone_counts_who_reached_it_and_all_only_when_everyone_did() {
        let o = obs();
        let f = o.figures(true);
        let get = |m: Milestone| f.iter().find(|x| x.milestone == m).unwrap().clone();
        let nr = get(Milestone::NotReady);
        assert_eq!(
            (nr.reached, nr.of, nr.p50_ms, nr.max_ms),
            (2, 2, Some(16_000), Some(18_000))
        );
        assert_eq!(nr.all_ms(), Some(18_000));
        let ready = get(Milestone::ReplacementReady);
        assert_eq!(
            (ready.reached, ready.of),
            (2, 3),
            "i0001's volume never attached"
        );
        assert_eq!(
            ready.max_ms,
            Some(32_000),
            "the later of running and attached"
        );
        assert_eq!(ready.all_ms(), None, "not everyone is back");
        assert!(!o.recovered());
        assert!(
            !o.figures(false)
                .iter()
                .any(|x| x.milestone == Milestone::OutOfServiceTaint),
            "without the taint remediation the milestone is absent, not unreached"
        );
    }

    #[test]
    fn the_taint_reaction_is_from_not_ready_to_the_taint() {
        let r = obs().taint_reaction().unwrap();
        assert_eq!((r.count, r.p50_ms, r.max_ms), (2, 50, 400));
        let mut none = obs();
        none.nodes
            .iter_mut()
            .for_each(|n| n.out_of_service_taint_ms = None);
        assert_eq!(none.taint_reaction(), None);
    }
}
