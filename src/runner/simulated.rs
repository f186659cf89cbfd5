//! Runs on the simulated cluster (`provider: kwok`): many nodes lost at once under many
//! stateful pods, measured against the real control plane. Same journal, same healer, same
//! cluster lock as real runs; the fault backend is kwok's. What is measured is the timeline of
//! [`crate::timeline::scale`]; there is no data path, so no ledger, acks or integrity.

use crate::cluster::kwok::{self, SIMULATED_TAINT};
use crate::faults::{KwokNodeControl, NodeControl, NodeFault};
use crate::journal::{Journal, Undo};
use crate::observe::procs;
use crate::plan::PlannedRun;
use crate::remediation;
use crate::report::simulated::{SimulatedEnvironment, SimulatedResult};
use crate::spec::{FaultKind, RemediationSpec};
use crate::timeline::scale::{AffectedInstance, LostNode, ScaleObservations};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, Pod};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::api::{ListParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::vocab::{INSTANCE_LABEL, PLACING_TAINT};
/// How many API requests nodedown keeps in flight while it creates a run's objects.
const CREATE_CONCURRENCY: usize = 16;

/// What an invocation needs to reach and run the simulated cluster.
pub struct SimulatedOptions {
    pub out: PathBuf,
    pub cache_dir: PathBuf,
    pub kind_bin: Option<PathBuf>,
    pub node_image: Option<String>,
    pub quiet: bool,
    /// The simulated cluster's name over the experiment's `cluster.name` (`--cluster-name`).
    pub cluster_name: Option<String>,
    /// Its kind config over the experiment's `cluster.config` (`--kind-config`).
    pub kind_config: Option<PathBuf>,
    /// Keep a cluster this invocation created (`--retain`).
    pub retain: bool,
}

fn say(quiet: bool, started: Instant, msg: impl AsRef<str>) {
    if !quiet {
        eprintln!(
            "[{:7.1}s] {}",
            started.elapsed().as_secs_f64(),
            msg.as_ref()
        );
    }
}

/// Why a simulated invocation could not run at all (each run's own errors are in its result).
#[derive(Debug, thiserror::Error)]
pub enum SimulatedError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the simulated cluster {name}: {source}")]
    Cluster {
        name: String,
        source: crate::cluster::ClusterError,
    },
    #[error("cannot start kwok: {0}")]
    Kwok(crate::cluster::ClusterError),
    #[error(transparent)]
    Lock(#[from] crate::cluster::lock::LockError),
}

impl SimulatedError {
    /// The error of an I/O step on `path`, for `map_err`.
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SimulatedError {
        let path = path.to_path_buf();
        move |source| SimulatedError::Io { path, source }
    }

    fn cluster(name: &str, source: crate::cluster::ClusterError) -> SimulatedError {
        SimulatedError::Cluster {
            name: name.to_string(),
            source,
        }
    }
}

/// What a simulated invocation did: a result per run it started (errored runs included, with
/// their error), and what went wrong around the runs.
pub struct SimulatedInvocation {
    pub results: Vec<SimulatedResult>,
    /// Errors outside any one run (kwok exited, the final wait for namespaces, deleting the
    /// cluster): a harness error of the invocation.
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
    watches: tokio::task::JoinSet<()>,
    taints: tokio::task::JoinSet<Result<(), String>>,
}

impl RunTasks {
    async fn stop(&mut self) {
        self.taints.shutdown().await;
        self.watches.shutdown().await;
    }
}

/// Runs `runs` (all `provider: kwok`) one after the other on one simulated cluster, healing
/// each; creates the cluster when it does not exist and deletes it at the end unless `retain`.
pub async fn run_all(
    runs: Vec<PlannedRun>,
    opts: SimulatedOptions,
    interrupt: super::Interrupt,
) -> Result<SimulatedInvocation, SimulatedError> {
    let started = Instant::now();
    let first = &runs[0];
    let name = opts
        .cluster_name
        .clone()
        .or_else(|| first.cluster.name.clone())
        .unwrap_or_else(|| "nodedown-sim".into());
    let io = SimulatedError::io;
    let cluster_err = |source| SimulatedError::cluster(&name, source);
    std::fs::create_dir_all(&opts.out).map_err(io(&opts.out))?;
    let kind = crate::cluster::Kind::new(&name, opts.kind_bin.as_deref(), &opts.cache_dir);
    let local = crate::cluster::LocalCluster::Kind(kind.clone());
    let created = if kind.exists().await.map_err(cluster_err)? {
        say(
            opts.quiet,
            started,
            format!("reusing simulated cluster {name} (kind)"),
        );
        false
    } else {
        let config = match opts
            .kind_config
            .clone()
            .or_else(|| crate::spec::cluster_config_path(&first.file, &first.cluster))
        {
            Some(p) => p,
            None => {
                let p = opts.out.join("kind-simulated.yaml");
                std::fs::write(&p, kwok::DEFAULT_CONFIG).map_err(io(&p))?;
                p
            }
        };
        let image = opts
            .node_image
            .clone()
            .unwrap_or_else(|| crate::runner::default_node_image(&opts.cache_dir));
        say(
            opts.quiet,
            started,
            format!("creating simulated cluster {name}: a kind control plane ({image})"),
        );
        let docker = crate::cluster::DockerNodes::connect().map_err(cluster_err)?;
        local
            .create(&config, &image, &docker)
            .await
            .map_err(cluster_err)?;
        true
    };
    let result = run_on(&runs, &opts, &name, &local, started, interrupt).await;
    if created && !opts.retain {
        say(
            opts.quiet,
            started,
            format!(
                "deleting simulated cluster {name} (made by this invocation; --retain keeps it)"
            ),
        );
        if let Err(e) = local.delete().await {
            let e = format!("deleting the simulated cluster {name}: {e}");
            return match result {
                Ok(mut inv) => {
                    inv.errors.push(e);
                    Ok(inv)
                }
                Err(first) => Err(first),
            };
        }
    }
    result
}

async fn run_on(
    runs: &[PlannedRun],
    opts: &SimulatedOptions,
    name: &str,
    local: &crate::cluster::LocalCluster,
    started: Instant,
    interrupt: super::Interrupt,
) -> Result<SimulatedInvocation, SimulatedError> {
    let io = SimulatedError::io;
    let cluster_err = |source| SimulatedError::cluster(name, source);
    let (client, _) = crate::cluster::client_for_local(local)
        .await
        .map_err(cluster_err)?;
    let kubeconfig = opts.out.join("kubeconfig-simulated");
    let k = local.kubeconfig().await.map_err(cluster_err)?;
    write_private(&kubeconfig, &k).map_err(io(&kubeconfig))?;
    // How the cluster was reached, for `nodedown cleanup`: written before anything is changed,
    // and a hard error when it cannot be (cleanup would not find the cluster).
    let session = crate::runner::Session {
        provider: crate::spec::Provider::Kwok,
        cluster: Some(name.to_string()),
        context: None,
        profile: None,
        power_hooks: None,
        node_control: None,
        test_nodes: false,
    };
    let session_path = opts.out.join(crate::store::SESSION_FILE);
    std::fs::write(
        &session_path,
        serde_json::to_string_pretty(&session).expect("a session serializes"),
    )
    .map_err(io(&session_path))?;
    let out_abs = std::fs::canonicalize(&opts.out).unwrap_or_else(|_| opts.out.clone());
    let lock = crate::cluster::lock::acquire(&client, &out_abs, |s| say(opts.quiet, started, s))
        .await
        .map_err(SimulatedError::Lock)?;
    let lost = lock.lost();
    let stopper = interrupt.clone();
    let watch_lock = tokio::spawn(async move {
        let why = lost.await;
        stopper.stop(super::Stop::LockLost(why));
    });
    let bin = kwok::kwok_bin(&opts.cache_dir);
    let mut kwok = match kwok::Kwok::start(&bin, &kubeconfig, &opts.out, "kwok.log").await {
        Ok(k) => k,
        Err(e) => {
            watch_lock.abort();
            lock.release().await;
            return Err(SimulatedError::Kwok(e));
        }
    };
    let kwok_version = kwok::version(&bin).await;
    say(
        opts.quiet,
        started,
        format!(
            "kwok {} ({kwok_version}) started (log {})",
            bin.display(),
            kwok.log.display()
        ),
    );
    let cp = format!("{name}-control-plane");
    let container = match crate::cluster::DockerNodes::connect() {
        Ok(d) => d.container_id(&cp).await.ok().flatten(),
        Err(_) => None,
    };
    let kubernetes = client
        .apiserver_version()
        .await
        .map(|v| v.git_version)
        .unwrap_or_default();
    let mut inv = SimulatedInvocation {
        results: Vec::new(),
        errors: Vec::new(),
        interrupted: false,
    };
    for run in runs {
        if interrupt.first().is_some() {
            break;
        }
        if !kwok.alive() {
            inv.errors
                .push(format!("kwok exited; its log: {}", kwok.log.display()));
            break;
        }
        let ctx = RunContext {
            client: client.clone(),
            out: opts.out.join(&run.id),
            quiet: opts.quiet,
            started,
            kubernetes: kubernetes.clone(),
            cluster: name.to_string(),
            container: container.clone(),
            kwok_pid: kwok.pid(),
            kwok_started: kwok.started,
            kwok_version: kwok_version.clone(),
        };
        let mut tasks = RunTasks::default();
        let outcome = tokio::select! {
            r = run_one(run, &ctx, &mut tasks) => r,
            stop = interrupt.wait() => Err(format!("interrupted: {stop}")),
        };
        // Nothing of the run's may act after this point: then heal what the journal says.
        tasks.stop().await;
        let mut heal_errors = Vec::new();
        let healer = super::heal::Healer {
            client: client.clone(),
            controls: vec![Arc::new(KwokNodeControl::new(client.clone())) as Arc<dyn NodeControl>],
            node_timeout: run.timeouts.heal,
        };
        let journal_path = ctx.out.join(crate::store::JOURNAL_FILE);
        if journal_path.exists() {
            say(
                opts.quiet,
                started,
                format!(
                    "{} healing: nodes back, taints removed, run objects deleted",
                    run.id
                ),
            );
            match Journal::open(&journal_path) {
                Ok(j) => {
                    let (_, errors) = healer.heal_all(&j, None).await;
                    heal_errors.extend(errors.iter().map(|e| e.to_string()));
                }
                Err(e) => heal_errors.push(format!("{}: {e}", journal_path.display())),
            }
        }
        let result = match outcome {
            Ok(result) if heal_errors.is_empty() => result,
            Ok(mut result) => {
                // The figures stand; the run did not complete: its heal failed.
                result.error = Some(format!("healing failed: {}", heal_errors.join("; ")));
                crate::report::simulated::recompute(&result)
            }
            Err(mut error) => {
                // A run that could not go on has no figures of its own (its result says why).
                if !heal_errors.is_empty() {
                    error.push_str(&format!("; healing failed: {}", heal_errors.join("; ")));
                }
                ctx.finish(
                    run,
                    ScaleObservations::default(),
                    Partial::default(),
                    Some(error),
                )
            }
        };
        match &result.error {
            Some(e) => eprintln!("error: {}: {e}", run.id),
            None => say(
                opts.quiet,
                started,
                format!("{}: {}", run.id, result.verdict.as_str()),
            ),
        }
        if let Err(e) = ctx.write(&result) {
            inv.errors.push(e);
        }
        inv.results.push(result);
    }
    inv.interrupted = interrupt.first().is_some();
    // The runs' namespaces finish terminating while kwok still answers for the nodes their
    // pods were on; the invocation ends with the cluster as it found it.
    if let Err(e) = crate::runner::wait_namespaces_gone(&client).await {
        inv.errors.push(e.to_string());
    }
    drop(kwok);
    watch_lock.abort();
    lock.release().await;
    Ok(inv)
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
    quiet: bool,
    started: Instant,
    kubernetes: String,
    cluster: String,
    container: Option<String>,
    kwok_pid: Option<u32>,
    kwok_started: SystemTime,
    kwok_version: String,
}

/// The figures of a run besides its observations, as far as it got.
#[derive(Default)]
struct Partial {
    nodes: usize,
    lost_nodes: Option<usize>,
    t0: Option<SystemTime>,
    cost: Vec<crate::timeline::scale::Usage>,
    events_seen: u64,
}

impl RunContext {
    /// The run's result from what it observed: milestones, taint reaction and the verdict of
    /// [`crate::verdict::simulated`] (`error`: why it could not complete).
    fn finish(
        &self,
        run: &PlannedRun,
        observations: ScaleObservations,
        partial: Partial,
        error: Option<String>,
    ) -> SimulatedResult {
        let tainted = matches!(run.remediation, RemediationSpec::OutOfServiceTaint { .. });
        let planned_lost = if run.fault.target.nodes.is_empty() {
            run.fault.target.count.unwrap_or(1) as usize
        } else {
            run.fault.target.nodes.len()
        };
        let recorded = SimulatedResult {
            tool: format!("nodedown {}", env!("CARGO_PKG_VERSION")),
            run: run.id.clone(),
            experiment: run.experiment.clone(),
            variant: run.variant.clone(),
            repetition: run.repetition,
            environment: SimulatedEnvironment {
                simulated: true,
                kubernetes: self.kubernetes.clone(),
                nodes: partial.nodes,
                kwok: self.kwok_version.clone(),
                kwok_lease_seconds: kwok::LEASE_SECONDS,
                cluster: self.cluster.clone(),
            },
            lost_nodes: partial.lost_nodes.unwrap_or(planned_lost),
            instances: if observations.instances.is_empty() {
                run.workload.instances as usize
            } else {
                observations.instances.len()
            },
            remediation: if tainted {
                "out-of-service-taint"
            } else {
                "none"
            }
            .into(),
            verdict: crate::verdict::Verdict::Unknown,
            expectations: vec![],
            error,
            time_zero: partial
                .t0
                .map(|t0| humantime::format_rfc3339_millis(t0).to_string()),
            milestones: vec![],
            taint_reaction: None,
            cost: partial.cost,
            events_seen: partial.events_seen,
            observations,
            spec: Some(run.clone()),
        };
        // Figures and verdict by the one rule `nodedown report` applies to the directory.
        crate::report::simulated::recompute(&recorded)
    }

    /// Writes the run's results.json and summary.md.
    fn write(&self, result: &SimulatedResult) -> Result<(), String> {
        std::fs::create_dir_all(&self.out).map_err(|e| format!("{}: {e}", self.out.display()))?;
        let put = |name: &str, text: String| {
            let p = self.out.join(name);
            std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
        };
        put(
            crate::store::RESULTS_FILE,
            serde_json::to_string_pretty(result).expect("a result serializes"),
        )?;
        put("summary.md", crate::report::simulated::run_markdown(result))
    }
}

/// The namespace of a simulated run: its id as a DNS label.
fn namespace_of(run: &PlannedRun) -> String {
    let slug: String = run
        .id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let mut ns = format!("nd-{slug}");
    ns.truncate(63);
    ns.trim_end_matches('-').to_string()
}

/// Instance `j`'s StatefulSet: one pod that must land on `node` first (preferred affinity, so
/// its replacement may go anywhere), tolerating the simulated nodes' taint, with a claim
/// pre-bound to its attaching volume.
pub fn instance_statefulset(
    ns: &str,
    instance: &str,
    node: &str,
    size: &str,
    mode: &str,
) -> StatefulSet {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": instance, "namespace": ns},
        "spec": {
            "replicas": 1,
            "serviceName": instance,
            "selector": {"matchLabels": {INSTANCE_LABEL: instance}},
            "template": {
                "metadata": {"labels": {INSTANCE_LABEL: instance}},
                "spec": {
                    "tolerations": [{"key": SIMULATED_TAINT, "operator": "Exists", "effect": "NoSchedule"}],
                    "affinity": {"nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                            {"matchExpressions": [{"key": crate::faults::kwok::SIMULATED_LABEL, "operator": "In", "values": ["true"]}]}
                        ]},
                        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": {
                            "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]
                        }}]
                    }},
                    // Never pulled or run: kwok simulates the container.
                    "containers": [{"name": "ledger", "image": "nodedown.invalid/simulated:none"}]
                }
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": [mode],
                    "storageClassName": crate::workload::ATTACH_CLASS,
                    "resources": {"requests": {"storage": size}}
                }
            }]
        }
    }))
    .expect("a valid StatefulSet")
}

