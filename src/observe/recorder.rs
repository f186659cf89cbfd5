//! Stamps events on receipt and appends them to `events.jsonl` as they happen; keeps them in
//! memory too, so every reader (the runner's [`crate::timeline::Tracker`]) sees every event in
//! recorded order, none dropped.

use crate::timeline::{Event, EventKind};
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Instant, SystemTime};
use tokio::sync::Notify;

pub struct Recorder {
    start: Instant,
    inner: Mutex<(File, Vec<Event>)>,
    changed: Notify,
}

impl Recorder {
    /// Creates (truncates) the events file; time zero is now.
    pub fn create(path: &Path) -> std::io::Result<Recorder> {
        let file = File::create(path)?;
        Ok(Recorder {
            start: Instant::now(),
            inner: Mutex::new((file, Vec::new())),
            changed: Notify::new(),
        })
    }

    /// Stamps `what` with the monotonic and wall clocks, appends it, and wakes readers.
    /// Stamping and appending happen under one lock, so the file is in recorded order.
    pub fn record(&self, what: EventKind) -> Event {
        self.record_at(what, None)
    }

    /// Like [`Recorder::record`], but stamped with an instant some other observer reported
    /// (e.g. Docker's `die` event), translated onto the run's monotonic clock through the wall
    /// clock. Only [`EventKind::FaultInjected`] uses it: time zero is when the fault took
    /// effect, which can be a little before the harness heard of it.
    pub fn record_at(&self, what: EventKind, at: Option<SystemTime>) -> Event {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let now_ms = self.start.elapsed().as_millis() as u64;
        let now_wall = SystemTime::now();
        let (at_ms, wall) = match at {
            Some(at) => {
                let ago = now_wall.duration_since(at).unwrap_or_default().as_millis() as u64;
                (now_ms.saturating_sub(ago), at)
            }
            None => (now_ms, now_wall),
        };
        let event = Event {
            at_ms,
            wall: humantime::format_rfc3339_millis(wall).to_string(),
            what,
        };
        let mut line = serde_json::to_string(&event).expect("events serialize");
        line.push('\n');
        if let Err(e) = inner.0.write_all(line.as_bytes()) {
            tracing::error!("cannot append to events.jsonl: {e}");
        }
        inner.1.push(event.clone());
        drop(inner);
        self.changed.notify_waiters();
        event
    }

    /// The events recorded from index `from` on.
    pub fn since(&self, from: usize) -> Vec<Event> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner
            .1
            .get(from..)
            .map(<[Event]>::to_vec)
            .unwrap_or_default()
    }

    /// Resolves after the next event is recorded (create it before reading with `since`, or an
    /// event in between is missed until the next one).
    pub fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    pub fn elapsed_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }
}
