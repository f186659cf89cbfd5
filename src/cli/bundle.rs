//! `nodedown bundle run`: the qualification as a conformance-style bundle — `nodedown qualify`
//! runs as a Job inside the cluster it qualifies (in the spirit of a Sonobuoy plugin), and one
//! command deploys it, follows its log, fetches the sheet, JUnit and run directories as a
//! tarball, deletes what it made and exits with the qualification's exit code.
//!
//! The hidden `bundle job`, `bundle ready` and `bundle tar` run inside the pod (nodedown's
//! image has no shell and no tar): see `plan::bundle`.

use super::{error, EXIT_BAD_INPUT, EXIT_HARNESS, EXIT_INTERRUPTED, EXIT_OK};
use crate::cluster::bundle::{self as effects, PodState};
use crate::plan::bundle::{
    self, BundlePlan, Input, EXIT_CODE_FILE, QUALIFICATION_DIR, RETRIEVED_FILE, TESTDRIVER_FILE,
};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct BundleArgs {
    #[command(subcommand)]
    pub command: BundleCommand,
}

#[derive(Debug, Subcommand)]
pub enum BundleCommand {
    /// Run `nodedown qualify` as a Job inside the cluster and bring back its sheet, JUnit and
    /// runs (a tarball and its contents); exits with the qualification's exit code.
    Run(Box<BundleRunArgs>),
    /// In the bundle's pod: runs `nodedown ARGS…` below RESULTS, records its exit code, and
    /// holds the results until they are fetched.
    #[command(hide = true)]
    Job {
        #[arg(long)]
        results: PathBuf,
        #[arg(long, value_parser = crate::spec::duration::parse, default_value = "1h")]
        hold: Duration,
        #[arg(last = true, required = true)]
        args: Vec<String>,
    },
    /// In the bundle's pod: the readiness probe (exit 0 once the results are complete).
    #[command(hide = true)]
    Ready {
        #[arg(long)]
        results: PathBuf,
    },
    /// In the bundle's pod: DIR as a gzip'd tar on stdout.
    #[command(hide = true)]
    Tar {
        dir: PathBuf,
        /// Then mark the results fetched (the pod ends).
        #[arg(long)]
        mark_retrieved: bool,
    },
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
  nodedown bundle run --context ci --allow-context ci --image registry.example/nodedown:TAG \\
      --testdriver driver.yaml -- --quick
  nodedown bundle run --allow-context kind-x --image IMAGE -- --storage-class rwo --quick

Everything after `--` goes to `nodedown qualify` inside the cluster (not: --context,
--allow-context, --out, --runner-node, --testdriver: the bundle sets those).
EXIT CODES: the qualification's (0 every row passed · 1 a row failed or is undecided · 3 it
could not run); 2 bad input; 3 the bundle could not deploy or fetch; 130 interrupted.")]
pub struct BundleRunArgs {
    /// The kubeconfig context of the cluster (default: the current context).
    #[arg(long)]
    pub context: Option<String>,
    /// Confirm the cluster may be faulted: name its context (as for `nodedown run`).
    #[arg(long, env = "NODEDOWN_ALLOW_CONTEXT", value_name = "CONTEXT")]
    pub allow_context: Option<String>,
    /// nodedown's image where the cluster's nodes pull it (`nodedown image export` makes it);
    /// the Job, the workload and the node agent all run it.
    #[arg(long, env = "NODEDOWN_IMAGE", value_name = "IMAGE")]
    pub image: String,
    /// The testdriver file, shipped to the Job with the StorageClass manifest it names
    /// (`FromFile`, relative to it).
    #[arg(long, value_name = "FILE")]
    pub testdriver: Option<PathBuf>,
    /// Resolve a relative `StorageClass.FromFile` from this directory (as `qualify --repo-root`).
    #[arg(long, value_name = "DIR")]
    pub repo_root: Option<PathBuf>,
    /// The namespace the bundle runs in (made, and deleted afterwards).
    #[arg(long, default_value = "nodedown-bundle")]
    pub namespace: String,
    /// Where the results come back: bundle.tar.gz, its contents (qualification/: the sheet,
    /// sheet.junit.xml, experiments, runs), pod.log and the journal.
    #[arg(long, default_value = "nodedown-bundle", value_name = "DIR")]
    pub out: PathBuf,
    /// How long the qualification may take in the cluster.
    #[arg(long, value_parser = crate::spec::duration::parse, default_value = "3h")]
    pub timeout: Duration,
    /// Environment for the Job's container, NAME=VALUE (repeatable), e.g. NODEDOWN_PUSHGATEWAY.
    /// Power hooks (NODEDOWN_POWER_OFF, …) run through a shell, which nodedown's image has not:
    /// they need an image of your own.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Leave the namespace, the RBAC and the finished Job in the cluster (delete them with
    /// `nodedown cleanup OUT`).
    #[arg(long)]
    pub keep: bool,
    /// The arguments of `nodedown qualify`.
    #[arg(last = true, value_name = "QUALIFY ARGS")]
    pub qualify_args: Vec<String>,
}

