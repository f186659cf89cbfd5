//! The runner: the only module that sees both the pure core and the effectful edge. Drives each
//! run through setup → steady state → inject → observe → remediate → recover → heal →
//! teardown. Every undo is journaled before its action; healing runs on every exit path.

pub mod heal;
pub mod journal;
mod progress;

pub use progress::Progress;

use crate::cluster::{self, ClusterError, DockerNodes, Kind};
use crate::faults::{self, Fault};
use crate::observe::{self, Recorder, Scope};
use crate::plan::{self, PlanOptions, PlannedRun};
use crate::remediation::{self, OUT_OF_SERVICE_KEY};
use crate::spec::{Experiment, FaultKind, Provider, RemediationSpec, WorkloadKind};
use crate::timeline::{Event, EventKind};
use crate::workload;
use heal::Healer;
use journal::{Journal, Undo};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, Pod};
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    Setup(String),
    #[error("interrupted by {0}; the cluster was healed from the journal")]
    Interrupted(&'static str),
}

fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> RunnerError {
    let context = context.into();
    move |source| RunnerError::Io { context, source }
}

/// Command-line choices that apply to every run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub out: PathBuf,
    /// kind cluster name (default: the experiment's `cluster.name`, else `nodedown`).
    pub cluster_name: Option<String>,
    /// kind config (default: the experiment's `cluster.config`, else kind-configs/fast.yaml).
    pub kind_config: Option<PathBuf>,
    /// Keep a cluster this invocation created.
    pub retain: bool,
    /// Use an existing cluster through this kubeconfig context instead of kind.
    pub context: Option<String>,
    /// kind node image (default: NODEDOWN_NODE_IMAGE, else what testenv built last).
    pub node_image: Option<String>,
}

/// How the cluster was reached; `<out>/session.json`, read by `nodedown cleanup`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub provider: Provider,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind_cluster: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The kind config the cluster was made from (or found with), for reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

pub const SESSION_FILE: &str = "session.json";

/// What the runs share: the API client and, for kind, Docker access to the node containers.
pub struct Env {
    pub client: Client,
    pub docker: Option<DockerNodes>,
    pub session: Session,
    kind: Option<Kind>,
    created: bool,
}

impl Env {
    /// Reconnects from a session file (for `cleanup` and `report`-free tooling).
    pub async fn from_session(session: Session) -> Result<Env, RunnerError> {
        let (client, docker, kind) = match (&session.provider, &session.kind_cluster) {
            (Provider::Kind, Some(name)) => {
                let kind = Kind::new(name);
                (
                    cluster::client_for_kind(&kind).await?,
                    Some(DockerNodes::connect()?),
                    Some(kind),
                )
            }
            _ => (
                cluster::client_for_context(session.context.as_deref()).await?,
                None,
                None,
            ),
        };
        Ok(Env {
            client,
            docker,
            session,
            kind,
            created: false,
        })
    }

    pub fn healer(&self, node_timeout: Duration) -> Healer {
        Healer {
            client: self.client.clone(),
            docker: self.docker.clone(),
            node_timeout,
        }
    }

    /// Deletes a kind cluster this invocation created, unless retained.
    pub async fn finish(&self, retain: bool) -> Result<(), RunnerError> {
        if let (true, false, Some(kind)) = (self.created, retain, &self.kind) {
            kind.delete().await?;
        }
        Ok(())
    }
}

