//! The journal's reader side: plain data back from `actions.jsonl`, whoever wrote it.
//!
//! A [`StoredRecord`] is not a [`crate::Record`]: it holds `String`s and JSON values, and is not
//! proof of sanitization. Every line must be a JSON object with string `actionId` and `kind`;
//! other fields are taken when they have the expected type and otherwise read as absent (a
//! producer in another language may write `durationMs: 12.5`). Unknown kinds and unknown fields
//! are kept. Exactly one unterminated final line is tolerated (a write in flight or a crashed
//! writer) and reported as [`TornTail`]; every other bad line is reported as [`CorruptLine`],
//! never silently skipped. Error reasons never quote line content.

use crate::record::tool::StoredToolArgument;
use crate::record::{
    MarkerKind, StoredAction, StoredConsole, StoredLifecycle, StoredNetwork, StoredRepeat,
};
use crate::vocab::{ActionMethod, Kind, MarkerName, Status};
use cdp_sanitize::Word;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::io::{self, BufRead};

/// Lines longer than this are reported as corrupt without being buffered.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// A record as read back from a journal.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRecord {
    /// `actionId`.
    pub action_id: String,
    /// `kind` (built-in or producer-defined).
    pub kind: String,
    /// `source`.
    pub source: Option<String>,
    /// `tool`.
    pub tool: Option<String>,
    /// `sessionId`.
    pub session_id: Option<String>,
    /// `startedAt` as written.
    pub started_at: Option<String>,
    /// `startedAt` parsed to milliseconds since the Unix epoch.
    pub started_at_ms: Option<u64>,
    /// `durationMs` (fractions rounded).
    pub duration_ms: Option<u64>,
    /// `status` as written.
    pub status: Option<String>,
    /// `target`.
    pub target: Option<Value>,
    /// `artifacts`: paths relative to the run directory (not yet checked; see
    /// [`crate::Store::artifact_path`]).
    pub artifacts: Vec<String>,
    /// `error`.
    pub error: Option<String>,
    /// `payload` (`null` when absent).
    pub payload: Value,
    /// `fieldsCut`: how many fields the writer cut to bound the record.
    pub fields_cut: u64,
    /// `repeat`: the record stands for this many more occurrences of the same event.
    pub repeat: Option<StoredRepeat>,
    /// The whole object, for fields this version does not know.
    pub raw: Map<String, Value>,
}

