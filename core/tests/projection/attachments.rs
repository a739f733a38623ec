//! Images and files through every importer and mapping: content addressing, provider token
//! rules, stale pruning, the summarizer's stand-in, and the typed errors of bad input.
//!
//! The fixtures are real files: a 64 × 48 RGB PNG and a one-page PDF (`core/tests/fixtures`).

use contextfold_core::budget::{CharEstimator, TokenEstimator, estimate_event};
use contextfold_core::compaction::build_summary_request;
use contextfold_core::digest::digest_prefix;
use contextfold_core::event::{Attachment, attachment_tokens, encode_base64};
use contextfold_core::projection::{
    ImportContext, Part, ProjectInput, import_anthropic, import_model_messages, import_openai_chat,
    materialize, project, to_anthropic, to_model_messages, to_openai_chat, to_openai_responses,
};
use contextfold_core::{EventContent, LogBuilder, ModelFacts, RuntimeEvent};
use serde_json::{Value, json};

const PNG: &[u8] = include_bytes!("../fixtures/screenshot.png");
const PDF: &[u8] = include_bytes!("../fixtures/report.pdf");

fn png_b64() -> String {
    encode_base64(PNG)
}

fn png_data_url() -> String {
    format!("data:image/png;base64,{}", png_b64())
}

fn ids() -> ImportContext {
    ImportContext::new("s-media")
}

fn sha256(bytes: &[u8]) -> String {
    Attachment::from_bytes(None, bytes, None).expect("test value").sha256.expect("test value")
}

/// A browser agent's history in AI SDK `ModelMessage[]` form: a screenshot and a PDF from the
/// user, a tool returning a screenshot in a `content` output.
fn ai_sdk_history() -> Value {
    json!([
        { "role": "user", "content": [
            { "type": "text", "text": "What is on this page? The report is attached." },
            { "type": "image", "image": png_data_url(), "mediaType": "image/png" },
            { "type": "file", "data": encode_base64(PDF), "mediaType": "application/pdf", "filename": "report.pdf" },
        ] },
        { "role": "assistant", "content": [
            { "type": "tool-call", "toolCallId": "shot-1", "toolName": "screenshot", "input": {} },
        ] },
        { "role": "tool", "content": [
            { "type": "tool-result", "toolCallId": "shot-1", "toolName": "screenshot", "output": {
                "type": "content", "value": [
                    { "type": "text", "text": "Captured the viewport." },
                    { "type": "image-data", "data": png_b64(), "mediaType": "image/png" },
                ] } },
        ] },
        { "role": "assistant", "content": [{ "type": "text", "text": "A gradient test page." }] },
    ])
}

#[test]
fn ai_sdk_images_and_files_import_content_addressed_and_map_back() {
    let events = import_model_messages(&ai_sdk_history(), &ids()).expect("imports");
    let EventContent::UserText { text, attachments } = &events[0].content else { panic!() };
    assert!(text.starts_with("What is on this page?"));
    let [image, pdf] = attachments.as_slice() else { panic!("two attachments") };
    assert_eq!(
        (image.media_type.as_str(), image.width, image.height),
        ("image/png", Some(64), Some(48))
    );
    assert_eq!(image.byte_length, Some(PNG.len() as u64));
    assert_eq!(image.sha256.as_deref(), Some(sha256(PNG).as_str()));
    assert_eq!(
        (pdf.media_type.as_str(), pdf.name.as_deref()),
        ("application/pdf", Some("report.pdf"))
    );
    assert_eq!(events[2].attachments().len(), 1, "the screenshot belongs to the tool result");
    for event in &events {
        let line = serde_json::to_string(event).expect("test value");
        assert_eq!(&RuntimeEvent::from_json(&line).expect("test value"), event, "round trip");
    }

    let messages = materialize(None, &events, &[]).messages;
    assert!(matches!(messages[0].parts[1], Part::Attachment { .. }));
    let back = to_model_messages(&messages);
    let original = ai_sdk_history();
    assert_eq!(back[0]["content"][1]["image"], json!(png_b64()));
    assert_eq!(
        back[0]["content"][2],
        json!({"type": "file", "data": encode_base64(PDF),
        "mediaType": "application/pdf", "filename": "report.pdf"})
    );
    assert_eq!(back[2]["content"][0]["output"], original[2]["content"][0]["output"]);
}

