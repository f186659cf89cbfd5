//! JUnit XML for CI test reporters: one `<testsuite>` per experiment, one `<testcase>` per run.
//!
//! - test case name `<variant>#<repetition>`, classname `<experiment>`, time = the run's
//!   duration;
//! - properties: `id`, `fault`, `remediation`, `verdict`, `profile`, `started`, `target-node`,
//!   `replacement-node` when known, `lane` and `lane.nodes` in a parallel invocation, for a
//!   fleet `fleet.instances`, `fleet.recovered`, `fleet.time-to-all-ready`,
//!   `fleet.slowest-instance` and `fleet.unaffected` (replicas no fault took), then
//!   `phase.<phase>`, `metric.<metric>` and `breakdown.<segment>` (where the time went, see
//!   `timeline::breakdown`) with values in milliseconds (from the fault for phases and
//!   metrics; a fleet's: its slowest instance's);
//! - `Fail` → one `<failure>` (JUnit allows one status element per test case): its message
//!   lists every failed expectation as `<name>: expected <expected>, got <actual>` (joined by
//!   `; `), its text holds their evidence;
//! - `Unknown` → one `<error>`: `harness error: <error>` when the run ended with an error,
//!   else the undecided expectations, or "no expectations";
//! - `<system-out>`: the run's phases and expectations for humans.

