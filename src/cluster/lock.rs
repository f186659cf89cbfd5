//! One nodedown invocation per node at a time (effectful edge: Leases). Two invocations on
//! the same nodes would fault each other's workloads, heal each other's faults and measure each
//! other's failovers; the second is refused before it touches anything. The lock is one Lease per
//! node, `default/nodedown-node-<node>`: an invocation confined to some nodes (`--nodes`) takes
//! theirs, an unconfined one every node's, all or nothing and in name order (two invocations
//! never wait on each other in a circle). They are renewed while the invocation runs and deleted
//! at its end; an invocation that dies without deleting them (SIGKILL) leaves them to expire
//! after [`LOCK_SECONDS`], or `nodedown cleanup` of its run directory deletes them. So two
//! invocations on disjoint nodes of one cluster run at once, and one that overlaps another is
//! refused naming the node and its holder.
//!
//! As in client-go's leader election, expiry is judged only from what this process observed on
//! its own clock: a Lease is taken over once it has stayed unchanged (same holder, renewal and
//! resourceVersion) for its whole duration since this process first saw it; the `renewTime`
//! written by another machine is never compared with the local clock (a CI runner's clock and
//! the cluster's may differ by minutes). The holder renews every [`RENEW_EVERY`]; when it cannot
//! show a renewal of every Lease for [`RENEW_DEADLINE`] (shorter than the Lease, so nobody can
//! have taken it over yet), or finds one gone or held by another, it has lost the lock:
//! [`InvocationLock::lost`] says so, and the invocation stops faulting, heals and exits 3.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ListParams, PostParams, Preconditions};
use kube::Client;
use std::path::Path;
use std::time::{Duration, Instant};

pub use crate::vocab::{LOCK_LABEL, LOCK_NAMESPACE, LOCK_PREFIX};
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
/// The annotation naming the node a Lease locks.
pub const NODE_ANNOTATION: &str = "nodedown.dev/node";

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

/// The lock, held: every Lease of it renewed in the background until
/// [`InvocationLock::release`] (or dropped, after which they expire).
pub struct InvocationLock {
    api: Api<Lease>,
    /// The Leases taken (name, uid), in the order taken.
    held: Vec<(String, Option<String>)>,
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

/// A new id for the invocation writing to `out`: the label of what it makes that outlives a
/// run (its runs' namespaces), 12 hex digits of a digest of who it is and when it started.
pub fn invocation_id(out: &Path) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    hex_digest(&format!("{} {now}", identity(out)), 6)
}

/// The first `bytes` bytes of the SHA-256 of `text`, in hex.
fn hex_digest(text: &str, bytes: usize) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())
        .iter()
        .take(bytes)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The name of `node`'s Lease: `nodedown-node-<node>` (a node's name is a DNS subdomain, and
/// so is this, cut with a digest of the whole where it would pass the 253 characters allowed).
pub fn lease_name(node: &str) -> String {
    let name = format!("{LOCK_PREFIX}{node}");
    if name.len() <= 253 {
        return name;
    }
    let digest = hex_digest(node, 5);
    format!("{}-{digest}", &name[..253 - digest.len() - 1])
        .trim_end_matches(['-', '.'])
        .to_string()
}

/// The nodes whose Leases an invocation takes: the ones it is confined to (`--nodes`), else
/// every node of the cluster; each once, in name order (pure).
pub fn lock_nodes(scope: Option<&[String]>, cluster: &[String]) -> Vec<String> {
    let mut nodes: Vec<String> = scope.unwrap_or(cluster).to_vec();
    nodes.sort();
    nodes.dedup();
    nodes
}

