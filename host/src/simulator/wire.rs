//! Wire shapes of the answers: each API's JSON body, its event stream, and its errors.
//!
//! Streams are sent whole (one body of `text/event-stream` frames), in the order the real APIs
//! send them:
//!
//! - Chat Completions: `data: {chat.completion.chunk}` frames (role, text deltas, the finish
//!   reason), a last chunk with `choices: []` and `usage` only when
//!   `stream_options.include_usage` is true, then `data: [DONE]`;
//! - Responses: `event:`/`data:` frames `response.created`, `response.in_progress`,
//!   `response.output_item.added`, `response.content_part.added`, `response.output_text.delta`…,
//!   `response.output_text.done`, `response.content_part.done`, `response.output_item.done`,
//!   `response.completed` (with `usage`), each with its `sequence_number`;
//! - Anthropic Messages: `message_start` (with the input and cache usage), `content_block_start`,
//!   `ping`, `content_block_delta`…, `content_block_stop`, `message_delta` (stop reason and
//!   output tokens), `message_stop`.

use serde_json::{Value, json};

use super::{SimulatedAnswer, WireShape};

/// Creation time stamped on every answer (fixed: answers are deterministic).
const CREATED: u64 = 1_767_225_600;

/// The usage of one answered request.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    /// Every input token counted.
    pub(crate) input: u64,
    /// Tokens read from the cache.
    pub(crate) cached: u64,
    /// Tokens written to the cache (Anthropic).
    pub(crate) written: u64,
    /// Output tokens.
    pub(crate) output: u64,
}

/// What a successful answer says.
#[derive(Debug)]
pub(crate) struct Reply<'a> {
    pub(crate) index: u64,
    pub(crate) model: &'a str,
    pub(crate) text: &'a str,
    pub(crate) usage: Usage,
    /// The output reached the request's cap (`length`, `max_tokens`, `incomplete`).
    pub(crate) capped: bool,
    pub(crate) stream: bool,
    pub(crate) include_usage: bool,
}

fn json_answer(status: u16, body: &Value) -> SimulatedAnswer {
    SimulatedAnswer {
        status,
        content_type: "application/json",
        body: body.to_string(),
        latency: std::time::Duration::ZERO,
    }
}

fn sse_answer(body: String) -> SimulatedAnswer {
    SimulatedAnswer {
        status: 200,
        content_type: "text/event-stream",
        body,
        latency: std::time::Duration::ZERO,
    }
}

fn data_frame(value: &Value) -> String {
    format!("data: {value}\n\n")
}

fn named_frame(value: &Value) -> String {
    let name = value.get("type").and_then(Value::as_str).unwrap_or("message");
    format!("event: {name}\ndata: {value}\n\n")
}

/// The reply text in a few deltas (word by word, spaces kept).
fn deltas(text: &str) -> Vec<&str> {
    let pieces: Vec<&str> = text.split_inclusive(' ').collect();
    if pieces.is_empty() { vec![""] } else { pieces }
}

/// The success answer of `shape`.
pub(crate) fn success(shape: WireShape, reply: &Reply<'_>) -> SimulatedAnswer {
    match shape {
        WireShape::OpenAiChat => chat_success(reply),
        WireShape::OpenAiResponses => responses_success(reply),
        WireShape::AnthropicMessages => anthropic_success(reply),
    }
}

fn chat_success(reply: &Reply<'_>) -> SimulatedAnswer {
    let Usage { input, cached, output, .. } = reply.usage;
    let usage = json!({
        "prompt_tokens": input,
        "completion_tokens": output,
        "total_tokens": input + output,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    });
    let id = format!("chatcmpl-sim-{}", reply.index);
    let finish = if reply.capped { "length" } else { "stop" };
    if !reply.stream {
        return json_answer(
            200,
            &json!({
                "id": id, "object": "chat.completion", "created": CREATED, "model": reply.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text, "refusal": null}, "logprobs": null, "finish_reason": finish}],
                "usage": usage,
            }),
        );
    }
    let chunk = |choices: Value| json!({"id": id, "object": "chat.completion.chunk", "created": CREATED, "model": reply.model, "choices": choices});
    let mut body = data_frame(&chunk(
        json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]),
    ));
    for piece in deltas(reply.text) {
        body += &data_frame(&chunk(
            json!([{"index": 0, "delta": {"content": piece}, "finish_reason": null}]),
        ));
    }
    body += &data_frame(&chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish}])));
    if reply.include_usage {
        let mut last = chunk(json!([]));
        last["usage"] = usage;
        body += &data_frame(&last);
    }
    body += "data: [DONE]\n\n";
    sse_answer(body)
}

