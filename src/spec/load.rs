//! Reading experiment files: parse strictly, then check what the types cannot express.
//!
//! Every error a user can cause is one [`SpecError`] whose message reads
//! `<file>:<line>:<col>: <field>: <what is wrong>; <what to write instead>`. serde-saphyr reads
//! the text into a tree of located YAML nodes ([`super::yaml`]) and into an [`Experiment`];
//! its errors carry a position, which the tree turns into a field path, and the checks made
//! afterwards ([`super::check`]) find the position of any field in the same tree.

use super::model::{duration, ClusterSpec, Experiment, WorkloadKind};
use super::yaml::{self, Node, Pos, Value};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Longest experiment or variant name (it becomes part of run directory names and test ids).
pub const MAX_NAME_LEN: usize = 40;
/// Largest `repeat`.
pub const MAX_REPEAT: u32 = 100;
/// Largest experiment file, in bytes (an experiment is a few hundred).
pub const MAX_FILE_BYTES: usize = 1 << 20;
/// Deepest nesting of mappings and lists in an experiment file (an experiment needs 6).
pub const MAX_DEPTH: usize = 32;
/// Most values (scalars, mappings, lists) in an experiment file, each use of an alias counted
/// as a copy of its anchor.
pub const MAX_NODES: usize = 100_000;

// ---------------------------------------------------------------------------------------------
// Errors

/// Which kind of mistake a [`Diagnostic`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecErrorKind {
    /// Not valid YAML.
    Syntax,
    /// No experiment in the file at all.
    Empty,
    /// Valid YAML, but not a mapping of fields.
    NotAMapping,
    UnknownField,
    MissingField,
    DuplicateField,
    /// A value outside a fixed set (`fault.kind: node-reboot`).
    UnknownValue,
    /// A value of the wrong type or form (`after: 30 seconds`, `replicas: two`).
    InvalidValue,
    /// Well-formed, but breaks a rule checked after parsing (name format, timeouts, targets...).
    Invalid,
    /// Larger, deeper or more repetitive than an experiment file may be ([`MAX_FILE_BYTES`],
    /// [`MAX_DEPTH`], [`MAX_NODES`]).
    TooLarge,
}

/// One located mistake in one experiment file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file as the caller named it.
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    /// Dotted path of the field, e.g. `variants[1].remediation.after`; `None` when the mistake
    /// is not about one field (syntax, empty file).
    pub field: Option<String>,
    pub kind: SpecErrorKind,
    /// What is wrong.
    pub problem: String,
    /// What to write instead.
    pub hint: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file.display(), self.line, self.column)?;
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.problem)?;
        if !self.hint.is_empty() {
            write!(f, "; {}", self.hint)?;
        }
        Ok(())
    }
}

/// Why experiments could not be loaded. The message is one line that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// A file or directory could not be read.
    #[error("{}: cannot read it: {source}; check the path and its permissions", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The given paths hold no experiment files.
    #[error(
        "no experiment files in {}; name experiment files, or directories that hold *.yaml or *.yml files",
        display_paths(paths)
    )]
    NoFiles { paths: Vec<PathBuf> },
    /// A mistake in an experiment file, with its location.
    #[error("{0}")]
    Invalid(Box<Diagnostic>),
}

fn display_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "(no paths given)".to_string();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl SpecError {
    /// The 1-based line of the mistake, when it is in a file.
    pub fn line(&self) -> Option<usize> {
        self.diagnostic().map(|d| d.line)
    }
    /// The 1-based column of the mistake, when it is in a file.
    pub fn column(&self) -> Option<usize> {
        self.diagnostic().map(|d| d.column)
    }
    /// The dotted field path, e.g. `remediation.after`.
    pub fn field(&self) -> Option<&str> {
        self.diagnostic().and_then(|d| d.field.as_deref())
    }
    /// The file (or directory) the error is about.
    pub fn file(&self) -> Option<&Path> {
        match self {
            SpecError::Io { path, .. } => Some(path),
            SpecError::NoFiles { .. } => None,
            SpecError::Invalid(d) => Some(&d.file),
        }
    }
    pub fn kind(&self) -> Option<SpecErrorKind> {
        self.diagnostic().map(|d| d.kind)
    }
    pub fn diagnostic(&self) -> Option<&Diagnostic> {
        match self {
            SpecError::Invalid(d) => Some(d),
            _ => None,
        }
    }
}

pub(super) fn invalid(
    file: &Path,
    (line, column): Pos,
    field: Option<String>,
    kind: SpecErrorKind,
    problem: impl Into<String>,
    hint: impl Into<String>,
) -> SpecError {
    SpecError::Invalid(Box::new(Diagnostic {
        file: file.to_path_buf(),
        line,
        column,
        field,
        kind,
        problem: problem.into(),
        hint: hint.into(),
    }))
}

// ---------------------------------------------------------------------------------------------
// Loading

/// Reads, parses and checks one experiment file.
pub fn load_file(path: &Path) -> Result<Experiment, SpecError> {
    let text = read(path)?;
    parse_str(&text, path)
}

/// Parses and checks one experiment. `path` is used in messages and to resolve a relative
/// `cluster.config`.
pub fn parse_str(text: &str, path: &Path) -> Result<Experiment, SpecError> {
    parse_inner(text, path).map(|(exp, _)| exp)
}

/// Loads experiments from files and directories (a directory: every `*.yaml` / `*.yml` file
/// directly inside it, sorted by name), in the order given. Stops at the first invalid file.
/// Experiment names must be unique across all files: they name the run directories.
pub fn load_paths(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Experiment)>, SpecError> {
    let (loaded, mut errors) = load_paths_all(paths)?;
    match errors.is_empty() {
        true => Ok(loaded),
        false => Err(errors.remove(0)),
    }
}

/// As [`load_paths`], but goes on past an invalid file: every valid experiment, and the error
/// of every invalid file (each file's first: the next one in a file shows once it is fixed), in
/// file order. `Err` only when the paths name no file or cannot be read as directories.
#[allow(clippy::type_complexity)]
pub fn load_paths_all(
    paths: &[PathBuf],
) -> Result<(Vec<(PathBuf, Experiment)>, Vec<SpecError>), SpecError> {
    let mut files = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(io_error(path))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            for entry in std::fs::read_dir(path).map_err(io_error(path))? {
                let entry = entry.map_err(io_error(path))?;
                let file = path.join(entry.file_name());
                if is_yaml_name(&file) && file.is_file() {
                    found.push(file);
                }
            }
            found.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    if files.is_empty() {
        return Err(SpecError::NoFiles {
            paths: paths.to_vec(),
        });
    }

    // The same file named twice (`experiments/ experiments/a.yaml`) is loaded once.
    let mut seen_files = HashSet::new();
    let mut names: HashMap<String, PathBuf> = HashMap::new();
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        let identity = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
        if !seen_files.insert(identity) {
            continue;
        }
        let parsed = read(&file).and_then(|text| parse_inner(&text, &file));
        let (exp, tree) = match parsed {
            Ok(x) => x,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if let Some(first) = names.get(&exp.name) {
            errors.push(invalid(
                &file,
                tree.locate("name"),
                Some("name".to_string()),
                SpecErrorKind::Invalid,
                format!(
                    "experiment name `{}` is already used by {}",
                    exp.name,
                    first.display()
                ),
                "give each experiment its own name: it names the run directories",
            ));
            continue;
        }
        names.insert(exp.name.clone(), file.clone());
        out.push((file, exp));
    }
    Ok((out, errors))
}

