//! Size and alignment (lesson 004, §5.3.2 "size and alignment
//! requirement"): global memory instructions move words of 1, 2, 4, 8 or
//! 16 bytes, and a structure is read with one instruction only when its
//! size is one of those and it is aligned to it.
//!
//! The same operation — scale a point and translate it, `p' = p · scale +
//! shift` per coordinate — on three layouts of `n` points:
//!
//! | kernel | layout | loads per point (SASS) |
//! | --- | --- | --- |
//! | `points_aos12` | [`Point12`]: three `f32`, 12 bytes, 4-byte aligned | three 32-bit `LDG.E` |
//! | `points_aos16` | [`Point16`]: the same padded to 16 bytes, `#[repr(C, align(16))]` | one `LDG.E.128` |
//! | `points_soa` | three `f32` arrays (structure of arrays) | three 32-bit `LDG.E`, each fully coalesced |
//!
//! The padded layout moves 16 bytes per point for 12 useful ones; the
//! other two move exactly the 12 (a warp's 12-byte loads still cover
//! contiguous memory, three instructions per point instead of one).
//!
//! Alignment makes one 128-bit access *legal*; whether the compiler emits
//! it is another matter (this project saw rustc copy a 16-byte aligned
//! `[i32; 4]` structure with two 64-bit loads). So `points_aos16` reads and
//! writes the whole point through the [`crate::dev::vector`] 128-bit
//! access, and the SASS test (`tests/sass_alignment.rs`) pins the widths of
//! all three kernels.

/// Threads per block of the point kernels (one point per thread).
pub const THREADS: u32 = 256;

/// Three `f32` coordinates, 12 bytes, aligned to 4: the guide's structure
/// that cannot be read with one instruction.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Point12 {
    /// x coordinate.
    pub x: f32,
    /// y coordinate.
    pub y: f32,
    /// z coordinate.
    pub z: f32,
}

/// The same three coordinates padded to 16 bytes and aligned to 16 (the
/// guide's `struct __align__(16) { float x, y, z; }`); the padding is a
/// named field, so every byte of a point is defined. The kernel writes 0
/// there.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Point16 {
    /// x coordinate.
    pub x: f32,
    /// y coordinate.
    pub y: f32,
    /// z coordinate.
    pub z: f32,
    /// Padding to 16 bytes (written as 0).
    pub pad: f32,
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{Point12, Point16};
    use crate::dev::index::global_id_x;
    use crate::dev::vector::{U32x4, load_v4, store_v4};

    /// One coordinate: `v · scale + shift`.
    #[inline(always)]
    fn tr(v: f32, scale: f32, shift: f32) -> f32 {
        v * scale + shift
    }

    /// `out[i] = in[i] · scale + (tx, ty, tz)` for `i < n`, 12-byte points.
    ///
    /// # Safety
    /// `inp`, `out` valid for `n` points each, not overlapping.
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn points_aos12(
        out: *mut Point12,
        inp: *const Point12,
        n: usize,
        scale: f32,
        tx: f32,
        ty: f32,
        tz: f32,
    ) {
        let i = global_id_x();
        if i < n {
            // SAFETY: i < n (caller's contract).
            unsafe {
                let p = *inp.add(i);
                *out.add(i) = Point12 { x: tr(p.x, scale, tx), y: tr(p.y, scale, ty), z: tr(p.z, scale, tz) };
            }
        }
    }

    /// The same on 16-byte points: one 128-bit load and one 128-bit store
    /// per point; the padding word is written as 0.
    ///
    /// # Safety
    /// `inp`, `out` valid for `n` points each (16-byte aligned, as every
    /// `Point16` is), not overlapping.
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn points_aos16(
        out: *mut Point16,
        inp: *const Point16,
        n: usize,
        scale: f32,
        tx: f32,
        ty: f32,
        tz: f32,
    ) {
        let i = global_id_x();
        if i < n {
            // SAFETY: i < n; a Point16 is 16 bytes, 16-byte aligned, the
            // layout of a U32x4.
            unsafe {
                let w = load_v4(inp.add(i).cast::<U32x4>()).0;
                let (x, y, z) = (f32::from_bits(w[0]), f32::from_bits(w[1]), f32::from_bits(w[2]));
                let p = Point16 { x: tr(x, scale, tx), y: tr(y, scale, ty), z: tr(z, scale, tz), pad: 0.0 };
                store_v4(out.add(i).cast::<U32x4>(), U32x4([p.x.to_bits(), p.y.to_bits(), p.z.to_bits(), 0]));
            }
        }
    }

    /// The same on a structure of arrays: `xo[i] = xi[i] · scale + tx`, and
    /// likewise for y and z.
    ///
    /// # Safety
    /// All six pointers valid for `n` `f32`; the outputs overlap nothing.
    #[unsafe(no_mangle)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "ptx-kernel" fn points_soa(
        xo: *mut f32,
        yo: *mut f32,
        zo: *mut f32,
        xi: *const f32,
        yi: *const f32,
        zi: *const f32,
        n: usize,
        scale: f32,
        tx: f32,
        ty: f32,
        tz: f32,
    ) {
        let i = global_id_x();
        if i < n {
            // SAFETY: i < n (caller's contract).
            unsafe {
                *xo.add(i) = tr(*xi.add(i), scale, tx);
                *yo.add(i) = tr(*yi.add(i), scale, ty);
                *zo.add(i) = tr(*zi.add(i), scale, tz);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        assert_eq!((core::mem::size_of::<Point12>(), core::mem::align_of::<Point12>()), (12, 4));
        assert_eq!((core::mem::size_of::<Point16>(), core::mem::align_of::<Point16>()), (16, 16));
        assert_eq!(core::mem::offset_of!(Point16, z), 8);
        assert_eq!(core::mem::offset_of!(Point16, pad), 12);
    }
}
