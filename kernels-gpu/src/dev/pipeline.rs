//! Asynchronous copies from global to shared memory (`cp.async`, sm_80
//! and newer): a thread issues copies, groups them with
//! [`commit_group`], and later waits until at most `N` of its groups are
//! still in flight ([`wait_group`]). The bytes in flight then occupy no
//! registers, so a kernel can keep several rows of loads outstanding at
//! the occupancy of one.
//!
//! A thread's wait covers its own copies only: other threads' copies
//! become visible to it after a barrier that follows their waits
//! (`bar.warp.sync` for a warp, `bar.sync` for a block).
//!
//! Below sm_80 the same functions copy synchronously (load, then
//! [`SharedElem::st_shared`](crate::dev::shared::SharedElem::st_shared)), and the group functions do nothing, so kernels written
//! against this module run, more slowly, everywhere.

#[cfg(target_feature = "sm_80")]
use core::arch::asm;

#[cfg(not(target_feature = "sm_80"))]
use crate::dev::shared::SharedElem;

/// Copies 16 bytes from global `src` to shared-window address `dst`, or
/// writes 16 zero bytes there when `valid` is false (`src` is then not
/// read).
///
/// # Safety
/// `dst` 16-byte aligned inside this block's shared memory; when `valid`,
/// `src` 16-byte aligned and valid for 16 bytes; no thread reads or writes
/// `dst` until this thread's group holding the copy has been waited for
/// and a barrier has followed.
#[inline(always)]
pub unsafe fn copy16(dst: u32, src: *const u8, valid: bool) {
    #[cfg(target_feature = "sm_80")]
    // SAFETY: the caller's contract; src-size 0 reads nothing.
    unsafe {
        asm!(
            "cp.async.cg.shared.global [{d}], [{s}], 16, {n};",
            d = in(reg32) dst, s = in(reg64) src, n = in(reg32) if valid { 16u32 } else { 0 },
            options(nostack, preserves_flags),
        );
    }
    #[cfg(not(target_feature = "sm_80"))]
    // SAFETY: the caller's contract.
    unsafe {
        let (a, b) = if valid {
            let p = src.cast::<u64>();
            (*p, *p.add(1))
        } else {
            (0, 0)
        };
        u64::st_shared(dst, a);
        u64::st_shared(dst + 8, b);
    }
}

macro_rules! copy_scalar {
    ($(#[$doc:meta])* $name:ident, $t:ty, $bytes:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As [`copy16`], with the element's size and alignment.
        #[inline(always)]
        pub unsafe fn $name(dst: u32, src: *const $t, valid: bool) {
            #[cfg(target_feature = "sm_80")]
            // SAFETY: the caller's contract; src-size 0 reads nothing.
            unsafe {
                asm!(
                    concat!("cp.async.ca.shared.global [{d}], [{s}], ", $bytes, ", {n};"),
                    d = in(reg32) dst, s = in(reg64) src, n = in(reg32) if valid { $bytes } else { 0u32 },
                    options(nostack, preserves_flags),
                );
            }
            #[cfg(not(target_feature = "sm_80"))]
            // SAFETY: the caller's contract.
            unsafe {
                <$t>::st_shared(dst, if valid { *src } else { 0 as $t });
            }
        }
    };
}

copy_scalar!(
    /// Copies one `f32` (4 bytes) from `src` to `dst`, or zero when
    /// `valid` is false.
    copy_f32, f32, 4
);
copy_scalar!(
    /// Copies one `f64` (8 bytes) from `src` to `dst`, or zero when
    /// `valid` is false.
    copy_f64, f64, 8
);

/// Closes this thread's copies issued since the last call into a group
/// (an empty group when there were none).
#[inline(always)]
pub fn commit_group() {
    #[cfg(target_feature = "sm_80")]
    // SAFETY: no operands; orders nothing but this thread's own copies.
    unsafe {
        asm!("cp.async.commit_group;", options(nostack, preserves_flags));
    }
}

/// Waits until at most `N` of this thread's committed groups are still
/// in flight: every older group's bytes are then in shared memory, visible
/// to this thread.
#[inline(always)]
pub fn wait_group<const N: u32>() {
    #[cfg(target_feature = "sm_80")]
    // SAFETY: waits only; acts as a compiler memory barrier (no `nomem`),
    // so shared reads after it are not hoisted above it.
    unsafe {
        asm!("cp.async.wait_group {n};", n = const N, options(nostack, preserves_flags));
    }
}
