//! The standard library's stable sort, instantiated once for the whole crate.
//!
//! `slice::sort_by` is generic over the element and the comparison, so each call site gets its
//! own copy of driftsort (5 to 10 KB of wasm each); in the npm package's module one `sort_by`
//! per call site cost 30 KB raw (`git show 01261fa:docs/performance.md`, "Cold types back to
//! serde derives"). Here std sorts positions through one `dyn` comparison, and the items are
//! then moved to their sorted places.

use std::cmp::Ordering;

/// Sorts `items` stably by `compare` (as `slice::sort_by` does).
pub(crate) fn sort_by<T>(items: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    let order = sorted_positions(items.len(), &mut |a, b| compare(&items[a], &items[b]));
    // `items[i]` becomes the item at `order[i]`: follow each position to where that item now is.
    for i in 0..order.len() {
        let mut from = order[i];
        while from < i {
            from = order[from];
        }
        items.swap(i, from);
    }
}

/// Sorts `items` stably by `key` (as `slice::sort_by_key` does).
pub(crate) fn sort_by_key<T, K: Ord>(items: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(items, |a, b| key(a).cmp(&key(b)));
}

/// Sorts `items` stably (as `slice::sort` does).
pub(crate) fn sort<T: Ord>(items: &mut [T]) {
    sort_by(items, T::cmp);
}

/// The positions `0..len` in the stable order of `compare`: the one instance of std's sort.
#[inline(never)]
fn sorted_positions(len: usize, compare: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&a, &b| compare(a, b));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_as_std_sorts_stably() {
        for len in 0..40usize {
            let items: Vec<(u8, usize)> = (0..len).map(|i| (((i * 7919) % 5) as u8, i)).collect();
            let (mut ours, mut std) = (items.clone(), items);
            sort_by_key(&mut ours, |item| item.0);
            std.sort_by_key(|item| item.0);
            assert_eq!(ours, std);
        }
    }
}
