//! One nodedown invocation per cluster at a time (effectful edge: a Lease). Two invocations on
//! the same nodes would fault each other's workloads, heal each other's faults and measure each
//! other's failovers; the second is refused before it touches anything. The lock is the Lease
//! `default/nodedown`, renewed while the invocation runs and deleted at its end; an invocation
//! that dies without deleting it (SIGKILL) leaves it to expire after [`LOCK_SECONDS`], or
//! `nodedown cleanup` of its run directory deletes it.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::Client;
use std::path::Path;
use std::time::Duration;

pub const LOCK_NAMESPACE: &str = "default";
pub const LOCK_NAME: &str = "nodedown";
/// How long the lock outlives its last renewal.
pub const LOCK_SECONDS: i32 = 30;
const RENEW_EVERY: Duration = Duration::from_secs(10);
/// The annotation naming the holder's output directory (for `nodedown cleanup`).
pub const OUT_ANNOTATION: &str = "nodedown.dev/out";

/// What a Lease read at `now` says about the lock.
#[derive(Debug, PartialEq)]
pub enum LockState {
    /// Nobody holds it, or its holder stopped renewing it.
    Free,
    /// Held: by whom, how long ago it was renewed, for how much longer.
    Held {
        holder: String,
        renewed_secs_ago: i64,
        expires_in_secs: i64,
    },
}

/// Reads the lock's state from its Lease (pure).
pub fn lock_state(lease: &Lease, now: Timestamp) -> LockState {
    let Some(spec) = &lease.spec else {
        return LockState::Free;
    };
    let (Some(holder), Some(renewed)) = (&spec.holder_identity, &spec.renew_time) else {
        return LockState::Free;
    };
    let duration = i64::from(spec.lease_duration_seconds.unwrap_or(LOCK_SECONDS));
    let ago = now.as_second() - renewed.0.as_second();
    let left = duration - ago;
    if holder.is_empty() || left <= 0 {
        return LockState::Free;
    }
    LockState::Held {
        holder: holder.clone(),
        renewed_secs_ago: ago.max(0),
        expires_in_secs: left,
    }
}

/// The lock, held: renewed in the background until [`InvocationLock::release`] (or dropped,
/// after which it expires).
pub struct InvocationLock {
    api: Api<Lease>,
    uid: Option<String>,
    renew: tokio::task::JoinHandle<()>,
}

/// Who this invocation is, as the Lease names it.
fn identity(out: &Path) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown host".into());
    format!(
        "nodedown pid {} on {host}, output {}",
        std::process::id(),
        out.display()
    )
}

fn lease(holder: &str, out: &Path, now: Timestamp, resource_version: Option<String>) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(LOCK_NAME.into()),
            namespace: Some(LOCK_NAMESPACE.into()),
            resource_version,
            annotations: Some(
                [(OUT_ANNOTATION.to_string(), out.display().to_string())]
                    .into_iter()
                    .collect(),
            ),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(LOCK_SECONDS),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            ..Default::default()
        }),
    }
}

fn lock_api(client: &Client) -> Api<Lease> {
    Api::namespaced(client.clone(), LOCK_NAMESPACE)
}

/// The Lease, if there is one.
async fn read(api: &Api<Lease>) -> Result<Option<Lease>, String> {
    api.get_opt(LOCK_NAME)
        .await
        .map_err(|e| format!("reading Lease {LOCK_NAMESPACE}/{LOCK_NAME}: {e}"))
}

/// Deletes the Lease if it is still the object with `uid` (not one taken over since).
async fn delete(api: &Api<Lease>, uid: Option<String>) -> Result<(), String> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version: None,
        }),
        ..Default::default()
    };
    api.delete(LOCK_NAME, &params)
        .await
        .map(|_| ())
        .map_err(|e| format!("deleting Lease {LOCK_NAMESPACE}/{LOCK_NAME}: {e}"))
}

