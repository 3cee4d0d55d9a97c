//! Block-level synchronization.

/// `__syncthreads()`: waits until every thread of the block has arrived and
/// makes their shared- and global-memory writes visible to each other.
///
/// # Safety
/// Every thread of the block must reach the same barrier (no call inside a
/// branch that diverges across the block), or the block deadlocks or the
/// behaviour is undefined.
#[inline(always)]
pub unsafe fn sync_threads() {
    // SAFETY: forwarded to the caller's contract above.
    unsafe { core::arch::nvptx::_syncthreads() }
}
