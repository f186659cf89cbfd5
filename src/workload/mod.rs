//! Workloads (effectful edge + pure manifests): the **workload seam**. A [`Workload`] knows its
//! manifests, its storage, how to find "the pod that serves it now" (by label, whatever its
//! name), and how its evidence comes back after failover ([`Evidence`]). The runner only calls
//! `deploy`, `selector` and `collect_ledger`.

pub mod fill;
pub mod image;
pub mod ledger;
pub mod writer;

use crate::journal::{Journal, Undo};
use crate::spec::{AccessMode, Controller, VolumeMode, WorkloadKind, WorkloadSpec};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolume, PersistentVolumeClaim, Service};
use kube::api::PostParams;
use kube::{Api, Client};
use serde_json::json;
use std::path::{Path, PathBuf};

pub use crate::vocab::{
    ATTACH_CLASS, ATTACH_DRIVER, ATTACH_VOLUMES_DIR, DEFAULT_SHARED_DIR, INSTANCE_LABEL,
    LOCAL_CLASS, LOCAL_NODE_PATH, RUN_LABEL, SHARED_CLASS, SHARED_NODE_PATH,
};

pub fn app_name(kind: WorkloadKind) -> &'static str {
    crate::spec::statefulset_name(kind)
}

/// `app=<name>`: the selector of the workload's pods.
pub fn pod_selector(kind: WorkloadKind) -> String {
    format!("app={}", app_name(kind))
}

/// A run's namespace, labelled with its run and, where given, the invocation that made it
/// (whose last wait then sees only its own namespaces).
pub fn namespace(name: &str, run_id: &str, invocation: Option<&str>) -> Namespace {
    let mut labels = serde_json::Map::new();
    labels.insert(RUN_LABEL.into(), label_value(run_id).into());
    if let Some(id) = invocation {
        labels.insert(crate::vocab::INVOCATION_LABEL.into(), id.into());
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels}
    }))
    .expect("valid Namespace")
}

/// Label values allow [A-Za-z0-9._-]; run ids have `/`.
pub fn label_value(run_id: &str) -> String {
    run_id.replace('/', ".").chars().take(63).collect()
}

/// The claim a StatefulSet pod gets: `data-<pod>`.
pub fn claim_name(pod: &str) -> String {
    format!("data-{pod}")
}

/// A PersistentVolume of `class` pre-bound to the claim of `pod`, without node affinity (the
/// pod can fail over to any node and find its data); `source` is its volume source, e.g.
/// `("hostPath", {...})`.
fn prebound_volume(
    ns: &str,
    pod: &str,
    size: &str,
    mode: AccessMode,
    run_id: &str,
    class: &str,
    source: (&str, serde_json::Value),
) -> PersistentVolume {
    let mut pv = json!({
        "metadata": {"name": format!("{ns}-{}", claim_name(pod)), "labels": {RUN_LABEL: label_value(run_id)}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": [mode.as_str()],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": class,
            "volumeMode": "Filesystem",
            "claimRef": {"namespace": ns, "name": claim_name(pod)}
        }
    });
    pv["spec"][source.0] = source.1;
    serde_json::from_value(pv).expect("valid PersistentVolume")
}

/// A PersistentVolume on the shared host directory ([`SHARED_CLASS`]), pre-bound to the claim
/// of `pod`.
pub fn shared_volume(
    ns: &str,
    pod: &str,
    size: &str,
    mode: AccessMode,
    run_id: &str,
) -> PersistentVolume {
    let path = format!("{SHARED_NODE_PATH}/{ns}/{}", claim_name(pod));
    let source = json!({"path": path, "type": "DirectoryOrCreate"});
    prebound_volume(
        ns,
        pod,
        size,
        mode,
        run_id,
        SHARED_CLASS,
        ("hostPath", source),
    )
}

/// The volume handle of the attaching volume of `pod`'s claim: `<ns>.data-<pod>` (the driver's
/// directory name under [`ATTACH_VOLUMES_DIR`]).
pub fn attach_handle(ns: &str, pod: &str) -> String {
    format!("{ns}.{}", claim_name(pod))
}

/// A PersistentVolume of [`ATTACH_CLASS`], pre-bound to the claim of `pod`: a CSI volume that
/// must be attached (ControllerPublish) to the node before its pod can mount it. The driver
/// makes its directory on the first attach (`nodedown.dev/provision: on-publish`).
pub fn attach_volume(
    ns: &str,
    pod: &str,
    size: &str,
    mode: AccessMode,
    run_id: &str,
) -> PersistentVolume {
    let source = json!({
        "driver": ATTACH_DRIVER,
        "volumeHandle": attach_handle(ns, pod),
        "volumeAttributes": {"nodedown.dev/provision": "on-publish"}
    });
    prebound_volume(ns, pod, size, mode, run_id, ATTACH_CLASS, ("csi", source))
}

