//! The command line (clap derive): one file per subcommand. Exit codes are a contract, defined
//! and tested in [`exit`].

mod bundle;
mod cleanup;
mod compare;
pub mod exit;
mod history;
mod image;
mod push;
mod qualify;
mod report;
pub mod run;
pub mod schema;
mod validate;

pub use exit::{
    exit_code, FailOn, EXIT_BAD_INPUT, EXIT_EXPECTATION_FAILED, EXIT_HARNESS, EXIT_INTERRUPTED,
    EXIT_OK,
};

use clap::{Parser, Subcommand};
use std::path::PathBuf;

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
    Run(Box<run::RunArgs>),
    /// Parse and check experiment files; no cluster needed.
    Validate(validate::ValidateArgs),
    /// Heal everything a crashed or killed run left behind, from its journal.
    Cleanup(cleanup::CleanupArgs),
    /// Re-render the reports of a run directory.
    Report(report::ReportArgs),
    /// Qualify a storage class for node failure: generate the matrix from a testdriver file
    /// (or a class name), run it, and write the qualification sheet.
    Qualify(Box<qualify::QualifyArgs>),
    /// The qualification as a conformance-style bundle: `qualify` run as a Job inside the
    /// cluster, its sheet and JUnit fetched back.
    Bundle(bundle::BundleArgs),
    /// Compare a candidate's results with a baseline's; exit 1 when a variant got worse.
    Compare(compare::CompareArgs),
    /// Each variant's verdicts and times across invocations, the latest first.
    History(history::HistoryArgs),
    /// The workload image, for clusters nodedown cannot load it into itself.
    Image(image::ImageArgs),
    /// Print the JSON Schema of experiment files or of results.json.
    Schema(schema::SchemaArgs),
    /// The built-in integrity workload (runs inside the workload container): appends
    /// checksummed, numbered, fsynced records to DIR/ledger.bin and serves its status on PORT.
    #[command(hide = true)]
    Ledger(WorkloadArgs),
    /// The built-in simple writer workload (runs inside the workload container).
    #[command(hide = true)]
    Writer(WorkloadArgs),
    /// Holds a pod's volume and does nothing else until killed (runs in the filler pods of
    /// `workload.fillAttachLimit`).
    #[command(hide = true)]
    Hold,
    /// The node agent (runs in a privileged pod on the target node; see README).
    #[command(hide = true)]
    Agent {
        #[arg(long, default_value_t = crate::faults::agent::AGENT_PORT)]
        port: u16,
        /// Act even inside a container-based node (a throwaway test cluster).
        #[arg(long)]
        test_node: bool,
    },
}

/// What the in-container workloads are told: flags, or the Downward API's environment.
#[derive(Debug, clap::Args)]
pub struct WorkloadArgs {
    #[arg(long, default_value = "/data")]
    pub dir: PathBuf,
    /// Write the ledger to this raw block device (a `volumeMode: Block` volume) instead of
    /// DIR/ledger.bin. Ledger only.
    #[arg(long)]
    pub device: Option<PathBuf>,
    #[arg(long, default_value_t = crate::workload::LEDGER_PORT)]
    pub port: u16,
    /// Time between records (default: 50ms for the ledger, 200ms for the writer).
    #[arg(long, value_parser = crate::spec::duration::parse)]
    pub interval: Option<std::time::Duration>,
    #[arg(long, env = "POD_NAME", default_value = "")]
    pub pod_name: String,
    #[arg(long, env = "POD_UID", default_value = "")]
    pub pod_uid: String,
    #[arg(long, env = "NODE_NAME", default_value = "")]
    pub node_name: String,
    #[arg(long, env = "HOSTNAME", default_value = "local", hide = true)]
    pub hostname: String,
}

