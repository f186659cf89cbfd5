//! `nodedown qualify`: the failover qualification of a storage class, from the driver
//! definition vendors keep for the upstream storage suites (or a class name alone). It writes
//! the matrix as ordinary experiment files (`OUT/experiments/`), runs them with `nodedown run`'s
//! machinery (`OUT/runs/`: every report a run writes), and writes the sheet (`OUT/sheet.json`,
//! `OUT/sheet.md`).

use super::run::{self, RunArgs};
use super::{error, EXIT_BAD_INPUT, EXIT_HARNESS};
use crate::plan::lanes::Parallel;
use crate::plan::qualify::{file_text, matrix, RowBody, Storage};
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
    /// Resolve a relative `StorageClass.FromFile` from this directory (as upstream's testfiles
    /// resolve it from the repository root) instead of from the testdriver file's directory.
    #[arg(long, value_name = "DIR")]
    pub repo_root: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// The class the rows use: one installed, or one qualify makes for the runs (as the upstream
/// suites do for `FromName` and `FromFile`) and deletes afterwards.
enum ClassPlan {
    Installed(String),
    Create {
        name: String,
        /// The StorageClass object.
        object: serde_json::Value,
        /// Where it comes from, for people: `FromName (provisioner X)`, `FromFile path`.
        from: String,
    },
}

impl ClassPlan {
    fn name(&self) -> &str {
        match self {
            ClassPlan::Installed(n) | ClassPlan::Create { name: n, .. } => n,
        }
    }
}

/// A name of the invocation's own for a class it makes: `nd-qualify-<5 hex digits>`.
fn class_name() -> String {
    format!("nd-qualify-{}", crate::runner::random_suffix())
}

/// The StorageClass of a `FromFile` manifest under the name `name`: exactly one StorageClass,
/// not a Go template (upstream renders none either), its server-side fields dropped.
fn class_from_manifest(path: &std::path::Path, name: &str) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: cannot read the StorageClass manifest of StorageClass.FromFile: {e}",
            path.display()
        )
    })?;
    if let Some((i, line)) = text.lines().enumerate().find(|(_, l)| l.contains("{{")) {
        return Err(format!(
            "{}:{}: a Go template (`{}`): the suites load FromFile as it is, and so does nodedown; render it with your values first and point FromFile at the result",
            path.display(),
            i + 1,
            line.trim()
        ));
    }
    let mut v: serde_json::Value = serde_saphyr::from_str(&text)
        .map_err(|e| format!("{}: not a StorageClass manifest: {e}", path.display()))?;
    if v["kind"].as_str() != Some("StorageClass") {
        return Err(format!(
            "{}: not a StorageClass manifest (kind: {}); StorageClass.FromFile names one StorageClass",
            path.display(),
            v["kind"]
        ));
    }
    if v["provisioner"].as_str().is_none() {
        return Err(format!(
            "{}: the StorageClass has no provisioner",
            path.display()
        ));
    }
    let meta = v["metadata"].as_object().cloned().unwrap_or_default();
    let mut labels = meta
        .get("labels")
        .and_then(|l| l.as_object().cloned())
        .unwrap_or_default();
    labels.insert(
        "app.kubernetes.io/managed-by".into(),
        serde_json::Value::String("nodedown".into()),
    );
    let mut m = serde_json::Map::new();
    m.insert("name".into(), name.into());
    m.insert("labels".into(), serde_json::Value::Object(labels));
    if let Some(a) = meta.get("annotations") {
        // A class the manifest marks as the default would become the cluster's default.
        let mut a = a.as_object().cloned().unwrap_or_default();
        a.remove("storageclass.kubernetes.io/is-default-class");
        m.insert("annotations".into(), serde_json::Value::Object(a));
    }
    v["metadata"] = serde_json::Value::Object(m);
    Ok(v)
}

