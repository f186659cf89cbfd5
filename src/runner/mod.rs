//! The runner: the only module that sees both the pure core and the effectful edge. One run
//! reads as the experiment itself — setup, steady state, inject, remediate, recover, collect
//! evidence — each step one call over the seams: node control ([`crate::faults::NodeControl`]),
//! the workload ([`crate::workload::Workload`]), the evidence it leaves, and the one
//! [`Tracker`] over the recorded events that every wait asks. Every undo is journaled before its
//! action; healing runs on every exit path.

mod env;
pub mod heal;
mod lifecycle;
mod progress;
pub mod schedule;
pub mod simulated;

pub use env::{
    attach_required, capabilities, capabilities_of, default_cluster_name, default_node_image,
    describe_target, driver_facts, facts, guard, resolve_context, targets_existing, ClusterOptions,
    DriverFacts, Env, Session,
};
pub use progress::Progress;

use crate::faults::{self, NodeControl, NodeFault};
use crate::journal::{Journal, Undo};
use crate::observe::{self, Recorder, Scope};
use crate::plan::lanes::Lane;
use crate::plan::{self, PlanOptions, PlannedRun};
use crate::remediation::{self, OUT_OF_SERVICE_KEY};
use crate::spec::{Experiment, FaultKind, RemediationSpec, WorkloadKind};
use crate::store;
use crate::timeline::{Event, EventKind, Fleet, Phase};
use crate::units::fmt_duration;
use crate::workload::{StorageAccess, Workload};
pub use heal::wait_namespaces_gone;
use heal::Healer;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::ListParams;
use kube::{Api, Client};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The run's directory could not be made or written.
    #[error(transparent)]
    Open(StepError),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error("{0}; the cluster was healed from the journal")]
    Interrupted(Stop),
}

