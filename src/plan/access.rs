//! The Kubernetes API permissions nodedown uses (pure): one table, from which both the shipped
//! least-privilege role (`deploy/rbac.yaml`, [`cluster_role_rules`]) and the preflight check of
//! an invocation ([`needed`]: what these runs will do, asked of the API server before anything
//! is touched) come. Each row says why, so a refusal can say it too.
//!
//! Rows were taken from the code's API calls (each `Api<K>` call, the watchers' list+watch,
//! the raw proxy requests); see the `where` of each. Run namespaces are made per run
//! (`nd-<experiment>-…`), so namespaced rows are granted cluster-wide (a ClusterRoleBinding):
//! the check asks for all namespaces, except the lock's Leases (namespace `default`).

use crate::plan::PlannedRun;
use crate::spec::{Controller, RemediationSpec, WorkloadKind};
use crate::vocab::{Backend, FaultKind};

/// When a row is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Every invocation.
    Always,
    /// Read for the record only (a run without it notes what it could not read): in the role,
    /// not in the preflight.
    BestEffort,
    /// The fault goes through this backend.
    Backend(Backend),
    /// This fault.
    Fault(FaultKind),
    /// This remediation (its kind's name).
    Remediation(&'static str),
    /// `remediation: external`: a taint someone else added is removed at the heal.
    External,
    /// A storage fence (`fence: storage`): the NetworkFence nodedown makes and lifts.
    StorageFence,
    /// A storage fence, nodedown's or an external remediator's: the storage's Events about it.
    FenceEvents,
    /// A StatefulSet's ledger whose acknowledged writes are polled through its pod.
    LedgerStatefulSet,
    /// A Deployment's workload (its claim and, for a ledger, the Service its acks are read
    /// through).
    Deployment,
    /// testenv's storage classes, whose PersistentVolumes nodedown makes.
    OwnVolumes,
    /// `delete-node`'s heal: the Node object recreated when its kubelet did not bring it back.
    RecreateNode,
    /// `nodedown qualify`: the StorageClass it makes.
    Qualify,
    /// `workload.fillAttachLimit`: the driver's published limit on each node.
    FillAttachLimit,
}

/// One row: `verbs` on `resource` (`pods/proxy` for a subresource) of API group `group`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub group: &'static str,
    pub resource: &'static str,
    pub verbs: &'static [&'static str],
    /// The namespace the check asks about (`None`: cluster-wide, or every namespace); a rule
    /// in one namespace is shipped as a Role there, not in the ClusterRole.
    pub namespace: Option<&'static str>,
    /// The one object it is about, when there is one (granted by name for every verb but
    /// `create`, which RBAC cannot limit by name).
    pub name: Option<&'static str>,
    pub when: When,
    /// What nodedown does with it, for the refusal.
    pub why: &'static str,
}

const fn rule(
    group: &'static str,
    resource: &'static str,
    verbs: &'static [&'static str],
    when: When,
    why: &'static str,
) -> Rule {
    Rule {
        group,
        resource,
        verbs,
        namespace: None,
        name: None,
        when,
        why,
    }
}

