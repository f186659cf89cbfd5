//! What is kwok's own in a simulated run: the simulated nodes made and Ready, the run's
//! instances placed on the nodes to be lost (the others tainted meanwhile), and the steady state
//! before the fault. Every object is journaled before it is made.

use super::RunContext;
use crate::cluster::kwok::{self, SIMULATED_TAINT};
use crate::journal::{Journal, Undo};
use crate::observe::Recorder;
use crate::plan::PlannedRun;
use crate::remediation;
use crate::runner::{api_err, StepError};
use crate::timeline::{EventKind, Stage};
use crate::vocab::{INSTANCE_LABEL, PLACING_TAINT};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolume, Pod};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

/// How many API requests nodedown keeps in flight while it creates a run's objects.
const CREATE_CONCURRENCY: usize = 16;

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

/// Where a run's instances are, once placed.
pub(super) struct Placement {
    /// Every simulated node.
    pub(super) names: Vec<String>,
    /// The nodes to be lost.
    pub(super) lost: Vec<String>,
    /// The run's namespace.
    pub(super) ns: String,
    /// Instance → (node, pod uid) at the steady state.
    pub(super) placed: HashMap<String, (String, String)>,
}

/// The simulated nodes made (and Ready), the run's instances placed on the nodes to be lost
/// and steady (every pod Running there with its volume attached); every object journaled
/// before it is made.
pub(super) async fn place(
    run: &PlannedRun,
    ctx: &RunContext,
    journal: &Journal,
    recorder: &Recorder,
    say: &impl Fn(String),
) -> Result<Placement, StepError> {
    let client = &ctx.client;
    let node_count = run
        .cluster
        .simulated_nodes
        .unwrap_or(crate::spec::simulated::DEFAULT_SIMULATED_NODES);
    let lost_count = run.fault.target.node_count();
    say(format!("simulated nodes: {node_count}"));
    let store = PathBuf::from(kwok::HOST_DIR).join("csi");
    // The driver keeps the records of volumes earlier runs made (their PersistentVolumes are
    // gone, no DeleteVolume ever comes): prune those of namespaces no longer there.
    let live: std::collections::HashSet<String> =
        Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
            .list(&Default::default())
            .await
            .map_err(api_err("list namespaces"))?
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
    match kwok::prune_store(&store, &live) {
        Ok(0) => {}
        Ok(n) => say(format!(
            "pruned the driver's records of {n} volume(s) of earlier runs"
        )),
        Err(e) => say(format!(
            "could not prune the driver's store {}: {e}",
            store.display()
        )),
    }
    let names = kwok::ensure_nodes(
        client,
        node_count,
        crate::workload::ATTACH_DRIVER,
        Some(&store),
    )
    .await?;
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
            .map_err(StepError::Journal)?;
    }
    futures::stream::iter(others.iter().map(|node| {
        let nodes_api = nodes_api.clone();
        async move {
            remediation::add_taint(&nodes_api, node, PLACING_TAINT, "true", "NoSchedule").await
        }
    }))
    .buffer_unordered(CREATE_CONCURRENCY)
    .try_collect::<Vec<_>>()
    .await?;

    // The run's objects, each journaled before it is made.
    // A namespace new in every run (the random suffix), so its volumes' handles
    // (`<namespace>.data-<pod>`) are new to the driver: a record an earlier invocation left
    // behind (one ended before its heal could detach, e.g. killed) can never make a volume of
    // this run look attached elsewhere. Seen with the same name in every invocation: a
    // 400-instance run stuck at 106 of 400 volumes attached, each refused with "is attached to
    // node sim-0101", a node of the previous invocation's replacements.
    let ns = crate::runner::namespace_name(run);
    journal
        .record(Undo::DeleteNamespace { name: ns.clone() })
        .map_err(StepError::Journal)?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &crate::workload::namespace(&ns, &run.id, None),
        )
        .await
        .map_err(api_err(format!("create namespace {ns}")))?;
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
            .map_err(StepError::Journal)?;
        by_volume.insert(pv_name, instance.clone());
    }
    // Every volume first, taken up by the PersistentVolume controller before any claim exists
    // (see `wait_volumes_taken_up`), then the StatefulSets that make the claims.
    futures::stream::iter(plan.iter().map(|(instance, _)| {
        let pvs = pvs.clone();
        let ns = ns.clone();
        let size = run.workload.size.clone();
        async move {
            let pv =
                crate::workload::attach_volume(&ns, &format!("{instance}-0"), &size, mode, &run.id);
            pvs.create(&PostParams::default(), &pv).await.map(|_| ())
        }
    }))
    .buffer_unordered(CREATE_CONCURRENCY)
    .try_collect::<Vec<()>>()
    .await
    .map_err(api_err("create the instances' volumes"))?;
    let made: std::collections::HashSet<String> = by_volume.keys().cloned().collect();
    crate::workload::wait_volumes_taken_up(
        client,
        &run.id,
        &made,
        crate::workload::VOLUMES_TAKEN_UP,
    )
    .await?;
    futures::stream::iter(plan.iter().map(|(instance, node)| {
        let stss = stss.clone();
        let ns = ns.clone();
        let size = run.workload.size.clone();
        async move {
            stss.create(
                &PostParams::default(),
                &instance_statefulset(&ns, instance, node, &size, mode.as_str()),
            )
            .await
            .map(|_| ())
        }
    }))
    .buffer_unordered(CREATE_CONCURRENCY)
    .try_collect::<Vec<()>>()
    .await
    .map_err(api_err("create the instances"))?;

    // Steady state: every pod Running on its node with its volume attached there.
    recorder.record(EventKind::Stage {
        stage: Stage::SteadyState,
    });
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
    .await?;
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
    Ok(Placement {
        names,
        lost,
        ns,
        placed,
    })
}