/// A node-local PersistentVolume of [`LOCAL_CLASS`] on `node` (not bound in advance).
pub fn local_volume(
    ns: &str,
    node: &str,
    size: &str,
    mode: AccessMode,
    run_id: &str,
) -> PersistentVolume {
    let mut name = format!("{ns}-local-{node}");
    name.truncate(253);
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {RUN_LABEL: label_value(run_id)}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": [mode.as_str()],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": LOCAL_CLASS,
            "hostPath": {"path": format!("{LOCAL_NODE_PATH}/{ns}"), "type": "DirectoryOrCreate"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
            ]}]}}
        }
    }))
    .expect("valid PersistentVolume")
}

/// How long the PersistentVolume controller may take to take up a run's pre-bound volumes.
pub const VOLUMES_TAKEN_UP: std::time::Duration = std::time::Duration::from_secs(60);

/// The port the ledger serves its status on.
pub const LEDGER_PORT: u16 = 8080;

/// How the ledger comes back after failover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// Copied from the host directory behind testenv's shared storage class (the fast path;
    /// only where the harness runs on the machine that holds that directory).
    HostDir(PathBuf),
    /// Streamed from the serving pod's own `GET /ledger` through the API server's pod proxy:
    /// works on any storage class and any cluster.
    PodProxy,
}

/// One run's workload: what is deployed, where, and how it is observed.
#[derive(Debug, Clone)]
pub struct Workload {
    pub spec: WorkloadSpec,
    pub namespace: String,
    pub run_id: String,
    pub image: String,
    /// The image was loaded into the nodes (never pull it).
    pub preloaded: bool,
    pub storage: StorageAccess,
    /// The lane's nodes the pods are confined to (required node affinity on the pod
    /// template); empty: anywhere the scheduler likes.
    pub nodes: Vec<String>,
    /// Where the instances are placed before the fault (preferred node affinity, so that a
    /// replacement can go elsewhere): instance i on `homes[i % len]` — one node for a fleet, a
    /// zone's nodes for a zone outage. Empty: where the scheduler likes.
    pub homes: Vec<String>,
    /// A node the pods must never run on: the one nodedown itself runs on, in the cluster
    /// (required node affinity `NotIn`).
    pub avoid: Option<String>,
    /// The invocation that deploys it (the label of its namespace).
    pub invocation: Option<String>,
}

/// How long reading a ledger through the API server's pod proxy may take: a few hundred KB
/// come back in well under a second from a pod that answers.
pub const LEDGER_PROXY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// How the workload's storage and evidence are reached from the harness's machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StorageAccess {
    /// The host directory behind [`SHARED_CLASS`], when this machine has it.
    pub shared_dir: Option<PathBuf>,
    /// Read the ledger through the pod proxy even when the host directory is here.
    pub ledger_via_api: bool,
}

impl Workload {
    /// `app=<name>`: every pod of the workload, whatever its name.
    pub fn selector(&self) -> String {
        pod_selector(self.spec.kind)
    }

