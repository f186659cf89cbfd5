//! Failure at scale on simulated nodes (pure): what was observed of each lost node and each
//! affected instance, as milliseconds after the fault, and the curve row computed from it.
//!
//! The curve's milestones are failover phases ([`super::Phase`]) under the same names and with
//! the same meaning; each the first instant nodedown's watches saw the object in that state
//! (or, for the taint nodedown applies, the instant its patch returned):
//! - `node-not-ready`: the lost node's Ready condition is no longer True (the node lifecycle
//!   controller, after its grace period without a Lease renewal);
//! - `unreachable-taint`: the controller's `node.kubernetes.io/unreachable:NoExecute` taint;
//! - `out-of-service-taint`: nodedown's taint (remediation `out-of-service-taint`);
//! - `old-pod-deleted`: the instance's pod on the lost node is gone from the API (force-deleted
//!   by PodGC once the node is tainted out of service; never without a remediation);
//! - `volume-detached`: the VolumeAttachment of its volume to the lost node is gone;
//! - `volume-attached`: the volume's VolumeAttachment to the replacement's node says attached;
//! - `replacement-running`: a new pod of the instance runs on another node with its volume
//!   attached. A kubelet starts no container before the volume it mounts is attached; kwok,
//!   which stands in for the kubelet, makes a scheduled pod Running at once, so the simulated
//!   rule is the later of kwok's Running (`podRunningMs`) and `volume-attached`.
//!
//! There is no `replacement-ready`: a simulated pod has no container and no readiness probe.

use super::{ConditionStatus, Event, EventKind, Phase, PodPhase};
use crate::units::Spread;
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
    /// When kwok made a new pod of the instance Running (kwok does not wait for the volume).
    #[serde(
        default,
        alias = "replacementRunningMs",
        skip_serializing_if = "Option::is_none"
    )]
    pub pod_running_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_attached_ms: Option<u64>,
}

impl AffectedInstance {
    /// `replacement-running`: the later of kwok's Running and `volume-attached` (a kubelet
    /// starts no container before its volume is attached); absent until both were seen.
    pub fn replacement_running_ms(&self) -> Option<u64> {
        Some(self.pod_running_ms?.max(self.volume_attached_ms?))
    }
}

/// The milestones of the curve, in the order a recovery reaches them: the failover phases a
/// simulated run observes, named as [`Phase`] names them (`phase()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Milestone {
    NodeNotReady,
    UnreachableTaint,
    OutOfServiceTaint,
    OldPodDeleted,
    VolumeDetached,
    VolumeAttached,
    ReplacementRunning,
}

impl Milestone {
    pub const ALL: [Milestone; 7] = [
        Milestone::NodeNotReady,
        Milestone::UnreachableTaint,
        Milestone::OutOfServiceTaint,
        Milestone::OldPodDeleted,
        Milestone::VolumeDetached,
        Milestone::VolumeAttached,
        Milestone::ReplacementRunning,
    ];

    /// The failover phase this milestone is.
    pub fn phase(self) -> Phase {
        match self {
            Milestone::NodeNotReady => Phase::NodeNotReady,
            Milestone::UnreachableTaint => Phase::UnreachableTaint,
            Milestone::OutOfServiceTaint => Phase::OutOfServiceTaint,
            Milestone::OldPodDeleted => Phase::OldPodDeleted,
            Milestone::VolumeDetached => Phase::VolumeDetached,
            Milestone::VolumeAttached => Phase::VolumeAttached,
            Milestone::ReplacementRunning => Phase::ReplacementRunning,
        }
    }

    /// Its name: the phase's.
    pub fn as_str(self) -> &'static str {
        self.phase().name()
    }

    /// The milestone of a name, also as curves written before the milestones took the phases'
    /// names said it (`not-ready`, `pod-deleted`, and `replacement-ready`, which was Running with
    /// the volume attached: today's `replacement-running`). `None`: no milestone is named so.
    fn from_name(name: &str) -> Option<Milestone> {
        match name {
            "not-ready" => Some(Milestone::NodeNotReady),
            "pod-deleted" => Some(Milestone::OldPodDeleted),
            "replacement-ready" => Some(Milestone::ReplacementRunning),
            _ => Milestone::ALL.into_iter().find(|m| m.as_str() == name),
        }
    }

    /// Whether the milestone is a node's (else an instance's).
    pub fn of_nodes(self) -> bool {
        matches!(
            self,
            Milestone::NodeNotReady | Milestone::UnreachableTaint | Milestone::OutOfServiceTaint
        )
    }
}