/// Why one of a run's steps could not go on. Recorded as the run's error (`run-finished`): the
/// run is then healed and its outcome is an error (exit 3), whichever variant it is; the
/// variants say whose the problem is.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    /// The cluster or the workload is not as the run needs it (the cluster not whole, no
    /// worker to take, the steady state not reached, instances placed elsewhere): the message
    /// says what and the way out.
    #[error("{0}")]
    Precondition(String),
    /// A request to the API server failed (`what`: the request).
    #[error("{what}: {source}")]
    Api { what: String, source: kube::Error },
    /// An undo could not be journaled: nothing is applied without its undo on disk first.
    #[error("journal: {0}")]
    Journal(std::io::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Workload(#[from] crate::workload::WorkloadError),
    /// The node-control backend could not check or fault a node.
    #[error(transparent)]
    Node(#[from] faults::NodeError),
    /// No backend of this invocation can carry the fault out.
    #[error(transparent)]
    NoBackend(#[from] faults::NoBackend),
    /// The fault could not be applied to every node (each node's reason).
    #[error("inject {fault}: {failures}")]
    Inject {
        fault: &'static str,
        failures: String,
    },
    #[error(transparent)]
    Remediation(#[from] crate::remediation::ApplyError),
    /// The simulated cluster's nodes could not be made.
    #[error("simulated nodes: {0}")]
    Cluster(#[from] crate::cluster::ClusterError),
    /// The run's own task panicked or was cancelled: a bug of nodedown's.
    #[error("{0}")]
    Harness(String),
}

impl From<crate::remediation::RemediationError> for StepError {
    fn from(e: crate::remediation::RemediationError) -> StepError {
        StepError::Remediation(e.into())
    }
}

pub(crate) fn api_err(what: impl Into<String>) -> impl FnOnce(kube::Error) -> StepError {
    let what = what.into();
    move |source| StepError::Api { what, source }
}

/// How long a self-healing fault outlives the recovery window.
const LEASE_MARGIN: Duration = Duration::from_secs(60);

/// What every run of an invocation shares besides the cluster.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// The workload image and whether it was preloaded into the nodes.
    pub image: (String, bool),
    /// How the workload's storage and evidence are reached from this machine.
    pub storage: StorageAccess,
    /// Run on a degraded cluster (skip the preflight refusal).
    pub force: bool,
    /// Allow faulting a control-plane node.
    pub allow_control_plane: bool,
    /// How long a self-healing fault may last (default: the recovery timeout plus a minute).
    pub fault_lease: Option<Duration>,
    /// How often the ledgers' acks are polled, or not at all.
    pub ack_interval: crate::observe::AckInterval,
    /// The node nodedown itself runs on (in the cluster): never faulted, no workload there.
    pub runner_node: Option<String>,
    /// The nodes the invocation is confined to (`--nodes`); none: the whole cluster. A run
    /// in a lane is confined to the lane's, which are among them.
    pub nodes: Option<Vec<String>>,
    /// The invocation's id: the label of the namespaces its runs make, so that its last wait
    /// sees only its own (another invocation may be running on other nodes).
    pub invocation: String,
}

/// A healer for the cluster of `env`.
pub fn healer(env: &Env, node_timeout: Duration) -> Healer {
    Healer {
        client: env.client.clone(),
        controls: env.node_controls(None),
        node_timeout,
    }
}

/// Plans every experiment's runs.
pub fn plan_all(experiments: &[(PathBuf, Experiment)], opts: &PlanOptions) -> Vec<PlannedRun> {
    experiments
        .iter()
        .flat_map(|(file, exp)| plan::expand(exp, file, opts))
        .collect()
}

/// Why the backends of an invocation cannot carry a run out — its fault, or the fence of a
/// fenced out-of-service taint — or `None` when they can. Checked for every run before anything
/// is touched (and by `--dry-run`), with the same rule the run itself chooses its backend by.
pub fn cannot_run(
    run: &PlannedRun,
    caps: &[faults::Capability],
    only: Option<faults::Backend>,
) -> Option<faults::NoBackend> {
    let fault = match faults::choose(caps, only, run.fault.kind, run.fault.graceful) {
        Ok(i) => i,
        Err(e) => return Some(e),
    };
    if run.remediation.fence() == crate::spec::Fence::Power {
        if let Err(e) = faults::choose_fence(caps, fault) {
            return Some(e);
        }
    }
    None
}

/// The permissions `runs` will use when carried out by these backends (`caps`, `only` as
/// `--node-control`): each run's fault through the backend [`faults::choose`] picks for it, the
/// ledger's acks polled or not. What the invocation checks at its start and `--dry-run` lists.
pub fn permissions_needed(
    runs: &[PlannedRun],
    caps: &[faults::Capability],
    only: Option<faults::Backend>,
    acks: bool,
) -> Vec<crate::plan::access::Need> {
    use crate::plan::access::{needed, Setting};
    let settings: Vec<(&PlannedRun, Setting)> = runs
        .iter()
        .map(|run| {
            let backend = faults::choose(caps, only, run.fault.kind, run.fault.graceful)
                .map(|i| caps[i].backend)
                .unwrap_or_default();
            (run, Setting { backend, acks })
        })
        .collect();
    needed(&settings)
}

/// The permissions `runs` need on the cluster of `env` ([`permissions_needed`] with its
/// backends) that its client does not have; empty when it has them all. Asked before anything
/// is touched.
pub async fn missing_permissions(
    env: &Env,
    runs: &[PlannedRun],
    acks: bool,
) -> Result<Vec<crate::plan::access::Need>, kube::Error> {
    let caps: Vec<_> = env
        .node_controls(None)
        .iter()
        .map(|c| c.capability())
        .collect();
    let needs = permissions_needed(runs, &caps, env.fault_backend(), acks);
    crate::cluster::access::missing(&env.client, &needs).await
}

/// Why an invocation stops before its runs are done.
#[derive(Debug, Clone, PartialEq)]
pub enum Stop {
    /// SIGINT or SIGTERM.
    Signal(&'static str),
    /// The cluster lock was lost (deleted, taken over, not renewable): another invocation may
    /// be faulting these nodes.
    LockLost(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Stop::Signal(s) => write!(f, "interrupted by {s}"),
            Stop::LockLost(why) => {
                write!(f, "stopped: this invocation lost the cluster lock ({why})")
            }
        }
    }
}

/// The invocation's one owner of SIGINT and SIGTERM: one task takes every signal, and every
/// run and the invocation's own last waits ask it. The first signal stops the runs (each heals
/// from its journal); a later one cannot stop a heal (SIGKILL, then `nodedown cleanup`, is the
/// way out) but ends the last wait for namespaces. The loss of the cluster lock stops the runs
/// the same way ([`Interrupt::stop`]).
#[derive(Clone)]
pub struct Interrupt {
    rx: tokio::sync::watch::Receiver<(u32, Option<Stop>)>,
    tx: Arc<tokio::sync::watch::Sender<(u32, Option<Stop>)>>,
}

impl Interrupt {
    /// Takes over SIGINT and SIGTERM for the rest of the process.
    pub fn install() -> Interrupt {
        let (tx, rx) = tokio::sync::watch::channel((0, None));
        let tx = Arc::new(tx);
        let signals = tx.clone();
        tokio::spawn(async move {
            loop {
                let signal = shutdown_signal().await;
                if signals.borrow().0 > 0 {
                    eprintln!(
                        "{signal} again: the runs' heal goes on (SIGKILL stops nodedown; then run `nodedown cleanup <out dir>`)"
                    );
                }
                signals.send_modify(|(count, first)| {
                    *count += 1;
                    first.get_or_insert(Stop::Signal(signal));
                });
            }
        });
        Interrupt { rx, tx }
    }

    /// One that no signal reaches, stopped only by [`Interrupt::stop`] (the scheduler's tests).
    #[cfg(test)]
    pub fn without_signals() -> Interrupt {
        let (tx, rx) = tokio::sync::watch::channel((0, None));
        Interrupt {
            rx,
            tx: Arc::new(tx),
        }
    }

    /// Stops the runs for another reason than a signal (counts as one).
    pub fn stop(&self, why: Stop) {
        self.tx.send_modify(|(count, first)| {
            *count += 1;
            first.get_or_insert(why);
        });
    }

    /// The first stop (a signal or the lost lock), if one came.
    pub fn first(&self) -> Option<Stop> {
        self.rx.borrow().1.clone()
    }

    /// How many stops came so far.
    pub fn count(&self) -> u32 {
        self.rx.borrow().0
    }

    /// Waits until a stop has come (returns at once when one did).
    pub async fn wait(&self) -> Stop {
        self.wait_beyond(0).await
    }

    /// Waits until more than `seen` stops have come; returns the first one.
    pub async fn wait_beyond(&self, seen: u32) -> Stop {
        let mut rx = self.rx.clone();
        loop {
            let (count, first) = rx.borrow_and_update().clone();
            if let (true, Some(stop)) = (count > seen, first) {
                return stop;
            }
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

/// Runs one planned run in `dir`, healing on every exit path (error, panic, signal). In a
/// lane, the workload is confined to the lane's nodes and only they are checked and watched.
/// Returns the run's events.
pub async fn run_one(
    env: &Env,
    settings: &RunSettings,
    run: &PlannedRun,
    dir: &Path,
    progress: &Progress,
    lane: Option<&Lane>,
    interrupt: &Interrupt,
) -> Result<Vec<Event>, RunnerError> {
    let files = lifecycle::open(dir, run).map_err(RunnerError::Open)?;
    let (recorder, journal) = (files.recorder.clone(), files.journal.clone());

    let steps = Steps {
        client: env.client.clone(),
        controls: env.node_controls(Some(&settings.image)),
        fault_backend: env.fault_backend(),
        recorder: recorder.clone(),
        journal: journal.clone(),
        run: run.clone(),
        settings: settings.clone(),
        dir: dir.to_path_buf(),
        progress: progress.clone(),
        background: Default::default(),
        lane: lane.cloned(),
    };
    let background = steps.background.clone();
    let mut handle = tokio::spawn(async move { steps.execute().await });
    let outcome: Result<Result<(), StepError>, Stop> = tokio::select! {
        joined = &mut handle => Ok(match joined {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(StepError::Harness(format!("harness panic: {e}"))),
            Err(e) => Err(StepError::Harness(format!("run task ended: {e}"))),
        }),
        signal = interrupt.wait() => {
            // The run's task is stopped and *gone* before the heal begins: abort alone only
            // asks, and a remediation mid-request (a taint `after` its delay) could otherwise
            // land after the heal removed it. Its own tasks (a thaw) are a JoinSet it owns,
            // aborted as it is dropped.
            handle.abort();
            let _ = (&mut handle).await;
            Err(signal)
        }
    };
    // Heal whatever is pending, whatever happened; the watchers keep recording meanwhile.
    let heal_errors = lifecycle::heal(env, run, &files, progress).await;
    for task in background
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain(..)
    {
        task.abort();
    }
    let error = match &outcome {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(stop) => Some(stop.to_string()),
    };
    lifecycle::finish(&files, error, &heal_errors);
    if let Err(signal) = outcome {
        return Err(RunnerError::Interrupted(signal));
    }
    Ok(store::load_run(dir)?.1)
}

async fn shutdown_signal() -> &'static str {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}

/// How long the workload writes in steady state before the fault, at least.
const PRE_FAULT_WRITES: Duration = Duration::from_secs(1);
/// How much longer the steady state waits for the ledger's first acknowledged write.
const PRE_FAULT_ACK_TIMEOUT: Duration = Duration::from_secs(5);

/// Tasks of a run that outlive its steps until healing is done (the watchers).
type Background = Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>;

/// One run's steps and what they share.
struct Steps {
    client: Client,
    controls: Vec<Arc<dyn NodeControl>>,
    /// Apply faults only through this backend (`--node-control`).
    fault_backend: Option<crate::faults::Backend>,
    recorder: Arc<Recorder>,
    journal: Arc<Journal>,
    run: PlannedRun,
    settings: RunSettings,
    dir: PathBuf,
    progress: Progress,
    background: Background,
    /// The lane the run goes in (none: the invocation's nodes).
    lane: Option<Lane>,
}

/// The steady state a fault interrupts: the pod serving the workload (instance 0's) and its
/// node, every instance's pod with its node, and the nodes the fault takes (that node, or a
/// zone's workers).
struct Steady {
    namespace: String,
    pod: String,
    node: String,
    pods: Vec<(String, String)>,
    nodes: Vec<String>,
}

/// The fault in effect.
struct Injected {
    control: Arc<dyn NodeControl>,
    /// The target pod's node, and every node the fault took (a zone's).
    node: String,
    nodes: Vec<String>,
    recovery_deadline: Instant,
    /// A fault that ends by itself mid-run (a freeze with a duration): the tasks that end it,
    /// aborted when the run ends early (dropped with it).
    ends: tokio::task::JoinSet<()>,
}

/// The runner's reading of the events: the same [`Fleet`] of trackers (one per instance) the
/// reports use, fed in order.
struct Watch {
    recorder: Arc<Recorder>,
    fleet: Fleet,
    next: usize,
}

impl Watch {
    /// Feeds the trackers until `done` holds (true) or `deadline` passes (false).
    async fn until(&mut self, deadline: Instant, done: impl Fn(&Fleet) -> bool) -> bool {
        loop {
            let changed = self.recorder.changed();
            for e in self.recorder.since(self.next) {
                self.next += 1;
                self.fleet.observe(&e);
                if done(&self.fleet) {
                    return true;
                }
            }
            if done(&self.fleet) {
                return true;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return false;
            }
        }
    }
}

impl Steps {
    /// The run, as the experiment reads.
    async fn execute(&self) -> Result<(), StepError> {
        self.stage(crate::timeline::Stage::Setup);
        self.preflight().await?;
        let (workload, mut watch, acks) = self.setup().await?;
        let acks = (!acks.is_empty()).then_some(acks);
        self.stage(crate::timeline::Stage::SteadyState);
        let steady = self
            .steady_state(&mut watch, &workload, acks.as_deref())
            .await?;
        if self.run.workload.fill_attach_limit {
            self.fill_attach_limits(&workload, &steady).await?;
        }
        self.stage(crate::timeline::FAILOVER_STAGE);
        let mut fault = self.inject(&steady).await?;
        self.remediate(&mut watch, &workload, &steady, &mut fault)
            .await?;
        self.recover(&mut watch, &workload, &fault).await;
        self.controller_counters("after-recovery").await;
        if !fault.ends.is_empty() {
            // The fault ends mid-run (a thaw): observe what the old pod does afterwards.
            self.progress.step("waiting for the fault to end by itself");
            while fault.ends.join_next().await.is_some() {}
            watch
                .until(Instant::now() + Duration::from_secs(5), |_| false)
                .await;
        }
        if let Some(acks) = acks {
            self.stage(crate::timeline::Stage::Collect);
            self.collect_ledgers(&workload, &watch, &steady, acks).await;
        }
        Ok(())
    }

    fn stage(&self, stage: crate::timeline::Stage) {
        self.recorder.record(EventKind::Stage { stage });
    }

    /// Records kube-controller-manager's counters (which path freed the volume and the pod);
    /// a note when they cannot be read (this is evidence, not a requirement).
    async fn controller_counters(&self, stage: &str) {
        const WITHIN: Duration = Duration::from_secs(5);
        let read = tokio::time::timeout(WITHIN, observe::read_controller_counters(&self.client))
            .await
            .unwrap_or(Err(observe::CountersError::Timeout(WITHIN)));
        match read {
            Ok((source, counters)) => {
                self.recorder.record(EventKind::ControllerCounters {
                    stage: stage.into(),
                    source,
                    counters,
                });
            }
            Err(e) => self.note(format!("controller counters ({stage}) not read: {e}")),
        }
    }

    /// The nodes this run is confined to: its lane's, else the invocation's (`--nodes`);
    /// none: the whole cluster.
    fn confined(&self) -> Option<&[String]> {
        self.lane
            .as_ref()
            .map(|l| l.nodes.as_slice())
            .or(self.settings.nodes.as_deref())
    }

    fn note(&self, message: String) {
        self.recorder.record(EventKind::Note { message });
    }

    /// Checks the cluster is whole before a run: every node Ready, no out-of-service taint, at
    /// least two schedulable workers (somewhere for the pod to fail over to; for several
    /// replicas, a node each and one more). Waits up to the
    /// heal timeout (the previous run's node may still be coming back), then refuses — unless
    /// `--force`, which records what it overrode.
    async fn preflight(&self) -> Result<(), StepError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let deadline = Instant::now() + self.run.timeouts.heal;
        loop {
            let list = nodes
                .list(&ListParams::default())
                .await
                .map_err(api_err("list nodes"))?;
            // In a lane: its own nodes and the control plane every lane shares; another lane's
            // node down is that lane's failover, not a degraded cluster.
            // Confined to some nodes (`--nodes`): those and the control plane, likewise.
            let mine: Vec<Node> = match self.confined() {
                None => list.items,
                Some(nodes) => list
                    .items
                    .into_iter()
                    .filter(|n| {
                        remediation::is_control_plane(n)
                            || n.metadata
                                .name
                                .as_ref()
                                .is_some_and(|name| nodes.contains(name))
                    })
                    .collect(),
            };
            let problems = heal::degraded(&mine, self.run.workload.replicas as usize + 1);
            if problems.is_empty() {
                return Ok(());
            }
            if self.settings.force {
                self.note(format!(
                    "preflight overridden by --force: {}",
                    problems.join("; ")
                ));
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(StepError::Precondition(format!(
                    "cluster not whole before the run: {}; run `nodedown cleanup <earlier run dir>` or give --force",
                    problems.join("; ")
                )));
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// `fillAttachLimit`: every node the replacement may go to — the lane's workers, else the
    /// cluster's schedulable workers, but the fault's nodes and nodedown's own — filled to the
    /// driver's attach limit before the fault; what each node holds is noted.
    async fn fill_attach_limits(
        &self,
        workload: &Workload,
        steady: &Steady,
    ) -> Result<(), StepError> {
        let mut nodes = match self.confined() {
            Some(nodes) => nodes.to_vec(),
            None => {
                let list = Api::<Node>::all(self.client.clone())
                    .list(&ListParams::default())
                    .await
                    .map_err(api_err("list nodes"))?;
                heal::schedulable_workers(&list.items)
            }
        };
        nodes
            .retain(|n| !steady.nodes.contains(n) && Some(n) != self.settings.runner_node.as_ref());
        nodes.sort();
        self.progress.step(&format!(
            "filling {} to the attach limit of {}'s driver",
            nodes.join(", "),
            workload.spec.storage_class
        ));
        let (driver, filled) = crate::workload::fill::fill(
            &self.client,
            &workload.namespace,
            &workload.spec,
            &nodes,
            &workload.image,
            workload.preloaded,
            &workload.run_id,
            self.run.timeouts.steady_state,
        )
        .await?;
        for f in &filled {
            self.note(f.describe(&driver));
        }
        Ok(())
    }

    /// Where the instances go before the fault: with a target zone, its schedulable workers
    /// (by name; the fault takes them all); for a fleet, one node — the first of its lane, else
    /// the first schedulable worker by name; else nowhere in particular.
    async fn homes(&self) -> Result<Vec<String>, StepError> {
        let target = &self.run.fault.target;
        let zone = target.zone.as_deref();
        if !target.several() && self.run.workload.instances <= 1 {
            return Ok(vec![]);
        }
        if let (false, Some(first)) = (
            target.several(),
            self.confined().and_then(|nodes| nodes.first()),
        ) {
            return Ok(vec![first.clone()]);
        }
        let list = Api::<Node>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map_err(api_err("list nodes"))?;
        let in_zone: Vec<Node> = list
            .items
            .into_iter()
            .filter(|n| {
                zone.is_none_or(|z| {
                    n.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(crate::spec::ZONE_LABEL))
                        .is_some_and(|v| v == z)
                })
            })
            .collect();
        let mut workers = heal::schedulable_workers(&in_zone);
        workers.retain(|w| {
            Some(w) != self.settings.runner_node.as_ref()
                && self.confined().is_none_or(|nodes| nodes.contains(w))
        });
        workers.sort();
        match zone {
            Some(z) if workers.is_empty() => Err(StepError::Precondition(format!(
                "no schedulable worker in zone {z} (label {}={z}): label the nodes, or name a zone that has some",
                crate::spec::ZONE_LABEL
            ))),
            Some(_) => Ok(workers),
            None => several_nodes(target, workers),
        }
    }

    /// Setup: the workload deployed, its watchers recording, each ledger's acks polled (one
    /// poller per instance, in the order of the instances).
    async fn setup(&self) -> Result<(Workload, Watch, Vec<observe::AckPoller>), StepError> {
        let workload = Workload {
            spec: self.run.workload.clone(),
            namespace: namespace_name(&self.run),
            run_id: self.run.id.clone(),
            image: self.settings.image.0.clone(),
            preloaded: self.settings.image.1,
            storage: self.settings.storage.clone(),
            nodes: self.confined().map(<[String]>::to_vec).unwrap_or_default(),
            homes: self.homes().await?,
            avoid: self.settings.runner_node.clone(),
            invocation: Some(self.settings.invocation.clone()),
        };
        self.progress
            .step(&format!("setup: namespace {}", workload.namespace));
        self.recorder.record(EventKind::RunScope {
            namespace: workload.namespace.clone(),
            lane: self.lane.as_ref().map(|l| l.index),
            nodes: workload.nodes.clone(),
            confined: self.settings.nodes.is_some(),
        });
        let watch = Watch {
            recorder: self.recorder.clone(),
            fleet: Fleet::new(crate::spec::members(&workload.spec)),
            next: 0,
        };
        // An external remediator may fence at the storage (Rook makes a NetworkFence): its
        // fences are recognised by the nodes' addresses they name.
        let fence_clients = if self.run.remediation == RemediationSpec::External {
            match crate::remediation::fence::node_clients(&self.client).await {
                Ok(c) => Some(c),
                Err(e) => {
                    self.note(format!(
                        "NetworkFences are not watched: the nodes' addresses could not be read: {e}"
                    ));
                    None
                }
            }
        } else {
            None
        };
        let watchers = observe::spawn_watchers(
            self.client.clone(),
            &Scope {
                namespace: workload.namespace.clone(),
                pod_selector: workload.selector(),
                nodes: workload.nodes.clone(),
                kube_events: true,
                fence_events: self.run.remediation.fence() == crate::spec::Fence::Storage
                    || fence_clients.is_some(),
                fence_clients,
            },
            self.recorder.clone(),
        );
        self.background
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(watchers);
        let mut acks = Vec::new();
        let interval = match self.settings.ack_interval {
            crate::observe::AckInterval::Every(d) => Some(d),
            crate::observe::AckInterval::Off => None,
        };
        if self.run.workload.kind == WorkloadKind::Ledger && interval.is_none() {
            self.note(
                "--ack-interval off: no acknowledged write is polled and no ledger collected; the integrity verdicts are unknown"
                    .to_string(),
            );
        }
        if let (WorkloadKind::Ledger, Some(interval)) = (self.run.workload.kind, interval) {
            let names = crate::spec::members(&workload.spec);
            for name in &names {
                let dir = store::instance_dir(&self.dir, names.len(), name);
                std::fs::create_dir_all(&dir).map_err(|source| StepError::Io {
                    path: dir.clone(),
                    source,
                })?;
                let target = self.instance_pod(name);
                acks.push(
                    observe::spawn_ack_poller(
                        self.client.clone(),
                        &workload.namespace,
                        &workload.status_proxy(&target),
                        crate::workload::LEDGER_PORT,
                        &dir.join(store::ACKS_FILE),
                        self.recorder.clone(),
                        interval,
                    )
                    .map_err(|source| StepError::Io {
                        path: dir.join(store::ACKS_FILE),
                        source,
                    })?,
                );
            }
        }
        match crate::runner::facts(&self.client, &self.run.workload.storage_class).await {
            Ok(facts) => {
                self.recorder.record(EventKind::ClusterFacts(facts));
            }
            Err(e) => self.note(format!("cluster facts not read: {e}")),
        }
        workload.deploy(&self.client, &self.journal).await?;
        Ok((workload, watch, acks))
    }

    /// Steady state: the target pod serves the workload (Running, Ready, not terminating).
    async fn steady_state(
        &self,
        watch: &mut Watch,
        workload: &Workload,
        acks: Option<&[observe::AckPoller]>,
    ) -> Result<Steady, StepError> {
        let namespace = workload.namespace.as_str();
        let names = crate::spec::members(&workload.spec);
        let replicated = self.run.workload.replicas > 1;
        // A StatefulSet's target pod by name (each instance's); a Deployment's one pod,
        // whatever its name.
        let targets: Vec<String> = names.iter().map(|n| self.instance_pod(n)).collect();
        let by_name: Vec<Option<&str>> = targets
            .iter()
            .map(|t| workload.target_pod(t.as_str()))
            .collect();
        let on = if workload.homes.is_empty() {
            String::new()
        } else {
            format!(" on {}", workload.homes.join(", "))
        };
        let who = match by_name.as_slice() {
            [Some(name)] => format!("{name}{on}"),
            [None] => format!(
                "the pod of Deployment {}{on}",
                crate::workload::app_name(self.run.workload.kind)
            ),
            _ if replicated => format!("{} replicas, each on a node of its own", names.len()),
            _ => format!("{} pods (one per instance){on}", names.len()),
        };
        self.progress.step(&format!(
            "steady state: waiting for {who} Running and Ready"
        ));
        let deadline = Instant::now() + self.run.timeouts.steady_state;
        let all_serving = |f: &Fleet| {
            f.trackers()
                .iter()
                .zip(&by_name)
                .all(|(t, name)| t.serving_pod(*name).is_some())
        };
        if !watch.until(deadline, all_serving).await {
            let missing: Vec<&str> = watch
                .fleet
                .trackers()
                .iter()
                .zip(&targets)
                .zip(&by_name)
                .filter(|((t, _), name)| t.serving_pod(**name).is_none())
                .map(|((_, target), _)| target.as_str())
                .collect();
            return Err(StepError::Precondition(format!(
                "{who} not Running and Ready within the steady-state timeout ({}){}",
                fmt_duration(self.run.timeouts.steady_state),
                if names.len() > 1 {
                    format!(": not serving: {}", missing.join(", "))
                } else {
                    String::new()
                }
            )));
        }
        let serving: Vec<crate::timeline::PodView> = watch
            .fleet
            .trackers()
            .iter()
            .zip(&by_name)
            .map(|(t, name)| t.serving_pod(*name).cloned().expect("waited for it"))
            .collect();
        for p in &serving {
            self.recorder.record(EventKind::WorkloadReady {
                pod: p.name.clone(),
                uid: p.uid.clone(),
                node: p.node.clone().expect("a serving pod has a node"),
            });
        }
        // The pod the experiment targets: instance 0's, or the replica it names.
        let pod = serving
            .iter()
            .find(|p| replicated && p.name == self.run.fault.target.pod(self.run.workload.kind))
            .unwrap_or(&serving[0])
            .clone();
        let node = pod.node.clone().expect("a serving pod has a node");
        // The nodes the fault takes: a zone's schedulable workers, else the target pod's node.
        // Every instance must have started on one of them.
        let nodes = if self.run.fault.target.several() {
            workload.homes.clone()
        } else {
            vec![node.clone()]
        };
        if replicated {
            // Each replica on a node of its own (required pod anti-affinity): say so, or stop.
            let mut on: Vec<&str> = serving.iter().filter_map(|p| p.node.as_deref()).collect();
            on.sort_unstable();
            on.dedup();
            if on.len() < serving.len() {
                return Err(StepError::Precondition(format!(
                    "the replicas do not each have a node of their own: {}",
                    serving
                        .iter()
                        .map(|p| format!("{} on {}", p.name, p.node.as_deref().unwrap_or("?")))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        }
        let elsewhere: Vec<String> = serving
            .iter()
            .filter(|_| !replicated)
            .filter(|p| p.node.as_ref().is_none_or(|n| !nodes.contains(n)))
            .map(|p| format!("{} on {}", p.name, p.node.as_deref().unwrap_or("?")))
            .collect();
        if !elsewhere.is_empty() {
            let on = nodes.join(", ");
            return Err(StepError::Precondition(format!(
                "not every instance started where the fault will be ({on}): {} (the preferred node affinity was outweighed; free {on} or use fewer instances)",
                elsewhere.join(", ")
            )));
        }
        self.controller_counters("before-fault").await;
        // Let the workload write for a moment before the fault: 1 s (at the ledger's pace about
        // 20 writes), and for the ledger until the poller has recorded an acknowledged write, so
        // the lost-write check has acknowledged writes from before the fault (about 40 writes
        // and 4 acks took 2 s, the fixed wait this replaces).
        tokio::time::sleep(PRE_FAULT_WRITES).await;
        for (acks, p) in acks.unwrap_or_default().iter().zip(&serving) {
            if !acks.recorded_beyond(0, PRE_FAULT_ACK_TIMEOUT).await {
                self.note(format!(
                    "no write acknowledged within {} of {} Ready: the fault comes with no acknowledged write before it",
                    fmt_duration(PRE_FAULT_WRITES + PRE_FAULT_ACK_TIMEOUT),
                    p.name
                ));
            }
        }
        Ok(Steady {
            namespace: namespace.to_string(),
            pods: serving
                .iter()
                .map(|p| (p.name.clone(), p.node.clone().unwrap_or_default()))
                .collect(),
            pod: pod.name,
            node,
            nodes,
        })
    }

    /// The backend that carries out `kind` (the one chosen with `--node-control`, else the
    /// first that can).
    fn control_for(&self, kind: FaultKind) -> Result<Arc<dyn NodeControl>, StepError> {
        let caps: Vec<_> = self.controls.iter().map(|c| c.capability()).collect();
        faults::choose(&caps, self.fault_backend, kind, self.run.fault.graceful)
            .map(|i| self.controls[i].clone())
            .map_err(StepError::from)
    }

    /// Inject: journal the heal, apply the fault, record time zero from the best evidence. A
    /// zone's nodes are each checked and journaled first, then faulted at the same instant
    /// (one `fault-injected` per node; the first is time zero).
    async fn inject(&self, steady: &Steady) -> Result<Injected, StepError> {
        let kind = self.run.fault.kind;
        let control = self.control_for(kind)?;
        // One reading of the Nodes for every target (the control-plane check, a partition's
        // peers).
        let all = Api::<Node>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map_err(api_err("list nodes"))?
            .items;
        let mut faults = Vec::new();
        for node in &steady.nodes {
            if Some(node) == self.settings.runner_node.as_ref() {
                return Err(StepError::Precondition(format!(
                    "{} runs on {node}, the node nodedown itself runs on: refusing to fault it",
                    steady.pod
                )));
            }
            if !self.settings.allow_control_plane {
                let n = all
                    .iter()
                    .find(|n| n.metadata.name.as_deref() == Some(node.as_str()))
                    .ok_or_else(|| {
                        StepError::Precondition(format!("get node {node}: not found"))
                    })?;
                if remediation::is_control_plane(n) {
                    return Err(StepError::Precondition(format!(
                        "{} runs on {node}, a control-plane node: refusing to fault it (give --allow-control-plane if that is the point)",
                        steady.pod
                    )));
                }
            }
            control.check_node(node).await?;
            let peers = if kind == FaultKind::NetworkPartition {
                peer_addresses(&all, node)
            } else {
                vec![]
            };
            let pod = if kind.is_pod_fault() {
                let ns = steady.namespace.clone();
                let obj = Api::<Pod>::namespaced(self.client.clone(), &ns)
                    .get(&steady.pod)
                    .await
                    .map_err(api_err(format!("get pod {}", steady.pod)))?;
                let container_id = obj
                    .status
                    .and_then(|s| s.container_statuses)
                    .and_then(|c| c.into_iter().next())
                    .and_then(|c| c.container_id);
                Some(faults::PodTarget {
                    namespace: ns,
                    name: steady.pod.clone(),
                    container_id,
                })
            } else {
                None
            };
            // The fault lasts through the recovery window; a backend that can undo it by
            // itself (the agent) does so a minute after that, even if this harness is gone.
            faults.push(NodeFault {
                kind,
                node: node.clone(),
                peers,
                lease: Some(
                    self.settings
                        .fault_lease
                        .unwrap_or(self.run.timeouts.recovery + LEASE_MARGIN),
                ),
                pod,
                graceful: self.run.fault.graceful,
            });
        }
        self.progress.step(&format!(
            "inject: {} on {}",
            kind.as_str(),
            steady.nodes.join(", ")
        ));
        let effects = lifecycle::apply_fault(
            control.as_ref(),
            &faults,
            vec![],
            &self.journal,
            &self.recorder,
        )
        .await?;
        // A freeze with a duration thaws mid-run, through the backend that froze it.
        let ends = match self.run.fault.duration {
            None => tokio::task::JoinSet::new(),
            Some(d) => effects
                .iter()
                .map(|applied| {
                    let undo_id = applied.undo;
                    let (control, node, journal, recorder) = (
                        control.clone(),
                        applied.node.clone(),
                        self.journal.clone(),
                        self.recorder.clone(),
                    );
                    let at = Instant::now()
                        + d.saturating_sub(
                            SystemTime::now()
                                .duration_since(applied.effect.at)
                                .unwrap_or_default(),
                        );
                    async move {
                        tokio::time::sleep_until(at).await;
                        match control.heal(kind, &node).await {
                            Ok(()) => {
                                let _ = journal.healed(undo_id);
                                recorder.record(EventKind::FaultHealed { fault: kind, node });
                            }
                            Err(e) => {
                                recorder.record(EventKind::Note {
                                    message: format!(
                                        "ending {} on {node} after its duration failed: {e}; the heal will retry",
                                        kind.as_str()
                                    ),
                                });
                            }
                        }
                    }
                })
                .collect(),
        };
        Ok(Injected {
            control,
            node: steady.node.clone(),
            nodes: steady.nodes.clone(),
            recovery_deadline: Instant::now() + self.run.timeouts.recovery,
            ends,
        })
    }

    /// Remediate, `after` the node is seen NotReady (the timeline's own `node-not-ready`).
    async fn remediate(
        &self,
        watch: &mut Watch,
        workload: &Workload,
        steady: &Steady,
        fault: &mut Injected,
    ) -> Result<(), StepError> {
        if self.run.remediation == RemediationSpec::External {
            return self.observe_external(watch, fault).await;
        }
        let Some(after) = self.run.remediation.after() else {
            return Ok(());
        };
        let node = fault.nodes.join(", ");
        self.progress
            .step(&format!("observe: waiting for {node} NotReady"));
        if !watch
            .until(fault.recovery_deadline, |f| {
                f.all_affected(|t| t.has(Phase::NodeNotReady))
            })
            .await
        {
            self.note(format!(
                "{node} was not seen NotReady within the recovery timeout; no remediation"
            ));
            return Ok(());
        }
        tokio::time::sleep_until((Instant::now() + after).min(fault.recovery_deadline)).await;
        if Instant::now() >= fault.recovery_deadline {
            return Ok(());
        }
        self.progress
            .step(&format!("remediate: {}", self.run.remediation.name()));
        // Node by node (a zone's), each with the instances' pods on it.
        for node in &fault.nodes.clone() {
            let pods: Vec<String> = steady
                .pods
                .iter()
                .filter(|(_, on)| on == node)
                .map(|(pod, _)| pod.clone())
                .collect();
            self.apply_remediation(&workload.namespace, &pods, node, fault)
                .await?;
            if let Some(lift) = self.run.remediation.lift_after() {
                fault
                    .ends
                    .spawn(self.lift_fence_early(&workload.namespace, node, lift));
            }
        }
        Ok(())
    }

    /// `liftAfter`: the storage fence and the taint lifted `lift` after they were applied,
    /// while the fault lasts (the hazard of a taint removed early, which the platform follows
    /// by unfencing). A task of the fault's (`Injected::ends`): the run waits for it, and an
    /// interrupted run drops it before its heal.
    fn lift_fence_early(
        &self,
        namespace: &str,
        node: &str,
        lift: Duration,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let (client, recorder) = (self.client.clone(), self.recorder.clone());
        let name = crate::remediation::fence::fence_name(namespace, node);
        let node = node.to_string();
        async move {
            tokio::time::sleep(lift).await;
            recorder.record(EventKind::Note {
                message: format!(
                    "liftAfter: lifting the storage fence of {node} and its out-of-service taint {} after they were applied, while the fault lasts",
                    crate::units::fmt_duration(lift)
                ),
            });
            let why = "lifted early (liftAfter)";
            match crate::remediation::fence::lift(&client, &name, &node, why).await {
                Ok(Some(unfenced)) => recorder.record(unfenced),
                Ok(None) => recorder.record(EventKind::Note {
                    message: format!("liftAfter: no NetworkFence {name} to lift"),
                }),
                Err(e) => recorder.record(EventKind::Note {
                    message: format!("liftAfter: lifting NetworkFence {name} failed: {e}"),
                }),
            };
            let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(client);
            match crate::remediation::remove_taint(&nodes, &node, OUT_OF_SERVICE_KEY).await {
                Ok(true) => {
                    recorder.record(EventKind::RemediationUndone {
                        remediation: "out-of-service-taint".into(),
                        node,
                        detail: format!("taint {OUT_OF_SERVICE_KEY} removed early (liftAfter)"),
                    });
                }
                Ok(false) => {}
                Err(e) => {
                    recorder.record(EventKind::Note {
                        message: format!("liftAfter: removing the taint failed: {e}"),
                    });
                }
            }
        }
    }

    /// Remediation `external`: nodedown acts not; it waits for the first thing a remediator does
    /// (out-of-service taint on the node, old pod deleted, Node deleted, volume detached) and
    /// records it as the remediation, naming who did it where the API says so. A taint it did
    /// not add is journaled for removal at the heal, so the cluster is left whole either way.
    async fn observe_external(&self, watch: &mut Watch, fault: &Injected) -> Result<(), StepError> {
        let node = fault.node.clone();
        self.progress
            .step("remediate: external (waiting for a remediator that is not nodedown)");
        let acted = [
            Phase::OutOfServiceTaint,
            Phase::OldPodDeleted,
            Phase::NodeDeleted,
            Phase::VolumeDetached,
        ];
        if !watch
            .until(fault.recovery_deadline, |f| {
                f.trackers().iter().any(|t| acted.iter().any(|p| t.has(*p)))
            })
            .await
        {
            self.note("no remediator acted within the recovery timeout".into());
            return Ok(());
        }
        // The first act any instance saw (the taint and a Node's deletion every instance sees).
        let tl = watch
            .fleet
            .trackers()
            .iter()
            .map(|t| t.timeline())
            .min_by_key(|tl| {
                acted
                    .iter()
                    .filter_map(|p| tl.at(*p))
                    .min()
                    .unwrap_or(u64::MAX)
            })
            .expect("a fleet has an instance");
        let first = acted
            .iter()
            .filter_map(|p| tl.phase(*p))
            .min_by_key(|p| p.at_ms)
            .map(|p| p.phase)
            .expect("one happened");
        let detail = match first {
            Phase::OutOfServiceTaint => {
                self.journal
                    .record(Undo::RemoveTaint {
                        node: node.clone(),
                        key: OUT_OF_SERVICE_KEY.into(),
                    })
                    .map_err(StepError::Journal)?;
                match &tl.out_of_service_by {
                    Some(by) => format!("{OUT_OF_SERVICE_KEY} added to {node} by field manager {by}"),
                    None => format!(
                        "{OUT_OF_SERVICE_KEY} added to {node} (its field manager is not in the Node's managedFields)"
                    ),
                }
            }
            Phase::OldPodDeleted => {
                "the old pod was deleted (the API does not say by whom: no field manager on a deletion)".to_string()
            }
            Phase::NodeDeleted => format!("Node {node} was deleted (the API does not say by whom)"),
            _ => format!(
                "the volume's VolumeAttachment on {node} was detached or deleted (the API does not say by whom)"
            ),
        };
        self.recorder.record(EventKind::RemediationApplied {
            remediation: "external".into(),
            node,
            detail,
        });
        Ok(())
    }

    async fn apply_remediation(
        &self,
        ns: &str,
        pods: &[String],
        node: &str,
        fault: &Injected,
    ) -> Result<(), StepError> {
        let target = remediation::Target {
            client: &self.client,
            namespace: ns,
            pods,
            node,
            fault_control: &fault.control,
            controls: &self.controls,
        };
        let applied = remediation::apply(&self.run.remediation, &target, &self.journal, |e| {
            self.recorder.record(e);
        })
        .await?;
        if let Some(detail) = applied {
            self.recorder.record(EventKind::RemediationApplied {
                remediation: self.run.remediation.name().into(),
                node: node.to_string(),
                detail,
            });
        }
        Ok(())
    }

    /// Recover: a replacement Ready for every instance (the timeline's own
    /// `replacement-ready`), or the timeout.
    async fn recover(&self, watch: &mut Watch, workload: &Workload, fault: &Injected) {
        let n = watch.fleet.names().len();
        self.progress.step(&if n == 1 {
            "recover: waiting for a replacement pod Ready".to_string()
        } else if self.run.workload.replicas > 1 {
            format!(
                "recover: waiting for a replacement Ready for the replica on {} (the other {} serve on)",
                fault.nodes.join(", "),
                n - 1
            )
        } else {
            format!("recover: waiting for a replacement pod Ready for each of {n} instances")
        });
        if !watch
            .until(fault.recovery_deadline, |f| {
                f.all_affected(|t| t.has(Phase::ReplacementReady))
            })
            .await
        {
            self.recorder.record(EventKind::RecoveryTimeout {
                after_ms: crate::units::millis(self.run.timeouts.recovery),
            });
            self.note_not_ready(workload).await;
        }
    }

    /// At the recovery timeout: each pod of the workload that is not Ready, and who holds it
    /// up in its own words (the scheduler's, the kubelet's), as notes in the timeline.
    async fn note_not_ready(&self, workload: &Workload) {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &workload.namespace);
        match pods
            .list(&ListParams::default().labels(&workload.selector()))
            .await
        {
            Ok(list) => {
                for pod in &list.items {
                    if let Some(why) = observe::pod_not_ready_reason(pod) {
                        let name = pod.metadata.name.as_deref().unwrap_or("?");
                        self.note(format!("at the recovery timeout, pod {name}: {why}"));
                    }
                }
            }
            Err(e) => self.note(format!(
                "at the recovery timeout, the workload's pods could not be listed: {e}"
            )),
        }
    }

    /// Ledger evidence, for every instance: let the writers write a little longer, stop
    /// recording acks, then copy the ledger (every recorded ack precedes the copy, so each
    /// acked record must be in it). A ledger that cannot be collected is noted; that
    /// instance's integrity verdict is then unknown.
    async fn collect_ledgers(
        &self,
        workload: &Workload,
        watch: &Watch,
        steady: &Steady,
        acks: Vec<observe::AckPoller>,
    ) {
        // Until the writes have resumed — an ack recorded after this point (the replacement's,
        // or the old writer's back) — so the acks show the write outage's end; at most 3 s in
        // all (nothing serves: the outage did not end within the observation).
        let until = Instant::now() + Duration::from_secs(3);
        for a in &acks {
            let left = until.saturating_duration_since(Instant::now());
            a.recorded_beyond(a.recorded(), left).await;
        }
        for a in acks {
            a.stop().await;
        }
        let names = watch.fleet.names();
        for ((name, tracker), old) in names.iter().zip(watch.fleet.trackers()).zip(&steady.pods) {
            let serving = tracker.evidence_pod().map(|p| p.name.clone());
            let dest = store::instance_dir(&self.dir, names.len(), name).join(store::LEDGER_COPY);
            let note = match workload
                .collect_ledger(&self.client, &old.0, serving.as_deref(), &dest)
                .await
            {
                Ok(note) => note,
                Err(e) => format!("{e}; the integrity verdict will be unknown"),
            };
            self.note(if names.len() > 1 {
                format!("{name}: {note}")
            } else {
                note
            });
        }
    }

    /// Instance `name`'s pod that the experiment's target names (`nodeOf: ledger-0` is
    /// `ledger-i3-0` in instance `ledger-i3`).
    fn instance_pod(&self, name: &str) -> String {
        if self.run.workload.replicas > 1 {
            // Each replica is a member of its own (see `spec::members`).
            return name.to_string();
        }
        let target = self.run.fault.target.pod(self.run.workload.kind);
        let base = crate::workload::app_name(self.run.workload.kind);
        match target.strip_prefix(base) {
            Some(ordinal) => format!("{name}{ordinal}"),
            None => target,
        }
    }
}

/// The nodes a target of several nodes by name or by count takes, out of the cluster's
/// schedulable `workers` (sorted by name), or the first worker alone for any other target (a
/// fleet on one node). At least one worker must stay up for the replacements.
fn several_nodes(
    target: &crate::spec::Target,
    workers: Vec<String>,
) -> Result<Vec<String>, StepError> {
    let taken: Vec<String> = if !target.nodes.is_empty() {
        let missing: Vec<&str> = target
            .nodes
            .iter()
            .filter(|n| !workers.contains(n))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            return Err(StepError::Precondition(format!(
                "fault.target.nodes: {} not schedulable worker(s) of this cluster (those are: {})",
                missing.join(", "),
                workers.join(", ")
            )));
        }
        target.nodes.clone()
    } else if let Some(n) = target.count {
        workers.iter().take(n as usize).cloned().collect()
    } else {
        return Ok(workers.into_iter().take(1).collect());
    };
    if workers.len() <= taken.len() {
        return Err(StepError::Precondition(format!(
            "the fault would take {} of the {} schedulable worker(s) ({}), leaving none for the replacements: take fewer nodes",
            taken.len(),
            workers.len(),
            workers.join(", ")
        )));
    }
    Ok(taken)
}

/// Five hex digits new each call: the suffix of names nodedown makes (namespaces, classes).
pub(crate) fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    format!("{:05x}", h.finish() & 0xfffff)
}

/// A run's namespace: `nd-<experiment>-<variant>-<repetition>-<random suffix>`, a DNS label new
/// in every run (real and simulated alike).
pub(crate) fn namespace_name(run: &PlannedRun) -> String {
    let clean = |s: &str| {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect::<String>()
    };
    let mut base = format!(
        "nd-{}-{}-{}",
        clean(&run.experiment),
        clean(&run.variant),
        run.repetition
    );
    base.truncate(56);
    format!("{}-{}", base.trim_end_matches('-'), random_suffix())
}

/// The InternalIP of every other node: what a partition cuts the node off from.
fn peer_addresses(nodes: &[Node], node: &str) -> Vec<String> {
    nodes
        .iter()
        .filter(|n| n.metadata.name.as_deref() != Some(node))
        .flat_map(|n| n.status.iter().flat_map(|s| s.addresses.iter().flatten()))
        .filter(|a| a.type_ == "InternalIP")
        .map(|a| a.address.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::several_nodes;
    use crate::spec::Target;

    #[test]
    fn a_runs_namespace_is_a_dns_label_new_in_every_run() {
        let mut run = crate::plan::fixtures::planned(
            "Scale_Simulated",
            "lost-20-x20-taint",
            1,
            crate::spec::RemediationSpec::None,
            crate::plan::fixtures::secs(60),
            Default::default(),
        );
        let ns = super::namespace_name(&run);
        assert!(
            ns.starts_with("nd-scale-simulated-lost-20-x20-taint-1-"),
            "{ns}"
        );
        assert_ne!(ns, super::namespace_name(&run), "a new suffix each time");
        run.experiment = "x".repeat(80);
        let ns = super::namespace_name(&run);
        assert!(ns.len() <= 63 && !ns.contains("--"), "{ns}");
        assert!(
            ns.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !ns.ends_with('-'),
            "{ns}"
        );
    }

    fn workers() -> Vec<String> {
        ["w1", "w2", "w3"].iter().map(|s| s.to_string()).collect()
    }

    fn target(nodes: &[&str], count: Option<u32>) -> Target {
        Target {
            node_of: String::new(),
            zone: None,
            nodes: nodes.iter().map(|s| s.to_string()).collect(),
            count,
        }
    }

    #[test]
    fn several_nodes_by_name_or_count_leave_a_worker_for_the_replacements() {
        assert_eq!(
            several_nodes(&target(&[], Some(2)), workers()).unwrap(),
            ["w1", "w2"]
        );
        assert_eq!(
            several_nodes(&target(&["w3", "w1"], None), workers()).unwrap(),
            ["w3", "w1"],
            "in the order named"
        );
        assert_eq!(
            several_nodes(&target(&[], None), workers()).unwrap(),
            ["w1"]
        );
        let e = several_nodes(&target(&[], Some(3)), workers())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("would take 3 of the 3 schedulable worker(s)"),
            "{e}"
        );
        let e = several_nodes(&target(&["w1", "cp"], None), workers())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("fault.target.nodes: cp not schedulable worker(s)"),
            "{e}"
        );
        assert!(e.contains("(those are: w1, w2, w3)"), "{e}");
    }
}