/// The live state the watches keep during a run.
#[derive(Default)]
struct Live {
    lost: HashMap<String, NodeSeen>,
    /// Instance name → what is known of it.
    instances: HashMap<String, InstanceSeen>,
    /// PersistentVolume name → instance name.
    by_volume: HashMap<String, String>,
    events: u64,
    /// Nodes seen NotReady, for the taint reaction (taken by the remediation loop).
    newly_not_ready: Vec<String>,
    /// Wakes the remediation loop as soon as a node is seen NotReady: the taint reaction is one
    /// watch delivery and one write, not a polling period.
    not_ready_seen: Arc<tokio::sync::Notify>,
}

#[derive(Default, Clone)]
struct NodeSeen {
    not_ready: Option<SystemTime>,
    unreachable: Option<SystemTime>,
    tainted: Option<SystemTime>,
}

#[derive(Clone)]
struct InstanceSeen {
    node: String,
    old_uid: String,
    deleted: Option<SystemTime>,
    detached: Option<SystemTime>,
    running: Option<SystemTime>,
    attached: Option<SystemTime>,
}

fn ms_after(t0: SystemTime, t: Option<SystemTime>) -> Option<u64> {
    t.map(|t| t.duration_since(t0).unwrap_or_default().as_millis() as u64)
}