fn default_node_image() -> String {
    if let Ok(image) = std::env::var("NODEDOWN_NODE_IMAGE") {
        return image;
    }
    let cache = std::env::var("NODEDOWN_CACHE").unwrap_or_else(|_| "/var/cache/nodedown".into());
    std::fs::read_to_string(Path::new(&cache).join("node-image"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "nodedown/node:latest".into())
}

/// Creates or reuses the cluster for these experiments.
pub async fn prepare(
    experiments: &[(PathBuf, Experiment)],
    opts: &Options,
    progress: &Progress,
) -> Result<Env, RunnerError> {
    let first = experiments
        .first()
        .map(|(f, e)| (f.clone(), e.cluster.clone()));
    let (file, spec) = first.ok_or_else(|| RunnerError::Setup("no experiments".into()))?;
    let existing = opts.context.is_some() || spec.provider == Provider::Existing;
    if existing {
        let session = Session {
            provider: Provider::Existing,
            kind_cluster: None,
            context: opts.context.clone(),
            profile: None,
        };
        progress.step(&format!(
            "using the existing cluster (context {})",
            opts.context.as_deref().unwrap_or("current")
        ));
        let client = cluster::client_for_context(opts.context.as_deref()).await?;
        client.apiserver_version().await?;
        return Ok(Env {
            client,
            docker: None,
            session,
            kind: None,
            created: false,
        });
    }
    let name = opts
        .cluster_name
        .clone()
        .or(spec.name.clone())
        .unwrap_or_else(|| "nodedown".into());
    let config = opts
        .kind_config
        .clone()
        .or_else(|| crate::spec::cluster_config_path(&file, &spec))
        .unwrap_or_else(|| PathBuf::from("kind-configs/fast.yaml"));
    let kind = Kind::new(&name);
    let docker = DockerNodes::connect()?;
    docker.ping().await?;
    let mut created = false;
    if kind.exists().await? {
        if !spec.reuse && opts.cluster_name.is_none() {
            return Err(RunnerError::Setup(format!(
                "kind cluster {name} exists and the experiment says reuse: false; delete it (kind delete cluster --name {name}) or pick another name with --cluster-name"
            )));
        }
        progress.step(&format!("reusing kind cluster {name}"));
    } else {
        if !config.is_file() {
            return Err(RunnerError::Setup(format!(
                "kind config {} not found; give --kind-config or cluster.config in the experiment",
                config.display()
            )));
        }
        let image = opts.node_image.clone().unwrap_or_else(default_node_image);
        progress.step(&format!(
            "creating kind cluster {name} from {} with {image}",
            config.display()
        ));
        kind.create(&config, &image, &docker).await?;
        created = true;
    }
    let client = cluster::client_for_kind(&kind).await?;
    let session = Session {
        provider: Provider::Kind,
        kind_cluster: Some(name),
        context: Some(kind.context()),
        profile: Some(config.display().to_string()),
    };
    Ok(Env {
        client,
        docker: Some(docker),
        session,
        kind: Some(kind),
        created,
    })
}

/// The workload image: the user's, or nodedown's own, built and loaded into every kind node.
pub async fn workload_image(
    env: &Env,
    user_image: Option<&str>,
    progress: &Progress,
) -> Result<(String, bool), RunnerError> {
    if let Some(image) = user_image {
        return Ok((image.to_string(), false));
    }
    let (Some(docker), Some(kind)) = (&env.docker, &env.kind) else {
        return Err(RunnerError::Setup(
            "on an existing cluster, set workload.image to an image of nodedown pushed to a registry the cluster can pull from (see README)".into(),
        ));
    };
    let exe = std::env::current_exe().map_err(io_err("locating the nodedown executable"))?;
    let files =
        workload::image::image_files(&exe).map_err(|e| RunnerError::Setup(e.to_string()))?;
    let archive = std::env::temp_dir().join(format!("nodedown-image-{}.tar", std::process::id()));
    let reference = workload::image::write_archive(&files, &archive)
        .map_err(|e| RunnerError::Setup(e.to_string()))?;
    let result = async {
        for container in docker.cluster_containers(&kind.name).await? {
            if !docker.is_running(&container).await? {
                continue;
            }
            let listed = docker
                .exec(
                    &container,
                    &["ctr", "-n", "k8s.io", "images", "ls", "-q"],
                    None,
                )
                .await?;
            if listed.lines().any(|l| l.trim() == reference) {
                continue;
            }
            progress.step(&format!("loading {reference} into {container}"));
            docker
                .exec(
                    &container,
                    &[
                        "ctr",
                        "-n",
                        "k8s.io",
                        "images",
                        "import",
                        "--all-platforms",
                        "-",
                    ],
                    Some(&archive),
                )
                .await?;
        }
        Ok::<(), ClusterError>(())
    }
    .await;
    let _ = std::fs::remove_file(&archive);
    result?;
    Ok((reference, true))
}

/// Plans every experiment's runs.
pub fn plan_all(experiments: &[(PathBuf, Experiment)], opts: &PlanOptions) -> Vec<PlannedRun> {
    experiments
        .iter()
        .flat_map(|(file, exp)| plan::expand(exp, file, opts))
        .collect()
}

/// Reads a run directory's `run.json` and `events.jsonl`.
pub fn load_run(dir: &Path) -> Result<(PlannedRun, Vec<Event>), RunnerError> {
    let run_json = dir.join("run.json");
    let text =
        std::fs::read_to_string(&run_json).map_err(io_err(run_json.display().to_string()))?;
    let run: PlannedRun = serde_json::from_str(&text).map_err(|e| {
        RunnerError::Setup(format!(
            "{}: not a nodedown run.json: {e}",
            run_json.display()
        ))
    })?;
    let events_path = dir.join("events.jsonl");
    let text = std::fs::read_to_string(&events_path).unwrap_or_default();
    let mut events = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(e) => events.push(e),
            // a torn last line after a crash is expected; anything else is reported
            Err(e) if i + 1 == text.lines().count() => {
                tracing::warn!("{}: ignoring torn last line: {e}", events_path.display())
            }
            Err(e) => {
                return Err(RunnerError::Setup(format!(
                    "{}:{}: not an event: {e}",
                    events_path.display(),
                    i + 1
                )))
            }
        }
    }
    Ok((run, events))
}

