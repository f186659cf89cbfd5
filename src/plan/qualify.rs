//! The failover qualification of a storage class (pure): from what the driver declares (its
//! testdriver capabilities) and whether it attaches (its CSIDriver's `attachRequired`), the rows
//! to run — each an ordinary experiment file, so any row can be rerun or edited with
//! `nodedown run` — or the reason a row does not apply. Every row's expectation is what the
//! Kubernetes sources predict, with the source named.

use crate::spec::TestDriver;

/// What the qualification knows about the storage under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Storage {
    /// The StorageClass the workload's claims use.
    pub class: String,
    /// The claim size (the driver's smallest supported size, else 1Gi).
    pub size: String,
    /// The CSI driver's `attachRequired` (VolumeAttachments, detach and attach phases), when
    /// known; unknown leaves the attach expectations out.
    pub attaches: Option<bool>,
    /// `persistence`, `readWriteOncePod`, `RWX`, `block` as declared (all but persistence false
    /// when no testdriver file was given).
    pub persistence: bool,
    pub read_write_once_pod: bool,
    pub read_write_many: bool,
    pub block: bool,
    /// The file's `Timeouts.PodStart` (upstream's time for a pod to start, volume included),
    /// when it is longer than nodedown's defaults: the steady state's timeout, and the
    /// recovery window of the rows that expect a recovery (their `timeToReady` bound too).
    pub pod_start: Option<std::time::Duration>,
}

impl Storage {
    /// From a testdriver file's capabilities.
    pub fn from_driver(d: &TestDriver, class: &str, attaches: Option<bool>) -> Storage {
        Storage {
            class: class.to_string(),
            size: d.min_size.clone().unwrap_or_else(|| "1Gi".to_string()),
            attaches,
            persistence: d.can("persistence"),
            read_write_once_pod: d.can("readWriteOncePod"),
            read_write_many: d.can("RWX"),
            block: d.can("block"),
            pod_start: d
                .timeouts
                .get("PodStart")
                .and_then(|t| crate::spec::duration::parse(t).ok()),
        }
    }

    /// A class given by name alone: ReadWriteOnce, persistent, nothing else declared.
    pub fn from_class(class: &str, attaches: Option<bool>) -> Storage {
        Storage {
            class: class.to_string(),
            size: "1Gi".to_string(),
            attaches,
            persistence: true,
            read_write_once_pod: false,
            read_write_many: false,
            block: false,
            pod_start: None,
        }
    }
}

/// One row of the qualification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The row's name: its experiment's (`qualify-<id>`) and its variant's.
    pub id: &'static str,
    /// What the row checks, in a line.
    pub title: &'static str,
    /// What the Kubernetes sources predict, and where.
    pub source: String,
    pub body: RowBody,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowBody {
    /// The experiment file's text.
    Run(String),
    /// Why the row does not apply to this storage or this invocation.
    NotApplicable(String),
}

