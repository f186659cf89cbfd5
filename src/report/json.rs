//! `results.json`: the result model as pretty JSON, and reading it back.

use super::{Report, SCHEMA_VERSION};

/// The schema versions this nodedown reads: its own; version 3, whose `outcome.data` (one word)
/// reads as a list of it; and version 2, whose spreads (`{count, min, median, p90, max}`) read
/// as the one distribution type without their p99.
pub const READS: [u32; 3] = [2, 3, SCHEMA_VERSION];

#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("not a nodedown results file: {0}")]
    Parse(#[source] serde_json::Error),
    #[error(
        "results file has schema version {found}, this nodedown reads versions 2, 3 and {SCHEMA_VERSION}; \
         re-render it from its run directories (`nodedown report <run dir>`) or use a matching \
         nodedown"
    )]
    SchemaVersion { found: u64 },
    #[error("not a nodedown results file: no `schemaVersion` number")]
    NoSchemaVersion,
}

/// The report as pretty-printed JSON with a trailing newline.
pub fn to_string(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("the report model always serializes");
    s.push('\n');
    s
}

/// Reads a report written by [`to_string`]; refuses other schema versions.
pub fn from_str(text: &str) -> Result<Report, JsonError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(JsonError::Parse)?;
    match value.get("schemaVersion").and_then(|v| v.as_u64()) {
        Some(v) if READS.iter().any(|r| u64::from(*r) == v) => {}
        Some(found) => return Err(JsonError::SchemaVersion { found }),
        None => return Err(JsonError::NoSchemaVersion),
    }
    serde_json::from_value(value).map_err(JsonError::Parse)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::golden_report;

    #[test]
    fn round_trip() {
        let report = golden_report();
        let text = to_string(&report);
        assert!(text.ends_with("}\n"));
        assert!(text.contains(&format!("\"schemaVersion\": {SCHEMA_VERSION}")));
        assert!(text.contains("\"time-to-ready\": 39700"));
        let back = from_str(&text).unwrap();
        assert_eq!(back, report);
        assert_eq!(to_string(&back), text);
    }

    #[test]
    fn absent_metrics_and_fields_are_absent() {
        let report = golden_report();
        let text = to_string(&report);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let baseline = &v["experiments"][0]["runs"][1];
        assert_eq!(baseline["id"], "node-shutdown/baseline/1");
        let metrics = baseline["metrics"].as_object().unwrap();
        assert_eq!(metrics.keys().collect::<Vec<_>>(), ["time-to-not-ready"]);
        assert!(baseline.get("replacementNode").is_none());
        assert!(baseline.get("error").is_none());
        assert_eq!(baseline["verdict"], "pass");
    }

    /// Synthetic: the golden report written as version 2 wrote it (spreads `{count, min,
    /// median, p90, max}`) still reads, every figure the same and the p99 it never had absent.
    #[test]
    fn a_version_2_file_still_reads() {
        let report = golden_report();
        let mut v: serde_json::Value = serde_json::from_str(&to_string(&report)).unwrap();
        v["schemaVersion"] = 2.into();
        let mut spreads = 0;
        for e in v["experiments"].as_array_mut().unwrap() {
            for var in e["variants"].as_array_mut().unwrap() {
                for (_, s) in var["metrics"].as_object_mut().unwrap() {
                    let s = s.as_object_mut().unwrap();
                    for (new, old) in [
                        ("minMs", "min"),
                        ("p50Ms", "median"),
                        ("p90Ms", "p90"),
                        ("maxMs", "max"),
                    ] {
                        let x = s.remove(new).unwrap();
                        s.insert(old.into(), x);
                    }
                    s.remove("p99Ms");
                    spreads += 1;
                }
            }
        }
        assert!(spreads > 0, "the golden report has variant spreads");
        let back = from_str(&v.to_string()).unwrap();
        let (a, b) = (
            &back.experiments[0].variants[0],
            &report.experiments[0].variants[0],
        );
        for (name, s) in &a.metrics {
            let want = b.metrics[name];
            assert_eq!(
                (s.count, s.min_ms, s.p50_ms, s.p90_ms, s.max_ms),
                (
                    want.count,
                    want.min_ms,
                    want.p50_ms,
                    want.p90_ms,
                    want.max_ms
                )
            );
            assert_eq!(s.p99_ms, None);
        }
    }

    #[test]
    fn wrong_schema_or_garbage_is_refused() {
        let text = to_string(&golden_report()).replace(
            &format!("\"schemaVersion\": {SCHEMA_VERSION}"),
            "\"schemaVersion\": 99",
        );
        assert!(matches!(
            from_str(&text),
            Err(JsonError::SchemaVersion { found: 99 })
        ));
        assert!(matches!(from_str("{}"), Err(JsonError::NoSchemaVersion)));
        assert!(matches!(from_str("nope"), Err(JsonError::Parse(_))));
        let err = from_str(r#"{"schemaVersion": 2}"#).unwrap_err();
        assert!(
            err.to_string().starts_with("not a nodedown results file"),
            "{err}"
        );
    }

    /// A version-3 results.json (the storage-fence-lifted recording as it was rendered before
    /// harms were listed, kept in tests/fixtures): its one `data` word reads as a list of it,
    /// and the same run rendered today lists both harms.
    #[test]
    fn version_3_outcome_data_reads_as_a_list() {
        let dir = env!("CARGO_MANIFEST_DIR");
        let old = std::fs::read_to_string(format!(
            "{dir}/tests/fixtures/results-v3-storage-fence-lifted.json"
        ))
        .unwrap();
        assert!(old.contains("\"schemaVersion\": 3"));
        let old = from_str(&old).unwrap();
        let data = |r: &Report| {
            r.experiments[0].runs[0]
                .outcome
                .as_ref()
                .unwrap()
                .data
                .clone()
        };
        use crate::report::outcome::Data;
        assert_eq!(data(&old), vec![Data::SplitBrain]);
        let now = std::fs::read_to_string(format!(
            "{dir}/tests/fixtures/runs/storage-fence-lifted/results.json"
        ))
        .unwrap();
        assert_eq!(
            data(&from_str(&now).unwrap()),
            vec![Data::LostWrites, Data::SplitBrain]
        );
    }
}
