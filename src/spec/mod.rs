//! The experiment format (pure): types in `model`, loading in `load`, over the located YAML tree
//! of `yaml`, and the rules beyond the types in `check`.
mod check;
mod load;
mod model;
mod yaml;
pub use load::*;
pub use model::*;