use super::text::{mismatch, unknown_reason, verdict_word};
use super::{ExperimentResult, Report, RunResult, Verdict};
use crate::units::fmt_ms;
use quick_junit::{NonSuccessKind, Property, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

/// The name of the `<testsuites>` element.
pub const REPORT_NAME: &str = "nodedown";

/// The report as JUnit XML (with a trailing newline).
pub fn render(report: &Report) -> String {
    let mut junit = quick_junit::Report::new(REPORT_NAME);
    let mut total_ms = 0;
    for exp in &report.experiments {
        let mut suite = TestSuite::new(exp.name.as_str());
        suite.add_property(Property::new("file", exp.file.as_str()));
        let mut suite_ms = 0;
        for run in &exp.runs {
            suite.add_test_case(test_case(exp, run));
            suite_ms += run.duration_ms;
        }
        for n in report.not_run.iter().filter(|n| n.experiment == exp.name) {
            suite.add_test_case(not_run_case(n));
        }
        suite.set_time(Duration::from_millis(suite_ms));
        total_ms += suite_ms;
        junit.add_test_suite(suite);
    }
    // Experiments none of whose variants ran get a suite of skipped cases of their own.
    let mut rest: Vec<&crate::report::NotRun> = report
        .not_run
        .iter()
        .filter(|n| !report.experiments.iter().any(|e| e.name == n.experiment))
        .collect();
    rest.sort_by(|a, b| a.experiment.cmp(&b.experiment));
    for group in rest.chunk_by(|a, b| a.experiment == b.experiment) {
        let mut suite = TestSuite::new(group[0].experiment.as_str());
        suite.add_property(Property::new("file", group[0].file.as_str()));
        for n in group {
            suite.add_test_case(not_run_case(n));
        }
        junit.add_test_suite(suite);
    }
    junit.set_time(Duration::from_millis(total_ms));
    let mut xml = junit
        .to_string()
        .expect("serializing JUnit XML to memory does not fail");
    if !xml.ends_with('\n') {
        xml.push('\n');
    }
    xml
}

/// A variant left out by `--skip-unsupported`: a skipped test case saying why.
fn not_run_case(n: &crate::report::NotRun) -> TestCase {
    let mut status = TestCaseStatus::skipped();
    status.set_message(format!("not run: {}", n.reason));
    let mut case = TestCase::new(n.variant.as_str(), status);
    case.set_classname(n.experiment.as_str());
    case
}

fn test_case(exp: &ExperimentResult, run: &RunResult) -> TestCase {
    let status = match run.verdict {
        Verdict::Pass => TestCaseStatus::success(),
        Verdict::Fail => {
            let failed: Vec<_> = run
                .expectations
                .iter()
                .filter(|e| e.verdict == Verdict::Fail)
                .collect();
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_type("expectation");
            status.set_message(format!(
                "{} — what happened: {}",
                failed
                    .iter()
                    .map(|e| mismatch(e))
                    .collect::<Vec<_>>()
                    .join("; "),
                super::outcome::of(run).summary
            ));
            let mut text: Vec<String> = failed
                .iter()
                .map(|e| format!("{}: {}", e.name, e.evidence))
                .collect();
            if let Some(err) = &run.error {
                text.push(format!("harness error: {err}"));
            }
            status.set_description(text.join("\n"));
            status
        }
        Verdict::Unknown => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status.set_type(if run.error.is_some() {
                "harness-error"
            } else {
                "unknown"
            });
            status.set_message(format!(
                "{} — what happened: {}",
                unknown_reason(run),
                super::outcome::of(run).summary
            ));
            let text: Vec<String> = run
                .expectations
                .iter()
                .filter(|e| e.verdict == Verdict::Unknown)
                .map(|e| format!("{}: {}", e.name, e.evidence))
                .collect();
            if !text.is_empty() {
                status.set_description(text.join("\n"));
            }
            status
        }
    };

    let mut case = TestCase::new(format!("{}#{}", run.variant, run.repetition), status);
    case.set_classname(exp.name.as_str());
    case.set_time(Duration::from_millis(run.duration_ms));
    let verdict = verdict_word(run.verdict);
    let mut props: Vec<(String, String)> = vec![
        ("id".into(), run.id.clone()),
        ("fault".into(), run.fault.to_string()),
        ("remediation".into(), run.remediation.to_string()),
        ("verdict".into(), verdict.into()),
    ];
    let provider = run.provider.map(|p| p.as_str().to_string());
    let optional = [
        ("provider", &provider),
        ("profile", &run.profile),
        ("started", &run.started),
        ("target-node", &run.target_node),
        ("replacement-node", &run.replacement_node),
    ];
    for (name, value) in optional {
        if let Some(v) = value {
            props.push((name.into(), v.clone()));
        }
    }
    if let Some(lane) = run.lane {
        props.push(("lane".into(), lane.to_string()));
        props.push(("lane.nodes".into(), run.lane_nodes.join(",")));
    }
    if !run.fault_nodes.is_empty() {
        props.push(("fault-nodes".into(), run.fault_nodes.join(",")));
    }
    if let Some(f) = &run.fleet {
        props.push(("fleet.instances".into(), f.instances.to_string()));
        props.push(("fleet.recovered".into(), f.recovered.to_string()));
        if let Some(ms) = f.time_to_all_ready_ms {
            props.push(("fleet.time-to-all-ready".into(), ms.to_string()));
        }
        if let Some(slowest) = &f.slowest_instance {
            props.push(("fleet.slowest-instance".into(), slowest.clone()));
        }
        if !f.unaffected.is_empty() {
            props.push(("fleet.unaffected".into(), f.unaffected.join(",")));
        }
    }
    props.push(("spec-hash".into(), run.spec_hash.clone()));
    if let Some(env) = &run.environment {
        let node = env.target_node_info.as_ref();
        let fields = [
            ("env.kubernetes", env.kubernetes.clone()),
            ("env.node-count", env.node_count.map(|n| n.to_string())),
            ("env.node.os", node.map(|n| n.os_image.clone())),
            ("env.node.kernel", node.map(|n| n.kernel.clone())),
            (
                "env.node.runtime",
                node.map(|n| n.container_runtime.clone()),
            ),
            ("env.node.kubelet", node.map(|n| n.kubelet.clone())),
            ("env.storage-class", env.storage_class.clone()),
            ("env.provisioner", env.provisioner.clone()),
            (
                "env.attach-required",
                env.attach_required.map(|a| a.to_string()),
            ),
            ("env.backend", env.backend.map(|b| b.to_string())),
        ];
        for (name, value) in fields {
            if let Some(v) = value {
                props.push((name.into(), v));
            }
        }
    }
    if let Some(i) = &run.integrity {
        props.push(("integrity".into(), verdict_word(i.verdict).into()));
        props.push(("integrity.split-brain".into(), i.split_brain.to_string()));
        props.push((
            "integrity.lost-acknowledged".into(),
            i.lost_acknowledged.to_string(),
        ));
        props.push(("integrity.summary".into(), i.summary.clone()));
    }
    for p in &run.phases {
        props.push((format!("phase.{}", p.name), p.at_ms.to_string()));
    }
    // In failover order (the metrics' own).
    for (name, ms) in &run.metrics {
        props.push((format!("metric.{name}"), ms.to_string()));
    }
    for part in crate::timeline::breakdown(&run.metrics) {
        props.push((
            format!("breakdown.{}", part.segment.name()),
            part.ms().to_string(),
        ));
    }
    case.add_properties(props.into_iter().map(|(n, v)| Property::new(n, v)));
    case.set_system_out(system_out(run));
    case
}