/// Every run directory below `out` (those holding a run.json), in plan order when known.
pub fn run_dirs(out: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![out.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if dir.join("run.json").is_file() {
            found.push(dir.clone());
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if e.path().is_dir() {
                    stack.push(e.path());
                }
            }
        }
    }
    // run.json files carry their order in `order.txt` at the top; fall back to names.
    let order: Vec<String> = std::fs::read_to_string(out.join("order.txt"))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect();
    found.sort_by_key(|d| {
        let rel = d.strip_prefix(out).unwrap_or(d).display().to_string();
        (
            order.iter().position(|o| *o == rel).unwrap_or(usize::MAX),
            rel,
        )
    });
    found
}

/// Waits for the first event matching `pred`, until `deadline`.
async fn wait_for(
    rx: &mut broadcast::Receiver<Event>,
    deadline: Instant,
    pred: impl Fn(&EventKind) -> bool,
) -> Option<Event> {
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Err(_) => return None,
            Ok(Ok(e)) if pred(&e.what) => return Some(e),
            Ok(Ok(_)) | Ok(Err(broadcast::error::RecvError::Lagged(_))) => continue,
            Ok(Err(broadcast::error::RecvError::Closed)) => return None,
        }
    }
}

fn random_suffix() -> String {
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

fn namespace_name(run: &PlannedRun) -> String {
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

/// Checks the cluster is whole before a run: every node Ready, no out-of-service taint.
async fn preflight(client: &Client, timeout: Duration) -> Result<(), String> {
    let nodes: Api<Node> = Api::all(client.clone());
    let deadline = Instant::now() + timeout;
    loop {
        let list = nodes
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let bad: Vec<String> = list
            .items
            .iter()
            .filter(|n| {
                !heal::node_is_ready(n)
                    || n.spec
                        .as_ref()
                        .and_then(|s| s.taints.as_ref())
                        .is_some_and(|t| t.iter().any(|t| t.key == OUT_OF_SERVICE_KEY))
            })
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        if bad.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "cluster not whole before the run: {} not Ready or still tainted out-of-service; run `nodedown cleanup <earlier run dir>`",
                bad.join(", ")
            ));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Runs one planned run in `dir`, healing on every exit path (error, panic, signal).
/// Returns the run's events.
pub async fn run_one(
    env: &Env,
    image: &(String, bool),
    run: &PlannedRun,
    dir: &Path,
    progress: &Progress,
) -> Result<Vec<Event>, RunnerError> {
    std::fs::create_dir_all(dir).map_err(io_err(format!("creating {}", dir.display())))?;
    let run_json = serde_json::to_string_pretty(run).expect("run serializes");
    std::fs::write(dir.join("run.json"), run_json + "\n").map_err(io_err("writing run.json"))?;
    let recorder = Arc::new(
        Recorder::create(&dir.join("events.jsonl")).map_err(io_err("creating events.jsonl"))?,
    );
    let journal = Arc::new(
        Journal::open(&dir.join("journal.jsonl")).map_err(io_err("creating journal.jsonl"))?,
    );
    recorder.record(EventKind::RunStarted {
        run: run.id.clone(),
        experiment: run.experiment.clone(),
        variant: run.variant.clone(),
        repetition: run.repetition,
    });

    let mut watchers = Vec::new();
    let body = {
        let (client, docker) = (env.client.clone(), env.docker.clone());
        let (recorder, journal, run, image, progress) = (
            recorder.clone(),
            journal.clone(),
            run.clone(),
            image.clone(),
            progress.clone(),
        );
        let run_dir = dir.to_path_buf();
        let (wtx, wrx) = tokio::sync::oneshot::channel();
        let handle = tokio::spawn(async move {
            execute(
                &client,
                docker.as_ref(),
                &recorder,
                &journal,
                &run,
                &image,
                &progress,
                &run_dir,
                wtx,
            )
            .await
        });
        (handle, wrx)
    };
    let (handle, wrx) = body;
    let abort = handle.abort_handle();
    let outcome: Result<Result<(), String>, &'static str> = tokio::select! {
        joined = handle => Ok(match joined {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(format!("harness panic: {e}")),
            Err(e) => Err(format!("run task ended: {e}")),
        }),
        signal = shutdown_signal() => { abort.abort(); Err(signal) }
    };
    if let Ok(w) = wrx.await {
        watchers = w;
    }
    // Heal whatever is pending, whatever happened.
    progress.step("healing: nodes back, taints removed, run objects deleted");
    let heal_errors = env
        .healer(run.timeouts.heal)
        .heal_all(&journal, Some(&recorder))
        .await;
    for w in watchers {
        w.abort();
    }
    let mut error = match &outcome {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e.clone()),
        Err(signal) => Some(format!("interrupted by {signal}")),
    };
    if !heal_errors.is_empty() {
        let text = heal_errors
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        error = Some(match error {
            Some(e) => format!("{e}; healing failed: {text}"),
            None => format!("healing failed: {text}"),
        });
    }
    recorder.record(EventKind::RunFinished { error });
    if let Err(signal) = outcome {
        return Err(RunnerError::Interrupted(signal));
    }
    Ok(load_run(dir)?.1)
}

