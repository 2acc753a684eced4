//! Reading a scene file: TOML text to a [`SceneFile`], with every syntax error, unknown key and
//! wrongly typed value reported in one pass.
//!
//! serde stops at the first problem, so the reader does not hand the whole document to serde.
//! It parses the TOML into toml's spanned document tree, checks every key against the field
//! lists of the schema structs (taken from their serde derives, so the schema is written once),
//! then deserialises each section and each array entry on its own. An unknown key is reported
//! and, when exactly one allowed key is close and not already given, read as that key so the
//! checks after it still see what was meant; otherwise it is dropped. A value of the wrong type
//! is reported, removed, and the entry read again to find the next one; an entry with such a
//! problem is then left out of the [`SceneFile`], so later checks never report follow-ons of it.

use super::diagnostics::{closest, from_toml, improve_message, line_col, Diagnostic};
use super::schema::*;
use serde::de::{DeserializeOwned, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ops::Range;
use toml::de::{DeTable, DeValue, ValueDeserializer};
use toml::Spanned;

/// The field names serde expects for `T` (a struct with a derived `Deserialize`).
fn fields<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut out: &'static [&'static str] = &[];
    let _ = T::deserialize(FieldProbe(&mut out));
    out
}

/// A deserializer that only records the field list it is asked for.
struct FieldProbe<'a>(&'a mut &'static [&'static str]);

impl<'de> serde::Deserializer<'de> for FieldProbe<'_> {
    type Error = serde::de::value::Error;
    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("not a struct"))
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(serde::de::Error::custom("fields recorded"))
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// What the keys of one table may be.
#[derive(Clone, Copy)]
struct Node {
    /// The allowed keys.
    fields: fn() -> &'static [&'static str],
    /// The keys that must be there.
    required: &'static [&'static str],
    /// For a key whose value is itself checked: how.
    child: fn(&str) -> Option<Child>,
}

#[derive(Clone, Copy)]
enum Child {
    /// A table with these keys.
    Table(Node),
    /// An array of tables, each with these keys.
    Tables(Node),
    /// A table of user-named entries, each a table with these keys.
    Entries(Node),
}

fn leaf<T: DeserializeOwned + Required>() -> Node {
    Node {
        fields: fields::<T>,
        required: T::REQUIRED,
        child: |_| None,
    }
}

fn scene_node() -> Node {
    Node {
        fields: || &SCENE_KEYS,
        // A missing [simulation] gets its own message in `read`.
        required: &[],
        child: |k| match k {
            "simulation" => Some(Child::Table(leaf::<SimulationSection>())),
            "boundaries" => Some(Child::Table(Node {
                fields: fields::<BoundariesSection>,
                required: BoundariesSection::REQUIRED,
                child: |_| Some(Child::Table(leaf::<BoundarySpec>())),
            })),
            "materials" => Some(Child::Entries(Node {
                fields: fields::<MaterialSpec>,
                required: MaterialSpec::REQUIRED,
                child: |k| match k {
                    "lorentz" => Some(Child::Tables(leaf::<LorentzSpec>())),
                    "drude" => Some(Child::Tables(leaf::<DrudeSpec>())),
                    "debye" => Some(Child::Tables(leaf::<DebyeSpec>())),
                    _ => None,
                },
            })),
            "geometry" => Some(Child::Tables(Node {
                fields: fields::<GeometrySpec>,
                required: GeometrySpec::REQUIRED,
                child: |k| (k == "box").then(|| Child::Table(leaf::<BoxSpec>())),
            })),
            "source" => Some(Child::Tables(Node {
                fields: fields::<SourceSpec>,
                required: SourceSpec::REQUIRED,
                child: |k| (k == "waveform").then(|| Child::Table(leaf::<WaveformSpec>())),
            })),
            "monitor" => Some(Child::Tables(Node {
                fields: fields::<MonitorSpec>,
                required: MonitorSpec::REQUIRED,
                child: |k| match k {
                    "box" => Some(Child::Table(leaf::<BoxSpec>())),
                    "frequencies" => Some(Child::Table(leaf::<FrequencySpec>())),
                    "theta" | "phi" => Some(Child::Table(leaf::<AngleSpec>())),
                    _ => None,
                },
            })),
            _ => None,
        },
    }
}

struct Reader<'a> {
    text: &'a str,
    problems: Vec<Diagnostic>,
    /// Required keys found missing (full paths): serde's own "missing field" for them is not
    /// repeated.
    missing: Vec<String>,
}