fn lease(
    name: &str,
    node: &str,
    holder: &str,
    out: &Path,
    now: Timestamp,
    resource_version: Option<String>,
) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(LOCK_NAMESPACE.into()),
            resource_version,
            labels: Some(
                [(LOCK_LABEL.to_string(), "node".to_string())]
                    .into_iter()
                    .collect(),
            ),
            annotations: Some(
                [
                    (OUT_ANNOTATION.to_string(), out.display().to_string()),
                    (NODE_ANNOTATION.to_string(), node.to_string()),
                ]
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

/// Why the lock could not be taken or released. Each is a harness error (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another invocation holds a node's Lease and is alive.
    #[error("node {node} is taken by another nodedown invocation ({holder}; it renews Lease {LOCK_NAMESPACE}/{lease}): two would fault and heal each other's nodes. Wait until it ends, or confine this one to other nodes (--nodes); if it was killed, `nodedown cleanup` of its run directory removes its lock, or the lock expires {LOCK_SECONDS}s after its last renewal")]
    Held {
        node: String,
        lease: String,
        holder: String,
    },
    #[error("Lease {LOCK_NAMESPACE}/{lease} changed under every attempt to take it: another nodedown invocation is starting on these nodes")]
    Contended { lease: String },
    #[error("{action} Lease {LOCK_NAMESPACE}/{lease}: {source}")]
    Api {
        action: &'static str,
        lease: String,
        source: kube::Error,
    },
}

/// The Lease, if there is one.
async fn read(api: &Api<Lease>, name: &str) -> Result<Option<Lease>, LockError> {
    api.get_opt(name).await.map_err(|source| LockError::Api {
        action: "reading",
        lease: name.into(),
        source,
    })
}

/// Deletes the Lease if it is still the object with `uid` (not one taken over since).
async fn delete(api: &Api<Lease>, name: &str, uid: Option<String>) -> Result<(), LockError> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid,
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => Ok(()),
        // Gone already (taken away, or deleted by a cleanup): nothing left to release.
        Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
        // Taken over by another since (the uid precondition failed): not ours to delete.
        Err(kube::Error::Api(s)) if s.is_conflict() => Ok(()),
        Err(source) => Err(LockError::Api {
            action: "deleting",
            lease: name.into(),
            source,
        }),
    }
}

/// Takes the Lease of every node of `nodes` (name order, as [`lock_nodes`] gives them) for an
/// invocation writing to `out` (absolute), all or nothing: where one is held by another live
/// invocation, the ones taken so far are deleted again and the holder is named. A Lease held by
/// another is watched until it is renewed (its holder is alive: refused) or has stayed
/// unchanged for its duration (its holder is gone: taken over); `waiting` is told once.
pub async fn acquire(
    client: &Client,
    out: &Path,
    nodes: &[String],
    waiting: impl Fn(&str),
) -> Result<InvocationLock, LockError> {
    let api = lock_api(client);
    let holder = identity(out);
    let mut held: Vec<(String, Option<String>)> = Vec::new();
    for node in nodes {
        match acquire_one(&api, node, &holder, out, &waiting).await {
            Ok(taken) => held.push(taken),
            Err(e) => {
                for (name, uid) in held.into_iter().rev() {
                    if let Err(e) = delete(&api, &name, uid).await {
                        tracing::warn!("{e}");
                    }
                }
                return Err(e);
            }
        }
    }
    let (tell, lost) = tokio::sync::watch::channel(None);
    let names = held.iter().map(|(n, _)| n.clone()).collect();
    let renew = tokio::spawn(renew(api.clone(), names, holder, tell));
    Ok(InvocationLock {
        api,
        held,
        renew,
        lost,
    })
}

