//! What happened in a run, beside whether it was what the experiment expected (the verdict).
//!
//! A green `pass` says only that every expectation was met; an experiment may expect a split
//! brain or no recovery at all. The outcome says what the run did — recovered or not and when,
//! the data intact or not, the writes' outage — and each part that an expectation covered says
//! whether it was expected. Defined once here, from the result model alone; results.json
//! carries it and every renderer writes its `summary` (or its parts).

use super::{ExpectationResult, IntegrityResult, RunResult, Verdict};
use crate::timeline::{Metric, Phase};
use crate::units::fmt_ms;
use serde::{Deserialize, Serialize};

/// Whether the workload came back.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Recovery {
    /// A replacement (every affected member's) was Ready within the failover window.
    Recovered,
    /// Some of a fleet's or a StatefulSet's affected members were Ready again, not all.
    PartlyRecovered,
    /// No replacement was Ready before the window closed (recovery timeout or fault healed).
    NotRecovered,
    /// The run ended before its fault took effect: nothing to recover from.
    NotFaulted,
}

/// What became of the ledger's data (ledger workloads only). A run's data state is a list: the
/// harms are never merged (a split brain that also lost acknowledged writes is both).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Data {
    /// Every acknowledged write present, one writer at a time, nothing corrupt.
    Intact,
    /// Two writers wrote at once.
    SplitBrain,
    /// Acknowledged writes missing.
    LostWrites,
    /// Records that do not check.
    Corrupt,
    /// The checker failed the ledger for another reason (see the integrity summary).
    Failed,
    /// The checker could not decide.
    Undecided,
}

impl Recovery {
    /// The word every count of outcomes uses.
    pub fn word(self) -> &'static str {
        match self {
            Recovery::Recovered => "recovered",
            Recovery::PartlyRecovered => "partly recovered",
            Recovery::NotRecovered => "not recovered",
            Recovery::NotFaulted => "fault not applied",
        }
    }
}

impl Data {
    /// Worst first: the order counts of outcomes and a run's harms are written in (acknowledged
    /// writes gone is what a user loses; a split brain is how).
    pub const WORST_FIRST: [Data; 6] = [
        Data::LostWrites,
        Data::SplitBrain,
        Data::Corrupt,
        Data::Failed,
        Data::Undecided,
        Data::Intact,
    ];

    /// The word every count of outcomes uses.
    pub fn word(self) -> &'static str {
        match self {
            Data::Intact => "nothing lost",
            Data::SplitBrain => "split brain",
            Data::LostWrites => "lost writes",
            Data::Corrupt => "corrupt",
            Data::Failed => "integrity failed",
            Data::Undecided => "integrity undecided",
        }
    }
}

/// A run's outcome: facts, each from the result, and one line for people.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub recovery: Recovery,
    /// Recovered: from the fault to Ready (a fleet's: to every affected member Ready). Not
    /// recovered: how long it was watched without (the failover window). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<u64>,
    /// Of several members (a fleet, a StatefulSet's replicas): how many the fault took, and how
    /// many of those were Ready again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members_affected: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members_recovered: Option<usize>,
    /// Every harm the checker found, worst first (`lost-writes`, `split-brain`, `corrupt`), or
    /// the one state without harm (`intact`, `failed`, `undecided`). Empty (absent) without
    /// ledger evidence. Results of schema version 3 held one word here: read as a list of it.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "one_or_many"
    )]
    pub data: Vec<Data>,
    /// One line, failed parts first: `recovered in 25.7s (expected ≤ 20s) · write outage 26.7s
    /// (expected ≤ 15s) · nothing lost of 108 acknowledged writes (as expected)`.
    pub summary: String,
}

/// How a part of the outcome stands to what the experiment expected: failed parts are written
/// first, then undecided ones, then the rest in the order of the failover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Standing {
    Failed,
    Undecided,
    Settled,
}

