//! The failover qualification of a storage class (pure): from what the driver declares (its
//! testdriver capabilities) and whether it attaches (its CSIDriver's `attachRequired`), the rows
//! to run — each an ordinary experiment file, so any row can be rerun or edited with
//! `nodedown run` — or the reason a row does not apply. Every row's expectation is what the
//! Kubernetes sources predict, with the source named.

use crate::spec::{
    AccessMode, Bound, ClusterSpec, Controller, Expectations, Experiment, FaultKind, FaultSpec,
    Fence, IntegrityExpectation, PhaseExpectation, RemediationSpec, Target, TestDriver, Timeouts,
    Variant, VolumeMode, WorkloadKind, WorkloadSpec,
};
use crate::timeline::Phase;
use std::time::Duration;

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
    /// `volumeLimits` as declared: the driver publishes an attach limit per node.
    pub volume_limits: bool,
    /// The file's `Timeouts.PodStart` (upstream's time for a pod to start, volume included),
    /// when it is longer than nodedown's defaults: the steady state's timeout, and the
    /// recovery window of the rows that expect a recovery (their `timeToReady` bound too).
    pub pod_start: Option<std::time::Duration>,
    /// The cluster's `NetworkFenceClass` for the driver (csi-addons), when it has one: the
    /// storage-fence row runs.
    pub network_fence_class: Option<String>,
    /// Why the class's volumes are zonal (reachable from their zone only, like a cloud disk),
    /// when they are: the testdriver file's `TopologyKeys`, else the topology keys the driver
    /// publishes on its CSINodes. `None`: a volume may be used from any zone.
    pub zonal: Option<String>,
    /// The cluster's zones (`topology.kubernetes.io/zone`) and how many schedulable workers
    /// each has, by name; empty when unknown or when no node carries the label.
    pub zones: Vec<(String, usize)>,
    /// Why a volume's zone may be chosen before its pod is placed, when it may
    /// ([`crate::plan::lanes::early_zone`]): the zone-lost row cannot start the ledger in the
    /// zone it loses (and the runs go alone, outside the lanes: `run` reads that itself).
    pub early_zone: Option<String>,
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
            volume_limits: d.can("volumeLimits"),
            pod_start: d
                .timeouts
                .get("PodStart")
                .and_then(|t| crate::spec::duration::parse(t).ok()),
            network_fence_class: None,
            zonal: (!d.topology_keys.is_empty()).then(|| {
                format!(
                    "the testdriver file's TopologyKeys ({})",
                    d.topology_keys.join(", ")
                )
            }),
            zones: Vec::new(),
            early_zone: None,
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
            volume_limits: false,
            pod_start: None,
            network_fence_class: None,
            zonal: None,
            zones: Vec::new(),
            early_zone: None,
        }
    }
}

/// One row of the qualification.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The row's name: its experiment's (`qualify-<id>`) and its variant's.
    pub id: &'static str,
    /// What the row checks, in a line.
    pub title: &'static str,
    /// What the Kubernetes sources predict, and where.
    pub source: String,
    pub body: RowBody,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RowBody {
    /// The row's experiment (one variant, named as the row), written out by [`file_text`].
    Run(Box<Experiment>),
    /// Why the row does not apply to this storage or this invocation.
    NotApplicable(String),
}

/// The experiment file of a row as `nodedown qualify` writes it: a line saying where it comes
/// from, then the experiment serialised (the same model `nodedown run` reads back).
pub fn file_text(class: &str, exp: &Experiment) -> String {
    format!(
        "# Generated by `nodedown qualify` for storage class {class}; edit and rerun with `nodedown run`.\n{}",
        serde_saphyr::to_string(exp).expect("an experiment serialises")
    )
}

/// The phases the attach/detach controller adds to a row's `seen` on attaching storage.
const ATTACH_PHASES: [Phase; 2] = [Phase::VolumeDetached, Phase::VolumeAttached];