/// Reads a run's milestone figures, also as curves written before the milestones took the
/// phases' names wrote them (see [`Milestone::from_name`]); an unknown name is an error.
pub fn milestones_compat<'de, D>(d: D) -> Result<Vec<MilestoneFigure>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Raw {
        milestone: String,
        reached: usize,
        of: usize,
        #[serde(default)]
        spread: Option<Spread>,
        // As curves before the one distribution type wrote a figure: its p50 and max alone.
        #[serde(default)]
        p50_ms: Option<u64>,
        #[serde(default)]
        max_ms: Option<u64>,
    }
    let raw = Vec::<Raw>::deserialize(d)?;
    // An old curve (it has `replacement-ready`): its `replacement-running` was kwok's bare
    // Running, which no milestone is now; dropped.
    let old = raw.iter().any(|r| r.milestone == "replacement-ready");
    let mut out = Vec::new();
    for r in raw {
        if old && r.milestone == "replacement-running" {
            continue;
        }
        let milestone = Milestone::from_name(&r.milestone).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown milestone `{}`", r.milestone))
        })?;
        let spread = match (r.spread, r.p50_ms, r.max_ms) {
            (Some(s), _, _) => Some(s),
            (None, Some(p50_ms), Some(max_ms)) => Some(Spread {
                count: r.reached,
                min_ms: None,
                p50_ms,
                p90_ms: None,
                p99_ms: None,
                max_ms,
            }),
            _ => None,
        };
        out.push(MilestoneFigure {
            milestone,
            reached: r.reached,
            of: r.of,
            spread,
        });
    }
    out.sort_by_key(|f| Milestone::ALL.iter().position(|m| *m == f.milestone));
    Ok(out)
}

/// One milestone over the objects it applies to: how many reached it, and when (the one
/// distribution type over those that did). No spread when none reached it: nothing observed is
/// not zero.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MilestoneFigure {
    pub milestone: Milestone,
    pub reached: usize,
    pub of: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<Spread>,
}

impl MilestoneFigure {
    /// Its p50 over the objects that reached it.
    pub fn p50_ms(&self) -> Option<u64> {
        self.spread.map(|s| s.p50_ms)
    }

    /// When the last object that reached it did.
    pub fn max_ms(&self) -> Option<u64> {
        self.spread.map(|s| s.max_ms)
    }

    /// Time until every object reached it; absent unless all did.
    pub fn all_ms(&self) -> Option<u64> {
        (self.reached == self.of && self.of > 0)
            .then(|| self.max_ms())
            .flatten()
    }
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
                    Milestone::NodeNotReady => n.not_ready_ms,
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
                    Milestone::OldPodDeleted => i.pod_deleted_ms,
                    Milestone::VolumeDetached => i.volume_detached_ms,
                    Milestone::VolumeAttached => i.volume_attached_ms,
                    _ => i.replacement_running_ms(),
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
                    spread: crate::units::spread(&v),
                }
            })
            .collect()
    }

    /// nodedown's taint reaction over the nodes it tainted; `None` when it tainted none.
    pub fn taint_reaction(&self) -> Option<Spread> {
        let v: Vec<u64> = self
            .nodes
            .iter()
            .filter_map(|n| Some(n.out_of_service_taint_ms?.saturating_sub(n.not_ready_ms?)))
            .collect();
        crate::units::spread(&v)
    }

    /// Whether every affected instance has a replacement running with its volume.
    pub fn recovered(&self) -> bool {
        !self.instances.is_empty()
            && self
                .instances
                .iter()
                .all(|i| i.replacement_running_ms().is_some())
    }
}

/// The claim template of a simulated instance's StatefulSet: its claim is `data-<pod>`.
pub const CLAIM_TEMPLATE: &str = "data";

/// The remediation name [`EventKind::RemediationApplied`] carries for nodedown's taint.
const OUT_OF_SERVICE_TAINT: &str = "out-of-service-taint";
const UNREACHABLE_TAINT: &str = "node.kubernetes.io/unreachable";

