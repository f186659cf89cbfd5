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
    let rows = matrix(&storage, args.quick);
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
