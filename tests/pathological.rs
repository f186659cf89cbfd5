//! Input no experiment looks like — very deep nesting, a huge file, binary bytes, an alias bomb
//! — is refused quickly by `nodedown validate`: exit 2, one line that names the file.

use std::process::Command;
use std::time::{Duration, Instant};

/// Far above what any of these takes (milliseconds), far below what quadratic parsing took.
const PATIENCE: Duration = Duration::from_secs(10);

fn files() -> Vec<(&'static str, Vec<u8>)> {
    let mut bomb = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (prev, name) in "abcdefgh".chars().zip("bcdefghi".chars()) {
        let refs = vec![format!("*{prev}"); 9].join(", ");
        bomb.push_str(&format!("{name}: &{name} [{refs}]\n"));
    }
    // Bytes from a fixed linear congruential generator: the same "random" file every time.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let binary: Vec<u8> = (0..65_536)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 56) as u8
        })
        .collect();
    vec![
        (
            "deep-lists-10k.yaml",
            format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
        ),
        (
            "deep-lists-100k.yaml",
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
        ),
        (
            "deep-mappings-10k.yaml",
            format!("{}x{}", "{a: ".repeat(10_000), "}".repeat(10_000)).into_bytes(),
        ),
        (
            "deep-mappings-100k.yaml",
            format!("{}x{}", "{a: ".repeat(100_000), "}".repeat(100_000)).into_bytes(),
        ),
        (
            "deep-block-lists-100k.yaml",
            format!("{}x\n", "- ".repeat(100_000)).into_bytes(),
        ),
        (
            "ten-megabytes.yaml",
            format!(
                "name: big\n{}",
                format!("# {}\n", "c".repeat(77)).repeat(125_000)
            )
            .into_bytes(),
        ),
        ("binary.yaml", binary),
        ("billion-laughs.yaml", bomb.into_bytes()),
    ]
}

#[test]
fn pathological_files_are_refused_quickly_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (name, bytes) in files() {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let start = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_nodedown"))
            .arg("validate")
            .arg(&path)
            .output()
            .unwrap();
        let took = start.elapsed();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let mut problems = Vec::new();
        if out.status.code() != Some(2) {
            problems.push(format!("exit {:?}, want 2", out.status.code()));
        }
        if !stderr.contains(&format!("{}:", path.display())) {
            problems.push("the message does not name the file".to_string());
        }
        if stderr.trim_end().lines().count() != 1 {
            problems.push("the message is not one line".to_string());
        }
        if took > PATIENCE {
            problems.push(format!("took {took:?}"));
        }
        if !problems.is_empty() {
            failures.push(format!("{name}: {}\n    {stderr}", problems.join("; ")));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
