//! [`import_session_file`]: an agent's session file (Claude Code transcript, Codex CLI rollout,
//! Cline / Roo Code history) read by the core's `import_session_file`, the same reader as
//! `contextfold import --format auto`. The binding only reads the options and maps errors.

use contextfold_core::projection::{
    ImportContext, ImportOptions, ImportedSession, SessionFormat,
    import_session_file as core_import_session_file,
};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::convert::{BindingError, json_from_js, to_js};

/// Reads an agent's session file (the core's `import_session_file`): a Claude Code transcript,
/// a Codex CLI rollout or a Cline / Roo Code history, as `{ format, events, usage, linked,
/// diagnostics }` (the core's `ImportedSession` JSON). `options` are the import options plus
/// `format` (see [`session_file_options`]). Throws the core's `session_file_*` codes
/// (`SessionFileError::code`), `invalid_argument` for options that do not read.
#[wasm_bindgen(js_name = importSessionFile)]
pub fn import_session_file(text: &str, options: JsValue) -> Result<JsValue, JsValue> {
    let options = json_from_js(options, "import options")?;
    let imported = read_session_file(text, options)?;
    Ok(to_js(&imported, "imported session")?)
}

/// [`import_session_file`] over options already read as JSON.
pub fn read_session_file(text: &str, options: Value) -> Result<ImportedSession, BindingError> {
    let (format, ids) = session_file_options(options)?;
    core_import_session_file(format, text, &ids).map_err(|e| BindingError::core(e.code(), e))
}

/// The format and ids of `{ format?, sessionId, ...ImportOptions }`: `format` is `'auto'` (also
/// when left out or null: detected, `None`), `'claude-code'`, `'codex-rollout'` or `'cline'`;
/// any other value, and options the importers' `ImportOptions` refuse, are `invalid_argument`.
pub fn session_file_options(
    mut options: Value,
) -> Result<(Option<SessionFormat>, ImportContext), BindingError> {
    let invalid = |detail: String| BindingError::invalid("import options", detail);
    let format = match options.as_object_mut().and_then(|object| object.shift_remove("format")) {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) if name == "auto" => None,
        Some(Value::String(name)) => Some(SessionFormat::from_name(&name).ok_or_else(|| {
            invalid(format!("format `{name}` is not auto, claude-code, codex-rollout or cline"))
        })?),
        Some(other) => return Err(invalid(format!("format must be a string, not {other}"))),
    };
    let ids = serde_json::from_value::<ImportOptions>(options)
        .map(ImportContext::from)
        .map_err(|e| invalid(e.to_string()))?;
    Ok((format, ids))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A Codex rollout of one user message and one answer.
    const ROLLOUT: &str = concat!(
        r#"{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{"id":"r1","cwd":"/w"}}"#,
        "\n",
        r#"{"timestamp":"2025-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}"#,
        "\n",
        r#"{"timestamp":"2025-01-01T00:00:02Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}"#,
        "\n",
    );

    fn code(result: Result<ImportedSession, BindingError>) -> String {
        match result {
            Ok(_) => "ok".into(),
            Err(e) => e.code().to_owned(),
        }
    }

    #[test]
    fn the_format_is_detected_or_named() {
        for options in [
            json!({ "sessionId": "s" }),
            json!({ "sessionId": "s", "format": "auto" }),
            json!({ "sessionId": "s", "format": null }),
            json!({ "sessionId": "s", "format": "codex-rollout", "firstSeq": 5 }),
        ] {
            let first_seq = options.get("firstSeq").and_then(Value::as_u64).unwrap_or(1);
            let imported = read_session_file(ROLLOUT, options).expect("a rollout");
            assert_eq!(imported.format, SessionFormat::CodexRollout);
            assert_eq!(imported.events.len(), 2);
            assert_eq!(imported.events[0].seq, first_seq);
            assert_eq!(imported.events[0].session_id, "s");
        }
    }

    #[test]
    fn errors_keep_their_codes() {
        let named = |format: &str| json!({ "sessionId": "s", "format": format });
        assert_eq!(code(read_session_file(ROLLOUT, named("gemini"))), "invalid_argument");
        assert_eq!(
            code(read_session_file(ROLLOUT, json!({ "sessionId": "s", "format": 3 }))),
            "invalid_argument"
        );
        assert_eq!(
            code(read_session_file(ROLLOUT, json!({ "sessionId": "s", "formats": "auto" }))),
            "invalid_argument"
        );
        assert_eq!(code(read_session_file(ROLLOUT, json!({}))), "invalid_argument");
        assert_eq!(
            code(read_session_file("", json!({ "sessionId": "s" }))),
            "session_file_unknown_format"
        );
        assert_eq!(
            code(read_session_file("{\"a\":1}\n", json!({ "sessionId": "s" }))),
            "session_file_unknown_format"
        );
        assert_eq!(
            code(read_session_file(ROLLOUT, named("claude-code"))),
            "session_file_unsupported"
        );
    }
}
