//! Local memory (lesson 004, §5.3.2 "local memory"): an automatic array the
//! compiler cannot prove is indexed by constants lives in local memory —
//! per-thread memory in DRAM, cached in L1/L2 — and is read and written
//! with `ld.local`/`st.local` (SASS `LDL`/`STL`); `ptxas -v` reports it as
//! a stack frame.
//!
//! Both kernels build a per-thread histogram of [`BINS`] bins over a
//! grid-stride range of `data`, the bin of a value `v` being `(v >> shift)
//! % BINS`, and write it out:
//!
//! * `local_histogram_dynamic`: `hist[bin] += 1`. The index comes from the
//!   data, so the 16-word array stays in local memory: every element costs
//!   an `LDL` and an `STL`.
//! * `local_histogram_registers`: `hist[k] += (k == bin)` for every `k`, a
//!   loop the compiler unrolls; every index is then a constant and the
//!   array lives in 16 registers. Sixteen compares and adds per element
//!   instead of two local-memory accesses.
//!
//! Thread `t` of `T = gridDim.x · blockDim.x` threads counts the elements
//! `t, t + T, …` and writes bin `b` to `counts[b · T + t]` (consecutive
//! threads, consecutive words: coalesced).

/// Bins of the per-thread histogram.
pub const BINS: usize = 16;

/// Threads per block of the histogram kernels.
pub const THREADS: u32 = 256;

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::BINS;
    use crate::dev::grid::grid_stride;
    use crate::dev::index::{global_id_x, grid_threads_x};

    /// The bin of `v`.
    #[inline(always)]
    fn bin(v: u32, shift: u32) -> usize {
        v.wrapping_shr(shift) as usize % BINS
    }

    /// This thread's histogram of its grid-stride share of `data`, each
    /// element counted by `count(&mut hist, bin)`, written to `counts[b · T
    /// + t]` (`T` threads, `t` this one).
    ///
    /// # Safety
    /// `data` valid for `n` words; `counts` for `BINS · T` words,
    /// overlapping nothing.
    #[inline(always)]
    unsafe fn histogram(
        counts: *mut u32,
        data: *const u32,
        n: usize,
        shift: u32,
        count: impl Fn(&mut [u32; BINS], usize),
    ) {
        let mut hist = [0u32; BINS];
        for i in grid_stride(n) {
            // SAFETY: i < n.
            count(&mut hist, bin(unsafe { *data.add(i) }, shift));
        }
        let (t, threads) = (global_id_x(), grid_threads_x());
        for (b, &h) in hist.iter().enumerate() {
            // SAFETY: b·T + t < BINS·T (caller's contract).
            unsafe { *counts.add(b * threads + t) = h };
        }
    }

    /// Per-thread histogram indexed by the data: the array stays in local
    /// memory.
    ///
    /// # Safety
    /// `data` valid for `n` words; `counts` for `BINS · gridDim.x ·
    /// blockDim.x` words, overlapping nothing.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn local_histogram_dynamic(
        counts: *mut u32,
        data: *const u32,
        n: usize,
        shift: u32,
    ) {
        // SAFETY: forwarded to the caller's contract.
        unsafe { histogram(counts, data, n, shift, |hist, b| hist[b] += 1) }
    }

    /// The same histogram with constant indices only: the array lives in
    /// registers.
    ///
    /// # Safety
    /// As [`local_histogram_dynamic`].
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn local_histogram_registers(
        counts: *mut u32,
        data: *const u32,
        n: usize,
        shift: u32,
    ) {
        let count = |hist: &mut [u32; BINS], b: usize| {
            for (k, h) in hist.iter_mut().enumerate() {
                *h += (k == b) as u32;
            }
        };
        // SAFETY: forwarded to the caller's contract.
        unsafe { histogram(counts, data, n, shift, count) }
    }
}