/// Creates the planned class, recording its deletion in a journal below the runs' directory
/// first (so `nodedown cleanup OUT/runs` deletes it after a crash).
async fn create_class(
    context: &str,
    journal_dir: &std::path::Path,
    name: &str,
    object: &serde_json::Value,
) -> Result<(crate::journal::Journal, u64, kube::Client), String> {
    use k8s_openapi::api::storage::v1::StorageClass;
    let sc: StorageClass = serde_json::from_value(object.clone())
        .map_err(|e| format!("the StorageClass {name} is not valid: {e}"))?;
    let (client, _) = crate::cluster::client_for_context(Some(context))
        .await
        .map_err(|e| format!("cannot reach the cluster to create StorageClass {name}: {e}"))?;
    std::fs::create_dir_all(journal_dir)
        .map_err(|e| format!("cannot create {}: {e}", journal_dir.display()))?;
    let journal = crate::journal::Journal::open(&journal_dir.join(crate::store::JOURNAL_FILE))
        .map_err(|e| format!("cannot open the journal in {}: {e}", journal_dir.display()))?;
    let id = journal
        .record(crate::journal::Undo::DeleteStorageClass {
            name: name.to_string(),
        })
        .map_err(|e| format!("cannot write the journal: {e}"))?;
    kube::Api::<StorageClass>::all(client.clone())
        .create(&Default::default(), &sc)
        .await
        .map_err(|e| format!("cannot create StorageClass {name}: {e}"))?;
    Ok((journal, id, client))
}

/// A class qualify made for the runs: its journal, the journal entry and the client that
/// deletes it.
type Created = (crate::journal::Journal, u64, kube::Client);