    /// Creates the namespace, the storage and the controller, journaling each undo first.
    pub async fn deploy(&self, client: &Client, journal: &Journal) -> Result<(), WorkloadError> {
        let jrec = |u: Undo| {
            journal
                .record(u)
                .map(|_| ())
                .map_err(WorkloadError::Journal)
        };
        let ns = &self.namespace;
        jrec(Undo::DeleteNamespace { name: ns.clone() })?;
        Api::<Namespace>::all(client.clone())
            .create(
                &PostParams::default(),
                &namespace(ns, &self.run_id, self.invocation.as_deref()),
            )
            .await
            .map_err(api(format!("create namespace {ns}")))?;
        let class = self.spec.storage_class.as_str();
        if class == SHARED_CLASS || class == ATTACH_CLASS {
            // testenv's shared directory: nodedown makes the PersistentVolumes itself.
            let pvs: Api<PersistentVolume> = Api::all(client.clone());
            if let (SHARED_CLASS, Some(dir)) = (class, &self.storage.shared_dir) {
                // The namespace's own directory above its volumes' (healed last: journaled
                // first); it was left behind empty by every run before.
                jrec(Undo::RemoveDir { path: dir.join(ns) })?;
            }
            let mut made = std::collections::HashSet::new();
            for pod in self.volume_owners() {
                if let Some(dir) = &self.storage.shared_dir {
                    jrec(Undo::RemoveDir {
                        path: self.volume_dir(dir, &pod),
                    })?;
                }
                let (size, mode) = (&self.spec.size, self.spec.access_mode);
                let mut pv = if class == SHARED_CLASS {
                    shared_volume(ns, &pod, size, mode, &self.run_id)
                } else {
                    attach_volume(ns, &pod, size, mode, &self.run_id)
                };
                if let Some(spec) = pv.spec.as_mut() {
                    spec.volume_mode = Some(self.spec.volume_mode.as_str().to_string());
                }
                let name = pv.metadata.name.clone().unwrap_or_default();
                jrec(Undo::DeletePersistentVolume { name: name.clone() })?;
                pvs.create(&PostParams::default(), &pv)
                    .await
                    .map_err(api(format!("create PersistentVolume {name}")))?;
                made.insert(name);
            }
            wait_volumes_taken_up(client, &self.run_id, &made, VOLUMES_TAKEN_UP).await?;
        }
        if self.spec.storage_class == LOCAL_CLASS {
            // One volume per worker, each pinned to its node; the scheduler binds the claim to
            // the one on the node it picks.
            let nodes = Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
                .list(&Default::default())
                .await
                .map_err(api("list nodes"))?;
            let pvs: Api<PersistentVolume> = Api::all(client.clone());
            for node in nodes.items.iter().filter(|n| {
                !crate::observe::is_control_plane(n)
                    && (self.nodes.is_empty()
                        || n.metadata
                            .name
                            .as_ref()
                            .is_some_and(|name| self.nodes.contains(name)))
            }) {
                let name = node.metadata.name.clone().unwrap_or_default();
                let pv = local_volume(
                    ns,
                    &name,
                    &self.spec.size,
                    self.spec.access_mode,
                    &self.run_id,
                );
                let pv_name = pv.metadata.name.clone().unwrap_or_default();
                jrec(Undo::DeletePersistentVolume {
                    name: pv_name.clone(),
                })?;
                pvs.create(&PostParams::default(), &pv)
                    .await
                    .map_err(api(format!("create PersistentVolume {pv_name}")))?;
            }
        }
        let (spec, image, run_id) = (&self.spec, self.image.as_str(), self.run_id.as_str());
        match spec.controller {
            Controller::StatefulSet => {
                for (i, name) in self.instance_names().into_iter().enumerate() {
                    let mut sts = statefulset(spec, &name, image, self.preloaded, run_id);
                    if let Some(pod) = sts.spec.as_mut().and_then(|s| s.template.spec.as_mut()) {
                        place(pod, &self.nodes, self.home(i));
                        if let Some(node) = &self.avoid {
                            avoid_node(pod, node);
                        }
                    }
                    create(client, ns, &sts, &format!("StatefulSet {name}")).await?;
                }
            }
            Controller::Deployment => {
                let app = app_name(spec.kind);
                create(
                    client,
                    ns,
                    &claim(spec, app, run_id),
                    "PersistentVolumeClaim",
                )
                .await?;
                if spec.kind == WorkloadKind::Ledger {
                    create(client, ns, &service(app, run_id), "Service").await?;
                }
                let mut deploy = deployment(spec, image, self.preloaded, run_id);
                if let Some(pod) = deploy.spec.as_mut().and_then(|s| s.template.spec.as_mut()) {
                    place(pod, &self.nodes, self.home(0));
                    if let Some(node) = &self.avoid {
                        avoid_node(pod, node);
                    }
                }
                create(client, ns, &deploy, "Deployment").await?;
            }
        }
        Ok(())
    }

    /// Where instance `i` is placed before the fault (see [`Workload::homes`]).
    pub fn home(&self, i: usize) -> Option<&str> {
        (!self.homes.is_empty()).then(|| self.homes[i % self.homes.len()].as_str())
    }

    /// The instances' names (their StatefulSets), in order (see `spec::instance_names`).
    pub fn instance_names(&self) -> Vec<String> {
        crate::spec::instance_names(&self.spec)
    }

    /// The names whose claims hold the workload's data: each StatefulSet pod of every instance
    /// (`ledger-0`, `ledger-i1-0`, …), or the Deployment itself (`ledger`: one claim for
    /// whichever pod runs).
    pub fn volume_owners(&self) -> Vec<String> {
        let app = app_name(self.spec.kind);
        match self.spec.controller {
            Controller::StatefulSet => self
                .instance_names()
                .iter()
                .flat_map(|name| (0..self.spec.replicas).map(move |i| format!("{name}-{i}")))
                .collect(),
            Controller::Deployment => vec![app.to_string()],
        }
    }

    /// The owner of the claim `pod` mounts (see [`Workload::volume_owners`]).
    fn volume_owner(&self, pod: &str) -> String {
        match self.spec.controller {
            Controller::StatefulSet => pod.to_string(),
            Controller::Deployment => app_name(self.spec.kind).to_string(),
        }
    }

