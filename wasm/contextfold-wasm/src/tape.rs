//! The value tape: a JS value written into one buffer by `pkg/tape.js`, read here by serde.
//!
//! For events with long strings, JSON text is most of a call's cost: `JSON.stringify` escapes
//! every string and this side unescapes it. The tape carries strings as UTF-8 bytes
//! (`encodeInto`), which halves the stateless `project()` of a session wasm has not seen
//! (docs/performance.md, npm row `unseen`), and a `BigInt` as an exact integer.
//!
//! The writer gives a tape only for a value its JSON text would give (`pkg/tape.js`), and
//! numbers read as the text's: a safe integer as an integer, an integral double of 2^53 up to
//! 10^21 from the digits `JSON.stringify` writes (tag 9), any other as a double. Layout
//! (little-endian): a byte, 1 when the value holds a `BigInt` (the result then goes back
//! exactly, [`crate::convert::to_js`]), 2 when its strings were not checked for lone surrogates
//! ([`check_strings`]), else 0; then a tag and its value.
//! | tag | value | then |
//! | --- | --- | --- |
//! | 0, 1, 2 | null, false, true | |
//! | 3 | a double | 8 bytes |
//! | 4 | a string | u32 length, its UTF-8 bytes |
//! | 5 | an array | u32 count, the items |
//! | 6 | an object | u32 count, then per member its key (a string, no tag) and value |
//! | 7, 8 | an exact integer (a `BigInt`) | 8 bytes: `i64`, `u64` |
//! | 9 | a number | as a string: its JSON text |

use contextfold_core::binding::value_from_text;
use contextfold_core::event::RuntimeEvent;
use serde::de::value::Error as TapeError;
use serde::de::{self, DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::convert::BindingError;

/// How deep arrays and objects may nest (as in JSON text).
const MAX_DEPTH: u32 = 127;
/// Integral doubles up to this magnitude are integers.
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// The first byte of a tape whose strings the writer did not check for lone surrogates.
const UNCHECKED_STRINGS: u8 = 2;

/// Refuses a tape whose strings were not checked (first byte `UNCHECKED_STRINGS`) if its bytes
/// hold U+FFFD anywhere: `encodeInto` writes a lone surrogate as U+FFFD, where JSON text would
/// give an error, so the wrapper then checks each string (`isWellFormed`) and writes the tape
/// again. Checking here, one SIMD search over the whole tape, is cheaper than checking every
/// string in JS: the unseen npm projection takes 3-5% less (docs/performance.md). U+FFFD
/// elsewhere (a number's bytes) only costs that second writing.
pub fn check_strings(bytes: &[u8]) -> Result<(), BindingError> {
    let unchecked = bytes.first() == Some(&UNCHECKED_STRINGS);
    // U+FFFD is EF BF BD: its first byte found by `memchr` (4 KB smaller gzipped than `memmem`).
    let replacement = |at: usize| bytes.get(at + 1..at + 3) == Some(&[0xBF, 0xBD][..]);
    match unchecked && memchr::memchr_iter(0xEF, bytes).any(replacement) {
        true => Err(BindingError::UncheckedTape),
        false => Ok(()),
    }
}

/// The events of a tape, by their serde derive; what it refuses is read as JSON values by
/// [`crate::events_from_json`], for the errors (codes, the bad event's index) of JSON text.
pub fn events_from_tape(bytes: &[u8]) -> Result<Vec<RuntimeEvent>, BindingError> {
    from_tape(bytes).or_else(|_| {
        crate::events_from_json(from_tape(bytes).map_err(|e| BindingError::invalid("events", e))?)
    })
}

/// The value of a tape, which must span all of it after its first byte.
pub fn from_tape<'a, T: serde::Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, TapeError> {
    let mut tape = Tape { bytes, at: 1, depth: 0 };
    let value = T::deserialize(&mut tape)?;
    match tape.at == bytes.len() {
        true => Ok(value),
        false => Err(TapeError::custom("bytes after the value")),
    }
}

/// A value's head: its scalar, or how many items or members follow.
enum Head<'a> {
    Unit,
    Bool(bool),
    Float(f64),
    Signed(i64),
    Unsigned(u64),
    Str(&'a str),
    Seq(usize),
    Map(usize),
}

/// A cursor over a tape.
struct Tape<'a> {
    bytes: &'a [u8],
    at: usize,
    depth: u32,
}

