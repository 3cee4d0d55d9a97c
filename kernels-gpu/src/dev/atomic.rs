//! Device-scope atomics on global memory and the fence that orders them:
//! the work counter that the batched rows kernels' blocks draw from.

use core::arch::asm;

/// Adds `v` to the `u32` at `p` atomically (device scope) and returns the
/// value it held before.
///
/// # Safety
/// `p` valid, 4-byte aligned global memory that every access during the
/// kernel makes atomically.
#[inline(always)]
pub unsafe fn add_u32(p: *mut u32, v: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller's contract; the default memory clobber keeps the
    // compiler from moving memory accesses across it.
    unsafe {
        asm!("atom.global.gpu.add.u32 {o}, [{p}], {v};", o = out(reg32) old, p = in(reg64) p, v = in(reg32) v,
             options(nostack, preserves_flags));
    }
    old
}

/// Stores `v` to the `u32` at `p` atomically (device scope).
///
/// # Safety
/// As [`add_u32`].
#[inline(always)]
pub unsafe fn exch_u32(p: *mut u32, v: u32) {
    let _old: u32;
    // SAFETY: as add_u32.
    unsafe {
        asm!("atom.global.gpu.exch.b32 {o}, [{p}], {v};", o = out(reg32) _old, p = in(reg64) p, v = in(reg32) v,
             options(nostack, preserves_flags));
    }
}

/// `fence.acq_rel.gpu`: this thread's memory accesses before it are
/// ordered before those after it, for every thread of the device that
/// synchronizes with it.
#[inline(always)]
pub fn fence_gpu() {
    // SAFETY: a fence reads and writes no registers or memory.
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack, preserves_flags)) }
}