    /// The pod named by the experiment's target, when pods have stable names (a StatefulSet);
    /// `None` for a Deployment, whose one pod is whichever serves it.
    pub fn target_pod<'a>(&self, target: &'a str) -> Option<&'a str> {
        match self.spec.controller {
            Controller::StatefulSet => Some(target),
            Controller::Deployment => None,
        }
    }

    /// What the ack poller reaches through the API server's proxy: the target pod by name (a
    /// StatefulSet's pod keeps it), or the workload's Service (a Deployment's replacement has
    /// a new name; the Service's endpoints follow the Ready pod).
    pub fn status_proxy(&self, target: &str) -> String {
        match self.spec.controller {
            Controller::StatefulSet => format!("pods/{target}"),
            Controller::Deployment => format!("services/{}", app_name(self.spec.kind)),
        }
    }

    /// Where the volume of `pod`'s claim lives under the shared host directory `shared`
    /// (storage classes [`SHARED_CLASS`] and [`ATTACH_CLASS`]).
    pub fn volume_dir(&self, shared: &Path, pod: &str) -> PathBuf {
        if self.spec.storage_class == ATTACH_CLASS {
            shared
                .join(ATTACH_VOLUMES_DIR)
                .join(attach_handle(&self.namespace, pod))
        } else {
            shared.join(&self.namespace).join(claim_name(pod))
        }
    }

    /// How the ledger comes back: the host directory when this machine holds the shared
    /// storage, else through the pod proxy.
    pub fn evidence(&self) -> Evidence {
        // A block volume's ledger is the device's extent, which only its writer serves.
        let on_shared = [SHARED_CLASS, ATTACH_CLASS].contains(&self.spec.storage_class.as_str())
            && self.spec.volume_mode == VolumeMode::Filesystem;
        match &self.storage.shared_dir {
            Some(dir) if !self.storage.ledger_via_api && on_shared && dir.is_dir() => {
                Evidence::HostDir(dir.clone())
            }
            _ => Evidence::PodProxy,
        }
    }

    /// Copies the ledger of `pod` (its claim's volume) into `dest`; returns a note for the
    /// timeline saying where it came from. `serving` is the pod that serves the workload now,
    /// whose `GET /ledger` the pod-proxy path reads.
    pub async fn collect_ledger(
        &self,
        client: &Client,
        pod: &str,
        serving: Option<&str>,
        dest: &Path,
    ) -> Result<String, WorkloadError> {
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        match self.evidence() {
            Evidence::HostDir(dir) => {
                let source = self
                    .volume_dir(&dir, &self.volume_owner(pod))
                    .join(ledger::LEDGER_FILE);
                let (s, t) = (source.clone(), dest.to_path_buf());
                let copied = tokio::task::spawn_blocking(move || std::fs::copy(&s, &t))
                    .await
                    .map_err(|e| WorkloadError::Evidence(format!("copying the ledger: {e}")))?
                    .map_err(io(&source))?;
                Ok(format!(
                    "ledger collected: {copied} bytes from {}",
                    source.display()
                ))
            }
            Evidence::PodProxy => {
                let Some(serving) = serving else {
                    return Err(WorkloadError::Evidence(format!(
                        "ledger not collected: no pod serves the workload now, and storage class {} is read through the serving pod",
                        self.spec.storage_class
                    )));
                };
                let url = format!(
                    "/api/v1/namespaces/{}/pods/{serving}:{LEDGER_PORT}/proxy{}",
                    self.namespace,
                    ledger::ledger_url_path()
                );
                let request = http::Request::get(&url)
                    .body(Vec::new())
                    .expect("valid request");
                let read = async {
                    let body = client
                        .request_stream(request)
                        .await
                        .map_err(api(format!("GET {url}")))?;
                    let file = std::fs::File::create(dest).map_err(io(dest))?;
                    let mut out = futures::io::AllowStdIo::new(file);
                    futures::io::copy(body, &mut out)
                        .await
                        .map_err(|e| WorkloadError::Evidence(format!("reading {url}: {e}")))
                };
                // The pod that last ran may be on a node that is down (no replacement came):
                // the API server then waits on a pod address nobody answers at.
                let copied = tokio::time::timeout(LEDGER_PROXY_TIMEOUT, read)
                    .await
                    .map_err(|_| {
                        WorkloadError::Evidence(format!(
                            "ledger not collected: pod {serving} did not answer through the API server within {} (is its node down?)",
                            crate::units::fmt_duration(LEDGER_PROXY_TIMEOUT)
                        ))
                    })??;
                Ok(format!(
                    "ledger collected: {copied} bytes from pod {serving} through the API server ({url})"
                ))
            }
        }
    }
}

/// Where a raw block volume appears in the workload's container.
pub const BLOCK_DEVICE_PATH: &str = "/dev/nodedown-ledger";

