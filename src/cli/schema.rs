//! `nodedown schema experiment|results|sheet`: JSON Schemas (draft 2020-12) of the experiment file
//! format and of results.json, generated from the same types the loader and the reports use.

use clap::ValueEnum;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Which {
    /// The experiment file format (`experiments/*.yaml`; editors read YAML against it).
    Experiment,
    /// results.json (schema version in its `schemaVersion`).
    Results,
    /// A qualification's sheet.json (`nodedown qualify`).
    Sheet,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "EXAMPLES:
  nodedown schema experiment > schema/experiment.json     for editors (yaml-language-server)
  nodedown schema results | jq '.properties | keys'        what results.json holds")]
pub struct SchemaArgs {
    /// Which schema to print.
    #[arg(value_enum)]
    pub which: Which,
}

/// The schema as a JSON value.
pub fn schema(which: Which) -> serde_json::Value {
    let mut s = match which {
        Which::Experiment => schemars::schema_for!(crate::spec::Experiment),
        Which::Results => schemars::schema_for!(crate::report::Report),
        Which::Sheet => schemars::schema_for!(crate::report::sheet::Sheet),
    };
    let (id, title) = match which {
        Which::Experiment => (
            "https://nodedown.dev/schema/experiment.json",
            "nodedown experiment",
        ),
        Which::Results => (
            "https://nodedown.dev/schema/results.json",
            "nodedown results.json",
        ),
        Which::Sheet => (
            "https://nodedown.dev/schema/sheet.json",
            "nodedown qualification sheet",
        ),
    };
    s.insert("$id".into(), id.into());
    s.insert("title".into(), title.into());
    s.to_value()
}

pub fn print(args: SchemaArgs) -> u8 {
    println!(
        "{}",
        serde_json::to_string_pretty(&schema(args.which)).expect("a schema serializes")
    );
    0
}