/// The kind config file of an experiment, resolved against the experiment file's directory.
pub fn cluster_config_path(experiment_file: &Path, cluster: &ClusterSpec) -> Option<PathBuf> {
    let config = cluster.config.as_ref()?;
    Some(match experiment_file.parent() {
        Some(dir) => dir.join(config),
        None => config.clone(),
    })
}

/// The StatefulSet a workload kind deploys; its pods are `<name>-0`, `<name>-1`, ...
pub fn statefulset_name(kind: WorkloadKind) -> &'static str {
    match kind {
        WorkloadKind::Writer => "writer",
        WorkloadKind::Ledger => "ledger",
    }
}

/// The most instances one run may have (`workload.instances`).
pub const MAX_INSTANCES: u32 = 100;

/// The most replicas of the workload's StatefulSet (`workload.replicas`): each needs a node of
/// its own (required pod anti-affinity), and one more node takes the replacement.
pub const MAX_REPLICAS: u32 = 10;

/// The names of a workload's instances, in order: its StatefulSets. One instance is `<kind>`
/// (as it always was); a fleet's instance i ≥ 1 is `<kind>-i<i>`, so that its pods
/// (`<kind>-i<i>-<ordinal>`) never take the name of instance 0's replicas (`<kind>-<ordinal>`).
pub fn instance_names(workload: &super::WorkloadSpec) -> Vec<String> {
    let base = statefulset_name(workload.kind);
    (0..workload.instances.max(1))
        .map(|i| {
            if i == 0 {
                base.to_string()
            } else {
                format!("{base}-i{i}")
            }
        })
        .collect()
}

/// The members of a run's workload, each followed by its own tracker, ack poller, ledger and
/// verdict: the instances (`instance_names`), or, for one StatefulSet with several replicas,
/// its pods (`<kind>-0`, `<kind>-1`, …: each replica has its own claim and ledger).
pub fn members(workload: &super::WorkloadSpec) -> Vec<String> {
    let names = instance_names(workload);
    if workload.replicas > 1 && names.len() == 1 {
        (0..workload.replicas)
            .map(|i| format!("{}-{i}", names[0]))
            .collect()
    } else {
        names
    }
}

fn is_yaml_name(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    )
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> SpecError {
    let path = path.to_path_buf();
    move |source| SpecError::Io { path, source }
}

/// Reads at most [`MAX_FILE_BYTES`] (and one more, to know there is more) of UTF-8 text.
pub(super) fn read(path: &Path) -> Result<String, SpecError> {
    let file = std::fs::File::open(path).map_err(io_error(path))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error(path))?;
    if bytes.len() > MAX_FILE_BYTES {
        return Err(too_large(path));
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let valid = std::str::from_utf8(valid).unwrap_or_default();
        let line = valid.matches('\n').count() + 1;
        let column = valid.rsplit('\n').next().unwrap_or_default().chars().count() + 1;
        invalid(
            path,
            (line, column),
            None,
            SpecErrorKind::Syntax,
            "the file is not UTF-8 text",
            "an experiment file is YAML text: check that this is the right file, and save it as UTF-8",
        )
    })
}

fn too_large(file: &Path) -> SpecError {
    invalid(
        file,
        (1, 1),
        None,
        SpecErrorKind::TooLarge,
        format!(
            "the file is larger than {MAX_FILE_BYTES} bytes ({} KiB), the limit for an experiment file",
            MAX_FILE_BYTES / 1024
        ),
        "an experiment is a few hundred bytes: check that this is the right file",
    )
}

const EXAMPLE_EXPERIMENT: &str =
    "an experiment needs at least `name: node-shutdown`, `workload: {kind: writer}` and \
     `fault: {kind: node-shutdown, target: {nodeOf: writer-0}}`";

fn parse_inner(text: &str, file: &Path) -> Result<(Experiment, Node), SpecError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(too_large(file));
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let empty = || {
        invalid(
            file,
            (1, 1),
            None,
            SpecErrorKind::Empty,
            "the file holds no experiment",
            EXAMPLE_EXPERIMENT,
        )
    };
    let tree = match yaml::parse(text) {
        Ok(Some(tree)) => tree,
        Ok(None) => return Err(empty()),
        Err(err) => return Err(yaml_error(file, text, &err)),
    };
    let what = match tree.value {
        Value::Map(_) => None,
        Value::Null => return Err(empty()),
        Value::Seq(_) => Some("a list"),
        Value::Str(_) => Some("a single string"),
        Value::Int(_) | Value::Float(_) => Some("a single number"),
        Value::Bool(_) => Some("a single boolean"),
    };
    if let Some(what) = what {
        return Err(invalid(
            file,
            tree.at,
            None,
            SpecErrorKind::NotAMapping,
            format!("the file holds {what}, but an experiment is a mapping of fields"),
            "start the file with `name: <experiment name>` at the beginning of a line, then the other fields",
        ));
    }
    let exp: Experiment = yaml::deserialize(text).map_err(|e| field_error(file, &tree, &e))?;
    super::check::validate(&exp, file, &tree)?;
    Ok((exp, tree))
}

// ---------------------------------------------------------------------------------------------
// Turning parser errors into diagnostics

