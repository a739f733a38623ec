//! Images and files through the CLI and the real SQLite store: import from every format,
//! large bytes kept once in the archive, the wire formats getting them back, compaction
//! summarizing their stand-ins, and bad attachments refused with nothing written.

use crate::cli_support;

use cli_support::{SessionDb, fails, import_args, ok, project_args, write};
use contextfold_core::event::encode_base64;
use serde_json::{Value, json};

/// 64 x 48, 6,321 bytes: small enough to stay inline in its event.
const SMALL_PNG: &[u8] = include_bytes!("../../../core/tests/fixtures/screenshot.png");
/// 160 x 120 of noise, 57,803 bytes: moved to the archive when appended.
const LARGE_PNG: &[u8] = include_bytes!("../../../core/tests/fixtures/noise.png");
const PDF: &[u8] = include_bytes!("../../../core/tests/fixtures/report.pdf");

/// A computer-use session in Anthropic form: a document from the user, then eight
/// screenshot steps (the same large screenshot each time, as an idle screen repeats).
fn anthropic_session() -> Value {
    let image = |bytes: &[u8]| json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encode_base64(bytes)}});
    let mut messages = vec![json!({"role": "user", "content": [
        {"type": "text", "text": "Fill in the form described in the attached PDF."},
        {"type": "document", "title": "form.pdf", "source": {"type": "base64", "media_type": "application/pdf", "data": encode_base64(PDF)}},
        image(SMALL_PNG),
    ]})];
    for step in 0..8 {
        let id = format!("toolu_{step:02}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Step {step}: taking a screenshot to see the form.")},
            {"type": "tool_use", "id": id, "name": "computer", "input": {"action": "screenshot"}},
        ]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": [
                {"type": "text", "text": format!("screenshot {step} taken; {}", "the form has fields for name and address. ".repeat(30))},
                image(LARGE_PNG),
            ]},
        ]}));
    }
    json!({ "messages": messages })
}

#[test]
fn attachments_import_archive_once_and_come_back_on_every_wire_format() {
    let session = SessionDb::new("media.sqlite");
    let db = session.db();
    let file = write(session.dir.path(), "a.json", &anthropic_session().to_string());
    let imported = ok(&import_args(db, "m", "anthropic", file.to_str().expect("test value")));
    assert_eq!(imported["imported"], json!(25), "{imported}");

    // The ledger rows hold the small screenshot and the PDF inline, the large one by hash only;
    // the archive holds the large bytes once although eight events name them.
    let large = encode_base64(LARGE_PNG);
    let rows = session.ledger_rows("m");
    assert!(rows.iter().all(|(_, _, json)| !json.contains(&large[..64])));
    assert!(rows[0].2.contains(&encode_base64(SMALL_PNG)));
    let archived: i64 = session
        .raw()
        .query_row(
            "SELECT count(*) FROM tool_result_archive WHERE session_id = 'm' AND byte_size = ?1",
            [LARGE_PNG.len() as i64],
            |row| row.get(0),
        )
        .expect("test value");
    assert_eq!(archived, 1);
    let anthropic = ok(&project_args(db, "m", "200000", "anthropic"));
    let text = anthropic["messages"].to_string();
    // The five screenshots older than the newest three are candidates for pruning, but they
    // free fewer tokens than one pruning epoch's minimum, so all eight keep their bytes (and
    // the request stays a cacheable prefix of the next one).
    assert_eq!(
        text.matches(&large[..64]).count(),
        8,
        "no epoch closed: every screenshot keeps its bytes"
    );
    assert!(!text.contains("[stale attachment omitted from this request"));
    let responses = ok(&project_args(db, "m", "200000", "openai-responses"));
    assert!(responses["messages"].to_string().contains(&format!("data:image/png;base64,{large}")));
    let ai_sdk = ok(&project_args(db, "m", "200000", "ai-sdk"));
    assert!(ai_sdk["messages"].to_string().contains("\"type\":\"image-data\""));
    // The Responses input reads back through `import --format openai-responses`.
    let input = write(session.dir.path(), "r.json", &responses["messages"].to_string());
    ok(&import_args(db, "r", "openai-responses", input.to_str().unwrap_or_default()));
    let again = ok(&project_args(db, "r", "200000", "openai-responses"));
    assert_eq!(again["messages"], responses["messages"], "the same request");
    let chat = ok(&project_args(db, "m", "200000", "openai-chat"));
    assert!(chat["messages"][0]["content"].to_string().contains("file_data"));

    // A small window: the extractive compaction folds the screenshots' stand-ins, never bytes.
    let compacted = ok(&["compact", "--db", db, "--session", "m", "--context-window", "6000"]);
    assert_eq!(compacted["outcome"], json!("recorded"), "{compacted}");
    let checkpoints = session.raw().query_row(
        "SELECT group_concat(payload_json) FROM agent_run_events WHERE session_id = 'm'",
        [],
        |row| row.get::<_, Option<String>>(0),
    );
    let ledger = checkpoints.expect("test value").unwrap_or_default();
    assert!(!ledger.contains(&large[..64]) && !ledger.contains(&encode_base64(SMALL_PNG)[..64]));
    let verify = ok(&["verify", "--db", db, "--session", "m"]);
    assert_eq!((verify["ok"].clone(), verify["verified"].clone()), (json!(true), json!(1)));
    let after = ok(&project_args(db, "m", "6000", "neutral"));
    assert_eq!(after["fits"], json!(true), "{after}");
}

