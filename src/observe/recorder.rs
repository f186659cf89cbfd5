//! Stamps events on receipt and appends them to `events.jsonl` as they happen.

use crate::timeline::{Event, EventKind};
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};
use tokio::sync::broadcast;

pub struct Recorder {
    start: Instant,
    file: Mutex<File>,
    tx: broadcast::Sender<Event>,
}

impl Recorder {
    /// Creates (truncates) the events file; time zero is now.
    pub fn create(path: &Path) -> std::io::Result<Recorder> {
        let file = File::create(path)?;
        let (tx, _) = broadcast::channel(4096);
        Ok(Recorder {
            start: Instant::now(),
            file: Mutex::new(file),
            tx,
        })
    }

    /// Stamps `what` with the monotonic and wall clocks, appends it, and tells subscribers.
    /// Stamping and appending happen under one lock, so the file is in time order.
    pub fn record(&self, what: EventKind) -> Event {
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let event = Event {
            at_ms: self.start.elapsed().as_millis() as u64,
            wall: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            what,
        };
        let mut line = serde_json::to_string(&event).expect("events serialize");
        line.push('\n');
        if let Err(e) = file.write_all(line.as_bytes()) {
            tracing::error!("cannot append to events.jsonl: {e}");
        }
        drop(file);
        let _ = self.tx.send(event.clone());
        event
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }

    pub fn elapsed_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }
}
