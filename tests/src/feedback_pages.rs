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
<button id="save">Save</button> <button id="sync">Sync</button>
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
  document.getElementById('sync').addEventListener('click', async () => {{
    try {{ await fetch('http://127.0.0.1:{closed_port}/sync'); out.textContent = 'synced'; }}
    catch (_) {{ out.textContent = 'sync failed'; }}
  }});
</script>"#
    )
}

/// The site: the typing page at `/typing`, `/api/save` answering 500, a favicon (no failure of
/// its own on navigation).
pub fn feedback_routes(token: &str, closed_port: u16) -> HashMap<&'static str, Route> {
    let mut r = HashMap::new();
    r.insert(
        "/typing",
        Route::ok("text/html", typing_page(token, closed_port)),
    );
    r.insert("/api/save", Route::ok("text/plain", "down").status(500));
    r.insert("/favicon.ico", Route::ok("image/x-icon", ""));
    r
}

/// A loopback port nothing listens on: bound by the OS, then released.
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}