/// Errors from reading the YAML itself: syntax, more than one document, limits.
pub(super) fn yaml_error(file: &Path, text: &str, err: &serde_saphyr::Error) -> SpecError {
    use serde_saphyr::budget::BudgetBreach;
    use serde_saphyr::granit_parser::ErrorKind;
    use serde_saphyr::{Error, ExternalMessageSource, MessageFormatter};

    let at = err
        .location()
        .map_or((1, 1), |l| (l.line() as usize, l.column() as usize));
    let err = original(err);
    let limit = |problem: String| {
        invalid(
            file,
            at,
            None,
            SpecErrorKind::TooLarge,
            problem,
            "an experiment is a few small mappings: check that this is the right file",
        )
    };
    let too_deep = || limit(format!("the YAML nests deeper than {MAX_DEPTH} levels"));
    match err {
        Error::MultipleDocuments { .. } => {
            // serde-saphyr points at the second document's content; show its `---`.
            let line = text
                .lines()
                .take(at.0)
                .enumerate()
                .filter(|(_, l)| l.starts_with("---"))
                .last()
                .map_or(at.0, |(i, _)| i + 1);
            invalid(
                file,
                (line, 1),
                None,
                SpecErrorKind::Syntax,
                "the file holds more than one YAML document (a second `---`)",
                "put each experiment in its own file",
            )
        }
        Error::Budget {
            breach: BudgetBreach::Depth { .. },
            ..
        } => too_deep(),
        Error::ExternalMessage { source, .. }
            if matches!(&**source, ExternalMessageSource::Parser(e)
                if matches!(e.kind(), ErrorKind::RecursionLimitExceeded)) =>
        {
            too_deep()
        }
        Error::Budget {
            breach: BudgetBreach::Nodes { .. },
            ..
        }
        | Error::AliasReplayLimitExceeded { .. } => limit(format!(
            "the YAML holds more than {MAX_NODES} values (each use of an alias counts as a copy)"
        )),
        Error::Budget { .. }
        | Error::AliasExpansionLimitExceeded { .. }
        | Error::AliasReplayStackDepthExceeded { .. } => limit(format!(
            "the YAML is too large or too complex for an experiment ({})",
            serde_saphyr::UserMessageFormatter.format_message(err)
        )),
        _ => invalid(
            file,
            at,
            None,
            SpecErrorKind::Syntax,
            format!(
                "invalid YAML: {}",
                serde_saphyr::UserMessageFormatter.format_message(err)
            ),
            "indent with spaces (not tabs), and close every quote, `[` and `{`",
        ),
    }
}

fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The error itself, without the wrappers that add a snippet or an alias's locations.
fn original(err: &serde_saphyr::Error) -> &serde_saphyr::Error {
    let mut err = err.without_snippet();
    while let serde_saphyr::Error::AliasError { error, .. } = err {
        err = error.without_snippet();
    }
    err
}

/// Errors from deserializing an [`Experiment`]: serde-saphyr says what is wrong and where, the
/// tree says which field is written there.
fn field_error(file: &Path, tree: &Node, err: &serde_saphyr::Error) -> SpecError {
    use serde_saphyr::{Error, MessageFormatter};
    let at = err
        .location()
        .map_or((1, 1), |l| (l.line() as usize, l.column() as usize));
    let err = original(err);
    // serde-saphyr reports its own type errors at the value; the errors serde raises (a
    // visitor's, unknown and missing fields) at the key it read last in the mapping, or at the
    // mapping when it read none.
    let at_value = matches!(
        err,
        Error::Unexpected { .. }
            | Error::InvalidScalar { .. }
            | Error::NullIntoString { .. }
            | Error::InvalidBooleanStrict { .. }
            | Error::SerdeUnknownVariant { .. }
            | Error::ExternallyTaggedEnumExpectedScalarOrMapping { .. }
    );
    let hits = tree.at_pos(at);
    let hit = if at_value {
        hits.iter().rev().find(|(_, key, _)| key.is_none())
    } else {
        hits.iter().find(|(_, key, _)| key.is_some())
    };
    let (path, key, node) = hit
        .or(hits.last())
        .cloned()
        .unwrap_or((String::new(), None, tree));
    // The mapping an unknown, missing or repeated field belongs to: the key's, or the mapping
    // found at the position itself.
    let mapping = match key {
        Some(_) => path.rsplit_once('.').map_or("", |(parent, _)| parent),
        None => &path,
    };
    // A wrong value may be reported at its key; point at the value.
    let at = node.at;
    if path.split(['.', '[']).any(|segment| segment == "?") {
        let problem = "a mapping key must be a plain name, such as `name`";
        let hint = "write each field as `name: value`";
        return invalid(file, at, None, SpecErrorKind::Syntax, problem, hint);
    }
    let field = (!path.is_empty()).then(|| path.clone());
    let wrong_type = |expected: &str| {
        if expected == duration::EXAMPLES {
            let problem = match node.text() {
                Some(text) => duration::parse(&text)
                    .err()
                    .unwrap_or_else(|| format!("`{text}` is not a duration")),
                None => format!("expected a duration, found {}", describe(node)),
            };
            let hint = format!("write {}", duration::EXAMPLES);
            return invalid(
                file,
                at,
                field.clone(),
                SpecErrorKind::InvalidValue,
                problem,
                hint,
            );
        }
        let expected = describe_expected(expected);
        let hint = match example_for(&path) {
            Some(example) => format!("write e.g. `{example}`"),
            None => format!("write {expected}"),
        };
        invalid(
            file,
            at,
            field.clone(),
            SpecErrorKind::InvalidValue,
            format!("expected {expected}, found {}", describe(node)),
            hint,
        )
    };
    match err {
        Error::SerdeUnknownField {
            field: name,
            expected,
            ..
        } => {
            let mut hint = match expected.as_slice() {
                [] => "this mapping takes no fields; remove it".to_string(),
                [one] => format!("expected `{one}`"),
                _ => format!("expected one of {}", quote_list(expected)),
            };
            if let Some(guess) = closest(name, expected) {
                hint.push_str(&format!(" (did you mean `{guess}`?)"));
            }
            invalid(
                file,
                key.map_or(at, |k| k.at),
                Some(join_key(mapping, name)),
                SpecErrorKind::UnknownField,
                format!("unknown field `{name}`"),
                hint,
            )
        }
        Error::SerdeMissingField { field: name, .. } => {
            let field = join_key(mapping, name);
            let hint = match example_for(&field) {
                Some(example) => format!("add it, e.g. `{example}`"),
                None => format!("add `{name}`"),
            };
            // At the key of the mapping that lacks it.
            invalid(
                file,
                tree.locate(mapping),
                Some(field),
                SpecErrorKind::MissingField,
                format!("missing field `{name}`"),
                hint,
            )
        }
        Error::DuplicateMappingKey { .. } => {
            let at = key.map_or(at, |k| k.at);
            let name = key.and_then(Node::text).unwrap_or_default();
            let first = tree.find(&path).unwrap_or(at);
            invalid(
                file,
                at,
                field,
                SpecErrorKind::DuplicateField,
                format!("`{name}` is given twice (first at line {})", first.0),
                format!("keep only one `{name}`"),
            )
        }
        Error::SerdeUnknownVariant {
            variant, expected, ..
        } => {
            let mut hint = match expected.as_slice() {
                [] => "this field takes no value".to_string(),
                [one] => format!("the only accepted value is `{one}`"),
                _ => format!("accepted values: {}", quote_list(expected)),
            };
            if let Some(guess) = closest(variant, expected) {
                hint.push_str(&format!(" (did you mean `{guess}`?)"));
            }
            invalid(
                file,
                at,
                field,
                SpecErrorKind::UnknownValue,
                format!("unknown value `{variant}`"),
                hint,
            )
        }
        Error::SerdeInvalidType { expected, .. } | Error::SerdeInvalidValue { expected, .. } => {
            wrong_type(expected)
        }
        Error::InvalidScalar { ty: expected, .. } | Error::Unexpected { expected, .. } => {
            wrong_type(expected)
        }
        Error::NullIntoString { .. } => wrong_type("a string"),
        Error::ExternallyTaggedEnumExpectedScalarOrMapping { .. } => wrong_type("a name"),
        Error::InvalidBooleanStrict { .. } => wrong_type("a boolean"),
        other => invalid(
            file,
            at,
            field,
            SpecErrorKind::InvalidValue,
            serde_saphyr::UserMessageFormatter.format_message(other),
            "",
        ),
    }
}

