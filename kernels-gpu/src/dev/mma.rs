//! Tensor-core matrix multiply-accumulate (`mma.sync`) for TF32 operands,
//! and the small pieces around it: the split of an `f32` into a TF32 head
//! and its remainder, 64/128-bit shared loads, and a block barrier that
//! ORs a flag.
//!
//! `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32` multiplies a 16×8
//! matrix `A` by an 8×8 matrix `B` and adds a 16×8 `C`, one warp
//! together; each lane holds four elements of `A`, two of `B` and four of
//! `C` (the PTX ISA's "Matrix Fragments for mma.m16n8k8" with `.tf32`).
//! With `g = lane / 4` and `t = lane % 4`:
//!
//! | operand | registers | element (row, column) |
//! | --- | --- | --- |
//! | `A` | `a0, a1, a2, a3` | `(g, t)`, `(g + 8, t)`, `(g, t + 4)`, `(g + 8, t + 4)` |
//! | `B` | `b0, b1` | `(t, g)`, `(t + 4, g)` |
//! | `C`, `D` | `c0, c1, c2, c3` | `(g, 2t)`, `(g, 2t + 1)`, `(g + 8, 2t)`, `(g + 8, 2t + 1)` |
//!
//! TF32 operands are 32-bit registers of which the tensor core reads the
//! sign, the 8 exponent bits and the top 10 mantissa bits; the low 13
//! bits are ignored. The instruction needs sm_80: everything here except
//! the shared loads and the barrier exists only in PTX built for sm_80 or
//! newer (`cfg(target_feature = "sm_80")`), and the host runs the FMA
//! kernels on older devices.

use core::arch::asm;

/// `mma.sync.aligned.<shape>` on four `A`, two `B` and four `C`/`D` 32-bit
/// registers, `D` written over `C` (`acc`): the two shapes below differ
/// only in the instruction.
#[cfg(target_feature = "sm_80")]
macro_rules! mma_sync {
    ($shape:literal, $acc:ident, $a:ident, $b:ident) => {
        asm!(
            concat!("mma.sync.aligned.", $shape, " {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};"),
            d0 = inout(reg32) $acc[0],
            d1 = inout(reg32) $acc[1],
            d2 = inout(reg32) $acc[2],
            d3 = inout(reg32) $acc[3],
            a0 = in(reg32) $a[0],
            a1 = in(reg32) $a[1],
            a2 = in(reg32) $a[2],
            a3 = in(reg32) $a[3],
            b0 = in(reg32) $b[0],
            b1 = in(reg32) $b[1],
            options(pure, nomem, nostack, preserves_flags),
        )
    };
}

/// `D = A·B + C` for one m16n8k8 TF32 tile, `C` and `D` in the same
/// registers (`acc`).
///
/// # Safety
/// Every lane of the warp executes it together (the instruction is
/// `.aligned`), with the fragments laid out as the module describes.
#[cfg(target_feature = "sm_80")]
#[inline(always)]
pub unsafe fn mma_tf32(acc: &mut [f32; 4], a: [u32; 4], b: [u32; 2]) {
    // SAFETY: register-only; the caller guarantees warp convergence.
    unsafe { mma_sync!("m16n8k8.row.col.f32.tf32.tf32.f32", acc, a, b) }
}

/// `x` split into its TF32 head, rounded to nearest with ties away from
/// zero (what `cvt.rna.tf32.f32` gives, here in two integer operations:
/// add half a TF32 unit to the bits, clear the low 13), and the remainder
/// `x − head`, exact in `f32`: `|rem| ≤ 2^−11·|x|`. Finite `x` within
/// `2^−11` of `f32::MAX` round to an infinite head, and a NaN or an
/// infinity gives a NaN remainder: a non-finite result signals the caller
/// to recompute.
#[inline(always)]
pub fn split_tf32(x: f32) -> (u32, u32) {
    let head = x.to_bits().wrapping_add(0x1000) & 0xffff_e000;
    (head, (x - f32::from_bits(head)).to_bits())
}

/// Two `f32` from shared-window address `addr` (8-byte aligned).
///
/// # Safety
/// The 8 bytes lie inside this block's shared memory.
#[inline(always)]
pub unsafe fn ld_shared_v2(addr: u32) -> [f32; 2] {
    let (a, b): (f32, f32);
    // SAFETY: forwarded to the caller's contract.
    unsafe {
        asm!("ld.shared.v2.f32 {{{a}, {b}}}, [{p}];", a = out(reg32) a, b = out(reg32) b, p = in(reg32) addr,
             options(readonly, nostack, preserves_flags));
    }
    [a, b]
}

/// Four 32-bit words from shared-window address `addr` (16-byte aligned).
///
/// # Safety
/// The 16 bytes lie inside this block's shared memory.
#[inline(always)]
pub unsafe fn ld_shared_v4(addr: u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: forwarded to the caller's contract.
    unsafe {
        asm!("ld.shared.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a, b = out(reg32) b,
             c = out(reg32) c, d = out(reg32) d, p = in(reg32) addr, options(readonly, nostack, preserves_flags));
    }
    [a, b, c, d]
}

