use super::fields::judge_fields;
use super::*;
use cdp_capture::{Control, FieldReading, ScriptedField};
use cdp_evidence::{Action, Console, ConsoleLevel, Record, VerdictReason, Verification};
use cdp_relay_proxy::tap::TapReceiver;
use cdp_sanitize::{InputSummary, InputType, SafeText};
use std::sync::Arc;

fn typing(s: &Sanitizer, chars: u64, verified: Option<(Verified, &'static str)>) -> Record {
    let mut a = Action::new(SafeText::literal("type"));
    a.input = Some(InputSummary::from_count(chars, InputType::Email));
    a.verification = verified.map(|(v, reason)| {
        Verification::new(
            v,
            VerdictReason::parse(reason).expect("a reason"),
            s.text("the field holds 3 of 24 characters"),
        )
    });
    Record::new(SafeText::literal("cdp"), RecordKind::Action(a))
}

fn linked(record: Record) -> Linked {
    Linked {
        record,
        shared: false,
    }
}

fn result() -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text("done")])
}

fn note_of(r: &CallToolResult) -> (String, Value) {
    let text = r.content.last().and_then(|c| c.as_text()).expect("text");
    let meta = r.meta.as_ref().expect("meta").0[META_KEY].clone();
    (text.text.clone(), meta)
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("an object")
}

/// A pipeline's parts without its threads: the traffic reader is whatever the test makes of
/// the order (never handling anything is a stalled reader).
struct Parts {
    order: Arc<Order>,
    calls: ToolCalls,
    tap: Tap,
    rx: TapReceiver,
    sanitizer: Sanitizer,
}

impl Parts {
    fn new() -> Parts {
        let (tap, rx) = Tap::channel(16);
        Parts {
            order: rx.order.clone(),
            calls: ToolCalls::default(),
            tap,
            rx,
            sanitizer: Sanitizer::new(),
        }
    }

    fn sources(&self) -> Sources<'_> {
        Sources {
            order: &self.order,
            calls: &self.calls,
            tap: &self.tap,
            sanitizer: &self.sanitizer,
            pipeline: None,
        }
    }

    /// A call of `tool` begun and answered now.
    fn call(&self) -> (ActionId, SystemTime) {
        let now = SystemTime::now();
        let id = ActionId::at(now);
        self.calls.begin(id.clone(), now);
        (id, now)
    }
}

#[test]
fn nothing_learned_appends_nothing() {
    let mut r = result();
    let before = serde_json::to_value(&r).expect("json");
    let id = ActionId::at(SystemTime::now());
    assert!(!append(&mut r, &id, &CallEvidence::default()));
    assert_eq!(serde_json::to_value(&r).expect("json"), before);
}

#[test]
fn verdicts_and_failures_are_told_in_words_and_under_meta() {
    let s = Sanitizer::new();
    let secret = "hunter2-Zq7";
    s.register_typed(secret);
    let mut facts = CallFacts::default();
    facts
        .typing
        .push(linked(typing(&s, 24, Some((Verified::True, "landed")))));
    facts.typing.push(linked(typing(
        &s,
        6,
        Some((Verified::False, "dropped-characters")),
    )));
    facts.not_landed = 1;
    let console = Console::new(ConsoleLevel::Error, s.text(&format!("bad {secret}\nline")));
    facts.failures.push(Linked {
        record: Record::new(SafeText::literal("cdp"), RecordKind::Console(console)),
        shared: true,
    });
    facts.failures.push(facts.failures[0].clone());
    facts.more_failures = 2;
    let learned = CallEvidence {
        facts,
        notes: vec![not_verified_yet(Duration::from_millis(1000))],
        earlier: Vec::new(),
        late: Vec::new(),
    };
    let mut r = result();
    let id = ActionId::at(SystemTime::now());
    assert!(append(&mut r, &id, &learned), "a step did not land");
    assert_eq!(r.content.len(), 2, "the child's content, then ours");
    let (text, meta) = note_of(&r);
    assert!(text.starts_with("cdp-relay evidence for this call:\n"));
    assert!(text.contains("- typing, 24 chars (email field): landed\n"));
    assert!(text.contains(
        "- typing, 6 chars (email field): did NOT land: the field holds 3 of 24 characters"
    ));
    assert!(text.contains("- typing: not verified yet (no verdict within 1000 ms"));
    assert!(text.contains("- console error: bad "));
    assert!(
        text.contains("(maybe another call's: calls ran at once) (×2)"),
        "{text}"
    );
    assert!(text.contains("- 2 more failures"));
    assert!(!text.contains(secret), "{text}");
    assert_eq!(meta["call"], id.as_str());
    assert_eq!(meta["typing"][0]["verified"], true);
    assert_eq!(meta["typing"][1]["reason"], "dropped-characters");
    assert_eq!(meta["typing"][2]["verified"], Value::Null);
    assert_eq!(meta["typing"][2]["reason"], "not-verified-yet");
    assert_eq!(meta["failures"][0]["shared"], true);
    assert_eq!(meta["failures"][0]["count"], 2);
    assert_eq!(meta["more"]["failures"], 2);
    assert!(!meta.to_string().contains(secret));
    assert!(r.structured_content.is_none());
}

