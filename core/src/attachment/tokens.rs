//! Token estimates of attachments, following each provider's published image rules.
//!
//! Sources (official pages, as published in 2025–2026; see docs/events.md#attachments):
//! - OpenAI, "Images and vision" (platform.openai.com/docs/guides/images-vision), GPT-4o /
//!   GPT-4.1 class: a `low` detail image costs a fixed 85 tokens; otherwise the image is scaled
//!   to fit a 2048 × 2048 square, then so that its shortest side is at most 768 px, and costs
//!   85 + 170 per 512 px tile ([`openai_image_tokens`]).
//! - Anthropic, "Vision" (docs.anthropic.com/en/docs/vision): an image whose long edge exceeds
//!   1568 px is scaled down first; it costs about width × height / 750 tokens, about 1,600 at
//!   most ([`anthropic_image_tokens`]).
//! - PDF documents: Anthropic, "PDF support": "each page typically uses 1,500-3,000 tokens";
//!   OpenAI puts each page's text and an image of it in context. A PDF counts
//!   [`PDF_PAGE_TOKENS`] per page (pages counted from its `/Type /Page` objects, one at least).
//!
//! The neutral projection does not know which provider it is for, so [`attachment_tokens`]
//! (what the default estimator uses) takes the larger of the two image rules: an estimate
//! errs towards a smaller request. Unknown dimensions (a URL) count as the largest image each
//! rule allows.

use super::Attachment;

/// OpenAI's fixed cost of a `low` detail image, and the base cost of every image.
pub(crate) const OPENAI_IMAGE_BASE_TOKENS: u64 = 85;
/// OpenAI's cost of one 512 px tile at high detail.
pub(crate) const OPENAI_TILE_TOKENS: u64 = 170;
/// Anthropic's longest edge before an image is scaled down.
pub(crate) const ANTHROPIC_MAX_EDGE: u64 = 1568;
/// Anthropic's approximate ceiling per image.
pub(crate) const ANTHROPIC_MAX_IMAGE_TOKENS: u64 = 1600;
/// Tokens counted per PDF page (the upper end of Anthropic's published range).
pub(crate) const PDF_PAGE_TOKENS: u64 = 3000;

/// OpenAI's cost of a `width` × `height` image at `detail` (`low`, `high` or `auto`).
///
/// ```
/// use contextfold_core::event::openai_image_tokens;
/// assert_eq!(openai_image_tokens(1024, 1024, None), 765); // OpenAI's worked example
/// assert_eq!(openai_image_tokens(2048, 4096, Some("high")), 1105);
/// assert_eq!(openai_image_tokens(4096, 4096, Some("low")), 85);
/// ```
pub fn openai_image_tokens(width: u32, height: u32, detail: Option<&str>) -> u64 {
    if detail == Some("low") {
        return OPENAI_IMAGE_BASE_TOKENS;
    }
    let (mut w, mut h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let fit = (2048.0 / w.max(h)).min(1.0);
    (w, h) = (w * fit, h * fit);
    let shorten = (768.0 / w.min(h)).min(1.0);
    (w, h) = (w * shorten, h * shorten);
    let tiles = (w / 512.0).ceil() as u64 * (h / 512.0).ceil() as u64;
    OPENAI_IMAGE_BASE_TOKENS + OPENAI_TILE_TOKENS * tiles
}

/// Anthropic's approximate cost of a `width` × `height` image.
///
/// ```
/// use contextfold_core::event::anthropic_image_tokens;
/// assert_eq!(anthropic_image_tokens(1092, 1092), 1590); // Anthropic's worked example
/// assert_eq!(anthropic_image_tokens(200, 200), 54);
/// assert_eq!(anthropic_image_tokens(8000, 8000), 1600);
/// ```
pub fn anthropic_image_tokens(width: u32, height: u32) -> u64 {
    let (mut w, mut h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let scale = (ANTHROPIC_MAX_EDGE as f64 / w.max(h)).min(1.0);
    (w, h) = (w * scale, h * scale);
    ((w * h / 750.0).ceil() as u64).min(ANTHROPIC_MAX_IMAGE_TOKENS)
}

/// The conservative estimate of one attachment used by the default estimator (see the module
/// docs): images by the larger provider rule, PDFs per page, other files as text of their size.
pub fn attachment_tokens(attachment: &Attachment) -> u64 {
    if attachment.is_image() {
        let detail = attachment.detail.as_deref();
        return match (attachment.width, attachment.height) {
            (Some(w), Some(h)) => {
                openai_image_tokens(w, h, detail).max(anthropic_image_tokens(w, h))
            }
            // The largest image each rule allows: 8 tiles (768 × 2048) or the ceiling.
            _ => openai_image_tokens(768, 2048, detail).max(ANTHROPIC_MAX_IMAGE_TOKENS),
        };
    }
    let bytes = attachment.byte_length.unwrap_or(0);
    if attachment.media_type == "application/pdf" {
        let pages = attachment.inline_bytes().map_or(0, |b| pdf_pages(&b)).max(1);
        return pages * PDF_PAGE_TOKENS;
    }
    bytes.div_ceil(4)
}

/// Counts `/Type /Page` objects (not `/Pages`) in a PDF's bytes.
fn pdf_pages(bytes: &[u8]) -> u64 {
    let mut pages = 0;
    let mut at = 0;
    while let Some(found) = find(&bytes[at..], b"/Type") {
        let mut rest = &bytes[at + found + 5..];
        while let [b' ' | b'\n' | b'\r' | b'\t', tail @ ..] = rest {
            rest = tail;
        }
        if rest.starts_with(b"/Page") && !rest[5..].starts_with(b"s") {
            pages += 1;
        }
        at += found + 5;
    }
    pages
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_tiles_follow_the_published_examples() {
        // 2048 x 4096 -> 1024 x 2048 -> 768 x 1536: 2 x 3 tiles.
        assert_eq!(openai_image_tokens(2048, 4096, None), 85 + 170 * 6);
        assert_eq!(openai_image_tokens(512, 512, Some("auto")), 85 + 170);
        assert_eq!(openai_image_tokens(768, 2048, None), 85 + 170 * 8);
    }

    #[test]
    fn pdf_pages_are_counted_from_page_objects() {
        let pdf = b"%PDF-1.7 1 0 obj <</Type /Pages /Count 2>> 2 0 obj <</Type /Page>> 3 0 obj <</Type/Page>>";
        assert_eq!(pdf_pages(pdf), 2);
        assert_eq!(pdf_pages(b"%PDF-1.7"), 0);
    }
}