/// Every permission nodedown uses.
pub const RULES: &[Rule] = &[
    // The cluster and its nodes.
    rule(
        "",
        "nodes",
        &["get", "list", "watch"],
        When::Always,
        "reading and watching the nodes (preflight, the target, NotReady)",
    ),
    rule(
        "",
        "nodes",
        &["update"],
        When::Remediation("out-of-service-taint"),
        "adding the out-of-service taint and removing it at the heal",
    ),
    rule(
        "",
        "nodes",
        &["update"],
        When::External,
        "removing an out-of-service taint another remediator added, at the heal",
    ),
    rule(
        "",
        "nodes",
        &["delete"],
        When::Remediation("delete-node"),
        "deleting the Node object (remediation delete-node)",
    ),
    rule(
        "",
        "nodes",
        &["create"],
        When::RecreateNode,
        "recreating a deleted Node from the journal when its kubelet does not",
    ),
    // One Lease per node (`nodedown-node-<node>`): their names depend on the cluster's nodes,
    // so RBAC cannot name them; the rule stays in the lock's namespace.
    Rule {
        namespace: Some(crate::vocab::LOCK_NAMESPACE),
        ..rule(
            "coordination.k8s.io",
            "leases",
            &["get", "list", "create", "update", "delete"],
            When::Always,
            "the invocation's lock, a Lease default/nodedown-node-<node> per node it uses",
        )
    },
    // The run's objects.
    rule(
        "",
        "namespaces",
        &["create", "delete", "list"],
        When::Always,
        "each run's namespace, deleted at its heal",
    ),
    rule(
        "",
        "pods",
        &["list", "watch"],
        When::Always,
        "watching the workload's pods",
    ),
    rule(
        "",
        "pods",
        &["deletecollection"],
        When::Always,
        "stopping the run's pods at the heal",
    ),
    rule(
        "",
        "persistentvolumeclaims",
        &["list", "watch", "deletecollection"],
        When::Always,
        "watching the workload's claims, deleting them at the heal",
    ),
    rule(
        "",
        "events",
        &["list", "watch"],
        When::Always,
        "the run's Kubernetes events (Multi-Attach errors, kubelet shutdown)",
    ),
    rule(
        "apps",
        "statefulsets",
        &["create", "deletecollection"],
        When::Always,
        "the workload's StatefulSet, deleted at the heal",
    ),
    rule(
        "apps",
        "deployments",
        &["deletecollection"],
        When::Always,
        "deleting a Deployment workload at the heal",
    ),
    rule(
        "apps",
        "replicasets",
        &["deletecollection"],
        When::Always,
        "deleting a Deployment's ReplicaSets at the heal",
    ),
    rule(
        "apps",
        "deployments",
        &["create"],
        When::Deployment,
        "the workload's Deployment",
    ),
    rule(
        "",
        "persistentvolumeclaims",
        &["create"],
        When::Deployment,
        "a Deployment's claim",
    ),
    rule(
        "",
        "services",
        &["create"],
        When::Deployment,
        "the Service a Deployment's ledger is read through",
    ),
    rule(
        "",
        "services/proxy",
        &["get"],
        When::Deployment,
        "reading a Deployment's ledger acknowledgements",
    ),
    rule(
        "",
        "pods/proxy",
        &["get"],
        When::LedgerStatefulSet,
        "reading the ledger's acknowledged writes (and the ledger) through the API server",
    ),
    rule(
        "",
        "persistentvolumes",
        &["create", "list", "delete"],
        When::OwnVolumes,
        "the volumes of testenv's storage classes (listed: each taken up by the PersistentVolume controller before its claim is made)",
    ),
    rule(
        "storage.k8s.io",
        "volumeattachments",
        &["list", "watch"],
        When::Always,
        "watching detach and attach",
    ),
    // Faults.
    rule(
        "",
        "pods",
        &["get", "delete"],
        When::Fault(FaultKind::PodDelete),
        "deleting the workload's pod (fault pod-delete)",
    ),
    rule(
        "",
        "pods",
        &["get"],
        When::Fault(FaultKind::ContainerKill),
        "the container to kill (fault container-kill)",
    ),
    rule(
        "",
        "pods",
        &["list"],
        When::Backend(Backend::Agent),
        "finding the node agent's pod",
    ),
    rule(
        "",
        "pods/proxy",
        &["create"],
        When::Backend(Backend::Agent),
        "ordering the node agent (its /fault and /heal)",
    ),
    rule(
        "apps",
        "daemonsets",
        &["list", "create", "patch"],
        When::Backend(Backend::Agent),
        "the node agent's DaemonSet and its lease",
    ),
    rule(
        "",
        "namespaces",
        &["get"],
        When::Backend(Backend::Agent),
        "the node agent's namespace",
    ),
    // Remediations.
    rule(
        "",
        "pods",
        &["delete"],
        When::Remediation("force-delete-pod"),
        "force-deleting the old pod",
    ),
    rule(
        "",
        "pods",
        &["delete"],
        When::Remediation("delete-volumeattachment"),
        "force-deleting the old pod",
    ),
    rule(
        "",
        "persistentvolumeclaims",
        &["list"],
        When::Remediation("delete-volumeattachment"),
        "finding the workload's volumes",
    ),
    rule(
        "storage.k8s.io",
        "volumeattachments",
        &["delete"],
        When::Remediation("delete-volumeattachment"),
        "deleting the old node's VolumeAttachments",
    ),
    // The storage fence (csi-addons), made and lifted by nodedown, or recognised when someone
    // else makes it.
    rule(
        "",
        "persistentvolumeclaims",
        &["list"],
        When::StorageFence,
        "finding the CSI driver of the workload's volumes (its NetworkFenceClass)",
    ),
    rule(
        "",
        "persistentvolumes",
        &["get"],
        When::StorageFence,
        "finding the CSI driver of the workload's volumes (its NetworkFenceClass)",
    ),
    rule(
        "csiaddons.openshift.io",
        "networkfenceclasses",
        &["list"],
        When::StorageFence,
        "the NetworkFenceClass of the workload's CSI driver",
    ),
    rule(
        "csiaddons.openshift.io",
        "networkfences",
        &["get", "list", "watch", "create", "delete"],
        When::StorageFence,
        "fencing the node at its storage, and lifting the fence at the heal",
    ),
    rule(
        "",
        "nodes/proxy",
        &["get"],
        When::StorageFence,
        "asking the node's kubelet which pods it still runs before lifting its fence",
    ),
    rule(
        "csiaddons.openshift.io",
        "networkfences",
        &["list", "watch"],
        When::External,
        "recognising a storage fence the remediator makes",
    ),
    Rule {
        namespace: Some(crate::vocab::CLUSTER_EVENTS_NAMESPACE),
        ..rule(
            "",
            "events",
            &["list", "watch"],
            When::FenceEvents,
            "the storage's reports of refused writes (Events on the NetworkFence)",
        )
    },
    rule(
        "storage.k8s.io",
        "storageclasses",
        &["get"],
        When::FillAttachLimit,
        "the class's driver, whose attach limit fillAttachLimit reaches",
    ),
    rule(
        "",
        "persistentvolumes",
        &["list"],
        When::FillAttachLimit,
        "whose claim each VolumeAttachment's volume serves (an earlier run's, going away, does not fill a node)",
    ),
    rule(
        "storage.k8s.io",
        "csinodes",
        &["get"],
        When::FillAttachLimit,
        "each node's attach limit (allocatable count), which fillAttachLimit reaches",
    ),
    // Read for the record.
    rule(
        "storage.k8s.io",
        "storageclasses",
        &["get"],
        When::BestEffort,
        "the storage class's provisioner, for the results",
    ),
    rule(
        "storage.k8s.io",
        "csidrivers",
        &["get"],
        When::BestEffort,
        "whether the driver attaches, for the results",
    ),
    rule(
        "",
        "pods",
        &["list"],
        When::BestEffort,
        "kube-controller-manager's pod, for its forced-detach counters",
    ),
    rule(
        "",
        "pods/proxy",
        &["get"],
        When::BestEffort,
        "kube-controller-manager's counters",
    ),
    // qualify.
    rule(
        "storage.k8s.io",
        "storageclasses",
        &["create", "delete"],
        When::Qualify,
        "the StorageClass qualify makes from a testdriver file",
    ),
    rule(
        "storage.k8s.io",
        "csinodes",
        &["list"],
        When::Qualify,
        "the driver's nodes, for the sheet",
    ),
];

