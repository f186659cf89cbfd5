//! The driver definition storage vendors already keep for the upstream storage suites — the
//! `testdriver.yaml` given to `e2e.test -storage.testdriver=…`
//! (k8s.io/kubernetes test/e2e/storage/external, `driverDefinition`) — read for what a failover
//! qualification needs (pure).
//!
//! Upstream decodes the file leniently: an unknown key (a misspelt capability, `ShortName`,
//! which many vendors' files carry and no suite reads) is dropped without a word. Here every key
//! is accounted for: the fields the qualification reads, the fields of the upstream format it
//! does not need (each named in a warning saying it is ignored), and unknown keys (a warning
//! naming the closest known one). A malformed file is an error with its file, line and field.

use super::load::{closest, invalid, read, yaml_error, SpecError, SpecErrorKind};
use super::yaml::{self, Node, Pos, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the StorageClass under test comes from (exactly one, as upstream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClassSource {
    /// `FromName: true`: a class with `DriverInfo.Name` as its provisioner and no parameters.
    FromName,
    /// `FromFile: path`: a StorageClass manifest, as written and resolved (a relative path from
    /// the testdriver file's directory; `qualify --repo-root` resolves it from there instead,
    /// as upstream's testfiles do from the repository root).
    FromFile { written: PathBuf, resolved: PathBuf },
    /// `FromExistingClassName: name`: a class installed in the cluster.
    FromExistingClassName(String),
}

/// What a qualification reads from a testdriver file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestDriver {
    pub file: PathBuf,
    /// `DriverInfo.Name`: the CSI driver.
    pub driver: String,
    pub class: Option<ClassSource>,
    /// `DriverInfo.Capabilities`: only the known ones (unknown ones are warned about).
    pub capabilities: BTreeMap<String, bool>,
    /// `DriverInfo.SupportedSizeRange.Min`: the claim size to ask for (upstream default 5Gi).
    pub min_size: Option<String>,
    /// `DriverInfo.RequiredAccessModes`.
    pub required_access_modes: Vec<String>,
    /// `DriverInfo.TopologyKeys`.
    pub topology_keys: Vec<String>,
    /// `Timeouts` (upstream's framework.TimeoutContext names → Go durations), as written.
    pub timeouts: BTreeMap<String, String>,
}

impl TestDriver {
    /// A capability as the file sets it (absent is false, as upstream).
    pub fn can(&self, capability: &str) -> bool {
        self.capabilities.get(capability).copied().unwrap_or(false)
    }
}

/// A key the qualification does not use: where, which, and why it is not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub line: usize,
    pub column: usize,
    /// Dotted path, e.g. `DriverInfo.Capabilities.persistance`.
    pub field: String,
    pub message: String,
    /// A quiet note rather than a warning: keys vendors' files commonly carry that are not
    /// part of the upstream format (`ShortName`), ignored by the suites and here alike.
    pub note: bool,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {}: {}",
            self.line, self.column, self.field, self.message
        )
    }
}

/// The Kubernetes release whose storage framework the capability and field sets below were
/// read from (k8s.io/kubernetes test/e2e/storage/framework/testdriver.go and
/// test/e2e/storage/external/external.go at v1.34.4), plus `offlineSnapshotClone`, which later
/// upstream sources add.
pub const UPSTREAM_FORMAT: &str = "v1.34.4";

/// The capabilities the upstream framework defines (storageframework `Cap*` constants), spelt
/// as the file spells them.
pub const CAPABILITIES: [&str; 23] = [
    "persistence",
    "block",
    "fsGroup",
    "volumeMountGroup",
    "exec",
    "snapshotDataSource",
    "groupSnapshot",
    "pvcDataSource",
    "multipods",
    "RWX",
    "controllerExpansion",
    "nodeExpansion",
    "offlineExpansion",
    "onlineExpansion",
    "volumeLimits",
    "singleNodeVolume",
    "topology",
    "capacity",
    "FSResizeFromSourceNotSupported",
    "readWriteOncePod",
    "multiplePVsSameID",
    "capReadOnlyMany",
    "offlineSnapshotClone",
];

