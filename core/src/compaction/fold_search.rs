//! Choosing how far one rolling step may fold: the largest safe cut whose compactor input fits.
//!
//! The input for a fold `events[start..cut]` only grows with `cut` (more events, never fewer
//! non-omittable lines), so "the input fits" is monotone over the ascending candidate cuts and a
//! galloping search finds the largest fitting one with `O(log k)` builds, most of them of small
//! folds: one build of the whole target first (the common case), then the smallest candidate,
//! then doubling steps from the last fit and a binary search in the last gap.

/// The largest of `candidates` (ascending) for which `build` succeeds, with what it built; when
/// none does, the error of the smallest candidate; `None` without candidates. Only errors for
/// which `too_large` holds mean "try a smaller fold": any other error of the whole target is
/// returned as it is (an invalid input does not become valid by folding less).
pub(crate) fn largest_fitting<T, E>(
    candidates: &[usize],
    mut build: impl FnMut(usize) -> Result<T, E>,
    too_large: impl Fn(&E) -> bool,
) -> Option<Result<(usize, T), E>> {
    let (&last, rest) = candidates.split_last()?;
    let last_error = match build(last) {
        Ok(built) => return Some(Ok((last, built))),
        Err(error) => error,
    };
    if rest.is_empty() || !too_large(&last_error) {
        return Some(Err(last_error));
    }
    let mut best = match build(candidates[0]) {
        Ok(built) => (0, built),
        Err(error) => return Some(Err(error)),
    };
    // Invariant: candidates[best.0] fits, candidates[fail] does not.
    let mut fail = candidates.len() - 1;
    let mut step = 1;
    while best.0 + step < fail {
        let probe = best.0 + step;
        match build(candidates[probe]) {
            Ok(built) => {
                best = (probe, built);
                step *= 2;
            }
            Err(_) => {
                fail = probe;
                break;
            }
        }
    }
    while fail - best.0 > 1 {
        let probe = best.0 + (fail - best.0) / 2;
        match build(candidates[probe]) {
            Ok(built) => best = (probe, built),
            Err(_) => fail = probe,
        }
    }
    Some(Ok((candidates[best.0], best.1)))
}

#[cfg(test)]
mod tests {
    use super::largest_fitting;

    fn search(candidates: &[usize], limit: usize) -> (Option<Result<usize, usize>>, usize) {
        let mut builds = 0;
        let build = |cut| {
            builds += 1;
            if cut <= limit { Ok(cut) } else { Err(cut) }
        };
        let result = largest_fitting(candidates, build, |_| true).map(|r| {
            r.map(|(cut, built)| {
                assert_eq!(cut, built);
                cut
            })
        });
        (result, builds)
    }

    #[test]
    fn finds_the_largest_fitting_cut_for_every_limit() {
        let candidates: Vec<usize> = (1..=100).map(|i| i * 3).collect();
        for limit in 0..320 {
            let expected = candidates.iter().copied().filter(|&c| c <= limit).max();
            let (found, builds) = search(&candidates, limit);
            match expected {
                Some(cut) => assert_eq!(found, Some(Ok(cut)), "limit {limit}"),
                None => assert_eq!(found, Some(Err(3)), "limit {limit}"),
            }
            assert!(builds <= 2 + 2 * 8, "limit {limit}: {builds} builds");
        }
    }

    #[test]
    fn an_error_other_than_size_is_returned_without_searching() {
        let result =
            largest_fitting(&[1, 2, 3], |cut| if cut < 3 { Ok(()) } else { Err(cut) }, |_| false);
        assert_eq!(result, Some(Err(3)));
    }

    #[test]
    fn whole_target_first_and_no_candidates() {
        assert_eq!(search(&[5, 9], 100), (Some(Ok(9)), 1));
        assert_eq!(search(&[9], 3), (Some(Err(9)), 1));
        assert_eq!(search(&[], 3).0, None);
    }
}