/// A failed request is told from the record's own types: method, URL reduced to origin and
/// path, and the status, else the failure text; the same request again is one line, counted.
#[test]
fn failed_requests_are_told_with_their_status_or_their_failure_text() {
    let s = Sanitizer::new();
    let request = |status, error_text| {
        let failure = s.network_failure(cdp_sanitize::RawNetworkFailure {
            method: "POST",
            url: "https://a.test/api/login?token=Pl4nted-T0ken",
            status,
            error_text,
            ..Default::default()
        });
        linked(Record::new(
            SafeText::literal("cdp"),
            RecordKind::Network(failure),
        ))
    };
    let mut facts = CallFacts::default();
    facts.failures.push(request(Some(500), None));
    facts.failures.push(request(Some(500), None));
    facts
        .failures
        .push(request(None, Some("net::ERR_CONNECTION_REFUSED")));
    let learned = CallEvidence {
        facts,
        ..CallEvidence::default()
    };
    let mut r = result();
    let id = ActionId::at(SystemTime::now());
    assert!(
        !append(&mut r, &id, &learned),
        "no typing step did not land"
    );
    let (text, meta) = note_of(&r);
    assert_eq!(
        text,
        "cdp-relay evidence for this call:\n\
         - failed request: POST https://a.test/api/login → 500 (×2)\n\
         - failed request: POST https://a.test/api/login → net::ERR_CONNECTION_REFUSED"
    );
    assert_eq!(
        meta["failures"],
        json!([
            {"kind": "network", "method": "POST", "url": "https://a.test/api/login",
             "status": 500, "count": 2},
            {"kind": "network", "method": "POST", "url": "https://a.test/api/login",
             "errorText": "net::ERR_CONNECTION_REFUSED"},
        ])
    );
    assert!(!serde_json::to_string(&r).unwrap().contains("Pl4nted"));
}

/// Strict mode judges every step: one that did not land is an error even when it is not
/// listed, and steps not listed are counted by verdict.
#[test]
fn a_step_that_did_not_land_makes_an_error_listed_or_not() {
    let s = Sanitizer::new();
    let mut facts = CallFacts::default();
    facts
        .typing
        .push(linked(typing(&s, 5, Some((Verified::True, "landed")))));
    facts.more_typing = 4;
    facts.more_landed = 3;
    facts.not_landed = 1;
    let learned = CallEvidence {
        facts,
        ..CallEvidence::default()
    };
    let mut r = result();
    let id = ActionId::at(SystemTime::now());
    assert!(append(&mut r, &id, &learned));
    let (text, meta) = note_of(&r);
    assert!(
        text.contains("- 4 more typing steps (3 landed; evidence_summary lists the others)"),
        "{text}"
    );
    assert_eq!(meta["more"]["typingLanded"], 3);
    assert_eq!(meta["notLanded"], 1);
}

#[test]
fn an_earlier_calls_verdict_is_told_as_its_own() {
    let s = Sanitizer::new();
    let pin = ActionId::at(SystemTime::now());
    let told = earlier(
        "press_key",
        &pin,
        typing_step(&linked(typing(&s, 6, Some((Verified::False, "no-input"))))),
    );
    let learned = CallEvidence {
        earlier: vec![told],
        ..CallEvidence::default()
    };
    let mut r = result();
    let id = ActionId::at(SystemTime::now());
    assert!(append(&mut r, &id, &learned));
    let (text, meta) = note_of(&r);
    assert!(
        text.contains("- earlier typing (call press_key), 6 chars (email field): did NOT land"),
        "{text}"
    );
    assert_eq!(meta["typing"][0]["earlier"], true);
    assert_eq!(meta["typing"][0]["call"], pin.as_str());
}