impl StoredRecord {
    /// Builds a record from one parsed line; `Err` names what is missing.
    pub fn from_value(value: Value) -> Result<StoredRecord, &'static str> {
        let Value::Object(raw) = value else {
            return Err("not a JSON object");
        };
        let s = |k: &str| raw.get(k).and_then(Value::as_str).map(str::to_owned);
        let action_id = s("actionId").ok_or("missing string actionId")?;
        let kind = s("kind").ok_or("missing string kind")?;
        let started_at = s("startedAt");
        let duration_ms = raw.get("durationMs").and_then(|v| {
            v.as_u64().or_else(|| {
                v.as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .map(|f| f.round() as u64)
            })
        });
        Ok(StoredRecord {
            started_at_ms: started_at
                .as_deref()
                .and_then(crate::time::parse_rfc3339_millis),
            action_id,
            kind,
            source: s("source"),
            tool: s("tool"),
            session_id: s("sessionId"),
            started_at,
            duration_ms,
            status: s("status"),
            target: raw.get("target").filter(|v| !v.is_null()).cloned(),
            artifacts: raw
                .get("artifacts")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            error: s("error"),
            payload: raw.get("payload").cloned().unwrap_or(Value::Null),
            fields_cut: raw.get("fieldsCut").and_then(Value::as_u64).unwrap_or(0),
            repeat: raw
                .get("repeat")
                .and_then(|v| StoredRepeat::deserialize(v).ok()),
            raw,
        })
    }

    /// The payload read into the format's schema (the same types the writer serializes, in
    /// their [`crate::Stored`] form). Unknown payload fields are ignored; a built-in kind whose
    /// payload does not fit is [`StoredPayload::Mismatch`] and is best shown from
    /// [`StoredRecord::payload`] as written.
    pub fn typed_payload(&self) -> StoredPayload {
        fn parse<'a, T: Deserialize<'a>>(v: &'a Value) -> Option<T> {
            T::deserialize(v).ok()
        }
        let p = &self.payload;
        let typed = match self.kind_word().known() {
            Some(Kind::Action) => parse(p).map(StoredPayload::Action),
            Some(Kind::Network) => parse(p).map(StoredPayload::Network),
            Some(Kind::Console) => parse(p).map(StoredPayload::Console),
            Some(Kind::Lifecycle) => parse(p).map(StoredPayload::Lifecycle),
            Some(Kind::Marker) => parse(p).map(StoredPayload::Marker),
            None => Some(StoredPayload::Custom),
        };
        typed.unwrap_or(StoredPayload::Mismatch)
    }

    /// The page the record names (`target`): its handle, URL and opener, each when it is a
    /// string.
    pub fn page(&self) -> StoredPage {
        let field = |k: &str| {
            self.target
                .as_ref()
                .and_then(|t| t.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        StoredPage {
            target_id: field("targetId"),
            url: field("url"),
            opener_id: field("openerId"),
        }
    }

    /// The tool call this record happened during (`payload.toolCall`), when it names one.
    pub fn tool_call(&self) -> Option<&str> {
        self.payload
            .get(crate::record::TOOL_CALL_FIELD)
            .and_then(Value::as_str)
    }

    /// The tool calls this record may have happened during (`payload.toolCallCandidates`),
    /// when more than one could have caused it; empty otherwise.
    pub fn tool_call_candidates(&self) -> Vec<&str> {
        self.payload
            .get(crate::record::TOOL_CALL_CANDIDATES_FIELD)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// An action's `payload.arguments` (a tool call's reduced arguments) in the format's schema,
    /// each read on its own: an argument that does not fit is left out, the others kept (a
    /// payload with one such argument is [`StoredPayload::Mismatch`] as a whole). Empty for
    /// other kinds.
    pub fn tool_arguments(&self) -> Vec<StoredToolArgument> {
        if self.kind_word() != Kind::Action {
            return Vec::new();
        }
        let Some(arguments) = self.payload.get("arguments").and_then(Value::as_array) else {
            return Vec::new();
        };
        arguments
            .iter()
            .filter_map(|a| StoredToolArgument::deserialize(a).ok())
            .collect()
    }

    /// The marker word (`runStarted`, `evidenceTruncated`, ...) when this is a marker record,
    /// whether or not its payload fits the marker.
    pub fn marker(&self) -> Option<Word<MarkerName, &str>> {
        if self.kind_word() != Kind::Marker {
            return None;
        }
        let word = self.payload.get("marker").and_then(Value::as_str)?;
        Some(Word::from_text(word))
    }

    /// `kind` as a word: a built-in [`Kind`], or a producer-defined one.
    pub fn kind_word(&self) -> Word<Kind, &str> {
        Word::from_text(self.kind.as_str())
    }

    /// An action's `payload.method` as a word: one of [`ActionMethod`], or another producer's
    /// verb as written. `None` for other kinds, or an action without a method.
    pub fn action_method(&self) -> Option<Word<ActionMethod, &str>> {
        if self.kind_word() != Kind::Action {
            return None;
        }
        let word = self.payload.get("method").and_then(Value::as_str)?;
        Some(Word::from_text(word))
    }

    /// `status` as a word: one of the four, or another producer's as written.
    pub fn status_word(&self) -> Option<Word<Status, &str>> {
        self.status.as_deref().map(Word::from_text)
    }

    /// True when the record is from `source`.
    pub fn is_from(&self, source: &crate::Source) -> bool {
        self.source.as_deref() == Some(source.as_str())
    }
}

/// The page a record names, as read back ([`StoredRecord::page`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredPage {
    /// `target.targetId`: the page's handle (a sanitizer handle, never a CDP id).
    pub target_id: Option<String>,
    /// `target.url`: where the page was when the record was made (origin and path).
    pub url: Option<String>,
    /// `target.openerId`: the handle of the page that opened it.
    pub opener_id: Option<String>,
}

/// A record's payload in the format's schema; see [`StoredRecord::typed_payload`].
// Actions are most records and the largest variant (see `RecordKind`).
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StoredPayload {
    /// `kind: "action"`.
    Action(StoredAction),
    /// `kind: "network"`.
    Network(StoredNetwork),
    /// `kind: "console"`.
    Console(StoredConsole),
    /// `kind: "lifecycle"`.
    Lifecycle(StoredLifecycle),
    /// `kind: "marker"` with a marker word this version knows.
    Marker(MarkerKind),
    /// A producer-defined kind: its payload is any JSON, as written.
    Custom,
    /// A built-in kind whose payload does not fit its schema (a wrong type, a missing field, an
    /// unknown level, event or marker word).
    Mismatch,
}

/// A line that is not a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorruptLine {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// Length in bytes, newline excluded.
    pub len: u64,
    /// Why (never the content).
    pub reason: String,
}

