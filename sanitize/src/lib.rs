//! cdp-sanitize: the privacy functions of cdp-relay. Every string the project persists or
//! prints goes through a [`Sanitizer`] first (docs/security.md).
//!
//! - [`Sanitizer::text`] removes secrets from free text (cookies, authorization values, bearer
//!   credentials, sensitive `name=value` pairs, JWTs, PEM keys, URL userinfo, query tokens,
//!   well-known API key formats) and replaces CDP capability ids with stable per-run handles.
//! - [`Sanitizer::url`] keeps origin + path; [`Sanitizer::json`] redacts by key and keeps
//!   structure; [`Sanitizer::network_failure`] and [`InputSummary`] can only hold what docs/security.md
//!   allows.
//! - Explicit secrets ([`Sanitizer::register_secret`]) become `${NAME}` in one left-to-right,
//!   leftmost-longest pass. Typed text is protected while it is typed ([`Sanitizer::typed_echo`]):
//!   every prefix of it with at least [`MIN_TYPED_CHARS`] non-whitespace characters reads
//!   `${TYPED_<n>}`. Registered literals and the rules are both judged on the original text and
//!   merged, so a registered word can never switch a rule off.
//! - The result types ([`SafeText`], [`SafeUrl`], [`SafeJson`]) can only be built here, so a
//!   record made of them has been sanitized by construction.
//!
//! ```
//! use cdp_sanitize::Sanitizer;
//!
//! let s = Sanitizer::new();
//! s.register_secret("PASSWORD", "hunter2").unwrap();
//! let out = s.text("login hunter2 failed; Cookie: sid=31d4d96e407aad42");
//! assert_eq!(out.as_str(), "login ${PASSWORD} failed; Cookie: [redacted:cookie]");
//!
//! let url = s.url("https://bob:pw@example.com/cb?code=abc#access_token=xyz");
//! assert_eq!(url.as_str(), "https://example.com/cb");
//!
//! let page = s.text("ws://127.0.0.1:9222/devtools/page/8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1");
//! assert!(page.as_str().starts_with("ws://127.0.0.1:9222/devtools/page/target:"));
//! ```
//!
//! Pure: never does I/O, never logs its input.

#![forbid(unsafe_code)]

mod echo;
mod error;
mod handles;
mod keys;
mod merge;
mod prefilter;
mod rules;
mod safe;
mod sanitizer;
mod secrets;
mod spelling;
mod summary;
mod text;
mod words;

pub use echo::TypedEcho;
pub use error::SecretError;
pub use rules::Rule;
pub use safe::{InputSummary, InputType, SafeJson, SafeText, SafeUrl};
pub use sanitizer::lines::LineSanitizer;
pub use sanitizer::network::{NetworkFailure, RawNetworkFailure};
pub use sanitizer::{Sanitizer, ERROR_MAX_CHARS, TEXT_MAX_CHARS, WITHHELD};
pub use secrets::{
    check_name as check_secret_name, MAX_SECRETS, MAX_SECRET_BYTES, MAX_SECRET_NAME_CHARS,
    MIN_SECRET_CHARS, MIN_TYPED_CHARS, TYPED_MAX_BYTES,
};

/// True when the sanitizer's sensitive-name table (the one that redacts `name=value` pairs and
/// JSON keys) says the value under `name` is a secret or the id of one (`apiKey`,
/// `X-Signing-Key`, `sessionId`); false for names that only mention one (`tokenType`,
/// `hasPassword`). For callers that reduce named values themselves (the MCP gateway).
pub fn is_sensitive_name(name: &str) -> bool {
    matches!(
        keys::classify(name),
        keys::KeyClass::Sensitive(_) | keys::KeyClass::IdLike(_)
    )
}
pub use sanitizer::url::URL_MAX_CHARS;
pub use summary::RedactionSummary;
pub use words::{Word, Words};

// What `words!` expands to names, from the crates that use it.
#[doc(hidden)]
pub mod __serde {
    pub use serde::{Deserialize, Deserializer, Serialize, Serializer};
}
#[doc(hidden)]
pub use words::__words_de;
