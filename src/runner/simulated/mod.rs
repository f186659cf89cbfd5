//! Runs on the simulated cluster (`provider: kwok`): many nodes lost at once under many
//! stateful pods, measured against the real control plane. Same journal, same healer, same
//! cluster lock as real runs; the fault backend is kwok's. What is measured is the timeline of
//! [`crate::timeline::scale`]; there is no data path, so no ledger, acks or integrity.

mod place;
pub use place::instance_statefulset;
use place::{place, Placement};

use crate::cluster::kwok;
use crate::faults::{KwokNodeControl, NodeFault};
use crate::journal::{Journal, Undo};
use crate::observe::procs;
use crate::observe::{Recorder, Scope};
use crate::plan::PlannedRun;
use crate::remediation;
use crate::runner::lifecycle::{self, RunFiles};
use crate::runner::StepError;
use crate::spec::{FaultKind, RemediationSpec};
use crate::timeline::scale::ScaleFold;
use crate::timeline::{EventKind, SimulatedCluster, Stage};
use k8s_openapi::api::core::v1::Node;
use kube::{Api, Client};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::vocab::INSTANCE_LABEL;

/// Why the simulated cluster could not be readied for the runs (each run's own errors are in
/// its result).
#[derive(Debug, thiserror::Error)]
pub enum SimulatedError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the simulated cluster is not a local one (nodedown makes it with kind)")]
    NotLocal,
    #[error("the simulated cluster: {0}")]
    Cluster(crate::cluster::ClusterError),
    #[error("cannot start kwok: {0}")]
    Kwok(crate::cluster::ClusterError),
}

/// What went wrong around the simulated runs of an invocation; each run's result is read
/// back from its directory, like a real run's.
pub struct SimulatedInvocation {
    /// Errors outside any one run's directory (kwok exited, a run that could not make its
    /// directory): a harness error of the invocation.
    pub errors: Vec<String>,
    /// SIGINT/SIGTERM or the lost cluster lock stopped it (after healing).
    pub interrupted: bool,
}

/// A run's background tasks (the watches, nodedown's pending taints): owned by the invocation,
/// not by the run's future, so that they are stopped — aborted *and* joined — before the run is
/// healed, whichever way the run ended (finished, failed, or dropped by an interrupt). A pending
/// `after` taint can then never land after the heal removed it.
#[derive(Default)]
struct RunTasks {
    watches: Vec<tokio::task::JoinHandle<()>>,
    taints: tokio::task::JoinSet<Result<(), StepError>>,
    /// The run's directory once it exists: the invocation heals from its journal and records
    /// the end of the run in its events.
    files: Option<RunFiles>,
}

impl RunTasks {
    async fn stop(&mut self) {
        self.taints.shutdown().await;
        for w in &self.watches {
            w.abort();
        }
        for w in self.watches.drain(..) {
            let _ = w.await;
        }
    }
}

/// kwok running for the simulated cluster of an invocation: its nodes heartbeat while it
/// lives (dropping it stops kwok). Everything else of an invocation — the cluster made, reused
/// or deleted, the lock, session.json, the interrupt, the final wait, the reports and the exit
/// — is the one invocation shell of real runs (`nodedown run`); this is the provider's part.
pub struct Simulator {
    kwok: kwok::Kwok,
    version: String,
    /// The control plane's container (for its processes' CPU and memory).
    container: Option<String>,
    kubernetes: String,
}

/// Starts kwok on the simulated cluster of `env` (its kubeconfig written, private, into `dir`;
/// its log there as `log_name`): for the runs, and for `nodedown cleanup` (the nodes it heals
/// come back only while kwok renews their Leases).
pub async fn start_kwok(
    env: &crate::runner::Env,
    dir: &Path,
    cache_dir: &Path,
    log_name: &str,
) -> Result<kwok::Kwok, SimulatedError> {
    let yaml = env
        .local_kubeconfig()
        .await
        .ok_or(SimulatedError::NotLocal)?
        .map_err(SimulatedError::Cluster)?;
    let path = dir.join("kubeconfig-simulated");
    write_private(&path, &yaml).map_err(|source| SimulatedError::Io {
        path: path.clone(),
        source,
    })?;
    kwok::Kwok::start(&kwok::kwok_bin(cache_dir), &path, dir, log_name)
        .await
        .map_err(SimulatedError::Kwok)
}

