//! Warps: the warp size, lane ids, register shuffles and votes.
//!
//! Shuffles are written as inline PTX (`shfl.sync.down` / `shfl.sync.bfly`)
//! so each function maps to exactly one instruction; the host's SASS tests
//! check that `shfl_down` is `SHFL.DOWN` and `shfl_xor` is `SHFL.BFLY`.

/// Threads per warp on every NVIDIA GPU to date (`warpSize`).
pub const WARP_SIZE: u32 = 32;

/// The member mask naming all 32 lanes.
pub const FULL_MASK: u32 = 0xffff_ffff;

#[cfg(target_arch = "nvptx64")]
mod device {
    use core::arch::asm;

    /// This thread's lane (0..32) inside its warp (`%laneid`).
    #[inline(always)]
    pub fn lane_id() -> u32 {
        let lane: u32;
        // SAFETY: reads a special register; no memory access.
        unsafe {
            asm!("mov.u32 {0}, %laneid;", out(reg32) lane, options(pure, nomem, nostack, preserves_flags));
        }
        lane
    }

    /// `__shfl_down_sync(mask, v, delta)`: the value of lane `lane + delta`;
    /// lanes whose source is past the warp keep their own value.
    ///
    /// # Safety
    /// Every lane named in `mask` must execute this same shuffle.
    #[inline(always)]
    pub unsafe fn shfl_down(mask: u32, v: u32, delta: u32) -> u32 {
        let r: u32;
        // SAFETY: register-only; the caller upholds the mask contract.
        // c = 0x1f: clamp at the last lane of a full 32-lane segment.
        unsafe {
            asm!(
                "shfl.sync.down.b32 {r}, {v}, {d}, 0x1f, {m};",
                r = out(reg32) r, v = in(reg32) v, d = in(reg32) delta, m = in(reg32) mask,
                options(nomem, nostack, preserves_flags),
            );
        }
        r
    }

    /// `__shfl_up_sync(mask, v, delta)`: the value of lane `lane − delta`;
    /// lanes whose source is before the warp keep their own value.
    ///
    /// # Safety
    /// Every lane named in `mask` must execute this same shuffle.
    #[inline(always)]
    pub unsafe fn shfl_up(mask: u32, v: u32, delta: u32) -> u32 {
        let r: u32;
        // SAFETY: register-only; the caller upholds the mask contract.
        // c = 0: clamp at the first lane of a full 32-lane segment.
        unsafe {
            asm!(
                "shfl.sync.up.b32 {r}, {v}, {d}, 0, {m};",
                r = out(reg32) r, v = in(reg32) v, d = in(reg32) delta, m = in(reg32) mask,
                options(nomem, nostack, preserves_flags),
            );
        }
        r
    }

    /// `__shfl_xor_sync(mask, v, lane_mask)`: the value of lane
    /// `lane ^ lane_mask` (the butterfly used for all-reduce).
    ///
    /// # Safety
    /// Every lane named in `mask` must execute this same shuffle.
    #[inline(always)]
    pub unsafe fn shfl_xor(mask: u32, v: u32, lane_mask: u32) -> u32 {
        let r: u32;
        // SAFETY: register-only; the caller upholds the mask contract.
        unsafe {
            asm!(
                "shfl.sync.bfly.b32 {r}, {v}, {d}, 0x1f, {m};",
                r = out(reg32) r, v = in(reg32) v, d = in(reg32) lane_mask, m = in(reg32) mask,
                options(nomem, nostack, preserves_flags),
            );
        }
        r
    }

    /// [`shfl_down`] for `f32` (moves the bits).
    ///
    /// # Safety
    /// As [`shfl_down`].
    #[inline(always)]
    pub unsafe fn shfl_down_f32(mask: u32, v: f32, delta: u32) -> f32 {
        // SAFETY: forwarded.
        f32::from_bits(unsafe { shfl_down(mask, v.to_bits(), delta) })
    }

    /// [`shfl_up`] for `f32` (moves the bits).
    ///
    /// # Safety
    /// As [`shfl_up`].
    #[inline(always)]
    pub unsafe fn shfl_up_f32(mask: u32, v: f32, delta: u32) -> f32 {
        // SAFETY: forwarded.
        f32::from_bits(unsafe { shfl_up(mask, v.to_bits(), delta) })
    }

    /// [`shfl_xor`] for `f32` (moves the bits).
    ///
    /// # Safety
    /// As [`shfl_xor`].
    #[inline(always)]
    pub unsafe fn shfl_xor_f32(mask: u32, v: f32, lane_mask: u32) -> f32 {
        // SAFETY: forwarded.
        f32::from_bits(unsafe { shfl_xor(mask, v.to_bits(), lane_mask) })
    }

