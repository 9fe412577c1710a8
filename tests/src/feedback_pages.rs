//! The page of the gateway's feedback tests (`tests/tests/e2e/mcp_feedback.rs`): one labelled
//! field per way typing fails for agents (and one plain field that accepts the text), a button
//! whose request answers 500 and logs an error echoing a typed value and a planted token, and one
//! whose request goes to a closed port.

use crate::site::Route;
use std::collections::HashMap;

/// One field of the page and the text an agent types into it.
#[derive(Debug, Clone, Copy)]
pub struct TypingCase {
    /// Case name.
    pub name: &'static str,
    /// The field's label: its accessible name in the servers' snapshots (`textbox "<label>"`).
    pub label: &'static str,
    /// What the agent types (distinctive, so a sweep can look for it).
    pub literal: &'static str,
}

/// The cases, in page order.
pub const TYPING_CASES: [TypingCase; 7] = [
    TypingCase {
        name: "plain",
        label: "Display name",
        literal: "Zq8plainFeedLit",
    },
    // `maxlength="5"`: the rest of the text is cut.
    TypingCase {
        name: "maxlength",
        label: "Nickname",
        literal: "Zq8shortFeedLit",
    },
    // A controlled input (as React's, whose state keeps digits only) that resets its value to
    // the filtered text on every `input`: letters never stay.
    TypingCase {
        name: "controlled",
        label: "Quantity",
        literal: "ZqlettersFeedLit",
    },
    TypingCase {
        name: "readonly",
        label: "Reference",
        literal: "Zq8readonlyFeed",
    },
    // Hands focus to the postcode field on the first keystroke (or the first insertion).
    TypingCase {
        name: "bounce",
        label: "City",
        literal: "Zq8bounceFeedLit",
    },
    // Upper-cases what is typed (lower case typed, so the field never holds the text).
    TypingCase {
        name: "upper",
        label: "Call sign",
        literal: "zq8upperfeedlit",
    },
    // Replaced by a fresh element (same id, label and value, focused) on every `input`, as a
    // framework that re-keys the field re-renders it.
    TypingCase {
        name: "rerender",
        label: "Team name",
        literal: "Zq8rerenderFeed",
    },
];

/// The case named `name`.
pub fn typing_case(name: &str) -> TypingCase {
    TYPING_CASES
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no typing case {name}"))
}

/// The typing page: `token` is planted in the failing request's query and in the console error
/// the Save button logs; `closed_port` is a loopback port nothing listens on (the Sync button's
/// request fails with a network error).
pub fn typing_page(token: &str, closed_port: u16) -> String {
    format!(
        r#"<!doctype html><meta charset="utf-8"><title>Feedback</title><link rel="icon" href="data:,">
<style>label{{display:block;margin-top:4px}}</style>
<label for="plain">Display name</label><input id="plain" name="display">
<label for="short">Nickname</label><input id="short" name="nick" maxlength="5">
<label for="qty">Quantity</label><input id="qty" name="qty">
<label for="ref">Reference</label><input id="ref" name="ref" readonly>
<label for="city">City</label><input id="city" name="city">
<label for="postcode">Postcode</label><input id="postcode" name="postcode">
<label for="sign">Call sign</label><input id="sign" name="sign">
<label for="team">Team name</label><input id="team" name="team">
<button id="save">Save</button> <button id="sync">Sync</button> <button id="later">Later</button>
<p id="out"></p>
<script>
  // Controlled: digits only, as a framework re-setting the value from its state.
  const qty = document.getElementById('qty');
  qty.addEventListener('input', () => {{ qty.value = qty.value.replace(/\D/g, ''); }});
  // Hands focus to the postcode on the first keystroke or insertion.
  const city = document.getElementById('city');
  let handed = false;
  const hand = () => {{ if (!handed) {{ handed = true; document.getElementById('postcode').focus(); }} }};
  city.addEventListener('keydown', hand);
  city.addEventListener('beforeinput', hand);
  // Upper-cases.
  const sign = document.getElementById('sign');
  sign.addEventListener('input', () => {{
    const at = sign.selectionStart;
    sign.value = sign.value.toUpperCase();
    sign.setSelectionRange(at, at);
  }});
  // Re-rendered: a fresh element takes the old one's place on every input.
  function rerender(el) {{
    el.addEventListener('input', () => {{
      const fresh = el.cloneNode(false);
      const at = el.selectionStart;
      fresh.value = el.value;
      el.replaceWith(fresh);
      fresh.focus();
      fresh.setSelectionRange(at, at);
      rerender(fresh);
    }});
  }}
  rerender(document.getElementById('team'));
  const out = document.getElementById('out');
  document.getElementById('save').addEventListener('click', async () => {{
    const r = await fetch('/api/save?token={token}', {{method: 'POST'}});
    console.error('save failed (' + r.status + ') for ' + document.getElementById('plain').value + ' token {token}');
    out.textContent = 'save answered ' + r.status;
  }});
  // An error the page reports well after the click was answered (either server's).
  document.getElementById('later').addEventListener('click', () => {{
    setTimeout(() => console.error('reported later: token {token}'), 1200);
  }});
  document.getElementById('sync').addEventListener('click', async () => {{
    try {{ await fetch('http://127.0.0.1:{closed_port}/sync'); out.textContent = 'synced'; }}
    catch (_) {{ out.textContent = 'sync failed'; }}
  }});
</script>"#
    )
}

