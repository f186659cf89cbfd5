//! The experiment format (pure): types in `model`, loading and validation in `load`.
mod load;
mod model;
pub use load::*;
pub use model::*;
