//! A JSON float's text to the nearest `f64` (ties to even), without the standard library's
//! parser: `str::parse::<f64>` carries a 10.4 KB table of powers of five (its Eisel-Lemire
//! step), about 3% of the npm module gzipped. Floats are rare in a log, so here a float is
//! exact in one IEEE operation when it can be (at most 15 significant digits and a power of ten
//! up to 10^22, both exact doubles: Clinger's fast path), else computed exactly with big
//! integers: the 53 bits of the quotient of the decimal by a power of two, and its remainder to
//! round. The results are `str::parse`'s (the tests compare both on generated decimals).

use std::cmp::Ordering;

/// The `f64` nearest to the JSON number `token` (grammar already checked), infinite when beyond
/// `f64`'s range.
pub(crate) fn parse_f64(token: &str) -> f64 {
    let (negative, token) = match token.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, token),
    };
    let (mantissa, exponent) = match token.find(['e', 'E']) {
        Some(at) => (&token[..at], &token[at + 1..]),
        None => (token, ""),
    };
    let (int, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The significant digits (no leading or trailing zeros) and the power of ten they scale by.
    let digits: Vec<u8> = int.bytes().chain(fraction.bytes()).map(|b| b - b'0').collect();
    let first = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
    let last = digits.iter().rposition(|&d| d != 0).map_or(first, |at| at + 1);
    let digits = &digits[first..last];
    let written_exponent = read_exponent(exponent);
    let trailing = i64::try_from(int.len() + fraction.len() - last).unwrap_or(i64::MAX);
    let scale = written_exponent
        .saturating_sub(i64::try_from(fraction.len()).unwrap_or(i64::MAX))
        .saturating_add(trailing);
    let magnitude = unsigned(digits, scale);
    if negative { -magnitude } else { magnitude }
}

/// The exponent's value, saturating (`1e99999999999999999999` is as infinite as `1e400`).
fn read_exponent(text: &str) -> i64 {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let value =
        digits.bytes().fold(0i64, |n, b| n.saturating_mul(10).saturating_add(i64::from(b - b'0')));
    if negative { -value } else { value }
}

/// Significant digits read exactly; any further ones only as a sticky last digit.
const MAX_DIGITS: usize = 800;

/// Exactly representable powers of ten.
const POWERS: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The nearest `f64` to `digits` × 10^`scale` (`digits`: decimal digit values, no leading zero).
fn unsigned(digits: &[u8], scale: i64) -> f64 {
    if digits.is_empty() {
        return 0.0;
    }
    // The value is below 10^(digits + scale) and at least 10^(digits + scale - 1).
    let order = scale.saturating_add(digits.len() as i64);
    if order > 310 {
        return f64::INFINITY;
    }
    if order < -325 {
        return 0.0;
    }
    if digits.len() <= 15 && scale.unsigned_abs() <= 22 {
        let mantissa = digits.iter().fold(0u64, |n, &d| n * 10 + u64::from(d)) as f64;
        let power = POWERS[scale.unsigned_abs() as usize];
        return if scale >= 0 { mantissa * power } else { mantissa / power };
    }
    // Beyond 800 digits only whether the rest is zero matters (767 digits decide any double's
    // rounding): the rest, never zero as trailing zeros are gone, becomes one sticky digit.
    // This also bounds the big integers whatever the text's length.
    let sticky: Vec<u8>;
    let (digits, scale) = if digits.len() > MAX_DIGITS {
        sticky = [&digits[..MAX_DIGITS], &[1]].concat();
        let dropped = i64::try_from(digits.len() - MAX_DIGITS).unwrap_or(i64::MAX);
        (&sticky[..], scale.saturating_add(dropped).saturating_sub(1))
    } else {
        (digits, scale)
    };
    // value = numerator / denominator, both integers.
    let mut numerator = Big::default();
    for &digit in digits {
        numerator.mul_add(10, u32::from(digit));
    }
    let mut denominator = Big::from(1);
    let ten_powers = if scale >= 0 { &mut numerator } else { &mut denominator };
    for _ in 0..scale.unsigned_abs() {
        ten_powers.mul_add(10, 0);
    }
    nearest(&numerator, &denominator)
}