/// The site: the typing page at `/typing`, fields filled by script at `/script`, twenty fields
/// at `/form20`, `/api/save` answering 500, a favicon (no failure of its own on navigation).
pub fn feedback_routes(token: &str, closed_port: u16) -> HashMap<&'static str, Route> {
    let mut r = HashMap::new();
    r.insert(
        "/typing",
        Route::ok("text/html", typing_page(token, closed_port)),
    );
    r.insert("/script", Route::ok("text/html", SCRIPT_PAGE));
    r.insert("/form20", Route::ok("text/html", form20_page()));
    r.insert("/api/save", Route::ok("text/plain", "down").status(500));
    r.insert("/favicon.ico", Route::ok("image/x-icon", ""));
    r
}

/// A loopback port nothing listens on: bound by the OS, then released.
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// A field of the page of text no key carries (`/script`) and what an agent puts there.
#[derive(Debug, Clone, Copy)]
pub struct ScriptCase {
    /// Case name.
    pub name: &'static str,
    /// The field's label: its accessible name in the servers' snapshots.
    pub label: &'static str,
    /// What the agent puts there (distinctive, so a sweep can look for it).
    pub literal: &'static str,
}

/// 150 characters: chrome-devtools-mcp sets text of 100 or more by script.
pub const LONG_TEXT: &str = "Zq8longScriptLit-0123456789abcdefghijklmnopqrstuvwxyz-0123456789abcdefghijklmnopqrstuvwxyz-0123456789abcdefghijklmnopqrstuvwxyz-0123456789abcdefghijkl";

/// The cases of `/script`, in page order.
pub const SCRIPT_CASES: [ScriptCase; 7] = [
    // A plain textarea: the whole text stays.
    ScriptCase {
        name: "long",
        label: "Biography",
        literal: LONG_TEXT,
    },
    // A textarea whose page keeps 100 characters of what it is given.
    ScriptCase {
        name: "trimmed",
        label: "Short note",
        literal: LONG_TEXT,
    },
    ScriptCase {
        name: "date",
        label: "Start date",
        literal: "2026-12-05",
    },
    // Not a date a date input takes: its value becomes empty.
    ScriptCase {
        name: "bad-date",
        label: "End date",
        literal: "05/12/2026",
    },
    ScriptCase {
        name: "time",
        label: "Start time",
        literal: "13:45",
    },
    // A number-like control a key does not type into.
    ScriptCase {
        name: "range",
        label: "Volume level",
        literal: "42",
    },
    ScriptCase {
        name: "select",
        label: "Colour",
        literal: "Blue",
    },
];

/// The case of `/script` named `name`.
pub fn script_case(name: &str) -> ScriptCase {
    SCRIPT_CASES
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no script case {name}"))
}

/// Fields servers fill by script rather than with keys (long text, dates, a time, a range, a
/// select), one per [`SCRIPT_CASES`] entry.
pub const SCRIPT_PAGE: &str = r#"<!doctype html><meta charset="utf-8"><title>Script fills</title><link rel="icon" href="data:,">
<style>label{display:block;margin-top:4px}</style>
<label for="bio">Biography</label><textarea id="bio"></textarea>
<label for="note">Short note</label><textarea id="note"></textarea>
<label for="day">Start date</label><input id="day" type="date">
<label for="end">End date</label><input id="end" type="date">
<label for="at">Start time</label><input id="at" type="time">
<label for="level">Volume level</label><input id="level" type="range" min="0" max="100" value="10">
<label for="colour">Colour</label><select id="colour"><option value="red">Red</option><option value="blue">Blue</option><option value="green">Green</option></select>
<script>
  // Keeps 100 characters of what it is given, however it is given.
  const note = document.getElementById('note');
  note.addEventListener('input', () => { if (note.value.length > 100) note.value = note.value.slice(0, 100); });
</script>"#;

/// Fields on `/form20`, and which of them cut what is typed (`maxlength=5`).
pub const FORM_FIELDS: usize = 20;
/// The 1-based numbers of the fields of `/form20` with `maxlength=5`.
pub const CUT_FIELDS: [usize; 3] = [4, 12, 18];

/// What an agent types into field `i` (1-based) of `/form20`: 12 characters, distinctive.
pub fn form_literal(i: usize) -> String {
    format!("Zq8form{i:02}Lit")
}

/// Twenty labelled text fields (`Field 1` … `Field 20`), three of them cutting at 5 characters.
pub fn form20_page() -> String {
    let mut page = String::from(
        r#"<!doctype html><meta charset="utf-8"><title>Twenty fields</title><link rel="icon" href="data:,">"#,
    );
    for i in 1..=FORM_FIELDS {
        let cut = if CUT_FIELDS.contains(&i) {
            r#" maxlength="5""#
        } else {
            ""
        };
        page.push_str(&format!(
            "\n<label for=\"f{i}\">Field {i}</label><input id=\"f{i}\" name=\"f{i}\"{cut}>"
        ));
    }
    page
}
