//! Reaching the cluster of a run: create or reuse a kind or k3d cluster, or connect to an
//! existing one by kubeconfig; and what that gives the runner — the API client, the node-control
//! backends it can use, and a way to provide the workload image. This is where kind, k3d and
//! Docker are known; the runner sees only [`Env`].

use crate::cluster::{
    client_for_context, client_for_local, k3d, ClusterError, DockerNodes, K3d, Kind, LocalCluster,
    NodeFlavor,
};
use crate::faults::{
    AgentNodeControl, Backend, Capability, DockerNodeControl, HooksNodeControl, NodeControl,
    PowerHooks,
};
use crate::spec::{Experiment, Provider};
use kube::Client;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Command-line choices about the cluster (flags and their environment variables, read once
/// by clap).
#[derive(Debug, Clone, Default)]
pub struct ClusterOptions {
    /// The provider, over the experiments' `cluster.provider` (`--provider`).
    pub provider: Option<Provider>,
    /// kind or k3d cluster name (default: the experiment's `cluster.name`, else `nodedown`).
    pub cluster_name: Option<String>,
    /// kind config (default: the experiment's `cluster.config`, else kind-configs/fast.yaml).
    pub kind_config: Option<PathBuf>,
    /// k3d config (default: the experiment's `cluster.config`, else nodedown's generated fast
    /// profile, [`k3d::fast_config`]).
    pub k3d_config: Option<PathBuf>,
    /// Use an existing cluster through this kubeconfig context instead of kind.
    pub context: Option<String>,
    /// Node image: kind's (default: what testenv built last, from `cache_dir/node-image`) or
    /// the k3s image for k3d (default: the k3d config's, else [`k3d::K3S_IMAGE`]).
    pub node_image: Option<String>,
    /// Where testenv caches its builds (the node image name, kind, k3d).
    pub cache_dir: PathBuf,
    /// The kind executable (default: `kind` on PATH, else testenv's cached build).
    pub kind_bin: Option<PathBuf>,
    /// The k3d executable (default: `k3d` on PATH, else testenv's cached build).
    pub k3d_bin: Option<PathBuf>,
    /// Where a generated cluster config is kept (the run's output directory).
    pub out: Option<PathBuf>,
    /// The user's power commands, when given.
    pub power_hooks: Option<PowerHooks>,
    /// Where the hooks' runs are logged (`<out>/hooks.jsonl`).
    pub hooks_log: Option<PathBuf>,
    /// Only this node-control backend (default: every one available, hooks first).
    pub node_control: Option<Backend>,
    /// The nodes of an existing cluster are containers of a throwaway test cluster: the agent
    /// may act inside them (on kind clusters nodedown manages, always).
    pub test_nodes: bool,
}

/// How the cluster was reached; `<out>/session.json`, read by `nodedown cleanup`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub provider: Provider,
    /// The kind or k3d cluster's name (`kindCluster` in session files of nodedown before k3d).
    #[serde(
        default,
        alias = "kindCluster",
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The kind or k3d config the cluster was made from (or found with), for reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The power hooks the runs used (cleanup powers nodes on with them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_hooks: Option<PowerHooks>,
    /// The one node-control backend the runs were limited to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_control: Option<Backend>,
    /// The agent may act inside container-based nodes.
    #[serde(default)]
    pub test_nodes: bool,
    /// The command line that started the invocation, and when (RFC 3339), for the reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
}

/// What the runs share: the API client, the node-control backends, and the kind or k3d
/// cluster when there is one.
pub struct Env {
    hooks_log: Option<PathBuf>,
    pub client: Client,
    /// The API server's URL.
    pub server: String,
    pub session: Session,
    docker: Option<DockerNodes>,
    local: Option<LocalCluster>,
    created: bool,
}

/// The cluster `name` of `provider`, driven by the CLI the options name.
fn local_cluster(provider: Provider, name: &str, opts: &ClusterOptions) -> Option<LocalCluster> {
    match provider {
        // The simulated cluster's control plane is a kind cluster.
        Provider::Kind | Provider::Kwok => Some(LocalCluster::Kind(Kind::new(
            name,
            opts.kind_bin.as_deref(),
            &opts.cache_dir,
        ))),
        Provider::K3d => Some(LocalCluster::K3d(K3d::new(
            name,
            opts.k3d_bin.as_deref(),
            &opts.cache_dir,
        ))),
        Provider::Existing => None,
    }
}

/// What the node-control backends of an invocation can do, in [`Env::node_controls`]'s order,
/// known before any cluster is reached: the user's power hooks when given, Docker for a kind or
/// k3d cluster (`local`), the API server, the node agent.
pub fn capabilities_of(provider: Provider, local: bool, hooks: bool) -> Vec<Capability> {
    let mut out = Vec::new();
    if hooks {
        out.push(Capability::power_hooks());
    }
    if provider == Provider::Kwok {
        out.push(Capability::kwok());
    }
    if local {
        let flavor = match provider {
            Provider::K3d => NodeFlavor::K3d,
            _ => NodeFlavor::Kind,
        };
        out.push(Capability::docker(flavor));
    }
    out.push(Capability::api());
    out.push(Capability::agent());
    out
}

/// [`capabilities_of`] the invocation `nodedown run` would make of these experiments and
/// options (the cluster of the first experiment, as [`Env::prepare`] chooses it).
pub fn capabilities(
    experiments: &[(PathBuf, Experiment)],
    opts: &ClusterOptions,
) -> Vec<Capability> {
    let provider = opts
        .provider
        .or_else(|| experiments.first().map(|(_, e)| e.cluster.provider))
        .unwrap_or_default();
    let local = opts.context.is_none() && provider != Provider::Existing;
    capabilities_of(provider, local, opts.power_hooks.is_some())
}

impl Env {
    /// The node-control backends this invocation can reach, in order of preference (the
    /// user's power hooks, Docker, the node agent); empty: none, faults are refused. The agent
    /// needs the workload `image` to apply faults (healing works without it).
    pub fn node_controls(&self, image: Option<&(String, bool)>) -> Vec<Arc<dyn NodeControl>> {
        let mut out: Vec<Arc<dyn NodeControl>> = Vec::new();
        if let Some(hooks) = &self.session.power_hooks {
            out.push(Arc::new(HooksNodeControl::new(
                hooks.clone(),
                self.client.clone(),
                self.hooks_log.clone(),
            )));
        }
        if self.session.provider == Provider::Kwok {
            out.push(Arc::new(crate::faults::KwokNodeControl::new(
                self.client.clone(),
            )));
        }
        if let (Some(d), Some(local)) = (&self.docker, &self.local) {
            out.push(Arc::new(DockerNodeControl::new(d.clone(), local.flavor())));
        }
        out.push(Arc::new(crate::faults::ApiPodControl::new(
            self.client.clone(),
        )));
        out.push(Arc::new(AgentNodeControl::new(
            self.client.clone(),
            image.cloned(),
            self.session.test_nodes || self.session.provider != Provider::Existing,
        )));
        debug_assert_eq!(
            out.iter().map(|c| c.capability()).collect::<Vec<_>>(),
            capabilities_of(
                self.session.provider,
                self.docker.is_some() && self.local.is_some(),
                self.session.power_hooks.is_some()
            ),
            "the capabilities checked before the runs are the backends' own"
        );
        out
    }

    /// The kubeconfig of the cluster nodedown manages (kind, k3d, the simulated one).
    pub async fn local_kubeconfig(&self) -> Option<Result<String, ClusterError>> {
        Some(self.local.as_ref()?.kubeconfig().await)
    }

    /// Reconnects from a session file (for `cleanup`).
    pub async fn from_session(
        session: Session,
        opts: &ClusterOptions,
    ) -> Result<Env, ClusterError> {
        let local = session
            .cluster
            .as_deref()
            .and_then(|name| local_cluster(session.provider, name, opts));
        let ((client, server), docker) = match &local {
            Some(local) => (
                client_for_local(local).await?,
                Some(DockerNodes::connect()?),
            ),
            None => (client_for_context(session.context.as_deref()).await?, None),
        };
        Ok(Env {
            hooks_log: opts.hooks_log.clone(),
            client,
            server,
            docker,
            session,
            local,
            created: false,
        })
    }

    /// Creates or reuses the cluster for these experiments; `step` reports progress.
    pub async fn prepare(
        experiments: &[(PathBuf, Experiment)],
        opts: &ClusterOptions,
        step: &dyn Fn(&str),
    ) -> Result<Env, ClusterError> {
        let Some((file, spec)) = experiments.first().map(|(f, e)| (f, &e.cluster)) else {
            return Err(ClusterError::Setup("no experiments".into()));
        };
        let provider = opts.provider.unwrap_or(spec.provider);
        if opts.context.is_some() || provider == Provider::Existing {
            step(&format!(
                "using the existing cluster (context {})",
                opts.context.as_deref().unwrap_or("current")
            ));
            let (client, server) = client_for_context(opts.context.as_deref()).await?;
            client.apiserver_version().await.map_err(|e| {
                ClusterError::Kubeconfig(format!("the API server does not answer: {e}"))
            })?;
            return Ok(Env {
                hooks_log: opts.hooks_log.clone(),
                client,
                server,
                session: Session {
                    provider: Provider::Existing,
                    cluster: None,
                    context: Some(resolve_context(opts.context.as_deref())?),
                    profile: None,
                    power_hooks: opts.power_hooks.clone(),
                    node_control: opts.node_control,
                    test_nodes: opts.test_nodes,
                    command: None,
                    started: None,
                },
                docker: None,
                local: None,
                created: false,
            });
        }
        let name = opts
            .cluster_name
            .clone()
            .or(spec.name.clone())
            .unwrap_or_else(|| default_cluster_name(provider).into());
        // The experiment's own config file is the provider's only when `--provider` did not
        // switch to another one.
        let mut spec_config = (provider == spec.provider)
            .then(|| crate::spec::cluster_config_path(file, spec))
            .flatten();
        // The simulated cluster's control plane: nodedown's own kind config unless one is
        // given, written beside the runs (it is the one the cluster was made from).
        if provider == Provider::Kwok && spec_config.is_none() && opts.kind_config.is_none() {
            let dir = opts.out.clone().unwrap_or_else(std::env::temp_dir);
            let p = dir.join("kind-simulated.yaml");
            std::fs::create_dir_all(&dir)?;
            std::fs::write(&p, crate::cluster::kwok::DEFAULT_CONFIG)?;
            spec_config = Some(p);
        }
        let local = local_cluster(provider, &name, opts).expect("kind or k3d");
        let docker = DockerNodes::connect()?;
        docker.ping().await?;
        let mut created = false;
        let profile;
        if local.exists().await? {
            if !spec.reuse && opts.cluster_name.is_none() {
                let delete = match provider {
                    Provider::K3d => format!("k3d cluster delete {name}"),
                    _ => format!("kind delete cluster --name {name}"),
                };
                return Err(ClusterError::Setup(format!(
                    "{} cluster {name} exists and the experiment says reuse: false; delete it ({delete}) or pick another name with --cluster-name",
                    provider.as_str()
                )));
            }
            step(&format!("reusing {} {name}", what_cluster(provider)));
            profile = match provider {
                Provider::K3d => opts.k3d_config.clone().or(spec_config),
                _ => Some(kind_config(opts, spec_config)),
            }
            .map(|p| p.display().to_string());
        } else {
            let (config, image) = match provider {
                Provider::K3d => k3d_config(&name, opts, spec_config)?,
                _ => (
                    kind_config(opts, spec_config),
                    opts.node_image
                        .clone()
                        .unwrap_or_else(|| default_node_image(&opts.cache_dir)),
                ),
            };
            if !config.is_file() {
                return Err(ClusterError::Setup(format!(
                    "{} config {} not found; give --{}-config or cluster.config in the experiment",
                    provider.as_str(),
                    config.display(),
                    provider.as_str()
                )));
            }
            step(&format!(
                "creating {} {name} from {} with {image}",
                what_cluster(provider),
                config.display()
            ));
            local.create(&config, &image, &docker).await?;
            created = true;
            profile = Some(config.display().to_string());
        }
        let (client, server) = client_for_local(&local).await?;
        Ok(Env {
            hooks_log: opts.hooks_log.clone(),
            client,
            server,
            session: Session {
                provider,
                cluster: Some(name),
                context: Some(local.context()),
                profile,
                power_hooks: opts.power_hooks.clone(),
                node_control: opts.node_control,
                test_nodes: true,
                command: None,
                started: None,
            },
            docker: Some(docker),
            local: Some(local),
            created,
        })
    }

    /// The workload image: the user's, or nodedown's own, built from this executable and loaded
    /// into every kind node. Returns the reference and whether it was preloaded.
    pub async fn workload_image(
        &self,
        user_image: Option<&str>,
        scope: Option<&[String]>,
        step: &dyn Fn(&str),
    ) -> Result<(String, bool), ClusterError> {
        if let Some(image) = user_image {
            return Ok((image.to_string(), false));
        }
        let (Some(docker), Some(local)) = (&self.docker, &self.local) else {
            return Err(ClusterError::Setup(
                "on an existing cluster, set workload.image to an image of nodedown pushed to a registry the cluster can pull from (see README)".into(),
            ));
        };
        let exe = std::env::current_exe()?;
        let files = crate::workload::image::image_files(&exe)
            .map_err(|e| ClusterError::Setup(e.to_string()))?;
        let archive =
            std::env::temp_dir().join(format!("nodedown-image-{}.tar", std::process::id()));
        let reference = crate::workload::image::write_archive(&files, &archive)
            .map_err(|e| ClusterError::Setup(e.to_string()))?;
        let result = load_into_nodes(docker, local, &reference, &archive, scope, step).await;
        let _ = std::fs::remove_file(&archive);
        result?;
        Ok((reference, true))
    }

    /// The backend the user chose to apply faults with (`--node-control`), if any. Fencing
    /// uses whichever backend can power nodes off.
    pub fn fault_backend(&self) -> Option<Backend> {
        self.session.node_control
    }

    /// Whether [`Env::finish`] will delete the cluster (created here, not retained).
    pub fn will_delete(&self, retain: bool) -> bool {
        self.created && !retain && self.local.is_some()
    }

    /// Deletes a kind or k3d cluster this invocation created, unless retained.
    pub async fn finish(&self, retain: bool) -> Result<(), ClusterError> {
        if let (true, false, Some(local)) = (self.created, retain, &self.local) {
            local.delete().await?;
        }
        Ok(())
    }
}

/// How progress names a cluster nodedown makes or reuses.
fn what_cluster(provider: Provider) -> &'static str {
    match provider {
        Provider::Kwok => "simulated cluster (a kind control plane, kwok's nodes)",
        Provider::K3d => "k3d cluster",
        _ => "kind cluster",
    }
}

