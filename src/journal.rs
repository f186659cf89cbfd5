//! The journal (effectful edge: a file): every undo action is appended (and synced) BEFORE the action it undoes is
//! taken, so `nodedown cleanup` can restore the cluster after a crash, Ctrl-C or SIGKILL.
//! `journal.jsonl` lines: `{"op":"do","id":3,"wall":"…","undo":"start-node",…}` and
//! `{"op":"healed","id":3,"wall":"…"}`.

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
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
        backend: crate::vocab::Backend,
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
    /// Delete the storage fence (csi-addons `NetworkFence`) nodedown made for `node` in the run of
    /// `namespace` — once the node is back and its kubelet runs no pod of that namespace any
    /// more (an old writer still running would write again the moment the storage serves it),
    /// then wait until the object is gone (its finalizer unfences first).
    DeleteNetworkFence {
        name: String,
        node: String,
        namespace: String,
    },
    /// Delete a StorageClass nodedown made for an invocation (`qualify` with a testdriver
    /// file's `FromName` or `FromFile`).
    DeleteStorageClass {
        name: String,
    },
    /// Delete what `nodedown bundle run` put in the cluster: its Job's pod first, waited for
    /// (the qualification inside heals the cluster on SIGTERM within its grace period), then
    /// the objects outside its namespace (cluster-scoped RBAC, the lock's Role), then the
    /// namespace.
    DeleteBundle {
        namespace: String,
        objects: Vec<ObjectRef>,
    },
}

/// An object by its API version, kind, namespace (none: cluster-scoped) and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
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
            Undo::HealFault { .. }
            | Undo::RestoreNode { .. }
            | Undo::DeleteNetworkFence { .. }
            | Undo::RemoveTaint { .. } => Track::Nodes,
            Undo::DeleteNamespace { .. }
            | Undo::DeletePersistentVolume { .. }
            | Undo::RemoveDir { .. }
            | Undo::DeleteStorageClass { .. }
            | Undo::DeleteBundle { .. } => Track::RunObjects,
        }
    }

    /// Heal order: nodes back first, then their storage fences lifted (Rook lifts a fence
    /// with the taint), then their taints, then the run's objects.
    pub fn priority(&self) -> u8 {
        match self {
            Undo::HealFault { .. } => 0,
            Undo::RestoreNode { .. } => 1,
            Undo::DeleteNetworkFence { .. } => 2,
            Undo::RemoveTaint { .. } => 3,
            Undo::DeleteNamespace { .. } => 4,
            Undo::DeletePersistentVolume { .. } => 5,
            Undo::RemoveDir { .. } => 6,
            Undo::DeleteStorageClass { .. } => 7,
            Undo::DeleteBundle { .. } => 8,
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

/// What the journal holds that is not yet undone.
#[derive(Debug, Default)]
pub struct Pending {
    /// The undo actions not yet healed, in heal order.
    pub actions: Vec<(u64, Undo)>,
    /// Lines that could not be read (other than a torn last line): what they recorded, if it
    /// was an action, cannot be undone from here, and whoever heals must say so.
    pub unreadable: Vec<crate::jsonl::BadLine>,
}

impl Pending {
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty() && self.unreadable.is_empty()
    }
}

/// What an unreadable journal line seems to have recorded, for the message that says it was
/// not undone: the undo kind and its object when the line is JSON of an unknown shape.
pub fn describe_unreadable(bad: &crate::jsonl::BadLine) -> String {
    let guess = serde_json::from_str::<serde_json::Value>(&bad.text)
        .ok()
        .and_then(|v| {
            let undo = v.get("undo")?.as_str()?.to_string();
            let object = ["node", "name", "path"]
                .iter()
                .find_map(|k| v.get(*k).and_then(|x| x.as_str()).map(String::from));
            Some(match object {
                Some(o) => format!("{undo} {o}"),
                None => undo,
            })
        });
    match guess {
        Some(g) => format!(
            "line {} cannot be read ({}); it looks like `{g}`, which was NOT undone: undo it by hand",
            bad.line, bad.detail
        ),
        None => format!(
            "line {} cannot be read ({}); if it recorded an action, that action was NOT undone (the line: {})",
            bad.line, bad.detail, bad.text
        ),
    }
}

impl Journal {
    /// Opens (appending) or creates the journal at `path`. A torn last line (a crash in the
    /// middle of [`Journal::record`], which returns only after the line is synced, so the
    /// action it announced was never taken) is cut off, so the next entry starts a line of its
    /// own and the file keeps to the JSON-lines rule.
    pub fn open(path: &Path) -> std::io::Result<Journal> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)?;
        let text = read_text(&mut file)?;
        let next = crate::jsonl::parse::<Entry>(&text)
            .values
            .iter()
            .map(|(_, e)| match e {
                Entry::Do { id, .. } | Entry::Healed { id, .. } => *id,
            })
            .max()
            .unwrap_or(0)
            + 1;
        if !text.is_empty() && !text.ends_with('\n') {
            let keep = text.rfind('\n').map(|i| i + 1).unwrap_or(0);
            tracing::warn!(
                "{}: cutting off a torn last line: {}",
                path.display(),
                &text[keep..]
            );
            file.set_len(keep as u64)?;
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

    /// Writes the undos of several actions about to be taken, with one sync for all; returns
    /// their ids.
    pub fn record_all(&self, undos: Vec<Undo>) -> std::io::Result<Vec<u64>> {
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let mut text = String::new();
        let mut ids = Vec::with_capacity(undos.len());
        for undo in undos {
            let id = guard.1;
            guard.1 += 1;
            ids.push(id);
            text.push_str(
                &serde_json::to_string(&Entry::Do {
                    id,
                    wall: now(),
                    undo,
                })
                .expect("journal entries serialize"),
            );
            text.push('\n');
        }
        guard.0.write_all(text.as_bytes())?;
        guard.0.sync_data()?;
        Ok(ids)
    }

    pub fn healed(&self, id: u64) -> std::io::Result<()> {
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        self.append(&mut guard.0, &Entry::Healed { id, wall: now() })
    }

    pub fn pending(&self) -> std::io::Result<Pending> {
        Ok(pending(read(&self.path)?))
    }
}

fn read_text(file: &mut File) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(0))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    // Not UTF-8 is as unreadable as bad JSON: keep going, the bad lines are reported.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Reads a journal file (missing file: empty) by the JSON-lines rule of [`crate::jsonl`].
pub fn read(path: &Path) -> std::io::Result<crate::jsonl::Read<Entry>> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(crate::jsonl::parse("")),
        Err(e) => return Err(e),
    };
    Ok(crate::jsonl::parse(&read_text(&mut file)?))
}

