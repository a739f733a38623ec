//! Events read with their texts kept as references (see [`crate::interned`]), and the reuse of
//! the last call's events when its JSON text is a prefix of this call's.
//!
//! An agent projects the same events again and again, a few more each time: the JSON text of
//! the events with interned strings (references in place of the long strings) then starts with
//! the last call's text, minus its closing `]`. Those events are not parsed again: only the
//! appended ones are, and the last call's events (already read and resolved) are kept. Equal
//! texts mean equal events, because a reference names one string until its id is released,
//! and releasing any id forgets the kept events ([`forget`]). Anything else is read whole.
//!
//! The wrapper can spare sending the text again: each kept state has a token, returned with
//! the projection; a call may then name the token and give only the elements appended since
//! ([`KeptInput::Continue`]). A token that is not the kept state's reads as unreadable, and the
//! wrapper sends the whole text.

use std::cell::RefCell;
use std::collections::HashMap;

use contextfold_core::event::RuntimeEvent;

use crate::convert::BindingError;
use crate::interned::{TextSlot, keep_texts, parse};

/// Events whose texts (see [`TextSlot`]) may still be references, with where each referenced
/// string first occurs. Every other string is resolved.
#[derive(Debug, Default)]
pub struct KeptReferences {
    /// The events.
    pub events: Vec<RuntimeEvent>,
    /// Per referenced id: the index of the first event holding it and the slot it is in.
    pub sources: HashMap<usize, (usize, TextSlot)>,
}

/// The last call's events, the text they were read from, and the token naming this state.
struct Kept {
    token: u32,
    text: String,
    events: KeptReferences,
}

thread_local! {
    static LAST: RefCell<Option<Kept>> = const { RefCell::new(None) };
    static LAST_TOKEN: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The events of a call, as the wrapper sends them.
#[derive(Debug)]
pub enum KeptInput {
    /// The whole JSON text of the events (with references).
    Text(String),
    /// The kept state named by `token`, with `elements` appended: the text of the new elements
    /// and the closing `]` (`"…},{…}]"`), or empty when nothing was appended.
    Continue {
        /// The token returned with the call that kept the state.
        token: u32,
        /// The appended elements.
        elements: String,
    },
}

/// Runs `f` over the events of `input` read with their texts kept, reusing the last call's
/// events for the prefix the two share (see the module docs); the events are kept for the next
/// call, under the token returned beside `f`'s result.
pub fn with_kept_events<T>(
    input: KeptInput,
    f: impl FnOnce(&KeptReferences) -> T,
) -> Result<(T, u32), BindingError> {
    let last = LAST.with_borrow_mut(Option::take);
    let (text, events) = match (input, last) {
        (KeptInput::Text(text), Some(last)) if last.text == text => (text, last.events),
        (KeptInput::Text(text), Some(last)) => match appended(&last.text, &text) {
            Some(elements) => {
                let events = extend(last.events, parse(&format!("[{elements}"))?)?;
                (text, events)
            }
            None => {
                let events = read_fresh(&text)?;
                (text, events)
            }
        },
        (KeptInput::Text(text), None) => {
            let events = read_fresh(&text)?;
            (text, events)
        }
        (KeptInput::Continue { token, elements }, Some(last)) if last.token == token => {
            if elements.is_empty() {
                (last.text, last.events)
            } else {
                let events = extend(last.events, parse(&format!("[{elements}"))?)?;
                let mut text = last.text;
                text.pop();
                if text.len() > 1 {
                    text.push(',');
                }
                text.push_str(&elements);
                (text, events)
            }
        }
        (KeptInput::Continue { .. }, _) => {
            return Err(BindingError::InternedUnreadable("no kept events of that token".into()));
        }
    };
    let result = f(&events);
    let token = LAST_TOKEN.with(|last| {
        last.set(last.get().wrapping_add(1).max(1));
        last.get()
    });
    LAST.with_borrow_mut(|slot| *slot = Some(Kept { token, text, events }));
    Ok((result, token))
}

/// The text of the kept events, if any.
pub fn kept_text() -> Option<String> {
    LAST.with_borrow(|last| last.as_ref().map(|kept| kept.text.clone()))
}

/// Forgets the kept events (an id they may name was released).
pub fn forget() {
    LAST.with_borrow_mut(|slot| *slot = None);
}

/// Reads every event of `text` with its texts kept.
pub fn read_fresh(text: &str) -> Result<KeptReferences, BindingError> {
    extend(KeptReferences::default(), parse(text)?)
}

/// The JSON text of the elements appended to `last` (an array's text) in `text`, without the
/// opening `[`, when `text` is `last` with more elements.
fn appended<'t>(last: &str, text: &'t str) -> Option<&'t str> {
    let open = last.strip_suffix(']')?;
    let rest = text.strip_prefix(open)?;
    if open == "[" {
        return Some(rest);
    }
    rest.strip_prefix(',')
}

/// `events` with `new` appended, their texts kept.
fn extend(
    mut events: KeptReferences,
    mut new: Vec<RuntimeEvent>,
) -> Result<KeptReferences, BindingError> {
    keep_texts(&mut new, events.events.len(), &mut events.sources)?;
    events.events.append(&mut new);
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64) -> String {
        format!(
            r#"{{"sessionId":"s","runId":"r","turnId":"t","runtimeEventId":"e{seq}","seq":{seq},"content":{{"type":"user_text","text":"hi"}}}}"#
        )
    }

    fn count(input: KeptInput) -> Result<(usize, u32), BindingError> {
        with_kept_events(input, |kept| kept.events.len())
    }

    #[test]
    fn continuations_extend_the_state_their_token_names_and_nothing_else() {
        let one = format!("[{}]", event(1));
        let (n, token) = count(KeptInput::Text(one.clone())).unwrap();
        assert_eq!(n, 1);
        let same = KeptInput::Continue { token, elements: String::new() };
        let (n, token) = count(same).unwrap();
        assert_eq!(n, 1);
        let more = KeptInput::Continue { token, elements: format!("{},{}]", event(2), event(3)) };
        let (n, token) = count(more).unwrap();
        assert_eq!(n, 3);
        assert_eq!(kept_text(), Some(format!("[{},{},{}]", event(1), event(2), event(3))));
        let stale = KeptInput::Continue { token: token + 1, elements: String::new() };
        assert_eq!(count(stale).unwrap_err().code(), "interned_events_unreadable");
        assert_eq!(kept_text(), None, "a failed continuation keeps nothing");
        let (n, _) = count(KeptInput::Text("[]".into())).unwrap();
        assert_eq!(n, 0);
        let (n, _) = count(KeptInput::Text(format!("[{}]", event(1)))).unwrap();
        assert_eq!(n, 1, "appended to an empty array");
    }

    #[test]
    fn appended_elements_follow_the_last_array_exactly() {
        assert_eq!(appended("[]", "[{\"a\":1}]"), Some("{\"a\":1}]"));
        assert_eq!(appended("[{}]", "[{},{},{}]"), Some("{},{}]"));
        assert_eq!(appended("[{\"a\":1}]", "[{\"a\":12}]"), None, "an element grew");
        assert_eq!(appended("[{}]", "[{}]"), None, "nothing appended");
        assert_eq!(appended("[{},{}]", "[{}]"), None, "shorter");
        assert_eq!(appended("[{}", "[{},{}]"), None, "not an array");
    }
}