async fn shutdown_signal() -> &'static str {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "SIGINT"
    }
}

/// The run itself. Errors are strings for the run's `run-finished` event.
#[allow(clippy::too_many_arguments)]
async fn execute(
    client: &Client,
    docker: Option<&DockerNodes>,
    recorder: &Arc<Recorder>,
    journal: &Journal,
    run: &PlannedRun,
    image: &(String, bool),
    progress: &Progress,
    dir: &Path,
    watchers_out: tokio::sync::oneshot::Sender<Vec<tokio::task::JoinHandle<()>>>,
) -> Result<(), String> {
    let jrec = |u: Undo| journal.record(u).map_err(|e| format!("journal: {e}"));
    preflight(client, run.timeouts.heal).await?;

    // Setup: namespace, storage, watchers, workload.
    let ns = namespace_name(run);
    let kind = run.workload.kind;
    let selector = workload::pod_selector(kind);
    progress.step(&format!("setup: namespace {ns}"));
    jrec(Undo::DeleteNamespace { name: ns.clone() })?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(&PostParams::default(), &workload::namespace(&ns, &run.id))
        .await
        .map_err(|e| format!("create namespace {ns}: {e}"))?;
    if run.workload.storage_class == workload::SHARED_CLASS {
        let pvs: Api<PersistentVolume> = Api::all(client.clone());
        jrec(Undo::RemoveDir {
            path: workload::shared_host_dir().join(&ns),
        })?;
        for i in 0..run.workload.replicas {
            let pod = format!("{}-{i}", workload::app_name(kind));
            let pv = workload::shared_volume(&ns, &pod, &run.workload.size, &run.id);
            let name = pv.metadata.name.clone().unwrap_or_default();
            jrec(Undo::DeletePersistentVolume { name: name.clone() })?;
            pvs.create(&PostParams::default(), &pv)
                .await
                .map_err(|e| format!("create PersistentVolume {name}: {e}"))?;
        }
    }
    let mut rx = recorder.subscribe();
    let watchers = observe::spawn_watchers(
        client.clone(),
        &Scope {
            namespace: ns.clone(),
            pod_selector: selector,
        },
        recorder.clone(),
    );
    let _ = watchers_out.send(watchers);
    // The ledger's acknowledgements, polled until just before its file is collected.
    let target_pod = run.fault.target.node_of.clone();
    let mut ack_poller = match kind {
        WorkloadKind::Ledger => Some(AbortOnDrop(
            observe::spawn_ack_poller(
                client.clone(),
                &ns,
                &target_pod,
                workload::LEDGER_PORT,
                &dir.join(ACKS_FILE),
                recorder.clone(),
            )
            .map_err(|e| format!("creating {ACKS_FILE}: {e}"))?,
        )),
        WorkloadKind::Writer => None,
    };
    let sts: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    sts.create(
        &PostParams::default(),
        &workload::statefulset(&run.workload, &image.0, image.1, &run.id),
    )
    .await
    .map_err(|e| format!("create StatefulSet: {e}"))?;

    // Steady state: the target pod Running and Ready.
    progress.step(&format!(
        "steady state: waiting for {target_pod} Running and Ready"
    ));
    let deadline = Instant::now() + run.timeouts.steady_state;
    let ready = wait_for(&mut rx, deadline, |e| {
        matches!(e, EventKind::Pod { pod, phase, ready: true, terminating: false, node: Some(_), .. } if *pod == target_pod && phase == "Running")
    })
    .await
    .ok_or_else(|| format!("{target_pod} not Running and Ready within the steady-state timeout ({})", humantime::format_duration(run.timeouts.steady_state)))?;
    let (old_uid, node) = match &ready.what {
        EventKind::Pod {
            uid,
            node: Some(node),
            ..
        } => (uid.clone(), node.clone()),
        _ => unreachable!("matched above"),
    };
    recorder.record(EventKind::WorkloadReady {
        pod: target_pod.clone(),
        uid: old_uid.clone(),
        node: node.clone(),
    });
    // Let the workload write for a moment before the fault.
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Inject.
    let docker =
        docker.ok_or("faults need Docker access to the node containers (kind provider)")?;
    // kind names each node container after its node; the label lookup proves it is one.
    kind_cluster_of(docker, &node).await?;
    let container = node.clone();
    let peers = if run.fault.kind == FaultKind::NetworkPartition {
        peer_addresses(client, &node).await?
    } else {
        vec![]
    };
    let fault = Fault {
        kind: run.fault.kind,
        node: node.clone(),
        container: container.clone(),
        peers,
    };
    progress.step(&format!("inject: {} on {node}", run.fault.kind.as_str()));
    jrec(Undo::HealFault {
        fault: run.fault.kind,
        container: container.clone(),
        node: node.clone(),
    })?;
    recorder.record(EventKind::FaultInjecting {
        fault: run.fault.kind.as_str().into(),
        node: node.clone(),
    });
    fault
        .apply(docker)
        .await
        .map_err(|e| format!("inject {}: {e}", run.fault.kind.as_str()))?;
    let fault_at = Instant::now();
    recorder.record(EventKind::FaultInjected {
        fault: run.fault.kind.as_str().into(),
        node: node.clone(),
    });
    let recovery_deadline = fault_at + run.timeouts.recovery;

    // Remediate, `after` the node is seen NotReady.
    if let Some(after) = run.remediation.after() {
        progress.step(&format!("observe: waiting for {node} NotReady"));
        let not_ready = wait_for(&mut rx, recovery_deadline, |e| {
            matches!(e, EventKind::NodeReady { node: n, status, .. } if *n == node && status != "True")
        })
        .await;
        if not_ready.is_some() {
            tokio::time::sleep_until((Instant::now() + after).min(recovery_deadline)).await;
            if Instant::now() < recovery_deadline {
                progress.step(&format!("remediate: {}", run.remediation.name()));
                let target = Target {
                    ns: &ns,
                    pod: &target_pod,
                    node: &node,
                    container: &container,
                };
                remediate(client, docker, journal, recorder, &run.remediation, &target).await?;
            }
        } else {
            recorder.record(EventKind::Note {
                message: format!(
                    "{node} was not seen NotReady within the recovery timeout; no remediation"
                ),
            });
        }
    }

    // Recovery: a replacement pod (new uid) Ready, or the timeout.
    progress.step(&format!("recover: waiting for a new {target_pod} Ready"));
    let recovered = wait_for(&mut rx, recovery_deadline, |e| {
        matches!(e, EventKind::Pod { pod, uid, ready: true, terminating: false, .. } if *pod == target_pod && *uid != old_uid)
    })
    .await;
    if recovered.is_none() {
        recorder.record(EventKind::RecoveryTimeout {
            after_ms: run.timeouts.recovery.as_millis() as u64,
        });
    }

    // Ledger evidence: let the writers write a little longer, stop recording acks, then copy
    // the ledger (every recorded ack precedes the copy, so each acked record must be in it).
    if let Some(poller) = ack_poller.take() {
        tokio::time::sleep(Duration::from_secs(3)).await;
        poller.stop().await;
        collect_ledger(run, &ns, &target_pod, dir, recorder).await?;
    }
    Ok(())
}

