use super::*;
use serde_json::json;

const PASSWORD: &str = "Pl4nted-Pw&<'\"!";
const ACCOUNT: &str = "AC 5589-Planted";

fn inputs() -> Inputs {
    let mut vars = Variables::new();
    vars.insert("PASSWORD", PASSWORD.into(), vars::VarSource::File, "t")
        .unwrap();
    vars.insert(
        "ACCOUNT_ID",
        ACCOUNT.into(),
        vars::VarSource::Environment,
        "t",
    )
    .unwrap();
    vars.insert("PIN", "123".into(), vars::VarSource::Environment, "t")
        .unwrap();
    Inputs::new(vars)
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

#[test]
fn whole_placeholders_in_typed_arguments_are_resolved_at_any_depth() {
    let i = inputs();
    let mut fill = obj(json!({"uid": "1_3", "value": "${PASSWORD}"}));
    i.prepare(None, "fill", &mut fill).unwrap();
    assert_eq!(fill["value"], PASSWORD);
    let mut form = obj(json!({"elements": [
        {"uid": "1_3", "value": "${ACCOUNT_ID}"},
        {"uid": "1_4", "value": "plain text"}
    ]}));
    i.prepare(None, "fill_form", &mut form).unwrap();
    assert_eq!(form["elements"][0]["value"], ACCOUNT);
    assert_eq!(form["elements"][1]["value"], "plain text");
    let mut pw = obj(json!({"fields": [
        {"name": "Password", "type": "textbox", "target": "e5", "value": "${PASSWORD}"}
    ]}));
    i.prepare(None, "browser_fill_form", &mut pw).unwrap();
    assert_eq!(pw["fields"][0]["value"], PASSWORD);
    // Any tool's typed-text argument (waiting for the value to show, say).
    let mut wait = obj(json!({"text": "${ACCOUNT_ID}"}));
    i.prepare(None, "wait_for", &mut wait).unwrap();
    assert_eq!(wait["text"], ACCOUNT);
    // A value shorter than a secret is still typed.
    let mut pin = obj(json!({"text": "${PIN}"}));
    i.prepare(None, "type_text", &mut pin).unwrap();
    assert_eq!(pin["text"], "123");
    // Code and names that only look like placeholders pass as they are.
    let mut code = obj(json!({"function": "() => `${document.title}`", "text": "cost ${a}"}));
    let before = code.clone();
    i.prepare(None, "evaluate_script", &mut code).unwrap();
    assert_eq!(code, before);
}

#[test]
fn what_cannot_be_resolved_is_refused_by_name_and_never_by_value() {
    let i = inputs();
    let cases = [
        (json!({"value": "${NOPE}"}), "variable NOPE has no value"),
        (
            json!({"value": "user ${ACCOUNT_ID}"}),
            "part of a longer text",
        ),
        (json!({"value": "${password}"}), "not a variable's"),
        (json!({"value": "${TYPED_1}"}), "not a variable's"),
        (
            json!({"url": "https://x.test/?u=${ACCOUNT_ID}"}),
            "not typed text",
        ),
        (json!({"function": "() => '${PASSWORD}'"}), "not typed text"),
    ];
    for (args, words) in cases {
        let mut a = obj(args.clone());
        let e = i.prepare(None, "fill", &mut a).unwrap_err();
        assert!(e.contains(words), "{args}: {e}");
        assert!(e.contains("nothing was sent"), "{e}");
        for value in [PASSWORD, ACCOUNT] {
            assert!(!e.contains(value), "{e}");
        }
    }
    let e = i
        .prepare(None, "fill", &mut obj(json!({"value": "${NOPE}"})))
        .unwrap_err();
    assert!(
        e.contains("CDP_RELAY_VAR_NOPE") && e.contains("ACCOUNT_ID, PASSWORD, PIN"),
        "{e}"
    );
}

#[test]
fn record_as_is_taken_out_and_names_the_text_from_then_on() {
    let i = inputs();
    let tools = &mut [Tool::new(
        "fill",
        "d",
        Arc::new(obj(
            json!({"type": "object", "properties": {"value": {"type": "string"}}}),
        )),
    )];
    i.augment(tools);
    assert!(tools[0].input_schema["properties"]["recordAs"].is_object());
    let mut a = obj(json!({"uid": "1_9", "value": "memo-Planted-77", "recordAs": "MEMO"}));
    i.prepare(None, "fill", &mut a).unwrap();
    assert!(a.get("recordAs").is_none());
    assert_eq!(a["value"], "memo-Planted-77");
    assert_eq!(i.rewriter().text("said memo-Planted-77"), "said ${MEMO}");
    // The name now types the text, as a variable would.
    let mut again = obj(json!({"text": "${MEMO}"}));
    i.prepare(None, "type_text", &mut again).unwrap();
    assert_eq!(again["text"], "memo-Planted-77");
    // A variable's value named again keeps the variable's name.
    let mut pw = obj(json!({"value": "${PASSWORD}", "recordAs": "OTHER"}));
    i.prepare(None, "fill", &mut pw).unwrap();
    assert_eq!(i.rewriter().text(PASSWORD), "${PASSWORD}");
    let listed = i.list(&BTreeMap::new()).to_string();
    assert!(
        listed.contains("MEMO") && !listed.contains("OTHER"),
        "{listed}"
    );
    assert!(
        !listed.contains("memo-Planted") && !listed.contains("Pl4nted"),
        "{listed}"
    );
    // Refusals: no text, two texts, a bad name, a variable's name, too short.
    for (args, words) in [
        (json!({"uid": "1", "recordAs": "X_NAME"}), "there is none"),
        (
            json!({"values": ["aaaa", "bbbb"], "recordAs": "X_NAME"}),
            "2 are typed",
        ),
        (
            json!({"value": "some-text", "recordAs": "lower"}),
            "not registered",
        ),
        (
            json!({"value": "some-text", "recordAs": 3}),
            "must be a string",
        ),
        (
            json!({"value": "other-text", "recordAs": "PASSWORD"}),
            "name of a variable",
        ),
        (
            json!({"value": "abc", "recordAs": "X_NAME"}),
            "not registered",
        ),
    ] {
        let e = i.prepare(None, "fill", &mut obj(args.clone())).unwrap_err();
        assert!(e.contains(words), "{args}: {e}");
    }
    // A tool with a recordAs of its own keeps it.
    let own = &mut [Tool::new(
        "fill",
        "d",
        Arc::new(obj(
            json!({"type": "object", "properties": {"value": {"type": "string"}, "recordAs": {"type": "string"}}}),
        )),
    )];
    i.augment(own);
    let mut theirs = obj(json!({"value": "x", "recordAs": "whatever"}));
    i.prepare(None, "fill", &mut theirs).unwrap();
    assert_eq!(theirs["recordAs"], "whatever");
}

#[test]
fn a_value_the_agent_registered_is_rewritten_like_a_record_as_text() {
    let i = inputs();
    assert_eq!(
        i.rewriter().text("acct 4410-Planted-93"),
        "acct 4410-Planted-93"
    );
    i.registered(None, "ACCOUNT_NO", "4410-Planted-93");
    assert_eq!(
        i.rewriter().text("acct 4410-Planted-93, 4410-Planted-93"),
        "acct ${ACCOUNT_NO}, ${ACCOUNT_NO}"
    );
    // In its other spellings too: base64 of the whole value here.
    assert_eq!(
        i.rewriter().text("b64 NDQxMC1QbGFudGVkLTkz"),
        "b64 ${ACCOUNT_NO}"
    );
    // Typed by name from now on, and listed by name only.
    let mut a = obj(json!({"text": "${ACCOUNT_NO}"}));
    i.prepare(None, "type_text", &mut a).unwrap();
    assert_eq!(a["text"], "4410-Planted-93");
    let listed = i.list(&BTreeMap::new()).to_string();
    assert!(
        listed.contains("ACCOUNT_NO") && !listed.contains("Planted-93"),
        "{listed}"
    );
    // A value a variable already has keeps the variable's name.
    i.registered(None, "SAME", PASSWORD);
    assert_eq!(i.rewriter().text(PASSWORD), "${PASSWORD}");
}

#[tokio::test]
async fn without_evidence_pictures_are_withheld_once_a_value_was_typed() {
    let i = inputs();
    let shot = || {
        CallToolResult::success(vec![
            ContentBlock::text("Took a screenshot"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
        ])
    };
    let mut before = shot();
    i.withhold_pictures(None, &mut before).await;
    assert!(matches!(before.content[1], ContentBlock::Image(_)));
    i.prepare(None, "fill", &mut obj(json!({"value": "${ACCOUNT_ID}"})))
        .unwrap();
    let mut after = shot();
    i.withhold_pictures(None, &mut after).await;
    assert_eq!(after.content.len(), 2);
    let text = after.content[1].as_text().map(|t| t.text.clone()).unwrap();
    assert!(
        text.contains("withheld this image") && text.contains("evidence is off"),
        "{text}"
    );
}

#[test]
fn instructions_and_the_list_say_names_and_lengths_only() {
    let i = inputs();
    let words = i.instructions();
    assert!(words.contains("${PASSWORD} (15 characters)"), "{words}");
    assert!(words.contains("recordAs"), "{words}");
    let mut kinds = BTreeMap::new();
    kinds.insert("PASSWORD".to_owned(), vec!["password".to_owned()]);
    let v = i.list(&kinds);
    assert_eq!(v["variables"][1]["name"], "PASSWORD");
    assert_eq!(v["variables"][1]["chars"], 15);
    assert_eq!(v["variables"][1]["source"], "var-file");
    assert_eq!(v["variables"][1]["typedInto"], json!(["password"]));
    assert_eq!(v["variables"][2]["masked"], false);
    let all = format!("{words} {v}");
    assert!(!all.contains("Pl4nted") && !all.contains("5589"), "{all}");
}
