//! The simulated provider (`provider: kwok`): a kind cluster's real control plane whose workers
//! are simulated by kwok (sigs.k8s.io/kwok v0.8.0, built by testenv/build-kwok.sh). nodedown
//! starts kwok as a child process for the invocation, with its own stages
//! (`kwok-stages.yaml`), and adds the simulated Node objects itself: zone labels, a taint so
//! nothing but the experiment's pods lands there, the annotation that puts the node under the
//! attach/detach controller, and a CSINode naming the attaching driver, so VolumeAttachments are
//! made and processed by the real attach/detach controller and external-attacher.

use super::ClusterError;
use crate::vocab::{KWOK_MANAGED_LABEL as MANAGED_LABEL, SIMULATED_LABEL};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::storage::v1::CSINode;
use kube::api::PostParams;
use kube::{Api, Client};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// kwok's lifecycle stages for nodedown's simulated nodes and pods.
pub const STAGES: &str = include_str!("kwok-stages.yaml");
/// testenv's build (testenv/build-kwok.sh), under the cache directory.
pub const TESTENV_KWOK: &str = "kwok-v0.8.0/kwok";
pub use crate::vocab::SIMULATED_TAINT;
/// The kind config of the simulated cluster when the experiment names none.
pub const DEFAULT_CONFIG: &str = include_str!("../../kind-configs/simulated.yaml");
/// The simulated cluster's host directory (its kind config's extraMount): the attaching
/// driver's store lives under `csi/`.
pub const HOST_DIR: &str = "/var/lib/nodedown/simulated";
/// kwok's Lease duration: it renews every quarter of it (10 s), inside the 16 s grace period.
pub const LEASE_SECONDS: u32 = 40;

/// kwok: `NODEDOWN_KWOK`, else `kwok` on PATH, else testenv's cached build.
pub fn kwok_bin(cache_dir: &Path) -> PathBuf {
    if let Some(p) = std::env::var_os("NODEDOWN_KWOK") {
        return PathBuf::from(p);
    }
    super::find_tool("kwok", &cache_dir.join(TESTENV_KWOK))
}

/// The version of the kwok at `bin`, as it reports it (`kwok --version`: its first token that
/// looks like `vX.Y.Z`); "unknown" when it does not say.
pub async fn version(bin: &Path) -> String {
    let out = tokio::process::Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .await;
    let Ok(out) = out else {
        return "unknown".into();
    };
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    version_in(&text).unwrap_or_else(|| "unknown".into())
}

/// The first `vX.Y…` token of a tool's version line.
fn version_in(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == ',' || c == '"')
        .find(|w| {
            w.strip_prefix('v')
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()) && r.contains('.'))
        })
        .map(str::to_string)
}

/// The simulated node `i` (0-based): `sim-0000`, `sim-0001`, …
pub fn node_name(i: u32) -> String {
    format!("sim-{i:04}")
}

/// Zones of three, round robin: `sim-0000` zone-a, `sim-0001` zone-b, …
pub fn zone_of(i: u32) -> &'static str {
    ["zone-a", "zone-b", "zone-c"][(i % 3) as usize]
}

/// The Node object of simulated node `i`, as nodedown creates it (kwok fills its status).
pub fn node_object(i: u32) -> Node {
    let name = node_name(i);
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                SIMULATED_LABEL: "true",
                MANAGED_LABEL: "up",
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": zone_of(i),
            },
            "annotations": {
                // What the kubelet sets: without it the attach/detach controller ignores the node.
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "kwok.x-k8s.io/node": "fake",
            },
        },
        "spec": {
            "taints": [{"key": SIMULATED_TAINT, "value": "true", "effect": "NoSchedule"}],
        },
    }))
    .expect("a valid Node")
}

/// The CSINode a node plugin of `driver` would register on node `name`.
pub fn csinode_object(name: &str, driver: &str) -> CSINode {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {"drivers": [{"name": driver, "nodeID": name}]},
    }))
    .expect("a valid CSINode")
}

/// A running kwok, ended when dropped (it is this invocation's child).
pub struct Kwok {
    child: tokio::process::Child,
    pub log: PathBuf,
    /// When it was started: a Lease renewed after this is held by this kwok.
    pub started: std::time::SystemTime,
}