/// `acks.jsonl`: the acknowledgements the harness observed (see `observe::acks`).
pub const ACKS_FILE: &str = "acks.jsonl";
/// The ledger copied out of the workload's volume after failover.
pub const LEDGER_COPY: &str = "ledger/ledger.bin";

/// Aborts a task when dropped (on every exit path of the run).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl AbortOnDrop {
    async fn stop(mut self) {
        self.0.abort();
        let _ = (&mut self.0).await;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Copies the ledger file out of the shared storage into the run directory.
async fn collect_ledger(
    run: &PlannedRun,
    ns: &str,
    pod: &str,
    dir: &Path,
    recorder: &Recorder,
) -> Result<(), String> {
    if run.workload.storage_class != workload::SHARED_CLASS {
        recorder.record(EventKind::Note {
            message: format!(
                "ledger not collected: storage class {} is not reachable from the harness (only {} is); the integrity verdict will be unknown",
                run.workload.storage_class,
                workload::SHARED_CLASS
            ),
        });
        return Ok(());
    }
    let source = workload::shared_host_dir()
        .join(ns)
        .join(workload::claim_name(pod))
        .join(crate::workload::ledger::LEDGER_FILE);
    let target = dir.join(LEDGER_COPY);
    let (s, t) = (source.clone(), target.clone());
    let copied = tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(t.parent().expect("has a parent"))?;
        std::fs::copy(&s, &t)
    })
    .await
    .map_err(|e| format!("copying the ledger: {e}"))?
    .map_err(|e| format!("copying the ledger {}: {e}", source.display()))?;
    recorder.record(EventKind::Note {
        message: format!("ledger collected: {copied} bytes from {}", source.display()),
    });
    Ok(())
}