/// What an expectation asked for, as a person reads it: `≤ 20s`, `recovered`, `intact`.
pub(crate) fn expected_text(e: &ExpectationResult) -> String {
    match (e.name.as_str(), e.expected.as_str()) {
        ("recovered", "true") => "recovered".into(),
        ("recovered", "false") => "not recovered".into(),
        ("integrity", "pass") => "intact".into(),
        ("integrity", "fail") => "not intact".into(),
        ("integrity", "unknown") => "undecided".into(),
        ("phases.seen", p) => format!("{p} seen"),
        ("phases.notSeen", p) => format!("{p} not seen"),
        ("undisturbed", "true") => "undisturbed".into(),
        (_, x) => match x.strip_prefix("<= ") {
            Some(max) => format!("≤ {max}"),
            None => x.to_string(),
        },
    }
}

/// The outcome's parts of a run, each with the expectations it covers; expectations no part
/// names become parts of their own, so every expectation's result is in the line.
pub(crate) struct Parts<'a> {
    run: &'a RunResult,
    covered: Vec<&'a str>,
    parts: Vec<(Standing, String)>,
}

impl<'a> Parts<'a> {
    pub(crate) fn new(run: &'a RunResult) -> Parts<'a> {
        Parts {
            run,
            covered: Vec::new(),
            parts: Vec::new(),
        }
    }

    /// A part saying `text`, judged by the expectations named `covers`: ` (as expected)`, `
    /// (expected ≤ 20s)` for each that failed, ` (undecided; expected …)`, or nothing when no
    /// expectation covered it.
    pub(crate) fn add(&mut self, text: String, covers: &[&'a str]) {
        self.covered.extend_from_slice(covers);
        let run = self.run;
        let of: Vec<&ExpectationResult> = run
            .expectations
            .iter()
            .filter(|e| covers.contains(&e.name.as_str()))
            .collect();
        let wanted = |v: Verdict| -> Vec<String> {
            of.iter()
                .filter(|e| e.verdict == v)
                .map(|e| expected_text(e))
                .collect()
        };
        let (failed, undecided) = (wanted(Verdict::Fail), wanted(Verdict::Unknown));
        let (standing, note) = if !failed.is_empty() {
            (
                Standing::Failed,
                format!(" (expected {})", failed.join(", ")),
            )
        } else if !undecided.is_empty() {
            (
                Standing::Undecided,
                format!(" (undecided; expected {})", undecided.join(", ")),
            )
        } else if !of.is_empty() {
            (Standing::Settled, " (as expected)".to_string())
        } else {
            (Standing::Settled, String::new())
        };
        self.parts.push((standing, format!("{text}{note}")));
    }

    /// The line: every expectation no part covered as a part of its own (`time-to-running
    /// 24.0s (as expected)`), then failed parts first.
    pub(crate) fn line(mut self) -> String {
        let run = self.run;
        for e in &run.expectations {
            if self.covered.contains(&e.name.as_str()) {
                continue;
            }
            let text = match e.name.as_str() {
                "phases.seen" | "phases.notSeen" => format!("{} {}", e.expected, e.actual),
                _ => format!("{} {}", super::text::measure(&e.name), e.actual),
            };
            self.parts.push(part_of(text, e));
        }
        // A stable sort: within a standing, the failover's order.
        self.parts.sort_by_key(|(s, _)| *s);
        self.parts
            .into_iter()
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

/// One expectation's own part.
fn part_of(text: String, e: &ExpectationResult) -> (Standing, String) {
    match e.verdict {
        Verdict::Fail => (
            Standing::Failed,
            format!("{text} (expected {})", expected_text(e)),
        ),
        Verdict::Unknown => (
            Standing::Undecided,
            format!("{text} (undecided; expected {})", expected_text(e)),
        ),
        Verdict::Pass => (Standing::Settled, format!("{text} (as expected)")),
    }
}

/// The harms (or the one harmless state) in a checker's findings, worst first.
pub fn harms(i: &IntegrityResult) -> Vec<Data> {
    let mut d = Vec::new();
    if i.lost_acknowledged > 0 {
        d.push(Data::LostWrites);
    }
    if i.split_brain {
        d.push(Data::SplitBrain);
    }
    if i.corrupt > 0 {
        d.push(Data::Corrupt);
    }
    if d.is_empty() {
        d.push(match i.verdict {
            Verdict::Pass => Data::Intact,
            Verdict::Fail => Data::Failed,
            Verdict::Unknown => Data::Undecided,
        });
    }
    d
}

/// `data` as schema version 3 wrote it (one word) or as now (a list).
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Data>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(Data),
        Many(Vec<Data>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(x) => vec![x],
        OneOrMany::Many(v) => v,
    })
}

/// The end of a run's failover window, ms from the fault: the recovery timeout, else the heal.
fn watched_ms(run: &RunResult) -> Option<u64> {
    let at = |p: Phase| run.phases.iter().find(|x| x.name == p).map(|x| x.at_ms);
    at(Phase::RecoveryTimeout).or_else(|| at(Phase::FaultHealed))
}

/// The outcome of `run`.
pub fn of(run: &RunResult) -> Outcome {
    let faulted = run.phases.iter().any(|p| p.name == Phase::FaultInjected);
    let ready = run.metrics.get(&Metric::TimeToReady).copied();
    let recovered_phase = run.phases.iter().any(|p| p.name == Phase::ReplacementReady);
    let (members_affected, members_recovered) = match &run.fleet {
        Some(f) => {
            let affected = f.instances - f.unaffected.len();
            (Some(affected), Some(f.recovered.min(affected)))
        }
        None => (None, None),
    };
    let recovery = if !faulted {
        Recovery::NotFaulted
    } else {
        match (members_affected, members_recovered) {
            (Some(a), Some(r)) if r == a && a > 0 => Recovery::Recovered,
            (Some(_), Some(r)) if r > 0 => Recovery::PartlyRecovered,
            (Some(_), Some(_)) => Recovery::NotRecovered,
            _ if recovered_phase => Recovery::Recovered,
            _ => Recovery::NotRecovered,
        }
    };
    let after_ms = match recovery {
        Recovery::Recovered => run
            .fleet
            .as_ref()
            .and_then(|f| f.time_to_all_ready_ms)
            .or(ready),
        Recovery::PartlyRecovered | Recovery::NotRecovered => watched_ms(run),
        Recovery::NotFaulted => None,
    };
    let data = run.integrity.as_ref().map(harms).unwrap_or_default();
    let mut parts = Parts::new(run);
    // Who: "the affected member (1 of 3)", "7 of 10", "none of 10", or nothing for one.
    let who = match (members_affected, members_recovered, &run.fleet) {
        (Some(1), Some(_), Some(f)) if !f.unaffected.is_empty() => {
            format!("the affected member (1 of {}) ", f.instances)
        }
        (Some(a), Some(r), Some(f)) if !f.unaffected.is_empty() => {
            let r = if r == 0 {
                "none".to_string()
            } else {
                r.to_string()
            };
            format!("{r} of the {a} affected members (of {}) ", f.instances)
        }
        (Some(a), Some(0), Some(_)) => format!("none of {a} "),
        (Some(a), Some(r), Some(_)) => format!("{r} of {a} "),
        _ => String::new(),
    };
    let one = who.is_empty() || who.starts_with("the ");
    let within = |ms: Option<u64>| {
        ms.map(|ms| format!(" within {}", fmt_ms(ms)))
            .unwrap_or_default()
    };
    let recovery_text = match recovery {
        Recovery::Recovered => match after_ms {
            Some(ms) => format!("{who}recovered in {}", fmt_ms(ms)),
            None => format!("{who}recovered"),
        },
        Recovery::NotRecovered if one && after_ms.is_none() => {
            format!("{who}not recovered while watched (the watch was cut short)")
        }
        Recovery::NotRecovered if one => format!("{who}not recovered{}", within(after_ms)),
        Recovery::PartlyRecovered | Recovery::NotRecovered => {
            format!("{who}recovered{}", within(after_ms))
        }
        Recovery::NotFaulted => "fault not applied".into(),
    };
    parts.add(recovery_text, &["recovered", "timeToReady"]);
    if let Some(i) = &run.integrity {
        let text: Vec<String> = data
            .iter()
            .map(|d| match d {
                Data::Intact => format!("nothing lost of {} acknowledged writes", i.acknowledged),
                Data::LostWrites => format!(
                    "{} of {} acknowledged writes lost",
                    i.lost_acknowledged, i.acknowledged
                ),
                Data::SplitBrain => format!("split brain: {} writers", i.writers),
                Data::Corrupt => format!("{} corrupt records", i.corrupt),
                Data::Failed => "integrity failed".into(),
                Data::Undecided => "integrity undecided".into(),
            })
            .collect();
        parts.add(text.join(" + "), &["integrity"]);
        // A storage fence's own verdict, and what its lifting let through.
        if let Some(f) = &i.fence {
            let mut fence = match f.verdict {
                crate::outcome::Verdict::Pass => "fence held".to_string(),
                crate::outcome::Verdict::Fail => format!(
                    "fence breached: {} records of {} written while fenced",
                    f.through_fence, f.node
                ),
                crate::outcome::Verdict::Unknown => "fence undecided".to_string(),
            };
            if f.after_unfence > 0 {
                fence.push_str(&format!(
                    ", then {} written after it was lifted",
                    f.after_unfence
                ));
            }
            parts.add(fence, &["fenceEfficacy"]);
        }
    }
    if let Some(o) = &run.write_outage {
        parts.add(
            format!("write outage {}", super::text::outage_text(o)),
            &["writeOutage"],
        );
    }
    Outcome {
        recovery,
        after_ms,
        members_affected,
        members_recovered,
        data,
        summary: parts.line(),
    }
}

/// The outcomes of several runs (a variant's repetitions, an invocation) counted: `recovered
/// 4/5 · nothing lost 5/5`; one run's own summary when there is one.
pub fn over(runs: &[&RunResult]) -> String {
    if let [one] = runs {
        return of(one).summary;
    }
    let n = runs.len();
    let outcomes: Vec<Outcome> = runs.iter().map(|r| of(r)).collect();
    let mut parts = Vec::new();
    for state in [
        Recovery::Recovered,
        Recovery::PartlyRecovered,
        Recovery::NotRecovered,
        Recovery::NotFaulted,
    ] {
        let k = outcomes.iter().filter(|o| o.recovery == state).count();
        if k > 0 {
            parts.push(format!("{} {k}/{n}", state.word()));
        }
    }
    for state in Data::WORST_FIRST {
        let k = outcomes.iter().filter(|o| o.data.contains(&state)).count();
        if k > 0 {
            parts.push(format!("{} {k}/{n}", state.word()));
        }
    }
    parts.join(" · ")
}

/// The invocation's banner: how many runs recovered, and what became of the data where it was
/// checked — `9 recovered, 4 not recovered · data: 1 split brain, 12 nothing lost`.
pub fn banner(runs: &[&RunResult]) -> String {
    let outcomes: Vec<Outcome> = runs.iter().map(|r| of(r)).collect();
    let count = |s: Recovery| outcomes.iter().filter(|o| o.recovery == s).count();
    let mut rec = vec![format!("{} recovered", count(Recovery::Recovered))];
    for state in [
        Recovery::PartlyRecovered,
        Recovery::NotRecovered,
        Recovery::NotFaulted,
    ] {
        if count(state) > 0 {
            rec.push(format!("{} {}", count(state), state.word()));
        }
    }
    let mut data = Vec::new();
    for state in Data::WORST_FIRST {
        let k = outcomes.iter().filter(|o| o.data.contains(&state)).count();
        if k > 0 {
            data.push(format!("{k} {}", state.word()));
        }
    }
    let mut s = rec.join(", ");
    if !data.is_empty() {
        s.push_str(&format!(" · data: {}", data.join(", ")));
    }
    s
}

/// The outcome in the terminal table's cells: recovery (`27.7s`, `never (1m30s)`, `7/10 by
/// 1m15s`), data (`intact`, `split brain`, `3 lost`, `39 lost + split brain`, `—`).
pub fn cells(run: &RunResult) -> (String, String) {
    let o = of(run);
    let members = match (o.members_affected, o.members_recovered) {
        (Some(a), Some(r)) if a > 1 => Some((a, r)),
        _ => None,
    };
    let t = |ms: Option<u64>| ms.map(fmt_ms).unwrap_or_else(|| "?".into());
    let recovery = match (o.recovery, members) {
        (Recovery::NotFaulted, _) => "no fault".to_string(),
        (Recovery::Recovered, Some((a, r))) => format!("{r}/{a} in {}", t(o.after_ms)),
        (Recovery::Recovered, None) => t(o.after_ms),
        (_, Some((a, r))) if o.after_ms.is_some() => format!("{r}/{a} by {}", t(o.after_ms)),
        (_, Some((a, r))) => format!("{r}/{a}, watch cut short"),
        (_, None) if o.after_ms.is_some() => format!("never ({})", t(o.after_ms)),
        (_, None) => "? (cut short)".into(),
    };
    let data = match &run.integrity {
        Some(i) if !o.data.is_empty() => o
            .data
            .iter()
            .map(|d| match d {
                Data::Intact => "intact".to_string(),
                Data::SplitBrain => "split brain".to_string(),
                Data::LostWrites => format!("{} lost", i.lost_acknowledged),
                Data::Corrupt => format!("{} corrupt", i.corrupt),
                Data::Failed => "failed".into(),
                Data::Undecided => "undecided".into(),
            })
            .collect::<Vec<_>>()
            .join(" + "),
        _ => "—".into(),
    };
    (recovery, data)
}

/// For a run that passed: what it did that a reader would not assume from a green `pass` — no
/// recovery, data not intact — and whether an expectation asked for it: `as expected: split
/// brain`, `unchecked: split brain (no integrity expectation)`. `None` when there is nothing
/// to say.
pub fn pass_note(run: &RunResult) -> Option<String> {
    let o = of(run);
    let expected = |name: &str| {
        run.expectations
            .iter()
            .any(|e| e.name == name && e.verdict == Verdict::Pass)
    };
    let mut as_expected = Vec::new();
    let mut unchecked = Vec::new();
    match o.recovery {
        Recovery::Recovered | Recovery::NotFaulted => {}
        Recovery::PartlyRecovered | Recovery::NotRecovered => {
            let what = if o.recovery == Recovery::NotRecovered {
                "not recovered"
            } else {
                "partly recovered"
            };
            if expected("recovered") {
                as_expected.push(what.to_string());
            } else {
                unchecked.push(format!("{what} (no recovered expectation)"));
            }
        }
    }
    for d in &o.data {
        let word = match d {
            Data::SplitBrain => "split brain",
            Data::LostWrites => "lost writes",
            Data::Corrupt => "corrupt records",
            Data::Failed => "integrity failed",
            Data::Intact | Data::Undecided => continue,
        };
        if expected("integrity") {
            as_expected.push(word.to_string());
        } else {
            unchecked.push(format!("{word} (no integrity expectation)"));
        }
    }
    let mut parts = Vec::new();
    if !as_expected.is_empty() {
        parts.push(format!("as expected: {}", as_expected.join(", ")));
    }
    if !unchecked.is_empty() {
        parts.push(format!("unchecked: {}", unchecked.join(", ")));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}
