//! `results.json`: the result model as pretty JSON, and reading it back.

use super::{Report, SCHEMA_VERSION};

#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("not a nodedown results file: {0}")]
    Parse(#[source] serde_json::Error),
    #[error(
        "results file has schema version {found}, this nodedown reads version {SCHEMA_VERSION}; \
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
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
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
        assert!(text.contains("\"schemaVersion\": 2"));
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

    #[test]
    fn wrong_schema_or_garbage_is_refused() {
        let text =
            to_string(&golden_report()).replace("\"schemaVersion\": 2", "\"schemaVersion\": 99");
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
}
