//! Pages built for the direct reader's tests: one field per typed-text verification case, a
//! failing request, a console error, and buttons that keep or move focus.

use crate::site::Route;
use std::collections::HashMap;

/// One verification case: the field, what is typed into it, and the verdict each client must
/// get.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// Case name (also the client script's case name).
    pub name: &'static str,
    /// CSS selector of the field typing starts in.
    pub selector: &'static str,
    /// What the client types (distinctive, so a sweep can look for it).
    pub literal: &'static str,
    /// The field is inside this same-origin iframe (a CSS selector in the page).
    pub frame: Option<&'static str>,
    /// Before the case, the same literal reaches this field through a path the relay cannot
    /// see (a CDP connection straight to the browser): `early` at the start of the run, else
    /// right before the case.
    pub unseen: Option<(&'static str, bool)>,
    /// Milliseconds the client waits before typing (two steps into one field 1.3 s apart).
    pub pause_ms: u64,
    /// Typed last, with the client closing its connection right after the browser answered.
    pub then_close: bool,
}

/// A case with no frame, no unseen text, no pause.
const CASE: Case = Case {
    name: "",
    selector: "",
    literal: "",
    frame: None,
    unseen: None,
    pause_ms: 0,
    then_close: false,
};

/// The cases, in the order the client script types them.
pub const CASES: [Case; 20] = [
    Case {
        name: "plain",
        selector: "#plain",
        literal: "Zq7plainLit",
        ..CASE
    },
    Case {
        name: "lossy",
        selector: "#lossy",
        literal: "Zq7lossyLit",
        ..CASE
    },
    Case {
        name: "held",
        selector: "#held",
        literal: "Zq7heldLit",
        ..CASE
    },
    Case {
        name: "selected",
        selector: "#selected",
        literal: "Zq7selLit",
        ..CASE
    },
    Case {
        name: "mask",
        selector: "#mask",
        literal: "5551234567",
        ..CASE
    },
    Case {
        name: "boxes",
        selector: "#d1",
        literal: "739418",
        ..CASE
    },
    Case {
        name: "placeholder-equal",
        selector: "#phEq",
        literal: "Zq7phLit",
        ..CASE
    },
    Case {
        name: "placeholder-edge",
        selector: "#phEdge",
        literal: "Zq7phLit",
        ..CASE
    },
    Case {
        name: "contenteditable",
        selector: "#ce",
        literal: "Zq7ceLit",
        ..CASE
    },
    Case {
        name: "password",
        selector: "#pw",
        literal: "Zq7Passw0rd!",
        ..CASE
    },
    Case {
        name: "one-time-code",
        selector: "#code",
        literal: "482913",
        ..CASE
    },
    Case {
        name: "payment",
        selector: "#card",
        literal: "4111111111111111",
        ..CASE
    },
    Case {
        name: "marked",
        selector: "#marked",
        literal: "Zq7markedLit",
        ..CASE
    },
    // The field hands focus on as it gets it: the text lands in the next one.
    Case {
        name: "bounce",
        selector: "#f",
        literal: "Zq7bounceLit",
        ..CASE
    },
    // The literal reached another field earlier by a path the relay cannot see; typed into an
    // empty read-only field, it lands nowhere.
    Case {
        name: "readonly",
        selector: "#ro",
        literal: "Zq7roLit",
        unseen: Some(("#src", true)),
        ..CASE
    },
    // The same, the other field filled moments before.
    Case {
        name: "readonly-close",
        selector: "#ro2",
        literal: "Zq7ro2Lit",
        unseen: Some(("#src2", false)),
        ..CASE
    },
    Case {
        name: "srcdoc",
        selector: "#inner",
        literal: "Zq7frameLit",
        frame: Some("#srcdoc"),
        ..CASE
    },
    Case {
        name: "refill-1",
        selector: "#refill",
        literal: "Zq7refillOne",
        ..CASE
    },
    Case {
        name: "refill-2",
        selector: "#refill",
        literal: "Zq7refillTwo",
        pause_ms: 1300,
        ..CASE
    },
    Case {
        name: "last",
        selector: "#last",
        literal: "Zq7lastLit",
        then_close: true,
        ..CASE
    },
];