/// Runs the parsed command; returns the process exit code.
pub async fn dispatch(cli: Cli) -> u8 {
    match cli.command {
        Command::Run(args) => run::run(*args, cli.quiet).await,
        Command::Qualify(args) => qualify::qualify(*args, cli.quiet).await,
        Command::Validate(args) => validate::validate(args),
        Command::Cleanup(args) => cleanup::cleanup(args, cli.quiet).await,
        Command::Report(args) => report::report(args),
        Command::Image(args) => image::image(args),
        Command::Compare(args) => compare::compare(args),
        Command::History(args) => history::history(args),
        Command::Bundle(args) => bundle::bundle(args, cli.quiet).await,
        Command::Schema(args) => schema::print(args),
        Command::Ledger(args) => {
            let or = |v: &str, d: String| if v.is_empty() { d } else { v.to_string() };
            let mut opts = crate::workload::ledger::LedgerOptions::new(
                args.dir,
                args.port,
                or(&args.pod_uid, format!("local-{}", std::process::id())),
                or(&args.pod_name, args.hostname.clone()),
                or(&args.node_name, args.hostname.clone()),
            );
            if let Some(interval) = args.interval {
                opts.interval = interval;
            }
            opts.device = args.device;
            match crate::workload::ledger::run(opts) {
                Ok(()) => EXIT_OK,
                Err(e) => {
                    eprintln!("ledger: {e}");
                    EXIT_HARNESS
                }
            }
        }
        Command::Agent { port, test_node } => {
            match crate::faults::agent::node::run(port, test_node) {
                Ok(()) => EXIT_OK,
                Err(e) => {
                    eprintln!("agent: {e}");
                    EXIT_HARNESS
                }
            }
        }
        Command::Hold => loop {
            // PID 1 of its container: SIGTERM is ignored, the pod's short grace period ends it.
            std::thread::sleep(std::time::Duration::from_secs(3600));
        },
        Command::Writer(args) => {
            if args.device.is_some() {
                eprintln!("writer: --device is the ledger's (the writer writes lines to a file in --dir); run `nodedown ledger --device PATH`");
                return EXIT_BAD_INPUT;
            }
            let identity = format!("{}/{}@{}", args.pod_name, args.pod_uid, args.node_name);
            let interval = args
                .interval
                .unwrap_or(std::time::Duration::from_millis(200));
            match crate::workload::writer::run(&args.dir, interval, &identity) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workload_identity_from_flags_with_defaults() {
        let cli = Cli::try_parse_from([
            "nodedown",
            "ledger",
            "--pod-uid",
            "3f2a",
            "--pod-name",
            "ledger-0",
            "--node-name",
            "worker2",
            "--interval",
            "20ms",
        ])
        .unwrap();
        let Command::Ledger(a) = cli.command else {
            panic!("not the ledger")
        };
        assert_eq!(
            (
                a.pod_uid.as_str(),
                a.pod_name.as_str(),
                a.node_name.as_str()
            ),
            ("3f2a", "ledger-0", "worker2")
        );
        assert_eq!(a.interval, Some(std::time::Duration::from_millis(20)));
        assert_eq!(a.port, crate::workload::LEDGER_PORT);
        assert_eq!(a.dir, PathBuf::from("/data"));
    }

    #[test]
    fn only_takes_repeated_and_comma_separated_names() {
        let cli = Cli::try_parse_from(["nodedown", "run", "--only", "a,b", "--only", "c"]).unwrap();
        let Command::Run(a) = cli.command else {
            panic!("not run")
        };
        assert_eq!(a.only, ["a", "b", "c"]);
    }

    #[test]
    fn fail_on_defaults_to_unknown() {
        let cli = Cli::try_parse_from(["nodedown", "run", "x.yaml"]).unwrap();
        let Command::Run(a) = cli.command else {
            panic!("not run")
        };
        assert_eq!(a.fail_on, FailOn::Unknown);
        let cli = Cli::try_parse_from(["nodedown", "run", "--fail-on", "fail"]).unwrap();
        let Command::Run(a) = cli.command else {
            panic!("not run")
        };
        assert_eq!(a.fail_on, FailOn::Fail);
    }
}
