//! How the package measures tokens: the built-in estimate or the caller's `countTokens`, scaled
//! by the calibration learned from the provider's reported usage (`contextfold_core::budget`).
//!
//! - [`JsCounter`] is a `TokenEstimator` that calls the caller's `countTokens(text) => number`
//!   for every text the core measures, during the call only (nothing is kept between calls: the
//!   next call may pass another function). The core measures a long text more than once in one
//!   call (as an event, then as a message part), so within the call the count of each text of
//!   at least [`MEMO_MIN_BYTES`] is remembered by its content: the function must give the same
//!   text the same count, as every tokenizer does. A `TokenEstimator` cannot fail, so the
//!   counter keeps its first failure (a thrown error, a result that is not a finite number ≥ 0),
//!   counts every later text as 0 without calling again, and the binding turns the failure into
//!   the typed error `count_tokens_failed` before it returns anything ([`JsCounter::check`]).
//! - [`calibrate`] is the pure `calibrate(calibration, fact) -> calibration` export.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use contextfold_core::budget::{Calibration, CharEstimator, TokenEstimator, UsageFact};
use contextfold_core::event::Attachment;
use wasm_bindgen::prelude::*;

use crate::convert::{BindingError, json_from_js, json_to_js};

/// Texts this long (bytes) or longer are counted once per call (see the module docs).
pub const MEMO_MIN_BYTES: usize = 256;

/// The caller's counting function as a [`TokenEstimator`] (see the module docs).
#[derive(Debug)]
pub struct JsCounter {
    function: js_sys::Function,
    failure: CounterFailure,
    /// Counts of the long texts measured so far in this call.
    memo: RefCell<HashMap<Box<str>, u64>>,
}

/// The first failure of a [`JsCounter`], shared with whoever must check it (a compaction owns
/// its estimator, so its session keeps this handle).
#[derive(Debug, Clone, Default)]
pub struct CounterFailure(Rc<RefCell<Option<String>>>);

impl CounterFailure {
    /// `count_tokens_failed` if any call failed so far.
    pub fn check(&self) -> Result<(), BindingError> {
        match &*self.0.borrow() {
            Some(reason) => Err(BindingError::core("count_tokens_failed", reason)),
            None => Ok(()),
        }
    }
}

impl JsCounter {
    /// Wraps `countTokens`.
    pub fn new(function: js_sys::Function) -> Self {
        JsCounter { function, failure: CounterFailure::default(), memo: RefCell::default() }
    }

    /// `count_tokens_failed` if any call failed so far.
    pub fn check(&self) -> Result<(), BindingError> {
        self.failure.check()
    }

    /// The handle on this counter's failure.
    pub fn failure(&self) -> CounterFailure {
        self.failure.clone()
    }

    /// One call of the function: its count, rounded up, or why it is not one.
    fn count(&self, text: &str) -> Result<u64, String> {
        let result = self
            .function
            .call1(&JsValue::UNDEFINED, &JsValue::from_str(text))
            .map_err(|error| format!("countTokens threw: {}", describe(&error)))?;
        match result.as_f64() {
            Some(count) if count.is_finite() && count >= 0.0 => Ok(count.ceil() as u64),
            Some(_) => {
                // JavaScript's own text of the number (`-1`, `NaN`, `Infinity`).
                let number = result.unchecked_into::<js_sys::Number>();
                let count = number.to_string_with_radix(10).map(String::from).unwrap_or_default();
                Err(format!("countTokens returned {count}, not a count"))
            }
            None => Err("countTokens returned a non-number".to_owned()),
        }
    }
}

/// The message of a thrown value.
fn describe(error: &JsValue) -> String {
    if let Some(error) = error.dyn_ref::<js_sys::Error>() {
        return String::from(error.message());
    }
    error.as_string().unwrap_or_else(|| "a value that is not an Error".to_owned())
}

impl TokenEstimator for JsCounter {
    fn estimate_text(&self, text: &str) -> u64 {
        if self.failure.0.borrow().is_some() {
            return 0;
        }
        let long = text.len() >= MEMO_MIN_BYTES;
        if let Some(count) = long.then(|| self.memo.borrow().get(text).copied()).flatten() {
            return count;
        }
        match self.count(text) {
            Ok(count) => {
                if long {
                    self.memo.borrow_mut().insert(text.into(), count);
                }
                count
            }
            Err(reason) => {
                *self.failure.0.borrow_mut() = Some(reason);
                0
            }
        }
    }
}

/// The uncalibrated estimator a compaction owns: the built-in estimate or the caller's counter.
#[derive(Debug)]
pub enum BaseEstimator {
    /// The core's characters-based estimate.
    Chars,
    /// The caller's `countTokens`.
    Counter(JsCounter),
}

