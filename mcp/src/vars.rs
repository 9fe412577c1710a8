//! The variables an agent types without holding them: `${NAME}` in a typing argument is
//! resolved by the gateway just before the call is forwarded (`inputs.rs`), from
//!
//! - the environment: `CDP_RELAY_VAR_<NAME>=value` defines `${NAME}` (read once, by the binary;
//!   the wrapped server and the browser never inherit these variables), and
//! - `--var-file FILE`: a dotenv file of `NAME=value` lines ([`parse_dotenv`]); an environment
//!   variable wins over the file for the same name.
//!
//! Names follow the run's secret-name rule ([`cdp_sanitize::check_secret_name`]). Values live in
//! memory only: nothing here is `Serialize`, `Debug` prints names and lengths, and no error
//! repeats a value (nor a would-be name that fails the rule: it may be a value written in the
//! wrong place).

use cdp_capture::SecretValue;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variables' prefix: `CDP_RELAY_VAR_PASSWORD` defines `${PASSWORD}`.
pub const ENV_PREFIX: &str = "CDP_RELAY_VAR_";

/// Most variables a gateway holds (as many as a run holds secrets).
pub const MAX_VARIABLES: usize = cdp_sanitize::MAX_SECRETS;

/// Largest `--var-file` read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// Where a variable's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VarSource {
    /// `CDP_RELAY_VAR_<NAME>`.
    Environment,
    /// `--var-file`.
    File,
}

impl VarSource {
    /// The word the agent sees (`evidence_list_variables`).
    pub fn word(self) -> &'static str {
        match self {
            VarSource::Environment => "environment",
            VarSource::File => "var-file",
        }
    }
}

/// One variable.
#[derive(Clone)]
pub(crate) struct Variable {
    pub(crate) value: SecretValue,
    pub(crate) source: VarSource,
}

impl Variable {
    /// Its length in characters.
    pub(crate) fn chars(&self) -> usize {
        self.value.expose().chars().count()
    }
}

/// The gateway's variables, by name.
#[derive(Clone, Default)]
pub struct Variables {
    by_name: BTreeMap<String, Variable>,
}

impl fmt::Debug for Variables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut m = f.debug_map();
        for (name, v) in &self.by_name {
            m.entry(
                name,
                &format_args!("{} chars ({})", v.chars(), v.source.word()),
            );
        }
        m.finish()
    }
}

/// Why variables cannot be read. Never holds a value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VarError {
    /// An environment variable's name after the prefix breaks the name rule.
    #[error("{variable}: `{name}` is not a variable name: {rule}")]
    EnvName {
        /// The environment variable.
        variable: String,
        /// The part after [`ENV_PREFIX`].
        name: String,
        /// The rule broken.
        rule: String,
    },
    /// An environment variable's name or value is not UTF-8.
    #[error("an environment variable starting with {ENV_PREFIX} is not valid UTF-8 (name or value); variables must be text")]
    NotUnicode,
    /// A value that cannot be typed: empty, or longer than a secret may be.
    #[error("{place}: the value of {name} {why}")]
    BadValue {
        /// `CDP_RELAY_VAR_X` or `FILE line N`.
        place: String,
        /// The variable's name.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// The file cannot be read.
    #[error("cannot read the variables file {}: {reason}", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The system's words.
        reason: String,
    },
    /// A line of the file is not `NAME=value`.
    #[error("{}, line {line}: {why}", .path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// 1-based.
        line: usize,
        /// What is wrong (never the line's text).
        why: String,
    },
    /// More than [`MAX_VARIABLES`].
    #[error("{count} variables, more than the {MAX_VARIABLES} a run can hold")]
    TooMany {
        /// How many were given.
        count: usize,
    },
}

impl Variables {
    /// No variables.
    pub fn new() -> Variables {
        Variables::default()
    }

    /// Adds `${name}` = `value` (replacing a value of the same name). `place` says where it came
    /// from, for errors.
    pub fn insert(
        &mut self,
        name: &str,
        value: String,
        source: VarSource,
        place: &str,
    ) -> Result<(), VarError> {
        let bad = |why: String| VarError::BadValue {
            place: place.to_owned(),
            name: name.to_owned(),
            why,
        };
        if value.trim().is_empty() {
            return Err(bad("is empty: nothing to type".into()));
        }
        if value.len() > cdp_sanitize::MAX_SECRET_BYTES {
            return Err(bad(format!(
                "is {} bytes, over the {} a secret may hold",
                value.len(),
                cdp_sanitize::MAX_SECRET_BYTES
            )));
        }
        if !self.by_name.contains_key(name) && self.by_name.len() >= MAX_VARIABLES {
            return Err(VarError::TooMany {
                count: self.by_name.len() + 1,
            });
        }
        self.by_name.insert(
            name.to_owned(),
            Variable {
                value: SecretValue::new(value),
                source,
            },
        );
        Ok(())
    }

