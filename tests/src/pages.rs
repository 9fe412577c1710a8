//! Pages built for the active observer's tests: one field per typed-text verification case, a
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
}

/// The cases, in the order the client script types them.
pub const CASES: [Case; 13] = [
    Case {
        name: "plain",
        selector: "#plain",
        literal: "Zq7plainLit",
    },
    Case {
        name: "lossy",
        selector: "#lossy",
        literal: "Zq7lossyLit",
    },
    Case {
        name: "held",
        selector: "#held",
        literal: "Zq7heldLit",
    },
    Case {
        name: "selected",
        selector: "#selected",
        literal: "Zq7selLit",
    },
    Case {
        name: "mask",
        selector: "#mask",
        literal: "5551234567",
    },
    Case {
        name: "boxes",
        selector: "#d1",
        literal: "739418",
    },
    Case {
        name: "placeholder-equal",
        selector: "#phEq",
        literal: "Zq7phLit",
    },
    Case {
        name: "placeholder-edge",
        selector: "#phEdge",
        literal: "Zq7phLit",
    },
    Case {
        name: "contenteditable",
        selector: "#ce",
        literal: "Zq7ceLit",
    },
    Case {
        name: "password",
        selector: "#pw",
        literal: "Zq7Passw0rd!",
    },
    Case {
        name: "one-time-code",
        selector: "#code",
        literal: "482913",
    },
    Case {
        name: "payment",
        selector: "#card",
        literal: "4111111111111111",
    },
    Case {
        name: "marked",
        selector: "#marked",
        literal: "Zq7markedLit",
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
<div id="boxes"><input id="d1" name="d1" maxlength="1" inputmode="numeric"><input id="d2" name="d2" maxlength="1" inputmode="numeric"><input id="d3" name="d3" maxlength="1" inputmode="numeric"><input id="d4" name="d4" maxlength="1" inputmode="numeric"><input id="d5" name="d5" maxlength="1" inputmode="numeric"><input id="d6" name="d6" maxlength="1" inputmode="numeric"></div>
<input id="phEq" name="greeting" placeholder="Zq7phLit">
<input id="phEdge" name="greeting2" placeholder="Zq7phLit and more">
<div id="ce" contenteditable="true"></div>
<input id="pw" name="password" type="password" autocomplete="current-password">
<input id="code" name="code" autocomplete="one-time-code" inputmode="numeric">
<input id="card" name="cardnumber" autocomplete="cc-number">
<div data-sensitive><input id="marked" name="memo"></div>
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
  // Code boxes that move focus to the next box after each digit.
  for (let i = 1; i < 6; i += 1) {
    const box = document.getElementById('d' + i);
    box.addEventListener('input', () => { if (box.value.length === 1) document.getElementById('d' + (i + 1)).focus(); });
  }
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