/// The instance a pod belongs to: a simulated instance is a one-replica StatefulSet, whose pod
/// is `<instance>-0` by the StatefulSet naming rule.
fn instance_of_pod(pod: &str) -> &str {
    pod.strip_suffix("-0").unwrap_or(pod)
}

#[derive(Debug, Clone, Default)]
struct NodeAt {
    not_ready: Option<u64>,
    unreachable: Option<u64>,
    tainted: Option<u64>,
}

#[derive(Debug, Clone, Default)]
struct InstanceAt {
    /// The instance's pod as last seen Running before the fault: its node and uid.
    node: String,
    uid: String,
    deleted: Option<u64>,
    detached: Option<u64>,
    running: Option<u64>,
    attached: Option<u64>,
}

/// The observations of a simulated run as a fold over its recorded events, in recorded order —
/// the one rule the runner applies live (event by event, to know when every instance is back
/// and which node to taint) and `nodedown report` applies to `events.jsonl` afterwards.
///
/// Before the first `fault-injected`, `pod` events say where each instance runs (its last
/// Running pod: node and uid) and `claim-bound` events which volume is whose. From then on:
/// - a lost node is one a `fault-injected` names; it is `not-ready` at its first `node-ready`
///   that is not True, `unreachable-taint` at the controller's `unreachable:NoExecute` taint
///   added, `out-of-service-taint` when nodedown's `remediation-applied` says its patch returned;
/// - an instance on a lost node is affected: `pod-deleted` when its pre-fault pod (by uid) is
///   gone; `volume-detached` when its volume's VolumeAttachment to its old node is gone;
///   `replacement-running` at a pod of the instance with another uid Running on another node;
///   `volume-attached` when its volume's VolumeAttachment to another node says attached.
///
/// Times are ms after time zero, the earliest `fault-injected` (events recorded before it are
/// stamped 0 rather than negative).
#[derive(Debug, Clone, Default)]
pub struct ScaleFold {
    t0_ms: Option<u64>,
    t0_wall: Option<String>,
    faulted: bool,
    nodes: std::collections::BTreeMap<String, NodeAt>,
    instances: std::collections::BTreeMap<String, InstanceAt>,
    /// PersistentVolume → instance.
    by_volume: std::collections::HashMap<String, String>,
    /// Events derived from the watches since the fault.
    watched: u64,
}

impl ScaleFold {
    pub fn new() -> ScaleFold {
        ScaleFold::default()
    }

    /// The fold of a whole recorded run.
    pub fn of(events: &[Event]) -> ScaleFold {
        let mut f = ScaleFold::new();
        for e in events {
            f.apply(e);
        }
        f
    }

