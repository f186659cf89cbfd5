//! nodedown's binary: parse, init tracing, run, map the outcome to an exit code.
use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = match nodedown::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return std::process::ExitCode::from(if e.use_stderr() {
                nodedown::cli::EXIT_BAD_INPUT
            } else {
                0
            });
        }
    };
    if matches!(
        cli.command,
        nodedown::cli::Command::Report(_)
            | nodedown::cli::Command::Validate(_)
            | nodedown::cli::Command::Compare(_)
            | nodedown::cli::Command::Schema(_)
            | nodedown::cli::Command::History(_)
    ) {
        // These only read files and print: a reader that went away (`| head -1`) ends them
        // quietly, as it ends kubectl or grep, instead of a panic on the failed print. Commands
        // that touch a cluster keep Rust's default (SIGPIPE ignored, EPIPE an error), so a
        // closed socket can never kill a run before it heals.
        // SAFETY: setting a signal's disposition to the default before any thread is started.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            // kube-client logs every 5xx answer at ERROR; the pod proxy answers 503 while a
            // node is down, as it must. The harness records those failures as evidence
            // (probe-failing events) instead of showing them; RUST_LOG overrides this.
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,kube_client::client::builder=off".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    if matches!(
        cli.command,
        nodedown::cli::Command::Writer(_)
            | nodedown::cli::Command::Ledger(_)
            | nodedown::cli::Command::Agent { .. }
    ) {
        // The in-container workload needs no async runtime.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        return std::process::ExitCode::from(rt.block_on(nodedown::cli::dispatch(cli)));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    std::process::ExitCode::from(rt.block_on(nodedown::cli::dispatch(cli)))
}
