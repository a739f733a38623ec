//! Exact token counts for OpenAI models: a [`TokenEstimator`] backed by tiktoken-rs.
//!
//! [`OpenAiTokenizer::for_model`] picks the model's byte-pair encoding (the BPE files are
//! embedded in the `tiktoken-rs` crate, so counting needs no network and no files):
//!
//! | model id prefix | encoding |
//! |---|---|
//! | `gpt-4o`, `chatgpt-4o`, `gpt-4.1`, `gpt-4.5`, `gpt-5`, `o1`, `o3`, `o4`, `codex-` | `o200k_base` |
//! | `gpt-4` (other), `gpt-3.5-turbo` | `cl100k_base` |
//! | anything else (Claude, Gemini, local models) | none: `for_model` returns `None` |
//!
//! A fine-tuned id (`ft:gpt-4o-mini:org::id`) counts as its base model. Each encoding is
//! parsed once per process (a [`OnceLock`]) and shared; an [`OpenAiTokenizer`] is a `Copy`
//! handle to it.
//!
//! Text is counted with `encode_ordinary`: special-token strings such as `<|endoftext|>` in
//! user text count as plain text, as the API treats them.

use std::sync::OnceLock;

use contextfold_core::budget::TokenEstimator;
use contextfold_core::event::{Attachment, attachment_tokens, openai_image_tokens};
use tiktoken_rs::CoreBPE;

/// Tokens of chat formatting per message, as OpenAI documents them: each message is framed as
/// `<|start|>{role}<|message|>{content}<|end|>`, which the OpenAI Cookbook's "How to count
/// tokens with tiktoken" (openai-cookbook, `examples/How_to_count_tokens_with_tiktoken.ipynb`)
/// counts as `tokens_per_message = 3` plus the role's own tokens (one for `system`, `user`,
/// `assistant`, `tool`). The core counts content only, so the overhead here is 3 + 1. The 3
/// reply-priming tokens the cookbook adds once per request are not a per-message cost and are
/// left to the budget's reserve.
pub const CHAT_MESSAGE_OVERHEAD_TOKENS: u64 = 4;

/// The byte-pair encodings of OpenAI's chat models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpenAiEncoding {
    /// `o200k_base`: GPT-4o, GPT-4.1, GPT-5, the o-series and Codex models.
    O200kBase,
    /// `cl100k_base`: GPT-4 (before 4o) and GPT-3.5 Turbo.
    Cl100kBase,
}

impl OpenAiEncoding {
    /// The encoding of `model_id` (see the module table), or `None` for a non-OpenAI model.
    pub fn for_model(model_id: &str) -> Option<Self> {
        let model = model_id.trim().to_ascii_lowercase();
        let model = match model.strip_prefix("ft:") {
            Some(rest) => rest.split(':').next().unwrap_or(rest).to_owned(),
            None => model,
        };
        let model = model.strip_prefix("openai/").unwrap_or(&model);
        const O200K: &[&str] =
            &["gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "codex-", "gpt-oss"];
        let o_series = ["o1", "o3", "o4"].iter().any(|series| {
            model.strip_prefix(series).is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
        });
        if o_series || O200K.iter().any(|prefix| model.starts_with(prefix)) {
            Some(Self::O200kBase)
        } else if model.starts_with("gpt-4") || model.starts_with("gpt-3.5-turbo") {
            Some(Self::Cl100kBase)
        } else {
            None
        }
    }

    /// The encoding's tiktoken name (`o200k_base`, `cl100k_base`).
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }

    /// The parsed encoding, built on first use and shared by the whole process.
    fn bpe(self) -> &'static CoreBPE {
        static O200K: OnceLock<CoreBPE> = OnceLock::new();
        static CL100K: OnceLock<CoreBPE> = OnceLock::new();
        // The BPE tables are compiled into tiktoken-rs; failing to parse them is a corrupt
        // build, not an input error, so it fails fast.
        match self {
            Self::O200kBase => O200K.get_or_init(|| {
                tiktoken_rs::o200k_base().expect("the embedded o200k_base table parses")
            }),
            Self::Cl100kBase => CL100K.get_or_init(|| {
                tiktoken_rs::cl100k_base().expect("the embedded cl100k_base table parses")
            }),
        }
    }
}

/// Exact OpenAI token counts for the core's projection. `Copy`: a handle to a process-wide
/// encoding.
#[derive(Clone, Copy)]
pub struct OpenAiTokenizer {
    encoding: OpenAiEncoding,
    bpe: &'static CoreBPE,
}

impl std::fmt::Debug for OpenAiTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiTokenizer").field("encoding", &self.encoding.name()).finish()
    }
}

impl OpenAiTokenizer {
    /// The tokenizer of `model_id`, or `None` when it is not an OpenAI model.
    pub fn for_model(model_id: &str) -> Option<Self> {
        OpenAiEncoding::for_model(model_id).map(Self::new)
    }

    /// The tokenizer of one encoding (parsed on first use).
    pub fn new(encoding: OpenAiEncoding) -> Self {
        Self { encoding, bpe: encoding.bpe() }
    }

    /// The `o200k_base` tokenizer of current OpenAI models.
    pub fn o200k_base() -> Self {
        Self::new(OpenAiEncoding::O200kBase)
    }

    /// Which encoding this is.
    pub fn encoding(&self) -> OpenAiEncoding {
        self.encoding
    }

    /// The token ids of `text` (special-token strings encoded as plain text).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.bpe.encode_ordinary(text)
    }

    /// The exact number of tokens of `text`.
    pub fn count(&self, text: &str) -> u64 {
        self.bpe.encode_ordinary(text).len() as u64
    }
}

impl TokenEstimator for OpenAiTokenizer {
    fn estimate_text(&self, text: &str) -> u64 {
        self.count(text)
    }

    fn name(&self) -> String {
        format!("tiktoken:{}", self.encoding.name())
    }

    fn message_overhead(&self) -> u64 {
        CHAT_MESSAGE_OVERHEAD_TOKENS
    }

    /// OpenAI's image rule only (the default takes the larger of OpenAI's and Anthropic's).
    fn estimate_attachment(&self, attachment: &Attachment) -> u64 {
        if !attachment.is_image() {
            return attachment_tokens(attachment);
        }
        let detail = attachment.detail.as_deref();
        match (attachment.width, attachment.height) {
            (Some(width), Some(height)) => openai_image_tokens(width, height, detail),
            // Unknown size (a URL): the largest image the rule allows, 768 x 2048.
            _ => openai_image_tokens(768, 2048, detail),
        }
    }
}

#[cfg(test)]
#[path = "tokenizer_tests.rs"]
mod tests;