/// A value as a message shows what was found.
fn describe(node: &Node) -> String {
    match &node.value {
        Value::Null => "an empty value".to_string(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Int(i) => format!("integer `{i}`"),
        Value::Float(f) => format!("number `{f}`"),
        Value::Str(s) => format!("string {s:?}"),
        Value::Seq(_) => "a list".to_string(),
        Value::Map(_) => "a mapping".to_string(),
    }
}

/// What serde and serde-saphyr expect (`u32`, `struct Target`, `mapping start`), as a user
/// would say it.
fn describe_expected(expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number",
        "bool" | "boolean" => "a boolean",
        "a sequence" | "sequence start" => "a list",
        "a map" | "mapping start" => "a mapping",
        "string scalar" | "scalar" => "a string",
        e if e.starts_with("struct ") => "a mapping",
        e if e.starts_with("enum ") => "a name",
        e => e,
    }
    .to_string()
}

fn quote_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The allowed word closest to a misspelt one, if it is close enough to be a typo (the one
/// "did you mean" rule of nodedown's messages).
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let word_lower = word.to_lowercase();
    let best = candidates
        .iter()
        .map(|c| (strsim::levenshtein(&word_lower, &c.to_lowercase()), *c))
        .min_by_key(|(d, _)| *d)?;
    let limit = if word.chars().count() <= 3 { 1 } else { 2 };
    (best.0 > 0 && best.0 <= limit).then_some(best.1)
}