/// The nearest `f64` to `numerator / denominator` (both non-zero).
fn nearest(numerator: &Big, denominator: &Big) -> f64 {
    // The binary exponent `k` with 2^52 <= value / 2^k < 2^53 (as low as subnormals go).
    let mut k = numerator.bits() as i64 - denominator.bits() as i64 - 53;
    let scaled = |k: i64| {
        let shift = |big: &Big, by: i64| big.shifted_left(by.max(0) as usize);
        (shift(numerator, -k), shift(denominator, k))
    };
    loop {
        let (n, d) = scaled(k);
        if n.compare(&d.shifted_left(53)) != Ordering::Less {
            k += 1;
        } else if n.compare(&d.shifted_left(52)) == Ordering::Less && k > -1074 {
            k -= 1;
        } else {
            break;
        }
    }
    k = k.max(-1074);
    let (mut remainder, divisor) = scaled(k);
    // Restoring division: the quotient has at most 53 bits.
    let mut quotient = 0u64;
    let mut step = divisor.shifted_left(52);
    for bit in (0..53).rev() {
        if remainder.compare(&step) != Ordering::Less {
            remainder.subtract(&step);
            quotient |= 1 << bit;
        }
        step.shift_right_one();
    }
    let round_up = match remainder.shifted_left(1).compare(&divisor) {
        Ordering::Greater => true,
        Ordering::Equal => quotient & 1 == 1,
        Ordering::Less => false,
    };
    if round_up {
        quotient += 1;
        if quotient == 1 << 53 {
            quotient >>= 1;
            k += 1;
        }
    }
    if k + 1075 > 2046 {
        return f64::INFINITY;
    }
    if quotient < 1 << 52 {
        return f64::from_bits(quotient); // subnormal (k = -1074), or the smallest normal
    }
    f64::from_bits((((k + 1075) as u64) << 52) | (quotient - (1 << 52)))
}

/// A non-negative big integer: 32-bit limbs, least significant first, no zero limb on top.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Big(Vec<u32>);

impl From<u32> for Big {
    fn from(value: u32) -> Self {
        let mut big = Big(vec![value]);
        big.trim();
        big
    }
}

impl Big {
    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    /// `self = self * factor + add`.
    fn mul_add(&mut self, factor: u32, add: u32) {
        let mut carry = u64::from(add);
        for limb in &mut self.0 {
            let product = u64::from(*limb) * u64::from(factor) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    /// Its number of significant bits.
    fn bits(&self) -> usize {
        self.0.last().map_or(0, |top| 32 * self.0.len() - top.leading_zeros() as usize)
    }

    fn shifted_left(&self, by: usize) -> Big {
        let (limbs, bits) = (by / 32, by % 32);
        let mut out = vec![0; limbs];
        let mut carry = 0u32;
        for &limb in &self.0 {
            out.push(if bits == 0 { limb } else { (limb << bits) | carry });
            carry = if bits == 0 { 0 } else { limb >> (32 - bits) };
        }
        out.push(carry);
        let mut big = Big(out);
        big.trim();
        big
    }

    fn shift_right_one(&mut self) {
        let mut carry = 0u32;
        for limb in self.0.iter_mut().rev() {
            let next = *limb & 1;
            *limb = (*limb >> 1) | (carry << 31);
            carry = next;
        }
        self.trim();
    }

    fn compare(&self, other: &Big) -> Ordering {
        self.0.len().cmp(&other.0.len()).then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }

    /// `self -= other` (`other <= self`).
    fn subtract(&mut self, other: &Big) {
        let mut borrow = 0i64;
        for (at, limb) in self.0.iter_mut().enumerate() {
            let difference =
                i64::from(*limb) - i64::from(other.0.get(at).copied().unwrap_or(0)) - borrow;
            borrow = i64::from(difference < 0);
            *limb = difference.rem_euclid(1 << 32) as u32;
        }
        self.trim();
    }
}

#[cfg(test)]
#[path = "float_tests.rs"]
mod tests;