/// `ldmatrix.x4`: four 8×8 matrices of 16-bit elements from shared
/// memory, the rows of matrix `i` at the addresses lanes `8i … 8i + 7`
/// give (16 bytes each, 16-byte aligned). Lane `(g, t)` receives, in
/// register `i`, the 32-bit word `t` of row `g` of matrix `i`: read as 8×4
/// matrices of 32-bit words, exactly an `mma.m16n8k8` TF32 `A` fragment
/// when the four matrices are rows 0–7 and 8–15 of words 0–3, then of
/// words 4–7.
///
/// # Safety
/// Every lane of the warp executes it together (`.aligned`), each passing
/// the address of 16 bytes inside this block's shared memory.
#[cfg(target_feature = "sm_80")]
#[inline(always)]
pub unsafe fn ldmatrix_x4(addr: u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: forwarded to the caller's contract.
    unsafe {
        asm!("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a,
             b = out(reg32) b, c = out(reg32) c, d = out(reg32) d, p = in(reg32) addr,
             options(readonly, nostack, preserves_flags));
    }
    [a, b, c, d]
}

/// `__syncthreads_or(flag)`: a block barrier (as
/// [`sync_threads`](super::sync::sync_threads), non-`.aligned`) that
/// returns whether any thread of the block passed `true`.
///
/// # Safety
/// As [`sync_threads`](super::sync::sync_threads): every thread of the
/// block reaches it the same number of times.
#[inline(always)]
pub unsafe fn sync_threads_or(flag: bool) -> bool {
    let any: u32;
    // SAFETY: forwarded to the caller's contract; registers only, besides
    // the barrier's ordering of memory (default clobber).
    unsafe {
        asm!(
            "{{ .reg .pred cz_in, cz_any; setp.ne.u32 cz_in, {f}, 0; barrier.red.or.pred cz_any, 0, cz_in; selp.u32 {r}, 1, 0, cz_any; }}",
            f = in(reg32) flag as u32,
            r = out(reg32) any,
            options(nostack, preserves_flags),
        );
    }
    any != 0
}

/// `D = A·B + C` for one m16n8k16 bf16 tile with `f32` accumulation, `C`
/// and `D` in the same registers (`acc`). Lane `(g, t)` holds, two bf16 per
/// register (the lower index in the low half): `A` rows `g` and `g + 8` at
/// columns `2t, 2t + 1` (`a[0]`, `a[1]`) and `2t + 8, 2t + 9` (`a[2]`,
/// `a[3]`); `B` rows `2t, 2t + 1` (`b[0]`) and `2t + 8, 2t + 9` (`b[1]`) of
/// column `g`; `C` as in the TF32 table above. The products are exact
/// (8-bit significands); the tensor core adds them to `C` in `f32`.
///
/// # Safety
/// Every lane of the warp executes it together (`.aligned`).
#[cfg(target_feature = "sm_80")]
#[inline(always)]
pub unsafe fn mma_bf16(acc: &mut [f32; 4], a: [u32; 4], b: [u32; 2]) {
    // SAFETY: register-only; the caller guarantees warp convergence.
    unsafe { mma_sync!("m16n8k16.row.col.f32.bf16.bf16.f32", acc, a, b) }
}

/// `lo` and `hi` rounded to bf16 (nearest, ties to even) and packed, `lo`
/// in the low half (`cvt.rn.bf16x2.f32`).
#[cfg(target_feature = "sm_80")]
#[inline(always)]
pub fn pack_bf16x2(lo: f32, hi: f32) -> u32 {
    let r: u32;
    // SAFETY: arithmetic only (sm_80 and newer).
    unsafe {
        asm!("cvt.rn.bf16x2.f32 {r}, {h}, {l};", r = out(reg32) r, h = in(reg32) hi, l = in(reg32) lo,
             options(pure, nomem, nostack, preserves_flags));
    }
    r
}

/// `D = A·B + C` for one m16n8k8 bf16 tile with `f32` accumulation:
/// `A` rows `g` and `g + 8` at columns `2t, 2t + 1` (`a[0]`, `a[1]`), `B`
/// rows `2t, 2t + 1` of column `g` (`b`), `C` and `D` as [`mma_bf16`].
///
/// # Safety
/// Every lane of the warp executes it together (`.aligned`).
#[cfg(target_feature = "sm_80")]
#[inline(always)]
pub unsafe fn mma_bf16_k8(acc: &mut [f32; 4], a: [u32; 2], b: u32) {
    // SAFETY: register-only; the caller guarantees warp convergence.
    unsafe {
        asm!(
            "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}}}, {{{b0}}}, {{{d0}, {d1}, {d2}, {d3}}};",
            d0 = inout(reg32) acc[0],
            d1 = inout(reg32) acc[1],
            d2 = inout(reg32) acc[2],
            d3 = inout(reg32) acc[3],
            a0 = in(reg32) a[0],
            a1 = in(reg32) a[1],
            b0 = in(reg32) b,
            options(pure, nomem, nostack, preserves_flags),
        )
    }
}

/// `ldmatrix.x2`: the first two matrices of [`ldmatrix_x4`], the rows of
/// matrix `i` at the addresses lanes `8i … 8i + 7` give.
///
/// # Safety
/// As [`ldmatrix_x4`] (lanes 0–15 pass the addresses).
#[cfg(target_feature = "sm_80")]
#[inline(always)]
pub unsafe fn ldmatrix_x2(addr: u32) -> [u32; 2] {
    let (a, b): (u32, u32);
    // SAFETY: forwarded to the caller's contract.
    unsafe {
        asm!("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {{{a}, {b}}}, [{p}];", a = out(reg32) a,
             b = out(reg32) b, p = in(reg32) addr, options(readonly, nostack, preserves_flags));
    }
    [a, b]
}
