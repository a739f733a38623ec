//! [`import_session_file`]: an agent's session file (Claude Code transcript, Codex CLI rollout,
//! Cline / Roo Code history) read by the core's `import_session_file`, the same reader as
//! `contextfold import --format auto`, with the core's `SessionFileOptions`.

use contextfold_core::projection::{SessionFileOptions, import_session_file as core_import};
use wasm_bindgen::prelude::*;

use crate::convert::{BindingError, json_from_js, to_js};

/// Reads an agent's session file (the core's `import_session_file`): a Claude Code transcript,
/// a Codex CLI rollout or a Cline / Roo Code history, as `{ format, events, usage, linked,
/// diagnostics }` (the core's `ImportedSession` JSON). `options`: the core's
/// `SessionFileOptions` (`{ format?, sessionId, ...ImportOptions }`). Throws the core's
/// `session_file_*` codes, `invalid_argument` for options that do not read.
#[wasm_bindgen(js_name = importSessionFile)]
pub fn import_session_file(text: &str, options: JsValue) -> Result<JsValue, JsValue> {
    let what = "import options";
    let options = SessionFileOptions::from_json(json_from_js(options, what)?)
        .map_err(|detail| BindingError::invalid(what, detail))?;
    let imported = core_import(options.format, text, &options.ids)
        .map_err(|e| BindingError::core(e.code(), e))?;
    Ok(to_js(&imported, "imported session")?)
}
