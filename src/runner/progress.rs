//! Progress as phases: a spinner with the current phase on a terminal, plain lines otherwise.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Clone)]
pub struct Progress {
    bar: Option<ProgressBar>,
    start: Instant,
    prefix: Arc<std::sync::Mutex<String>>,
    quiet: bool,
    /// A lane's view of the invocation's progress: its own prefix on its lines, the spinner's
    /// prefix left to the invocation.
    lane: bool,
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {prefix} {msg}")
                    .expect("template"),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        Progress {
            bar,
            start: Instant::now(),
            prefix: Arc::default(),
            quiet,
            lane: false,
        }
    }

    /// The same output for one lane of a parallel invocation: lines carry the lane's own
    /// prefix (`[lane 2] [3/13] …`), set with [`Progress::set_run`].
    pub fn for_lane(&self) -> Progress {
        Progress {
            bar: self.bar.clone(),
            start: self.start,
            prefix: Arc::default(),
            quiet: self.quiet,
            lane: true,
        }
    }

    /// Names the run in progress (e.g. `[2/4] node-shutdown/oos-taint/1`).
    pub fn set_run(&self, prefix: &str) {
        *self.prefix.lock().unwrap_or_else(|p| p.into_inner()) = prefix.to_string();
        if let (Some(bar), false) = (&self.bar, self.lane) {
            bar.set_prefix(prefix.to_string());
        }
    }

    /// A new phase started.
    pub fn step(&self, message: &str) {
        if self.quiet {
            return;
        }
        let prefix = self
            .prefix
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let line = format!(
            "[{:>6.1}s] {prefix} {message}",
            self.start.elapsed().as_secs_f64()
        );
        match &self.bar {
            Some(bar) => {
                bar.println(&line);
                if self.lane {
                    bar.set_message(format!("{prefix} {message}"));
                } else {
                    bar.set_message(message.to_string());
                }
            }
            None => eprintln!("{line}"),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
