//! Test fixtures for the report: runs written directly as manifest + journal lines (the way a
//! producer in another language would), small real PNGs, a realistic login flow and a synthetic
//! long run. Shared by `report/tests`, the bench and `tests/tests/report_*.rs` (via `#[path]`).

#![allow(dead_code)]

use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};

/// 2026-03-14T09:26:53.000Z, the start of every fixture run.
pub const T0: u64 = 1_773_480_413_000;

/// Formats milliseconds since the epoch as the journal does.
pub fn ts(ms: u64) -> String {
    cdp_evidence::time::format_rfc3339_millis(
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms),
    )
}

/// A run directory written by hand.
pub struct RunBuilder {
    pub dir: PathBuf,
    pub records: Vec<Value>,
    raw: Vec<(usize, String)>,
    seq: u64,
    artifacts: u64,
}

impl RunBuilder {
    /// Creates `dir` and `dir/artifacts`.
    pub fn new(dir: &Path) -> RunBuilder {
        fs::create_dir_all(dir.join("artifacts")).unwrap();
        RunBuilder {
            dir: dir.to_path_buf(),
            records: Vec::new(),
            raw: Vec::new(),
            seq: 0,
            artifacts: 0,
        }
    }

    /// Writes `manifest.json` as given.
    pub fn manifest(&self, v: &Value) {
        fs::write(
            self.dir.join("manifest.json"),
            serde_json::to_vec_pretty(v).unwrap(),
        )
        .unwrap();
    }

    /// A finalized version-1 manifest for run `id`.
    pub fn finalized_manifest(&self, id: &str, end_ms: u64, extra_totals: Value) {
        let mut totals = json!({"records": self.records.len(), "artifactBytes": 0, "artifacts": self.artifacts, "droppedEvidence": 0});
        if let (Some(t), Some(e)) = (totals.as_object_mut(), extra_totals.as_object()) {
            for (k, v) in e {
                t.insert(k.clone(), v.clone());
            }
        }
        self.manifest(&json!({
            "evidenceVersion": 1,
            "runId": id,
            "sessionId": "checkout-login",
            "actionLog": "actions.jsonl",
            "status": "finalized",
            "startedAt": ts(T0),
            "createdBy": {"source": "relay", "pid": 4242},
            "artifactBudgetBytes": 104857600u64,
            "finalizedAt": ts(end_ms),
            "finalizedBy": {"source": "relay", "pid": 4242},
            "totals": totals,
            "truncation": {"artifactsTruncated": false, "artifactBudgetBytes": 104857600u64, "refusedArtifacts": 0}
        }));
    }

    /// Appends a record at `T0 + at` and returns it for more fields.
    pub fn rec(&mut self, at: u64, kind: &str, payload: Value) -> &mut Value {
        self.seq += 1;
        let ms = T0 + at;
        let status = match kind {
            "action" => "ok",
            "network" => "error",
            _ => "info",
        };
        self.records.push(json!({
            "actionId": format!("{ms:013}-{:010}-{:010}-{:08x}", 4242, self.seq, self.seq * 2654435761 % 0xffff_ffff),
            "source": "relay",
            "tool": "cdp",
            "sessionId": "checkout-login",
            "startedAt": ts(ms),
            "durationMs": 0,
            "status": status,
            "artifacts": [],
            "kind": kind,
            "payload": payload,
        }));
        self.records.last_mut().unwrap()
    }

    /// An `action` record with `method`.
    pub fn action(&mut self, at: u64, method: &str, dur: u64) -> &mut Value {
        let r = self.rec(at, "action", json!({ "method": method }));
        r["durationMs"] = json!(dur);
        r
    }

    /// A raw journal line (anything), written after the record count reached so far.
    pub fn raw_line(&mut self, line: &str) {
        self.raw.push((self.records.len(), line.to_owned()));
    }

    /// Stores an artifact and returns its relative path.
    pub fn artifact(&mut self, stem: &str, ext: &str, bytes: &[u8]) -> String {
        self.artifacts += 1;
        let name = format!("{:06}-{stem}.{ext}", self.artifacts);
        fs::write(self.dir.join("artifacts").join(&name), bytes).unwrap();
        format!("artifacts/{name}")
    }