#[test]
fn the_childs_own_meta_is_kept() {
    let s = Sanitizer::new();
    let mut r = result();
    let mut theirs = MetaObject::new();
    theirs.0.insert("theirs".into(), json!(1));
    r.meta = Some(theirs);
    let mut facts = CallFacts::default();
    facts.typing.push(linked(typing(&s, 3, None)));
    let learned = CallEvidence {
        facts,
        ..CallEvidence::default()
    };
    let id = ActionId::at(SystemTime::now());
    assert!(!append(&mut r, &id, &learned));
    let meta = &r.meta.as_ref().expect("meta").0;
    assert_eq!(meta["theirs"], 1);
    assert_eq!(meta[META_KEY]["typing"][0]["verified"], Value::Null);
}

/// A traffic reader that never catches up: the call that typed ends at its deadline with
/// "not verified yet", is owed, and once the reader has read everything a later call tells
/// what became of it — here, that no key of it reached the browser.
#[tokio::test]
async fn a_stalled_reader_ends_the_wait_at_the_deadline_and_a_later_call_tells_it() {
    let p = Parts::new();
    // A copy stamped and never handled: the reader is behind, and stays so.
    p.order.stamp();
    let owed = PendingVerdicts::default();
    let (id, since) = p.call();
    let intent = Intent::of(
        "fill",
        Some(&args(json!({"uid": "1_4", "value": "Zq8-a-long-text"}))),
    );
    let wait = Duration::from_millis(150);
    let started = std::time::Instant::now();
    let learned = wait_for_evidence(&p.sources(), &owed, (&id, "fill"), &intent, since, wait).await;
    let took = started.elapsed();
    assert!(took >= wait && took < Duration::from_secs(5), "{took:?}");
    let mut r = result();
    assert!(!append(&mut r, &id, &learned));
    let (text, meta) = note_of(&r);
    assert!(
        text.contains("- typing: not verified yet (the relay had not read this call's browser traffic within 150 ms; a later result tells it)"),
        "{text}"
    );
    assert_eq!(meta["typing"][0]["verified"], Value::Null);
    assert_eq!(meta["typing"][0]["reason"], "not-read-yet");
    // The reader catches up; no key of the first call ever came. A click tells it.
    p.order.handled_below(u64::MAX);
    let (click, since) = p.call();
    let none = Intent::of("click", Some(&args(json!({"uid": "1_5"}))));
    let learned =
        wait_for_evidence(&p.sources(), &owed, (&click, "click"), &none, since, wait).await;
    let mut r = result();
    append(&mut r, &click, &learned);
    let (text, meta) = note_of(&r);
    assert!(
        text.contains("- earlier typing (call fill): not verified: no key reached the browser"),
        "{text}"
    );
    assert_eq!(meta["typing"][0]["call"], id.as_str());
    assert_eq!(meta["typing"][0]["reason"], "no-keys");
    // Told once.
    let (again, since) = p.call();
    let learned =
        wait_for_evidence(&p.sources(), &owed, (&again, "click"), &none, since, wait).await;
    let mut r = result();
    assert!(!append(&mut r, &again, &learned));
    assert_eq!(r.content.len(), 1, "nothing more to tell");
}

