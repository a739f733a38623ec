//! [`LogValidator`]: [`validate_log`](super::validate_log) kept incrementally, for logs that
//! grow one agent step at a time.

use std::collections::HashSet;

use super::{LogError, RuntimeEvent};

/// What [`super::validate_log`] needs to know about a valid log to check events appended to it:
/// its session, its last `seq` and its event ids. Appending costs O(new events) instead of a
/// pass over the whole log, with the same verdicts and indices (counted from the log's start).
///
/// ```
/// use contextfold_core::LogBuilder;
/// use contextfold_core::event::{LogError, LogValidator, validate_log};
/// let mut builder = LogBuilder::new("s");
/// builder.turn("t").user("a").assistant("b").user("c");
/// let events = builder.build();
/// let mut log = LogValidator::default();
/// log.append(&events[..2]).expect("valid");
/// log.append(&events[2..]).expect("valid");
/// let again = [events[1].clone()];
/// assert_eq!(log.append(&again), Err(LogError::SeqNotIncreasing { index: 3 }));
/// assert_eq!(log.len(), 3, "a refused batch changes nothing");
/// ```
#[derive(Debug, Clone, Default)]
pub struct LogValidator {
    session_id: Option<String>,
    last_seq: Option<u64>,
    ids: HashSet<String>,
    len: usize,
}

impl LogValidator {
    /// Events accepted so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no event was accepted yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Checks `events` as the continuation of the log accepted so far, exactly as
    /// [`super::validate_log`] checks the concatenation.
    pub fn check(&self, events: &[RuntimeEvent]) -> Result<(), LogError> {
        let session = self.session_id.as_deref().or(events.first().map(|e| e.session_id.as_str()));
        let mut last_seq = self.last_seq;
        let mut batch: HashSet<&str> = HashSet::with_capacity(events.len());
        for (offset, event) in events.iter().enumerate() {
            let index = self.len + offset;
            if Some(event.session_id.as_str()) != session {
                return Err(LogError::MixedSessions { index });
            }
            if last_seq.is_some_and(|seq| event.seq <= seq) {
                return Err(LogError::SeqNotIncreasing { index });
            }
            last_seq = Some(event.seq);
            let id = event.runtime_event_id.as_str();
            if self.ids.contains(id) || !batch.insert(id) {
                return Err(LogError::DuplicateEventId { index });
            }
        }
        Ok(())
    }

    /// [`Self::check`]s `events` and, when they pass, accepts them; a refused batch changes
    /// nothing. One pass: each id is hashed once, inserted as it is checked, and the batch's
    /// ids are taken out again if a later event is refused.
    pub fn append(&mut self, events: &[RuntimeEvent]) -> Result<(), LogError> {
        let session = self.session_id.as_deref().or(events.first().map(|e| e.session_id.as_str()));
        let mut last_seq = self.last_seq;
        self.ids.reserve(events.len());
        let refused = events.iter().enumerate().find_map(|(offset, event)| {
            let index = self.len + offset;
            let error = if Some(event.session_id.as_str()) != session {
                LogError::MixedSessions { index }
            } else if last_seq.is_some_and(|seq| event.seq <= seq) {
                LogError::SeqNotIncreasing { index }
            } else if !self.ids.insert(event.runtime_event_id.clone()) {
                LogError::DuplicateEventId { index }
            } else {
                last_seq = Some(event.seq);
                return None;
            };
            Some((offset, error))
        });
        if let Some((offset, error)) = refused {
            for event in &events[..offset] {
                self.ids.remove(&event.runtime_event_id);
            }
            return Err(error);
        }
        if let Some(first) = events.first() {
            self.session_id.get_or_insert_with(|| first.session_id.clone());
        }
        self.last_seq = last_seq;
        self.len += events.len();
        Ok(())
    }

    /// Accepts `events`, which must have passed [`Self::check`] against this state.
    pub(crate) fn accept(&mut self, events: &[RuntimeEvent]) {
        for event in events {
            self.session_id.get_or_insert_with(|| event.session_id.clone());
            self.ids.insert(event.runtime_event_id.clone());
            self.last_seq = Some(event.seq);
        }
        self.len += events.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LogBuilder;
    use crate::event::validate_log;

    /// A refused batch leaves the validator as it was: the ids it held before its defect are
    /// free again, its seq and session were not taken.
    #[test]
    fn a_refused_batch_can_be_appended_again_once_mended() {
        let mut builder = LogBuilder::new("s");
        builder.turn("t").user("a").assistant("b").user("c").assistant("d");
        let events = builder.build();
        let mut validator = LogValidator::default();
        validator.append(&events[..1]).expect("valid");
        let mut broken = events[1..].to_vec();
        broken[2].runtime_event_id = events[0].runtime_event_id.clone();
        assert_eq!(validator.append(&broken), Err(LogError::DuplicateEventId { index: 3 }));
        assert_eq!(validator.len(), 1);
        assert_eq!(validator.append(&events[1..]), Ok(()));
        assert_eq!(validator.len(), 4);
    }

    /// Every split of logs with each kind of defect gives `validate_log`'s verdict and index.
    #[test]
    fn appending_in_batches_gives_the_verdict_of_validating_the_whole_log() {
        let mut builder = LogBuilder::new("s");
        builder.turn("t").user("a").assistant("b").user("c");
        let events = builder.build();
        let mut defects: Vec<Vec<RuntimeEvent>> = vec![events.clone()];
        for index in 0..events.len() {
            let mut session = events.clone();
            session[index].session_id = "other".into();
            let mut seq = events.clone();
            seq[index].seq = 0;
            let mut id = events.clone();
            id[index].runtime_event_id =
                events[(index + 1) % events.len()].runtime_event_id.clone();
            defects.extend([session, seq, id]);
        }
        for log in &defects {
            let whole = validate_log(log);
            for cut in 0..=log.len() {
                let mut validator = LogValidator::default();
                let verdict =
                    validator.append(&log[..cut]).and_then(|()| validator.append(&log[cut..]));
                assert_eq!(verdict, whole, "cut {cut} of {log:?}");
            }
        }
    }
}
