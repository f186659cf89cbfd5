//! YAML as a tree of located nodes, to find where a field is written and which field is
//! written at a position.
//!
//! serde-saphyr reads the text twice, within the same limits on depth, size and alias
//! expansion: into a [`Node`] tree in which every node knows its line and column ([`parse`]),
//! and into the experiment types ([`deserialize`]), whose errors carry a position. The tree
//! turns that position into the dotted path of a field ([`Node::at_pos`]), and gives the checks
//! made after deserializing the position of any field by its path ([`Node::find`]).

use super::load::{MAX_DEPTH, MAX_NODES};
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{DuplicateKeyPolicy, Options};
use std::fmt;

/// 1-based line and column (in characters).
pub(crate) type Pos = (usize, usize);

pub(crate) struct Node {
    /// Where the node starts; a block mapping starts where its first key does, a flow one at
    /// its `{`.
    pub at: Pos,
    pub value: Value,
}

pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in the order written, repeated keys included.
    Map(Vec<(Node, Node)>),
}

fn options(duplicate_keys: DuplicateKeyPolicy) -> Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_depth: MAX_DEPTH,
            flow_nesting_limit: MAX_DEPTH,
            max_nodes: MAX_NODES,
        },
        alias_limits: serde_saphyr::alias_limits! { max_total_replayed_events: MAX_NODES },
        duplicate_keys: duplicate_keys,
        // YAML 1.2 booleans: `yes`, `no`, `on`, `y` are strings.
        strict_booleans: true,
        with_snippet: false,
    }
}

/// Reads one YAML document, repeated keys included; `None` when it holds no value at all.
pub(crate) fn parse(text: &str) -> Result<Option<Node>, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, options(DuplicateKeyPolicy::PassThrough))
}

/// Reads one YAML document as a `T`; a repeated key is an error.
pub(crate) fn deserialize<T: de::DeserializeOwned>(text: &str) -> Result<T, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, options(DuplicateKeyPolicy::Error))
}

impl<'de> de::Deserialize<'de> for Node {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = serde_saphyr::Spanned::<Value>::deserialize(deserializer)?;
        let at = spanned.referenced;
        Ok(Node {
            at: (at.line() as usize, at.column() as usize),
            value: spanned.value,
        })
    }
}

