//! Typed-text verification: did the text of a typing burst land in the field the burst started
//! in?
//!
//! The traffic reader owns the burst and its text (memory only). When the burst ends it hands
//! a [`VerifyRequest`] to the direct reader over an in-memory channel; the text is wrapped in a
//! [`Literal`] that cannot be printed, serialized or logged. The direct reader passes it as a
//! call argument into the page agent's isolated world — back into the page it was typed into, and
//! nowhere else — where it is compared with what the page's input events and the field say. The
//! agent answers with a reason word and counts only; this module turns that into a
//! [`Verification`] whose note is written here, from literals and numbers. Nothing the page
//! controls reaches the record except integers and a word checked against a closed list.
//!
//! Never a false `true`: every case that fits more than one story is `indeterminate`.

use crate::pages::veto::FieldKind;
use cdp_evidence::{VerdictReason, Verification, Verified};
use cdp_sanitize::{InputType, SafeText};
use serde::Deserialize;
use std::time::SystemTime;

/// Typed text, in memory only. No `Debug` of the characters, no `Display`, no `Serialize`.
pub(crate) struct Literal(String);

impl Literal {
    pub(crate) fn new(text: String) -> Literal {
        Literal(text)
    }

    /// The text, to pass as an argument into the page it was typed into — nowhere else.
    pub(crate) fn expose_to_page(&self) -> &str {
        &self.0
    }

    /// Characters typed.
    pub(crate) fn chars(&self) -> u64 {
        self.0.chars().count() as u64
    }
}

impl std::fmt::Debug for Literal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Literal({} chars)", self.chars())
    }
}

/// A burst to verify.
#[derive(Debug)]
pub(crate) struct VerifyRequest {
    /// The burst's number (the traffic reader holds its step under it).
    pub(crate) burst: u64,
    /// The page typed into (raw target id, memory only).
    pub(crate) target_id: String,
    /// What was typed; `None` when the field was taken for a sensitive one (a credential is
    /// never sent back, only its length).
    pub(crate) literal: Option<Literal>,
    /// Characters typed.
    pub(crate) chars: u64,
    /// When the burst's first keystroke was seen.
    pub(crate) started_at: SystemTime,
    /// When its last keystroke was answered (everything it typed had reached the page).
    pub(crate) ended_at: SystemTime,
    /// Readings of it tried already (one more is tried when the page left its document during
    /// the first: then with what the agent handed over as it left).
    pub(crate) attempts: u8,
}

/// What the direct reader tells the traffic reader: a burst's verdict, or where the page agent
/// saw a click or typing land (sent as it happens, unasked).
#[derive(Debug)]
pub(crate) enum VerifyReply {
    Verdict(Verdict),
    Located(super::locate::Located),
}

impl VerifyReply {
    /// The reading of `burst` (`chars` typed) did not run, because `why`.
    pub(crate) fn unread(burst: u64, chars: u64, why: &'static str) -> VerifyReply {
        VerifyReply::Verdict(Verdict {
            burst,
            verification: unread(chars, why),
            kind: None,
            needs_literal: false,
        })
    }
}

/// The verdict for a burst, and the field kind the agent found where the burst landed.
#[derive(Debug)]
pub(crate) struct Verdict {
    pub(crate) burst: u64,
    pub(crate) verification: Verification,
    pub(crate) kind: Option<FieldKind>,
    /// Asked by length only, the field turned out not to be sensitive: ask again with the text.
    pub(crate) needs_literal: bool,
}

/// What the page agent answers (`agent.js`, `verify`). Words are parsed here, once, into closed
/// sets; an unknown `reason` makes the answer unreadable, never a verdict.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentAnswer {
    /// `None`: a word the relay does not know.
    #[serde(deserialize_with = "reason_word")]
    reason: Option<AgentReason>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    expected: Option<u64>,
    #[serde(default)]
    grew: Option<i64>,
    #[serde(default)]
    fields: Option<u64>,
    #[serde(default)]
    received: Option<u64>,
    /// `misplaced`: characters of the field's own text after where the typed text went.
    #[serde(default)]
    following: Option<u64>,
    /// The verdict changed when the field was read again after the typing.
    #[serde(default)]
    later: bool,
    /// The segments the reading took (a left document's handover, `left.rs`, may hold them).
    #[serde(default)]
    took: Vec<String>,
    /// `landed`: the token to ask the agent to read the field again with ([`recheck`]).
    #[serde(default)]
    recheck: Option<u64>,
}

