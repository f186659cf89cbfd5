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
use crate::spec::{FaultKind, RemediationSpec};
use crate::timeline::scale::{
    AffectedInstance, LostNode, MilestoneFigure, Reaction, ScaleObservations,
};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, Pod};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::api::{ListParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Label on the simulated workload's pods: their instance (StatefulSet) name.
const INSTANCE_LABEL: &str = crate::workload::INSTANCE_LABEL;
/// The taint that keeps the instances off the nodes that will not be lost while they are placed.
const PLACING_TAINT: &str = "nodedown.dev/placing";
/// How many API requests nodedown keeps in flight while it creates a run's objects.
const CREATE_CONCURRENCY: usize = 16;

/// The banner every report of a simulated run carries.
pub const BANNER: &str = "SIMULATED: kwok's nodes and pods against a real control plane (API server, etcd, controller-manager, scheduler, external-attacher). Control-plane timings only: no kubelet, no container, no data path, no integrity verdict.";

/// The result of one simulated run (`results.json` in its directory).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SimulatedResult {
    pub tool: String,
    pub run: String,
    pub experiment: String,
    pub variant: String,
    pub repetition: u32,
    pub environment: SimulatedEnvironment,
    /// The curve's coordinates: nodes lost at once and the instances (pods with an attaching
    /// volume) placed on them.
    pub lost_nodes: usize,
    pub instances: usize,
    pub remediation: String,
    /// `pass`, `fail` or `unknown` (a harness problem), from `expect.recovered` and
    /// `expect.timeToReady` only.
    pub verdict: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// UTC time zero (the fault applied to the first lost node), RFC 3339.
    pub time_zero: String,
    pub milestones: Vec<MilestoneFigure>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taint_reaction: Option<Reaction>,
    /// Control-plane processes, kwok and nodedown from the fault to the end of the recovery.
    pub cost: Vec<procs::Usage>,
    /// Watch events nodedown processed during that stretch (nodes, pods, VolumeAttachments).
    pub events_seen: u64,
    pub observations: ScaleObservations,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SimulatedEnvironment {
    /// Always true: every figure of this run is from simulated nodes.
    pub simulated: bool,
    pub kubernetes: String,
    /// Simulated nodes in the cluster during the run.
    pub nodes: usize,
    pub kwok: String,
    pub kwok_lease_seconds: u32,
    pub cluster: String,
}

/// What an invocation needs to reach and run the simulated cluster.
pub struct SimulatedOptions {
    pub out: PathBuf,
    pub cache_dir: PathBuf,
    pub kind_bin: Option<PathBuf>,
    pub node_image: Option<String>,
    pub quiet: bool,
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

/// Runs `runs` (all `provider: kwok`) one after the other on one simulated cluster; the exit code.
pub async fn run_all(
    runs: Vec<PlannedRun>,
    opts: SimulatedOptions,
    interrupt: super::Interrupt,
) -> u8 {
    use crate::cli::exit::{EXIT_EXPECTATION_FAILED, EXIT_HARNESS, EXIT_INTERRUPTED, EXIT_OK};
    let started = Instant::now();
    let first = &runs[0];
    let name = first
        .cluster
        .name
        .clone()
        .unwrap_or_else(|| "nodedown-sim".into());
    if let Err(e) = std::fs::create_dir_all(&opts.out) {
        eprintln!("error: cannot create {}: {e}", opts.out.display());
        return EXIT_HARNESS;
    }
    let kind = crate::cluster::Kind::new(&name, opts.kind_bin.as_deref(), &opts.cache_dir);
    let local = crate::cluster::LocalCluster::Kind(kind.clone());
    match kind.exists().await {
        Ok(true) => say(
            opts.quiet,
            started,
            format!("reusing simulated cluster {name} (kind)"),
        ),
        Ok(false) => {
            let config = match crate::spec::cluster_config_path(&first.file, &first.cluster) {
                Some(p) => p,
                None => {
                    let p = opts.out.join("kind-simulated.yaml");
                    if let Err(e) = std::fs::write(&p, kwok::DEFAULT_CONFIG) {
                        eprintln!("error: {}: {e}", p.display());
                        return EXIT_HARNESS;
                    }
                    p
                }
            };
            let image = opts
                .node_image
                .clone()
                .unwrap_or_else(|| crate::cluster::default_node_image(&opts.cache_dir));
            say(
                opts.quiet,
                started,
                format!("creating simulated cluster {name}: a kind control plane ({image})"),
            );
            let docker = match crate::cluster::DockerNodes::connect() {
                Ok(d) => d,
                Err(e) => {
                    eprintln!("error: {e}");
                    return EXIT_HARNESS;
                }
            };
            if let Err(e) = local.create(&config, &image, &docker).await {
                eprintln!("error: cannot create the simulated cluster: {e}");
                return EXIT_HARNESS;
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_HARNESS;
        }
    }
    let (client, _) = match crate::cluster::client_for_local(&local).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_HARNESS;
        }
    };
    let kubeconfig = opts.out.join("kubeconfig-simulated");
    match local.kubeconfig().await {
        Ok(k) => {
            if let Err(e) = write_private(&kubeconfig, &k) {
                eprintln!("error: {}: {e}", kubeconfig.display());
                return EXIT_HARNESS;
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_HARNESS;
        }
    }
    let out_abs = std::fs::canonicalize(&opts.out).unwrap_or_else(|_| opts.out.clone());
    let lock =
        match crate::cluster::lock::acquire(&client, &out_abs, |s| say(opts.quiet, started, s))
            .await
        {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_HARNESS;
            }
        };
    let lost = lock.lost();
    let stopper = interrupt.clone();
    let watch_lock = tokio::spawn(async move {
        let why = lost.await;
        stopper.stop(super::Stop::LockLost(why));
    });
    let bin = kwok::kwok_bin(&opts.cache_dir);
    let session = crate::cluster::Session {
        provider: crate::spec::Provider::Kwok,
        cluster: Some(name.clone()),
        context: None,
        profile: None,
        power_hooks: None,
        node_control: None,
        test_nodes: false,
    };
    let _ = std::fs::write(
        opts.out.join(crate::store::SESSION_FILE),
        serde_json::to_string_pretty(&session).expect("a session serializes"),
    );
    let mut kwok = match kwok::Kwok::start(&bin, &kubeconfig, &opts.out, "kwok.log").await {
        Ok(k) => k,
        Err(e) => {
            eprintln!("error: cannot start kwok: {e}");
            watch_lock.abort();
            lock.release().await;
            return EXIT_HARNESS;
        }
    };
    say(
        opts.quiet,
        started,
        format!(
            "kwok {} started (log {})",
            bin.display(),
            kwok.log.display()
        ),
    );
    let cp = format!("{name}-control-plane");
    let container = crate::cluster::DockerNodes::connect()
        .ok()
        .map(|d| async move { d.container_id(&cp).await.ok().flatten() });
    let container = match container {
        Some(f) => f.await,
        None => None,
    };
    let kubernetes = client
        .apiserver_version()
        .await
        .map(|v| v.git_version)
        .unwrap_or_default();
    let mut results = Vec::new();
    let mut code = EXIT_OK;
    for run in &runs {
        if interrupt.first().is_some() {
            break;
        }
        if !kwok.alive() {
            eprintln!("error: kwok exited; its log: {}", kwok.log.display());
            code = EXIT_HARNESS;
            break;
        }
        let ctx = RunContext {
            client: client.clone(),
            out: opts.out.join(&run.id),
            quiet: opts.quiet,
            started,
            kubernetes: kubernetes.clone(),
            cluster: name.clone(),
            container: container.clone(),
            kwok_pid: kwok.pid(),
            kwok_started: kwok.started,
        };
        let r = tokio::select! {
            r = run_one(run, &ctx) => r,
            stop = interrupt.wait() => Err(format!("interrupted: {stop:?}")),
        };
        // Healed on every path: the journal says what the run changed.
        let healer = super::heal::Healer {
            client: client.clone(),
            controls: vec![Arc::new(KwokNodeControl::new(client.clone())) as Arc<dyn NodeControl>],
            node_timeout: Duration::from_secs(180),
        };
        let journal_path = ctx.out.join("journal.jsonl");
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
                    for e in &errors {
                        eprintln!("error: heal: {e}");
                    }
                    if !errors.is_empty() {
                        code = EXIT_HARNESS;
                    }
                }
                Err(e) => {
                    eprintln!("error: {}: {e}", journal_path.display());
                    code = EXIT_HARNESS;
                }
            }
        }
        match r {
            Ok(result) => {
                say(
                    opts.quiet,
                    started,
                    format!("{}: {}", run.id, result.verdict),
                );
                if result.verdict == "fail" && code == EXIT_OK {
                    code = EXIT_EXPECTATION_FAILED;
                }
                if result.verdict == "unknown" {
                    code = EXIT_HARNESS;
                }
                results.push(result);
            }
            Err(e) => {
                eprintln!("error: {}: {e}", run.id);
                if interrupt.first().is_some() {
                    code = EXIT_INTERRUPTED;
                } else {
                    code = EXIT_HARNESS;
                }
            }
        }
    }
    if interrupt.first().is_some() && code != EXIT_HARNESS {
        code = EXIT_INTERRUPTED;
    }
    let md = curve_markdown(&results);
    let _ = std::fs::write(opts.out.join("curve.md"), &md);
    let _ = std::fs::write(
        opts.out.join("curve.json"),
        serde_json::to_string_pretty(&results).expect("results serialize"),
    );
    let _ = std::fs::write(opts.out.join("curve.junit.xml"), curve_junit(&results));
    if !opts.quiet {
        println!("{md}");
    }
    // The runs' namespaces finish terminating while kwok still answers for the nodes their
    // pods were on; the invocation ends with the cluster as it found it.
    if let Err(e) = crate::runner::wait_namespaces_gone(&client).await {
        eprintln!("error: {e}");
        if code == EXIT_OK {
            code = EXIT_HARNESS;
        }
    }
    drop(kwok);
    watch_lock.abort();
    lock.release().await;
    code
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