impl Reader<'_> {
    fn problem(&mut self, at: usize, key: String, message: String) {
        let (line, column) = line_col(self.text, at);
        self.problems.push(Diagnostic {
            line,
            column,
            key,
            message,
        });
    }

    /// Report every number in `value` (at `path`) that is not finite (`nan`, `inf`: no key
    /// takes one, and NaN passes every range check) and every text or name holding a NUL
    /// character (the result file cannot store it), recursively.
    fn check_values(&mut self, value: &Spanned<DeValue<'_>>, path: &str) {
        let nul = "contains a NUL character (\\u0000), which no name or text in a scene may hold";
        match value.get_ref() {
            DeValue::Float(f) if !f.as_str().parse::<f64>().is_ok_and(f64::is_finite) => {
                self.problem(
                    value.span().start,
                    path.to_string(),
                    format!(
                        "`{}` is not a finite number: every number in a scene must be one",
                        f.as_str()
                    ),
                );
            }
            DeValue::String(text) if text.contains('\0') => {
                self.problem(value.span().start, path.to_string(), nul.into())
            }
            DeValue::Table(table) => {
                for (k, v) in table.iter() {
                    let full = join(path, k.get_ref());
                    if k.get_ref().contains('\0') {
                        self.problem(k.span().start, full.clone(), nul.into());
                    }
                    self.check_values(v, &full);
                }
            }
            DeValue::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.check_values(v, &format!("{path}[{i}]"));
                }
            }
            _ => {}
        }
    }

    /// Check the keys of `table` (at `path`) against `node`, recursively; report each unknown
    /// key, then read it as its close match or drop it.
    fn check_keys(&mut self, table: &mut DeTable<'_>, at: usize, path: &str, node: Node) {
        let allowed = (node.fields)();
        let unknown: Vec<String> = table
            .keys()
            .map(|k| k.get_ref().to_string())
            .filter(|k| !allowed.contains(&k.as_str()))
            .collect();
        for name in unknown {
            let (key, value) = table
                .remove_entry(name.as_str())
                .expect("the key was just listed");
            let full = join(path, &name);
            let guess = closest(&name, allowed).filter(|g| !table.contains_key(*g));
            let hint = guess.map_or(String::new(), |g| format!("; did you mean `{g}`?"));
            let place = if path.is_empty() {
                "at the top level".to_string()
            } else {
                format!("in `{path}`")
            };
            self.problem(
                key.span().start,
                full,
                format!(
                    "unknown key `{name}` {place}: allowed are {}{hint}",
                    list(allowed)
                ),
            );
            if let Some(g) = guess {
                table.insert(Spanned::new(key.span(), g.into()), value);
            }
        }
        for r in node.required.iter().filter(|r| !table.contains_key(**r)) {
            let full = join(path, r);
            self.problem(at, full.clone(), format!("missing the required key `{r}`"));
            self.missing.push(full);
        }
        for (key, value) in table.iter_mut() {
            let name = key.get_ref().to_string();
            let Some(child) = (node.child)(&name) else {
                continue;
            };
            let full = join(path, &name);
            let start = value.span().start;
            match (child, value.get_mut()) {
                (Child::Table(n), DeValue::Table(t)) => self.check_keys(t, start, &full, n),
                (Child::Entries(n), DeValue::Table(t)) => {
                    for (k, v) in t.iter_mut() {
                        let start = v.span().start;
                        if let DeValue::Table(inner) = v.get_mut() {
                            self.check_keys(inner, start, &format!("{full}.{}", k.get_ref()), n);
                        }
                    }
                }
                (Child::Tables(n), DeValue::Array(items)) => {
                    for (i, v) in items.iter_mut().enumerate() {
                        let start = v.span().start;
                        if let DeValue::Table(inner) = v.get_mut() {
                            self.check_keys(inner, start, &format!("{full}[{i}]"), n);
                        }
                    }
                }
                // A wrong type: reported when the section is read.
                _ => {}
            }
        }
    }

    /// Deserialise one section or entry (named `path` in messages). On a problem, report it,
    /// remove the value it points at and try again, to report every wrongly typed value of the
    /// entry; an entry with a problem is not returned.
    fn read<T: DeserializeOwned>(
        &mut self,
        value: &Spanned<DeValue<'_>>,
        path: &str,
    ) -> Option<Spanned<T>> {
        // Every section and entry is a table; serde's message for anything else names Rust types.
        if !value.get_ref().is_table() {
            let what = match value.get_ref() {
                DeValue::Array(_) if !path.contains(['.', '[']) => {
                    "an array (`[[...]]` makes one; write `[...]`)"
                }
                v => v.type_str(),
            };
            self.problem(
                value.span().start,
                path.to_string(),
                format!("expected a table, got {what}"),
            );
            return None;
        }
        let mut value = value.clone();
        let mut removed: Vec<String> = Vec::new();
        let mut damaged = false;
        // Each pass removes a value, so this ends; the bound is a guard.
        for _ in 0..1000 {
            let e = match Spanned::<T>::deserialize(ValueDeserializer::from(value.clone())) {
                Ok(t) => return (!damaged).then_some(t),
                Err(e) => e,
            };
            damaged = true;
            let at = e.span().unwrap_or(0..0);
            // "missing field `x`" after `x` was removed for its type: a follow-on, not news.
            let follow_on = removed
                .iter()
                .any(|k| e.message().starts_with(&format!("missing field `{k}`")));
            if follow_on {
                return None;
            }
            let inner = remove_at(&mut value, &at);
            let key = match &inner {
                Some(p) if p.starts_with('[') => format!("{path}{p}"),
                Some(p) => join(path, p),
                None => path.to_string(),
            };
            // A required key the key check already reported missing: not news either.
            let reported = e
                .message()
                .strip_prefix("missing field `")
                .and_then(|r| r.split('`').next())
                .is_some_and(|f| self.missing.contains(&join(&key, f)));
            if reported {
                return None;
            }
            self.problem(at.start, key, improve_message(e.message().trim()));
            match inner {
                Some(p) => removed.push(p.rsplit('.').next().unwrap_or(&p).to_string()),
                None => return None,
            }
        }
        None
    }
}

