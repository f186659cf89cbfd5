use super::report::{build, render, Format};
use super::{error, FailOn, EXIT_BAD_INPUT, EXIT_HARNESS, EXIT_INTERRUPTED};
use crate::plan::PlanOptions;
use crate::report::{self, Report};
use crate::runner::{self, Progress, RunSettings};
use crate::runner::{ClusterOptions, Env};
use crate::store::{ORDER_FILE, SESSION_FILE};
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
pub enum NodeControlArg {
    /// kind node containers through the Docker API.
    Docker,
    /// The --power-off/--power-on/--power-state commands.
    PowerHooks,
    /// `nodedown agent` as a privileged pod on the target node (kubelet-stop,
    /// network-partition), through the API server.
    Agent,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
pub enum ProviderArg {
    /// A kind cluster nodedown creates or reuses.
    Kind,
    /// A k3d cluster (k3s in Docker) nodedown creates or reuses.
    K3d,
    /// An existing cluster through kubeconfig (--context, else the current context).
    Existing,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
pub enum LedgerVia {
    Auto,
    Api,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq)]
pub enum Output {
    /// The runs grouped by experiment, fit to the terminal's width (`COLUMNS`), then what
    /// failed and what to do next.
    Table,
    /// results.json's model (the file is written either way).
    Json,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
  nodedown run                                   the smoke experiment on a kind cluster it creates
  nodedown run experiments/node-shutdown.yaml --only out-of-service-taint --repeat 5
  nodedown run experiments/ --parallel auto      every experiment, in lanes
  nodedown run experiments/attach-detach.yaml --dry-run     the plan, nothing touched
  nodedown run --context lab --allow-context lab --power-off 'virsh destroy {node}' \\
      --power-on 'virsh start {node}' --power-state 'virsh domstate {node}' \\
      experiments/node-shutdown.yaml                 your own cluster, your power commands

Exit codes: 0 every run passed · 1 an expectation failed (or, with --fail-on unknown, a run
was undecided) · 2 bad input · 3 the harness could not · 130 interrupted (everything healed)")]
pub struct RunArgs {
    /// Experiment files or directories of *.yaml (default: experiments/smoke.yaml).
    pub paths: Vec<PathBuf>,
    /// Output directory (default: runs/<UTC timestamp>).
    #[arg(help_heading = "Output and exit code", long)]
    pub out: Option<PathBuf>,
    /// Where the experiments run, over their `cluster.provider`: kind, k3d or an existing
    /// cluster.
    #[arg(help_heading = "Cluster", long, value_enum, env = "NODEDOWN_PROVIDER")]
    pub provider: Option<ProviderArg>,
    /// kind or k3d cluster to create or reuse (default: the experiment's cluster.name, else
    /// nodedown).
    #[arg(help_heading = "Cluster", long)]
    pub cluster_name: Option<String>,
    /// kind config to create the cluster from (default: the experiment's cluster.config).
    #[arg(help_heading = "Cluster", long)]
    pub kind_config: Option<PathBuf>,
    /// k3d config to create a k3d cluster from (default: the experiment's cluster.config, else
    /// nodedown's fast profile for k3d, written to the output directory).
    #[arg(help_heading = "Cluster", long)]
    pub k3d_config: Option<PathBuf>,
    /// Keep a cluster this run created (by default it is deleted at the end).
    #[arg(help_heading = "Cluster", long)]
    pub retain: bool,
    /// Use an existing cluster through this kubeconfig context (no kind); `in-cluster`: the
    /// cluster this runs in, through its pod's service account (also the default in a pod
    /// without a kubeconfig).
    #[arg(help_heading = "Cluster", long)]
    pub context: Option<String>,
    /// The node nodedown itself runs on, when it runs in the cluster it faults: never faulted,
    /// in no lane, no workload pod placed there. Required in the cluster (deploy/job.yaml sets
    /// it from the downward API, spec.nodeName).
    #[arg(
        help_heading = "Cluster",
        long,
        env = "NODEDOWN_RUNNER_NODE",
        value_name = "NODE"
    )]
    pub runner_node: Option<String>,
    /// Run each variant this many times (overrides `repeat`).
    #[arg(help_heading = "What runs", long)]
    pub repeat: Option<u32>,
    /// Run only these variants (repeatable, or comma-separated: names hold no commas).
    #[arg(
        help_heading = "What runs",
        long = "only",
        value_name = "VARIANT",
        value_delimiter = ','
    )]
    pub only: Vec<String>,
    /// Node image for a cluster this run creates: kind's (default: the one testenv built last),
    /// or the k3s image for k3d (default: the k3d config's, else rancher/k3s:v1.34.8-k3s1).
    #[arg(help_heading = "Cluster", long, env = "NODEDOWN_NODE_IMAGE")]
    pub node_image: Option<String>,
    /// What to print on stdout at the end (`-o json` as on `report`; the files in the output
    /// directory are written either way).
    #[arg(
        help_heading = "Output and exit code",
        short = 'o',
        long,
        visible_alias = "format",
        value_enum,
        default_value_t = Output::Table
    )]
    pub output: Output,
    /// Which verdicts make the exit code non-zero: `unknown` (default) fails on a failed
    /// expectation and on a run nothing could be decided about; `fail` only on a failed one.
    #[arg(help_heading = "Output and exit code", long, value_enum, env = "NODEDOWN_FAIL_ON", default_value_t = FailOn::Unknown)]
    pub fail_on: FailOn,
    /// The host directory behind testenv's `nodedown-shared` storage class (read directly when
    /// present; otherwise the ledger is read through the API server).
    #[arg(help_heading = "Workload", long, env = "NODEDOWN_SHARED_DIR", default_value = crate::workload::DEFAULT_SHARED_DIR)]
    pub shared_dir: PathBuf,
    /// Confirms a destructive run on an existing cluster (one nodedown did not create): the
    /// kubeconfig context that may be faulted.
    #[arg(
        help_heading = "Cluster",
        long,
        env = "NODEDOWN_ALLOW_CONTEXT",
        value_name = "CONTEXT"
    )]
    pub allow_context: Option<String>,
    /// Print the plan and every action each run would take; touch nothing (no cluster needed).
    #[arg(help_heading = "What runs", long)]
    pub dry_run: bool,
    /// Run the variants this invocation can carry out and report the others as not run: those
    /// that need what no backend has, and those of experiments that name another cluster
    /// (without it, such a plan is refused with exit 2).
    #[arg(help_heading = "What runs", long)]
    pub skip_unsupported: bool,
    /// Run even on a degraded cluster (a node NotReady, an out-of-service taint already there,
    /// fewer than two schedulable workers).
    #[arg(help_heading = "Cluster", long)]
    pub force: bool,
    /// Allow the fault to hit a control-plane node (when the workload's pod runs on one).
    #[arg(help_heading = "Cluster", long)]
    pub allow_control_plane: bool,
    /// Power hook: the command that powers a node off hard (`{node}`, `{providerID}`,
    /// `{instanceId}` and `{address}` are filled in), e.g. `virsh destroy {node}`. Given with
    /// --power-on and --power-state, `node-shutdown` and fencing go through these commands.
    #[arg(help_heading = "Faults on your own cluster", long, env = "NODEDOWN_POWER_OFF", requires_all = ["power_on", "power_state"], value_name = "COMMAND")]
    pub power_off: Option<String>,
    /// Power hook: the command that powers a node on again.
    #[arg(help_heading = "Faults on your own cluster", long, env = "NODEDOWN_POWER_ON", requires_all = ["power_off", "power_state"], value_name = "COMMAND")]
    pub power_on: Option<String>,
    /// Power hook: a command that prints `on` or `off` for a node.
    #[arg(help_heading = "Faults on your own cluster", long, env = "NODEDOWN_POWER_STATE", requires_all = ["power_off", "power_on"], value_name = "COMMAND")]
    pub power_state: Option<String>,
    /// The workload image (overrides every experiment's `workload.image`): on a cluster
    /// nodedown does not load images into, the reference `nodedown image export` printed,
    /// pushed or loaded where the cluster finds it.
    #[arg(
        help_heading = "Workload",
        long,
        env = "NODEDOWN_WORKLOAD_IMAGE",
        value_name = "REFERENCE"
    )]
    pub workload_image: Option<String>,
    /// The nodes of this existing cluster are containers of a throwaway test cluster (e.g. a
    /// kind cluster reached by kubeconfig): the node agent may act inside them.
    #[arg(help_heading = "Cluster", long)]
    pub test_nodes: bool,
    /// The lease of a fault applied by the node agent: it undoes the fault by itself after
    /// this long, even when nodedown is gone (default: the recovery timeout plus one minute).
    #[arg(help_heading = "Faults on your own cluster", long, value_parser = crate::spec::duration::parse, value_name = "DURATION")]
    pub fault_lease: Option<std::time::Duration>,
    /// Apply faults only through this backend (default: the first that can — power hooks,
    /// Docker, the node agent). Fencing uses any backend that can power nodes off.
    #[arg(help_heading = "Faults on your own cluster", long, value_enum)]
    pub node_control: Option<NodeControlArg>,
    /// How the ledger comes back after failover: `auto` reads testenv's shared host directory
    /// when it is on this machine and goes through the API server otherwise; `api` always reads
    /// it from the serving pod through the API server's pod proxy.
    #[arg(help_heading = "Workload", long, value_enum, default_value_t = LedgerVia::Auto)]
    pub ledger_via: LedgerVia,
    /// How often each ledger's acknowledged writes are polled through the API server's pod
    /// proxy (one request per ledger per interval; the write outage is measured to this
    /// resolution), or `off`: no polling and no ledger evidence — integrity then unknown — for
    /// measuring what the polling costs the API server.
    #[arg(
        help_heading = "Workload",
        long,
        env = "NODEDOWN_ACK_INTERVAL",
        default_value = "200ms",
        value_name = "DURATION|off"
    )]
    pub ack_interval: crate::observe::AckInterval,
    /// A file the Markdown summary is appended to (GitHub Actions sets it).
    #[arg(
        help_heading = "Output and exit code",
        long,
        env = "GITHUB_STEP_SUMMARY",
        hide_env_values = true
    )]
    pub step_summary: Option<PathBuf>,
    /// Also write the results as Prometheus metrics (text format) to FILE, replaced
    /// atomically: point node-exporter's textfile collector at its directory (name it
    /// `*.prom`), or push it (`curl --data-binary @FILE <pushgateway>/metrics/job/nodedown`).
    #[arg(
        help_heading = "Output and exit code",
        long,
        env = "NODEDOWN_METRICS_FILE",
        value_name = "FILE"
    )]
    pub metrics_file: Option<PathBuf>,
    /// Also push the metrics to a Prometheus Pushgateway: its address (the group
    /// `/metrics/job/nodedown`) or a push URL naming the group (`…/metrics/job/<job>/<label>/
    /// <value>`). One PUT per invocation: the group then holds this invocation's results. A
    /// failed push is a failed report (exit 3).
    #[arg(
        help_heading = "Output and exit code",
        long,
        env = "NODEDOWN_PUSHGATEWAY",
        value_name = "URL"
    )]
    pub pushgateway: Option<String>,
    /// Also annotate the user's Grafana: per run a region from the fault to the recovery and
    /// a point at each key phase (its address; `POST /api/annotations`, the service account
    /// token from `NODEDOWN_GRAFANA_TOKEN`). A refused annotation is a failed report (exit 3).
    #[arg(
        help_heading = "Output and exit code",
        long,
        env = "NODEDOWN_GRAFANA_URL",
        value_name = "URL"
    )]
    pub grafana_url: Option<String>,
    /// The dashboard the annotations belong to (its UID); without it they are organization
    /// annotations, shown on any dashboard whose annotation query selects the tag `nodedown`.
    #[arg(
        help_heading = "Output and exit code",
        long,
        env = "NODEDOWN_GRAFANA_DASHBOARD",
        value_name = "UID",
        requires = "grafana_url"
    )]
    pub grafana_dashboard: Option<String>,
    /// Run side by side in this many lanes (disjoint sets of worker nodes, two per lane), or
    /// `auto`: as many as the schedulable workers make room for. Each run's workload is
    /// confined to its lane; a run that cannot share the cluster runs alone (--dry-run says
    /// which and why). 1: one run after the other, each with the whole cluster.
    #[arg(
        help_heading = "What runs",
        long,
        env = "NODEDOWN_PARALLEL",
        default_value = "1",
        value_name = "N|auto"
    )]
    pub parallel: crate::plan::lanes::Parallel,
    /// Confine everything this invocation does to these nodes (comma-separated): where the
    /// workloads, their replacements and fillers go, what is faulted, the lanes, the preflight
    /// ("every node Ready", "two schedulable workers") and what it waits for at its end. Only
    /// these nodes' locks are taken, so another invocation confined to other nodes of the same
    /// cluster runs at the same time (one that overlaps is refused, naming the node). Default:
    /// the whole cluster, every node's lock.
    #[arg(
        help_heading = "Cluster",
        long,
        env = "NODEDOWN_NODES",
        value_name = "NODE,…",
        value_delimiter = ','
    )]
    pub nodes: Vec<String>,
    #[command(flatten)]
    pub tools: ToolArgs,
}

