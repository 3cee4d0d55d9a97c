//! Constant memory: broadcast against serialized reads (lesson 004,
//! "constant memory").
//!
//! A read of constant memory by a warp is split into as many requests as
//! the warp has *distinct* addresses: 32 lanes reading one address cost one
//! request (a broadcast), 32 lanes reading 32 addresses cost 32. Global
//! memory behaves the other way round for the same patterns: 32
//! consecutive words are one coalesced 128-byte request.
//!
//! Four kernels read the same [`TABLE_LEN`]-word table `iters` times per
//! thread and fold every value into a per-thread accumulator
//! ([`accumulate`], a data-dependent chain, so no read can be dropped); each
//! thread writes its one result.
//!
//! | kernel | table in | index of read `k` by thread `t` |
//! | --- | --- | --- |
//! | `constant_broadcast` | constant memory (`CONSTANT_TABLE`) | [`broadcast_index`]: the same for the 32 lanes of a warp |
//! | `constant_serialized` | constant memory | [`serialized_index`]: 32 consecutive, distinct words per warp |
//! | `global_broadcast` | global memory (a copy of the table) | [`broadcast_index`] |
//! | `global_serialized` | global memory | [`serialized_index`] |
//!
//! The index functions and the accumulator are compiled on the host too:
//! its CPU reference replays exactly what each thread computes.

/// Words in the table (1 KiB: well inside the constant cache, so the
/// figures measure the cache's request rate, not misses).
pub const TABLE_LEN: usize = 256;

/// Table entries between consecutive reads of one thread (odd, so a thread
/// cycles through the whole table).
pub const STEP: usize = 37;

/// Threads per warp.
pub const WARP: usize = 32;

/// Index of read `k` by global thread `t` in the broadcast pattern: a
/// function of the warp (`t / 32`) and `k` only, so every lane of a warp
/// reads the same word.
#[inline(always)]
pub const fn broadcast_index(t: usize, k: usize) -> usize {
    (k * STEP + t / WARP) % TABLE_LEN
}

/// Index of read `k` by global thread `t` in the serialized pattern: the
/// broadcast index plus the lane, so the 32 lanes of a warp read 32
/// distinct, consecutive words (mod [`TABLE_LEN`]).
#[inline(always)]
pub const fn serialized_index(t: usize, k: usize) -> usize {
    (k * STEP + t / WARP + t % WARP) % TABLE_LEN
}

/// The accumulator's start value for thread `t`.
#[inline(always)]
pub const fn seed(t: usize) -> u32 {
    (t as u32).wrapping_mul(0x9E37_79B9)
}

/// Folds value `v` into the accumulator: depends on both (and on the
/// order), so every read is needed for the result.
#[inline(always)]
pub const fn accumulate(acc: u32, v: u32) -> u32 {
    acc.rotate_left(5) ^ v
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{accumulate, broadcast_index, seed, serialized_index};
    use crate::dev::index::global_id_x;

    crate::constant_array!(
        /// The table of the constant-memory kernels, written by the host by
        /// name.
        pub CONSTANT_TABLE: [u32; 256], align 4, "u32"
    );

    const _: () = assert!(CONSTANT_TABLE::LEN == super::TABLE_LEN);

    /// Thread `t < n` folds `read(index(t, k))` for `k < iters` into its
    /// accumulator and writes it to `out[t]`.
    ///
    /// # Safety
    /// `out` valid for `n` words; `read` safe for every index `index`
    /// returns.
    #[inline(always)]
    unsafe fn fold(
        out: *mut u32,
        n: usize,
        iters: u32,
        index: impl Fn(usize, usize) -> usize,
        read: impl Fn(usize) -> u32,
    ) {
        let t = global_id_x();
        if t >= n {
            return;
        }
        let mut acc = seed(t);
        for k in 0..iters as usize {
            acc = accumulate(acc, read(index(t, k)));
        }
        // SAFETY: t < n.
        unsafe { *out.add(t) = acc };
    }

    /// Every lane of a warp reads the same constant word: one request per
    /// warp-access (a broadcast).
    ///
    /// # Safety
    /// `out` valid for `n` words.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn constant_broadcast(out: *mut u32, n: usize, iters: u32) {
        // SAFETY: same contract; `get` stays inside the table.
        unsafe { fold(out, n, iters, broadcast_index, CONSTANT_TABLE::get) }
    }

    /// The lanes of a warp read 32 distinct constant words: 32 requests per
    /// warp-access (serialized).
    ///
    /// # Safety
    /// `out` valid for `n` words.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn constant_serialized(out: *mut u32, n: usize, iters: u32) {
        // SAFETY: same contract; `get` stays inside the table.
        unsafe { fold(out, n, iters, serialized_index, CONSTANT_TABLE::get) }
    }

    /// The broadcast pattern on a copy of the table in global memory.
    ///
    /// # Safety
    /// `table` valid for `TABLE_LEN` words, `out` for `n`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn global_broadcast(table: *const u32, out: *mut u32, n: usize, iters: u32) {
        // SAFETY: indices are below TABLE_LEN; same contract.
        unsafe { fold(out, n, iters, broadcast_index, |i| *table.add(i)) }
    }

    /// The serialized pattern on a copy of the table in global memory (a
    /// warp's 32 consecutive words: one coalesced request, or two where the
    /// run wraps around the table's end).
    ///
    /// # Safety
    /// `table` valid for `TABLE_LEN` words, `out` for `n`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn global_serialized(table: *const u32, out: *mut u32, n: usize, iters: u32) {
        // SAFETY: indices are below TABLE_LEN; same contract.
        unsafe { fold(out, n, iters, serialized_index, |i| *table.add(i)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_is_warp_uniform_and_serialized_is_lane_distinct() {
        for warp in [0usize, 1, 7, 1000] {
            for k in [0usize, 1, 5, 300] {
                let first = broadcast_index(warp * WARP, k);
                let mut hits = [0u8; TABLE_LEN];
                for lane in 0..WARP {
                    let t = warp * WARP + lane;
                    assert_eq!(broadcast_index(t, k), first, "warp {warp} k {k} lane {lane}");
                    hits[serialized_index(t, k)] += 1;
                }
                assert!(first < TABLE_LEN);
                assert_eq!(hits.iter().filter(|&&h| h == 1).count(), WARP, "warp {warp} k {k}: lanes share a word");
            }
        }
    }

    #[test]
    fn a_thread_visits_the_whole_table() {
        let mut seen = [false; TABLE_LEN];
        for k in 0..TABLE_LEN {
            seen[broadcast_index(3, k)] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn the_accumulator_depends_on_every_value_and_their_order() {
        let a = accumulate(accumulate(seed(1), 10), 20);
        assert_ne!(a, accumulate(accumulate(seed(1), 20), 10));
        assert_ne!(a, accumulate(accumulate(seed(1), 10), 21));
        assert_ne!(seed(1), seed(2));
    }
}
