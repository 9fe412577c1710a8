//! Text sanitization throughput on a realistic mixed corpus (console lines as Chromium prints
//! them, request URLs, JSON-ish application logs), each line sanitized on its own as the
//! evidence pipeline does with console messages.
//!
//! `cargo bench -p cdp-sanitize --bench throughput`; results go in BENCHMARKS.md.

use cdp_sanitize::Sanitizer;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

/// Clean lines: no secret, no id — the common case that must be nearly free.
const CLEAN: &[&str] = &[
    "Failed to load resource: the server responded with a status of 404 (Not Found)",
    "Uncaught TypeError: Cannot read properties of undefined (reading 'map')",
    "    at App (https://shop.example.com/static/js/main.4f9a1c2e.js:2:14523)",
    "    at renderWithHooks (https://shop.example.com/static/js/vendor.8b7e.js:1:88231)",
    "[HMR] Waiting for update signal from WDS...",
    "Download the React DevTools for a better development experience: https://reactjs.org/link/react-devtools",
    "GET https://api.example.com/v1/items?page=2&sort=price 500 (Internal Server Error)",
    "Access to fetch at 'https://api.example.com/v1/cart' from origin 'https://shop.example.com' has been blocked by CORS policy: No 'Access-Control-Allow-Origin' header is present on the requested resource.",
    r#"{"level":"info","time":"2024-05-01T12:00:03.120Z","msg":"request completed","method":"GET","path":"/api/items","status":200,"durationMs":12}"#,
    r#"{"level":"warn","time":"2024-05-01T12:00:04.981Z","msg":"slow query","table":"orders","rows":1532,"elapsedMs":842}"#,
    "A cookie associated with a cross-site resource at http://ads.example.net/ was set without the `SameSite` attribute.",
    "[Violation] 'requestAnimationFrame' handler took 62ms",
    "Warning: Each child in a list should have a unique \"key\" prop. Check the render method of `ProductList`.",
    "The resource https://shop.example.com/fonts/inter.woff2 was preloaded using link preload but not used within a few seconds from the window's load event.",
    "net::ERR_NAME_NOT_RESOLVED",
    "Mixed Content: The page at 'https://shop.example.com/checkout' was loaded over HTTPS, but requested an insecure image 'http://cdn.example.com/img/banner.png'.",
];

/// Lines with something to redact, drawn from the same formats.
const DIRTY: &[&str] = &[
    "Cookie: _ga=GA1.2.1234567890.1700000000; sessionid=8f1k2l3m4n5o6p7q8r9s; csrftoken=Zx9Yw8Vu7Ts6",
    "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "GET https://accounts.example.com/callback?code=4%2F0AeaYSHB9x&state=af0ifjsldkj&scope=openid 302",
    "ws://127.0.0.1:9222/devtools/page/8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1",
    r#"{"method":"Target.attachedToTarget","params":{"sessionId":"1F3B5D7F9A1C3E5F7A9B1D3F5A7C9E1B","targetInfo":{"targetId":"8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1","type":"page"}}}"#,
    r#"{"level":"debug","msg":"login","user":"bob","password":"hunter2","api_key":"sk_live_4eC39HqLyjWDarjtT1zdp7dc"}"#,
    "git remote add origin https://bob:ghp_16C7e42F292c6912E7710c838347Ae178B4a@github.com/acme/shop.git",
    "Set-Cookie: JSESSIONID=ABC123DEF456; Path=/; Secure; HttpOnly",
];

fn corpus(dirty_every: usize, lines: usize) -> Vec<String> {
    (0..lines)
        .map(|i| {
            if dirty_every > 0 && i % dirty_every == 0 {
                DIRTY[(i / dirty_every) % DIRTY.len()].to_owned()
            } else {
                CLEAN[i % CLEAN.len()].to_owned()
            }
        })
        .collect()
}

/// Percent-encoded request URLs, as console lines print them.
const URLS: &[&str] = &[
    "GET https://api.example.com/v1/search?q=caf%C3%A9%20cr%C3%A8me&page=2 404 (Not Found)",
    "GET https://shop.example.com/p/red-shoes%2Fsize-42?ref=mail%2Bweekly&utm_source=news 500",
    "Failed to load https://cdn.example.com/img/summer%20sale%20banner%402x.png",
    "fetch https://api.example.com/v1/geo?address=1600+Amphitheatre+Pkwy%2C+Mountain+View failed",
    "https://example.com/wiki/M%c3%bcnchen_(Stadt)?oldid=12345",
    "POST https://api.example.com/v1/items/42/comments?draft=true 422 (Unprocessable Entity)",
];