/// Where testenv's builds are; shared by `run` and `cleanup`.
#[derive(Debug, Clone, Args)]
pub struct ToolArgs {
    /// testenv's cache directory (the node image name, the kind build).
    #[arg(
        help_heading = "Tools",
        long,
        env = "NODEDOWN_CACHE",
        default_value = "/var/cache/nodedown"
    )]
    pub cache_dir: PathBuf,
    /// The kind executable (default: kind on PATH, else testenv's build in the cache).
    #[arg(help_heading = "Tools", long = "kind", env = "NODEDOWN_KIND")]
    pub kind_bin: Option<PathBuf>,
    /// The k3d executable (default: k3d on PATH, else testenv/build-k3d.sh's build in the
    /// cache).
    #[arg(help_heading = "Tools", long = "k3d", env = "NODEDOWN_K3D")]
    pub k3d_bin: Option<PathBuf>,
}

/// Writes `text` to `file` through a temporary file beside it and a rename, so a reader (a
/// textfile collector scraping meanwhile) sees the old file or the new one, never half of one.
pub(super) fn write_replacing(file: &Path, text: &str) -> std::io::Result<()> {
    let name = file
        .file_name()
        .ok_or_else(|| std::io::Error::other("not a file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = file.with_file_name(tmp_name);
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, file).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Appends `md` to the job summary (GitHub's `GITHUB_STEP_SUMMARY`), when there is one.
fn append_step_summary(step_summary: Option<&Path>, md: &str) -> std::io::Result<()> {
    if let Some(summary) = step_summary {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(summary)?;
        f.write_all(md.as_bytes())?;
    }
    Ok(())
}

fn write_reports(out: &Path, report: &Report, step_summary: Option<&Path>) -> std::io::Result<()> {
    std::fs::write(out.join("results.json"), report::json::to_string(report))?;
    let simulated = report::simulated::runs(report);
    if !simulated.is_empty() {
        // The curve: the same files, its own views (a table row and a test case per run, the
        // charts against pods lost), each run's page in its directory.
        std::fs::write(
            out.join("junit.xml"),
            report::simulated::curve_junit(&simulated),
        )?;
        let md = report::simulated::curve_markdown(&simulated);
        std::fs::write(out.join("summary.md"), &md)?;
        std::fs::write(
            out.join("report.html"),
            report::simulated::curve_html(&simulated),
        )?;
        for r in &simulated {
            let run_dir = out.join(&r.id);
            if run_dir.is_dir() {
                std::fs::write(
                    run_dir.join("summary.md"),
                    report::simulated::run_markdown(r),
                )?;
            }
        }
        return append_step_summary(step_summary, &md);
    }
    std::fs::write(out.join("junit.xml"), report::junit::render(report))?;
    let md = report::markdown::render(report);
    std::fs::write(out.join("summary.md"), &md)?;
    std::fs::write(out.join("report.html"), report::html::render(report))?;
    for exp in &report.experiments {
        let dir = out.join(&exp.name);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("timeline.svg"), report::svg::experiment(exp))?;
        if let Some(svg) = report::svg::experiment_breakdown(exp) {
            std::fs::write(dir.join("breakdown.svg"), svg)?;
        }
        for r in &exp.runs {
            let run_dir = out.join(&r.id);
            if run_dir.is_dir() {
                std::fs::write(run_dir.join("timeline.svg"), report::svg::run(r))?;
                if let Some(svg) = report::svg::instances(r) {
                    std::fs::write(run_dir.join("instances.svg"), svg)?;
                }
            }
        }
    }
    append_step_summary(step_summary, &md)
}

/// `nodedown run`: plan → refuse → dispatch → invoke → report. Each step returns the exit code
/// that ends the invocation early (bad input: 2; the harness could not: 3).
pub async fn run(args: RunArgs, quiet: bool) -> u8 {
    if let Err(code) = super::push::check_grafana(args.grafana_url.as_deref()) {
        return code;
    }
    if let Err(code) = super::push::check(args.pushgateway.as_deref()) {
        return code;
    }
    let (experiments, runs) = match plan(&args) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // The simulated cluster is nodedown's own: the flags about reaching, controlling or
    // feeding a real one are refused, naming each.
    if runs
        .iter()
        .all(|r| r.cluster.provider == crate::spec::Provider::Kwok)
    {
        if let Err(code) = refuse_for_simulated(&args) {
            return code;
        }
    }
    let cluster_opts = match cluster_options(&args) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let (runs, not_run) = match refuse(&args, &experiments, runs, &cluster_opts) {
        Ok(Refusal::Run(runs, not_run)) => (runs, not_run),
        Ok(Refusal::DryRun) => return super::EXIT_OK,
        Err(code) => return code,
    };
    let out = out_dir(&args);
    if let Err(code) = write_plan(&out, &runs, &not_run) {
        return code;
    }
    invoke(&args, quiet, &experiments, &runs, &out, cluster_opts).await
}

/// The error for `--only` values that name no variant: each with its likely meaning, and every
/// variant there is.
pub(crate) fn only_error(
    unmatched: &[(String, Option<String>)],
    experiments: &[(PathBuf, crate::spec::Experiment)],
) -> String {
    let mut msg = String::new();
    for (value, closest) in unmatched {
        msg.push_str(&format!("--only {value}: no variant is named so"));
        if let Some(c) = closest {
            msg.push_str(&format!("; did you mean `{c}`?"));
        }
        msg.push('\n');
    }
    msg.push_str("the variants of these experiments:");
    for (file, exp) in experiments {
        let names: Vec<&str> = exp.variant_specs().iter().map(|v| v.name).collect();
        msg.push_str(&format!("\n  {}: {}", file.display(), names.join(", ")));
    }
    msg
}

/// The experiments read (each with its file) and the runs planned from them.
type Planned = (
    Vec<(PathBuf, crate::spec::Experiment)>,
    Vec<crate::plan::PlannedRun>,
);

/// The experiments and their runs, after `--repeat`/`--only` and the refusals that need no
/// cluster (k3d's faults, simulated and real experiments mixed).
fn plan(args: &RunArgs) -> Result<Planned, u8> {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from("experiments/smoke.yaml")]
    } else {
        args.paths.clone()
    };
    let experiments = crate::spec::load_paths(&paths).map_err(|e| {
        error(e);
        EXIT_BAD_INPUT
    })?;
    // `--provider k3d` over experiments written for kind: the faults k3d nodes cannot take are
    // refused here, as `validate` refuses them in a file that says `provider: k3d`.
    if args.provider == Some(ProviderArg::K3d) {
        for (file, exp) in &experiments {
            for v in exp.variant_specs() {
                if let Some((_, what)) = crate::spec::refused_on_k3d(v.fault) {
                    error(format!(
                        "{}: variant `{}`: {what} {} (--provider k3d); {}",
                        file.display(),
                        v.name,
                        crate::spec::K3D_REFUSAL,
                        crate::spec::K3D_REFUSAL_FIX
                    ));
                    return Err(EXIT_BAD_INPUT);
                }
            }
        }
    }
    let unmatched = crate::plan::unmatched_only(experiments.iter().map(|(_, e)| e), &args.only);
    if !unmatched.is_empty() {
        error(only_error(&unmatched, &experiments));
        return Err(EXIT_BAD_INPUT);
    }
    let plan_opts = PlanOptions {
        repeat: args.repeat,
        only: args.only.clone(),
    };
    if args.repeat == Some(0) {
        error("--repeat must be at least 1");
        return Err(EXIT_BAD_INPUT);
    }
    let runs = runner::plan_all(&experiments, &plan_opts);
    if runs.is_empty() {
        error(format!(
            "no run left after --only {}: check the variant names (nodedown validate lists them)",
            args.only.join(",")
        ));
        return Err(EXIT_BAD_INPUT);
    }
    let simulated = |r: &crate::plan::PlannedRun| r.cluster.provider == crate::spec::Provider::Kwok;
    let count = runs.iter().filter(|r| simulated(r)).count();
    if count == 0 || count == runs.len() {
        return Ok((experiments, runs));
    }
    let names: std::collections::BTreeSet<String> = runs
        .iter()
        .filter(|r| simulated(r))
        .map(|r| r.file.display().to_string())
        .collect();
    let names = names.into_iter().collect::<Vec<_>>().join(", ");
    if !args.skip_unsupported {
        error(format!("simulated experiments (`provider: kwok`: {names}) and experiments on real nodes cannot share an invocation: run the simulated ones by themselves, or give --skip-unsupported to leave them out"));
        return Err(EXIT_BAD_INPUT);
    }
    eprintln!("warning: not run (--skip-unsupported): {names}: simulated experiments run by themselves (`nodedown run {names}`)");
    let runs = runs.into_iter().filter(|r| !simulated(r)).collect();
    Ok((experiments, runs))
}

