//! Bounding a record to the configured size before it becomes one journal line.
//!
//! Oversized records are cut, never split, and cutting always succeeds in linear time (plus a
//! sort of the string lengths). Three steps, each only if the previous one was not enough:
//!
//! 1. **Strings**: the longest strings are shortened to a common length (the largest that
//!    suffices, at a character boundary, at least [`MIN_KEEP`] bytes), each ending in
//!    `…[cut N bytes]`. A string is only cut when that saves more than its marker costs.
//! 2. **A nested container**: the smallest array or object inside a top-level member whose
//!    replacement by the string `…[cut N bytes]` suffices.
//! 3. **Members**: the largest top-level members are trimmed to what fits: an object keeps its
//!    first members and gains `"…": "[cut N fields, M bytes]"`, an array keeps its first items
//!    and ends in `"…[cut N items, M bytes]"` (a member that does not fit whole is trimmed the
//!    same way, or cut if it is a string).
//!
//! A record that had anything cut carries `"fieldsCut": <count>` (strings shortened, containers
//! replaced, members and items removed). Envelope fields that readers rely on (`actionId`,
//! `sessionId`, `startedAt`, `durationMs`, `status`, `kind`, `source`, `artifacts`, `repeat`) are
//! never cut; they are short by construction. Pure: no I/O.

use crate::error::Error;
use serde_json::{Map, Value};

/// Never cut a string below this many bytes: short prefixes keep a cut field recognisable.
const MIN_KEEP: usize = 32;
/// Upper bound of a string marker's serialized length: `…[cut N bytes]` with a 20-digit N.
const MARK: usize = 36;
/// Upper bound of a member marker's serialized length (`"…":"[cut N fields, M bytes]"`, comma).
const MEMBER_MARK: usize = 64;
/// Room kept for the `fieldsCut` member while cutting.
const COUNT_RESERVE: usize = 24;
/// Top-level members that are never cut.
const PROTECTED: [&str; 10] = [
    "actionId",
    "repeat",
    "sessionId",
    "startedAt",
    "durationMs",
    "status",
    "kind",
    "source",
    "artifacts",
    "fieldsCut",
];
/// The member an object trimmed in step 3 gains.
pub(crate) const CUT_MEMBER: &str = "…";

/// Serializes `record` as one newline-terminated line of at most `max` bytes (newline included),
/// cutting fields as described in the module docs. Fails only when the protected envelope alone
/// does not fit (a `max` below any real envelope).
pub(crate) fn to_bounded_line(mut record: Value, max: usize) -> Result<Vec<u8>, Error> {
    let mut line = serde_json::to_vec(&record).map_err(Error::Serialize)?;
    if line.len() < max {
        line.push(b'\n');
        return Ok(line);
    }
    let budget = max.saturating_sub(1 + COUNT_RESERVE);
    let mut cuts = 0u64;
    let Value::Object(members) = &mut record else {
        return Err(Error::RecordTooLarge {
            bytes: line.len(),
            max,
        });
    };
    let mut size = line.len();
    if size > budget {
        cuts += cut_strings(members, size - budget);
        size = ser_len_map(members);
    }
    if size > budget && replace_container(members, size - budget) {
        cuts += 1;
        size = ser_len_map(members);
    }
    if size > budget {
        cuts += trim_members(members, budget);
    }
    members.insert("fieldsCut".into(), cuts.into());
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

// ---- serialized sizes (serde_json's compact form) -----------------------------------------

/// Serialized length of one character inside a JSON string.
fn esc_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// Serialized length of a string's content (quotes excluded).
fn str_content_len(s: &str) -> usize {
    // ASCII without escapes is the common case: one byte each.
    if s.bytes()
        .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b < 0x80)
    {
        return s.len();
    }
    s.chars().map(esc_len).sum()
}

fn ser_len(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => n.to_string().len(),
        Value::String(s) => 2 + str_content_len(s),
        Value::Array(a) => 2 + a.iter().map(ser_len).sum::<usize>() + a.len().saturating_sub(1),
        Value::Object(m) => ser_len_map(m),
    }
}

fn member_len(k: &str, v: &Value) -> usize {
    2 + str_content_len(k) + 1 + ser_len(v)
}

fn ser_len_map(m: &Map<String, Value>) -> usize {
    2 + m.iter().map(|(k, v)| member_len(k, v)).sum::<usize>() + m.len().saturating_sub(1)
}

fn cuttable(key: &str) -> bool {
    !PROTECTED.contains(&key)
}

/// The string marker that replaces what was cut.
fn marker(removed: usize) -> String {
    format!("…[cut {removed} bytes]")
}