    /// The `CDP_RELAY_VAR_<NAME>` entries of an environment (`std::env::vars_os()`); other
    /// entries are ignored.
    pub fn from_environment(
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Result<Variables, VarError> {
        let mut out = Variables::new();
        for (key, value) in vars {
            let Some(key) = key.to_str() else {
                // Not ours unless it starts with the prefix, which is ASCII.
                if key.as_encoded_bytes().starts_with(ENV_PREFIX.as_bytes()) {
                    return Err(VarError::NotUnicode);
                }
                continue;
            };
            let Some(name) = key.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            // An environment variable's name is configuration, not a value: it may be repeated.
            cdp_sanitize::check_secret_name(name).map_err(|e| VarError::EnvName {
                variable: key.to_owned(),
                name: name.to_owned(),
                rule: e.to_string(),
            })?;
            let value = value.into_string().map_err(|_| VarError::NotUnicode)?;
            out.insert(name, value, VarSource::Environment, key)?;
        }
        Ok(out)
    }

    /// The variables of a dotenv file ([`parse_dotenv`]).
    pub fn read_file(path: &Path) -> Result<Variables, VarError> {
        let unreadable = |reason: String| VarError::Unreadable {
            path: path.to_path_buf(),
            reason,
        };
        let meta = std::fs::metadata(path).map_err(|e| unreadable(e.to_string()))?;
        if !meta.is_file() {
            return Err(unreadable("not a regular file".into()));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(unreadable(format!(
                "{} bytes, over the {MAX_FILE_BYTES} read",
                meta.len()
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| unreadable(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|_| unreadable("not UTF-8 text".into()))?;
        let mut out = Variables::new();
        for entry in parse_dotenv(&text) {
            let (line, name, value) = entry.map_err(|(line, why)| VarError::Syntax {
                path: path.to_path_buf(),
                line,
                why,
            })?;
            let place = format!("{} line {line}", path.display());
            out.insert(&name, value, VarSource::File, &place)?;
        }
        Ok(out)
    }

    /// These variables with `over`'s added; `over` wins for a name both have.
    pub fn merged(mut self, over: Variables) -> Result<Variables, VarError> {
        let count = self
            .by_name
            .keys()
            .chain(over.by_name.keys())
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        if count > MAX_VARIABLES {
            return Err(VarError::TooMany { count });
        }
        self.by_name.extend(over.by_name);
        Ok(self)
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// None at all.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Variable> {
        self.by_name.get(name)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Variable)> {
        self.by_name.iter().map(|(n, v)| (n.as_str(), v))
    }
}

/// One entry of a dotenv file: (line, name, value), or (line, what is wrong).
type Entry = Result<(usize, String, String), (usize, String)>;

/// Reads dotenv text: one `NAME=value` per line, `export NAME=value` accepted, `#` comments
/// and blank lines skipped; a name may carry the environment's prefix (`CDP_RELAY_VAR_NAME`),
/// so one file can serve both ways. A value is
///
/// - unquoted: the rest of the line, blanks around it trimmed, cut at ` #` (a comment);
/// - `'single-quoted'`: exactly what is between the quotes;
/// - `"double-quoted"`: with `\n`, `\r`, `\t`, `\\` and `\"` escapes.
///
/// Nothing is expanded: `$` is a character like any other (passwords hold them). A value ends
/// on its line. A later line wins over an earlier one for the same name.
pub fn parse_dotenv(text: &str) -> impl Iterator<Item = Entry> + '_ {
    text.lines().enumerate().filter_map(|(i, raw)| {
        let n = i + 1;
        let line = raw.trim_start_matches('\u{feff}').trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let line = line.strip_prefix("export ").map_or(line, str::trim_start);
        let Some((key, rest)) = line.split_once('=') else {
            // Never the text: a line without `=` may be a bare secret.
            return Some(Err((n, "not NAME=value".to_owned())));
        };
        let key = key.trim();
        let name = key.strip_prefix(ENV_PREFIX).unwrap_or(key);
        if let Err(e) = cdp_sanitize::check_secret_name(name) {
            return Some(Err((n, format!("the name is not a variable name: {e}"))));
        }
        Some(
            value(rest.trim())
                .map(|v| (n, name.to_owned(), v))
                .map_err(|why| (n, why)),
        )
    })
}

fn value(rest: &str) -> Result<String, String> {
    let unclosed = |q: char| format!("the value's {q} quote is not closed on its line");
    let after = |tail: &str| {
        let tail = tail.trim_start();
        if tail.is_empty() || tail.starts_with('#') {
            Ok(())
        } else {
            Err("text after the quoted value".to_owned())
        }
    };
    if let Some(body) = rest.strip_prefix('\'') {
        let end = body.find('\'').ok_or_else(|| unclosed('\''))?;
        after(&body[end + 1..])?;
        return Ok(body[..end].to_owned());
    }
    if let Some(body) = rest.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    after(&body[i + 1..])?;
                    return Ok(out);
                }
                '\\' => match chars.next().map(|(_, c)| c) {
                    Some('n') => out.push('\n'),
                    Some('r') => out.push('\r'),
                    Some('t') => out.push('\t'),
                    Some(c @ ('\\' | '"' | '$')) => out.push(c),
                    Some(other) => {
                        out.push('\\');
                        out.push(other);
                    }
                    None => return Err(unclosed('"')),
                },
                c => out.push(c),
            }
        }
        return Err(unclosed('"'));
    }
    let cut = rest.find(" #").or_else(|| rest.find("\t#"));
    Ok(cut.map_or(rest, |i| &rest[..i]).trim_end().to_owned())
}