/// The cluster choices of the command line.
fn cluster_options(args: &RunArgs) -> Result<ClusterOptions, u8> {
    let cluster_opts = ClusterOptions {
        provider: args.provider.map(|p| match p {
            ProviderArg::Kind => crate::spec::Provider::Kind,
            ProviderArg::K3d => crate::spec::Provider::K3d,
            ProviderArg::Existing => crate::spec::Provider::Existing,
        }),
        cluster_name: args.cluster_name.clone(),
        kind_config: args.kind_config.clone(),
        k3d_config: args.k3d_config.clone(),
        context: args.context.clone(),
        node_image: args.node_image.clone(),
        cache_dir: args.tools.cache_dir.clone(),
        kind_bin: args.tools.kind_bin.clone(),
        k3d_bin: args.tools.k3d_bin.clone(),
        out: None,
        power_hooks: match (&args.power_off, &args.power_on, &args.power_state) {
            (Some(off), Some(on), Some(state)) => Some(crate::faults::PowerHooks {
                power_off: off.clone(),
                power_on: on.clone(),
                power_state: state.clone(),
                timeout: std::time::Duration::from_secs(120),
            }),
            _ => None,
        },
        hooks_log: None,
        node_control: args.node_control.map(|b| match b {
            NodeControlArg::Docker => crate::faults::Backend::Docker,
            NodeControlArg::PowerHooks => crate::faults::Backend::PowerHooks,
            NodeControlArg::Agent => crate::faults::Backend::Agent,
        }),
        test_nodes: args.test_nodes,
    };
    if args.node_control == Some(NodeControlArg::PowerHooks) && cluster_opts.power_hooks.is_none() {
        error("--node-control power-hooks needs --power-off, --power-on and --power-state");
        return Err(EXIT_BAD_INPUT);
    }
    Ok(cluster_opts)
}