impl<'a> Tape<'a> {
    fn take(&mut self, length: usize) -> Result<&'a [u8], TapeError> {
        let taken = self.bytes.get(self.at..self.at.saturating_add(length));
        self.at = self.at.saturating_add(length);
        taken.ok_or_else(|| TapeError::custom("the tape ends inside a value"))
    }

    fn word(&mut self) -> Result<[u8; 8], TapeError> {
        Ok(self.take(8)?.try_into().unwrap_or_default())
    }

    fn count(&mut self) -> Result<usize, TapeError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap_or_default()) as usize)
    }

    fn string(&mut self) -> Result<&'a str, TapeError> {
        let length = self.count()?;
        // simdutf8: 16 bytes per step (std's check is several times slower at opt-level "z").
        simdutf8::basic::from_utf8(self.take(length)?)
            .map_err(|_| TapeError::custom("a string is not UTF-8"))
    }

    /// The next value's head, read here once rather than in every visitor's `deserialize_any`.
    #[inline(never)]
    fn head(&mut self) -> Result<Head<'a>, TapeError> {
        Ok(match self.take(1)?[0] {
            0 => Head::Unit,
            tag @ (1 | 2) => Head::Bool(tag == 2),
            3 => match f64::from_le_bytes(self.word()?) {
                x if x.fract() != 0.0 || x.abs() > MAX_SAFE => Head::Float(x),
                x if x < 0.0 => Head::Signed(x as i64),
                x => Head::Unsigned(x as u64),
            },
            9 => match value_from_text(self.string()?) {
                Ok(Value::Number(n)) => match (n.as_u64(), n.as_i64()) {
                    (Some(u), _) => Head::Unsigned(u),
                    (None, Some(i)) => Head::Signed(i),
                    _ => Head::Float(n.as_f64().unwrap_or(f64::NAN)),
                },
                _ => return Err(TapeError::custom("a number's text is not a number")),
            },
            4 => Head::Str(self.string()?),
            5 => Head::Seq(self.count()?),
            6 => Head::Map(self.count()?),
            7 => Head::Signed(i64::from_le_bytes(self.word()?)),
            8 => Head::Unsigned(u64::from_le_bytes(self.word()?)),
            tag => return Err(TapeError::custom(format_args!("unknown tape tag {tag}"))),
        })
    }

    fn nested<T>(&mut self, read: impl FnOnce(&mut Self) -> T) -> Result<T, TapeError> {
        if self.depth == MAX_DEPTH {
            return Err(TapeError::custom("recursion limit exceeded"));
        }
        self.depth += 1;
        let value = read(self);
        self.depth -= 1;
        Ok(value)
    }
}

impl<'de, 'a: 'de> Deserializer<'de> for &mut Tape<'a> {
    type Error = TapeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TapeError> {
        match self.head()? {
            Head::Unit => visitor.visit_unit(),
            Head::Bool(b) => visitor.visit_bool(b),
            Head::Float(x) => visitor.visit_f64(x),
            Head::Signed(n) => visitor.visit_i64(n),
            Head::Unsigned(n) => visitor.visit_u64(n),
            Head::Str(text) => visitor.visit_borrowed_str(text),
            Head::Seq(left) => self.nested(|tape| visitor.visit_seq(Items { tape, left }))?,
            Head::Map(left) => self.nested(|tape| visitor.visit_map(Items { tape, left }))?,
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, TapeError> {
        if self.bytes.get(self.at) == Some(&0) {
            self.at += 1;
            return visitor.visit_none();
        }
        visitor.visit_some(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// The items of an array, or the members of an object, left to read.
struct Items<'t, 'a> {
    tape: &'t mut Tape<'a>,
    left: usize,
}

impl<'de, 'a: 'de> SeqAccess<'de> for Items<'_, 'a> {
    type Error = TapeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, TapeError> {
        let Some(left) = self.left.checked_sub(1) else { return Ok(None) };
        self.left = left;
        seed.deserialize(&mut *self.tape).map(Some)
    }
}

impl<'de, 'a: 'de> MapAccess<'de> for Items<'_, 'a> {
    type Error = TapeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, TapeError> {
        let Some(left) = self.left.checked_sub(1) else { return Ok(None) };
        self.left = left;
        let key = self.tape.string()?;
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, TapeError> {
        seed.deserialize(&mut *self.tape)
    }
}
