//! The experiment format (pure): types in `model`, loading in `load`, over the located YAML tree
//! of `yaml`, and the rules beyond the types in `check`.
mod check;
mod load;
mod model;
pub mod simulated;
mod testdriver;
mod yaml;
pub use check::{refused_on_k3d, K3D_REFUSAL, K3D_REFUSAL_FIX};
pub use load::*;
pub use model::*;
pub use testdriver::{
    load_testdriver, parse_testdriver, ClassSource, TestDriver, Warning, CAPABILITIES,
};