/// Waits until every simulated node is Ready and its Lease was renewed since `since` (by this
/// invocation's kwok: a Lease a previous kwok held is taken over only once it expired, and a
/// node whose Lease nobody renews goes NotReady under the run).
async fn wait_nodes_ready(
    client: &Client,
    names: &[String],
    since: SystemTime,
    timeout: Duration,
) -> Result<(), StepError> {
    use k8s_openapi::api::coordination::v1::Lease;
    let nodes: Api<Node> = Api::all(client.clone());
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let since = k8s_openapi::jiff::Timestamp::try_from(since)
        .map_err(|e| StepError::Harness(format!("kwok's start time: {e}")))?;
    let deadline = Instant::now() + timeout;
    loop {
        let list = nodes
            .list(
                &ListParams::default()
                    .labels(&format!("{}=true", crate::faults::kwok::SIMULATED_LABEL)),
            )
            .await
            .map_err(api_err("list the simulated nodes"))?;
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
            .map_err(api_err("list the node Leases"))?
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
            return Err(StepError::Precondition(format!(
                "{ready} of {} simulated nodes Ready, {renewed} Leases renewed by this kwok, after {} (kwok takes a node over once its old Lease expired, {} s)",
                names.len(),
                crate::units::fmt_duration(timeout),
                kwok::LEASE_SECONDS
            )));
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
) -> Result<HashMap<String, (String, String)>, StepError> {
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
            .map_err(api_err(format!("list the pods of namespace {ns}")))?;
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
            return Err(StepError::Precondition(format!(
                "{} instance(s) not on a node to be lost ({}): the placing taint did not hold",
                misplaced.len(),
                misplaced
                    .iter()
                    .take(5)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let attached = vas
            .list(&ListParams::default())
            .await
            .map_err(api_err("list VolumeAttachments"))?
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
            return Err(StepError::Precondition(format!(
                "steady state not reached in {}: {} of {} pods Running on their node, {attached} volumes attached",
                crate::units::fmt_duration(timeout),
                placed.len(),
                plan.len()
            )));
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