pub async fn bundle(args: BundleArgs, quiet: bool) -> u8 {
    match args.command {
        BundleCommand::Run(a) => run(*a, quiet).await,
        BundleCommand::Job {
            results,
            hold,
            args,
        } => job(&results, hold, &args).await,
        BundleCommand::Ready { results } => {
            if results.join(EXIT_CODE_FILE).is_file() {
                EXIT_OK
            } else {
                1
            }
        }
        BundleCommand::Tar {
            dir,
            mark_retrieved,
        } => match write_tar(&dir, std::io::stdout().lock()) {
            Ok(()) => {
                if mark_retrieved {
                    if let Err(e) = std::fs::write(dir.join(RETRIEVED_FILE), b"") {
                        error(format!("{}: {e}", dir.join(RETRIEVED_FILE).display()));
                        return EXIT_HARNESS;
                    }
                }
                EXIT_OK
            }
            Err(e) => {
                error(format!("{}: {e}", dir.display()));
                EXIT_HARNESS
            }
        },
    }
}

/// DIR's contents (not the fetched mark) as a gzip'd tar.
fn write_tar(dir: &Path, to: impl std::io::Write) -> std::io::Result<()> {
    let gz = flate2::write::GzEncoder::new(to, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    tar.follow_symlinks(false);
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == RETRIEVED_FILE {
            continue;
        }
        if entry.file_type()?.is_dir() {
            tar.append_dir_all(&name, entry.path())?;
        } else {
            tar.append_path_with_name(entry.path(), &name)?;
        }
    }
    tar.into_inner()?.finish()?.flush()
}

/// In the pod: runs the qualification as a child (SIGTERM passed on: it heals), writes its
/// exit code, holds until the results are fetched, `hold` passed, or a signal; exits with the
/// qualification's code.
async fn job(results: &Path, hold: Duration, args: &[String]) -> u8 {
    use tokio::signal::unix::{signal, SignalKind};
    if let Err(e) = std::fs::create_dir_all(results) {
        error(format!("{}: {e}", results.display()));
        return EXIT_HARNESS;
    }
    let _ = std::fs::remove_file(results.join(EXIT_CODE_FILE));
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("nodedown"));
    let mut child = match tokio::process::Command::new(exe)
        .args(args)
        .current_dir(results)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            error(format!("cannot start nodedown {}: {e}", args.join(" ")));
            return EXIT_HARNESS;
        }
    };
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        error("cannot take over SIGTERM");
        return EXIT_HARNESS;
    };
    let mut stopping = false;
    let status = loop {
        tokio::select! {
            s = child.wait() => break s,
            _ = term.recv() => {},
            _ = int.recv() => {},
        }
        // A signal: the qualification gets it (and heals); a second one too.
        stopping = true;
        if let Some(pid) = child.id() {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        }
    };
    let code: i32 = match status {
        Ok(s) => s.code().unwrap_or_else(|| {
            128 + std::os::unix::process::ExitStatusExt::signal(&s).unwrap_or(0)
        }),
        Err(e) => {
            error(format!("waiting for the qualification: {e}"));
            EXIT_HARNESS as i32
        }
    };
    let tmp = results.join(format!("{EXIT_CODE_FILE}.tmp"));
    let written = std::fs::write(&tmp, format!("{code}\n"))
        .and_then(|()| std::fs::rename(&tmp, results.join(EXIT_CODE_FILE)));
    if let Err(e) = written {
        error(format!("{}: {e}", results.join(EXIT_CODE_FILE).display()));
        return EXIT_HARNESS;
    }
    let code = u8::try_from(code).unwrap_or(EXIT_HARNESS);
    if stopping {
        return code;
    }
    eprintln!(
        "bundle: the qualification exited {code}; its results wait in {} to be fetched (up to {})",
        results.display(),
        humantime::format_duration(hold)
    );
    let deadline = tokio::time::Instant::now() + hold;
    while !results.join(RETRIEVED_FILE).exists() && tokio::time::Instant::now() < deadline {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(500)) => {},
            _ = term.recv() => return code,
            _ = int.recv() => return code,
        }
    }
    code
}

