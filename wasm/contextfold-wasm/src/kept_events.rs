//! Events read with their texts kept as references (see [`crate::interned`]), and the reuse of
//! the last call's events when its JSON text is a prefix of this call's.
//!
//! An agent projects the same events again and again, a few more each time: the JSON text of
//! the events with interned strings (references in place of the long strings) then starts with
//! the last call's text, minus its closing `]`. Those events are not parsed again: only the
//! appended ones are, and the last call's events (already read and resolved) are kept. Equal
//! texts mean equal events, because a reference names one string until its id is released,
//! and releasing any id forgets the kept events ([`forget`]). Anything else is read whole.

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

/// The last call's events and the text they were read from.
struct Kept {
    text: String,
    events: KeptReferences,
}

thread_local! {
    static LAST: RefCell<Option<Kept>> = const { RefCell::new(None) };
}

/// Runs `f` over the events of `text` (a JSON array with references) read with their texts
/// kept, reusing the last call's events for the prefix the two texts share (see the module
/// docs); the events are kept for the next call.
pub fn with_kept_events<T>(
    text: String,
    f: impl FnOnce(&KeptReferences) -> T,
) -> Result<T, BindingError> {
    let last = LAST.with_borrow_mut(Option::take);
    let events = match last {
        Some(last) if last.text == text => last.events,
        Some(last) => match appended(&last.text, &text) {
            Some(elements) => extend(last.events, parse(&format!("[{elements}"))?)?,
            None => read_fresh(&text)?,
        },
        None => read_fresh(&text)?,
    };
    let result = f(&events);
    LAST.with_borrow_mut(|slot| *slot = Some(Kept { text, events }));
    Ok(result)
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
