//! The vectors recall by meaning compares: how they are stored (one
//! little-endian f32 BLOB per item, normalized to length 1, beside the
//! model that made it, in `embeddings`) and how they are searched.
//!
//! Brute force, on purpose: cosine similarity over every candidate. The
//! messages' vectors (the many: 100,000 of 768 numbers are 300 MB as
//! f32) are kept in memory as i8 codes with a scale each, a quarter of
//! the size, read from the table once and then only what is newer
//! (`seq`); an i8 dot product over all of them takes milliseconds
//! (`docs/benchmarks.md`). A memory's or a scratchpad entry's vectors
//! are few per agent and read from the table at each search.

use std::collections::HashMap;

use rusqlite::{Connection, params};

/// A vector as stored: its numbers as little-endian f32.
pub fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector's numbers; `None` when the BLOB is not whole f32s.
pub fn from_blob(blob: &[u8]) -> Option<Vec<f32>> {
    if blob.len() % 4 != 0 {
        return None;
    }
    Some(
        blob.chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    )
}

/// `vector` scaled to length 1, so a dot product is the cosine; `None`
/// for a vector of length 0 or one that is not finite.
pub fn normalized(vector: &[f32]) -> Option<Vec<f32>> {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    (norm.is_finite() && norm > 0.0).then(|| vector.iter().map(|x| x / norm).collect())
}

/// The dot product of two vectors of the same length.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The vectors of one agent's memories or scratchpad entries (`kind`)
/// most like `query` (normalized), at least `min` alike, best first.
pub fn notes_like(
    conn: &Connection,
    kind: &str,
    agent: i64,
    model: &str,
    query: &[f32],
    min: f32,
    k: usize,
) -> rusqlite::Result<Vec<(i64, f32)>> {
    let table = match kind {
        "memory" => "memory",
        _ => "scratchpad",
    };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT e.item_id, e.vector FROM embeddings e JOIN {table} n ON n.id = e.item_id \
         WHERE e.kind = ?1 AND e.model = ?2 AND n.agent_id = ?3"
    ))?;
    let rows = stmt.query_map(params![kind, model, agent], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, Vec<u8>>(1)?))
    })?;
    let mut scored = Vec::new();
    for row in rows {
        let (id, blob) = row?;
        if let Some(v) = from_blob(&blob).filter(|v| v.len() == query.len()) {
            let s = dot(&v, query);
            if s >= min {
                scored.push((id, s));
            }
        }
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored.truncate(k);
    Ok(scored)
}

/// The messages' vectors of one model, in memory as i8 codes.
#[derive(Default)]
pub struct MessageVectors {
    /// The numbers per vector (set by the first one read).
    dims: usize,
    /// The newest `embeddings.seq` read.
    seq: i64,
    /// Per vector: the message, its session's agent, its scale.
    ids: Vec<i64>,
    agents: Vec<i64>,
    scales: Vec<f32>,
    /// Every vector's codes, one after another.
    codes: Vec<i8>,
    /// Where each message's vector is (a message id freed by a delete
    /// and used again replaces the old vector).
    slots: HashMap<i64, usize>,
}

impl MessageVectors {
    /// How many vectors are held.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Reads the vectors of `model` stored since the last call, at most
    /// `limit` of them; returns how many rows it read.
    pub fn refresh(
        &mut self,
        conn: &Connection,
        model: &str,
        limit: i64,
    ) -> rusqlite::Result<usize> {
        // `+` keeps the planner off the (kind, item_id) index: the range
        // of `seq` is the one to walk, usually empty.
        let mut stmt = conn.prepare_cached(
            "SELECT e.seq, e.item_id, e.vector, s.agent_id FROM embeddings e \
             JOIN messages m ON m.id = e.item_id JOIN sessions s ON s.id = m.session_id \
             WHERE +e.kind = 'message' AND +e.model = ?1 AND e.seq > ?2 ORDER BY e.seq LIMIT ?3",
        )?;
        let mut rows = stmt.query(params![model, self.seq, limit])?;
        let mut read = 0;
        while let Some(row) = rows.next()? {
            let seq: i64 = row.get(0)?;
            self.seq = self.seq.max(seq);
            read += 1;
            let blob = row.get_ref(2)?.as_blob()?;
            let Some(vector) = from_blob(blob) else {
                continue;
            };
            if self.dims == 0 {
                self.dims = vector.len();
            }
            if vector.len() != self.dims || vector.is_empty() {
                continue;
            }
            let (scale, codes) = quantize(&vector);
            let id: i64 = row.get(1)?;
            let agent: i64 = row.get(3)?;
            match self.slots.get(&id) {
                Some(&slot) => {
                    self.agents[slot] = agent;
                    self.scales[slot] = scale;
                    self.codes[slot * self.dims..(slot + 1) * self.dims].copy_from_slice(&codes);
                }
                None => {
                    self.slots.insert(id, self.ids.len());
                    self.ids.push(id);
                    self.agents.push(agent);
                    self.scales.push(scale);
                    self.codes.extend_from_slice(&codes);
                }
            }
        }
        Ok(read)
    }