/// What a row expects: `recovered`, `timeToReady` bound, integrity pass, phases.
fn expect(
    recovered: bool,
    time_to_ready: Option<Duration>,
    seen: Vec<Phase>,
    not_seen: Vec<Phase>,
) -> Expectations {
    Expectations {
        recovered: Some(recovered),
        time_to_ready: time_to_ready.map(|max| Bound { max }),
        integrity: Some(IntegrityExpectation::Pass),
        phases: (!seen.is_empty() || !not_seen.is_empty())
            .then_some(PhaseExpectation { seen, not_seen }),
        ..Expectations::default()
    }
}

fn mins(m: u64) -> Duration {
    Duration::from_secs(60 * m)
}

fn taint(fence: bool) -> RemediationSpec {
    RemediationSpec::OutOfServiceTaint {
        after: Duration::ZERO,
        fence: if fence { Fence::Power } else { Fence::None },
        lift_after: None,
    }
}

fn force_delete() -> RemediationSpec {
    RemediationSpec::ForceDeletePod {
        after: Duration::from_secs(10),
        fence: Fence::None,
    }
}

/// The rows for `storage`; `quick` leaves out the rows that wait for the 6-minute forced
/// detach (marked not applicable, with that reason).
pub fn matrix(storage: &Storage, quick: bool) -> Vec<Row> {
    let attaches = storage.attaches == Some(true);
    let shutdown = |graceful: bool| Shape {
        fault: FaultKind::NodeShutdown,
        graceful,
        mode: AccessMode::ReadWriteOnce,
        volume_mode: VolumeMode::Filesystem,
    };
    let run = |id: &str, shape: Shape, remediation, recovery, expect| {
        RowBody::Run(Box::new(experiment(
            storage,
            id,
            shape,
            remediation,
            recovery,
            expect,
        )))
    };
    let mut rows = vec![
        Row {
            id: "power-off-none",
            title: "node powered off, no remediation: stays down, the volume stays attached",
            source: "pkg/controller/statefulset makes no second pod while the old one is Terminating on the unreachable node; pkg/controller/volume/attachdetach detaches only once the pod is deleted".into(),
            body: run(
                "power-off-none",
                shutdown(false),
                RemediationSpec::None,
                Duration::from_secs(90),
                Expectations {
                    // What the row states: it stays down. Its data are not part of it — no
                    // second writer can appear, and a provisioned volume can only be read
                    // through its pod, whose node is down until the heal.
                    integrity: None,
                    ..expect(
                        false,
                        None,
                        vec![],
                        if attaches {
                            vec![Phase::VolumeDetached, Phase::ReplacementCreated]
                        } else {
                            vec![Phase::ReplacementCreated]
                        },
                    )
                },
            ),
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
            body: run(
                "power-off-taint",
                shutdown(false),
                taint(false),
                mins(3),
                expect(true, Some(mins(3)), attach_phases(attaches), vec![]),
            ),
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
        } else if attaches {
            run(
                "force-delete",
                shutdown(false),
                force_delete(),
                mins(9),
                expect(
                    true,
                    Some(mins(9)),
                    vec![Phase::MultiAttachError, Phase::VolumeDetached],
                    vec![],
                ),
            )
        } else {
            run(
                "force-delete",
                shutdown(false),
                force_delete(),
                mins(3),
                expect(true, Some(mins(3)), vec![], vec![]),
            )
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
        } else if attaches {
            run(
                "graceful-shutdown",
                shutdown(true),
                RemediationSpec::None,
                mins(9),
                expect(
                    true,
                    None,
                    vec![
                        Phase::PodShutDownByKubelet,
                        Phase::OldPodDeleted,
                        Phase::MultiAttachError,
                    ],
                    vec![],
                ),
            )
        } else {
            run(
                "graceful-shutdown",
                shutdown(true),
                RemediationSpec::None,
                mins(3),
                expect(
                    true,
                    Some(mins(2)),
                    vec![Phase::PodShutDownByKubelet],
                    vec![],
                ),
            )
        },
    });
    rows.push(Row {
        id: "partition-fenced-taint",
        title: "node cut off from the network, fenced (powered off) then tainted: nothing lost",
        source: "KEP-2268 requires the node to be shut down before the taint; fencing makes it so, and the replacement is the only writer".into(),
        body: run(
            "partition-fenced-taint",
            Shape {
                fault: FaultKind::NetworkPartition,
                graceful: false,
                mode: AccessMode::ReadWriteOnce,
                volume_mode: VolumeMode::Filesystem,
            },
            taint(true),
            mins(3),
            expect(true, Some(mins(3)), vec![], vec![]),
        ),
    });
    rows.push(Row {
        id: "partition-storage-fence",
        title: "node cut off from the network, fenced at its storage (NetworkFence) then tainted: the storage refuses the old writer, nothing lost",
        source: "csi-addons NetworkFence (fence.proto FenceClusterNetwork): the storage blocklists the node's clients, sessions already open included, as Rook does on the out-of-service taint".into(),
        body: match &storage.network_fence_class {
            Some(_) => run(
                "partition-storage-fence",
                Shape {
                    fault: FaultKind::NetworkPartition,
                    graceful: false,
                    mode: AccessMode::ReadWriteOnce,
                    volume_mode: VolumeMode::Filesystem,
                },
                RemediationSpec::OutOfServiceTaint {
                    after: Duration::ZERO,
                    fence: Fence::Storage,
                    lift_after: None,
                },
                mins(3),
                expect(true, Some(mins(3)), vec![Phase::FenceSucceeded], vec![]),
            ),
            None => RowBody::NotApplicable(
                "the cluster has no NetworkFenceClass for the driver (csi-addons network fencing), or it was not reachable".into(),
            ),
        },
    });
    let with_mode = |mode| Shape {
        fault: FaultKind::NodeShutdown,
        graceful: false,
        mode,
        volume_mode: VolumeMode::Filesystem,
    };
    rows.push(Row {
        id: "read-write-once-pod",
        title: "ReadWriteOncePod: the taint recovers it like ReadWriteOnce",
        source: "KEP-2485: one pod cluster-wide; the out-of-service taint frees it as it frees ReadWriteOnce".into(),
        body: if storage.read_write_once_pod {
            run(
                "read-write-once-pod",
                with_mode(AccessMode::ReadWriteOncePod),
                taint(false),
                mins(3),
                expect(true, Some(mins(3)), vec![], vec![]),
            )
        } else {
            RowBody::NotApplicable("the driver does not declare readWriteOncePod".into())
        },
    });
    rows.push(Row {
        id: "read-write-many",
        title: "ReadWriteMany: a replacement starts while the old node still holds the volume",
        source: "a multi-node access mode raises no Multi-Attach error (pkg/controller/volume/attachdetach checks only single-node modes)".into(),
        body: if storage.read_write_many {
            run(
                "read-write-many",
                with_mode(AccessMode::ReadWriteMany),
                force_delete(),
                mins(3),
                expect(true, Some(mins(3)), vec![], vec![Phase::MultiAttachError]),
            )
        } else {
            RowBody::NotApplicable("the driver does not declare RWX".into())
        },
    });
    rows.push(Row {
        id: "pod-delete",
        title: "the pod deleted, its node up: the baseline",
        source: "the StatefulSet replaces a deleted pod on a healthy node; the volume moves only if the scheduler picks another node".into(),
        body: run(
            "pod-delete",
            Shape {
                fault: FaultKind::PodDelete,
                graceful: false,
                mode: AccessMode::ReadWriteOnce,
                volume_mode: VolumeMode::Filesystem,
            },
            RemediationSpec::None,
            mins(2),
            expect(true, Some(mins(1)), vec![], vec![]),
        ),
    });
    rows.push(zone_lost(storage, attaches));
    rows.push(Row {
        id: "block",
        title: "a raw block volume, node powered off, out-of-service taint: recovers, nothing lost",
        source: "volumeMode: Block follows the same attach/detach path, then the kubelet's map path (pkg/volume/util: MapBlockVolume) instead of a mount; the taint frees it as it frees a filesystem".into(),
        body: if storage.block {
            run(
                "block",
                Shape {
                    volume_mode: VolumeMode::Block,
                    ..shutdown(false)
                },
                taint(false),
                mins(3),
                expect(true, Some(mins(3)), attach_phases(attaches), vec![]),
            )
        } else {
            RowBody::NotApplicable("the driver does not declare block".into())
        },
    });
    rows.push(volume_limits(storage, attaches));
    if !storage.persistence {
        for r in &mut rows {
            r.body = RowBody::NotApplicable(
                "the driver does not declare persistence: its volumes keep no data across pods, so there is nothing for a failover to keep".into(),
            );
        }
    }
    rows
}

