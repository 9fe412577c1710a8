//! Text a call meant to type that no key carried (a server's fill by script): the fields on the
//! pages the call acted on, read by the relay's page agent, and what each text did — set by
//! script and held, set but not held, already there, nowhere. Lengths, kinds and equality
//! computed in the page; never a character.

use super::{chars, count, no_key, Intent, Sources, Told};
use cdp_capture::calls::CallTyping;
use cdp_capture::{Control, FieldQuery, FieldReading, ScriptedField};
use cdp_evidence::ActionId;
use serde_json::json;
use std::time::SystemTime;

/// Text the call meant to type that no step carried: read the fields on the pages it acted on.
pub(super) async fn read_fields(
    src: &Sources<'_>,
    id: &ActionId,
    intent: &Intent,
    typing: CallTyping,
    since: SystemTime,
    deadline: tokio::time::Instant,
) -> Vec<Told> {
    let unread = |why: &str| -> Vec<Told> {
        let words = format!("not verified: no key reached the browser ({why})");
        match typing.bursts {
            0 => intent
                .texts
                .iter()
                .map(|t| no_key(chars(t), &words, "no-keys"))
                .collect(),
            _ => Vec::new(),
        }
    };
    let Some(h) = src.pipeline.filter(|h| h.observes()) else {
        return unread("the relay's own observer is off");
    };
    // The traffic reader, caught up, has seen the call's commands and the pages they went to.
    let pages = src.calls.pages_of(id);
    if pages.is_empty() {
        return unread("the page the call acted on is not known");
    }
    let query = FieldQuery {
        pages,
        since,
        until: SystemTime::now(),
        texts: intent.texts.clone(),
    };
    match h.read_fields(query, deadline).await {
        Some(r) if r.pages_read > 0 => judge_fields(intent, typing.bursts as usize, &r),
        Some(_) => unread("the relay's page agent did not answer"),
        None => unread("no reading in time"),
    }
}

/// What each text no key carried did, from the reading (see the module docs).
pub(super) fn judge_fields(intent: &Intent, bursts: usize, r: &FieldReading) -> Vec<Told> {
    let texts = &intent.texts;
    let mut used = vec![false; r.changed.len()];
    let mut out: Vec<(usize, Told)> = Vec::new();
    // A field set by script that holds a text exactly: that text landed.
    for (i, text) in texts.iter().enumerate() {
        if let Some(f) =
            (0..r.changed.len()).find(|&f| !used[f] && r.changed[f].equals.contains(&i))
        {
            used[f] = true;
            out.push((i, scripted(chars(text), &r.changed[f])));
        }
    }
    if bursts > 0 {
        // Some texts were typed: which of the rest were not cannot be told by position.
        let left = texts.len().saturating_sub(bursts + out.len());
        for _ in 0..left {
            out.push((
                usize::MAX,
                Told::new(
                    "- typing: not verified: a text of this call had no typing step, and no field set by script holds it".into(),
                    json!("indeterminate"),
                    "not-read",
                ),
            ));
        }
    } else {
        for (i, text) in texts.iter().enumerate() {
            if out.iter().any(|(j, _)| *j == i) {
                continue;
            }
            let n = chars(text);
            let told = match (0..r.changed.len()).find(|&f| !used[f]) {
                Some(f) => {
                    used[f] = true;
                    scripted(n, &r.changed[f])
                }
                None => looked_for(n, i, r),
            };
            out.push((i, told));
        }
    }
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, t)| t).collect()
}

/// Text `n` characters long that a field set by script now holds, or does not.
fn scripted(n: u64, f: &ScriptedField) -> Told {
    let what = what_field(f);
    let m = f.chars;
    let head = format!("- typing, {} ({what})", count(n));
    let by_script = "set by script, no key reached the browser";
    let told = if !f.equals.is_empty() {
        Told::new(
            format!("{head}: landed: {by_script}"),
            json!(true),
            "landed",
        )
    } else if m < n {
        Told::new(
            format!("{head}: did NOT land: {by_script}; the field holds {m} of {n} characters"),
            json!(false),
            "dropped-characters",
        )
    } else if f.sensitive {
        Told::new(
            format!("{head}: not verified: {by_script}; a sensitive field is compared by length only ({m} characters)"),
            json!("indeterminate"),
            "sensitive-field",
        )
    } else {
        Told::new(
            format!("{head}: not verified: {by_script}; the field holds {m} characters, not the text (a mask or formatter?)"),
            json!("indeterminate"),
            "rewritten",
        )
    };
    let mut told = told.chars(n);
    told.meta["inputType"] = json!(f.kind.as_str());
    if let Some(c) = f.control {
        told.meta["control"] = json!(c.as_str());
    }
    told.meta["how"] = json!("script");
    told
}

/// Text no key carried and no field set by script took: does a field hold it anyway?
fn looked_for(n: u64, i: usize, r: &FieldReading) -> Told {
    let none = "no key reached the browser and no field was set by script";
    if r.held.contains(&i) {
        Told::new(
            format!("- typing, {}: not verified: {none}; a field already holds this text", count(n)),
            json!("indeterminate"),
            "already-held",
        )
    } else if r.maybe.contains(&i) {
        Told::new(
            format!("- typing, {}: not verified: {none}; a sensitive field as long as the text may hold it", count(n)),
            json!("indeterminate"),
            "sensitive-field",
        )
    } else if r.unreadable {
        Told::new(
            format!("- typing, {}: not verified: {none}; part of the page is a frame the relay cannot read", count(n)),
            json!("indeterminate"),
            "frame",
        )
    } else {
        Told::new(
            format!("- typing, {}: did NOT land: {none}, and no field holds the text", count(n)),
            json!(false),
            "no-input",
        )
    }
    .chars(n)
    .without_keys()
}

fn what_field(f: &ScriptedField) -> String {
    match f.control {
        Some(Control::Select) => "select".into(),
        Some(Control::Textarea) => "textarea".into(),
        Some(Control::Editable) => "editable field".into(),
        Some(Control::Input) | None => format!("{} field", f.kind.as_str()),
        Some(c) => format!("{} input", c.as_str()),
    }
}