impl AgentAnswer {
    /// The segments the reading took.
    pub(crate) fn took(&self) -> &[String] {
        &self.took
    }
}

/// How long after a burst's last insertion the page agent reads a field that the text landed
/// in again (`RECHECK` in `agent.js`): a page that empties it sooner is told.
pub(crate) const RECHECK_MS: u64 = 500;

cdp_sanitize::words! {
    /// The agent's reasons that are not verdict words: each stands for a [`VerdictReason`]
    /// with a note of its own.
    pub(crate) enum AgentWord {
        /// The field focused for typing handed focus to another as it got it (`focus-moved`).
        Bounced = "bounced",
        /// The agent started after the typing (`not-read`).
        NotInstalled = "not-installed",
        /// Asked by length only, the field is not a sensitive one: ask again with the text
        /// (`not-read` until then).
        NotCompared = "not-compared",
    }
}

/// The agent's `reason`: a verdict word of the journal, or one of the agent's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AgentReason {
    Verdict(VerdictReason),
    Agent(AgentWord),
}

impl AgentReason {
    fn parse(word: &str) -> Option<AgentReason> {
        VerdictReason::parse(word)
            .map(AgentReason::Verdict)
            .or_else(|| AgentWord::parse(word).map(AgentReason::Agent))
    }
}

fn reason_word<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<AgentReason>, D::Error> {
    String::deserialize(d).map(|word| AgentReason::parse(&word))
}

cdp_sanitize::words! {
    /// The agent's field kinds besides the input types (`InputType`, the journal's own words).
    enum AgentFieldKind {
        /// A field (or an ancestor) the page marks sensitive.
        Marked = "marked",
        /// Focus is inside a frame the agent cannot read.
        Frame = "frame",
        /// Nothing editable has focus.
        None = "none",
    }
}

/// The agent's field kinds.
pub(crate) fn field_kind(word: &str) -> Option<FieldKind> {
    if let Some(t) = InputType::parse(word) {
        return Some(FieldKind::Input(t));
    }
    Some(match AgentFieldKind::parse(word)? {
        AgentFieldKind::Marked => FieldKind::Marked,
        AgentFieldKind::Frame => FieldKind::Unreadable,
        AgentFieldKind::None => FieldKind::NotEditable,
    })
}

fn text(s: String) -> SafeText {
    // Built here from literals and integers only; the sanitizer pass is a formality that keeps
    // the type honest.
    cdp_sanitize::Sanitizer::new().text(&s)
}

fn verdict(
    verified: Verified,
    reason: VerdictReason,
    note: String,
    expected: u64,
    grew: Option<i64>,
    fields: Option<u64>,
) -> Verification {
    let mut v = Verification::new(verified, reason, text(note));
    v.expected = Some(expected);
    v.grew = grew;
    v.fields = fields;
    v
}

/// The agent's answer as a verdict; `None` when its reason is not a word the relay knows, or a
/// verdict only the relay gives.
pub(crate) fn from_agent(a: &AgentAnswer, typed: u64) -> Option<(Verification, Option<FieldKind>)> {
    let n = a.expected.unwrap_or(typed);
    let kind = a.kind.as_deref().and_then(field_kind);
    let v = match a.reason? {
        AgentReason::Verdict(reason) => agent_verdict(a, reason, n)?,
        AgentReason::Agent(word) => agent_word(word, n, a.grew),
    };
    Some((v, kind))
}