/// The kind config: `--kind-config`, else the experiment's, else the fast profile.
fn kind_config(opts: &ClusterOptions, spec_config: Option<PathBuf>) -> PathBuf {
    opts.kind_config
        .clone()
        .or(spec_config)
        .unwrap_or_else(|| PathBuf::from("kind-configs/fast.yaml"))
}

/// The k3d config to create cluster `name` from and its k3s image: the user's file (`--k3d-config`
/// or the experiment's `cluster.config`), else nodedown's fast profile written to the run's
/// output directory (`k3d-config.yaml`).
fn k3d_config(
    name: &str,
    opts: &ClusterOptions,
    spec_config: Option<PathBuf>,
) -> Result<(PathBuf, String), ClusterError> {
    if let Some(path) = opts.k3d_config.clone().or(spec_config) {
        let written = std::fs::read_to_string(&path)
            .ok()
            .and_then(|y| k3d::config_image(&y));
        let image = opts
            .node_image
            .clone()
            .or(written)
            .unwrap_or_else(|| k3d::K3S_IMAGE.to_string());
        return Ok((path, image));
    }
    let image = opts
        .node_image
        .clone()
        .unwrap_or_else(|| k3d::K3S_IMAGE.to_string());
    let dir = opts.out.clone().unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("k3d-config-{name}.yaml"));
    let config = k3d::fast_config(name, &image, 3, crate::workload::DEFAULT_SHARED_DIR);
    std::fs::write(&path, config)?;
    Ok((path, image))
}

