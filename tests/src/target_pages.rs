//! The pages of the locator and replay tests (`tests/tests/e2e/targets.rs`, `export.rs`): one
//! element per locator kind the relay's page agent records for a click or a typing step, a page
//! that echoes what is typed into a button's name, a label and a heading, a page of cases for
//! the agent's choice of locator (order, uniqueness across shadow roots, frames two levels down,
//! hidden text, generated ids, retargeting), and a shop whose every control tells the server
//! what was done to it ([`LogSite`]), so a replay is checked by its effects.

use crate::site::Route;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

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
<div id="links"><a href="/x" data-case="exact-when-another-link-holds-the-name">Read more</a> <a href="/y">Read more about it</a></div>
<button data-aim="retarget-to-button"><span data-case="retarget-to-button">Icon</span> Delete</button>
<label>Phone <input type="tel" data-case="textbox-named-by-wrapping-label"></label>
<input type="password" aria-label="Secret word" data-case="label-when-no-role">
<button style="display:none">Hidden</button><button data-case="role-ignores-hidden">Hidden</button>
<input placeholder="Search" data-case="placeholder-when-no-name">
<input name="q" data-case="css-by-name">
<section><div><p><span data-case="nothing-unique">plain</span></p></div></section>
<section><div><p><span>plain</span></p></div></section>
<button data-case="long-name-cut-at-a-word">one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen</button>
<label for="cb" data-case="label-stands-for-its-control">Remember me</label><input type="checkbox" id="cb" data-aim="label-stands-for-its-control">
<div role="button" data-case="explicit-role">Custom action</div>
<button id="close1" data-case="exact-when-a-childs-label-holds-the-name">Close</button><button><span aria-label="Close window">x</span></button>
<button data-case="name-leaves-hidden-text-out">Archive <span style="display:none">all drafts</span></button>
<button data-case="exact-when-a-longer-name-holds-it">Edit</button><button>Edit profile</button>
<div id="r-7f3a9c" class="Tile_tile__x7Hq2" data-case="text-when-the-id-looks-generated">Quarterly tile</div>
<div id="r-12345c" class="Card_card__3xK9a" data-case="nothing-but-a-generated-id">Card</div><div class="Card_card__3xK9a">Card</div>
<button>Shadow twin</button><order-widget></order-widget>
<iframe id="outer" src="/order-outer"></iframe>
<script>
customElements.define('order-widget', class extends HTMLElement {
  constructor() {
    super();
    this.attachShadow({ mode: 'open' }).innerHTML =
      '<div id="widget-inner"><button data-case="css-when-a-shadow-twin-shares-the-name">Shadow twin</button>' +
      '<button data-testid="in-shadow" data-case="testid-inside-a-shadow-root">Inner</button></div>';
  }
});
</script>"#,
        ),
    );
    r.insert(
        "/order-outer",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Outer</title><iframe src="/order-inner"></iframe>"#,
        ),
    );
    r.insert(
        "/order-inner",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Inner</title><button data-case="two-frames-down">Deep</button>"#,
        ),
    );
    r
}

/// What the replay tests type, choose and upload.
pub mod shop {
    /// Typed into the coupon field, registered as the secret [`COUPON_NAME`].
    pub const COUPON: &str = "Zr7Coupon-2024-Spring";
    /// The name the coupon is registered under.
    pub const COUPON_NAME: &str = "COUPON_CODE";
    /// The option chosen (the page starts on "Red").
    pub const COLOUR: &str = "Blue";
    /// What the uploaded file holds.
    pub const RECEIPT: &str = "receipt: 3 items, 41.20";
}

/// The script every shop page logs with: a synchronous request per event, so the server has it
/// before the event's handler returns (and so before the replay's action does).
const LOG_SCRIPT: &str = r#"<script>
function log(q) {
  const x = new XMLHttpRequest();
  x.open('GET', '/log?' + q, false);
  x.send();
}
</script>"#;