async fn run_one(run: &PlannedRun, ctx: &RunContext) -> Result<SimulatedResult, String> {
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
    let watches = spawn_watches(client.clone(), ns.clone(), live.clone());

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
    for node in &lost {
        journal
            .record(Undo::HealFault {
                backend: crate::faults::Backend::Kwok,
                fault: FaultKind::NodeShutdown,
                node: node.clone(),
            })
            .map_err(|e| e.to_string())?;
    }
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
    let deadline = Instant::now() + run.timeouts.recovery;
    let mut taints = Vec::new();
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
            for node in ready_nodes {
                journal
                    .record(Undo::RemoveTaint {
                        node: node.clone(),
                        key: remediation::OUT_OF_SERVICE_KEY.into(),
                    })
                    .map_err(|e| e.to_string())?;
                let nodes_api = nodes_api.clone();
                let live = live.clone();
                taints.push(tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    let r = remediation::add_out_of_service_taint(&nodes_api, &node).await;
                    if r.is_ok() {
                        if let Some(s) = live.lock().unwrap().lost.get_mut(&node) {
                            s.tainted = Some(SystemTime::now());
                        }
                    }
                    r.map(|_| ()).map_err(|e| format!("taint {node}: {e}"))
                }));
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
        tokio::time::sleep(Duration::from_millis(100)).await;
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
    for t in taints {
        match t.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => harness_errors.push(e),
            Err(e) => harness_errors.push(e.to_string()),
        }
    }
    // Let the watches drain what has already happened.
    tokio::time::sleep(Duration::from_millis(500)).await;
    watches.abort();
    let (observations, events_seen) = {
        let l = live.lock().unwrap();
        (l.observations(t0), l.events - events_before)
    };
    let tainted = taint_after.is_some();
    let milestones = observations.figures(tainted);
    let recovered = observations.recovered();
    let mut reasons = Vec::new();
    let mut verdict = "pass";
    if let Some(want) = run.expect.recovered {
        if want != recovered {
            verdict = "fail";
            reasons.push(format!(
                "expected recovered: {want}, but every replacement back: {recovered}"
            ));
        }
    }
    if let Some(bound) = &run.expect.time_to_ready {
        let all = milestones
            .iter()
            .find(|m| m.milestone == crate::timeline::scale::Milestone::ReplacementReady)
            .and_then(MilestoneFigure::all_ms);
        match all {
            Some(ms) if Duration::from_millis(ms) <= bound.max => {}
            Some(ms) => {
                verdict = "fail";
                reasons.push(format!(
                    "time until every replacement was ready {} > {}",
                    crate::units::fmt_duration(Duration::from_millis(ms)),
                    crate::units::fmt_duration(bound.max)
                ));
            }
            None => {
                verdict = "fail";
                reasons.push("not every replacement became ready".into());
            }
        }
    }
    if !harness_errors.is_empty() {
        verdict = "unknown";
        reasons.extend(harness_errors);
    }
    let result = SimulatedResult {
        tool: format!("nodedown {}", env!("CARGO_PKG_VERSION")),
        run: run.id.clone(),
        experiment: run.experiment.clone(),
        variant: run.variant.clone(),
        repetition: run.repetition,
        environment: SimulatedEnvironment {
            simulated: true,
            kubernetes: ctx.kubernetes.clone(),
            nodes: names.len(),
            kwok: "v0.8.0".into(),
            kwok_lease_seconds: kwok::LEASE_SECONDS,
            cluster: ctx.cluster.clone(),
        },
        lost_nodes: lost.len(),
        instances: observations.instances.len(),
        remediation: if tainted {
            "out-of-service-taint"
        } else {
            "none"
        }
        .into(),
        verdict: verdict.into(),
        reasons,
        time_zero: humantime::format_rfc3339_millis(t0).to_string(),
        milestones,
        taint_reaction: observations.taint_reaction(),
        cost,
        events_seen,
        observations,
    };
    let json = serde_json::to_string_pretty(&result).expect("a result serializes");
    std::fs::write(ctx.out.join("results.json"), json).map_err(|e| e.to_string())?;
    std::fs::write(ctx.out.join("summary.md"), run_markdown(&result)).map_err(|e| e.to_string())?;
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
    client: Client,
    ns: String,
    live: Arc<Mutex<Live>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
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
    })
}

