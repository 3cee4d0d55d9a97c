//! The element types of the convolution kernels (`f32`, `f64`) and the
//! operations the kernels need on them: fused multiply-add, shared and
//! constant memory access, and 4-wide shared loads and global loads and stores.

use core::arch::asm;

use crate::dev::constant::ConstElem;
use crate::dev::shared::{Shared, SharedElem};

/// An element type of the convolution kernels.
pub trait ConvElem: Copy + SharedElem + ConstElem {
    /// Zero.
    const ZERO: Self;

    /// `a · b + c` rounded once (`fma.rn`), as `nvcc` contracts `a*b + c`
    /// by default; Rust never contracts on its own.
    fn fma(a: Self, b: Self, c: Self) -> Self;

    /// Elements `i .. i + 4` of a shared array.
    ///
    /// # Safety
    /// The four elements lie inside the array; `i` is a multiple of 4 and
    /// the array's base is 16-byte aligned.
    unsafe fn read4(s: Shared<Self>, i: usize) -> [Self; 4];

    /// Stores four elements at `p`.
    ///
    /// # Safety
    /// `p` valid for four elements and 16-byte aligned.
    unsafe fn store4(p: *mut Self, v: [Self; 4]);

    /// Loads four elements from global memory at `p`, 128 bits at a time.
    ///
    /// # Safety
    /// `p` valid for four elements and 16-byte aligned.
    unsafe fn load4(p: *const Self) -> [Self; 4];
}

impl ConvElem for f32 {
    const ZERO: Self = 0.0;

    #[inline(always)]
    fn fma(a: f32, b: f32, c: f32) -> f32 {
        let d: f32;
        // SAFETY: arithmetic only.
        unsafe {
            asm!("fma.rn.f32 {d}, {a}, {b}, {c};", d = out(reg32) d, a = in(reg32) a, b = in(reg32) b,
                 c = in(reg32) c, options(pure, nomem, nostack, preserves_flags))
        };
        d
    }

    #[inline(always)]
    unsafe fn read4(s: Shared<f32>, i: usize) -> [f32; 4] {
        let (a, b, c, d): (f32, f32, f32, f32);
        // SAFETY: the caller guarantees the 16 bytes lie inside the array
        // and are 16-byte aligned.
        unsafe {
            asm!("ld.shared.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a, b = out(reg32) b,
                 c = out(reg32) c, d = out(reg32) d, p = in(reg32) s.addr_of(i),
                 options(readonly, nostack, preserves_flags))
        };
        [a, b, c, d]
    }

    #[inline(always)]
    unsafe fn store4(p: *mut f32, v: [f32; 4]) {
        // SAFETY: the caller guarantees a valid, aligned global address.
        unsafe {
            asm!("st.global.v4.f32 [{p}], {{{a}, {b}, {c}, {d}}};", p = in(reg64) p, a = in(reg32) v[0],
                 b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3], options(nostack, preserves_flags))
        };
    }

    #[inline(always)]
    unsafe fn load4(p: *const f32) -> [f32; 4] {
        let (a, b, c, d): (f32, f32, f32, f32);
        // SAFETY: the caller guarantees a valid, aligned global address.
        unsafe {
            asm!("ld.global.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a, b = out(reg32) b,
                 c = out(reg32) c, d = out(reg32) d, p = in(reg64) p, options(readonly, nostack, preserves_flags))
        };
        [a, b, c, d]
    }
}

impl ConvElem for f64 {
    const ZERO: Self = 0.0;

    #[inline(always)]
    fn fma(a: f64, b: f64, c: f64) -> f64 {
        let d: f64;
        // SAFETY: arithmetic only.
        unsafe {
            asm!("fma.rn.f64 {d}, {a}, {b}, {c};", d = out(reg64) d, a = in(reg64) a, b = in(reg64) b,
                 c = in(reg64) c, options(pure, nomem, nostack, preserves_flags))
        };
        d
    }

    #[inline(always)]
    unsafe fn read4(s: Shared<f64>, i: usize) -> [f64; 4] {
        let (a, b, c, d): (f64, f64, f64, f64);
        let p = s.addr_of(i);
        // SAFETY: the caller guarantees the 32 bytes lie inside the array
        // and are 16-byte aligned (so both halves are).
        unsafe {
            asm!("ld.shared.v2.f64 {{{a}, {b}}}, [{p}];", "ld.shared.v2.f64 {{{c}, {d}}}, [{p}+16];",
                 a = out(reg64) a, b = out(reg64) b, c = out(reg64) c, d = out(reg64) d, p = in(reg32) p,
                 options(readonly, nostack, preserves_flags))
        };
        [a, b, c, d]
    }

    #[inline(always)]
    unsafe fn store4(p: *mut f64, v: [f64; 4]) {
        // SAFETY: the caller guarantees a valid, aligned global address.
        unsafe {
            asm!("st.global.v2.f64 [{p}], {{{a}, {b}}};", "st.global.v2.f64 [{p}+16], {{{c}, {d}}};",
                 p = in(reg64) p, a = in(reg64) v[0], b = in(reg64) v[1], c = in(reg64) v[2], d = in(reg64) v[3],
                 options(nostack, preserves_flags))
        };
    }

    #[inline(always)]
    unsafe fn load4(p: *const f64) -> [f64; 4] {
        let (a, b, c, d): (f64, f64, f64, f64);
        // SAFETY: the caller guarantees a valid, aligned global address
        // (so both 16-byte halves are aligned).
        unsafe {
            asm!("ld.global.v2.f64 {{{a}, {b}}}, [{p}];", "ld.global.v2.f64 {{{c}, {d}}}, [{p}+16];",
                 a = out(reg64) a, b = out(reg64) b, c = out(reg64) c, d = out(reg64) d, p = in(reg64) p,
                 options(readonly, nostack, preserves_flags))
        };
        [a, b, c, d]
    }
}
