//! A JSON text reader: values as `serde_json::Value`, objects key by key.
//!
//! Events are read straight from their text by hand ([`crate::event`]): the keys of an event and
//! of its content are compared with the names a reader expects, never allocated or hashed into a
//! map, and each field's value is built as a `Value` (a string moved into the event afterwards).
//! It accepts exactly the JSON `serde_json::from_str::<Value>` accepts and builds the same values
//! (numbers by the standard library's parsers, as serde_json types them; a repeated key keeps its first position
//! and its last value; nesting stops at serde_json's depth); the tests compare both on generated
//! and mutated documents. Its errors say what was wrong and where, in serde_json's words.

use std::borrow::Cow;

use serde_json::{Map, Number, Value};

/// Why a JSON text could not be read: a message with its 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at line {line} column {column}")]
pub struct JsonSyntaxError {
    /// What was wrong (`expected value`, `EOF while parsing a string`, …).
    pub message: &'static str,
    /// 1-based line of the offending byte.
    pub line: usize,
    /// 1-based column (in bytes) of the offending byte.
    pub column: usize,
}

/// How deep arrays and objects may nest (serde_json's limit: 127 levels are read, 128 are not).
const MAX_DEPTH: u32 = 127;

/// A cursor over one JSON text.
#[derive(Debug)]
pub struct TextReader<'a> {
    text: &'a str,
    position: usize,
    depth: u32,
}