/// What an invocation's runs will do beyond their specs (decided with the cluster).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The backend each node fault goes through (pod faults go through the API).
    pub backend: Backend,
    /// Whether the ledger's acknowledgements are polled (`--ack-interval` not `off`).
    pub acks: bool,
}

/// Whether `when` holds for `run`.
fn applies(when: When, run: &PlannedRun, s: Setting) -> bool {
    let ledger = run.workload.kind == WorkloadKind::Ledger;
    let deployment = run.workload.controller == Controller::Deployment;
    match when {
        When::Always => true,
        When::BestEffort | When::Qualify | When::RecreateNode => false,
        When::Backend(b) => !run.fault.kind.is_pod_fault() && s.backend == b,
        When::Fault(f) => run.fault.kind == f,
        When::Remediation(name) => run.remediation.name() == name,
        When::External => run.remediation == RemediationSpec::External,
        When::StorageFence => run.remediation.fence() == crate::spec::Fence::Storage,
        When::FenceEvents => {
            run.remediation.fence() == crate::spec::Fence::Storage
                || run.remediation == RemediationSpec::External
        }
        When::LedgerStatefulSet => ledger && s.acks && !deployment,
        When::FillAttachLimit => run.workload.fill_attach_limit,
        When::Deployment => deployment,
        When::OwnVolumes => [
            crate::vocab::SHARED_CLASS,
            crate::vocab::ATTACH_CLASS,
            crate::vocab::LOCAL_CLASS,
        ]
        .contains(&run.workload.storage_class.as_str()),
    }
}