fn container(
    spec: &WorkloadSpec,
    name: &str,
    image: &str,
    pull_never: bool,
    env: serde_json::Value,
) -> serde_json::Value {
    let mut c = json!({
        "name": name,
        "image": image,
        "imagePullPolicy": if pull_never { "Never" } else { "IfNotPresent" },
        "env": env,
    });
    let store = match spec.volume_mode {
        VolumeMode::Filesystem => {
            c["volumeMounts"] = json!([{"name": "data", "mountPath": "/data"}]);
            ["--dir", "/data"]
        }
        VolumeMode::Block => {
            c["volumeDevices"] = json!([{"name": "data", "devicePath": BLOCK_DEVICE_PATH}]);
            ["--device", BLOCK_DEVICE_PATH]
        }
    };
    match spec.kind {
        WorkloadKind::Writer => {
            c["command"] = json!(["/usr/local/bin/nodedown", "writer", store[0], store[1]])
        }
        WorkloadKind::Ledger => {
            c["command"] = json!([
                "/usr/local/bin/nodedown",
                "ledger",
                store[0],
                store[1],
                "--port",
                LEDGER_PORT.to_string()
            ]);
            c["ports"] = json!([{"name": "status", "containerPort": LEDGER_PORT}]);
            c["readinessProbe"] = json!({"httpGet": {"path": ledger::status_url_path(), "port": LEDGER_PORT}, "periodSeconds": 1});
        }
    }
    c
}

/// Places a pod template: confined to `nodes` (a lane) by required node affinity on
/// `kubernetes.io/hostname`, which the scheduler honours for the first pod and every
/// replacement alike, and which changes nothing else the failover does (tolerations, eviction,
/// detach and attach are the same); and, for a fleet, drawn to its `home` node by preferred
/// node affinity (weight 100): every instance starts there while it is schedulable, and a
/// replacement goes elsewhere once it is not (tainted, NotReady). No `nodes` and no `home`: the
/// template is left as it is.
pub fn place(pod: &mut k8s_openapi::api::core::v1::PodSpec, nodes: &[String], home: Option<&str>) {
    if nodes.is_empty() && home.is_none() {
        return;
    }
    let mut affinity = json!({});
    if !nodes.is_empty() {
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = json!({
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": nodes}
            ]}]
        });
    }
    if let Some(home) = home {
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = json!([{
            "weight": 100,
            "preference": {"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [home]}
            ]}
        }]);
    }
    pod.affinity
        .get_or_insert_with(Default::default)
        .node_affinity = Some(serde_json::from_value(affinity).expect("valid node affinity"));
}

/// Keeps a pod template off `node` (the node nodedown runs on, in the cluster): a required
/// `kubernetes.io/hostname NotIn [node]` in every node selector term (one term when there was
/// none), so neither the first pod nor a replacement goes there.
pub fn avoid_node(pod: &mut k8s_openapi::api::core::v1::PodSpec, node: &str) {
    use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
    let not_there = NodeSelectorRequirement {
        key: "kubernetes.io/hostname".into(),
        operator: "NotIn".into(),
        values: Some(vec![node.to_string()]),
    };
    let required = pod
        .affinity
        .get_or_insert_with(Default::default)
        .node_affinity
        .get_or_insert_with(Default::default)
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(|| NodeSelector {
            node_selector_terms: vec![],
        });
    if required.node_selector_terms.is_empty() {
        required
            .node_selector_terms
            .push(NodeSelectorTerm::default());
    }
    for term in &mut required.node_selector_terms {
        term.match_expressions
            .get_or_insert_with(Vec::new)
            .push(not_there.clone());
    }
}

/// Creates `obj` in namespace `ns`; `what` names its kind in the error.
async fn create<K>(client: &Client, ns: &str, obj: &K, what: &str) -> Result<(), WorkloadError>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    Api::<K>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), obj)
        .await
        .map(|_| ())
        .map_err(api(format!("create {what}")))
}

/// Why the workload could not be deployed or its evidence collected.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A request to the API server failed (`what`: the request, e.g. `create namespace nd-x`).
    #[error("{what}: {source}")]
    Api { what: String, source: kube::Error },
    /// An undo could not be journaled: nothing is created without its undo on disk first.
    #[error("journal: {0}")]
    Journal(std::io::Error),
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// The ledger could not be read (its verdict is then unknown).
    #[error("{0}")]
    Evidence(String),
    /// The PersistentVolume controller did not take up the run's pre-bound volumes in time.
    #[error("{0}")]
    Volumes(String),
    /// The nodes could not be filled to their attach limit (`fillAttachLimit`): no limit
    /// published, or the filler pods not Running in time.
    #[error("{0}")]
    AttachLimit(String),
}