/// The zone of the volume lost: every worker of one zone powered off at once and tainted.
/// A zonal volume cannot follow its pod out of the zone (the PV's node affinity is its zone):
/// nothing recovers, by design; a volume of any zone recovers in another zone.
fn zone_lost(storage: &Storage, attaches: bool) -> Row {
    const ID: &str = "zone-lost";
    let title = "every node of the volume's zone powered off, each tainted: a zonal volume stays down (expected), any other recovers in another zone";
    // The zone the ledger starts in (its workers are the run's homes): the first by name,
    // among at least two zones (one to lose, one left). Every listed zone has a worker.
    let body = match storage.zones.first() {
        Some(_) if storage.early_zone.is_some() => RowBody::NotApplicable(format!(
            "{}: each volume's zone is chosen before its pod, so the row cannot start the ledger in the zone it loses; give the class volumeBindingMode: WaitForFirstConsumer (upstream's delayed binding)",
            storage.early_zone.as_deref().unwrap_or_default()
        )),
        Some((zone, _)) if storage.zones.len() >= 2 => {
            let shape = Shape {
                fault: FaultKind::NodeShutdown,
                graceful: false,
                mode: AccessMode::ReadWriteOnce,
                volume_mode: VolumeMode::Filesystem,
            };
            let expect = if storage.zonal.is_some() {
                Expectations {
                    // The ledger's pod and its volume are in the lost zone: nothing can read it.
                    integrity: None,
                    ..expect(
                        false,
                        None,
                        vec![],
                        if attaches {
                            vec![Phase::VolumeAttached]
                        } else {
                            vec![]
                        },
                    )
                }
            } else {
                expect(true, Some(mins(3)), attach_phases(attaches), vec![])
            };
            let recovery = if storage.zonal.is_some() {
                Duration::from_secs(90)
            } else {
                mins(3)
            };
            let mut e = experiment(storage, ID, shape, taint(false), recovery, expect);
            e.fault.target = Target {
                node_of: String::new(),
                zone: Some(zone.clone()),
                nodes: vec![],
                count: None,
            };
            RowBody::Run(Box::new(e))
        }
        _ => RowBody::NotApplicable(format!(
            "the cluster has {} zone(s) with schedulable workers (label topology.kubernetes.io/zone): losing one needs another left",
            storage.zones.len()
        )),
    };
    Row {
        id: ID,
        title,
        source: match &storage.zonal {
            Some(why) => format!(
                "zonal volumes ({why}): the provisioned PV's node affinity is its zone, so the scheduler's VolumeBinding admits no node of another zone and the replacement stays Pending; a zonal driver cannot survive the loss of its zone, by design"
            ),
            None => "a volume without topology (no TopologyKeys, no topology keys on the driver's CSINodes) may be used from any zone: each lost node tainted, the replacement attaches it in another zone".into(),
        },
        body,
    }
}