/// The rows for `storage`; `quick` leaves out the rows that wait for the 6-minute forced
/// detach (marked not applicable, with that reason).
pub fn matrix(storage: &Storage, quick: bool) -> Vec<Row> {
    let attaches = storage.attaches == Some(true);
    let attach_seen = |extra: &[&str]| -> String {
        let mut seen: Vec<&str> = extra.to_vec();
        if attaches {
            seen.extend(["volume-detached", "volume-attached"]);
        }
        if seen.is_empty() {
            String::new()
        } else {
            format!(", phases: {{seen: [{}]}}", seen.join(", "))
        }
    };
    let mut rows = vec![
        Row {
            id: "power-off-none",
            title: "node powered off, no remediation: stays down, the volume stays attached",
            source: "pkg/controller/statefulset makes no second pod while the old one is Terminating on the unreachable node; pkg/controller/volume/attachdetach detaches only once the pod is deleted".into(),
            body: RowBody::Run(experiment(
                storage,
                "power-off-none",
                "node-shutdown",
                "{kind: none}",
                "90s",
                &format!(
                    "{{recovered: false, integrity: pass, phases: {{notSeen: [{}replacement-created]}}}}",
                    if attaches { "volume-detached, " } else { "" }
                ),
                None,
            )),
        },
        Row {
            id: "power-off-taint",
            title: "node powered off, out-of-service taint: recovers, nothing lost",
            source: format!(
                "KEP-2268: pkg/controller/podgc force-deletes the tainted node's terminating pods{}",
                if attaches {
                    "; the attach/detach reconciler force-detaches their volumes (forced_detaches reason=\"out-of-service\")"
                } else {
                    ""
                }
            ),
            body: RowBody::Run(experiment(
                storage,
                "power-off-taint",
                "node-shutdown",
                "{kind: out-of-service-taint, after: 0s}",
                "3m",
                &format!(
                    "{{recovered: true, timeToReady: {{max: 3m}}, integrity: pass{}}}",
                    attach_seen(&[])
                ),
                None,
            )),
        },
    ];
    rows.push(Row {
        id: "force-delete",
        title: "node powered off, pod force-deleted: a Multi-Attach error until the 6-minute forced detach",
        source: "pkg/controller/volume/attachdetach/reconciler: a volume of a deleted pod on an unhealthy node is force-detached after maxWaitForUnmountDuration (6 minutes, reason=\"timeout\")".into(),
        body: if quick && attaches {
            RowBody::NotApplicable(
                "--quick: this row waits for the 6-minute forced detach".into(),
            )
        } else {
            RowBody::Run(experiment(
                storage,
                "force-delete",
                "node-shutdown",
                "{kind: force-delete-pod, after: 10s}",
                if attaches { "9m" } else { "3m" },
                &if attaches {
                    "{recovered: true, timeToReady: {max: 9m}, integrity: pass, phases: {seen: [multi-attach-error, volume-detached]}}".to_string()
                } else {
                    "{recovered: true, timeToReady: {max: 3m}, integrity: pass}".to_string()
                },
                None,
            ))
        },
    });
    rows.push(Row {
        id: "graceful-shutdown",
        title: "node shut down cleanly: the kubelet ends the pod first",
        source: if attaches {
            "pkg/kubelet/nodeshutdown ends the pod, but the node goes down still listing the volume in node.status.volumesInUse, so the attach/detach controller waits for the 6-minute forced detach: a known Kubernetes behaviour, not the driver's".into()
        } else {
            "pkg/kubelet/nodeshutdown ends the pod (status Failed, reason Terminated) and the StatefulSet replaces it".into()
        },
        body: if quick && attaches {
            RowBody::NotApplicable(
                "--quick: on attaching storage this row waits for the 6-minute forced detach (a known Kubernetes behaviour after a graceful shutdown)".into(),
            )
        } else {
            RowBody::Run(experiment(
                storage,
                "graceful-shutdown",
                "node-shutdown",
                "{kind: none}",
                if attaches { "9m" } else { "3m" },
                &if attaches {
                    "{recovered: true, integrity: pass, phases: {seen: [pod-shut-down-by-kubelet, old-pod-deleted, multi-attach-error]}}".to_string()
                } else {
                    "{recovered: true, timeToReady: {max: 2m}, integrity: pass, phases: {seen: [pod-shut-down-by-kubelet]}}".to_string()
                },
                Some("graceful: true"),
            ))
        },
    });
    rows.push(Row {
        id: "partition-fenced-taint",
        title: "node cut off from the network, fenced (powered off) then tainted: nothing lost",
        source: "KEP-2268 requires the node to be shut down before the taint; fencing makes it so, and the replacement is the only writer".into(),
        body: RowBody::Run(experiment(
            storage,
            "partition-fenced-taint",
            "network-partition",
            "{kind: out-of-service-taint, after: 0s, fence: true}",
            "3m",
            "{recovered: true, timeToReady: {max: 3m}, integrity: pass}",
            None,
        )),
    });
    rows.push(Row {
        id: "read-write-once-pod",
        title: "ReadWriteOncePod: the taint recovers it like ReadWriteOnce",
        source: "KEP-2485: one pod cluster-wide; the out-of-service taint frees it as it frees ReadWriteOnce".into(),
        body: if storage.read_write_once_pod {
            RowBody::Run(experiment_with_mode(
                storage,
                "read-write-once-pod",
                "ReadWriteOncePod",
                "{kind: out-of-service-taint, after: 0s}",
                "{recovered: true, timeToReady: {max: 3m}, integrity: pass}",
            ))
        } else {
            RowBody::NotApplicable("the driver does not declare readWriteOncePod".into())
        },
    });
    rows.push(Row {
        id: "read-write-many",
        title: "ReadWriteMany: a replacement starts while the old node still holds the volume",
        source: "a multi-node access mode raises no Multi-Attach error (pkg/controller/volume/attachdetach checks only single-node modes)".into(),
        body: if storage.read_write_many {
            RowBody::Run(experiment_with_mode(
                storage,
                "read-write-many",
                "ReadWriteMany",
                "{kind: force-delete-pod, after: 10s}",
                "{recovered: true, timeToReady: {max: 3m}, integrity: pass, phases: {notSeen: [multi-attach-error]}}",
            ))
        } else {
            RowBody::NotApplicable("the driver does not declare RWX".into())
        },
    });
    rows.push(Row {
        id: "pod-delete",
        title: "the pod deleted, its node up: the baseline",
        source: "the StatefulSet replaces a deleted pod on a healthy node; the volume moves only if the scheduler picks another node".into(),
        body: RowBody::Run(experiment(
            storage,
            "pod-delete",
            "pod-delete",
            "{kind: none}",
            "2m",
            "{recovered: true, timeToReady: {max: 1m}, integrity: pass}",
            None,
        )),
    });
    rows.push(Row {
        id: "block",
        title: "a raw block volume",
        source: "volumeMode: Block follows the same attach/detach path".into(),
        body: RowBody::NotApplicable(if storage.block {
            "nodedown's ledger writes a file on a filesystem volume: block volumes are not supported yet".into()
        } else {
            "the driver does not declare block".into()
        }),
    });
    if !storage.persistence {
        for r in &mut rows {
            r.body = RowBody::NotApplicable(
                "the driver does not declare persistence: its volumes keep no data across pods, so there is nothing for a failover to keep".into(),
            );
        }
    }
    rows
}

