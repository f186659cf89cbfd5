//! The one neutral result model. JSON, JUnit, Markdown and the terminal table are renderers
//! over it. `results.json` is this model serialized; its schema is versioned by
//! `SCHEMA_VERSION` and documented in docs/results-schema.md.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use crate::verdict::{ExpectationResult, Verdict};

pub const SCHEMA_VERSION: u32 = 4;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub schema_version: u32,
    /// `nodedown <version>`.
    pub tool: String,
    /// Where the whole invocation's wall time went; absent when it did not finish normally.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation: Option<InvocationResult>,
    /// How the invocation was started and on which cluster (from its session.json; absent when
    /// the directory has none, e.g. the trimmed recordings, or nodedown before it recorded this).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    pub experiments: Vec<ExperimentResult>,
    /// Variants `nodedown run --skip-unsupported` left out because no backend of the
    /// invocation could carry them out (nothing of them ran, so they have no verdict).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<NotRun>,
    /// The directory the report was built from, as the user named it (never written: the
    /// renderers' `next:` lines name it, e.g. `nodedown cleanup DIR`).
    #[serde(skip)]
    #[schemars(skip)]
    pub dir: Option<String>,
}

/// Where an invocation ran and how it was started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    /// The command line, as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// When it started (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    pub provider: crate::spec::Provider,
    /// The kind or k3d cluster's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// The kubeconfig context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

/// A variant left out before anything was touched, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotRun {
    pub experiment: String,
    pub variant: String,
    /// The experiment file.
    pub file: String,
    /// What no backend here can do, and what would provide it.
    pub reason: String,
}

/// The wall time of the `nodedown run` that wrote the results, and how much of it was the
/// failovers themselves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvocationResult {
    pub total_ms: u64,
    /// Loading, creating or reusing the cluster, loading the workload image.
    pub prepare_ms: u64,
    /// The runs: one after the other, or side by side in `lanes` lanes.
    pub runs_ms: u64,
    /// Waiting for the runs' namespaces to go, deleting a cluster made by the invocation.
    pub finish_ms: u64,
    /// How many lanes the runs went in (absent: 1, one after the other).
    #[serde(default = "one_lane", skip_serializing_if = "is_one_lane")]
    pub lanes: u32,
    /// The sum of the runs' `fault` stages: from the fault to recovery (or to the end of
    /// observation) — the failover being measured.
    pub failover_ms: u64,
    /// The share of the invocation's capacity (`totalMs` × `lanes`) that was not failover:
    /// the harness's own overhead (setup, steady state, healing, cluster and image
    /// preparation) and idle lanes, 0 to 1.
    pub harness_share: f64,
}

fn one_lane() -> u32 {
    1
}