impl Live {
    fn on_node(&mut self, n: &Node, now: SystemTime) {
        let Some(name) = n.metadata.name.as_deref() else {
            return;
        };
        let Some(seen) = self.lost.get_mut(name) else {
            return;
        };
        if seen.not_ready.is_none() && !crate::observe::node_is_ready(n) {
            seen.not_ready = Some(now);
            self.newly_not_ready.push(name.to_string());
            self.not_ready_seen.notify_one();
        }
        let unreachable = n
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .is_some_and(|t| {
                t.iter()
                    .any(|t| t.key == "node.kubernetes.io/unreachable" && t.effect == "NoExecute")
            });
        if unreachable && seen.unreachable.is_none() {
            seen.unreachable = Some(now);
        }
    }

    fn on_pod(&mut self, p: &Pod, deleted: bool, now: SystemTime) {
        let Some(instance) = p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(INSTANCE_LABEL))
        else {
            return;
        };
        let Some(seen) = self.instances.get_mut(instance) else {
            return;
        };
        let uid = p.metadata.uid.as_deref().unwrap_or_default();
        if uid == seen.old_uid {
            if deleted && seen.deleted.is_none() {
                seen.deleted = Some(now);
            }
            return;
        }
        let node = p.spec.as_ref().and_then(|s| s.node_name.as_deref());
        let running = p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        if !deleted && running && node.is_some_and(|n| n != seen.node) && seen.running.is_none() {
            seen.running = Some(now);
        }
    }

    fn on_attachment(&mut self, va: &VolumeAttachment, deleted: bool, now: SystemTime) {
        let Some(pv) = va.spec.source.persistent_volume_name.as_deref() else {
            return;
        };
        let Some(instance) = self.by_volume.get(pv) else {
            return;
        };
        let Some(seen) = self.instances.get_mut(instance) else {
            return;
        };
        if va.spec.node_name == seen.node {
            if deleted && seen.detached.is_none() {
                seen.detached = Some(now);
            }
        } else if !deleted
            && va.status.as_ref().is_some_and(|s| s.attached)
            && seen.attached.is_none()
        {
            seen.attached = Some(now);
        }
    }

    fn all_back(&self) -> bool {
        self.instances
            .values()
            .all(|i| i.running.is_some() && i.attached.is_some())
    }

    fn observations(&self, t0: SystemTime) -> ScaleObservations {
        let mut nodes: Vec<LostNode> = self
            .lost
            .iter()
            .map(|(name, s)| LostNode {
                name: name.clone(),
                not_ready_ms: ms_after(t0, s.not_ready),
                unreachable_taint_ms: ms_after(t0, s.unreachable),
                out_of_service_taint_ms: ms_after(t0, s.tainted),
            })
            .collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        let mut instances: Vec<AffectedInstance> = self
            .instances
            .iter()
            .map(|(name, s)| AffectedInstance {
                name: name.clone(),
                node: s.node.clone(),
                pod_deleted_ms: ms_after(t0, s.deleted),
                volume_detached_ms: ms_after(t0, s.detached),
                replacement_running_ms: ms_after(t0, s.running),
                volume_attached_ms: ms_after(t0, s.attached),
            })
            .collect();
        instances.sort_by(|a, b| a.name.cmp(&b.name));
        ScaleObservations { nodes, instances }
    }
}