    /// Folds one event in; returns the lost node this event shows NotReady for the first time
    /// (the runner's cue to taint it).
    pub fn apply(&mut self, e: &Event) -> Option<String> {
        let at = e.at_ms;
        if self.faulted && e.what.resource().is_some() {
            self.watched += 1;
        }
        match &e.what {
            EventKind::FaultInjected { node, .. } => {
                self.faulted = true;
                if self.t0_ms.is_none_or(|t| at < t) {
                    self.t0_ms = Some(at);
                    self.t0_wall = Some(e.wall.clone());
                }
                self.nodes.entry(node.clone()).or_default();
            }
            EventKind::ClaimBound { claim, pv } => {
                if let Some(pod) = claim
                    .strip_prefix(CLAIM_TEMPLATE)
                    .and_then(|c| c.strip_prefix('-'))
                {
                    self.by_volume
                        .insert(pv.clone(), instance_of_pod(pod).to_string());
                }
            }
            EventKind::Pod {
                pod,
                uid,
                node,
                phase,
                ..
            } => {
                let instance = instance_of_pod(pod);
                let running = *phase == PodPhase::Running;
                if !self.faulted {
                    if let (true, Some(node)) = (running, node) {
                        let i = self.instances.entry(instance.to_string()).or_default();
                        i.node = node.clone();
                        i.uid = uid.clone();
                    }
                } else if let Some(i) = self.instances.get_mut(instance) {
                    if running
                        && *uid != i.uid
                        && node.as_ref().is_some_and(|n| *n != i.node)
                        && i.running.is_none()
                    {
                        i.running = Some(at);
                    }
                }
            }
            EventKind::PodDeleted { pod, uid, .. } if self.faulted => {
                if let Some(i) = self.instances.get_mut(instance_of_pod(pod)) {
                    if *uid == i.uid && i.deleted.is_none() {
                        i.deleted = Some(at);
                    }
                }
            }
            EventKind::VolumeAttachment {
                node,
                pv: Some(pv),
                attached: true,
                ..
            } if self.faulted => {
                if let Some(i) = self
                    .by_volume
                    .get(pv)
                    .and_then(|i| self.instances.get_mut(i))
                {
                    if *node != i.node && i.attached.is_none() {
                        i.attached = Some(at);
                    }
                }
            }
            EventKind::VolumeAttachmentDeleted {
                node, pv: Some(pv), ..
            } if self.faulted => {
                if let Some(i) = self
                    .by_volume
                    .get(pv)
                    .and_then(|i| self.instances.get_mut(i))
                {
                    if *node == i.node && i.detached.is_none() {
                        i.detached = Some(at);
                    }
                }
            }
            EventKind::NodeReady { node, status, .. } if self.faulted => {
                if let Some(n) = self.nodes.get_mut(node) {
                    if *status != ConditionStatus::True && n.not_ready.is_none() {
                        n.not_ready = Some(at);
                        return Some(node.clone());
                    }
                }
            }
            EventKind::NodeTaint {
                node,
                key,
                effect,
                added: true,
                ..
            } if self.faulted && key == UNREACHABLE_TAINT && effect == "NoExecute" => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.unreachable.get_or_insert(at);
                }
            }
            EventKind::RemediationApplied {
                remediation, node, ..
            } if remediation == OUT_OF_SERVICE_TAINT => {
                if let Some(n) = self.nodes.get_mut(node) {
                    n.tainted.get_or_insert(at);
                }
            }
            _ => {}
        }
        None
    }

    /// Before the fault: how many instances have a Running pod, and how many volumes are known
    /// to be whose (the watches' first lists are in once both reach the instance count).
    pub fn known(&self) -> (usize, usize) {
        (self.instances.len(), self.by_volume.len())
    }

    /// Whether the fault was applied (a `fault-injected` was folded in).
    pub fn faulted(&self) -> bool {
        self.faulted
    }

    /// Time zero as recorded (RFC 3339), once the fault was applied.
    pub fn time_zero(&self) -> Option<&str> {
        self.t0_wall.as_deref()
    }

    /// Events derived from the watches since the fault.
    pub fn watched_events(&self) -> u64 {
        self.watched
    }

    /// The instances on a lost node (all of them until the fault names the lost nodes).
    fn affected(&self) -> impl Iterator<Item = (&String, &InstanceAt)> {
        self.instances
            .iter()
            .filter(|(_, i)| !self.faulted || self.nodes.contains_key(&i.node))
    }

    /// Whether every affected instance has a replacement Running with its volume attached.
    pub fn all_back(&self) -> bool {
        self.affected().next().is_some()
            && self
                .affected()
                .all(|(_, i)| i.running.is_some() && i.attached.is_some())
    }

    /// What was seen, in ms after time zero.
    pub fn observations(&self) -> ScaleObservations {
        let t0 = self.t0_ms.unwrap_or(0);
        let after = |t: Option<u64>| t.map(|t| t.saturating_sub(t0));
        ScaleObservations {
            nodes: self
                .nodes
                .iter()
                .map(|(name, n)| LostNode {
                    name: name.clone(),
                    not_ready_ms: after(n.not_ready),
                    unreachable_taint_ms: after(n.unreachable),
                    out_of_service_taint_ms: after(n.tainted),
                })
                .collect(),
            instances: self
                .affected()
                .map(|(name, i)| AffectedInstance {
                    name: name.clone(),
                    node: i.node.clone(),
                    pod_deleted_ms: after(i.deleted),
                    volume_detached_ms: after(i.detached),
                    pod_running_ms: after(i.running),
                    volume_attached_ms: after(i.attached),
                })
                .collect(),
        }
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
                    pod_running_ms: Some(30_200),
                    volume_attached_ms: Some(31_000),
                },
                AffectedInstance {
                    name: "i0001".into(),
                    node: "sim-0001".into(),
                    pod_deleted_ms: Some(35_000),
                    volume_detached_ms: Some(36_000),
                    pod_running_ms: Some(35_100),
                    volume_attached_ms: None,
                },
                AffectedInstance {
                    name: "i0002".into(),
                    node: "sim-0000".into(),
                    pod_deleted_ms: Some(31_000),
                    volume_detached_ms: Some(31_000),
                    pod_running_ms: Some(32_000),
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
        let nr = get(Milestone::NodeNotReady);
        assert_eq!(
            (nr.reached, nr.of, nr.p50_ms(), nr.max_ms()),
            (2, 2, Some(16_000), Some(18_000))
        );
        assert_eq!(nr.all_ms(), Some(18_000));
        let ready = get(Milestone::ReplacementRunning);
        assert_eq!(ready.milestone.as_str(), "replacement-running");
        assert_eq!(ready.milestone.phase(), Phase::ReplacementRunning);
        assert_eq!(
            (ready.reached, ready.of),
            (2, 3),
            "i0001's volume never attached"
        );
        assert_eq!(
            ready.max_ms(),
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

    /// Synthetic: a curve's milestones as written before they took the phases' names.
    #[test]
    fn milestones_written_under_the_old_names_read_as_the_phases() {
        #[derive(Deserialize)]
        struct R {
            #[serde(deserialize_with = "milestones_compat")]
            m: Vec<MilestoneFigure>,
        }
        let old = r#"{"m": [
            {"milestone": "not-ready", "reached": 2, "of": 2, "p50Ms": 1, "maxMs": 2},
            {"milestone": "pod-deleted", "reached": 1, "of": 4, "p50Ms": 3, "maxMs": 3},
            {"milestone": "replacement-running", "reached": 4, "of": 4, "p50Ms": 5, "maxMs": 6},
            {"milestone": "volume-attached", "reached": 3, "of": 4, "p50Ms": 7, "maxMs": 8},
            {"milestone": "replacement-ready", "reached": 3, "of": 4, "p50Ms": 7, "maxMs": 8}
        ]}"#;
        let r: R = serde_json::from_str(old).unwrap();
        let names: Vec<(&str, usize)> =
            r.m.iter()
                .map(|f| (f.milestone.as_str(), f.reached))
                .collect();
        assert_eq!(
            names,
            [
                ("node-not-ready", 2),
                ("old-pod-deleted", 1),
                ("volume-attached", 3),
                ("replacement-running", 3)
            ],
            "kwok's bare Running dropped; the old replacement-ready is replacement-running"
        );
        let new = r#"{"m": [{"milestone": "replacement-running", "reached": 4, "of": 4}]}"#;
        let r: R = serde_json::from_str(new).unwrap();
        assert_eq!(r.m[0].reached, 4);
        let bad = r#"{"m": [{"milestone": "replacement-ready-ish", "reached": 4, "of": 4}]}"#;
        let e = serde_json::from_str::<R>(bad).err().unwrap().to_string();
        assert!(
            e.contains("unknown milestone `replacement-ready-ish`"),
            "{e}"
        );
    }

    #[test]
    fn the_fold_knows_nodedowns_own_taint_by_the_remediations_name() {
        let spec = crate::spec::RemediationSpec::OutOfServiceTaint {
            after: std::time::Duration::ZERO,
            fence: crate::spec::Fence::None,
            lift_after: None,
        };
        assert_eq!(OUT_OF_SERVICE_TAINT, spec.name());
    }

    // Synthetic events (hand-written, not recorded): what each milestone is taken from, and
    // what does not count — another uid on the old node, the volume attached to the old node
    // again, events before the fault.
    #[test]
    fn each_milestone_is_the_first_event_that_shows_it_after_the_fault() {
        let ev = |at_ms: u64, what: EventKind| Event {
            at_ms,
            wall: format!("t{at_ms}"),
            what,
        };
        let pod = |at: u64, uid: &str, node: &str, phase: PodPhase| {
            ev(
                at,
                EventKind::Pod {
                    pod: "i0000-0".into(),
                    uid: uid.into(),
                    node: Some(node.into()),
                    phase,
                    terminating: false,
                    ready: false,
                    started_at: None,
                    reason: None,
                },
            )
        };
        let va = |at: u64, node: &str, attached: bool| {
            ev(
                at,
                EventKind::VolumeAttachment {
                    name: format!("va-{node}"),
                    node: node.into(),
                    pv: Some("pv-a".into()),
                    attached,
                },
            )
        };
        let ready = |at: u64, status: ConditionStatus| {
            ev(
                at,
                EventKind::NodeReady {
                    node: "sim-0".into(),
                    status,
                    reason: None,
                },
            )
        };
        let events = vec![
            pod(10, "old", "sim-0", PodPhase::Running),
            ev(
                11,
                EventKind::ClaimBound {
                    claim: "data-i0000-0".into(),
                    pv: "pv-a".into(),
                },
            ),
            ready(12, ConditionStatus::True),
            ev(
                1_000,
                EventKind::FaultInjected {
                    fault: crate::vocab::FaultKind::NodeShutdown,
                    node: "sim-0".into(),
                    basis: super::super::TimeZeroBasis::RequestReturned,
                    backend: None,
                    returned_ms: None,
                },
            ),
            ready(1_500, ConditionStatus::True),
            ready(17_000, ConditionStatus::Unknown),
            ready(17_100, ConditionStatus::Unknown),
            ev(
                17_050,
                EventKind::RemediationApplied {
                    remediation: OUT_OF_SERVICE_TAINT.into(),
                    node: "sim-0".into(),
                    detail: String::new(),
                },
            ),
            pod(20_000, "old2", "sim-0", PodPhase::Running),
            ev(
                21_000,
                EventKind::PodDeleted {
                    pod: "i0000-0".into(),
                    uid: "old".into(),
                    node: Some("sim-0".into()),
                },
            ),
            pod(21_100, "new", "sim-3", PodPhase::Pending),
            pod(21_200, "new", "sim-3", PodPhase::Running),
            va(21_300, "sim-0", true),
            ev(
                22_000,
                EventKind::VolumeAttachmentDeleted {
                    name: "va-sim-0".into(),
                    node: "sim-0".into(),
                    pv: Some("pv-a".into()),
                },
            ),
            va(23_000, "sim-3", false),
            va(24_000, "sim-3", true),
        ];
        let mut live = ScaleFold::new();
        let cues: Vec<String> = events.iter().filter_map(|e| live.apply(e)).collect();
        assert_eq!(cues, ["sim-0"], "one cue to taint, at the first NotReady");
        let f = ScaleFold::of(&events);
        assert_eq!(f.time_zero(), Some("t1000"));
        assert!(f.all_back());
        let o = f.observations();
        assert_eq!(
            o.nodes,
            [LostNode {
                name: "sim-0".into(),
                not_ready_ms: Some(16_000),
                unreachable_taint_ms: None,
                out_of_service_taint_ms: Some(16_050),
            }]
        );
        assert_eq!(
            o.instances,
            [AffectedInstance {
                name: "i0000".into(),
                node: "sim-0".into(),
                pod_deleted_ms: Some(20_000),
                volume_detached_ms: Some(21_000),
                pod_running_ms: Some(20_200),
                volume_attached_ms: Some(23_000),
            }]
        );
        assert_eq!(f.watched_events(), 11, "watched events from the fault on");
        let before: Vec<Event> = events[..3].to_vec();
        let f = ScaleFold::of(&before);
        assert_eq!(f.known(), (1, 1));
        assert!(!f.faulted() && f.time_zero().is_none() && !f.all_back());
    }

    #[test]
    fn the_taint_reaction_is_from_not_ready_to_the_taint() {
        let r = obs().taint_reaction().unwrap();
        assert_eq!((r.count, r.p50_ms, r.max_ms), (2, 50, 400));
        assert_eq!((r.min_ms, r.p99_ms), (Some(50), Some(400)));
        let mut none = obs();
        none.nodes
            .iter_mut()
            .for_each(|n| n.out_of_service_taint_ms = None);
        assert_eq!(none.taint_reaction(), None);
    }
}