/// The ledger evidence of a run directory: the checker's report over the collected ledger and
/// the recorded acks. `None` when the run has no collected ledger.
pub fn load_ledger(
    dir: &Path,
) -> Result<Option<crate::report::assemble::LedgerEvidence>, RunnerError> {
    let ledger = dir.join(LEDGER_COPY);
    let acks_path = dir.join(ACKS_FILE);
    if !ledger.is_file() {
        return Ok(None);
    }
    let acks = match std::fs::File::open(&acks_path) {
        Ok(f) => crate::integrity::read_acks(std::io::BufReader::new(f))
            .map_err(|e| RunnerError::Setup(format!("{}: {e}", acks_path.display())))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => vec![],
        Err(e) => {
            return Err(RunnerError::Io {
                context: acks_path.display().to_string(),
                source: e,
            })
        }
    };
    let file = std::fs::File::open(&ledger).map_err(io_err(ledger.display().to_string()))?;
    let report = crate::integrity::check(std::io::BufReader::new(file), &acks);
    Ok(Some((report, acks)))
}

/// The kind cluster a node container belongs to (from its label).
async fn kind_cluster_of(docker: &DockerNodes, node: &str) -> Result<String, String> {
    docker.cluster_of(node).await.map_err(|e| {
        format!("node {node} is not a kind node container this harness can reach: {e}")
    })
}