fn secs(ms: Option<u64>) -> String {
    ms.map(|m| format!("{:.1}s", m as f64 / 1000.0))
        .unwrap_or_else(|| "—".into())
}

/// One run's summary page.
pub fn run_markdown(r: &SimulatedResult) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "> **{BANNER}**\n");
    let _ = writeln!(
        out,
        "## {}: {} node(s) lost at once under {} instance(s), remediation {} — {}\n",
        r.run, r.lost_nodes, r.instances, r.remediation, r.verdict
    );
    let _ = writeln!(
        out,
        "{} simulated nodes (kwok {}, Lease {} s) · Kubernetes {} · time zero {}\n",
        r.environment.nodes,
        r.environment.kwok,
        r.environment.kwok_lease_seconds,
        r.environment.kubernetes,
        r.time_zero
    );
    for why in &r.reasons {
        let _ = writeln!(out, "- {why}");
    }
    if !r.reasons.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "| milestone | reached | p50 | all (max) |\n|---|--:|--:|--:|"
    );
    for m in &r.milestones {
        let _ = writeln!(
            out,
            "| {} | {}/{} | {} | {} |",
            m.milestone.as_str(),
            m.reached,
            m.of,
            secs(m.p50_ms),
            secs(m.max_ms)
        );
    }
    if let Some(t) = &r.taint_reaction {
        let _ = writeln!(
            out,
            "\nnodedown's taint reaction (NotReady seen → taint applied), {} node(s): p50 {} · p99 {} · max {}",
            t.count,
            secs(Some(t.p50_ms)),
            secs(Some(t.p99_ms)),
            secs(Some(t.max_ms))
        );
    }
    let _ = writeln!(
        out,
        "\n| process | cores (avg) | CPU s | peak RSS MiB |\n|---|--:|--:|--:|"
    );
    for c in &r.cost {
        let _ = writeln!(
            out,
            "| {} | {:.2} | {:.1} | {:.0} |",
            c.name, c.cores, c.cpu_seconds, c.max_rss_mib
        );
    }
    let _ = writeln!(
        out,
        "\nwatch events processed by nodedown: {}",
        r.events_seen
    );
    out
}