/// The plan refused or trimmed: what no backend of this invocation can do (refused, or left
/// out with `--skip-unsupported`), the guard of an existing cluster, `--dry-run`'s answer.
/// What a run of `args` would refuse before touching anything (the variants no backend of the
/// invocation can carry out, those of another cluster), without running: for `qualify
/// --plan-only`. `Err(exit code)` when the plan itself is bad input.
pub(crate) fn plan_refusals(args: &RunArgs) -> Result<Vec<crate::report::NotRun>, u8> {
    let (experiments, runs) = plan(args)?;
    let cluster_opts = cluster_options(args)?;
    let caps = crate::runner::capabilities(&experiments, &cluster_opts);
    let mut not_run = other_cluster(&runs, &cluster_opts);
    not_run.extend(unsupported(&runs, &caps, cluster_opts.node_control));
    Ok(not_run)
}

enum Refusal {
    /// Run these; the rest is reported as not run.
    Run(Vec<crate::plan::PlannedRun>, Vec<crate::report::NotRun>),
    /// `--dry-run` printed the plan.
    DryRun,
}

fn refuse(
    args: &RunArgs,
    experiments: &[(PathBuf, crate::spec::Experiment)],
    runs: Vec<crate::plan::PlannedRun>,
    cluster_opts: &ClusterOptions,
) -> Result<Refusal, u8> {
    // What no backend of this invocation can do is refused before anything is touched (and
    // said so by --dry-run), not found out in the middle of a failover.
    let caps = crate::runner::capabilities(experiments, cluster_opts);
    let mut not_run = other_cluster(&runs, cluster_opts);
    not_run.extend(unsupported(&runs, &caps, cluster_opts.node_control));
    let runs: Vec<_> = runs
        .into_iter()
        .filter(|r| {
            !not_run
                .iter()
                .any(|n| n.experiment == r.experiment && n.variant == r.variant)
        })
        .collect();
    // The exit code when the plan is refused: a variant not run without --skip-unsupported, or
    // nothing left to run.
    let refused = |dry_run: bool| -> Option<u8> {
        if !not_run.is_empty() && !args.skip_unsupported {
            for n in &not_run {
                error(format!("{}: variant `{}`: {}", n.file, n.variant, n.reason));
            }
            error(format!(
                "{} refused before anything was touched{}: give what is named above, or --skip-unsupported to run the other variants and report these as not run",
                if not_run.len() == 1 { "1 variant" } else { "these variants" },
                if dry_run { " (dry run)" } else { "" }
            ));
            return Some(EXIT_BAD_INPUT);
        }
        if runs.is_empty() {
            error("no run left: every variant needs something no backend here has");
            return Some(EXIT_BAD_INPUT);
        }
        None
    };
    if args.dry_run {
        if let Some(code) = refused(true) {
            return Err(code);
        }
        print!(
            "{}",
            dry_run_text(
                &runs,
                experiments,
                cluster_opts,
                args.parallel,
                args.allow_control_plane,
                &not_run,
                &args.nodes,
            )
        );
        if crate::runner::targets_existing(experiments, cluster_opts) {
            let acks = args.ack_interval != crate::observe::AckInterval::Off;
            print!(
                "{}",
                permissions_text(&runs, experiments, cluster_opts, acks)
            );
        }
        return Ok(Refusal::DryRun);
    }
    if crate::runner::targets_existing(experiments, cluster_opts) {
        let context = crate::runner::resolve_context(args.context.as_deref());
        let allowed = context
            .as_ref()
            .map_err(|e| e.to_string())
            .and_then(|ctx| crate::runner::guard(ctx, args.allow_context.as_deref()));
        if let Err(e) = allowed {
            error(e);
            return Err(EXIT_BAD_INPUT);
        }
        if context.is_ok_and(|c| c == crate::cluster::IN_CLUSTER) && args.runner_node.is_none() {
            error("in the cluster it faults, nodedown must know the node it runs on: give --runner-node (NODEDOWN_RUNNER_NODE from the downward API's spec.nodeName, as deploy/job.yaml sets it)");
            return Err(EXIT_BAD_INPUT);
        }
    }
    // After the guard: on an existing cluster, naming the context comes first.
    if let Some(code) = refused(false) {
        return Err(code);
    }
    Ok(Refusal::Run(runs, not_run))
}

/// `--out`, or `runs/<UTC timestamp>`.
fn out_dir(args: &RunArgs) -> PathBuf {
    args.out.clone().unwrap_or_else(|| {
        let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace(':', "");
        PathBuf::from("runs").join(stamp)
    })
}

/// The output directory with the plan in it: the run ids in order, the variants not run.
fn write_plan(
    out: &Path,
    runs: &[crate::plan::PlannedRun],
    not_run: &[crate::report::NotRun],
) -> Result<(), u8> {
    if let Err(e) = std::fs::create_dir_all(out) {
        error(format!("cannot create {}: {e}", out.display()));
        return Err(EXIT_HARNESS);
    }
    let order: String = runs.iter().map(|r| format!("{}\n", r.id)).collect();
    let _ = std::fs::write(out.join(ORDER_FILE), order);
    if !not_run.is_empty() {
        let json = serde_json::to_string_pretty(not_run).expect("not-run serializes");
        if let Err(e) = std::fs::write(out.join(crate::store::NOT_RUN_FILE), json + "\n") {
            error(format!(
                "cannot write {}: {e}",
                out.join(crate::store::NOT_RUN_FILE).display()
            ));
            return Err(EXIT_HARNESS);
        }
    }
    Ok(())
}

/// The invocation on its cluster: prepared (made, reused or reached), the runs under the lock,
/// the cluster finished as it came; then the reports and the exit code.
async fn invoke(
    args: &RunArgs,
    quiet: bool,
    experiments: &[(PathBuf, crate::spec::Experiment)],
    runs: &[crate::plan::PlannedRun],
    out: &Path,
    cluster_opts: ClusterOptions,
) -> u8 {
    let mut cluster_opts = cluster_opts;
    cluster_opts.hooks_log = Some(out.join("hooks.jsonl"));
    cluster_opts.out = Some(out.to_path_buf());
    let progress = Progress::new(quiet);
    let step = |s: &str| progress.step(s);
    let invocation_start = std::time::Instant::now();
    let env = match Env::prepare(experiments, &cluster_opts, &step).await {
        Ok(env) => env,
        Err(e) => {
            progress.finish();
            error(format!("cannot prepare the cluster: {e}"));
            return EXIT_HARNESS;
        }
    };
    // From here one task owns SIGINT and SIGTERM; the runs and the last waits ask it.
    let interrupt = runner::Interrupt::install();
    let invoked = Invocation {
        args,
        experiments,
        runs,
        out,
        progress: &progress,
        interrupt: &interrupt,
        start: invocation_start,
        started: humantime::format_rfc3339_seconds(
            std::time::SystemTime::now() - invocation_start.elapsed(),
        )
        .to_string(),
    }
    .run(&env)
    .await;
    // Whatever happened in between, the cluster goes as it came (deleted when made here).
    progress.finish();
    if let Err(e) = env.finish(args.retain).await {
        error(format!("deleting the cluster: {e}"));
    }
    let invoked = match invoked {
        Ok(done) => done,
        Err(code) => return code,
    };
    if let Some(mut times) = invoked.times {
        times.total_ms = invocation_start.elapsed().as_millis() as u64;
        if let Ok(json) = serde_json::to_string_pretty(&times) {
            let _ = std::fs::write(out.join(crate::store::INVOCATION_FILE), json);
        }
    }
    // Simulated runs are read back from their directories like real ones; what went wrong
    // around them (kwok exited) is a harness error of the invocation.
    let around: &[String] = invoked
        .simulated
        .as_ref()
        .map_or(&[], |sim| sim.errors.as_slice());
    let reported = report_and_exit(args, quiet, out, around);
    exit_after(&interrupt, invoked.interrupted, reported)
}