/// Remove the innermost key whose key or value spans `at` (a table's own missing-field error
/// spans the table, which then goes with its key); return its dotted path.
fn remove_at(value: &mut Spanned<DeValue<'_>>, at: &Range<usize>) -> Option<String> {
    let inside = |s: &Range<usize>| s.start <= at.start && at.end <= s.end && s != &(0..0);
    match value.get_mut() {
        DeValue::Table(t) => {
            let (name, key_span, v) = t
                .iter_mut()
                .find(|(k, v)| inside(&k.span()) || inside(&v.span()))
                .map(|(k, v)| (k.get_ref().to_string(), k.span(), v))?;
            if !inside(&key_span) && v.span() != *at {
                if let Some(inner) = remove_at(v, at) {
                    return Some(if inner.starts_with('[') {
                        format!("{name}{inner}")
                    } else {
                        format!("{name}.{inner}")
                    });
                }
            }
            t.remove(name.as_str());
            Some(name)
        }
        DeValue::Array(items) => {
            let (i, v) = items
                .iter_mut()
                .enumerate()
                .find(|(_, v)| inside(&v.span()))?;
            // Only a table inside an array has keys to remove; else the whole array goes.
            remove_at(v, at).map(|inner| format!("[{i}].{inner}"))
        }
        _ => None,
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn list(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Read `text`: the scene as far as it can be read, and every problem found on the way. None
/// when nothing after reading can be checked (a syntax error, or no readable `[simulation]`).
pub fn read(text: &str, file: &str) -> (Option<SceneFile>, Vec<Diagnostic>) {
    let mut r = Reader {
        text,
        problems: Vec::new(),
        missing: Vec::new(),
    };
    let (doc, errors) = DeTable::parse_recoverable(text);
    if !errors.is_empty() {
        // A syntax error: what follows it may be read wrongly, so only syntax is reported.
        for e in &errors {
            if let super::SceneError::Invalid { problems, .. } = from_toml(file, text, e) {
                // The text at a syntax error is not a key: the location says where.
                r.problems.extend(problems.into_iter().map(|p| Diagnostic {
                    key: String::new(),
                    ..p
                }));
            }
        }
        r.problems.dedup();
        return (None, r.problems);
    }
    let mut doc = doc.into_inner();
    r.check_keys(&mut doc, 0, "", scene_node());
    // A value no key can take is reported alone, as a syntax error is: the checks after
    // reading would only trip over it again (a NaN coordinate passes every range check).
    let before = r.problems.len();
    for (key, value) in doc.iter() {
        r.check_values(value, key.get_ref());
    }
    if r.problems.len() > before {
        return (None, r.problems);
    }

    let simulation = match doc.get("simulation") {
        Some(v) => r.read::<SimulationSection>(v, "simulation"),
        None => {
            r.problem(
                0,
                "simulation".into(),
                "the scene needs a [simulation] table with cell_size, size and steps or duration"
                    .into(),
            );
            None
        }
    };
    let (boundaries, boundaries_unread) = match doc.get("boundaries") {
        Some(v) => {
            let b = r.read::<BoundariesSection>(v, "boundaries");
            let unread = b.is_none();
            (b, unread)
        }
        None => (None, false),
    };
    let mut materials = BTreeMap::new();
    let mut unread_materials = Vec::new();
    if let Some(v) = doc.get("materials") {
        match v.get_ref() {
            DeValue::Table(t) => {
                for (k, v) in t.iter() {
                    if k.get_ref().trim().is_empty() {
                        r.problem(
                            k.span().start,
                            "materials".into(),
                            "a material needs a name: `[materials] glass = { epsilon = 2.25 }`"
                                .into(),
                        );
                        unread_materials.push(k.get_ref().to_string());
                        continue;
                    }
                    match r.read::<MaterialSpec>(v, &format!("materials.{}", k.get_ref())) {
                        Some(m) => {
                            materials.insert(Spanned::new(k.span(), k.get_ref().to_string()), m);
                        }
                        None => unread_materials.push(k.get_ref().to_string()),
                    }
                }
            }
            _ => r.problem(
                v.span().start,
                "materials".into(),
                format!(
                    "expected a table of named materials, e.g. `[materials] glass = {{ epsilon = 2.25 }}`, got {}",
                    v.get_ref().type_str()
                ),
            ),
        }
    }
    let geometry = r.items::<GeometrySpec>(&doc, "geometry");
    let source = r.items::<SourceSpec>(&doc, "source");
    let monitor = r.items::<MonitorSpec>(&doc, "monitor");
    let scene = simulation.map(|simulation| SceneFile {
        simulation,
        boundaries,
        boundaries_unread,
        materials,
        unread_materials,
        geometry,
        source,
        monitor,
    });
    (scene, r.problems)
}

impl Reader<'_> {
    /// Read the array of tables `name` entry by entry.
    fn items<T: DeserializeOwned>(&mut self, doc: &DeTable<'_>, name: &str) -> Items<T> {
        let mut out = Items::default();
        let Some(v) = doc.get(name) else {
            return out;
        };
        let DeValue::Array(entries) = v.get_ref() else {
            self.problem(
                v.span().start,
                name.into(),
                format!(
                    "expected one or more [[{name}]] tables, got {}",
                    v.get_ref().type_str()
                ),
            );
            out.written = 1;
            return out;
        };
        out.written = entries.len();
        for (i, e) in entries.iter().enumerate() {
            if let Some(t) = self.read::<T>(e, &format!("{name}[{i}]")) {
                out.entries.push((i, t));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `T::REQUIRED` against serde: every required key is a field, and an empty table is
    /// refused for the first of them (or read, when there are none).
    fn required_matches_serde<T: DeserializeOwned + Required>() {
        let all = fields::<T>();
        assert!(!all.is_empty(), "the field probe found the fields");
        for r in T::REQUIRED {
            assert!(all.contains(r), "`{r}` is not a field of {all:?}");
        }
        let empty = DeTable::parse("").unwrap();
        let v = Spanned::new(empty.span(), DeValue::Table(empty.into_inner()));
        match (
            T::deserialize(ValueDeserializer::from(v)),
            T::REQUIRED.first(),
        ) {
            (Ok(_), None) => {}
            (Err(e), Some(first)) => assert!(
                e.message().starts_with(&format!("missing field `{first}`")),
                "{}",
                e.message()
            ),
            (Ok(_), Some(first)) => panic!("`{first}` is listed as required but is optional"),
            (Err(e), None) => panic!("nothing listed as required, but: {}", e.message()),
        }
    }

    #[test]
    fn the_required_keys_are_the_ones_serde_requires() {
        required_matches_serde::<SimulationSection>();
        required_matches_serde::<BoundariesSection>();
        required_matches_serde::<BoundarySpec>();
        required_matches_serde::<MaterialSpec>();
        required_matches_serde::<LorentzSpec>();
        required_matches_serde::<DrudeSpec>();
        required_matches_serde::<DebyeSpec>();
        required_matches_serde::<GeometrySpec>();
        required_matches_serde::<SourceSpec>();
        required_matches_serde::<WaveformSpec>();
        required_matches_serde::<MonitorSpec>();
        required_matches_serde::<FrequencySpec>();
        required_matches_serde::<BoxSpec>();
    }

    #[test]
    fn every_missing_required_key_is_reported() {
        let (_, problems) = read("[simulation]\n[[source]]\nwaveform = {}\n", "t.toml");
        let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "simulation.cell_size",
                "simulation.size",
                "source[0].type",
                "source[0].waveform.type",
                "source[0].waveform.frequency"
            ],
            "{problems:#?}"
        );
    }
}