/// One row's experiment file: a ledger on the class, `fault` on the ledger's node, one variant
/// named as the row.
fn experiment(
    s: &Storage,
    id: &str,
    fault: &str,
    remediation: &str,
    recovery: &str,
    expect: &str,
    fault_extra: Option<&str>,
) -> String {
    let extra = fault_extra.map(|e| format!(", {e}")).unwrap_or_default();
    // The driver's declared PodStart, where longer than the defaults: the steady state, and
    // the window (and bound) of a row that expects a recovery. A row that expects none keeps
    // its window: a longer one would only delay the same verdict.
    let (mut recovery, mut expect, mut steady) =
        (recovery.to_string(), expect.to_string(), String::new());
    if let Some(start) = s.pod_start {
        let text = crate::units::fmt_duration(start);
        if start > std::time::Duration::from_secs(180) {
            steady = format!(", steadyState: {text}");
        }
        let window = crate::spec::duration::parse(&recovery).unwrap_or_default();
        if expect.contains("recovered: true") && start > window {
            expect = expect.replace(
                &format!("timeToReady: {{max: {recovery}}}"),
                &format!("timeToReady: {{max: {text}}}"),
            );
            recovery = text;
        }
    }
    format!(
        "# Generated by `nodedown qualify` for storage class {class}; edit and rerun with `nodedown run`.\n\
         name: qualify-{id}\n\
         description: Failover qualification of storage class {class}, row {id}.\n\
         workload: {{kind: ledger, storageClass: {class}, size: {size}}}\n\
         fault: {{kind: {fault}{extra}, target: {{nodeOf: ledger-0}}}}\n\
         timeouts: {{recovery: {recovery}{steady}}}\n\
         variants:\n  - name: {id}\n    remediation: {remediation}\n    expect: {expect}\n",
        class = s.class,
        size = s.size,
    )
}

