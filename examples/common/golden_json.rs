//! A const-fn reader of the golden JSON format: the files are turned into Rust data at
//! compile time, so the firmware reads no files.
//!
//! Shared by the firmware examples (`#[path]` modules of `cortex_m4.rs` and `cortex_m0.rs`).

// Parsing half a megabyte in `const` takes the compiler a few seconds: not a loop.
#![allow(long_running_const_eval)]

/// Index just past the first `"key":` of the file.
///
/// A Horspool search: the window of the pattern's length moves by how far its last byte lies
/// from the pattern's end, so the number arrays before a key (up to half a megabyte) are
/// passed about a dozen bytes a step. (Constant evaluation pays for every statement: with a
/// scan byte by byte and `is_ascii_digit` calls in [`number`], `cargo check` of the
/// Cortex-M4F example took 13 s, against 4.8 s now; CI compiles it six times.)
pub const fn after_key(json: &[u8], key: &[u8]) -> usize {
    // The pattern `"key":`, of `m` bytes.
    let m = key.len() + 3;
    // The shift for each last byte of a window: its distance from the pattern's end, at its
    // last place before the end; the whole length for a byte the pattern lacks.
    let mut shift = [m; 256];
    let mut k = 0;
    while k + 1 < m {
        shift[pattern_byte(key, k) as usize] = m - 1 - k;
        k += 1;
    }
    let mut i = 0;
    while i + m <= json.len() {
        let last = json[i + m - 1];
        if last == b':' {
            let mut k = 0;
            while k < m && json[i + k] == pattern_byte(key, k) {
                k += 1;
            }
            if k == m {
                return i + m;
            }
        }
        i += shift[last as usize];
    }
    panic!("a key is missing from the golden file")
}

/// Byte `k` of the pattern `"key":`.
const fn pattern_byte(key: &[u8], k: usize) -> u8 {
    if k == 0 || k == key.len() + 1 {
        b'"'
    } else if k == key.len() + 2 {
        b':'
    } else {
        key[k - 1]
    }
}

const fn skip_spaces(json: &[u8], mut i: usize) -> usize {
    while json[i] == b' ' || json[i] == b'\n' {
        i += 1;
    }
    i
}

/// Whether the string value of `key` is `value`.
pub const fn string_is(json: &[u8], key: &[u8], value: &[u8]) -> bool {
    let i = skip_spaces(json, after_key(json, key));
    if json[i] != b'"' || json[i + 1 + value.len()] != b'"' {
        return false;
    }
    let mut j = 0;
    while j < value.len() {
        if json[i + 1 + j] != value[j] {
            return false;
        }
        j += 1;
    }
    true
}

/// `10^k`, exact for `k ≤ 22`.
const POW10: [f64; 23] = {
    let mut p = [1.0; 23];
    let mut k = 1;
    while k < 23 {
        p[k] = p[k - 1] * 10.0;
        k += 1;
    }
    p
};

/// The json number at `i` and the index after it. Up to 19 significant digits are
/// kept, scaled by exact powers of ten: within a few f64 ulps, so the `f32` values
/// (stored as exact doubles) come out exact.
pub const fn number(json: &[u8], i: usize) -> (f64, usize) {
    let mut i = skip_spaces(json, i);
    let negative = json[i] == b'-';
    if negative {
        i += 1;
    }
    let (mut mantissa, mut digits, mut exp10, mut fraction) = (0u64, 0, 0i32, false);
    loop {
        let c = json[i];
        // Not `is_ascii_digit`: a call per digit.
        if b'0' <= c && c <= b'9' {
            if digits < 19 {
                mantissa = mantissa * 10 + (c - b'0') as u64;
                if mantissa != 0 {
                    digits += 1;
                }
                if fraction {
                    exp10 -= 1;
                }
            } else if !fraction {
                exp10 += 1;
            }
        } else if c == b'.' && !fraction {
            fraction = true;
        } else {
            break;
        }
        i += 1;
    }
    assert!(
        digits > 0 || mantissa == 0,
        "not a number in the golden file"
    );
    if json[i] == b'e' || json[i] == b'E' {
        i += 1;
        let negative_exp = json[i] == b'-';
        if json[i] == b'-' || json[i] == b'+' {
            i += 1;
        }
        let mut e = 0i32;
        while json[i].is_ascii_digit() {
            e = e * 10 + (json[i] - b'0') as i32;
            i += 1;
        }
        exp10 += if negative_exp { -e } else { e };
    }
    let mut value = mantissa as f64;
    while exp10 > 0 {
        let k = if exp10 > 22 { 22 } else { exp10 };
        value *= POW10[k as usize];
        exp10 -= k;
    }
    while exp10 < 0 {
        let k = if exp10 < -22 { 22 } else { -exp10 };
        value /= POW10[k as usize];
        exp10 += k;
    }
    (if negative { -value } else { value }, i)
}

/// Calls `visit` for each number of the (nested) array value of `key`; returns how
/// many there are. Written as a macro-free loop over a callback-free state, so it
/// runs in `const`: `N = 0` counts only.
const fn scan<const N: usize>(json: &[u8], key: &[u8]) -> ([f32; N], usize) {
    let mut out = [0f32; N];
    let mut i = skip_spaces(json, after_key(json, key));
    assert!(json[i] == b'[', "the golden value is not an array");
    let (mut depth, mut n) = (0, 0);
    loop {
        match json[i] {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            b',' | b' ' | b'\n' => {}
            _ => {
                let (value, next) = number(json, i);
                if N > 0 {
                    out[n] = value as f32;
                }
                n += 1;
                i = next;
                continue;
            }
        }
        i += 1;
    }
    (out, n)
}

/// Numbers in the array value of `key`.
pub const fn count(json: &[u8], key: &[u8]) -> usize {
    scan::<0>(json, key).1
}

/// The array value of `key`, flattened; it must hold exactly `N` numbers.
pub const fn floats<const N: usize>(json: &[u8], key: &[u8]) -> [f32; N] {
    let (out, n) = scan::<N>(json, key);
    assert!(n == N, "unexpected length of a golden array");
    out
}