#[test]
fn chat_image_url_and_file_parts_import_and_map_back() {
    let chat = json!([
        { "role": "user", "content": [
            { "type": "text", "text": "Compare these." },
            { "type": "image_url", "image_url": { "url": png_data_url(), "detail": "low" } },
            { "type": "image_url", "image_url": { "url": "https://example.com/chart.png" } },
            { "type": "file", "file": { "file_data": format!("data:application/pdf;base64,{}", encode_base64(PDF)), "filename": "report.pdf" } },
        ] },
    ]);
    let events = import_openai_chat(&chat, &ids()).expect("imports");
    let attachments = events[0].attachments();
    assert_eq!(attachments.len(), 3);
    assert_eq!(attachments[0].detail.as_deref(), Some("low"));
    assert_eq!(attachments[1].url.as_deref(), Some("https://example.com/chart.png"));
    assert_eq!((attachments[1].byte_length, attachments[1].sha256.as_ref()), (None, None));
    let back = to_openai_chat(&materialize(None, &events, &[]).messages).expect("maps");
    assert_eq!(Value::Array(back), chat, "chat round trip is exact");
    // Low detail: OpenAI's fixed 85 (Anthropic's rule gives 5 for 64 x 48; the larger counts).
    assert_eq!(attachment_tokens(&attachments[0]), 85);
}