#[test]
fn bad_attachments_are_refused_and_nothing_is_written() {
    let session = SessionDb::new("bad-media.sqlite");
    let db = session.db();
    let dir = session.dir.path();
    let user = |part: Value| json!([{"role": "user", "content": [part]}]).to_string();
    let cases = [
        (
            "openai-chat",
            user(
                json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR*w0KGgo="}}),
            ),
            "attachment_invalid_base64",
        ),
        (
            "ai-sdk",
            user(
                json!({"type": "image", "image": encode_base64(SMALL_PNG), "mediaType": "image/webp"}),
            ),
            "attachment_media_type_mismatch",
        ),
        (
            "openai-chat",
            user(
                json!({"type": "file", "file": {"file_data": format!("data:image/png;base64,{}", encode_base64(PDF))}}),
            ),
            "attachment_media_type_mismatch",
        ),
        (
            "ai-sdk",
            user(
                json!({"type": "file", "data": "A".repeat(45_000_000), "mediaType": "application/pdf"}),
            ),
            "attachment_too_large",
        ),
    ];
    for (index, (format, text, code)) in cases.iter().enumerate() {
        let file = write(dir, &format!("bad-{index}.json"), text);
        fails(&import_args(db, "m", format, file.to_str().expect("test value")), code);
    }
    assert_eq!(session.event_count("m"), 0);
    assert_eq!(session.count("tool_result_archive"), 0);

    // A PDF known only by URL imports (the provider may fetch it), but Chat Completions needs
    // its bytes: projecting for chat is a typed error; Responses sends `file_url`.
    let url_pdf = user(
        json!({"type": "file", "data": "https://example.com/form.pdf", "mediaType": "application/pdf"}),
    );
    let file = write(dir, "url.json", &url_pdf);
    ok(&import_args(db, "m", "ai-sdk", file.to_str().expect("test value")));
    fails(&project_args(db, "m", "8000", "openai-chat"), "attachment_url_not_allowed");
    let responses = ok(&project_args(db, "m", "8000", "openai-responses"));
    assert_eq!(
        responses["messages"][0]["content"][0]["file_url"],
        json!("https://example.com/form.pdf")
    );

    // JSON Lines naming archived bytes the archive does not hold.
    let orphan = json!({"sessionId": "m", "runId": "r", "turnId": "t9", "runtimeEventId": "e9", "seq": 99,
        "content": {"type": "user_text", "text": "see", "attachments": [{"mediaType": "image/png",
        "byteLength": 10, "sha256": "0".repeat(64)}]}});
    let file = write(dir, "orphan.jsonl", &format!("{orphan}\n"));
    let before = session.ledger_rows("m");
    fails(
        &import_args(db, "m", "events-jsonl", file.to_str().expect("test value")),
        "attachment_not_archived",
    );
    assert_eq!(session.ledger_rows("m"), before);
}

/// The real WebVoyager and OpenWebVoyager screenshot trajectories (Apache-2.0; sources in
/// tests/trajectories/multimodal/README.md): imported, compacted at a 4,000-token window, and the
/// request fits afterwards with no screenshot byte in any checkpoint.
#[test]
fn real_screenshot_trajectories_import_compact_and_fit() {
    for (file, events, images) in [("webvoyager.json", 25, 3), ("openwebvoyager.json", 9, 4)] {
        let session = SessionDb::new("real-media.sqlite");
        let db = session.db();
        let path =
            format!("{}/../tests/trajectories/multimodal/{file}", env!("CARGO_MANIFEST_DIR"));
        let imported = ok(&import_args(db, "w", "anthropic", &path));
        assert_eq!(imported["imported"], json!(events), "{file}");
        let rows = session.ledger_rows("w");
        let named =
            rows.iter().map(|(_, _, json)| json.matches("\"sha256\"").count()).sum::<usize>();
        assert_eq!(named, images, "{file}: every screenshot is content-addressed");
        let before = ok(&project_args(db, "w", "4000", "anthropic"));
        assert_eq!(before["fits"], json!(false), "{file}");
        let compacted = ok(&["compact", "--db", db, "--session", "w", "--context-window", "4000"]);
        assert_eq!(compacted["outcome"], json!("recorded"), "{file}: {compacted}");
        let after = ok(&project_args(db, "w", "4000", "anthropic"));
        assert_eq!(after["fits"], json!(true), "{file}: {after}");
        let ledger: String = session
            .raw()
            .query_row("SELECT group_concat(payload_json) FROM agent_run_events", [], |row| {
                row.get(0)
            })
            .expect("test value");
        assert!(!ledger.contains("iVBORw0KGgo"), "{file}: no PNG bytes in any checkpoint");
    }
}
