//! A small seeded generator: every case of a run follows from the run's
//! seed and the case's number, so a failure reproduces from the two
//! numbers the driver prints, without any state carried between cases.

/// SplitMix64: tiny, fast, and good enough to pick mutations.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for case `case` of the run seeded with `seed`.
    pub fn new(seed: u64, case: u64) -> Rng {
        let mut rng = Rng(seed ^ case.wrapping_mul(0xA076_1D64_78BD_642F));
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// One of `items` (which must not be empty).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// A copy of one of `items` (which must not be empty).
    pub fn choose<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }

    /// Cut points splitting `len` bytes into random chunks: sorted, each in
    /// `1..len`. Sometimes every byte alone, sometimes none at all.
    pub fn cuts(&mut self, len: usize) -> Vec<usize> {
        if len < 2 {
            return Vec::new();
        }
        let mut cuts: Vec<usize> = match self.below(8) {
            0 => (1..len).collect(),
            1 => Vec::new(),
            _ => (0..self.below(len.min(64)))
                .map(|_| 1 + self.below(len - 1))
                .collect(),
        };
        cuts.sort_unstable();
        cuts.dedup();
        cuts
    }
}