/// The exit code of an invocation whose reports gave `reported` (`Err`: they could not be
/// written, 3; `Ok`: the code of the verdicts): 3 when the reports failed or the cluster lock
/// was lost (the runs stopped and healed), else 130 when a signal stopped it, else the
/// verdicts' code.
fn exit_after(interrupt: &runner::Interrupt, interrupted: bool, reported: Result<u8, u8>) -> u8 {
    let code = match reported {
        Ok(code) => code,
        Err(code) => return code,
    };
    if let Some(runner::Stop::LockLost(why)) = interrupt.first() {
        error(format!(
            "the cluster lock was lost ({why}): the runs stopped and healed"
        ));
        EXIT_HARNESS
    } else if interrupted {
        EXIT_INTERRUPTED
    } else {
        code
    }
}

/// The reports of a finished (or interrupted) invocation, and the exit code of its verdicts
/// with `around` (errors outside any run's directory) counting as a harness error (`Err(3)`
/// when the reports cannot be written).
fn report_and_exit(args: &RunArgs, quiet: bool, out: &Path, around: &[String]) -> Result<u8, u8> {
    for e in around {
        error(e);
    }
    let report = match build(out) {
        Ok(r) => r,
        Err(e) => {
            error(format!("cannot assemble the report: {e}"));
            return Err(EXIT_HARNESS);
        }
    };
    if let Err(e) = write_reports(out, &report, args.step_summary.as_deref()) {
        error(format!("cannot write reports in {}: {e}", out.display()));
        return Err(EXIT_HARNESS);
    }
    if args.metrics_file.is_some() || args.pushgateway.is_some() {
        let metrics = report::metrics::render(&report);
        if let Some(file) = &args.metrics_file {
            if let Err(e) = write_replacing(file, &metrics) {
                error(format!(
                    "cannot write the metrics to {}: {e}",
                    file.display()
                ));
                return Err(EXIT_HARNESS);
            }
        }
        if let Some(given) = &args.pushgateway {
            if let Err(e) = super::push::push_to(given, &metrics, quiet) {
                error(e);
                return Err(EXIT_HARNESS);
            }
        }
    }
    if let Some(url) = &args.grafana_url {
        let annotations = report::grafana::annotations(&report, args.grafana_dashboard.as_deref());
        if let Err(e) = super::push::annotate(url, &annotations, quiet) {
            error(e);
            return Err(EXIT_HARNESS);
        }
    }
    match args.output {
        Output::Table => print!("{}", render(&report, Format::Table)),
        Output::Json => print!("{}", render(&report, Format::Json)),
    }
    if !quiet {
        eprintln!(
            "reports: {}/{{results.json,junit.xml,summary.md,report.html}}",
            out.display()
        );
    }
    Ok(super::exit::exit_code_of(
        report
            .experiments
            .iter()
            .flat_map(|e| &e.runs)
            .map(|r| (r.verdict, r.error.is_some()))
            .chain((!around.is_empty()).then_some((crate::verdict::Verdict::Unknown, true))),
        args.fail_on,
    ))
}

/// One invocation on a prepared cluster: the lock, the session, the image, the runs (in lanes
/// with `--parallel`), the last wait. Releases the lock on every path; the caller finishes the
/// cluster.
struct Invocation<'a> {
    args: &'a RunArgs,
    experiments: &'a [(PathBuf, crate::spec::Experiment)],
    runs: &'a [crate::plan::PlannedRun],
    out: &'a Path,
    progress: &'a Progress,
    interrupt: &'a runner::Interrupt,
    start: std::time::Instant,
    /// The wall clock at `start`, RFC 3339.
    started: String,
}

/// What an invocation did on its cluster.
struct Invoked {
    /// A signal stopped it (every run going healed), or the final wait.
    interrupted: bool,
    /// Its times, when it was not interrupted.
    times: Option<crate::store::InvocationTimes>,
    /// The simulated runs' results (provider kwok); real runs are read back from their
    /// directories.
    simulated: Option<runner::simulated::SimulatedInvocation>,
}

