//! JSONL input: events as UTF-8 bytes, one `RuntimeEvent` per line (a ledger export, the files
//! of the `contextfold` CLI), passed to any export that takes events as a `Uint8Array` (the
//! wrapper encodes a JSONL string to one).
//!
//! The bytes are copied into wasm memory once, checked as UTF-8 here, and parsed by the core's
//! [`RuntimeEvent::parse_jsonl_lines`]: the first bad line is reported with its 1-based number
//! and the core's code, and each event keeps its line to locate a log rule it breaks later.

use contextfold_core::event::{LogError, RuntimeEvent};
use wasm_bindgen::{JsCast, JsValue};

use crate::convert::BindingError;

/// Events read from JSONL, with the 1-based line each one came from (to locate a broken log rule).
#[derive(Debug, Clone, PartialEq)]
pub struct JsonlEvents {
    /// The events, in line order.
    pub events: Vec<RuntimeEvent>,
    /// `lines[i]`: the line of `events[i]`.
    pub lines: Vec<usize>,
}

impl JsonlEvents {
    /// The error for a log rule broken at an event of this input: located at its line.
    pub fn log_error(&self, error: LogError) -> BindingError {
        located_log_error(error, |index| self.lines.get(index).copied())
    }
}

/// The events of a JSONL `Uint8Array`, or `None` when `value` is not a `Uint8Array` (a `Buffer`
/// is one).
pub fn events_from_jsonl_js(value: &JsValue) -> Option<Result<JsonlEvents, BindingError>> {
    let bytes = value.dyn_ref::<js_sys::Uint8Array>()?;
    Some(events_from_jsonl(&bytes.to_vec()))
}

/// The error for a broken log rule: at the JSONL line `line_of(index)` of the offending event
/// when it has one (`BindingError::EventLine` with the core's `log_*` code), else the core's error.
pub fn located_log_error(
    error: LogError,
    line_of: impl Fn(usize) -> Option<usize>,
) -> BindingError {
    match line_of(error.index()) {
        Some(line) => BindingError::EventLine {
            line,
            code: error.code().to_owned(),
            message: error.to_string(),
        },
        None => BindingError::core(error.code(), error),
    }
}

/// Parses UTF-8 JSONL bytes into events (see the module docs); invalid UTF-8 is
/// [`BindingError::InvalidUtf8`], a bad line [`BindingError::EventLine`].
pub fn events_from_jsonl(bytes: &[u8]) -> Result<JsonlEvents, BindingError> {
    // simdutf8 checks 16 bytes per step; std's check, slower, locates an error.
    let text = simdutf8::basic::from_utf8(bytes).or_else(|_| std::str::from_utf8(bytes)).map_err(
        |error| {
            let offset = error.valid_up_to();
            let line = 1 + bytes[..offset].iter().filter(|&&b| b == b'\n').count();
            BindingError::InvalidUtf8 { line, offset }
        },
    )?;
    let (events, lines) = RuntimeEvent::parse_jsonl_lines(text).map_err(|error| {
        let (code, message) = (error.source.code().to_owned(), error.source.to_string());
        BindingError::EventLine { line: error.line, code, message }
    })?;
    Ok(JsonlEvents { events, lines })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &str = r#"{"sessionId":"s","runId":"r","turnId":"t","runtimeEventId":"e1","seq":1,"content":{"type":"user_text","text":"héllo"}}"#;

    #[test]
    fn events_keep_their_lines() {
        let event2 = EVENT.replace("e1", "e2").replace("\"seq\":1", "\"seq\":2");
        let parsed = events_from_jsonl(format!("\r\n{EVENT}\r\n   \n{event2}\n").as_bytes());
        assert_eq!(parsed.expect("parses").lines, [2, 4]);
        let error = events_from_jsonl(b"\n\n{not json").expect_err("bad line");
        assert_eq!((error.line(), error.code()), (Some(3), "event_syntax"));
    }

    #[test]
    fn a_broken_log_rule_is_located_at_the_line_of_its_event() {
        let parsed = events_from_jsonl(format!("{EVENT}\n\n{EVENT}").as_bytes()).expect("parses");
        let error = contextfold_core::event::validate_log(&parsed.events).expect_err("seq repeats");
        let located = parsed.log_error(error);
        assert_eq!((located.line(), located.code()), (Some(3), "log_seq_not_increasing"));
    }

    #[test]
    fn invalid_utf8_names_its_line_and_offset() {
        let mut bytes = format!("{EVENT}\n").into_bytes();
        bytes.extend_from_slice(b"{\"x\":\"\xff\"}");
        let error = events_from_jsonl(&bytes).expect_err("not UTF-8");
        assert_eq!(error, BindingError::InvalidUtf8 { line: 2, offset: EVENT.len() + 7 });
        assert_eq!(error.code(), "jsonl_invalid_utf8");
    }
}