async fn run_one(
    run: &PlannedRun,
    ctx: &RunContext,
    tasks: &mut RunTasks,
) -> Result<SimulatedResult, String> {
    let say = |m: String| say(ctx.quiet, ctx.started, format!("{} {m}", run.id));
    std::fs::create_dir_all(&ctx.out).map_err(|e| format!("{}: {e}", ctx.out.display()))?;
    let journal = Journal::open(&ctx.out.join("journal.jsonl")).map_err(|e| e.to_string())?;
    let client = &ctx.client;
    let node_count = run
        .cluster
        .simulated_nodes
        .unwrap_or(crate::spec::simulated::DEFAULT_SIMULATED_NODES);
    let lost_count = if run.fault.target.nodes.is_empty() {
        run.fault.target.count.unwrap_or(1)
    } else {
        run.fault.target.nodes.len() as u32
    } as usize;
    say(format!("simulated nodes: {node_count}"));
    let store = PathBuf::from(kwok::HOST_DIR).join("csi");
    let names = kwok::ensure_nodes(
        client,
        node_count,
        crate::workload::ATTACH_DRIVER,
        Some(&store),
    )
    .await
    .map_err(|e| format!("simulated nodes: {e}"))?;
    wait_nodes_ready(client, &names, ctx.kwok_started, Duration::from_secs(240)).await?;
    let lost: Vec<String> = if run.fault.target.nodes.is_empty() {
        names[..lost_count].to_vec()
    } else {
        run.fault.target.nodes.clone()
    };

    // Placement: the scheduler scores only a sample of a large cluster's nodes, so a preferred
    // affinity alone does not hold at 200 nodes (first try: 4 of 20 pods elsewhere). The other
    // simulated nodes are tainted NoSchedule while the instances are placed (journaled, removed
    // again before the fault), so the lost nodes are the only feasible ones.
    let nodes_api: Api<Node> = Api::all(client.clone());
    let others: Vec<&String> = names.iter().filter(|n| !lost.contains(n)).collect();
    say(format!(
        "placing: tainting the {} other simulated nodes {PLACING_TAINT}:NoSchedule meanwhile",
        others.len()
    ));
    for node in &others {
        journal
            .record(Undo::RemoveTaint {
                node: (*node).clone(),
                key: PLACING_TAINT.into(),
            })
            .map_err(|e| e.to_string())?;
    }
    futures::stream::iter(others.iter().map(|node| {
        let nodes_api = nodes_api.clone();
        async move {
            remediation::add_taint(&nodes_api, node, PLACING_TAINT, "true", "NoSchedule").await
        }
    }))
    .buffer_unordered(CREATE_CONCURRENCY)
    .try_collect::<Vec<_>>()
    .await
    .map_err(|e| format!("placing taint: {e}"))?;

    // The run's objects, each journaled before it is made.
    let ns = namespace_of(run);
    journal
        .record(Undo::DeleteNamespace { name: ns.clone() })
        .map_err(|e| e.to_string())?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &crate::workload::namespace(&ns, &run.id),
        )
        .await
        .map_err(|e| format!("namespace {ns}: {e}"))?;
    let n = run.workload.instances as usize;
    let mode = run.workload.access_mode;
    say(format!(
        "placing {n} instances on {} node(s) (a StatefulSet, a claim and an attaching volume each)",
        lost.len()
    ));
    let plan: Vec<(String, String)> = (0..n)
        .map(|j| (format!("i{j:04}"), lost[j % lost.len()].clone()))
        .collect();
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let stss: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    let mut by_volume = HashMap::new();
    for (instance, _) in &plan {
        let pv = crate::workload::attach_volume(
            &ns,
            &format!("{instance}-0"),
            &run.workload.size,
            mode,
            &run.id,
        );
        let pv_name = pv.metadata.name.clone().unwrap_or_default();
        journal
            .record(Undo::DeletePersistentVolume {
                name: pv_name.clone(),
            })
            .map_err(|e| e.to_string())?;
        by_volume.insert(pv_name, instance.clone());
    }
    futures::stream::iter(plan.iter().map(|(instance, node)| {
        let pvs = pvs.clone();
        let stss = stss.clone();
        let ns = ns.clone();
        let size = run.workload.size.clone();
        async move {
            let pv =
                crate::workload::attach_volume(&ns, &format!("{instance}-0"), &size, mode, &run.id);
            pvs.create(&PostParams::default(), &pv).await?;
            stss.create(
                &PostParams::default(),
                &instance_statefulset(&ns, instance, node, &size, mode.as_str()),
            )
            .await?;
            Ok::<(), kube::Error>(())
        }
    }))
    .buffer_unordered(CREATE_CONCURRENCY)
    .try_collect::<Vec<()>>()
    .await
    .map_err(|e| format!("creating the instances: {e}"))?;

    // Steady state: every pod Running on its node with its volume attached there.
    let placed = wait_steady(
        client,
        &ns,
        &plan,
        &by_volume,
        run.timeouts.steady_state,
        &say,
    )
    .await?;
    futures::stream::iter(others.iter().map(|node| {
        let nodes_api = nodes_api.clone();
        async move { remediation::remove_taint(&nodes_api, node, PLACING_TAINT).await }
    }))
    .buffer_unordered(CREATE_CONCURRENCY)
    .try_collect::<Vec<_>>()
    .await
    .map_err(|e| format!("removing the placing taint: {e}"))?;
    let per_node = {
        let mut c: HashMap<&str, usize> = HashMap::new();
        for (node, _) in placed.values() {
            *c.entry(node.as_str()).or_default() += 1;
        }
        let (lo, hi) = (
            c.values().min().copied().unwrap_or(0),
            c.values().max().copied().unwrap_or(0),
        );
        format!("{lo}–{hi} pods per lost node")
    };
    say(format!("placed: {per_node}; placing taints removed"));

    // The watches, started before the fault.
    let live = Arc::new(Mutex::new(Live {
        lost: lost
            .iter()
            .map(|n| (n.clone(), NodeSeen::default()))
            .collect(),
        instances: placed
            .iter()
            .map(|(instance, (node, uid))| {
                (
                    instance.clone(),
                    InstanceSeen {
                        node: node.clone(),
                        old_uid: uid.clone(),
                        deleted: None,
                        detached: None,
                        running: None,
                        attached: None,
                    },
                )
            })
            .collect(),
        by_volume,
        ..Default::default()
    }));
    spawn_watches(&mut tasks.watches, client.clone(), ns.clone(), live.clone());

    // Cost: sampled from the fault to the end of the recovery.
    let cp_comms = [
        "kube-apiserver",
        "etcd",
        "kube-controller",
        "kube-scheduler",
    ];
    let sample = |container: &Option<String>| {
        container
            .as_deref()
            .map(|c| procs::in_container(c, &cp_comms))
            .unwrap_or_default()
    };
    let before_cp = sample(&ctx.container);
    let before_kwok = ctx.kwok_pid.and_then(procs::of_pid).unwrap_or_default();
    let (before_self, _) = procs::own();
    let events_before = live.lock().unwrap().events;
    let stretch = Instant::now();

    // The fault: each node's heal journaled before it is applied, then all at once.
    let control = KwokNodeControl::new(client.clone());
    // With the out-of-service taint, its removal is journaled here too, before the fault (a
    // taint never applied is removed as a no-op): the reaction to a node seen NotReady is then
    // the write alone, with no journal sync in its path.
    let tainting = matches!(run.remediation, RemediationSpec::OutOfServiceTaint { .. });
    let mut undos: Vec<Undo> = lost
        .iter()
        .map(|node| Undo::HealFault {
            backend: crate::vocab::Backend::Kwok,
            fault: FaultKind::NodeShutdown,
            node: node.clone(),
        })
        .collect();
    if tainting {
        undos.extend(lost.iter().map(|node| Undo::RemoveTaint {
            node: node.clone(),
            key: remediation::OUT_OF_SERVICE_KEY.into(),
        }));
    }
    journal.record_all(undos).map_err(|e| e.to_string())?;
    say(format!(
        "inject: node-shutdown (kwok) on {} node(s)",
        lost.len()
    ));
    let applied = futures::future::join_all(lost.iter().map(|node| {
        let control = control.clone();
        async move {
            control
                .apply(&NodeFault {
                    kind: FaultKind::NodeShutdown,
                    node: node.clone(),
                    peers: vec![],
                    lease: None,
                    graceful: false,
                    pod: None,
                })
                .await
        }
    }))
    .await;
    let mut t0: Option<SystemTime> = None;
    for a in applied {
        let effect = a.map_err(|e| e.to_string())?;
        t0 = Some(t0.map_or(effect.at, |t: SystemTime| t.min(effect.at)));
    }
    let t0 = t0.expect("at least one node");

    // The remediation: nodedown taints each node as soon as it sees it NotReady.
    let taint_after = match &run.remediation {
        RemediationSpec::OutOfServiceTaint { after, .. } => Some(*after),
        _ => None,
    };
    let nodes_api: Api<Node> = Api::all(client.clone());
    let not_ready_seen = live.lock().unwrap().not_ready_seen.clone();
    let deadline = Instant::now() + run.timeouts.recovery;
    let mut peak: HashMap<String, u64> = HashMap::new();
    let mut last_sample = Instant::now();
    say(
        "recover: waiting for every instance's replacement Running with its volume attached".into(),
    );
    loop {
        let (ready_nodes, back) = {
            let mut l = live.lock().unwrap();
            (std::mem::take(&mut l.newly_not_ready), l.all_back())
        };
        if let Some(after) = taint_after {
            // Each taint's undo was journaled before the fault: nothing but the write is left.
            for node in ready_nodes {
                let nodes_api = nodes_api.clone();
                let live = live.clone();
                tasks.taints.spawn(async move {
                    tokio::time::sleep(after).await;
                    let r = remediation::append_out_of_service_taint(&nodes_api, &node).await;
                    if r.is_ok() {
                        if let Some(s) = live.lock().unwrap().lost.get_mut(&node) {
                            s.tainted = Some(SystemTime::now());
                        }
                    }
                    r.map(|_| ()).map_err(|e| format!("taint {node}: {e}"))
                });
            }
        }
        if back || Instant::now() >= deadline {
            break;
        }
        if last_sample.elapsed() >= Duration::from_secs(2) {
            for (k, u) in sample(&ctx.container) {
                let p = peak.entry(k).or_default();
                *p = (*p).max(u.rss_kib);
            }
            last_sample = Instant::now();
        }
        tokio::select! {
            _ = not_ready_seen.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
    let seconds = stretch.elapsed().as_secs_f64();
    let after_cp = sample(&ctx.container);
    let after_kwok = ctx.kwok_pid.and_then(procs::of_pid).unwrap_or_default();
    let (after_self, self_hwm) = procs::own();
    let mut cost: Vec<procs::Usage> = after_cp
        .iter()
        .map(|(k, a)| {
            let b = before_cp.get(k).copied().unwrap_or_default();
            procs::usage(k, b, *a, peak.get(k).copied().unwrap_or(0), seconds)
        })
        .collect();
    if ctx.kwok_pid.is_some() {
        cost.push(procs::usage("kwok", before_kwok, after_kwok, 0, seconds));
    }
    cost.push(procs::usage(
        "nodedown",
        before_self,
        after_self,
        self_hwm,
        seconds,
    ));
    let mut harness_errors = Vec::new();
    while let Some(t) = tasks.taints.join_next().await {
        match t {
            Ok(Ok(())) => {}
            Ok(Err(e)) => harness_errors.push(e),
            Err(e) => harness_errors.push(e.to_string()),
        }
    }
    // Let the watches drain what has already happened.
    tokio::time::sleep(Duration::from_millis(500)).await;
    tasks.watches.shutdown().await;
    let (observations, events_seen) = {
        let l = live.lock().unwrap();
        (l.observations(t0), l.events - events_before)
    };
    let partial = Partial {
        nodes: names.len(),
        lost_nodes: Some(lost.len()),
        t0: Some(t0),
        cost,
        events_seen,
    };
    let error = (!harness_errors.is_empty()).then(|| harness_errors.join("; "));
    let result = ctx.finish(run, observations, partial, error);
    Ok(result)
}

/// Waits until every simulated node is Ready and its Lease was renewed since `since` (by this
/// invocation's kwok: a Lease a previous kwok held is taken over only once it expired, and a
/// node whose Lease nobody renews goes NotReady under the run).
async fn wait_nodes_ready(
    client: &Client,
    names: &[String],
    since: SystemTime,
    timeout: Duration,
) -> Result<(), String> {
    use k8s_openapi::api::coordination::v1::Lease;
    let nodes: Api<Node> = Api::all(client.clone());
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let since = k8s_openapi::jiff::Timestamp::try_from(since).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + timeout;
    loop {
        let list = nodes
            .list(
                &ListParams::default()
                    .labels(&format!("{}=true", crate::faults::kwok::SIMULATED_LABEL)),
            )
            .await
            .map_err(|e| e.to_string())?;
        let ready = list
            .items
            .iter()
            .filter(|n| {
                names
                    .iter()
                    .any(|x| Some(x.as_str()) == n.metadata.name.as_deref())
            })
            .filter(|n| crate::observe::node_is_ready(n))
            .count();
        let renewed = leases
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .iter()
            .filter(|l| {
                names
                    .iter()
                    .any(|x| Some(x.as_str()) == l.metadata.name.as_deref())
            })
            .filter(|l| {
                l.spec
                    .as_ref()
                    .and_then(|s| s.renew_time.as_ref())
                    .is_some_and(|t| t.0 > since)
            })
            .count();
        if ready == names.len() && renewed == names.len() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{ready} of {} simulated nodes Ready, {renewed} Leases renewed by this kwok, after {} (kwok takes a node over once its old Lease expired, {} s)",
                names.len(),
                crate::units::fmt_duration(timeout),
                kwok::LEASE_SECONDS
            ));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// Waits until every instance's pod is Running on its planned node with its volume attached
/// there; returns instance → (node, pod uid).
async fn wait_steady(
    client: &Client,
    ns: &str,
    plan: &[(String, String)],
    by_volume: &HashMap<String, String>,
    timeout: Duration,
    say: &impl Fn(String),
) -> Result<HashMap<String, (String, String)>, String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let vas: Api<VolumeAttachment> = Api::all(client.clone());
    let lost_nodes: std::collections::HashSet<&str> =
        plan.iter().map(|(_, n)| n.as_str()).collect();
    let deadline = Instant::now() + timeout;
    let mut last_said = Instant::now();
    loop {
        let list = pods
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let mut placed = HashMap::new();
        let mut misplaced = Vec::new();
        for p in &list.items {
            let Some(instance) = p
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(INSTANCE_LABEL))
            else {
                continue;
            };
            let node = p
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default();
            let running = p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
            if !running {
                continue;
            }
            if lost_nodes.contains(node.as_str()) {
                placed.insert(
                    instance.clone(),
                    (node, p.metadata.uid.clone().unwrap_or_default()),
                );
            } else {
                misplaced.push(format!("{instance} on {node}"));
            }
        }
        if !misplaced.is_empty() {
            return Err(format!(
                "{} instance(s) not on a node to be lost ({}): the placing taint did not hold",
                misplaced.len(),
                misplaced
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        let attached = vas
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter(|va| va.status.as_ref().is_some_and(|s| s.attached))
            .filter(|va| {
                va.spec
                    .source
                    .persistent_volume_name
                    .as_ref()
                    .and_then(|pv| by_volume.get(pv))
                    .is_some_and(|i| {
                        placed
                            .get(i)
                            .is_some_and(|(node, _)| *node == va.spec.node_name)
                    })
            })
            .count();
        if placed.len() == plan.len() && attached == plan.len() {
            say(format!(
                "steady state: {} pods Running, {attached} volumes attached",
                placed.len()
            ));
            return Ok(placed);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "steady state not reached in {}: {} of {} pods Running on their node, {attached} volumes attached",
                crate::units::fmt_duration(timeout),
                placed.len(),
                plan.len()
            ));
        }
        if last_said.elapsed() >= Duration::from_secs(10) {
            say(format!(
                "steady state: {} of {} pods Running, {attached} volumes attached",
                placed.len(),
                plan.len()
            ));
            last_said = Instant::now();
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The three watches of a run, feeding `live` with the instant each event was seen.
fn spawn_watches(
    set: &mut tokio::task::JoinSet<()>,
    client: Client,
    ns: String,
    live: Arc<Mutex<Live>>,
) {
    set.spawn(async move {
        let nodes: Api<Node> = Api::all(client.clone());
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        let vas: Api<VolumeAttachment> = Api::all(client.clone());
        let node_cfg = watcher::Config::default()
            .labels(&format!("{}=true", crate::faults::kwok::SIMULATED_LABEL));
        let l1 = live.clone();
        let w1 = watcher(nodes, node_cfg).for_each(move |e| {
            let now = SystemTime::now();
            let mut l = l1.lock().unwrap();
            l.events += 1;
            match e {
                Ok(watcher::Event::Apply(n)) | Ok(watcher::Event::InitApply(n)) => {
                    l.on_node(&n, now)
                }
                _ => {}
            }
            futures::future::ready(())
        });
        let l2 = live.clone();
        let w2 = watcher(pods, watcher::Config::default()).for_each(move |e| {
            let now = SystemTime::now();
            let mut l = l2.lock().unwrap();
            l.events += 1;
            match e {
                Ok(watcher::Event::Apply(p)) | Ok(watcher::Event::InitApply(p)) => {
                    l.on_pod(&p, false, now)
                }
                Ok(watcher::Event::Delete(p)) => l.on_pod(&p, true, now),
                _ => {}
            }
            futures::future::ready(())
        });
        let l3 = live;
        let w3 = watcher(vas, watcher::Config::default()).for_each(move |e| {
            let now = SystemTime::now();
            let mut l = l3.lock().unwrap();
            l.events += 1;
            match e {
                Ok(watcher::Event::Apply(v)) | Ok(watcher::Event::InitApply(v)) => {
                    l.on_attachment(&v, false, now)
                }
                Ok(watcher::Event::Delete(v)) => l.on_attachment(&v, true, now),
                _ => {}
            }
            futures::future::ready(())
        });
        futures::join!(w1, w2, w3);
    });
}

/// Starts kwok for `nodedown cleanup` of a simulated run: the nodes it heals come back only
/// while kwok renews their Leases.
pub async fn start_kwok_for(
    env: &crate::runner::Env,
    dir: &Path,
    cache_dir: &Path,
) -> Result<kwok::Kwok, String> {
    let yaml = env
        .local_kubeconfig()
        .await
        .ok_or("the simulated cluster is not a local one")?
        .map_err(|e| e.to_string())?;
    let path = dir.join("kubeconfig-simulated");
    write_private(&path, &yaml).map_err(|e| format!("{}: {e}", path.display()))?;
    kwok::Kwok::start(&kwok::kwok_bin(cache_dir), &path, dir, "kwok-cleanup.log")
        .await
        .map_err(|e| e.to_string())
}