fn responses_success(reply: &Reply<'_>) -> SimulatedAnswer {
    let Usage { input, cached, output, .. } = reply.usage;
    let id = format!("resp_sim_{}", reply.index);
    let item_id = format!("msg_sim_{}", reply.index);
    let part = json!({"type": "output_text", "text": reply.text, "annotations": []});
    let item = json!({"type": "message", "id": item_id, "status": "completed", "role": "assistant", "content": [part]});
    let response = |status: &str, output: Value, usage: Value| {
        let incomplete = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
        json!({"id": id, "object": "response", "created_at": CREATED, "status": status, "model": reply.model,
            "output": output, "incomplete_details": incomplete, "usage": usage})
    };
    let usage = json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output,
    });
    let status = if reply.capped { "incomplete" } else { "completed" };
    let done = response(status, json!([item]), usage);
    if !reply.stream {
        return json_answer(200, &done);
    }
    let started = response("in_progress", json!([]), Value::Null);
    let mut events = vec![
        json!({"type": "response.created", "response": started}),
        json!({"type": "response.in_progress", "response": started}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"type": "message", "id": item_id, "status": "in_progress", "role": "assistant", "content": []}}),
        json!({"type": "response.content_part.added", "item_id": item_id, "output_index": 0, "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []}}),
    ];
    for piece in deltas(reply.text) {
        events.push(json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": 0, "content_index": 0, "delta": piece}));
    }
    events.push(json!({"type": "response.output_text.done", "item_id": item_id, "output_index": 0, "content_index": 0, "text": reply.text}));
    events.push(json!({"type": "response.content_part.done", "item_id": item_id, "output_index": 0, "content_index": 0, "part": part}));
    events.push(json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
    let last = if reply.capped { "response.incomplete" } else { "response.completed" };
    events.push(json!({"type": last, "response": done}));
    let body = events
        .into_iter()
        .enumerate()
        .map(|(n, mut event)| {
            event["sequence_number"] = json!(n);
            named_frame(&event)
        })
        .collect();
    sse_answer(body)
}

fn anthropic_success(reply: &Reply<'_>) -> SimulatedAnswer {
    let Usage { input, cached, written, output } = reply.usage;
    let usage = |output_tokens: u64| {
        json!({"input_tokens": input.saturating_sub(cached + written), "cache_creation_input_tokens": written,
            "cache_read_input_tokens": cached, "output_tokens": output_tokens})
    };
    let id = format!("msg_sim_{}", reply.index);
    let stop = if reply.capped { "max_tokens" } else { "end_turn" };
    let message = |content: Value, stop: Value, usage: Value| {
        json!({"id": id, "type": "message", "role": "assistant", "model": reply.model, "content": content,
            "stop_reason": stop, "stop_sequence": null, "usage": usage})
    };
    if !reply.stream {
        let content = json!([{"type": "text", "text": reply.text}]);
        return json_answer(200, &message(content, json!(stop), usage(output)));
    }
    let mut events = vec![
        json!({"type": "message_start", "message": message(json!([]), Value::Null, usage(1))}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
    ];
    for piece in deltas(reply.text) {
        events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}));
    }
    events.push(json!({"type": "content_block_stop", "index": 0}));
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
        "usage": {"output_tokens": output}}),
    );
    events.push(json!({"type": "message_stop"}));
    sse_answer(events.iter().map(named_frame).collect())
}

/// OpenAI's message of a Responses overflow (it gives no counts).
pub const RESPONSES_OVERFLOW_MESSAGE: &str =
    "Your input exceeds the context window of this model. Please adjust your input and try again.";

/// The context-length error of `shape` for `input` tokens plus `max_output`, over `window`.
pub(crate) fn overflow(
    shape: WireShape,
    input: u64,
    max_output: Option<u64>,
    window: u64,
    stream: bool,
) -> SimulatedAnswer {
    let output = max_output.unwrap_or(0);
    match shape {
        WireShape::OpenAiChat => {
            let message = if input > window || output == 0 {
                format!(
                    "This model's maximum context length is {window} tokens. However, your messages resulted in {input} tokens. Please reduce the length of the messages."
                )
            } else {
                format!(
                    "This model's maximum context length is {window} tokens. However, you requested {} tokens ({input} in the messages, {output} in the completion). Please reduce the length of the messages or completion.",
                    input + output
                )
            };
            json_answer(
                400,
                &json!({"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
            )
        }
        WireShape::OpenAiResponses => {
            let error = json!({"type": "invalid_request_error", "code": "context_length_exceeded",
                "message": RESPONSES_OVERFLOW_MESSAGE, "param": "input"});
            if !stream {
                return json_answer(400, &json!({"error": error}));
            }
            // A stream reports it after the response was created (sequence number 2).
            let response = json!({"id": "resp_sim_overflow", "object": "response", "created_at": CREATED,
                "status": "in_progress", "output": []});
            let events = [
                json!({"type": "response.created", "sequence_number": 0, "response": response}),
                json!({"type": "response.in_progress", "sequence_number": 1, "response": response}),
                json!({"type": "error", "sequence_number": 2, "error": error}),
            ];
            sse_answer(events.iter().map(named_frame).collect())
        }
        WireShape::AnthropicMessages => {
            let message = if input > window {
                format!("prompt is too long: {input} tokens > {window} maximum")
            } else {
                format!(
                    "input length and `max_tokens` exceed context limit: {input} + {output} > {window}, decrease input length or `max_tokens` and try again"
                )
            };
            anthropic_error(400, "invalid_request_error", &message)
        }
    }
}

/// A 400 for a request the simulator cannot read, in the shape's error format.
pub(crate) fn bad_request(shape: WireShape, message: &str) -> SimulatedAnswer {
    match shape {
        WireShape::AnthropicMessages => anthropic_error(400, "invalid_request_error", message),
        _ => json_answer(
            400,
            &json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}}),
        ),
    }
}

fn anthropic_error(status: u16, kind: &str, message: &str) -> SimulatedAnswer {
    json_answer(
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_sim"}),
    )
}