/// The agent's verdict in the journal's words, for `n` typed characters; `None` for a verdict
/// only the relay gives.
fn agent_verdict(a: &AgentAnswer, reason: VerdictReason, n: u64) -> Option<Verification> {
    use VerdictReason as R;
    use Verified::{False, Indeterminate, True};
    let g = a.grew;
    let grew = g.unwrap_or(0);
    let (verified, note, g, fields) = match reason {
        R::Landed => (
            True,
            format!("the field changed exactly as typing {n} characters would"),
            g,
            None,
        ),
        R::DroppedCharacters => (
            False,
            format!("expected {n} characters; the field grew by {grew}"),
            g,
            None,
        ),
        R::NoInput => (
            False,
            format!(
                "the page received {} of {n} typed characters as input",
                a.received.unwrap_or(0)
            ),
            g,
            None,
        ),
        R::AlreadyHeld => (
            Indeterminate,
            format!("the field already held this text and did not change ({n} characters typed)"),
            g,
            None,
        ),
        R::SameText => (
            Indeterminate,
            format!("the selected value was replaced by the same {n} characters"),
            g,
            None,
        ),
        R::Rewritten if a.later => (
            Indeterminate,
            format!("landed, then the page rewrote the value within {RECHECK_MS} ms: {n} characters typed, the field changed by {grew}"),
            g,
            None,
        ),
        R::Rewritten => (
            Indeterminate,
            format!("the page rewrote the value (a mask or formatter): {n} characters typed, the field changed by {grew}"),
            g,
            None,
        ),
        R::Misplaced => (
            Indeterminate,
            format!(
                "the {n} typed characters went in at the caret, before {} characters the field already held, not after them",
                a.following.unwrap_or(0)
            ),
            g,
            None,
        ),
        R::ClearedByPage => (
            Indeterminate,
            format!("landed, then cleared by the page: the field held the {n} typed characters and lost them within {RECHECK_MS} ms"),
            g,
            None,
        ),
        R::FocusMoved => {
            let k = a.fields.unwrap_or(2);
            (
                Indeterminate,
                format!("focus moved to another field mid-burst: {n} characters went to {k} fields"),
                g,
                Some(k),
            )
        }
        R::RichText => (
            Indeterminate,
            format!("editable content changed by {grew} characters for {n} typed, but not as plain insertion"),
            g,
            None,
        ),
        R::SensitiveField => return Some(sensitive(n)),
        R::Frame => (
            Indeterminate,
            "the field is inside a frame the relay cannot read".into(),
            None,
            None,
        ),
        R::Detached => (
            Indeterminate,
            "the field left the document before it could be read".into(),
            None,
            None,
        ),
        R::Ambiguous => (
            Indeterminate,
            format!("the same {n} characters reached the page more than once around this step"),
            None,
            None,
        ),
        R::Interleaved => (
            Indeterminate,
            format!("other input reached the page with this step's {n} characters"),
            None,
            None,
        ),
        // The relay's own verdicts: an agent that names one is not understood.
        R::NotRead | R::Attribute | R::TooLong => return None,
    };
    Some(verdict(verified, reason, note, n, g, fields))
}

/// The agent's own words (not the journal's), for `n` typed characters.
fn agent_word(word: AgentWord, n: u64, g: Option<i64>) -> Verification {
    use VerdictReason as R;
    use Verified::Indeterminate;
    match word {
        AgentWord::Bounced => verdict(
        Indeterminate,
        R::FocusMoved,
        format!("the field focused for typing handed focus to another as it got it: {n} characters went there"),
        n,
        g,
        Some(2),
    ),
        AgentWord::NotInstalled => verdict(
        Indeterminate,
        R::NotRead,
        "not read: the relay's page agent started after the typing".into(),
        n,
        None,
        None,
    ),
        AgentWord::NotCompared => verdict(
        Indeterminate,
        R::NotRead,
        "not read: the field was taken for a sensitive one when typing started".into(),
        n,
        None,
        None,
    ),
    }
}

/// Not read back: a password, one-time-code, payment or page-marked field.
pub(crate) fn sensitive(chars: u64) -> Verification {
    verdict(
        Verified::Indeterminate,
        VerdictReason::SensitiveField,
        "not read back: a password, one-time-code, payment or page-marked field".into(),
        chars,
        None,
        None,
    )
}

/// Set as a `value` attribute, which does not change what a dirty field shows.
pub(crate) fn attribute(chars: u64) -> Verification {
    verdict(
        Verified::Indeterminate,
        VerdictReason::Attribute,
        "set as a value attribute (DOM.setAttributeValue), not typed".into(),
        chars,
        None,
        None,
    )
}

