//! Pitched 2D memory seen from a kernel: the one place that turns a
//! (row, column) into an address.
//!
//! A pitched allocation (`cuMemAllocPitch`) pads every row to `pitch`
//! *bytes*, so that each row starts on an aligned address. Width and column
//! indices stay in *elements*. The address of element `(row, col)` is the
//! lesson's
//!
//! ```c
//! T* pElem = (T*)((char*)baseAddr + row * pitch) + col;
//! ```
//!
//! two steps in two units: `row × pitch` bytes from the base (the `char*`
//! step), then `col` elements of `T` into that row. [`Pitched::row`] is the
//! first step, [`Pitched::ptr`] both; [`byte_offset`] is the same arithmetic
//! as a number, for the host (which plans copies in bytes) and for tests.
//!
//! Pure pointer arithmetic: compiled on the host too, where the unit tests
//! run it over ordinary host memory.

use core::marker::PhantomData;

/// Byte offset of element `(row, col)` of `T`s from the start of a pitched
/// allocation whose rows are `pitch` bytes apart: `row · pitch +
/// col · size_of::<T>()`. [`Pitched::ptr`] lands exactly here.
#[inline(always)]
pub const fn byte_offset<T>(row: usize, col: usize, pitch: usize) -> usize {
    row * pitch + col * core::mem::size_of::<T>()
}

/// A read-only pitched 2D array of `T` in memory: a base address and the
/// distance between rows in bytes. It does not know its extent; kernels
/// check bounds against the width and height they are given.
#[derive(Debug)]
pub struct Pitched<T> {
    base: *const u8,
    pitch: usize,
    _m: PhantomData<*const T>,
}

impl<T> Clone for Pitched<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Pitched<T> {}

impl<T> Pitched<T> {
    /// A view of the array at `base` with rows `pitch` bytes apart.
    #[inline(always)]
    pub const fn new(base: *const T, pitch: usize) -> Self {
        Pitched { base: base as *const u8, pitch, _m: PhantomData }
    }

    /// Bytes from one row's start to the next.
    #[inline(always)]
    pub const fn pitch(&self) -> usize {
        self.pitch
    }

    /// First element of row `row`: `(T*)((char*)base + row * pitch)`.
    ///
    /// # Safety
    /// `row` must be a row of the allocation (the offset stays inside it).
    #[inline(always)]
    pub unsafe fn row(&self, row: usize) -> *const T {
        // SAFETY: the caller guarantees the row lies in the allocation.
        unsafe { self.base.add(row * self.pitch) as *const T }
    }

    /// Element `(row, col)`: the row's start, then `col` elements of `T`.
    ///
    /// # Safety
    /// `(row, col)` must lie inside the allocation's rows and width.
    #[inline(always)]
    pub unsafe fn ptr(&self, row: usize, col: usize) -> *const T {
        // SAFETY: the caller guarantees the element lies in the allocation.
        unsafe { self.row(row).add(col) }
    }

    /// Reads element `(row, col)`.
    ///
    /// # Safety
    /// As [`Pitched::ptr`]; the element must be initialized and aligned.
    #[inline(always)]
    pub unsafe fn read(&self, row: usize, col: usize) -> T
    where
        T: Copy,
    {
        // SAFETY: forwarded to the caller's contract.
        unsafe { *self.ptr(row, col) }
    }
}

/// A writable pitched 2D array of `T`: [`Pitched`] plus stores.
#[derive(Debug)]
pub struct PitchedMut<T> {
    base: *mut u8,
    pitch: usize,
    _m: PhantomData<*mut T>,
}

impl<T> PitchedMut<T> {
    /// A view of the array at `base` with rows `pitch` bytes apart.
    #[inline(always)]
    pub const fn new(base: *mut T, pitch: usize) -> Self {
        PitchedMut { base: base as *mut u8, pitch, _m: PhantomData }
    }

    /// The same array, read-only.
    #[inline(always)]
    pub const fn as_const(&self) -> Pitched<T> {
        Pitched::new(self.base as *const T, self.pitch)
    }

    /// Element `(row, col)`, writable (same arithmetic as [`Pitched::ptr`]).
    ///
    /// # Safety
    /// `(row, col)` must lie inside the allocation's rows and width.
    #[inline(always)]
    pub unsafe fn ptr(&self, row: usize, col: usize) -> *mut T {
        // SAFETY: forwarded to the caller's contract.
        unsafe { self.as_const().ptr(row, col) as *mut T }
    }

    /// Writes `value` to element `(row, col)`.
    ///
    /// # Safety
    /// As [`PitchedMut::ptr`]; the element must be aligned and not accessed
    /// by another thread at the same time.
    #[inline(always)]
    pub unsafe fn write(&self, row: usize, col: usize, value: T) {
        // SAFETY: forwarded to the caller's contract.
        unsafe { *self.ptr(row, col) = value }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lesson_example_row_2_col_5() {
        // pitch 40192, row 2, column 5 of f32: 80384 + 20.
        assert_eq!(byte_offset::<f32>(2, 5, 40_192), 80_404);
        assert_eq!(byte_offset::<f64>(0, 3, 512), 24);
        assert_eq!(byte_offset::<[u32; 4]>(1, 1, 64), 80);
    }

    #[test]
    fn view_addresses_match_byte_offset_and_read_back() {
        // A 3 x 5 array of u32 in rows of 32 bytes (pitch 32, width 20).
        let (rows, cols, pitch) = (3usize, 5usize, 32usize);
        let mut mem = [0u32; 24];
        for r in 0..rows {
            for c in 0..cols {
                mem[(r * pitch) / 4 + c] = (100 * r + c) as u32;
            }
        }
        let base = mem.as_mut_ptr();
        let w = PitchedMut::new(base, pitch);
        let v = w.as_const();
        for r in 0..rows {
            for c in 0..cols {
                // SAFETY: (r, c) lies inside `mem`.
                unsafe {
                    let p = v.ptr(r, c) as usize;
                    assert_eq!(p - base as usize, byte_offset::<u32>(r, c, pitch));
                    assert_eq!(v.read(r, c), (100 * r + c) as u32);
                    w.write(r, c, v.read(r, c) + 1);
                }
            }
        }
        // Padding words (columns 5..8) were never touched.
        for r in 0..rows {
            assert_eq!(&mem[r * 8 + 5..r * 8 + 8], &[0, 0, 0]);
            assert_eq!(mem[r * 8 + 4], (100 * r + 5) as u32);
        }
    }
}
