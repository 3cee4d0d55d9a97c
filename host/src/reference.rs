//! CPU references (rayon), the independent answers every kernel is checked
//! against.

use rayon::prelude::*;

use crate::error::{Error, Result};

/// Elements per rayon task: large enough that scheduling is negligible.
const CHUNK: usize = 1 << 16;

fn same_len(op: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got { Ok(()) } else { Err(Error::LengthMismatch { op, expected, got }) }
}

/// `dst[i] = src[i]`: the copy kernels' reference. The slices must have the
/// same length.
pub fn copy<T: Copy + Send + Sync>(src: &[T], dst: &mut [T]) -> Result<()> {
    same_len("reference::copy", dst.len(), src.len())?;
    dst.par_chunks_mut(CHUNK).zip(src.par_chunks(CHUNK)).for_each(|(d, s)| d.copy_from_slice(s));
    Ok(())
}

/// Index of the first element where `got` and `want` differ, with both
/// values: a readable failure for large arrays. The slices must have the
/// same length.
pub fn first_mismatch<T: PartialEq + Copy + Send + Sync>(got: &[T], want: &[T]) -> Result<Option<(usize, T, T)>> {
    same_len("reference::first_mismatch", want.len(), got.len())?;
    Ok(got.par_iter().zip(want.par_iter()).position_first(|(g, w)| g != w).map(|i| (i, got[i], want[i])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_matches_and_mismatch_is_found() {
        let src: Vec<u32> = (0..300_000u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let mut dst = vec![0u32; src.len()];
        copy(&src, &mut dst).unwrap();
        assert_eq!(first_mismatch(&dst, &src).unwrap(), None);
        dst[123_457] ^= 1;
        assert_eq!(first_mismatch(&dst, &src).unwrap(), Some((123_457, src[123_457] ^ 1, src[123_457])));
    }

    #[test]
    fn length_mismatch_is_an_error() {
        let e = copy(&[1u8, 2, 3], &mut [0u8; 2]).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { expected: 2, got: 3, .. }), "{e}");
        assert!(first_mismatch(&[1u8], &[1u8, 2]).is_err());
    }
}