impl Kwok {
    /// Starts kwok against the cluster of `kubeconfig`, managing the nodes labelled
    /// `MANAGED_LABEL=up`; its stages and log go to `dir`.
    pub async fn start(
        bin: &Path,
        kubeconfig: &Path,
        dir: &Path,
        log_name: &str,
    ) -> Result<Kwok, ClusterError> {
        let stages = dir.join("kwok-stages.yaml");
        std::fs::write(&stages, STAGES)
            .map_err(|e| ClusterError::Kubeconfig(format!("{}: {e}", stages.display())))?;
        let log = dir.join(log_name);
        let started = std::time::SystemTime::now();
        let out = std::fs::File::create(&log)
            .map_err(|e| ClusterError::Kubeconfig(format!("{}: {e}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
        let child = tokio::process::Command::new(bin)
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--config={}", stages.display()))
            .arg(format!(
                "--manage-nodes-with-label-selector={MANAGED_LABEL}=up"
            ))
            .arg(format!("--node-lease-duration-seconds={LEASE_SECONDS}"))
            .arg("--cidr=10.200.0.0/16")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| ClusterError::ToolMissing {
                bin: bin.display().to_string(),
                source,
                hint: "build it with testenv/build-kwok.sh, or give NODEDOWN_KWOK=/path/to/kwok",
            })?;
        Ok(Kwok {
            child,
            log,
            started,
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Whether kwok is still running (it exits on a bad stage or kubeconfig).
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// Makes sure simulated nodes 0..count exist (creating the missing ones with their CSINode for
/// `driver`) and registers each with the attaching driver's store under `store` (the reference
/// driver's controller accepts a node only once a node plugin has registered it; a simulated
/// node has none, so nodedown registers it — the "told so" of the simulated provider). Returns
/// the names.
pub async fn ensure_nodes(
    client: &Client,
    count: u32,
    driver: &str,
    store: Option<&Path>,
) -> Result<Vec<String>, ClusterError> {
    let api = |what: String| move |source| ClusterError::Api { what, source };
    // The reference driver publishes a volume only to a node its store knows; a kubelet's node
    // plugin registers a real node, nodedown registers a simulated one. Made here when missing:
    // on a fresh machine the driver may not have made its store yet when the nodes are added, and
    // a publish refused meanwhile puts the attacher into minutes of back-off.
    let registry = match store {
        Some(store) => {
            let dir = store.join("nodes");
            std::fs::create_dir_all(&dir).map_err(|source| ClusterError::File {
                path: dir.clone(),
                source,
            })?;
            Some(dir)
        }
        None => None,
    };
    let nodes: Api<Node> = Api::all(client.clone());
    let csinodes: Api<CSINode> = Api::all(client.clone());
    let existing: std::collections::HashSet<String> = nodes
        .list(&kube::api::ListParams::default().labels(&format!("{SIMULATED_LABEL}=true")))
        .await
        .map_err(api("list the simulated nodes".into()))?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    // One list each, not a GET per node: at 1,000 nodes the second run asks once.
    let with_csinode: std::collections::HashSet<String> = csinodes
        .list(&kube::api::ListParams::default())
        .await
        .map_err(api("list CSINodes".into()))?
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    let mut names = Vec::new();
    for i in 0..count {
        let name = node_name(i);
        if !existing.contains(&name) {
            nodes
                .create(&PostParams::default(), &node_object(i))
                .await
                .map_err(api(format!("create node {name}")))?;
        }
        if !with_csinode.contains(&name) {
            csinodes
                .create(&PostParams::default(), &csinode_object(&name, driver))
                .await
                .map_err(api(format!("create CSINode {name}")))?;
        }
        if let Some(dir) = &registry {
            let file = dir.join(&name);
            std::fs::write(&file, b"").map_err(|source| ClusterError::File {
                path: file.clone(),
                source,
            })?;
        }
        names.push(name);
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_first_vx_y_token() {
        assert_eq!(
            version_in("kwok version v0.8.0 go1.26.0 (linux/amd64)").as_deref(),
            Some("v0.8.0")
        );
        assert_eq!(version_in("Version: \"v0.7.1\"").as_deref(), Some("v0.7.1"));
        assert_eq!(version_in("kwok: unknown flag --version"), None);
    }

    #[test]
    fn a_simulated_node_is_labelled_tainted_and_under_the_attach_detach_controller() {
        let n = node_object(4);
        let labels = n.metadata.labels.unwrap();
        assert_eq!(n.metadata.name.as_deref(), Some("sim-0004"));
        assert_eq!(labels["topology.kubernetes.io/zone"], "zone-b");
        assert_eq!(labels[MANAGED_LABEL], "up");
        assert_eq!(
            n.metadata.annotations.unwrap()
                ["volumes.kubernetes.io/controller-managed-attach-detach"],
            "true"
        );
        let taints = n.spec.unwrap().taints.unwrap();
        assert_eq!(taints[0].key, SIMULATED_TAINT);
        assert_eq!(taints[0].effect, "NoSchedule");
        let c = csinode_object("sim-0004", "csi.nodedown.dev");
        assert_eq!(c.spec.drivers[0].node_id, "sim-0004");
    }

    #[test]
    fn the_stages_are_kwok_stage_documents() {
        let docs: Vec<serde_json::Value> = STAGES
            .split("\n---\n")
            .map(|d| serde_saphyr::from_str(d).unwrap())
            .collect();
        assert_eq!(docs.len(), 3);
        assert!(docs.iter().all(|d| d["kind"] == "Stage"));
    }
}

/// The entries of the attaching driver's store (`volumes/<id>`, `attachments/<id>`,
/// `meta/<id>.json`) whose volume belongs to a namespace not in `live`: left by earlier
/// simulated runs, whose PersistentVolumes were deleted but whose records the driver keeps (it
/// never gets a DeleteVolume for a volume nodedown made). A volume's id is `<namespace>.<claim>`
/// (`workload::attach_handle`); an entry without a `.` is not nodedown's and stays.
pub fn stale_store_entries(
    store: &Path,
    live: &std::collections::HashSet<String>,
) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for dir in ["volumes", "attachments", "meta"] {
        let Ok(entries) = std::fs::read_dir(store.join(dir)) else {
            continue;
        };
        for e in entries {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".json").unwrap_or(&name);
            if let Some((ns, _)) = id.split_once('.') {
                if ns.starts_with("nd-") && !live.contains(ns) {
                    out.push(e.path());
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Removes [`stale_store_entries`] under the store's own lock (the driver flocks `lock` around
/// its changes); returns how many volumes' records went.
pub fn prune_store(
    store: &Path,
    live: &std::collections::HashSet<String>,
) -> std::io::Result<usize> {
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(store.join("lock"))?;
    // flock(2), as the driver takes it (std's File::lock is newer than the crate's MSRV).
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this function owns for the whole call.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let stale = stale_store_entries(store, live)?;
    for p in &stale {
        let r = if p.is_dir() {
            std::fs::remove_dir_all(p)
        } else {
            std::fs::remove_file(p)
        };
        match r {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    // Closing the descriptor (dropping `lock`) releases the flock.
    drop(lock);
    Ok(stale
        .iter()
        .filter(|p| p.parent().and_then(|d| d.file_name()) == Some("volumes".as_ref()))
        .count())
}

#[cfg(test)]
mod store_tests {
    use super::*;

    /// Only nodedown's records (`nd-…` namespaces) of namespaces gone are stale; the live
    /// run's, and anything not nodedown's, stay.
    #[test]
    fn the_store_is_pruned_of_runs_gone_and_only_those() {
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path();
        for d in ["volumes", "attachments", "meta", "nodes"] {
            std::fs::create_dir_all(s.join(d)).unwrap();
        }
        let mk = |p: &str| std::fs::create_dir_all(s.join(p)).unwrap();
        mk("volumes/nd-old-1-abcde.data-i0000-0");
        mk("attachments/nd-old-1-abcde.data-i0000-0");
        std::fs::write(
            s.join("attachments/nd-old-1-abcde.data-i0000-0/sim-0001"),
            "{}",
        )
        .unwrap();
        std::fs::write(s.join("meta/nd-old-1-abcde.data-i0000-0.json"), "{}").unwrap();
        mk("volumes/nd-live-1-fghij.data-i0000-0");
        mk("volumes/sanity-volume");
        mk("nodes/sim-0001");
        let live: std::collections::HashSet<String> = ["nd-live-1-fghij".to_string()].into();
        let stale = stale_store_entries(s, &live).unwrap();
        assert_eq!(stale.len(), 3, "{stale:?}");
        assert_eq!(prune_store(s, &live).unwrap(), 1);
        assert!(!s.join("volumes/nd-old-1-abcde.data-i0000-0").exists());
        assert!(!s.join("attachments/nd-old-1-abcde.data-i0000-0").exists());
        assert!(!s.join("meta/nd-old-1-abcde.data-i0000-0.json").exists());
        assert!(s.join("volumes/nd-live-1-fghij.data-i0000-0").exists());
        assert!(s.join("volumes/sanity-volume").exists());
        assert!(s.join("nodes/sim-0001").exists());
        assert_eq!(prune_store(s, &live).unwrap(), 0, "nothing left to prune");
    }
}