/// One permission to check: a verb on a resource, in a namespace or cluster-wide, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Need {
    pub group: &'static str,
    pub resource: &'static str,
    pub verb: &'static str,
    pub namespace: Option<&'static str>,
    /// The object, when the permission is about one (RBAC's resourceNames).
    pub name: Option<&'static str>,
    pub why: &'static str,
}

impl Need {
    /// `update nodes`, `create pods/proxy in namespace default`, `list leases.coordination.k8s.io`.
    pub fn describe(&self) -> String {
        let resource = if self.group.is_empty() {
            self.resource.to_string()
        } else {
            let (base, sub) = match self.resource.split_once('/') {
                Some((b, s)) => (b, format!("/{s}")),
                None => (self.resource, String::new()),
            };
            format!("{base}.{}{sub}", self.group)
        };
        let resource = match self.name {
            Some(name) => format!("{resource} {name}"),
            None => resource,
        };
        match self.namespace {
            Some(ns) => format!("{} {resource} in namespace {ns}", self.verb),
            None => format!("{} {resource} (all namespaces / cluster-wide)", self.verb),
        }
    }
}

/// The permissions `runs` need (each with how it will be carried out), each once (the first
/// reason kept), in the table's order.
pub fn needed(runs: &[(&PlannedRun, Setting)]) -> Vec<Need> {
    let mut out: Vec<Need> = Vec::new();
    for r in RULES {
        if !runs.iter().any(|(run, s)| applies(r.when, run, *s)) {
            continue;
        }
        for verb in r.verbs {
            let n = Need {
                group: r.group,
                resource: r.resource,
                verb,
                namespace: r.namespace,
                name: r.name.filter(|_| *verb != "create"),
                why: r.why,
            };
            if !out.iter().any(|o| {
                (o.group, o.resource, o.verb, o.namespace, o.name)
                    == (n.group, n.resource, n.verb, n.namespace, n.name)
            }) {
                out.push(n);
            }
        }
    }
    out
}

/// The rules of the shipped ClusterRole: every row not in one namespace, verbs merged per
/// (group, resource), groups and resources sorted, verbs in RBAC's usual order.
pub fn cluster_role_rules() -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    const ORDER: [&str; 8] = [
        "get",
        "list",
        "watch",
        "create",
        "update",
        "patch",
        "delete",
        "deletecollection",
    ];
    let mut merged: std::collections::BTreeMap<(&str, &str), Vec<&str>> = Default::default();
    for r in RULES.iter().filter(|r| r.namespace.is_none()) {
        let verbs = merged.entry((r.group, r.resource)).or_default();
        for v in r.verbs {
            if !verbs.contains(v) {
                verbs.push(v);
            }
        }
    }
    merged
        .into_iter()
        .map(|((g, res), mut verbs)| {
            verbs.sort_by_key(|v| ORDER.iter().position(|o| o == v).unwrap_or(ORDER.len()));
            (g, res, verbs)
        })
        .collect()
}

/// How the RBAC objects are named: the ServiceAccount's name and namespace, the name of the
/// cluster-scoped objects and of the Role in the lock's namespace, and whether the
/// ServiceAccount's namespace is made too.
struct Naming<'a> {
    header: &'a str,
    account: &'a str,
    namespace: &'a str,
    cluster_name: &'a str,
    make_namespace: bool,
}

