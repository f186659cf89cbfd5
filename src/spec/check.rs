//! The rules an experiment must follow beyond its types: names, ranges, targets, and what the
//! runs of each variant use (timeouts against delays and bounds).

use super::load::{
    cluster_config_path, invalid, statefulset_name, SpecError, SpecErrorKind, MAX_NAME_LEN,
    MAX_REPEAT,
};
use super::model::{
    duration, Expectations, Experiment, FaultSpec, Provider, RemediationSpec, Timeouts,
    VariantSpec, WorkloadKind, WorkloadSpec,
};
use super::yaml::Node;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

struct Checker<'a> {
    file: &'a Path,
    /// Where each field is written.
    tree: &'a Node,
}

impl Checker<'_> {
    fn fail(&self, field: &str, problem: impl Into<String>, hint: impl Into<String>) -> SpecError {
        invalid(
            self.file,
            self.tree.locate(field),
            Some(field.to_string()),
            SpecErrorKind::Invalid,
            problem,
            hint,
        )
    }

    fn name(&self, name: &str, field: &str, what: &str, example: &str) -> Result<(), SpecError> {
        let hint = || {
            let suggestion = slug(name);
            let suggestion = if suggestion.is_empty() {
                example.to_string()
            } else {
                suggestion
            };
            format!(
                "use lowercase letters, digits and `-`, starting and ending with a letter or digit, \
                 at most {MAX_NAME_LEN} characters, e.g. `{suggestion}`"
            )
        };
        if name.is_empty() {
            return Err(self.fail(field, format!("the {what} name is empty"), hint()));
        }
        if name.chars().count() > MAX_NAME_LEN {
            return Err(self.fail(
                field,
                format!(
                    "the {what} name is {} characters long, more than {MAX_NAME_LEN}",
                    name.chars().count()
                ),
                hint(),
            ));
        }
        if !is_dns_label(name) {
            return Err(self.fail(
                field,
                format!("`{name}` is not a valid {what} name"),
                hint(),
            ));
        }
        Ok(())
    }

    fn fault(
        &self,
        fault: &FaultSpec,
        path: &str,
        workload: &WorkloadSpec,
    ) -> Result<(), SpecError> {
        if let Some(d) = fault.duration {
            let field = format!("{path}.duration");
            if fault.kind != crate::spec::FaultKind::NodeFreeze {
                return Err(self.fail(
                    &field,
                    format!(
                        "fault `{}` has no duration: it lasts until the heal",
                        fault.kind.as_str()
                    ),
                    "remove `duration`, or write `kind: node-freeze`",
                ));
            }
            if d.is_zero() {
                return Err(self.fail(
                    &field,
                    "`duration: 0s` is no freeze at all",
                    "write how long the node stays frozen, e.g. `duration: 40s`",
                ));
            }
        }
        if fault.graceful && fault.kind != crate::spec::FaultKind::NodeShutdown {
            return Err(self.fail(
                &format!("{path}.graceful"),
                format!(
                    "fault `{}` has no graceful form: only a power-off can be clean or hard",
                    fault.kind.as_str()
                ),
                "remove `graceful`, or write `kind: node-shutdown`",
            ));
        }
        if fault.kind.is_pod_fault() && workload.instances > 1 {
            return Err(self.fail(
                &format!("{path}.kind"),
                format!(
                    "fault `{}` acts on one pod, so the other {} instances would have nothing to recover from",
                    fault.kind.as_str(),
                    workload.instances - 1
                ),
                "use a node fault (node-shutdown, kubelet-stop, network-partition, node-freeze) for a fleet, or remove `instances`",
            ));
        }
        let field = format!("{path}.target.nodeOf");
        let sts = statefulset_name(workload.kind);
        let forms = [
            fault.target.zone.is_some(),
            !fault.target.nodes.is_empty(),
            fault.target.count.is_some(),
        ];
        if forms.iter().filter(|f| **f).count() > 1 {
            return Err(self.fail(
                &format!("{path}.target"),
                "the target names several nodes in more than one way (`zone`, `nodes`, `count`)",
                "keep one of `zone`, `nodes` and `count`",
            ));
        }
        if fault.target.several() && fault.target.zone.is_none() {
            let (sfield, n) = if fault.target.nodes.is_empty() {
                (
                    format!("{path}.target.count"),
                    fault.target.count.unwrap_or(0),
                )
            } else {
                (
                    format!("{path}.target.nodes"),
                    fault.target.nodes.len() as u32,
                )
            };
            if n == 0 || n > super::model::MAX_TARGET_NODES {
                return Err(self.fail(
                    &sfield,
                    format!(
                        "a fault takes from 1 to {} nodes at once, not {n}",
                        super::model::MAX_TARGET_NODES
                    ),
                    "write e.g. `count: 2`",
                ));
            }
            if let Some(bad) = fault
                .target
                .nodes
                .iter()
                .find(|n| n.len() > 253 || !n.split('.').all(is_dns_label))
            {
                return Err(self.fail(
                    &sfield,
                    format!("`{bad}` is not a node name"),
                    "name nodes as `kubectl get nodes` shows them",
                ));
            }
            let mut seen = std::collections::BTreeSet::new();
            if let Some(twice) = fault.target.nodes.iter().find(|n| !seen.insert(*n)) {
                return Err(self.fail(
                    &sfield,
                    format!("node `{twice}` is named twice"),
                    "name each node once",
                ));
            }
            if fault.kind.is_pod_fault() {
                return Err(self.fail(
                    &sfield,
                    format!("fault `{}` acts on one pod, not on several nodes", fault.kind.as_str()),
                    "use a node fault (node-shutdown, kubelet-stop, network-partition, node-freeze)",
                ));
            }
            if fault.target.node_of.is_empty() {
                return Ok(());
            }
        }
        if let Some(zone) = &fault.target.zone {
            let zfield = format!("{path}.target.zone");
            if zone.trim().is_empty() {
                return Err(self.fail(
                    &zfield,
                    "the target zone is empty",
                    "name a zone (a value of the nodes' topology.kubernetes.io/zone label), e.g. `zone: zone-a`",
                ));
            }
            if fault.kind.is_pod_fault() {
                return Err(self.fail(
                    &zfield,
                    format!(
                        "fault `{}` acts on one pod, not on the nodes of a zone",
                        fault.kind.as_str()
                    ),
                    "use a node fault (node-shutdown, kubelet-stop, network-partition, node-freeze), or remove `zone`",
                ));
            }
            if fault.target.node_of.is_empty() {
                return Ok(());
            }
        }
        let pod = fault.target.node_of.as_str();
        if pod.trim().is_empty() {
            return Err(self.fail(
                &field,
                "the target pod is empty",
                format!("name the pod whose node is to fail, e.g. `nodeOf: {sts}-0`"),
            ));
        }
        let ordinal = pod
            .strip_prefix(sts)
            .and_then(|rest| rest.strip_prefix('-'))
            .filter(|digits| !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
            .filter(|digits| *digits == "0" || !digits.starts_with('0'))
            .and_then(|digits| digits.parse::<u32>().ok());
        if ordinal.is_none_or(|i| i >= workload.replicas) {
            let pods = match workload.replicas {
                0 => "no pods".to_string(),
                1 => format!("one pod, `{sts}-0`"),
                n => format!("pods `{sts}-0` to `{sts}-{}`", n - 1),
            };
            return Err(self.fail(
                &field,
                format!(
                    "`{pod}` is not a pod of the workload: its {} `{sts}` has {pods}",
                    workload.controller.as_str()
                ),
                format!("write `nodeOf: {sts}-0`"),
            ));
        }
        Ok(())
    }

    fn timeouts(&self, timeouts: &Timeouts, path: &str) -> Result<(), SpecError> {
        for (key, value, example) in [
            ("steadyState", timeouts.steady_state, "3m"),
            ("recovery", timeouts.recovery, "5m"),
            ("heal", timeouts.heal, "3m"),
        ] {
            if value.is_zero() {
                return Err(self.fail(
                    &format!("{path}.{key}"),
                    format!("`{key}: {}` leaves no time at all", duration::format(value)),
                    format!("write a timeout longer than 0s, e.g. `{key}: {example}`"),
                ));
            }
        }
        Ok(())
    }

    fn expect(&self, expect: &Expectations, path: &str) -> Result<(), SpecError> {
        for (key, bound) in bounds(expect) {
            if bound.is_zero() {
                return Err(self.fail(
                    &format!("{path}.{key}.max"),
                    "`max: 0s` can never be met",
                    "write a bound longer than 0s, e.g. `max: 2m`",
                ));
            }
        }
        if let Some(phases) = &expect.phases {
            if let Some(both) = phases.seen.iter().find(|p| phases.not_seen.contains(p)) {
                return Err(self.fail(
                    &format!("{path}.phases.notSeen"),
                    format!("`{both}` is expected both seen and not seen"),
                    "keep it in one of the two lists",
                ));
            }
            if phases.seen.is_empty() && phases.not_seen.is_empty() {
                return Err(self.fail(
                    &format!("{path}.phases"),
                    "`phases` names no phase",
                    "add `seen: [multi-attach-error]` or `notSeen: [two-pods-running]`, or remove `phases`",
                ));
            }
        }
        if expect.recovered == Some(false) {
            if let Some((key, _)) = bounds(expect).into_iter().next() {
                return Err(self.fail(
                    &format!("{path}.{key}"),
                    format!(
                        "`recovered: false` expects the pod not to come back, but `{key}` bounds how fast it comes back"
                    ),
                    format!("remove `{key}`, or write `recovered: true`"),
                ));
            }
        }
        Ok(())
    }

    /// A pod fault leaves the node Ready, and remediations act after NotReady: only `none`.
    fn pod_fault_remediation(
        &self,
        run: &VariantSpec<'_>,
        remediation_path: &str,
    ) -> Result<(), SpecError> {
        if run.fault.kind.is_pod_fault()
            && !matches!(
                run.remediation,
                RemediationSpec::None | RemediationSpec::External
            )
        {
            let field = if self
                .tree
                .find(&format!("{remediation_path}.kind"))
                .is_some()
            {
                format!("{remediation_path}.kind")
            } else {
                remediation_path.to_string()
            };
            return Err(self.fail(
                &field,
                format!(
                    "fault `{}` leaves the node Ready, and remediation `{}` acts only after the node is NotReady",
                    run.fault.kind.as_str(),
                    run.remediation.name()
                ),
                "write `remediation: {kind: none}`: the controller and the kubelet recover a pod fault by themselves",
            ));
        }
        Ok(())
    }

    /// `after` and `fence` only where the remediation kind uses them.
    fn remediation(&self, remediation: &RemediationSpec, path: &str) -> Result<(), SpecError> {
        let written = |key: &str| {
            let field = format!("{path}.{key}");
            self.tree.find(&field).map(|_| field)
        };
        if let Some(field) = written("liftAfter") {
            match remediation {
                RemediationSpec::OutOfServiceTaint {
                    fence: crate::spec::Fence::Storage,
                    lift_after,
                    ..
                } => {
                    if lift_after.is_some_and(|d| d.is_zero()) {
                        return Err(self.fail(
                            &field,
                            "`liftAfter: 0s` lifts the fence the moment it is in place",
                            "write how long the fence holds before it is lifted, e.g. `liftAfter: 30s`",
                        ));
                    }
                }
                _ => {
                    return Err(self.fail(
                        &field,
                        "`liftAfter` lifts a storage fence early: only `kind: out-of-service-taint` with `fence: storage` has one",
                        "remove `liftAfter`, or write `kind: out-of-service-taint` with `fence: storage`",
                    ))
                }
            }
        }
        let (field, problem, hint) = match remediation {
            RemediationSpec::External => match (written("after"), written("fence")) {
                (Some(field), _) | (None, Some(field)) => (
                    field,
                    "remediation `external` is done by someone else: nodedown applies nothing, so it has no delay or fence",
                    "remove the field; the remediator you run decides when and how it acts",
                ),
                (None, None) => return Ok(()),
            },
            RemediationSpec::None => match (written("after"), written("fence")) {
                (Some(after), _) => (
                    after,
                    "remediation `none` takes no action, so it has no delay",
                    "remove `after`, or choose a kind that acts: `out-of-service-taint`, \
                     `force-delete-pod`, `delete-node` or `delete-volumeattachment`",
                ),
                (None, Some(fence)) => (
                    fence,
                    "remediation `none` takes no action, so there is nothing to fence",
                    "remove `fence`, or write `kind: out-of-service-taint`",
                ),
                (None, None) => return Ok(()),
            },
            RemediationSpec::DeleteNode { .. } => match written("fence") {
                Some(fence) => (
                    fence,
                    "remediation `delete-node` takes no fence (deleting the Node object does not free a \
                     volume the node may still write to)",
                    "remove `fence`, or write `kind: out-of-service-taint`, `force-delete-pod` or \
                     `delete-volumeattachment`",
                ),
                None => return Ok(()),
            },
            RemediationSpec::OutOfServiceTaint { .. }
            | RemediationSpec::ForceDeletePod { .. }
            | RemediationSpec::DeleteVolumeattachment { .. } => return Ok(()),
        };
        Err(self.fail(&field, problem, hint))
    }

    fn workload(&self, workload: &WorkloadSpec, path: &str) -> Result<(), SpecError> {
        if workload.strategy.is_some()
            && workload.controller != super::model::Controller::Deployment
        {
            return Err(self.fail(
                &format!("{path}.strategy"),
                "`strategy` is a Deployment's; this workload is a StatefulSet",
                "write `controller: Deployment`, or remove `strategy`",
            ));
        }
        if workload.replicas == 0 || workload.replicas > super::load::MAX_REPLICAS {
            let problem = if workload.replicas == 0 {
                "`replicas: 0` runs no pod, so there is nothing to fail over".to_string()
            } else {
                format!(
                    "`replicas: {}`: a StatefulSet here has from 1 to {} replicas (each on a node of its own)",
                    workload.replicas,
                    super::load::MAX_REPLICAS
                )
            };
            return Err(self.fail(
                &format!("{path}.replicas"),
                problem,
                "write e.g. `replicas: 3`, or remove `replicas` for one",
            ));
        }
        if workload.replicas > 1 {
            let with = if workload.controller != super::model::Controller::StatefulSet {
                Some("a Deployment (its one claim cannot serve several pods)")
            } else if workload.instances > 1 {
                Some("`instances` (a fleet of replicated StatefulSets is not supported yet)")
            } else {
                None
            };
            if let Some(with) = with {
                return Err(self.fail(
                    &format!("{path}.replicas"),
                    format!("`replicas: {}` with {with}", workload.replicas),
                    "write `replicas: 1`, or use one StatefulSet (`controller: StatefulSet`, no `instances`)",
                ));
            }
        }
        if workload.instances == 0 || workload.instances > super::load::MAX_INSTANCES {
            return Err(self.fail(
                &format!("{path}.instances"),
                format!(
                    "`instances: {}`: a run has from 1 to {} instances",
                    workload.instances,
                    super::load::MAX_INSTANCES
                ),
                "write e.g. `instances: 10`, or remove `instances` for one",
            ));
        }
        if workload.instances > 1 && workload.controller != super::model::Controller::StatefulSet {
            return Err(self.fail(
                &format!("{path}.instances"),
                "more than one instance of a Deployment is not supported yet (each instance is a StatefulSet)",
                "remove `instances`, or write `controller: StatefulSet`",
            ));
        }
        if !is_quantity(&workload.size) {
            return Err(self.fail(
            &format!("{path}.size"),
            format!("`{}` is not a Kubernetes quantity", workload.size),
            "write a size such as 1Gi, 500Mi or 10G (a whole number, then optionally Ki, Mi, Gi, Ti, K, M, G or T)",
        ));
        }
        if workload.storage_class.trim().is_empty() {
            return Err(self.fail(
                &format!("{path}.storageClass"),
                "the storage class is empty",
                format!(
                    "name a StorageClass, or remove `storageClass` to use `{}`",
                    super::model::default_storage_class()
                ),
            ));
        }
        if workload.volume_mode == super::model::VolumeMode::Block {
            let refusal = if workload.kind != super::model::WorkloadKind::Ledger {
                Some((
                    "a raw block volume has no filesystem for the writer's log file",
                    "write `kind: ledger` (it writes its records to the device itself)".to_string(),
                ))
            } else if [crate::vocab::SHARED_CLASS, crate::vocab::LOCAL_CLASS]
                .contains(&workload.storage_class.as_str())
            {
                Some((
                    "a hostPath volume (storage class nodedown-shared or nodedown-local) cannot be a raw block volume",
                    format!(
                        "name a CSI driver's StorageClass that serves block volumes, e.g. `storageClass: {}`",
                        crate::vocab::ATTACH_CLASS
                    ),
                ))
            } else {
                None
            };
            if let Some((problem, hint)) = refusal {
                return Err(self.fail(
                    &format!("{path}.volumeMode"),
                    format!("`volumeMode: Block`: {problem}"),
                    hint,
                ));
            }
        }
        if workload.fill_attach_limit
            && [
                crate::vocab::SHARED_CLASS,
                crate::vocab::LOCAL_CLASS,
                crate::vocab::ATTACH_CLASS,
            ]
            .contains(&workload.storage_class.as_str())
        {
            return Err(self.fail(
                &format!("{path}.fillAttachLimit"),
                format!(
                    "`fillAttachLimit: true` fills nodes with claims the class provisions, and nodedown makes {}'s volumes itself",
                    workload.storage_class
                ),
                "name a StorageClass with a provisioner and an attach limit, e.g. `storageClass: nodedown-limits` on testenv, or remove `fillAttachLimit`",
            ));
        }
        if workload
            .image
            .as_deref()
            .is_some_and(|i| i.trim().is_empty())
        {
            return Err(self.fail(
                &format!("{path}.image"),
                "the image is empty",
                "name an image, or remove `image` to use the one nodedown builds",
            ));
        }
        Ok(())
    }

    /// Checks that need the remediation, timeouts and expectations a variant's runs really use.
    /// `variant` is the variant's index, `None` for an experiment without variants.
    fn run(
        &self,
        exp: &Experiment,
        run: &VariantSpec<'_>,
        variant: Option<usize>,
    ) -> Result<(), SpecError> {
        let remediation_path = origin(run.remediation, &exp.remediation, variant, "remediation");
        let timeouts_path = origin(run.timeouts, &exp.timeouts, variant, "timeouts");
        let expect_path = origin(run.expect, &exp.expect, variant, "expect");
        self.pod_fault_remediation(run, &remediation_path)?;
        if exp.cluster.provider == Provider::K3d {
            if let Some((field, what)) = refused_on_k3d(run.fault) {
                let fault_path = origin(run.fault, &exp.fault, variant, "fault");
                return Err(self.fail(
                    &format!("{fault_path}.{field}"),
                    format!("{what} {K3D_REFUSAL}"),
                    K3D_REFUSAL_FIX,
                ));
            }
        }

        let recovery = run.timeouts.recovery;
        let recovery_field = format!("{timeouts_path}.recovery");
        let recovery_text = if self.tree.find(&recovery_field).is_some() {
            format!("`{recovery_field}: {}`", duration::format(recovery))
        } else {
            format!(
                "the default `{recovery_field}` of {}",
                duration::format(recovery)
            )
        };
        let variant_note = match variant {
            Some(_) => format!(" (variant `{}`)", run.name),
            None => String::new(),
        };
        if let Some(after) = run.remediation.after() {
            if after >= recovery {
                return Err(self.fail(
                    &format!("{remediation_path}.after"),
                    format!(
                        "`after: {}` is not shorter than {recovery_text}{variant_note}: the run stops \
                         observing before the remediation would act",
                        duration::format(after)
                    ),
                    "lower `after`, or raise `timeouts.recovery`",
                ));
            }
        }
        for (key, max) in bounds(run.expect) {
            if max > recovery {
                return Err(self.fail(
                    &format!("{expect_path}.{key}.max"),
                    format!(
                        "`max: {}` is longer than {recovery_text}{variant_note}: the run stops observing before then",
                        duration::format(max)
                    ),
                    format!("write at most `max: {}`, or raise `timeouts.recovery`", duration::format(recovery)),
                ));
            }
        }
        if run.workload.kind != WorkloadKind::Ledger {
            for (set, key) in [
                (run.expect.integrity.is_some(), "integrity"),
                (run.expect.write_outage.is_some(), "writeOutage"),
            ] {
                if set {
                    return Err(self.fail(
                        &format!("{expect_path}.{key}"),
                        format!("`{key}` is measured by the ledger workload, and this experiment runs `{}`", statefulset_name(run.workload.kind)),
                        "write `workload: {kind: ledger}` (and `fault.target.nodeOf: ledger-0`), or remove this expectation",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Why a k3d node cannot take a fault, and what to do instead.
pub const K3D_REFUSAL: &str = "cannot run on k3d nodes: k3s runs the kubelet inside its own process, with no systemd to stop it or to shut the node down cleanly";
pub const K3D_REFUSAL_FIX: &str = "use `provider: kind` for this fault, or a fault k3d nodes can take: node-shutdown (hard), network-partition, node-freeze, pod-delete, container-kill";

/// The field and the name of a fault a k3d node cannot take (`None`: it can). Pure.
pub fn refused_on_k3d(fault: &crate::spec::FaultSpec) -> Option<(&'static str, &'static str)> {
    if fault.kind == crate::spec::FaultKind::KubeletStop {
        Some(("kind", "kubelet-stop"))
    } else if fault.graceful {
        Some(("graceful", "a graceful node-shutdown"))
    } else {
        None
    }
}

/// Where a part that a variant's runs use is written: under the variant when the merge
/// ([`Experiment::variant_specs`]) took the variant's own part, else the experiment's.
fn origin<T>(used: &T, experiments: &T, variant: Option<usize>, field: &str) -> String {
    match variant {
        Some(i) if !std::ptr::eq(used, experiments) => format!("variants[{i}].{field}"),
        _ => field.to_string(),
    }
}

fn bounds(expect: &Expectations) -> Vec<(&'static str, Duration)> {
    let mut out = Vec::new();
    if let Some(b) = &expect.time_to_running {
        out.push(("timeToRunning", b.max));
    }
    if let Some(b) = &expect.time_to_ready {
        out.push(("timeToReady", b.max));
    }
    out
}

/// Checks a deserialized experiment; `tree` is the YAML it came from, to point at fields.
pub(super) fn validate(exp: &Experiment, file: &Path, tree: &Node) -> Result<(), SpecError> {
    let check = Checker { file, tree };
    check.name(&exp.name, "name", "experiment", "node-shutdown")?;

    if !(1..=MAX_REPEAT).contains(&exp.repeat) {
        return Err(check.fail(
            "repeat",
            format!("`repeat: {}` is out of range", exp.repeat),
            format!("write a number from 1 to {MAX_REPEAT}"),
        ));
    }

    match exp.cluster.provider {
        Provider::Existing => {
            if exp.cluster.config.is_some() {
                return Err(check.fail(
                    "cluster.config",
                    "`config` is a kind config file, but provider `existing` uses a cluster that is already running",
                    "remove `cluster.config`, or write `provider: kind`",
                ));
            }
        }
        Provider::Kind | Provider::K3d | Provider::Kwok => {
            if let (Some(config), Some(resolved)) =
                (&exp.cluster.config, cluster_config_path(file, &exp.cluster))
            {
                if !resolved.is_file() {
                    return Err(check.fail(
                        "cluster.config",
                        format!("{} config `{}` not found (looked for {})", exp.cluster.provider.as_str(), config.display(), resolved.display()),
                        "the path is relative to the experiment file's directory: fix it, or remove `config` \
                         to use the default profile",
                    ));
                }
            }
        }
    }

    if exp.cluster.provider == Provider::Kwok {
        super::simulated::check(exp, &|field, problem, hint| {
            check.fail(field, problem, hint)
        })?;
    } else if exp.cluster.simulated_nodes.is_some() {
        return Err(check.fail(
            "cluster.simulatedNodes",
            "`simulatedNodes` is for the simulated cluster only",
            "write `provider: kwok`, or remove `simulatedNodes`",
        ));
    }

    let workload = &exp.workload;
    if exp.cluster.provider != Provider::Kwok {
        check.workload(workload, "workload")?;
    }

    // Each part as written: the experiment's, then each variant's.
    check.fault(&exp.fault, "fault", workload)?;
    check.remediation(&exp.remediation, "remediation")?;
    check.timeouts(&exp.timeouts, "timeouts")?;
    check.expect(&exp.expect, "expect")?;

    let mut variant_names: HashMap<&str, usize> = HashMap::new();
    for (i, variant) in exp.variants.iter().enumerate() {
        let base = format!("variants[{i}]");
        let name_field = format!("{base}.name");
        check.name(&variant.name, &name_field, "variant", "baseline")?;
        if let Some(first) = variant_names.insert(&variant.name, i) {
            return Err(check.fail(
                &name_field,
                format!(
                    "variant name `{}` is already used by variants[{first}] (line {})",
                    variant.name,
                    tree.locate(&format!("variants[{first}].name")).0
                ),
                "give each variant its own name",
            ));
        }
        if let Some(w) = variant
            .workload
            .as_ref()
            .filter(|_| exp.cluster.provider != Provider::Kwok)
        {
            check.workload(w, &format!("{base}.workload"))?;
        }
        if let Some(fault) = &variant.fault {
            check.fault(
                fault,
                &format!("{base}.fault"),
                variant.workload.as_ref().unwrap_or(workload),
            )?;
        }
        if let Some(remediation) = &variant.remediation {
            check.remediation(remediation, &format!("{base}.remediation"))?;
        }
        if let Some(timeouts) = &variant.timeouts {
            check.timeouts(timeouts, &format!("{base}.timeouts"))?;
        }
        if let Some(expect) = &variant.expect {
            check.expect(expect, &format!("{base}.expect"))?;
        }
    }

    // What the runs of each variant use.
    let variants = exp.variant_specs();
    for (i, run) in variants.iter().enumerate() {
        check.run(exp, run, (!exp.variants.is_empty()).then_some(i))?;
    }
    Ok(())
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
fn is_dns_label(name: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !name.is_empty()
        && name.chars().all(|c| alnum(c) || c == '-')
        && name.chars().next().is_some_and(alnum)
        && name.chars().last().is_some_and(alnum)
}

/// A name that passes [`is_dns_label`], made from what the user wrote (may be empty).
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    if out.chars().count() <= MAX_NAME_LEN {
        return out.to_string();
    }
    // Too long: cut at the last `-` that fits, so that no word is cut in half.
    let head: String = out.chars().take(MAX_NAME_LEN + 1).collect();
    match head.rfind('-') {
        Some(cut) if cut > 0 => head[..cut].to_string(),
        _ => head.chars().take(MAX_NAME_LEN).collect(),
    }
}

/// `^[0-9]+(Ki|Mi|Gi|Ti|K|M|G|T)?$`, and not zero.
fn is_quantity(size: &str) -> bool {
    let digits_end = size
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(size.len());
    let (digits, suffix) = size.split_at(digits_end);
    !digits.is_empty()
        && digits.chars().any(|c| c != '0')
        && matches!(
            suffix,
            "" | "Ki" | "Mi" | "Gi" | "Ti" | "K" | "M" | "G" | "T"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_quantities() {
        for good in ["a", "a1", "node-shutdown-2", "9"] {
            assert!(is_dns_label(good), "{good}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", "ä"] {
            assert!(!is_dns_label(bad), "{bad}");
        }
        assert_eq!(slug("Force Delete"), "force-delete");
        for good in ["1Gi", "500Mi", "10G", "1024", "2Ti", "3K"] {
            assert!(is_quantity(good), "{good}");
        }
        for bad in [
            "", "Gi", "1GB", "1.5Gi", "0Gi", "1 Gi", "-1Gi", "1gi", "1Pi",
        ] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }
}