/// Waits until the PersistentVolume controller has taken up every volume of `names` (all of run
/// `run_id`): each phase `Available` (or already `Bound`). A claim made before its pre-bound
/// volume is in that controller's cache is dynamically provisioned instead, when its class's
/// provisioner is served (testenv's `nodedown-attach` since testenv runs the
/// external-provisioner): seen as a simulated instance bound to a `pvc-…` volume, its own
/// volume left Available.
pub async fn wait_volumes_taken_up(
    client: &Client,
    run_id: &str,
    names: &std::collections::HashSet<String>,
    timeout: std::time::Duration,
) -> Result<(), WorkloadError> {
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let lp =
        kube::api::ListParams::default().labels(&format!("{RUN_LABEL}={}", label_value(run_id)));
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let list = pvs
            .list(&lp)
            .await
            .map_err(api("list the run's PersistentVolumes"))?;
        let taken = list
            .items
            .iter()
            .filter(|pv| {
                pv.metadata.name.as_ref().is_some_and(|n| names.contains(n))
                    && pv
                        .status
                        .as_ref()
                        .and_then(|s| s.phase.as_deref())
                        .is_some_and(|p| p == "Available" || p == "Bound")
            })
            .count();
        if taken >= names.len() {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(WorkloadError::Volumes(format!(
                "the PersistentVolume controller took up {taken} of the run's {} volumes in {}s (is kube-controller-manager running?)",
                names.len(),
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

fn api(what: impl Into<String>) -> impl FnOnce(kube::Error) -> WorkloadError {
    let what = what.into();
    move |source| WorkloadError::Api { what, source }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorkloadError + '_ {
    move |source| WorkloadError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The claim of a Deployment's pods: `data-<app>`.
pub fn claim(spec: &WorkloadSpec, app: &str, run_id: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "metadata": {"name": claim_name(app), "labels": {RUN_LABEL: label_value(run_id)}},
        "spec": {
            "accessModes": [spec.access_mode.as_str()],
            "storageClassName": spec.storage_class,
            "volumeMode": spec.volume_mode.as_str(),
            "resources": {"requests": {"storage": spec.size}}
        }
    }))
    .expect("valid PersistentVolumeClaim")
}

/// The ledger's Service (its status port), through which the acks of a Deployment's pod are
/// read whatever the pod's name.
pub fn service(app: &str, run_id: &str) -> Service {
    serde_json::from_value(json!({
        "metadata": {"name": app, "labels": {"app": app, RUN_LABEL: label_value(run_id)}},
        "spec": {
            "selector": {"app": app},
            "ports": [{"name": "status", "port": LEDGER_PORT, "targetPort": LEDGER_PORT}]
        }
    }))
    .expect("valid Service")
}

fn pod_env() -> serde_json::Value {
    json!([
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    ])
}

/// The Deployment under test: one replica, the claim `data-<app>`.
pub fn deployment(spec: &WorkloadSpec, image: &str, pull_never: bool, run_id: &str) -> Deployment {
    let name = app_name(spec.kind);
    let mut d = json!({
        "metadata": {"name": name, "labels": {"app": name, RUN_LABEL: label_value(run_id)}},
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, RUN_LABEL: label_value(run_id)}},
                "spec": {
                    "terminationGracePeriodSeconds": 5,
                    "containers": [container(spec, name, image, pull_never, pod_env())],
                    "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name(name)}}]
                }
            }
        }
    });
    if let Some(strategy) = spec.strategy {
        d["spec"]["strategy"] = json!({"type": strategy.as_str()});
    }
    serde_json::from_value(d).expect("valid Deployment")
}

/// The StatefulSet of instance `name` (see `spec::instance_names`): its pods carry `app` (the
/// workload's, which the watchers select) and the instance label (its own selector with it).
/// Several replicas each on a node of their own, as a replicated database is run: a required
/// pod anti-affinity on the hostname among the StatefulSet's pods (the replacement of the one
/// on the dead node then goes to a node without a replica). `null` for one replica.
fn spread(spec: &WorkloadSpec, app: &str, name: &str) -> serde_json::Value {
    if spec.replicas <= 1 {
        return serde_json::Value::Null;
    }
    json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {"app": app, INSTANCE_LABEL: name}}
    }]}})
}

