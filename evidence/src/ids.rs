//! Ids: validation of everything that becomes a path component, and generation of run ids,
//! action ids and random suffixes.
//!
//! An id is 1..=[`MAX_ID_LEN`] characters of `[A-Za-z0-9._-]` and does not start with `.`
//! (so `.`, `..` and hidden sidecar names can never be produced from input). Validation never
//! touches the filesystem.

use crate::error::Error;
use crate::time::{push_decimal, put_digits};
use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

/// Longest session id, run id or source name accepted.
pub const MAX_ID_LEN: usize = 128;

/// Checks that `value` is a safe single path component (see the module docs).
pub fn validate_id(what: &'static str, value: &str) -> Result<(), Error> {
    let reason = if value.is_empty() {
        "empty"
    } else if value.len() > MAX_ID_LEN {
        "too long"
    } else if value.starts_with('.') {
        "starts with '.'"
    } else if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        "contains a character outside the allowed set"
    } else {
        return Ok(());
    };
    Err(Error::InvalidId { what, reason })
}

/// The name of a producer (`relay`, `device`, `mcp`, ...), validated like an id.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Source(Cow<'static, str>);

impl Source {
    /// The relay itself.
    pub const RELAY: Source = Source(Cow::Borrowed("relay"));
    /// A mobile device layer.
    pub const DEVICE: Source = Source(Cow::Borrowed("device"));
    /// An MCP tool server.
    pub const MCP: Source = Source(Cow::Borrowed("mcp"));
    /// The `cdp-relay evidence append` command.
    pub const CLI: Source = Source(Cow::Borrowed("cli"));

    /// Validates a producer name.
    pub fn new(name: &str) -> Result<Source, Error> {
        validate_id("source", name)?;
        Ok(Source(Cow::Owned(name.to_owned())))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// 64 random bits (fastrand, seeded per thread). Not cryptographic: they only keep ids unique
/// when two producers (e.g. in different PID namespaces) share a pid and a millisecond.
pub(crate) fn random_u64() -> u64 {
    fastrand::u64(..)
}

/// A new run id: `YYYYMMDDTHHMMSSmmmZ-<16 hex>`, e.g. `20261129T214301123Z-9f3c0a7e5b1d2c48`.
/// Sorts by creation time; the suffix makes it unique.
pub(crate) fn new_run_id(now: SystemTime) -> String {
    format!("{}-{:016x}", crate::time::format_compact(now), random_u64())
}

/// This process's id as an action id writes it (10 digits), made once: `getpid` is a syscall
/// each time (glibc no longer caches it), and an action id is made per record — 1.7 syscalls
/// per relayed message in a recording relay. Nothing here forks without exec, so the cached
/// value cannot go stale.
fn pid_digits() -> &'static [u8; 10] {
    static PID: std::sync::OnceLock<[u8; 10]> = std::sync::OnceLock::new();
    PID.get_or_init(|| {
        let mut digits = [0; 10];
        // A u32 has at most 10 digits.
        put_digits(&mut digits, u64::from(std::process::id()));
        digits
    })
}

/// An action id made before its record is written, so that records written meanwhile can name
/// it: the CDP actions, failures and frames of an MCP tool call name the call while it runs
/// (`payload.toolCall`), and its own record is written when it ends. Same format as the ids the
/// journal assigns, and only made here, so it is always a valid id.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActionId(String);

impl ActionId {
    /// A fresh id stamped with `now` (the action's start: ids sort by it).
    pub fn at(now: SystemTime) -> ActionId {
        ActionId(new_action_id(now))
    }

