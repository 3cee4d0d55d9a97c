//! Matrix addition in three memory layouts, and `sum_matrix_2d` with the
//! block shape given at launch (lessons 003, "2D memory and pitched
//! memory", and 002 §3.7–3.9, "scalability", "checking memory operations",
//! "exposing more parallelism").
//!
//! Every kernel is elementwise `C = A + B` over an `nrow × ncol` (`ny × nx`)
//! matrix of `f32`, launched on a 2D grid with x along columns and y along
//! rows: adjacent threads of a warp take adjacent columns. What differs is
//! where element `(row, col)` lives:
//!
//! | kernel | element `(row, col)` at | a warp's 32 accesses |
//! | --- | --- | --- |
//! | `matrix_add_row_major`, `sum_matrix_2d` | `row * ncol + col` ([`row_major`]) | 128 contiguous bytes |
//! | `matrix_add_col_major` | `col * nrow + row` ([`col_major`]) | 32 addresses `4 · nrow` bytes apart |
//! | `matrix_add_pitched` | `row * pitch` bytes, then `col` elements ([`crate::dev::pitched`]) | 128 contiguous bytes, each row aligned |
//!
//! The lesson measured the column-major traversal 3.4× slower than the
//! row-major one (10000², RTX 2070) and the pitched one 1.4% faster.
//!
//! `sum_matrix_2d` is the lesson's `sumMatrixOnGPU2D`: one element per
//! thread, `ix < nx && iy < ny`. `sum_matrix_2d_x4` is the same
//! arithmetic with [`SUM_ITEMS`] elements per thread, `blockDim.x` columns
//! apart (still coalesced), all loads issued before the first store: more
//! bytes in flight per thread for the same block shape.

/// Elements per thread of `sum_matrix_2d_x4` (along x, `blockDim.x`
/// columns apart). Its grid is `ceil(nx / (SUM_ITEMS · blockDim.x))` blocks
/// along x.
pub const SUM_ITEMS: usize = 4;

/// Index of `(row, col)` in a row-major matrix of `ncol` columns.
#[inline(always)]
pub const fn row_major(row: usize, col: usize, ncol: usize) -> usize {
    row * ncol + col
}