pub fn statefulset(
    spec: &WorkloadSpec,
    name: &str,
    image: &str,
    pull_never: bool,
    run_id: &str,
) -> StatefulSet {
    let app = app_name(spec.kind);
    let env = pod_env();
    let labels = json!({"app": app, INSTANCE_LABEL: name, RUN_LABEL: label_value(run_id)});
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": spec.replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": app, INSTANCE_LABEL: name}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "terminationGracePeriodSeconds": 5,
                    "containers": [container(spec, app, image, pull_never, env)],
                    "affinity": spread(spec, app, name),
                }
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {
                    "accessModes": [spec.access_mode.as_str()],
                    "storageClassName": spec.storage_class,
                    "volumeMode": spec.volume_mode.as_str(),
                    "resources": {"requests": {"storage": spec.size}}
                }
            }]
        }
    }))
    .expect("valid StatefulSet")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One replica of `kind` on a 1Gi ReadWriteOnce volume of the shared class.
    fn shared_spec(kind: WorkloadKind) -> WorkloadSpec {
        WorkloadSpec {
            kind,
            replicas: 1,
            instances: 1,
            storage_class: SHARED_CLASS.into(),
            size: "1Gi".into(),
            image: None,
            access_mode: AccessMode::ReadWriteOnce,
            controller: Default::default(),
            strategy: None,
            volume_mode: Default::default(),
            fill_attach_limit: false,
        }
    }

    #[test]
    fn manifests_fit_together() {
        let spec = shared_spec(WorkloadKind::Writer);
        let sts = statefulset(&spec, "writer", "img:1", true, "exp/v/1");
        let tpl = sts.spec.as_ref().unwrap();
        assert_eq!(
            tpl.volume_claim_templates.as_ref().unwrap()[0]
                .metadata
                .name
                .as_deref(),
            Some("data")
        );
        let pv = shared_volume(
            "ns1",
            "writer-0",
            "1Gi",
            AccessMode::ReadWriteOnce,
            "exp/v/1",
        );
        let claim = pv.spec.as_ref().unwrap().claim_ref.as_ref().unwrap();
        assert_eq!(claim.name.as_deref(), Some("data-writer-0"));
        assert_eq!(pv.metadata.labels.as_ref().unwrap()[RUN_LABEL], "exp.v.1");
        assert!(pv.spec.as_ref().unwrap().node_affinity.is_none());
    }

    #[test]
    fn a_deployment_mounts_one_claim_named_after_it() {
        let spec = WorkloadSpec {
            kind: WorkloadKind::Ledger,
            replicas: 1,
            instances: 1,
            storage_class: ATTACH_CLASS.into(),
            size: "1Gi".into(),
            image: None,
            access_mode: AccessMode::ReadWriteMany,
            controller: Controller::Deployment,
            strategy: Some(crate::spec::DeploymentStrategy::Recreate),
            volume_mode: Default::default(),
            fill_attach_limit: false,
        };
        let d = deployment(&spec, "img:1", true, "e/v/1");
        let ds = d.spec.unwrap();
        assert_eq!(ds.strategy.unwrap().type_.as_deref(), Some("Recreate"));
        let vols = ds.template.spec.unwrap().volumes.unwrap();
        assert_eq!(
            vols[0].persistent_volume_claim.as_ref().unwrap().claim_name,
            "data-ledger"
        );
        let c = claim(&spec, "ledger", "e/v/1");
        assert_eq!(
            c.spec.unwrap().access_modes.unwrap(),
            vec!["ReadWriteMany".to_string()]
        );
        let w = Workload {
            spec,
            namespace: "ns1".into(),
            run_id: "e/v/1".into(),
            image: "img:1".into(),
            preloaded: true,
            storage: StorageAccess::default(),
            nodes: vec![],
            homes: vec![],
            avoid: None,
            invocation: None,
        };
        assert_eq!(w.volume_owners(), vec!["ledger".to_string()]);
        assert_eq!(w.target_pod("ledger-0"), None);
        assert_eq!(w.status_proxy("ledger-0"), "services/ledger");
    }

    #[test]
    fn a_block_volume_is_a_device_the_ledger_writes_to() {
        let mut spec = shared_spec(WorkloadKind::Ledger);
        spec.storage_class = ATTACH_CLASS.into();
        spec.volume_mode = VolumeMode::Block;
        let sts =
            serde_json::to_value(statefulset(&spec, "ledger", "img:1", true, "e/v/1")).unwrap();
        let c = &sts["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["volumeDevices"][0]["devicePath"], BLOCK_DEVICE_PATH);
        assert!(c.get("volumeMounts").is_none(), "{c}");
        let cmd: Vec<&str> = c["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(cmd[1..4], ["ledger", "--device", BLOCK_DEVICE_PATH]);
        assert_eq!(
            sts["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"],
            "Block"
        );
        spec.controller = Controller::Deployment;
        let claim = serde_json::to_value(claim(&spec, "ledger", "e/v/1")).unwrap();
        assert_eq!(claim["spec"]["volumeMode"], "Block");
        // A filesystem volume keeps its mount.
        let fs = serde_json::to_value(statefulset(
            &shared_spec(WorkloadKind::Ledger),
            "ledger",
            "img:1",
            true,
            "e/v/1",
        ))
        .unwrap();
        let c = &fs["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["volumeMounts"][0]["mountPath"], "/data");
        assert!(c.get("volumeDevices").is_none());
    }

    #[test]
    fn a_lane_confines_the_pods_to_its_nodes() {
        let spec = shared_spec(WorkloadKind::Ledger);
        let mut sts = statefulset(&spec, "ledger", "img:1", true, "e/v/1");
        let pod = sts.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
        place(pod, &[], None);
        assert!(pod.affinity.is_none(), "alone: no affinity");
        place(pod, &["w3".to_string(), "w4".to_string()], None);
        let terms = &pod
            .affinity
            .as_ref()
            .unwrap()
            .node_affinity
            .as_ref()
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .unwrap()
            .node_selector_terms;
        let e = &terms[0].match_expressions.as_ref().unwrap()[0];
        assert_eq!(
            (e.key.as_str(), e.operator.as_str()),
            ("kubernetes.io/hostname", "In")
        );
        assert_eq!(
            e.values.as_deref(),
            Some(&["w3".to_string(), "w4".to_string()][..])
        );
    }

    #[test]
    fn a_fleet_is_one_statefulset_per_instance_drawn_to_its_home_node() {
        let mut spec = shared_spec(WorkloadKind::Ledger);
        spec.instances = 3;
        let w = Workload {
            spec: spec.clone(),
            namespace: "ns1".into(),
            run_id: "e/v/1".into(),
            image: "img:1".into(),
            preloaded: true,
            storage: StorageAccess::default(),
            nodes: vec!["w1".into(), "w2".into()],
            homes: vec!["w1".into()],
            avoid: Some("w2".into()),
            invocation: Some("inv1".into()),
        };
        assert_eq!(w.instance_names(), ["ledger", "ledger-i1", "ledger-i2"]);
        assert_eq!(
            w.volume_owners(),
            ["ledger-0", "ledger-i1-0", "ledger-i2-0"]
        );
        let sts = statefulset(&spec, "ledger-i1", "img:1", true, "e/v/1");
        let s = sts.spec.as_ref().unwrap();
        let sel = s.selector.match_labels.as_ref().unwrap();
        assert_eq!(sel["app"], "ledger", "the watchers' selector holds");
        assert_eq!(
            sel[INSTANCE_LABEL], "ledger-i1",
            "no StatefulSet selects another's pods"
        );
        let mut pod = s.template.spec.clone().unwrap();
        place(&mut pod, &w.nodes, w.home(1));
        // The runner's own node, kept out in every term (here the lane's one).
        let mut kept_off = pod.clone();
        avoid_node(&mut kept_off, w.avoid.as_deref().unwrap());
        let term = &kept_off
            .affinity
            .unwrap()
            .node_affinity
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .unwrap()
            .node_selector_terms;
        assert_eq!(term.len(), 1);
        let exprs = term[0].match_expressions.as_ref().unwrap();
        assert_eq!(
            (exprs[1].operator.as_str(), exprs[1].values.as_deref()),
            ("NotIn", Some(&["w2".to_string()][..]))
        );
        let mut anywhere = k8s_openapi::api::core::v1::PodSpec::default();
        avoid_node(&mut anywhere, "w9");
        assert_eq!(
            anywhere
                .affinity
                .unwrap()
                .node_affinity
                .unwrap()
                .required_during_scheduling_ignored_during_execution
                .unwrap()
                .node_selector_terms[0]
                .match_expressions
                .as_ref()
                .unwrap()
                .len(),
            1
        );
        let na = pod.affinity.unwrap().node_affinity.unwrap();
        let required = &na
            .required_during_scheduling_ignored_during_execution
            .unwrap()
            .node_selector_terms[0];
        assert_eq!(
            required.match_expressions.as_ref().unwrap()[0]
                .values
                .as_deref(),
            Some(&["w1".to_string(), "w2".to_string()][..]),
            "confined to the lane"
        );
        let preferred = &na
            .preferred_during_scheduling_ignored_during_execution
            .unwrap()[0];
        assert_eq!(preferred.weight, 100);
        assert_eq!(
            preferred.preference.match_expressions.as_ref().unwrap()[0]
                .values
                .as_deref(),
            Some(&["w1".to_string()][..]),
            "drawn to home, not bound to it"
        );
    }

    #[test]
    fn attaching_volume_names_the_driver_the_handle_and_the_access_mode() {
        let pv = attach_volume(
            "ns1",
            "ledger-0",
            "1Gi",
            AccessMode::ReadWriteOncePod,
            "e/v/1",
        );
        let spec = pv.spec.unwrap();
        let csi = spec.csi.unwrap();
        assert_eq!(csi.driver, ATTACH_DRIVER);
        assert_eq!(csi.volume_handle, "ns1.data-ledger-0");
        assert_eq!(
            spec.access_modes.unwrap(),
            vec!["ReadWriteOncePod".to_string()]
        );
        assert_eq!(spec.storage_class_name.as_deref(), Some(ATTACH_CLASS));
        assert_eq!(
            spec.claim_ref.unwrap().name.as_deref(),
            Some("data-ledger-0")
        );
    }

    #[test]
    fn a_runs_namespace_names_its_run_and_the_invocation_that_made_it() {
        let ns = namespace("nd-e-v-1-aaaaa", "e/v/1", Some("0123456789ab"));
        let labels = ns.metadata.labels.unwrap();
        assert_eq!(labels[RUN_LABEL], "e.v.1");
        assert_eq!(labels[crate::vocab::INVOCATION_LABEL], "0123456789ab");
        let bare = namespace("nd-e-v-1-aaaaa", "e/v/1", None);
        assert!(!bare
            .metadata
            .labels
            .unwrap()
            .contains_key(crate::vocab::INVOCATION_LABEL));
    }
}
