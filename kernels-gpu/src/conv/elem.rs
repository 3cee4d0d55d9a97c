//! The element types of the convolution kernels (`f32`, `f64`) and the
//! operations the kernels need on them: fused multiply-add, shared memory
//! and kernel-parameter access, and 4-wide shared loads and global loads
//! and stores.

use core::arch::asm;

use crate::dev::param::ParamElem;
use crate::dev::pipeline;
use crate::dev::shared::{Shared, SharedElem};

/// An element type of the convolution kernels.
pub trait ConvElem: Copy + SharedElem + ParamElem {
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

    /// Starts copying the four elements at `p` to shared-window address
    /// `dst` ([`pipeline`]), 16 bytes at a time through L1 when `vector`
    /// ([`pipeline::copy16_l1`]), else one element at a time; zeros
    /// instead when `valid` is false (`p` is then not read and may point
    /// anywhere).
    ///
    /// # Safety
    /// As [`pipeline::copy16`]: `dst` 16-byte aligned in this block's
    /// shared memory; when `valid`, `p` valid for four elements, and
    /// 16-byte aligned when `vector`.
    unsafe fn copy4_async(dst: u32, p: *const Self, valid: bool, vector: bool);

    /// Starts copying the element at `p` to shared-window address `dst`
    /// ([`pipeline`]); a zero instead when `valid` is false (`p` is then
    /// not read).
    ///
    /// # Safety
    /// `dst` aligned for `Self` in this block's shared memory; when
    /// `valid`, `p` valid for one element.
    unsafe fn copy1_async(dst: u32, p: *const Self, valid: bool);

    /// `self`, through an instruction the compiler keeps where it stands:
    /// the value is computed before this point on every path, never sunk
    /// into a branch that alone uses it. (`ptxas` removes the move.)
    fn pin(self) -> Self;
}

impl ConvElem for f32 {
    const ZERO: Self = 0.0;

    #[inline(always)]
    unsafe fn copy1_async(dst: u32, p: *const f32, valid: bool) {
        // SAFETY: the caller's contract.
        unsafe { pipeline::copy_f32(dst, p, valid) }
    }

