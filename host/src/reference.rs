//! CPU references (rayon), the independent answers every kernel is checked
//! against.

use rayon::prelude::*;

/// Elements per rayon task: large enough that scheduling is negligible.
const CHUNK: usize = 1 << 16;

/// `dst[i] = src[i]`: the copy kernels' reference.
///
/// # Panics
/// If the lengths differ (a bug in the caller's test, not an input error).
pub fn copy<T: Copy + Send + Sync>(src: &[T], dst: &mut [T]) {
    assert_eq!(src.len(), dst.len(), "reference::copy: length mismatch");
    dst.par_chunks_mut(CHUNK).zip(src.par_chunks(CHUNK)).for_each(|(d, s)| d.copy_from_slice(s));
}

/// Index of the first element where `got` and `want` differ, with both
/// values: a readable failure for large arrays.
///
/// # Panics
/// If the lengths differ.
pub fn first_mismatch<T: PartialEq + Copy + Send + Sync>(got: &[T], want: &[T]) -> Option<(usize, T, T)> {
    assert_eq!(got.len(), want.len(), "first_mismatch: length mismatch");
    got.par_iter().zip(want.par_iter()).position_first(|(g, w)| g != w).map(|i| (i, got[i], want[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_matches_and_mismatch_is_found() {
        let src: Vec<u32> = (0..300_000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let mut dst = vec![0u32; src.len()];
        copy(&src, &mut dst);
        assert_eq!(first_mismatch(&dst, &src), None);
        dst[123_457] ^= 1;
        assert_eq!(first_mismatch(&dst, &src), Some((123_457, src[123_457] ^ 1, src[123_457])));
    }
}