/// The reader caught up and tagged a burst of the call, whose verdict does not come in time:
/// the call's bursts are ended (a `TypingOver` naming it), it waits until the deadline, says
/// "not verified yet", and a later result tells the verdict when it comes — as an error in
/// strict mode when the text did not land.
#[tokio::test]
async fn a_verdict_that_comes_late_is_owed_and_told_by_a_later_call() {
    let mut p = Parts::new();
    let owed = PendingVerdicts::default();
    let (id, since) = p.call();
    let burst = p
        .calls
        .burst_began(since, None)
        .expect("the call was in flight");
    let intent = Intent::of(
        "fill",
        Some(&args(json!({"uid": "1_4", "value": "Zq8-short"}))),
    );
    let wait = Duration::from_millis(100);
    let learned = wait_for_evidence(&p.sources(), &owed, (&id, "fill"), &intent, since, wait).await;
    let over =
        p.rx.control
            .try_recv()
            .expect("the call's typing was said over");
    match over.event {
        cdp_relay_proxy::tap::TapEvent::TypingOver { call, .. } => {
            assert_eq!(call.as_deref(), Some(id.as_str()))
        }
        other => panic!("{other:?}"),
    }
    let mut r = result();
    append(&mut r, &id, &learned);
    let (text, meta) = note_of(&r);
    assert!(
        text.contains(
            "- typing: not verified yet (no verdict within 100 ms; a later result tells it)"
        ),
        "{text}"
    );
    assert_eq!(meta["typing"].as_array().map(Vec::len), Some(1));
    // The verdict comes: the text did not land.
    let mut step = typing(
        &p.sanitizer,
        9,
        Some((Verified::False, "dropped-characters")),
    );
    burst.step(&mut step);
    assert_eq!(step.tool_call(), Some(&id));
    p.order.handled_below(u64::MAX);
    let (next, since) = p.call();
    let none = Intent::of("take_snapshot", None);
    let learned = wait_for_evidence(
        &p.sources(),
        &owed,
        (&next, "take_snapshot"),
        &none,
        since,
        wait,
    )
    .await;
    let mut r = result();
    assert!(
        append(&mut r, &next, &learned),
        "an earlier step did not land"
    );
    let (text, _) = note_of(&r);
    assert!(
        text.contains("- earlier typing (call fill), 9 chars (email field): did NOT land"),
        "{text}"
    );
}

/// The page logs its error a moment after the click's answer: the run links it to the click, and
/// the next result tells it as the click's, once.
#[tokio::test]
async fn a_failure_linked_after_the_answer_is_told_by_the_next_result_as_its_calls() {
    let p = Parts::new();
    let owed = PendingVerdicts::default();
    p.order.handled_below(u64::MAX);
    let wait = Duration::from_millis(100);
    let (click, since) = p.call();
    let none = Intent::of("click", None);
    let learned =
        wait_for_evidence(&p.sources(), &owed, (&click, "click"), &none, since, wait).await;
    let mut r = result();
    assert!(!append(&mut r, &click, &learned));
    assert!(r.meta.is_none(), "nothing to tell yet: {r:?}");
    let answered = SystemTime::now();
    p.calls.end(&click, answered);
    let console = Console::new(ConsoleLevel::Error, SafeText::literal("save failed (500)"));
    let late = Record::new(SafeText::literal("cdp"), RecordKind::Console(console))
        .started_at(answered + Duration::from_millis(20));
    // As the pipeline does on seeing it (before any frame of it is taken).
    p.calls.note_failure(&late);

    let snapshot = Intent::of("take_snapshot", None);
    let mut told = Vec::new();
    for _ in 0..2 {
        let (next, since) = p.call();
        let learned = wait_for_evidence(
            &p.sources(),
            &owed,
            (&next, "take_snapshot"),
            &snapshot,
            since,
            wait,
        )
        .await;
        let mut r = result();
        append(&mut r, &next, &learned);
        told.push(r.meta.is_some().then(|| note_of(&r)));
        p.calls.end(&next, SystemTime::now());
    }
    let (text, meta) = told[0].clone().expect("the next result tells it");
    assert!(
        text.contains("- after call click was answered: console error: save failed (500)"),
        "{text}"
    );
    assert_eq!(
        meta["failures"],
        json!([{"kind": "console", "level": "error", "text": "save failed (500)",
                "earlier": true, "call": click.as_str()}])
    );
    assert_eq!(told[1], None, "told once");
}

/// Text of a call no key carried, with the relay's own observer off: said, not silent.
#[tokio::test]
async fn text_no_key_carried_is_said_when_nothing_can_read_the_field() {
    let p = Parts::new();
    let owed = PendingVerdicts::default();
    let (id, since) = p.call();
    let intent = Intent::of(
        "fill",
        Some(&args(json!({"uid": "1_4", "value": "2026-12-05"}))),
    );
    let learned = wait_for_evidence(
        &p.sources(),
        &owed,
        (&id, "fill"),
        &intent,
        since,
        Duration::from_millis(100),
    )
    .await;
    let mut r = result();
    assert!(!append(&mut r, &id, &learned));
    let (text, meta) = note_of(&r);
    assert!(
        text.contains("- typing, 10 chars: not verified: no key reached the browser (the relay's own observer is off)"),
        "{text}"
    );
    assert_eq!(meta["typing"][0]["chars"], 10);
    // A key-pressing call whose key never came, and a dialog's answer.
    for (tool, a, want) in [
        (
            "press_key",
            json!({"key": "7"}),
            "- typing, 1 char: not verified: no key reached the browser",
        ),
        (
            "handle_dialog",
            json!({"action": "accept", "promptText": "Zq8 answer"}),
            "a dialog's answer, not typed into a field",
        ),
    ] {
        let (id, since) = p.call();
        let intent = Intent::of(tool, Some(&args(a)));
        let learned = wait_for_evidence(
            &p.sources(),
            &owed,
            (&id, tool),
            &intent,
            since,
            Duration::from_millis(50),
        )
        .await;
        let mut r = result();
        append(&mut r, &id, &learned);
        assert!(note_of(&r).0.contains(want), "{tool}: {}", note_of(&r).0);
    }
}