/// Index of `(row, col)` in a column-major matrix of `nrow` rows.
#[inline(always)]
pub const fn col_major(row: usize, col: usize, nrow: usize) -> usize {
    col * nrow + row
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{SUM_ITEMS, col_major, row_major};
    use crate::dev::index::{block_dim_x, block_idx_x, global_id_x, global_id_y, thread_idx_x};
    use crate::dev::pitched::{Pitched, PitchedMut};

    /// `c[i] = a[i] + b[i]` for the element this thread owns, its index
    /// given by `index(row, col)`, if `(row, col)` is inside the matrix.
    ///
    /// # Safety
    /// `index` maps every in-bounds `(row, col)` into `0..nrow·ncol`; the
    /// pointers are valid for that many `f32`, `c` not overlapping `a`, `b`.
    #[inline(always)]
    unsafe fn add_at(
        c: *mut f32,
        a: *const f32,
        b: *const f32,
        nrow: usize,
        ncol: usize,
        index: impl Fn(usize, usize) -> usize,
    ) {
        let col = global_id_x();
        let row = global_id_y();
        if col < ncol && row < nrow {
            let i = index(row, col);
            // SAFETY: i < nrow·ncol by the caller's contract.
            unsafe { *c.add(i) = *a.add(i) + *b.add(i) };
        }
    }

    /// The lesson's first kernel: `index = row * ncol + col`.
    ///
    /// # Safety
    /// `c`, `a`, `b` valid for `nrow · ncol` `f32` each; `c` overlaps
    /// neither input.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn matrix_add_row_major(
        c: *mut f32,
        a: *const f32,
        b: *const f32,
        nrow: usize,
        ncol: usize,
    ) {
        // SAFETY: row_major maps the in-bounds elements onto 0..nrow·ncol.
        unsafe { add_at(c, a, b, nrow, ncol, |r, k| row_major(r, k, ncol)) }
    }

    /// The lesson's swapped traversal: `index = col * nrow + row`. Same
    /// result over the whole matrix (a bijection onto the same indices),
    /// but a warp's 32 threads touch addresses `4 · nrow` bytes apart.
    ///
    /// # Safety
    /// As [`matrix_add_row_major`].
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn matrix_add_col_major(
        c: *mut f32,
        a: *const f32,
        b: *const f32,
        nrow: usize,
        ncol: usize,
    ) {
        // SAFETY: col_major maps the in-bounds elements onto 0..nrow·ncol.
        unsafe { add_at(c, a, b, nrow, ncol, |r, k| col_major(r, k, nrow)) }
    }

    /// The lesson's `kernel_matadd` on pitched memory: element `(row, col)`
    /// of each matrix is `row · pitch` bytes, then `col` elements, from its
    /// base. Each matrix has its own pitch (bytes).
    ///
    /// # Safety
    /// Each pointer is a pitched allocation of at least `nrow` rows of
    /// its pitch, each pitch at least `ncol · 4` bytes and a multiple of 4;
    /// `c` overlaps neither input.
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn matrix_add_pitched(
        c: *mut f32,
        c_pitch: usize,
        a: *const f32,
        a_pitch: usize,
        b: *const f32,
        b_pitch: usize,
        nrow: usize,
        ncol: usize,
    ) {
        let col = global_id_x();
        if col < ncol {
            let row = global_id_y();
            if row < nrow {
                let (c, a, b) = (PitchedMut::new(c, c_pitch), Pitched::new(a, a_pitch), Pitched::new(b, b_pitch));
                // SAFETY: (row, col) is inside every matrix (caller's contract).
                unsafe { c.write(row, col, a.read(row, col) + b.read(row, col)) };
            }
        }
    }

    /// The lesson's `sumMatrixOnGPU2D(A, B, C, nx, ny)`: `ix` along x
    /// (columns), `iy` along y (rows), `idx = iy * nx + ix`.
    ///
    /// # Safety
    /// `a`, `b`, `c` valid for `nx · ny` `f32` each; `c` overlaps neither
    /// input.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn sum_matrix_2d(a: *const f32, b: *const f32, c: *mut f32, nx: usize, ny: usize) {
        // SAFETY: row_major maps the in-bounds elements onto 0..nx·ny.
        unsafe { add_at(c, a, b, ny, nx, |iy, ix| row_major(iy, ix, nx)) }
    }

    /// `sum_matrix_2d` with [`SUM_ITEMS`] elements per thread: columns
    /// `blockIdx.x · blockDim.x · SUM_ITEMS + threadIdx.x + k · blockDim.x`,
    /// `k < SUM_ITEMS`, so each warp access stays 128 contiguous bytes;
    /// every load is issued before the first store.
    ///
    /// # Safety
    /// As [`sum_matrix_2d`].
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn sum_matrix_2d_x4(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        nx: usize,
        ny: usize,
    ) {
        let iy = global_id_y();
        if iy >= ny {
            return;
        }
        let bx = block_dim_x() as usize;
        let first = block_idx_x() as usize * bx * SUM_ITEMS + thread_idx_x() as usize;
        let mut sum = [0f32; SUM_ITEMS];
        for (k, s) in sum.iter_mut().enumerate() {
            let ix = first + k * bx;
            if ix < nx {
                let i = row_major(iy, ix, nx);
                // SAFETY: ix < nx and iy < ny, so i < nx·ny.
                *s = unsafe { *a.add(i) + *b.add(i) };
            }
        }
        for (k, s) in sum.iter().enumerate() {
            let ix = first + k * bx;
            if ix < nx {
                // SAFETY: as above.
                unsafe { *c.add(row_major(iy, ix, nx)) = *s };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_layouts_are_bijections_onto_the_same_indices() {
        for (nrow, ncol) in [(1usize, 1usize), (1, 7), (7, 1), (3, 5), (33, 65)] {
            let mut seen_r = [0u8; 33 * 65];
            let mut seen_c = [0u8; 33 * 65];
            for r in 0..nrow {
                for c in 0..ncol {
                    seen_r[row_major(r, c, ncol)] += 1;
                    seen_c[col_major(r, c, nrow)] += 1;
                }
            }
            let n = nrow * ncol;
            assert!(seen_r[..n].iter().chain(&seen_c[..n]).all(|&k| k == 1), "{nrow} x {ncol}");
            assert!(seen_r[n..].iter().chain(&seen_c[n..]).all(|&k| k == 0), "{nrow} x {ncol}");
        }
    }

    #[test]
    fn lesson_indices() {
        // Row 2, column 5 of a 10000-column matrix.
        assert_eq!(row_major(2, 5, 10_000), 20_005);
        assert_eq!(col_major(2, 5, 10_000), 50_002);
    }
}
