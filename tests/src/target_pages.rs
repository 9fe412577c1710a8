//! The pages of the locator tests (`tests/tests/e2e/targets.rs`): one element per locator kind
//! the relay's page agent records for a click or a typing step, a page that echoes what is typed
//! into a button's name, a label and a heading, and a page of cases for the agent's choice of
//! locator (order, uniqueness, retargeting).

use crate::site::Route;
use std::collections::HashMap;

/// What the locator tests type, each distinctive, so a sweep can look for it.
pub mod typed {
    /// Into the email field (`{role: textbox, name: Email}`).
    pub const EMAIL: &str = "Zr7mail@example.test";
    /// Into the password field (`{label: Password}`); registered as a secret by name.
    pub const PASSWORD: &str = "Zr7Pass-word!42";
    /// The name the password is registered under.
    pub const PASSWORD_NAME: &str = "ACCOUNT_PASSWORD";
    /// Into the textarea (`{placeholder: …}`).
    pub const MESSAGE: &str = "Zr7MessageTargetLit";
    /// Into the field found by its name only (`{css: …}`).
    pub const NICK: &str = "Zr7NickTargetLit";
    /// Into the field whose text the echo page copies into a button, a label and a heading.
    pub const ECHOED: &str = "Zr7EchoTargetLit";
    /// Into the field whose label then holds [`ECHOED`].
    pub const SECOND: &str = "Zr7SecondTargetLit";

    /// Every literal typed.
    pub const ALL: [&str; 6] = [EMAIL, PASSWORD, MESSAGE, NICK, ECHOED, SECOND];
}

/// `/kinds`: an element per locator kind. `/echo`: the echoing page. `/order`: the agent's
/// cases, each marked `data-case`.
pub fn target_routes() -> HashMap<&'static str, Route> {
    let mut r = HashMap::new();
    r.insert(
        "/kinds",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Kinds</title>
<button data-testid="save">Save</button>
<button>Sign in</button>
<label for="email">Email</label><input id="email" type="email">
<label for="pw">Password</label><input id="pw" type="password">
<textarea placeholder="Your message"></textarea>
<input name="nickname">
<div id="tile" style="width:80px;height:30px">Tile</div>
<iframe id="inner" srcdoc="<!doctype html><button>Inside</button>"></iframe>"#,
        ),
    );
    r.insert(
        "/echo",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Echo</title>
<label for="who">Your name</label><input id="who">
<label for="next" id="nextLabel">Next field</label><input id="next">
<h2 id="greet">Hello</h2>
<button id="go">Continue</button>
<script>
document.getElementById('who').addEventListener('input', (e) => {
  const v = e.target.value;
  document.getElementById('go').textContent = 'Continue as ' + v;
  document.getElementById('nextLabel').textContent = 'Note for ' + v;
  document.getElementById('greet').textContent = 'Hello ' + v;
  console.error('greeted ' + v);
});
</script>"#,
        ),
    );
    r.insert(
        "/order",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Order</title>
<button data-testid="t1" data-case="testid">Go</button>
<button data-testid="twin">Twin</button><button data-testid="twin" data-case="role-when-testid-repeats">Twin two</button>
<div id="links"><a href="/x" data-case="css-when-name-is-a-substring">Read more</a> <a href="/y">Read more about it</a></div>
<button><span data-case="retarget-to-button">Icon</span> Delete</button>
<label>Phone <input type="tel" data-case="textbox-named-by-wrapping-label"></label>
<input type="password" aria-label="Secret word" data-case="label-when-no-role">
<button style="display:none">Hidden</button><button data-case="role-ignores-hidden">Hidden</button>
<input placeholder="Search" data-case="placeholder-when-no-name">
<input name="q" data-case="css-by-name">
<section><div><p><span data-case="nothing-unique">plain</span></p></div></section>
<section><div><p><span>plain</span></p></div></section>
<button data-case="long-name-cut-at-a-word">one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen</button>
<label for="cb" data-case="label-stands-for-its-control">Remember me</label><input type="checkbox" id="cb">
<div role="button" data-case="explicit-role">Custom action</div>
<button id="close1" data-case="name-held-by-a-childs-label">Close</button><button><span aria-label="Close window">x</span></button>"#,
        ),
    );
    r
}