/// `NAME=VALUE` pairs, or the first that is not one.
fn env_pairs(given: &[String]) -> Result<Vec<(String, String)>, String> {
    given
        .iter()
        .map(|e| match e.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(format!("--env {e}: give NAME=VALUE")),
        })
        .collect()
}

/// The files the qualification reads: the testdriver file and a relative FromFile manifest.
fn inputs(args: &BundleRunArgs) -> Result<Vec<Input>, String> {
    let Some(path) = &args.testdriver else {
        return Ok(Vec::new());
    };
    let driver = super::qualify::read_testdriver(path).map_err(|e| e.to_string())?;
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|e| format!("{}: cannot read: {e}", p.display()))
    };
    let mut files = vec![Input {
        path: TESTDRIVER_FILE.into(),
        text: read(path)?,
    }];
    if let Some(crate::spec::ClassSource::FromFile { written, resolved }) = &driver.class {
        let from = super::qualify::manifest_path(written, resolved, args.repo_root.as_deref());
        let shipped = bundle::input_path(written)
            .map_err(|e| format!("{}: StorageClass.FromFile {e}", path.display()))?;
        if shipped == TESTDRIVER_FILE {
            return Err(format!(
                "{}: StorageClass.FromFile {shipped}: that name is the bundle's own for the testdriver file; rename the manifest",
                path.display()
            ));
        }
        files.push(Input {
            path: shipped,
            text: read(&from)?,
        });
    }
    Ok(files)
}

/// What the run checks before it touches the cluster: `Err` is the message (exit 2).
fn plan(args: &BundleRunArgs) -> Result<BundlePlan, String> {
    if let Some(flag) = bundle::own_flag(&args.qualify_args) {
        return Err(format!(
            "{flag} after `--`: the bundle sets it for the qualification in the cluster (give --testdriver, --context and --allow-context to `bundle run` itself)"
        ));
    }
    if args.qualify_args.iter().any(|a| a == "--plan-only") {
        return Err("--plan-only: run `nodedown qualify --plan-only` here; the bundle runs the qualification".into());
    }
    if args.testdriver.is_none()
        && !args
            .qualify_args
            .iter()
            .any(|a| a.starts_with("--storage-class"))
    {
        return Err(
            "give --testdriver FILE, or `-- --storage-class NAME`, as for `nodedown qualify`"
                .into(),
        );
    }
    Ok(BundlePlan {
        namespace: args.namespace.clone(),
        image: args.image.clone(),
        qualify_args: args.qualify_args.clone(),
        inputs: inputs(args)?,
        hold: Duration::from_secs(3600),
        env: env_pairs(&args.env)?,
    })
}

/// The cluster, once the context is allowed and the bundle's namespace free (a terminating
/// one is waited for): its context name and a client (`Err`: the exit code).
async fn reach(args: &BundleRunArgs, plan: &BundlePlan) -> Result<(String, kube::Client), u8> {
    let context = crate::runner::resolve_context(args.context.as_deref()).map_err(|e| {
        error(e);
        EXIT_BAD_INPUT
    })?;
    if let Err(e) = crate::runner::guard(&context, args.allow_context.as_deref()) {
        error(e);
        return Err(EXIT_BAD_INPUT);
    }
    let client = match crate::cluster::client_for_context(Some(&context)).await {
        Ok((c, _)) => c,
        Err(e) => {
            error(format!(
                "cannot reach the cluster of context {context}: {e}"
            ));
            return Err(EXIT_HARNESS);
        }
    };
    match effects::namespace_exists(&client, &plan.namespace, Duration::from_secs(120)).await {
        Ok(false) => Ok((context, client)),
        Ok(true) => {
            error(format!(
                "namespace {} exists (or was still terminating after 2 minutes): a bundle runs there, or one was left (`nodedown cleanup <its --out>`); or give --namespace",
                plan.namespace
            ));
            Err(EXIT_HARNESS)
        }
        Err(e) => {
            error(e);
            Err(EXIT_HARNESS)
        }
    }
}

/// Before anything is made: OUT/session.json (how `nodedown cleanup OUT` reaches the cluster)
/// and the journal entry that deletes the bundle; the journal and the entry's id.
fn record(
    out: &Path,
    context: &str,
    namespace: &str,
    outside: &[crate::journal::ObjectRef],
) -> Result<(crate::journal::Journal, u64), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let session = crate::runner::Session {
        provider: crate::spec::Provider::Existing,
        cluster: None,
        context: Some(context.to_string()),
        profile: None,
        power_hooks: None,
        node_control: None,
        test_nodes: false,
        command: Some(std::env::args().collect()),
        started: Some(humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()),
    };
    let file = out.join(crate::store::SESSION_FILE);
    let text = serde_json::to_string_pretty(&session).expect("a session serializes");
    std::fs::write(&file, text + "\n").map_err(|e| format!("{}: {e}", file.display()))?;
    let path = out.join(crate::store::JOURNAL_FILE);
    let journal =
        crate::journal::Journal::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let id = journal
        .record(crate::journal::Undo::DeleteBundle {
            namespace: namespace.to_string(),
            objects: outside.to_vec(),
        })
        .map_err(|e| format!("cannot write the journal: {e}"))?;
    Ok((journal, id))
}

