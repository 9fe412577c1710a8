//! Pages of the typing-truth tests (`tests/tests/e2e/otp_boxes.rs`, `verdict_truth.rs`): a
//! one-time code entered a digit per box that the page echoes everywhere, and fields whose
//! verdicts were false through the real MCP servers (issue 38, items 1 and 6).

use crate::site::Route;
use std::collections::HashMap;

/// Six one-digit boxes (`maxlength=1`, the first `autocomplete=one-time-code`), focus moving to
/// the next box as a digit lands. With all six filled the page echoes the code into the page,
/// its title and a console error, asks `GET /api/verify/<code>` (404) and then opens
/// `/verify/<code>` (404): everything a typed code can leak through.
pub const OTP_PAGE: &str = r#"<!doctype html><meta charset="utf-8"><title>Verify your sign-in</title><link rel="icon" href="data:,">
<form id="verify" onsubmit="return false">
  <p>Enter the 6-digit code we sent you</p>
  <div class="row">
    <input id="o1" aria-label="Digit 1" maxlength="1" inputmode="numeric" autocomplete="one-time-code">
    <input id="o2" aria-label="Digit 2" maxlength="1" inputmode="numeric">
    <input id="o3" aria-label="Digit 3" maxlength="1" inputmode="numeric">
    <input id="o4" aria-label="Digit 4" maxlength="1" inputmode="numeric">
    <input id="o5" aria-label="Digit 5" maxlength="1" inputmode="numeric">
    <input id="o6" aria-label="Digit 6" maxlength="1" inputmode="numeric">
  </div>
</form>
<p id="out"></p>
<script>
  const boxes = Array.from(document.querySelectorAll('.row input'));
  let sent = false;
  const check = () => {
    const code = boxes.map((b) => b.value).join('');
    if (sent || code.length < 6) return;
    sent = true;
    const said = 'code ' + code + ' expired';
    document.getElementById('out').textContent = said;
    document.title = said;
    console.error(said);
    fetch('/api/verify/' + code).finally(() => { location.href = '/verify/' + encodeURIComponent(code); });
  };
  boxes.forEach((b, i) => b.addEventListener('input', () => {
    if (b.value.length >= 1 && boxes[i + 1]) boxes[i + 1].focus();
    check();
  }));
</script>"#;

/// The text a contenteditable field of the verdict page holds before typing.
pub const PREFILLED: &str = "Pre8Hb";

/// One field of the verdict page and how an agent types into it.
#[derive(Debug, Clone, Copy)]
pub struct VerdictCase {
    /// Case name.
    pub name: &'static str,
    /// The field's accessible name (`textbox "<label>"` in the servers' snapshots).
    pub label: &'static str,
    /// The field's id.
    pub id: &'static str,
    /// What the agent types.
    pub literal: &'static str,
    /// Key by key, one `press_key` call per character, instead of one fill.
    pub keys: bool,
}

/// The cases, in page order.
pub const VERDICT_CASES: [VerdictCase; 5] = [
    // An ordinary field: the control.
    VerdictCase {
        name: "plain",
        label: "Plain field",
        id: "plain",
        literal: "Zq9plainTruth",
        keys: false,
    },
    // A contenteditable holding `Pre8Hb`, filled with `Pre8HbFkpxU`: chrome-devtools-mcp types
    // only `FkpxU`, at the caret its focus leaves at the start (`FkpxUPre8Hb`).
    VerdictCase {
        name: "prefixed",
        label: "Prefixed notes",
        id: "prefixed",
        literal: "Pre8HbFkpxU",
        keys: false,
    },
    // A contenteditable holding exactly the text it is filled with.
    VerdictCase {
        name: "exact",
        label: "Exact notes",
        id: "exact",
        literal: PREFILLED,
        keys: false,
    },
    // An empty contenteditable typed into one key per call.
    VerdictCase {
        name: "keyed",
        label: "Keyed notes",
        id: "keyed",
        literal: "Kq7x",
        keys: true,
    },
    // A field the page empties 400 ms after the last input.
    VerdictCase {
        name: "cleared",
        label: "Coupon code",
        id: "cleared",
        literal: "Zq9clearedTruth",
        keys: false,
    },
];

