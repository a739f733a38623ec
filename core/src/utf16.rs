//! UTF-16, the encoding of JavaScript strings, for the wasm binding: how many code units a text
//! has, and its code units written out. Both go several bytes at a time: the npm module is built
//! at opt-level "z", which does not vectorize a byte loop, and `Vec::extend` from
//! `str::encode_utf16` checks the capacity for every unit (the iterator is not `TrustedLen`).

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

/// Appends the UTF-16 code units of `text` to `units`: each run of ASCII as one extend from a
/// slice (one reservation, no check per unit), every other character by its code point.
pub fn extend_utf16(units: &mut Vec<u16>, text: &str) {
    units.reserve(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = rest.bytes().position(|b| !b.is_ascii()).unwrap_or(rest.len());
        units.extend(rest.as_bytes()[..ascii].iter().map(|&b| u16::from(b)));
        rest = &rest[ascii..];
        let mut chars = rest.chars();
        while let Some(c) = chars.next().filter(|c| !c.is_ascii()) {
            let mut pair = [0; 2];
            units.extend_from_slice(c.encode_utf16(&mut pair));
            rest = chars.as_str();
        }
    }
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

    #[test]
    fn extend_utf16_matches_encode_utf16() {
        let long = "abcdefgh é 测试 🚀 ✅ a\u{10FFFF}b ".repeat(5);
        for text in ["", "abc", "é", "测试x", "🚀 ✅", "a\u{10FFFF}b", &long] {
            let mut units = vec![7];
            extend_utf16(&mut units, text);
            assert_eq!(units[1..], text.encode_utf16().collect::<Vec<_>>()[..], "{text}");
        }
    }
}
