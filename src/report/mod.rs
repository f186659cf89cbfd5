//! Reports (pure): the result model and its renderers.
pub mod model;
pub use model::*;
pub mod assemble;
pub mod compare;
#[cfg(test)]
mod fixtures;
pub mod grafana;
pub mod history;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod metrics;
pub mod outcome;
pub mod sheet;
pub mod simulated;
pub mod stats;
pub mod svg;
pub mod table;
mod text;