fn is_one_lane(lanes: &u32) -> bool {
    *lanes == 1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExperimentResult {
    pub name: String,
    pub file: String,
    /// The experiment's `description`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub runs: Vec<RunResult>,
    /// Per variant, over its repetitions: verdict counts and the spread of every metric.
    #[serde(default)]
    pub variants: Vec<VariantSummary>,
}

/// A variant over its repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariantSummary {
    pub variant: String,
    pub runs: usize,
    pub passed: usize,
    pub failed: usize,
    pub unknown: usize,
    /// passed / runs.
    pub pass_rate: f64,
    /// Metric name → spread over the runs that measured it.
    pub metrics: BTreeMap<crate::timeline::Metric, crate::units::Spread>,
    /// Over the runs whose outage ended while watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_outage: Option<crate::units::Spread>,
    /// Runs whose write outage was still open when the watch ended (not in `writeOutage`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub write_outage_not_restored: usize,
    /// Integrity verdicts of the checker over the runs (ledger only): verdict → count.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub integrity: BTreeMap<String, usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// `<experiment>/<variant>/<repetition>`.
    pub id: String,
    pub variant: String,
    /// The variant's `description`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_description: Option<String>,
    pub repetition: u32,
    pub fault: crate::vocab::FaultKind,
    pub remediation: crate::vocab::RemediationKind,
    /// What the remediation did, as recorded when it was applied (for `external`: what the
    /// remediator did, and which field manager, where the API names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remediation_detail: Option<String>,
    /// Where the run happened: `kind`, `k3d` or `existing` (absent in results of nodedown
    /// before k3d).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<crate::spec::Provider>,
    /// The kind or k3d config file (profile) the cluster was made from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Wall clock of the run's first event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// Milliseconds from the first to the last event.
    pub duration_ms: u64,
    /// Where that wall time went, per stage of the harness in the order they ran (`setup`,
    /// `steady-state`, `fault`: inject to recovery, `collect`, `heal`), in ms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages_ms: Vec<StageTime>,
    /// The lane the run went in (1-based), in an invocation with `--parallel`; absent when it
    /// had the cluster to itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<u32>,
    /// The nodes of that lane: the workload was confined to them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lane_nodes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_node: Option<String>,
    /// Every node the fault took, in the order their faults took effect, when it took more than
    /// one (a zone's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fault_nodes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement_node: Option<String>,
    /// How time zero (the fault's effect) was taken, with the bounds around it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zero: Option<TimeZeroResult>,
    /// Phases that happened, in time order; `atMs` counted from time zero.
    pub phases: Vec<PhaseResult>,
    /// Metric name → milliseconds from time zero. A metric whose phase never happened, or was
    /// seen only at the end of a watch gap (see the phase's `sinceMs`), is absent.
    pub metrics: BTreeMap<crate::timeline::Metric, u64>,
    /// The ledger's write outage (its own origin: the last acknowledged write before the fault):
    /// of the members the fault took (a replica on an untouched node is not the outage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_outage: Option<WriteOutage>,
    pub expectations: Vec<ExpectationResult>,
    /// Pass when every expectation passed; Fail when any failed; else Unknown.
    pub verdict: Verdict,
    /// What happened, whatever was expected (`report::outcome::of` over this result; absent in
    /// results of nodedown before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<super::outcome::Outcome>,
    /// The harness could not complete the run (then the verdict is Unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Where the run happened: versions, storage, how the fault was applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Environment>,
    /// A hash of the run's resolved spec (cluster, workload, fault, remediation, timeouts,
    /// expectations): equal for repetitions, different when anything that shapes the run does.
    pub spec_hash: String,
    /// The integrity checker's findings (ledger workload only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<IntegrityResult>,
    /// kube-controller-manager counters that changed between the fault and the recovery:
    /// which path detached the volume (`…forced_detaches{reason="timeout"|"out-of-service"}`)
    /// and PodGC's force deletes. Absent when they could not be read both times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_counters: Option<Vec<CounterChangeResult>>,
    /// A fleet's instances (`workload.instances` > 1), in order, each with its own phases,
    /// metrics, expectations and integrity. Then the run's own phases and metrics are its
    /// slowest instance's (`fleet.slowestInstance`: one that did not recover, else the last
    /// Ready), its expectations are met when every instance meets them, its `integrity` adds up
    /// the instances' and its `writeOutage` is the longest. Absent for one instance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<InstanceResult>,
    /// What a fleet's instances say together (absent for one instance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<FleetResult>,
    /// A simulated run's (provider kwok) own figures: hundreds of pods on simulated nodes have
    /// no per-instance phases here; each failover phase is a milestone over the lost nodes or
    /// the instances. Absent for runs on real nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<super::simulated::ScaleResult>,
}

/// One instance of a fleet: its own StatefulSet, claim and ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceResult {
    /// The instance's StatefulSet (`ledger`, `ledger-i1`, …).
    pub name: String,
    /// Its pod before the fault and the node it ran on (from its `workload-ready` event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_node: Option<String>,
    /// No fault took its node (a replica that served on elsewhere): its expectation is to be
    /// left undisturbed (`undisturbed`), and its ledger's integrity, not a recovery.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unaffected: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement_node: Option<String>,
    pub phases: Vec<PhaseResult>,
    pub metrics: BTreeMap<crate::timeline::Metric, u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_outage: Option<WriteOutage>,
    pub expectations: Vec<ExpectationResult>,
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<IntegrityResult>,
}

/// A fleet's metrics over its instances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetResult {
    pub instances: usize,
    /// The members no fault took — a StatefulSet's replicas that served on nodes the fault left
    /// alone — by name. The other figures here are over the rest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unaffected: Vec<String>,
    /// How many recovered (a replacement Ready within the failover window).
    pub recovered: usize,
    /// From time zero until every instance was Ready again (`time-to-all-ready`): absent unless
    /// every instance recovered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_all_ready_ms: Option<u64>,
    /// The instance whose timeline is the run's: one that did not recover, else the last Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowest_instance: Option<String>,
    /// Each metric over the instances that have it.
    pub metrics: Vec<FleetMetricResult>,
    /// When old pods were deleted, volumes detached and attached, replacements Ready across the
    /// instances: the controllers' throughput.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<PhaseWindowResult>,
}

/// One phase across a fleet's instances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseWindowResult {
    pub phase: crate::timeline::Phase,
    /// How many instances had it (observed, not only seen after a watch gap).
    pub count: usize,
    pub first_ms: u64,
    pub last_ms: u64,
    /// Instances per second between the first and the last (`(count - 1) / (last - first)`);
    /// absent with fewer than two or all in one millisecond.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_second: Option<f64>,
}

/// One metric over a fleet's instances: its spread (the one distribution type; `count`: how
/// many instances have it) and the instance with the largest value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetMetricResult {
    pub metric: String,
    #[serde(flatten)]
    pub spread: crate::units::Spread,
    /// The instance with the largest value.
    pub max_instance: String,
}

/// The wall time of one stage of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StageTime {
    pub stage: crate::timeline::Stage,
    pub ms: u64,
}

