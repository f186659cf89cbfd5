//! The command line (clap derive): one file per subcommand. Exit codes are a contract:
//! 0 every expectation met; 1 an expectation failed; 2 bad input or usage; 3 the harness could
//! not run (cluster, Docker, API unreachable, or a run it could not complete); 130 interrupted
//! (after healing).

mod cleanup;
mod report;
mod run;
mod validate;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

pub const EXIT_OK: u8 = 0;
pub const EXIT_EXPECTATION_FAILED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;
pub const EXIT_HARNESS: u8 = 3;
pub const EXIT_INTERRUPTED: u8 = 130;

#[derive(Debug, Parser)]
#[command(
    name = "nodedown",
    version,
    about = "Kill nodes under stateful workloads and measure failover, with evidence",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// No progress output on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run experiments (files or directories of *.yaml) and write reports.
    Run(run::RunArgs),
    /// Parse and check experiment files; no cluster needed.
    Validate(validate::ValidateArgs),
    /// Heal everything a crashed or killed run left behind, from its journal.
    Cleanup(cleanup::CleanupArgs),
    /// Re-render the reports of a run directory.
    Report(report::ReportArgs),
    /// The built-in integrity workload (runs inside the workload container): appends
    /// checksummed, numbered, fsynced records to DIR/ledger.bin and serves its status on PORT.
    #[command(hide = true)]
    Ledger {
        #[arg(long, default_value = "/data")]
        dir: PathBuf,
        #[arg(long, default_value_t = crate::workload::LEDGER_PORT)]
        port: u16,
        #[arg(long, default_value = "50ms", value_parser = humantime::parse_duration)]
        interval: std::time::Duration,
    },
    /// The built-in simple writer workload (runs inside the workload container).
    #[command(hide = true)]
    Writer {
        #[arg(long, default_value = "/data")]
        dir: PathBuf,
        #[arg(long, default_value = "200ms", value_parser = humantime::parse_duration)]
        interval: std::time::Duration,
    },
}

/// Runs the parsed command; returns the process exit code.
pub async fn dispatch(cli: Cli) -> u8 {
    match cli.command {
        Command::Run(args) => run::run(args, cli.quiet).await,
        Command::Validate(args) => validate::validate(args),
        Command::Cleanup(args) => cleanup::cleanup(args, cli.quiet).await,
        Command::Report(args) => report::report(args),
        Command::Ledger {
            dir,
            port,
            interval,
        } => {
            let mut opts = crate::workload::ledger::LedgerOptions::from_env(dir, port);
            opts.interval = interval;
            match crate::workload::ledger::run(opts) {
                Ok(()) => EXIT_OK,
                Err(e) => {
                    eprintln!("ledger: {e}");
                    EXIT_HARNESS
                }
            }
        }
        Command::Writer { dir, interval } => {
            let identity = format!(
                "{}/{}@{}",
                std::env::var("POD_NAME").unwrap_or_default(),
                std::env::var("POD_UID").unwrap_or_default(),
                std::env::var("NODE_NAME").unwrap_or_default()
            );
            match crate::workload::writer::run(&dir, interval, &identity) {
                Ok(()) => EXIT_OK,
                Err(e) => {
                    eprintln!("writer: {e}");
                    EXIT_HARNESS
                }
            }
        }
    }
}

/// Prints an error the way every subcommand does.
pub fn error(message: impl std::fmt::Display) {
    eprintln!("error: {message}");
}
