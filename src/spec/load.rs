//! Reading experiment files: parse strictly, then check what the types cannot express.
//!
//! Every error a user can cause is one [`SpecError`] whose message reads
//! `<file>:<line>:<col>: <field>: <what is wrong>; <what to write instead>`. The YAML parser
//! knows where a syntax or type error is; for the checks made after parsing, a small scan of the
//! text ([`KeyMap`]) finds the line of each key.

use super::model::{
    duration, ClusterSpec, Expectations, Experiment, FaultSpec, Provider, RemediationSpec,
    Timeouts, WorkloadKind, WorkloadSpec, FIELD_ERROR_PREFIX,
};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longest experiment or variant name (it becomes part of run directory names and test ids).
pub const MAX_NAME_LEN: usize = 40;
/// Largest `repeat`.
pub const MAX_REPEAT: u32 = 100;

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

fn invalid(
    file: &Path,
    (line, column): (usize, usize),
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
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SpecError::Io { path, source }
    };
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
    for file in files {
        let identity = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
        if !seen_files.insert(identity) {
            continue;
        }
        let text = read(&file)?;
        let (exp, keys) = parse_inner(&text, &file)?;
        if let Some(first) = names.get(&exp.name) {
            return Err(invalid(
                &file,
                keys.locate("name"),
                Some("name".to_string()),
                SpecErrorKind::Invalid,
                format!(
                    "experiment name `{}` is already used by {}",
                    exp.name,
                    first.display()
                ),
                "give each experiment its own name: it names the run directories",
            ));
        }
        names.insert(exp.name.clone(), file.clone());
        out.push((file, exp));
    }
    Ok(out)
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

fn is_yaml_name(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    )
}

fn read(path: &Path) -> Result<String, SpecError> {
    std::fs::read_to_string(path).map_err(|source| SpecError::Io {
        path: path.to_path_buf(),
        source,
    })
}

const EXAMPLE_EXPERIMENT: &str =
    "an experiment needs at least `name: node-shutdown`, `workload: {kind: writer}` and \
     `fault: {kind: node-shutdown, target: {nodeOf: writer-0}}`";

fn parse_inner(text: &str, file: &Path) -> Result<(Experiment, KeyMap), SpecError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let keys = KeyMap::scan(text);
    let Some(first_content) = keys.first_content else {
        return Err(invalid(
            file,
            (1, 1),
            None,
            SpecErrorKind::Empty,
            "the file holds no experiment",
            EXAMPLE_EXPERIMENT,
        ));
    };

    // First as a plain YAML value: syntax errors, duplicate keys and the overall shape.
    match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) {
        Err(err) => return Err(yaml_error(file, text, &keys, &err)),
        Ok(serde_yaml_ng::Value::Mapping(_)) => {}
        Ok(serde_yaml_ng::Value::Null) => {
            return Err(invalid(
                file,
                first_content,
                None,
                SpecErrorKind::Empty,
                "the file holds no experiment, only an empty value",
                EXAMPLE_EXPERIMENT,
            ))
        }
        Ok(other) => {
            let what = match other {
                serde_yaml_ng::Value::Sequence(_) => "a list",
                serde_yaml_ng::Value::String(_) => "a single string",
                serde_yaml_ng::Value::Number(_) => "a single number",
                serde_yaml_ng::Value::Bool(_) => "a single boolean",
                _ => "a tagged value",
            };
            return Err(invalid(
                file,
                first_content,
                None,
                SpecErrorKind::NotAMapping,
                format!("the file holds {what}, but an experiment is a mapping of fields"),
                "start the file with `name: <experiment name>` at the beginning of a line, then the other fields",
            ));
        }
    }

    let exp: Experiment =
        serde_yaml_ng::from_str(text).map_err(|err| serde_error(file, &keys, &err))?;
    validate(&exp, file, &keys)?;
    Ok((exp, keys))
}

// ---------------------------------------------------------------------------------------------
// Turning parser errors into diagnostics

/// Errors found while reading the YAML itself (before the experiment types are involved).
fn yaml_error(file: &Path, text: &str, keys: &KeyMap, err: &serde_yaml_ng::Error) -> SpecError {
    let location = err.location().map(|l| (l.line(), l.column()));
    let message = err.to_string();
    if message.contains("duplicate entry with key") {
        if let Some((path, first, second)) = keys.first_duplicate() {
            return duplicate(file, path, first, second);
        }
    }
    if message.contains("more than one document") {
        let line = second_document_line(text).unwrap_or(1);
        return invalid(
            file,
            (line, 1),
            None,
            SpecErrorKind::Syntax,
            "the file holds more than one YAML document (a second `---`)",
            "put each experiment in its own file",
        );
    }
    let location = location.unwrap_or((1, 1));
    let (path, problem) = split_path(strip_locations(&message, location));
    invalid(
        file,
        location,
        (!path.is_empty()).then(|| path.to_string()),
        SpecErrorKind::Syntax,
        format!("invalid YAML: {problem}"),
        "indent with spaces (not tabs), and close every quote, `[` and `{`",
    )
}

fn duplicate(file: &Path, path: &str, first: (usize, usize), second: (usize, usize)) -> SpecError {
    let key = last_segment(path);
    invalid(
        file,
        second,
        Some(path.to_string()),
        SpecErrorKind::DuplicateField,
        format!("`{key}` is given twice (first at line {})", first.0),
        format!("keep only one `{key}`"),
    )
}

fn second_document_line(text: &str) -> Option<usize> {
    let mut seen_content = false;
    for (i, line) in text.lines().enumerate() {
        let marker =
            line.starts_with("---") && line[3..].chars().next().is_none_or(char::is_whitespace);
        if marker && seen_content {
            return Some(i + 1);
        }
        let trimmed = line.trim();
        if !marker && !trimmed.is_empty() && !trimmed.starts_with('#') && !trimmed.starts_with('%')
        {
            seen_content = true;
        }
    }
    None
}

