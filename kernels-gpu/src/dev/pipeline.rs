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

/// `cp.async.<cache>` of `bytes` (4, 8 or 16; `src`-size 0, zeros, when
/// not `valid`).
#[cfg(target_feature = "sm_80")]
macro_rules! cp_async {
    ($cache:literal, $bytes:literal, $dst:expr, $src:expr, $valid:expr) => {
        asm!(
            concat!("cp.async.", $cache, ".shared.global [{d}], [{s}], ", $bytes, ", {n};"),
            d = in(reg32) $dst, s = in(reg64) $src, n = in(reg32) if $valid { $bytes } else { 0u32 },
            options(nostack, preserves_flags),
        )
    };
}

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
    // SAFETY: the caller's contract.
    unsafe { copy16_via::<false>(dst, src, valid) }
}

/// [`copy16`] (`L1` false) or [`copy16_l1`] (below sm_80 the same
/// synchronous copy).
///
/// # Safety
/// As [`copy16`].
#[inline(always)]
unsafe fn copy16_via<const L1: bool>(dst: u32, src: *const u8, valid: bool) {
    #[cfg(target_feature = "sm_80")]
    // SAFETY: the caller's contract; src-size 0 reads nothing.
    unsafe {
        if L1 { cp_async!("ca", 16, dst, src, valid) } else { cp_async!("cg", 16, dst, src, valid) }
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

/// [`copy16`] through L1 (`cp.async.ca`): the L2 reads each 32-byte
/// sector once, where [`copy16`]'s `.cg` looks it up once per 16-byte
/// half (twice the L2 reads), but the bytes also pass through L1 on their
/// way to shared memory. On an H200 (`results/h200/cp-async/`) a pipeline
/// that only copies 16 KiB tiles read 8.4 M sectors of L2 with it against
/// 16.8 M with `.cg` for the same 8.4 M sectors of data, and ran at 86%
/// of `cuMemcpyDtoD` against 82%; the strip kernels, which stream rows
/// through per-warp rings with no block barrier, gained 7–9 points at
/// 3 × 3 (83% to 90–92% of the floor) and 2 at 5 × 5. Kernels whose shared memory
/// is their busiest unit lost up to 7 points with it (the batched rows at
/// w = 31, the separable stream), so they keep [`copy16`].
///
/// # Safety
/// As [`copy16`].
#[inline(always)]
pub unsafe fn copy16_l1(dst: u32, src: *const u8, valid: bool) {
    // SAFETY: the caller's contract.
    unsafe { copy16_via::<true>(dst, src, valid) }
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
                cp_async!("ca", $bytes, dst, src, valid);
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

/// Bulk copies on an `mbarrier` (sm_90): one thread copies a whole
/// 16-byte-aligned range from global to shared memory with one
/// instruction (`cp.async.bulk`, the copy engine), and the block waits
/// for it on a barrier object in shared memory that counts the bytes
/// landed. The copy takes no thread's instructions past the one, no
/// registers while in flight, and reads each 32-byte sector of the L2
/// once (the 16-byte `cp.async.cg` looks each up once per half).
///
/// A barrier counts phases: a phase completes when its one expected
/// arrival ([`bulk_copy`] or [`arrive`]) has happened and every byte that
/// arrival announced has landed. [`wait_parity`] waits for the phase of a
/// given parity, so a caller that arrives once per use of a buffer waits
/// on the parity of its latest arrival.
#[cfg(target_feature = "sm_90")]
pub mod bulk {
    use core::arch::asm;

    /// Bytes of one barrier object (8-byte aligned in shared memory).
    pub const BARRIER_BYTES: u32 = 8;

    /// Initializes the barrier at shared-window address `bar` for one
    /// arrival per phase.
    ///
    /// # Safety
    /// `bar` 8-byte aligned inside this block's shared memory, not in use;
    /// one thread initializes it, then runs [`fence_init`], and a block
    /// barrier follows before any thread uses it.
    #[inline(always)]
    pub unsafe fn init(bar: u32) {
        // SAFETY: the caller's contract.
        unsafe { asm!("mbarrier.init.shared::cta.b64 [{b}], 1;", b = in(reg32) bar, options(nostack, preserves_flags)) }
    }

    /// Makes this thread's earlier [`init`]s visible to the copy engine
    /// (`fence.mbarrier_init`): once after the last of them.
    #[inline(always)]
    pub fn fence_init() {
        // SAFETY: a fence; reads and writes nothing.
        unsafe { asm!("fence.mbarrier_init.release.cluster;", options(nostack, preserves_flags)) }
    }

    /// Orders this thread's earlier generic-proxy writes to shared memory
    /// before later bulk copies (the async proxy) into the same bytes:
    /// every thread that wrote a buffer runs it before the block barrier
    /// that precedes the buffer's next [`bulk_copy`].
    #[inline(always)]
    pub fn fence_writes() {
        // SAFETY: a fence; reads and writes nothing.
        unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack, preserves_flags)) }
    }

    /// Arrives on `bar`, announcing `bytes`, and starts copying `bytes`
    /// from global `src` to shared-window address `dst`: the phase
    /// completes when they have landed.
    ///
    /// # Safety
    /// `bar` initialized ([`init`]) and this the phase's one arrival;
    /// `dst` and `src` 16-byte aligned, `bytes` a positive multiple of 16,
    /// `src` valid for `bytes`, `dst … dst + bytes` inside this block's
    /// shared memory, which no thread reads or writes until the phase has
    /// completed ([`wait_parity`]) and which every earlier reader has
    /// finished with (a block barrier since; writers also ran
    /// [`fence_writes`]).
    #[inline(always)]
    pub unsafe fn bulk_copy(dst: u32, src: *const u8, bytes: u32, bar: u32) {
        // SAFETY: the caller's contract.
        unsafe {
            asm!(
                "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};",
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{s}], {n}, [{b}];",
                b = in(reg32) bar, n = in(reg32) bytes, d = in(reg32) dst, s = in(reg64) src,
                options(nostack, preserves_flags),
            )
        }
    }

    /// Starts loading `bytes` from global `src` into the L2 (no copy to
    /// shared memory, nothing to wait for): a later bulk copy of them
    /// then finds them there.
    ///
    /// # Safety
    /// `src` 16-byte aligned and valid for `bytes`, a positive multiple of
    /// 16.
    #[inline(always)]
    pub unsafe fn prefetch_l2(src: *const u8, bytes: u32) {
        // SAFETY: the caller's contract.
        unsafe {
            asm!("cp.async.bulk.prefetch.L2.global [{s}], {n};", s = in(reg64) src, n = in(reg32) bytes,
                 options(nostack, preserves_flags))
        }
    }

    /// Arrives on `bar` with nothing to copy: the phase completes at once.
    ///
    /// # Safety
    /// `bar` initialized ([`init`]) and this the phase's one arrival.
    #[inline(always)]
    pub unsafe fn arrive(bar: u32) {
        // SAFETY: the caller's contract.
        unsafe {
            asm!("mbarrier.arrive.shared::cta.b64 _, [{b}];", b = in(reg32) bar, options(nostack, preserves_flags))
        }
    }

    /// Waits until the phase of parity `parity` (0 or 1) of `bar` has
    /// completed: the bytes its copy announced are then in shared memory,
    /// visible to this thread.
    ///
    /// # Safety
    /// `bar` initialized; the phase waited for is the barrier's current
    /// one or the one before it (no phase of the barrier completes twice
    /// unobserved between an arrival and the wait for it).
    #[inline(always)]
    pub unsafe fn wait_parity(bar: u32, parity: u32) {
        loop {
            let done: u32;
            // SAFETY: the caller's contract; acts as a compiler memory
            // barrier (no `nomem`), so shared reads after it stay after it.
            unsafe {
                asm!(
                    "{{",
                    ".reg .pred p;",
                    "mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {q};",
                    "selp.u32 {d}, 1, 0, p;",
                    "}}",
                    b = in(reg32) bar, q = in(reg32) parity, d = out(reg32) done,
                    options(nostack, preserves_flags),
                )
            }
            if done != 0 {
                break;
            }
        }
    }
}