/// Imports an image archive into every running node of the cluster that lacks it, as
/// `kind load image-archive` and `k3d image import` do.
async fn load_into_nodes(
    docker: &DockerNodes,
    cluster: &LocalCluster,
    reference: &str,
    archive: &Path,
    scope: Option<&[String]>,
    step: &dyn Fn(&str),
) -> Result<(), ClusterError> {
    for container in docker
        .cluster_containers(cluster.name(), cluster.flavor())
        .await?
    {
        // Confined to some nodes (`--nodes`): only theirs (a node container is named after its
        // node); another invocation's node may be down or frozen in its own run meanwhile.
        if scope.is_some_and(|s| !s.contains(&container)) {
            continue;
        }
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
        step(&format!("loading {reference} into {container}"));
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
                Some(archive),
            )
            .await?;
    }
    Ok(())
}

/// The cluster nodedown makes for `provider` when neither `--cluster-name` nor the experiment
/// names one.
pub fn default_cluster_name(provider: Provider) -> &'static str {
    match provider {
        Provider::Kwok => "nodedown-sim",
        _ => "nodedown",
    }
}

pub fn default_node_image(cache_dir: &Path) -> String {
    std::fs::read_to_string(cache_dir.join("node-image"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "nodedown/node:latest".into())
}

/// The kubeconfig context an existing-cluster run would use: `--context`, else the current one.
pub fn resolve_context(context: Option<&str>) -> Result<String, ClusterError> {
    if let Some(c) = context {
        return Ok(c.to_string());
    }
    let config = match kube::config::Kubeconfig::read() {
        Ok(c) => c,
        // In a pod without a kubeconfig: its service account.
        Err(_) if crate::cluster::in_a_pod() => return Ok(crate::cluster::IN_CLUSTER.into()),
        Err(e) => return Err(ClusterError::Kubeconfig(e.to_string())),
    };
    config.current_context.ok_or_else(|| {
        ClusterError::Kubeconfig(
            "the kubeconfig names no current context; give --context".to_string(),
        )
    })
}

/// Whether these experiments run on an existing cluster (not a kind cluster nodedown manages).
pub fn targets_existing(experiments: &[(PathBuf, Experiment)], opts: &ClusterOptions) -> bool {
    opts.context.is_some()
        || match opts.provider {
            Some(p) => p == Provider::Existing,
            None => experiments
                .iter()
                .any(|(_, e)| e.cluster.provider == Provider::Existing),
        }
}

/// The guard against faulting the wrong cluster: a destructive run on an existing cluster needs
/// its context named explicitly. Pure; `Err` is the message for the user.
pub fn guard(context: &str, allowed: Option<&str>) -> Result<(), String> {
    match allowed {
        Some(a) if a == context => Ok(()),
        Some(a) => Err(format!(
            "refusing to fault the cluster of context `{context}`: --allow-context names `{a}`; name the context you mean to break (--allow-context {context} or NODEDOWN_ALLOW_CONTEXT={context})"
        )),
        None => Err(format!(
            "refusing to fault the cluster of context `{context}`, which nodedown did not create: name it to confirm (--allow-context {context}, or NODEDOWN_ALLOW_CONTEXT={context} in CI); --dry-run shows what would be done"
        )),
    }
}

/// What a run is about to act on, printed before the first fault.
pub async fn describe_target(env: &Env) -> Result<String, ClusterError> {
    use k8s_openapi::api::core::v1::Node;
    let version =
        env.client.apiserver_version().await.map_err(|e| {
            ClusterError::Kubeconfig(format!("the API server does not answer: {e}"))
        })?;
    let nodes = kube::Api::<Node>::all(env.client.clone())
        .list(&Default::default())
        .await
        .map_err(|e| ClusterError::Kubeconfig(format!("cannot list nodes: {e}")))?;
    let names: Vec<String> = nodes
        .items
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    Ok(format!(
        "target: context {}, API server {}, Kubernetes {}, {} nodes ({})",
        env.session.context.as_deref().unwrap_or("(current)"),
        env.server,
        version.git_version,
        names.len(),
        crate::units::some_of(&names, 8)
    ))
}

/// Where a run happens: versions of the API server and every node, the storage class with its
/// provisioner and, for a CSI driver, whether it attaches.
pub async fn facts(
    client: &Client,
    storage_class: &str,
) -> Result<crate::timeline::ClusterFacts, kube::Error> {
    use crate::timeline::{ClusterFacts, NodeInfo};
    use k8s_openapi::api::core::v1::Node;
    use k8s_openapi::api::storage::v1::StorageClass;
    let version = client.apiserver_version().await?;
    let nodes = kube::Api::<Node>::all(client.clone())
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .map(|n| {
            let info = n.status.and_then(|s| s.node_info);
            NodeInfo {
                name: n.metadata.name.unwrap_or_default(),
                os_image: info
                    .as_ref()
                    .map(|i| i.os_image.clone())
                    .unwrap_or_default(),
                kernel: info
                    .as_ref()
                    .map(|i| i.kernel_version.clone())
                    .unwrap_or_default(),
                container_runtime: info
                    .as_ref()
                    .map(|i| i.container_runtime_version.clone())
                    .unwrap_or_default(),
                kubelet: info.map(|i| i.kubelet_version).unwrap_or_default(),
            }
        })
        .collect();
    let provisioner = kube::Api::<StorageClass>::all(client.clone())
        .get_opt(storage_class)
        .await?
        .map(|sc| sc.provisioner);
    let attach_required = match &provisioner {
        Some(p) => attach_required(client, p).await?,
        None => None,
    };
    Ok(ClusterFacts {
        kubernetes: version.git_version,
        nodes,
        storage_class: storage_class.to_string(),
        provisioner,
        attach_required,
    })
}

/// Whether the CSI driver `provisioner` attaches its volumes (its CSIDriver's
/// `attachRequired`, true when unset); `None` when it has no CSIDriver object.
pub async fn attach_required(
    client: &Client,
    provisioner: &str,
) -> Result<Option<bool>, kube::Error> {
    Ok(
        kube::Api::<k8s_openapi::api::storage::v1::CSIDriver>::all(client.clone())
            .get_opt(provisioner)
            .await?
            .map(|d| d.spec.attach_required.unwrap_or(true)),
    )
}

/// What the cluster says of a CSI driver beyond its class: the version its CSIDriver object
/// publishes (the `app.kubernetes.io/version` label, the Kubernetes recommended label; a CSI
/// driver's own version, GetPluginInfo's vendor_version, is not visible through the API) and the
/// nodes whose CSINode lists the driver (where its node plugin registered).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriverFacts {
    pub version: Option<String>,
    pub registered_nodes: Vec<String>,
    /// The topology keys the driver's node plugins publish on their CSINodes (sorted, once
    /// each): a topology-aware driver, whose provisioned volumes are reachable from their
    /// topology domain only (a zonal disk).
    pub topology_keys: Vec<String>,
}