// ---- step 1: strings ------------------------------------------------------------------------

/// Visits every string below the cuttable top-level members, in a fixed order.
fn for_each_string(members: &mut Map<String, Value>, f: &mut dyn FnMut(&mut String)) {
    fn walk(v: &mut Value, f: &mut dyn FnMut(&mut String)) {
        match v {
            Value::String(s) => f(s),
            Value::Array(a) => a.iter_mut().for_each(|c| walk(c, f)),
            Value::Object(m) => m.values_mut().for_each(|c| walk(c, f)),
            _ => {}
        }
    }
    for (k, v) in members.iter_mut() {
        if cuttable(k) {
            walk(v, f);
        }
    }
}

/// Shortens the longest strings to one common length that removes at least `excess` serialized
/// bytes, or as far as they go. Returns the number of strings cut.
fn cut_strings(members: &mut Map<String, Value>, excess: usize) -> u64 {
    let mut lens = Vec::new();
    for_each_string(members, &mut |s| {
        let n = str_content_len(s);
        if n > MIN_KEEP + MARK {
            lens.push(n);
        }
    });
    if lens.is_empty() {
        return 0;
    }
    lens.sort_unstable_by(|a, b| b.cmp(a));
    // Cutting the j longest strings down to content length L saves at least
    // sum(len_i) - j * (L + MARK). Find the smallest j for which cutting them to the length of
    // the next one suffices, then the largest L that still does.
    let mut level = MIN_KEEP;
    let mut sum = 0usize;
    for (j, &len) in lens.iter().enumerate() {
        sum += len;
        let cut = j + 1;
        let next = lens.get(cut).copied().unwrap_or(MIN_KEEP + MARK);
        if sum - cut * next >= excess {
            level = ((sum - excess) / cut).saturating_sub(MARK).max(MIN_KEEP);
            break;
        }
    }
    let mut cuts = 0;
    for_each_string(members, &mut |s| {
        if str_content_len(s) > level + MARK {
            cut_string(s, level);
            cuts += 1;
        }
    });
    cuts
}

/// Keeps the longest prefix of `s` whose serialized content fits in `keep` bytes and appends
/// the marker.
fn cut_string(s: &mut String, keep: usize) {
    let mut used = 0;
    let mut end = 0;
    for (i, c) in s.char_indices() {
        let n = esc_len(c);
        if used + n > keep {
            break;
        }
        used += n;
        end = i + c.len_utf8();
    }
    let removed = s.len() - end;
    s.truncate(end);
    s.push_str(&marker(removed));
}

// ---- step 2: one nested container -----------------------------------------------------------

/// Replaces the smallest container nested inside a top-level member whose replacement removes
/// at least `excess` bytes. False when there is none.
fn replace_container(members: &mut Map<String, Value>, excess: usize) -> bool {
    /// Pre-order sizes of the containers strictly below `v`; returns `v`'s size.
    fn sizes(v: &Value, out: &mut Vec<usize>) -> usize {
        match v {
            Value::Array(a) => {
                let mut n = 2 + a.len().saturating_sub(1);
                for c in a {
                    n += child(c, out);
                }
                n
            }
            Value::Object(m) => {
                let mut n = 2 + m.len().saturating_sub(1);
                for (k, c) in m {
                    n += 2 + str_content_len(k) + 1 + child(c, out);
                }
                n
            }
            other => ser_len(other),
        }
    }
    fn child(c: &Value, out: &mut Vec<usize>) -> usize {
        if matches!(c, Value::Array(_) | Value::Object(_)) {
            let slot = out.len();
            out.push(0);
            let n = sizes(c, out);
            out[slot] = n;
            n
        } else {
            ser_len(c)
        }
    }
    fn replace(v: &mut Value, target: usize, seen: &mut usize, with: &mut Option<String>) {
        let children: Vec<&mut Value> = match v {
            Value::Array(a) => a.iter_mut().collect(),
            Value::Object(m) => m.values_mut().collect(),
            _ => return,
        };
        for c in children {
            if with.is_none() {
                return;
            }
            if matches!(c, Value::Array(_) | Value::Object(_)) {
                if *seen == target {
                    *c = Value::String(with.take().unwrap_or_default());
                    return;
                }
                *seen += 1;
                replace(c, target, seen, with);
            }
        }
    }
    let mut all = Vec::new();
    for (k, v) in members.iter() {
        if cuttable(k) {
            sizes(v, &mut all);
        }
    }
    let best = all
        .iter()
        .enumerate()
        .filter(|(_, &n)| n >= excess + MARK)
        .min_by_key(|(i, &n)| (n, *i))
        .map(|(i, &n)| (i, n));
    let Some((target, n)) = best else {
        return false;
    };
    let mut seen = 0;
    let mut with = Some(marker(n));
    for (k, v) in members.iter_mut() {
        if cuttable(k) && with.is_some() {
            replace(v, target, &mut seen, &mut with);
        }
    }
    with.is_none()
}