impl BaseEstimator {
    /// The counter, or the built-in estimate without one.
    pub fn of(count_tokens: Option<js_sys::Function>) -> Self {
        count_tokens.map_or(BaseEstimator::Chars, |f| BaseEstimator::Counter(JsCounter::new(f)))
    }

    /// The handle on the counter's failure (one that never fails without a counter).
    pub fn failure(&self) -> CounterFailure {
        match self {
            BaseEstimator::Chars => CounterFailure::default(),
            BaseEstimator::Counter(counter) => counter.failure(),
        }
    }

    fn inner(&self) -> &dyn TokenEstimator {
        match self {
            BaseEstimator::Chars => &CharEstimator,
            BaseEstimator::Counter(counter) => counter,
        }
    }
}

impl TokenEstimator for BaseEstimator {
    fn estimate_text(&self, text: &str) -> u64 {
        self.inner().estimate_text(text)
    }

    fn message_overhead(&self) -> u64 {
        self.inner().message_overhead()
    }

    fn estimate_attachment(&self, attachment: &Attachment) -> u64 {
        self.inner().estimate_attachment(attachment)
    }

    fn name(&self) -> String {
        match self {
            BaseEstimator::Chars => CharEstimator.name(),
            BaseEstimator::Counter(_) => "countTokens".to_owned(),
        }
    }
}

/// Reads a usage fact and checks what serde cannot: a named provider and model, and counts
/// that can be true (a response counts at least one input token, cached ones among them).
pub fn usage_fact_from_json(value: serde_json::Value) -> Result<UsageFact, BindingError> {
    let invalid = |detail: String| BindingError::core("invalid_usage_fact", detail);
    let fact = serde_json::from_value::<UsageFact>(value)
        .map_err(|e| invalid(format!("invalid usage fact: {e}")))?;
    fact.validate().map_err(|e| invalid(e.to_string()))?;
    Ok(fact)
}

/// Reads a calibration (`{ models: [...] }`); `undefined` or `null` is an empty one.
pub fn calibration_from_js(value: JsValue) -> Result<Calibration, BindingError> {
    if value.is_undefined() || value.is_null() {
        return Ok(Calibration::default());
    }
    let json = json_from_js(value, "calibration")?;
    if json.is_null() {
        return Ok(Calibration::default());
    }
    serde_json::from_value::<Calibration>(json)
        .map_err(|e| BindingError::core("invalid_calibration", format!("invalid calibration: {e}")))
}

/// Learns from one usage fact: the new calibration (the input is not changed). A bad fact
/// throws `invalid_usage_fact`, a bad calibration `invalid_calibration`.
#[wasm_bindgen]
pub fn calibrate(calibration: JsValue, fact: JsValue) -> Result<JsValue, JsValue> {
    let mut calibration = calibration_from_js(calibration)?;
    let fact = json_from_js(fact, "usage fact")
        .map_err(|e| BindingError::core("invalid_usage_fact", e))
        .and_then(usage_fact_from_json)?;
    calibration.observe(&fact);
    let value = contextfold_core::binding::to_value(&calibration)
        .map_err(|e| BindingError::Output { what: "calibration".into(), detail: e.to_string() })?;
    Ok(json_to_js(value, "calibration")?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fact(report: serde_json::Value) -> serde_json::Value {
        let mut fact =
            json!({ "provider": "openai", "model": "gpt", "estimatedInputTokens": 1000 });
        for (key, value) in report.as_object().into_iter().flatten() {
            fact[key] = value.clone();
        }
        fact
    }

    fn code(value: serde_json::Value) -> String {
        match usage_fact_from_json(value) {
            Ok(_) => "ok".to_owned(),
            Err(error) => error.code().to_owned(),
        }
    }

    #[test]
    fn facts_are_checked_beyond_their_shape() {
        assert_eq!(code(fact(json!({ "kind": "response", "inputTokens": 1500 }))), "ok");
        assert_eq!(code(fact(json!({ "kind": "overflow" }))), "ok");
        assert_eq!(
            code(fact(json!({ "kind": "response", "inputTokens": 0 }))),
            "invalid_usage_fact"
        );
        let cached = json!({ "kind": "response", "inputTokens": 10, "cachedInputTokens": 11 });
        assert_eq!(code(fact(cached)), "invalid_usage_fact");
        assert_eq!(code(fact(json!({ "kind": "guess" }))), "invalid_usage_fact");
        let mut unnamed = fact(json!({ "kind": "overflow" }));
        unnamed["model"] = json!("");
        assert_eq!(code(unnamed), "invalid_usage_fact");
        let mut negative = fact(json!({ "kind": "response", "inputTokens": 5 }));
        negative["estimatedInputTokens"] = json!(-1);
        assert_eq!(code(negative), "invalid_usage_fact");
    }
}