/// `deploy/rbac.yaml`: the namespace `nodedown` and its ServiceAccount `nodedown`, the
/// ClusterRole of [`cluster_role_rules`], a Role (and its binding) per namespaced rule (the
/// lock's Leases), and the ClusterRoleBinding.
pub fn rbac_yaml() -> String {
    rbac_text(&Naming {
        header:
            "# Generated from src/plan/access.rs (the table nodedown's preflight checks against);\n\
                 # regenerate with `NODEDOWN_BLESS=1 cargo test --test rbac`. Least privilege for\n\
                 # `nodedown run` and `nodedown qualify` on a cluster nodedown does not create.\n",
        account: "nodedown",
        namespace: "nodedown",
        cluster_name: "nodedown",
        make_namespace: true,
    })
}

/// What `nodedown bundle run` applies: the namespace `namespace` (made), its ServiceAccount
/// `nodedown`, and the same role, the cluster-scoped objects named `nodedown-bundle-<namespace>`.
pub fn rbac_bundle_yaml(namespace: &str) -> String {
    rbac_text(&Naming {
        header: "# nodedown bundle run: the role of deploy/rbac.yaml for its namespace.\n",
        account: "nodedown",
        namespace,
        cluster_name: &bundle_cluster_name(namespace),
        make_namespace: true,
    })
}

/// The name of a bundle's cluster-scoped objects (and of its Role in the lock's namespace):
/// `nodedown-bundle` for the default namespace, else `nodedown-bundle-<namespace>` — never
/// deploy/rbac.yaml's `nodedown`, which a bundle must not replace nor delete.
pub fn bundle_cluster_name(namespace: &str) -> String {
    if namespace == "nodedown-bundle" {
        namespace.to_string()
    } else {
        format!("nodedown-bundle-{namespace}")
    }
}

/// The Helm chart's `templates/rbac.yaml`: the same objects for the release (its name, in its
/// namespace; the cluster-scoped ones named `<namespace>-<release>`).
pub fn rbac_chart_template() -> String {
    rbac_text(&Naming {
        header: "# Generated from src/plan/access.rs, as deploy/rbac.yaml; regenerate with\n\
                 # `NODEDOWN_BLESS=1 cargo test --test rbac`.\n",
        account: "{{ .Release.Name }}",
        namespace: "{{ .Release.Namespace }}",
        cluster_name: "{{ .Release.Namespace }}-{{ .Release.Name }}",
        make_namespace: false,
    })
}

