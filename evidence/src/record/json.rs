//! The journal's JSON writer: a [`serde::Serializer`] that appends compact JSON to a byte
//! buffer, byte for byte what `serde_json::to_vec` writes for the same value (`line_tests.rs`
//! holds the two together on every record kind, arbitrary strings and JSON trees).
//!
//! Why not `serde_json` itself: the writer thread serializes every record, and through
//! serde_json's generic `io::Write` path (a `write_all` per quote, colon and comma, a table
//! lookup per string byte, a fresh `Vec` grown per line) a record's line cost more than half of
//! the writer's instructions. Here punctuation is a `push`, strings are checked eight bytes at a
//! time and copied whole, and the line goes straight into the batch's buffer. Floats go through
//! serde_json (they are rare: a click's coordinates), so their spelling cannot drift.

use serde::ser::{self, Impossible, Serialize};
use serde_json::Error;

/// Appends `value` as compact JSON to `out`. On error, `out` may hold part of the value.
pub(crate) fn write<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), Error> {
    value.serialize(&mut Json { out })
}

/// Appends `s` as a JSON string (quoted, escaped as serde_json escapes).
pub(crate) fn push_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Eight bytes at a time while none of them needs escaping (almost all text); the last
        // few padded with spaces, so a short word costs one check, not one per byte.
        let word = match bytes.get(i..i + 8) {
            Some(w) => <[u8; 8]>::try_from(w).ok(),
            None => {
                let mut tail = [b' '; 8];
                let rest = &bytes[i..];
                tail[..rest.len()].copy_from_slice(rest);
                Some(tail)
            }
        };
        if word.is_some_and(|w| !any_needs_escape(u64::from_le_bytes(w))) {
            i += 8;
            continue;
        }
        let b = bytes[i];
        i += 1;
        if !needs_escape(b) {
            continue;
        }
        out.extend_from_slice(&bytes[start..i - 1]);
        start = i;
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// JSON requires escaping the quote, the backslash and the C0 controls; serde_json escapes
/// exactly those (not DEL, not U+2028/U+2029, not `/`).
#[inline]
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Whether any of the eight bytes of `w` [`needs_escape`]: the "has a byte less than n" and
/// "has a zero byte" word tricks, exact as a yes or no (a borrow only crosses a byte that
/// already matched).
#[inline]
fn any_needs_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
    let control = below(w, 0x20);
    let quote = below(w ^ (ONES * u64::from(b'"')), 1);
    let backslash = below(w ^ (ONES * u64::from(b'\\')), 1);
    control | quote | backslash != 0
}

const HEX: &[u8; 16] = b"0123456789abcdef";

pub(crate) fn push_int(out: &mut Vec<u8>, v: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Floats as serde_json spells them (non-finite ones as `null`).
fn push_float<T: Serialize>(out: &mut Vec<u8>, v: T) -> Result<(), Error> {
    serde_json::to_writer(out, &v)
}

fn key_must_be_a_string() -> Error {
    ser::Error::custom("key must be a string")
}

struct Json<'o> {
    out: &'o mut Vec<u8>,
}

/// An array or object being written: whether a member has been written yet.
struct Compound<'s, 'o> {
    json: &'s mut Json<'o>,
    first: bool,
}

impl Compound<'_, '_> {
    /// The separator before a member.
    #[inline]
    fn next(&mut self) {
        if self.first {
            self.first = false;
        } else {
            self.json.out.push(b',');
        }
    }

    fn key(&mut self, key: &str) {
        self.next();
        push_str(self.json.out, key);
        self.json.out.push(b':');
    }
}

