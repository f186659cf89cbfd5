//! The command line's contract without a cluster: bad input is exit 2 with the specific error.

use std::process::Command;

fn nodedown() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nodedown"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

#[test]
fn every_bad_fixture_is_exit_2_with_its_error_for_validate_and_run() {
    let expected = std::fs::read_to_string("tests/fixtures/bad/EXPECTED.tsv").unwrap();
    let mut checked = 0;
    for line in expected
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let cols: Vec<&str> = line.split('\t').collect();
        let (file, substring) = (cols[0], cols[3]);
        let path = format!("tests/fixtures/bad/{file}");
        for sub in ["validate", "run"] {
            let out = nodedown().args([sub, &path]).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{sub} {file}: {stderr}");
            assert!(
                stderr.contains(substring),
                "{sub} {file}: expected {substring:?} in {stderr}"
            );
            assert!(
                stderr.contains(&path),
                "{sub} {file}: names the file: {stderr}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} bad fixtures");
}

#[test]
fn shipped_experiments_validate() {
    let out = nodedown()
        .args(["validate", "experiments"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("node-shutdown, 4 runs"), "{stdout}");
}

#[test]
fn usage_errors_are_exit_2() {
    assert_eq!(
        nodedown()
            .args(["run", "--no-such-flag"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        nodedown()
            .args(["report", "/nonexistent/run"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        nodedown()
            .args(["cleanup", "/nonexistent/run"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
    let out = nodedown()
        .args(["run", "experiments/node-shutdown.yaml", "--only", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--only"));
}

#[test]
fn report_rerenders_a_recorded_run_dir() {
    // A run directory as `nodedown run` writes it, made from recorded events.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("exp/v/1");
    std::fs::create_dir_all(&run).unwrap();
    let planned = serde_json::json!({
        "id": "exp/v/1", "experiment": "exp", "file": "experiments/x.yaml", "variant": "v", "repetition": 1,
        "cluster": {"provider": "kind", "reuse": true},
        "workload": {"kind": "writer", "replicas": 1, "storageClass": "nodedown-shared", "size": "1Gi"},
        "fault": {"kind": "node-shutdown", "target": {"nodeOf": "writer-0"}},
        "remediation": {"kind": "out-of-service-taint", "after": "0s", "fence": false},
        "timeouts": {"steadyState": "3m", "recovery": "5m", "heal": "3m"},
        "expect": {"recovered": true}
    });
    std::fs::write(run.join("run.json"), planned.to_string()).unwrap();
    std::fs::copy(
        "tests/fixtures/synthetic/events/oos-taint.jsonl",
        run.join("events.jsonl"),
    )
    .unwrap();
    let out = nodedown()
        .args(["report", "--format", "json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = nodedown::report::json::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let r = &report.experiments[0].runs[0];
    assert_eq!(r.verdict, nodedown::report::Verdict::Pass, "{r:?}");
    assert!(r
        .metrics
        .contains_key(&nodedown::timeline::Metric::TimeToRunning));
}

/// `nodedown compare` on a recorded run directory: unchanged against itself (exit 0); a
/// candidate made slower by hand (synthetic), one run a side, cannot be told from noise (exit 0,
/// saying so) unless `--strict`, which calls it worse (exit 1) unless its tolerance allows it;
/// a changed spec is refused (exit 2) with the variant named.
#[test]
fn compare_exit_codes() {
    let base = "tests/fixtures/runs/network-partition";
    let same = nodedown().args(["compare", base, base]).output().unwrap();
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&same.stdout)
    );

    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(format!("{base}/results.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    for run in v["experiments"][0]["runs"].as_array_mut().unwrap() {
        let ms = run["metrics"]["time-to-ready"].as_u64().unwrap();
        run["metrics"]["time-to-ready"] = (ms * 2).into();
    }
    for var in v["experiments"][0]["variants"].as_array_mut().unwrap() {
        for k in ["minMs", "p50Ms", "p90Ms", "p99Ms", "maxMs"] {
            let ms = var["metrics"]["time-to-ready"][k].as_u64().unwrap();
            var["metrics"]["time-to-ready"][k] = (ms * 2).into();
        }
    }
    let slower = dir.path().join("slower.json");
    std::fs::write(&slower, v.to_string()).unwrap();
    let out = nodedown()
        .args(["compare", base])
        .arg(&slower)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("n=1 vs 1: cannot tell from noise; rerun each with --repeat 5"),
        "{stdout}"
    );
    let out = nodedown()
        .args(["compare", base])
        .arg(&slower)
        .args(["--format", "markdown", "--strict"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("time-to-ready"));
    let tol = dir.path().join("tol.yaml");
    std::fs::write(&tol, "time-to-ready: +150%\n").unwrap();
    let out = nodedown()
        .args(["compare", "--strict", base])
        .arg(&slower)
        .arg("--tolerance-file")
        .arg(&tol)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    v["experiments"][0]["runs"][0]["specHash"] = "0000000000000000".into();
    let changed = dir.path().join("changed.json");
    std::fs::write(&changed, v.to_string()).unwrap();
    let out = nodedown()
        .args(["compare", base])
        .arg(&changed)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("network-partition/oos-taint-unfenced"));
}

/// A plan that needs what no backend of the invocation has is refused before anything is
/// touched: on an existing cluster reached by kubeconfig with no power hooks (the agent only,
/// as README's "Running on your own cluster" starts), the fenced taint cannot fence and a
/// node-shutdown cannot be carried out. `--dry-run` says so too; `--skip-unsupported` runs (here:
/// plans) the rest and names what it leaves out.
#[test]
fn unsupported_variants_are_refused_before_anything_is_touched() {
    let run = |extra: &[&str]| {
        let mut c = nodedown();
        c.args([
            "run",
            "experiments/kubelet-stop.yaml",
            "--provider",
            "existing",
            "--context",
            "nowhere",
            "--dry-run",
        ]);
        c.args(extra);
        c.output().unwrap()
    };
    let out = run(&[]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("variant `oos-taint-fenced`")
            && said.contains("`fence: true`")
            && said.contains("--power-off"),
        "names the variant and the flag that would provide the fence: {said}"
    );
    assert!(
        !said.contains("variant `oos-taint-unfenced`"),
        "the agent stops kubelets, so the unfenced variant can run: {said}"
    );
    assert!(said.contains("--skip-unsupported"), "{said}");
    // With power hooks, the fence has a backend: nothing is refused.
    let hooks = run(&[
        "--power-off",
        "true",
        "--power-on",
        "true",
        "--power-state",
        "echo on",
    ]);
    assert_eq!(
        hooks.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&hooks.stderr)
    );
    // --skip-unsupported: the plan without the fenced variant, which it names as not run.
    let skipped = run(&["--skip-unsupported"]);
    let text = String::from_utf8_lossy(&skipped.stdout);
    assert_eq!(skipped.status.code(), Some(0), "{text}");
    assert!(
        text.contains("not run (--skip-unsupported): kubelet-stop/oos-taint-fenced: "),
        "{text}"
    );
    assert!(
        !text.contains("\nkubelet-stop/oos-taint-fenced/1"),
        "{text}"
    );
    assert!(
        text.contains("\nkubelet-stop/oos-taint-unfenced/1"),
        "{text}"
    );
    // A node-shutdown on such a cluster has nothing to power the node off with.
    let mut c = nodedown();
    let shutdown = c
        .args([
            "run",
            "experiments/node-shutdown.yaml",
            "--provider",
            "existing",
            "--context",
            "nowhere",
            "--dry-run",
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&shutdown.stderr);
    assert_eq!(shutdown.status.code(), Some(2), "{said}");
    assert!(
        said.contains("no node-control backend here can carry out node-shutdown: give power hooks"),
        "{said}"
    );
}

/// One invocation runs on one cluster: an experiment that names another (its own kind config,
/// here the one without the 6-minute force detach) is refused rather than measured on the
/// wrong cluster; `--skip-unsupported` leaves it out and says why; naming the cluster on the
/// command line runs everything there, as asked.
#[test]
fn an_experiment_naming_another_cluster_is_not_run_on_the_first_ones() {
    let run = |extra: &[&str]| {
        nodedown()
            .args([
                "run",
                "experiments/smoke.yaml",
                "experiments/attach-detach-no-force-detach.yaml",
                "--dry-run",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("it names kind cluster nodedown-nfd")
            && said.contains("run experiments/attach-detach-no-force-detach.yaml by itself"),
        "{said}"
    );
    let skipped = run(&["--skip-unsupported"]);
    let text = String::from_utf8_lossy(&skipped.stdout);
    assert_eq!(skipped.status.code(), Some(0));
    assert!(
        text.contains("1 run(s)")
            && text.contains(
                "not run (--skip-unsupported): attach-detach-no-force-detach/force-delete-pod"
            ),
        "{text}"
    );
    let named = run(&["--cluster-name", "nodedown"]);
    assert_eq!(
        named.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&named.stderr)
    );
    assert!(String::from_utf8_lossy(&named.stdout).contains("3 run(s)"));
}

/// Two qualification sheets compared row by row: the committed reference sheet (a real
/// qualification of testenv's nodedown-attach) against itself, then against a copy whose
/// power-off-taint row failed (an edit of the recorded sheet, said here).
#[test]
fn comparing_two_sheets_exits_1_when_a_row_regresses() {
    let base = "docs/qualification/nodedown-attach/sheet.json";
    let same = nodedown().args(["compare", base, base]).output().unwrap();
    let stdout = String::from_utf8_lossy(&same.stdout);
    assert_eq!(same.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("no row changed"), "{stdout}");

    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(base).unwrap()).unwrap();
    let row = v["rows"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["id"] == "power-off-taint")
        .unwrap();
    assert_eq!(row["verdict"], "pass");
    row["verdict"] = "fail".into();
    let worse = dir.path().join("sheet.json");
    // Edited and written as it is: its digest no longer matches, and compare refuses it.
    std::fs::write(&worse, v.to_string()).unwrap();
    let out = nodedown()
        .args(["compare", base])
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("does not match its digest"), "{stderr}");
    // With the digest made again (as qualify would have), it compares.
    let mut edited: nodedown::report::sheet::Sheet = serde_json::from_value(v).unwrap();
    edited.digest = nodedown::report::sheet::digest(&edited);
    std::fs::write(&worse, serde_json::to_string(&edited).unwrap()).unwrap();
    let out = nodedown()
        .args(["compare", base])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("WORSE power-off-taint"), "{stdout}");
    // Back the other way the row got better: a change, not a regression.
    let out = nodedown()
        .args(["compare"])
        .arg(&worse)
        .arg(base)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("changed power-off-taint"), "{stdout}");
}

/// `nodedown report` on a simulated invocation (the curve recorded in docs/simulated-scale/,
/// a real run on 200 simulated nodes) reproduces the curve.md that run wrote, and its JUnit
/// carries the SIMULATED banner; its HTML page draws the curve (a line per remediation, the
/// runs that never got there marked), written into the directory unless `-o` says otherwise.
#[test]
fn report_reads_a_recorded_simulated_curve() {
    let dir = "docs/simulated-scale";
    let md = nodedown()
        .args(["report", dir, "--format", "markdown"])
        .output()
        .unwrap();
    assert_eq!(
        md.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&md.stdout),
        std::fs::read_to_string(format!("{dir}/curve.md")).unwrap()
    );
    let junit = nodedown()
        .args(["report", dir, "--format", "junit"])
        .output()
        .unwrap();
    let xml = String::from_utf8_lossy(&junit.stdout);
    assert_eq!(junit.status.code(), Some(0));
    assert!(
        xml.contains("SIMULATED") && xml.contains("lost-20-x20-taint"),
        "{xml}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("curve.html");
    let html = nodedown()
        .args(["report", dir, "--format", "html", "--output-file"])
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(html.status.code(), Some(0), "{html:?}");
    assert!(html.stdout.is_empty());
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.contains("SIMULATED"));
    // A line per remediation and number of nodes lost: runs alike but for their pods.
    assert!(
        text.contains(r#"data-series="out-of-service-taint, "#),
        "a line per remediation"
    );
    assert!(text.contains(r#"data-series="none, "#));
    // Without the taint no replacement was Ready within the window at 20 and 400 pods: never.
    assert!(text.matches(r#"class="never""#).count() >= 2, "{text}");
    assert!(
        text.contains("<td>scale-simulated/lost-20-x20-taint/1</td>"),
        "the table too"
    );
}

/// `qualify --plan-only` on testdriver files in the shapes vendors keep them (synthetic, see
/// each file's first lines): `FromName` and `FromFile` (a relative manifest) plan a class made
/// for the runs, under a name of the run's own; 4-space indentation, null-valued fs maps and
/// every upstream capability read without a word of "unknown"; a templated manifest is refused
/// naming its line.
#[test]
fn qualify_plans_vendor_testdriver_files_as_they_are() {
    for (file, from) in [
        (
            "vendor-fromname.yaml",
            "(StorageClass.FromName: provisioner csi.nodedown.dev, volumeBindingMode WaitForFirstConsumer (the driver has TopologyKeys))",
        ),
        (
            "vendor-fromfile.yaml",
            "(StorageClass.FromFile tests/fixtures/testdriver/vendor-fromfile-sc.yaml)",
        ),
        ("nodedown-attach.yaml", ""),
    ] {
        let out = tempfile::tempdir().unwrap();
        let plan = nodedown()
            .args(["qualify", "--testdriver"])
            .arg(format!("tests/fixtures/testdriver/{file}"))
            .args(["--quick", "--plan-only", "--out"])
            .arg(out.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&plan.stderr);
        assert_eq!(plan.status.code(), Some(0), "{file}: {stderr}");
        assert!(!stderr.contains("unknown"), "{file}: {stderr}");
        if from.is_empty() {
            assert!(!stderr.contains("would create"), "{file}: {stderr}");
        } else {
            assert!(
                stderr.contains("qualify: would create StorageClass nd-qualify-")
                    && stderr.contains(from),
                "{file}: {stderr}"
            );
        }
        // The FromFile class binds Immediate on a driver that publishes zones on its CSINodes
        // (testenv's): its volumes' zones are chosen before their pods, so no lanes and no
        // zone-lost row. FromName is made WaitForFirstConsumer; nodedown-attach's volumes have
        // no node affinity.
        let immediate = file == "vendor-fromfile.yaml";
        assert_eq!(
            stderr.contains("so the rows run alone, not in lanes"),
            immediate,
            "{file}: {stderr}"
        );
        assert_eq!(
            stderr.contains("zone-lost                not applicable: StorageClass nd-qualify-"),
            immediate,
            "{file}: {stderr}"
        );
        // Every row is to run or not applicable with its reason.
        let rows: Vec<&str> = stderr.lines().filter(|l| l.starts_with("  ")).collect();
        assert!(rows.len() >= 9, "{file}: {stderr}");
        assert!(rows
            .iter()
            .all(|r| !r.contains("not applicable") || r.contains("not applicable: ")));
    }
    let note = nodedown()
        .args([
            "qualify",
            "--testdriver",
            "tests/fixtures/testdriver/vendor-fromname.yaml",
            "--quick",
            "--plan-only",
            "--out",
        ])
        .arg(tempfile::tempdir().unwrap().path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&note.stderr);
    assert!(
        stderr.contains("note: tests/fixtures/testdriver/vendor-fromname.yaml:5:1: ShortName: not part of the upstream format"),
        "{stderr}"
    );
    let template = nodedown()
        .args([
            "qualify",
            "--testdriver",
            "tests/fixtures/testdriver/vendor-template.yaml",
            "--plan-only",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&template.stderr);
    assert_eq!(template.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "vendor-template-sc.yaml:6: a Go template (`provisioner: {{ .Provisioner }}`)"
        ),
        "{stderr}"
    );
}

/// `qualify` reads a testdriver file: a misspelt capability is a warning naming the closest
/// known one (upstream drops it without a word), a malformed file is exit 2 with file, line and
/// field, and `--plan-only` writes the matrix as experiment files that `validate` accepts.
#[test]
fn qualify_reads_a_testdriver_file_and_writes_its_matrix() {
    let out = tempfile::tempdir().unwrap();
    let plan = nodedown()
        .args([
            "qualify",
            "--testdriver",
            "tests/fixtures/testdriver/misspelt.yaml",
        ])
        .args(["--quick", "--plan-only", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&plan.stderr);
    assert_eq!(plan.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("misspelt.yaml:9:5: DriverInfo.Capabilities.readWriteOncePood: unknown capability (did you mean `readWriteOncePod`?)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("note: tests/fixtures/testdriver/misspelt.yaml:2:1: ShortName: not part of the upstream format"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "read-write-once-pod      not applicable: the driver does not declare readWriteOncePod"
        ),
        "the misspelt capability counts as absent: {stderr}"
    );
    let validate = nodedown()
        .arg("validate")
        .arg(out.path().join("experiments"))
        .output()
        .unwrap();
    assert_eq!(
        validate.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&validate.stderr)
    );
    let files = std::fs::read_dir(out.path().join("experiments"))
        .unwrap()
        .count();
    assert!(files >= 4, "{files} experiment files");

    let bad = nodedown()
        .args([
            "qualify",
            "--testdriver",
            "tests/fixtures/testdriver/malformed.yaml",
            "--plan-only",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("tests/fixtures/testdriver/malformed.yaml"),
        "{stderr}"
    );
    assert!(stderr.contains(":7:"), "the line: {stderr}");
    assert!(
        stderr.contains("DriverInfo.Capabilities.persistence"),
        "{stderr}"
    );
}

#[test]
fn simulated_and_real_experiments_do_not_share_an_invocation() {
    let out = nodedown()
        .args([
            "run",
            "experiments/smoke.yaml",
            "experiments/scale-simulated.yaml",
            "--dry-run",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("experiments/scale-simulated.yaml")
            && stderr.contains("--skip-unsupported"),
        "{stderr}"
    );
    let out = nodedown()
        .args([
            "run",
            "experiments/smoke.yaml",
            "experiments/scale-simulated.yaml",
            "--dry-run",
            "--skip-unsupported",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains("scale-simulated"), "left out: {stdout}");
}

/// `nodedown compare` of two simulated invocations: the recorded curve against itself changes
/// nothing (exit 0); against a copy where one run's replacements attached 50 % later, that run
/// is named WORSE (exit 1), and each run is said to be one sample.
#[test]
fn comparing_two_simulated_curves_names_the_run_that_got_worse() {
    let same = nodedown()
        .args([
            "compare",
            "docs/simulated-scale",
            "docs/simulated-scale/curve.json",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&same.stdout);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&same.stderr)
    );
    assert!(
        stdout.contains("no run changed") && stdout.contains("one sample"),
        "{stdout}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut curve: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("docs/simulated-scale/curve.json").unwrap())
            .unwrap();
    let run = curve
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["variant"] == "lost-5-x20-taint")
        .unwrap();
    for i in run["observations"]["instances"].as_array_mut().unwrap() {
        let ms = i["volumeAttachedMs"].as_u64().unwrap();
        i["volumeAttachedMs"] = (ms * 3 / 2).into();
    }
    std::fs::write(tmp.path().join("curve.json"), curve.to_string()).unwrap();
    let worse = nodedown()
        .arg("compare")
        .arg("docs/simulated-scale")
        .arg(tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&worse.stdout);
    assert_eq!(worse.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("WORSE scale-simulated/lost-5-x20-taint/1: every replacement running"),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("WORSE").count(),
        2,
        "all and p50 of that run only: {stdout}"
    );
}

/// A flag that means nothing on the simulated cluster is refused by name before anything is
/// made (exit 2), every such flag at once; the ones that work (`--fail-on`, `--retain`,
/// `--cluster-name`, `--output`) are not among them.
#[test]
fn flags_that_do_not_apply_to_simulated_runs_are_refused_by_name() {
    let out = nodedown()
        .args([
            "run",
            "experiments/scale-simulated.yaml",
            "--parallel",
            "2",
            "--ack-interval",
            "off",
            "--node-control",
            "agent",
            "--fail-on",
            "fail",
            "--retain",
            "--cluster-name",
            "never-made",
            "--output",
            "json",
        ])
        .env_remove("NODEDOWN_PARALLEL")
        .env_remove("NODEDOWN_ACK_INTERVAL")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for flag in ["--parallel", "--ack-interval", "--node-control"] {
        assert!(stderr.contains(flag), "{flag}: {stderr}");
    }
    for flag in ["--fail-on", "--retain", "--cluster-name", "--output"] {
        assert!(!stderr.contains(flag), "{flag} applies: {stderr}");
    }
}

/// `--dry-run` of a simulated experiment prints its plan — the simulated cluster it would
/// make, each run's nodes, placement, fault, remediation and waits — and touches nothing (the
/// cluster named here does not exist).
#[test]
fn a_simulated_dry_run_prints_each_runs_plan() {
    let out = nodedown()
        .args([
            "run",
            "experiments/scale-simulated.yaml",
            "--only",
            "lost-20-x20-taint,lost-1-x20-none",
            "--cluster-name",
            "never-made",
            "--dry-run",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("would use the simulated cluster never-made"),
        "{stdout}"
    );
    assert!(stdout.contains("2 run(s); nothing was touched"), "{stdout}");
    let taint = &stdout[stdout.find("lost-20-x20-taint/1").expect(&stdout)..];
    assert!(taint.contains("200 simulated (kwok) nodes"), "{taint}");
    assert!(taint.contains("400 instances"), "{taint}");
    assert!(
        taint.contains("node-shutdown on 20 node(s) at once"),
        "{taint}"
    );
    assert!(
        taint.contains("out-of-service taint on each lost node the moment it is seen NotReady"),
        "{taint}"
    );
    let none = &stdout[stdout.find("lost-1-x20-none/1").expect(&stdout)..];
    assert!(none.contains("remediate: nothing"), "{none}");
    assert!(none.contains("(at most 1m30s)"), "{none}");
}

/// `nodedown report DIR --format json | head -c 1`: the reader goes away after one byte of a
/// 130 KB report; nodedown ends quietly (SIGPIPE, as kubectl or grep do), not with a panic
/// (exit 101). The same for `validate` of every experiment.
#[test]
fn a_reader_that_goes_away_ends_report_and_validate_quietly() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    for args in [
        vec!["report", "--format", "json", "tests/fixtures/runs/fleet"],
        vec!["validate", "experiments/"],
    ] {
        let mut child = nodedown()
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        out.read_exact(&mut first).unwrap();
        drop(out);
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            output.status.code() == Some(0) || output.status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {:?} {stderr}",
            output.status
        );
    }
}

/// A mistyped `--only` is refused (exit 2) before anything runs, with the variant it probably
/// meant and every variant there is, instead of silently running the others; `validate` lists
/// each experiment's variants.
#[test]
fn an_only_that_names_no_variant_is_refused_with_a_suggestion() {
    let out = nodedown()
        .args([
            "run",
            "experiments/node-shutdown.yaml",
            "--only",
            "none",
            "--only",
            "out-of-servce-taint",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--only out-of-servce-taint: no variant is named so; did you mean `out-of-service-taint`?"),
        "{stderr}"
    );
    assert!(
        stderr.contains("experiments/node-shutdown.yaml: none, out-of-service-taint"),
        "{stderr}"
    );
    assert!(!stderr.contains("--only none:"), "none exists: {stderr}");
    let out = nodedown()
        .args(["validate", "experiments/node-shutdown.yaml"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("variants: none, out-of-service-taint, force-delete-pod, delete-node"),
        "{stdout}"
    );
}

/// Runs `nodedown args…` and checks it is refused as bad input (exit 2) with `says` on stderr.
fn refused(args: &[&str], says: &str) {
    let out = nodedown().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(says), "{args:?}: {stderr}");
}

/// Paths that cannot be compared or reported say what is wrong with them (exit 2): one that
/// does not exist, a sheet against a run directory, a file where a directory belongs.
#[test]
fn wrong_paths_say_what_is_wrong() {
    let runs = "tests/fixtures/runs/attach-detach";
    refused(
        &["compare", "/nonexistent/runs", runs],
        "/nonexistent/runs does not exist",
    );
    refused(
        &["compare", "docs/qualification/nodedown-attach", runs],
        "a sheet and a run directory cannot be compared",
    );
    refused(
        &["report", "/nonexistent/runs"],
        "/nonexistent/runs does not exist",
    );
    refused(&["report", "Cargo.toml"], "is a file, not a directory");
}

/// `qualify --only` picks rows of the matrix: a mistyped one is refused with the closest and
/// every row, one not applicable with its reason, `--repeat 0` is refused; `--plan-only` lists
/// the rows left out and estimates only the rows picked.
#[test]
fn qualify_only_picks_rows_and_refuses_what_names_none() {
    let qualify = |extra: &[&str]| {
        let out = tempfile::tempdir().unwrap();
        nodedown()
            .args([
                "qualify",
                "--testdriver",
                "tests/fixtures/testdriver/nodedown-attach.yaml",
                "--quick",
                "--plan-only",
                "--out",
            ])
            .arg(out.path())
            .args(extra)
            .output()
            .unwrap()
    };
    let plan = [
        "qualify",
        "--testdriver",
        "tests/fixtures/testdriver/nodedown-attach.yaml",
        "--quick",
        "--plan-only",
    ];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        plan.iter().chain(extra).copied().collect()
    };
    refused(
        &with(&["--only", "power-of-taint"]),
        "--only power-of-taint: no row of the matrix is named so; did you mean `power-off-taint`?",
    );
    refused(
        &with(&["--only", "power-of-taint"]),
        "the rows: power-off-none, power-off-taint",
    );
    refused(
        &with(&["--only", "force-delete"]),
        "--only force-delete: the row is not applicable here",
    );
    refused(
        &with(&["--only", "power-off-taint", "--repeat", "0"]),
        "--repeat must be at least 1",
    );
    let o = qualify(&["--only", "power-off-taint"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("12 rows (1 to run, 3 time(s) each)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("  pod-delete               left out by --only"),
        "{stderr}"
    );
    assert!(stderr.contains("estimate: about 5m00s"), "{stderr}");
}

/// `--metrics-file` is for real runs: a simulated invocation refuses it by name before any
/// cluster is reached, and `report --format prometheus` says where a sheet's metrics are.
#[test]
fn metrics_are_refused_for_simulated_runs_and_a_bad_gateway_url_is_bad_input() {
    let out = nodedown()
        .args([
            "run",
            "experiments/scale-simulated.yaml",
            "--metrics-file",
            "/nonexistent/nodedown.prom",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--metrics-file") && stderr.contains("results.json"),
        "{stderr}"
    );
    // A URL that is not one is bad input, refused before any cluster is reached.
    let out = nodedown()
        .args(["run", "experiments/smoke.yaml", "--pushgateway", "pgw:9091"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--pushgateway pgw:9091: not an http://"),
        "{stderr}"
    );
    // A sheet's metrics are its rows' (and its runs', where its directory keeps them).
    let out = nodedown()
        .args([
            "report",
            "docs/qualification/nodedown-attach",
            "--format",
            "prometheus",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("nodedown_qualify_row_verdict{"));
}

/// In the cluster it faults, nodedown must know the node it runs on: refused (exit 2) before
/// any cluster is reached when `--runner-node` is missing.
#[test]
fn in_cluster_without_the_runner_node_is_refused() {
    let out = nodedown()
        .args([
            "run",
            "experiments/smoke.yaml",
            "--context",
            "in-cluster",
            "--allow-context",
            "in-cluster",
        ])
        .env_remove("NODEDOWN_RUNNER_NODE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("give --runner-node"), "{stderr}");
}

/// `--dry-run` on a cluster nodedown did not make lists the permissions the runs would use, from
/// the table the invocation checks them against (no cluster reached).
#[test]
fn dry_run_on_an_existing_cluster_lists_the_permissions_the_runs_use() {
    let out = nodedown()
        .args([
            "run",
            "experiments/smoke.yaml",
            "--context",
            "some-cluster",
            "--dry-run",
            "--power-off",
            "off {node}",
            "--power-on",
            "on {node}",
            "--power-state",
            "state {node}",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("permissions these runs use"), "{stdout}");
    assert!(
        stdout.contains("get, list, watch, update nodes")
            && stdout.contains("out-of-service taint"),
        "the smoke's taint needs update on nodes: {stdout}"
    );
    // The smoke runs the ledger: its acknowledgements are read through the pod proxy.
    assert!(
        stdout.contains("pods/proxy"),
        "the ledger's reads: {stdout}"
    );
}

/// `bundle run` refuses, before it reaches any cluster, the flags it sets for the
/// qualification itself, a missing class, a FromFile path outside the testdriver's directory
/// and a malformed --env (exit 2, naming them).
#[test]
fn bundle_run_refuses_what_it_sets_itself_before_any_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let driver = dir.path().join("driver.yaml");
    std::fs::write(
        &driver,
        "DriverInfo: {Name: x}\nStorageClass: {FromFile: ../sc.yaml}\n",
    )
    .unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--", "--storage-class", "x", "--out", "y"],
            "--out after `--`",
        ),
        (
            &["--", "--storage-class", "x", "--context=c"],
            "--context after `--`",
        ),
        (&["--", "--quick"], "--storage-class NAME"),
        (
            &["--env", "novalue", "--", "--storage-class", "x"],
            "--env novalue: give NAME=VALUE",
        ),
        (&["--testdriver", driver.to_str().unwrap()], "without `..`"),
    ];
    for (args, expected) in cases {
        let out = nodedown()
            .args(["bundle", "run", "--context", "none-such", "--image", "i:1"])
            .args(args)
            .env("KUBECONFIG", dir.path().join("no-kubeconfig"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// `nodedown report` of a directory holding a simulated invocation and real runs side by side
/// refuses (exit 2) rather than render one kind and drop the other; each alone reports.
#[test]
fn report_refuses_simulated_and_real_runs_mixed_in_one_directory() {
    let tmp = tempfile::tempdir().unwrap();
    for fixture in ["simulated", "kubelet-stop"] {
        let status = std::process::Command::new("cp")
            .arg("-r")
            .arg(format!("tests/fixtures/runs/{fixture}"))
            .arg(tmp.path())
            .status()
            .unwrap();
        assert!(status.success());
    }
    let out = nodedown().arg("report").arg(tmp.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("simulated nodes and runs on real nodes"),
        "{stderr}"
    );
    for fixture in ["simulated", "kubelet-stop"] {
        let out = nodedown()
            .arg("report")
            .arg(tmp.path().join(fixture))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{fixture}: {out:?}");
    }
}
