//! Test data shared by the test binaries (`tests/backends.rs`, `tests/suite`): a
//! deterministic generator and the inputs every backend must treat like scalar. Each binary
//! uses part of it.
#![allow(dead_code)]

/// xorshift64*: deterministic, dependency-free (files add the draws they need).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [−4, 4).
    pub fn value(&mut self) -> f32 {
        ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0
    }

    pub fn values(&mut self, len: usize) -> Vec<f32> {
        (0..len).map(|_| self.value()).collect()
    }
}

/// [`Rng::value`]s, with NaN, infinities, zeros of both signs, subnormals and huge values
/// among them.
pub fn special_values(rng: &mut Rng, len: usize) -> Vec<f32> {
    const SPECIAL: [f32; 12] = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-40,
        -3e-39,
        f32::MIN_POSITIVE,
        1.5e-45,
        1e30,
        -2.5e36,
        1e-30,
    ];
    (0..len)
        .map(|_| {
            let r = rng.next();
            if r.is_multiple_of(5) {
                SPECIAL[(r >> 8) as usize % SPECIAL.len()]
            } else if r.is_multiple_of(7) {
                rng.value() * 1e-38
            } else {
                rng.value()
            }
        })
        .collect()
}