/// What a string argument says about placeholders.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Placeholder<'a> {
    /// No `${…}` of a name.
    None,
    /// The whole string is `${NAME}` of a valid name.
    Whole(&'a str),
    /// The whole string is `${…}` of something shaped like a name that breaks the rule
    /// (lower case, too long, `TYPED_…`).
    BadName,
    /// `${NAME}` of a valid name inside a longer string.
    Embedded(&'a str),
}

/// Reads `s` for placeholders: `${` then `[A-Za-z_][A-Za-z0-9_]*` then `}`.
pub(crate) fn placeholder(s: &str) -> Placeholder<'_> {
    if let Some(inner) = s.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
        if is_identifier(inner) {
            return match cdp_sanitize::check_secret_name(inner) {
                Ok(()) => Placeholder::Whole(inner),
                Err(_) => Placeholder::BadName,
            };
        }
    }
    match embedded(s).next() {
        Some(name) => Placeholder::Embedded(name),
        None => Placeholder::None,
    }
}

/// Every `${NAME}` of an upper-case name (the rule's characters, `TYPED_` included) in `s`.
pub(crate) fn embedded(s: &str) -> impl Iterator<Item = &str> {
    s.match_indices("${").filter_map(move |(i, _)| {
        let rest = &s[i + 2..];
        let end = rest.find('}')?;
        let name = &rest[..end];
        let upper = name
            .bytes()
            .all(|b| b == b'_' || b.is_ascii_uppercase() || b.is_ascii_digit());
        (is_identifier(name) && upper).then_some(name)
    })
}

