use super::sniff::tests::png_header;
use super::*;

#[test]
fn bytes_become_an_inline_content_addressed_attachment() {
    let bytes = png_header(1280, 720);
    let a = Attachment::from_bytes(Some("image/PNG"), &bytes, Some("shot.png".into()))
        .expect("test value");
    assert_eq!(a.media_type, "image/png");
    assert_eq!((a.width, a.height, a.byte_length), (Some(1280), Some(720), Some(33)));
    assert_eq!(a.sha256.as_deref(), Some(sha256_hex(&bytes).as_str()));
    assert_eq!(a.inline_bytes(), Some(bytes.clone()));
    a.verify().expect("test value");
    let url = a.data_url().expect("test value");
    assert_eq!(Attachment::from_url(&url, None, Some("shot.png".into())).expect("test value"), a);
    assert!(a.stand_in("s").starts_with(
        "[attachment image/png \"shot.png\" 1280x720, 33 bytes, contextfold://archive/s/"
    ));
}

#[test]
fn bad_attachments_are_typed_errors() {
    let png = encode_base64(&png_header(4, 4));
    let cases: Vec<(Result<Attachment, AttachmentError>, &str)> = vec![
        (
            Attachment::from_url("data:image/png;base64,@@@@", None, None),
            "attachment_invalid_base64",
        ),
        (Attachment::from_url("data:image/png,abc", None, None), "attachment_invalid_data_url"),
        (
            Attachment::from_url(&format!("data:image/jpeg;base64,{png}"), None, None),
            "attachment_media_type_mismatch",
        ),
        (
            Attachment::from_base64(Some("application/pdf"), "aGVsbG8=", None),
            "attachment_media_type_mismatch",
        ),
        (Attachment::from_url("file:///etc/passwd", None, None), "attachment_url_not_allowed"),
        (
            Attachment::from_bytes(None, &vec![0; (MAX_ATTACHMENT_BYTES + 1) as usize], None),
            "attachment_too_large",
        ),
    ];
    for (result, code) in cases {
        assert_eq!(result.expect_err(code).code(), code);
    }
}

#[test]
fn verify_refuses_inconsistent_fields() {
    let good = Attachment::from_bytes(None, &png_header(2, 2), None).expect("test value");
    let mut tampered = good.clone();
    tampered.sha256 = Some("0".repeat(64));
    assert_eq!(tampered.verify().expect_err("must fail").code(), "attachment_inconsistent");
    let mut both = good.clone();
    both.url = Some("https://example.com/a.png".into());
    assert_eq!(both.verify().expect_err("must fail").code(), "attachment_inconsistent");
    let mut archived = good.clone();
    archived.data = None;
    archived.verify().expect("test value");
    archived.sha256 = None;
    assert_eq!(archived.verify().expect_err("must fail").code(), "attachment_inconsistent");
    let url =
        Attachment::from_url("https://example.com/a.JPG?x=1", None, None).expect("test value");
    assert_eq!(url.media_type, "image/jpeg");
    url.verify().expect("test value");
}

#[test]
fn an_image_source_reads_as_an_image_or_is_refused() {
    let url = Attachment::from_url("https://example.com/render?id=7", None, None).expect("a URL");
    assert_eq!(url.media_type, "application/octet-stream");
    assert_eq!(url.into_image().expect("an image URL").media_type, "image/*");
    let pdf = Attachment::from_bytes(None, b"%PDF-1.7", None).expect("a PDF");
    assert_eq!(
        pdf.into_image().expect_err("not an image").code(),
        "attachment_media_type_mismatch"
    );
}

#[cfg(not(target_arch = "wasm32"))]
mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Any bytes round-trip through base64, and reading arbitrary text as an attachment
        /// (data URL, base64, header sniffing) returns a value or a typed error, never panics.
        #[test]
        fn arbitrary_input_never_panics_and_bytes_round_trip(
            bytes in proptest::collection::vec(any::<u8>(), 0..300),
            text in ".{0,200}",
            declared in proptest::option::of(
                "(image/(png|jpeg|gif|webp)|application/pdf|text/plain)"
            ),
        ) {
            prop_assert_eq!(decode_base64(&encode_base64(&bytes)), Some(bytes.clone()));
            let _ = image_dimensions(&bytes);
            let unsigned = Attachment::from_bytes(None, &bytes, None).expect("unsigned");
            let _ = attachment_tokens(&unsigned);
            let candidates = [
                Attachment::from_base64(declared.as_deref(), &text, None),
                Attachment::from_url(
                    &format!("data:{};base64,{text}", declared.as_deref().unwrap_or("x/y")),
                    None,
                    None,
                ),
                Attachment::from_bytes(declared.as_deref(), &bytes, None),
            ];
            for attachment in candidates.into_iter().flatten() {
                prop_assert_eq!(attachment.verify(), Ok(()));
                let json = serde_json::to_string(&attachment).expect("serializes");
                let back: Attachment = serde_json::from_str(&json).expect("reads back");
                prop_assert_eq!(back, attachment);
            }
        }
    }
}