/// An unterminated final line: a write in progress, or a writer that died mid-record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Byte offset of the partial line.
    pub offset: u64,
    /// Its length.
    pub len: u64,
}

/// Everything read from a journal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JournalRead {
    /// Records in file order.
    pub records: Vec<StoredRecord>,
    /// Bad complete lines.
    pub corrupt: Vec<CorruptLine>,
    /// The unterminated final line, if any (not a record, not corruption).
    pub torn_tail: Option<TornTail>,
}

impl JournalRead {
    /// True when every complete line was a record.
    pub fn is_clean(&self) -> bool {
        self.corrupt.is_empty()
    }
}

/// Parses journal bytes. Never panics, whatever the bytes.
pub fn parse_journal(bytes: &[u8]) -> JournalRead {
    // Reading from a slice cannot fail.
    read_journal_from(bytes).unwrap_or_default()
}

/// Parses a journal from a reader, line by line, with bounded memory per line. Keeps every
/// record: for a journal of any size, use [`scan_journal`].
pub fn read_journal_from(input: impl BufRead) -> io::Result<JournalRead> {
    let mut out = JournalRead::default();
    scan_journal(input, |line| match line {
        JournalLine::Record(r) => out.records.push(*r),
        JournalLine::Corrupt(c) => out.corrupt.push(c),
        JournalLine::Torn(t) => out.torn_tail = Some(t),
    })?;
    Ok(out)
}

/// One line of a journal as [`scan_journal`] hands it over.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum JournalLine {
    /// A complete line that is a record.
    Record(Box<StoredRecord>),
    /// A complete line that is not a record.
    Corrupt(CorruptLine),
    /// The unterminated final line (always the last call).
    Torn(TornTail),
}

/// Reads a journal line by line and hands each line to `f` as soon as it is read: memory stays
/// bounded by one line ([`MAX_LINE_BYTES`]) whatever the journal's size. Returns the number of
/// bytes read (complete lines and a torn tail).
pub fn scan_journal(mut input: impl BufRead, mut f: impl FnMut(JournalLine)) -> io::Result<u64> {
    let mut buf = Vec::new();
    let mut offset = 0u64;
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let line = read_bounded_line(&mut input, &mut buf, MAX_LINE_BYTES)?;
        if line.at_end() {
            break;
        }
        let BoundedLine {
            len,
            terminated,
            overflow,
            ..
        } = line;
        line_no += 1;
        let start = offset;
        offset += len + u64::from(terminated);
        if !terminated {
            f(JournalLine::Torn(TornTail { offset: start, len }));
            break;
        }
        let corrupt = |reason: String| {
            JournalLine::Corrupt(CorruptLine {
                line: line_no,
                offset: start,
                len,
                reason,
            })
        };
        if overflow {
            f(corrupt(format!("line longer than {MAX_LINE_BYTES} bytes")));
            continue;
        }
        match serde_json::from_slice::<Value>(&buf) {
            Err(e) => f(corrupt(format!(
                "not valid JSON ({:?} error at column {})",
                e.classify(),
                e.column()
            ))),
            Ok(v) => match StoredRecord::from_value(v) {
                Ok(r) => f(JournalLine::Record(Box::new(r))),
                Err(reason) => f(corrupt(reason.to_owned())),
            },
        }
    }
    Ok(offset)
}