/// `/shop`: one control per step the replay must repeat, each logging what was done to it
/// (`/log?…`): a `<select>`, a file input, a double-click counter, a hover menu, a tile with a
/// generated id, a button in an open shadow root with a twin outside, a button two frames down,
/// a button whose name has hidden text, a coupon field (typed) and Apply, which goes to `/done`.
/// `/gaps`: a button, an element with no unique locator, one picked out only by a generated id,
/// and a last button. Every element a step targets is marked `data-case`.
pub fn shop_routes() -> HashMap<&'static str, Route> {
    let mut r = HashMap::new();
    let shop = format!(
        r#"<!doctype html><title>Shop</title>
<style>.menu .sub {{ display: none; }} .menu:hover .sub {{ display: block; }}</style>
{LOG_SCRIPT}
<label for="colour">Colour</label>
<select id="colour" data-case="colour" onchange="log('select=' + this.value)"><option>Red</option><option>Blue</option><option>Green</option></select>
<label for="receipt">Receipt</label>
<input id="receipt" type="file" data-case="receipt" onchange="const f = this.files[0]; log('file=' + encodeURIComponent(f.name) + '&size=' + f.size)">
<button data-testid="counter" data-case="counter" onclick="log('click=counter')" ondblclick="log('dblclick=counter')">Count</button>
<div class="menu"><button data-case="products">Products</button><div class="sub"><a href="/pricing" data-case="pricing" onclick="event.preventDefault(); log('menu=pricing')">Pricing</a></div></div>
<div class="Tile_tile__x7Hq2" data-case="tile" onclick="log('tile=1')">Quarterly tile</div>
<button onclick="log('twin=light')">Shadow action</button>
<shop-widget></shop-widget>
<iframe id="outer" src="/frame-outer"></iframe>
<button data-case="save" onclick="log('save=1')">Save <span style="display:none">draft</span></button>
<label for="coupon">Coupon</label><input id="coupon" data-case="coupon">
<button id="apply" data-case="apply" onclick="log('apply=' + document.getElementById('coupon').value.length); location.href = '/done'">Apply</button>
<script>
// An id made anew at each load, as frameworks make them.
document.querySelector('.Tile_tile__x7Hq2').id = 'r-' + (100000 + Math.floor(Math.random() * 900000)) + 'c';
customElements.define('shop-widget', class extends HTMLElement {{
  constructor() {{
    super();
    const root = this.attachShadow({{ mode: 'open' }});
    root.innerHTML = '<div id="widget-inner"><button data-case="shadow">Shadow action</button></div>';
    root.querySelector('button').onclick = () => log('twin=shadow');
  }}
}});
</script>"#
    );
    r.insert("/shop", Route::ok("text/html", shop));
    r.insert(
        "/frame-outer",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Outer</title><iframe src="/frame-inner"></iframe>"#,
        ),
    );
    r.insert(
        "/frame-inner",
        Route::ok(
            "text/html",
            r#"<!doctype html><title>Inner</title><button data-case="deep" onclick="top.log('deep=1')">Deep</button>"#,
        ),
    );
    r.insert(
        "/done",
        Route::ok(
            "text/html",
            "<!doctype html><title>Done</title><h1>Thanks</h1>",
        ),
    );
    let gaps = format!(
        r#"<!doctype html><title>Gaps</title>
{LOG_SCRIPT}
<button data-case="first" onclick="log('first=1')">First</button>
<section><span class="x" data-case="plain" onclick="log('plain=1')">plain</span></section>
<section><span class="x" onclick="log('plain=2')">plain</span></section>
<div class="Card_card__3xK9a" data-case="card" onclick="log('card=1')">Card</div>
<div class="Card_card__3xK9a" onclick="log('card=2')">Card</div>
<button data-case="after" onclick="log('after=1')">After</button>
<script>
for (const c of document.querySelectorAll('.Card_card__3xK9a')) {{
  c.id = 'r-' + (100000 + Math.floor(Math.random() * 900000)) + 'c';
}}
</script>"#
    );
    r.insert("/gaps", Route::ok("text/html", gaps));
    r
}

/// A site on loopback serving fixed routes and recording every `/log?QUERY` it is asked for
/// (answered 204), in order. Stops on drop.
pub struct LogSite {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    log: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LogSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LogSite {
    /// Serves `routes` (path without query → response) and records `/log` queries.
    pub async fn start(routes: HashMap<&'static str, Route>) -> LogSite {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind site");
        let origin = format!("http://{}", listener.local_addr().expect("addr"));
        let routes = Arc::new(routes);
        let log = Arc::new(Mutex::new(Vec::new()));
        let seen = log.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                tokio::spawn(answer(tcp, routes.clone(), seen.clone()));
            }
        });
        LogSite { origin, log, task }
    }

    /// The queries logged so far, in order.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().expect("log").clone()
    }

    /// Forgets what was logged.
    pub fn clear(&self) {
        self.log.lock().expect("log").clear();
    }
}

/// One request on `tcp`: a route, or `/log` recorded.
async fn answer(
    mut tcp: tokio::net::TcpStream,
    routes: Arc<HashMap<&'static str, Route>>,
    log: Arc<Mutex<Vec<String>>>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut head = Vec::new();
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match tcp.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let target = text.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let resp = if path == "/log" {
        log.lock().expect("log").push(query.to_owned());
        "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
    } else {
        let route = routes
            .get(path)
            .cloned()
            .unwrap_or_else(|| Route::ok("text/plain", "not found").status(404));
        format!(
            "HTTP/1.1 {} Status\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
            route.status,
            route.content_type,
            route.body.len(),
            route.body
        )
    };
    let _ = tcp.write_all(resp.as_bytes()).await;
    let _ = tcp.shutdown().await;
}
