//! The k3d provider against the real k3d CLI (v5.8.3, built by testenv/build-k3d.sh; scripts/test
//! sets NODEDOWN_K3D) and the real Docker engine. k3s cannot be had on these machines, so no k3d
//! cluster is created here: these tests cover what runs without k3s — the config nodedown
//! generates (checked by k3d's own schema), listing clusters, and the errors when k3d or the
//! k3s image is missing. The real run is the `k3d` job of .github/workflows/ci.yml.

use std::path::{Path, PathBuf};
use std::process::Command;

fn nodedown() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nodedown"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// The real k3d; a missing one fails the test (CI builds it).
fn k3d() -> PathBuf {
    let bin = std::env::var_os("NODEDOWN_K3D")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/nodedown/k3d-v5.8.3/k3d"));
    assert!(
        bin.is_file(),
        "{} missing: run testenv/build-k3d.sh (scripts/test does)",
        bin.display()
    );
    bin
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nodedown-k3d-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `k3d config migrate` validates a config file against k3d's JSON schema for its apiVersion.
fn k3d_accepts(config: &Path, out: &Path) -> (bool, String) {
    let o = Command::new(k3d())
        .args(["config", "migrate"])
        .arg(config)
        .arg(out)
        .output()
        .unwrap();
    (
        o.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn a_missing_k3s_image_is_refused_before_k3d_creates_anything_and_the_generated_config_passes_k3d()
{
    let out = tmp("image");
    let name = format!("nd-k3d-{}", std::process::id());
    let image = "nodedown.invalid/k3s:missing";
    let o = nodedown()
        .args(["run", "experiments/smoke.yaml", "--provider", "k3d"])
        .args(["--cluster-name", &name, "--node-image", image])
        .arg("--k3d")
        .arg(k3d())
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!("node image {image} is not in the Docker engine"))
            && stderr.contains(&format!("docker pull {image}")),
        "{stderr}"
    );
    // k3d listed its clusters (none of that name) and was not asked to create one.
    let listed = Command::new(k3d())
        .args(["cluster", "list", "--output", "json"])
        .output()
        .unwrap();
    assert!(listed.status.success());
    assert!(
        !String::from_utf8_lossy(&listed.stdout).contains(&name),
        "no cluster {name} may exist"
    );
    // The fast profile nodedown wrote for it is a valid k3d config.
    let config = out.join(format!("k3d-config-{name}.yaml"));
    let text = std::fs::read_to_string(&config).expect("the generated config is kept");
    assert!(text.contains(&format!("image: \"{image}\"")), "{text}");
    let (ok, said) = k3d_accepts(&config, &out.join("migrated.yaml"));
    assert!(ok, "k3d refused nodedown's config: {said}");
    let migrated = std::fs::read_to_string(out.join("migrated.yaml")).unwrap();
    for want in [
        "node-monitor-grace-period=20s",
        "/var/lib/nodedown/shared:/mnt/nodedown-shared",
        "node-role.kubernetes.io/control-plane:NoSchedule",
    ] {
        assert!(
            migrated.contains(want),
            "{want} lost in k3d's reading: {migrated}"
        );
    }
    // The same check refuses a broken config, so the pass above means something.
    std::fs::write(&config, text.replace("agents: 3", "agents: three")).unwrap();
    let (ok, said) = k3d_accepts(&config, &out.join("broken.yaml"));
    assert!(!ok, "k3d accepted `agents: three`: {said}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_missing_k3d_is_named_with_the_way_to_get_it() {
    let out = tmp("nobin");
    let o = nodedown()
        .args(["run", "experiments/smoke.yaml", "--provider", "k3d"])
        .args(["--k3d", "/nonexistent/k3d", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("cannot run `/nonexistent/k3d`")
            && stderr.contains("install k3d")
            && stderr.contains("--k3d"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn dry_run_on_k3d_shows_the_cluster_and_the_config_it_would_make() {
    let o = nodedown()
        .args([
            "run",
            "experiments/smoke.yaml",
            "--provider",
            "k3d",
            "--dry-run",
        ])
        .args(["--cluster-name", "qual"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout.contains("would use k3d cluster qual"), "{stdout}");
    assert!(stdout.contains("apiVersion: k3d.io/v1alpha5"), "{stdout}");
    assert!(stdout.contains("name: \"qual\""), "{stdout}");
}

/// Synthetic k3d nodes: containers of a local image (testenv's kind node image running
/// `sleep`, not k3s) labelled and named exactly as k3d v5 labels and names its containers, a
/// server, an agent and the load balancer. What is real: the Docker engine, and nodedown's
/// container backend finding, refusing, powering off and healing them.
#[tokio::test(flavor = "multi_thread")]
async fn the_container_backend_maps_k3d_nodes_and_restores_their_restart_policy() {
    use nodedown::cluster::{DockerNodes, NodeFlavor};
    use nodedown::faults::{DockerNodeControl, NodeControl, NodeFault};
    use nodedown::spec::FaultKind;

    let cluster = format!("ndt{}", std::process::id());
    let images = Command::new("docker")
        .args([
            "images",
            "--format",
            "{{.Repository}}:{{.Tag}}",
            "nodedown/node",
        ])
        .output()
        .unwrap();
    let image = String::from_utf8_lossy(&images.stdout)
        .lines()
        .next()
        .expect("testenv's node image (testenv/up builds it)")
        .to_string();
    let roles = [
        ("server-0", "server"),
        ("agent-0", "agent"),
        ("serverlb", "loadbalancer"),
    ];
    let name = |suffix: &str| format!("k3d-{cluster}-{suffix}");
    for (suffix, role) in roles {
        let o = Command::new("docker")
            .args([
                "run",
                "-d",
                "--name",
                &name(suffix),
                "--restart",
                "unless-stopped",
            ])
            .args(["--label", &format!("k3d.cluster={cluster}")])
            .args(["--label", &format!("k3d.role={role}")])
            .args([
                "--network",
                "none",
                "--entrypoint",
                "sleep",
                &image,
                "infinity",
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let cleanup = || {
        for (suffix, _) in roles {
            let _ = Command::new("docker")
                .args(["rm", "-f", &name(suffix)])
                .output();
        }
    };
    let result = async {
        let docker = DockerNodes::connect().unwrap();
        let nodes = docker
            .cluster_containers(&cluster, NodeFlavor::K3d)
            .await
            .unwrap();
        assert_eq!(nodes, vec![name("agent-0"), name("server-0")]);
        // kind's label finds none of them.
        assert!(docker
            .cluster_containers(&cluster, NodeFlavor::Kind)
            .await
            .unwrap()
            .is_empty());

        let control = DockerNodeControl::new(docker.clone(), NodeFlavor::K3d);
        control.check_node(&name("agent-0")).await.unwrap();
        let lb = control
            .check_node(&name("serverlb"))
            .await
            .unwrap_err()
            .to_string();
        assert!(lb.contains("not a k3d node container"), "{lb}");
        assert!(!control.supports(FaultKind::KubeletStop));
        assert!(!control.supports_graceful_shutdown());

        let fault = NodeFault {
            kind: FaultKind::NodeShutdown,
            node: name("agent-0"),
            peers: vec![],
            lease: None,
            graceful: false,
            pod: None,
        };
        control.apply(&fault).await.unwrap();
        assert!(!docker.is_running(&name("agent-0")).await.unwrap());
        // unless-stopped does not bring a killed node back by itself.
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        assert!(!docker.is_running(&name("agent-0")).await.unwrap());
        control
            .heal(FaultKind::NodeShutdown, &name("agent-0"))
            .await
            .unwrap();
        assert!(docker.is_running(&name("agent-0")).await.unwrap());
        let policy = Command::new("docker")
            .args([
                "inspect",
                "-f",
                "{{.HostConfig.RestartPolicy.Name}}",
                &name("agent-0"),
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&policy.stdout).trim(),
            "unless-stopped"
        );
    };
    let outcome = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(result)).await;
    cleanup();
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

#[test]
fn provider_k3d_on_the_command_line_refuses_what_k3s_nodes_cannot_take() {
    let o = nodedown()
        .args([
            "run",
            "experiments/kubelet-stop.yaml",
            "--provider",
            "k3d",
            "--dry-run",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("experiments/kubelet-stop.yaml: variant `")
            && stderr.contains("kubelet-stop cannot run on k3d nodes")
            && stderr.contains("--provider k3d"),
        "{stderr}"
    );
}