fn field(kind: InputType, control: Control, chars: u64, equals: &[usize]) -> ScriptedField {
    ScriptedField {
        kind,
        control: Some(control),
        chars,
        equals: equals.to_vec(),
        sensitive: false,
        same_length: Vec::new(),
        connected: true,
    }
}

/// What each text no key carried did, read in the page: set by script and held, set but cut,
/// rewritten, sensitive, already there, in a frame, nowhere.
#[test]
fn fields_read_for_text_no_key_carried_are_judged_by_length_and_equality() {
    let texts = [
        "a".repeat(150),
        "2026-12-05".into(),
        "blue".into(),
        "abcdef".into(),
    ];
    let intent = Intent {
        how: HowTyped::IntoFields,
        texts: texts.to_vec(),
    };
    let reading = FieldReading {
        changed: vec![
            field(InputType::Text, Control::Date, 10, &[1]),
            field(InputType::Textarea, Control::Textarea, 97, &[]),
            field(InputType::Unknown, Control::Select, 4, &[2]),
        ],
        held: Vec::new(),
        maybe: Vec::new(),
        unreadable: false,
        pages_read: 1,
    };
    let told = judge_fields(&intent, 0, &reading);
    let lines: Vec<&str> = told.iter().map(|t| t.line.as_str()).collect();
    assert_eq!(
        lines,
        [
            "- typing, 150 chars (textarea): did NOT land: set by script, no key reached the browser; the field holds 97 of 150 characters",
            "- typing, 10 chars (date input): landed: set by script, no key reached the browser",
            "- typing, 4 chars (select): landed: set by script, no key reached the browser",
            "- typing, 6 chars: did NOT land: no key reached the browser and no field was set by script, and no field holds the text",
        ]
    );
    assert_eq!(told[0].meta["verified"], false);
    assert_eq!(told[1].meta["control"], "date");
    assert_eq!(told[1].meta["how"], "script");
    // Already there, maybe in a sensitive field, a frame that cannot be read.
    for (held, maybe, unreadable, want) in [
        (vec![0], vec![], false, "a field already holds this text"),
        (
            vec![],
            vec![0],
            false,
            "a sensitive field as long as the text may hold it",
        ),
        (
            vec![],
            vec![],
            true,
            "part of the page is a frame the relay cannot read",
        ),
    ] {
        let r = FieldReading {
            held,
            maybe,
            unreadable,
            pages_read: 1,
            ..FieldReading::default()
        };
        let one = Intent {
            how: HowTyped::IntoFields,
            texts: vec!["Zq8-text".into()],
        };
        let told = judge_fields(&one, 0, &r);
        assert!(told[0].line.contains(want), "{}", told[0].line);
        assert_eq!(told[0].meta["verified"], "indeterminate");
    }
    // A rewritten field and a sensitive one of the same length: not verified either way.
    let mut secret = field(InputType::Password, Control::Input, 8, &[]);
    secret.sensitive = true;
    let r = FieldReading {
        changed: vec![field(InputType::Text, Control::Input, 12, &[]), secret],
        pages_read: 1,
        ..FieldReading::default()
    };
    let two = Intent {
        how: HowTyped::IntoFields,
        texts: vec!["Zq8-ten-chr".into(), "Zq8-pass".into()],
    };
    let told = judge_fields(&two, 0, &r);
    assert_eq!(told[0].meta["reason"], "rewritten");
    assert_eq!(told[1].meta["reason"], "sensitive-field");
    // Some texts typed, one set by script: the typed ones are their steps'; the rest is said.
    let r = FieldReading {
        changed: vec![field(InputType::Text, Control::Date, 10, &[1])],
        pages_read: 1,
        ..FieldReading::default()
    };
    let three = Intent {
        how: HowTyped::IntoFields,
        texts: vec!["typed".into(), "2026-12-05".into(), "neither".into()],
    };
    let told = judge_fields(&three, 1, &r);
    assert_eq!(told.len(), 2);
    assert!(told[0].line.contains("(date input): landed"));
    assert!(
        told[1].line.contains("had no typing step"),
        "{}",
        told[1].line
    );
}

