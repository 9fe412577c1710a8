//! HAR 1.2 as its spec defines it, as a typed reader: every object with the fields the spec
//! requires (a missing one, or one of the wrong type, fails to read), the optional ones it
//! names, and no others except the custom fields the spec allows (names starting with `_`),
//! which [`Har::check_extensions`] verifies. A HAR that reads and checks here is one the spec
//! admits, and one a HAR importer (Chrome DevTools') finds every object of.

use serde::Deserialize;
use serde_json::{Map, Value};

/// The spec's custom fields: any name starting with an underscore.
type Custom = Map<String, Value>;

fn customs(place: &str, fields: &Custom, bad: &mut Vec<String>) {
    bad.extend(
        fields
            .keys()
            .filter(|k| !k.starts_with('_'))
            .map(|k| format!("{place}.{k}")),
    );
}

#[derive(Debug, Deserialize)]
pub struct Har {
    pub log: Log,
    #[serde(flatten)]
    pub custom: Custom,
}

#[derive(Debug, Deserialize)]
pub struct Log {
    pub version: String,
    pub creator: Creator,
    pub browser: Option<Creator>,
    pub pages: Option<Vec<Page>>,
    pub entries: Vec<Entry>,
    pub comment: Option<String>,
    #[serde(flatten)]
    pub custom: Custom,
}