/// Every node the replacement may go to at the driver's attach limit (filled with pods holding
/// one volume each), then the ledger's node powered off and tainted: the scheduler has no node
/// with room, so the replacement stays Pending.
fn volume_limits(storage: &Storage, attaches: bool) -> Row {
    const ID: &str = "volume-limits";
    let body = if storage.volume_limits {
        let mut expect = Expectations {
            // The replacement never runs: nothing serves the ledger to read it through.
            integrity: None,
            ..expect(
                false,
                None,
                if attaches {
                    vec![Phase::VolumeDetached]
                } else {
                    vec![]
                },
                if attaches {
                    vec![Phase::VolumeAttached]
                } else {
                    vec![]
                },
            )
        };
        expect.time_to_ready = None;
        let mut e = experiment(
            storage,
            ID,
            Shape {
                fault: FaultKind::NodeShutdown,
                graceful: false,
                mode: AccessMode::ReadWriteOnce,
                volume_mode: VolumeMode::Filesystem,
            },
            taint(false),
            Duration::from_secs(90),
            expect,
        );
        e.workload.fill_attach_limit = true;
        RowBody::Run(Box::new(e))
    } else {
        RowBody::NotApplicable("the driver does not declare volumeLimits".into())
    };
    Row {
        id: ID,
        title: "every other node at the driver's attach limit, node powered off, out-of-service taint: the replacement stays Pending (expected)",
        source: "kube-scheduler's NodeVolumeLimits (pkg/scheduler/framework/plugins/nodevolumelimits) counts each node's volumes of the driver against its CSINode allocatable count (the driver's max_volumes_per_node): no node has room, the replacement stays Pending in every Kubernetes version. KEP-4876 (MutableCSINodeAllocatableCount, beta and on by default from 1.35) changes only an attach the driver refuses with RESOURCE_EXHAUSTED on a node the scheduler thought had room: the pod fails and is made again instead of hanging in ContainerCreating".into(),
        body,
    }
}

