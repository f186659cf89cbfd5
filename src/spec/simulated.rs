//! What an experiment on the simulated cluster (`provider: kwok`) may ask for: kwok's nodes
//! have no kubelet and its pods no process, so the fault is a node that stops heartbeating
//! (node-shutdown, hard), the remediations are the ones the control plane carries out alone
//! (none, the out-of-service taint), and there is no data to check.

use super::model::{Experiment, FaultKind, RemediationSpec};
use super::SpecError;

/// The most simulated nodes a cluster may be given (`cluster.simulatedNodes`).
pub const MAX_SIMULATED_NODES: u32 = 2000;
/// The most instances (StatefulSets, each one pod and one attaching volume) a simulated run has.
pub const MAX_SIMULATED_INSTANCES: u32 = 5000;
/// Simulated nodes when `simulatedNodes` is not given.
pub const DEFAULT_SIMULATED_NODES: u32 = 50;

type Fail<'a> = dyn Fn(&str, String, &str) -> SpecError + 'a;

pub(super) fn check(exp: &Experiment, fail: &Fail<'_>) -> Result<(), SpecError> {
    let nodes = exp
        .cluster
        .simulated_nodes
        .unwrap_or(DEFAULT_SIMULATED_NODES);
    if !(2..=MAX_SIMULATED_NODES).contains(&nodes) {
        return Err(fail(
            "cluster.simulatedNodes",
            format!("`simulatedNodes: {nodes}`: a simulated cluster has from 2 to {MAX_SIMULATED_NODES} nodes"),
            "write e.g. `simulatedNodes: 200`",
        ));
    }
    let variants = exp.variant_specs();
    let many = !exp.variants.is_empty();
    for (i, v) in variants.iter().enumerate() {
        let at = |field: &str| {
            if many {
                format!("variants[{i}].{field}")
            } else {
                field.to_string()
            }
        };
        let w = v.workload;
        if w.instances == 0 || w.instances > MAX_SIMULATED_INSTANCES {
            return Err(fail(
                &at("workload.instances"),
                format!(
                    "`instances: {}`: a simulated run has from 1 to {MAX_SIMULATED_INSTANCES} instances",
                    w.instances
                ),
                "write e.g. `instances: 100` (spread over the faulted nodes)",
            ));
        }
        if w.storage_class != crate::vocab::ATTACH_CLASS {
            return Err(fail(
                &at("workload.storageClass"),
                format!(
                    "the simulated cluster has one storage class, `{}` (the attaching reference driver, with the real external-attacher); `{}` is not there",
                    crate::vocab::ATTACH_CLASS,
                    w.storage_class
                ),
                "write `storageClass: nodedown-attach`",
            ));
        }
        if w.fill_attach_limit {
            return Err(fail(
                &at("workload.fillAttachLimit"),
                "simulated nodes run no pods and publish no attach limit: there is nothing to fill".into(),
                "remove `fillAttachLimit` (it is for real nodes: `provider: kind`, `k3d` or `existing`)",
            ));
        }
        if w.replicas != 1 {
            return Err(fail(
                &at("workload.replicas"),
                "a simulated run's instances have one pod each".into(),
                "remove `replicas`",
            ));
        }
        let f = v.fault;
        if f.kind != FaultKind::NodeShutdown || f.graceful {
            return Err(fail(
                &at("fault.kind"),
                format!(
                    "fault `{}`{} cannot happen to a simulated node: it has no kubelet, network or process, only a heartbeat",
                    f.kind.as_str(),
                    if f.graceful { " (graceful)" } else { "" }
                ),
                "write `kind: node-shutdown` (the node stops heartbeating, as when powered off)",
            ));
        }
        let count = if f.target.nodes.is_empty() {
            f.target.count
        } else {
            Some(f.target.nodes.len() as u32)
        };
        let Some(count) = count else {
            return Err(fail(
                &at("fault.target"),
                "a simulated run names how many nodes it loses".into(),
                "write `target: {count: 5}`",
            ));
        };
        if count >= nodes {
            return Err(fail(
                &at("fault.target.count"),
                format!("{count} nodes lost out of {nodes} leaves none for the replacements"),
                "lose fewer nodes, or raise `cluster.simulatedNodes`",
            ));
        }
        if w.instances < count {
            return Err(fail(
                &at("workload.instances"),
                format!("{} instances cannot occupy {count} nodes", w.instances),
                "give at least one instance per lost node",
            ));
        }
        match v.remediation {
            RemediationSpec::None | RemediationSpec::OutOfServiceTaint { .. } => {}
            _ => {
                return Err(fail(
                    &at("remediation.kind"),
                    "on simulated nodes only `none` and `out-of-service-taint` mean what they mean on real ones (kwok never reports volumes in use, so a force-deleted pod's volume would detach at once instead of after 6 minutes)".into(),
                    "write `kind: none` or `kind: out-of-service-taint`",
                ));
            }
        }
        if v.expect.phases.is_some() {
            return Err(fail(
                &at("expect.phases"),
                "a simulated run is measured by its curve's milestones, not by a real run's phases: `phases` would never be checked"
                    .into(),
                "remove `phases`; expect `recovered` or `timeToRunning` (each for every instance)",
            ));
        }
        if v.expect.time_to_ready.is_some() {
            return Err(fail(
                &at("expect.timeToReady"),
                "a simulated pod has no container and no readiness probe: `timeToReady` would measure nothing of the failover"
                    .into(),
                "bound `timeToRunning` instead: every replacement Running with its volume attached",
            ));
        }
        if v.expect.integrity.is_some() || v.expect.write_outage.is_some() {
            return Err(fail(
                &at("expect"),
                "a simulated run has no data path: there is no integrity or write outage to expect"
                    .into(),
                "remove `integrity` and `writeOutage`",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    fn parse(text: &str) -> Result<crate::spec::Experiment, String> {
        crate::spec::parse_str(text, Path::new("sim.yaml")).map_err(|e| e.to_string())
    }

    const GOOD: &str = "name: s\ncluster: {provider: kwok, simulatedNodes: 20}\nworkload: {kind: ledger, storageClass: nodedown-attach, instances: 40}\nfault: {kind: node-shutdown, target: {count: 2}}\nremediation: {kind: out-of-service-taint}\nexpect: {recovered: true}\n";

    #[test]
    fn a_simulated_experiment_takes_what_a_simulated_node_can_do() {
        assert!(parse(GOOD).is_ok(), "{:?}", parse(GOOD));
        // More instances than a real run may have: the simulated limit applies.
        assert!(parse(&GOOD.replace("instances: 40", "instances: 2000")).is_ok());
        let bounded = GOOD.replace(
            "{recovered: true}",
            "{recovered: true, timeToRunning: {max: 5m}}",
        );
        assert!(parse(&bounded).is_ok(), "{:?}", parse(&bounded));
        let refused = [
            (
                "kind: node-shutdown",
                "kind: kubelet-stop",
                "fault.kind",
                "only a heartbeat",
            ),
            (
                "{kind: out-of-service-taint}",
                "{kind: force-delete-pod}",
                "remediation.kind",
                "6 minutes",
            ),
            (
                "{recovered: true}",
                "{recovered: true, integrity: pass}",
                "expect",
                "no data path",
            ),
            (
                "{recovered: true}",
                "{recovered: true, phases: {seen: [volume-detached]}}",
                "expect.phases",
                "never be checked",
            ),
            (
                "{recovered: true}",
                "{recovered: true, timeToReady: {max: 5m}}",
                "expect.timeToReady",
                "no readiness probe",
            ),
            (
                "{count: 2}",
                "{count: 20}",
                "fault.target.count",
                "leaves none",
            ),
            (
                "storageClass: nodedown-attach",
                "storageClass: nodedown-shared",
                "workload.storageClass",
                "one storage class",
            ),
            (
                "simulatedNodes: 20",
                "simulatedNodes: 5000",
                "cluster.simulatedNodes",
                "from 2 to",
            ),
        ];
        for (from, to, field, words) in refused {
            let e = parse(&GOOD.replace(from, to)).unwrap_err();
            assert!(e.contains(field) && e.contains(words), "{to}: {e}");
        }
        let real = GOOD.replace("provider: kwok, ", "provider: kind, ");
        let e = parse(&real).unwrap_err();
        assert!(
            e.contains("simulatedNodes") && e.contains("provider: kwok"),
            "{e}"
        );
    }
}
