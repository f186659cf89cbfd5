//! deploy/rbac.yaml is the table nodedown's preflight checks against (src/plan/access.rs),
//! written out: the committed file must be what the table gives (`NODEDOWN_BLESS=1` rewrites
//! it), and it must read as the three Kubernetes objects it says.

use std::path::Path;

#[test]
fn the_shipped_role_is_the_preflights_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/rbac.yaml");
    let want = nodedown::plan::access::rbac_yaml();
    if std::env::var_os("NODEDOWN_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let chart = Path::new(env!("CARGO_MANIFEST_DIR")).join("charts/nodedown/templates/rbac.yaml");
    let chart_want = nodedown::plan::access::rbac_chart_template();
    if std::env::var_os("NODEDOWN_BLESS").is_some() {
        std::fs::write(&chart, &chart_want).unwrap();
    }
    assert!(
        std::fs::read_to_string(&chart).unwrap_or_default() == chart_want,
        "charts/nodedown/templates/rbac.yaml is not what src/plan/access.rs gives; rerun with NODEDOWN_BLESS=1"
    );
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "deploy/rbac.yaml is not what src/plan/access.rs gives; rerun with NODEDOWN_BLESS=1 and review the diff"
    );
    let docs: Vec<serde_json::Value> = have
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str(d).unwrap())
        .collect();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "Role",
            "RoleBinding",
            "ClusterRoleBinding"
        ]
    );
    let rules = docs[2]["rules"].as_array().unwrap();
    let nodes = rules
        .iter()
        .find(|r| r["resources"][0] == "nodes" && r["apiGroups"][0] == "")
        .unwrap();
    assert!(nodes["verbs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v == "update"));
    assert!(
        rules
            .iter()
            .all(|r| !r["verbs"].as_array().unwrap().iter().any(|v| v == "*")),
        "no wildcard verbs"
    );
    // The lock's Leases (one per node, so not by name): in their namespace only.
    assert_eq!(docs[3]["metadata"]["namespace"], "default");
    let leases = docs[3]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resources"][0] == "leases")
        .unwrap();
    assert_eq!(
        leases["verbs"],
        serde_json::json!(["get", "list", "create", "update", "delete"])
    );
    assert!(rules.iter().all(|r| r["resources"][0] != "leases"));
    for binding in [&docs[4], &docs[5]] {
        assert_eq!(binding["roleRef"]["name"], "nodedown");
        assert_eq!(binding["subjects"][0]["namespace"], "nodedown");
    }
}