/// The curve over an invocation's runs: one row per run.
pub fn curve_markdown(results: &[SimulatedResult]) -> String {
    use crate::timeline::scale::Milestone as M;
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "> **{BANNER}**\n");
    let _ = writeln!(
        out,
        "| run | nodes lost | pods | remediation | all NotReady | all unreachable-tainted | all out-of-service-tainted | all pods deleted (p50 / all) | all volumes detached (p50 / all) | all replacements ready (p50 / all) | taint reaction p50 / p99 | API server cores / peak MiB | etcd cores / peak MiB | nodedown CPU s / peak MiB | events | verdict |"
    );
    let _ = writeln!(
        out,
        "|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|"
    );
    for r in results {
        let fig = |m: M| r.milestones.iter().find(|f| f.milestone == m);
        let all = |m: M| match fig(m) {
            Some(f) if f.all_ms().is_some() => secs(f.all_ms()),
            Some(f) => format!("{}/{} only", f.reached, f.of),
            None => "—".into(),
        };
        let both = |m: M| match fig(m) {
            Some(f) => format!("{} / {}", secs(f.p50_ms), all(m)),
            None => "—".into(),
        };
        let cores = |name: &str| {
            r.cost
                .iter()
                .find(|c| c.name == name)
                .map(|c| format!("{:.2} / {:.0}", c.cores, c.max_rss_mib))
                .unwrap_or_else(|| "—".into())
        };
        let me = r
            .cost
            .iter()
            .find(|c| c.name == "nodedown")
            .map(|c| format!("{:.1} / {:.0}", c.cpu_seconds, c.max_rss_mib))
            .unwrap_or_else(|| "—".into());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.run,
            r.lost_nodes,
            r.instances,
            r.remediation,
            all(M::NotReady),
            all(M::UnreachableTaint),
            all(M::OutOfServiceTaint),
            both(M::PodDeleted),
            both(M::VolumeDetached),
            both(M::ReplacementReady),
            r.taint_reaction
                .as_ref()
                .map(|t| format!("{} / {}", secs(Some(t.p50_ms)), secs(Some(t.p99_ms))))
                .unwrap_or_else(|| "—".into()),
            cores("kube-apiserver"),
            cores("etcd"),
            me,
            r.events_seen,
            r.verdict
        );
    }
    out
}

