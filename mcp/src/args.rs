//! Reducing a tool call's arguments to what the evidence may keep, finding the text the agent
//! types (registered as secrets before the call reaches the browser), and finding arguments
//! that name a path inside the evidence root (refused: only the relay writes there).
//!
//! Each argument is kept by name with its JSON type, plus at most one reduced form of its value,
//! decided from its name (split into words: `submitKey` → `submit key`, `from_uid` → `from
//! uid`) and then its value. The first rule that matches decides:
//!
//! 1. **typed text** — a name with the word `value`, `values`, `text`, `input`, `typed` or
//!    `prompt`, or any string inside such an argument: its length and input type, never the
//!    characters;
//! 2. **secrets** — a name the sanitizer's sensitive-name table calls a secret or the id of one
//!    ([`cdp_sanitize::is_sensitive_name`]: `signingKey`, `X-Signing-Key`, `sessionId`), one with
//!    a secret word of our own (`pin`, `otp`, `token`, …), or any name with the word `key` other
//!    than a key name's (`licenseKey`, `encryptionKey`): the length only;
//! 3. **personal data** — a name with a word such as `user`, `account`, `email`, `phone`,
//!    `address`, `card` (`userName`, `accountId`): the length only, numbers too;
//! 4. **URLs** — a name with `url`, `uri`, `href`, `link`, or a string that parses as an
//!    absolute URL: origin and path (the sanitizer's URL reduction);
//! 5. **key names** — `key`, `keys`, `submitKey`: kept only when the key is named (`Enter`,
//!    `Tab`, `ArrowLeft`, `F5`: the relay's one table of them) or a shortcut (a chord with `Control`,
//!    `Meta` or `Alt`: `Control+A`); any other key types a character (`7`, `K`, `Shift+K`,
//!    `KeyA`, `Digit7`) and is typed text, as in rule 1; likewise `dialogAction` is kept when
//!    it says `accept` or `dismiss`, and is a prompt's answer (typed text) otherwise;
//! 6. **handles** — names whose last word is a handle word (`uid`, `ref`, `target`, `element`,
//!    `selector`, `id`, `name`, `type`, `mode`, `format`, …) and whose other words qualify it
//!    (`from_uid`, `pageId`, `startElement`, `colorScheme`), up to [`MAX_IDENTIFIER_CHARS`]:
//!    the text, sanitized;
//! 7. numbers and booleans as they are; `null` as its type;
//! 8. every other string: its length only;
//! 9. objects and arrays: their size and their first [`MAX_ITEMS`] members, reduced the same
//!    way (array items under their parent's name; members of typed, secret or personal data
//!    stay so), [`MAX_DEPTH`] levels deep.
//!
//! Pure but for [`evidence_path_argument`], which looks at the filesystem (symlinks) and
//! nothing else; nothing is logged.

use cdp_evidence::{JsonType, ToolArgument};
use cdp_sanitize::{InputSummary, InputType, SafeText, Sanitizer};
use serde_json::{Map, Value};
use std::path::{Component, Path, PathBuf};

/// Members or items kept per object or array.
pub const MAX_ITEMS: usize = 16;
/// Levels of nesting reduced (deeper values keep their type and size only).
pub const MAX_DEPTH: usize = 3;
/// Longest identifier kept as text; a longer one is kept as its length.
pub const MAX_IDENTIFIER_CHARS: usize = 200;
/// Arguments kept per call.
pub const MAX_ARGUMENTS: usize = 32;

/// The gateway's own tool whose `name` argument may be the secret itself, passed in the wrong
/// argument: kept only when it is a valid secret name (`tools.rs` answers it).
pub(crate) const REGISTER_SECRET: &str = "evidence_register_secret";

/// Tools whose typed-text arguments reach the page as keystrokes, a filled value or a prompt's
/// answer.
const TYPING_TOOLS: &[&str] = &[
    "fill",
    "fill_form",
    "type_text",
    "press_key",
    "handle_dialog",
    // `dialogAction`: "accept", "dismiss", or the answer to a prompt opened meanwhile.
    "evaluate_script",
    "browser_type",
    "browser_fill_form",
    "browser_press_sequentially",
    "browser_press_key",
    "browser_select_option",
    "browser_handle_dialog",
];

/// Tools that press one key (or chord) per call: a PIN typed key by key is one literal across
/// calls (see [`typed_key`]).
const KEY_TOOLS: &[&str] = &["press_key", "browser_press_key"];

/// Names of keys the relay's table ([`cdp_capture::NAMED_KEYS`]) spells
/// otherwise, as agents write them (compared ignoring case like that table).
const KEY_ALIASES: &[&str] = &["Esc"];

/// Modifier keys: alone or in a chord they type nothing.
const MODIFIERS: &[&str] = &[
    "Shift",
    "ShiftLeft",
    "ShiftRight",
    "Control",
    "ControlLeft",
    "ControlRight",
    "ControlOrMeta",
    "Ctrl",
    "Alt",
    "AltLeft",
    "AltRight",
    "AltGraph",
    "Meta",
    "MetaLeft",
    "MetaRight",
    "Command",
    "Cmd",
];

/// What pressing a key (`press_key {key}`) does.
#[derive(Debug, PartialEq, Eq)]
pub enum KeyPress {
    /// A named key (`Enter`), a modifier, or a chord ending in one (`Control+Shift+ArrowLeft`).
    Named,
    /// A chord with `Control`, `Meta` or `Alt` and a character key (`Control+A`): a shortcut.
    Shortcut,
    /// A character typed (`7`, `Shift+K` → `K`, `KeyA` → `a`, `Digit7` → `7`), or something
    /// that is not a key at all (kept whole: it may be typed text sent to the wrong argument).
    Typed(String),
}

fn is_one_of(set: &[&str], s: &str) -> bool {
    set.iter().any(|k| k.eq_ignore_ascii_case(s))
}