impl<'s, 'o> ser::Serializer for &'s mut Json<'o> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'s, 'o>;
    type SerializeTuple = Compound<'s, 'o>;
    type SerializeTupleStruct = Compound<'s, 'o>;
    type SerializeTupleVariant = Compound<'s, 'o>;
    type SerializeMap = Compound<'s, 'o>;
    type SerializeStruct = Compound<'s, 'o>;
    type SerializeStructVariant = Compound<'s, 'o>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        push_int(self.out, v);
        Ok(())
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        push_int(self.out, v);
        Ok(())
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        push_int(self.out, v);
        Ok(())
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        push_int(self.out, v);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        push_int(self.out, v);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        push_int(self.out, v);
        Ok(())
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        push_int(self.out, v);
        Ok(())
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        push_int(self.out, v);
        Ok(())
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        push_int(self.out, v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        push_int(self.out, v);
        Ok(())
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        push_float(self.out, v)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        push_float(self.out, v)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        push_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        push_str(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        let mut seq = ser::Serializer::serialize_seq(self, Some(v.len()))?;
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        ser::SerializeSeq::end(seq)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.out.push(b'{');
        push_str(self.out, variant);
        self.out.push(b':');
        v.serialize(&mut *self)?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'s, 'o>, Error> {
        self.out.push(b'[');
        Ok(Compound {
            json: self,
            first: true,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Compound<'s, 'o>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Compound<'s, 'o>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'s, 'o>, Error> {
        self.out.push(b'{');
        push_str(self.out, variant);
        self.out.push(b':');
        self.serialize_seq(Some(len))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'s, 'o>, Error> {
        self.out.push(b'{');
        Ok(Compound {
            json: self,
            first: true,
        })
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Compound<'s, 'o>, Error> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Compound<'s, 'o>, Error> {
        self.out.push(b'{');
        push_str(self.out, variant);
        self.out.push(b':');
        self.serialize_map(Some(len))
    }
}

impl ser::SerializeSeq for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.next();
        v.serialize(&mut *self.json)
    }
    fn end(self) -> Result<(), Error> {
        self.json.out.push(b']');
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Result<(), Error> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Result<(), Error> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, v)
    }
    fn end(self) -> Result<(), Error> {
        self.json.out.extend_from_slice(b"]}");
        Ok(())
    }
}

impl ser::SerializeMap for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.next();
        key.serialize(MapKey {
            out: &mut *self.json.out,
        })?;
        self.json.out.push(b':');
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        v.serialize(&mut *self.json)
    }
    fn end(self) -> Result<(), Error> {
        self.json.out.push(b'}');
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.key(key);
        v.serialize(&mut *self.json)
    }
    fn end(self) -> Result<(), Error> {
        ser::SerializeMap::end(self)
    }
}

impl ser::SerializeStructVariant for Compound<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        ser::SerializeStruct::serialize_field(self, key, v)
    }
    fn end(self) -> Result<(), Error> {
        self.json.out.extend_from_slice(b"}}");
        Ok(())
    }
}

/// A map key: strings as they are; integers, booleans and finite floats quoted, as serde_json
/// does; anything else refused.
struct MapKey<'o> {
    out: &'o mut Vec<u8>,
}

impl MapKey<'_> {
    fn quoted(self, f: impl FnOnce(&mut Vec<u8>) -> Result<(), Error>) -> Result<(), Error> {
        self.out.push(b'"');
        f(self.out)?;
        self.out.push(b'"');
        Ok(())
    }
}

macro_rules! int_keys {
    ($($f:ident: $t:ty),*) => {$(
        fn $f(self, v: $t) -> Result<(), Error> {
            self.quoted(|out| {
                push_int(out, v);
                Ok(())
            })
        }
    )*};
}

impl ser::Serializer for MapKey<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    int_keys!(
        serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
        serialize_i128: i128, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_u128: u128
    );

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        push_str(self.out, v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        push_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.quoted(|out| {
            out.extend_from_slice(if v { b"true" } else { b"false" });
            Ok(())
        })
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        if !v.is_finite() {
            return Err(key_must_be_a_string());
        }
        self.quoted(|out| push_float(out, v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        if !v.is_finite() {
            return Err(key_must_be_a_string());
        }
        self.quoted(|out| push_float(out, v))
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_none(self) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_unit(self) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(key_must_be_a_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_word_needs_escaping_when_one_of_its_bytes_does(
            w in prop_oneof![
                any::<[u8; 8]>(),
                prop::array::uniform8(prop::sample::select(vec![0u8, 0x1f, 0x20, b'"', b'\\', b'a', 0x7f, 0x80, 0xe2, 0xff])),
            ]
        ) {
            prop_assert_eq!(
                any_needs_escape(u64::from_le_bytes(w)),
                w.iter().any(|&b| needs_escape(b))
            );
        }
    }
}
