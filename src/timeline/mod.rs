//! Timeline (pure): events of a run, and the phases and metrics computed from them.
mod event;
pub use event::*;
mod phases;
pub use phases::*;
