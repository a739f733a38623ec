use std::time::Instant;

use contextfold_core::budget::{CharEstimator, TokenEstimator};

use super::*;

#[test]
fn models_map_to_their_encodings() {
    let table = [
        ("gpt-4o", Some(OpenAiEncoding::O200kBase)),
        ("gpt-4o-mini-2024-07-18", Some(OpenAiEncoding::O200kBase)),
        ("gpt-4.1", Some(OpenAiEncoding::O200kBase)),
        ("gpt-5-codex", Some(OpenAiEncoding::O200kBase)),
        ("GPT-5.1", Some(OpenAiEncoding::O200kBase)),
        ("o1", Some(OpenAiEncoding::O200kBase)),
        ("o3-mini", Some(OpenAiEncoding::O200kBase)),
        ("o4-mini", Some(OpenAiEncoding::O200kBase)),
        ("codex-mini-latest", Some(OpenAiEncoding::O200kBase)),
        ("ft:gpt-4o-mini:acme::abc123", Some(OpenAiEncoding::O200kBase)),
        ("gpt-4", Some(OpenAiEncoding::Cl100kBase)),
        ("gpt-4-turbo", Some(OpenAiEncoding::Cl100kBase)),
        ("gpt-3.5-turbo-0125", Some(OpenAiEncoding::Cl100kBase)),
        ("claude-sonnet-4-5", None),
        ("gemini-2.5-pro", None),
        ("o10-preview", None),
        ("llama-3.1-8b", None),
    ];
    for (model, encoding) in table {
        assert_eq!(OpenAiEncoding::for_model(model), encoding, "{model}");
        assert_eq!(OpenAiTokenizer::for_model(model).map(|t| t.encoding()), encoding, "{model}");
    }
}

#[test]
fn counts_are_exact_and_offline() {
    // tiktoken's own README example: "tiktoken is great!" is 6 cl100k tokens.
    let cl100k = OpenAiTokenizer::new(OpenAiEncoding::Cl100kBase);
    assert_eq!(cl100k.count("tiktoken is great!"), 6);
    assert_eq!(cl100k.encode("hello world"), vec![15339, 1917]);
    let o200k = OpenAiTokenizer::o200k_base();
    assert_eq!(o200k.count("hello world"), 2);
    assert_eq!(o200k.count(""), 0);
    // A special-token string in user text is plain text, not one special token.
    assert!(o200k.count("<|endoftext|>") > 1);
    assert_eq!(o200k.estimate_text("hello world"), 2);
    assert_eq!(o200k.message_overhead(), CHAT_MESSAGE_OVERHEAD_TOKENS);
}

#[test]
fn images_follow_the_openai_rule_only() {
    let png = contextfold_core::event::Attachment::from_url(
        "https://example.invalid/a.png",
        Some("image/png"),
        None,
    );
    let Ok(image) = png else { panic!("a URL attachment") };
    let o200k = OpenAiTokenizer::o200k_base();
    // Unknown size: 768 x 2048 at high detail, 8 tiles.
    assert_eq!(o200k.estimate_attachment(&image), 85 + 170 * 8);
    // The default estimator takes the larger rule (Anthropic's 1,600 ceiling here).
    assert_eq!(CharEstimator.estimate_attachment(&image), 1_600);
}

/// Prints the throughput on prose (the repository's docs) and code (the host's sources).
/// Run with `cargo test -p contextfold-host --lib tokenizer -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn throughput_on_prose_and_code() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read_dir = |dir: &std::path::Path, ext: &str| -> String {
        let mut text = String::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == ext) {
                    text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
                }
            }
        }
        text
    };
    let prose = read_dir(&root.join("../docs"), "md");
    let code = read_dir(&root.join("src"), "rs");
    for encoding in [OpenAiEncoding::O200kBase, OpenAiEncoding::Cl100kBase] {
        let tokenizer = OpenAiTokenizer::new(encoding);
        for (name, text) in [("prose", &prose), ("code", &code)] {
            tokenizer.count("warm up");
            let rounds = 3;
            let start = Instant::now();
            let mut tokens = 0;
            for _ in 0..rounds {
                tokens = tokenizer.count(text);
            }
            let seconds = start.elapsed().as_secs_f64() / f64::from(rounds);
            let mb = text.len() as f64 / 1e6;
            println!(
                "{} {name}: {:.2} MB, {tokens} tokens, {:.1} MB/s, {:.2} bytes/token",
                encoding.name(),
                mb,
                mb / seconds,
                text.len() as f64 / tokens as f64
            );
        }
    }
}