/// One line read by [`read_bounded_line`] or [`read_line_prefix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoundedLine {
    /// Bytes in the line, without its `\n`.
    pub len: u64,
    /// The line ended with `\n` (false at end of input).
    pub terminated: bool,
    /// The line was longer than the limit.
    pub overflow: bool,
    /// Characters read past the limit and not kept (UTF-8 continuation bytes do not count).
    pub dropped_chars: u64,
}

impl BoundedLine {
    /// Nothing was read: the input had ended.
    pub fn at_end(&self) -> bool {
        self.len == 0 && !self.terminated
    }
}

/// What a bounded read keeps of a line longer than its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Overflow {
    /// Nothing: a record that does not fit is not a record (the journal, `evidence append`).
    Discard,
    /// The first `max` bytes: text shown cut (`cdp-relay sanitize`).
    KeepPrefix,
}

/// Reads up to and excluding the next `\n`, appending to `buf` while the line fits in `max`
/// bytes; a longer line leaves `buf` empty. Memory stays bounded whatever the input.
pub fn read_bounded_line(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<BoundedLine> {
    read_line(input, buf, max, Overflow::Discard)
}

/// Like [`read_bounded_line`], but a longer line keeps its first `max` bytes in `buf` (which
/// may end inside a character) and counts the characters dropped after them.
pub fn read_line_prefix(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<BoundedLine> {
    read_line(input, buf, max, Overflow::KeepPrefix)
}

fn read_line(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
    mode: Overflow,
) -> io::Result<BoundedLine> {
    let mut line = BoundedLine {
        len: 0,
        terminated: false,
        overflow: false,
        dropped_chars: 0,
    };
    let limit = max;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(line);
        }
        let (part, found) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        line.len += part.len() as u64;
        let keep = if line.overflow && mode == Overflow::Discard {
            0
        } else {
            part.len().min(limit.saturating_sub(buf.len()))
        };
        buf.extend_from_slice(&part[..keep]);
        if keep < part.len() {
            line.overflow = true;
            line.dropped_chars += part[keep..].iter().filter(|&&b| b & 0xC0 != 0x80).count() as u64;
            if mode == Overflow::Discard {
                buf.clear();
            }
        }
        let consumed = part.len() + usize::from(found);
        input.consume(consumed);
        if found {
            line.terminated = true;
            return Ok(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads every line of `input` through a reader that hands out `chunk` bytes at a time.
    fn lines(input: &str, max: usize, chunk: usize, prefix: bool) -> Vec<(String, BoundedLine)> {
        let mut r = io::BufReader::with_capacity(chunk, input.as_bytes());
        let mut out = Vec::new();
        loop {
            let mut buf = Vec::new();
            let line = if prefix {
                read_line_prefix(&mut r, &mut buf, max)
            } else {
                read_bounded_line(&mut r, &mut buf, max)
            }
            .expect("read");
            if line.at_end() {
                return out;
            }
            out.push((String::from_utf8_lossy(&buf).into_owned(), line));
        }
    }

    #[test]
    fn bounded_lines_discard_or_keep_a_prefix_at_every_chunk_size() {
        let input = "short\nééééé-long\n\nlast";
        for chunk in 1..=input.len() {
            let discard = lines(input, 8, chunk, false);
            let words: Vec<&str> = discard.iter().map(|(s, _)| s.as_str()).collect();
            assert_eq!(words, ["short", "", "", "last"], "chunk {chunk}");
            let long = discard[1].1;
            assert!(
                long.overflow && long.terminated && long.len == 15,
                "{long:?}"
            );
            assert!(!discard[3].1.terminated && !discard[3].1.overflow);

            let kept = lines(input, 8, chunk, true);
            let words: Vec<&str> = kept.iter().map(|(s, _)| s.as_str()).collect();
            // Four é (8 bytes) fit; one é and "-long" (6 characters) are dropped.
            assert_eq!(words, ["short", "éééé", "", "last"], "chunk {chunk}");
            assert_eq!(kept[1].1.dropped_chars, 6, "chunk {chunk}");
            assert_eq!(kept[0].1.dropped_chars, 0);
        }
    }

    const A: &str =
        r#"{"actionId":"1","kind":"action","durationMs":12.6,"artifacts":["artifacts/x.png",3]}"#;
    const B: &str = r#"{"actionId":"2","kind":"gesture","payload":{"dx":1},"custom":true}"#;

    #[test]
    fn reads_records_and_keeps_unknown_kinds_and_fields() {
        let read = parse_journal(format!("{A}\n{B}\n").as_bytes());
        assert!(read.is_clean());
        assert_eq!(read.torn_tail, None);
        assert_eq!(read.records.len(), 2);
        assert_eq!(read.records[0].duration_ms, Some(13));
        assert_eq!(read.records[0].artifacts, vec!["artifacts/x.png"]);
        assert_eq!(read.records[1].kind, "gesture");
        assert_eq!(read.records[1].payload["dx"], 1);
        assert_eq!(read.records[1].raw["custom"], true);
    }

    #[test]
    fn an_actions_method_reads_as_its_word() {
        let journal = [
            r#"{"actionId":"1","kind":"action","payload":{"method":"frame"}}"#,
            r#"{"actionId":"2","kind":"action","payload":{"method":"swipe"}}"#,
            r#"{"actionId":"3","kind":"action","payload":{"method":7}}"#,
            r#"{"actionId":"4","kind":"gesture","payload":{"method":"frame"}}"#,
        ]
        .join("\n")
            + "\n";
        let read = parse_journal(journal.as_bytes());
        let methods: Vec<_> = read
            .records
            .iter()
            .map(StoredRecord::action_method)
            .collect();
        assert_eq!(
            methods,
            [
                Some(Word::Known(ActionMethod::Frame)),
                Some(Word::Other("swipe")),
                None,
                None
            ]
        );
    }

    #[test]
    fn tolerates_one_torn_tail_only_at_the_end() {
        let read = parse_journal(format!("{A}\n{{\"actionId\":\"2\",\"ki").as_bytes());
        assert!(read.is_clean());
        assert_eq!(read.records.len(), 1);
        assert_eq!(
            read.torn_tail,
            Some(TornTail {
                offset: A.len() as u64 + 1,
                len: 19
            })
        );
        // An unterminated line is never a record, even if it happens to be valid JSON.
        let read = parse_journal(format!("{A}\n{B}").as_bytes());
        assert_eq!(read.records.len(), 1);
        assert!(read.torn_tail.is_some());
    }

    #[test]
    fn reports_corruption_in_the_middle_without_content() {
        let input =
            format!("{A}\n{{\"secret\":\"hunter2\n\n[1]\n{{\"kind\":\"x\"}}\n\u{ff}\n{B}\n");
        let read = parse_journal(input.as_bytes());
        assert_eq!(read.records.len(), 2);
        let lines: Vec<u64> = read.corrupt.iter().map(|c| c.line).collect();
        assert_eq!(lines, vec![2, 3, 4, 5, 6]);
        for c in &read.corrupt {
            assert!(!c.reason.contains("hunter2"), "{}", c.reason);
        }
        assert_eq!(read.corrupt[0].offset, A.len() as u64 + 1);
        assert_eq!(read.corrupt[3].reason, "missing string actionId");
    }

    #[test]
    fn empty_input_is_an_empty_clean_journal() {
        assert_eq!(parse_journal(b""), JournalRead::default());
    }

    #[test]
    fn small_reader_buffers_give_the_same_result() {
        let input = format!("{A}\n{B}\nbad\n{A}");
        let whole = parse_journal(input.as_bytes());
        let tiny = read_journal_from(io::BufReader::with_capacity(3, input.as_bytes())).unwrap();
        assert_eq!(whole, tiny);
    }
}