#[test]
fn anthropic_image_and_document_blocks_import_including_inside_tool_results() {
    let conversation = json!({ "messages": [
        { "role": "user", "content": [
            { "type": "text", "text": "Read the report." },
            { "type": "document", "title": "report.pdf", "source": { "type": "base64", "media_type": "application/pdf", "data": encode_base64(PDF) } },
        ] },
        { "role": "assistant", "content": [
            { "type": "tool_use", "id": "tu1", "name": "computer", "input": { "action": "screenshot" } },
        ] },
        { "role": "user", "content": [
            { "type": "tool_result", "tool_use_id": "tu1", "content": [
                { "type": "text", "text": "done" },
                { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": png_b64() } },
            ] },
            { "type": "image", "source": { "type": "url", "url": "https://example.com/a.jpg" } },
        ] },
    ] });
    let events = import_anthropic(&conversation, &ids()).expect("imports");
    assert_eq!(events[0].attachments()[0].name.as_deref(), Some("report.pdf"));
    let EventContent::ToolResult { output, attachments, .. } = &events[2].content else { panic!() };
    assert_eq!((output, attachments.len()), (&json!("done"), 1));
    assert_eq!(events[3].attachments()[0].media_type, "image/jpeg");
    let history = to_anthropic(&materialize(None, &events, &[]).messages).expect("maps");
    let sent = &conversation["messages"];
    assert_eq!(history.messages[0]["content"], sent[0]["content"]);
    assert_eq!(history.messages[2]["content"][0]["content"], sent[2]["content"][0]["content"]);
    assert_eq!(history.messages[2]["content"][1], sent[2]["content"][1]);
}

#[test]
fn responses_input_carries_input_image_input_file_and_array_outputs() {
    let events = import_model_messages(&ai_sdk_history(), &ids()).expect("imports");
    let items = to_openai_responses(&materialize(None, &events, &[]).messages);
    let content = &items[0]["content"];
    assert_eq!(
        content[1],
        json!({"type": "input_image", "image_url": png_data_url(), "detail": "auto"})
    );
    assert_eq!(content[2]["type"], "input_file");
    assert_eq!(content[2]["filename"], "report.pdf");
    let output = &items[2]["output"];
    assert_eq!(output[0], json!({"type": "input_text", "text": "Captured the viewport."}));
    assert_eq!(output[1]["type"], "input_image");
}

#[test]
fn estimates_follow_the_image_rules_not_the_base64_length() {
    let events = import_model_messages(&ai_sdk_history(), &ids()).expect("imports");
    let shot = &events[2];
    let estimate = estimate_event(&CharEstimator, shot);
    // 64 x 48: OpenAI 85 + 170 (one tile) = 255 beats Anthropic's 5; the 8.4 kB of base64
    // would have counted about 2,100 tokens as text.
    let text_only = CharEstimator.estimate_text("{\"type\":\"content\",\"value\":[{\"text\":\"Captured the viewport.\",\"type\":\"text\"}]}");
    assert_eq!(estimate, text_only + 255 + CharEstimator.message_overhead());
    // The PDF counts its one page.
    assert_eq!(attachment_tokens(&events[0].attachments()[1]), 3_000);
}

#[test]
fn the_digest_covers_attachments_through_their_hash() {
    let events = import_model_messages(&ai_sdk_history(), &ids()).expect("imports");
    let mut archived = events.clone();
    let EventContent::UserText { attachments, .. } = &mut archived[0].content else { panic!() };
    attachments[0].data = None; // the bytes moved to the archive: same hash, other event
    assert_ne!(digest_prefix(&archived), digest_prefix(&events));
    let mut swapped = archived.clone();
    let EventContent::UserText { attachments, .. } = &mut swapped[0].content else { panic!() };
    attachments[0].sha256 = Some(sha256(b"other bytes"));
    assert_ne!(digest_prefix(&swapped), digest_prefix(&archived));
}

#[test]
fn stale_attachments_are_pruned_to_their_archive_address_and_the_summarizer_sees_stand_ins() {
    let mut log = LogBuilder::new("s-media");
    let image = Attachment::from_bytes(None, PNG, Some("page.png".into())).expect("test value");
    // A 64x48 image frees about 200 tokens: an epoch needs about 40 of them.
    let turns = 60;
    for turn in 0..turns {
        log.turn(&format!("t{turn}"));
        log.push(EventContent::UserText {
            text: format!("step {turn}: check the page"),
            attachments: vec![image.clone()],
        });
        log.assistant("Looked at it.");
    }
    let events = log.build();
    let model = ModelFacts { context_window: Some(200_000), ..Default::default() };
    let current = format!("t{}", turns - 1);
    let input = ProjectInput {
        events: &events,
        current_turn_id: Some(&current),
        checkpoint: None,
        model: &model,
        provider: None,
        fail_open: false,
    };
    let projection = project(&input, &CharEstimator).expect("projects");
    let kept: Vec<usize> = projection
        .messages
        .iter()
        .step_by(2)
        .map(|m| m.parts.iter().filter(|p| matches!(p, Part::Attachment { .. })).count())
        .collect();
    let pruned = kept.iter().take_while(|k| **k == 0).count();
    assert!(pruned > 0, "one epoch closed");
    assert!(kept[pruned..].iter().all(|k| *k == 1), "the pruned set is a prefix: {kept:?}");
    assert!(turns - pruned > 3, "the newest three keep theirs, and the epoch's backlog");
    let Part::Text { text } = &projection.messages[0].parts[0] else { panic!() };
    let address = format!("contextfold://archive/s-media/{}/{}", sha256(PNG), PNG.len());
    assert!(text.contains("[stale attachment omitted") && text.contains(&address), "{text}");
    assert!(projection.diagnostics.iter().any(|d| d.code.as_str() == "stale_attachments_pruned"));

    let request = build_summary_request(None, &events[..4], 50_000, &CharEstimator).expect("fits");
    let transcript = serde_json::to_string(&request.messages).expect("test value");
    assert!(transcript.contains(&address) && transcript.contains("64x48"));
    assert!(!transcript.contains(&png_b64()[..40]), "never the bytes");
}

#[test]
fn bad_attachments_are_typed_errors_and_nothing_is_imported() {
    let user = |part: Value| json!([{ "role": "user", "content": [part] }]);
    let ai_sdk = [
        (
            user(json!({"type": "image", "image": "data:image/png;base64,not base64!"})),
            "attachment_invalid_base64",
        ),
        (
            user(json!({"type": "image", "image": png_b64(), "mediaType": "image/jpeg"})),
            "attachment_media_type_mismatch",
        ),
        (
            user(
                json!({"type": "file", "data": "ftp://example.com/a.pdf", "mediaType": "application/pdf"}),
            ),
            "attachment_url_not_allowed",
        ),
    ];
    for (input, code) in ai_sdk {
        assert_eq!(
            import_model_messages(&input, &ids()).expect_err("must fail").code(),
            code,
            "{input}"
        );
    }
    let chat = [
        (
            user(json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,%%%"}})),
            "attachment_invalid_base64",
        ),
        (
            user(
                json!({"type": "file", "file": {"file_data": "data:application/pdf;base64,aGVsbG8="}}),
            ),
            "attachment_media_type_mismatch",
        ),
        (user(json!({"type": "file", "file": {"file_id": "file-123"}})), "chat_import_unsupported"),
    ];
    for (input, code) in chat {
        assert_eq!(
            import_openai_chat(&input, &ids()).expect_err("must fail").code(),
            code,
            "{input}"
        );
    }
    let source = |source: Value| user(json!({"type": "image", "source": source}));
    let anthropic = [
        (
            source(json!({"type": "base64", "media_type": "image/gif", "data": png_b64()})),
            "attachment_media_type_mismatch",
        ),
        (
            source(json!({"type": "base64", "media_type": "image/png", "data": "iVBOR"})),
            "attachment_invalid_base64",
        ),
        (source(json!({"type": "file", "file_id": "f"})), "anthropic_import_unsupported_block"),
    ];
    for (input, code) in anthropic {
        assert_eq!(
            import_anthropic(&input, &ids()).expect_err("must fail").code(),
            code,
            "{input}"
        );
    }
    // Over the documented size limit (32 MiB), refused before decoding.
    let huge = "A".repeat(((contextfold_core::event::MAX_ATTACHMENT_BYTES / 3 + 2) * 4) as usize);
    let input = user(json!({"type": "image", "image": huge, "mediaType": "image/png"}));
    assert_eq!(
        import_model_messages(&input, &ids()).expect_err("must fail").code(),
        "attachment_too_large"
    );
    // A PDF known only by URL where chat needs its bytes.
    let url_pdf = json!([{ "role": "user", "content": [
        { "type": "file", "data": "https://example.com/report.pdf", "mediaType": "application/pdf" } ] }]);
    let events = import_model_messages(&url_pdf, &ids()).expect("a URL is a valid attachment");
    let error = to_openai_chat(&materialize(None, &events, &[]).messages).expect_err("must fail");
    assert_eq!(error.code(), "attachment_url_not_allowed");
}

#[test]
fn a_tampered_attachment_in_a_log_line_is_refused() {
    let events = import_model_messages(&ai_sdk_history(), &ids()).expect("imports");
    let line = serde_json::to_string(&events[0]).expect("test value");
    let tampered = line.replacen(&sha256(PNG), &sha256(b"x"), 1);
    let error = RuntimeEvent::from_json(&tampered).expect_err("must fail");
    assert_eq!(error.code(), "event_invalid_attachment");
    let both = line.replacen(
        "\"mediaType\":\"image/png\"",
        "\"mediaType\":\"image/png\",\"url\":\"https://x.test/a.png\"",
        1,
    );
    assert_eq!(
        RuntimeEvent::from_json(&both).expect_err("must fail").code(),
        "event_invalid_attachment"
    );
}
