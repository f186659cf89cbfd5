//! The simple writer workload: runs inside the workload container (`nodedown writer`).
//! Appends one line per interval to `<dir>/writer.log`, fsyncs it, and continues the sequence
//! found in the file on start. Stand-in for the ledger (checksummed records) of a later issue.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::time::Duration;

/// Reads the last sequence number written in `log` (0 when absent or empty).
pub fn last_sequence(log: &Path) -> std::io::Result<u64> {
    let file = match std::fs::File::open(log) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut last = 0;
    for line in BufReader::new(file).lines() {
        let line = line?;
        if let Some(seq) = line
            .strip_prefix("seq=")
            .and_then(|r| r.split_whitespace().next())
        {
            if let Ok(n) = seq.parse::<u64>() {
                last = n;
            }
        }
    }
    Ok(last)
}

/// Runs forever (until killed), appending and syncing one line per `interval`.
pub fn run(dir: &Path, interval: Duration, identity: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let log = dir.join("writer.log");
    let mut seq = last_sequence(&log)?;
    eprintln!(
        "writer: {} holds {seq} records; continuing as {identity}",
        log.display()
    );
    let mut file = OpenOptions::new().create(true).append(true).open(&log)?;
    loop {
        seq += 1;
        let now = humantime::format_rfc3339_millis(std::time::SystemTime::now());
        writeln!(file, "seq={seq} writer={identity} t={now}")?;
        file.sync_data()?;
        std::thread::sleep(interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continues_from_last_sequence() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("writer.log");
        assert_eq!(last_sequence(&log).unwrap(), 0);
        std::fs::write(
            &log,
            "seq=1 writer=a t=x\nseq=2 writer=a t=x\nseq=3 writer=b t=x\ngarbage\n",
        )
        .unwrap();
        assert_eq!(last_sequence(&log).unwrap(), 3);
    }
}