/// The verdict page: one field per case.
pub const VERDICT_PAGE: &str = r#"<!doctype html><meta charset="utf-8"><title>Verdicts</title><link rel="icon" href="data:,">
<style>[contenteditable]{border:1px solid #888;min-height:18px;width:240px;margin:4px 0}</style>
<label for="plain">Plain field</label><input id="plain" name="plain">
<div id="prefixed" contenteditable="true" role="textbox" aria-label="Prefixed notes">Pre8Hb</div>
<div id="exact" contenteditable="true" role="textbox" aria-label="Exact notes">Pre8Hb</div>
<div id="keyed" contenteditable="true" role="textbox" aria-label="Keyed notes"></div>
<label for="cleared">Coupon code</label><input id="cleared" name="coupon">
<script>
  // Emptied 400 ms after the last input, as a page that rejects a coupon does.
  const cleared = document.getElementById('cleared');
  let timer = null;
  cleared.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => { cleared.value = ''; }, 400);
  });
</script>"#;

/// The fields of the load page: (id, accessible name). Typing `text` into one leaves it holding
/// `text` only in the plain field and the text area; the others cut it (`maxlength=5`), keep its
/// digits, upper-case it, or empty it 400 ms after the last input.
pub const LOAD_FIELDS: [(&str, &str); 6] = [
    ("plain", "Load plain"),
    ("area", "Load area"),
    ("short", "Load short"),
    ("digits", "Load digits"),
    ("upper", "Load upper"),
    ("cleared", "Load coupon"),
];

/// The load page: one field per way typing ends, and `window.loadValues()`, which answers the
/// fields' values once 600 ms passed since the last input (the coupon field has been emptied
/// by then).
pub const LOAD_PAGE: &str = r#"<!doctype html><meta charset="utf-8"><title>Load</title><link rel="icon" href="data:,">
<input id="plain" aria-label="Load plain">
<textarea id="area" aria-label="Load area"></textarea>
<input id="short" aria-label="Load short" maxlength="5">
<input id="digits" aria-label="Load digits">
<input id="upper" aria-label="Load upper">
<input id="cleared" aria-label="Load coupon">
<script>
  let last = 0;
  document.addEventListener('input', () => { last = Date.now(); }, true);
  const digits = document.getElementById('digits');
  digits.addEventListener('input', () => { digits.value = digits.value.replace(/\D/g, ''); });
  const upper = document.getElementById('upper');
  upper.addEventListener('input', () => { const at = upper.selectionStart; upper.value = upper.value.toUpperCase(); upper.setSelectionRange(at, at); });
  const cleared = document.getElementById('cleared');
  let timer = null;
  cleared.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(() => { cleared.value = ''; }, 400); });
  window.loadValues = () => new Promise((done) => setTimeout(() => {
    done(JSON.stringify(['plain', 'area', 'short', 'digits', 'upper', 'cleared'].map((id) => document.getElementById(id).value)));
  }, Math.max(0, last + 600 - Date.now())));
</script>"#;

/// The site: `/otp`, `/verdicts` and `/load`; `/verify/…` and `/api/verify/…` are not found
/// (404).
pub fn typing_routes() -> HashMap<&'static str, Route> {
    let mut r = HashMap::new();
    r.insert("/otp", Route::ok("text/html", OTP_PAGE));
    r.insert("/verdicts", Route::ok("text/html", VERDICT_PAGE));
    r.insert("/load", Route::ok("text/html", LOAD_PAGE));
    r.insert("/favicon.ico", Route::ok("image/x-icon", ""));
    r
}