/// Removes ` at line L column C` (the parser's own location suffixes) from a message.
fn strip_locations(message: &str, (line, column): (usize, usize)) -> String {
    message.replacen(&format!(" at line {line} column {column}"), "", 1)
}

/// The messages serde and this crate's model produce start with one of these; anything before
/// `": "` that is not one of them is the YAML path the parser put in front.
const MESSAGE_STARTS: &[&str] = &[
    "invalid type: ",
    "invalid value: ",
    "invalid length ",
    "unknown field `",
    "unknown variant `",
    "missing field `",
    "duplicate field `",
    FIELD_ERROR_PREFIX,
];

/// Splits `fault.kind: unknown variant ...` into (`fault.kind`, `unknown variant ...`).
fn split_path(message: String) -> (String, String) {
    if MESSAGE_STARTS.iter().any(|s| message.starts_with(s)) {
        return (String::new(), message);
    }
    if let Some(i) = message.find(": ") {
        let path = &message[..i];
        let looks_like_path = !path.is_empty()
            && path
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '.' | '[' | ']' | '_' | '-' | '?'));
        if looks_like_path {
            return (path.to_string(), message[i + 2..].to_string());
        }
    }
    (String::new(), message)
}

fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn last_segment(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// Text between the first pair of backticks after `prefix`.
fn backticked_after<'a>(message: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = message.strip_prefix(prefix)?;
    let end = rest.find('`')?;
    Some(&rest[..end])
}

/// Errors from deserializing into [`Experiment`].
fn serde_error(file: &Path, keys: &KeyMap, err: &serde_yaml_ng::Error) -> SpecError {
    let location = err
        .location()
        .map(|l| (l.line(), l.column()))
        .unwrap_or((1, 1));
    let (path, message) = split_path(strip_locations(&err.to_string(), location));

    if let Some(name) = backticked_after(&message, "unknown field `") {
        let field = join_key(&path, name);
        let rest = &message["unknown field `".len() + name.len() + 1..];
        let allowed: Vec<&str> = backticked_list(rest);
        let mut hint = if allowed.is_empty() {
            "this mapping takes no fields; remove it".to_string()
        } else if allowed.len() == 1 {
            format!("expected `{}`", allowed[0])
        } else {
            format!("expected one of {}", quote_list(&allowed))
        };
        if let Some(guess) = closest(name, &allowed) {
            hint.push_str(&format!(" (did you mean `{guess}`?)"));
        }
        return invalid(
            file,
            location,
            Some(field),
            SpecErrorKind::UnknownField,
            format!("unknown field `{name}`"),
            hint,
        );
    }

    if let Some(name) = backticked_after(&message, "missing field `") {
        let field = join_key(&path, name);
        let example = example_for(&field).unwrap_or("");
        let hint = if example.is_empty() {
            format!("add `{name}`")
        } else {
            format!("add it, e.g. `{example}`")
        };
        let at = if path.is_empty() {
            (1, 1)
        } else {
            keys.find(&path).unwrap_or(location)
        };
        return invalid(
            file,
            at,
            Some(field),
            SpecErrorKind::MissingField,
            format!("missing field `{name}`"),
            hint,
        );
    }

    if let Some(name) = backticked_after(&message, "duplicate field `") {
        let field = join_key(&path, name);
        let occurrences = keys.all(&field);
        if occurrences.len() >= 2 {
            return duplicate(file, &field, occurrences[0], occurrences[1]);
        }
        return invalid(
            file,
            location,
            Some(field),
            SpecErrorKind::DuplicateField,
            format!("`{name}` is given twice"),
            format!("keep only one `{name}`"),
        );
    }

    if let Some(name) = backticked_after(&message, FIELD_ERROR_PREFIX) {
        // `field `fence`: <problem>; <hint>` from the model's own checks.
        let field = join_key(&path, name);
        let rest = &message[FIELD_ERROR_PREFIX.len() + name.len() + 1..];
        let rest = rest.strip_prefix(": ").unwrap_or(rest);
        let (problem, hint) = rest.split_once("; ").unwrap_or((rest, ""));
        let at = keys.find(&field).unwrap_or(location);
        return invalid(file, at, Some(field), SpecErrorKind::Invalid, problem, hint);
    }

    if let Some(value) = backticked_after(&message, "unknown variant `") {
        let rest = &message["unknown variant `".len() + value.len() + 1..];
        let accepted = backticked_list(rest);
        let hint = match accepted.len() {
            0 => "this field takes no value".to_string(),
            1 => format!("the only accepted value is `{}`", accepted[0]),
            _ => format!("accepted values: {}", quote_list(&accepted)),
        };
        let mut hint = hint;
        if let Some(guess) = closest(value, &accepted) {
            hint.push_str(&format!(" (did you mean `{guess}`?)"));
        }
        return invalid(
            file,
            location,
            (!path.is_empty()).then_some(path),
            SpecErrorKind::UnknownValue,
            format!("unknown value `{value}`"),
            hint,
        );
    }

    let typed = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.split_once(", expected "));
    if let Some((found, expected)) = typed {
        let field = (!path.is_empty()).then(|| path.clone());
        if expected.starts_with("a duration") {
            let problem = match quoted_string(found) {
                Some(text) => duration::parse(text)
                    .err()
                    .unwrap_or_else(|| format!("`{text}` is not a duration")),
                None => format!("expected a duration, found {}", describe_found(found)),
            };
            return invalid(
                file,
                location,
                field,
                SpecErrorKind::InvalidValue,
                problem,
                format!("write {}", duration::EXAMPLES),
            );
        }
        let expected = describe_expected(expected);
        let hint = match example_for(&path) {
            Some(example) => format!("write e.g. `{example}`"),
            None => format!("write {expected}"),
        };
        return invalid(
            file,
            location,
            field,
            SpecErrorKind::InvalidValue,
            format!("expected {expected}, found {}", describe_found(found)),
            hint,
        );
    }

    invalid(
        file,
        location,
        (!path.is_empty()).then_some(path),
        SpecErrorKind::InvalidValue,
        message,
        "",
    )
}