async fn run(args: BundleRunArgs, quiet: bool) -> u8 {
    let plan = match plan(&args) {
        Ok(p) => p,
        Err(e) => {
            error(e);
            return EXIT_BAD_INPUT;
        }
    };
    if args.out.join("bundle.tar.gz").exists() {
        error(format!(
            "{} holds a bundle already: give another --out",
            args.out.display()
        ));
        return EXIT_BAD_INPUT;
    }
    let (context, client) = match reach(&args, &plan).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    let objects = bundle::objects(&plan);
    // What lives outside the namespace, by name: deleted one by one.
    let mut outside = Vec::new();
    for o in &objects {
        match effects::object_ref(o) {
            Ok(r)
                if r.namespace.as_deref() != Some(plan.namespace.as_str())
                    && r.kind != "Namespace" =>
            {
                outside.push(r)
            }
            Ok(_) => {}
            Err(e) => {
                error(e);
                return EXIT_HARNESS;
            }
        }
    }
    let (journal, id) = match record(&args.out, &context, &plan.namespace, &outside) {
        Ok(j) => j,
        Err(e) => {
            error(e);
            return EXIT_HARNESS;
        }
    };
    let interrupt = crate::runner::Interrupt::install();
    let say = |m: String| {
        if !quiet {
            eprintln!("bundle: {m}");
        }
    };
    let outcome = deploy_and_fetch(&client, &plan, &objects, &args, &interrupt, &say).await;
    // The pod's log, whatever happened.
    if let Ok(Some(pod)) = effects::pod(&client, &plan.namespace).await {
        let name = pod.metadata.name.unwrap_or_default();
        if let Ok(text) = effects::log(&client, &plan.namespace, &name).await {
            let _ = std::fs::write(args.out.join("pod.log"), text);
        }
    }
    let keep = args.keep && !matches!(outcome, Outcome::Interrupted);
    if keep {
        say(format!(
            "left namespace {} and its RBAC in the cluster (--keep); `nodedown cleanup {}` deletes them",
            plan.namespace,
            args.out.display()
        ));
    } else {
        if matches!(outcome, Outcome::Interrupted) {
            say("deleting the Job: the qualification in it heals the cluster before it ends (up to 10 minutes)".into());
        }
        match effects::delete(&client, &plan.namespace, &outside).await {
            Ok(()) => {
                let _ = journal.healed(id);
            }
            Err(e) => {
                error(format!(
                    "{e}; `nodedown cleanup {}` deletes the rest",
                    args.out.display()
                ));
                return EXIT_HARNESS;
            }
        }
    }
    match outcome {
        Outcome::Fetched(code) => {
            let q = args.out.join(QUALIFICATION_DIR);
            println!(
                "bundle: {} (sheet.md, sheet.junit.xml, runs/) — the qualification exited {code}",
                q.display()
            );
            code
        }
        Outcome::Failed(e) => {
            error(e);
            EXIT_HARNESS
        }
        Outcome::Interrupted => EXIT_INTERRUPTED,
    }
}

enum Outcome {
    /// The results are in OUT; the qualification's exit code.
    Fetched(u8),
    Failed(String),
    Interrupted,
}