/// The phases a recovering row sees on attaching storage: detach and attach.
fn attach_phases(attaches: bool) -> Vec<Phase> {
    if attaches {
        ATTACH_PHASES.to_vec()
    } else {
        vec![]
    }
}

/// What a row does to the ledger's node, and the claim's access mode.
#[derive(Debug, Clone, Copy)]
struct Shape {
    fault: FaultKind,
    graceful: bool,
    mode: AccessMode,
    volume_mode: VolumeMode,
}

/// One row's experiment: a ledger on the class, the fault on the ledger's node, one variant
/// named as the row with the row's remediation and expectation.
fn experiment(
    s: &Storage,
    id: &str,
    shape: Shape,
    remediation: RemediationSpec,
    recovery: Duration,
    mut expect: Expectations,
) -> Experiment {
    let mut timeouts = Timeouts {
        recovery,
        ..Timeouts::default()
    };
    // The driver's declared PodStart, where longer than the defaults: the steady state, and
    // the window (and bound, where it was the window) of a row that expects a recovery. A row
    // that expects none keeps its window: a longer one would only delay the same verdict.
    if let Some(start) = s.pod_start {
        timeouts.steady_state = timeouts.steady_state.max(start);
        if expect.recovered == Some(true) && start > recovery {
            if let Some(b) = expect.time_to_ready.as_mut().filter(|b| b.max == recovery) {
                b.max = start;
            }
            timeouts.recovery = start;
        }
    }
    Experiment {
        name: format!("qualify-{id}"),
        description: Some(format!(
            "Failover qualification of storage class {}, row {id}.",
            s.class
        )),
        cluster: ClusterSpec::default(),
        workload: WorkloadSpec {
            kind: WorkloadKind::Ledger,
            replicas: 1,
            instances: 1,
            storage_class: s.class.clone(),
            size: s.size.clone(),
            image: None,
            access_mode: shape.mode,
            controller: Controller::StatefulSet,
            strategy: None,
            volume_mode: shape.volume_mode,
            fill_attach_limit: false,
        },
        fault: FaultSpec {
            kind: shape.fault,
            target: Target {
                node_of: "ledger-0".into(),
                zone: None,
                nodes: vec![],
                count: None,
            },
            duration: None,
            graceful: shape.graceful,
        },
        remediation: RemediationSpec::None,
        timeouts,
        expect: Expectations::default(),
        repeat: 1,
        variants: vec![Variant {
            name: id.to_string(),
            description: None,
            workload: None,
            fault: None,
            remediation: Some(remediation),
            timeouts: None,
            expect: Some(std::mem::take(&mut expect)),
        }],
    }
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

    /// The row's experiment (panics when the row does not apply).
    fn exp<'a>(rows: &'a [Row], id: &str) -> &'a Experiment {
        match &rows.iter().find(|r| r.id == id).unwrap().body {
            RowBody::Run(e) => e,
            RowBody::NotApplicable(w) => panic!("{id}: {w}"),
        }
    }

    /// The one variant's expectation of a row.
    fn expect_of<'a>(rows: &'a [Row], id: &str) -> &'a Expectations {
        exp(rows, id).variants[0].expect.as_ref().unwrap()
    }

    #[test]
    fn every_generated_row_is_written_as_a_file_run_reads_back_unchanged() {
        for attaches in [Some(true), Some(false), None] {
            for quick in [true, false] {
                let mut s = Storage::from_class("some-class", attaches);
                s.read_write_many = true;
                s.read_write_once_pod = true;
                s.pod_start = (quick && attaches.is_some()).then(|| Duration::from_secs(420));
                for row in matrix(&s, quick) {
                    if let RowBody::Run(e) = &row.body {
                        let text = file_text(&s.class, e);
                        assert!(text.starts_with("# Generated by `nodedown qualify`"));
                        let back = crate::spec::parse_str(&text, Path::new("row.yaml"))
                            .unwrap_or_else(|err| panic!("{}: {err}\n{text}", row.id));
                        assert_eq!(&back, e.as_ref(), "{text}");
                        assert_eq!(back.name, format!("qualify-{}", row.id));
                        assert_eq!(back.variants.len(), 1);
                        assert_eq!(back.variants[0].name, row.id);
                        assert_eq!(back.workload.storage_class, "some-class");
                        // What is left out is what reading it back fills in.
                        for absent in ["cluster:", "repeat:", "expect: {}", "\nremediation:"] {
                            assert!(!text.contains(absent), "{absent}: {text}");
                        }
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
        let phases = expect_of(&full, "power-off-taint").phases.as_ref().unwrap();
        assert_eq!(
            phases.seen,
            vec![Phase::VolumeDetached, Phase::VolumeAttached]
        );
        assert_eq!(
            expect_of(&full, "force-delete").time_to_ready,
            Some(Bound { max: mins(9) })
        );
        // Storage that does not attach: no attach expectations, and force-delete recovers fast.
        let plain = matrix(&Storage::from_class("nodedown-shared", Some(false)), true);
        assert!(na(&plain, "force-delete").is_none());
        assert_eq!(expect_of(&plain, "power-off-taint").phases, None);
        assert_eq!(
            expect_of(&plain, "power-off-none")
                .phases
                .as_ref()
                .unwrap()
                .not_seen,
            vec![Phase::ReplacementCreated]
        );
        assert_eq!(
            expect_of(&plain, "force-delete").time_to_ready,
            Some(Bound { max: mins(3) })
        );
        // Every row that runs expects the data intact, except the one whose node stays down.
        assert_eq!(expect_of(&plain, "power-off-none").integrity, None);
        assert_eq!(
            expect_of(&plain, "power-off-taint").integrity,
            Some(IntegrityExpectation::Pass)
        );
    }

    /// A driver's declared `Timeouts.PodStart` longer than the defaults reaches the rows: the
    /// steady state's timeout, and the window and bound of the rows that expect a recovery;
    /// a row that expects none keeps its window.
    #[test]
    fn the_drivers_pod_start_timeout_reaches_the_rows() {
        let mut s = Storage::from_class("nodedown-attach", Some(true));
        s.pod_start = Some(mins(10));
        let rows = matrix(&s, true);
        let taint = exp(&rows, "power-off-taint");
        assert_eq!(
            (taint.timeouts.recovery, taint.timeouts.steady_state),
            (mins(10), mins(10))
        );
        assert_eq!(
            expect_of(&rows, "power-off-taint").time_to_ready,
            Some(Bound { max: mins(10) })
        );
        let none = exp(&rows, "power-off-none");
        assert_eq!(
            (none.timeouts.recovery, none.timeouts.steady_state),
            (Duration::from_secs(90), mins(10))
        );
        // The baseline's bound (1m) is not its window (2m): the window grows, the bound stays.
        let pod_delete = exp(&rows, "pod-delete");
        assert_eq!(pod_delete.timeouts.recovery, mins(10));
        assert_eq!(
            expect_of(&rows, "pod-delete").time_to_ready,
            Some(Bound { max: mins(1) })
        );
        // Shorter than the defaults: nothing changes.
        s.pod_start = Some(Duration::from_secs(60));
        let plain = Storage::from_class("nodedown-attach", Some(true));
        assert_eq!(matrix(&s, true), matrix(&plain, true));
    }

    #[test]
    fn a_driver_that_declares_block_gets_a_block_failover_row() {
        let na = |rows: &[Row]| match &rows.iter().find(|r| r.id == "block").unwrap().body {
            RowBody::NotApplicable(why) => Some(why.clone()),
            RowBody::Run(_) => None,
        };
        assert!(na(&attach(true))
            .unwrap()
            .contains("does not declare block"));
        let mut s = Storage::from_class("nodedown-attach", Some(true));
        s.block = true;
        let rows = matrix(&s, true);
        let e = exp(&rows, "block");
        assert_eq!(e.workload.volume_mode, VolumeMode::Block);
        assert_eq!(e.workload.kind, WorkloadKind::Ledger);
        assert_eq!(e.fault.kind, FaultKind::NodeShutdown);
        assert!(matches!(
            e.variants[0].remediation,
            Some(RemediationSpec::OutOfServiceTaint { .. })
        ));
        let x = expect_of(&rows, "block");
        assert_eq!(x.integrity, Some(IntegrityExpectation::Pass));
        assert_eq!(x.phases.as_ref().unwrap().seen, ATTACH_PHASES.to_vec());
        // Every other row keeps a filesystem volume.
        for r in &rows {
            if let (RowBody::Run(e), false) = (&r.body, r.id == "block") {
                assert_eq!(e.workload.volume_mode, VolumeMode::Filesystem, "{}", r.id);
            }
        }
    }

    #[test]
    fn losing_the_volumes_zone_recovers_only_a_volume_of_any_zone() {
        let zones = vec![("zone-a".to_string(), 2), ("zone-b".to_string(), 2)];
        // No zones (or one): nothing to lose one of and keep another.
        let mut s = Storage::from_class("nodedown-attach", Some(true));
        for z in [vec![], zones[..1].to_vec()] {
            s.zones = z;
            match &matrix(&s, true)
                .iter()
                .find(|r| r.id == "zone-lost")
                .unwrap()
                .body
            {
                RowBody::NotApplicable(why) => assert!(why.contains("another left"), "{why}"),
                RowBody::Run(_) => panic!("zone-lost runs without two zones"),
            }
        }
        // A volume of any zone: the taint brings it back in the other zone.
        s.zones = zones.clone();
        let rows = matrix(&s, true);
        let e = exp(&rows, "zone-lost");
        assert_eq!(e.fault.target.zone.as_deref(), Some("zone-a"));
        assert_eq!(e.fault.target.node_of, "");
        let x = expect_of(&rows, "zone-lost");
        assert_eq!(x.recovered, Some(true));
        assert_eq!(x.integrity, Some(IntegrityExpectation::Pass));
        assert_eq!(x.phases.as_ref().unwrap().seen, ATTACH_PHASES.to_vec());
        // A zonal volume stays down: no attach anywhere, and nothing can read its data.
        s.zonal = Some("the testdriver file's TopologyKeys (topology.kubernetes.io/zone)".into());
        let rows = matrix(&s, true);
        let x = expect_of(&rows, "zone-lost");
        assert_eq!(x.recovered, Some(false));
        assert_eq!(x.integrity, None);
        assert_eq!(x.phases.as_ref().unwrap().not_seen, [Phase::VolumeAttached]);
        let row = rows.iter().find(|r| r.id == "zone-lost").unwrap();
        assert!(row.source.contains("TopologyKeys") && row.source.contains("by design"));
        // Written as a file `nodedown run` reads back unchanged.
        let text = file_text(&s.class, exp(&rows, "zone-lost"));
        let back = crate::spec::parse_str(&text, Path::new("zone-lost.yaml"))
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(&back, exp(&rows, "zone-lost"), "{text}");
    }

    #[test]
    fn a_driver_with_volume_limits_fails_over_onto_full_nodes_and_stays_pending() {
        let mut s = Storage::from_class("nd-qualify-x", Some(true));
        match &matrix(&s, true)
            .iter()
            .find(|r| r.id == "volume-limits")
            .unwrap()
            .body
        {
            RowBody::NotApplicable(why) => assert!(why.contains("volumeLimits"), "{why}"),
            RowBody::Run(_) => panic!("volume-limits runs for a driver that declares no limit"),
        }
        let text = "StorageClass: {FromName: true}\nDriverInfo:\n  Name: d\n  Capabilities: {persistence: true, volumeLimits: true}\n";
        let d = crate::spec::parse_testdriver(text, Path::new("d.yaml"))
            .unwrap()
            .0;
        s.volume_limits = Storage::from_driver(&d, "c", Some(true)).volume_limits;
        let rows = matrix(&s, true);
        let e = exp(&rows, "volume-limits");
        assert!(e.workload.fill_attach_limit);
        assert_eq!(e.fault.kind, FaultKind::NodeShutdown);
        assert!(matches!(
            e.variants[0].remediation,
            Some(RemediationSpec::OutOfServiceTaint { .. })
        ));
        let x = expect_of(&rows, "volume-limits");
        assert_eq!(x.recovered, Some(false));
        assert_eq!(x.time_to_ready, None);
        assert_eq!(x.integrity, None);
        let phases = x.phases.as_ref().unwrap();
        assert_eq!(phases.seen, [Phase::VolumeDetached]);
        assert_eq!(phases.not_seen, [Phase::VolumeAttached]);
        // Only this row fills nodes.
        for r in &rows {
            if let (RowBody::Run(e), false) = (&r.body, r.id == "volume-limits") {
                assert!(!e.workload.fill_attach_limit, "{}", r.id);
            }
        }
        let text = file_text(&s.class, exp(&rows, "volume-limits"));
        assert!(text.contains("fillAttachLimit: true"), "{text}");
        let back = crate::spec::parse_str(&text, Path::new("volume-limits.yaml"))
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(&back, exp(&rows, "volume-limits"), "{text}");
    }

    #[test]
    fn a_class_that_picks_the_zone_before_the_pod_has_no_zone_lost_row() {
        let zone = vec!["topology.kubernetes.io/zone".to_string()];
        let why = crate::plan::lanes::early_zone("vendor", Some("Immediate"), &[], &zone).unwrap();
        let mut s = Storage::from_class("vendor", Some(true));
        s.zones = vec![("zone-a".to_string(), 2), ("zone-b".to_string(), 2)];
        assert!(matches!(
            matrix(&s, true)
                .iter()
                .find(|r| r.id == "zone-lost")
                .unwrap()
                .body,
            RowBody::Run(_)
        ));
        s.early_zone = Some(why);
        match &matrix(&s, true)
            .iter()
            .find(|r| r.id == "zone-lost")
            .unwrap()
            .body
        {
            RowBody::NotApplicable(w) => {
                assert!(
                    w.contains("binds Immediate") && w.contains("WaitForFirstConsumer"),
                    "{w}"
                )
            }
            RowBody::Run(_) => panic!("zone-lost runs where the volume's zone is not the row's"),
        }
    }

    #[test]
    fn a_testdrivers_topology_keys_make_its_volumes_zonal() {
        let text = "StorageClass: {FromName: true}\nDriverInfo:\n  Name: d\n  TopologyKeys: [topology.kubernetes.io/zone]\n  Capabilities: {persistence: true}\n";
        let d = crate::spec::parse_testdriver(text, Path::new("d.yaml"))
            .unwrap()
            .0;
        let s = Storage::from_driver(&d, "c", Some(true));
        assert!(s.zonal.unwrap().contains("topology.kubernetes.io/zone"));
        let text = "StorageClass: {FromName: true}\nDriverInfo:\n  Name: d\n  Capabilities: {persistence: true}\n";
        let d = crate::spec::parse_testdriver(text, Path::new("d.yaml"))
            .unwrap()
            .0;
        assert_eq!(Storage::from_driver(&d, "c", Some(true)).zonal, None);
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