impl Invocation<'_> {
    async fn run(&self, env: &Env) -> Result<Invoked, u8> {
        let step = |s: &str| self.progress.step(s);
        match crate::runner::describe_target(env).await {
            Ok(target) => step(&target),
            Err(e) => {
                error(format!("cannot describe the cluster: {e}"));
                return Err(EXIT_HARNESS);
            }
        }
        // Every permission the runs will use, asked before anything is touched (the simulated
        // cluster is nodedown's own, reached as its admin).
        let real: Vec<crate::plan::PlannedRun> = self
            .runs
            .iter()
            .filter(|r| r.cluster.provider != crate::spec::Provider::Kwok)
            .cloned()
            .collect();
        if !real.is_empty() {
            let acks = self.args.ack_interval != crate::observe::AckInterval::Off;
            match runner::missing_permissions(env, &real, acks).await {
                Ok(missing) if missing.is_empty() => {}
                Ok(missing) => {
                    error(format!(
                        "this kubeconfig's user lacks {} permission(s) these runs use; nothing was touched:\n{}\ngrant them (deploy/rbac.yaml is a ClusterRole with every permission nodedown uses)",
                        missing.len(),
                        missing
                            .iter()
                            .map(|n| format!("  - {}: {}", n.describe(), n.why))
                            .collect::<Vec<_>>()
                            .join("\n")
                    ));
                    return Err(EXIT_HARNESS);
                }
                Err(e) => {
                    error(format!(
                        "cannot ask the API server what this user may do (SelfSubjectAccessReview): {e}"
                    ));
                    return Err(EXIT_HARNESS);
                }
            }
        }
        // The nodes this invocation may use (`--nodes`, each a node of this cluster) and their
        // locks: one invocation per node, refused before anything is deployed or faulted.
        // One reading of the Nodes serves the lock and, later, the lanes.
        let nodes = match kube::Api::<k8s_openapi::api::core::v1::Node>::all(env.client.clone())
            .list(&Default::default())
            .await
        {
            Ok(list) => list.items,
            Err(e) => {
                error(format!("cannot list the cluster's nodes: {e}"));
                return Err(EXIT_HARNESS);
            }
        };
        let cluster_nodes: Vec<String> = nodes
            .iter()
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        let scope = match crate::plan::lanes::scope(&self.args.nodes, &cluster_nodes) {
            Ok(scope) => scope,
            Err(e) => {
                error(format!("--nodes: {e}"));
                return Err(EXIT_BAD_INPUT);
            }
        };
        if let Some(nodes) = &scope {
            step(&format!("confined to {}", nodes.join(", ")));
        }
        let lock_nodes = crate::cluster::lock::lock_nodes(scope.as_deref(), &cluster_nodes);
        let out_abs = std::fs::canonicalize(self.out).unwrap_or_else(|_| self.out.to_path_buf());
        let lock =
            match crate::cluster::lock::acquire(&env.client, &out_abs, &lock_nodes, step).await {
                Ok(lock) => lock,
                Err(e) => {
                    error(e);
                    return Err(EXIT_HARNESS);
                }
            };
        let id = crate::cluster::lock::invocation_id(&out_abs);
        step(&format!(
            "invocation {id}: its runs' namespaces carry the label {}={id}",
            crate::vocab::INVOCATION_LABEL
        ));
        let owned = runner::heal::Owned {
            every: false,
            invocation: Some(id),
            namespaces: vec![],
            nodes: Some(lock_nodes),
        };
        // A lost lock stops the runs like a signal: another invocation may fault these nodes.
        let lost = lock.lost();
        let interrupt = self.interrupt.clone();
        let watch_lock = tokio::spawn(async move {
            let why = lost.await;
            interrupt.stop(runner::Stop::LockLost(why));
        });
        let result = self.locked(env, &nodes, scope, &owned).await;
        watch_lock.abort();
        lock.release().await;
        result
    }

    /// What runs under the lock: on the nodes of `scope` (none: the whole cluster), waiting at
    /// the end for what `owned` covers.
    async fn locked(
        &self,
        env: &Env,
        nodes: &[k8s_openapi::api::core::v1::Node],
        scope: Option<Vec<String>>,
        owned: &runner::heal::Owned,
    ) -> Result<Invoked, u8> {
        let args = self.args;
        let session = crate::runner::Session {
            command: Some(std::env::args().collect()),
            started: Some(self.started.clone()),
            ..env.session.clone()
        };
        let session = serde_json::to_string_pretty(&session).expect("session serializes");
        if let Err(e) = std::fs::write(self.out.join(SESSION_FILE), session + "\n") {
            error(format!(
                "cannot write {}: {e}",
                self.out.join(SESSION_FILE).display()
            ));
            return Err(EXIT_HARNESS);
        }
        let prepare_ms = self.start.elapsed().as_millis() as u64;
        let runs_start = std::time::Instant::now();
        let mut image_load_ms = 0;
        // The runs, by the cluster's provider. kwok (whose nodes heartbeat while it runs) stays
        // up until the final wait is over: the runs' namespaces finish terminating while kwok
        // still answers for the nodes their pods were on.
        let (interrupted, lane_count, simulated, kwok) = match env.session.provider {
            crate::spec::Provider::Kwok => {
                let mut sim = match runner::simulated::Simulator::start(
                    env,
                    self.out,
                    &args.tools.cache_dir,
                    self.progress,
                )
                .await
                {
                    Ok(s) => s,
                    Err(e) => {
                        error(e);
                        return Err(EXIT_HARNESS);
                    }
                };
                let inv = sim
                    .run_all(env, self.runs, self.out, self.progress, self.interrupt)
                    .await;
                (inv.interrupted, 1, Some(inv), Some(sim))
            }
            _ => {
                let (interrupted, lanes, image_ms) = self.real(env, nodes, scope, owned).await?;
                image_load_ms = image_ms;
                (interrupted, lanes, None, None)
            }
        };
        // Loading the workload image is preparing the cluster, not running.
        let prepare_ms = prepare_ms + image_load_ms;
        let runs_ms = (runs_start.elapsed().as_millis() as u64).saturating_sub(image_load_ms);
        let finish_start = std::time::Instant::now();
        // The simulated cluster is nodedown's own: everything on it is this invocation's.
        let every = runner::heal::Owned::every();
        let owned = if kwok.is_some() { &every } else { owned };
        let stopped_waiting = self.final_wait(env, owned).await;
        drop(kwok);
        let times = (!interrupted).then(|| crate::store::InvocationTimes {
            prepare_ms,
            runs_ms,
            finish_ms: finish_start.elapsed().as_millis() as u64,
            total_ms: 0,
            lanes: lane_count,
        });
        Ok(Invoked {
            interrupted: interrupted || stopped_waiting,
            times,
            simulated,
        })
    }

    /// Real runs: the workload image, the lanes, the runs scheduled into them. Returns whether
    /// a signal stopped them, how many lanes there were, and how long the image took (ms).
    async fn real(
        &self,
        env: &Env,
        nodes: &[k8s_openapi::api::core::v1::Node],
        scope: Option<Vec<String>>,
        owned: &runner::heal::Owned,
    ) -> Result<(bool, u32, u64), u8> {
        let args = self.args;
        let step = |s: &str| self.progress.step(s);
        let image_start = std::time::Instant::now();
        let user_image = args.workload_image.clone().or_else(|| {
            self.experiments
                .iter()
                .find_map(|(_, e)| e.workload.image.clone())
        });
        let image = match env
            .workload_image(user_image.as_deref(), scope.as_deref(), &step)
            .await
        {
            Ok(i) => i,
            Err(e) => {
                error(format!("cannot provide the workload image: {e}"));
                return Err(EXIT_HARNESS);
            }
        };
        let image_ms = image_start.elapsed().as_millis() as u64;
        let settings = RunSettings {
            image,
            storage: crate::workload::StorageAccess {
                // Only where this machine has it (not in a pod): a directory nodedown cannot
                // reach is not journaled for removal — a heal that "removed" it would lie.
                shared_dir: Some(args.shared_dir.clone()).filter(|d| d.is_dir()),
                ledger_via_api: args.ledger_via == LedgerVia::Api,
            },
            force: args.force,
            allow_control_plane: args.allow_control_plane,
            fault_lease: args.fault_lease,
            ack_interval: args.ack_interval,
            runner_node: args.runner_node.clone(),
            nodes: scope,
            invocation: owned.invocation.clone().unwrap_or_default(),
        };
        let sharing = runner::schedule::sharing(
            &env.client,
            self.runs,
            args.parallel,
            args.allow_control_plane,
            settings.nodes.is_some(),
        )
        .await;
        if let Some(scope) = &settings.nodes {
            if let Some(why) = runner::schedule::unconfinable(&sharing, self.runs, nodes, scope) {
                error(format!("--nodes: nothing was run: {why}"));
                return Err(EXIT_BAD_INPUT);
            }
        }
        let lanes = match runner::schedule::form_lanes(
            nodes,
            self.runs,
            &sharing,
            args.parallel,
            args.runner_node.as_deref(),
            settings.nodes.as_deref(),
        ) {
            runner::schedule::Lanes::One(why) => {
                step(&why);
                vec![]
            }
            formed => formed.into_lanes(),
        };
        for lane in &lanes {
            step(&format!("lane {}: {}", lane.index, lane.nodes.join(", ")));
        }
        let lane_count = lanes.len().max(1) as u32;
        let settings = &settings;
        let interrupted = runner::schedule::run_in_lanes(
            self.runs,
            lanes,
            &sharing,
            self.progress,
            self.interrupt,
            error,
            |planned, lane, progress| {
                let mut planned = planned.clone();
                // What the run really used: `--provider` may have switched away from the
                // experiment's provider (and its config file with it).
                if planned.cluster.config.is_none()
                    || planned.cluster.provider != env.session.provider
                {
                    planned.cluster.config = env.session.profile.clone().map(PathBuf::from);
                }
                planned.cluster.provider = env.session.provider;
                let dir = self.out.join(&planned.id);
                async move {
                    runner::run_one(
                        env,
                        settings,
                        &planned,
                        &dir,
                        &progress,
                        lane.as_ref(),
                        self.interrupt,
                    )
                    .await
                }
            },
        )
        .await;
        Ok((interrupted, lane_count, image_ms))
    }

    /// Waits for the runs' namespaces to finish terminating (not when the cluster is about to
    /// be deleted). Ctrl-C here too: the runs are healed, their namespaces deleted; returns
    /// whether it stopped waiting (the invocation then exits 130).
    async fn final_wait(&self, env: &Env, owned: &runner::heal::Owned) -> bool {
        let mut stopped_waiting = false;
        if !env.will_delete(self.args.retain) {
            // Counted before the step is shown: a signal sent on seeing it must end the wait
            // (counted after, a signal quick enough was taken for an earlier one and the wait
            // ran its full 120 s — CI rehearsal, sigint_during_the_final_wait_…).
            let seen = self.interrupt.count();
            self.progress
                .step("waiting for the runs' namespaces to finish terminating");
            tokio::select! {
                r = runner::wait_namespaces_gone(&env.client, owned) => if let Err(e) = r { error(e) },
                _ = self.interrupt.wait_beyond(seen) => {
                    error("not waiting for the namespaces any longer: they are deleted and go by themselves");
                    stopped_waiting = true;
                }
            }
        }
        stopped_waiting
    }
}