/// What pressing `key` does, as Puppeteer and Playwright read it: `A+B+C` is a chord of
/// modifiers `A`, `B` and the key `C`; a final `+` is the plus key (`Control++`).
pub fn key_press(key: &str) -> KeyPress {
    let (mods, last) = if key == "+" {
        ("", "+")
    } else if let Some(m) = key.strip_suffix("++") {
        (m, "+")
    } else {
        match key.rsplit_once('+') {
            Some((m, last)) => (m, last),
            None => ("", key),
        }
    };
    let mods: Vec<&str> = if mods.is_empty() {
        Vec::new()
    } else {
        mods.split('+').collect()
    };
    if last.is_empty() || mods.iter().any(|m| !is_one_of(MODIFIERS, m)) {
        // Not a key: whatever it is, it is not kept.
        return KeyPress::Typed(key.to_owned());
    }
    if is_one_of(cdp_capture::NAMED_KEYS, last)
        || is_one_of(KEY_ALIASES, last)
        || is_one_of(MODIFIERS, last)
    {
        return KeyPress::Named;
    }
    if mods
        .iter()
        .any(|m| !is_one_of(&["Shift", "ShiftLeft", "ShiftRight", "AltGraph"], m))
    {
        return KeyPress::Shortcut;
    }
    let shift = !mods.is_empty();
    let code = |prefix: &str| {
        last.strip_prefix(prefix)
            .filter(|rest| rest.chars().count() == 1)
    };
    let typed = if let Some(c) = code("Key").filter(|c| c.chars().all(|c| c.is_ascii_alphabetic()))
    {
        if shift {
            c.to_ascii_uppercase()
        } else {
            c.to_ascii_lowercase()
        }
    } else if let Some(d) = code("Digit")
        .or_else(|| code("Numpad"))
        .filter(|d| d.chars().all(|c| c.is_ascii_digit()))
    {
        d.to_owned()
    } else if last.eq_ignore_ascii_case("Space") {
        " ".to_owned()
    } else {
        last.to_owned()
    };
    KeyPress::Typed(typed)
}

/// The kind of value an argument's name announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Typed,
    Secret,
    Personal,
    Url,
    Key,
    /// `dialogAction`: `accept` or `dismiss` are kept; anything else answers a prompt.
    Dialog,
    Identifier,
    Other,
}

/// Splits a name into lowercase words at `_`, `-`, `.`, blanks and lower→upper case changes.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

const TYPED_WORDS: &[&str] = &[
    "value", "values", "text", "texts", "input", "typed", "prompt",
];

/// Secret words of our own, beside the sanitizer's table (which exempts names that only
/// mention a secret, `tokenType`: here those keep their length only too).
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "passcode",
    "secret",
    "secrets",
    "token",
    "tokens",
    "auth",
    "authorization",
    "cookie",
    "cookies",
    "session",
    "otp",
    "pin",
    "credential",
    "credentials",
    "apikey",
    "jwt",
    "bearer",
    "signature",
    "cvv",
    "cvc",
];

/// Words of names that carry personal data.
const PERSONAL_WORDS: &[&str] = &[
    "user",
    "users",
    "username",
    "login",
    "account",
    "accounts",
    "acct",
    "email",
    "emails",
    "mail",
    "phone",
    "mobile",
    "tel",
    "telephone",
    "address",
    "street",
    "zip",
    "postal",
    "postcode",
    "birth",
    "birthday",
    "birthdate",
    "dob",
    "ssn",
    "iban",
    "card",
    "license",
    "licence",
    "passport",
    "customer",
    "member",
    "owner",
    "person",
    "patient",
    "employee",
    "first",
    "last",
    "full",
    "given",
    "family",
    "middle",
    "surname",
    "nickname",
    "tax",
    "national",
    "citizen",
    "contact",
    "billing",
    "shipping",
];

const URL_WORDS: &[&str] = &["url", "urls", "uri", "href", "link", "endpoint", "origin"];

/// Last words of names whose values are handles the evidence may keep (element references and
/// descriptions, page and request ids, enum-like modes and formats).
const HANDLE_WORDS: &[&str] = &[
    "uid",
    "ref",
    "target",
    "element",
    "selector",
    "locator",
    "button",
    "modifier",
    "modifiers",
    "type",
    "types",
    "level",
    "format",
    "part",
    "action",
    "mode",
    "direction",
    "scale",
    "media",
    "scheme",
    "motion",
    "colors",
    "contrast",
    "role",
    "name",
    "tab",
    "kind",
    "method",
    "resource",
    "unload",
    "accept",
    "dialog",
    "id",
    "ids",
    "reqid",
    "msgid",
    "label",
    "device",
    "conditions",
    "position",
    "cursor",
];

/// Words that may qualify a handle word (`from_uid`, `pageId`, `startElement`, `colorScheme`).
const QUALIFIER_WORDS: &[&str] = &[
    "from",
    "to",
    "start",
    "end",
    "page",
    "frame",
    "tab",
    "node",
    "backend",
    "target",
    "request",
    "req",
    "element",
    "msg",
    "message",
    "service",
    "worker",
    "insight",
    "set",
    "snapshot",
    "handle",
    "before",
    "network",
    "color",
    "forced",
    "prefers",
    "reduced",
    "dialog",
    "accessible",
    "resource",
    "browser",
    "context",
    "click",
    "mouse",
    "console",
    "log",
    "emulated",
    "screenshot",
    "image",
    "file",
];

/// Names of key arguments (rule 5).
fn is_key_name(w: &[String]) -> bool {
    matches!(
        w.iter().map(String::as_str).collect::<Vec<_>>().as_slice(),
        ["key"] | ["keys"] | ["submit", "key"]
    )
}

fn classify(name: &str) -> Class {
    let w = words(name);
    let has = |set: &[&str]| w.iter().any(|x| set.contains(&x.as_str()));
    if has(TYPED_WORDS) {
        return Class::Typed;
    }
    if is_key_name(&w) {
        return Class::Key;
    }
    if has(&["dialog"]) && w.last().is_some_and(|l| l == "action") {
        return Class::Dialog;
    }
    // A sensitive name is never a handle, whatever other word it has.
    if cdp_sanitize::is_sensitive_name(name) || has(SECRET_WORDS) || has(&["key", "keys"]) {
        return Class::Secret;
    }
    if has(PERSONAL_WORDS) {
        return Class::Personal;
    }
    if has(URL_WORDS) {
        return Class::Url;
    }
    let handle = w.split_last().is_some_and(|(last, rest)| {
        HANDLE_WORDS.contains(&last.as_str())
            && rest.iter().all(|q| {
                QUALIFIER_WORDS.contains(&q.as_str()) || HANDLE_WORDS.contains(&q.as_str())
            })
    });
    if handle {
        Class::Identifier
    } else {
        Class::Other
    }
}