impl<'a> TextReader<'a> {
    /// A reader at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        TextReader { text, position: 0, depth: 0 }
    }

    /// An error `message` at the current position.
    #[inline(never)]
    pub fn error(&self, message: &'static str) -> JsonSyntaxError {
        let before = &self.text.as_bytes()[..self.position.min(self.text.len())];
        let line = 1 + before.iter().filter(|b| **b == b'\n').count();
        let column = before.iter().rev().take_while(|b| **b != b'\n').count();
        JsonSyntaxError { message, line, column }
    }

    /// The next byte after any whitespace (not consumed), `None` at the end.
    pub fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(&byte) = bytes.get(self.position) {
            if !matches!(byte, b' ' | b'\n' | b'\t' | b'\r') {
                return Some(byte);
            }
            self.position += 1;
        }
        None
    }

    /// Consumes `byte` after whitespace, or fails with `message`.
    fn expect(&mut self, byte: u8, message: &'static str) -> Result<(), JsonSyntaxError> {
        match self.peek() {
            Some(found) if found == byte => {
                self.position += 1;
                Ok(())
            }
            Some(_) => Err(self.error(message)),
            None => Err(self.error(eof_message(message))),
        }
    }

    /// Only whitespace is left.
    pub fn finish(&mut self) -> Result<(), JsonSyntaxError> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.error("trailing characters")),
        }
    }

    /// Enters an object: consumes its `{`. Then [`Self::next_key`] until it answers `None`.
    pub fn begin_object(&mut self) -> Result<(), JsonSyntaxError> {
        self.expect(b'{', "invalid type: expected an object")?;
        self.enter()?;
        Ok(())
    }

    /// The next key of the object entered (its `:` consumed: the value comes next), or `None`
    /// after its closing `}`. `first`: no key was read from this object yet.
    pub fn next_key(&mut self, first: bool) -> Result<Option<Cow<'a, str>>, JsonSyntaxError> {
        match self.peek() {
            Some(b'}') => {
                self.position += 1;
                self.depth -= 1;
                return Ok(None);
            }
            Some(b',') if !first => self.position += 1,
            Some(b'"') if first => {}
            Some(_) if first => return Err(self.error("key must be a string")),
            Some(_) => return Err(self.error("expected `,` or `}`")),
            None => return Err(self.error("EOF while parsing an object")),
        }
        match self.peek() {
            Some(b'"') => {}
            Some(_) => return Err(self.error("key must be a string")),
            None => return Err(self.error("EOF while parsing a value")),
        }
        let key = self.string()?;
        self.expect(b':', "expected `:`")?;
        Ok(Some(key))
    }

    /// Enters an array: consumes its `[`. Then [`Self::next_item`] until it answers false.
    pub fn begin_array(&mut self) -> Result<(), JsonSyntaxError> {
        self.expect(b'[', "invalid type: expected an array")?;
        self.enter()
    }

    /// Whether another item of the array entered follows (its `,` consumed); false after `]`.
    pub fn next_item(&mut self, first: bool) -> Result<bool, JsonSyntaxError> {
        match self.peek() {
            Some(b']') => {
                self.position += 1;
                self.depth -= 1;
                Ok(false)
            }
            Some(b',') if !first => {
                self.position += 1;
                match self.peek() {
                    Some(b']') => Err(self.error("trailing comma")),
                    _ => Ok(true),
                }
            }
            Some(_) if first => Ok(true),
            Some(_) => Err(self.error("expected `,` or `]`")),
            None => Err(self.error("EOF while parsing a list")),
        }
    }

    fn enter(&mut self) -> Result<(), JsonSyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error("recursion limit exceeded"));
        }
        Ok(())
    }

    /// The next value, whole.
    pub fn value(&mut self) -> Result<Value, JsonSyntaxError> {
        match self.peek() {
            None => Err(self.error("EOF while parsing a value")),
            Some(b'"') => Ok(Value::String(self.string()?.into_owned())),
            Some(b'{') => {
                self.begin_object()?;
                let mut map = Map::new();
                let mut first = true;
                while let Some(key) = self.next_key(first)? {
                    first = false;
                    let value = self.value()?;
                    map.insert(key.into_owned(), value);
                }
                Ok(Value::Object(map))
            }
            Some(b'[') => {
                self.begin_array()?;
                let mut items = Vec::new();
                let mut first = true;
                while self.next_item(first)? {
                    first = false;
                    items.push(self.value()?);
                }
                Ok(Value::Array(items))
            }
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number().map(Value::Number),
            Some(_) => Err(self.error("expected value")),
        }
    }

    fn literal(&mut self, word: &'static str, value: Value) -> Result<Value, JsonSyntaxError> {
        let rest = &self.text.as_bytes()[self.position..];
        for (index, expected) in word.bytes().enumerate() {
            match rest.get(index) {
                Some(found) if *found == expected => {}
                Some(_) => {
                    self.position += index;
                    return Err(self.error("expected ident"));
                }
                None => {
                    self.position += index;
                    return Err(self.error("EOF while parsing a value"));
                }
            }
        }
        self.position += word.len();
        Ok(value)
    }

    /// A number, as serde_json reads it.
    fn number(&mut self) -> Result<Number, JsonSyntaxError> {
        let bytes = self.text.as_bytes();
        let start = self.position;
        let mut end = start;
        while end < bytes.len()
            && matches!(bytes[end], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
        {
            end += 1;
        }
        self.position = end;
        super::number::parse_number(&self.text[start..end]).map_err(|error| {
            self.position = start;
            self.error(match error {
                super::number::NumberError::OutOfRange => "number out of range",
                super::number::NumberError::Invalid => "invalid number",
            })
        })
    }

    /// A string (at its opening quote): borrowed from the text unless it has escapes.
    pub fn string(&mut self) -> Result<Cow<'a, str>, JsonSyntaxError> {
        self.expect(b'"', "invalid type: expected a string")?;
        let bytes = self.text.as_bytes();
        let start = self.position;
        let mut end = start;
        loop {
            end = plain_run_end(bytes, end);
            match bytes.get(end) {
                None => {
                    self.position = end;
                    return Err(self.error("EOF while parsing a string"));
                }
                Some(b'"') => {
                    self.position = end + 1;
                    return Ok(Cow::Borrowed(&self.text[start..end]));
                }
                Some(b'\\') => break,
                Some(byte) if *byte < 0x20 => {
                    self.position = end + 1;
                    return Err(self.error(
                        "control character (\\u0000-\\u001F) found while parsing a string",
                    ));
                }
                Some(_) => end += 1,
            }
        }
        let mut owned = String::with_capacity(end - start + 16);
        owned.push_str(&self.text[start..end]);
        self.position = end;
        self.escaped_rest(owned).map(Cow::Owned)
    }

    /// The rest of a string that has escapes, from the first backslash.
    fn escaped_rest(&mut self, mut out: String) -> Result<String, JsonSyntaxError> {
        let bytes = self.text.as_bytes();
        loop {
            let start = self.position;
            self.position = plain_run_end(bytes, start);
            out.push_str(&self.text[start..self.position]);
            let Some(&byte) = bytes.get(self.position) else {
                return Err(self.error("EOF while parsing a string"));
            };
            self.position += 1;
            match byte {
                b'"' => return Ok(out),
                b'\\' => self.escape(&mut out)?,
                _ => {
                    return Err(self.error(
                        "control character (\\u0000-\\u001F) found while parsing a string",
                    ));
                }
            }
        }
    }

    /// One escape (after its backslash).
    fn escape(&mut self, out: &mut String) -> Result<(), JsonSyntaxError> {
        let Some(&byte) = self.text.as_bytes().get(self.position) else {
            return Err(self.error("EOF while parsing a string"));
        };
        self.position += 1;
        let simple = match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(out),
            _ => return Err(self.error("invalid escape")),
        };
        out.push(simple);
        Ok(())
    }

    /// A `\uXXXX` escape (after its `u`), with the low half of a surrogate pair after it.
    fn unicode_escape(&mut self, out: &mut String) -> Result<(), JsonSyntaxError> {
        let high = self.hex4()?;
        let code = match high {
            0xDC00..=0xDFFF => return Err(self.error("lone leading surrogate in hex escape")),
            0xD800..=0xDBFF => {
                let bytes = self.text.as_bytes();
                if bytes.get(self.position) != Some(&b'\\')
                    || bytes.get(self.position + 1) != Some(&b'u')
                {
                    let message = match bytes.get(self.position) {
                        None => "EOF while parsing a string",
                        Some(_) => "unexpected end of hex escape",
                    };
                    return Err(self.error(message));
                }
                self.position += 2;
                let low = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(self.error("lone leading surrogate in hex escape"));
                }
                0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(low) - 0xDC00)
            }
            other => u32::from(other),
        };
        out.push(char::from_u32(code).ok_or_else(|| self.error("invalid unicode code point"))?);
        Ok(())
    }

    fn hex4(&mut self) -> Result<u16, JsonSyntaxError> {
        let mut value = 0u16;
        for _ in 0..4 {
            let Some(&byte) = self.text.as_bytes().get(self.position) else {
                return Err(self.error("EOF while parsing a string"));
            };
            let digit = match byte {
                b'0'..=b'9' => byte - b'0',
                b'a'..=b'f' => byte - b'a' + 10,
                b'A'..=b'F' => byte - b'A' + 10,
                _ => return Err(self.error("invalid escape")),
            };
            self.position += 1;
            value = value * 16 + u16::from(digit);
        }
        Ok(value)
    }
}