/// Takes one node's Lease: its name and uid.
async fn acquire_one(
    api: &Api<Lease>,
    node: &str,
    holder: &str,
    out: &Path,
    waiting: &impl Fn(&str),
) -> Result<(String, Option<String>), LockError> {
    let name = lease_name(node);
    let mut observer = Observer::default();
    let mut told = false;
    let mut conflicts = 0;
    loop {
        let existing = read(api, &name).await?;
        let now = Timestamp::now();
        let written = match existing {
            None => {
                api.create(
                    &PostParams::default(),
                    &lease(&name, node, holder, out, now, None),
                )
                .await
            }
            Some(current) => match observer.observe(&current, Instant::now()) {
                LockState::Held {
                    holder: other,
                    renewal_seen: true,
                    ..
                } => {
                    return Err(LockError::Held {
                        node: node.into(),
                        lease: name,
                        holder: other,
                    });
                }
                LockState::Held {
                    holder: other,
                    expires_in,
                    ..
                } => {
                    if !told {
                        waiting(&format!(
                            "node {node}'s Lease {LOCK_NAMESPACE}/{name} is held by {other}: waiting up to {}s to see whether it is renewed (alive: refused) or expires (taken over)",
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
                        &name,
                        &PostParams::default(),
                        &lease(&name, node, holder, out, now, version),
                    )
                    .await
                }
            },
        };
        match written {
            Ok(taken) => return Ok((name, taken.metadata.uid.clone())),
            // Someone else wrote it between our read and write: read again.
            Err(kube::Error::Api(e)) if e.is_conflict() || e.is_already_exists() => {
                conflicts += 1;
                if conflicts >= 5 {
                    return Err(LockError::Contended { lease: name });
                }
            }
            Err(source) => {
                return Err(LockError::Api {
                    action: "writing",
                    lease: name,
                    source,
                })
            }
        }
    }
}

/// Why a renewal shows the Lease `name` is no longer ours, if it does (pure).
fn lost_because(current: Option<&Lease>, name: &str, holder: &str) -> Option<String> {
    let Some(current) = current else {
        return Some(format!("Lease {LOCK_NAMESPACE}/{name} was deleted"));
    };
    let now_held = current
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .unwrap_or("");
    (now_held != holder).then(|| {
        format!(
            "Lease {LOCK_NAMESPACE}/{name} is now held by {}",
            if now_held.is_empty() {
                "nobody"
            } else {
                now_held
            }
        )
    })
}

/// Renews every Lease while all are ours; says on `tell` why they are not any more, and
/// stops.
async fn renew(
    api: Api<Lease>,
    names: Vec<String>,
    holder: String,
    tell: tokio::sync::watch::Sender<Option<String>>,
) {
    let mut renewed: Vec<Instant> = names.iter().map(|_| Instant::now()).collect();
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        for (name, renewed) in names.iter().zip(renewed.iter_mut()) {
            match api.get_opt(name).await {
                Ok(current) => {
                    if let Some(why) = lost_because(current.as_ref(), name, &holder) {
                        let _ = tell.send(Some(why));
                        return;
                    }
                    let mut current = current.expect("lost_because: present");
                    if let Some(spec) = current.spec.as_mut() {
                        spec.renew_time = Some(MicroTime(Timestamp::now()));
                    }
                    match api.replace(name, &PostParams::default(), &current).await {
                        Ok(_) => *renewed = Instant::now(),
                        Err(e) => {
                            tracing::warn!("cannot renew Lease {LOCK_NAMESPACE}/{name}: {e}")
                        }
                    }
                }
                Err(e) => tracing::warn!("cannot read Lease {LOCK_NAMESPACE}/{name}: {e}"),
            }
            if renewed.elapsed() >= RENEW_DEADLINE {
                let _ = tell.send(Some(format!(
                    "Lease {LOCK_NAMESPACE}/{name} could not be renewed for {}s (another invocation may take it over after {LOCK_SECONDS}s)",
                    RENEW_DEADLINE.as_secs()
                )));
                return;
            }
        }
    }
}

impl InvocationLock {
    /// Resolves when the lock is lost (a Lease deleted, taken over, not renewable), with the
    /// reason; never while it is held.
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

    /// The Leases held, by name.
    pub fn leases(&self) -> Vec<String> {
        self.held.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Stops renewing and deletes the Leases (only the ones this invocation created).
    pub async fn release(self) {
        self.renew.abort();
        for (name, uid) in self.held.iter().rev() {
            if let Err(e) = delete(&self.api, name, uid.clone()).await {
                tracing::warn!("{e}");
            }
        }
    }
}

impl Drop for InvocationLock {
    fn drop(&mut self) {
        self.renew.abort();
    }
}

/// For `nodedown cleanup OUT`: deletes the Leases the invocation that wrote to `out` holds (it
/// was killed: that is why its run directory needs cleaning up). Returns the names it deleted.
pub async fn release_for(client: &Client, out: &Path) -> Result<Vec<String>, LockError> {
    let api = lock_api(client);
    let leases = api
        .list(&ListParams::default().labels(LOCK_LABEL))
        .await
        .map_err(|source| LockError::Api {
            action: "listing",
            lease: format!("{LOCK_PREFIX}*"),
            source,
        })?;
    let mut deleted = Vec::new();
    for current in leases.items {
        let holder_out = current
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(OUT_ANNOTATION));
        if holder_out.map(Path::new) != Some(out) {
            continue;
        }
        let Some(name) = current.metadata.name.clone() else {
            continue;
        };
        delete(&api, &name, current.metadata.uid.clone()).await?;
        deleted.push(name);
    }
    Ok(deleted)
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
                &lease(
                    "nodedown-node-w1",
                    "w1",
                    "nodedown pid 7 on ci",
                    out,
                    at(1_000),
                    None,
                ),
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
        let l = lease(
            "nodedown-node-w1",
            "w1",
            "nodedown pid 7 on ci, output /runs/a",
            out,
            at(1_000),
            None,
        );
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
        let annotations = l.metadata.annotations.unwrap();
        assert_eq!(
            annotations[OUT_ANNOTATION], "/runs/a",
            "cleanup finds the holder by its output directory"
        );
        assert_eq!(annotations[NODE_ANNOTATION], "w1");
        assert_eq!(
            l.metadata.labels.unwrap()[LOCK_LABEL],
            "node",
            "cleanup lists the lock's Leases by label"
        );
    }

    #[test]
    fn a_renewal_finds_a_deleted_or_taken_lease_lost() {
        let out = Path::new("/runs/a");
        let n = "nodedown-node-w1";
        let ours = lease(n, "w1", "me", out, at(1), None);
        assert_eq!(lost_because(Some(&ours), n, "me"), None);
        assert!(lost_because(None, n, "me")
            .unwrap()
            .contains("default/nodedown-node-w1 was deleted"));
        let theirs = lease(n, "w1", "them", out, at(1), None);
        assert!(lost_because(Some(&theirs), n, "me")
            .unwrap()
            .contains("now held by them"));
        let mut nobody = ours.clone();
        nobody.spec.as_mut().unwrap().holder_identity = None;
        assert!(lost_because(Some(&nobody), n, "me")
            .unwrap()
            .contains("held by nobody"));
    }

    #[test]
    fn the_nodes_locked_are_the_scope_else_the_whole_cluster_each_once_in_name_order() {
        let cluster: Vec<String> = ["w3", "cp", "w1", "w2"].map(String::from).to_vec();
        assert_eq!(lock_nodes(None, &cluster), ["cp", "w1", "w2", "w3"]);
        let scope: Vec<String> = ["w2", "w1", "w2"].map(String::from).to_vec();
        assert_eq!(lock_nodes(Some(&scope), &cluster), ["w1", "w2"]);
    }

    #[test]
    fn a_nodes_lease_is_named_after_it_and_a_long_name_is_cut_with_a_digest() {
        assert_eq!(
            lease_name("nodedown-worker3"),
            "nodedown-node-nodedown-worker3"
        );
        let long = format!("{}.example.com", "a".repeat(245));
        let name = lease_name(&long);
        assert!(name.len() <= 253, "{}", name.len());
        assert!(name.starts_with("nodedown-node-aaa"));
        let other = lease_name(&format!("{}.example.org", "a".repeat(245)));
        assert_ne!(name, other, "two long names that share a prefix stay apart");
    }
}
