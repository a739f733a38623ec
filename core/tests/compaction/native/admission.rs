//! Output admission (uniqueness and binding), provider matching and redaction.

use super::*;

fn compaction(id: Value, content: Value) -> Value {
    json!({"type": "compaction", "id": id, "encrypted_content": content})
}

#[test]
fn exactly_one_complete_compaction_item_is_admitted_and_bound() {
    let output = [
        json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "r"}),
        compaction(json!("cmp_1"), json!("gAAAAnew")),
        json!({"type": "message", "role": "assistant", "content": []}),
    ];
    let accepted = accept_native_output(&output, &binding()).expect("unique item");
    assert_eq!(
        accepted,
        ProviderState::OpenaiCodexRemoteV2 {
            connection_slug: "codex-sub".into(),
            model_id: "gpt-5.3-codex".into(),
            item_id: "cmp_1".into(),
            encrypted_content: "gAAAAnew".into(),
        }
    );
    let legacy = [json!({"type": "compaction_summary", "id": "cmp_2", "encrypted_content": "g"})];
    assert!(accept_native_output(&legacy, &binding()).is_ok());
}

#[test]
fn zero_or_several_compaction_items_are_no_unique_item() {
    let others = [json!({"type": "reasoning"}), json!("not an object"), json!({"id": "x"})];
    let error = accept_native_output(&others, &binding()).expect_err("none");
    assert_eq!(error, NativeOutputDefect::NoCompactionItem { ignored_items: 3 });
    assert_eq!(
        accept_native_output(&[], &binding()),
        Err(NativeOutputDefect::NoCompactionItem { ignored_items: 0 })
    );
    let two = [
        compaction(json!("cmp_1"), json!("a")),
        json!({"type": "message"}),
        compaction(json!("cmp_2"), json!("b")),
    ];
    let error = accept_native_output(&two, &binding()).expect_err("two");
    assert_eq!(error, NativeOutputDefect::MultipleCompactionItems { count: 2, ignored_items: 1 });
    let mixed = [
        compaction(json!("cmp_1"), json!("a")),
        json!({"type": "compaction_summary", "id": "cmp_2", "encrypted_content": "b"}),
    ];
    assert!(matches!(
        accept_native_output(&mixed, &binding()),
        Err(NativeOutputDefect::MultipleCompactionItems { count: 2, .. })
    ));
    for defect in [error, NativeOutputDefect::NoCompactionItem { ignored_items: 0 }] {
        assert_eq!(defect.code(), "native_no_unique_item");
        assert_eq!(defect.reason_code(), ReasonCode::NativeNoUniqueItem);
    }
}

#[test]
fn an_incomplete_compaction_item_is_no_unique_item() {
    let missing_id = [json!({"type": "compaction", "encrypted_content": "g"})];
    let missing_content = [json!({"type": "compaction", "id": "cmp_1"})];
    let cases = [
        (&missing_id[..], true),
        (&[compaction(json!(""), json!("g"))][..], true),
        (&[compaction(json!("  "), json!("g"))][..], true),
        (&[compaction(json!(7), json!("g"))][..], true),
        (&[compaction(Value::Null, json!("g"))][..], true),
        (&missing_content[..], false),
        (&[compaction(json!("cmp_1"), json!(""))][..], false),
        (&[compaction(json!("cmp_1"), json!({"nested": "g"}))][..], false),
    ];
    for (output, id_missing) in cases {
        let error = accept_native_output(output, &binding()).expect_err("incomplete");
        if id_missing {
            assert_eq!(error, NativeOutputDefect::MissingItemId { ignored_items: 0 }, "{output:?}");
        } else {
            let expected = NativeOutputDefect::MissingEncryptedContent { ignored_items: 0 };
            assert_eq!(error, expected, "{output:?}");
        }
        assert_eq!(error.code(), "native_no_unique_item");
    }
}

#[test]
fn a_checkpoint_replays_only_for_the_same_provider_connection_and_model() {
    let same = ProviderIdentity {
        provider: "openai-codex".into(),
        connection_slug: "codex-sub".into(),
        model_id: "gpt-5.3-codex".into(),
    };
    assert!(provider_state_matches(&state(), &same));
    let variants = [
        ProviderIdentity { provider: "openai".into(), ..same.clone() },
        ProviderIdentity { connection_slug: "codex-work".into(), ..same.clone() },
        ProviderIdentity { model_id: "gpt-5.3-codex-mini".into(), ..same.clone() },
    ];
    for other in variants {
        assert!(!provider_state_matches(&state(), &other), "{other:?}");
    }
    let wire = serde_json::to_value(&same).expect("serializes");
    assert_eq!(
        wire,
        json!({"provider": "openai-codex", "connectionSlug": "codex-sub",
                            "modelId": "gpt-5.3-codex"})
    );
}

#[test]
fn redaction_replaces_encrypted_content_at_any_depth() {
    let mut log = LogBuilder::new("s");
    log.user("go");
    let request =
        build_native_request(Some(&state()), log.events(), BIG, &CharEstimator).expect("fits");
    let mut captured = json!({
        "model": "gpt-5.3-codex",
        "input": request.input,
        "providerOptions": {"openai": {"itemId": "cmp_prev", "encryptedContent": "gAAAAprevious"}},
        "output": [{"type": "reasoning", "encrypted_content": "gAAAAreason"},
                   {"type": "compaction", "id": "cmp_1", "encrypted_content": null}],
    });
    redact_provider_state(&mut captured);
    let text = captured.to_string();
    assert!(!text.contains("gAAAA"), "{text}");
    assert_eq!(captured["input"][0]["encrypted_content"], "[redacted]");
    assert_eq!(captured["input"][0]["id"], "cmp_prev");
    assert_eq!(captured["providerOptions"]["openai"]["encryptedContent"], "[redacted]");
    assert_eq!(captured["output"][1]["encrypted_content"], Value::Null);
    assert_eq!(captured["input"][1]["content"][0]["text"], "go");
}
