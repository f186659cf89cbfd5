//! The journal (effectful edge: a file): every undo action is appended (and synced) BEFORE the action it undoes is
//! taken, so `nodedown cleanup` can restore the cluster after a crash, Ctrl-C or SIGKILL.
//! `journal.jsonl` lines: `{"op":"do","id":3,"wall":"…","undo":"start-node",…}` and
//! `{"op":"healed","id":3,"wall":"…"}`.

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How to put back what the harness changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "undo", rename_all = "kebab-case")]
pub enum Undo {
    /// Undo a fault on a node through the backend that applied it (start its machine, start
    /// its kubelet, remove its partition) and wait for the Node to be Ready.
    HealFault {
        #[serde(default)]
        backend: crate::faults::Backend,
        fault: crate::spec::FaultKind,
        node: String,
    },
    /// Recreate the Node object if the kubelet has not re-registered it by itself.
    RestoreNode {
        node: String,
        object: serde_json::Value,
    },
    /// Remove a taint the harness added (after the node is back, as KEP-2268 requires).
    RemoveTaint {
        node: String,
        key: String,
    },
    DeleteNamespace {
        name: String,
    },
    DeletePersistentVolume {
        name: String,
    },
    /// Remove a directory of the shared storage on the host.
    RemoveDir {
        path: PathBuf,
    },
}

/// The two independent halves of a heal, carried out at the same time: the nodes (faults
/// undone, nodes back, taints removed) and the run's own objects (its namespace, volumes,
/// storage directories). Within a track, [`Undo::priority`] orders the actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Track {
    Nodes,
    RunObjects,
}

impl Undo {
    pub fn track(&self) -> Track {
        match self {
            Undo::HealFault { .. } | Undo::RestoreNode { .. } | Undo::RemoveTaint { .. } => {
                Track::Nodes
            }
            Undo::DeleteNamespace { .. }
            | Undo::DeletePersistentVolume { .. }
            | Undo::RemoveDir { .. } => Track::RunObjects,
        }
    }

    /// Heal order: nodes back first, then their taints, then the run's objects.
    pub fn priority(&self) -> u8 {
        match self {
            Undo::HealFault { .. } => 0,
            Undo::RestoreNode { .. } => 1,
            Undo::RemoveTaint { .. } => 2,
            Undo::DeleteNamespace { .. } => 3,
            Undo::DeletePersistentVolume { .. } => 4,
            Undo::RemoveDir { .. } => 5,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Entry {
    Do {
        id: u64,
        wall: String,
        #[serde(flatten)]
        undo: Undo,
    },
    Healed {
        id: u64,
        wall: String,
    },
}

pub struct Journal {
    path: PathBuf,
    file: Mutex<(File, u64)>,
}

fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

impl Journal {
    /// Opens (appending) or creates the journal at `path`.
    pub fn open(path: &Path) -> std::io::Result<Journal> {
        let next = read(path)?
            .iter()
            .map(|e| match e {
                Entry::Do { id, .. } | Entry::Healed { id, .. } => *id,
            })
            .max()
            .unwrap_or(0)
            + 1;
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)?;
        // A torn last line (crash mid-write) must stay a line of its own: end it, or the next
        // entry would be glued onto the garbage and be lost with it.
        if ends_torn(&mut file)? {
            file.write_all(b"\n")?;
            file.sync_data()?;
        }
        Ok(Journal {
            path: path.to_path_buf(),
            file: Mutex::new((file, next)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn append(&self, file: &mut File, entry: &Entry) -> std::io::Result<()> {
        let mut line = serde_json::to_string(entry).expect("journal entries serialize");
        line.push('\n');
        file.write_all(line.as_bytes())?;
        file.sync_data()
    }

    /// Writes the undo of an action about to be taken; returns its id.
    pub fn record(&self, undo: Undo) -> std::io::Result<u64> {
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let id = guard.1;
        guard.1 += 1;
        self.append(
            &mut guard.0,
            &Entry::Do {
                id,
                wall: now(),
                undo,
            },
        )?;
        Ok(id)
    }

    pub fn healed(&self, id: u64) -> std::io::Result<()> {
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        self.append(&mut guard.0, &Entry::Healed { id, wall: now() })
    }

    pub fn pending(&self) -> std::io::Result<Vec<(u64, Undo)>> {
        pending(&read(&self.path)?)
    }
}

/// Whether a non-empty file does not end with a newline.
fn ends_torn(file: &mut File) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

/// Reads a journal file (missing file: empty). A torn last line (crash mid-write) is ignored.
pub fn read(path: &Path) -> std::io::Result<Vec<Entry>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e),
    };
    let mut entries = Vec::new();
    for line in BufReader::new(file).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&line) {
            Ok(e) => entries.push(e),
            Err(e) => tracing::warn!(
                "{}: ignoring unreadable journal line ({e}): {line}",
                path.display()
            ),
        }
    }
    Ok(entries)
}

/// The undo actions not yet healed, in heal order.
pub fn pending(entries: &[Entry]) -> std::io::Result<Vec<(u64, Undo)>> {
    let healed: std::collections::HashSet<u64> = entries
        .iter()
        .filter_map(|e| {
            if let Entry::Healed { id, .. } = e {
                Some(*id)
            } else {
                None
            }
        })
        .collect();
    let mut out: Vec<(u64, Undo)> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Do { id, undo, .. } if !healed.contains(id) => Some((*id, undo.clone())),
            _ => None,
        })
        .collect();
    out.sort_by_key(|(id, u)| (u.priority(), std::cmp::Reverse(*id)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_is_unhealed_in_heal_order_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let j = Journal::open(&path).unwrap();
        let ns = j
            .record(Undo::DeleteNamespace { name: "ns".into() })
            .unwrap();
        let taint = j
            .record(Undo::RemoveTaint {
                node: "w1".into(),
                key: "k".into(),
            })
            .unwrap();
        let node = j
            .record(Undo::HealFault {
                backend: crate::faults::Backend::Docker,
                fault: crate::spec::FaultKind::NodeShutdown,
                node: "w1".into(),
            })
            .unwrap();
        j.healed(taint).unwrap();
        drop(j);
        // a torn last line, as after SIGKILL mid-write
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"op\":\"do\",\"id\":9")
            .unwrap();
        let j = Journal::open(&path).unwrap();
        let p: Vec<u64> = j.pending().unwrap().into_iter().map(|(id, _)| id).collect();
        assert_eq!(p, vec![node, ns]);
        let next = j.record(Undo::RemoveDir { path: "/x".into() }).unwrap();
        assert!(next > node);
        // The entry written after the torn line reads back, as its own line.
        drop(j);
        let entries = read(&path).unwrap();
        assert!(
            entries.iter().any(
                |e| matches!(e, Entry::Do { id, undo: Undo::RemoveDir { .. }, .. } if *id == next)
            ),
            "{entries:?}"
        );
        let j = Journal::open(&path).unwrap();
        let p: Vec<u64> = j.pending().unwrap().into_iter().map(|(id, _)| id).collect();
        assert_eq!(p, vec![node, ns, next]);
        // The heal's two tracks: the node's fault apart from the run's namespace and directory.
        let tracks: Vec<Track> = j
            .pending()
            .unwrap()
            .iter()
            .map(|(_, u)| u.track())
            .collect();
        assert_eq!(
            tracks,
            vec![Track::Nodes, Track::RunObjects, Track::RunObjects]
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("{\"op\":\"do\",\"id\":9\n"),
            "torn line kept alone: {text}"
        );
    }
}
