//! Bounding a record to the configured size before it becomes one journal line.
//!
//! Oversized records are cut, never split: the longest string fields are shortened (at a
//! character boundary, with a `…[cut N bytes]` marker appended), then, if that is not enough,
//! the largest nested arrays/objects are replaced by a marker string. A record that had anything
//! cut carries `"fieldsCut": <count>`. Envelope fields that readers rely on (`actionId`,
//! `sessionId`, `startedAt`, `durationMs`, `status`, `kind`, `source`) are never cut; they are
//! short by construction. Pure: no I/O.

use crate::error::Error;
use serde_json::Value;

/// Never cut a string below this many bytes: short prefixes keep a cut field recognisable.
const MIN_KEEP: usize = 32;
/// Room kept for the `fieldsCut` member while cutting.
const COUNT_RESERVE: usize = 24;
/// Top-level members that are never cut.
const PROTECTED: [&str; 8] = [
    "actionId",
    "sessionId",
    "startedAt",
    "durationMs",
    "status",
    "kind",
    "source",
    "fieldsCut",
];
/// Upper bound on cutting rounds; each round removes a field's worth of bytes.
const MAX_ROUNDS: usize = 10_000;

/// Serializes `record` as one newline-terminated line of at most `max` bytes (newline included),
/// cutting fields as described in the module docs.
pub(crate) fn to_bounded_line(mut record: Value, max: usize) -> Result<Vec<u8>, Error> {
    let mut line = serde_json::to_vec(&record).map_err(Error::Serialize)?;
    if line.len() < max {
        line.push(b'\n');
        return Ok(line);
    }
    let budget = max.saturating_sub(1 + COUNT_RESERVE);
    let mut cuts = 0u64;
    let mut size = line.len();
    for _ in 0..MAX_ROUNDS {
        if size <= budget {
            break;
        }
        let excess = size - budget;
        if !cut_longest_string(&mut record, excess) && !cut_container(&mut record, excess) {
            return Err(Error::RecordTooLarge { bytes: size, max });
        }
        cuts += 1;
        size = serialized_len(&record);
    }
    if let Value::Object(m) = &mut record {
        m.insert("fieldsCut".into(), cuts.into());
    }
    let mut line = serde_json::to_vec(&record).map_err(Error::Serialize)?;
    if line.len() >= max {
        return Err(Error::RecordTooLarge {
            bytes: line.len(),
            max,
        });
    }
    line.push(b'\n');
    Ok(line)
}

fn serialized_len(v: &Value) -> usize {
    serde_json::to_vec(v).map(|b| b.len()).unwrap_or(usize::MAX)
}

/// JSON-pointer escaping of one member name.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Walks `v`, calling `f(pointer, node)` for every node except the root and protected members.
fn walk(v: &Value, ptr: &mut String, top: bool, f: &mut dyn FnMut(&str, &Value)) {
    let len = ptr.len();
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                if top && PROTECTED.contains(&k.as_str()) {
                    continue;
                }
                ptr.push('/');
                ptr.push_str(&escape(k));
                f(ptr, child);
                walk(child, ptr, false, f);
                ptr.truncate(len);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                ptr.push('/');
                ptr.push_str(&i.to_string());
                f(ptr, child);
                walk(child, ptr, false, f);
                ptr.truncate(len);
            }
        }
        _ => {}
    }
}

/// Shortens the longest cuttable string by enough to remove `excess` serialized bytes (or to
/// [`MIN_KEEP`]). Removing n raw bytes removes at least n serialized bytes, since every raw byte
/// serializes to one or more. Returns false when no string is longer than `MIN_KEEP`.
fn cut_longest_string(record: &mut Value, excess: usize) -> bool {
    let mut best: Option<(usize, String)> = None;
    walk(record, &mut String::new(), true, &mut |ptr, node| {
        if let Value::String(s) = node {
            if s.len() > MIN_KEEP && best.as_ref().is_none_or(|(n, _)| s.len() > *n) {
                best = Some((s.len(), ptr.to_owned()));
            }
        }
    });
    let Some((len, ptr)) = best else {
        return false;
    };
    let Some(Value::String(s)) = record.pointer_mut(&ptr) else {
        return false;
    };
    // The marker itself takes up to ~30 bytes; cut that much more.
    let mut keep = len.saturating_sub(excess + 32).max(MIN_KEEP);
    while !s.is_char_boundary(keep) {
        keep -= 1;
    }
    let removed = len - keep;
    s.truncate(keep);
    s.push_str(&format!("…[cut {removed} bytes]"));
    true
}