/// What a remediation acts on.
struct Target<'a> {
    ns: &'a str,
    pod: &'a str,
    node: &'a str,
    container: &'a str,
}

/// The InternalIP of every other node: what a partition cuts the node off from.
async fn peer_addresses(client: &Client, node: &str) -> Result<Vec<String>, String> {
    let nodes: Api<Node> = Api::all(client.clone());
    let list = nodes
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("list nodes: {e}"))?;
    Ok(list
        .items
        .iter()
        .filter(|n| n.metadata.name.as_deref() != Some(node))
        .flat_map(|n| n.status.iter().flat_map(|s| s.addresses.iter().flatten()))
        .filter(|a| a.type_ == "InternalIP")
        .map(|a| a.address.clone())
        .collect())
}

async fn remediate(
    client: &Client,
    docker: &DockerNodes,
    journal: &Journal,
    recorder: &Recorder,
    remediation: &RemediationSpec,
    target: &Target<'_>,
) -> Result<(), String> {
    let (ns, pod, node) = (target.ns, target.pod, target.node);
    let nodes: Api<Node> = Api::all(client.clone());
    let applied = |detail: String| {
        recorder.record(EventKind::RemediationApplied {
            remediation: remediation.name().into(),
            node: node.into(),
            detail,
        });
    };
    match remediation {
        RemediationSpec::None => {}
        RemediationSpec::OutOfServiceTaint { fence, .. } => {
            if *fence {
                // Make sure the node is really off before telling the cluster it is.
                journal
                    .record(Undo::HealFault {
                        fault: FaultKind::NodeShutdown,
                        container: target.container.into(),
                        node: node.into(),
                    })
                    .map_err(|e| e.to_string())?;
                faults::fence(target.container, docker)
                    .await
                    .map_err(|e| format!("fence {node}: {e}"))?;
                recorder.record(EventKind::Note {
                    message: format!(
                        "fenced: node container {} killed and confirmed off",
                        target.container
                    ),
                });
            }
            journal
                .record(Undo::RemoveTaint {
                    node: node.into(),
                    key: OUT_OF_SERVICE_KEY.into(),
                })
                .map_err(|e| e.to_string())?;
            remediation::add_out_of_service_taint(&nodes, node)
                .await
                .map_err(|e| e.to_string())?;
            applied(format!(
                "{OUT_OF_SERVICE_KEY}={}:NoExecute",
                remediation::OUT_OF_SERVICE_VALUE
            ));
        }
        RemediationSpec::ForceDeletePod { .. } => {
            let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
            remediation::force_delete_pod(&pods, pod)
                .await
                .map_err(|e| e.to_string())?;
            applied(format!("pod {pod} deleted with grace period 0"));
        }
        RemediationSpec::DeleteNode { .. } => {
            if let Some(obj) = remediation::get_node(&nodes, node)
                .await
                .map_err(|e| e.to_string())?
            {
                let object = serde_json::to_value(&obj).map_err(|e| e.to_string())?;
                journal
                    .record(Undo::RestoreNode {
                        node: node.into(),
                        object,
                    })
                    .map_err(|e| e.to_string())?;
                remediation::delete_node(&nodes, node)
                    .await
                    .map_err(|e| e.to_string())?;
                applied(format!("Node {node} deleted"));
            }
        }
    }
    Ok(())
}