/// The verification page.
pub fn verify_page() -> String {
    r#"<!doctype html><meta charset="utf-8"><title>Typing cases</title>
<style>input,div[contenteditable]{display:inline-block;margin:2px;width:160px;min-height:18px;border:1px solid #888}#boxes input{width:18px}</style>
<button id="fail" onclick="fetch('/boom?token=planted').then(r => console.error('save failed: ' + r.status))">Save</button> <button id="keep" onmousedown="event.preventDefault()">Keep focus</button> <a id="next" href="/done">Next</a>
<input id="plain" name="nickname">
<input id="lossy" name="lossy">
<input id="held" name="held" value="Zq7heldLit" maxlength="10">
<input id="selected" name="selected" value="Zq7selLit">
<input id="mask" name="phone" type="tel">
<div id="boxes"><input id="d1" name="d1" maxlength="3" inputmode="numeric"><input id="d2" name="d2" maxlength="3" inputmode="numeric"></div>
<input id="phEq" name="greeting" placeholder="Zq7phLit">
<input id="phEdge" name="greeting2" placeholder="Zq7phLit and more">
<div id="ce" contenteditable="true"></div>
<input id="pw" name="password" type="password" autocomplete="current-password">
<input id="code" name="code" autocomplete="one-time-code" inputmode="numeric">
<input id="card" name="cardnumber" autocomplete="cc-number">
<div data-sensitive><input id="marked" name="memo"></div>
<input id="f" name="first" onfocus="document.getElementById('g').focus()"><input id="g" name="second">
<input id="src" name="source"><input id="ro" name="copy" readonly>
<input id="src2" name="source2"><input id="ro2" name="copy2" readonly>
<iframe id="srcdoc" style="height:40px" srcdoc="<input id=inner name=inner>"></iframe>
<input id="refill" name="refill"> <input id="last" name="last">
<script>
  // An owner that drops characters on re-render: every insertion loses its last character.
  const lossy = document.getElementById('lossy');
  lossy.addEventListener('input', () => setTimeout(() => { lossy.value = lossy.value.slice(0, -1); }, 0));
  // A phone mask that rewrites what is typed.
  const mask = document.getElementById('mask');
  mask.addEventListener('input', () => {
    const d = mask.value.replace(/\D/g, '').slice(0, 10);
    mask.value = d.length > 6 ? `(${d.slice(0, 3)}) ${d.slice(3, 6)}-${d.slice(6)}`
      : d.length > 3 ? `(${d.slice(0, 3)}) ${d.slice(3)}` : d;
  });
  // Split boxes (three digits each, not a one-digit code row) that move focus on when full.
  const d1 = document.getElementById('d1');
  d1.addEventListener('input', () => { if (d1.value.length === 3) document.getElementById('d2').focus(); });
</script>"#
        .to_owned()
}

/// Routes of the observer test site: the verification page, a 500, a page after navigation.
pub fn observer_routes() -> HashMap<&'static str, Route> {
    let mut r = HashMap::new();
    r.insert("/verify", Route::ok("text/html", verify_page()));
    r.insert("/boom", Route::ok("text/plain", "boom").status(500));
    r.insert(
        "/done",
        Route::ok(
            "text/html",
            "<!doctype html><title>Done</title><h1>done</h1>",
        ),
    );
    r.insert(
        "/noisy",
        Route::ok(
            "text/html",
            "<!doctype html><title>Noisy</title><h1>noisy</h1><script>console.error('noisy page error'); fetch('/missing?token=planted');</script>",
        ),
    );
    r
}

/// A sign-in page with a broken image and a console error, and a welcome page whose API call
/// fails: the login flow of the observer's end-to-end test.
pub fn login_routes() -> HashMap<&'static str, Route> {
    let mut r = HashMap::new();
    r.insert(
        "/login",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Sign in</title>
<img src="/logo.png" alt="logo">
<form action="/welcome" method="get">
  <input id="user" name="user" type="email" autocomplete="username">
  <input id="password" name="password" type="password" autocomplete="current-password">
  <button id="submit" type="submit">Sign in</button>
</form>
<script>console.error('analytics blocked');</script>"#,
        ),
    );
    r.insert(
        "/welcome",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Welcome</title><h1>Welcome</h1>
<script>fetch('/api/profile').then(r => { if (!r.ok) console.error('profile failed: ' + r.status); document.body.dataset.loaded = 'yes'; });</script>"#,
        ),
    );
    r.insert(
        "/api/profile",
        Route::ok("application/json", "{\"error\":\"boom\"}").status(500),
    );
    r
}