#[test]
fn an_intent_prints_lengths_only() {
    let i = Intent::of(
        "fill",
        Some(&args(json!({"uid": "1", "value": "hunter2-Zq7"}))),
    );
    assert!(!format!("{i:?}").contains("hunter2"));
    assert_eq!(i.how, HowTyped::IntoFields);
    assert_eq!(
        Intent::of("press_key", Some(&args(json!({"key": "Enter"})))).how,
        HowTyped::Nothing
    );
    assert_eq!(
        Intent::of("press_key", Some(&args(json!({"key": "7"})))).how,
        HowTyped::KeyByKey
    );
}

/// A key that begins a typing step is not waited for (typing key by key goes on): its result
/// says the step is still being typed, and a later call's result tells the step's verdict.
#[tokio::test]
async fn a_key_that_begins_a_step_is_told_still_typing_and_its_verdict_later() {
    let p = Parts::new();
    let owed = PendingVerdicts::default();
    let (id, since) = p.call();
    let burst = p.calls.burst_began(since, None).expect("in flight");
    let intent = Intent::of("press_key", Some(&args(json!({"key": "4"}))));
    let started = std::time::Instant::now();
    let wait = Duration::from_secs(30);
    let learned = wait_for_evidence(
        &p.sources(),
        &owed,
        (&id, "press_key"),
        &intent,
        since,
        wait,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(5), "not waited for");
    let mut r = result();
    append(&mut r, &id, &learned);
    let (text, meta) = note_of(&r);
    assert!(
        text.contains("- typing: a typing step still being typed"),
        "{text}"
    );
    assert_eq!(meta["typing"][0]["reason"], "still-typing");
    // The next key continues that step: no step of its own.
    let (next, since) = p.call();
    p.calls.typed(since, None);
    let learned = wait_for_evidence(
        &p.sources(),
        &owed,
        (&next, "press_key"),
        &intent,
        since,
        wait,
    )
    .await;
    let mut r = result();
    append(&mut r, &next, &learned);
    let (text, _) = note_of(&r);
    assert!(
        text.contains("- typing: continues a typing step an earlier call began"),
        "{text}"
    );
    // The typing pauses; its step lands; the next result tells it as the first key's call's.
    let mut step = typing(&p.sanitizer, 2, Some((Verified::True, "landed")));
    burst.step(&mut step);
    let (last, since) = p.call();
    let none = Intent::of("take_snapshot", None);
    let learned = wait_for_evidence(
        &p.sources(),
        &owed,
        (&last, "take_snapshot"),
        &none,
        since,
        wait,
    )
    .await;
    let mut r = result();
    assert!(!append(&mut r, &last, &learned));
    let (text, meta) = note_of(&r);
    assert!(
        text.contains("- earlier typing (call press_key), 2 chars (email field): landed"),
        "{text}"
    );
    assert_eq!(meta["typing"][0]["call"], id.as_str());
}

#[test]
fn text_the_page_cleared_after_it_landed_is_told_as_landed_then_cleared() {
    let s = Sanitizer::new();
    let mut a = Action::new(SafeText::literal("type"));
    a.input = Some(InputSummary::from_count(6, InputType::Text));
    a.verification = Some(Verification::new(
        Verified::Indeterminate,
        VerdictReason::ClearedByPage,
        s.text("landed, then cleared by the page: the field held the 6 typed characters and lost them within 500 ms"),
    ));
    let told = typing_step(&linked(Record::new(
        SafeText::literal("cdp"),
        RecordKind::Action(a),
    )));
    assert_eq!(
        told.line,
        "- typing, 6 chars (text field): landed, then cleared by the page: the field held the 6 typed characters and lost them within 500 ms"
    );
    assert_eq!(told.meta["verified"], "indeterminate");
    assert_eq!(told.meta["reason"], "cleared-by-page");
}