/// Replaces a nested array or object with a marker string: the smallest one whose removal covers
/// `excess` (so as much structure as possible survives), else the largest. Returns false when
/// there is none.
fn cut_container(record: &mut Value, excess: usize) -> bool {
    let mut enough: Option<(usize, String)> = None;
    let mut largest: Option<(usize, String)> = None;
    walk(record, &mut String::new(), true, &mut |ptr, node| {
        if matches!(node, Value::Array(_) | Value::Object(_)) {
            let n = serialized_len(node);
            if n <= 2 {
                return;
            }
            if n >= excess + 32 && enough.as_ref().is_none_or(|(m, _)| n < *m) {
                enough = Some((n, ptr.to_owned()));
            }
            if largest.as_ref().is_none_or(|(m, _)| n > *m) {
                largest = Some((n, ptr.to_owned()));
            }
        }
    });
    let Some((n, ptr)) = enough.or(largest) else {
        return false;
    };
    match record.pointer_mut(&ptr) {
        Some(node) => {
            *node = Value::String(format!("…[cut {n} bytes]"));
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(payload: Value) -> Value {
        json!({
            "actionId": "0001700000000000-0000000001-0000000001-abcdef01",
            "source": "relay", "tool": "cdp", "sessionId": "s",
            "startedAt": "2024-01-01T00:00:00.000Z", "durationMs": 1, "status": "ok",
            "artifacts": [], "kind": "action", "payload": payload,
        })
    }

    fn parse(line: &[u8]) -> Value {
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        serde_json::from_slice(&line[..line.len() - 1]).unwrap()
    }

    #[test]
    fn small_records_are_untouched() {
        let v = envelope(json!({"method": "Page.reload"}));
        let line = to_bounded_line(v.clone(), 4096).unwrap();
        assert_eq!(parse(&line), v);
    }

    #[test]
    fn long_strings_are_cut_with_a_marker() {
        let text = "é".repeat(50_000) + "tail";
        let v = envelope(json!({"method": "Runtime.evaluate", "detail": {"text": text}}));
        let line = to_bounded_line(v, 4096).unwrap();
        assert!(line.len() <= 4096, "{}", line.len());
        let back = parse(&line);
        let cut = back["payload"]["detail"]["text"].as_str().unwrap();
        assert!(cut.starts_with("éé"));
        assert!(cut.contains("…[cut "));
        assert!(!cut.contains("tail"));
        assert_eq!(back["fieldsCut"], 1);
        assert_eq!(back["payload"]["method"], "Runtime.evaluate");
        assert_eq!(back["sessionId"], "s");
    }

    #[test]
    fn escapes_heavy_strings_still_fit() {
        let text = "\u{1}\"\\".repeat(20_000);
        let v = envelope(json!({"a": text.clone(), "b": text}));
        let line = to_bounded_line(v, 4096).unwrap();
        assert!(line.len() <= 4096);
        let back = parse(&line);
        assert_eq!(back["fieldsCut"], 2);
    }

    #[test]
    fn many_small_values_collapse_containers() {
        let many: Vec<u64> = (0..20_000).collect();
        let v = envelope(json!({"method": "x", "numbers": many}));
        let line = to_bounded_line(v, 4096).unwrap();
        assert!(line.len() <= 4096);
        let back = parse(&line);
        assert!(back["payload"]["numbers"]
            .as_str()
            .unwrap()
            .starts_with("…[cut "));
        assert_eq!(back["kind"], "action");
    }

    #[test]
    fn keys_with_pointer_characters_are_handled() {
        let v = envelope(json!({"a/b~c": "x".repeat(10_000)}));
        let line = to_bounded_line(v, 2048).unwrap();
        assert!(line.len() <= 2048);
    }

    #[test]
    fn impossible_limits_are_errors_not_splits() {
        let v = envelope(json!({}));
        assert!(matches!(
            to_bounded_line(v, 64),
            Err(Error::RecordTooLarge { .. })
        ));
    }
}