/// True for strings that parse as an absolute URL of a scheme the browser loads.
fn looks_like_url(s: &str) -> bool {
    let s = s.trim();
    [
        "http://",
        "https://",
        "ws://",
        "wss://",
        "file://",
        "about:",
        "data:",
        "chrome://",
    ]
    .iter()
    .any(|p| {
        s.len() > p.len() && s.is_char_boundary(p.len()) && s[..p.len()].eq_ignore_ascii_case(p)
    })
}

/// True for tools whose typed-text arguments are typed into the page.
pub fn is_typing_tool(tool: &str) -> bool {
    TYPING_TOOLS.contains(&tool)
}

/// The text the agent types in this call: every string under a typed-text name of a typing
/// tool, except checkbox and radio toggles (`"true"`, `"false"`, or a field whose `type` says
/// so), and what a character key types. These are registered with the run's sanitizer before
/// the call is forwarded.
pub fn typed_literals(tool: &str, args: Option<&Map<String, Value>>) -> Vec<String> {
    let mut out = Vec::new();
    if !is_typing_tool(tool) {
        return out;
    }
    if let Some(args) = args {
        collect_typed(args, false, &mut out);
    }
    out
}

fn collect_typed(obj: &Map<String, Value>, typed: bool, out: &mut Vec<String>) {
    // Playwright's form fields say what they are: a checkbox's value is not typed text.
    let toggle = obj
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| matches!(t, "checkbox" | "radio" | "switch" | "slider"));
    for (name, value) in obj {
        let class = classify(name);
        if !typed && class == Class::Key {
            collect_keys(value, out);
            continue;
        }
        if let (false, Class::Dialog, Some(answer)) = (typed, class, value.as_str()) {
            if !is_dialog_choice(answer) {
                out.push(answer.to_owned());
            }
            continue;
        }
        let typed_here = typed || class == Class::Typed;
        collect_value(value, typed_here && !toggle, out);
    }
}

fn collect_keys(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            if let KeyPress::Typed(t) = key_press(s) {
                out.push(t);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_keys(v, out)),
        _ => {}
    }
}

fn collect_value(value: &Value, typed: bool, out: &mut Vec<String>) {
    match value {
        Value::String(s) if typed && !matches!(s.as_str(), "true" | "false") => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_value(v, typed, out)),
        Value::Object(m) => collect_typed(m, typed, out),
        _ => {}
    }
}

/// `accept` and `dismiss`: what a dialog action says when it is not a prompt's answer.
fn is_dialog_choice(s: &str) -> bool {
    s.eq_ignore_ascii_case("accept") || s.eq_ignore_ascii_case("dismiss")
}

/// Tools that only read the page: between short typing calls they leave the group of them
/// open (an agent looks at the page to find the next box) — see [`short_typing`].
const READ_ONLY_TOOLS: &[&str] = &[
    "take_snapshot",
    "take_screenshot",
    "list_console_messages",
    "get_console_message",
    "list_network_requests",
    "get_network_request",
    "list_pages",
    "get_tab_id",
    "wait_for",
    "browser_snapshot",
    "browser_take_screenshot",
    "browser_console_messages",
    "browser_network_requests",
    "browser_network_request",
    "browser_wait_for",
    "browser_find",
    "browser_generate_locator",
    "browser_verify_element_visible",
    "browser_verify_text_visible",
    "browser_verify_list_visible",
    "browser_verify_value",
    "browser_highlight",
    "browser_hide_highlight",
];

/// What a call does to a group of short typing calls (a one-time code filled one box per call):
/// the rule the gateway grows one literal by, across calls (docs/security.md).
#[derive(Debug, PartialEq, Eq)]
pub enum ShortTyping {
    /// It types only short text (each piece under [`cdp_sanitize::MIN_TYPED_CHARS`]
    /// non-whitespace characters): a character key, one box's `fill`, a `fill_form` of boxes.
    /// The pieces, in order, grow the group's literal.
    Types(Vec<String>),
    /// It only reads the page, or moves focus on with `Tab`: the group stays open.
    Keeps,
    /// Anything else (typing four characters or more, a click, a navigation, a named key,
    /// an evaluation): the group ends.
    Ends,
}

/// What the call of `tool` with `args` does to a group of short typing calls. The gateway's
/// own tools are left to the caller (they touch no page).
pub fn short_typing(tool: &str, args: Option<&Map<String, Value>>) -> ShortTyping {
    if let Some(key) = typed_key(tool, args) {
        return ShortTyping::Types(vec![key]);
    }
    let literals = typed_literals(tool, args);
    let short = |t: &String| {
        t.chars().filter(|c| !c.is_whitespace()).count() < cdp_sanitize::MIN_TYPED_CHARS
    };
    if !literals.is_empty() && literals.iter().all(short) {
        return ShortTyping::Types(literals);
    }
    let tab = KEY_TOOLS.contains(&tool)
        && args
            .and_then(|a| a.get("key"))
            .and_then(Value::as_str)
            .is_some_and(|k| matches!(k, "Tab" | "Shift+Tab"));
    if literals.is_empty() && (READ_ONLY_TOOLS.contains(&tool) || tab) {
        return ShortTyping::Keeps;
    }
    ShortTyping::Ends
}

/// What a key-pressing call (`press_key`, `browser_press_key`) types, if it types a character:
/// the next piece of a literal typed key by key, which the caller keeps growing across calls.
/// `None` for named keys, shortcuts and every other tool.
pub fn typed_key(tool: &str, args: Option<&Map<String, Value>>) -> Option<String> {
    if !KEY_TOOLS.contains(&tool) {
        return None;
    }
    match key_press(args?.get("key")?.as_str()?) {
        KeyPress::Typed(t) => Some(t),
        KeyPress::Named | KeyPress::Shortcut => None,
    }
}

