//! [`Sanitizer`]: one per evidence run; owns the handle key, the explicit secrets and the
//! redaction counters, and is the only way to make the `Safe*` types from runtime data.

pub(crate) mod json;
pub(crate) mod lines;
pub(crate) mod network;
pub(crate) mod url;

use crate::echo::TypedEcho;
use crate::handles::{is_protected, truncated_prefix_len, Handles};
use crate::merge;
use crate::rules::Rule;
use crate::secrets::{self, Registry};
use crate::summary::{Counters, RedactionSummary};
use crate::text::{self, Ctx};
use crate::{SafeJson, SafeText, SafeUrl, SecretError};
use lines::LineSanitizer;
use network::{NetworkFailure, RawNetworkFailure};
use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use url::sanitize_url;

/// Default cap for free text ([`Sanitizer::text`], JSON strings), in characters.
pub const TEXT_MAX_CHARS: usize = 4096;

/// Cap for error strings ([`Sanitizer::error`]), in characters.
pub const ERROR_MAX_CHARS: usize = 1024;

/// What free text reads once the sanitizer withholds it ([`Sanitizer::withhold_free_text`]).
pub const WITHHELD: &str = "[withheld: typing may have gone unseen]";

/// The privacy engine of one evidence run. `Send + Sync`: share it as an `Arc` across tasks.
///
/// Every method is pure with respect to the outside world (no I/O, no logging); the only state
/// is the per-run handle key, the explicit-secret registry (behind a `RwLock`; reads dominate;
/// shared with the [`TypedEcho`]s it hands out, which hold it weakly) and the redaction counters
/// (atomics).
pub struct Sanitizer {
    handles: Handles,
    secrets: Arc<RwLock<Registry>>,
    counters: Counters,
    /// Free text is withheld from now on (sticky).
    withheld: AtomicBool,
}

impl fmt::Debug for Sanitizer {
    /// Counts only: the registry's literals are never printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sanitizer")
            .field("secrets", &*self.registry())
            .finish_non_exhaustive()
    }
}

impl Default for Sanitizer {
    fn default() -> Self {
        Sanitizer::new()
    }
}

impl Sanitizer {
    /// A sanitizer with a fresh random handle key and no explicit secrets.
    pub fn new() -> Sanitizer {
        Sanitizer {
            handles: Handles::new(),
            secrets: Arc::new(RwLock::new(Registry::default())),
            counters: Counters::default(),
            withheld: AtomicBool::new(false),
        }
    }

    /// From now on, for the rest of the run, free text reads [`WITHHELD`] and URLs keep only
    /// `scheme://host:port`. For when text may hold a secret that could not be registered in
    /// time — typing the recorder never saw — so no rule or literal can be trusted to find it.
    /// JSON keeps its structure (keys are still sanitized as usual), numbers, booleans, handles
    /// and markers stay.
    pub fn withhold_free_text(&self) {
        self.withheld.store(true, Ordering::SeqCst);
    }

    /// Changes whenever the outcome of sanitizing a text may change: a literal registered, a
    /// typed echo extended, free text withheld. A caller that keeps sanitized values (a page's
    /// title) sanitizes again when it changed.
    pub fn generation(&self) -> u64 {
        let registry = self.registry().generation();
        registry << 1 | u64::from(self.withholds_free_text())
    }

    /// True once [`Sanitizer::withhold_free_text`] was called.
    pub fn withholds_free_text(&self) -> bool {
        self.withheld.load(Ordering::SeqCst)
    }

    // A panic while holding the lock cannot leave the registry half-updated in a way that
    // matters (registration rebuilds the automaton last), so a poisoned lock is still used.
    fn registry(&self) -> RwLockReadGuard<'_, Registry> {
        self.secrets.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn registry_mut(&self) -> RwLockWriteGuard<'_, Registry> {
        self.secrets.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sanitizes free text: registered literals and every text rule, both judged on the text as
    /// given, then the default cap ([`TEXT_MAX_CHARS`]).
    pub fn text(&self, s: &str) -> SafeText {
        self.text_capped(s, TEXT_MAX_CHARS)
    }

    /// Like [`Sanitizer::text`] with a cap of `max_chars` characters (`usize::MAX` for none).
    /// Pass the whole string: the cap is applied after redaction, so a secret that straddles the
    /// cut cannot leave half of itself behind.
    pub fn text_capped(&self, s: &str, max_chars: usize) -> SafeText {
        if self.withholds_free_text() && !s.trim().is_empty() && !is_protected(s.trim()) {
            return SafeText::new(WITHHELD.to_owned());
        }
        SafeText::new(self.sanitize_str(s, max_chars).into_owned())
    }

