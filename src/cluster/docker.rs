//! Node containers through the Docker API.

use super::ClusterError;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::query_parameters::{KillContainerOptions, ListContainersOptions};
use futures::StreamExt;
use std::collections::HashMap;
use tokio::io::AsyncWriteExt;

/// The label kind puts on every node container of a cluster.
pub const KIND_CLUSTER_LABEL: &str = "io.x-k8s.kind.cluster";

#[derive(Clone)]
pub struct DockerNodes {
    docker: bollard::Docker,
}

impl DockerNodes {
    pub fn connect() -> Result<DockerNodes, ClusterError> {
        Ok(DockerNodes {
            docker: bollard::Docker::connect_with_local_defaults()?,
        })
    }

    pub async fn ping(&self) -> Result<(), ClusterError> {
        self.docker.ping().await?;
        Ok(())
    }

    pub async fn image_exists(&self, image: &str) -> Result<bool, ClusterError> {
        match self.docker.inspect_image(image).await {
            Ok(_) => Ok(true),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Names of the node containers of kind cluster `cluster` (running or not).
    pub async fn cluster_containers(&self, cluster: &str) -> Result<Vec<String>, ClusterError> {
        let mut filters = HashMap::new();
        filters.insert(
            "label".to_string(),
            vec![format!("{KIND_CLUSTER_LABEL}={cluster}")],
        );
        let list = self
            .docker
            .list_containers(Some(ListContainersOptions {
                all: true,
                filters: Some(filters),
                ..Default::default()
            }))
            .await?;
        let mut names: Vec<String> = list
            .into_iter()
            .filter_map(|c| c.names.and_then(|n| n.into_iter().next()))
            .map(|n| n.trim_start_matches('/').to_string())
            .collect();
        names.sort();
        Ok(names)
    }

    pub async fn is_running(&self, container: &str) -> Result<bool, ClusterError> {
        let info = self.docker.inspect_container(container, None).await?;
        Ok(info.state.and_then(|s| s.running).unwrap_or(false))
    }

    /// Hard power-off: SIGKILL to the node container's init.
    pub async fn kill(&self, container: &str) -> Result<(), ClusterError> {
        match self
            .docker
            .kill_container(
                container,
                Some(KillContainerOptions {
                    signal: "SIGKILL".into(),
                }),
            )
            .await
        {
            Ok(()) => Ok(()),
            // 409: not running (already off) — the state we want.
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409, ..
            }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Freezes every process of the container (cgroup freezer): the node is hung, not dead.
    pub async fn pause(&self, container: &str) -> Result<(), ClusterError> {
        self.docker.pause_container(container).await?;
        Ok(())
    }

    /// Thaws a paused container; harmless when it is not paused (or not running).
    pub async fn unpause(&self, container: &str) -> Result<(), ClusterError> {
        match self.docker.unpause_container(container).await {
            Ok(()) => Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409 | 500,
                message,
            }) if message.contains("not paused") || message.contains("is not running") => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Sets the container's restart policy: `None` is "no" (a clean poweroff stays off), `Some(n)`
    /// is kind's own `on-failure:n` (kind creates node containers with `on-failure:1`).
    pub async fn set_restart_on_failure(
        &self,
        container: &str,
        retries: Option<i64>,
    ) -> Result<(), ClusterError> {
        use bollard::models::{ContainerUpdateBody, RestartPolicy, RestartPolicyNameEnum};
        let policy = match retries {
            None => RestartPolicy {
                name: Some(RestartPolicyNameEnum::NO),
                maximum_retry_count: None,
            },
            Some(n) => RestartPolicy {
                name: Some(RestartPolicyNameEnum::ON_FAILURE),
                maximum_retry_count: Some(n),
            },
        };
        self.docker
            .update_container(
                container,
                ContainerUpdateBody {
                    restart_policy: Some(policy),
                    ..Default::default()
                },
            )
            .await?;
        Ok(())
    }

    pub async fn start(&self, container: &str) -> Result<(), ClusterError> {
        match self.docker.start_container(container, None).await {
            Ok(()) => Ok(()),
            // 304: already started.
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 304, ..
            }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Runs `cmd` in `container` (streaming the file `stdin` to it when given); fails on a
    /// non-zero exit.
    pub async fn exec(
        &self,
        container: &str,
        cmd: &[&str],
        stdin: Option<&std::path::Path>,
    ) -> Result<String, ClusterError> {
        let exec = self
            .docker
            .create_exec(
                container,
                CreateExecOptions {
                    cmd: Some(cmd.to_vec()),
                    attach_stdin: Some(stdin.is_some()),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    ..Default::default()
                },
            )
            .await?;
        let mut text = String::new();
        if let StartExecResults::Attached {
            mut output,
            mut input,
        } = self
            .docker
            .start_exec(
                &exec.id,
                Some(StartExecOptions {
                    detach: false,
                    ..Default::default()
                }),
            )
            .await?
        {
            let writer = async move {
                if let Some(path) = stdin {
                    let mut file = tokio::fs::File::open(path).await?;
                    tokio::io::copy(&mut file, &mut input).await?;
                }
                input.shutdown().await
            };
            let reader = async {
                while let Some(chunk) = output.next().await {
                    text.push_str(&chunk?.to_string());
                }
                Ok::<(), bollard::errors::Error>(())
            };
            let (w, r) = tokio::join!(writer, reader);
            r?;
            w?;
        }
        let code = self
            .docker
            .inspect_exec(&exec.id)
            .await?
            .exit_code
            .unwrap_or(-1);
        if code != 0 {
            return Err(ClusterError::Exec {
                container: container.to_string(),
                command: cmd.join(" "),
                code,
                output: text.trim().chars().take(2000).collect(),
            });
        }
        Ok(text)
    }
}

impl DockerNodes {
    /// The first `die` event of `container` at or after `not_before`, as Docker recorded it
    /// (`timeNano`), waiting at most `timeout`. Events are asked for from a second before
    /// `not_before`, so a death that happened before this call is still found.
    pub async fn die_time(
        &self,
        container: &str,
        not_before: std::time::SystemTime,
        timeout: std::time::Duration,
    ) -> Result<Option<std::time::SystemTime>, ClusterError> {
        use std::time::{Duration, UNIX_EPOCH};
        let since = not_before
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs()
            .saturating_sub(1);
        let mut filters = HashMap::new();
        filters.insert("type".to_string(), vec!["container".to_string()]);
        filters.insert("container".to_string(), vec![container.to_string()]);
        filters.insert("event".to_string(), vec!["die".to_string()]);
        let stream = self
            .docker
            .events(Some(bollard::query_parameters::EventsOptions {
                since: Some(since.to_string()),
                until: None,
                filters: Some(filters),
            }));
        futures::pin_mut!(stream);
        let found = tokio::time::timeout(timeout, async {
            while let Some(event) = stream.next().await {
                let event = event?;
                let Some(nanos) = event.time_nano.and_then(|n| u64::try_from(n).ok()) else {
                    continue;
                };
                let at = UNIX_EPOCH + Duration::from_nanos(nanos);
                if at >= not_before {
                    return Ok(Some(at));
                }
            }
            Ok::<_, ClusterError>(None)
        })
        .await;
        match found {
            Ok(r) => r,
            Err(_) => Ok(None),
        }
    }

    /// The kind cluster a node container belongs to (its `io.x-k8s.kind.cluster` label).
    pub async fn cluster_of(&self, container: &str) -> Result<String, ClusterError> {
        let info = self.docker.inspect_container(container, None).await?;
        info.config
            .and_then(|c| c.labels)
            .and_then(|l| l.get(KIND_CLUSTER_LABEL).cloned())
            .ok_or_else(|| ClusterError::NoContainer {
                node: container.to_string(),
                cluster: "?".into(),
            })
    }
}
