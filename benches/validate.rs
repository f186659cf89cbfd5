//! Experiment loading benchmark (no cluster needed): how long `spec::parse_str` takes on
//! pathological input — deep nesting (flow lists, flow mappings, block lists at depth 1k, 10k,
//! 100k), big files (a long comment after a valid experiment, and a long list of variants, at
//! 100 KB, 1 MB and 10 MB) and an alias bomb — and what it answers (`ok` or the start of the
//! error). Each figure is the median of NODEDOWN_BENCH_RUNS runs (default 5).
//! Run with `cargo bench --bench validate`. It prints figures and asserts nothing about speed.

use nodedown::spec::parse_str;
use std::path::Path;
use std::time::{Duration, Instant};

const EXPERIMENT: &str = "name: bench\nworkload: {kind: writer}\nfault: {kind: node-shutdown, target: {nodeOf: writer-0}}\n";

fn runs() -> usize {
    std::env::var("NODEDOWN_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1)
}

fn measure(label: &str, text: &str) {
    let mut times = Vec::new();
    let mut outcome = String::new();
    for _ in 0..runs() {
        let start = Instant::now();
        let result = parse_str(text, Path::new("bench.yaml"));
        times.push(start.elapsed());
        outcome = match result {
            Ok(_) => "ok".to_string(),
            Err(e) => e.to_string().chars().take(90).collect(),
        };
    }
    times.sort();
    let median: Duration = times[times.len() / 2];
    println!(
        "{label:<34} {:>10} bytes {:>11.3} ms  {outcome}",
        text.len(),
        median.as_secs_f64() * 1000.0
    );
}

/// `text` repeated until the result is at least `bytes` long.
fn repeat_to(text: &str, bytes: usize) -> String {
    text.repeat(bytes.div_ceil(text.len()))
}

fn main() {
    println!("nesting depth:");
    for depth in [1_000, 10_000, 100_000] {
        let seq = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        measure(&format!("  flow lists, depth {depth}"), &seq);
        let map = format!("{}x{}", "{a: ".repeat(depth), "}".repeat(depth));
        measure(&format!("  flow mappings, depth {depth}"), &map);
        let block = format!("{}x\n", "- ".repeat(depth));
        measure(&format!("  block lists, depth {depth}"), &block);
    }

    println!("file size:");
    for (name, bytes) in [
        ("100 KB", 100_000),
        ("1 MB", 1_000_000),
        ("10 MB", 10_000_000),
    ] {
        let comment = format!(
            "{EXPERIMENT}{}",
            repeat_to(&format!("# {}\n", "c".repeat(77)), bytes)
        );
        measure(&format!("  comment block, {name}"), &comment);
        let mut list = format!("{EXPERIMENT}variants:\n");
        let mut i = 0;
        while list.len() < bytes {
            list.push_str(&format!("  - {{name: v{i}}}\n"));
            i += 1;
        }
        measure(&format!("  list of variants, {name}"), &list);
    }

    println!("aliases:");
    let mut bomb = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (prev, name) in "abcdefgh".chars().zip("bcdefghi".chars()) {
        let refs = vec![format!("*{prev}"); 9].join(", ");
        bomb.push_str(&format!("{name}: &{name} [{refs}]\n"));
    }
    measure("  billion laughs (9 levels of 9)", &bomb);
}
