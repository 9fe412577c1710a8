//! Sanitized value types: the redaction boundary expressed as types.
//!
//! Every type here can only be built by this crate's sanitizers (or, for `SafeText`, from a
//! `&'static str` written in our own source). Code outside the crate can read and serialize them,
//! never construct them from runtime input, so a record made of these types cannot carry an
//! unsanitized string. None of them implements `Deserialize`: a value read back from disk is plain
//! data, not proof of sanitization.

use serde::Serialize;
use std::fmt;

/// Free text that went through the text sanitizer (or is a literal from our own source code).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SafeText(String);

impl SafeText {
    /// Crate-private: only sanitizers produce a `SafeText` from runtime data.
    pub(crate) fn new(s: String) -> Self {
        SafeText(s)
    }

    /// A compile-time literal (a tool name, a status word). Runtime strings cannot take this path.
    pub fn literal(s: &'static str) -> Self {
        SafeText(s.to_owned())
    }

    /// The sanitized text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Consumes the value, returning the sanitized text.
    pub fn into_string(self) -> String {
        self.0
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for SafeText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl AsRef<str> for SafeText {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SafeText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A URL reduced to what `docs/security.md` allows: origin and path, no userinfo, query or fragment;
/// capability paths replaced by handles; `data:` URLs reduced to media type and size.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SafeUrl(String);

impl SafeUrl {
    pub(crate) fn new(s: String) -> Self {
        SafeUrl(s)
    }

    /// The sanitized URL text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Consumes the value, returning the sanitized URL text.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Debug for SafeUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for SafeUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A JSON value whose string leaves were all sanitized, structure intact. Shared, not copied,
/// when cloned: one page's summary goes into every record made on it.
#[derive(Clone, PartialEq)]
pub struct SafeJson(std::sync::Arc<serde_json::Value>);

impl SafeJson {
    pub(crate) fn new(v: serde_json::Value) -> Self {
        SafeJson(std::sync::Arc::new(v))
    }

    /// The sanitized value.
    pub fn as_value(&self) -> &serde_json::Value {
        &self.0
    }

    /// Consumes the value, returning the sanitized JSON (copied only when it is shared).
    pub fn into_value(self) -> serde_json::Value {
        std::sync::Arc::try_unwrap(self.0).unwrap_or_else(|shared| (*shared).clone())
    }
}

impl Serialize for SafeJson {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl fmt::Debug for SafeJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

crate::words! {
    /// What kind of field received typed input. Unknown when the relay cannot tell. The journal
    /// spelling (`payload.input.inputType`), also the page agent's word for a field.
    #[non_exhaustive]
    pub enum InputType {
        /// The relay could not tell which field received the input.
        Unknown = "unknown",
        /// Plain text field or editable content.
        Text = "text",
        /// `type=password`.
        Password = "password",
        /// A one-time code field (`autocomplete=one-time-code`, OTP-looking names).
        OneTimeCode = "one-time-code",
        /// A payment field (card number, CVC, expiry).
        Payment = "payment",
        /// `type=email`.
        Email = "email",
        /// `type=tel`.
        Tel = "tel",
        /// `type=number`.
        Number = "number",
        /// `type=search`.
        Search = "search",
        /// `type=url`.
        Url = "url",
        /// A `textarea`.
        Textarea = "textarea",
    }
}

impl InputType {
    /// True for fields whose screen contents must never be captured (`docs/security.md`).
    pub fn is_sensitive(self) -> bool {
        matches!(
            self,
            InputType::Password | InputType::OneTimeCode | InputType::Payment
        )
    }
}

/// Typed input reduced to its length in characters, the input type and the name of the
/// variable that stands for the text in a replay (`variable`: a registered secret's name or a
/// `TYPED_<n>`). It holds no text and cannot be built from anything that does except by
/// counting; the variable is a name, checked as one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputSummary {
    chars: u64,
    input_type: InputType,
    #[serde(skip_serializing_if = "Option::is_none")]
    variable: Option<String>,
}

impl InputSummary {
    /// Summarizes typed text: counts its characters, keeps nothing else.
    pub fn of(text: &str, input_type: InputType) -> Self {
        InputSummary {
            chars: text.chars().count() as u64,
            input_type,
            variable: None,
        }
    }

    /// A summary of `chars` characters typed into an `input_type` field, for a producer that
    /// only ever had the count (a length is not text: it needs no sanitizing).
    pub fn from_count(chars: u64, input_type: InputType) -> Self {
        InputSummary {
            chars,
            input_type,
            variable: None,
        }
    }

    /// The same summary with the name of the variable that stands for the typed text
    /// ([`Sanitizer::secret_name`](crate::Sanitizer::secret_name) or
    /// [`TypedEcho::variable`](crate::TypedEcho::variable)). Anything but a name
    /// (`[A-Z_][A-Z0-9_]*`, at most 64 characters) is not kept.
    pub fn with_variable(mut self, name: &str) -> Self {
        self.variable = crate::secrets::is_variable_name(name).then(|| name.to_owned());
        self
    }

    /// The variable that stands for the typed text, if one was named.
    pub fn variable(&self) -> Option<&str> {
        self.variable.as_deref()
    }

    /// Adds another burst of typing (e.g. consecutive key events) to this summary.
    pub fn extend(&mut self, text: &str) {
        self.chars = self.chars.saturating_add(text.chars().count() as u64);
    }

    /// Number of characters typed.
    pub fn chars(&self) -> u64 {
        self.chars
    }

    /// The field kind the text went to.
    pub fn input_type(&self) -> InputType {
        self.input_type
    }
}

#[cfg(test)]
mod input_tests {
    use super::*;

    #[test]
    fn a_variable_is_a_name_or_nothing() {
        let s = InputSummary::of("hunter2", InputType::Password).with_variable("PASSWORD");
        assert_eq!(s.variable(), Some("PASSWORD"));
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"chars":7,"inputType":"password","variable":"PASSWORD"}"#
        );
        for not_a_name in ["hunter2", "TYPED 1", "", "${TYPED_1}"] {
            let s = InputSummary::from_count(3, InputType::Text).with_variable(not_a_name);
            assert_eq!(s.variable(), None, "{not_a_name}");
            assert_eq!(
                serde_json::to_string(&s).unwrap(),
                r#"{"chars":3,"inputType":"text"}"#
            );
        }
    }
}