    /// A JSON key or a URL's origin: sanitized as text, never withheld (structure, not text the
    /// page wrote into a field).
    pub(crate) fn structural(&self, s: &str, max_chars: usize) -> SafeText {
        SafeText::new(self.sanitize_str(s, max_chars).into_owned())
    }

    /// Sanitizes an error string (shorter cap: [`ERROR_MAX_CHARS`]).
    pub fn error(&self, s: &str) -> SafeText {
        self.text_capped(s, ERROR_MAX_CHARS)
    }

    /// Sanitizes a URL to origin + path (see the `url` module).
    pub fn url(&self, s: &str) -> SafeUrl {
        SafeUrl::new(sanitize_url(self, s))
    }

    /// Walks a JSON value, redacting by key and sanitizing every string (capped at
    /// [`TEXT_MAX_CHARS`]); structure, numbers and booleans are kept.
    pub fn json(&self, v: &serde_json::Value) -> SafeJson {
        self.json_capped(v, TEXT_MAX_CHARS)
    }

    /// Like [`Sanitizer::json`] with every string capped at `max_chars` (`usize::MAX` for none).
    pub fn json_capped(&self, v: &serde_json::Value, max_chars: usize) -> SafeJson {
        SafeJson::new(json::walk(self, v, max_chars))
    }

    /// Streams one JSON document from `de` to `ser`, sanitized exactly like
    /// [`Sanitizer::json_capped`], without holding the document in memory (a HAR file through
    /// `cdp-relay sanitize --json`). Memory is bounded by the largest string and the nesting
    /// depth. Key order is kept, except that a `"value"` member seen before its object's `"name"`
    /// is written after the object's other members. The output is not a [`SafeJson`]: evidence
    /// records use [`Sanitizer::json`]. Errors of `ser` come back as text inside `D::Error`.
    pub fn json_stream<'de, D, S>(&self, de: D, ser: S, max_chars: usize) -> Result<S::Ok, D::Error>
    where
        D: serde::Deserializer<'de>,
        S: serde::Serializer,
    {
        json::stream::transcode(self, de, ser, max_chars)
    }

    /// The stable per-run handle of a CDP id (`target:3fa9c1d2e4b5`). The same id (in any
    /// letter case) always gives the same handle within this sanitizer; another sanitizer gives
    /// an unrelated one. A handle passed in comes back unchanged.
    pub fn handle(&self, id: &str) -> SafeText {
        SafeText::new(self.handles.handle(id))
    }

    /// Keeps only allowlisted `TargetInfo` fields (see the `json` module).
    pub fn target_info(&self, v: &serde_json::Value) -> SafeJson {
        SafeJson::new(json::target_info(self, v))
    }

    /// Reduces a failed request to the fields docs/security.md allows.
    pub fn network_failure(&self, raw: RawNetworkFailure<'_>) -> NetworkFailure {
        network::network_failure(self, raw)
    }

    /// Registers an explicit secret: from now on `literal` (and its JSON-escaped and URL-encoded
    /// spellings) reads `${NAME}` everywhere. `Ok(false)` when nothing was registered: the
    /// literal is empty or whitespace-only (nothing to protect), or already registered (the
    /// first name wins). Refused with [`SecretError::TooShort`] when the literal has fewer than
    /// [`MIN_SECRET_CHARS`](crate::MIN_SECRET_CHARS) non-whitespace characters, and with
    /// [`SecretError::InvalidName`] when the name is not `[A-Z_][A-Z0-9_]*`.
    pub fn register_secret(&self, name: &str, literal: &str) -> Result<bool, SecretError> {
        self.registry_mut().register(name, literal)
    }

    /// What [`Sanitizer::register_secret`] would say, without registering anything: for
    /// validating configuration (`--secret-env`) before a run starts.
    pub fn check_secret(name: &str, literal: &str) -> Result<bool, SecretError> {
        secrets::check(name, literal)
    }