/// Longer than the relay keeps in memory.
pub(crate) fn too_long(chars: u64) -> Verification {
    verdict(
        Verified::Indeterminate,
        VerdictReason::TooLong,
        format!("{chars} characters is more than the relay keeps to verify"),
        chars,
        None,
        None,
    )
}

/// The reading did not run (target closed, evaluation refused, timeout, …): a note, not a
/// failure.
pub(crate) fn unread(chars: u64, why: &'static str) -> Verification {
    verdict(
        Verified::Indeterminate,
        VerdictReason::NotRead,
        format!("not read: {why}"),
        chars,
        None,
        None,
    )
}

/// The verdict when the reading could not run: a burst taken for a sensitive field when typing
/// started keeps that verdict (the reading only confirms it); any other is not read.
fn no_reading(taken_for_sensitive: bool, chars: u64, why: &'static str) -> Verification {
    if taken_for_sensitive {
        sensitive(chars)
    } else {
        unread(chars, why)
    }
}

/// Milliseconds since the Unix epoch, with their fraction.
fn epoch_ms(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
        * 1000.0
}

/// The burst's time window for the agent, on the wall clock: the agent keeps only the
/// insertions that fell in it, so text that reached the page before or after the burst (another
/// client, another step into the same field) is not taken for it. `now` lets the agent tell a
/// browser on another clock.
fn window(req: &VerifyRequest, now: SystemTime) -> serde_json::Value {
    serde_json::json!({
        "start": epoch_ms(req.started_at),
        "end": epoch_ms(req.ended_at.max(req.started_at)),
        "now": epoch_ms(now),
    })
}

/// What a reading came to.
#[derive(Debug)]
pub(crate) enum Reading {
    /// The verdict, and the segments it took (the page's left document, `left.rs`, may hold
    /// them); a `landed` verdict is final only once the field was read again ([`recheck`]).
    Done {
        reply: VerifyReply,
        took: Vec<String>,
        recheck: Option<Recheck>,
    },
    /// The page left its document (or the agent's world, given, went) during the first reading:
    /// read again, in the next document's world, with what the agent handed over as it left.
    Again(VerifyRequest, i64),
}

/// A `landed` verdict waiting for the agent in `world` to read its field again (token `token`).
#[derive(Debug)]
pub(crate) struct Recheck {
    pub(crate) world: i64,
    pub(crate) token: u64,
}

/// Where a reading runs: the agent's world in the page's current document, what the page's
/// previous document handed over when it was left, and whether the typing began before the
/// current document's agent (so it went into a document the page has left).
pub(crate) struct Place<'a> {
    pub(crate) session: &'a str,
    pub(crate) world: i64,
    pub(crate) left: Option<serde_json::Value>,
    pub(crate) document_left: bool,
}

