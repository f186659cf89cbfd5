//! Clusters (effectful): kind clusters created or reused through the `kind` CLI, node
//! containers reached through the Docker API (bollard), and the kube client for either a kind
//! cluster or an existing cluster from kubeconfig.

mod docker;
mod env;
pub use docker::*;
pub use env::{
    describe_target, facts, guard, resolve_context, targets_existing, ClusterOptions, Env, Session,
};

use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("cannot run `{bin}`: {source}; install kind or run testenv/up (it builds kind offline), or give --kind (NODEDOWN_KIND)")]
    KindMissing { bin: String, source: std::io::Error },
    #[error("`kind {args}` failed: {stderr}")]
    Kind { args: String, stderr: String },
    #[error("docker: {0}; is the Docker engine running? (testenv/up starts it)")]
    Docker(#[from] bollard::errors::Error),
    #[error("node image {image} is not in the Docker engine; run testenv/up to build it")]
    NodeImageMissing { image: String },
    #[error("kubeconfig: {0}")]
    Kubeconfig(String),
    #[error("node {node}: no container of kind cluster {cluster} has that name")]
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
    #[error("{0}")]
    Setup(String),
}

/// Where testenv/build-k8s.sh caches kind below its cache directory.
const TESTENV_KIND: &str = "kind-v0.33.0/kind";

/// A kind cluster, driven through the kind CLI.
#[derive(Debug, Clone)]
pub struct Kind {
    pub name: String,
    bin: PathBuf,
}

impl Kind {
    /// The cluster `name`, driven by `opts.kind_bin`, else `kind` on PATH, else testenv's
    /// cached build.
    pub fn new(name: &str, opts: &ClusterOptions) -> Kind {
        let bin = opts.kind_bin.clone().unwrap_or_else(|| {
            let on_path = std::env::var_os("PATH")
                .map(|p| {
                    std::env::split_paths(&p)
                        .map(|d| d.join("kind"))
                        .find(|k| k.is_file())
                })
                .unwrap_or_default();
            on_path.unwrap_or_else(|| opts.cache_dir.join(TESTENV_KIND))
        });
        Kind {
            name: name.to_string(),
            bin,
        }
    }

    async fn kind(&self, args: &[&str]) -> Result<String, ClusterError> {
        let out = Command::new(&self.bin)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|source| ClusterError::KindMissing {
                bin: self.bin.display().to_string(),
                source,
            })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(12).collect();
            return Err(ClusterError::Kind {
                args: args.join(" "),
                stderr: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    pub async fn exists(&self) -> Result<bool, ClusterError> {
        Ok(self
            .kind(&["get", "clusters"])
            .await?
            .lines()
            .any(|l| l.trim() == self.name))
    }

    pub async fn create(
        &self,
        config: &Path,
        image: &str,
        docker: &DockerNodes,
    ) -> Result<(), ClusterError> {
        if !docker.image_exists(image).await? {
            return Err(ClusterError::NodeImageMissing {
                image: image.to_string(),
            });
        }
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

/// A kube client for a kind cluster (from its own kubeconfig, whatever ~/.kube/config says),
/// with the API server's URL.
pub async fn client_for_kind(kind: &Kind) -> Result<(kube::Client, String), ClusterError> {
    let yaml = kind.kubeconfig().await?;
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

/// A kube client for an existing cluster: KUBECONFIG / ~/.kube/config, optionally a context;
/// with the API server's URL.
pub async fn client_for_context(
    context: Option<&str>,
) -> Result<(kube::Client, String), ClusterError> {
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let config = kube::Config::from_kubeconfig(&options)
        .await
        .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
    client_of(config)
}
