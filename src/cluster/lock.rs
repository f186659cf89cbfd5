//! One nodedown invocation per cluster at a time (effectful edge: a Lease). Two invocations on
//! the same nodes would fault each other's workloads, heal each other's faults and measure each
//! other's failovers; the second is refused before it touches anything. The lock is the Lease
//! `default/nodedown`, renewed while the invocation runs and deleted at its end; an invocation
//! that dies without deleting it (SIGKILL) leaves it to expire after [`LOCK_SECONDS`], or
//! `nodedown cleanup` of its run directory deletes it.
//!
//! As in client-go's leader election, expiry is judged only from what this process observed on
//! its own clock: a Lease is taken over once it has stayed unchanged (same holder, renewal and
//! resourceVersion) for its whole duration since this process first saw it; the `renewTime`
//! written by another machine is never compared with the local clock (a CI runner's clock and
//! the cluster's may differ by minutes). The holder renews every [`RENEW_EVERY`]; when it cannot
//! show a renewal for [`RENEW_DEADLINE`] (shorter than the Lease, so nobody can have taken it
//! over yet), or finds the Lease gone or held by another, it has lost the lock: [`InvocationLock::lost`]
//! says so, and the invocation stops faulting, heals and exits 3.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::Client;
use std::path::Path;
use std::time::{Duration, Instant};

pub use crate::vocab::{LOCK_NAME, LOCK_NAMESPACE};
/// How long the lock outlives its last renewal.
pub const LOCK_SECONDS: i32 = 30;
const RENEW_EVERY: Duration = Duration::from_secs(5);
/// A holder that has not renewed for this long gives the lock up (before anyone else may take
/// it over: [`LOCK_SECONDS`] after the last renewal they saw).
const RENEW_DEADLINE: Duration = Duration::from_secs(20);
/// How often a Lease held by another is read again while waiting to see it renewed or expire.
const RETRY_EVERY: Duration = Duration::from_secs(2);
/// The annotation naming the holder's output directory (for `nodedown cleanup`).
pub const OUT_ANNOTATION: &str = "nodedown.dev/out";

/// What the Leases observed so far say about the lock.
#[derive(Debug, PartialEq)]
pub enum LockState {
    /// Nobody holds it, or its holder stopped renewing it (unchanged for its whole duration
    /// on this process's clock).
    Free,
    /// Held: by whom; whether this process saw it renewed (then its holder is alive); how much
    /// longer it must stay unchanged to count as expired.
    Held {
        holder: String,
        renewal_seen: bool,
        expires_in: Duration,
    },
}

/// What identifies one write of the Lease: a renewal changes it.
#[derive(Debug, Clone, PartialEq)]
struct Record {
    holder: String,
    renew_time: Option<String>,
    resource_version: Option<String>,
}

/// Watches the Lease across reads (pure; the caller gives the local monotonic time).
#[derive(Debug, Default)]
pub struct Observer {
    /// The record last seen and when this process first saw it.
    seen: Option<(Record, Instant)>,
    /// Whether the record changed while observed (a live holder renewed it).
    changed: bool,
}

impl Observer {
    /// Takes in a read of the Lease at local time `now` and says what it means.
    pub fn observe(&mut self, lease: &Lease, now: Instant) -> LockState {
        let Some(spec) = &lease.spec else {
            return LockState::Free;
        };
        let holder = spec.holder_identity.clone().unwrap_or_default();
        if holder.is_empty() {
            return LockState::Free;
        }
        let record = Record {
            holder: holder.clone(),
            renew_time: spec.renew_time.as_ref().map(|t| t.0.to_string()),
            resource_version: lease.metadata.resource_version.clone(),
        };
        let since = match &self.seen {
            Some((prev, since)) if *prev == record => *since,
            Some(_) => {
                self.changed = true;
                self.seen = Some((record, now));
                now
            }
            None => {
                self.seen = Some((record, now));
                now
            }
        };
        let duration = Duration::from_secs(
            u64::try_from(spec.lease_duration_seconds.unwrap_or(LOCK_SECONDS)).unwrap_or(0),
        );
        let unchanged = now.saturating_duration_since(since);
        if unchanged >= duration {
            return LockState::Free;
        }
        LockState::Held {
            holder,
            renewal_seen: self.changed,
            expires_in: duration - unchanged,
        }
    }
}