    /// Echo protection for text being typed: a literal that grows with every keystroke under one
    /// `TYPED_<n>` name. Call [`TypedEcho::extend`] with each inserted text; once it has
    /// [`MIN_TYPED_CHARS`](crate::MIN_TYPED_CHARS) non-whitespace characters, any prefix of it
    /// with at least that many (in plain, JSON-escaped and URL-encoded spelling) reads
    /// `${TYPED_<n>}`.
    ///
    /// ```
    /// use cdp_sanitize::Sanitizer;
    ///
    /// let s = Sanitizer::new();
    /// let mut echo = s.typed_echo();
    /// for key in ["T", "y", "p"] {
    ///     echo.extend(key);
    /// }
    /// assert_eq!(s.text("live Typ").as_str(), "live Typ"); // three characters: not yet
    /// echo.extend("e");
    /// assert_eq!(echo.name(), Some("TYPED_1"));
    /// assert_eq!(s.text("live Type").as_str(), "live ${TYPED_1}");
    /// echo.extend("SecretBBB2");
    /// assert_eq!(s.text("live TypeSec").as_str(), "live ${TYPED_1}");
    /// assert_eq!(s.text("live TypeSecretBBB2").as_str(), "live ${TYPED_1}");
    /// ```
    pub fn typed_echo(&self) -> TypedEcho {
        TypedEcho::new(Arc::downgrade(&self.secrets))
    }

    /// Echo protection for a whole typed literal at once (what [`Sanitizer::typed_echo`] does
    /// keystroke by keystroke): registers `literal` under a generated `TYPED_<n>` name if it has
    /// at least [`MIN_TYPED_CHARS`](crate::MIN_TYPED_CHARS) non-whitespace characters, so a page
    /// echoing it back, or any prefix of it with that many, is masked. Returns the name it is
    /// registered under; the existing one when the same literal is already registered (so
    /// calling this at the end of a burst that a [`TypedEcho`] already registered adds nothing).
    pub fn register_typed(&self, literal: &str) -> Option<String> {
        self.registry_mut().register_typed(literal)
    }

    /// The name of the explicit secret whose value is exactly `literal` (typed text compared in
    /// memory, where it already is): what a typing step records instead of the value. `None`
    /// when no secret has that value; a typed echo (`TYPED_<n>`) is no secret.
    ///
    /// ```
    /// use cdp_sanitize::Sanitizer;
    ///
    /// let s = Sanitizer::new();
    /// s.register_secret("PASSWORD", "hunter2 x").unwrap();
    /// assert_eq!(s.secret_name("hunter2 x").as_deref(), Some("PASSWORD"));
    /// assert_eq!(s.secret_name("hunter2+x"), None); // a spelling, not the value
    /// assert_eq!(s.secret_name("hunter2"), None);
    /// ```
    pub fn secret_name(&self, literal: &str) -> Option<String> {
        self.registry().secret_name(literal).map(str::to_owned)
    }

