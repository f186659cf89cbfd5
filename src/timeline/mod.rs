//! Timeline (pure): events of a run, and the phases and metrics computed from them.
mod event;
pub use event::*;
mod phases;
pub use phases::*;
mod fleet;
pub use fleet::*;
mod breakdown;
pub use breakdown::*;
pub mod scale;

/// Recorded events.jsonl fixtures and their parser, shared by the pure modules' tests.
#[cfg(test)]
pub(crate) use phases::tests as fixtures;
