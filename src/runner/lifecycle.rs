//! What every run does whatever its provider (a real cluster's nodes or kwok's): its directory
//! opened (run.json, the events, the journal), its fault applied to its nodes with each heal
//! journaled first and time zero recorded from the earliest effect, and its end: healed from
//! the journal with its own heal timeout, and `run-finished` recorded with why it could not
//! complete. The steps between — placing the workload, watching, remediating — are the
//! provider's.

use super::{Env, Progress, StepError};
use crate::faults::{Effect, NodeControl, NodeFault};
use crate::journal::{Journal, Undo};
use crate::observe::Recorder;
use crate::plan::PlannedRun;
use crate::store;
use crate::timeline::{EventKind, Stage};
use std::path::Path;
use std::sync::Arc;

/// A run's directory, open: its planned run written (`run.json`), its events recorded from
/// `run-started` on, its journal.
#[derive(Clone)]
pub(crate) struct RunFiles {
    pub recorder: Arc<Recorder>,
    pub journal: Arc<Journal>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StepError + '_ {
    move |source| StepError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Opens run `run`'s directory `dir` (made if missing) and records `run-started`.
pub(crate) fn open(dir: &Path, run: &PlannedRun) -> Result<RunFiles, StepError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let run_json = dir.join(store::RUN_FILE);
    let text = serde_json::to_string_pretty(run).expect("a planned run serializes");
    std::fs::write(&run_json, text + "\n").map_err(io(&run_json))?;
    let events = dir.join(store::EVENTS_FILE);
    let recorder = Arc::new(Recorder::create(&events).map_err(io(&events))?);
    let journal = dir.join(store::JOURNAL_FILE);
    let journal = Arc::new(Journal::open(&journal).map_err(io(&journal))?);
    recorder.record(EventKind::RunStarted {
        run: run.id.clone(),
        experiment: run.experiment.clone(),
        variant: run.variant.clone(),
        repetition: run.repetition,
    });
    Ok(RunFiles { recorder, journal })
}

/// A fault in effect on one node: when it took effect and its heal's journal entry.
pub(crate) struct Applied {
    pub node: String,
    pub effect: Effect,
    pub undo: u64,
}

/// Applies `faults` (one per node, all of one kind) through `control` at once. Every node's
/// heal is journaled first — with `also`, the undos of what the run may do to those nodes
/// next, in the same write — and `fault-injecting` recorded per node; then `fault-injected`
/// per node that took it, the earliest effect first (it is time zero). A node that did not
/// take the fault fails the step, after the others are recorded (their heals are journaled).
pub(crate) async fn apply_fault(
    control: &dyn NodeControl,
    faults: &[NodeFault],
    also: Vec<Undo>,
    journal: &Journal,
    recorder: &Recorder,
) -> Result<Vec<Applied>, StepError> {
    let Some(kind) = faults.first().map(|f| f.kind) else {
        return Ok(vec![]);
    };
    let heals = faults.iter().map(|f| Undo::HealFault {
        backend: control.backend(),
        fault: kind,
        node: f.node.clone(),
    });
    let ids = journal
        .record_all(heals.chain(also).collect())
        .map_err(StepError::Journal)?;
    for f in faults {
        recorder.record(EventKind::FaultInjecting {
            fault: kind,
            node: f.node.clone(),
        });
    }
    let effects = futures::future::join_all(faults.iter().map(|f| control.apply(f))).await;
    let returned_ms = recorder.elapsed_ms();
    let mut applied = Vec::new();
    let mut failed = Vec::new();
    for ((fault, effect), undo) in faults.iter().zip(effects).zip(ids) {
        match effect {
            Ok(effect) => applied.push(Applied {
                node: fault.node.clone(),
                effect,
                undo,
            }),
            Err(e) => failed.push(format!("{}: {e}", fault.node)),
        }
    }
    // Time zero first: the earliest effect is recorded first.
    applied.sort_by_key(|a| a.effect.at);
    for a in &applied {
        recorder.record_at(
            EventKind::FaultInjected {
                fault: kind,
                node: a.node.clone(),
                basis: a.effect.basis,
                backend: Some(control.backend()),
                returned_ms: Some(returned_ms),
            },
            Some(a.effect.at),
        );
    }
    if !failed.is_empty() {
        return Err(StepError::Inject {
            fault: kind.as_str(),
            failures: failed.join("; "),
        });
    }
    Ok(applied)
}

/// Heals what the run's journal says is pending, with the run's own heal timeout, recording
/// the heal stage and each heal in its events. Every task of the run that could act on the
/// cluster must be stopped (aborted and joined) before: nothing of the run's lands after.
pub(crate) async fn heal(
    env: &Env,
    run: &PlannedRun,
    files: &RunFiles,
    progress: &Progress,
) -> Vec<super::heal::HealError> {
    files
        .recorder
        .record(EventKind::Stage { stage: Stage::Heal });
    progress.step("healing: nodes back, taints removed, run objects deleted");
    super::healer(env, run.timeouts.heal)
        .heal_all(&files.journal, Some(&files.recorder))
        .await
        .1
}

/// Records the run's end: `error` (why its steps could not complete), with the heal's failures
/// after it (a failed heal means the run did not complete; its figures stand). Returns what was
/// recorded.
pub(crate) fn finish(
    files: &RunFiles,
    error: Option<String>,
    heal_errors: &[super::heal::HealError],
) -> Option<String> {
    let error = if heal_errors.is_empty() {
        error
    } else {
        let healing = heal_errors
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        Some(match error {
            Some(e) => format!("{e}; healing failed: {healing}"),
            None => format!("healing failed: {healing}"),
        })
    };
    files.recorder.record(EventKind::RunFinished {
        error: error.clone(),
    });
    error
}
