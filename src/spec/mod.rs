//! The experiment format (pure): types in `model`, loading and validation in `load`.
mod model;
pub use model::*;