/// The colour typed text is drawn in on the hostile pages, and nowhere else on them: a kept
/// frame with pixels of it shows a field's content (see `tests/tests/hostile_pages.rs`).
pub const SECRET_COLOUR: &str = "#ff00ff";

/// Style of the hostile pages: typed text large and magenta, everything else black on white,
/// the caret hidden (it would be magenta too).
const HOSTILE_STYLE: &str =
    "<style>body{margin:8px;font:16px sans-serif;color:#000;background:#fff}\
input{display:block;font:bold 44px monospace;color:#ff00ff;caret-color:transparent;width:92%;\
border:1px solid #888;margin:4px 0;background:#fff}.row input{display:inline-block;width:44px}\
#blank{height:80px}</style>";

/// A page of the hostile site: `body` below the common style, with a neutral area to click.
fn hostile(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><meta charset=\"utf-8\"><title>{title}</title>{HOSTILE_STYLE}{body}<div id=\"blank\">·</div>"
    )
}

/// Pages the field test found the screenshot veto blind to: a payment page left by navigations
/// that replace no document, code boxes, a password in a text field, fields named only by their
/// label, a field that turns into a password and back. Typed text shows magenta.
pub fn hostile_routes() -> HashMap<&'static str, Route> {
    let mut r = HashMap::new();
    r.insert(
        "/pay",
        Route::ok(
            "text/html",
            hostile(
                "Pay",
                r##"<input id="pw" type="password" autocomplete="current-password" name="pw">
<button id="show" onclick="document.getElementById('pw').type = 'text'">Show password</button>
<input id="cc" autocomplete="cc-number" name="cc">
<a id="receipt" href="#receipt">receipt</a>"##,
            ),
        ),
    );
    r.insert("/nocontent", Route::ok("text/plain", "").status(204));
    // No failed favicon request: a failure would park the observer's frame until the next page.
    r.insert("/favicon.ico", Route::ok("image/x-icon", ""));
    r.insert(
        "/download",
        Route::ok("application/octet-stream", "receipt")
            .header("Content-Disposition: attachment; filename=\"receipt.txt\""),
    );
    r.insert(
        "/next",
        Route::ok("text/html", hostile("Next", "<h1>next page</h1>")),
    );
    // One field per document, chosen by the query (`?f=otp`): each gets a fresh document.
    r.insert(
        "/field",
        Route::ok(
            "text/html",
            hostile(
                "Field",
                r#"<div id="fields"></div>
<template id="otp"><div class="row"><input id="o1" autocomplete="one-time-code" maxlength="1" inputmode="numeric"><input id="o2" maxlength="1" inputmode="numeric"><input id="o3" maxlength="1" inputmode="numeric"><input id="o4" maxlength="1" inputmode="numeric"><input id="o5" maxlength="1" inputmode="numeric"><input id="o6" maxlength="1" inputmode="numeric"></div></template>
<template id="digits"><div class="row"><input id="o1" aria-label="Digit 1"><input id="o2" aria-label="Digit 2"><input id="o3" aria-label="Digit 3"><input id="o4" aria-label="Digit 4"><input id="o5" aria-label="Digit 5"><input id="o6" aria-label="Digit 6"></div></template>
<template id="textpw"><label for="f1">Password</label><input id="f1" type="text" name="password"></template>
<template id="card"><label>Card number <input id="f1" name="card" inputmode="numeric"></label></template>
<template id="flip"><label for="f1">Your word</label><input id="f1" name="word"><button id="show" onclick="document.getElementById('f1').type = 'text'">Show</button></template>
<script>
  const which = new URLSearchParams(location.search).get('f');
  const t = document.getElementById(which);
  if (t) document.getElementById('fields').append(t.content.cloneNode(true));
  // Code boxes that move focus on after each digit.
  const boxes = Array.from(document.querySelectorAll('.row input'));
  boxes.forEach((b, i) => b.addEventListener('input', () => { if (b.value.length >= 1 && boxes[i + 1]) boxes[i + 1].focus(); }));
  // A field that becomes a password field after three characters.
  if (which === 'flip') {
    const f = document.getElementById('f1');
    f.removeAttribute('name');
    f.addEventListener('input', () => { if (f.value.length >= 3 && f.type !== 'password' && !f.dataset.shown) f.type = 'password'; });
    document.getElementById('show').addEventListener('click', () => { f.dataset.shown = '1'; });
  }
</script>"#,
            ),
        ),
    );
    r
}
