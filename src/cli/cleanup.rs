use super::run::ToolArgs;
use super::{error, EXIT_BAD_INPUT, EXIT_HARNESS, EXIT_OK};
use crate::journal::Journal;
use crate::runner::{ClusterOptions, Env, Session};
use crate::store::{JOURNAL_FILE, SESSION_FILE};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
  nodedown cleanup runs/2026-12-06T10-00-00Z      heal what a killed run left, from its journal")]
pub struct CleanupArgs {
    /// The directory of the run to heal (as given to `nodedown run --out`, or one run inside it).
    pub run_dir: PathBuf,
    /// How long to wait for a restarted node to be Ready.
    #[arg(long, default_value = "3m", value_parser = crate::spec::duration::parse)]
    pub node_timeout: Duration,
    #[command(flatten)]
    pub tools: ToolArgs,
}

fn find_session(dir: &Path) -> Option<(PathBuf, Session)> {
    let mut d = Some(dir);
    while let Some(dir) = d {
        let p = dir.join(SESSION_FILE);
        if let Ok(text) = std::fs::read_to_string(&p) {
            return serde_json::from_str(&text).ok().map(|s| (p, s));
        }
        d = dir.parent();
    }
    None
}

fn journals(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.join(JOURNAL_FILE).is_file() {
        out.push(dir.join(JOURNAL_FILE));
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut subdirs: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        subdirs.sort();
        for s in subdirs {
            journals(&s, out);
        }
    }
}

pub async fn cleanup(args: CleanupArgs, quiet: bool) -> u8 {
    let Some((session_file, session)) = find_session(&args.run_dir) else {
        error(format!(
            "no {SESSION_FILE} in {} or its parents: is this a directory `nodedown run` wrote?",
            args.run_dir.display()
        ));
        return EXIT_BAD_INPUT;
    };
    let mut files = Vec::new();
    journals(&args.run_dir, &mut files);
    let opts = ClusterOptions {
        cache_dir: args.tools.cache_dir.clone(),
        kind_bin: args.tools.kind_bin.clone(),
        k3d_bin: args.tools.k3d_bin.clone(),
        hooks_log: session_file.parent().map(|d| d.join("hooks.jsonl")),
        ..Default::default()
    };
    let env = match Env::from_session(session, &opts).await {
        Ok(env) => env,
        Err(e) => {
            error(format!(
                "cannot reach the cluster recorded in {}: {e}",
                session_file.display()
            ));
            return EXIT_HARNESS;
        }
    };
    // The invocation that wrote here was killed (or it would have healed): its lock goes too.
    if let Some(out) = session_file.parent() {
        let out = std::fs::canonicalize(out).unwrap_or_else(|_| out.to_path_buf());
        match crate::cluster::lock::release_for(&env.client, &out).await {
            Ok(deleted) if !deleted.is_empty() && !quiet => eprintln!(
                "cleanup: removed the lock its invocation held (Lease {}/{})",
                crate::cluster::lock::LOCK_NAMESPACE,
                deleted.join(", ")
            ),
            Ok(_) => {}
            Err(e) => error(e),
        }
    }
    // A simulated node comes back only while kwok runs: cleanup runs its own for the heal.
    let _kwok = if env.session.provider == crate::spec::Provider::Kwok {
        let dir = session_file.parent().unwrap_or(Path::new("."));
        match crate::runner::simulated::start_kwok(
            &env,
            dir,
            &args.tools.cache_dir,
            "kwok-cleanup.log",
        )
        .await
        {
            Ok(k) => Some(k),
            Err(e) => {
                error(format!(
                    "cannot start kwok to bring the simulated nodes back: {e}"
                ));
                return EXIT_HARNESS;
            }
        }
    } else {
        None
    };
    let healer = crate::runner::healer(&env, args.node_timeout);
    let mut failures = 0;
    let mut healed = 0;
    let journals = files.len();
    // Every run's journal heals at the same time: the lanes of a parallel invocation (each
    // run's own nodes and objects) come back together, as the invocation would have healed
    // them.
    let mut open = Vec::new();
    let mut actions = Vec::new();
    for file in files {
        let journal = match Journal::open(&file) {
            Ok(j) => j,
            Err(e) => {
                error(format!("{}: {e}", file.display()));
                failures += 1;
                continue;
            }
        };
        let pending = match journal.pending() {
            Ok(p) => p,
            Err(e) => {
                error(format!("{}: {e}", file.display()));
                failures += 1;
                continue;
            }
        };
        if pending.is_empty() {
            continue;
        }
        if !quiet {
            eprintln!(
                "{}: healing {} pending action(s){}",
                file.display(),
                pending.actions.len(),
                match pending.unreadable.len() {
                    0 => String::new(),
                    n => format!(", {n} unreadable line(s)"),
                }
            );
        }
        actions.extend(pending.actions.iter().cloned());
        open.push((file, journal));
    }
    let results = futures::future::join_all(
        open.iter()
            .map(|(_, journal)| healer.heal_all(journal, None)),
    )
    .await;
    for ((file, _), (done, errors)) in open.iter().zip(results) {
        healed += done;
        for e in errors {
            error(format!("{}: {e}", file.display()));
            failures += 1;
        }
    }
    if healed > 0 {
        // Only this run directory's own namespaces: another invocation may be running on
        // other nodes of the cluster.
        let owned = crate::runner::heal::Owned::of_pending(&actions);
        if let Err(e) = crate::runner::wait_namespaces_gone(&env.client, &owned).await {
            error(e);
            failures += 1;
        }
    }
    // One line that says what was done, so a caller (and a test) can tell a cleanup that acted
    // from one that found everything healed.
    if !quiet {
        if healed == 0 && failures == 0 {
            eprintln!("cleanup: nothing to heal: every action in {journals} journal(s) was already undone");
        } else {
            eprintln!(
                "cleanup: healed {healed} action(s) from {journals} journal(s), {failures} failed"
            );
        }
    }
    if failures == 0 {
        EXIT_OK
    } else {
        EXIT_HARNESS
    }
}