pub async fn driver_facts(client: &Client, driver: &str) -> Result<DriverFacts, kube::Error> {
    use k8s_openapi::api::storage::v1::{CSIDriver, CSINode};
    let version = kube::Api::<CSIDriver>::all(client.clone())
        .get_opt(driver)
        .await?
        .and_then(|d| d.metadata.labels)
        .and_then(|l| l.get("app.kubernetes.io/version").cloned());
    let csinodes = kube::Api::<CSINode>::all(client.clone())
        .list(&Default::default())
        .await?
        .items;
    let mut registered_nodes = Vec::new();
    let mut topology_keys = std::collections::BTreeSet::new();
    for n in csinodes {
        if let Some(d) = n.spec.drivers.iter().find(|d| d.name == driver) {
            topology_keys.extend(d.topology_keys.iter().flatten().cloned());
            registered_nodes.extend(n.metadata.name);
        }
    }
    registered_nodes.sort();
    Ok(DriverFacts {
        version,
        registered_nodes,
        topology_keys: topology_keys.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_needs_the_context_named() {
        assert!(guard("prod", Some("prod")).is_ok());
        let e = guard("prod", None).unwrap_err();
        assert!(e.contains("--allow-context prod"), "{e}");
        let e = guard("prod", Some("staging")).unwrap_err();
        assert!(e.contains("names `staging`"), "{e}");
    }
}
