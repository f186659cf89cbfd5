//! Clusters (effectful): kind and k3d clusters created or reused through their CLIs (one
//! [`LocalCluster`] seam), node containers reached through the Docker API (bollard), and the
//! kube client for either such a cluster or an existing cluster from kubeconfig.

pub mod access;
pub mod bundle;
mod docker;
pub mod k3d;
pub mod lock;
pub use docker::*;
pub use k3d::K3d;
pub mod kwok;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot run `{bin}`: {source}; {hint}")]
    ToolMissing {
        bin: String,
        source: std::io::Error,
        hint: &'static str,
    },
    #[error("`{tool} {args}` failed: {stderr}")]
    Tool {
        tool: &'static str,
        args: String,
        stderr: String,
    },
    #[error("docker: {0}; is the Docker engine running? (testenv/up starts it)")]
    Docker(#[from] bollard::errors::Error),
    #[error("node image {image} is not in the Docker engine; {hint}")]
    NodeImageMissing { image: String, hint: String },
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    #[error("node {node}: no node container of {cluster} has that name")]
    NoContainer { node: String, cluster: String },
    #[error("in node {container}, `{command}` exited with {code}: {output}")]
    Exec {
        container: String,
        command: String,
        code: i64,
        output: String,
    },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{}: {source}", .path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A request to the API server failed (`what`: the request).
    #[error("{what}: {source}")]
    Api { what: String, source: kube::Error },
    #[error("{0}")]
    Setup(String),
}

/// Where testenv/build-k8s.sh caches kind below its cache directory.
const TESTENV_KIND: &str = "kind-v0.33.0/kind";
const KIND_HINT: &str =
    "install kind or run testenv/up (it builds kind offline), or give --kind (NODEDOWN_KIND)";

/// `tool` on PATH, else `fallback` (testenv's cached build).
pub(crate) fn find_tool(tool: &str, fallback: &Path) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(tool))
                .find(|k| k.is_file())
        })
        .unwrap_or_else(|| fallback.to_path_buf())
}