    /// [`shfl_down`] for `i32` (moves the bits).
    ///
    /// # Safety
    /// As [`shfl_down`].
    #[inline(always)]
    pub unsafe fn shfl_down_i32(mask: u32, v: i32, delta: u32) -> i32 {
        // SAFETY: forwarded.
        unsafe { shfl_down(mask, v as u32, delta) as i32 }
    }

    /// [`shfl_xor`] for `i32` (moves the bits).
    ///
    /// # Safety
    /// As [`shfl_xor`].
    #[inline(always)]
    pub unsafe fn shfl_xor_i32(mask: u32, v: i32, lane_mask: u32) -> i32 {
        // SAFETY: forwarded.
        unsafe { shfl_xor(mask, v as u32, lane_mask) as i32 }
    }

    /// [`shfl_down`] for `f64`: a shuffle moves 32 bits, so the two halves
    /// move separately (two `SHFL.DOWN`).
    ///
    /// # Safety
    /// As [`shfl_down`].
    #[inline(always)]
    pub unsafe fn shfl_down_f64(mask: u32, v: f64, delta: u32) -> f64 {
        let b = v.to_bits();
        // SAFETY: forwarded.
        let (lo, hi) = unsafe { (shfl_down(mask, b as u32, delta), shfl_down(mask, (b >> 32) as u32, delta)) };
        f64::from_bits(((hi as u64) << 32) | lo as u64)
    }

    /// [`shfl_xor`] for `f64` (two `SHFL.BFLY` of its halves).
    ///
    /// # Safety
    /// As [`shfl_xor`].
    #[inline(always)]
    pub unsafe fn shfl_xor_f64(mask: u32, v: f64, lane_mask: u32) -> f64 {
        let b = v.to_bits();
        // SAFETY: forwarded.
        let (lo, hi) = unsafe { (shfl_xor(mask, b as u32, lane_mask), shfl_xor(mask, (b >> 32) as u32, lane_mask)) };
        f64::from_bits(((hi as u64) << 32) | lo as u64)
    }

    /// `__shfl_sync(mask, v, src)`: the value of lane `src` (0..32).
    ///
    /// # Safety
    /// Every lane named in `mask` must execute this same shuffle.
    #[inline(always)]
    pub unsafe fn shfl_idx(mask: u32, v: u32, src: u32) -> u32 {
        let r: u32;
        // SAFETY: register-only; the caller upholds the mask contract.
        unsafe {
            asm!(
                "shfl.sync.idx.b32 {r}, {v}, {s}, 0x1f, {m};",
                r = out(reg32) r, v = in(reg32) v, s = in(reg32) src, m = in(reg32) mask,
                options(nomem, nostack, preserves_flags),
            );
        }
        r
    }

    /// `__syncwarp()`: every lane of the warp waits here for the others;
    /// shared-memory writes before it are visible to every lane after it.
    ///
    /// # Safety
    /// All 32 lanes must execute this same barrier.
    #[inline(always)]
    pub unsafe fn sync_warp() {
        // SAFETY: the caller upholds the full-warp contract; acts as a
        // compiler memory barrier (no `nomem`).
        unsafe { asm!("bar.warp.sync -1;", options(nostack, preserves_flags)) }
    }

    /// `__ballot_sync(mask, pred)`: bit `i` set when lane `i` (named in
    /// `mask`) has `pred` true.
    ///
    /// # Safety
    /// Every lane named in `mask` must execute this same vote.
    #[inline(always)]
    pub unsafe fn ballot(mask: u32, pred: bool) -> u32 {
        let r: u32;
        // SAFETY: register-only; the caller upholds the mask contract.
        unsafe {
            asm!(
                "{{ .reg .pred p; setp.ne.u32 p, {v}, 0; vote.sync.ballot.b32 {r}, p, {m}; }}",
                r = out(reg32) r, v = in(reg32) pred as u32, m = in(reg32) mask,
                options(nomem, nostack, preserves_flags),
            );
        }
        r
    }

    /// `__syncwarp(mask)`: waits for the lanes of `mask`, and orders their
    /// shared and global memory accesses before it against those after it.
    ///
    /// # Safety
    /// Every lane named in `mask` must execute this same barrier.
    #[inline(always)]
    pub unsafe fn sync_lanes(mask: u32) {
        // SAFETY: the caller upholds the mask contract; a compiler memory
        // barrier too (no `nomem`).
        unsafe { asm!("bar.warp.sync {m};", m = in(reg32) mask, options(nostack, preserves_flags)) }
    }

    /// `__activemask()`: bit `i` set when lane `i` executes this with the
    /// caller (exited lanes are not set).
    #[inline(always)]
    pub fn active_mask() -> u32 {
        let r: u32;
        // SAFETY: reads the warp's active lanes; no memory access.
        unsafe { asm!("activemask.b32 {r};", r = out(reg32) r, options(nomem, nostack, preserves_flags)) }
        r
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::*;