impl Simulator {
    /// Starts kwok for the invocation's runs (`out`: the invocation's directory).
    pub async fn start(
        env: &crate::runner::Env,
        out: &Path,
        cache_dir: &Path,
        progress: &crate::runner::Progress,
    ) -> Result<Simulator, SimulatedError> {
        let kwok = start_kwok(env, out, cache_dir, "kwok.log").await?;
        let bin = kwok::kwok_bin(cache_dir);
        let version = kwok::version(&bin).await;
        progress.step(&format!(
            "kwok {} ({version}) started (log {})",
            bin.display(),
            kwok.log.display()
        ));
        let container = match (&env.session.cluster, crate::cluster::DockerNodes::connect()) {
            (Some(name), Ok(d)) => d
                .container_id(&format!("{name}-control-plane"))
                .await
                .ok()
                .flatten(),
            _ => None,
        };
        let kubernetes = env
            .client
            .apiserver_version()
            .await
            .map(|v| v.git_version)
            .unwrap_or_default();
        Ok(Simulator {
            kwok,
            version,
            container,
            kubernetes,
        })
    }

    /// Runs `runs` (all `provider: kwok`) one after the other, each healed from its journal
    /// with its own heal timeout whichever way it ended; each run's results.json and summary.md
    /// written in `out/<run id>`. Stops starting runs once `interrupt` fired or kwok exited.
    pub async fn run_all(
        &mut self,
        env: &crate::runner::Env,
        runs: &[PlannedRun],
        out: &Path,
        progress: &crate::runner::Progress,
        interrupt: &super::Interrupt,
    ) -> SimulatedInvocation {
        let mut inv = SimulatedInvocation {
            errors: Vec::new(),
            interrupted: false,
        };
        let total = runs.len();
        for (i, run) in runs.iter().enumerate() {
            if interrupt.first().is_some() {
                break;
            }
            if !self.kwok.alive() {
                inv.errors
                    .push(format!("kwok exited; its log: {}", self.kwok.log.display()));
                break;
            }
            progress.set_run(&format!("[{}/{total}] {}", i + 1, run.id));
            let ctx = RunContext {
                client: env.client.clone(),
                out: out.join(&run.id),
                progress: progress.clone(),
                kubernetes: self.kubernetes.clone(),
                cluster: env.session.cluster.clone().unwrap_or_default(),
                container: self.container.clone(),
                kwok_pid: self.kwok.pid(),
                kwok_started: self.kwok.started,
                kwok_version: self.version.clone(),
            };
            match run_healed(env, run, &ctx, interrupt).await {
                Ok(result) => match (&result.error, &result.outcome) {
                    (Some(e), _) => progress.step(&format!("error: {e}")),
                    (None, Some(o)) => {
                        progress.step(&format!("{}: {}", result.verdict.as_str(), o.summary))
                    }
                    (None, None) => progress.step(result.verdict.as_str()),
                },
                Err(e) => {
                    progress.step(&format!("error: {e}"));
                    inv.errors.push(format!("{}: {e}", run.id));
                }
            }
        }
        progress.set_run("");
        inv.interrupted = interrupt.first().is_some();
        inv
    }
}

/// Why a simulated run stopped before its end.
#[derive(Debug, thiserror::Error)]
enum RunStopped {
    #[error(transparent)]
    Step(#[from] StepError),
    #[error("interrupted: {0}")]
    Interrupted(super::Stop),
}

/// One run to its end (or its interrupt), its tasks stopped, then healed from its journal with
/// its own heal timeout; its result from its events (the one rule `nodedown report` applies
/// to its directory). `Err`: it stopped before its directory existed (nothing to report from).
async fn run_healed(
    env: &crate::runner::Env,
    run: &PlannedRun,
    ctx: &RunContext,
    interrupt: &super::Interrupt,
) -> Result<crate::report::RunResult, RunStopped> {
    let mut tasks = RunTasks::default();
    let outcome = tokio::select! {
        r = run_one(run, ctx, &mut tasks) => r.map_err(RunStopped::from),
        stop = interrupt.wait() => Err(RunStopped::Interrupted(stop)),
    };
    // Nothing of the run's may act after this point: then heal what the journal says. A run
    // that could not go on keeps what it observed until then (its events), and says why.
    tasks.stop().await;
    let Some(files) = tasks.files.take() else {
        return match outcome {
            Err(stopped) => Err(stopped),
            Ok(_) => unreachable!("a run's steps begin by making its directory"),
        };
    };
    let error = match outcome {
        Ok(harness_error) => harness_error,
        Err(e) => Some(e.to_string()),
    };
    let heal_errors = lifecycle::heal(env, run, &files, &ctx.progress).await;
    let _ = lifecycle::finish(&files, error, &heal_errors);
    Ok(crate::report::simulated::run_result(
        run,
        &files.recorder.since(0),
    ))
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())
}