    /// The `k` messages most like `query` (normalized), at least `min`
    /// alike, best first; only agent `agent`'s when given.
    pub fn nearest(
        &self,
        query: &[f32],
        agent: Option<i64>,
        min: f32,
        k: usize,
    ) -> Vec<(i64, f32)> {
        if query.len() != self.dims || self.dims == 0 || k == 0 {
            return Vec::new();
        }
        let (q_scale, q) = quantize(query);
        let mut scored: Vec<(f32, usize)> = Vec::with_capacity(self.ids.len().min(1 << 16));
        for (slot, codes) in self.codes.chunks_exact(self.dims).enumerate() {
            if agent.is_some_and(|a| a != self.agents[slot]) {
                continue;
            }
            let s = dot_i8(&q, codes) as f32 * q_scale * self.scales[slot];
            if s >= min {
                scored.push((s, slot));
            }
        }
        let by_score = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0);
        if scored.len() > k {
            scored.select_nth_unstable_by(k - 1, by_score);
            scored.truncate(k);
        }
        scored.sort_by(by_score);
        scored
            .into_iter()
            .map(|(s, slot)| (self.ids[slot], s.min(1.0)))
            .collect()
    }
}

/// A vector as i8 codes and the scale that turns them back (`x ≈ code *
/// scale`): its largest magnitude maps to 127.
fn quantize(vector: &[f32]) -> (f32, Vec<i8>) {
    let max = vector.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (0.0, vec![0; vector.len()]);
    }
    let scale = max / 127.0;
    let codes = vector
        .iter()
        .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (scale, codes)
}

/// The dot product of two code vectors, in i32 (127² × 8,192 fits).
/// Sixteen lanes of i16 products summed into i32, over fixed-size
/// chunks, so the compiler vectorizes it (widening multiply-adds) with
/// no bounds checks inside.
#[inline]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    let mut lanes = [0_i32; 16];
    let (mut xs, mut ys) = (a.chunks_exact(16), b.chunks_exact(16));
    for (x, y) in (&mut xs).zip(&mut ys) {
        let (Ok(x), Ok(y)) = (<&[i8; 16]>::try_from(x), <&[i8; 16]>::try_from(y)) else {
            continue;
        };
        for i in 0..16 {
            lanes[i] += i32::from(i16::from(x[i]) * i16::from(y[i]));
        }
    }
    let rest: i32 = xs
        .remainder()
        .iter()
        .zip(ys.remainder())
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    lanes.iter().sum::<i32>() + rest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_round_trip_and_a_torn_one_is_refused() {
        let v = vec![0.25_f32, -1.5, 3.0e-8];
        assert_eq!(from_blob(&to_blob(&v)).unwrap(), v);
        assert_eq!(to_blob(&[1.0])[..], 1.0_f32.to_le_bytes());
        assert_eq!(from_blob(&[0, 0, 128]), None);
        assert_eq!(normalized(&[0.0, 0.0]), None);
        assert_eq!(normalized(&[3.0, 4.0]).unwrap(), vec![0.6, 0.8]);
    }

    #[test]
    fn quantized_cosines_stay_close_to_the_exact_ones() {
        let mut seed = 7_u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        for _ in 0..50 {
            let a = normalized(&(0..384).map(|_| next()).collect::<Vec<_>>()).unwrap();
            let b = normalized(&(0..384).map(|_| next()).collect::<Vec<_>>()).unwrap();
            let (sa, qa) = quantize(&a);
            let (sb, qb) = quantize(&b);
            let approx = dot_i8(&qa, &qb) as f32 * sa * sb;
            assert!(
                (approx - dot(&a, &b)).abs() < 0.02,
                "{approx} vs {}",
                dot(&a, &b)
            );
        }
    }
}

#[cfg(test)]
mod timing {
    use super::*;

    /// A timing, not a check: `cargo test --release -p hearth-data --lib
    /// timing -- --ignored --nocapture` prints one search's time over
    /// 100,000 vectors of 384 numbers (the dot products alone).
    #[test]
    #[ignore]
    fn nearest_over_100_000() {
        let dims = 384;
        let mut held = MessageVectors::default();
        let mut seed = 1_u64;
        held.dims = dims;
        for id in 0..100_000 {
            let v: Vec<f32> = (0..dims)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                })
                .collect();
            let (scale, codes) = quantize(&normalized(&v).unwrap());
            held.ids.push(id);
            held.agents.push(1);
            held.scales.push(scale);
            held.codes.extend_from_slice(&codes);
        }
        let q = normalized(&vec![0.1; dims]).unwrap();
        for min in [-1.0, 0.25] {
            let start = std::time::Instant::now();
            for _ in 0..20 {
                std::hint::black_box(held.nearest(&q, None, min, 30));
            }
            println!("min {min}: {:?} per search", start.elapsed() / 20);
        }
    }
}