// ---- step 3: trimming members ---------------------------------------------------------------

/// Trims the largest cuttable top-level members until the record fits in `budget`. Returns the
/// number of cuts (members and items removed, strings cut).
fn trim_members(members: &mut Map<String, Value>, budget: usize) -> u64 {
    let mut order: Vec<(usize, String)> = members
        .iter()
        .filter(|(k, _)| cuttable(k))
        .map(|(k, v)| (ser_len(v), k.clone()))
        .collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut cuts = 0;
    for (_, key) in order {
        let total = ser_len_map(members);
        if total <= budget {
            break;
        }
        let Some(v) = members.get_mut(&key) else {
            continue;
        };
        let own = ser_len(v);
        let room = budget.saturating_sub(total - own);
        cuts += trim(v, room);
    }
    cuts
}

/// Makes `v` serialize in at most `room` bytes where it can: a string is cut (or emptied), a
/// container keeps its first members whole, trims the first one that does not fit, and records
/// what it removed in a marker. Returns the number of cuts.
fn trim(v: &mut Value, room: usize) -> u64 {
    let own = ser_len(v);
    if own <= room {
        return 0;
    }
    match v {
        Value::String(s) => {
            let keep = room.saturating_sub(2 + MARK);
            if keep >= MIN_KEEP {
                cut_string(s, keep);
            } else {
                let removed = s.len();
                *s = marker(removed);
            }
            1
        }
        Value::Array(a) => {
            let mut cuts = 0;
            let avail = room.saturating_sub(2 + MARK + 1);
            let mut used = 0;
            let mut kept = 0;
            for item in a.iter_mut() {
                let n = ser_len(item) + usize::from(kept > 0);
                if used + n <= avail {
                    used += n;
                    kept += 1;
                    continue;
                }
                let left = avail.saturating_sub(used + usize::from(kept > 0));
                if matches!(item, Value::Array(_) | Value::Object(_) | Value::String(_))
                    && left >= MIN_KEEP + MARK
                {
                    cuts += trim(item, left);
                    kept += 1;
                }
                break;
            }
            let removed: Vec<Value> = a.drain(kept..).collect();
            if !removed.is_empty() {
                let bytes: usize = removed.iter().map(ser_len).sum();
                cuts += removed.len() as u64;
                a.push(Value::String(format!(
                    "…[cut {} items, {bytes} bytes]",
                    removed.len()
                )));
            }
            cuts
        }
        Value::Object(m) => {
            let mut cuts = 0;
            let avail = room.saturating_sub(2 + MEMBER_MARK);
            let mut used = 0;
            let mut kept = Map::new();
            let mut removed = 0usize;
            let mut removed_bytes = 0usize;
            let mut full = false;
            for (k, mut item) in std::mem::take(m) {
                let n = member_len(&k, &item) + usize::from(!kept.is_empty());
                if !full && k != CUT_MEMBER && used + n <= avail {
                    used += n;
                    kept.insert(k, item);
                    continue;
                }
                if !full && k != CUT_MEMBER {
                    full = true;
                    let left = avail
                        .saturating_sub(used + usize::from(!kept.is_empty()))
                        .saturating_sub(2 + str_content_len(&k) + 1);
                    if matches!(item, Value::Array(_) | Value::Object(_) | Value::String(_))
                        && left >= MIN_KEEP + MARK
                    {
                        cuts += trim(&mut item, left);
                        used += member_len(&k, &item) + usize::from(!kept.is_empty());
                        kept.insert(k, item);
                        continue;
                    }
                }
                full = true;
                removed += 1;
                removed_bytes += member_len(&k, &item);
            }
            if removed > 0 {
                cuts += removed as u64;
                kept.insert(
                    CUT_MEMBER.to_owned(),
                    Value::String(format!("[cut {removed} fields, {removed_bytes} bytes]")),
                );
            }
            *m = kept;
            cuts
        }
        // Numbers, booleans and null are a few bytes each.
        _ => 0,
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

    /// What the field test saw: 2000 small string fields (165 KB) burned seconds and failed.
    #[test]
    fn thousands_of_small_fields_are_trimmed_quickly() {
        let fields: Map<String, Value> = (0..2000)
            .map(|i| (format!("k{i:04}"), Value::String("v".repeat(60))))
            .collect();
        let v = envelope(Value::Object(fields));
        let started = std::time::Instant::now();
        let line = to_bounded_line(v, 65_536).unwrap();
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(line.len() <= 65_536);
        let back = parse(&line);
        let payload = back["payload"].as_object().unwrap();
        // The first fields are kept whole, the rest counted in one marker member.
        assert_eq!(payload["k0000"], "v".repeat(60));
        let note = payload[CUT_MEMBER].as_str().unwrap();
        assert!(
            note.starts_with("[cut ") && note.contains(" fields, "),
            "{note}"
        );
        let kept = payload.len() - 1;
        assert!(kept > 700 && kept < 2000, "{kept}");
        assert_eq!(back["fieldsCut"], (2000 - kept) as u64);
        // Nothing is lost silently: the marker names how many fields went.
        assert!(
            note.contains(&format!("[cut {} fields", 2000 - kept)),
            "{note}"
        );
    }

    #[test]
    fn deep_nesting_and_wide_arrays_always_fit() {
        // An array of many small objects, nested, next to a long string.
        let items: Vec<Value> = (0..5000)
            .map(|i| json!({"i": i, "name": format!("item {i}")}))
            .collect();
        let v = envelope(json!({
            "method": "x",
            "list": items,
            "nested": {"a": {"b": {"c": "y".repeat(100_000)}}},
        }));
        for max in [4096, 10_000, 65_536] {
            let line = to_bounded_line(v.clone(), max).unwrap();
            assert!(line.len() <= max, "{} > {max}", line.len());
            let back = parse(&line);
            assert_eq!(back["payload"]["method"], "x");
            assert!(back["fieldsCut"].as_u64().unwrap() >= 1);
        }
    }

    #[test]
    fn the_size_model_matches_serde_json() {
        let samples = [
            json!({"a": "plain", "b": "é\u{1}\"\\\n\t\u{7f}\u{2028}", "c": [1, -2.5, 1e300, null, true, false]}),
            json!({"k\"ey": {"x": []}, "": {}, "u64": u64::MAX, "i64": i64::MIN}),
            json!([0.1, "😀", {"z": [[[]]]}]),
        ];
        for v in samples {
            assert_eq!(ser_len(&v), serde_json::to_vec(&v).unwrap().len(), "{v}");
        }
    }

    #[test]
    fn cutting_is_linear_in_the_number_of_fields() {
        // 200k one-character fields: quadratic work would take minutes.
        let fields: Map<String, Value> = (0..200_000)
            .map(|i| (format!("f{i}"), Value::from("x")))
            .collect();
        let v = envelope(json!({"method": "x", "many": fields}));
        let started = std::time::Instant::now();
        let line = to_bounded_line(v, 65_536).unwrap();
        assert!(line.len() <= 65_536);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
    }

    fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            ".{0,300}".prop_map(Value::from),
            "[a-z\\u{1}\"\\\\é😀]{0,3000}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 600, 40, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..40).prop_map(Value::from),
                proptest::collection::btree_map(".{0,50}", inner, 0..40)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Whatever the payload and the limit, the line fits, is one JSON object, and keeps
        /// the envelope.
        #[test]
        fn every_record_fits_any_limit(payload in arb_json(), max in 4096usize..70_000) {
            let v = envelope(payload);
            let line = to_bounded_line(v.clone(), max).unwrap();
            proptest::prop_assert!(line.len() <= max);
            let back = parse(&line);
            for k in ["actionId", "source", "sessionId", "startedAt", "durationMs", "status", "kind", "artifacts"] {
                proptest::prop_assert_eq!(&back[k], &v[k]);
            }
            if back.get("fieldsCut").is_none() {
                proptest::prop_assert_eq!(back, v);
            }
        }
    }

    #[test]
    fn a_planted_cut_member_is_not_kept_as_a_real_marker() {
        let mut fields: Map<String, Value> = (0..3000)
            .map(|i| (format!("k{i:04}"), Value::String("v".repeat(40))))
            .collect();
        fields.insert(
            CUT_MEMBER.to_owned(),
            Value::from("[cut 0 fields, 0 bytes]"),
        );
        let v = envelope(Value::Object(fields));
        let back = parse(&to_bounded_line(v, 8192).unwrap());
        let note = back["payload"][CUT_MEMBER].as_str().unwrap();
        assert_ne!(note, "[cut 0 fields, 0 bytes]");
    }
}