struct RunContext {
    client: Client,
    out: PathBuf,
    progress: crate::runner::Progress,
    kubernetes: String,
    cluster: String,
    container: Option<String>,
    kwok_pid: Option<u32>,
    kwok_started: SystemTime,
    kwok_version: String,
}

/// The run's steps, recording into its events; `Ok(Some(..))`: what went wrong in nodedown's
/// own steps without stopping the run (a taint it could not write).
async fn run_one(
    run: &PlannedRun,
    ctx: &RunContext,
    tasks: &mut RunTasks,
) -> Result<Option<String>, StepError> {
    let say = |m: String| ctx.progress.step(&m);
    let files = lifecycle::open(&ctx.out, run)?;
    tasks.files = Some(files.clone());
    let (journal, recorder) = (&files.journal, &files.recorder);
    recorder.record(EventKind::Stage {
        stage: Stage::Setup,
    });
    let placed = place(run, ctx, journal, recorder, &say).await?;
    recorder.record(EventKind::SimulatedCluster(SimulatedCluster {
        kubernetes: ctx.kubernetes.clone(),
        nodes: placed.names.len(),
        kwok: ctx.kwok_version.clone(),
        kwok_lease_seconds: kwok::LEASE_SECONDS,
        cluster: ctx.cluster.clone(),
    }));
    let (mut fold, folded) = watch(ctx, &placed, recorder, tasks).await?;
    let meter = procs::CostMeter::start(ctx.container.clone(), ctx.kwok_pid.map(|p| ("kwok", p)));
    recorder.record(EventKind::Stage {
        stage: Stage::Fault,
    });
    inject(run, ctx, &placed.lost, journal, recorder, &say).await?;
    recover(run, ctx, recorder, &mut fold, folded, tasks, &say).await;
    if !fold.all_back() {
        recorder.record(EventKind::RecoveryTimeout {
            after_ms: run.timeouts.recovery.as_millis() as u64,
        });
    }
    recorder.record(EventKind::ProcessCost {
        usage: meter.finish(),
    });
    let mut harness_errors = Vec::new();
    while let Some(t) = tasks.taints.join_next().await {
        match t {
            Ok(Ok(())) => {}
            Ok(Err(e)) => harness_errors.push(e.to_string()),
            Err(e) => harness_errors.push(e.to_string()),
        }
    }
    // Let the watches record what has already happened, then stop them: the run's
    // observations are its events up to here.
    tokio::time::sleep(Duration::from_millis(500)).await;
    tasks.stop().await;
    recorder.record(EventKind::Stage {
        stage: Stage::Collect,
    });
    Ok((!harness_errors.is_empty()).then(|| harness_errors.join("; ")))
}

