//! JSON numbers to `serde_json::Number`, without serde_json's number parser.
//!
//! A float is the decimal's value correctly rounded to the nearest `f64` (ties to even), which
//! is what serde_json (with `float_roundtrip`) and Rust's `str::parse` give. Most floats a log
//! holds (`0.5`, `1.25e3`) are exact enough for one IEEE multiplication or division (Clinger's
//! fast path); any other is found by a binary search over the `f64` bit patterns, each step an
//! exact big-integer comparison of the decimal with the midpoint between two neighbouring
//! doubles: slow (about 63 comparisons) but small, with no tables of powers. serde_json's own
//! float parser (its tables and bignum code) was about 13 KB of the npm module's gzip.
//! Integers follow serde_json's rules: `u64` when non-negative, `i64` when negative, a float
//! beyond those (and `-0`, which is the float `-0.0`).

use std::cmp::Ordering;

use serde_json::Number;

/// Why a number's text is not a JSON number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumberError {
    /// Not the JSON number grammar.
    Invalid,
    /// A float beyond `f64`'s range.
    OutOfRange,
}

/// The number `token` holds (JSON's grammar, the whole token), as serde_json reads it.
pub(crate) fn parse_number(token: &[u8]) -> Result<Number, NumberError> {
    let (negative, rest) = match token {
        [b'-', rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let int_len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let (int, mut rest) = rest.split_at(int_len);
    if int.is_empty() || (int[0] == b'0' && int.len() > 1) {
        return Err(NumberError::Invalid);
    }
    let mut fraction: &[u8] = &[];
    if let [b'.', after @ ..] = rest {
        let len = after.iter().take_while(|b| b.is_ascii_digit()).count();
        if len == 0 {
            return Err(NumberError::Invalid);
        }
        (fraction, rest) = after.split_at(len);
    }
    let mut exponent: i64 = 0;
    let has_exponent = matches!(rest, [b'e' | b'E', ..]);
    if has_exponent {
        let (sign, digits) = match &rest[1..] {
            [b'-', digits @ ..] => (-1, digits),
            [b'+', digits @ ..] => (1, digits),
            digits => (1, digits),
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
            return Err(NumberError::Invalid);
        }
        let magnitude =
            digits.iter().fold(0i64, |n, d| (n * 10 + i64::from(d - b'0')).min(1 << 40));
        exponent = sign * magnitude;
        rest = &[];
    }
    if !rest.is_empty() {
        return Err(NumberError::Invalid);
    }
    if fraction.is_empty() && !has_exponent {
        return integer(negative, int);
    }
    let mut digits = Vec::with_capacity(int.len() + fraction.len());
    digits.extend_from_slice(int);
    digits.extend_from_slice(fraction);
    float(negative, decimal_to_f64(&digits, exponent - fraction.len() as i64))
}

/// The float `magnitude` with its sign; out of range when it is infinite.
fn float(negative: bool, magnitude: f64) -> Result<Number, NumberError> {
    let value = if negative { -magnitude } else { magnitude };
    Number::from_f64(value).ok_or(NumberError::OutOfRange)
}

/// An integer without fraction or exponent, as serde_json types it: `u64`, negative `i64`, else
/// a float (`-0` and anything beyond those ranges).
fn integer(negative: bool, digits: &[u8]) -> Result<Number, NumberError> {
    let exact =
        digits.iter().try_fold(0u64, |n, d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')));
    match (exact, negative) {
        (Some(n), false) => Ok(Number::from(n)),
        (Some(n), true) => match (n as i64).wrapping_neg() {
            negated if negated < 0 => Ok(Number::from(negated)),
            _ => float(true, n as f64),
        },
        (None, _) => float(negative, decimal_to_f64(digits, 0)),
    }
}

/// Significant digits read exactly; the rest only count as nonzero (see [`decimal_to_f64`]).
const MAX_DIGITS: usize = 800;

/// `digits × 10^exponent` (ASCII digits) correctly rounded; infinity beyond `f64::MAX`.
pub(crate) fn decimal_to_f64(digits: &[u8], exponent: i64) -> f64 {
    let start = digits.iter().take_while(|d| **d == b'0').count();
    let digits = &digits[start..];
    let end = digits.iter().rposition(|d| *d != b'0').map_or(0, |last| last + 1);
    let exponent = exponent + (digits.len() - end) as i64;
    let digits = &digits[..end];
    if digits.is_empty() {
        return 0.0;
    }
    if digits.len() > MAX_DIGITS {
        // A midpoint between two doubles has at most 767 significant digits, so the value
        // truncated to MAX_DIGITS - 1 digits with a sticky `1` after (any digit dropped is nonzero: the
        // trailing zeros are gone) is on the same side of every midpoint.
        let mut kept = digits[..MAX_DIGITS - 1].to_vec();
        kept.push(b'1');
        return decimal_to_f64(&kept, exponent + (digits.len() - MAX_DIGITS) as i64);
    }
    // The value lies in [10^(magnitude - 1), 10^magnitude).
    let magnitude = digits.len() as i64 + exponent;
    if magnitude > 310 {
        return f64::INFINITY;
    }
    if magnitude < -324 {
        return 0.0;
    }
    if digits.len() <= 15 && (-22..=22).contains(&exponent) {
        let w = digits.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')) as f64;
        let scale = (0..exponent.unsigned_abs()).fold(1.0f64, |p, _| p * 10.0);
        return if exponent >= 0 { w * scale } else { w / scale };
    }
    nearest_by_search(digits, exponent)
}

/// The binary search of [`decimal_to_f64`]'s slow path: the smallest bit pattern whose upper
/// midpoint the value is below (or on, for an even pattern).
fn nearest_by_search(digits: &[u8], exponent: i64) -> f64 {
    let exponent = exponent as i32;
    let mut decimal = Big::from_digits(digits);
    decimal.mul_pow5(exponent.max(0) as u32);
    let five_powers = {
        let mut power = Big(vec![1]);
        power.mul_pow5((-exponent).max(0) as u32);
        power
    };
    let below_midpoint = |bits: u64| {
        // The midpoint between the double of `bits` and the next: (2M + 1) × 2^(E - 1).
        let (fraction, biased) = (bits & ((1 << 52) - 1), (bits >> 52) as i32);
        let (mantissa, power) = match biased {
            0 => (fraction, -1074),
            _ => (fraction | (1 << 52), biased - 1075),
        };
        let midpoint = five_powers.mul_u64(2 * mantissa + 1);
        // decimal × 2^exponent against midpoint × 2^(power - 1).
        let shift = exponent - (power - 1);
        let order = match shift >= 0 {
            true => decimal.shifted(shift as u32).compare(&midpoint),
            false => decimal.compare(&midpoint.shifted((-shift) as u32)),
        };
        order == Ordering::Less || (order == Ordering::Equal && bits & 1 == 0)
    };
    let (mut low, mut high) = (0u64, f64::INFINITY.to_bits());
    while low < high {
        let middle = low + (high - low) / 2;
        if below_midpoint(middle) {
            high = middle;
        } else {
            low = middle + 1;
        }
    }
    f64::from_bits(low)
}

/// A non-negative big integer: 32-bit limbs, least significant first.
#[derive(Debug, Clone)]
struct Big(Vec<u32>);

impl Big {
    fn from_digits(digits: &[u8]) -> Self {
        let mut big = Big(vec![0]);
        for chunk in digits.chunks(9) {
            let value = chunk.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
            big.mul_add(10u32.pow(chunk.len() as u32), value);
        }
        big
    }

    /// `self × factor + addend`.
    fn mul_add(&mut self, factor: u32, addend: u32) {
        let mut carry = u64::from(addend);
        for limb in &mut self.0 {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    fn mul_pow5(&mut self, mut power: u32) {
        while power > 0 {
            let step = power.min(13);
            self.mul_add(5u32.pow(step), 0);
            power -= step;
        }
    }

    /// `self × factor`.
    fn mul_u64(&self, factor: u64) -> Self {
        let mut high = self.clone();
        high.mul_add((factor >> 32) as u32, 0);
        high.0.insert(0, 0);
        let mut low = self.clone();
        low.mul_add(factor as u32, 0);
        let mut carry = 0u64;
        for (index, limb) in high.0.iter_mut().enumerate() {
            let sum = u64::from(*limb) + u64::from(low.0.get(index).copied().unwrap_or(0)) + carry;
            *limb = sum as u32;
            carry = sum >> 32;
        }
        if carry > 0 {
            high.0.push(carry as u32);
        }
        high
    }

    /// `self × 2^bits`.
    fn shifted(&self, bits: u32) -> Self {
        let (limbs, bits) = ((bits / 32) as usize, bits % 32);
        let mut out = vec![0u32; limbs];
        let mut carry = 0u32;
        for &limb in &self.0 {
            out.push(if bits == 0 { limb } else { (limb << bits) | carry });
            carry = if bits == 0 { 0 } else { limb >> (32 - bits) };
        }
        out.push(carry);
        Big(out)
    }

    fn compare(&self, other: &Self) -> Ordering {
        let significant = |limbs: &[u32]| limbs.iter().rposition(|l| *l != 0).map_or(0, |i| i + 1);
        let (a, b) = (&self.0[..significant(&self.0)], &other.0[..significant(&other.0)]);
        a.len().cmp(&b.len()).then_with(|| a.iter().rev().cmp(b.iter().rev()))
    }
}

#[cfg(test)]
#[path = "decimal_tests.rs"]
mod tests;