/// Top-level fields the qualification reads, and those of the upstream format it ignores.
const TOP_READ: [&str; 3] = ["DriverInfo", "StorageClass", "Timeouts"];
const TOP_IGNORED: [&str; 5] = [
    "SnapshotClass",
    "VolumeAttributesClass",
    "InlineVolumes",
    "ClientNodeName",
    "NodeSelectors",
];
const DRIVER_READ: [&str; 5] = [
    "Name",
    "Capabilities",
    "SupportedSizeRange",
    "RequiredAccessModes",
    "TopologyKeys",
];
const DRIVER_IGNORED: [&str; 11] = [
    "InTreePluginName",
    "TestTags",
    "FeatureTag",
    "MaxFileSize",
    "SupportedFsType",
    "SupportedMountOption",
    "RequiredMountOption",
    "NumAllowedTopologies",
    "StressTestOptions",
    "VolumeSnapshotStressTestOptions",
    "PerformanceTestOptions",
];
const CLASS_FIELDS: [&str; 3] = ["FromName", "FromFile", "FromExistingClassName"];
const SIZE_FIELDS: [&str; 2] = ["Min", "Max"];

/// Reads a testdriver file (YAML, or JSON, which is YAML); see [`parse_testdriver`].
pub fn load_testdriver(path: &Path) -> Result<(TestDriver, Vec<Warning>), SpecError> {
    let text = read(path)?;
    parse_testdriver(&text, path)
}

/// Parses the text of a testdriver file named `file`.
pub fn parse_testdriver(text: &str, file: &Path) -> Result<(TestDriver, Vec<Warning>), SpecError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let tree = match yaml::parse(text) {
        Ok(Some(tree)) => tree,
        Ok(None) => {
            return Err(invalid(
                file,
                (1, 1),
                None,
                SpecErrorKind::Empty,
                "the file holds no driver definition",
                "a testdriver file needs at least `DriverInfo: {Name: <CSI driver>}` and a `StorageClass`",
            ))
        }
        Err(err) => return Err(yaml_error(file, text, &err)),
    };
    let mut r = Reader {
        file,
        warnings: Vec::new(),
    };
    let top = r.map(&tree, "")?;
    let mut driver = TestDriver {
        file: file.to_path_buf(),
        driver: String::new(),
        class: None,
        capabilities: BTreeMap::new(),
        min_size: None,
        required_access_modes: Vec::new(),
        topology_keys: Vec::new(),
        timeouts: BTreeMap::new(),
    };
    let mut info_at = None;
    let mut extras: Vec<(Pos, String)> = Vec::new();
    for (key, value) in top {
        let name = r.key(key, "")?;
        match name.as_str() {
            "DriverInfo" => {
                info_at = Some(key.at);
                r.driver_info(value, &mut driver)?;
            }
            "StorageClass" => driver.class = r.class(value, file)?,
            "Timeouts" => {
                for (k, v) in r.map(value, "Timeouts")? {
                    let k = r.key(k, "Timeouts")?;
                    let v = r.string(v, &format!("Timeouts.{k}"))?;
                    driver.timeouts.insert(k, v);
                }
            }
            other => {
                let known: Vec<&str> = TOP_READ.iter().chain(&TOP_IGNORED).copied().collect();
                if known.contains(&other) || closest(other, &known).is_some() {
                    r.other(key.at, "", other, &TOP_READ, &TOP_IGNORED)
                } else {
                    extras.push((key.at, other.to_string()));
                }
            }
        }
    }
    // Keys like `ShortName` that vendors' files carry and the upstream format has not: one
    // quiet note for all of them (the suites ignore them too), not a warning each.
    if let Some((at, _)) = extras.first() {
        let names: Vec<&str> = extras.iter().map(|(_, n)| n.as_str()).collect();
        r.warnings.push(Warning {
            line: at.0,
            column: at.1,
            field: names.join(", "),
            message: format!(
                "not part of the upstream format ({UPSTREAM_FORMAT}); ignored, as the upstream suites ignore it"
            ),
            note: true,
        });
    }
    if driver.driver.is_empty() {
        return Err(invalid(
            file,
            info_at.unwrap_or(tree.at),
            Some("DriverInfo.Name".into()),
            SpecErrorKind::MissingField,
            "the driver's name is missing",
            "write `DriverInfo: {Name: <the CSI driver's name, as in its CSIDriver object>}`",
        ));
    }
    Ok((driver, r.warnings))
}

