//! The planted-secret session of the privacy sweeps (`evidence_sweep.rs`, `fleet.rs`): the
//! secrets `clients/sweep.mjs` plants through the relay, the local site it runs against, and the
//! list a sweep searches every byte for.

use crate::site::Route;
use std::collections::HashMap;

pub const PASSWORD: &str = "Pl4nted-Passw0rd!x";
pub const USER: &str = "alice.planted@example.com";
pub const OTP: &str = "493817";
pub const QUERY_TOKEN: &str = "qtok_7Hq2LmZ9vX4pR8sT";
pub const BEARER: &str = "bearer_Zk81PqW3nV6yT0aB";
pub const COOKIE: &str = "ck_Q9wE2rT5yU8iO1pA";
pub const SESSION_ID: &str = "sid_M4nB7vC0xZ3lK6jH";
pub const API_KEY: &str = "sk_live_Planted51bE8dF2gH6jK9";
pub const ENV_SECRET: &str = "env_Secret_Vb29Xq77";
// A real-looking HS256 JWT ({"sub":"planted"}).
pub const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJwbGFudGVkIiwiaWF0IjoxNzAwMDAwMDAwfQ.4pcPyMD09olPSyXnrXCjTwXyr4BsezdI1AVTmud2fU4";

pub fn login_page() -> String {
    format!(
        r#"<!doctype html><title>Sign in</title>
<form action="/welcome" method="get">
  <input id="user" name="user" type="email" autocomplete="username">
  <input id="password" name="password" type="password" autocomplete="current-password">
  <input id="otp" name="otp" type="text" inputmode="numeric" autocomplete="one-time-code">
  <button id="submit" type="submit">Sign in</button>
</form>
<script>console.warn("login page for {ENV_SECRET}");</script>"#
    )
}

pub fn site_routes() -> HashMap<&'static str, Route> {
    let mut r = HashMap::new();
    r.insert("/login", Route::ok("text/html", login_page()));
    r.insert(
        "/welcome",
        Route::ok("text/html", "<title>Welcome</title><h1>hi</h1>")
            .header(format!("Set-Cookie: session={COOKIE}; Path=/"))
            .header("Set-Cookie: theme=dark; Path=/"),
    );
    r.insert("/boom", Route::ok("text/plain", "boom").status(500));
    r.insert("/hang", Route::hanging());
    r.insert(
        "/api/private",
        Route::ok("application/json", "{\"ok\":true}").authorized_by(format!("Bearer {BEARER}")),
    );
    r
}

/// A port nothing listens on (for a refused request).
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// The `sweep.mjs` configuration for a relay at `endpoint` and the site at `site_origin`.
pub fn sweep_config(endpoint: &str, site_origin: &str) -> serde_json::Value {
    let port = site_origin.rsplit(':').next().expect("port");
    serde_json::json!({
        "endpoint": endpoint,
        "site": site_origin,
        "otherOrigin": format!("http://localhost:{port}"),
        "refused": format!("http://127.0.0.1:{}", closed_port()),
        "user": USER, "password": PASSWORD, "otp": OTP,
        "queryToken": QUERY_TOKEN, "bearer": BEARER, "jwt": JWT,
        "sessionId": SESSION_ID, "apiKey": API_KEY,
    })
}

/// Every planted value, named, plus each CDP id in both letter cases.
pub fn planted(cdp_ids: &[String]) -> Vec<(&'static str, String)> {
    let mut planted: Vec<(&str, String)> = vec![
        ("password", PASSWORD.into()),
        ("user", USER.into()),
        ("otp", OTP.into()),
        ("query token", QUERY_TOKEN.into()),
        ("bearer", BEARER.into()),
        ("cookie", COOKIE.into()),
        ("session id", SESSION_ID.into()),
        ("api key", API_KEY.into()),
        ("env secret", ENV_SECRET.into()),
        ("jwt", JWT.into()),
        (
            "jwt payload",
            JWT.split('.').nth(1).unwrap_or_default().into(),
        ),
    ];
    for id in cdp_ids {
        planted.push(("cdp id", id.clone()));
        planted.push(("cdp id (lowercase)", id.to_ascii_lowercase()));
    }
    planted
}
