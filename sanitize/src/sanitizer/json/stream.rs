//! Streaming JSON sanitization: from any serde `Deserializer` to any serde `Serializer`,
//! without building the document in memory.
//!
//! The decisions are the walker's (`json.rs`: key contexts, `{name, value}` pairs, descriptive
//! fields, colliding keys); only the plumbing differs. Memory is bounded by the largest string
//! and the nesting depth, plus one buffered `"value"` member: a `"value"` that arrives before its
//! object's `"name"` is held until the name is known (or the object ends), then written last.
//! Pure: the caller's deserializer and serializer do the reading and writing.

use super::{child_ctx, clean_key, pair_ctx, string, unique_key, walk_ctx, Ctx};
use crate::Sanitizer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{self, Serialize, SerializeMap, SerializeSeq, Serializer};
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;

/// Sanitizes one document from `de` into `ser`. Serializer errors are reported through the
/// deserializer's error type (as text); a caller that needs the I/O error kind of a failed
/// write (a closed pipe) should record it in its writer.
pub(crate) fn transcode<'de, D, S>(
    s: &Sanitizer,
    de: D,
    ser: S,
    max_chars: usize,
) -> Result<S::Ok, D::Error>
where
    D: Deserializer<'de>,
    S: Serializer,
{
    de.deserialize_any(Node {
        s,
        ctx: Ctx::Plain,
        max_chars,
        ser,
    })
}

/// Visits one value and writes its sanitized form to `ser`.
struct Node<'a, S> {
    s: &'a Sanitizer,
    ctx: Ctx,
    max_chars: usize,
    ser: S,
}

fn ser_err<E: de::Error>(e: impl fmt::Display) -> E {
    E::custom(e)
}

