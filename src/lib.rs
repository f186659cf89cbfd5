//! nodedown: kill nodes under stateful workloads on real Kubernetes clusters and measure, with
//! evidence, how long recovery takes.
//!
//! Pure core (no clock, no I/O beyond reading the files given): `spec`, `plan`, `timeline`,
//! `verdict`, `report`. Effectful edge: `cluster`, `faults`, `remediation`, `observe`,
//! `workload`. `runner` is the only module that sees both sides; `cli` sits on top.
pub mod integrity;
pub mod jsonl;
pub mod outcome;
pub mod plan;
pub mod report;
pub mod spec;
pub mod timeline;
pub mod units;
pub mod verdict;
pub mod vocab;

pub mod cli;
pub mod cluster;
pub mod faults;
pub mod journal;
pub mod observe;
pub mod remediation;
pub mod runner;
pub mod store;
pub mod workload;
