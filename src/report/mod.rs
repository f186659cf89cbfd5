//! Reports (pure): the result model and its renderers.
pub mod model;
pub use model::*;
