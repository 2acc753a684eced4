//! Error messages that point into the scene file.

use std::fmt;

/// One problem found in a scene, located in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// 1-based line (0 when the problem has no single location).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// Dotted key path, e.g. `source[2].position` (empty when unknown).
    pub key: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

/// Why a scene could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// The file could not be read.
    #[error("cannot read scene file `{file}`: {message}")]
    Io {
        /// Path as given.
        file: String,
        /// The operating system's reason.
        message: String,
    },
    /// The file was read but is not a valid scene.
    #[error("{}", render(file, problems))]
    Invalid {
        /// Path as given.
        file: String,
        /// Every problem found, in file order.
        problems: Vec<Diagnostic>,
    },
}

impl SceneError {
    /// An error with `problems`, sorted into file order (exact repeats dropped).
    pub fn invalid(file: &str, mut problems: Vec<Diagnostic>) -> Self {
        problems.sort_by_key(|p| (p.line, p.column));
        problems.dedup();
        SceneError::Invalid {
            file: file.to_string(),
            problems,
        }
    }

    /// An error with a single problem at byte offset `at`.
    pub fn single(file: &str, text: &str, at: usize, key: &str, message: String) -> Self {
        let (line, column) = if text.is_empty() {
            (0, 0)
        } else {
            line_col(text, at)
        };
        SceneError::Invalid {
            file: file.to_string(),
            problems: vec![Diagnostic {
                line,
                column,
                key: key.to_string(),
                message,
            }],
        }
    }
}

fn render(file: &str, problems: &[Diagnostic]) -> String {
    let mut out = format!(
        "invalid scene `{file}`: {} problem{}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    for p in problems {
        out.push('\n');
        out.push_str(&p.to_string_in(file));
    }
    out
}

impl Diagnostic {
    /// `file:line:column: key: message`.
    pub fn to_string_in(&self, file: &str) -> String {
        let mut s = String::from("  ");
        s.push_str(file);
        if self.line > 0 {
            s.push_str(&format!(":{}:{}", self.line, self.column));
        }
        s.push_str(": ");
        if !self.key.is_empty() {
            s.push_str(&format!("`{}`: ", self.key));
        }
        s.push_str(&self.message);
        s
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_string_in("scene"))
    }
}

/// 1-based line and column of byte offset `at` in `text`.
pub fn line_col(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Turn a toml/serde error into a located diagnostic, adding the closest valid key name
/// when the problem is an unknown key.
pub fn from_toml(file: &str, text: &str, err: &toml::de::Error) -> SceneError {
    let span = err.span().unwrap_or(0..0);
    let (line, column) = line_col(text, span.start);
    let raw = err.message().trim().to_string();
    let spanned = text
        .get(span.clone())
        .filter(|s| !s.contains('\n') && s.len() < 60)
        .unwrap_or("")
        .trim();
    // A type error spans the value: name the key written before `=` on that line instead.
    let line_text = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let key = match line_text.split_once('=') {
        Some((k, _)) if raw.starts_with("invalid") => k.trim().trim_matches('"').to_string(),
        _ => spanned.to_string(),
    };
    let message = match raw.as_str() {
        // The parser says only "duplicate key"; its span is the key or table given again.
        "duplicate key" if !spanned.is_empty() => {
            format!("`{spanned}` is given twice: each key, and each [table], may be given once")
        }
        _ => improve_message(&raw),
    };
    SceneError::Invalid {
        file: file.to_string(),
        problems: vec![Diagnostic {
            line,
            column,
            key,
            message,
        }],
    }
}

/// serde says "unknown field `x`, expected one of `a`, `b`": add "did you mean `b`?"; and
/// serde's Rust type names become words.
pub(super) fn improve_message(raw: &str) -> String {
    // serde names the Rust struct a table is read into: "expected struct SourceSpec".
    let raw = match raw.find("expected struct ") {
        Some(i) => format!("{}expected a table", &raw[..i]),
        None => raw.to_string(),
    };
    let raw = &raw
        .replace("expected i64", "expected a whole number")
        .replace("expected f64", "expected a number")
        .replace("expected a sequence", "expected an array")
        .replace("expected a boolean", "expected true or false")
        // An integer beyond 64 bits reaches serde as i128.
        .replace(" as i128,", " (too large),");
    if let Some(rest) = raw.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or(rest);
        return format!("missing the required key `{name}`");
    }
    if let Some(rest) = raw.strip_prefix("unknown field `") {
        if let Some((given, tail)) = rest.split_once('`') {
            let allowed: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
            if let Some(best) = closest(given, &allowed) {
                return format!("{raw}; did you mean `{best}`?");
            }
        }
    }
    raw.to_string()
}

/// The allowed name closest to `given`, if any is reasonably close.
pub fn closest<'a>(given: &str, allowed: &[&'a str]) -> Option<&'a str> {
    allowed
        .iter()
        .map(|a| {
            (
                strsim::damerau_levenshtein(&given.to_lowercase(), &a.to_lowercase()),
                *a,
            )
        })
        .filter(|(d, a)| *d <= 2.max(a.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }

    #[test]
    fn suggests_the_closest_key() {
        let m = improve_message("unknown field `cel_size`, expected one of `name`, `cell_size`");
        assert!(m.ends_with("did you mean `cell_size`?"), "{m}");
    }
}
