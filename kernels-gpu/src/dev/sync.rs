//! Block-level synchronization.

/// `__syncthreads()`: waits until every thread of the block has arrived and
/// makes their shared- and global-memory writes visible to each other.
///
/// Emitted as PTX `barrier.sync 0` (inline assembly), not the `bar.sync 0`
/// of LLVM's `llvm.nvvm.barrier0` intrinsic. `bar.sync` means
/// `barrier.sync.aligned`: every thread of a warp must execute the *same*
/// barrier instruction. LLVM may legally duplicate a barrier that follows
/// an `if` into both arms (tail duplication), after which the threads of a
/// warp that took different arms wait at two different `bar.sync`
/// instructions — and the block deadlocks on sm_70+ (seen on an H100 with
/// `if i < n { tile[t] = x[i] } sync_threads();` in a partial last tile).
/// The non-`.aligned` form allows threads to arrive from different
/// instructions, so any such duplication stays correct. The assembly keeps
/// its default memory clobber, so no memory access moves across it.
///
/// # Safety
/// Every thread of the block must reach the barrier the same number of
/// times (no call inside a loop or branch whose trip count differs across
/// the block), or the block deadlocks.
#[inline(always)]
pub unsafe fn sync_threads() {
    // SAFETY: forwarded to the caller's contract above; the instruction
    // reads and writes no registers.
    unsafe { core::arch::asm!("barrier.sync 0;", options(nostack, preserves_flags)) }
}

/// `cudaGridDependencySynchronize()`: on sm_90 and newer, waits until the
/// grids this launch depends on have completed and their memory writes are
/// visible (PTX `griddepcontrol.wait`); elsewhere nothing.
///
/// A kernel launched with programmatic stream serialization (the host does
/// so for every kernel whose PTX starts with this wait; the convolution
/// kernels from [`DEPENDENT_LAUNCH_MIN_SM`](crate::DEPENDENT_LAUNCH_MIN_SM)
/// on) may start while the kernel before it on the stream still runs:
/// its blocks are placed and run up to this wait as the earlier kernel's
/// blocks exit, which hides the gap between the two grids. Such a kernel
/// calls this before its first global memory access, so it reads nothing
/// the earlier kernel has yet to write and writes nothing it has yet to
/// read: the convolution kernels call it as their first statement.
/// Without that launch attribute the wait returns at once. The
/// assembly keeps its default memory clobber, so no memory access moves
/// above it.
#[inline(always)]
pub fn grid_dependency_wait() {
    #[cfg(target_feature = "sm_90")]
    // SAFETY: the instruction reads and writes no registers or memory.
    unsafe {
        core::arch::asm!("griddepcontrol.wait;", options(nostack, preserves_flags))
    }
}