/// The variants of experiments that name another cluster than the invocation's (the first
/// experiment's, as `Env::prepare` chooses it): one invocation runs on one cluster, and such an
/// experiment (e.g. one that needs a controller-manager flag of its own kind config) would
/// measure the wrong cluster. None when the command line names the cluster itself
/// (`--provider`, `--cluster-name`, `--kind-config`, `--k3d-config`, `--context`): then every
/// experiment runs on that one, as asked.
fn other_cluster(
    runs: &[crate::plan::PlannedRun],
    opts: &ClusterOptions,
) -> Vec<crate::report::NotRun> {
    if opts.provider.is_some()
        || opts.cluster_name.is_some()
        || opts.kind_config.is_some()
        || opts.k3d_config.is_some()
        || opts.context.is_some()
    {
        return vec![];
    }
    type Key = (crate::spec::Provider, String, Option<PathBuf>);
    let key = |r: &crate::plan::PlannedRun| -> Key {
        (
            r.cluster.provider,
            r.cluster.name.clone().unwrap_or_else(|| "nodedown".into()),
            crate::spec::cluster_config_path(&r.file, &r.cluster)
                .map(|p| std::fs::canonicalize(&p).unwrap_or(p)),
        )
    };
    let Some(first) = runs.first() else {
        return vec![];
    };
    let want = key(first);
    let describe = |(provider, name, config): &Key| {
        format!(
            "{} cluster {name}{}",
            provider.as_str(),
            config
                .as_ref()
                .map(|c| format!(" ({})", c.display()))
                .unwrap_or_default()
        )
    };
    not_run_where(runs, |run| {
        let got = key(run);
        (got != want).then(|| {
            format!(
                "it names {}, but this invocation runs on {}, the first experiment's: one invocation uses one cluster; run {} by itself",
                describe(&got),
                describe(&want),
                run.file.display()
            )
        })
    })
}

/// The variants no backend of this invocation can carry out, once each, with why.
fn unsupported(
    runs: &[crate::plan::PlannedRun],
    caps: &[crate::faults::Capability],
    only: Option<crate::faults::Backend>,
) -> Vec<crate::report::NotRun> {
    not_run_where(runs, |run| {
        runner::cannot_run(run, caps, only).map(|e| e.to_string())
    })
}

/// The variants (each once, whatever its repetitions) that `reason` gives a reason not to run.
fn not_run_where(
    runs: &[crate::plan::PlannedRun],
    reason: impl Fn(&crate::plan::PlannedRun) -> Option<String>,
) -> Vec<crate::report::NotRun> {
    let mut out: Vec<crate::report::NotRun> = Vec::new();
    for run in runs {
        if out
            .iter()
            .any(|n| n.experiment == run.experiment && n.variant == run.variant)
        {
            continue;
        }
        if let Some(reason) = reason(run) {
            out.push(crate::report::NotRun {
                experiment: run.experiment.clone(),
                variant: run.variant.clone(),
                file: run.file.display().to_string(),
                reason,
            });
        }
    }
    out
}

/// What `--dry-run` prints: the cluster it would use and every run's actions.
fn dry_run_text(
    runs: &[crate::plan::PlannedRun],
    experiments: &[(PathBuf, crate::spec::Experiment)],
    opts: &ClusterOptions,
    parallel: crate::plan::lanes::Parallel,
    allow_control_plane: bool,
    not_run: &[crate::report::NotRun],
    nodes: &[String],
) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    if crate::runner::targets_existing(experiments, opts) {
        let ctx = crate::runner::resolve_context(opts.context.as_deref())
            .unwrap_or_else(|e| format!("(unresolved: {e})"));
        let _ = writeln!(s, "dry run: would use the existing cluster of context {ctx} (needs --allow-context {ctx})");
    } else {
        let provider = opts
            .provider
            .or_else(|| experiments.first().map(|(_, e)| e.cluster.provider))
            .unwrap_or_default();
        let name = opts
            .cluster_name
            .clone()
            .or_else(|| {
                experiments
                    .first()
                    .and_then(|(_, e)| e.cluster.name.clone())
            })
            .unwrap_or_else(|| crate::runner::default_cluster_name(provider).into());
        if provider == crate::spec::Provider::Kwok {
            let _ = writeln!(
                s,
                "dry run: would use the simulated cluster {name} (a kind control plane, created if missing; kwok started for the invocation runs its nodes)"
            );
        } else {
            let _ = writeln!(
                s,
                "dry run: would use {} cluster {name} (created if missing)",
                provider.as_str()
            );
        }
        let own_config = experiments
            .first()
            .is_some_and(|(_, e)| e.cluster.provider == provider && e.cluster.config.is_some());
        if provider == crate::spec::Provider::K3d && opts.k3d_config.is_none() && !own_config {
            let image = opts
                .node_image
                .clone()
                .unwrap_or_else(|| crate::cluster::k3d::K3S_IMAGE.into());
            let _ = writeln!(
                s,
                "k3d config it would create it from (nodedown's fast profile):\n{}",
                crate::cluster::k3d::fast_config(
                    &name,
                    &image,
                    3,
                    crate::workload::DEFAULT_SHARED_DIR
                )
            );
        }
    }
    if let Some(h) = &opts.power_hooks {
        let _ = writeln!(
            s,
            "power hooks: off `{}`, on `{}`, state `{}`",
            h.power_off, h.power_on, h.power_state
        );
    }
    if !nodes.is_empty() {
        let _ = writeln!(
            s,
            "confined to node(s) {} (--nodes; checked against the cluster when the invocation starts): only their locks are taken, nothing of a run goes elsewhere",
            nodes.join(", ")
        );
    }
    let _ = writeln!(s, "{} run(s); nothing was touched", runs.len());
    for n in not_run {
        let _ = writeln!(
            s,
            "not run (--skip-unsupported): {}/{}: {}",
            n.experiment, n.variant, n.reason
        );
    }
    let placements = lanes_text(
        &mut s,
        runs,
        experiments,
        opts,
        parallel,
        allow_control_plane,
        nodes,
    );
    for (i, run) in runs.iter().enumerate() {
        match placements.as_ref().map(|p| &p[i]) {
            Some(crate::plan::lanes::Placement::Lane) => {
                let _ = writeln!(s, "\n{} (in a lane)", run.id);
            }
            // Without a reason: one lane, so every run goes one after the other.
            Some(crate::plan::lanes::Placement::Alone(why)) if !why.is_empty() => {
                let _ = writeln!(s, "\n{} (alone, once every lane is idle: {why})", run.id);
            }
            Some(crate::plan::lanes::Placement::Alone(_)) => {
                let _ = writeln!(s, "\n{}", run.id);
            }
            None => {
                let _ = writeln!(s, "\n{}", run.id);
            }
        }
        for (i, a) in crate::plan::actions(run).iter().enumerate() {
            let _ = writeln!(s, "  {}. {a}", i + 1);
        }
    }
    s
}