/// Runs the qualification; returns the exit code (`nodedown run`'s contract over the rows that
/// ran; a not-applicable row never fails it). In order: read the driver, plan the class, make
/// it, read the cluster's facts, plan the rows, write them, run them, delete the class, write
/// the sheet and its metrics.
pub async fn qualify(mut args: QualifyArgs, quiet: bool) -> u8 {
    if !args.run.paths.is_empty() {
        error("qualify writes its own experiments: give no experiment files (rerun a row with `nodedown run OUT/experiments/<row>.yaml`)");
        return EXIT_BAD_INPUT;
    }
    if let Err(code) = super::push::check(args.run.pushgateway.as_deref()) {
        return code;
    }
    let driver = match load_driver(&args) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let plan = match class_plan(&args, driver.as_ref()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let class = plan.name().to_string();
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
    let out = args.run.out.clone().unwrap_or_else(|| {
        let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
            .to_string()
            .replace(':', "");
        PathBuf::from("runs").join(format!("qualify-{stamp}"))
    });
    // A class made for the runs exists before anything reads it, and goes when they end.
    let created = match make_class(&plan, &context, &out, args.plan_only).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let planned_provisioner = match &plan {
        ClassPlan::Create { object, .. } => object["provisioner"].as_str().map(str::to_string),
        ClassPlan::Installed(_) => None,
    };
    let (facts, driver_facts, fence_class, zones, binding_mode) = match cluster_facts(
        &args.run,
        &class,
        driver.as_ref().map(|d| d.driver.as_str()),
        planned_provisioner.as_deref(),
    )
    .await
    {
        Some(f) => (
            Some(f.cluster),
            f.driver,
            f.fence_class,
            f.zones,
            f.binding_mode,
        ),
        None => (None, None, None, Vec::new(), None),
    };
    // Under --plan-only a class to be made is not there to read: its manifest says.
    let binding_mode = binding_mode.or_else(|| match &plan {
        ClassPlan::Create { object, .. } => Some(
            object["volumeBindingMode"]
                .as_str()
                .unwrap_or("Immediate")
                .to_string(),
        ),
        ClassPlan::Installed(_) => None,
    });
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
    let mut storage = match &driver {
        Some(d) => Storage::from_driver(d, &class, attaches),
        None => Storage::from_class(&class, attaches),
    };
    storage.network_fence_class = fence_class;
    storage.zones = zones;
    if driver.is_none() {
        // No testdriver file: a driver that publishes topology keys makes zonal volumes.
        storage.zonal = driver_facts
            .as_ref()
            .filter(|f| !f.topology_keys.is_empty())
            .map(|f| {
                format!(
                    "the driver publishes the topology keys {} on its CSINodes",
                    f.topology_keys.join(", ")
                )
            });
    }
    storage.early_zone = crate::plan::lanes::early_zone(
        &class,
        binding_mode.as_deref(),
        driver
            .as_ref()
            .map(|d| d.topology_keys.as_slice())
            .unwrap_or_default(),
        driver_facts
            .as_ref()
            .map(|f| f.topology_keys.as_slice())
            .unwrap_or_default(),
    );
    let rows = matrix(&storage, args.quick);
    if let Err(code) = check_only(&rows, &args.run.only) {
        return code;
    }
    let dir = out.join("experiments");
    if let Err(code) = write_rows(&dir, &class, &rows) {
        return code;
    }
    let repeat = args.run.repeat.unwrap_or(if args.quick { 3 } else { 10 });
    if !quiet || args.plan_only {
        print_rows(&class, attaches, &rows, &args.run.only, repeat, &dir);
    }
    if let Some(why) = &storage.early_zone {
        eprintln!(
            "qualify: {why}: each volume's zone is chosen before its pod is placed, and a lane (whole zones) may not reach it, so the rows run alone, not in lanes (a class with volumeBindingMode: WaitForFirstConsumer can use lanes)"
        );
    }
    if args.plan_only {
        args.run.paths = vec![dir];
        args.run.repeat = Some(repeat);
        return plan_only(&args.run, &rows, repeat);
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
    // The qualification's metrics are its sheet's and its runs', written (and pushed) once the
    // sheet is made, not by the runs alone.
    let metrics_file = args.run.metrics_file.take();
    let pushgateway = args.run.pushgateway.take();
    let code = run::run(args.run, quiet).await;
    if let Some(created) = created {
        delete_class(created, &class, &runs_dir, quiet).await;
    }
    let report = match super::report::build(&runs_dir) {
        Ok(r) => r,
        Err(e) => {
            error(format!("cannot read the runs back for the sheet: {e}"));
            return if code == 0 { EXIT_HARNESS } else { code };
        }
    };
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
    let s = match write_sheet(&out, env, &context, args.quick, repeat, &rows, &report) {
        Ok(s) => s,
        Err(code) => return code,
    };
    if metrics_file.is_some() || pushgateway.is_some() {
        let metrics = super::report::qualification_metrics(&s, &runs_dir);
        if let Some(file) = &metrics_file {
            if let Err(e) = run::write_replacing(file, &metrics) {
                error(format!(
                    "cannot write the metrics to {}: {e}",
                    file.display()
                ));
                return EXIT_HARNESS;
            }
        }
        if let Some(given) = &pushgateway {
            if let Err(e) = super::push::push_to(given, &metrics, quiet) {
                error(e);
                return EXIT_HARNESS;
            }
        }
    }
    code
}

/// The testdriver file, its warnings printed (`None` without one; `Err`: the exit code).
fn load_driver(args: &QualifyArgs) -> Result<Option<crate::spec::TestDriver>, u8> {
    let Some(path) = &args.testdriver else {
        return Ok(None);
    };
    read_testdriver(path).map(Some).map_err(|e| {
        error(e);
        EXIT_BAD_INPUT
    })
}

/// Reads a testdriver file and prints its warnings and notes (`qualify`, `bundle run`).
pub(super) fn read_testdriver(
    path: &std::path::Path,
) -> Result<crate::spec::TestDriver, crate::spec::SpecError> {
    let (d, warnings) = crate::spec::load_testdriver(path)?;
    for w in warnings {
        let kind = if w.note { "note" } else { "warning" };
        eprintln!("{kind}: {}:{w}", path.display());
    }
    Ok(d)
}

/// Where a `StorageClass.FromFile` manifest is read from: a relative path from `--repo-root`
/// when given, else as resolved from the testdriver file's directory.
pub(super) fn manifest_path(
    written: &std::path::Path,
    resolved: &std::path::Path,
    repo_root: Option<&std::path::Path>,
) -> PathBuf {
    match repo_root {
        Some(root) if written.is_relative() => root.join(written),
        _ => resolved.to_path_buf(),
    }
}

/// The class the rows use: `--storage-class`, else the testdriver file's (`Err`: exit 2).
fn class_plan(
    args: &QualifyArgs,
    driver: Option<&crate::spec::TestDriver>,
) -> Result<ClassPlan, u8> {
    use crate::spec::ClassSource;
    Ok(
        match (&args.storage_class, driver.and_then(|d| d.class.clone())) {
            (Some(c), _) => ClassPlan::Installed(c.clone()),
            (None, Some(ClassSource::FromExistingClassName(c))) => ClassPlan::Installed(c),
            (None, Some(ClassSource::FromName)) => {
                // As upstream: a class whose provisioner is DriverInfo.Name, nothing else set —
                // but for a driver with TopologyKeys, WaitForFirstConsumer, as upstream's
                // topology suite makes its delayed-binding class: the volume is then made in the
                // zone of the node the scheduler picked inside the run's lane, where the
                // replacement can follow it (Immediate binding picks a zone before the pod, maybe
                // one the lane does not reach).
                let name = class_name();
                let provisioner = driver.map(|d| d.driver.clone()).unwrap_or_default();
                let zonal = driver.is_some_and(|d| !d.topology_keys.is_empty());
                let mut object = serde_json::json!({
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "StorageClass",
                    "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "nodedown"}},
                    "provisioner": provisioner,
                });
                if zonal {
                    object["volumeBindingMode"] = "WaitForFirstConsumer".into();
                }
                ClassPlan::Create {
                    object,
                    from: format!(
                        "StorageClass.FromName: provisioner {provisioner}{}",
                        if zonal {
                            ", volumeBindingMode WaitForFirstConsumer (the driver has TopologyKeys)"
                        } else {
                            ""
                        }
                    ),
                    name,
                }
            }
            (None, Some(ClassSource::FromFile { written, resolved })) => {
                let path = manifest_path(&written, &resolved, args.repo_root.as_deref());
                let name = class_name();
                match class_from_manifest(&path, &name) {
                    Ok(object) => ClassPlan::Create {
                        object,
                        from: format!("StorageClass.FromFile {}", path.display()),
                        name,
                    },
                    Err(e) => {
                        error(e);
                        return Err(EXIT_BAD_INPUT);
                    }
                }
            }
            (None, None) => {
                error("no storage class: the testdriver file has no StorageClass; give --storage-class NAME");
                return Err(EXIT_BAD_INPUT);
            }
        },
    )
}

/// Makes the planned class (under `--plan-only`, says it would); `None` for an installed one.
async fn make_class(
    plan: &ClassPlan,
    context: &str,
    out: &std::path::Path,
    plan_only: bool,
) -> Result<Option<Created>, u8> {
    match (plan, plan_only) {
        (ClassPlan::Create { name, object, from }, false) => {
            let journal_dir = out.join("runs").join("storage-class");
            match create_class(context, &journal_dir, name, object).await {
                Ok(c) => {
                    eprintln!("qualify: created StorageClass {name} ({from}); it is deleted when the runs end");
                    Ok(Some(c))
                }
                Err(e) => {
                    error(format!(
                        "{e}; a class made from the testdriver file ({from}) needs the cluster up before the runs (testenv/up, or --context)"
                    ));
                    Err(EXIT_HARNESS)
                }
            }
        }
        (ClassPlan::Create { name, from, .. }, true) => {
            eprintln!(
                "qualify: would create StorageClass {name} ({from}) for the runs and delete it after"
            );
            Ok(None)
        }
        (ClassPlan::Installed(_), _) => Ok(None),
    }
}

/// Deletes the class made for the runs, its journal entry then healed (a failure is said, with
/// the cleanup that deletes it).
async fn delete_class(created: Created, class: &str, runs_dir: &std::path::Path, quiet: bool) {
    let (journal, id, client) = created;
    let api = kube::Api::<k8s_openapi::api::storage::v1::StorageClass>::all(client);
    match api.delete(class, &Default::default()).await {
        Ok(_) => {
            let _ = journal.healed(id);
            if !quiet {
                eprintln!("qualify: deleted StorageClass {class}");
            }
        }
        Err(e) if crate::remediation::is_not_found(&e) => {
            let _ = journal.healed(id);
        }
        Err(e) => error(format!(
            "cannot delete StorageClass {class}: {e}; `nodedown cleanup {}` deletes it",
            runs_dir.display()
        )),
    }
}

/// `--only` picks rows of the matrix by id (each row's experiment has one variant named as the
/// row, so the runs take the same `--only`); one that names no row is refused with the closest
/// and every row there is, one that names a row not applicable with its reason. The rows left
/// out stay on the sheet, unknown.
fn check_only(rows: &[crate::plan::qualify::Row], only: &[String]) -> Result<(), u8> {
    if only.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = rows.iter().map(|r| r.id).collect();
    let unknown: Vec<String> = only
        .iter()
        .filter(|o| !ids.contains(&o.as_str()))
        .map(|o| match crate::spec::closest(o, &ids) {
            Some(c) => format!("--only {o}: no row of the matrix is named so; did you mean `{c}`?"),
            None => format!("--only {o}: no row of the matrix is named so"),
        })
        .collect();
    if !unknown.is_empty() {
        for u in unknown {
            error(u);
        }
        error(format!("the rows: {}", ids.join(", ")));
        return Err(EXIT_BAD_INPUT);
    }
    for r in rows {
        if let (true, RowBody::NotApplicable(why)) = (only.iter().any(|o| o == r.id), &r.body) {
            error(format!(
                "--only {}: the row is not applicable here: {why}",
                r.id
            ));
            return Err(EXIT_BAD_INPUT);
        }
    }
    Ok(())
}

/// Whether `--only` (empty: every row) picks row `id`.
fn picked(only: &[String], id: &str) -> bool {
    only.is_empty() || only.iter().any(|o| o == id)
}

/// Writes each row that runs as an experiment file in `dir`.
fn write_rows(
    dir: &std::path::Path,
    class: &str,
    rows: &[crate::plan::qualify::Row],
) -> Result<(), u8> {
    if let Err(e) = std::fs::create_dir_all(dir) {
        error(format!("cannot create {}: {e}", dir.display()));
        return Err(EXIT_HARNESS);
    }
    for row in rows {
        if let RowBody::Run(exp) = &row.body {
            let file = dir.join(format!("{}.yaml", row.id));
            if let Err(e) = std::fs::write(&file, file_text(class, exp)) {
                error(format!("cannot write {}: {e}", file.display()));
                return Err(EXIT_HARNESS);
            }
        }
    }
    Ok(())
}

/// The matrix for people: each row, run, left out by `--only`, or not applicable and why.
fn print_rows(
    class: &str,
    attaches: Option<bool>,
    rows: &[crate::plan::qualify::Row],
    only: &[String],
    repeat: u32,
    dir: &std::path::Path,
) {
    eprintln!(
        "qualify: storage class {class}{}, {} rows ({} to run, {repeat} time(s) each), experiments in {}",
        match attaches {
            Some(true) => " (attaches)",
            Some(false) => " (does not attach)",
            None => "",
        },
        rows.len(),
        rows.iter()
            .filter(|r| matches!(r.body, RowBody::Run(_)) && picked(only, r.id))
            .count(),
        dir.display()
    );
    for row in rows {
        match &row.body {
            RowBody::Run(_) if !picked(only, row.id) => {
                eprintln!("  {:<24} left out by --only", row.id)
            }
            RowBody::Run(_) => eprintln!("  {:<24} {}", row.id, row.title),
            RowBody::NotApplicable(why) => {
                eprintln!("  {:<24} not applicable: {why}", row.id)
            }
        }
    }
}

/// `--plan-only`: the refusals the runs would meet on this cluster, and what they would cost.
fn plan_only(run_args: &RunArgs, rows: &[crate::plan::qualify::Row], repeat: u32) -> u8 {
    match super::run::plan_refusals(run_args) {
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
            RowBody::Run(exp) if picked(&run_args.only, r.id) => Some(estimate_secs(exp)),
            _ => None,
        })
        .sum::<u64>()
        * repeat as u64;
    eprintln!(
        "estimate: about {} one run after the other (each run's setup, steady state and heal \
         plus its failover window, or its recovery timeout where no recovery is expected); \
         lanes divide it",
        crate::units::fmt_ms(secs * 1000)
    );
    super::EXIT_OK
}

/// Makes the sheet from the runs' report and writes it in four formats below `out`; prints its
/// Markdown.
fn write_sheet(
    out: &std::path::Path,
    env: SheetEnvironment,
    context: &str,
    quick: bool,
    repeat: u32,
    rows: &[crate::plan::qualify::Row],
    report: &crate::report::Report,
) -> Result<sheet::Sheet, u8> {
    let planned: Vec<PlannedRow<'_>> = rows
        .iter()
        .map(|r| PlannedRow {
            id: r.id,
            title: r.title,
            source: &r.source,
            applies: match &r.body {
                RowBody::Run(_) => sheet::Applies::Run {
                    experiment: format!("experiments/{}.yaml", r.id),
                },
                RowBody::NotApplicable(why) => sheet::Applies::NotApplicable {
                    reason: why.clone(),
                },
            },
        })
        .collect();
    let provenance = sheet::Provenance {
        made: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        cluster: Some(context.to_string()),
        command: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let s = sheet::sheet(
        &format!("nodedown {}", env!("CARGO_PKG_VERSION")),
        env,
        quick,
        repeat,
        &planned,
        report,
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
            return Err(EXIT_HARNESS);
        }
    }
    print!("{}", sheet::table(&s, super::report::terminal_width()));
    eprintln!(
        "sheet: {}/{{sheet.json,sheet.md,sheet.html,sheet.junit.xml}}",
        out.display()
    );
    Ok(s)
}

/// Whether `ctx` is a context of the kubeconfig (KUBECONFIG, else ~/.kube/config): an error
/// naming the closest and every context there is when not.
fn context_exists(ctx: &str) -> Result<(), String> {
    if ctx == crate::cluster::IN_CLUSTER {
        // The pod's service account (reached as `run` reaches it), not a kubeconfig context.
        return if crate::cluster::in_a_pod() {
            Ok(())
        } else {
            Err(format!(
                "--context {ctx}: not in a pod with a service account (the context of nodedown inside the cluster it tests)"
            ))
        };
    }
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
fn estimate_secs(exp: &crate::spec::Experiment) -> u64 {
    exp.variant_specs()
        .iter()
        .map(|v| {
            let timeout = v.timeouts.recovery.as_secs();
            let recovers = v.expect.recovered != Some(false);
            40 + if recovers { timeout.min(60) } else { timeout }
        })
        .sum()
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

/// What the cluster says about the class, its driver and its zones before the rows are made.
struct Facts {
    cluster: crate::timeline::ClusterFacts,
    driver: Option<crate::runner::DriverFacts>,
    fence_class: Option<String>,
    zones: Vec<(String, usize)>,
    /// The installed class's `volumeBindingMode` (`None` when not read; absent in the class:
    /// `Immediate`, the API's default).
    binding_mode: Option<String>,
}

/// The class's provisioner, attachRequired and binding mode, its driver's facts, the zones and
/// the cluster's version and nodes, through the kubeconfig context the runs will use
/// (`--context`, else `kind-<cluster name>`); `None` when the cluster cannot be reached yet (a
/// kind cluster qualify is about to create).
/// `planned`: the provisioner of a class qualify will make (not there yet under --plan-only):
/// its CSIDriver says whether it attaches.
async fn cluster_facts(
    args: &RunArgs,
    class: &str,
    driver: Option<&str>,
    planned: Option<&str>,
) -> Option<Facts> {
    let context = context_of(args);
    let (client, _) = crate::cluster::client_for_context(Some(&context))
        .await
        .ok()?;
    let mut facts = crate::runner::facts(&client, class).await.ok()?;
    if let (None, Some(p)) = (&facts.provisioner, planned) {
        facts.provisioner = Some(p.to_string());
        facts.attach_required =
            kube::Api::<k8s_openapi::api::storage::v1::CSIDriver>::all(client.clone())
                .get_opt(p)
                .await
                .ok()
                .flatten()
                .map(|d| d.spec.attach_required.unwrap_or(true));
    }
    let name = driver.or(facts.provisioner.as_deref());
    let driver_facts = match name {
        Some(n) => crate::runner::driver_facts(&client, n).await.ok(),
        None => None,
    };
    // The platform's NetworkFenceClass for the driver: the storage-fence row runs when there is one.
    let fence_class = match name {
        Some(n) => crate::remediation::fence::class_for(&client, n)
            .await
            .ok()
            .flatten(),
        None => None,
    };
    // The zones and their schedulable workers: the zone-lost row loses one of them.
    let zones = match kube::Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .list(&Default::default())
        .await
    {
        Ok(nodes) => zones_of(&nodes.items),
        Err(_) => Vec::new(),
    };
    let binding_mode = kube::Api::<k8s_openapi::api::storage::v1::StorageClass>::all(client)
        .get_opt(class)
        .await
        .ok()
        .flatten()
        .map(|c| {
            c.volume_binding_mode
                .unwrap_or_else(|| "Immediate".to_string())
        });
    Some(Facts {
        cluster: facts,
        driver: driver_facts,
        fence_class,
        zones,
        binding_mode,
    })
}

/// The zones of the schedulable workers (`topology.kubernetes.io/zone`), by name, each with
/// how many it has.
fn zones_of(nodes: &[k8s_openapi::api::core::v1::Node]) -> Vec<(String, usize)> {
    let workers = crate::runner::heal::schedulable_workers(nodes);
    let mut zones: std::collections::BTreeMap<String, usize> = Default::default();
    for n in nodes {
        let zone = n
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(crate::spec::ZONE_LABEL));
        if let (Some(zone), Some(name)) = (zone, &n.metadata.name) {
            if workers.contains(name) {
                *zones.entry(zone.clone()).or_default() += 1;
            }
        }
    }
    zones.into_iter().collect()
}
