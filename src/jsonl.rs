//! The one rule for reading the JSON-lines files nodedown appends to (the journal, the events,
//! the acks): one JSON value per line, blank lines skipped; the last line may be torn (a
//! crash or SIGKILL in the middle of a write leaves a line without its newline) and is then
//! ignored with a warning; any other line that does not parse is an error naming its number.
//!
//! Pure: works on the text already read.

use serde::de::DeserializeOwned;

/// A line that could not be read, with its 1-based number and (the start of) its text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {detail}")]
pub struct BadLine {
    pub line: usize,
    pub detail: String,
    /// The line's text, cut to [`EXCERPT`] characters.
    pub text: String,
}

/// How much of a bad line is kept for the message.
pub const EXCERPT: usize = 160;

/// What a JSON-lines text held.
#[derive(Debug)]
pub struct Read<T> {
    /// The values with their line numbers, in file order.
    pub values: Vec<(usize, T)>,
    /// Lines other than a torn last one that did not parse.
    pub bad: Vec<BadLine>,
    /// The torn last line, if there was one that did not parse.
    pub torn: Option<BadLine>,
}

impl<T> Read<T> {
    /// The values, or the first bad line (a torn last line is not an error).
    pub fn strict(self) -> Result<Vec<T>, BadLine> {
        match self.bad.into_iter().next() {
            Some(bad) => Err(bad),
            None => Ok(self.values.into_iter().map(|(_, v)| v).collect()),
        }
    }
}

fn excerpt(line: &str) -> String {
    let mut s: String = line.chars().take(EXCERPT).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    s
}

/// Reads every line of `text`, keeping the bad ones apart (for a reader that goes on past
/// them, like the journal's heal, and must say what it skipped).
pub fn parse<T: DeserializeOwned>(text: &str) -> Read<T> {
    let ends_torn = !text.is_empty() && !text.ends_with('\n');
    let lines: Vec<&str> = text.split('\n').collect();
    // `split` yields an empty last piece after a final newline; the last real line is the one
    // before it, or the last piece when the text does not end with a newline.
    let last = if ends_torn {
        lines.len()
    } else {
        lines.len() - 1
    };
    let mut read = Read {
        values: Vec::new(),
        bad: Vec::new(),
        torn: None,
    };
    for (i, line) in lines.iter().enumerate().take(last) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(v) => read.values.push((i + 1, v)),
            Err(e) => {
                let bad = BadLine {
                    line: i + 1,
                    detail: e.to_string(),
                    text: excerpt(line),
                };
                if ends_torn && i + 1 == last {
                    read.torn = Some(bad);
                } else {
                    read.bad.push(bad);
                }
            }
        }
    }
    read
}

/// Reads `text` by the rule: the values, or the first bad line that is not a torn last line.
/// A torn last line is logged as a warning, naming `what`.
pub fn parse_strict<T: DeserializeOwned>(text: &str, what: &str) -> Result<Vec<T>, BadLine> {
    let read = parse(text);
    if let Some(torn) = &read.torn {
        tracing::warn!("{what}: ignoring a torn last line ({torn})");
    }
    read.strict()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct V {
        n: u32,
    }

    fn ns(r: &Read<V>) -> Vec<(usize, u32)> {
        r.values.iter().map(|(l, v)| (*l, v.n)).collect()
    }

    #[test]
    fn blank_lines_are_skipped_and_numbers_kept() {
        let r = parse::<V>("{\"n\":1}\n\n{\"n\":2}\r\n");
        assert_eq!(ns(&r), vec![(1, 1), (3, 2)]);
        assert!(r.bad.is_empty() && r.torn.is_none());
        assert!(parse::<V>("").strict().unwrap().is_empty());
    }

    #[test]
    fn a_torn_last_line_is_tolerated() {
        let r = parse::<V>("{\"n\":1}\n{\"n\":2}\n{\"n\":");
        assert_eq!(ns(&r), vec![(1, 1), (2, 2)]);
        assert_eq!(r.torn.as_ref().map(|t| t.line), Some(3));
        assert_eq!(r.strict().unwrap(), vec![V { n: 1 }, V { n: 2 }]);
        // A complete last line without its newline still counts.
        assert_eq!(parse::<V>("{\"n\":1}").strict().unwrap(), vec![V { n: 1 }]);
    }

    #[test]
    fn a_bad_middle_line_is_an_error_naming_it() {
        let r = parse::<V>("{\"n\":1}\n{oops\n{\"n\":3}\n");
        assert_eq!(ns(&r), vec![(1, 1), (3, 3)]);
        assert_eq!(r.bad.len(), 1);
        assert_eq!(r.bad[0].line, 2);
        assert_eq!(r.bad[0].text, "{oops");
        let err = r.strict().unwrap_err();
        assert!(err.to_string().starts_with("line 2: "), "{err}");
        // A bad last line that ends with its newline was written whole: not torn, an error.
        let err = parse::<V>("{\"n\":1}\n{\"n\":\n").strict().unwrap_err();
        assert_eq!(err.line, 2);
    }

    #[test]
    fn long_bad_lines_are_cut() {
        let long = format!("{{{}\n", "x".repeat(1000));
        let r = parse::<V>(&long);
        assert_eq!(r.bad[0].text.chars().count(), EXCERPT + 1);
    }
}