/// Asks the page agent at `place` whether `req`'s text landed. Every way this can fail is a
/// note on the verdict, never an error.
pub(crate) async fn run(
    cdp: &super::conn::Cdp,
    place: Place<'_>,
    req: VerifyRequest,
    timeout: std::time::Duration,
) -> Reading {
    use super::conn::CallError;
    let chars = req.chars;
    let window = window(&req, SystemTime::now());
    let left = place.left.unwrap_or(serde_json::Value::Null);
    let params = match &req.literal {
        Some(literal) => serde_json::json!({
            "functionDeclaration": "function (literal, win, left) { return globalThis.__cdpRelayAgent.verify(literal, win, left); }",
            "executionContextId": place.world,
            "arguments": [{ "value": literal.expose_to_page() }, { "value": window }, { "value": left }],
            "awaitPromise": true,
            "returnByValue": true,
            "silent": true,
        }),
        None => serde_json::json!({
            "functionDeclaration": "function (n, win, left) { return globalThis.__cdpRelayAgent.uncompared(n, win, left); }",
            "executionContextId": place.world,
            "arguments": [{ "value": chars }, { "value": window }, { "value": left }],
            "returnByValue": true,
            "silent": true,
        }),
    };
    let outcome = cdp
        .call(
            crate::cdp::methods::CommandMethod::RuntimeCallFunctionOn.name(),
            params,
            Some(place.session),
            timeout,
        )
        .await;
    let gone = matches!(&outcome, Err(CallError::Refused(_)))
        || matches!(&outcome, Ok(v) if v.get("exceptionDetails").is_some());
    if gone && req.attempts == 0 {
        let again = VerifyRequest {
            attempts: req.attempts + 1,
            ..req
        };
        return Reading::Again(again, place.world);
    }
    // Without the literal the field was taken for a sensitive one when typing started, and
    // the reading only confirms it: when it cannot run, that is still the verdict.
    let taken_for_sensitive = req.literal.is_none();
    drop(req.literal);
    let unread = |chars, why| no_reading(taken_for_sensitive, chars, why);
    let mut needs_literal = false;
    let mut took = Vec::new();
    let mut recheck = None;
    let (verification, kind) = match outcome {
        Ok(v) if v.get("exceptionDetails").is_some() => (
            unread(chars, "the page agent could not read the field"),
            None,
        ),
        Ok(v) => match v
            .pointer("/result/value")
            .cloned()
            .and_then(|a| serde_json::from_value::<AgentAnswer>(a).ok())
            .and_then(|a| {
                needs_literal = a.reason == Some(AgentReason::Agent(AgentWord::NotCompared));
                took = a.took().to_vec();
                recheck = a.recheck.map(|token| Recheck {
                    world: place.world,
                    token,
                });
                if place.document_left
                    && a.reason == Some(AgentReason::Agent(AgentWord::NotInstalled))
                {
                    // The agent there started after the typing because the typing went into
                    // the document before it, which handed nothing over.
                    return Some((unread(chars, DOCUMENT_LEFT), None));
                }
                from_agent(&a, chars)
            }) {
            Some((v, kind)) => (v, kind),
            None => (
                unread(chars, "the page agent's answer was not understood"),
                None,
            ),
        },
        Err(CallError::Timeout) => (unread(chars, "the page did not answer in time"), None),
        Err(CallError::Closed) => (
            unread(chars, "the observer's browser connection closed"),
            None,
        ),
        Err(CallError::Refused(_)) => (
            unread(chars, "the page navigated or closed before the reading"),
            None,
        ),
    };
    Reading::Done {
        reply: VerifyReply::Verdict(Verdict {
            burst: req.burst,
            verification,
            kind,
            needs_literal,
        }),
        took,
        recheck,
    }
}

/// Asks the agent in `world` of `session` to read the field of a `landed` verdict again, after
/// the page had its moment to change it (`RECHECK_MS` after the last insertion): `landed` stays,
/// or becomes `cleared-by-page` (or `rewritten`). When the agent cannot answer (the page left the
/// document meanwhile), the first verdict stands.
pub(crate) async fn recheck(
    cdp: &super::conn::Cdp,
    session: &str,
    again: Recheck,
    first: VerifyReply,
    timeout: std::time::Duration,
) -> VerifyReply {
    let VerifyReply::Verdict(first) = first else {
        return first;
    };
    let params = serde_json::json!({
        "functionDeclaration": "function (token) { return globalThis.__cdpRelayAgent.recheck(token); }",
        "executionContextId": again.world,
        "arguments": [{ "value": again.token }],
        "awaitPromise": true,
        "returnByValue": true,
        "silent": true,
    });
    let answer = cdp
        .call(
            crate::cdp::methods::CommandMethod::RuntimeCallFunctionOn.name(),
            params,
            Some(session),
            timeout,
        )
        .await
        .ok()
        .and_then(|v| v.pointer("/result/value").cloned())
        .and_then(|a| serde_json::from_value::<AgentAnswer>(a).ok());
    let chars = first.verification.expected.unwrap_or(0);
    match answer.as_ref().and_then(|a| from_agent(a, chars)) {
        Some((verification, kind)) => VerifyReply::Verdict(Verdict {
            verification,
            kind: kind.or(first.kind),
            ..first
        }),
        None => VerifyReply::Verdict(first),
    }
}

