//! Overflow facts: the counted and maximum tokens that a context-length error states, where
//! the provider states them.
//!
//! | Provider message | Facts |
//! |---|---|
//! | OpenAI: "This model's maximum context length is W tokens. However, your messages resulted in N tokens." | N input, W window |
//! | OpenAI (and vLLM): "… is W tokens. However, you requested T tokens (N in the messages, M in the completion)." | N input, M output, W window |
//! | Anthropic: "prompt is too long: N tokens > W maximum" | N input, W window |
//! | Anthropic: "input length and `max_tokens` exceed context limit: N + M > W, …" | N input, M output, W window |
//! | OpenAI Responses: "Your input exceeds the context window of this model." | none |
//!
//! [`overflow_facts`] reads an error body (either provider's JSON, or plain text);
//! [`overflow_facts_in`] reads a message. Both are pure and return `None` when the text states
//! no counts.

use super::classify::ErrorDetail;

/// What an overflow error says about the request and the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverflowFacts {
    /// The input tokens the provider counted.
    pub input_tokens: u64,
    /// The output tokens the request reserved, when the message states them.
    pub output_tokens: Option<u64>,
    /// The model's maximum context length.
    pub context_window: u64,
}

impl OverflowFacts {
    /// Input plus reserved output: what had to fit in the window.
    pub fn requested_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens.unwrap_or(0)
    }
}

/// The facts of an error body (`{"error": {"message"}}`, `{"type": "error", "error": {…}}` or
/// text), or `None` when it states no counts.
pub fn overflow_facts(body: &[u8]) -> Option<OverflowFacts> {
    ErrorDetail::from_body(body).message.as_deref().and_then(overflow_facts_in)
}

/// The facts of one error message, or `None` when it states no counts.
pub fn overflow_facts_in(message: &str) -> Option<OverflowFacts> {
    let lower = message.to_lowercase();
    openai_facts(&lower).or_else(|| anthropic_facts(&lower))
}

/// OpenAI's two variants, after "maximum context length is W tokens".
fn openai_facts(text: &str) -> Option<OverflowFacts> {
    let (window, rest) = number_after(text, "maximum context length is ")?;
    if let Some((input, _)) = number_after(rest, "your messages resulted in ") {
        return Some(OverflowFacts {
            input_tokens: input,
            output_tokens: None,
            context_window: window,
        });
    }
    let (_, rest) = number_after(rest, "you requested ")?;
    let (input, rest) = number_after(rest, "(")?;
    let rest = rest.trim_start().strip_prefix("in the messages,")?;
    let (output, rest) = leading_number(rest.trim_start())?;
    rest.trim_start().starts_with("in the completion").then_some(OverflowFacts {
        input_tokens: input,
        output_tokens: Some(output),
        context_window: window,
    })
}

/// Anthropic's two variants.
fn anthropic_facts(text: &str) -> Option<OverflowFacts> {
    if let Some((input, rest)) = number_after(text, "prompt is too long: ") {
        let rest = rest.trim_start().strip_prefix("tokens")?.trim_start().strip_prefix('>')?;
        let (window, _) = leading_number(rest.trim_start())?;
        return Some(OverflowFacts {
            input_tokens: input,
            output_tokens: None,
            context_window: window,
        });
    }
    let (input, rest) = number_after(text, "exceed context limit: ")?;
    let (output, rest) = leading_number(rest.trim_start().strip_prefix('+')?.trim_start())?;
    let (window, _) = leading_number(rest.trim_start().strip_prefix('>')?.trim_start())?;
    Some(OverflowFacts { input_tokens: input, output_tokens: Some(output), context_window: window })
}

/// The number right after `marker` (digits, `,` and `_` separators allowed), and the rest.
fn number_after<'a>(text: &'a str, marker: &str) -> Option<(u64, &'a str)> {
    let at = text.find(marker)? + marker.len();
    leading_number(&text[at..])
}

fn leading_number(text: &str) -> Option<(u64, &str)> {
    let end =
        text.find(|c: char| !(c.is_ascii_digit() || c == ',' || c == '_')).unwrap_or(text.len());
    let digits: String = text[..end].chars().filter(char::is_ascii_digit).collect();
    let value = digits.parse().ok()?;
    Some((value, text[end..].trim_start()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(input: u64, output: Option<u64>, window: u64) -> Option<OverflowFacts> {
        Some(OverflowFacts { input_tokens: input, output_tokens: output, context_window: window })
    }

    /// Real error texts, as reported in public issue threads.
    #[test]
    fn real_openai_messages() {
        // chathub-dev/chathub#126: the whole body.
        let body = br#"{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(overflow_facts(body), facts(4294, None, 4097));
        // webtimemachine/wtm2#579.
        let text = "Error: 400 This model's maximum context length is 128000 tokens. However, your messages resulted in 204308 tokens. Please reduce the length of the messages.";
        assert_eq!(overflow_facts_in(text), facts(204_308, None, 128_000));
        // yakGPT/yakGPT#13.
        let text = "This model's maximum context length is 4097 tokens. However, you requested 4295 tokens (3245 in the messages, 1050 in the completion). Please reduce the length of the messages or completion.";
        let parsed = overflow_facts_in(text);
        assert_eq!(parsed, facts(3245, Some(1050), 4097));
        assert_eq!(parsed.map(|f| f.requested_tokens()), Some(4295));
        // ruipeterpan/specreason#4 (vLLM speaks the same text).
        let text = "ValueError: This model's maximum context length is 8192 tokens. However, you requested 8203 tokens (7691 in the messages, 512 in the completion). Please reduce the length of the messages or completion.";
        assert_eq!(overflow_facts_in(text), facts(7691, Some(512), 8192));
    }

    #[test]
    fn real_anthropic_messages() {
        // boldsoftware/exe.dev#62: the whole body.
        let body = br#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 200251 tokens > 200000 maximum"},"request_id":"req_011CWdepJvA2D819tdYYq4h7"}"#;
        assert_eq!(overflow_facts(body), facts(200_251, None, 200_000));
        // entropy-research/Devon#88.
        let text = "prompt is too long: 209353 tokens > 199999 maximum";
        assert_eq!(overflow_facts_in(text), facts(209_353, None, 199_999));
        // continuedev/continue#6080.
        let body = br#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}"#;
        assert_eq!(overflow_facts(body), facts(199_759, Some(8192), 200_000));
    }

    #[test]
    fn messages_without_counts_give_none() {
        // dyad-sh/dyad#1672: the Responses API states no counts.
        let body = br#"{"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}"#;
        assert_eq!(overflow_facts(body), None);
        assert_eq!(overflow_facts_in("Prompt is too long"), None);
        assert_eq!(overflow_facts_in("This model's maximum context length is 4097 tokens."), None);
        assert_eq!(overflow_facts(b"<html>502 Bad Gateway</html>"), None);
        assert_eq!(overflow_facts(b""), None);
    }
}