fn is_identifier(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c == b'_' || c.is_ascii_alphabetic())
        && b.all(|c| c == b'_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Vec<Entry> {
        parse_dotenv(text).collect()
    }

    #[test]
    fn dotenv_lines_in_each_form() {
        let text = "\u{feff}# sign-in\n\nPASSWORD=pa$$ w0rd # the password\nexport ACCOUNT_ID = 'AC 55&\"x' \nCDP_RELAY_VAR_NOTE=\"line\\none \\\"q\\\" \\\\ $HOME\"\nEMPTY_OK='#not a comment'\nHASH=a#b\n";
        let got: Vec<(usize, String, String)> =
            parsed(text).into_iter().map(Result::unwrap).collect();
        assert_eq!(
            got,
            vec![
                (3, "PASSWORD".into(), "pa$$ w0rd".into()),
                (4, "ACCOUNT_ID".into(), "AC 55&\"x".into()),
                (5, "NOTE".into(), "line\none \"q\" \\ $HOME".into()),
                (6, "EMPTY_OK".into(), "#not a comment".into()),
                (7, "HASH".into(), "a#b".into()),
            ]
        );
    }

    #[test]
    fn dotenv_errors_name_the_line_and_never_its_text() {
        for (text, line, words) in [
            ("OK=1\nHunter2Secret\n", 2, "not NAME=value"),
            ("lower=Sekr1t-Value", 1, "not a variable name"),
            ("TYPED_1=Sekr1t-Value", 1, "not a variable name"),
            ("A='Sekr1t-Value", 1, "not closed"),
            ("A=\"Sekr1t-Value", 1, "not closed"),
            ("A='x' Sekr1t-Value", 1, "text after"),
        ] {
            let errors: Vec<(usize, String)> =
                parsed(text).into_iter().filter_map(Result::err).collect();
            assert_eq!(errors.len(), 1, "{text}");
            assert_eq!(errors[0].0, line, "{text}");
            assert!(errors[0].1.contains(words), "{text}: {}", errors[0].1);
            assert!(!errors[0].1.contains("Sekr1t"), "{}", errors[0].1);
            assert!(!errors[0].1.contains("Hunter2"), "{}", errors[0].1);
        }
    }

    #[test]
    fn a_file_and_the_environment_make_the_variables_the_environment_winning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vars.env");
        std::fs::write(&path, "PASSWORD=from-file-pw\nPIN=1234\nPIN=4321\n").unwrap();
        let file = Variables::read_file(&path).unwrap();
        assert_eq!(file.get("PIN").unwrap().value.expose(), "4321");
        let env = Variables::from_environment([
            ("PATH".into(), "/bin".into()),
            ("CDP_RELAY_VAR_PASSWORD".into(), "from-env-pw".into()),
            ("CDP_RELAY_VARIABLE".into(), "not ours".into()),
        ])
        .unwrap();
        let all = file.merged(env).unwrap();
        assert_eq!(all.names().collect::<Vec<_>>(), ["PASSWORD", "PIN"]);
        let pw = all.get("PASSWORD").unwrap();
        assert_eq!(
            (pw.value.expose(), pw.source),
            ("from-env-pw", VarSource::Environment)
        );
        let debug = format!("{all:?}");
        assert!(
            debug.contains("PASSWORD") && debug.contains("11 chars"),
            "{debug}"
        );
        assert!(
            !debug.contains("from-env") && !debug.contains("4321"),
            "{debug}"
        );
    }

    #[test]
    fn bad_variables_are_refused_without_their_values() {
        let e = Variables::from_environment([("CDP_RELAY_VAR_lower".into(), "Sekr1t".into())])
            .unwrap_err();
        assert!(e.to_string().contains("CDP_RELAY_VAR_lower"), "{e}");
        let e =
            Variables::from_environment([("CDP_RELAY_VAR_EMPTY".into(), "  ".into())]).unwrap_err();
        assert!(e.to_string().contains("EMPTY") && e.to_string().contains("empty"));
        let big = "x".repeat(cdp_sanitize::MAX_SECRET_BYTES + 1);
        let e =
            Variables::from_environment([("CDP_RELAY_VAR_BIG".into(), big.into())]).unwrap_err();
        assert!(!e.to_string().contains("xxxx"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vars.env");
        std::fs::write(&path, "OK=fine\nSekr1t-Only-Line\n").unwrap();
        let e = Variables::read_file(&path).unwrap_err().to_string();
        assert!(e.contains("line 2") && !e.contains("Sekr1t"), "{e}");
        let missing = Variables::read_file(&dir.path().join("nope")).unwrap_err();
        assert!(missing.to_string().contains("cannot read"), "{missing}");
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            let e = Variables::from_environment([(
                "CDP_RELAY_VAR_X".into(),
                OsString::from_vec(vec![0xff, 0xfe]),
            )])
            .unwrap_err();
            assert!(matches!(e, VarError::NotUnicode));
        }
    }

    #[test]
    fn placeholders_whole_bad_and_embedded() {
        assert_eq!(placeholder("${PASSWORD}"), Placeholder::Whole("PASSWORD"));
        assert_eq!(placeholder("${_X1}"), Placeholder::Whole("_X1"));
        assert_eq!(placeholder("${password}"), Placeholder::BadName);
        assert_eq!(placeholder("${TYPED_1}"), Placeholder::BadName);
        assert_eq!(
            placeholder(&format!("${{{}}}", "A".repeat(65))),
            Placeholder::BadName
        );
        assert_eq!(
            placeholder("user ${ACCOUNT}"),
            Placeholder::Embedded("ACCOUNT")
        );
        assert_eq!(placeholder("${A}${B}"), Placeholder::Embedded("A"));
        assert_eq!(placeholder(" ${A}"), Placeholder::Embedded("A"));
        // Not placeholders: a template literal of code, a lone `$`, no name.
        for s in [
            "`${user.name}`",
            "cost $5",
            "${}",
            "${ A }",
            "${a}b",
            "plain",
        ] {
            assert_eq!(placeholder(s), Placeholder::None, "{s}");
        }
    }
}