/// Takes the lock for an invocation writing to `out` (absolute), or says who holds it.
pub async fn acquire(client: &Client, out: &Path) -> Result<InvocationLock, String> {
    let api = lock_api(client);
    let holder = identity(out);
    for _ in 0..3 {
        let now = Timestamp::now();
        let existing = read(&api).await?;
        let written = match existing {
            None => {
                api.create(&PostParams::default(), &lease(&holder, out, now, None))
                    .await
            }
            Some(current) => {
                if let LockState::Held {
                    holder: other,
                    renewed_secs_ago,
                    expires_in_secs,
                } = lock_state(&current, now)
                {
                    return Err(format!(
                        "another nodedown invocation is running on this cluster ({other}; Lease {LOCK_NAMESPACE}/{LOCK_NAME} renewed {renewed_secs_ago}s ago): two would fault and heal each other's nodes. Wait until it ends; if it was killed, its lock expires in {expires_in_secs}s, or `nodedown cleanup` of its run directory removes it"
                    ));
                }
                let version = current.metadata.resource_version.clone();
                api.replace(
                    LOCK_NAME,
                    &PostParams::default(),
                    &lease(&holder, out, now, version),
                )
                .await
            }
        };
        match written {
            Ok(taken) => {
                let uid = taken.metadata.uid.clone();
                let renew = tokio::spawn(renew(api.clone(), holder));
                return Ok(InvocationLock { api, uid, renew });
            }
            // Someone else wrote it between our read and write: read again.
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => return Err(format!("writing Lease {LOCK_NAMESPACE}/{LOCK_NAME}: {e}")),
        }
    }
    Err(format!(
        "Lease {LOCK_NAMESPACE}/{LOCK_NAME} changed under every attempt to take it: another nodedown invocation is starting on this cluster"
    ))
}

/// Renews the lock while it is ours.
async fn renew(api: Api<Lease>, holder: String) {
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        let mut current = match api.get(LOCK_NAME).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!("cannot renew Lease {LOCK_NAMESPACE}/{LOCK_NAME}: {e}");
                continue;
            }
        };
        let Some(spec) = current.spec.as_mut() else {
            return;
        };
        if spec.holder_identity.as_deref() != Some(holder.as_str()) {
            tracing::warn!(
                "Lease {LOCK_NAMESPACE}/{LOCK_NAME} was taken over by {:?}",
                spec.holder_identity
            );
            return;
        }
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        if let Err(e) = api
            .replace(LOCK_NAME, &PostParams::default(), &current)
            .await
        {
            tracing::warn!("cannot renew Lease {LOCK_NAMESPACE}/{LOCK_NAME}: {e}");
        }
    }
}

impl InvocationLock {
    /// Stops renewing and deletes the Lease (only the one this invocation created).
    pub async fn release(self) {
        self.renew.abort();
        if let Err(e) = delete(&self.api, self.uid.clone()).await {
            tracing::warn!("{e}");
        }
    }
}

impl Drop for InvocationLock {
    fn drop(&mut self) {
        self.renew.abort();
    }
}

/// For `nodedown cleanup OUT`: deletes the lock if the invocation that wrote to `out` holds it
/// (it was killed: that is why its run directory needs cleaning up). Returns whether it did.
pub async fn release_for(client: &Client, out: &Path) -> Result<bool, String> {
    let api = lock_api(client);
    let Some(current) = read(&api).await? else {
        return Ok(false);
    };
    let holder_out = current
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(OUT_ANNOTATION));
    if holder_out.map(Path::new) != Some(out) {
        return Ok(false);
    }
    delete(&api, current.metadata.uid).await.map(|_| true)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Synthetic Leases (the fields a Lease written by `acquire` has).
    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    #[test]
    fn a_lease_is_held_until_it_expires_and_free_without_a_holder() {
        let out = Path::new("/runs/a");
        let l = lease("nodedown pid 7 on ci, output /runs/a", out, at(1_000), None);
        assert_eq!(
            lock_state(&l, at(1_010)),
            LockState::Held {
                holder: "nodedown pid 7 on ci, output /runs/a".into(),
                renewed_secs_ago: 10,
                expires_in_secs: 20
            }
        );
        assert_eq!(lock_state(&l, at(1_000 + 30)), LockState::Free, "expired");
        // A clock behind the renewal still counts it held for its whole duration.
        assert!(matches!(
            lock_state(&l, at(995)),
            LockState::Held {
                renewed_secs_ago: 0,
                expires_in_secs: 35,
                ..
            }
        ));
        let mut empty = l.clone();
        empty.spec.as_mut().unwrap().holder_identity = Some(String::new());
        assert_eq!(lock_state(&empty, at(1_001)), LockState::Free);
        empty.spec = None;
        assert_eq!(lock_state(&empty, at(1_001)), LockState::Free);
        assert_eq!(
            l.metadata.annotations.unwrap()[OUT_ANNOTATION],
            "/runs/a",
            "cleanup finds the holder by its output directory"
        );
    }
}