/// The lock, held: renewed in the background until [`InvocationLock::release`] (or dropped,
/// after which it expires).
pub struct InvocationLock {
    api: Api<Lease>,
    uid: Option<String>,
    renew: tokio::task::JoinHandle<()>,
    lost: tokio::sync::watch::Receiver<Option<String>>,
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

/// Why the cluster lock could not be taken or released. Each is a harness error (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another invocation holds it and is alive.
    #[error("another nodedown invocation is running on this cluster ({holder}; it renews Lease {LOCK_NAMESPACE}/{LOCK_NAME}): two would fault and heal each other's nodes. Wait until it ends; if it was killed, `nodedown cleanup` of its run directory removes its lock, or the lock expires {LOCK_SECONDS}s after its last renewal")]
    Held { holder: String },
    #[error("Lease {LOCK_NAMESPACE}/{LOCK_NAME} changed under every attempt to take it: another nodedown invocation is starting on this cluster")]
    Contended,
    #[error("{action} Lease {LOCK_NAMESPACE}/{LOCK_NAME}: {source}")]
    Api {
        action: &'static str,
        source: kube::Error,
    },
}

/// The Lease, if there is one.
async fn read(api: &Api<Lease>) -> Result<Option<Lease>, LockError> {
    api.get_opt(LOCK_NAME)
        .await
        .map_err(|source| LockError::Api {
            action: "reading",
            source,
        })
}

/// Deletes the Lease if it is still the object with `uid` (not one taken over since).
async fn delete(api: &Api<Lease>, uid: Option<String>) -> Result<(), LockError> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(LOCK_NAME, &params).await {
        Ok(_) => Ok(()),
        // Gone already (taken away, or deleted by a cleanup): nothing left to release.
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
        Err(source) => Err(LockError::Api {
            action: "deleting",
            source,
        }),
    }
}

/// Takes the lock for an invocation writing to `out` (absolute), or says who holds it. A
/// Lease held by another is watched until it is renewed (its holder is alive: refused) or has
/// stayed unchanged for its duration (its holder is gone: taken over); `waiting` is told once.
pub async fn acquire(
    client: &Client,
    out: &Path,
    waiting: impl Fn(&str),
) -> Result<InvocationLock, LockError> {
    let api = lock_api(client);
    let holder = identity(out);
    let mut observer = Observer::default();
    let mut told = false;
    let mut conflicts = 0;
    loop {
        let existing = read(&api).await?;
        let now = Timestamp::now();
        let written = match existing {
            None => {
                api.create(&PostParams::default(), &lease(&holder, out, now, None))
                    .await
            }
            Some(current) => match observer.observe(&current, Instant::now()) {
                LockState::Held {
                    holder: other,
                    renewal_seen: true,
                    ..
                } => {
                    return Err(LockError::Held { holder: other });
                }
                LockState::Held {
                    holder: other,
                    expires_in,
                    ..
                } => {
                    if !told {
                        waiting(&format!(
                            "Lease {LOCK_NAMESPACE}/{LOCK_NAME} is held by {other}: waiting up to {}s to see whether it is renewed (alive: refused) or expires (taken over)",
                            expires_in.as_secs()
                        ));
                        told = true;
                    }
                    tokio::time::sleep(RETRY_EVERY.min(expires_in)).await;
                    continue;
                }
                LockState::Free => {
                    let version = current.metadata.resource_version.clone();
                    api.replace(
                        LOCK_NAME,
                        &PostParams::default(),
                        &lease(&holder, out, now, version),
                    )
                    .await
                }
            },
        };
        match written {
            Ok(taken) => {
                let uid = taken.metadata.uid.clone();
                let (tell, lost) = tokio::sync::watch::channel(None);
                let renew = tokio::spawn(renew(api.clone(), holder, tell));
                return Ok(InvocationLock {
                    api,
                    uid,
                    renew,
                    lost,
                });
            }
            // Someone else wrote it between our read and write: read again.
            Err(kube::Error::Api(e)) if e.is_conflict() || e.is_already_exists() => {
                conflicts += 1;
                if conflicts >= 5 {
                    return Err(LockError::Contended);
                }
            }
            Err(source) => {
                return Err(LockError::Api {
                    action: "writing",
                    source,
                })
            }
        }
    }
}

/// Why a renewal shows the lock is no longer ours, if it does (pure).
fn lost_because(current: Option<&Lease>, holder: &str) -> Option<String> {
    let Some(current) = current else {
        return Some(format!("Lease {LOCK_NAMESPACE}/{LOCK_NAME} was deleted"));
    };
    let now_held = current
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .unwrap_or("");
    (now_held != holder).then(|| {
        format!(
            "Lease {LOCK_NAMESPACE}/{LOCK_NAME} is now held by {}",
            if now_held.is_empty() {
                "nobody"
            } else {
                now_held
            }
        )
    })
}