    /// Writes the journal; `torn` is appended without a newline.
    pub fn finish_with_tail(&self, torn: Option<&str>) {
        let mut out = String::new();
        for (i, r) in self.records.iter().enumerate() {
            for (_, l) in self.raw.iter().filter(|(at, _)| *at == i) {
                out.push_str(l);
                out.push('\n');
            }
            out.push_str(&serde_json::to_string(r).unwrap());
            out.push('\n');
        }
        for (_, l) in self.raw.iter().filter(|(at, _)| *at == self.records.len()) {
            out.push_str(l);
            out.push('\n');
        }
        if let Some(t) = torn {
            out.push_str(t);
        }
        fs::write(self.dir.join("actions.jsonl"), out).unwrap();
    }

    pub fn finish(&self) {
        self.finish_with_tail(None);
    }
}

/// A page target as the relay records it.
pub fn target(id: &str, title: &str, url: &str) -> Value {
    json!({"targetId": id, "type": "page", "title": title, "url": url, "attached": true})
}

// --- PNG ------------------------------------------------------------------------------------

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

/// A real (uncompressed) RGB PNG of `w`×`h` pixels from `pixel(x, y)`.
pub fn png(w: u32, h: u32, pixel: impl Fn(u32, u32) -> [u8; 3]) -> Vec<u8> {
    let mut raw = Vec::with_capacity(((w * 3 + 1) * h) as usize);
    for y in 0..h {
        raw.push(0);
        for x in 0..w {
            raw.extend_from_slice(&pixel(x, y));
        }
    }
    let mut z = vec![0x78, 0x01];
    let mut chunks = raw.chunks(65_535).peekable();
    while let Some(c) = chunks.next() {
        z.push(u8::from(chunks.peek().is_none()));
        let len = c.len() as u16;
        z.extend_from_slice(&len.to_le_bytes());
        z.extend_from_slice(&(!len).to_le_bytes());
        z.extend_from_slice(c);
    }
    z.extend_from_slice(&adler32(&raw).to_be_bytes());
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8; 4], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32(&body).to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    chunk(b"IDAT", &z);
    chunk(b"IEND", &[]);
    out
}

/// A small "screenshot": a header bar, a card and some text-like lines, tinted by `seed`.
pub fn fake_screenshot(w: u32, h: u32, seed: u32) -> Vec<u8> {
    png(w, h, |x, y| {
        let tint = (seed * 37 % 200) as u8;
        if y < h / 8 {
            [30, 60u8.wrapping_add(tint / 4), 120]
        } else if x > w / 6 && x < w * 5 / 6 && y > h / 4 && y < h * 3 / 4 {
            if (y / 6) % 3 == 0 && x % 40 < 30 {
                [90, 95, 105]
            } else {
                [255, 255, 255]
            }
        } else {
            [240, 242u8, 245u8.wrapping_sub(tint / 8)]
        }
    })
}

// --- Realistic runs -------------------------------------------------------------------------

/// Ids used by the login flow.
pub const LOGIN_RUN_ID: &str = "20260314T092653000Z-5be3c1a9f04d7e21";

