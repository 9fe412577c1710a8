//! The one mechanism for the words of the evidence format: an enum declared as a table of
//! variants and their spellings ([`words!`](crate::words)), and [`Word`], which reads a word of
//! such a set from any producer (`Other` for a word the set does not have).
//!
//! A word is spelled once, in its table: `as_str`, `parse`, `Display`, `Serialize` and
//! `Deserialize` all come from it, so the writer and every reader agree by construction. The
//! machinery lives in this crate, the lowest of the workspace, because [`crate::InputType`] is
//! one of the sets; `cdp-evidence` declares the rest of the vocabulary with it.

use std::fmt;

/// A set of words declared with [`words!`](crate::words): its variants and their spellings.
pub trait Words: Copy + Eq + fmt::Debug + 'static {
    /// Every variant, in table order.
    const ALL: &'static [Self];

    /// The variant spelled `word`, if the set has one.
    fn parse(word: &str) -> Option<Self>;

    /// The spelling.
    fn as_str(self) -> &'static str;
}

/// Declares a closed set of words: an enum whose variants each have one spelling, with
/// [`Words`], `as_str`, `parse`, `ALL`, `Display`, `Serialize` and `Deserialize` generated from
/// the table (an unknown word is a deserialization error; read it as a [`Word`] to keep it).
///
/// ```
/// cdp_sanitize::words! {
///     /// How a door stands.
///     pub enum Door {
///         /// Shut.
///         Closed = "closed",
///         /// Not shut.
///         Open = "open",
///     }
/// }
/// assert_eq!(Door::parse("open"), Some(Door::Open));
/// assert_eq!(Door::Closed.as_str(), "closed");
/// assert_eq!(serde_json::to_string(&Door::Open).unwrap(), "\"open\"");
/// assert!(serde_json::from_str::<Door>("\"ajar\"").is_err());
/// ```
#[macro_export]
macro_rules! words {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every variant, in table order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }

            /// The variant spelled `word`, if there is one.
            pub fn parse(word: &str) -> ::core::option::Option<$name> {
                match word {
                    $($word => ::core::option::Option::Some($name::$variant),)+
                    _ => ::core::option::Option::None,
                }
            }
        }

        impl $crate::Words for $name {
            const ALL: &'static [$name] = $name::ALL;

            fn parse(word: &str) -> ::core::option::Option<$name> {
                $name::parse(word)
            }

            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::__serde::Serialize for $name {
            fn serialize<S: $crate::__serde::Serializer>(&self, s: S) -> ::core::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::__serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(d: D) -> ::core::result::Result<$name, D::Error> {
                $crate::__words_de(d)
            }
        }
    };
}

#[doc(hidden)]
pub fn __words_de<'de, E: Words, D: serde::Deserializer<'de>>(d: D) -> Result<E, D::Error> {
    struct Visit<E>(std::marker::PhantomData<E>);
    impl<E: Words> serde::de::Visitor<'_> for Visit<E> {
        type Value = E;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("one of the words ")?;
            for (i, w) in E::ALL.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                f.write_str(w.as_str())?;
            }
            Ok(())
        }
        fn visit_str<Er: serde::de::Error>(self, v: &str) -> Result<E, Er> {
            // The word is not quoted back: it may be anything a producer wrote.
            E::parse(v)
                .ok_or_else(|| Er::invalid_value(serde::de::Unexpected::Other("a word"), &self))
        }
    }
    d.deserialize_str(Visit(std::marker::PhantomData))
}

/// A word of the set `E` as any producer may write it: one of the set's ([`Word::Known`]), or
/// another ([`Word::Other`], holding the text: a `String` when read back, a sanitized type when
/// written). Built with [`Word::from_text`], a known spelling is always `Known`, so two equal
/// words compare equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Word<E, T = String> {
    /// A word of the set.
    Known(E),
    /// A word the set does not have, as written.
    Other(T),
}

impl<E: Words, T: AsRef<str>> Word<E, T> {
    /// The word for `text`: the set's variant when it spells one, else `Other(text)`.
    pub fn from_text(text: T) -> Self {
        match E::parse(text.as_ref()) {
            Some(e) => Word::Known(e),
            None => Word::Other(text),
        }
    }

    /// The word as written.
    pub fn as_str(&self) -> &str {
        match self {
            Word::Known(e) => e.as_str(),
            Word::Other(t) => t.as_ref(),
        }
    }

    /// The set's variant, unless the word is another.
    pub fn known(&self) -> Option<E> {
        match self {
            Word::Known(e) => Some(*e),
            Word::Other(_) => None,
        }
    }
}

impl<E, T> From<E> for Word<E, T> {
    fn from(e: E) -> Self {
        Word::Known(e)
    }
}

/// Sanitized text as a word of `E`: the set's variant when it spells one.
impl<E: Words> From<crate::SafeText> for Word<E, crate::SafeText> {
    fn from(text: crate::SafeText) -> Self {
        Word::from_text(text)
    }
}

impl<E: Words, T> PartialEq<E> for Word<E, T> {
    fn eq(&self, other: &E) -> bool {
        matches!(self, Word::Known(e) if e == other)
    }
}

impl<E: Words, T: AsRef<str>> fmt::Display for Word<E, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<E: Words, T: AsRef<str>> serde::Serialize for Word<E, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Only the read form deserializes: a sanitized type is never read back from disk.
impl<'de, E: Words> serde::Deserialize<'de> for Word<E, String> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Word::from_text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::words! {
        /// A test set.
        enum Light {
            /// Go.
            Green = "green",
            /// Stop.
            Red = "red",
            /// Spelled with a hyphen.
            RedAmber = "red-amber",
        }
    }

    #[test]
    fn one_spelling_for_every_way_a_word_is_read_or_written() {
        for &l in Light::ALL {
            assert_eq!(Light::parse(l.as_str()), Some(l));
            assert_eq!(l.to_string(), l.as_str());
            let json = serde_json::to_string(&l).unwrap();
            assert_eq!(json, format!("\"{}\"", l.as_str()));
            assert_eq!(serde_json::from_str::<Light>(&json).unwrap(), l);
        }
        assert_eq!(Light::parse("Green"), None, "spellings are exact");
        let err = serde_json::from_str::<Light>("\"blue<script>\"").unwrap_err();
        assert!(!err.to_string().contains("script"), "{err}");
        assert!(err.to_string().contains("green, red, red-amber"), "{err}");
    }

    #[test]
    fn a_word_of_another_producer_is_kept_and_a_known_one_is_always_known() {
        let w: Word<Light> = serde_json::from_str("\"red-amber\"").unwrap();
        assert_eq!(w, Word::Known(Light::RedAmber));
        assert_eq!(w, Light::RedAmber);
        let other: Word<Light> = serde_json::from_str("\"flashing\"").unwrap();
        assert_eq!(other, Word::Other("flashing".to_owned()));
        assert_eq!(other.as_str(), "flashing");
        assert_eq!(other.known(), None);
        assert_eq!(serde_json::to_string(&other).unwrap(), "\"flashing\"");
        assert_eq!(Word::<Light>::from_text("green".into()), Light::Green);
        assert!(serde_json::from_str::<Word<Light>>("3").is_err());
    }
}