async fn deploy_and_fetch(
    client: &kube::Client,
    plan: &BundlePlan,
    objects: &[serde_json::Value],
    args: &BundleRunArgs,
    interrupt: &crate::runner::Interrupt,
    say: &(impl Fn(String) + Sync),
) -> Outcome {
    for o in objects {
        if let Err(e) = effects::apply(client, o).await {
            return Outcome::Failed(e.to_string());
        }
    }
    say(format!(
        "job {}/{} made (image {}); waiting for its pod",
        plan.namespace,
        bundle::JOB,
        plan.image
    ));
    let deadline = tokio::time::Instant::now() + args.timeout;
    let mut follower: Option<tokio::task::JoinHandle<()>> = None;
    let mut last: Option<PodState> = None;
    let pod_name = loop {
        if interrupt.count() > 0 {
            return Outcome::Interrupted;
        }
        if tokio::time::Instant::now() >= deadline {
            return Outcome::Failed(format!(
                "the qualification did not end within --timeout {}",
                humantime::format_duration(args.timeout)
            ));
        }
        let pod = match effects::pod(client, &plan.namespace).await {
            Ok(p) => p,
            Err(e) => return Outcome::Failed(e.to_string()),
        };
        if let (None, Some(_)) = (&pod, &last) {
            return Outcome::Failed(format!(
                "the pod of job {}/{} is gone (deleted or evicted) before its results were fetched",
                plan.namespace,
                bundle::JOB
            ));
        }
        if let Some(pod) = pod {
            let name = pod.metadata.name.clone().unwrap_or_default();
            let state = effects::pod_state(&pod);
            if last.as_ref() != Some(&state) {
                match &state {
                    PodState::Waiting(Some(why)) => say(format!("pod {name}: waiting ({why})")),
                    PodState::Running => say(format!(
                        "pod {name} on node {} runs the qualification",
                        pod.spec
                            .as_ref()
                            .and_then(|s| s.node_name.clone())
                            .unwrap_or_default()
                    )),
                    _ => {}
                }
            }
            if follower.is_none() && matches!(state, PodState::Running | PodState::ResultsReady) {
                let (c, ns, p) = (client.clone(), plan.namespace.clone(), name.clone());
                follower = Some(tokio::spawn(async move {
                    let _ = effects::follow_log(c, ns, p, |line| println!("{line}")).await;
                }));
            }
            match &state {
                PodState::ResultsReady => break name,
                PodState::Ended { exit_code, reason } => {
                    return Outcome::Failed(format!(
                        "pod {name} ended ({reason}, exit {exit_code}) before its results were fetched; its log is in {}",
                        args.out.join("pod.log").display()
                    ))
                }
                PodState::Stuck(why) => {
                    return Outcome::Failed(format!(
                        "pod {name} cannot start: {why} (is --image {} where the nodes pull it? `nodedown image export` makes it)",
                        plan.image
                    ))
                }
                _ => {}
            }
            last = Some(state);
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {},
            _ = interrupt.wait() => return Outcome::Interrupted,
        }
    };
    say(format!(
        "the qualification ended; fetching its results from {pod_name}"
    ));
    let bytes = match effects::fetch(client, &plan.namespace, &pod_name).await {
        Ok(b) => b,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    // The log follower ends with the container; give it a moment to print the last lines.
    if let Some(f) = follower {
        let _ = tokio::time::timeout(Duration::from_secs(10), f).await;
    }
    let tarball = args.out.join("bundle.tar.gz");
    if let Err(e) = std::fs::write(&tarball, &bytes) {
        return Outcome::Failed(format!("{}: {e}", tarball.display()));
    }
    let unpacked =
        tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice())).unpack(&args.out);
    if let Err(e) = unpacked {
        return Outcome::Failed(format!("{}: cannot unpack: {e}", tarball.display()));
    }
    let code = std::fs::read_to_string(args.out.join(EXIT_CODE_FILE))
        .ok()
        .and_then(|t| t.trim().parse::<u8>().ok());
    match code {
        Some(c) => Outcome::Fetched(c),
        None => Outcome::Failed(format!(
            "{}: no exit code of the qualification in the bundle",
            tarball.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tarball_holds_the_results_but_not_the_fetched_mark() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("qualification/runs")).unwrap();
        std::fs::write(dir.path().join("qualification/sheet.md"), "# sheet\n").unwrap();
        std::fs::write(dir.path().join(EXIT_CODE_FILE), "1\n").unwrap();
        std::fs::write(dir.path().join(RETRIEVED_FILE), "").unwrap();
        let mut bytes = Vec::new();
        write_tar(dir.path(), &mut bytes).unwrap();
        let back = tempfile::tempdir().unwrap();
        tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()))
            .unpack(back.path())
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(back.path().join("qualification/sheet.md")).unwrap(),
            "# sheet\n"
        );
        assert!(back.path().join("qualification/runs").is_dir());
        assert_eq!(
            std::fs::read_to_string(back.path().join(EXIT_CODE_FILE)).unwrap(),
            "1\n"
        );
        assert!(!back.path().join(RETRIEVED_FILE).exists());
    }

    #[test]
    fn env_pairs_need_a_name() {
        assert_eq!(
            env_pairs(&["A=b=c".into()]).unwrap(),
            vec![("A".to_string(), "b=c".to_string())]
        );
        assert!(env_pairs(&["=x".into()])
            .unwrap_err()
            .contains("NAME=VALUE"));
    }
}