/// Why a reading found nothing when the typing went into a document the page has left without
/// handing it over.
pub(crate) const DOCUMENT_LEFT: &str = "the page left the document typed into before it was read";

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(json: serde_json::Value) -> AgentAnswer {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_reading_that_cannot_run_keeps_a_sensitive_verdict_and_is_a_note_otherwise() {
        let why = "the page navigated or closed before the reading";
        let v = no_reading(true, 14, why);
        assert_eq!(
            (v.verified, v.reason.as_str()),
            (Verified::Indeterminate, "sensitive-field")
        );
        let v = no_reading(false, 14, why);
        assert_eq!(
            (v.verified, v.reason.as_str()),
            (Verified::Indeterminate, "not-read")
        );
        assert!(v.note.as_str().contains("navigated"), "{}", v.note.as_str());
    }

    #[test]
    fn agent_words_map_to_verdicts() {
        let (v, kind) = from_agent(
            &answer(
                serde_json::json!({"reason": "landed", "kind": "email", "expected": 5, "grew": 5}),
            ),
            5,
        )
        .unwrap();
        assert_eq!(v.verified, Verified::True);
        assert_eq!(kind, Some(FieldKind::Input(InputType::Email)));
        let (v, _) = from_agent(
            &answer(serde_json::json!({"reason": "dropped-characters", "expected": 6, "grew": 5})),
            6,
        )
        .unwrap();
        assert_eq!((v.verified, v.grew), (Verified::False, Some(5)));
        assert_eq!(
            v.note.as_str(),
            "expected 6 characters; the field grew by 5"
        );
        for word in [
            "already-held",
            "same-text",
            "rewritten",
            "focus-moved",
            "rich-text",
            "frame",
            "detached",
            "sensitive-field",
            "ambiguous",
            "interleaved",
            "bounced",
        ] {
            let (v, _) = from_agent(&answer(serde_json::json!({"reason": word})), 3).unwrap();
            assert_eq!(v.verified, Verified::Indeterminate, "{word}");
        }
        assert!(from_agent(&answer(serde_json::json!({"reason": "<script>"})), 3).is_none());
    }

    #[test]
    fn every_reason_word_parses_once_into_its_enum() {
        for &r in VerdictReason::ALL {
            assert_eq!(
                AgentReason::parse(r.as_str()),
                Some(AgentReason::Verdict(r))
            );
            let a = answer(serde_json::json!({"reason": r.as_str()}));
            match from_agent(&a, 3) {
                // A verdict the agent gives keeps its word in the journal.
                Some((v, _)) => assert_eq!(v.reason, r),
                None => assert!(
                    matches!(
                        r,
                        VerdictReason::NotRead | VerdictReason::Attribute | VerdictReason::TooLong
                    ),
                    "{r}"
                ),
            }
        }
        for &w in AgentWord::ALL {
            assert_eq!(
                VerdictReason::parse(w.as_str()),
                None,
                "{w} is the agent's own"
            );
            assert_eq!(AgentReason::parse(w.as_str()), Some(AgentReason::Agent(w)));
        }
        let (v, _) = from_agent(&answer(serde_json::json!({"reason": "bounced"})), 3).unwrap();
        assert_eq!(v.reason, VerdictReason::FocusMoved);
        assert_eq!(v.fields, Some(2));
        let (v, _) = from_agent(&answer(serde_json::json!({"reason": "not-compared"})), 3).unwrap();
        assert_eq!(v.reason, VerdictReason::NotRead);
        assert_eq!(answer(serde_json::json!({"reason": "Landed"})).reason, None);
        assert!(serde_json::from_value::<AgentAnswer>(serde_json::json!({"reason": 1})).is_err());
    }

    /// Every reason and field kind the page agent writes is one the relay parses, and each of
    /// the agent's own words is still written by it.
    #[test]
    fn the_agent_writes_only_words_the_relay_parses() {
        let source = super::super::AGENT_SOURCE;
        // The word after each `pat'` on a line.
        let after = |line: &str, pat: &str| -> Vec<String> {
            line.split(pat)
                .skip(1)
                .filter_map(|rest| rest.split('\'').next())
                .map(str::to_owned)
                .collect()
        };
        // Every quoted word after `return out(` (`out(a ? 'x' : 'y')`).
        let outs = |line: &str| -> Vec<String> {
            line.split("return out(")
                .skip(1)
                .flat_map(|rest| rest.split('\'').skip(1).step_by(2).map(str::to_owned))
                .collect::<Vec<_>>()
        };
        let mut reasons = Vec::new();
        for line in source.lines() {
            for w in after(line, "reason: '").into_iter().chain(outs(line)) {
                assert!(AgentReason::parse(&w).is_some(), "agent.js: reason {w:?}");
                reasons.push(w);
            }
            for w in after(line, "kind: '")
                .into_iter()
                .chain(after(line, "return '"))
            {
                assert!(field_kind(&w).is_some(), "agent.js: kind {w:?}");
            }
        }
        assert!(reasons.len() > 10, "{reasons:?}");
        for &w in AgentWord::ALL {
            assert!(
                reasons.iter().any(|r| r == w.as_str()),
                "{w} is never written"
            );
        }
    }

    #[test]
    fn where_the_text_went_and_what_the_page_did_after_are_notes_not_successes() {
        let (v, _) = from_agent(
            &answer(serde_json::json!({"reason": "misplaced", "expected": 5, "grew": 5, "following": 6})),
            5,
        )
        .unwrap();
        assert_eq!(v.verified, Verified::Indeterminate);
        assert_eq!(v.reason, VerdictReason::Misplaced);
        assert_eq!(
            v.note.as_str(),
            "the 5 typed characters went in at the caret, before 6 characters the field already held, not after them"
        );
        let (v, _) = from_agent(
            &answer(serde_json::json!({"reason": "cleared-by-page", "expected": 6, "grew": 0, "later": true})),
            6,
        )
        .unwrap();
        assert_eq!(v.verified, Verified::Indeterminate);
        assert_eq!(v.reason, VerdictReason::ClearedByPage);
        assert!(
            v.note
                .as_str()
                .starts_with("landed, then cleared by the page"),
            "{}",
            v.note.as_str()
        );
        let (v, _) = from_agent(
            &answer(
                serde_json::json!({"reason": "rewritten", "expected": 6, "grew": 2, "later": true}),
            ),
            6,
        )
        .unwrap();
        assert_eq!(v.verified, Verified::Indeterminate);
        assert!(
            v.note.as_str().starts_with("landed, then the page rewrote"),
            "{}",
            v.note.as_str()
        );
        let a = answer(serde_json::json!({"reason": "landed", "took": ["1.a/2", "1.a/3"]}));
        assert_eq!(a.took(), ["1.a/2", "1.a/3"]);
    }

    /// The agent reads a field again as long after the last insertion as the notes say.
    #[test]
    fn the_agent_reads_again_when_the_notes_say() {
        let line = format!("const RECHECK = {RECHECK_MS};");
        assert!(
            super::super::AGENT_SOURCE.contains(&line),
            "agent.js: {line}"
        );
    }

    #[test]
    fn literals_do_not_print() {
        let l = Literal::new("hunter2".into());
        assert_eq!(format!("{l:?}"), "Literal(7 chars)");
        let r = VerifyRequest {
            burst: 1,
            target_id: "T".into(),
            literal: Some(l),
            chars: 7,
            started_at: SystemTime::UNIX_EPOCH,
            ended_at: SystemTime::UNIX_EPOCH,
            attempts: 0,
        };
        assert!(!format!("{r:?}").contains("hunter2"));
    }

    #[test]
    fn the_window_is_the_burst_on_the_wall_clock() {
        let at = |ms| SystemTime::UNIX_EPOCH + std::time::Duration::from_micros(ms);
        let r = VerifyRequest {
            burst: 1,
            target_id: "T".into(),
            literal: None,
            chars: 3,
            started_at: at(1_700_000_000_000_500),
            ended_at: at(1_700_000_000_250_000),
            attempts: 0,
        };
        let w = window(&r, at(1_700_000_001_000_000));
        assert_eq!(w["start"], 1_700_000_000_000.5);
        assert_eq!(w["end"], 1_700_000_000_250.0);
        assert_eq!(w["now"], 1_700_000_001_000.0);
        // An end before the start (a clock step) is no window at all: the start stands for it.
        let r = VerifyRequest {
            ended_at: at(0),
            ..r
        };
        assert_eq!(window(&r, at(0))["end"], 1_700_000_000_000.5);
    }
}