/// A Playwright-style login flow through the relay: 12 steps, 40 folded evaluations, 3 failed
/// requests (a 500 search, a 404 image, a refused fetch), 2 console errors, 2 screenshots
/// (`shots[0]`, `shots[1]`).
pub fn login_flow(dir: &Path, shots: [&[u8]; 2]) -> RunBuilder {
    let mut b = RunBuilder::new(dir);
    let blank = target("target:1f0c8a2d9e3b", "", "about:blank");
    let login = target(
        "target:1f0c8a2d9e3b",
        "Sign in · Acme Shop",
        "https://shop.acme.test/login",
    );
    let home = target(
        "target:1f0c8a2d9e3b",
        "Dashboard · Acme Shop",
        "https://shop.acme.test/account",
    );
    let search = target(
        "target:1f0c8a2d9e3b",
        "Search · Acme Shop",
        "https://shop.acme.test/search",
    );

    b.rec(0, "marker", json!({"marker": "runStarted", "pid": 4242}))["tool"] =
        json!("cdp-evidence");
    b.rec(
        12,
        "lifecycle",
        json!({"event": "clientConnected", "connection": 1, "detail": "browser endpoint"}),
    );
    b.action(31, "Target.attachToTarget", 4)["target"] = blank.clone();
    let mut t = 40;
    let evals = |b: &mut RunBuilder, t: &mut u64, n: usize, tgt: &Value| {
        for i in 0..n {
            let m = if i % 3 == 0 {
                "Runtime.evaluate"
            } else {
                "Runtime.callFunctionOn"
            };
            let r = b.action(*t, m, 3 + (i as u64 % 5));
            r["payload"]["bytes"] = json!(180 + i * 37);
            r["target"] = tgt.clone();
            *t += 9;
        }
    };
    evals(&mut b, &mut t, 3, &blank);

    // 1. Navigate to the login page; the hero image is missing.
    let r = b.action(120, "Page.navigate", 412);
    r["payload"]["url"] = json!("https://shop.acme.test/login");
    r["target"] = blank.clone();
    let r = b.rec(388, "network", json!({"method": "GET", "url": "https://shop.acme.test/img/hero-2x.webp", "status": 404, "resourceType": "Image", "durationMs": 41}));
    r["target"] = login.clone();
    t = 560;
    evals(&mut b, &mut t, 5, &login);
    // 2-5. Fill the form.
    let r = b.action(640, "click", 38);
    r["payload"]["point"] = json!({"x": 640, "y": 318});
    r["payload"]["detail"] = json!({"button": "left", "clickCount": 1});
    r["target"] = login.clone();
    t = 690;
    evals(&mut b, &mut t, 3, &login);
    let r = b.action(760, "type", 690);
    r["payload"]["input"] = json!({"chars": 17, "inputType": "email"});
    r["payload"]["detail"] = json!({"commands": 17});
    r["target"] = login.clone();
    let r = b.action(1510, "click", 35);
    r["payload"]["point"] = json!({"x": 640, "y": 384});
    r["payload"]["detail"] = json!({"button": "left", "clickCount": 1});
    r["target"] = login.clone();
    t = 1560;
    evals(&mut b, &mut t, 3, &login);
    let r = b.action(1620, "type", 540);
    r["payload"]["input"] = json!({"chars": 12, "inputType": "password"});
    r["payload"]["detail"] = json!({"commands": 12});
    r["target"] = login.clone();
    // 6. Submit; the account page throws while rendering.
    let r = b.action(2240, "press", 12);
    r["payload"]["detail"] = json!({"key": "Enter"});
    r["target"] = login.clone();
    t = 2300;
    evals(&mut b, &mut t, 6, &login);
    let r = b.rec(2890, "console", json!({"level": "exception", "text": "TypeError: Cannot read properties of undefined (reading 'items')\n    at renderCart (https://shop.acme.test/static/app.3f9c.js:1:48213)\n    at https://shop.acme.test/static/app.3f9c.js:1:50122", "url": "https://shop.acme.test/static/app.3f9c.js", "line": 1, "column": 48213}));
    r["target"] = home.clone();
    // 7. Screenshot of the account page.
    let shot = b.artifact("screenshot", "png", shots[0]);
    let r = b.action(3105, "Page.captureScreenshot", 164);
    r["payload"]["bytes"] = json!(shots[0].len());
    r["artifacts"] = json!([shot]);
    r["target"] = home.clone();
    t = 3300;
    evals(&mut b, &mut t, 4, &home);
    // 8-10. Search.
    let r = b.action(3480, "click", 33);
    r["payload"]["point"] = json!({"x": 982, "y": 64});
    r["payload"]["detail"] = json!({"button": "left", "clickCount": 1});
    r["target"] = home.clone();
    let r = b.action(3540, "type", 380);
    r["payload"]["input"] = json!({"chars": 9, "inputType": "search"});
    r["target"] = home.clone();
    let r = b.action(3960, "press", 9);
    r["payload"]["detail"] = json!({"key": "Enter"});
    r["target"] = home.clone();
    t = 4000;
    evals(&mut b, &mut t, 6, &search);
    let r = b.rec(4120, "network", json!({"method": "GET", "url": "https://shop.acme.test/api/search", "status": 500, "resourceType": "Fetch", "durationMs": 312, "errorText": "Internal Server Error"}));
    r["target"] = search.clone();
    let r = b.rec(4440, "console", json!({"level": "error", "text": "Failed to load resource: the server responded with a status of 500 (Internal Server Error)", "url": "https://shop.acme.test/api/search"}));
    r["target"] = search.clone();
    // 11. Export: the telemetry beacon is refused.
    let r = b.action(5200, "click", 41);
    r["payload"]["point"] = json!({"x": 1110, "y": 212});
    r["payload"]["detail"] = json!({"button": "left", "clickCount": 1});
    r["target"] = search.clone();
    t = 5260;
    evals(&mut b, &mut t, 4, &search);
    let r = b.rec(5330, "network", json!({"method": "POST", "url": "http://127.0.0.1:9/collect", "resourceType": "Fetch", "durationMs": 2, "errorText": "net::ERR_CONNECTION_REFUSED"}));
    r["target"] = search.clone();
    // 12. Final screenshot.
    let shot = b.artifact("screenshot", "png", shots[1]);
    let r = b.action(5900, "Page.captureScreenshot", 151);
    r["payload"]["bytes"] = json!(shots[1].len());
    r["artifacts"] = json!([shot]);
    r["target"] = search.clone();
    t = 6080;
    evals(&mut b, &mut t, 6, &search);
    b.action(6300, "Target.closeTarget", 20)["target"] = search.clone();
    b.rec(
        6340,
        "lifecycle",
        json!({"event": "clientDisconnected", "connection": 1, "closeCode": 1000}),
    );
    let n = b.records.len() + 1;
    b.rec(6400, "marker", json!({"marker": "runFinalized", "pid": 4242, "records": n, "artifactBytes": shots[0].len() + shots[1].len(), "droppedEvidence": 0}))["tool"] = json!("cdp-evidence");
    b.finish();
    b.finalized_manifest(
        LOGIN_RUN_ID,
        T0 + 6400,
        json!({"redactions": {"total": 9, "rules": {"cookie": 3, "query-token": 4, "jwt": 1}, "secrets": {"ACME_PASSWORD": 1}, "truncated": 0}}),
    );
    b
}