/// The human summary of a run.
fn system_out(run: &RunResult) -> String {
    let mut out = format!(
        "{}: {} ({} on {}, remediation {})\n",
        run.id,
        verdict_word(run.verdict),
        run.fault,
        run.target_node.as_deref().unwrap_or("?"),
        run.remediation
    );
    out.push_str(&format!("outcome: {}\n", super::outcome::of(run).summary));
    if let Some(err) = &run.error {
        out.push_str(&format!("error: {err}\n"));
    }
    if run.phases.is_empty() {
        out.push_str("phases: none (no fault was injected)\n");
    } else {
        out.push_str("phases (from the fault):\n");
        for p in &run.phases {
            out.push_str(&format!("  {:>8}  {}\n", fmt_ms(p.at_ms), p.name));
        }
    }
    if let Some(i) = &run.integrity {
        out.push_str(&format!("integrity ({}):\n", verdict_word(i.verdict)));
        for l in i.evidence.lines() {
            out.push_str(&format!("  {l}\n"));
        }
    }
    if run.expectations.is_empty() {
        out.push_str("expectations: none\n");
    } else {
        out.push_str("expectations:\n");
        for e in &run.expectations {
            out.push_str(&format!(
                "  {:<7} {} — {}\n",
                verdict_word(e.verdict),
                mismatch(e),
                e.evidence
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {

    /// A variant `--skip-unsupported` left out: a skipped test case in its experiment's suite
    /// (and a suite of its own for an experiment that did not run at all), saying why.
    #[test]
    fn variants_not_run_are_skipped_cases_with_the_reason() {
        let mut report = crate::report::fixtures::golden_report();
        let exp = report.experiments[0].name.clone();
        report.not_run = vec![
            crate::report::NotRun {
                experiment: exp.clone(),
                variant: "oos-taint-fenced".into(),
                file: "experiments/x.yaml".into(),
                reason: "no backend here can power nodes off".into(),
            },
            crate::report::NotRun {
                experiment: "elsewhere".into(),
                variant: "freeze".into(),
                file: "experiments/y.yaml".into(),
                reason: "only node containers reached through Docker can take it".into(),
            },
        ];
        let xml = render(&report);
        assert!(xml.contains("name=\"oos-taint-fenced\""), "{xml}");
        assert!(
            xml.contains("<skipped message=\"not run: no backend here can power nodes off\"/>"),
            "{xml}"
        );
        assert!(xml.contains("<testsuite name=\"elsewhere\""), "{xml}");
        let md = crate::report::markdown::render(&report);
        assert!(md.contains("### Not run (2)"), "{md}");
        assert!(
            md.contains("- `elsewhere` / `freeze` (experiments/y.yaml): only node containers"),
            "{md}"
        );
        let table = crate::report::table::render(&report, &Default::default());
        assert!(
            table.contains("not run: elsewhere/freeze: only node containers"),
            "{table}"
        );
        let json = crate::report::json::to_string(&report);
        assert!(json.contains("\"notRun\""), "{json}");
    }

    use super::*;
    use crate::report::fixtures::{check_golden, golden_report};

    #[test]
    fn golden() {
        check_golden("report.junit.xml", &render(&golden_report()));
    }

    #[test]
    fn parses_back_with_the_expected_cases_and_failures() {
        let xml = render(&golden_report());
        // Element counts in the raw text, as a CI reporter would see them.
        assert_eq!(xml.matches("<testsuite ").count(), 2);
        assert_eq!(xml.matches("<testcase ").count(), 8);
        assert_eq!(xml.matches("<failure ").count(), 3);
        assert_eq!(xml.matches("<error ").count(), 2);

        let parsed = quick_junit::Report::deserialize_from_str(&xml).expect("valid JUnit XML");
        assert_eq!(parsed.name.as_ref().unwrap().as_str(), REPORT_NAME);
        assert_eq!(parsed.tests, 8);
        assert_eq!(parsed.failures, 3);
        assert_eq!(parsed.errors, 2);
        let [ns, strict] = &parsed.test_suites[..] else {
            panic!("two suites expected")
        };
        assert_eq!(ns.name.as_str(), "node-shutdown");
        assert_eq!((ns.tests, ns.failures, ns.errors), (4, 1, 0));
        assert_eq!(strict.name.as_str(), "strict-recovery");
        assert_eq!((strict.tests, strict.failures, strict.errors), (4, 2, 2));

        let names: Vec<_> = ns.test_cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "oos-taint#1",
                "baseline#1",
                "force-delete#1",
                "force-delete#2"
            ]
        );
        let oos = &ns.test_cases[0];
        assert_eq!(oos.classname.as_ref().unwrap().as_str(), "node-shutdown");
        assert_eq!(oos.time, Some(Duration::from_millis(68_506)));
        let prop = |c: &TestCase, n: &str| {
            c.properties
                .iter()
                .find(|p| p.name.as_str() == n)
                .map(|p| p.value.as_str().to_string())
        };
        assert_eq!(prop(oos, "metric.time-to-ready").as_deref(), Some("39700"));
        assert_eq!(prop(oos, "phase.node-not-ready").as_deref(), Some("20911"));
        assert_eq!(prop(oos, "verdict").as_deref(), Some("pass"));
        assert!(matches!(oos.status, TestCaseStatus::Success { .. }));

        let TestCaseStatus::NonSuccess {
            kind,
            message,
            description,
            ..
        } = &ns.test_cases[3].status
        else {
            panic!("force-delete#2 must fail")
        };
        assert_eq!(*kind, NonSuccessKind::Failure);
        assert_eq!(
            message.as_ref().unwrap().as_str(),
            "time-to-ready 7m08s > 7m5s — what happened: recovered in 7m08s (expected ≤ 7m5s)"
        );
        assert!(description
            .as_ref()
            .unwrap()
            .as_str()
            .starts_with("timeToReady: replacement writer-0"));

        let TestCaseStatus::NonSuccess { kind, message, .. } = &strict.test_cases[1].status else {
            panic!("strict-recovery oos-taint#2 must be unknown")
        };
        assert_eq!(*kind, NonSuccessKind::Error);
        assert_eq!(
            message.as_ref().unwrap().as_str(),
            "harness error: run did not finish (no run-finished event) — what happened: not \
             recovered while watched (the watch was cut short) (undecided; expected recovered, ≤ \
             30s)"
        );
        let TestCaseStatus::NonSuccess { message, .. } = &strict.test_cases[3].status else {
            panic!("unchecked#1 must be unknown")
        };
        assert!(message
            .as_ref()
            .unwrap()
            .as_str()
            .starts_with("no expectations"));
    }
}
