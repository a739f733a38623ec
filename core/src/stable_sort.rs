//! Stable sorting with one copy of the sorting algorithm in the whole build.
//!
//! `slice::sort_by_key` and its siblings are generic over the element and the comparison, so
//! every call site gets its own copy of the standard library's sorting code (driftsort and
//! ipnsort, 5 to 10 KB of wasm each); in the npm package's module the copies were 49 KB raw for
//! a dozen call sites that sort a few items each (docs/performance.md, "Package size (issue
//! 21)"). Here the algorithm, a bottom-up merge sort of positions, is one non-generic function
//! ([`stable_order`]) that compares through a `dyn` callback; what each call site instantiates
//! is only the key extraction and the final permutation.
//!
//! Every function sorts stably: equal elements keep their order (so an unstable sort of the
//! standard library replaced by one of these gives one of the results it may give).

use std::cmp::Ordering;

/// The positions `0..len` in sorted order: `less(a, b)` says whether the element at position
/// `a` sorts before the one at `b`; positions of equal elements stay in increasing order.
/// O(n log n) comparisons, two `Vec<usize>` of `len`.
pub fn stable_order(len: usize, less: &mut dyn FnMut(usize, usize) -> bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    let mut merged = vec![0; len];
    let mut width = 1;
    while width < len {
        let mut start = 0;
        while start < len {
            let middle = (start + width).min(len);
            let end = (start + 2 * width).min(len);
            let (mut left, mut right) = (start, middle);
            for slot in &mut merged[start..end] {
                // The right run's element goes first only when strictly less: stability.
                let take_right = right < end && (left == middle || less(order[right], order[left]));
                if take_right {
                    *slot = order[right];
                    right += 1;
                } else {
                    *slot = order[left];
                    left += 1;
                }
            }
            start = end;
        }
        std::mem::swap(&mut order, &mut merged);
        width *= 2;
    }
    order
}

/// Sorts `items` stably by `key` (computed once per element, as `sort_by_cached_key` does).
pub fn sort_by_key<T, K: Ord>(items: &mut Vec<T>, key: impl Fn(&T) -> K) {
    let keys: Vec<K> = items.iter().map(key).collect();
    let order = stable_order(keys.len(), &mut |a, b| keys[a] < keys[b]);
    permute(items, &order);
}

/// Sorts `items` stably by `compare`.
pub fn sort_by<T>(items: &mut Vec<T>, mut compare: impl FnMut(&T, &T) -> Ordering) {
    let order =
        stable_order(items.len(), &mut |a, b| compare(&items[a], &items[b]) == Ordering::Less);
    permute(items, &order);
}

/// Sorts `items` stably in their natural order.
pub fn sort<T: Ord>(items: &mut Vec<T>) {
    sort_by(items, T::cmp);
}

/// Reorders `items` so that position `i` holds the element that was at `order[i]` (`order` is a
/// permutation of the positions).
fn permute<T>(items: &mut Vec<T>, order: &[usize]) {
    let mut taken: Vec<Option<T>> = items.drain(..).map(Some).collect();
    items.extend(order.iter().filter_map(|&from| taken[from].take()));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (the crate has no randomness).
    fn pseudo_random(seed: u64, len: usize, range: u64) -> Vec<u64> {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % range
            })
            .collect()
    }

    #[test]
    fn agrees_with_the_standard_stable_sort_at_every_length() {
        for len in 0..70 {
            for (seed, range) in [(1, 3), (2, 1000), (3, 1), (len as u64 + 7, 10)] {
                // Pairs (key, original position): equal keys must keep their order.
                let values = pseudo_random(seed, len, range);
                let mut expected: Vec<(u64, usize)> = values.iter().copied().zip(0..).collect();
                let mut ours = expected.clone();
                expected.sort_by_key(|&(key, _)| key);
                sort_by_key(&mut ours, |&(key, _)| key);
                assert_eq!(ours, expected, "len {len} seed {seed}");

                let mut descending = values.clone();
                sort_by(&mut descending, |a, b| b.cmp(a));
                let mut std_descending = values.clone();
                std_descending.sort_by(|a, b| b.cmp(a));
                assert_eq!(descending, std_descending);

                let mut natural = values.clone();
                sort(&mut natural);
                let mut std_natural = values;
                std_natural.sort();
                assert_eq!(natural, std_natural);
            }
        }
    }

    #[test]
    fn large_inputs_sorted_and_stable() {
        let values = pseudo_random(42, 10_000, 50);
        let mut pairs: Vec<(u64, usize)> = values.into_iter().zip(0..).collect();
        sort_by_key(&mut pairs, |&(key, _)| key);
        assert!(pairs.windows(2).all(|w| w[0] <= w[1]), "sorted by key, then position");
    }

    #[test]
    fn order_of_positions() {
        let values = [3, 1, 2, 1];
        let order = stable_order(values.len(), &mut |a, b| values[a] < values[b]);
        assert_eq!(order, [1, 3, 2, 0]);
    }
}