/// The reduced arguments of a call of `tool` (see the module docs), at most [`MAX_ARGUMENTS`].
pub fn reduce(
    sanitizer: &Sanitizer,
    tool: &str,
    args: Option<&Map<String, Value>>,
) -> Vec<ToolArgument> {
    let Some(args) = args else {
        return Vec::new();
    };
    args.iter()
        .take(MAX_ARGUMENTS)
        .map(|(name, value)| {
            let class = if tool == REGISTER_SECRET && name == "name" {
                // The gateway's own tool: a name that is not a valid secret name may be the
                // secret, passed in the wrong argument.
                match value.as_str().map(cdp_sanitize::check_secret_name) {
                    Some(Ok(())) => Class::Identifier,
                    _ => Class::Secret,
                }
            } else {
                classify(name)
            };
            reduce_one(sanitizer, name, class, value, 0)
        })
        .collect()
}

fn name_text(sanitizer: &Sanitizer, name: &str) -> SafeText {
    sanitizer.text_capped(name, 64)
}

fn reduce_one(
    sanitizer: &Sanitizer,
    name: &str,
    class: Class,
    value: &Value,
    depth: usize,
) -> ToolArgument {
    let mut arg = ToolArgument::new(name_text(sanitizer, name), JsonType::of(value));
    match value {
        Value::Null => {}
        Value::Bool(_) => arg.value = Some(sanitizer.json(value)),
        Value::Number(n) => match class {
            // A code typed as a number is still typed text.
            Class::Typed | Class::Key | Class::Dialog | Class::Secret => {
                arg.input = Some(InputSummary::of(&n.to_string(), InputType::Unknown))
            }
            Class::Personal => arg.chars = Some(n.to_string().len() as u64),
            _ => arg.value = Some(sanitizer.json(value)),
        },
        Value::String(s) => match class {
            Class::Typed => arg.input = Some(InputSummary::of(s, InputType::Unknown)),
            Class::Key => match key_press(s) {
                KeyPress::Typed(t) => arg.input = Some(InputSummary::of(&t, InputType::Unknown)),
                KeyPress::Named | KeyPress::Shortcut => {
                    arg.value = Some(sanitizer.json(&Value::String(s.clone())))
                }
            },
            Class::Dialog if !is_dialog_choice(s) => {
                arg.input = Some(InputSummary::of(s, InputType::Unknown))
            }
            Class::Secret | Class::Personal => arg.chars = Some(s.chars().count() as u64),
            Class::Url => arg.url = Some(sanitizer.url(s)),
            _ if looks_like_url(s) => arg.url = Some(sanitizer.url(s)),
            Class::Identifier | Class::Dialog if s.chars().count() <= MAX_IDENTIFIER_CHARS => {
                arg.value = Some(sanitizer.json(&Value::String(s.clone())))
            }
            Class::Identifier | Class::Dialog | Class::Other => {
                arg.chars = Some(s.chars().count() as u64)
            }
        },
        Value::Array(items) => {
            arg.count = Some(items.len() as u64);
            if depth < MAX_DEPTH {
                let reduced = items
                    .iter()
                    .take(MAX_ITEMS)
                    .enumerate()
                    .map(|(i, v)| {
                        let mut item = reduce_one(sanitizer, name, class, v, depth + 1);
                        item.name = sanitizer.text(&i.to_string());
                        item
                    })
                    .collect();
                arg.items = Some(reduced);
            }
        }
        Value::Object(members) => {
            arg.count = Some(members.len() as u64);
            if depth < MAX_DEPTH {
                let reduced = members
                    .iter()
                    .take(MAX_ITEMS)
                    .map(|(k, v)| {
                        // Inside typed text everything is typed text; a secret stays secret.
                        let inner = match class {
                            Class::Typed | Class::Secret | Class::Personal => class,
                            _ => classify(k),
                        };
                        reduce_one(sanitizer, k, inner, v, depth + 1)
                    })
                    .collect();
                arg.items = Some(reduced);
            }
        }
    }
    arg
}

/// True when a string under argument `name` is typed into the page — rule 1's typed-text
/// names, rule 5's key names, a dialog's answer: where the gateway resolves a `${NAME}`
/// variable (`inputs.rs`).
pub(crate) fn types_text(name: &str) -> bool {
    matches!(classify(name), Class::Typed | Class::Key | Class::Dialog)
}

/// True for rule 1's typed-text names (`value`, `text`, `promptText`, …): the text a `recordAs`
/// name stands for (`record_as.rs`).
pub(crate) fn is_text_name(name: &str) -> bool {
    classify(name) == Class::Typed
}

/// Strings looked at per call for paths: more than this and the call is refused (a call
/// cannot hide a path behind thousands of decoys).
pub const MAX_PATH_CANDIDATES: usize = 1024;

/// Why a call's arguments are refused: they name a path inside the evidence root.
#[derive(Debug, PartialEq, Eq)]
pub enum PathRefusal {
    /// The argument (its name) names a path inside the root.
    Inside(String),
    /// Too many path-like strings to check.
    TooMany,
}

/// Words of argument names whose relative values are file names.
const PATH_WORDS: &[&str] = &[
    "path",
    "paths",
    "file",
    "files",
    "filename",
    "filenames",
    "dir",
    "dirs",
    "directory",
    "folder",
    "output",
    "dest",
    "destination",
];

/// The first argument of a call that names a path inside the evidence root `root`: a string
/// that contains the root's path; an absolute path or a `file:` URL anywhere; a relative path
/// under a path-like name (`filePath`, `filename`, `outputDirPath`) taken against `cwd` (the
/// gateway's, which the wrapped server inherits). A path is resolved twice, as the operating
/// system would (symlinks followed where they exist, `..` after them) and as Node's
/// `path.resolve` would (`..` first, then symlinks), and compared ignoring case.
pub fn evidence_path_argument(
    args: Option<&Map<String, Value>>,
    root: &Path,
    cwd: &Path,
) -> Option<PathRefusal> {
    let args = args?;
    let root_abs = if root.is_absolute() {
        root.to_path_buf()
    } else {
        cwd.join(root)
    };
    let roots: Vec<String> = [lexical(&root_abs), resolve(&root_abs)]
        .iter()
        .map(|p| folded(p))
        .collect();
    let mut seen = 0;
    for (name, value) in args {
        let pathy = words(name).iter().any(|w| PATH_WORDS.contains(&w.as_str()));
        if let Some(r) = find_path(value, pathy, &roots, cwd, &mut seen, 0) {
            return Some(match r {
                Found::Inside => PathRefusal::Inside(name.clone()),
                Found::TooMany => PathRefusal::TooMany,
            });
        }
    }
    None
}