/// [`URLS`], with one line in 10 holding a registered secret or typed text in a mixed
/// spelling (raw `!`, `%40`; `%20` and `+`).
fn url_corpus(lines: usize) -> Vec<String> {
    (0..lines)
        .map(|i| match i % 20 {
            0 => format!(
                "GET https://api.example.com/api/use/Zq7!Mk%40gevb-{:04} 404",
                (i / 20) % 20
            ),
            10 => "GET https://api.example.com/find?q=3+Main%20Street+42 404".to_owned(),
            _ => URLS[i % URLS.len()].to_owned(),
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let sets = [
        ("clean", corpus(0, 20_000)),
        ("mixed-10pct", corpus(10, 20_000)),
        ("secret-dense", corpus(1, 20_000)),
    ];
    let mut group = c.benchmark_group("text");
    for (name, lines) in &sets {
        let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
        group.throughput(Throughput::Bytes(bytes as u64));
        let s = Sanitizer::new();
        group.bench_function(*name, |b| {
            b.iter(|| {
                for line in lines {
                    black_box(s.text_capped(black_box(line), usize::MAX));
                }
            })
        });
    }
    // Explicit secrets add one aho-corasick pass (and, where one matches, a rules round).
    let (_, mixed) = &sets[1];
    let bytes: usize = mixed.iter().map(|l| l.len() + 1).sum();
    group.throughput(Throughput::Bytes(bytes as u64));
    let s = Sanitizer::new();
    for i in 0..20 {
        let _ = s.register_secret(&format!("SECRET_{i}"), &format!("s3cr3t-value-{i:04}"));
    }
    group.bench_function("mixed-10pct+20-secrets", |b| {
        b.iter(|| {
            for line in mixed {
                black_box(s.text_capped(black_box(line), usize::MAX));
            }
        })
    });
    // Twenty typing bursts, registered keystroke by keystroke: prefix matching of echoes.
    let s = Sanitizer::new();
    for i in 0..20 {
        let mut echo = s.typed_echo();
        for c in format!("typed text number {i:04} here").chars() {
            echo.extend(c.encode_utf8(&mut [0; 4]));
        }
    }
    group.bench_function("mixed-10pct+20-typed", |b| {
        b.iter(|| {
            for line in mixed {
                black_box(s.text_capped(black_box(line), usize::MAX));
            }
        })
    });
    // Request URLs as console lines and network failures carry them: percent-encoded paths and
    // queries (`%20`, `+`, `%C3%A9`, lower-case hex), with 20 secrets and 20 typing bursts
    // registered; one line in 10 holds one of them in a mixed spelling.
    let urls = url_corpus(20_000);
    let bytes: usize = urls.iter().map(|l| l.len() + 1).sum();
    group.throughput(Throughput::Bytes(bytes as u64));
    let s = Sanitizer::new();
    for i in 0..20 {
        let _ = s.register_secret(&format!("SECRET_{i}"), &format!("Zq7!Mk@gevb-{i:04}"));
        let mut echo = s.typed_echo();
        echo.extend(&format!("{i} Main Street 42"));
    }
    group.bench_function("urls+20-secrets+20-typed", |b| {
        b.iter(|| {
            for line in &urls {
                black_box(s.text_capped(black_box(line), usize::MAX));
            }
        })
    });
    group.finish();

    // The JSON walker on HAR-like entries (headers, cookies, query strings, a body).
    let entry = serde_json::json!({
        "startedDateTime": "2024-05-01T12:00:03.120Z",
        "time": 87.5,
        "request": {
            "method": "POST",
            "url": "https://api.example.com/v1/login?next=%2Fhome&token=abc123",
            "headers": [
                {"name": "Host", "value": "api.example.com"},
                {"name": "Cookie", "value": "_ga=GA1.2.1234567890.1700000000; sessionid=q7k2m9x4"},
                {"name": "Authorization", "value": "Bearer ya29.a0AfH6SMBx3kQ_Zt8"},
                {"name": "Accept", "value": "application/json"},
                {"name": "User-Agent", "value": "Mozilla/5.0 (X11; Linux x86_64) Chrome/124.0"}
            ],
            "queryString": [{"name": "next", "value": "/home"}, {"name": "token", "value": "abc123"}],
            "cookies": [{"name": "sessionid", "value": "q7k2m9x4", "path": "/", "httpOnly": true}],
            "postData": {"mimeType": "application/json", "text": "{\"email\":\"a@b.c\",\"password\":\"hunter2\"}"},
            "headersSize": 512,
            "bodySize": 44
        },
        "response": {
            "status": 401,
            "statusText": "Unauthorized",
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "content": {"size": 64, "mimeType": "application/json", "text": "{\"error\":\"invalid_credentials\",\"retryAfter\":30}"}
        },
        "timings": {"send": 0.2, "wait": 80.1, "receive": 7.2}
    });
    let entries = serde_json::Value::Array(vec![entry; 1000]);
    let bytes = serde_json::to_vec(&entries).map_or(0, |v| v.len());
    let mut group = c.benchmark_group("json");
    group.throughput(Throughput::Bytes(bytes as u64));
    let s = Sanitizer::new();
    group.bench_function("har-entries", |b| {
        b.iter(|| black_box(s.json_capped(black_box(&entries), usize::MAX)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