    #[inline(always)]
    unsafe fn copy4_async(dst: u32, p: *const f32, valid: bool, vector: bool) {
        // SAFETY: the caller's contract.
        unsafe {
            if vector {
                pipeline::copy16_l1(dst, p.cast(), valid);
            } else {
                for k in 0..4 {
                    pipeline::copy_f32(dst + 4 * k as u32, p.wrapping_add(k), valid);
                }
            }
        }
    }

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
    fn pin(mut self) -> f32 {
        // SAFETY: a register move; not `pure`, so it is neither moved nor
        // dropped.
        unsafe { asm!("mov.b32 {0}, {0};", inout(reg32) self, options(nomem, nostack, preserves_flags)) };
        self
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
    unsafe fn copy1_async(dst: u32, p: *const f64, valid: bool) {
        // SAFETY: the caller's contract.
        unsafe { pipeline::copy_f64(dst, p, valid) }
    }

    #[inline(always)]
    unsafe fn copy4_async(dst: u32, p: *const f64, valid: bool, vector: bool) {
        // SAFETY: the caller's contract.
        unsafe {
            if vector {
                pipeline::copy16_l1(dst, p.cast(), valid);
                pipeline::copy16_l1(dst + 16, p.wrapping_add(2).cast(), valid);
            } else {
                for k in 0..4 {
                    pipeline::copy_f64(dst + 8 * k as u32, p.wrapping_add(k), valid);
                }
            }
        }
    }

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
    fn pin(mut self) -> f64 {
        // SAFETY: a register move; not `pure`, so it is neither moved nor
        // dropped.
        unsafe { asm!("mov.b64 {0}, {0};", inout(reg64) self, options(nomem, nostack, preserves_flags)) };
        self
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

/// `x`, through a register move the compiler keeps where it stands (see
/// [`ConvElem::pin`]). At the top of a grid-stride loop's body it keeps
/// the values derived from `x` (a mask's chunk counts, tail offsets and
/// addresses) inside the body, computed where they are used, instead of
/// hoisted into a prologue that every thread runs: the lesson's kernels
/// give each thread one output, so their loops run once. `x` is below
/// 2³² (a width passed to the kernel as `u32`); the move is 32-bit, so the
/// compiler still knows the upper half is zero.
#[inline(always)]
pub fn opaque(x: usize) -> usize {
    let mut v = x as u32;
    // SAFETY: a register move; not `pure`, so it is not hoisted.
    unsafe { asm!("mov.b32 {0}, {0};", inout(reg32) v, options(nomem, nostack, preserves_flags)) };
    v as usize
}

/// `acc + Σ_{i < w} x(i) · m(i)`, one fused multiply-add per tap in the
/// order of `i` (the CPU reference's order, so results match it bit for
/// bit), four taps per step.
///
/// The step counter is 32 bits (`w < 2³²`; the kernels take widths as
/// `u32`). With a 64-bit counter `ptxas` peels a first step predicated
/// on the width and issues it, predicated off, in every thread that
/// skips it, then compares in two instructions per step: measured
/// against the C++ twins on the H100, the 2D tiled kernel at 9 × 9 went
/// from 1.055× to 0.98× and the 1D const kernel at w = 7 from 1.06× to
/// 0.98×.
///
/// The last `w mod 4` taps run as one more step whose loads are pinned
/// ([`ConvElem::pin`]) so they issue together; a plain loop leaves them
/// in one-tap iterations, each waiting for its loads before the next
/// issues (the code `nvcc` emits for the same loop loads them together,
/// predicated).
///
/// # Safety
/// `x(i)` and `m(i)` are safe to call for every `i < w`; `dot` calls them
/// with no other `i`. `w < 2³²`.
#[inline(always)]
pub unsafe fn dot<T: ConvElem>(mut acc: T, w: usize, x: impl Fn(usize) -> T, m: impl Fn(usize) -> T) -> T {
    let full = (w & !3) as u32;
    let mut i: u32 = 0;
    while i < full {
        for k in 0..4 {
            acc = T::fma(x(i as usize + k), m(i as usize + k), acc);
        }
        i += 4;
    }
    // SAFETY: the caller's contract.
    unsafe { dot_tail(acc, w, x, m) }
}

/// [`dot`] in blocks of 16, 8 and 4 taps: with `c = ⌊w / 4⌋` steps, a
/// loop of 16-tap blocks, then at most one 8-tap and one 4-tap block
/// (`c mod 4` in binary), then the tail. Each block is straight-line
/// code — the shape `ptxas` gives `nvcc`'s unrolled loop — so a 15-tap
/// sum is one 8-tap and one 4-tap block with no loop test, where
/// [`dot`]'s loop of 4-tap steps costs the 1D basic kernel 1.09× its
/// twin's time at w = 15 (now 0.99–1.02×).
///
/// For taps read from global memory (the 1D basic kernel). Constant
/// taps in 16-tap blocks are read as uniform operands two at a time into
/// the same two uniform registers, so each block waits on its constant
/// loads one after the other: the 1D const kernel at w = 127 took 2.2×
/// its twin's time with it, and keeps [`dot`].
///
/// # Safety
/// As [`dot`].
#[inline(always)]
pub unsafe fn dot_blocks<T: ConvElem>(mut acc: T, w: usize, x: impl Fn(usize) -> T, m: impl Fn(usize) -> T) -> T {
    let mut c = (w >> 2) as u32;
    let mut i = 0;
    // Widths below 4 skip the block tests.
    if c != 0 {
        while c >= 4 {
            for k in 0..16 {
                acc = T::fma(x(i + k), m(i + k), acc);
            }
            i += 16;
            c -= 4;
        }
        if c >= 2 {
            for k in 0..8 {
                acc = T::fma(x(i + k), m(i + k), acc);
            }
            i += 8;
        }
        if c & 1 != 0 {
            for k in 0..4 {
                acc = T::fma(x(i + k), m(i + k), acc);
            }
        }
    }
    // SAFETY: the caller's contract.
    unsafe { dot_tail(acc, w, x, m) }
}

/// The last `w mod 4` taps of [`dot`] and [`dot_blocks`] (the same
/// count in every thread), their loads issued together.
///
/// # Safety
/// As [`dot`].
#[inline(always)]
unsafe fn dot_tail<T: ConvElem>(mut acc: T, w: usize, x: impl Fn(usize) -> T, m: impl Fn(usize) -> T) -> T {
    let i = w & !3;
    match w - i {
        0 => {}
        1 => acc = T::fma(x(i), m(i), acc),
        2 => {
            let xs = [x(i).pin(), x(i + 1).pin()];
            let ms = [m(i).pin(), m(i + 1).pin()];
            acc = T::fma(xs[1], ms[1], T::fma(xs[0], ms[0], acc));
        }
        _ => {
            let xs = [x(i).pin(), x(i + 1).pin(), x(i + 2).pin()];
            let ms = [m(i).pin(), m(i + 1).pin(), m(i + 2).pin()];
            acc = T::fma(xs[2], ms[2], T::fma(xs[1], ms[1], T::fma(xs[0], ms[0], acc)));
        }
    }
    acc
}

/// Repeats a block for `i` = each listed literal below `n`, written
/// out copy by copy rather than as a loop: with `n` a compile-time
/// constant this is a fully unrolled loop whatever the optimiser's
/// unrolling thresholds, so arrays indexed by `i` stay in registers.
macro_rules! unroll {
    ($i:ident in [$($k:literal),*] below $n:expr => $body:block) => {
        $( { let $i: usize = $k; if $i < $n $body } )*
    };
    (const $i:ident in [$($k:literal),*] below $n:expr => $body:block) => {
        $( { const $i: usize = $k; if $i < $n $body } )*
    };
}
pub(crate) use unroll;

/// Tap `K` of the mask parameter at `.param` address `base` (see
/// [`crate::dev::param`]) as type `T`: one `ld.param` with the byte offset
/// an immediate (`[base+off]`), which `ptxas` turns into a constant-bank
/// operand (or a uniform load) of bank 0.
macro_rules! mask_tap {
    ($t:ty, $base:expr, $k:expr) => {{
        let base: u64 = $base;
        if core::mem::size_of::<$t>() == 4 {
            let v: f32;
            // SAFETY: the tap lies inside this kernel's mask parameter,
            // which holds the launch's taps (the caller's contract).
            unsafe {
                core::arch::asm!("ld.param.f32 {v}, [{b}+{o}];", v = out(reg32) v, b = in(reg64) base,
                    o = const ($k) * 4, options(pure, readonly, nostack, preserves_flags))
            };
            // SAFETY: T is f32 (same size; ConvElem is f32 or f64).
            unsafe { core::mem::transmute_copy::<f32, $t>(&v) }
        } else {
            let v: f64;
            // SAFETY: as above.
            unsafe {
                core::arch::asm!("ld.param.f64 {v}, [{b}+{o}];", v = out(reg64) v, b = in(reg64) base,
                    o = const ($k) * 8, options(pure, readonly, nostack, preserves_flags))
            };
            // SAFETY: T is f64.
            unsafe { core::mem::transmute_copy::<f64, $t>(&v) }
        }
    }};
}
pub(crate) use mask_tap;