enum Found {
    Inside,
    TooMany,
}

fn find_path(
    value: &Value,
    pathy: bool,
    roots: &[String],
    cwd: &Path,
    seen: &mut usize,
    depth: usize,
) -> Option<Found> {
    match value {
        Value::String(s) => {
            *seen += 1;
            if *seen > MAX_PATH_CANDIDATES {
                return Some(Found::TooMany);
            }
            names_inside(s, pathy, roots, cwd).then_some(Found::Inside)
        }
        // Deeper than any tool's schema goes: refused rather than walked.
        _ if depth > 16 => Some(Found::TooMany),
        Value::Array(items) => items
            .iter()
            .find_map(|v| find_path(v, pathy, roots, cwd, seen, depth + 1)),
        Value::Object(m) => m.iter().find_map(|(k, v)| {
            let pathy = words(k).iter().any(|w| PATH_WORDS.contains(&w.as_str()));
            find_path(v, pathy, roots, cwd, seen, depth + 1)
        }),
        _ => None,
    }
}

/// Longest string looked at as a path (longer ones are only searched for the root's path).
const MAX_PATH_BYTES: usize = 4096;

fn names_inside(s: &str, pathy: bool, roots: &[String], cwd: &Path) -> bool {
    let text = s.to_lowercase();
    // Code, a script or a template that spells the root out (`page.screenshot({path: …})`).
    if roots.iter().any(|r| r.len() > 1 && spells_out(&text, r)) {
        return true;
    }
    let s = s.trim();
    if s.is_empty() || s.len() > MAX_PATH_BYTES {
        return false;
    }
    let path = if s.len() > 5 && s.is_char_boundary(5) && s[..5].eq_ignore_ascii_case("file:") {
        match url::Url::parse(s).ok().and_then(|u| u.to_file_path().ok()) {
            Some(p) => p,
            // `file:` that does not parse as a local file: its raw path, decoded.
            None => PathBuf::from(
                percent_decode(s[5..].trim_start_matches('/'))
                    .map_or_else(String::new, |p| format!("/{p}")),
            ),
        }
    } else if s.starts_with('/') {
        PathBuf::from(s)
    } else if pathy && !s.contains("://") {
        cwd.join(s)
    } else {
        return false;
    };
    let path = if path.is_absolute() {
        path
    } else {
        cwd.join(path)
    };
    [resolve(&path), resolve(&lexical(&path))].iter().any(|p| {
        let p = folded(p);
        roots.iter().any(|r| {
            p == *r
                || p.strip_prefix(r.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    })
}

/// True when `text` holds `root` as a whole path (followed by `/`, its end, or a character no
/// file name of the root's would continue with: `'`, `"`, a blank…), not as the start of a
/// sibling's name (`evidence-other`).
fn spells_out(text: &str, root: &str) -> bool {
    text.match_indices(root).any(|(at, _)| {
        text[at + root.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '.' | '-' | '_')))
    })
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A path as text for comparing: lower case, no trailing `/`.
fn folded(p: &Path) -> String {
    let s = p.to_string_lossy().to_lowercase();
    match s.trim_end_matches('/') {
        "" => "/".to_owned(),
        t => t.to_owned(),
    }
}

/// `..` and `.` removed without looking at the filesystem (what Node's `path.resolve` does).
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The path the operating system would open: each existing symlink replaced by its target as
/// it is met (so a later `..` leaves the target, not the link), the rest taken as written.
fn resolve(p: &Path) -> PathBuf {
    let mut pending: std::collections::VecDeque<std::ffi::OsString> =
        std::collections::VecDeque::new();
    let mut out = PathBuf::from("/");
    let push =
        |pending: &mut std::collections::VecDeque<std::ffi::OsString>, p: &Path, front: bool| {
            let comps: Vec<std::ffi::OsString> = p
                .components()
                .filter_map(|c| match c {
                    Component::ParentDir => Some("..".into()),
                    Component::Normal(n) => Some(n.to_os_string()),
                    _ => None,
                })
                .collect();
            if front {
                for c in comps.into_iter().rev() {
                    pending.push_front(c);
                }
            } else {
                pending.extend(comps);
            }
        };
    push(&mut pending, p, false);
    let mut hops = 0;
    while let Some(c) = pending.pop_front() {
        if c == ".." {
            out.pop();
            continue;
        }
        out.push(&c);
        if hops < 40 {
            if let Ok(target) = std::fs::read_link(&out) {
                hops += 1;
                out.pop();
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                push(&mut pending, &target, true);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    fn reduced(args: Value) -> Value {
        reduced_for("some_tool", args)
    }

    fn reduced_for(tool: &str, args: Value) -> Value {
        let s = Sanitizer::new();
        serde_json::to_value(reduce(&s, tool, Some(&obj(args)))).unwrap()
    }

    #[test]
    fn character_keys_are_typed_text_named_keys_and_shortcuts_are_kept() {
        for named in [
            "Enter",
            "enter",
            "Tab",
            "ArrowLeft",
            "F5",
            "Escape",
            "Backspace",
            "Shift",
            "Control+Shift+ArrowLeft",
            "Shift+Tab",
            "Control",
        ] {
            assert_eq!(key_press(named), KeyPress::Named, "{named}");
        }
        for shortcut in [
            "Control+A",
            "Control+Shift+K",
            "Meta+c",
            "Alt+7",
            "Control++",
        ] {
            assert_eq!(key_press(shortcut), KeyPress::Shortcut, "{shortcut}");
        }
        for (key, typed) in [
            ("7", "7"),
            ("K", "K"),
            ("q", "q"),
            ("Shift+K", "K"),
            ("KeyA", "a"),
            ("Shift+KeyA", "A"),
            ("Digit7", "7"),
            ("Numpad4", "4"),
            ("Space", " "),
            ("+", "+"),
            ("Shift++", "+"),
            ("AltGraph+q", "q"),
            ("hunter2", "hunter2"),
            ("Foo+7", "Foo+7"),
            ("Control+", "Control+"),
        ] {
            assert_eq!(key_press(key), KeyPress::Typed(typed.into()), "{key}");
        }
        // The record: a named key or a shortcut as it is, a character key as typed text.
        for (tool, key) in [
            ("press_key", "7"),
            ("browser_press_key", "K"),
            ("press_key", "Shift+K"),
        ] {
            let v = reduced_for(tool, json!({"key": key}));
            assert_eq!(
                v[0],
                json!({"name": "key", "type": "string", "input": {"chars": 1, "inputType": "unknown"}}),
                "{tool} {key}"
            );
        }
        assert_eq!(
            reduced_for("press_key", json!({"key": "Enter"}))[0]["value"],
            "Enter"
        );
        assert_eq!(
            reduced_for("browser_press_key", json!({"key": "Control+A"}))[0]["value"],
            "Control+A"
        );
        assert_eq!(
            reduced_for("type_text", json!({"text": "x", "submitKey": "Enter"}))[1]["value"],
            "Enter"
        );
        assert!(reduced_for("press_key", json!({"key": 7}))[0]["input"].is_object());
        // What a character key types is the next piece of a literal typed key by key.
        let k = |v: Value| obj(json!({"key": v}));
        assert_eq!(
            typed_key("press_key", Some(&k(json!("7")))).as_deref(),
            Some("7")
        );
        assert_eq!(
            typed_key("browser_press_key", Some(&k(json!("Shift+K")))).as_deref(),
            Some("K")
        );
        assert_eq!(typed_key("press_key", Some(&k(json!("Tab")))), None);
        assert_eq!(typed_key("press_key", Some(&k(json!("Control+A")))), None);
        assert_eq!(typed_key("click", Some(&k(json!("7")))), None);
        assert_eq!(
            typed_literals("press_key", Some(&k(json!("hunter2")))),
            vec!["hunter2"]
        );
        assert!(typed_literals("press_key", Some(&k(json!("Enter")))).is_empty());
    }

    #[test]
    fn short_typing_calls_grow_one_group_and_other_calls_end_it() {
        let k = |v: Value| obj(json!({ "key": v }));
        let types =
            |pieces: &[&str]| ShortTyping::Types(pieces.iter().map(|p| p.to_string()).collect());
        assert_eq!(
            short_typing("press_key", Some(&k(json!("7")))),
            types(&["7"])
        );
        assert_eq!(
            short_typing("fill", Some(&obj(json!({"uid": "1_4", "value": "5"})))),
            types(&["5"])
        );
        let boxes = obj(json!({"elements": [
            {"uid": "1_4", "value": "7"}, {"uid": "1_5", "value": "5"}, {"uid": "1_6", "value": " 7 "}
        ]}));
        assert_eq!(
            short_typing("fill_form", Some(&boxes)),
            types(&["7", "5", " 7 "])
        );
        let pw = obj(json!({"element": "Digit 2", "target": "e12", "text": "57"}));
        assert_eq!(short_typing("browser_type", Some(&pw)), types(&["57"]));
        // Four characters or more are protected on their own: the group ends.
        let long = obj(json!({"uid": "1_4", "value": "7575"}));
        assert_eq!(short_typing("fill", Some(&long)), ShortTyping::Ends);
        let mixed =
            obj(json!({"elements": [{"uid": "1", "value": "7"}, {"uid": "2", "value": "Berlin"}]}));
        assert_eq!(short_typing("fill_form", Some(&mixed)), ShortTyping::Ends);
        // Looking at the page, or Tab to the next box, keeps it open.
        assert_eq!(short_typing("take_snapshot", None), ShortTyping::Keeps);
        assert_eq!(short_typing("browser_snapshot", None), ShortTyping::Keeps);
        assert_eq!(
            short_typing("press_key", Some(&k(json!("Tab")))),
            ShortTyping::Keeps
        );
        // Acting on the page ends it.
        for (tool, args) in [
            ("click", json!({"uid": "1_2"})),
            ("navigate_page", json!({"url": "https://a.example/"})),
            ("press_key", json!({"key": "Enter"})),
            ("press_key", json!({"key": "Backspace"})),
            ("evaluate_script", json!({"function": "() => 1"})),
            ("fill", json!({"uid": "1_3", "value": "true"})),
        ] {
            assert_eq!(
                short_typing(tool, Some(&obj(args))),
                ShortTyping::Ends,
                "{tool}"
            );
        }
    }

    #[test]
    fn a_prompt_answer_is_typed_text() {
        let args = obj(json!({"action": "accept", "promptText": "Pl4nted-Answer"}));
        assert_eq!(
            typed_literals("handle_dialog", Some(&args)),
            vec!["Pl4nted-Answer"]
        );
        let pw = obj(json!({"accept": true, "promptText": "Pl4nted-Answer"}));
        assert_eq!(
            typed_literals("browser_handle_dialog", Some(&pw)),
            vec!["Pl4nted-Answer"]
        );
        let v = reduced_for("handle_dialog", Value::Object(args));
        assert_eq!(v[0]["value"], "accept");
        assert_eq!(v[1]["input"], json!({"chars": 14, "inputType": "unknown"}));
        assert!(!v.to_string().contains("Pl4nted"));
        // chrome-devtools-mcp's `evaluate_script {dialogAction}` answers a prompt the script
        // opens with any string that is not `accept` or `dismiss`.
        let script =
            obj(json!({"function": "() => prompt('x')", "dialogAction": "Pl4nted-Answer"}));
        assert_eq!(
            typed_literals("evaluate_script", Some(&script)),
            vec!["Pl4nted-Answer"]
        );
        let v = reduced_for("evaluate_script", Value::Object(script));
        assert_eq!(v[1]["input"]["chars"], 14);
        assert!(!v.to_string().contains("Pl4nted"));
        let accept = obj(json!({"function": "() => 1", "dialogAction": "dismiss"}));
        assert!(typed_literals("evaluate_script", Some(&accept)).is_empty());
        assert_eq!(
            reduced_for("evaluate_script", Value::Object(accept))[1]["value"],
            "dismiss"
        );
    }

    #[test]
    fn sensitive_and_personal_names_are_never_handles() {
        let v = reduced(json!({
            "licenseKey": "LIC-PLANTED-0001",
            "encryptionKey": "enc-planted-0002",
            "signingKey": "sig-planted-0003",
            "headers": {"X-Signing-Key": "hdr-planted-0004", "Accept": "text/html"},
            "userName": "ada-planted-0005",
            "accountId": "acct-planted-0006",
            "customerId": 4242424242u64,
            "email": "ada@planted.test",
            "primaryKey": "pk-planted-0007",
            "sessionId": "sess-planted-0008",
            "tokenType": "tt-planted-0009",
            "uid": "1_5",
            "pageId": 3,
            "from_uid": "1_7",
            "startElement": "Sign in button",
            "colorScheme": "dark",
            "accessibleName": "Sign in",
            "someOtherThing": "other-planted-0010"
        }));
        let text = v.to_string();
        for planted in [
            "LIC-PLANTED",
            "enc-planted",
            "sig-planted",
            "hdr-planted",
            "ada-planted",
            "acct-planted",
            "4242424242",
            "ada@planted",
            "pk-planted",
            "sess-planted",
            "tt-planted",
            "other-planted",
        ] {
            assert!(!text.contains(planted), "{planted} in {text}");
        }
        let by = |name: &str| {
            v.as_array()
                .unwrap()
                .iter()
                .find(|a| a["name"] == name)
                .cloned()
                .unwrap_or_else(|| panic!("{name}"))
        };
        assert_eq!(by("licenseKey")["chars"], 16);
        assert_eq!(by("customerId")["chars"], 10);
        assert_eq!(by("headers")["items"][0]["chars"], 16);
        assert_eq!(by("uid")["value"], "1_5");
        assert_eq!(by("pageId")["value"], 3);
        assert_eq!(by("from_uid")["value"], "1_7");
        assert_eq!(by("startElement")["value"], "Sign in button");
        assert_eq!(by("colorScheme")["value"], "dark");
        assert_eq!(by("accessibleName")["value"], "Sign in");
    }

    #[test]
    fn the_secret_tools_name_is_kept_only_when_it_is_a_valid_name() {
        let ok = reduced_for(
            REGISTER_SECRET,
            json!({"name": "ACCOUNT_PASSWORD", "value": "hunter2hunter2"}),
        );
        assert_eq!(ok[0]["value"], "ACCOUNT_PASSWORD");
        assert_eq!(ok[1]["input"]["chars"], 14);
        // Swapped: the secret passed as the name.
        let swapped = reduced_for(
            REGISTER_SECRET,
            json!({"name": "Sw4pped-Secret!", "value": "ACCOUNT_PASSWORD"}),
        );
        assert_eq!(
            swapped[0],
            json!({"name": "name", "type": "string", "chars": 15})
        );
        assert!(!swapped.to_string().contains("Sw4pped"), "{swapped}");
        for reserved in ["TYPED_1", &"N".repeat(65)] {
            let v = reduced_for(REGISTER_SECRET, json!({"name": reserved}));
            assert!(v[0].get("value").is_none(), "{v}");
        }
    }

    #[test]
    fn paths_into_the_evidence_root_are_found_however_they_are_spelled() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("evidence");
        let run = root.join("runs/20260101T000000000Z-0001");
        std::fs::create_dir_all(run.join("artifacts")).unwrap();
        let outside = base.join("work");
        std::fs::create_dir_all(outside.join("sub")).unwrap();
        std::os::unix::fs::symlink(&root, outside.join("link")).unwrap();
        std::os::unix::fs::symlink(run.join("new.txt"), outside.join("dangling")).unwrap();
        let r = root.display().to_string();
        let o = outside.display().to_string();
        let check = |args: Value| evidence_path_argument(Some(&obj(args)), &root, &outside);
        let inside = |name: &str| Some(PathRefusal::Inside(name.to_owned()));
        for (args, name) in [
            (
                json!({"filePath": format!("{r}/runs/x/notes.txt")}),
                "filePath",
            ),
            (
                json!({"filePath": format!("{r}/runs/20260101T000000000Z-0001/artifacts/000777-frame.png")}),
                "filePath",
            ),
            (
                json!({"filePath": format!("{o}/sub/../../evidence/x")}),
                "filePath",
            ),
            (json!({"filePath": "../evidence/runs/x"}), "filePath"),
            (json!({"filename": "link/runs/x.png"}), "filename"),
            (json!({"filename": "sub/../link/x.png"}), "filename"),
            (json!({"filePath": format!("{o}/dangling")}), "filePath"),
            (json!({"filePath": r.to_uppercase()}), "filePath"),
            (json!({"url": format!("file://{r}/runs/x")}), "url"),
            (
                json!({"url": format!("file://{}/runs/x", r.replace('/', "%2F").replacen("%2F", "/", 1))}),
                "url",
            ),
            (
                json!({"filePaths": ["/tmp/ok.txt", format!("{r}/x")]}),
                "filePaths",
            ),
            (
                json!({"function": format!("async (page) => page.screenshot({{path: '{r}/x.png'}})")}),
                "function",
            ),
            (json!({"options": {"outputDirPath": "link"}}), "options"),
            (json!({"filePath": r.clone()}), "filePath"),
        ] {
            assert_eq!(check(args.clone()), inside(name), "{args}");
        }
        for args in [
            json!({"filePath": format!("{o}/notes.txt")}),
            json!({"filePath": "notes.txt"}),
            json!({"filePath": format!("{r}-other/x")}),
            json!({"text": "link/runs/x"}),
            json!({"url": "https://example.test/evidence/runs"}),
            json!({"uid": "1_5", "includeSnapshot": true}),
        ] {
            assert_eq!(check(args.clone()), None, "{args}");
        }
        let decoys: Vec<String> = (0..=MAX_PATH_CANDIDATES)
            .map(|i| format!("/tmp/{i}"))
            .collect();
        assert_eq!(check(json!({"paths": decoys})), Some(PathRefusal::TooMany));
    }

    #[test]
    fn names_split_into_words() {
        assert_eq!(words("submitKey"), ["submit", "key"]);
        assert_eq!(words("from_uid"), ["from", "uid"]);
        assert_eq!(words("textGone"), ["text", "gone"]);
        assert_eq!(words("X-API-Key"), ["x", "api", "key"]);
        assert_eq!(classify("apiKey"), Class::Secret);
        assert_eq!(classify("key"), Class::Key);
        assert_eq!(classify("submitKey"), Class::Key);
        assert_eq!(classify("licenseKey"), Class::Secret);
        assert_eq!(classify("userName"), Class::Personal);
        assert_eq!(classify("promptText"), Class::Typed);
        assert_eq!(classify("pageUrl"), Class::Url);
        assert_eq!(classify("function"), Class::Other);
    }

    #[test]
    fn chrome_devtools_mcp_calls_reduce_to_names_types_and_lengths() {
        let v = reduced(json!({
            "elements": [
                {"uid": "1_5", "value": "ada@example.test"},
                {"uid": "1_7", "value": "S3cret-Passw0rd!"}
            ],
            "includeSnapshot": false
        }));
        assert_eq!(
            v,
            json!([
                {"name": "elements", "type": "array", "count": 2, "items": [
                    {"name": "0", "type": "object", "count": 2, "items": [
                        {"name": "uid", "type": "string", "value": "1_5"},
                        {"name": "value", "type": "string", "input": {"chars": 16, "inputType": "unknown"}}
                    ]},
                    {"name": "1", "type": "object", "count": 2, "items": [
                        {"name": "uid", "type": "string", "value": "1_7"},
                        {"name": "value", "type": "string", "input": {"chars": 16, "inputType": "unknown"}}
                    ]}
                ]},
                {"name": "includeSnapshot", "type": "boolean", "value": false}
            ])
        );
        let v = reduced(json!({
            "url": "https://shop.test/login?token=abc#x",
            "type": "url",
            "timeout": 5000,
            "initScript": "window.secret = 'x'"
        }));
        assert_eq!(v[0]["url"], "https://shop.test/login");
        assert_eq!(v[1]["value"], "url");
        assert_eq!(v[2]["value"], 5000);
        assert_eq!(
            v[3],
            json!({"name": "initScript", "type": "string", "chars": 19})
        );
        let v = reduced(json!({"function": "() => document.cookie", "key": "Control+A"}));
        assert_eq!(
            v[0],
            json!({"name": "function", "type": "string", "chars": 21})
        );
        assert_eq!(v[1]["value"], "Control+A");
    }

    #[test]
    fn playwright_mcp_calls_reduce_the_same_way() {
        let v = reduced(json!({
            "fields": [{"name": "Password", "type": "textbox", "ref": "e12", "value": "hunter2hunter2"}],
            "element": "Sign in button",
            "target": "e14",
            "text": "typed words",
            "modifiers": ["Shift"],
            "paths": ["/home/ada/passport.pdf"]
        }));
        let field = &v[0]["items"][0]["items"];
        assert_eq!(field[0]["value"], "Password");
        assert_eq!(field[1]["value"], "textbox");
        assert_eq!(field[2]["value"], "e12");
        assert_eq!(
            field[3]["input"],
            json!({"chars": 14, "inputType": "unknown"})
        );
        assert_eq!(v[1]["value"], "Sign in button");
        assert_eq!(v[2]["value"], "e14");
        assert_eq!(v[3]["input"]["chars"], 11);
        assert_eq!(v[4]["items"][0]["value"], "Shift");
        assert_eq!(
            v[5]["items"][0],
            json!({"name": "0", "type": "string", "chars": 22})
        );
    }

    #[test]
    fn secrets_numbers_and_depth() {
        let v = reduced(json!({
            "password": "pw-123456",
            "apiKey": "sk-abc",
            "otp": 482913,
            "value": 123456,
            "deep": {"a": {"b": {"c": {"d": "x"}}}},
            "nothing": null
        }));
        assert_eq!(
            v[0],
            json!({"name": "password", "type": "string", "chars": 9})
        );
        assert_eq!(v[1]["chars"], 6);
        assert_eq!(
            v[2]["input"]["chars"], 6,
            "a code typed as a number is not kept"
        );
        assert_eq!(v[3]["input"]["chars"], 6);
        assert!(v[4]["items"][0]["items"][0]["items"][0]
            .get("items")
            .is_none());
        assert_eq!(v[4]["items"][0]["items"][0]["items"][0]["count"], 1);
        assert_eq!(v[5], json!({"name": "nothing", "type": "null"}));
        let text = v.to_string();
        for planted in ["pw-123456", "sk-abc", "482913", "123456"] {
            assert!(!text.contains(planted), "{planted} in {text}");
        }
    }

    #[test]
    fn registered_literals_mask_identifiers_that_repeat_them() {
        let s = Sanitizer::new();
        s.register_typed("S3cret-Passw0rd!");
        let v = serde_json::to_value(reduce(
            &s,
            "click",
            Some(&obj(json!({"selector": "input[value=S3cret-Passw0rd!]"}))),
        ))
        .unwrap();
        assert!(!v.to_string().contains("S3cret"), "{v}");
    }

    #[test]
    fn typed_literals_come_from_typing_tools_only_and_skip_toggles() {
        let args = obj(json!({
            "elements": [
                {"uid": "1", "value": "ada@example.test"},
                {"uid": "2", "value": "true"},
                {"uid": "3", "value": "S3cret"}
            ]
        }));
        assert_eq!(
            typed_literals("fill_form", Some(&args)),
            vec!["ada@example.test", "S3cret"]
        );
        assert!(typed_literals("wait_for", Some(&obj(json!({"text": "Welcome"})))).is_empty());
        let pw = obj(json!({"fields": [
            {"name": "Remember me", "type": "checkbox", "ref": "e3", "value": "yes"},
            {"name": "Code", "type": "textbox", "ref": "e4", "value": "482913"}
        ]}));
        assert_eq!(
            typed_literals("browser_fill_form", Some(&pw)),
            vec!["482913"]
        );
        assert_eq!(
            typed_literals(
                "browser_type",
                Some(&obj(json!({"target": "e1", "text": "hello world"})))
            ),
            vec!["hello world"]
        );
    }
}