/// Starts the run's watches (recording into its events from before the fault) and waits until
/// their first lists are in: every instance's pod and volume known to the fold. Returns the
/// fold and how many events it has taken.
async fn watch(
    ctx: &RunContext,
    p: &Placement,
    recorder: &Arc<Recorder>,
    tasks: &mut RunTasks,
) -> Result<(ScaleFold, usize), StepError> {
    let client = &ctx.client;
    let (ns, names, placed) = (&p.ns, &p.names, &p.placed);
    // The watches, recording into the run's events from before the fault; the fault waits
    // until their first lists are in (every instance's pod and volume known).
    recorder.record(EventKind::RunScope {
        namespace: ns.clone(),
        lane: None,
        nodes: vec![],
        confined: false,
    });
    tasks.watches = crate::observe::spawn_watchers(
        client.clone(),
        &Scope {
            namespace: ns.clone(),
            pod_selector: INSTANCE_LABEL.to_string(),
            nodes: names.clone(),
            kube_events: false,
            fence_events: false,
            fence_clients: None,
        },
        recorder.clone(),
    );
    let mut fold = ScaleFold::new();
    let mut folded = 0;
    let synced_by = Instant::now() + Duration::from_secs(60);
    loop {
        let changed = recorder.changed();
        for e in recorder.since(folded) {
            fold.apply(&e);
            folded += 1;
        }
        let (pods, volumes) = fold.known();
        if pods >= placed.len() && volumes >= placed.len() {
            break;
        }
        if Instant::now() >= synced_by {
            return Err(StepError::Precondition(format!(
                "the watches did not list the run's objects in 60 s ({pods} of {} pods, {volumes} volumes)",
                placed.len()
            )));
        }
        tokio::select! {
            _ = changed => {}
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
    Ok((fold, folded))
}

/// The fault on every lost node at once, each heal (and, with the taint, each taint's removal)
/// journaled before; `fault-injected` recorded per node, the earliest effect first.
async fn inject(
    run: &PlannedRun,
    ctx: &RunContext,
    lost: &[String],
    journal: &Journal,
    recorder: &Recorder,
    say: &impl Fn(String),
) -> Result<(), StepError> {
    let client = &ctx.client;
    let control = KwokNodeControl::new(client.clone());
    // With the out-of-service taint, its removal is journaled here too, before the fault (a
    // taint never applied is removed as a no-op): the reaction to a node seen NotReady is then
    // the write alone, with no journal sync in its path.
    let tainting = matches!(run.remediation, RemediationSpec::OutOfServiceTaint { .. });
    let also: Vec<Undo> = lost
        .iter()
        .filter(|_| tainting)
        .map(|node| Undo::RemoveTaint {
            node: node.clone(),
            key: remediation::OUT_OF_SERVICE_KEY.into(),
        })
        .collect();
    say(format!(
        "inject: node-shutdown (kwok) on {} node(s)",
        lost.len()
    ));
    let faults: Vec<NodeFault> = lost
        .iter()
        .map(|node| NodeFault {
            kind: FaultKind::NodeShutdown,
            node: node.clone(),
            peers: vec![],
            lease: None,
            graceful: false,
            pod: None,
        })
        .collect();
    lifecycle::apply_fault(&control, &faults, also, journal, recorder).await?;
    Ok(())
}

/// Waits until every instance is back (or the recovery timeout), tainting each lost node the
/// moment the fold shows it NotReady (with the out-of-service taint), sampling the control
/// plane's memory meanwhile.
#[allow(clippy::too_many_arguments)]
async fn recover(
    run: &PlannedRun,
    ctx: &RunContext,
    recorder: &Arc<Recorder>,
    fold: &mut ScaleFold,
    mut folded: usize,
    tasks: &mut RunTasks,
    say: &impl Fn(String),
) {
    let client = &ctx.client;
    // The remediation: nodedown taints each node as soon as its events show it NotReady.
    let taint_after = match &run.remediation {
        RemediationSpec::OutOfServiceTaint { after, .. } => Some(*after),
        _ => None,
    };
    let nodes_api: Api<Node> = Api::all(client.clone());
    let deadline = Instant::now() + run.timeouts.recovery;
    say(
        "recover: waiting for every instance's replacement Running with its volume attached".into(),
    );
    loop {
        let changed = recorder.changed();
        let mut not_ready = Vec::new();
        for e in recorder.since(folded) {
            not_ready.extend(fold.apply(&e));
            folded += 1;
        }
        if let Some(after) = taint_after {
            // Each taint's undo was journaled before the fault: nothing but the write is left.
            for node in not_ready {
                let nodes_api = nodes_api.clone();
                let recorder = recorder.clone();
                let name = run.remediation.name().to_string();
                tasks.taints.spawn(async move {
                    tokio::time::sleep(after).await;
                    remediation::append_out_of_service_taint(&nodes_api, &node).await?;
                    recorder.record(EventKind::RemediationApplied {
                        remediation: name,
                        node: node.clone(),
                        detail: remediation::out_of_service_detail(),
                    });
                    Ok(())
                });
            }
        }
        if fold.all_back() || Instant::now() >= deadline {
            break;
        }
        tokio::select! {
            _ = changed => {}
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
}
