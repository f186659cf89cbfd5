use super::{error, EXIT_BAD_INPUT, EXIT_HARNESS, EXIT_OK};
use crate::runner::journal::Journal;
use crate::runner::{Env, Session, SESSION_FILE};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct CleanupArgs {
    /// The directory of the run to heal (as given to `nodedown run --out`, or one run inside it).
    pub run_dir: PathBuf,
    /// How long to wait for a restarted node to be Ready.
    #[arg(long, default_value = "3m", value_parser = humantime::parse_duration)]
    pub node_timeout: Duration,
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
    if dir.join("journal.jsonl").is_file() {
        out.push(dir.join("journal.jsonl"));
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
    let env = match Env::from_session(session).await {
        Ok(env) => env,
        Err(e) => {
            error(format!(
                "cannot reach the cluster recorded in {}: {e}",
                session_file.display()
            ));
            return EXIT_HARNESS;
        }
    };
    let healer = env.healer(args.node_timeout);
    let mut failures = 0;
    for file in files {
        let journal = match Journal::open(&file) {
            Ok(j) => j,
            Err(e) => {
                error(format!("{}: {e}", file.display()));
                failures += 1;
                continue;
            }
        };
        let pending = journal.pending().map(|p| p.len()).unwrap_or(0);
        if pending == 0 {
            continue;
        }
        if !quiet {
            eprintln!("{}: healing {pending} pending action(s)", file.display());
        }
        for e in healer.heal_all(&journal, None).await {
            error(format!("{}: {e}", file.display()));
            failures += 1;
        }
    }
    if failures == 0 {
        if !quiet {
            eprintln!("cleanup: nothing left to heal");
        }
        EXIT_OK
    } else {
        EXIT_HARNESS
    }
}