/// A line to show for a field, e.g. `after: 30s`. Variants use the experiment's examples.
fn example_for(path: &str) -> Option<&'static str> {
    let mut normal = String::new();
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => in_index = true,
            ']' => in_index = false,
            c if !in_index => normal.push(c),
            _ => {}
        }
    }
    let lookup = |p: &str| -> Option<&'static str> {
        Some(match p {
            "name" => "name: node-shutdown",
            "description" => "description: power off the node of writer-0",
            "cluster" => "cluster: {provider: kind}",
            "cluster.provider" => "provider: kind",
            "cluster.config" => "config: kind-configs/fast.yaml",
            "cluster.name" => "name: nodedown",
            "cluster.reuse" => "reuse: true",
            "workload" => "workload: {kind: writer}",
            "workload.kind" => "kind: writer",
            "workload.replicas" => "replicas: 1",
            "workload.instances" => "instances: 10",
            "workload.storageClass" => "storageClass: nodedown-shared",
            "workload.size" => "size: 1Gi",
            "workload.image" => "image: registry.example/writer:1.0",
            "fault" => "fault: {kind: node-shutdown, target: {nodeOf: writer-0}}",
            "fault.kind" => "kind: node-shutdown",
            "fault.target" => "target: {nodeOf: writer-0}",
            "fault.target.nodeOf" => "nodeOf: writer-0",
            "remediation" => "remediation: {kind: force-delete-pod, after: 30s}",
            "remediation.kind" => "kind: force-delete-pod",
            "remediation.after" => "after: 30s",
            "remediation.fence" => "fence: true",
            "remediation.liftAfter" => "liftAfter: 30s",
            "timeouts" => "timeouts: {recovery: 5m}",
            "timeouts.steadyState" => "steadyState: 3m",
            "timeouts.recovery" => "recovery: 5m",
            "timeouts.heal" => "heal: 3m",
            "expect" => "expect: {recovered: true, timeToRunning: {max: 2m}}",
            "expect.recovered" => "recovered: true",
            "expect.timeToRunning" => "timeToRunning: {max: 2m}",
            "expect.timeToReady" => "timeToReady: {max: 2m}",
            "expect.timeToRunning.max" | "expect.timeToReady.max" => "max: 2m",
            "repeat" => "repeat: 3",
            "variants" => "variants: [{name: baseline, remediation: {kind: none}}]",
            "variants.name" => "name: baseline",
            "variants.description" => "description: no remediation",
            _ => return None,
        })
    };
    lookup(&normal).or_else(|| lookup(normal.strip_prefix("variants.")?))
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{expand, PlanOptions};
    use crate::spec::{Provider, RemediationSpec};
    use std::time::Duration;

    const MINIMAL: &str = "name: minimal\nworkload: {kind: writer}\nfault: {kind: node-shutdown, target: {nodeOf: writer-0}}\n";

    fn parse(text: &str) -> Result<Experiment, SpecError> {
        parse_str(text, Path::new("experiments/x.yaml"))
    }

    fn err(text: &str) -> SpecError {
        match parse(text) {
            Ok(exp) => panic!("expected an error, got {exp:?}"),
            Err(e) => e,
        }
    }

    /// MINIMAL plus more top-level lines.
    fn with(extra: &str) -> String {
        format!("{MINIMAL}{extra}")
    }

    #[test]
    fn minimal_gets_defaults() {
        let exp = parse(MINIMAL).unwrap();
        assert_eq!(exp.name, "minimal");
        assert_eq!(exp.repeat, 1);
        assert_eq!(exp.workload.replicas, 1);
        assert_eq!(exp.workload.size, "1Gi");
        assert_eq!(exp.remediation, RemediationSpec::None);
        assert_eq!(exp.timeouts.recovery, Duration::from_secs(300));
        assert_eq!(exp.cluster.provider, Provider::Kind);
    }

    #[test]
    fn unknown_field_names_file_line_field_and_alternatives() {
        let e = err(&with(
            "remediation:\n  kind: force-delete-pod\n  afer: 30s\n",
        ));
        assert_eq!(e.line(), Some(6));
        assert_eq!(e.column(), Some(3));
        assert_eq!(e.field(), Some("remediation.afer"));
        assert_eq!(e.kind(), Some(SpecErrorKind::UnknownField));
        assert_eq!(
            e.to_string(),
            "experiments/x.yaml:6:3: remediation.afer: unknown field `afer`; expected one of `kind`, `after`, \
             `fence`, `liftAfter` (did you mean `after`?)"
        );
    }

    #[test]
    fn unknown_field_next_to_kind_none_is_an_error() {
        let e = err(&with("remediation:\n  kind: none\n  aftre: 30s\n"));
        assert_eq!(e.field(), Some("remediation.aftre"));
        assert_eq!(e.line(), Some(6));
    }

    #[test]
    fn unknown_field_in_flow_mapping_of_a_variant() {
        let e = err(&with(
            "variants:\n  - name: a\n    remediation: {kind: delete-node, afer: 1s}\n",
        ));
        assert_eq!(e.field(), Some("variants[0].remediation.afer"));
        assert_eq!(e.line(), Some(6));
        assert_eq!(e.column(), Some(38));
    }

    #[test]
    fn unknown_top_level_field() {
        let e = err(&with("expected: {recovered: true}\n"));
        assert_eq!(e.field(), Some("expected"));
        assert_eq!(e.line(), Some(4));
        assert!(e.to_string().contains("did you mean `expect`?"), "{e}");
    }

    #[test]
    fn bad_duration_says_how_to_write_one() {
        let e = err(&with(
            "remediation:\n  kind: force-delete-pod\n  after: 30 seconds\n",
        ));
        assert_eq!(e.field(), Some("remediation.after"));
        assert_eq!(e.line(), Some(6));
        assert_eq!(e.kind(), Some(SpecErrorKind::InvalidValue));
        let msg = e.to_string();
        assert!(msg.contains("`30 seconds` is not a duration"), "{msg}");
        assert!(
            msg.ends_with("write a duration such as 30s, 5m or 1m30s"),
            "{msg}"
        );
    }

    #[test]
    fn number_without_unit_is_not_a_duration() {
        let e = err(&with("timeouts: {recovery: 300}\n"));
        assert_eq!(e.field(), Some("timeouts.recovery"));
        assert!(e.to_string().contains("needs a unit"), "{e}");
    }

    #[test]
    fn durations_parse_strictly_and_round_trip() {
        for (text, secs, nanos) in [
            ("0s", 0, 0),
            ("30s", 30, 0),
            ("5m", 300, 0),
            ("1m30s", 90, 0),
            ("2h", 7200, 0),
            ("1s500ms", 1, 500_000_000),
        ] {
            let d = duration::parse(text).unwrap();
            assert_eq!(d, Duration::new(secs, nanos), "{text}");
            assert_eq!(duration::format(d), text);
        }
        for bad in [
            "",
            "30",
            "30 seconds",
            "1.5s",
            "30sec",
            "30s1m",
            "1m1m",
            "s",
            "-1s",
            "1m 30s",
        ] {
            assert!(duration::parse(bad).is_err(), "{bad:?} should not parse");
        }
        let odd = Duration::new(3723, 4_005_006);
        assert_eq!(duration::parse(&duration::format(odd)).unwrap(), odd);
    }

    #[test]
    fn unknown_enum_value_lists_accepted_values() {
        let e = err("name: x\nworkload: {kind: writer}\nfault:\n  kind: node-reboot\n  target: {nodeOf: writer-0}\n");
        assert_eq!(e.field(), Some("fault.kind"));
        assert_eq!(e.line(), Some(4));
        assert_eq!(e.kind(), Some(SpecErrorKind::UnknownValue));
        assert!(
            e.to_string().contains(
                "unknown value `node-reboot`; accepted values: `node-shutdown`, `kubelet-stop`, `network-partition`"
            ),
            "{e}"
        );

        let e = err(&with("remediation: {kind: force-delete}\n"));
        assert_eq!(e.field(), Some("remediation.kind"));
        assert!(
            e.to_string().contains("accepted values: `none`, `external`, `out-of-service-taint`, `force-delete-pod`, `delete-node`, `delete-volumeattachment`"),
            "{e}"
        );
    }

    #[test]
    fn missing_field_is_named_with_an_example() {
        let e = err("name: x\nfault: {kind: node-shutdown, target: {nodeOf: writer-0}}\n");
        assert_eq!(e.field(), Some("workload"));
        assert_eq!(e.line(), Some(1));
        assert_eq!(e.kind(), Some(SpecErrorKind::MissingField));
        assert!(
            e.to_string()
                .contains("missing field `workload`; add it, e.g. `workload: {kind: writer}`"),
            "{e}"
        );

        let e = err("name: x\nworkload: {kind: writer}\n\nfault:\n  kind: node-shutdown\n");
        assert_eq!(e.field(), Some("fault.target"));
        assert_eq!(e.line(), Some(4), "the line of the parent key");

        let e = err(&with("variants:\n  - remediation: {kind: none}\n"));
        assert_eq!(e.field(), Some("variants[0].name"));
        assert_eq!(e.line(), Some(5));
        assert!(e.to_string().contains("`name: baseline`"), "{e}");
    }

    #[test]
    fn wrong_type() {
        let e = err("name: x\nworkload: {kind: writer, replicas: two}\nfault: {kind: node-shutdown, target: {nodeOf: writer-0}}\n");
        assert_eq!(e.field(), Some("workload.replicas"));
        assert_eq!(e.line(), Some(2));
        assert!(
            e.to_string().contains(
                "expected a whole number, found string \"two\"; write e.g. `replicas: 1`"
            ),
            "{e}"
        );

        let e = err(
            "name: x\nworkload: writer\nfault: {kind: node-shutdown, target: {nodeOf: writer-0}}\n",
        );
        assert_eq!(e.field(), Some("workload"));
        assert!(e.to_string().contains("expected a mapping"), "{e}");
    }

    #[test]
    fn fence_and_after_only_where_they_apply() {
        let e = err(&with(
            "remediation:\n  kind: delete-node\n  after: 10s\n  fence: true\n",
        ));
        assert_eq!(e.field(), Some("remediation.fence"));
        assert_eq!(e.line(), Some(7));
        assert!(
            e.to_string()
                .contains("remediation `delete-node` takes no fence"),
            "{e}"
        );
        // `liftAfter` only lifts a storage fence.
        let e = err(&with(
            "remediation:\n  kind: out-of-service-taint\n  fence: true\n  liftAfter: 30s\n",
        ));
        assert_eq!(e.field(), Some("remediation.liftAfter"));
        assert!(
            e.to_string()
                .contains("only `kind: out-of-service-taint` with `fence: storage`"),
            "{e}"
        );
        let e = err(&with(
            "remediation:\n  kind: out-of-service-taint\n  fence: storage\n  liftAfter: 0s\n",
        ));
        assert!(
            e.to_string().contains("`liftAfter: 0s` lifts the fence"),
            "{e}"
        );
        let exp = parse(&with(
            "remediation:\n  kind: out-of-service-taint\n  fence: storage\n  liftAfter: 30s\n",
        ))
        .unwrap();
        assert_eq!(exp.remediation.lift_after(), Some(Duration::from_secs(30)));
        // A fence before a force delete or a VolumeAttachment's deletion is what a careful
        // operator does: accepted.
        for kind in ["force-delete-pod", "delete-volumeattachment"] {
            let exp = parse(&with(&format!(
                "remediation:\n  kind: {kind}\n  after: 10s\n  fence: storage\n"
            )))
            .unwrap();
            assert_eq!(
                exp.remediation.fence(),
                crate::spec::Fence::Storage,
                "{kind}"
            );
        }

        let e = err(&with(
            "variants:\n- name: a\n  remediation: {kind: none, after: 10s}\n",
        ));
        assert_eq!(e.field(), Some("variants[0].remediation.after"));
        assert_eq!(e.line(), Some(6));
    }

    #[test]
    fn empty_and_non_mapping_files() {
        for text in ["", "\n\n", "# just a comment\n", "---\n", "~\n"] {
            let e = err(text);
            assert_eq!(e.kind(), Some(SpecErrorKind::Empty), "{text:?}");
            assert!(
                e.to_string().contains("the file holds no experiment"),
                "{e}"
            );
        }
        let e = err("# experiments\n- name: a\n- name: b\n");
        assert_eq!(e.kind(), Some(SpecErrorKind::NotAMapping));
        assert_eq!(e.line(), Some(2));
        assert!(e.to_string().contains("holds a list"), "{e}");
    }

    #[test]
    fn syntax_errors_have_a_location() {
        let e = err("name: x\nworkload: {kind: writer\nfault: 1\n");
        assert_eq!(e.kind(), Some(SpecErrorKind::Syntax));
        assert!(e.line().is_some());
        assert!(e.to_string().starts_with("experiments/x.yaml:"), "{e}");
        assert!(e.to_string().contains("invalid YAML"), "{e}");

        let e = err(&with("---\nname: y\n"));
        assert_eq!(e.kind(), Some(SpecErrorKind::Syntax));
        assert_eq!(e.line(), Some(4));
    }

    #[test]
    fn duplicate_keys_point_at_the_second() {
        let e = err("name: x\nworkload: {kind: writer}\nfault:\n  kind: node-shutdown\n  target: {nodeOf: writer-0}\n  kind: node-shutdown\n");
        assert_eq!(e.kind(), Some(SpecErrorKind::DuplicateField));
        assert_eq!(e.field(), Some("fault.kind"));
        assert_eq!(e.line(), Some(6));
        assert!(
            e.to_string().contains("given twice (first at line 4)"),
            "{e}"
        );
    }

    #[test]
    fn names() {
        let e = err("name: Node_Shutdown\nworkload: {kind: writer}\nfault: {kind: node-shutdown, target: {nodeOf: writer-0}}\n");
        assert_eq!(e.field(), Some("name"));
        assert_eq!(e.line(), Some(1));
        assert!(e.to_string().contains("e.g. `node-shutdown`"), "{e}");

        let long = "a".repeat(41);
        let e = err(&format!("name: {long}\nworkload: {{kind: writer}}\nfault: {{kind: node-shutdown, target: {{nodeOf: writer-0}}}}\n"));
        assert!(e.to_string().contains("41 characters long"), "{e}");
        assert!(parse(&format!("name: {}\nworkload: {{kind: writer}}\nfault: {{kind: node-shutdown, target: {{nodeOf: writer-0}}}}\n", "a".repeat(40))).is_ok());
    }

    #[test]
    fn variant_names_are_checked_and_unique() {
        let e = err(&with("variants:\n  - name: a\n  - name: Bad Name\n"));
        assert_eq!(e.field(), Some("variants[1].name"));
        assert_eq!(e.line(), Some(6));
        assert!(e.to_string().contains("e.g. `bad-name`"), "{e}");

        let e = err(&with(
            "variants:\n  - name: a\n  - {name: b}\n  - name: a\n",
        ));
        assert_eq!(e.field(), Some("variants[2].name"));
        assert_eq!(e.line(), Some(7));
        assert!(
            e.to_string()
                .contains("already used by variants[0] (line 5)"),
            "{e}"
        );
    }

    #[test]
    fn repeat_replicas_size() {
        for (extra, field) in [("repeat: 0\n", "repeat"), ("repeat: 101\n", "repeat")] {
            let e = err(&with(extra));
            assert_eq!(e.field(), Some(field));
            assert_eq!(e.line(), Some(4));
        }
        assert!(parse(&with("repeat: 100\n")).is_ok());

        let three = "name: x\nworkload:\n  kind: writer\n  replicas: 3\nfault: {kind: node-shutdown, target: {nodeOf: writer-1}}\n";
        let exp = parse(three).expect("three replicas, the second one's node targeted");
        assert_eq!(
            members(&exp.workload),
            ["writer-0", "writer-1", "writer-2"],
            "each replica is a member of its own"
        );
        let e = err(&three.replace("replicas: 3", "replicas: 11"));
        assert_eq!(e.field(), Some("workload.replicas"));
        assert_eq!(e.line(), Some(4));
        assert!(e.to_string().contains("from 1 to 10 replicas"), "{e}");
        let e = err(&three.replace("replicas: 3", "replicas: 3\n  instances: 2"));
        assert_eq!(e.field(), Some("workload.replicas"));
        assert!(e.to_string().contains("not supported yet"), "{e}");
        let e = err(&three.replace("replicas: 3", "replicas: 3\n  controller: Deployment"));
        assert_eq!(e.field(), Some("workload.replicas"));
        assert!(e.to_string().contains("Deployment"), "{e}");

        let e = err("name: x\nworkload: {kind: writer, size: 1GB}\nfault: {kind: node-shutdown, target: {nodeOf: writer-0}}\n");
        assert_eq!(e.field(), Some("workload.size"));
        assert_eq!(e.line(), Some(2));
        assert_eq!(e.column(), Some(26));
    }

    #[test]
    fn several_nodes_by_zone_list_or_count() {
        let with = |target: &str| {
            format!("name: x\nworkload: {{kind: ledger, instances: 4}}\nfault:\n  kind: node-shutdown\n  target: {target}\n")
        };
        for ok in [
            "{zone: zone-a}",
            "{count: 2}",
            "{nodes: [w1, w2.example.com]}",
        ] {
            let exp = parse(&with(ok)).unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert!(exp.fault.target.several(), "{ok}");
            assert_eq!(exp.fault.target.pod(exp.workload.kind), "ledger-0");
        }
        assert!(!parse(&with("{nodeOf: ledger-0}"))
            .unwrap()
            .fault
            .target
            .several());
        for (bad, field, says) in [
            (
                "{zone: zone-a, count: 2}",
                "fault.target",
                "more than one way",
            ),
            (
                "{count: 0}",
                "fault.target.count",
                "from 1 to 50 nodes at once, not 0",
            ),
            ("{count: 51}", "fault.target.count", "not 51"),
            (
                "{nodes: [w1, w1]}",
                "fault.target.nodes",
                "node `w1` is named twice",
            ),
            (
                "{nodes: [W_1]}",
                "fault.target.nodes",
                "`W_1` is not a node name",
            ),
        ] {
            let e = err(&with(bad));
            assert_eq!(e.field(), Some(field), "{bad}: {e}");
            assert!(e.to_string().contains(says), "{bad}: {e}");
        }
        let e = err(
            "name: x\nworkload: {kind: ledger}\nfault: {kind: pod-delete, target: {count: 2}}\n",
        );
        assert!(
            e.to_string()
                .contains("acts on one pod, not on several nodes"),
            "{e}"
        );
    }

    #[test]
    fn target_must_be_a_pod_of_the_workload() {
        for (pod, ok) in [
            ("writer-0", true),
            ("writer-1", false),
            ("writer-00", false),
            ("ledger-0", false),
            ("writer", false),
        ] {
            let text = format!("name: x\nworkload: {{kind: writer}}\nfault:\n  kind: node-shutdown\n  target:\n    nodeOf: {pod}\n");
            match parse(&text) {
                Ok(_) => assert!(ok, "{pod} should be refused"),
                Err(e) => {
                    assert!(!ok, "{pod}: {e}");
                    assert_eq!(e.field(), Some("fault.target.nodeOf"));
                    assert_eq!(e.line(), Some(6));
                    assert!(e.to_string().contains("write `nodeOf: writer-0`"), "{e}");
                }
            }
        }
        let e = err("name: x\nworkload: {kind: writer}\nfault: {kind: node-shutdown, target: {nodeOf: ''}}\n");
        assert!(e.to_string().contains("the target pod is empty"), "{e}");

        let e = err(&with("variants:\n  - name: a\n    fault: {kind: node-shutdown, target: {nodeOf: writer-2}}\n"));
        assert_eq!(e.field(), Some("variants[0].fault.target.nodeOf"));
        assert_eq!(e.line(), Some(6));
    }

    #[test]
    fn timeouts_must_be_positive() {
        let e = err(&with("timeouts:\n  steadyState: 1m\n  heal: 0s\n"));
        assert_eq!(e.field(), Some("timeouts.heal"));
        assert_eq!(e.line(), Some(6));
        let e = err(&with(
            "variants:\n  - name: a\n    timeouts: {recovery: 0s}\n",
        ));
        assert_eq!(e.field(), Some("variants[0].timeouts.recovery"));
    }

    #[test]
    fn after_must_be_below_the_effective_recovery_timeout() {
        // The variant's own timeouts replace the experiment's as a whole.
        let text = with(
            "remediation: {kind: force-delete-pod, after: 2m}\ntimeouts: {recovery: 10m}\nvariants:\n  - name: ok\n  - name: short\n    timeouts: {recovery: 1m}\n",
        );
        let e = err(&text);
        assert_eq!(e.field(), Some("remediation.after"));
        assert_eq!(e.line(), Some(4));
        let msg = e.to_string();
        assert!(msg.contains("`after: 2m` is not shorter than `variants[1].timeouts.recovery: 1m` (variant `short`)"), "{msg}");

        let e = err(&with("remediation: {kind: delete-node, after: 5m}\n"));
        assert!(
            e.to_string()
                .contains("the default `timeouts.recovery` of 5m"),
            "{e}"
        );
        assert!(parse(&with("remediation: {kind: delete-node, after: 4m59s}\n")).is_ok());
    }

    #[test]
    fn bounds_fit_in_the_recovery_timeout_and_agree_with_recovered() {
        let e = err(&with(
            "timeouts: {recovery: 2m}\nexpect:\n  timeToReady:\n    max: 3m\n",
        ));
        assert_eq!(e.field(), Some("expect.timeToReady.max"));
        assert_eq!(e.line(), Some(7));
        assert!(e.to_string().contains("write at most `max: 2m`"), "{e}");
        assert!(parse(&with(
            "timeouts: {recovery: 2m}\nexpect: {timeToReady: {max: 2m}}\n"
        ))
        .is_ok());

        let e = err(&with("variants:\n  - name: baseline\n    expect: {recovered: false, timeToRunning: {max: 1m}}\n"));
        assert_eq!(e.field(), Some("variants[0].expect.timeToRunning"));
        assert_eq!(e.line(), Some(6));
        assert!(
            e.to_string()
                .contains("remove `timeToRunning`, or write `recovered: true`"),
            "{e}"
        );
    }

    #[test]
    fn cluster_config_rules() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("kind-configs")).unwrap();
        std::fs::write(dir.path().join("kind-configs/fast.yaml"), "kind: Cluster\n").unwrap();
        std::fs::create_dir(dir.path().join("experiments")).unwrap();
        let file = dir.path().join("experiments/a.yaml");

        let good = with("cluster: {provider: kind, config: ../kind-configs/fast.yaml}\n");
        let exp = parse_str(&good, &file).unwrap();
        assert_eq!(
            exp.cluster.config.as_deref(),
            Some(Path::new("../kind-configs/fast.yaml")),
            "kept as written"
        );
        assert!(cluster_config_path(&file, &exp.cluster).unwrap().is_file());

        let e =
            parse_str(&with("cluster:\n  config: kind-configs/fast.yaml\n"), &file).unwrap_err();
        assert_eq!(e.field(), Some("cluster.config"));
        assert_eq!(e.line(), Some(5));
        assert!(
            e.to_string()
                .contains("relative to the experiment file's directory"),
            "{e}"
        );

        let e = parse(&with("cluster:\n  provider: existing\n  config: x.yaml\n")).unwrap_err();
        assert_eq!(e.field(), Some("cluster.config"));
        assert_eq!(e.line(), Some(6));
        assert!(parse(&with("cluster: {provider: existing}\n")).is_ok());
    }

    #[test]
    fn variants_replace_fields_wholesale_and_expand() {
        let text = with(
            "timeouts: {recovery: 4m, heal: 1m}\nexpect: {recovered: true, timeToRunning: {max: 2m}}\nrepeat: 2\nvariants:\n  - {name: baseline, remediation: {kind: none}, expect: {recovered: false}}\n  - {name: oos, remediation: {kind: out-of-service-taint, after: 0s, fence: true}}\n  - name: slow\n    timeouts: {recovery: 9m}\n",
        );
        let exp = parse(&text).unwrap();
        assert_eq!(exp.variants.len(), 3);
        assert_eq!(
            exp.variants[1].remediation,
            Some(RemediationSpec::OutOfServiceTaint {
                after: Duration::ZERO,
                fence: crate::spec::Fence::Power,
                lift_after: None,
            })
        );
        let runs = expand(&exp, Path::new("x.yaml"), &PlanOptions::default());
        assert_eq!(runs.len(), 6);
        assert_eq!(
            runs[0].expect.time_to_running, None,
            "variant expect replaces the whole mapping"
        );
        assert_eq!(
            runs[4].timeouts.heal,
            Duration::from_secs(180),
            "variant timeouts replace the whole mapping"
        );
    }

    /// The fields left out when written when they hold their default name that default in the
    /// schema by hand (schemars cannot see it through `skip_serializing_if`): it must be the
    /// default a file without them reads as.
    #[test]
    fn the_schemas_stated_defaults_are_what_a_file_without_them_reads_as() {
        let schema = serde_json::to_value(schemars::schema_for!(Experiment)).unwrap();
        let exp = parse(MINIMAL).unwrap();
        let read = |field: &str| match field {
            "cluster" => serde_json::to_value(&exp.cluster).unwrap(),
            "remediation" => serde_json::to_value(&exp.remediation).unwrap(),
            "expect" => serde_json::to_value(&exp.expect).unwrap(),
            _ => serde_json::json!(exp.repeat),
        };
        for field in ["cluster", "remediation", "expect", "repeat"] {
            assert_eq!(
                schema["properties"][field]["default"],
                read(field),
                "{field}"
            );
        }
        let written = serde_json::to_value(&exp).unwrap();
        for field in ["cluster", "remediation", "expect", "repeat"] {
            assert!(
                written.get(field).is_none(),
                "{field}: left out when default"
            );
        }
    }

    #[test]
    fn experiments_round_trip_through_json_and_yaml() {
        let exp = parse(&with(
            "remediation: {kind: out-of-service-taint, after: 1m30s, fence: true}\ntimeouts: {recovery: 5m}\nvariants:\n  - {name: fd, remediation: {kind: force-delete-pod, after: 30s}}\n",
        ))
        .unwrap();
        let json = serde_json::to_string(&exp).unwrap();
        assert!(json.contains("\"after\":\"1m30s\""), "{json}");
        let back: Experiment = serde_json::from_str(&json).unwrap();
        assert_eq!(back, exp);
        let yaml = serde_saphyr::to_string(&exp).unwrap();
        assert_eq!(parse(&yaml).unwrap(), exp, "{yaml}");
    }

    #[test]
    fn limits_refuse_big_deep_and_repetitive_files() {
        let big = with(&format!("# {}\n", "x".repeat(MAX_FILE_BYTES)));
        let e = err(&big);
        assert_eq!(e.kind(), Some(SpecErrorKind::TooLarge));
        assert_eq!((e.line(), e.column()), (Some(1), Some(1)));
        assert!(
            e.to_string().contains("the limit for an experiment file"),
            "{e}"
        );

        for deep in [
            format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1)),
            format!(
                "{}x{}",
                "{a: ".repeat(MAX_DEPTH + 1),
                "}".repeat(MAX_DEPTH + 1)
            ),
            format!("{}x\n", "- ".repeat(MAX_DEPTH + 1)),
        ] {
            let e = err(&deep);
            assert_eq!(e.kind(), Some(SpecErrorKind::TooLarge), "{e}");
            assert!(e.to_string().contains("nests deeper than 32 levels"), "{e}");
        }

        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for (prev, name) in "abcdef".chars().zip("bcdefg".chars()) {
            let refs = vec![format!("*{prev}"); 10].join(", ");
            bomb.push_str(&format!("{name}: &{name} [{refs}]\n"));
        }
        let e = err(&bomb);
        assert_eq!(e.kind(), Some(SpecErrorKind::TooLarge), "{e}");
    }

    #[test]
    fn files_that_are_not_utf8_say_where() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.yaml");
        std::fs::write(&file, b"name: a\nworkload: \xff\n").unwrap();
        let e = load_file(&file).unwrap_err();
        assert_eq!((e.line(), e.column()), (Some(2), Some(11)));
        assert!(e.to_string().contains("not UTF-8 text"), "{e}");
    }

    #[test]
    fn anchors_and_merge_keys_share_parts_between_variants() {
        let exp = parse(&with(
            "variants:\n  - &fd {name: fd, remediation: &r {kind: force-delete-pod, after: 30s}}\n  - {<<: *fd, name: fd2}\n  - {name: dn, remediation: *r}\n",
        ))
        .unwrap();
        assert_eq!(exp.variants[1].remediation, exp.variants[0].remediation);
        assert_eq!(exp.variants[2].remediation, exp.variants[0].remediation);
    }

    #[test]
    fn garbage_never_panics() {
        let alphabet: Vec<char> = " \t\n-:#{}[],'\"|>&*!?ab1".chars().collect();
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..3000 {
            let len = (state % 60) as usize;
            let mut text = String::new();
            for _ in 0..len {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                text.push(alphabet[(state >> 33) as usize % alphabet.len()]);
            }
            let _ = parse(&text);
        }
    }

    #[test]
    fn load_paths_reads_directories_sorted_and_rejects_duplicate_names() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, exp: &str| {
            std::fs::write(
                dir.path().join(name),
                format!("name: {exp}\nworkload: {{kind: writer}}\nfault: {{kind: node-shutdown, target: {{nodeOf: writer-0}}}}\n"),
            )
            .unwrap()
        };
        write("b.yml", "b");
        write("a.yaml", "a");
        std::fs::write(dir.path().join("notes.txt"), "not an experiment").unwrap();
        let loaded = load_paths(&[dir.path().to_path_buf(), dir.path().join("a.yaml")]).unwrap();
        let names: Vec<_> = loaded.iter().map(|(_, e)| e.name.as_str()).collect();
        assert_eq!(names, ["a", "b"], "sorted by file name, each file once");

        write("c.yaml", "a");
        let e = load_paths(&[dir.path().to_path_buf()]).unwrap_err();
        assert_eq!(e.field(), Some("name"));
        assert!(e.to_string().contains("already used by"), "{e}");

        let empty = tempfile::tempdir().unwrap();
        let e = load_paths(&[empty.path().to_path_buf()]).unwrap_err();
        assert!(matches!(e, SpecError::NoFiles { .. }), "{e}");
        assert!(e.to_string().contains("no experiment files"), "{e}");

        let missing = dir.path().join("missing.yaml");
        let e = load_file(&missing).unwrap_err();
        assert!(matches!(e, SpecError::Io { .. }));
        assert!(
            e.to_string().starts_with(&missing.display().to_string()),
            "{e}"
        );
        assert_eq!(e.line(), None);
    }
}