/// [`experiment`] of a node power-off with the claim's access mode `mode`.
fn experiment_with_mode(
    s: &Storage,
    id: &str,
    mode: &str,
    remediation: &str,
    expect: &str,
) -> String {
    experiment(s, id, "node-shutdown", remediation, "3m", expect, None).replace(
        &format!("size: {}}}", s.size),
        &format!("size: {}, accessMode: {mode}}}", s.size),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn attach(quick: bool) -> Vec<Row> {
        let mut s = Storage::from_class("nodedown-attach", Some(true));
        s.read_write_once_pod = true;
        matrix(&s, quick)
    }

    #[test]
    fn every_generated_row_is_a_valid_experiment_of_one_variant() {
        for attaches in [Some(true), Some(false), None] {
            for quick in [true, false] {
                let mut s = Storage::from_class("some-class", attaches);
                s.read_write_many = true;
                s.read_write_once_pod = true;
                for row in matrix(&s, quick) {
                    if let RowBody::Run(text) = &row.body {
                        let exp = crate::spec::parse_str(text, Path::new("row.yaml"))
                            .unwrap_or_else(|e| panic!("{}: {e}\n{text}", row.id));
                        assert_eq!(exp.name, format!("qualify-{}", row.id));
                        assert_eq!(exp.variants.len(), 1);
                        assert_eq!(exp.workload.storage_class, "some-class");
                    }
                }
            }
        }
    }

    #[test]
    fn quick_leaves_out_the_six_minute_rows_on_attaching_storage_and_says_so() {
        let quick = attach(true);
        let na = |rows: &[Row], id: &str| match &rows.iter().find(|r| r.id == id).unwrap().body {
            RowBody::NotApplicable(why) => Some(why.clone()),
            RowBody::Run(_) => None,
        };
        assert!(na(&quick, "force-delete").unwrap().contains("6-minute"));
        assert!(na(&quick, "graceful-shutdown")
            .unwrap()
            .contains("known Kubernetes behaviour"));
        assert!(na(&quick, "power-off-taint").is_none());
        assert!(na(&quick, "read-write-once-pod").is_none(), "declared");
        assert_eq!(
            na(&quick, "read-write-many").unwrap(),
            "the driver does not declare RWX"
        );
        let full = attach(false);
        assert!(na(&full, "force-delete").is_none());
        let RowBody::Run(text) = &full
            .iter()
            .find(|r| r.id == "power-off-taint")
            .unwrap()
            .body
        else {
            panic!()
        };
        assert!(
            text.contains("seen: [volume-detached, volume-attached]"),
            "{text}"
        );
        // Storage that does not attach: no attach expectations, and force-delete recovers fast.
        let plain = matrix(&Storage::from_class("nodedown-shared", Some(false)), true);
        assert!(na(&plain, "force-delete").is_none());
        let RowBody::Run(text) = &plain
            .iter()
            .find(|r| r.id == "power-off-taint")
            .unwrap()
            .body
        else {
            panic!()
        };
        assert!(!text.contains("volume-detached"), "{text}");
    }

    /// A driver's declared `Timeouts.PodStart` longer than the defaults reaches the rows: the
    /// steady state's timeout, and the window and bound of the rows that expect a recovery;
    /// a row that expects none keeps its window.
    #[test]
    fn the_drivers_pod_start_timeout_reaches_the_rows() {
        let mut s = Storage::from_class("nodedown-attach", Some(true));
        s.pod_start = Some(std::time::Duration::from_secs(600));
        let rows = matrix(&s, true);
        let text = |id: &str| match &rows.iter().find(|r| r.id == id).unwrap().body {
            RowBody::Run(t) => t.clone(),
            RowBody::NotApplicable(w) => panic!("{id}: {w}"),
        };
        let taint = text("power-off-taint");
        assert!(
            taint.contains("timeouts: {recovery: 10m, steadyState: 10m}"),
            "{taint}"
        );
        assert!(taint.contains("timeToReady: {max: 10m}"), "{taint}");
        let none = text("power-off-none");
        assert!(
            none.contains("timeouts: {recovery: 90s, steadyState: 10m}"),
            "{none}"
        );
        for r in &rows {
            if let RowBody::Run(t) = &r.body {
                crate::spec::parse_str(t, Path::new("row.yaml"))
                    .unwrap_or_else(|e| panic!("{}: {e}\n{t}", r.id));
            }
        }
        // Shorter than the defaults: nothing changes.
        s.pod_start = Some(std::time::Duration::from_secs(60));
        let plain = Storage::from_class("nodedown-attach", Some(true));
        assert_eq!(matrix(&s, true), matrix(&plain, true));
    }

    #[test]
    fn without_persistence_nothing_applies() {
        let mut s = Storage::from_class("scratch", Some(false));
        s.persistence = false;
        assert!(matrix(&s, false).iter().all(
            |r| matches!(&r.body, RowBody::NotApplicable(why) if why.contains("persistence"))
        ));
    }
}