/// A long synthetic run: `steps` steps cycling through navigate/click/type/press, `shots` of
/// them screenshots of about `shot_bytes` bytes spread over the run, each step with four
/// evaluations, a failed request every 7th step and a console error every 11th.
pub fn synthetic(dir: &Path, steps: usize, shots: usize, shot_bytes: usize) -> RunBuilder {
    let mut b = RunBuilder::new(dir);
    // A w×h RGB PNG stored uncompressed is about 3·w·h bytes.
    let side = ((shot_bytes / 3) as f64).sqrt() as u32;
    let every = steps.checked_div(shots).unwrap_or(usize::MAX).max(1);
    let mut t = 0u64;
    let mut stored = 0;
    for i in 0..steps {
        let page = target(
            &format!("target:{:012x}", i / 50),
            &format!("Page {} · Synthetic", i / 10),
            &format!("https://app.synthetic.test/section/{}/item", i / 10),
        );
        t += 250;
        let shot = stored < shots && i % every == every - 1;
        let r = if shot {
            stored += 1;
            let bytes = fake_screenshot(side, side, i as u32);
            let path = b.artifact("screenshot", "png", &bytes);
            let r = b.action(t, "Page.captureScreenshot", 120);
            r["artifacts"] = json!([path]);
            r
        } else {
            match i % 4 {
                0 => {
                    let r = b.action(t, "Page.navigate", 300);
                    r["payload"]["url"] = json!(format!(
                        "https://app.synthetic.test/section/{}/item",
                        i / 10
                    ));
                    r
                }
                1 => {
                    let r = b.action(t, "click", 40);
                    r["payload"]["point"] = json!({"x": 100 + i % 700, "y": 200});
                    r
                }
                2 => {
                    let r = b.action(t, "type", 300);
                    r["payload"]["input"] = json!({"chars": 5 + i % 20, "inputType": "text"});
                    r
                }
                _ => {
                    let r = b.action(t, "press", 10);
                    r["payload"]["detail"] = json!({"key": "Tab"});
                    r
                }
            }
        };
        r["target"] = page.clone();
        for _ in 0..4 {
            t += 20;
            b.action(t, "Runtime.callFunctionOn", 4)["target"] = page.clone();
        }
        if i % 7 == 3 {
            t += 15;
            b.rec(t, "network", json!({"method": "GET", "url": format!("https://api.synthetic.test/v1/items/{i}"), "status": 503, "resourceType": "XHR", "durationMs": 80}))["target"] = page.clone();
        }
        if i % 11 == 5 {
            t += 15;
            b.rec(t, "console", json!({"level": "error", "text": format!("Error: item {i} failed to render"), "url": "https://app.synthetic.test/app.js", "line": 10, "column": i}))["target"] = page.clone();
        }
    }
    b.finish();
    b.finalized_manifest(
        "20260314T092653000Z-0000000000000500",
        T0 + t + 100,
        json!({}),
    );
    b
}

// --- Hostile input ------------------------------------------------------------------------