/// The backticked words of `, expected one of `a`, `b``.
fn backticked_list(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

fn quote_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `string "30 seconds"` -> `30 seconds`.
fn quoted_string(found: &str) -> Option<&str> {
    let rest = found.strip_prefix("string \"")?;
    rest.strip_suffix('"')
}

fn describe_expected(expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number".to_string(),
        "a sequence" => "a list".to_string(),
        e if e.starts_with("struct ") || e == "a map" => "a mapping".to_string(),
        e => e.to_string(),
    }
}

fn describe_found(found: &str) -> String {
    match found {
        "sequence" => "a list".to_string(),
        "map" => "a mapping".to_string(),
        "unit value" => "an empty value".to_string(),
        f => f.to_string(),
    }
}

/// The allowed word closest to a misspelt one, if it is close enough to be a typo.
fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let best = candidates
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .min_by_key(|(d, _)| *d)?;
    let limit = if word.chars().count() <= 3 { 1 } else { 2 };
    (best.0 > 0 && best.0 <= limit).then_some(best.1)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
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
// Checks after parsing

struct Checker<'a> {
    file: &'a Path,
    keys: &'a KeyMap,
}

impl Checker<'_> {
    fn fail(&self, field: &str, problem: impl Into<String>, hint: impl Into<String>) -> SpecError {
        invalid(
            self.file,
            self.keys.locate(field),
            Some(field.to_string()),
            SpecErrorKind::Invalid,
            problem,
            hint,
        )
    }

    fn name(&self, name: &str, field: &str, what: &str, example: &str) -> Result<(), SpecError> {
        let hint = || {
            let suggestion = slug(name);
            let suggestion = if suggestion.is_empty() {
                example.to_string()
            } else {
                suggestion
            };
            format!(
                "use lowercase letters, digits and `-`, starting and ending with a letter or digit, \
                 at most {MAX_NAME_LEN} characters, e.g. `{suggestion}`"
            )
        };
        if name.is_empty() {
            return Err(self.fail(field, format!("the {what} name is empty"), hint()));
        }
        if name.chars().count() > MAX_NAME_LEN {
            return Err(self.fail(
                field,
                format!(
                    "the {what} name is {} characters long, more than {MAX_NAME_LEN}",
                    name.chars().count()
                ),
                hint(),
            ));
        }
        if !is_dns_label(name) {
            return Err(self.fail(
                field,
                format!("`{name}` is not a valid {what} name"),
                hint(),
            ));
        }
        Ok(())
    }

    fn fault(
        &self,
        fault: &FaultSpec,
        path: &str,
        workload: &WorkloadSpec,
    ) -> Result<(), SpecError> {
        let field = format!("{path}.target.nodeOf");
        let sts = statefulset_name(workload.kind);
        let pod = fault.target.node_of.as_str();
        if pod.trim().is_empty() {
            return Err(self.fail(
                &field,
                "the target pod is empty",
                format!("name the pod whose node is to fail, e.g. `nodeOf: {sts}-0`"),
            ));
        }
        let ordinal = pod
            .strip_prefix(sts)
            .and_then(|rest| rest.strip_prefix('-'))
            .filter(|digits| !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
            .filter(|digits| *digits == "0" || !digits.starts_with('0'))
            .and_then(|digits| digits.parse::<u32>().ok());
        if !ordinal.is_some_and(|i| i < workload.replicas) {
            let pods = match workload.replicas {
                0 => "no pods".to_string(),
                1 => format!("one pod, `{sts}-0`"),
                n => format!("pods `{sts}-0` to `{sts}-{}`", n - 1),
            };
            return Err(self.fail(
                &field,
                format!("`{pod}` is not a pod of the workload: its StatefulSet `{sts}` has {pods}"),
                format!("write `nodeOf: {sts}-0`"),
            ));
        }
        Ok(())
    }

    fn timeouts(&self, timeouts: &Timeouts, path: &str) -> Result<(), SpecError> {
        for (key, value, example) in [
            ("steadyState", timeouts.steady_state, "3m"),
            ("recovery", timeouts.recovery, "5m"),
            ("heal", timeouts.heal, "3m"),
        ] {
            if value.is_zero() {
                return Err(self.fail(
                    &format!("{path}.{key}"),
                    format!("`{key}: {}` leaves no time at all", duration::format(value)),
                    format!("write a timeout longer than 0s, e.g. `{key}: {example}`"),
                ));
            }
        }
        Ok(())
    }

    fn expect(&self, expect: &Expectations, path: &str) -> Result<(), SpecError> {
        for (key, bound) in bounds(expect) {
            if bound.is_zero() {
                return Err(self.fail(
                    &format!("{path}.{key}.max"),
                    "`max: 0s` can never be met",
                    "write a bound longer than 0s, e.g. `max: 2m`",
                ));
            }
        }
        if expect.recovered == Some(false) {
            if let Some((key, _)) = bounds(expect).into_iter().next() {
                return Err(self.fail(
                    &format!("{path}.{key}"),
                    format!(
                        "`recovered: false` expects the pod not to come back, but `{key}` bounds how fast it comes back"
                    ),
                    format!("remove `{key}`, or write `recovered: true`"),
                ));
            }
        }
        Ok(())
    }

    /// Checks that need the remediation, timeouts and expectations a run will really use.
    fn effective(&self, run: &EffectiveRun<'_>) -> Result<(), SpecError> {
        let recovery = run.timeouts.recovery;
        let recovery_field = format!("{}.recovery", run.timeouts_path);
        let recovery_text = if self.keys.find(&recovery_field).is_some() {
            format!("`{recovery_field}: {}`", duration::format(recovery))
        } else {
            format!(
                "the default `{recovery_field}` of {}",
                duration::format(recovery)
            )
        };
        let variant = run
            .variant
            .map(|v| format!(" (variant `{v}`)"))
            .unwrap_or_default();
        if let Some(after) = run.remediation.after() {
            if after >= recovery {
                return Err(self.fail(
                    &format!("{}.after", run.remediation_path),
                    format!(
                        "`after: {}` is not shorter than {recovery_text}{variant}: the run stops observing \
                         before the remediation would act",
                        duration::format(after)
                    ),
                    "lower `after`, or raise `timeouts.recovery`",
                ));
            }
        }
        for (key, max) in bounds(run.expect) {
            if max > recovery {
                return Err(self.fail(
                    &format!("{}.{key}.max", run.expect_path),
                    format!(
                        "`max: {}` is longer than {recovery_text}{variant}: the run stops observing before then",
                        duration::format(max)
                    ),
                    format!("write at most `max: {}`, or raise `timeouts.recovery`", duration::format(recovery)),
                ));
            }
        }
        Ok(())
    }
}