fn rbac_text(n: &Naming) -> String {
    let quoted = |verbs: &[&str]| {
        verbs
            .iter()
            .map(|v| format!("\"{v}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let subject = format!(
        "subjects:\n  - kind: ServiceAccount\n    name: {}\n    namespace: {}\n",
        n.account, n.namespace
    );
    let mut docs: Vec<String> = Vec::new();
    if n.make_namespace {
        docs.push(format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {}\n",
            n.namespace
        ));
    }
    docs.push(format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {}\n  namespace: {}\n",
        n.account, n.namespace
    ));
    let mut role = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {}\nrules:\n",
        n.cluster_name
    );
    for (group, resource, verbs) in cluster_role_rules() {
        role.push_str(&format!(
            "  - apiGroups: [\"{group}\"]\n    resources: [\"{resource}\"]\n    verbs: [{}]\n",
            quoted(&verbs)
        ));
    }
    docs.push(role);
    // One Role (and binding) per namespace, its rules merged per (group, resource, object):
    // the lock's Leases, the Events about NetworkFences, both in `default`.
    let mut by_ns: std::collections::BTreeMap<&str, Vec<&Rule>> = Default::default();
    for r in RULES.iter().filter(|r| r.namespace.is_some()) {
        by_ns
            .entry(r.namespace.unwrap_or_default())
            .or_default()
            .push(r);
    }
    for (ns, rules) in by_ns {
        let mut whys: Vec<&str> = Vec::new();
        type Key<'a> = (&'a str, &'a str, Option<&'a str>);
        let mut entries: Vec<(Key, Vec<&str>)> = Vec::new();
        for r in rules {
            if !whys.contains(&r.why) {
                whys.push(r.why);
            }
            let (unnamed, named): (Vec<&str>, Vec<&str>) = r
                .verbs
                .iter()
                .partition(|v| **v == "create" || r.name.is_none());
            for (key, verbs) in [
                ((r.group, r.resource, None), unnamed),
                ((r.group, r.resource, r.name), named),
            ] {
                if verbs.is_empty() {
                    continue;
                }
                match entries.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, have)) => {
                        for v in verbs {
                            if !have.contains(&v) {
                                have.push(v);
                            }
                        }
                    }
                    None => entries.push((key, verbs)),
                }
            }
        }
        let mut role = format!(
            "# {}\napiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {}\n  namespace: {ns}\nrules:\n",
            whys.join("; "),
            n.cluster_name
        );
        for ((group, resource, name), verbs) in entries {
            match name {
                None => role.push_str(&format!(
                    "  - apiGroups: [\"{group}\"]\n    resources: [\"{resource}\"]\n    verbs: [{}]\n",
                    quoted(&verbs)
                )),
                Some(name) => role.push_str(&format!(
                    "  - apiGroups: [\"{group}\"]\n    resources: [\"{resource}\"]\n    resourceNames: [\"{name}\"]\n    verbs: [{}]\n",
                    quoted(&verbs)
                )),
            }
        }
        docs.push(role);
        docs.push(format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {name}\n  namespace: {ns}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: {name}\n{subject}",
            name = n.cluster_name
        ));
    }
    docs.push(format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {name}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {name}\n{subject}",
        name = n.cluster_name
    ));
    format!("{}{}", n.header, docs.join("---\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::fixtures::{planned, secs};
    use crate::spec::Expectations;
    use std::time::Duration;

    fn setting(backend: Backend) -> Setting {
        Setting {
            backend,
            acks: true,
        }
    }

    fn has(needs: &[Need], verb: &str, resource: &str) -> bool {
        needs
            .iter()
            .any(|n| n.verb == verb && n.resource == resource)
    }

    #[test]
    fn a_run_needs_what_its_fault_and_remediation_do_and_no_more() {
        let taint = planned(
            "node-shutdown",
            "oos",
            1,
            RemediationSpec::OutOfServiceTaint {
                after: Duration::ZERO,
                fence: crate::spec::Fence::None,
                lift_after: None,
            },
            secs(60),
            Expectations::default(),
        );
        let needs = needed(&[(&taint, setting(Backend::Docker))]);
        assert!(has(&needs, "update", "nodes"), "the taint");
        assert!(has(&needs, "create", "leases"), "the lock");
        assert!(!has(&needs, "delete", "nodes"));
        assert!(!has(&needs, "create", "pods/proxy"), "no agent");
        assert!(!has(&needs, "get", "csidrivers"), "best effort only");
        let lease = needs.iter().find(|n| n.resource == "leases").unwrap();
        // One Lease per node, so no name: every verb on leases in `default` alone.
        assert_eq!(
            lease.describe(),
            "get leases.coordination.k8s.io in namespace default"
        );
        assert!(has(&needs, "list", "leases"), "cleanup finds its Leases");
        assert!(needs
            .iter()
            .filter(|n| n.resource == "leases")
            .all(|n| n.name.is_none() && n.namespace == Some("default")));
        let fd = planned(
            "node-shutdown",
            "fd",
            1,
            RemediationSpec::ForceDeletePod {
                after: Duration::ZERO,
                fence: crate::spec::Fence::None,
            },
            secs(60),
            Expectations::default(),
        );
        let needs = needed(&[(&fd, setting(Backend::Agent))]);
        assert!(has(&needs, "delete", "pods"), "the force delete");
        assert!(!has(&needs, "update", "nodes"));
        assert!(has(&needs, "create", "pods/proxy"), "the agent's orders");
        let d = needs
            .iter()
            .find(|n| n.verb == "delete" && n.resource == "pods")
            .unwrap();
        assert_eq!(d.describe(), "delete pods (all namespaces / cluster-wide)");
    }

    #[test]
    fn the_role_holds_every_rule_merged() {
        let rules = cluster_role_rules();
        let nodes = rules
            .iter()
            .find(|(g, r, _)| g.is_empty() && *r == "nodes")
            .unwrap();
        assert_eq!(
            nodes.2,
            vec!["get", "list", "watch", "create", "update", "delete"]
        );
        for r in RULES.iter().filter(|r| r.namespace.is_none()) {
            let (_, _, verbs) = rules
                .iter()
                .find(|(g, res, _)| *g == r.group && *res == r.resource)
                .unwrap();
            assert!(r.verbs.iter().all(|v| verbs.contains(v)), "{r:?}");
        }
    }
}