/// The undo actions not yet healed, in heal order, and the lines that could not be read.
pub fn pending(read: crate::jsonl::Read<Entry>) -> Pending {
    let entries: Vec<Entry> = read.values.into_iter().map(|(_, e)| e).collect();
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
    let mut actions: Vec<(u64, Undo)> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Do { id, undo, .. } if !healed.contains(id) => Some((*id, undo.clone())),
            _ => None,
        })
        .collect();
    actions.sort_by_key(|(id, u)| (u.priority(), std::cmp::Reverse(*id)));
    Pending {
        actions,
        unreadable: read.bad,
    }
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
        let p: Vec<u64> = j
            .pending()
            .unwrap()
            .actions
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(p, vec![node, ns]);
        let next = j.record(Undo::RemoveDir { path: "/x".into() }).unwrap();
        assert!(next > node);
        // The entry written after the torn line reads back, as its own line.
        drop(j);
        let entries = read(&path).unwrap();
        assert!(
            entries.bad.is_empty() && entries.torn.is_none(),
            "{entries:?}"
        );
        assert!(
            entries.values.iter().map(|(_, e)| e).any(
                |e| matches!(e, Entry::Do { id, undo: Undo::RemoveDir { .. }, .. } if *id == next)
            ),
            "{entries:?}"
        );
        let j = Journal::open(&path).unwrap();
        let p: Vec<u64> = j
            .pending()
            .unwrap()
            .actions
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(p, vec![node, ns, next]);
        // The heal's two tracks: the node's fault apart from the run's namespace and directory.
        let tracks: Vec<Track> = j
            .pending()
            .unwrap()
            .actions
            .iter()
            .map(|(_, u)| u.track())
            .collect();
        assert_eq!(
            tracks,
            vec![Track::Nodes, Track::RunObjects, Track::RunObjects]
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            !text.contains("{\"op\":\"do\",\"id\":9") && text.ends_with('\n'),
            "torn line cut off: {text}"
        );
    }

    #[test]
    fn an_unreadable_middle_line_is_reported_not_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        let j = Journal::open(&path).unwrap();
        let first = j
            .record(Undo::DeleteNamespace { name: "ns".into() })
            .unwrap();
        drop(j);
        // Two bad lines in the middle: JSON of an unknown undo kind, and garbage.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(
            b"{\"op\":\"do\",\"id\":2,\"wall\":\"x\",\"undo\":\"uncordon\",\"node\":\"w3\"}\n",
        )
        .unwrap();
        f.write_all(b"\x00\x01garbage\n").unwrap();
        drop(f);
        let j = Journal::open(&path).unwrap();
        let later = j
            .record(Undo::RemoveTaint {
                node: "w1".into(),
                key: "k".into(),
            })
            .unwrap();
        assert!(later > first);
        let p = j.pending().unwrap();
        assert!(!p.is_empty());
        let ids: Vec<u64> = p.actions.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, vec![later, first], "the readable actions still heal");
        let lines: Vec<usize> = p.unreadable.iter().map(|b| b.line).collect();
        assert_eq!(lines, vec![2, 3]);
        let first_msg = describe_unreadable(&p.unreadable[0]);
        assert!(
            first_msg.starts_with("line 2 cannot be read") && first_msg.contains("`uncordon w3`"),
            "{first_msg}"
        );
        let second = describe_unreadable(&p.unreadable[1]);
        assert!(
            second.contains("line 3") && second.contains("NOT undone"),
            "{second}"
        );
    }

    /// A StorageClass qualify made is deleted with the run's objects, after their volumes, and
    /// reads back from its line.
    #[test]
    fn a_storage_class_is_healed_last_among_the_run_objects() {
        let u = Undo::DeleteStorageClass {
            name: "nd-qualify-1a2b3".into(),
        };
        assert_eq!(u.track(), Track::RunObjects);
        assert!(u.priority() > Undo::DeletePersistentVolume { name: "pv".into() }.priority());
        let line = serde_json::to_string(&u).unwrap();
        assert_eq!(
            line,
            r#"{"undo":"delete-storage-class","name":"nd-qualify-1a2b3"}"#
        );
        assert_eq!(serde_json::from_str::<Undo>(&line).unwrap(), u);
    }
}
