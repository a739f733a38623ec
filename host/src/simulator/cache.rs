//! Prompt caches at each provider's granularity, over the tokens of a request's rendering.
//!
//! - OpenAI (Chat Completions and Responses), automatic: "Caching is enabled automatically for
//!   prompts that are 1024 tokens or longer" and "cache hits occur in increments of 128
//!   tokens" (OpenAI, "Prompt caching", developers.openai.com/api/docs/guides/prompt-caching;
//!   OpenAI Cookbook, "Prompt Caching 201"). A request's cached tokens are its longest common
//!   prefix with an earlier request of the same cache key, in whole 128-token blocks, and zero
//!   when the request is under [`OPENAI_MIN_CACHED_TOKENS`] or the match is. The key is
//!   `prompt_cache_key`, else `user`, else one shared key. Every request's blocks are stored.
//! - Anthropic, explicit: a `cache_control` block marks a breakpoint; "the cache prefix
//!   includes everything up to and including the block" in the order tools, system, messages,
//!   and a prefix shorter than the minimum cacheable length (1,024 tokens for Sonnet and Opus
//!   models) is not cached (Anthropic, "Prompt caching",
//!   platform.claude.com/docs/en/build-with-claude/prompt-caching). The read is the longest
//!   prefix written by an earlier request that is a prefix of this one; the write is this
//!   request's tokens up to its last breakpoint beyond the read (when that prefix reaches
//!   [`ANTHROPIC_MIN_CACHED_TOKENS`]); every breakpoint prefix of at least the minimum is
//!   stored. A request without a breakpoint reads nothing (the lookup runs back from the
//!   breakpoints; its 20-block window is not modelled). Entries never expire (the 5-minute TTL is refreshed by every hit in real use).
//!
//! Prefixes are compared by a polynomial hash of their tokens (64-bit, wrapping): a collision
//! would need two different prefixes of the same length with equal hashes.

use std::collections::{HashMap, HashSet};

/// Shortest OpenAI prompt that is cached.
pub const OPENAI_MIN_CACHED_TOKENS: usize = 1024;
/// OpenAI's cache-hit granularity.
pub const OPENAI_CACHE_BLOCK_TOKENS: usize = 128;
/// Shortest Anthropic breakpoint prefix that is cached (Sonnet and Opus models).
pub const ANTHROPIC_MIN_CACHED_TOKENS: usize = 1024;

const HASH_BASE: u64 = 0x100_0000_01b3;

/// `hashes[k]` is the hash of `tokens[..k]`.
fn prefix_hashes(tokens: &[u32]) -> Vec<u64> {
    let mut hashes = Vec::with_capacity(tokens.len() + 1);
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    hashes.push(hash);
    for &token in tokens {
        hash = hash.wrapping_mul(HASH_BASE) ^ u64::from(token).wrapping_add(1);
        hashes.push(hash);
    }
    hashes
}

/// OpenAI's automatic prefix cache: the block prefixes seen per cache key.
#[derive(Debug, Default)]
pub(crate) struct OpenAiCache {
    blocks: HashMap<String, HashSet<(usize, u64)>>,
}

impl OpenAiCache {
    /// The cached tokens of `tokens` under `key`, then stores its block prefixes.
    pub(crate) fn lookup_and_store(&mut self, key: &str, tokens: &[u32]) -> u64 {
        let hashes = prefix_hashes(tokens);
        let seen = self.blocks.entry(key.to_owned()).or_default();
        let mut matched = 0;
        let mut end = OPENAI_CACHE_BLOCK_TOKENS;
        while end <= tokens.len() && seen.contains(&(end, hashes[end])) {
            matched = end;
            end += OPENAI_CACHE_BLOCK_TOKENS;
        }
        let cached =
            if tokens.len() < OPENAI_MIN_CACHED_TOKENS || matched < OPENAI_MIN_CACHED_TOKENS {
                0
            } else {
                matched
            };
        let mut end = OPENAI_CACHE_BLOCK_TOKENS;
        while end <= tokens.len() {
            seen.insert((end, hashes[end]));
            end += OPENAI_CACHE_BLOCK_TOKENS;
        }
        cached as u64
    }
}

/// What an Anthropic request read from and wrote to the cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AnthropicCacheUse {
    /// `cache_read_input_tokens`.
    pub(crate) read: u64,
    /// `cache_creation_input_tokens`.
    pub(crate) written: u64,
}

/// Anthropic's explicit cache: the breakpoint prefixes written so far.
#[derive(Debug, Default)]
pub(crate) struct AnthropicCache {
    written: HashSet<(usize, u64)>,
}

impl AnthropicCache {
    /// Reads and writes for `tokens` with `breakpoints` (token offsets after each marked
    /// block), then stores the breakpoint prefixes.
    pub(crate) fn lookup_and_store(
        &mut self,
        tokens: &[u32],
        breakpoints: &[usize],
    ) -> AnthropicCacheUse {
        let hashes = prefix_hashes(tokens);
        let last = breakpoints.iter().copied().max().unwrap_or(0).min(tokens.len());
        // The lookup runs back from this request's breakpoints: nothing past the last one.
        let read = self
            .written
            .iter()
            .filter(|(len, hash)| *len <= last && hashes[*len] == *hash)
            .map(|(len, _)| *len)
            .max()
            .unwrap_or(0);
        let written =
            if last > read && last >= ANTHROPIC_MIN_CACHED_TOKENS { last - read } else { 0 };
        for &point in breakpoints {
            if point >= ANTHROPIC_MIN_CACHED_TOKENS && point <= tokens.len() {
                self.written.insert((point, hashes[point]));
            }
        }
        AnthropicCacheUse { read: read as u64, written: written as u64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(n: u32) -> Vec<u32> {
        (0..n).collect()
    }

    #[test]
    fn openai_hits_are_whole_blocks_of_long_prompts() {
        let mut cache = OpenAiCache::default();
        assert_eq!(cache.lookup_and_store("", &tokens(1000)), 0);
        assert_eq!(cache.lookup_and_store("", &tokens(1000)), 0, "under 1,024: never cached");
        assert_eq!(cache.lookup_and_store("", &tokens(1500)), 0, "the match is under 1,024");
        assert_eq!(cache.lookup_and_store("", &tokens(1700)), 1408, "1,500 rounded down");
        assert_eq!(cache.lookup_and_store("other", &tokens(1700)), 0, "keys are separate");
        let mut changed = tokens(1700);
        changed[1100] = 9;
        assert_eq!(cache.lookup_and_store("", &changed), 1024, "the prefix before the change");
        changed[5] = 9;
        assert_eq!(cache.lookup_and_store("", &changed), 0);
    }

    #[test]
    fn anthropic_reads_written_prefixes_and_writes_beyond_them() {
        let mut cache = AnthropicCache::default();
        let first = cache.lookup_and_store(&tokens(3000), &[500, 2000]);
        assert_eq!(first, AnthropicCacheUse { read: 0, written: 2000 });
        let second = cache.lookup_and_store(&tokens(4000), &[500, 2000, 3500]);
        assert_eq!(second, AnthropicCacheUse { read: 2000, written: 1500 });
        let third = cache.lookup_and_store(&tokens(4000), &[3500]);
        assert_eq!(third, AnthropicCacheUse { read: 3500, written: 0 });
        let unmarked = cache.lookup_and_store(&tokens(4000), &[]);
        assert_eq!(unmarked, AnthropicCacheUse::default(), "no breakpoint: no lookup");
        let short = cache.lookup_and_store(&tokens(900), &[900]);
        assert_eq!(short, AnthropicCacheUse::default(), "under the minimum: no write");
    }
}
