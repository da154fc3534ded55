//! Shrinking 8-bit pixels by area averaging: each new pixel is the mean of
//! the part of the picture it covers, which is what downscaling by a
//! large factor wants (no aliasing, no ringing).
//!
//! Separable and in fixed point: rows first, accumulating whole source
//! rows into a row of sums (a loop the compiler vectorizes), then columns
//! over the few rows left. A 12-megapixel photo shrinks in a few
//! milliseconds, where the `image` crate's generic `thumbnail` takes tens.

/// The fixed-point one: each output's weights sum to exactly this.
const ONE: u32 = 1 << 14;

/// `src`, `width`×`height` pixels of `channels` (1 to 4) interleaved 8-bit
/// channels, shrunk to `new_width`×`new_height` (none zero).
pub fn shrink(src: &[u8], from: (usize, usize), channels: usize, to: (usize, usize)) -> Vec<u8> {
    match channels {
        1 => shrink_n::<1>(src, from, to),
        2 => shrink_n::<2>(src, from, to),
        3 => shrink_n::<3>(src, from, to),
        _ => shrink_n::<4>(src, from, to),
    }
}

fn shrink_n<const N: usize>(
    src: &[u8],
    (width, height): (usize, usize),
    (new_width, new_height): (usize, usize),
) -> Vec<u8> {
    debug_assert_eq!(src.len(), width * height * N);
    let row_len = width * N;
    // Rows: each output row is the weighted sum of the source rows it
    // covers, whole rows at a time.
    let mut rows = vec![0u8; new_height * row_len];
    let mut sums = vec![0u32; row_len];
    let down = Taps::new(height, new_height);
    for (y, out) in rows.chunks_exact_mut(row_len).enumerate() {
        sums.fill(0);
        let (first, weights) = down.of(y);
        for (k, &weight) in weights.iter().enumerate() {
            let row = &src[(first + k) * row_len..(first + k + 1) * row_len];
            for (sum, &v) in sums.iter_mut().zip(row) {
                *sum += u32::from(v) * weight;
            }
        }
        for (o, &sum) in out.iter_mut().zip(&sums) {
            *o = ((sum + ONE / 2) / ONE) as u8;
        }
    }
    // Columns, over the rows left.
    let across = Taps::new(width, new_width);
    let mut out = vec![0u8; new_width * new_height * N];
    for (row, line) in rows
        .chunks_exact(row_len)
        .zip(out.chunks_exact_mut(new_width * N))
    {
        for (x, pixel) in line.chunks_exact_mut(N).enumerate() {
            let (first, weights) = across.of(x);
            let mut sum = [0u32; N];
            let covered = &row[first * N..(first + weights.len()) * N];
            for (source, &weight) in covered.chunks_exact(N).zip(weights) {
                for c in 0..N {
                    sum[c] += u32::from(source[c]) * weight;
                }
            }
            for c in 0..N {
                pixel[c] = ((sum[c] + ONE / 2) / ONE) as u8;
            }
        }
    }
    out
}

/// For each of the outputs along an axis: the first input it covers and
/// the weights of the inputs from there (the share of the output each
/// covers, summing to [`ONE`]), all in two flat lists.
struct Taps {
    first: Vec<usize>,
    ends: Vec<usize>,
    weights: Vec<u32>,
}

impl Taps {
    /// The taps of `to` outputs over `from` inputs.
    fn new(from: usize, to: usize) -> Taps {
        let mut taps = Taps {
            first: Vec::with_capacity(to),
            ends: Vec::with_capacity(to),
            weights: Vec::with_capacity(to * (from / to + 2)),
        };
        // In units of 1/(from·to): input i spans [i·to, (i+1)·to), output
        // o spans [o·from, (o+1)·from).
        for o in 0..to {
            let (start, end) = (o * from, (o + 1) * from);
            let at = taps.weights.len();
            let mut first = None;
            for i in start / to..end.div_ceil(to) {
                let overlap = end.min((i + 1) * to) - start.max(i * to);
                let weight = (overlap as u64 * u64::from(ONE) / from as u64) as u32;
                if weight > 0 || first.is_some() {
                    first.get_or_insert(i);
                    taps.weights.push(weight);
                }
            }
            // Rounding down loses a little: the largest tap takes it back.
            let mine = &mut taps.weights[at..];
            let missing = ONE - mine.iter().sum::<u32>();
            if let Some(largest) = mine.iter_mut().max() {
                *largest += missing;
            }
            taps.first.push(first.unwrap_or(start / to));
            taps.ends.push(taps.weights.len());
        }
        taps
    }

    /// Output `o`'s first input and weights.
    fn of(&self, o: usize) -> (usize, &[u32]) {
        let start = if o == 0 { 0 } else { self.ends[o - 1] };
        (self.first[o], &self.weights[start..self.ends[o]])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_output_is_the_mean_of_what_it_covers() {
        // 4×2 grey: halving each side averages 2×2 blocks.
        let src = [0, 100, 200, 40, 20, 60, 0, 80];
        assert_eq!(shrink(&src, (4, 2), 1, (2, 1)), vec![45, 80]);
        // 3 → 2: each output covers one and a half inputs.
        assert_eq!(shrink(&[0, 90, 180], (3, 1), 1, (2, 1)), vec![30, 150]);
        // The same size is a copy; channels stay apart.
        let rgb = [10, 20, 30, 40, 50, 60];
        assert_eq!(shrink(&rgb, (2, 1), 3, (2, 1)), rgb.to_vec());
        assert_eq!(shrink(&rgb, (2, 1), 3, (1, 1)), vec![25, 35, 45]);
        // A flat picture stays flat at any ratio.
        let flat = vec![77u8; 97 * 61 * 2];
        let out = shrink(&flat, (97, 61), 2, (13, 7));
        assert_eq!(out.len(), 13 * 7 * 2);
        assert!(out.iter().all(|&v| v == 77), "{out:?}");
        for (from, to) in [
            (4032, 1238),
            (3024, 928),
            (7, 3),
            (5, 5),
            (1, 1),
            (2016, 1238),
        ] {
            let taps = Taps::new(from, to);
            for o in 0..to {
                let (first, weights) = taps.of(o);
                assert_eq!(weights.iter().sum::<u32>(), ONE, "{from}->{to}");
                assert!(first + weights.len() <= from, "{from}->{to}: {o}");
            }
        }
    }
}
