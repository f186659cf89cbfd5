//! The three-valued outcome every check in nodedown ends in (pure, imported by the checker, the
//! verdicts and the reports alike; it imports nothing).

use serde::{Deserialize, Serialize};

/// Three-valued, as in Jepsen: unknown when the evidence is insufficient.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Pass,
    Fail,
    Unknown,
}

impl Verdict {
    /// `pass`, `fail`, `unknown`: the word every report uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unknown => "unknown",
        }
    }
}