/// Strings a producer (or an attacker who can write the journal) might put in any field.
pub const HOSTILE: &[&str] = &[
    "<script>alert(1)</script>",
    "\"><img src=x onerror=alert(1)>",
    "'><svg/onload=alert(2)>",
    "</style><script>alert(3)</script><style>",
    "</title><script>alert(4)</script>",
    "javascript:alert(5)",
    "--><!--<script>alert(6)</script>",
    "<iframe src=\"http://127.0.0.1:9/\"></iframe>",
    "x\u{202E}gnp.exe\u{202C} \u{2066}spoof\u{2069}\u{200B}",
    "nul\0byte\u{1}\u{7f}\u{9b}\u{2028}line",
    "`` [click](javascript:alert(7)) **bold** <b>b</b> | ![i](http://127.0.0.1:9/i.png)",
    "&lt;script&gt;alert(8)&lt;/script&gt; &#x3C;script&#x3E;",
    "<a href=\"http://127.0.0.1:9/\">link</a><base href=\"http://127.0.0.1:9/\">",
    "<meta http-equiv=\"refresh\" content=\"0;url=http://127.0.0.1:9/\">",
];

/// A 20 kB hostile string.
pub fn hostile_long() -> String {
    "<script>alert(9)</script>\u{202E}".repeat(20_000 / 26)
}

/// Every string.
pub fn hostile_all() -> Vec<String> {
    let mut v: Vec<String> = HOSTILE.iter().map(|s| (*s).to_owned()).collect();
    v.push(hostile_long());
    v
}

/// A run written straight into the journal with a hostile string in every field a producer
/// can set, and in the manifest.
pub fn hostile_run(dir: &Path) -> RunBuilder {
    let mut b = RunBuilder::new(dir);
    let all = hostile_all();
    let mut at = 0u64;
    for h in &all {
        let h = h.as_str();
        let hv = json!(h);
        let tgt = json!({"targetId": h, "type": h, "title": h, "url": h, "faviconUrl": h});
        at += 100;
        let r = b.action(at, "Page.navigate", 10);
        r["payload"]["url"] = hv.clone();
        r["target"] = tgt.clone();
        r["error"] = hv.clone();
        r["tool"] = hv.clone();
        r["status"] = hv.clone();
        let r = b.action(at + 1, h, 10);
        r["payload"]["url"] = hv.clone();
        r["payload"]["detail"] = json!({ h: h, "key": h });
        r["source"] = hv.clone();
        r["sessionId"] = hv.clone();
        r["artifacts"] = json!([h, format!("artifacts/{h}.png"), format!("{h}.png")]);
        r["target"] = tgt.clone();
        let r = b.action(at + 2, "type", 10);
        r["payload"]["input"] = json!({"chars": 3, "inputType": h});
        let r = b.action(at + 3, "press", 10);
        r["payload"]["detail"] = json!({"key": h});
        let r = b.action(at + 4, "click", 10);
        r["payload"]["point"] = json!({"x": 1, "y": 2});
        r["payload"]["detail"] = json!({"button": h, "clickCount": 1});
        b.action(at + 5, "Runtime.evaluate", 1)["error"] = hv.clone();
        b.rec(
            at + 6,
            "network",
            json!({"method": h, "url": h, "status": 500, "resourceType": h, "errorText": h}),
        );
        b.rec(
            at + 7,
            "network",
            json!({"method": h, "url": h, "errorText": h, "status": h}),
        );
        b.rec(
            at + 8,
            "console",
            json!({"level": "error", "text": h, "url": h, "line": 1, "column": 2}),
        );
        b.rec(at + 9, "console", json!({"level": h, "text": h}));
        b.rec(
            at + 10,
            "lifecycle",
            json!({"event": "upstreamLost", "connection": 1, "detail": h}),
        );
        b.rec(at + 11, "marker", json!({"marker": h}));
        b.rec(
            at + 12,
            h,
            json!({ h: h, "nested": { h: [h, 1, null] }, "method": h }),
        );
        let r = b.rec(at + 13, "gesture", json!({"dx": 1}));
        r["startedAt"] = hv.clone();
        r["actionId"] = hv.clone();
        r["kind"] = hv.clone();
    }
    b.finish();
    let long = hostile_long();
    b.manifest(&json!({
        "evidenceVersion": 1,
        "runId": HOSTILE[0],
        "sessionId": HOSTILE[1],
        "status": HOSTILE[3],
        "startedAt": ts(T0),
        "actionLog": "../../etc/passwd",
        "totals": {"records": 1, "droppedEvidence": 2, "redactions": {"total": 3, "rules": {(HOSTILE[0]): 1, (long.as_str()): 2}, "secrets": {(HOSTILE[1]): 4}}},
        "truncation": {"artifactsTruncated": true, "artifactBudgetBytes": 10, "refusedArtifacts": 1},
    }));
    b
}