/// The index of the first byte at or after `from` that ends a run of plain string bytes (a
/// quote, a backslash or a control character), or `bytes.len()`. Eight bytes at a time (the
/// npm module is built at opt-level "z", which does not vectorize a byte loop): bit 7 of each
/// byte of `flags` is set for a byte that ends the run; a flag can also be set wrongly, but
/// only above a right one (a borrow), so the first word with any flag is read byte by byte.
fn plain_run_end(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let mut at = from;
    while let Some(word) = bytes.get(at..at + 8) {
        let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let flags = zero_byte(w ^ (ONES * u64::from(b'"')))
            | zero_byte(w ^ (ONES * u64::from(b'\\')))
            | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if flags != 0 {
            break;
        }
        at += 8;
    }
    while let Some(&byte) = bytes.get(at) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            return at;
        }
        at += 1;
    }
    at
}

/// The end-of-input form of an `expected …` message.
fn eof_message(message: &'static str) -> &'static str {
    match message {
        "expected `:`" => "EOF while parsing an object",
        _ => "EOF while parsing a value",
    }
}

/// Reads `text` as one JSON value, as `serde_json::from_str::<Value>` does.
pub fn value_from_text(text: &str) -> Result<Value, JsonSyntaxError> {
    let mut reader = TextReader::new(text);
    let value = reader.value()?;
    reader.finish()?;
    Ok(value)
}

/// `value` as a JSON value, through its text: serde_json writes the text (the one serializer
/// every type is written with) and [`value_from_text`] reads it back. `serde_json::to_value`
/// would add a second copy of every type's `Serialize` code to the npm module (measured in
/// `git show 01261fa:docs/performance.md`, "Cold types back to serde derives").
pub fn to_value<T: serde::Serialize + ?Sized>(value: &T) -> Result<Value, serde_json::Error> {
    value_from_text(&serde_json::to_string(value)?)
        .map_err(<serde_json::Error as serde::ser::Error>::custom)
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