/// The permissions the runs will use on an existing cluster (each run's fault through the
/// backend it would use), from the table the invocation checks them against when it starts.
fn permissions_text(
    runs: &[crate::plan::PlannedRun],
    experiments: &[(PathBuf, crate::spec::Experiment)],
    opts: &ClusterOptions,
    acks: bool,
) -> String {
    let caps = crate::runner::capabilities(experiments, opts);
    let needs = crate::runner::permissions_needed(runs, &caps, opts.node_control, acks);
    let mut s = String::from(
        "\npermissions these runs use (asked of the API server when the invocation starts; deploy/rbac.yaml grants them):\n",
    );
    // One line per resource: its verbs, and what they are for.
    let mut lines: Vec<(String, Vec<&str>, Vec<&str>)> = Vec::new();
    for n in needs {
        let what = n.describe();
        let what = what
            .split_once(' ')
            .map_or(what.as_str(), |(_, r)| r)
            .to_string();
        match lines.iter_mut().find(|(w, _, _)| *w == what) {
            Some((_, verbs, whys)) => {
                verbs.push(n.verb);
                if !whys.contains(&n.why) {
                    whys.push(n.why);
                }
            }
            None => lines.push((what, vec![n.verb], vec![n.why])),
        }
    }
    for (what, verbs, whys) in lines {
        s.push_str(&format!(
            "  - {} {what}: {}\n",
            verbs.join(", "),
            whys.join("; ")
        ));
    }
    s
}

/// The workers a kind config makes (`nodes:` entries with `role: worker`); `None` when the
/// file cannot be read as one. kind's default, without `nodes:`, is one control-plane node.
pub fn kind_config_workers(text: &str) -> Option<usize> {
    #[derive(serde::Deserialize)]
    struct Config {
        #[serde(default)]
        nodes: Vec<Node>,
    }
    #[derive(serde::Deserialize)]
    struct Node {
        role: Option<String>,
    }
    let c: Config = serde_saphyr::from_str(text).ok()?;
    Some(
        c.nodes
            .iter()
            .filter(|n| n.role.as_deref() == Some("worker"))
            .count(),
    )
}

/// `--dry-run` with `--parallel`: how many lanes the cluster would make room for (when its
/// kind config says how many workers it has) and which runs would run alone, and why.
/// Returns the placements (`None` without `--parallel`).
fn lanes_text(
    s: &mut String,
    runs: &[crate::plan::PlannedRun],
    experiments: &[(PathBuf, crate::spec::Experiment)],
    opts: &ClusterOptions,
    parallel: crate::plan::lanes::Parallel,
    allow_control_plane: bool,
    nodes: &[String],
) -> Option<Vec<crate::plan::lanes::Placement>> {
    use crate::plan::lanes::{self, Parallel};
    use std::fmt::Write as _;
    if parallel == Parallel::Lanes(1) {
        return None;
    }
    // Before the cluster is reached: what the classes bind is not known yet.
    let sharing = lanes::Sharing::new(allow_control_plane);
    let (need, laneable) = lanes::demand(runs, &sharing);
    let config = opts.kind_config.clone().or_else(|| {
        experiments.first().and_then(|(file, e)| {
            let kind = e.cluster.provider == crate::spec::Provider::Kind
                && opts.provider.is_none_or(|p| p == e.cluster.provider);
            kind.then(|| crate::spec::cluster_config_path(file, &e.cluster))
                .flatten()
        })
    });
    let workers = if nodes.is_empty() {
        config
            .filter(|_| !crate::runner::targets_existing(experiments, opts))
            .and_then(|c| std::fs::read_to_string(&c).ok().map(|t| (c, t)))
            .and_then(|(c, t)| kind_config_workers(&t).map(|w| (c.display().to_string(), w)))
    } else {
        Some(("--nodes".to_string(), nodes.len()))
    };
    let count = match &workers {
        Some((source, w)) => {
            // Room before the zones are known: the split at the start may make fewer lanes.
            let count = lanes::lane_count(parallel, *w / need.max(1), laneable);
            let _ = writeln!(
                s,
                "--parallel: {w} worker(s) in {source} make room for {count} lane(s) of {need} node(s) or more (the schedulable workers are split when the invocation starts)",
            );
            count
        }
        None => {
            let _ = writeln!(
                s,
                "--parallel: lanes of {need} node(s) or more are formed from the cluster's schedulable workers when the invocation starts"
            );
            usize::MAX
        }
    };
    let placements = lanes::place(runs, count, need, &sharing);
    Some(placements)
}

/// The flags `run` takes that mean nothing on the simulated cluster (nodedown makes it, kwok
/// runs its nodes, there is no data path), each named when it was given: `(flag, why)`.
fn refused_for_simulated(args: &RunArgs) -> Vec<(&'static str, &'static str)> {
    let defaults = <RunArgs as clap::FromArgMatches>::from_arg_matches(
        &<RunArgs as clap::Args>::augment_args(clap::Command::new("run")).get_matches_from(["run"]),
    )
    .expect("the defaults parse");
    let mut out = Vec::new();
    let mut refuse = |given: bool, flag: &'static str, why: &'static str| {
        if given {
            out.push((flag, why));
        }
    };
    const OWN: &str = "nodedown makes and reaches the simulated cluster itself";
    const NODES: &str = "kwok's nodes are controlled by their heartbeat, not by a backend";
    const DATA: &str = "a simulated run has no data path (no ledger)";
    refuse(args.provider.is_some(), "--provider", OWN);
    refuse(args.context.is_some(), "--context", OWN);
    refuse(args.allow_context.is_some(), "--allow-context", OWN);
    refuse(args.force, "--force", OWN);
    refuse(args.k3d_config.is_some(), "--k3d-config", OWN);
    refuse(args.test_nodes, "--test-nodes", NODES);
    refuse(args.allow_control_plane, "--allow-control-plane", NODES);
    refuse(
        args.power_off.is_some(),
        "--power-off/--power-on/--power-state",
        NODES,
    );
    refuse(args.node_control.is_some(), "--node-control", NODES);
    refuse(args.fault_lease.is_some(), "--fault-lease", NODES);
    refuse(args.workload_image.is_some(), "--workload-image", DATA);
    refuse(args.ledger_via != defaults.ledger_via, "--ledger-via", DATA);
    refuse(
        args.ack_interval != defaults.ack_interval,
        "--ack-interval",
        DATA,
    );
    refuse(args.shared_dir != defaults.shared_dir, "--shared-dir", DATA);
    refuse(
        !args.nodes.is_empty(),
        "--nodes",
        "the simulated cluster is nodedown's own: its nodes are made for each run",
    );
    const METRICS: &str =
        "the metrics are those of real runs; a simulated invocation's figures are in its results.json (each run's `scale`)";
    refuse(args.metrics_file.is_some(), "--metrics-file", METRICS);
    refuse(args.pushgateway.is_some(), "--pushgateway", METRICS);
    refuse(args.grafana_url.is_some(), "--grafana-url", METRICS);
    refuse(
        args.parallel != defaults.parallel,
        "--parallel",
        "simulated runs go one after the other: each measures the one control plane they share",
    );
    out
}

/// Refuses (exit 2) the flags given that mean nothing on the simulated cluster, naming each.
fn refuse_for_simulated(args: &RunArgs) -> Result<(), u8> {
    let refused = refused_for_simulated(args);
    if refused.is_empty() {
        return Ok(());
    }
    let names = refused
        .iter()
        .map(|(flag, why)| format!("{flag} ({why})"))
        .collect::<Vec<_>>()
        .join("; ");
    error(format!(
        "not for simulated experiments (`provider: kwok`): {names}; leave them out"
    ));
    Err(EXIT_BAD_INPUT)
}