struct Reader<'a> {
    file: &'a Path,
    warnings: Vec<Warning>,
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl Reader<'_> {
    fn bad(&self, at: Pos, field: &str, problem: String, hint: &str) -> SpecError {
        invalid(
            self.file,
            at,
            Some(field.to_string()),
            SpecErrorKind::InvalidValue,
            problem,
            hint,
        )
    }

    fn map<'n>(&self, node: &'n Node, field: &str) -> Result<&'n [(Node, Node)], SpecError> {
        match &node.value {
            Value::Map(entries) => Ok(entries),
            Value::Null => Ok(&[]),
            _ => Err(self.bad(
                node.at,
                if field.is_empty() {
                    "(the file)"
                } else {
                    field
                },
                format!("expected a mapping, found {}", describe(node)),
                "write the fields as `Key: value` lines indented under it",
            )),
        }
    }

    fn key(&self, key: &Node, path: &str) -> Result<String, SpecError> {
        key.text().ok_or_else(|| {
            self.bad(
                key.at,
                path,
                format!("a key must be a name, found {}", describe(key)),
                "write `Name: value`",
            )
        })
    }

    fn string(&self, node: &Node, field: &str) -> Result<String, SpecError> {
        match &node.value {
            Value::Str(s) => Ok(s.clone()),
            Value::Int(_) | Value::Float(_) => Ok(node.text().unwrap_or_default()),
            _ => Err(self.bad(
                node.at,
                field,
                format!("expected a string, found {}", describe(node)),
                "write a single value",
            )),
        }
    }

    fn boolean(&self, node: &Node, field: &str) -> Result<bool, SpecError> {
        match &node.value {
            Value::Bool(b) => Ok(*b),
            _ => Err(self.bad(
                node.at,
                field,
                format!("expected true or false, found {}", describe(node)),
                "write `true` or `false`",
            )),
        }
    }

    fn strings(&self, node: &Node, field: &str) -> Result<Vec<String>, SpecError> {
        match &node.value {
            Value::Seq(items) => items
                .iter()
                .enumerate()
                .map(|(i, n)| self.string(n, &format!("{field}[{i}]")))
                .collect(),
            Value::Null => Ok(vec![]),
            _ => Err(self.bad(
                node.at,
                field,
                format!("expected a list, found {}", describe(node)),
                "write a list, e.g. `[ReadWriteOnce]`",
            )),
        }
    }

    /// A key that is not read: known to upstream (ignored here) or unknown (dropped upstream
    /// without a word; likely a typo).
    fn other(&mut self, at: Pos, path: &str, key: &str, read: &[&str], ignored: &[&str]) {
        let field = join(path, key);
        let message = if ignored.contains(&key) {
            "a field of the upstream format that the failover qualification does not use: ignored"
                .to_string()
        } else {
            let known: Vec<&str> = read.iter().chain(ignored).copied().collect();
            match closest(key, &known) {
                Some(near) => format!(
                    "unknown field (did you mean `{near}`?); the upstream suites drop it without a word, nodedown ignores it"
                ),
                None => format!(
                    "unknown field; the upstream suites drop it without a word, nodedown ignores it (known here: {})",
                    known.join(", ")
                ),
            }
        };
        self.warnings.push(Warning {
            line: at.0,
            column: at.1,
            field,
            message,
            note: false,
        });
    }

    fn driver_info(&mut self, node: &Node, d: &mut TestDriver) -> Result<(), SpecError> {
        for (key, value) in self.map(node, "DriverInfo")? {
            let name = self.key(key, "DriverInfo")?;
            let field = format!("DriverInfo.{name}");
            match name.as_str() {
                "Name" => d.driver = self.string(value, &field)?,
                "Capabilities" => {
                    for (k, v) in self.map(value, &field)? {
                        let cap = self.key(k, &field)?;
                        let on = self.boolean(v, &format!("{field}.{cap}"))?;
                        if CAPABILITIES.contains(&cap.as_str()) {
                            d.capabilities.insert(cap, on);
                        } else {
                            let message = match closest(&cap, &CAPABILITIES) {
                                Some(near) => format!(
                                    "unknown capability (did you mean `{near}`?); the upstream suites drop it without a word, and so the driver is taken not to have `{near}`"
                                ),
                                None => "unknown capability; the upstream suites drop it without a word, nodedown ignores it".to_string(),
                            };
                            self.warnings.push(Warning {
                                line: k.at.0,
                                column: k.at.1,
                                field: format!("{field}.{cap}"),
                                message,
                                note: false,
                            });
                        }
                    }
                }
                "SupportedSizeRange" => {
                    for (k, v) in self.map(value, &field)? {
                        let bound = self.key(k, &field)?;
                        match bound.as_str() {
                            "Min" => d.min_size = Some(self.string(v, &format!("{field}.Min"))?),
                            "Max" => {}
                            other => self.other(k.at, &field, other, &SIZE_FIELDS, &[]),
                        }
                    }
                }
                "RequiredAccessModes" => d.required_access_modes = self.strings(value, &field)?,
                "TopologyKeys" => d.topology_keys = self.strings(value, &field)?,
                other => self.other(key.at, "DriverInfo", other, &DRIVER_READ, &DRIVER_IGNORED),
            }
        }
        Ok(())
    }

    fn class(&mut self, node: &Node, file: &Path) -> Result<Option<ClassSource>, SpecError> {
        let mut found: Vec<(Pos, ClassSource)> = Vec::new();
        for (key, value) in self.map(node, "StorageClass")? {
            let name = self.key(key, "StorageClass")?;
            let field = format!("StorageClass.{name}");
            match name.as_str() {
                "FromName" => {
                    if self.boolean(value, &field)? {
                        found.push((key.at, ClassSource::FromName));
                    }
                }
                "FromFile" => {
                    let written = PathBuf::from(self.string(value, &field)?);
                    let resolved = match file.parent() {
                        Some(dir) if written.is_relative() => dir.join(&written),
                        _ => written.clone(),
                    };
                    found.push((key.at, ClassSource::FromFile { written, resolved }));
                }
                "FromExistingClassName" => {
                    found.push((
                        key.at,
                        ClassSource::FromExistingClassName(self.string(value, &field)?),
                    ));
                }
                other => self.other(key.at, "StorageClass", other, &CLASS_FIELDS, &[]),
            }
        }
        // Upstream takes FromName over FromExistingClassName over FromFile; more than one is
        // a mistake worth stopping for here.
        if found.len() > 1 {
            return Err(invalid(
                file,
                found[1].0,
                Some("StorageClass".into()),
                SpecErrorKind::Invalid,
                "the storage class is given more than one way",
                "keep one of `FromName: true`, `FromFile: <manifest>` and `FromExistingClassName: <class>`",
            ));
        }
        Ok(found.pop().map(|(_, c)| c))
    }
}

