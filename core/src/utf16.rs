//! UTF-16, the encoding of JavaScript strings, for the wasm binding: how many code units a text
//! has (what JS `length` says), without transcoding it.

/// Length of `text` in UTF-16 code units: its bytes, less the UTF-8 continuation bytes
/// (`10xxxxxx`), plus one per four-byte sequence (lead `11110xxx`: a surrogate pair). Counted
/// eight bytes at a time (the module is built at opt-level "z", which does not vectorize a
/// byte loop): bit 7 of each byte of the masks below is that byte's flag.
pub fn utf16_length(text: &str) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let bytes = text.as_bytes();
    let (words, rest) = bytes.as_chunks::<8>();
    let mut continuation = 0;
    let mut four_byte_leads = 0;
    for word in words {
        let w = u64::from_le_bytes(*word);
        continuation += (w & !(w << 1) & HIGH).count_ones() as usize;
        four_byte_leads += (w & (w << 1) & (w << 2) & (w << 3) & HIGH).count_ones() as usize;
    }
    for &b in rest {
        continuation += usize::from(b & 0xC0 == 0x80);
        four_byte_leads += usize::from(b >= 0xF0);
    }
    bytes.len() - continuation + four_byte_leads
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_length_matches_encode_utf16() {
        let long = "abcdefgh é 测试 🚀 ✅ a\u{10FFFF}b ".repeat(5);
        for text in ["", "abc", "é", "测试", "🚀 ✅", "a\u{10FFFF}b", "🚀🚀🚀🚀🚀", &long]
        {
            assert_eq!(utf16_length(text), text.encode_utf16().count(), "{text}");
        }
    }
}