impl<'de, S: Serializer> Visitor<'de> for Node<'_, S> {
    type Value = S::Ok;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<S::Ok, E> {
        self.ser.serialize_bool(v).map_err(ser_err)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<S::Ok, E> {
        self.ser.serialize_i64(v).map_err(ser_err)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<S::Ok, E> {
        self.ser.serialize_u64(v).map_err(ser_err)
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<S::Ok, E> {
        self.ser.serialize_i128(v).map_err(ser_err)
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<S::Ok, E> {
        self.ser.serialize_u128(v).map_err(ser_err)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<S::Ok, E> {
        self.ser.serialize_f64(v).map_err(ser_err)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<S::Ok, E> {
        let clean = string(self.s, v, self.ctx, self.max_chars);
        self.ser.serialize_str(&clean).map_err(ser_err)
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<S::Ok, E> {
        self.visit_str(&String::from_utf8_lossy(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<S::Ok, E> {
        self.ser.serialize_unit().map_err(ser_err)
    }

    fn visit_none<E: de::Error>(self) -> Result<S::Ok, E> {
        self.ser.serialize_none().map_err(ser_err)
    }

    fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<S::Ok, D2::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<S::Ok, A::Error> {
        let mut out = self.ser.serialize_seq(None).map_err(ser_err)?;
        while seq
            .next_element_seed(Element {
                s: self.s,
                ctx: self.ctx,
                max_chars: self.max_chars,
                out: &mut out,
            })?
            .is_some()
        {}
        out.end().map_err(ser_err)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<S::Ok, A::Error> {
        let (s, max_chars) = (self.s, self.max_chars);
        let mut out = self.ser.serialize_map(None).map_err(ser_err)?;
        let mut written: HashSet<String> = HashSet::new();
        let mut pair: Option<Ctx> = None;
        let mut name_seen = false;
        let mut deferred: Option<(String, serde_json::Value)> = None;
        while let Some(key) = map.next_key::<String>()? {
            let clean = clean_key(s, &key);
            if key == "name" || (key == "value" && !name_seen) {
                // Small members the pair rule needs whole: read them as values.
                let value: serde_json::Value = map.next_value()?;
                if key == "value" {
                    deferred = Some((clean, value));
                    continue;
                }
                name_seen = true;
                if let serde_json::Value::String(name) = &value {
                    pair = pair_ctx(s, name, max_chars);
                }
                let walked = walk_ctx(s, &value, child_ctx(self.ctx, &key, &clean), max_chars);
                let clean = unique_key(s, clean, |k| written.contains(k));
                out.serialize_entry(&clean, &walked).map_err(ser_err)?;
                written.insert(clean);
                continue;
            }
            let child = match pair {
                Some(pair) if key == "value" => pair,
                _ => child_ctx(self.ctx, &key, &clean),
            };
            let clean = unique_key(s, clean, |k| written.contains(k));
            out.serialize_key(&clean).map_err(ser_err)?;
            written.insert(clean);
            map.next_value_seed(Member {
                s,
                ctx: child,
                max_chars,
                out: &mut out,
            })?;
        }
        if let Some((clean, value)) = deferred {
            let child = pair.unwrap_or_else(|| child_ctx(self.ctx, "value", &clean));
            let walked = walk_ctx(s, &value, child, max_chars);
            let clean = unique_key(s, clean, |k| written.contains(k));
            out.serialize_entry(&clean, &walked).map_err(ser_err)?;
        }
        out.end().map_err(ser_err)
    }
}

/// Deserializes one array element straight into the output sequence.
struct Element<'a, 'o, M> {
    s: &'a Sanitizer,
    ctx: Ctx,
    max_chars: usize,
    out: &'o mut M,
}

impl<'de, M: SerializeSeq> DeserializeSeed<'de> for Element<'_, '_, M> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let pending = Pending::new(self.s, self.ctx, self.max_chars, d);
        let written = self.out.serialize_element(&pending);
        pending.finish(written)
    }
}

/// Deserializes one object member's value straight into the output map.
struct Member<'a, 'o, M> {
    s: &'a Sanitizer,
    ctx: Ctx,
    max_chars: usize,
    out: &'o mut M,
}

impl<'de, M: SerializeMap> DeserializeSeed<'de> for Member<'_, '_, M> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        let pending = Pending::new(self.s, self.ctx, self.max_chars, d);
        let written = self.out.serialize_value(&pending);
        pending.finish(written)
    }
}

/// A deserializer waiting to be driven by the serializer that will write its value
/// (`Serialize::serialize` takes `&self`, hence the cells). A deserializer error is kept whole
/// so the caller sees it, not its text through the serializer.
struct Pending<'a, 'de, D: Deserializer<'de>> {
    s: &'a Sanitizer,
    ctx: Ctx,
    max_chars: usize,
    de: RefCell<Option<D>>,
    error: RefCell<Option<D::Error>>,
    _de: PhantomData<&'de ()>,
}

impl<'a, 'de, D: Deserializer<'de>> Pending<'a, 'de, D> {
    fn new(s: &'a Sanitizer, ctx: Ctx, max_chars: usize, de: D) -> Self {
        Pending {
            s,
            ctx,
            max_chars,
            de: RefCell::new(Some(de)),
            error: RefCell::new(None),
            _de: PhantomData,
        }
    }

    /// The outcome of writing the value: the deserializer's own error if it failed while the
    /// serializer drove it, else the serializer's (as text).
    fn finish<E: fmt::Display>(self, written: Result<(), E>) -> Result<(), D::Error> {
        match (self.error.into_inner(), written) {
            (Some(e), _) => Err(e),
            (None, Err(e)) => Err(ser_err(e)),
            (None, Ok(())) => Ok(()),
        }
    }
}

impl<'de, D: Deserializer<'de>> Serialize for Pending<'_, 'de, D> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let Some(de) = self.de.borrow_mut().take() else {
            return Err(ser::Error::custom("value already written"));
        };
        let node = Node {
            s: self.s,
            ctx: self.ctx,
            max_chars: self.max_chars,
            ser,
        };
        de.deserialize_any(node).map_err(|e| {
            let text = e.to_string();
            *self.error.borrow_mut() = Some(e);
            ser::Error::custom(text)
        })
    }
}