impl<'de> de::Deserialize<'de> for Value {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Any;
        impl<'de> Visitor<'de> for Any {
            type Value = Value;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_unit<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_none<E>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
                Ok(Value::Int(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
                Ok(Value::Int(v.into()))
            }
            fn visit_i128<E>(self, v: i128) -> Result<Value, E> {
                Ok(Value::Int(v))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
                Ok(Value::Float(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Value, E> {
                Ok(Value::Str(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Value::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key()? {
                    entries.push((key, map.next_value()?));
                }
                Ok(Value::Map(entries))
            }
        }
        deserializer.deserialize_any(Any)
    }
}

impl Node {
    /// A scalar as text (numbers and booleans as written in canonical form); `None` for null,
    /// lists and mappings.
    pub fn text(&self) -> Option<String> {
        match &self.value {
            Value::Str(s) => Some(s.clone()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Int(i) => Some(i.to_string()),
            Value::Float(f) => Some(f.to_string()),
            Value::Null | Value::Seq(_) | Value::Map(_) => None,
        }
    }

    fn is_key(&self, name: &str) -> bool {
        match &self.value {
            Value::Str(s) => s == name,
            _ => self.text().is_some_and(|t| t == name),
        }
    }

    /// Where the field at `path` (`variants[1].remediation.after`) is written: the position of
    /// its key, or of the list item. `None` when it is not written (or `path` is empty).
    pub fn find(&self, path: &str) -> Option<Pos> {
        let mut node = self;
        let mut at = None;
        for segment in path.split('.').filter(|s| !s.is_empty()) {
            let mut parts = segment.split('[');
            let name = parts.next().unwrap_or_default();
            if !name.is_empty() {
                let Value::Map(entries) = &node.value else {
                    return None;
                };
                let (key, value) = entries.iter().find(|(key, _)| key.is_key(name))?;
                at = Some(key.at);
                node = value;
            }
            for index in parts {
                let index: usize = index.strip_suffix(']')?.parse().ok()?;
                let Value::Seq(items) = &node.value else {
                    return None;
                };
                node = items.get(index)?;
                at = Some(node.at);
            }
        }
        at
    }

    /// Every node written at `pos`, outermost first: its path, its key when `pos` is the key's,
    /// and its value. Several nodes can start at one place: a block mapping and its first key,
    /// a block list and its first item.
    pub fn at_pos(&self, pos: Pos) -> Vec<(String, Option<&Node>, &Node)> {
        let mut hits = Vec::new();
        self.collect_at(pos, String::new(), &mut hits);
        hits
    }

    fn collect_at<'a>(
        &'a self,
        pos: Pos,
        path: String,
        hits: &mut Vec<(String, Option<&'a Node>, &'a Node)>,
    ) {
        if self.at == pos {
            hits.push((path.clone(), None, self));
        }
        match &self.value {
            Value::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    item.collect_at(pos, format!("{path}[{i}]"), hits);
                }
            }
            Value::Map(entries) => {
                for (key, value) in entries {
                    // A list or a mapping as a key has no name.
                    let name = key.text().unwrap_or_else(|| "?".to_string());
                    let child = if path.is_empty() {
                        name
                    } else {
                        format!("{path}.{name}")
                    };
                    if key.at == pos {
                        hits.push((child.clone(), Some(key), value));
                    }
                    value.collect_at(pos, child, hits);
                }
            }
            _ => {}
        }
    }

    /// Where `path` is written, else where its closest written parent is, else 1:1.
    pub fn locate(&self, path: &str) -> Pos {
        let mut path = path;
        loop {
            if let Some(at) = self.find(path) {
                return at;
            }
            match path.rfind(['.', '[']) {
                Some(cut) => path = &path[..cut],
                None => return (1, 1),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_locates_keys_and_items_in_block_and_flow_style() {
        let text = "\
# comment
name: x   # trailing
description: |
  text: not a key
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
";
        let tree = parse(text).unwrap().unwrap();
        let at = |p: &str| tree.find(p);
        assert_eq!(at("name"), Some((2, 1)));
        assert_eq!(at("description"), Some((3, 1)));
        assert_eq!(at("text"), None);
        assert_eq!(at("cluster.provider"), Some((5, 11)));
        assert_eq!(at("cluster.config"), Some((6, 3)));
        assert_eq!(at("quoted key"), Some((7, 1)));
        assert_eq!(at("variants[0].name"), Some((9, 3)));
        assert_eq!(at("variants[0].remediation.kind"), Some((11, 5)));
        assert_eq!(at("variants[1].name"), Some((12, 4)));
        assert_eq!(at("variants[1].expect.timeToReady.max"), Some((12, 36)));
        assert_eq!(at("variants[2].name"), Some((14, 3)));
        assert_eq!(at("variants[3]"), None);
        assert_eq!(tree.locate("variants[1].remediation.after"), (12, 3));
        let fields_at = |pos| -> Vec<(String, bool)> {
            let hits = tree.at_pos(pos);
            hits.into_iter()
                .map(|(p, key, _)| (p, key.is_some()))
                .collect()
        };
        let field = |p: &str, key: bool| (p.to_string(), key);
        assert_eq!(
            fields_at((9, 3)),
            [
                field("variants", false),
                field("variants[0]", false),
                field("variants[0].name", true)
            ]
        );
        assert_eq!(
            fields_at((11, 5)),
            [
                field("variants[0].remediation", false),
                field("variants[0].remediation.kind", true)
            ]
        );
        assert_eq!(fields_at((12, 4)), [field("variants[1].name", true)]);
        assert_eq!(fields_at((12, 10)), [field("variants[1].name", false)]);
        assert_eq!(fields_at((1, 2)), []);
        assert_eq!(tree.locate("nothing.here"), (1, 1));
        assert_eq!(tree.locate(""), (1, 1));
    }
}