fn bounds(expect: &Expectations) -> Vec<(&'static str, Duration)> {
    let mut out = Vec::new();
    if let Some(b) = &expect.time_to_running {
        out.push(("timeToRunning", b.max));
    }
    if let Some(b) = &expect.time_to_ready {
        out.push(("timeToReady", b.max));
    }
    out
}

/// What one variant (or the experiment without variants) runs with, and where each part was
/// written.
struct EffectiveRun<'a> {
    variant: Option<&'a str>,
    remediation: &'a RemediationSpec,
    remediation_path: String,
    timeouts: &'a Timeouts,
    timeouts_path: String,
    expect: &'a Expectations,
    expect_path: String,
}

fn validate(exp: &Experiment, file: &Path, keys: &KeyMap) -> Result<(), SpecError> {
    let check = Checker { file, keys };
    check.name(&exp.name, "name", "experiment", "node-shutdown")?;

    if !(1..=MAX_REPEAT).contains(&exp.repeat) {
        return Err(check.fail(
            "repeat",
            format!("`repeat: {}` is out of range", exp.repeat),
            format!("write a number from 1 to {MAX_REPEAT}"),
        ));
    }

    match exp.cluster.provider {
        Provider::Existing => {
            if exp.cluster.config.is_some() {
                return Err(check.fail(
                    "cluster.config",
                    "`config` is a kind config file, but provider `existing` uses a cluster that is already running",
                    "remove `cluster.config`, or write `provider: kind`",
                ));
            }
        }
        Provider::Kind => {
            if let (Some(config), Some(resolved)) =
                (&exp.cluster.config, cluster_config_path(file, &exp.cluster))
            {
                if !resolved.is_file() {
                    return Err(check.fail(
                        "cluster.config",
                        format!("kind config `{}` not found (looked for {})", config.display(), resolved.display()),
                        "the path is relative to the experiment file's directory: fix it, or remove `config` \
                         to use the default profile",
                    ));
                }
            }
        }
    }

    let workload = &exp.workload;
    if workload.replicas != 1 {
        let problem = if workload.replicas == 0 {
            "`replicas: 0` runs no pod, so there is nothing to fail over".to_string()
        } else {
            format!(
                "`replicas: {}`: more than one replica is not supported yet",
                workload.replicas
            )
        };
        return Err(check.fail("workload.replicas", problem, "write `replicas: 1`"));
    }
    if !is_quantity(&workload.size) {
        return Err(check.fail(
            "workload.size",
            format!("`{}` is not a Kubernetes quantity", workload.size),
            "write a size such as 1Gi, 500Mi or 10G (a whole number, then optionally Ki, Mi, Gi, Ti, K, M, G or T)",
        ));
    }
    if workload.storage_class.trim().is_empty() {
        return Err(check.fail(
            "workload.storageClass",
            "the storage class is empty",
            format!(
                "name a StorageClass, or remove `storageClass` to use `{}`",
                super::model::default_storage_class()
            ),
        ));
    }
    if workload
        .image
        .as_deref()
        .is_some_and(|i| i.trim().is_empty())
    {
        return Err(check.fail(
            "workload.image",
            "the image is empty",
            "name an image, or remove `image` to use the one nodedown builds",
        ));
    }

    check.fault(&exp.fault, "fault", workload)?;
    check.timeouts(&exp.timeouts, "timeouts")?;
    check.expect(&exp.expect, "expect")?;

    let mut variant_names: HashMap<&str, usize> = HashMap::new();
    for (i, variant) in exp.variants.iter().enumerate() {
        let base = format!("variants[{i}]");
        let name_field = format!("{base}.name");
        check.name(&variant.name, &name_field, "variant", "baseline")?;
        if let Some(first) = variant_names.insert(&variant.name, i) {
            return Err(check.fail(
                &name_field,
                format!(
                    "variant name `{}` is already used by variants[{first}] (line {})",
                    variant.name,
                    keys.locate(&format!("variants[{first}].name")).0
                ),
                "give each variant its own name",
            ));
        }
        if let Some(fault) = &variant.fault {
            check.fault(fault, &format!("{base}.fault"), workload)?;
        }
        if let Some(timeouts) = &variant.timeouts {
            check.timeouts(timeouts, &format!("{base}.timeouts"))?;
        }
        if let Some(expect) = &variant.expect {
            check.expect(expect, &format!("{base}.expect"))?;
        }
    }

    let pick = |own: bool, base: &str, key: &str| {
        if own {
            format!("{base}.{key}")
        } else {
            key.to_string()
        }
    };
    let runs: Vec<EffectiveRun<'_>> = if exp.variants.is_empty() {
        vec![EffectiveRun {
            variant: None,
            remediation: &exp.remediation,
            remediation_path: "remediation".to_string(),
            timeouts: &exp.timeouts,
            timeouts_path: "timeouts".to_string(),
            expect: &exp.expect,
            expect_path: "expect".to_string(),
        }]
    } else {
        exp.variants
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let base = format!("variants[{i}]");
                EffectiveRun {
                    variant: Some(&v.name),
                    remediation: v.remediation.as_ref().unwrap_or(&exp.remediation),
                    remediation_path: pick(v.remediation.is_some(), &base, "remediation"),
                    timeouts: v.timeouts.as_ref().unwrap_or(&exp.timeouts),
                    timeouts_path: pick(v.timeouts.is_some(), &base, "timeouts"),
                    expect: v.expect.as_ref().unwrap_or(&exp.expect),
                    expect_path: pick(v.expect.is_some(), &base, "expect"),
                }
            })
            .collect()
    };
    for run in &runs {
        check.effective(run)?;
        if exp.workload.kind != WorkloadKind::Ledger {
            for (set, key) in [
                (run.expect.integrity.is_some(), "integrity"),
                (run.expect.write_outage.is_some(), "writeOutage"),
            ] {
                if set {
                    return Err(check.fail(
                        &format!("{}.{key}", run.expect_path),
                        format!("`{key}` is measured by the ledger workload, and this experiment runs `{}`", statefulset_name(exp.workload.kind)),
                        "write `workload: {kind: ledger}` (and `fault.target.nodeOf: ledger-0`), or remove this expectation",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
fn is_dns_label(name: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !name.is_empty()
        && name.chars().all(|c| alnum(c) || c == '-')
        && name.chars().next().is_some_and(alnum)
        && name.chars().last().is_some_and(alnum)
}

/// A name that passes [`is_dns_label`], made from what the user wrote (may be empty).
fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    if out.chars().count() <= MAX_NAME_LEN {
        return out.to_string();
    }
    // Too long: cut at the last `-` that fits, so that no word is cut in half.
    let head: String = out.chars().take(MAX_NAME_LEN + 1).collect();
    match head.rfind('-') {
        Some(cut) if cut > 0 => head[..cut].to_string(),
        _ => head.chars().take(MAX_NAME_LEN).collect(),
    }
}

/// `^[0-9]+(Ki|Mi|Gi|Ti|K|M|G|T)?$`, and not zero.
fn is_quantity(size: &str) -> bool {
    let digits_end = size
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(size.len());
    let (digits, suffix) = size.split_at(digits_end);
    !digits.is_empty()
        && digits.chars().any(|c| c != '0')
        && matches!(
            suffix,
            "" | "Ki" | "Mi" | "Gi" | "Ti" | "K" | "M" | "G" | "T"
        )
}

// ---------------------------------------------------------------------------------------------
// Where keys are: a tolerant scan of the YAML text

/// The line and column of every mapping key and list item of a YAML text, by dotted path
/// (`variants[1].remediation.after`), in text order. Understands block and flow style,
/// comments, quotes, block scalars and `---`; on anything else it records less, never fails.
#[derive(Debug, Default)]
pub(crate) struct KeyMap {
    entries: Vec<(String, (usize, usize))>,
    /// Where the first document's content starts; `None` for a file with no content.
    first_content: Option<(usize, usize)>,
}

impl KeyMap {
    pub(crate) fn scan(text: &str) -> KeyMap {
        let mut scanner = Scanner::new(text);
        let first_content = scanner
            .next_content(0)
            .map(|l| (l, content_start(&scanner.lines[l]).unwrap_or(0)));
        if let Some((line, column)) = first_content {
            scanner.block_node(line, column, "", -1);
        }
        KeyMap {
            entries: scanner.entries,
            first_content: first_content.map(|(l, c)| (l + 1, c + 1)),
        }
    }

    /// Where `path` is first written.
    pub(crate) fn find(&self, path: &str) -> Option<(usize, usize)> {
        self.entries
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, at)| *at)
    }

    fn all(&self, path: &str) -> Vec<(usize, usize)> {
        self.entries
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, at)| *at)
            .collect()
    }

    /// Where `path` is written, else where its closest written parent is, else 1:1.
    pub(crate) fn locate(&self, path: &str) -> (usize, usize) {
        let mut path = path;
        loop {
            if let Some(at) = self.find(path) {
                return at;
            }
            if path.is_empty() {
                return (1, 1);
            }
            path = &path[..path.rfind(['.', '[']).unwrap_or(0)];
        }
    }

    /// The first key written twice in the same mapping: (path, first, second).
    fn first_duplicate(&self) -> Option<(&str, (usize, usize), (usize, usize))> {
        let mut seen: HashMap<&str, (usize, usize)> = HashMap::new();
        for (path, at) in &self.entries {
            if let Some(first) = seen.insert(path, *at) {
                return Some((path, first, *at));
            }
        }
        None
    }
}

/// A position in the text: (line, column), both 0-based, column in characters.
type Pos = (usize, usize);

/// Deeper nesting than this is not followed (the YAML parser rejects it anyway).
const MAX_DEPTH: usize = 64;

struct Scanner {
    lines: Vec<Vec<char>>,
    entries: Vec<(String, (usize, usize))>,
    depth: usize,
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// Column of the first character that is neither blank nor the start of a comment.
fn content_start(line: &[char]) -> Option<usize> {
    let i = line.iter().position(|c| !is_blank(*c))?;
    (line[i] != '#').then_some(i)
}

fn is_marker(line: &[char], marker: &str) -> bool {
    let m: Vec<char> = marker.chars().collect();
    line.starts_with(&m) && line.get(3).is_none_or(|c| is_blank(*c))
}

impl Scanner {
    fn new(text: &str) -> Scanner {
        let mut lines: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
        // Keep only the first document; blank out directives and the `---` that opens it.
        let mut seen_content = false;
        let mut end = lines.len();
        for (i, line) in lines.iter_mut().enumerate() {
            if is_marker(line, "---") || is_marker(line, "...") {
                if seen_content {
                    end = i;
                    break;
                }
                line[..3].fill(' ');
            } else if !seen_content && line.first() == Some(&'%') {
                line.clear();
            }
            if content_start(line).is_some() {
                seen_content = true;
            }
        }
        lines.truncate(end);
        Scanner {
            lines,
            entries: Vec::new(),
            depth: 0,
        }
    }

    fn push(&mut self, path: String, (line, column): Pos) {
        self.entries.push((path, (line + 1, column + 1)));
    }

    fn next_content(&self, from: usize) -> Option<usize> {
        (from..self.lines.len()).find(|&l| content_start(&self.lines[l]).is_some())
    }

    fn indent(&self, line: usize) -> usize {
        content_start(&self.lines[line]).unwrap_or(0)
    }

    fn is_seq_dash(&self, line: usize, column: usize) -> bool {
        let l = &self.lines[line];
        l.get(column) == Some(&'-') && l.get(column + 1).is_none_or(|c| is_blank(*c))
    }

    /// The first non-blank, non-comment column at or after `column`.
    fn content_from(&self, line: usize, column: usize) -> Option<usize> {
        let l = &self.lines[line];
        let i = (column..l.len()).find(|&i| !is_blank(l[i]))?;
        (l[i] != '#').then_some(i)
    }

    /// The node starting at (line, column), inside a block whose indentation is
    /// `parent_indent`. Returns the first line after the node.
    fn block_node(
        &mut self,
        line: usize,
        column: usize,
        path: &str,
        parent_indent: isize,
    ) -> usize {
        if self.depth >= MAX_DEPTH {
            return line + 1;
        }
        self.depth += 1;
        let next = self.block_node_inner(line, column, path, parent_indent);
        self.depth -= 1;
        next.max(line + 1)
    }

    fn block_node_inner(
        &mut self,
        line: usize,
        column: usize,
        path: &str,
        parent_indent: isize,
    ) -> usize {
        let Some(&first) = self.lines[line].get(column) else {
            return line + 1;
        };
        match first {
            '-' if self.is_seq_dash(line, column) => self.block_seq(line, column, path),
            '{' | '[' => self.flow_node((line, column), path).0 + 1,
            '"' | '\'' if self.key_at(line, column).is_none() => {
                self.read_quoted((line, column)).1 .0 + 1
            }
            '|' | '>' => self.skip_block_scalar(line, parent_indent),
            '&' | '!' => {
                // An anchor or tag, then the node itself (here or on the next lines).
                let l = &self.lines[line];
                let after = (column..l.len())
                    .find(|&i| is_blank(l[i]))
                    .unwrap_or(l.len());
                match self.content_from(line, after) {
                    Some(c) => self.block_node(line, c, path, parent_indent),
                    None => match self.next_content(line + 1) {
                        Some(n) if self.indent(n) as isize > parent_indent => {
                            let c = self.indent(n);
                            self.block_node(n, c, path, parent_indent)
                        }
                        _ => line + 1,
                    },
                }
            }
            _ if Some(column) == content_start(&self.lines[line])
                && self.key_at(line, column).is_some() =>
            {
                self.block_map(line, column, path)
            }
            _ => self.skip_plain(line, parent_indent),
        }
    }

    /// A plain scalar may continue on lines indented deeper than its parent.
    fn skip_plain(&self, line: usize, parent_indent: isize) -> usize {
        let mut next = line + 1;
        while let Some(n) = self.next_content(next) {
            if self.indent(n) as isize > parent_indent {
                next = n + 1;
            } else {
                break;
            }
        }
        next
    }

    /// `|` and `>` scalars: every following line that is blank or indented deeper.
    fn skip_block_scalar(&self, line: usize, parent_indent: isize) -> usize {
        let mut next = line + 1;
        while next < self.lines.len() {
            let l = &self.lines[next];
            let spaces = l.iter().take_while(|c| **c == ' ').count();
            if l.iter().all(|c| is_blank(*c)) || spaces as isize > parent_indent {
                next += 1;
            } else {
                break;
            }
        }
        next
    }

    fn block_map(&mut self, line: usize, indent: usize, path: &str) -> usize {
        let mut cur = line;
        loop {
            let Some(l) = self.next_content(cur) else {
                return self.lines.len();
            };
            let ind = self.indent(l);
            if ind < indent {
                return l;
            }
            if ind > indent {
                cur = l + 1;
                continue;
            }
            if self.is_seq_dash(l, indent) {
                return l;
            }
            let Some((key, value_column)) = self.key_at(l, indent) else {
                cur = l + 1;
                continue;
            };
            let child = join_key(path, &key);
            self.push(child.clone(), (l, indent));
            cur = match self.content_from(l, value_column) {
                Some(c) => self.block_node(l, c, &child, indent as isize),
                None => match self.next_content(l + 1) {
                    Some(n) => {
                        let ni = self.indent(n);
                        if ni > indent || (ni == indent && self.is_seq_dash(n, ni)) {
                            self.block_node(n, ni, &child, indent as isize)
                        } else {
                            l + 1
                        }
                    }
                    None => self.lines.len(),
                },
            }
            .max(l + 1);
        }
    }

    fn block_seq(&mut self, line: usize, indent: usize, path: &str) -> usize {
        let mut cur = line;
        let mut index = 0;
        loop {
            let Some(l) = self.next_content(cur) else {
                return self.lines.len();
            };
            let ind = self.indent(l);
            if ind < indent {
                return l;
            }
            if ind > indent {
                cur = l + 1;
                continue;
            }
            if !self.is_seq_dash(l, indent) {
                return l;
            }
            // Blank the dash: the item's own content then starts a line of its own indentation.
            self.lines[l][indent] = ' ';
            let child = format!("{path}[{index}]");
            index += 1;
            cur = match self.content_from(l, indent + 1) {
                Some(c) => {
                    self.push(child.clone(), (l, c));
                    self.block_node(l, c, &child, indent as isize)
                }
                None => {
                    self.push(child.clone(), (l, indent));
                    match self.next_content(l + 1) {
                        Some(n) if self.indent(n) > indent => {
                            let ni = self.indent(n);
                            self.block_node(n, ni, &child, indent as isize)
                        }
                        _ => l + 1,
                    }
                }
            }
            .max(l + 1);
        }
    }

    /// `key: ` at exactly (line, column): the key and the column after its colon.
    fn key_at(&self, line: usize, column: usize) -> Option<(String, usize)> {
        let l = &self.lines[line];
        let first = *l.get(column)?;
        let (key, mut i) = if first == '"' || first == '\'' {
            let (key, (end_line, end_column)) = self.read_quoted((line, column));
            if end_line != line {
                return None;
            }
            (key, end_column)
        } else {
            if "[]{}#&*!|>%@`,".contains(first) || self.is_seq_dash(line, column) {
                return None;
            }
            let mut i = column;
            loop {
                let c = *l.get(i)?;
                if c == ':' && l.get(i + 1).is_none_or(|n| is_blank(*n)) {
                    break;
                }
                if c == '#' && i > column && is_blank(l[i - 1]) {
                    return None;
                }
                i += 1;
            }
            (
                l[column..i]
                    .iter()
                    .collect::<String>()
                    .trim_end()
                    .to_string(),
                i,
            )
        };
        while l.get(i).is_some_and(|c| is_blank(*c)) {
            i += 1;
        }
        (l.get(i) == Some(&':') && l.get(i + 1).is_none_or(|n| is_blank(*n)))
            .then_some((key, i + 1))
    }

    // -- flow style: `{a: 1, b: [x, y]}`, possibly over several lines

    /// The character at `p`; `'\n'` at the end of a line, `None` at the end of the text.
    fn at(&self, (line, column): Pos) -> Option<char> {
        let l = self.lines.get(line)?;
        Some(l.get(column).copied().unwrap_or('\n'))
    }

    fn advance(&self, (line, column): Pos) -> Pos {
        if column < self.lines.get(line).map_or(0, Vec::len) {
            (line, column + 1)
        } else {
            (line + 1, 0)
        }
    }

    fn skip_space(&self, mut p: Pos) -> Pos {
        loop {
            match self.at(p) {
                Some(' ' | '\t' | '\n') => p = self.advance(p),
                Some('#') if p.1 == 0 || is_blank(self.lines[p.0][p.1 - 1]) => p = (p.0 + 1, 0),
                _ => return p,
            }
        }
    }

    fn flow_node(&mut self, p: Pos, path: &str) -> Pos {
        if self.depth >= MAX_DEPTH {
            return (self.lines.len(), 0);
        }
        self.depth += 1;
        let end = match self.at(p) {
            Some('{') => {
                let start = self.advance(p);
                self.flow_map(start, path)
            }
            Some('[') => {
                let start = self.advance(p);
                self.flow_seq(start, path)
            }
            Some('"' | '\'') => self.read_quoted(p).1,
            Some('&' | '!') => {
                let mut q = p;
                while self
                    .at(q)
                    .is_some_and(|c| !matches!(c, ' ' | '\t' | '\n' | ',' | '[' | ']' | '{' | '}'))
                {
                    q = self.advance(q);
                }
                let q = self.skip_space(q);
                match self.at(q) {
                    Some(',' | ']' | '}') | None => q,
                    _ => self.flow_node(q, path),
                }
            }
            _ => self.read_plain(p).1,
        };
        self.depth -= 1;
        end
    }

    fn flow_map(&mut self, mut p: Pos, path: &str) -> Pos {
        loop {
            p = self.skip_space(p);
            match self.at(p) {
                None => return p,
                Some('}' | ']') => return self.advance(p),
                Some(',') => {
                    p = self.advance(p);
                    continue;
                }
                _ => {}
            }
            let start = p;
            let child = match self.at(p) {
                Some('{' | '[') => {
                    // A collection as a key: follow it, but it has no name.
                    p = self.flow_node(p, &join_key(path, "?"));
                    join_key(path, "?")
                }
                Some('"' | '\'') => {
                    let (key, end) = self.read_quoted(p);
                    p = end;
                    join_key(path, &key)
                }
                _ => {
                    let (key, end) = self.read_plain(p);
                    p = end;
                    join_key(path, &key)
                }
            };
            self.push(child.clone(), start);
            p = self.skip_space(p);
            if self.at(p) == Some(':') {
                p = self.skip_space(self.advance(p));
                if !matches!(self.at(p), Some(',' | '}' | ']') | None) {
                    p = self.flow_node(p, &child);
                }
            }
            if p == start {
                p = self.advance(p);
            }
        }
    }

    fn flow_seq(&mut self, mut p: Pos, path: &str) -> Pos {
        let mut index = 0;
        loop {
            p = self.skip_space(p);
            match self.at(p) {
                None => return p,
                Some(']' | '}') => return self.advance(p),
                Some(',') => {
                    p = self.advance(p);
                    continue;
                }
                _ => {}
            }
            let start = p;
            let child = format!("{path}[{index}]");
            index += 1;
            self.push(child.clone(), start);
            p = self.flow_node(p, &child);
            p = self.skip_space(p);
            if self.at(p) == Some(':') {
                // `[a: b]`, a one-pair mapping: follow its value without naming it.
                p = self.skip_space(self.advance(p));
                if !matches!(self.at(p), Some(',' | '}' | ']') | None) {
                    p = self.flow_node(p, &format!("{child}.?"));
                }
            }
            if p == start {
                p = self.advance(p);
            }
        }
    }

    /// A quoted scalar starting at `p` (on its quote): its text and the position after it.
    fn read_quoted(&self, p: Pos) -> (String, Pos) {
        let quote = self.at(p).unwrap_or('"');
        let mut text = String::new();
        let mut p = self.advance(p);
        loop {
            match self.at(p) {
                None => return (text, p),
                Some('\\') if quote == '"' => {
                    p = self.advance(p);
                    if let Some(c) = self.at(p) {
                        text.push(c);
                        p = self.advance(p);
                    }
                }
                Some(c) if c == quote => {
                    let next = self.advance(p);
                    if quote == '\'' && self.at(next) == Some('\'') {
                        text.push('\'');
                        p = self.advance(next);
                    } else {
                        return (text, next);
                    }
                }
                Some('\n') => {
                    text.push(' ');
                    p = self.advance(p);
                }
                Some(c) => {
                    text.push(c);
                    p = self.advance(p);
                }
            }
        }
    }

    /// A plain scalar in flow style: up to `,`, a bracket, `: ` or a comment.
    fn read_plain(&self, mut p: Pos) -> (String, Pos) {
        let mut text = String::new();
        loop {
            let Some(c) = self.at(p) else {
                break;
            };
            match c {
                ',' | '[' | ']' | '{' | '}' => break,
                ':' => {
                    let next = self.advance(p);
                    if matches!(
                        self.at(next),
                        None | Some(' ' | '\t' | '\n' | ',' | '[' | ']' | '{' | '}')
                    ) {
                        break;
                    }
                }
                '#' if p.1 > 0 && is_blank(self.lines[p.0][p.1 - 1]) => break,
                _ => {}
            }
            text.push(if c == '\n' { ' ' } else { c });
            p = self.advance(p);
        }
        (text.trim().to_string(), p)
    }
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{expand, PlanOptions};

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
             `fence` (did you mean `after`?)"
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
            e.to_string().contains("accepted values: `none`, `out-of-service-taint`, `force-delete-pod`, `delete-node`"),
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
            "remediation:\n  kind: force-delete-pod\n  after: 10s\n  fence: true\n",
        ));
        assert_eq!(e.field(), Some("remediation.fence"));
        assert_eq!(e.line(), Some(7));
        assert!(
            e.to_string()
                .contains("only remediation `out-of-service-taint` fences the node"),
            "{e}"
        );

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

        for good in ["a", "a1", "node-shutdown-2", "9"] {
            assert!(is_dns_label(good), "{good}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", "ä"] {
            assert!(!is_dns_label(bad), "{bad}");
        }
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

        let e = err("name: x\nworkload:\n  kind: writer\n  replicas: 3\nfault: {kind: node-shutdown, target: {nodeOf: writer-0}}\n");
        assert_eq!(e.field(), Some("workload.replicas"));
        assert_eq!(e.line(), Some(4));
        assert!(e.to_string().contains("not supported yet"), "{e}");

        for good in ["1Gi", "500Mi", "10G", "1024", "2Ti", "3K"] {
            assert!(is_quantity(good), "{good}");
        }
        for bad in [
            "", "Gi", "1GB", "1.5Gi", "0Gi", "1 Gi", "-1Gi", "1gi", "1Pi",
        ] {
            assert!(!is_quantity(bad), "{bad}");
        }
        let e = err("name: x\nworkload: {kind: writer, size: 1GB}\nfault: {kind: node-shutdown, target: {nodeOf: writer-0}}\n");
        assert_eq!(e.field(), Some("workload.size"));
        assert_eq!(e.line(), Some(2));
        assert_eq!(e.column(), Some(26));
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
                fence: true
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
        let yaml = serde_yaml_ng::to_string(&exp).unwrap();
        assert_eq!(parse(&yaml).unwrap(), exp, "{yaml}");
    }

    #[test]
    fn key_map_block_flow_and_lists() {
        let text = "\
# comment
name: x   # trailing
description: |
  text: not a key
  more
cluster: {provider: kind,
  config: 'a b.yaml'}
\"quoted key\": 1
variants:
- name: a
  remediation:
    kind: none
- {name: b, expect: {timeToReady: {max: 1m}}}
-
  name: c
list: [1, {k: v}]
";
        let keys = KeyMap::scan(text);
        let at = |p: &str| keys.find(p);
        assert_eq!(at("name"), Some((2, 1)));
        assert_eq!(at("description"), Some((3, 1)));
        assert_eq!(at("text"), None);
        assert_eq!(at("cluster.provider"), Some((6, 11)));
        assert_eq!(at("cluster.config"), Some((7, 3)));
        assert_eq!(at("quoted key"), Some((8, 1)));
        assert_eq!(at("variants[0]"), Some((10, 3)));
        assert_eq!(at("variants[0].name"), Some((10, 3)));
        assert_eq!(at("variants[0].remediation.kind"), Some((12, 5)));
        assert_eq!(at("variants[1].name"), Some((13, 4)));
        assert_eq!(at("variants[1].expect.timeToReady.max"), Some((13, 36)));
        assert_eq!(at("variants[2].name"), Some((15, 3)));
        assert_eq!(at("list[1].k"), Some((16, 12)));
        assert_eq!(keys.locate("variants[1].remediation.after"), (13, 3));
        assert_eq!(keys.locate("nothing.here"), (1, 1));
        assert!(keys.first_duplicate().is_none());

        let keys = KeyMap::scan(
            "variants:\n  - name: a\n    sub:\n      - x: 1\n        y: 2\n  - name: b\n",
        );
        assert_eq!(keys.find("variants[0].sub[0].y"), Some((5, 9)));
        assert_eq!(keys.find("variants[1].name"), Some((6, 5)));
    }

    #[test]
    fn key_map_never_panics_on_garbage() {
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
            let _ = KeyMap::scan(&text);
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