#[derive(Debug, Deserialize)]
pub struct Creator {
    pub name: String,
    pub version: String,
    pub comment: Option<String>,
    #[serde(flatten)]
    pub custom: Custom,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    pub started_date_time: String,
    pub id: String,
    pub title: String,
    pub page_timings: PageTimings,
    pub comment: Option<String>,
    #[serde(flatten)]
    pub custom: Custom,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageTimings {
    pub on_content_load: Option<f64>,
    pub on_load: Option<f64>,
    pub comment: Option<String>,
    #[serde(flatten)]
    pub custom: Custom,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub pageref: Option<String>,
    pub started_date_time: String,
    pub time: f64,
    pub request: Request,
    pub response: Response,
    pub cache: Cache,
    pub timings: Timings,
    #[serde(rename = "serverIPAddress")]
    pub server_ip_address: Option<String>,
    pub connection: Option<String>,
    pub comment: Option<String>,
    #[serde(flatten)]
    pub custom: Custom,
}

#[derive(Debug, Deserialize)]
pub struct NameValue {
    pub name: String,
    pub value: String,
    pub comment: Option<String>,
    #[serde(flatten)]
    pub custom: Custom,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    pub method: String,
    pub url: String,
    pub http_version: String,
    pub cookies: Vec<Value>,
    pub headers: Vec<NameValue>,
    pub query_string: Vec<NameValue>,
    pub post_data: Option<Value>,
    pub headers_size: i64,
    pub body_size: i64,
    pub comment: Option<String>,
    #[serde(flatten)]
    pub custom: Custom,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Response {
    pub status: i64,
    pub status_text: String,
    pub http_version: String,
    pub cookies: Vec<Value>,
    pub headers: Vec<NameValue>,
    pub content: Content,
    #[serde(rename = "redirectURL")]
    pub redirect_url: String,
    pub headers_size: i64,
    pub body_size: i64,
    pub comment: Option<String>,
    #[serde(flatten)]
    pub custom: Custom,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Content {
    pub size: i64,
    pub compression: Option<i64>,
    pub mime_type: String,
    pub text: Option<String>,
    pub encoding: Option<String>,
    pub comment: Option<String>,
    #[serde(flatten)]
    pub custom: Custom,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cache {
    pub before_request: Option<Value>,
    pub after_request: Option<Value>,
    pub comment: Option<String>,
    #[serde(flatten)]
    pub custom: Custom,
}

#[derive(Debug, Deserialize)]
pub struct Timings {
    pub blocked: Option<f64>,
    pub dns: Option<f64>,
    pub connect: Option<f64>,
    pub send: f64,
    pub wait: f64,
    pub receive: f64,
    pub ssl: Option<f64>,
    pub comment: Option<String>,
    #[serde(flatten)]
    pub custom: Custom,
}

impl Har {
    /// Reads `text` as HAR 1.2: `Err` names what does not fit (a missing or mistyped field,
    /// a field the spec does not name without the `_` of a custom one, a page reference to no
    /// page, a version other than 1.2, a total time that is not the sum of its timings).
    pub fn read(text: &str) -> Result<Har, String> {
        let har: Har = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let mut bad = Vec::new();
        har.check_extensions(&mut bad);
        if har.log.version != "1.2" {
            bad.push(format!("log.version {}", har.log.version));
        }
        let pages: Vec<&str> = har
            .log
            .pages
            .iter()
            .flatten()
            .map(|p| p.id.as_str())
            .collect();
        for (i, e) in har.log.entries.iter().enumerate() {
            if let Some(p) = &e.pageref {
                if !pages.contains(&p.as_str()) {
                    bad.push(format!("entries[{i}].pageref {p} names no page"));
                }
            }
            let t = &e.timings;
            let sum: f64 = [
                t.blocked,
                t.dns,
                t.connect,
                Some(t.send),
                Some(t.wait),
                Some(t.receive),
            ]
            .into_iter()
            .flatten()
            .filter(|v| *v >= 0.0)
            .sum();
            if (sum - e.time).abs() > 0.5 {
                bad.push(format!(
                    "entries[{i}].time {} is not the sum of its timings {sum}",
                    e.time
                ));
            }
            if cdp_evidence::time::parse_rfc3339_millis(&e.started_date_time).is_none() {
                bad.push(format!(
                    "entries[{i}].startedDateTime {}",
                    e.started_date_time
                ));
            }
        }
        if bad.is_empty() {
            Ok(har)
        } else {
            Err(bad.join("; "))
        }
    }

    fn check_extensions(&self, bad: &mut Vec<String>) {
        customs("", &self.custom, bad);
        customs("log", &self.log.custom, bad);
        customs("log.creator", &self.log.creator.custom, bad);
        for (i, p) in self.log.pages.iter().flatten().enumerate() {
            customs(&format!("pages[{i}]"), &p.custom, bad);
            customs(
                &format!("pages[{i}].pageTimings"),
                &p.page_timings.custom,
                bad,
            );
        }
        for (i, e) in self.log.entries.iter().enumerate() {
            let at = |s: &str| format!("entries[{i}]{s}");
            customs(&at(""), &e.custom, bad);
            customs(&at(".request"), &e.request.custom, bad);
            customs(&at(".response"), &e.response.custom, bad);
            customs(&at(".response.content"), &e.response.content.custom, bad);
            customs(&at(".cache"), &e.cache.custom, bad);
            customs(&at(".timings"), &e.timings.custom, bad);
            for h in e.request.headers.iter().chain(&e.response.headers) {
                customs(&at(".headers[]"), &h.custom, bad);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Har;

    const MINIMAL: &str = r#"{"log":{"version":"1.2","creator":{"name":"x","version":"1"},"entries":[
        {"startedDateTime":"2026-01-01T00:00:00.000Z","time":5,"request":{"method":"GET","url":"https://a.test/","httpVersion":"","cookies":[],"headers":[],"queryString":[],"headersSize":-1,"bodySize":-1},
         "response":{"status":0,"statusText":"","httpVersion":"","cookies":[],"headers":[],"content":{"size":0,"mimeType":""},"redirectURL":"","headersSize":-1,"bodySize":-1},
         "cache":{},"timings":{"send":0,"wait":5,"receive":0},"_ours":{"step":1}}]}}"#;

    #[test]
    fn the_model_admits_a_spec_har_and_refuses_what_the_spec_does_not() {
        assert!(Har::read(MINIMAL).is_ok());
        // A field the spec does not name, without the custom underscore.
        let extra = MINIMAL.replace("\"_ours\"", "\"ours\"");
        assert!(Har::read(&extra).unwrap_err().contains("entries[0].ours"));
        // A required object missing.
        let no_cache = MINIMAL.replace("\"cache\":{},", "");
        assert!(Har::read(&no_cache).unwrap_err().contains("cache"));
        // A mistyped field.
        let bad_type = MINIMAL.replace(
            "\"headers\":[],\"queryString\"",
            "\"headers\":{},\"queryString\"",
        );
        assert!(Har::read(&bad_type).is_err());
        // A page reference to no page, a time that is not its timings' sum.
        let dangling = MINIMAL.replace(
            "{\"startedDateTime\"",
            "{\"pageref\":\"p9\",\"startedDateTime\"",
        );
        assert!(Har::read(&dangling).unwrap_err().contains("names no page"));
        let wrong_time = MINIMAL.replace("\"time\":5", "\"time\":9");
        assert!(Har::read(&wrong_time).unwrap_err().contains("not the sum"));
    }
}
