//! Looking at pictures: decodes PNG and JPEG images in a real Chromium (the decoder users'
//! browsers use) and counts the pixels of one colour, so a test can tell whether a kept frame
//! shows what a page drew in that colour.

use crate::cdp::Cdp;
use crate::http;
use serde_json::json;

/// How close to magenta (`#ff00ff`) a decoded pixel must be to count: JPEG's chroma subsampling
/// and glyph anti-aliasing soften the edges of strokes, not their cores.
const PREDICATE: &str = "(r, g, b) => r > 170 && g < 110 && b > 170";

/// For each image (PNG or JPEG bytes), the number of magenta pixels it shows. `chromium` is the
/// browser's own `127.0.0.1:PORT` (not a relay): a blank page is opened there, used and closed.
pub async fn magenta_pixels(chromium: &str, images: &[Vec<u8>]) -> Vec<u64> {
    use base64::Engine;
    let target = http::request(chromium, "PUT", "/json/new?about:blank", &[])
        .await
        .json();
    let id = target["id"].as_str().expect("a new target").to_owned();
    let ws = target["webSocketDebuggerUrl"]
        .as_str()
        .expect("its websocket")
        .to_owned();
    let mut c = Cdp::connect(&ws).await;
    let mut counts = Vec::new();
    for bytes in images {
        let mime = if bytes.starts_with(b"\x89PNG") {
            "image/png"
        } else {
            "image/jpeg"
        };
        let url = format!(
            "data:{mime};base64,{}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        );
        let expression = format!(
            "(async () => {{ const img = new Image(); img.src = {url:?}; await img.decode(); \
             const c = document.createElement('canvas'); c.width = img.naturalWidth; c.height = img.naturalHeight; \
             const x = c.getContext('2d'); x.drawImage(img, 0, 0); \
             const d = x.getImageData(0, 0, c.width, c.height).data; const hit = {PREDICATE}; let n = 0; \
             for (let i = 0; i < d.length; i += 4) if (hit(d[i], d[i + 1], d[i + 2])) n += 1; return n; }})()"
        );
        let v = c
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
            )
            .await;
        let n = v["result"]["value"]
            .as_u64()
            .unwrap_or_else(|| panic!("the image did not decode: {v}"));
        counts.push(n);
    }
    drop(c);
    let _ = http::get(chromium, &format!("/json/close/{id}")).await;
    counts
}
