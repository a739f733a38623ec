//! A small incremental parser for `text/event-stream` (the WHATWG server-sent events format),
//! enough for the Responses streaming API.
//!
//! Bytes arrive in arbitrary chunks; lines end with `\n`, `\r\n` or `\r` (a `\r` at the end of
//! a chunk waits for the next one); `:` lines are comments; `event:` names the event; `data:`
//! lines are joined with `\n`; one optional space after the colon is dropped; `id:` and
//! `retry:` are ignored; a blank line dispatches the event if it has data. A leading UTF-8 BOM
//! is skipped, invalid UTF-8 is replaced (as the format specifies), and a partial event left at
//! the end of the stream is discarded.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` name, if any.
    pub(crate) event: Option<String>,
    /// The joined `data:` lines.
    pub(crate) data: String,
}

/// Incremental parser state.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buffer: Vec<u8>,
    started: bool,
    event: Option<String>,
    data: Option<String>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Bytes buffered without a line end yet (the caller bounds the stream's size).
    pub(crate) fn pending_bytes(&self) -> usize {
        self.buffer.len()
    }

    /// Feeds a chunk; returns the events it completed, in order.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(chunk);
        if !self.started {
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            if self.buffer.len() < BOM.len() && BOM.starts_with(&self.buffer) {
                return Vec::new(); // could still be the start of a byte-order mark
            }
            self.started = true;
            if self.buffer.starts_with(BOM) {
                self.buffer.drain(..BOM.len());
            }
        }
        let mut events = Vec::new();
        let mut consumed = 0;
        while let Some(offset) =
            self.buffer[consumed..].iter().position(|&byte| byte == b'\n' || byte == b'\r')
        {
            let end = consumed + offset;
            let terminator = if self.buffer[end] == b'\r' {
                match self.buffer.get(end + 1) {
                    Some(b'\n') => 2,
                    Some(_) => 1,
                    None => break, // a `\r` may be the first half of `\r\n`
                }
            } else {
                1
            };
            let line = String::from_utf8_lossy(&self.buffer[consumed..end]).into_owned();
            consumed = end + terminator;
            if let Some(event) = self.process_line(&line) {
                events.push(event);
            }
        }
        self.buffer.drain(..consumed);
        events
    }

    fn process_line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let data = self.data.take();
            let event = self.event.take();
            return data.map(|data| SseEvent { event, data });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match self.data.as_mut() {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_chunks(text: &[u8], size: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        text.chunks(size).flat_map(|chunk| parser.push(chunk)).collect()
    }

    #[test]
    fn events_survive_any_chunking_and_line_ending() {
        let text = "\u{feff}: comment\r\nevent: a\r\ndata: {\"x\":1}\r\n\r\nevent:b\rdata:line1\rdata: line2\r\rdata: é\n\nid: 7\nretry: 10\n\n";
        let expected = vec![
            SseEvent { event: Some("a".into()), data: "{\"x\":1}".into() },
            SseEvent { event: Some("b".into()), data: "line1\nline2".into() },
            SseEvent { event: None, data: "é".into() },
        ];
        for size in 1..=text.len() {
            assert_eq!(parse_in_chunks(text.as_bytes(), size), expected, "chunk size {size}");
        }
    }

    #[test]
    fn a_partial_event_at_the_end_is_not_dispatched() {
        let mut parser = SseParser::new();
        let events = parser.push(b"event: x\ndata: {\"cut\":");
        assert!(events.is_empty());
        assert!(parser.pending_bytes() > 0);
    }

    #[test]
    fn an_event_without_data_is_dropped() {
        assert!(parse_in_chunks(b"event: ping\n\n", 4).is_empty());
    }

    mod fuzz {
        use proptest::prelude::*;

        use super::*;

        /// Stream-like bytes: field names, separators, line ends of every kind, a BOM, text,
        /// and invalid UTF-8, in any order.
        fn stream() -> impl Strategy<Value = Vec<u8>> {
            let piece = prop_oneof![
                Just(b"data:".to_vec()),
                Just(b"data: ".to_vec()),
                Just(b"event: ".to_vec()),
                Just(b":".to_vec()),
                Just(b"id: 1".to_vec()),
                Just(b"\n".to_vec()),
                Just(b"\r".to_vec()),
                Just(b"\r\n".to_vec()),
                Just(b"\xEF\xBB\xBF".to_vec()),
                Just(vec![0xC3]),
                Just(vec![0xFF, 0xFE]),
                "[a-z{}\":,é ]{0,8}".prop_map(String::into_bytes),
            ];
            proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2_000))]

            /// Any bytes in any chunking: no panic, and exactly the events (and the pending
            /// remainder) of the same bytes fed at once.
            #[test]
            fn chunking_never_changes_the_events(
                bytes in stream(),
                cuts in proptest::collection::vec(1usize..16, 0..24),
            ) {
                let mut whole = SseParser::new();
                let expected = whole.push(&bytes);
                let mut parser = SseParser::new();
                let mut events = Vec::new();
                let mut rest = bytes.as_slice();
                for cut in cuts {
                    let (chunk, tail) = rest.split_at(cut.min(rest.len()));
                    events.extend(parser.push(chunk));
                    rest = tail;
                }
                events.extend(parser.push(rest));
                prop_assert_eq!(events, expected);
                prop_assert_eq!(parser.pending_bytes(), whole.pending_bytes());
            }
        }
    }
}