    /// The id as written to the journal.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ActionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for ActionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for ActionId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// A new action id: `<ms since epoch, 13 digits>-<pid, 10 digits>-<per-process sequence, 10
/// digits>-<8 hex>`. Lexicographic order is time order across processes (to the millisecond) and
/// append order within one process.
pub(crate) fn new_action_id(now: SystemTime) -> String {
    let mut id = Vec::with_capacity(44);
    push_action_id(&mut id, now);
    crate::time::ascii(id)
}

/// Appends a new action id ([`new_action_id`]'s shape) to a journal line being written: into a
/// fixed template, one per record (`format!` cost a fifth of a record's line).
pub(crate) fn push_action_id(out: &mut Vec<u8>, now: SystemTime) {
    static ACTIONS: AtomicU64 = AtomicU64::new(0);
    let seq = ACTIONS.fetch_add(1, Ordering::Relaxed);
    let millis = crate::time::unix_millis(now);
    let salt = random_u64() as u32;
    let mut id = *b"0000000000000-0000000000-0000000000-00000000";
    if millis >= 10_000_000_000_000 || seq >= 10_000_000_000 {
        // Past the template (the year 2286, or ten billion records): widen like `{v:013}`.
        push_decimal(out, millis, 13);
        out.push(b'-');
        out.extend_from_slice(pid_digits());
        out.push(b'-');
        push_decimal(out, seq, 10);
        out.push(b'-');
        put_hex(&mut id[36..], salt);
        out.extend_from_slice(&id[36..]);
        return;
    }
    put_digits(&mut id[0..13], millis);
    id[14..24].copy_from_slice(pid_digits());
    put_digits(&mut id[25..35], seq);
    put_hex(&mut id[36..], salt);
    out.extend_from_slice(&id);
}

/// `v` as 8 lower-case hex digits.
fn put_hex(slot: &mut [u8], v: u32) {
    for (i, b) in slot.iter_mut().enumerate() {
        *b = HEX[(v >> (28 - 4 * i)) as usize & 0xf];
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::time::UNIX_EPOCH;

    #[test]
    fn accepts_safe_ids() {
        for ok in ["a", "run-1", "A.b_c-9", "x..y", &"z".repeat(MAX_ID_LEN)] {
            assert!(validate_id("session", ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_path_tricks_and_junk() {
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "../etc",
            "a/b",
            "/abs",
            "a\\b",
            "a b",
            "a\0b",
            "é",
            "a\n",
            &"z".repeat(MAX_ID_LEN + 1),
        ] {
            let err = validate_id("session", bad).unwrap_err();
            assert!(matches!(err, Error::InvalidId { .. }), "{bad:?}");
            // The message never repeats the input.
            if bad.len() > 2 {
                assert!(!err.to_string().contains(bad), "{bad:?}");
            }
        }
    }

    #[test]
    fn generated_ids_are_valid_unique_and_sorted() {
        let t0 = UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_000);
        let t1 = t0 + std::time::Duration::from_millis(1);
        let run = new_run_id(t0);
        validate_id("run", &run).unwrap();
        assert!(run.starts_with("20231114T221320000Z-"), "{run}");
        let ids: Vec<String> = (0..1000).map(|_| new_action_id(t0)).collect();
        let unique: HashSet<&String> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids, "one process's ids sort in creation order");
        assert!(new_action_id(t1) > ids[999]);
        for id in &ids {
            validate_id("action", id).unwrap();
        }
    }

    #[test]
    fn action_ids_have_the_documented_shape() {
        let t = UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123);
        let id = new_action_id(t);
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(parts.len(), 4, "{id}");
        assert_eq!(parts[0], "1700000000123");
        assert_eq!(parts[1], format!("{:010}", std::process::id()));
        assert!(parts[2].len() == 10 && parts[2].bytes().all(|b| b.is_ascii_digit()));
        assert!(parts[3].len() == 8 && parts[3].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(parts[3], parts[3].to_ascii_lowercase());
        assert_eq!(id.len(), 13 + 10 + 10 + 8 + 3);
    }

    #[test]
    fn action_ids_past_the_template_widen_like_format() {
        let far = UNIX_EPOCH + std::time::Duration::from_millis(12_345_678_901_234);
        let id = new_action_id(far);
        let parts: Vec<&str> = id.split('-').collect();
        assert_eq!(parts[0], "12345678901234", "{id}");
        assert_eq!(parts[1], format!("{:010}", std::process::id()));
        assert!(parts[2].len() == 10 && parts[3].len() == 8, "{id}");
        validate_id("action", &id).unwrap();
    }

    #[test]
    fn preset_action_ids_look_like_journal_ids_and_sort_by_their_time() {
        let t0 = UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_000);
        let a = ActionId::at(t0);
        let b = ActionId::at(t0 + std::time::Duration::from_millis(1));
        validate_id("action", a.as_str()).unwrap();
        assert!(a.as_str().starts_with("1700000000000-"), "{a}");
        assert!(a < b && a.as_str() < new_action_id(t0).as_str());
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            format!("\"{}\"", a.as_str())
        );
    }

    #[test]
    fn sources() {
        assert_eq!(Source::new("device").unwrap(), Source::DEVICE);
        assert!(Source::new("../x").is_err());
        assert_eq!(serde_json::to_string(&Source::RELAY).unwrap(), "\"relay\"");
    }
}
