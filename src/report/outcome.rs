//! What happened in a run, beside whether it was what the experiment expected (the verdict).
//!
//! A green `pass` says only that every expectation was met; an experiment may expect a split
//! brain or no recovery at all. The outcome says what the run did — recovered or not and when,
//! the data intact or not, the writes' outage — and each part that an expectation covered says
//! whether it was expected. Defined once here, from the result model alone; results.json
//! carries it and every renderer writes its `summary` (or its parts).

use super::{RunResult, Verdict};
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

/// What became of the ledger's data (ledger workloads only).
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
    /// Worst first: the order counts of outcomes are written in.
    pub const WORST_FIRST: [Data; 6] = [
        Data::SplitBrain,
        Data::LostWrites,
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
    /// Absent without ledger evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Data>,
    /// One line: `recovered in 27.7s · split brain: 2 writers (as expected) · writes down
    /// 28.9s`.
    pub summary: String,
}

/// How a part of the outcome stands to the expectation named `name`: ` (as expected)`,
/// ` (expected: X)` or nothing when no expectation covered it (or it is undecided).
fn against(run: &RunResult, name: &str) -> String {
    match run.expectations.iter().find(|e| e.name == name) {
        Some(e) if e.verdict == Verdict::Pass => " (as expected)".into(),
        Some(e) if e.verdict == Verdict::Fail => format!(" (expected: {})", e.expected),
        _ => String::new(),
    }
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
    let data = run.integrity.as_ref().map(|i| {
        if i.split_brain {
            Data::SplitBrain
        } else if i.lost_acknowledged > 0 {
            Data::LostWrites
        } else if i.corrupt > 0 {
            Data::Corrupt
        } else {
            match i.verdict {
                Verdict::Pass => Data::Intact,
                Verdict::Fail => Data::Failed,
                Verdict::Unknown => Data::Undecided,
            }
        }
    });

    let mut parts: Vec<String> = Vec::new();
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
    parts.push(format!("{recovery_text}{}", against(run, "recovered")));
    if let (Some(d), Some(i)) = (data, &run.integrity) {
        let text = match d {
            Data::Intact => format!("nothing lost of {} acknowledged writes", i.acknowledged),
            // Split brain that also cost acknowledged writes says both.
            Data::SplitBrain if i.lost_acknowledged > 0 => format!(
                "split brain: {} writers, {} of {} acknowledged writes lost",
                i.writers, i.lost_acknowledged, i.acknowledged
            ),
            Data::SplitBrain => format!("split brain: {} writers", i.writers),
            Data::LostWrites => format!(
                "{} of {} acknowledged writes lost",
                i.lost_acknowledged, i.acknowledged
            ),
            Data::Corrupt => format!("{} corrupt records", i.corrupt),
            Data::Failed => "integrity failed".into(),
            Data::Undecided => "integrity undecided".into(),
        };
        parts.push(format!("{text}{}", against(run, "integrity")));
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
            parts.push(fence);
        }
    }
    if let Some(o) = &run.write_outage {
        parts.push(format!("writes down {}", super::text::outage_text(o)));
    }
    Outcome {
        recovery,
        after_ms,
        members_affected,
        members_recovered,
        data,
        summary: parts.join(" · "),
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
        let k = outcomes.iter().filter(|o| o.data == Some(state)).count();
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
        let k = outcomes.iter().filter(|o| o.data == Some(state)).count();
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
/// 1m15s`), data (`intact`, `split brain`, `3 lost`, `—`).
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
        (_, None) => "not seen, watch cut short".into(),
    };
    let data = match (o.data, &run.integrity) {
        (Some(Data::Intact), _) => "intact".to_string(),
        (Some(Data::SplitBrain), Some(i)) => format!("split brain ({} writers)", i.writers),
        (Some(Data::LostWrites), Some(i)) => format!("{} lost", i.lost_acknowledged),
        (Some(Data::Corrupt), Some(i)) => format!("{} corrupt", i.corrupt),
        (Some(Data::Failed), _) => "failed".into(),
        (Some(Data::Undecided), _) => "undecided".into(),
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
    let data_word = match o.data {
        Some(Data::SplitBrain) => Some("split brain"),
        Some(Data::LostWrites) => Some("lost writes"),
        Some(Data::Corrupt) => Some("corrupt records"),
        Some(Data::Failed) => Some("integrity failed"),
        _ => None,
    };
    if let Some(word) = data_word {
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