/// Runs a cluster tool's CLI; its stdout, or its stderr's last lines as the error.
async fn run_tool(
    tool: &'static str,
    bin: &Path,
    hint: &'static str,
    args: &[&str],
) -> Result<String, ClusterError> {
    let out = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|source| ClusterError::ToolMissing {
            bin: bin.display().to_string(),
            source,
            hint,
        })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(12).collect();
        return Err(ClusterError::Tool {
            tool,
            args: args.join(" "),
            stderr: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A kind cluster, driven through the kind CLI.
#[derive(Debug, Clone)]
pub struct Kind {
    pub name: String,
    bin: PathBuf,
}

impl Kind {
    /// The cluster `name`, driven by `bin`, else `kind` on PATH, else testenv's cached build.
    pub fn new(name: &str, bin: Option<&Path>, cache_dir: &Path) -> Kind {
        Kind {
            name: name.to_string(),
            bin: bin
                .map(Path::to_path_buf)
                .unwrap_or_else(|| find_tool("kind", &cache_dir.join(TESTENV_KIND))),
        }
    }

    async fn kind(&self, args: &[&str]) -> Result<String, ClusterError> {
        run_tool("kind", &self.bin, KIND_HINT, args).await
    }

    pub async fn exists(&self) -> Result<bool, ClusterError> {
        Ok(self
            .kind(&["get", "clusters"])
            .await?
            .lines()
            .any(|l| l.trim() == self.name))
    }

    pub async fn create(&self, config: &Path, image: &str) -> Result<(), ClusterError> {
        let config = config.display().to_string();
        self.kind(&[
            "create", "cluster", "--name", &self.name, "--image", image, "--config", &config,
            "--wait", "5m",
        ])
        .await
        .map(|_| ())
    }

    pub async fn delete(&self) -> Result<(), ClusterError> {
        self.kind(&["delete", "cluster", "--name", &self.name])
            .await
            .map(|_| ())
    }

    /// The cluster's kubeconfig (as `kind get kubeconfig` prints it).
    pub async fn kubeconfig(&self) -> Result<String, ClusterError> {
        self.kind(&["get", "kubeconfig", "--name", &self.name])
            .await
    }

    pub fn context(&self) -> String {
        format!("kind-{}", self.name)
    }
}

/// A cluster nodedown creates, reuses and deletes itself, whose nodes are Docker containers.
#[derive(Debug, Clone)]
pub enum LocalCluster {
    Kind(Kind),
    K3d(K3d),
}

impl LocalCluster {
    pub fn name(&self) -> &str {
        match self {
            LocalCluster::Kind(k) => &k.name,
            LocalCluster::K3d(k) => &k.name,
        }
    }

    pub fn flavor(&self) -> NodeFlavor {
        match self {
            LocalCluster::Kind(_) => NodeFlavor::Kind,
            LocalCluster::K3d(_) => NodeFlavor::K3d,
        }
    }

    pub fn context(&self) -> String {
        match self {
            LocalCluster::Kind(k) => k.context(),
            LocalCluster::K3d(k) => k.context(),
        }
    }

    pub async fn exists(&self) -> Result<bool, ClusterError> {
        match self {
            LocalCluster::Kind(k) => k.exists().await,
            LocalCluster::K3d(k) => k.exists().await,
        }
    }

    /// Creates the cluster from the tool's own config file, with node image `image` — which
    /// must already be in the Docker engine (nodedown starts no image pulls).
    pub async fn create(
        &self,
        config: &Path,
        image: &str,
        docker: &DockerNodes,
    ) -> Result<(), ClusterError> {
        if !docker.image_exists(image).await? {
            let hint = match self {
                LocalCluster::Kind(_) => "run testenv/up to build it, or give --node-image".into(),
                LocalCluster::K3d(_) => format!(
                    "pull it first (docker pull {image}); nodedown does not start image pulls"
                ),
            };
            return Err(ClusterError::NodeImageMissing {
                image: image.to_string(),
                hint,
            });
        }
        match self {
            LocalCluster::Kind(k) => k.create(config, image).await,
            LocalCluster::K3d(k) => k.create(config, image).await,
        }
    }

    pub async fn delete(&self) -> Result<(), ClusterError> {
        match self {
            LocalCluster::Kind(k) => k.delete().await,
            LocalCluster::K3d(k) => k.delete().await,
        }
    }

    pub async fn kubeconfig(&self) -> Result<String, ClusterError> {
        match self {
            LocalCluster::Kind(k) => k.kubeconfig().await,
            LocalCluster::K3d(k) => k.kubeconfig().await,
        }
    }
}

/// A kube client for a cluster nodedown manages (from the tool's own kubeconfig, whatever
/// ~/.kube/config says), with the API server's URL.
pub async fn client_for_local(
    cluster: &LocalCluster,
) -> Result<(kube::Client, String), ClusterError> {
    let yaml = cluster.kubeconfig().await?;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml)
        .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
    client_of(config)
}

fn client_of(config: kube::Config) -> Result<(kube::Client, String), ClusterError> {
    let url = config.cluster_url.to_string();
    let client =
        kube::Client::try_from(config).map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
    Ok((client, url))
}

pub use crate::vocab::IN_CLUSTER;

/// Why the pods of a namespace did not all go.
#[derive(Debug)]
pub enum PodsNotGone {
    /// This many were still there at the deadline.
    Left(usize),
    /// They could not be listed.
    Api(kube::Error),
}

/// Waits until namespace `ns` has no pod (or is gone), polling every `poll`, at most `timeout`.
pub async fn wait_no_pods(
    client: &kube::Client,
    ns: &str,
    timeout: std::time::Duration,
    poll: std::time::Duration,
) -> Result<(), PodsNotGone> {
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(client.clone(), ns);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let left = match pods.list(&Default::default()).await {
            Ok(l) => l.items.len(),
            Err(kube::Error::Api(s)) if s.code == 404 => 0,
            Err(e) => return Err(PodsNotGone::Api(e)),
        };
        if left == 0 {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(PodsNotGone::Left(left));
        }
        tokio::time::sleep(poll).await;
    }
}

/// Whether this process runs in a pod with a service account (the API server's address in the
/// environment and the account's token mounted).
pub fn in_a_pod() -> bool {
    std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
        && Path::new("/var/run/secrets/kubernetes.io/serviceaccount/token").is_file()
}

/// A kube client for an existing cluster: KUBECONFIG / ~/.kube/config, optionally a context
/// (`in-cluster`: the pod's service account); with the API server's URL.
pub async fn client_for_context(
    context: Option<&str>,
) -> Result<(kube::Client, String), ClusterError> {
    let no_kubeconfig = kube::config::Kubeconfig::read().is_err();
    if context == Some(IN_CLUSTER) || (context.is_none() && no_kubeconfig && in_a_pod()) {
        let config = kube::Config::incluster().map_err(|e| {
            ClusterError::Kubeconfig(format!(
                "context {IN_CLUSTER}: not in a pod with a service account ({e})"
            ))
        })?;
        return client_of(config);
    }
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let config = kube::Config::from_kubeconfig(&options)
        .await
        .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
    client_of(config)
}