/// The runs as JUnit XML: a test suite per experiment, a test case per run (a failure when its
/// expectation failed, an error when unknown), its milestones, taint reaction and costs as
/// properties; the banner is the suite's first property, so a CI page says it was simulated.
pub fn curve_junit(results: &[SimulatedResult]) -> String {
    use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};
    let mut report = quick_junit::Report::new("nodedown simulated");
    let mut suites: Vec<TestSuite> = Vec::new();
    for r in results {
        let i = match suites.iter().position(|s| s.name.as_str() == r.experiment) {
            Some(i) => i,
            None => {
                let mut s = TestSuite::new(r.experiment.as_str());
                s.add_property(Property::new("simulated", BANNER));
                suites.push(s);
                suites.len() - 1
            }
        };
        let status = match r.verdict.as_str() {
            "pass" => TestCaseStatus::success(),
            v => {
                let mut s = TestCaseStatus::non_success(if v == "fail" {
                    NonSuccessKind::Failure
                } else {
                    NonSuccessKind::Error
                });
                s.set_message(r.reasons.join("; "));
                s
            }
        };
        let mut case = TestCase::new(r.run.as_str(), status);
        case.set_classname(format!("simulated.{}", r.experiment));
        let mut props = vec![
            ("lost-nodes".to_string(), r.lost_nodes.to_string()),
            ("instances".to_string(), r.instances.to_string()),
            ("remediation".to_string(), r.remediation.clone()),
            ("events".to_string(), r.events_seen.to_string()),
        ];
        for f in &r.milestones {
            let m = f.milestone.as_str();
            props.push((format!("{m}.reached"), format!("{}/{}", f.reached, f.of)));
            if let Some(v) = f.p50_ms {
                props.push((format!("{m}.p50"), v.to_string()));
            }
            if let Some(v) = f.all_ms() {
                props.push((format!("{m}.all"), v.to_string()));
            }
        }
        if let Some(t) = &r.taint_reaction {
            props.push(("taint-reaction.p50".into(), t.p50_ms.to_string()));
            props.push(("taint-reaction.p99".into(), t.p99_ms.to_string()));
        }
        for c in &r.cost {
            props.push((format!("cost.{}.cores", c.name), format!("{:.3}", c.cores)));
            props.push((
                format!("cost.{}.peak-mib", c.name),
                format!("{:.0}", c.max_rss_mib),
            ));
        }
        case.add_properties(props.into_iter().map(|(n, v)| Property::new(n, v)));
        suites[i].add_test_case(case);
    }
    report.add_test_suites(suites);
    let mut xml = report.to_string().expect("JUnit XML serializes");
    if !xml.ends_with('\n') {
        xml.push('\n');
    }
    xml
}

/// The simulated runs below `dir` (an invocation's `--out`, or one run's directory): its
/// curve.json when there is one, else every results.json of a simulated run (at most five
/// levels down), in the order of their time zero. Empty when `dir` holds no simulated run.
pub fn load_results(dir: &Path) -> Result<Vec<SimulatedResult>, String> {
    let curve = dir.join("curve.json");
    if curve.is_file() {
        let text =
            std::fs::read_to_string(&curve).map_err(|e| format!("{}: {e}", curve.display()))?;
        return serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a simulated curve: {e}", curve.display()));
    }
    fn walk(dir: &Path, depth: u8, out: &mut Vec<SimulatedResult>) -> Result<(), String> {
        let file = dir.join("results.json");
        if file.is_file() {
            let text =
                std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
            let v: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
            if v["environment"]["simulated"] == true {
                out.push(
                    serde_json::from_value(v)
                        .map_err(|e| format!("{}: not a simulated run: {e}", file.display()))?,
                );
            }
        }
        if depth == 0 {
            return Ok(());
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for d in dirs {
            walk(&d, depth - 1, out)?;
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, 5, &mut out)?;
    out.sort_by(|a, b| a.time_zero.cmp(&b.time_zero));
    Ok(out)
}

/// Starts kwok for `nodedown cleanup` of a simulated run: the nodes it heals come back only
/// while kwok renews their Leases.
pub async fn start_kwok_for(
    env: &crate::cluster::Env,
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