/// Renews the lock while it is ours; says on `tell` why it is not any more, and stops.
async fn renew(api: Api<Lease>, holder: String, tell: tokio::sync::watch::Sender<Option<String>>) {
    let mut renewed = Instant::now();
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        match api.get_opt(LOCK_NAME).await {
            Ok(current) => {
                if let Some(why) = lost_because(current.as_ref(), &holder) {
                    let _ = tell.send(Some(why));
                    return;
                }
                let mut current = current.expect("lost_because: present");
                if let Some(spec) = current.spec.as_mut() {
                    spec.renew_time = Some(MicroTime(Timestamp::now()));
                }
                match api
                    .replace(LOCK_NAME, &PostParams::default(), &current)
                    .await
                {
                    Ok(_) => renewed = Instant::now(),
                    Err(e) => {
                        tracing::warn!("cannot renew Lease {LOCK_NAMESPACE}/{LOCK_NAME}: {e}")
                    }
                }
            }
            Err(e) => tracing::warn!("cannot read Lease {LOCK_NAMESPACE}/{LOCK_NAME}: {e}"),
        }
        if renewed.elapsed() >= RENEW_DEADLINE {
            let _ = tell.send(Some(format!(
                "Lease {LOCK_NAMESPACE}/{LOCK_NAME} could not be renewed for {}s (another invocation may take it over after {LOCK_SECONDS}s)",
                RENEW_DEADLINE.as_secs()
            )));
            return;
        }
    }
}

impl InvocationLock {
    /// Resolves when the lock is lost (deleted, taken over, not renewable), with the reason;
    /// never while it is held.
    pub fn lost(&self) -> impl std::future::Future<Output = String> + Send + 'static {
        let mut rx = self.lost.clone();
        async move {
            loop {
                if let Some(why) = rx.borrow_and_update().clone() {
                    return why;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }

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
pub async fn release_for(client: &Client, out: &Path) -> Result<bool, LockError> {
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

    /// The same Lease written again by its holder: a new renewTime and resourceVersion.
    fn renewed(l: &Lease, second: i64, version: &str) -> Lease {
        let mut l = l.clone();
        l.spec.as_mut().unwrap().renew_time = Some(MicroTime(at(second)));
        l.metadata.resource_version = Some(version.into());
        l
    }

    #[test]
    fn expiry_is_judged_on_the_local_clock_whatever_the_lease_says() {
        let out = Path::new("/runs/a");
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        // The holder's clock is an hour ahead of ours, or a day behind: renewTime says nothing.
        for skew in [3_600, -86_400] {
            let l = renewed(
                &lease("nodedown pid 7 on ci", out, at(1_000), None),
                1_000_000 + skew,
                "1",
            );
            // Never renewed while watched: held until it has been unchanged for 30 s here.
            let mut o = Observer::default();
            assert_eq!(
                o.observe(&l, s(0)),
                LockState::Held {
                    holder: "nodedown pid 7 on ci".into(),
                    renewal_seen: false,
                    expires_in: Duration::from_secs(30)
                }
            );
            assert!(matches!(
                o.observe(&l, s(29)),
                LockState::Held { renewal_seen: false, expires_in, .. } if expires_in == Duration::from_secs(1)
            ));
            assert_eq!(o.observe(&l, s(30)), LockState::Free, "skew {skew}");
            // Renewed while watched: held (and known alive), the 30 s counting from the renewal.
            let mut o = Observer::default();
            o.observe(&l, s(0));
            let again = renewed(&l, 1_000_000 + skew + 5, "2");
            assert!(matches!(
                o.observe(&again, s(20)),
                LockState::Held { renewal_seen: true, expires_in, .. } if expires_in == Duration::from_secs(30)
            ));
            assert!(matches!(o.observe(&again, s(49)), LockState::Held { .. }));
            assert_eq!(o.observe(&again, s(50)), LockState::Free);
        }
    }

    #[test]
    fn a_lease_without_a_holder_is_free_and_names_the_out_dir() {
        let out = Path::new("/runs/a");
        let l = lease("nodedown pid 7 on ci, output /runs/a", out, at(1_000), None);
        let mut empty = l.clone();
        empty.spec.as_mut().unwrap().holder_identity = Some(String::new());
        assert_eq!(
            Observer::default().observe(&empty, Instant::now()),
            LockState::Free
        );
        empty.spec = None;
        assert_eq!(
            Observer::default().observe(&empty, Instant::now()),
            LockState::Free
        );
        assert_eq!(
            l.metadata.annotations.unwrap()[OUT_ANNOTATION],
            "/runs/a",
            "cleanup finds the holder by its output directory"
        );
    }

    #[test]
    fn a_renewal_finds_a_deleted_or_taken_lease_lost() {
        let out = Path::new("/runs/a");
        let ours = lease("me", out, at(1), None);
        assert_eq!(lost_because(Some(&ours), "me"), None);
        assert!(lost_because(None, "me").unwrap().contains("was deleted"));
        let theirs = lease("them", out, at(1), None);
        assert!(lost_because(Some(&theirs), "me")
            .unwrap()
            .contains("now held by them"));
        let mut nobody = ours.clone();
        nobody.spec.as_mut().unwrap().holder_identity = None;
        assert!(lost_because(Some(&nobody), "me")
            .unwrap()
            .contains("held by nobody"));
    }
}
