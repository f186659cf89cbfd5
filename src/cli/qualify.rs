//! `nodedown qualify`: the failover qualification of a storage class, from the driver
//! definition vendors keep for the upstream storage suites (or a class name alone). It writes
//! the matrix as ordinary experiment files (`OUT/experiments/`), runs them with `nodedown run`'s
//! machinery (`OUT/runs/`: every report a run writes), and writes the sheet (`OUT/sheet.json`,
//! `OUT/sheet.md`).

use super::run::{self, RunArgs};
use super::{error, EXIT_BAD_INPUT, EXIT_HARNESS};
use crate::plan::lanes::Parallel;
use crate::plan::qualify::{matrix, RowBody, Storage};
use crate::report::sheet::{self, PlannedRow, SheetEnvironment};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
  nodedown qualify --storage-class nodedown-attach --quick      CI-sized, about 15 minutes
  nodedown qualify --testdriver driver.yaml --plan-only         the matrix, nothing run
  nodedown qualify --testdriver driver.yaml --context lab --allow-context lab --repeat 10")]
pub struct QualifyArgs {
    /// The driver definition of the upstream storage suites (`e2e.test
    /// -storage.testdriver=FILE`): DriverInfo.Name and Capabilities, the StorageClass, the
    /// smallest size. Keys it does not read are named in warnings.
    #[arg(long, value_name = "FILE", required_unless_present = "storage_class")]
    pub testdriver: Option<PathBuf>,
    /// The StorageClass to qualify (overrides the testdriver file's; alone, the class is taken
    /// as persistent ReadWriteOnce with nothing else declared).
    #[arg(long, value_name = "NAME")]
    pub storage_class: Option<String>,
    /// Only the rows that fit a CI job: the rows that wait for the 6-minute forced detach are
    /// marked not applicable. Default repetitions: 3 (else 10, enough for a p90).
    #[arg(long)]
    pub quick: bool,
    /// Print the matrix (and write the experiment files) without running anything.
    #[arg(long)]
    pub plan_only: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Runs the qualification; returns the exit code (`nodedown run`'s contract over the rows that
/// ran; a not-applicable row never fails it).
pub async fn qualify(mut args: QualifyArgs, quiet: bool) -> u8 {
    if !args.run.paths.is_empty() {
        error("qualify writes its own experiments: give no experiment files (rerun a row with `nodedown run OUT/experiments/<row>.yaml`)");
        return EXIT_BAD_INPUT;
    }
    let driver = match &args.testdriver {
        Some(path) => match crate::spec::load_testdriver(path) {
            Ok((d, warnings)) => {
                for w in warnings {
                    eprintln!("warning: {}:{w}", path.display());
                }
                Some(d)
            }
            Err(e) => {
                error(e);
                return EXIT_BAD_INPUT;
            }
        },
        None => None,
    };
    let class = match (
        &args.storage_class,
        driver.as_ref().and_then(|d| d.class.clone()),
    ) {
        (Some(c), _) => c.clone(),
        (None, Some(crate::spec::ClassSource::FromExistingClassName(c))) => c,
        (None, Some(crate::spec::ClassSource::FromFile(path))) => match class_in_manifest(&path) {
            Ok(name) => name,
            Err(e) => {
                error(e);
                return EXIT_BAD_INPUT;
            }
        },
        (None, Some(crate::spec::ClassSource::FromName)) => {
            error(format!(
                "{}: StorageClass.FromName asks for a class made on the fly; nodedown qualifies an installed class: give --storage-class NAME (one whose provisioner is {})",
                args.testdriver.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
                driver.as_ref().map(|d| d.driver.as_str()).unwrap_or("the driver")
            ));
            return EXIT_BAD_INPUT;
        }
        (None, None) => {
            error("no storage class: the testdriver file has no StorageClass; give --storage-class NAME");
            return EXIT_BAD_INPUT;
        }
    };
    if args.run.repeat == Some(0) {
        error("--repeat must be at least 1");
        return EXIT_BAD_INPUT;
    }
    // A context that is not in the kubeconfig is named, not found out as "not reachable".
    if let Some(ctx) = &args.run.context {
        if let Err(e) = context_exists(ctx) {
            error(e);
            return EXIT_BAD_INPUT;
        }
    }
    let context = context_of(&args.run);
    let (facts, driver_facts) = match cluster_facts(
        &args.run,
        &class,
        driver.as_ref().map(|d| d.driver.as_str()),
    )
    .await
    {
        Some((f, d)) => (Some(f), d),
        None => (None, None),
    };
    let attaches = facts.as_ref().and_then(|f| f.attach_required);
    if let (Some(d), Some(p)) = (&driver, facts.as_ref().and_then(|f| f.provisioner.clone())) {
        if d.driver != p {
            eprintln!(
                "warning: storage class {class} is provisioned by {p}, but the testdriver file names {}",
                d.driver
            );
        }
    }
    if facts.is_none() {
        eprintln!("warning: the cluster was not reachable before the runs: whether {class} attaches is unknown, so the rows leave the detach and attach expectations out");
    }
    let storage = match &driver {
        Some(d) => Storage::from_driver(d, &class, attaches),
        None => Storage::from_class(&class, attaches),
    };
    let mut rows = matrix(&storage, args.quick);
    // `--only` picks rows of the matrix by id; one that names no row is refused with the
    // closest and every row there is.
    if !args.run.only.is_empty() {
        let ids: Vec<&str> = rows.iter().map(|r| r.id).collect();
        let unknown: Vec<String> = args
            .run
            .only
            .iter()
            .filter(|o| !ids.contains(&o.as_str()))
            .map(|o| match crate::spec::closest(o, &ids) {
                Some(c) => {
                    format!("--only {o}: no row of the matrix is named so; did you mean `{c}`?")
                }
                None => format!("--only {o}: no row of the matrix is named so"),
            })
            .collect();
        if !unknown.is_empty() {
            for u in unknown {
                error(u);
            }
            error(format!("the rows: {}", ids.join(", ")));
            return EXIT_BAD_INPUT;
        }
        let only = std::mem::take(&mut args.run.only);
        rows.retain(|r| only.iter().any(|o| o == r.id));
    }
    let out = args.run.out.clone().unwrap_or_else(|| {
        let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace(':', "");
        PathBuf::from("runs").join(format!("qualify-{stamp}"))
    });
    let dir = out.join("experiments");
    if let Err(e) = std::fs::create_dir_all(&dir) {
        error(format!("cannot create {}: {e}", dir.display()));
        return EXIT_HARNESS;
    }
    for row in &rows {
        if let RowBody::Run(text) = &row.body {
            let file = dir.join(format!("{}.yaml", row.id));
            if let Err(e) = std::fs::write(&file, text) {
                error(format!("cannot write {}: {e}", file.display()));
                return EXIT_HARNESS;
            }
        }
    }
    let repeat = args.run.repeat.unwrap_or(if args.quick { 3 } else { 10 });
    if !quiet || args.plan_only {
        eprintln!(
            "qualify: storage class {class}{}, {} rows ({} to run, {repeat} time(s) each), experiments in {}",
            match attaches {
                Some(true) => " (attaches)",
                Some(false) => " (does not attach)",
                None => "",
            },
            rows.len(),
            rows.iter().filter(|r| matches!(r.body, RowBody::Run(_))).count(),
            dir.display()
        );
        for row in &rows {
            match &row.body {
                RowBody::Run(_) => eprintln!("  {:<24} {}", row.id, row.title),
                RowBody::NotApplicable(why) => {
                    eprintln!("  {:<24} not applicable: {why}", row.id)
                }
            }
        }
    }
    if args.plan_only {
        // The refusals the run would make on this cluster, and what it would cost.
        args.run.paths = vec![dir.clone()];
        args.run.repeat = Some(repeat);
        match super::run::plan_refusals(&args.run) {
            Ok(not_run) => {
                for n in &not_run {
                    eprintln!(
                        "  would be refused here: {} ({}): {}",
                        n.experiment, n.variant, n.reason
                    );
                }
            }
            Err(code) => return code,
        }
        let secs: u64 = rows
            .iter()
            .filter_map(|r| match &r.body {
                RowBody::Run(text) => Some(estimate_secs(text)),
                RowBody::NotApplicable(_) => None,
            })
            .sum::<u64>()
            * repeat as u64;
        eprintln!(
            "estimate: about {} one run after the other (each run's setup, steady state and heal \
             plus its failover window, or its recovery timeout where no recovery is expected); \
             lanes divide it",
            crate::units::fmt_ms(secs * 1000)
        );
        return super::EXIT_OK;
    }
    args.run.paths = vec![dir];
    args.run.out = Some(out.join("runs"));
    args.run.repeat = Some(repeat);
    // Lanes never change what a run measures (issue 18's comparison): as many as the cluster
    // allows unless a number of lanes was asked for.
    if args.run.parallel == Parallel::Lanes(1) {
        args.run.parallel = Parallel::Auto;
    }
    let runs_dir = out.join("runs");
    let code = run::run(args.run, quiet).await;
    let report = match super::report::build(&runs_dir) {
        Ok(r) => r,
        Err(e) => {
            error(format!("cannot read the runs back for the sheet: {e}"));
            return if code == 0 { EXIT_HARNESS } else { code };
        }
    };
    let planned: Vec<PlannedRow<'_>> = rows
        .iter()
        .map(|r| PlannedRow {
            id: r.id,
            title: r.title,
            source: &r.source,
            applies: match &r.body {
                RowBody::Run(_) => Ok(format!("experiments/{}.yaml", r.id)),
                RowBody::NotApplicable(why) => Err(why.clone()),
            },
        })
        .collect();
    let env = SheetEnvironment {
        storage_class: class.clone(),
        driver: driver.as_ref().map(|d| d.driver.clone()),
        provisioner: facts.as_ref().and_then(|f| f.provisioner.clone()),
        attach_required: attaches,
        driver_version: driver_facts.as_ref().and_then(|d| d.version.clone()),
        driver_nodes: driver_facts.as_ref().map(|d| d.registered_nodes.len()),
        kubernetes: facts.as_ref().map(|f| f.kubernetes.clone()),
        nodes: facts.as_ref().map(|f| f.nodes.len()),
    };
    let provenance = sheet::Provenance {
        made: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        cluster: Some(context.clone()),
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let s = sheet::sheet(
        &format!("nodedown {}", env!("CARGO_PKG_VERSION")),
        env,
        args.quick,
        repeat,
        &planned,
        &report,
        Some(provenance),
    );
    let json = serde_json::to_string_pretty(&s).expect("a sheet serializes");
    let md = sheet::markdown(&s);
    let (xml, page) = (sheet::junit(&s), sheet::html(&s));
    for (name, text) in [
        ("sheet.json", json.as_str()),
        ("sheet.md", md.as_str()),
        ("sheet.junit.xml", xml.as_str()),
        ("sheet.html", page.as_str()),
    ] {
        if let Err(e) = std::fs::write(out.join(name), text) {
            error(format!("cannot write {}: {e}", out.join(name).display()));
            return EXIT_HARNESS;
        }
    }
    println!("{md}");
    eprintln!(
        "sheet: {}/{{sheet.json,sheet.md,sheet.html,sheet.junit.xml}}",
        out.display()
    );
    code
}

/// The StorageClass name in a manifest (`metadata.name`); the class must be installed.
fn class_in_manifest(path: &std::path::Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: cannot read the StorageClass manifest: {e}",
            path.display()
        )
    })?;
    let v: serde_json::Value = serde_saphyr::from_str(&text)
        .map_err(|e| format!("{}: not a StorageClass manifest: {e}", path.display()))?;
    if v["kind"].as_str() != Some("StorageClass") {
        return Err(format!(
            "{}: not a StorageClass manifest (kind: {})",
            path.display(),
            v["kind"]
        ));
    }
    v["metadata"]["name"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{}: the StorageClass has no metadata.name", path.display()))
}

/// Whether `ctx` is a context of the kubeconfig (KUBECONFIG, else ~/.kube/config): an error
/// naming the closest and every context there is when not.
fn context_exists(ctx: &str) -> Result<(), String> {
    let config = kube::config::Kubeconfig::read()
        .map_err(|e| format!("--context {ctx}: cannot read the kubeconfig: {e}"))?;
    let names: Vec<&str> = config.contexts.iter().map(|c| c.name.as_str()).collect();
    if names.contains(&ctx) {
        return Ok(());
    }
    let closest = crate::spec::closest(ctx, &names)
        .map(|c| format!("; did you mean `{c}`?"))
        .unwrap_or_default();
    Err(format!(
        "--context {ctx}: the kubeconfig has no such context{closest} (its contexts: {})",
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    ))
}

/// A rough wall time of one run of a row's experiment, in seconds: ~40 s of setup, steady
/// state and heal, plus a minute of failover where it should recover, or its whole recovery
/// timeout where it should not (a run that waits for nothing).
fn estimate_secs(text: &str) -> u64 {
    let v: serde_json::Value = serde_saphyr::from_str(text).unwrap_or_default();
    let timeout = v["timeouts"]["recovery"]
        .as_str()
        .and_then(|t| crate::spec::duration::parse(t).ok())
        .map_or(180, |d| d.as_secs());
    let recovers = !text.contains("recovered: false");
    40 + if recovers { timeout.min(60) } else { timeout }
}

/// The kubeconfig context the runs will use: `--context`, else `kind-<cluster name>`.
fn context_of(args: &RunArgs) -> String {
    args.context.clone().unwrap_or_else(|| {
        format!(
            "kind-{}",
            args.cluster_name.as_deref().unwrap_or("nodedown")
        )
    })
}

/// The class's provisioner and attachRequired and the cluster's version and nodes, through the
/// kubeconfig context the runs will use (`--context`, else `kind-<cluster name>`); `None` when
/// the cluster cannot be reached yet (a kind cluster qualify is about to create).
async fn cluster_facts(
    args: &RunArgs,
    class: &str,
    driver: Option<&str>,
) -> Option<(
    crate::timeline::ClusterFacts,
    Option<crate::runner::DriverFacts>,
)> {
    let context = context_of(args);
    let (client, _) = crate::cluster::client_for_context(Some(&context))
        .await
        .ok()?;
    let facts = crate::runner::facts(&client, class).await.ok()?;
    let name = driver.or(facts.provisioner.as_deref());
    let driver = match name {
        Some(n) => crate::runner::driver_facts(&client, n).await.ok(),
        None => None,
    };
    Some((facts, driver))
}