fn describe(node: &Node) -> String {
    match &node.value {
        Value::Null => "nothing".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Int(i) => format!("the number {i}"),
        Value::Float(f) => format!("the number {f}"),
        Value::Str(s) => format!("the string {s:?}"),
        Value::Seq(_) => "a list".into(),
        Value::Map(_) => "a mapping".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
# testenv's attaching class, as a vendor would describe it
ShortName: nodedown
StorageClass:
  FromExistingClassName: nodedown-attach
SnapshotClass:
  FromName: true
DriverInfo:
  Name: csi.nodedown.dev
  SupportedSizeRange:
    Min: 1Gi
  SupportedFsType: {\"\": {}}
  RequiredAccessModes: [ReadWriteOnce]
  Capabilities:
    persistence: true
    block: false
    readWriteOncePod: true
    persistance: true
Timeouts:
  PodStart: 5m
";

    fn parse(text: &str) -> Result<(TestDriver, Vec<Warning>), SpecError> {
        parse_testdriver(text, Path::new("driver.yaml"))
    }

    #[test]
    fn reads_what_matters_and_names_every_key_it_ignores() {
        let (d, warnings) = parse(GOOD).unwrap();
        assert_eq!(d.driver, "csi.nodedown.dev");
        assert_eq!(
            d.class,
            Some(ClassSource::FromExistingClassName("nodedown-attach".into()))
        );
        assert!(d.can("persistence") && d.can("readWriteOncePod") && !d.can("block"));
        assert!(!d.can("RWX"), "absent is false");
        assert_eq!(d.min_size.as_deref(), Some("1Gi"));
        assert_eq!(d.required_access_modes, ["ReadWriteOnce"]);
        assert_eq!(d.timeouts.get("PodStart").map(String::as_str), Some("5m"));
        let by_field: Vec<(&str, usize)> = warnings
            .iter()
            .map(|w| (w.field.as_str(), w.line))
            .collect();
        assert_eq!(
            by_field,
            [
                ("SnapshotClass", 5),
                ("DriverInfo.SupportedFsType", 11),
                ("DriverInfo.Capabilities.persistance", 17),
                ("ShortName", 2),
            ]
        );
        assert!(warnings[0].message.contains("does not use: ignored"));
        assert!(
            warnings[2].message.contains("did you mean `persistence`?"),
            "{}",
            warnings[2]
        );
        // ShortName: not upstream's, one quiet note, not a warning.
        assert!(warnings[3].note && !warnings[..3].iter().any(|w| w.note));
        assert!(
            warnings[3]
                .message
                .contains("not part of the upstream format"),
            "{}",
            warnings[3]
        );
    }

    /// Every capability of the upstream framework is known (none is "unknown"), spelt as
    /// upstream spells it; the keys vendors add at the top are one note together.
    #[test]
    fn upstream_capabilities_are_known_and_vendor_extras_are_one_note() {
        let text = "ShortName: x\nVendorNote: y\nStorageClass: {FromName: true}\nDriverInfo:\n    Name: d\n    Capabilities:\n        capReadOnlyMany: true\n        FSResizeFromSourceNotSupported: true\n        groupSnapshot: false\n        offlineSnapshotClone: true\n        multiplePVsSameID: true\n";
        let (d, warnings) = parse(text).unwrap();
        assert_eq!(d.class, Some(ClassSource::FromName));
        assert!(d.can("capReadOnlyMany") && d.can("FSResizeFromSourceNotSupported"));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].note);
        assert_eq!(warnings[0].field, "ShortName, VendorNote");
        // A misspelt top-level key near a real one is still a warning of its own.
        let (_, warnings) = parse("DrivrInfo: {}\nDriverInfo: {Name: d}\n").unwrap();
        assert!(!warnings[0].note && warnings[0].message.contains("did you mean `DriverInfo`?"));
        for cap in CAPABILITIES {
            let (_, w) = parse(&format!(
                "DriverInfo: {{Name: d, Capabilities: {{{cap}: true}}}}\n"
            ))
            .unwrap();
            assert!(w.is_empty(), "{cap}: {w:?}");
        }
    }

    #[test]
    fn malformed_files_are_errors_with_line_and_field() {
        let e = parse("DriverInfo:\n  Name: x\n  Capabilities:\n    block: maybe\n").unwrap_err();
        let SpecError::Invalid(d) = &e else {
            panic!("{e}")
        };
        assert_eq!(d.field.as_deref(), Some("DriverInfo.Capabilities.block"));
        assert_eq!(d.line, 4);
        assert!(e.to_string().contains("expected true or false"), "{e}");

        let e = parse("StorageClass: {FromName: true}\n").unwrap_err();
        assert!(e.to_string().contains("DriverInfo.Name"), "{e}");

        let e = parse(
            "DriverInfo: {Name: x}\nStorageClass:\n  FromName: true\n  FromExistingClassName: y\n",
        )
        .unwrap_err();
        let SpecError::Invalid(d) = &e else {
            panic!("{e}")
        };
        assert_eq!(d.line, 4);
        assert!(e.to_string().contains("more than one way"), "{e}");

        let e = parse("DriverInfo: [x]\n").unwrap_err();
        assert!(e.to_string().contains("expected a mapping"), "{e}");
        let e = parse("DriverInfo: {Name: x\n").unwrap_err();
        let SpecError::Invalid(d) = &e else {
            panic!("{e}")
        };
        assert_eq!(d.kind, SpecErrorKind::Syntax, "{e}");
        assert!(parse("").is_err());
    }

    #[test]
    fn a_relative_manifest_is_found_next_to_the_file() {
        let (d, _) = parse_testdriver(
            "DriverInfo: {Name: x}\nStorageClass: {FromFile: sc.yaml}\n",
            Path::new("/vendor/driver.yaml"),
        )
        .unwrap();
        assert_eq!(
            d.class,
            Some(ClassSource::FromFile {
                written: PathBuf::from("sc.yaml"),
                resolved: PathBuf::from("/vendor/sc.yaml")
            })
        );
    }
}