    /// A line-at-a-time sanitizer for streams (keeps state across lines for PEM key blocks).
    pub fn lines(&self) -> LineSanitizer<'_> {
        LineSanitizer::new(self)
    }

    /// Counts of everything redacted so far, by rule and by secret name.
    pub fn summary(&self) -> RedactionSummary {
        let registry = self.registry();
        self.counters.snapshot(registry.counts())
    }

    /// The longest registered secret spelling, in bytes: a streaming caller that must cut input
    /// keeps at least this much context so no literal straddles a cut unseen.
    pub fn longest_secret_len(&self) -> usize {
        self.registry().max_len()
    }

    pub(crate) fn count(&self, rule: Rule) {
        self.counters.count(rule);
    }

    /// The first occurrence in `s` of a registered literal that runs across byte `at`: where it
    /// starts, and its placeholder (counted, as the caller emits it).
    pub(crate) fn literal_across(&self, s: &str, at: usize) -> Option<(usize, String)> {
        let registry = self.registry();
        if registry.is_empty() {
            return None;
        }
        let m = registry
            .find(s)
            .into_iter()
            .find(|m| m.start < at && at < m.end)?;
        registry.count(m.name);
        Some((m.start, format!("${{{}}}", registry.name(m.name))))
    }

    /// The text pipeline. Registered literals and the rules are both found on the text as
    /// given — so a literal can never hide from a rule the name it needs (`password`, `code`,
    /// `Bearer`) — and merged (`merge.rs`): every byte either would remove is removed. A text
    /// that changed goes through the whole pass again until nothing changes: a replacement
    /// changes what its neighbours look like (a literal ending inside a word leaves a bare id
    /// next to its placeholder; a handle's last characters and the text after it can spell a
    /// registered literal). Then the cap.
    pub(crate) fn sanitize_str<'a>(&self, s: &'a str, max_chars: usize) -> Cow<'a, str> {
        let ctx = Ctx {
            handles: &self.handles,
            counters: &self.counters,
        };
        let passed = {
            let registry = self.registry();
            text::fixpoint(s, |t| self.one_pass(t, &registry, &ctx))
        };
        text::cap(passed, max_chars, &ctx)
    }

    /// One pass of [`Sanitizer::sanitize_str`]: literals and rules found on `s`, merged.
    fn one_pass<'a>(&self, s: &'a str, registry: &Registry, ctx: &Ctx<'_>) -> Cow<'a, str> {
        let found = if registry.is_empty() {
            Vec::new()
        } else {
            registry.find(s)
        };
        // A truncation marker we appended earlier is not part of the text: no rule may read
        // it as the rest of a value.
        let body_end = truncated_prefix_len(s).unwrap_or(s.len());
        let rules = text::replacements(&s[..body_end], ctx);
        if found.is_empty() {
            merge::merge(s, rules, &[], None, &self.counters)
        } else {
            merge::merge(s, rules, &found, Some(registry), &self.counters)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn is_send_and_sync() {
        assert_send_sync::<Sanitizer>();
    }

    #[test]
    fn debug_and_summary_never_show_literals() {
        let s = Sanitizer::new();
        s.register_secret("PASSWORD", "hunter2")
            .expect("valid name");
        let out = s.text("login with hunter2, Cookie: sid=abc");
        assert_eq!(
            out.as_str(),
            "login with ${PASSWORD}, Cookie: [redacted:cookie]"
        );
        let dbg = format!("{s:?}");
        assert!(!dbg.contains("hunter2"), "{dbg}");
        let summary = serde_json::to_string(&s.summary()).expect("serializes");
        assert!(!summary.contains("hunter2"), "{summary}");
        assert_eq!(
            summary,
            r#"{"total":2,"rules":{"cookie":1},"secrets":{"PASSWORD":1},"truncated":0}"#
        );
    }

    #[test]
    fn check_secret_says_what_register_secret_would() {
        assert_eq!(Sanitizer::check_secret("PIN", "4921"), Ok(true));
        assert_eq!(Sanitizer::check_secret("PIN", "  "), Ok(false));
        assert!(matches!(
            Sanitizer::check_secret("PIN", "492"),
            Err(SecretError::TooShort { min: 4, .. })
        ));
        assert!(matches!(
            Sanitizer::check_secret("pin", "4921"),
            Err(SecretError::InvalidName { .. })
        ));
        let s = Sanitizer::new();
        assert!(s.register_secret("PIN", "492").is_err());
        assert_eq!(format!("{s:?}").matches("names: 0").count(), 1, "{s:?}");
    }

    /// A literal and a rule on the same span: the rules see the original text (so the value is
    /// known to be a token), and the span reads as the literal's placeholder, which hides as
    /// much and says more. Unchanged from when literals were replaced before the rules.
    #[test]
    fn explicit_secrets_win_over_rules() {
        let s = Sanitizer::new();
        s.register_secret("API_TOKEN", "tok_live_1234567890")
            .expect("valid");
        assert_eq!(
            s.text("Authorization: Bearer tok_live_1234567890").as_str(),
            "Authorization: Bearer ${API_TOKEN}"
        );
        assert_eq!(
            s.text("token=tok_live_1234567890").as_str(),
            "token=${API_TOKEN}"
        );
    }

    #[test]
    fn withholding_free_text_keeps_structure() {
        let s = Sanitizer::new();
        let handle = s.handle("8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1");
        assert_eq!(s.text("live Typ").as_str(), "live Typ");
        s.withhold_free_text();
        assert!(s.withholds_free_text());
        assert_eq!(s.text("live TypeSecret").as_str(), WITHHELD);
        assert_eq!(s.error("net::ERR_FAILED").as_str(), WITHHELD);
        assert_eq!(s.text("").as_str(), "");
        // What the sanitizer itself made stays: it holds nothing typed.
        assert_eq!(s.text(handle.as_str()).as_str(), handle.as_str());
        assert_eq!(s.text("[redacted:jwt]").as_str(), "[redacted:jwt]");
        assert_eq!(
            s.url("https://shop.example:8443/search/TypeSecret?q=1")
                .as_str(),
            "https://shop.example:8443"
        );
        assert_eq!(s.url("data:text/html,TypeSecret").as_str(), "data:…");
        let j = s.json(&serde_json::json!({"button": "left", "clickCount": 2, "ok": true}));
        assert_eq!(
            j.as_value(),
            &serde_json::json!({"button": WITHHELD, "clickCount": 2, "ok": true})
        );
    }
}