/// One kube-controller-manager counter series that changed during a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CounterChangeResult {
    /// `name{labels}` as the controller-manager writes it.
    pub series: String,
    /// Absent: the series did not exist before (never incremented since the controller started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<u64>,
    pub after: u64,
    /// A cluster-wide series (no `namespace` label) that other runs of the invocation were in
    /// their own fault windows while it changed: the change is theirs and this run's together,
    /// not split between them. Empty: the run was alone in its window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared_with: Vec<String>,
    /// A cluster-wide series of a run whose invocation was confined to some nodes (`--nodes`):
    /// other invocations on the cluster's other nodes, which this one cannot see, may have
    /// counted in it too. Never split by guess.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub beyond_invocation: bool,
}

/// Where a run happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Environment {
    /// The API server's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<String>,
    /// The target node as its kubelet describes itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_node_info: Option<crate::timeline::NodeInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_count: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioner: Option<String>,
    /// The CSIDriver's `attachRequired` (absent: not a CSI driver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach_required: Option<bool>,
    /// The node-control backend that applied the fault: docker, power-hooks, agent or api.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<crate::vocab::Backend>,
}

/// What the integrity checker concluded about a run's ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IntegrityResult {
    pub verdict: Verdict,
    /// One line for humans.
    pub summary: String,
    pub records: u64,
    pub writers: u64,
    pub acknowledged: u64,
    pub lost_acknowledged: u64,
    pub corrupt: u64,
    pub split_brain: bool,
    /// Offsets, sequence numbers, incarnations and nodes behind the verdict.
    pub evidence: String,
    /// The ledger's writers (pod incarnations), in order of first appearance: who wrote which
    /// records. Empty in a fleet's sum (each instance lists its own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incarnations: Vec<WriterResult>,
    /// A storage-fenced run: whether the fence held (no record of the fenced node written
    /// while it was fenced), and what the node wrote after the fence was lifted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<crate::integrity::FenceEfficacy>,
}

/// One writer of a ledger: a pod incarnation and what it wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriterResult {
    pub pod: String,
    pub pod_uid: String,
    pub node: String,
    /// When the writer started, on its own clock (RFC 3339).
    pub started: String,
    pub records: u64,
    /// The sequence numbers of its first and last record in file order.
    pub first_seq: u64,
    pub last_seq: u64,
    /// The highest of its sequence numbers acknowledged to the client; absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked_up_to: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseResult {
    pub name: crate::timeline::Phase,
    /// When it was first observed, ms from time zero.
    pub at_ms: u64,
    /// Present when the phase was first seen at the end of a watch gap: it happened somewhere
    /// between `sinceMs` and `atMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_ms: Option<u64>,
}

/// Time zero of a run: the instant the fault took effect, and what it was taken from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimeZeroResult {
    /// `runtime-die-event`, `command-returned` or `request-returned`.
    pub basis: String,
    /// When the harness asked for the fault, ms relative to time zero (≤ 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_ms: Option<i64>,
    /// When the call that applied the fault returned, ms relative to time zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returned_ms: Option<i64>,
    /// Time zero on the wall clock (RFC 3339, ms): what every `atMs` counts from, for
    /// dashboards and logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall: Option<String>,
}

impl RunResult {
    /// Time zero on the wall clock (`timeZero.wall`), when it was recorded.
    pub fn time_zero_at(&self) -> Option<std::time::SystemTime> {
        let wall = self.time_zero.as_ref()?.wall.as_deref()?;
        humantime::parse_rfc3339(wall).ok()
    }
}

/// The write outage: from the last write acknowledged before the fault to the first new write
/// acknowledged after it while the failover was watched, on the harness's clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteOutage {
    /// Its length; a lower bound when not `restored`.
    pub duration_ms: u64,
    /// Where it began, ms relative to time zero (≤ 0: the last ack before the fault).
    pub from_ms: i64,
    /// Where it ended, ms relative to time zero: the first new ack after the fault, or when
    /// not `restored` the end of the watch.
    pub until_ms: i64,
    /// False when no write was acknowledged again before the watch ended (recovery timeout or
    /// fault healed): the outage was still open then and lasted at least `durationMs`.
    /// Absent: true.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub restored: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn yes() -> bool {
    true
}

fn is_yes(b: &bool) -> bool {
    *b
}

/// The wall time of one `nodedown run` invocation, by part (milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvocationTimes {
    /// From start to the first run: loading the experiments, creating or reusing the cluster,
    /// loading the workload image into the nodes.
    pub prepare_ms: u64,
    /// The runs: one after the other, or side by side in lanes.
    pub runs_ms: u64,
    /// After the last run: waiting for the runs' namespaces to go, deleting a cluster made here.
    pub finish_ms: u64,
    pub total_ms: u64,
    /// How many lanes the runs went in (1: one after the other).
    #[serde(default = "one_lane")]
    pub lanes: u32,
}
