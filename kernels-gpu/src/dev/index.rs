//! Thread, block and grid indices (the CUDA built-ins `threadIdx`,
//! `blockIdx`, `blockDim`, `gridDim`) and the global ids derived from them.
//!
//! The special registers are read through `core::arch::nvptx`; reading them
//! has no precondition, so the wrappers are safe functions.

use core::arch::nvptx as nv;

macro_rules! special_registers {
    ($($(#[$doc:meta])* $name:ident => $intrinsic:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            // SAFETY: reads a read-only special register; always defined
            // inside a kernel.
            unsafe { nv::$intrinsic() }
        }
    )*};
}

special_registers! {
    /// `threadIdx.x`
    thread_idx_x => _thread_idx_x;
    /// `threadIdx.y`
    thread_idx_y => _thread_idx_y;
    /// `threadIdx.z`
    thread_idx_z => _thread_idx_z;
    /// `blockIdx.x`
    block_idx_x => _block_idx_x;
    /// `blockIdx.y`
    block_idx_y => _block_idx_y;
    /// `blockIdx.z`
    block_idx_z => _block_idx_z;
    /// `blockDim.x`
    block_dim_x => _block_dim_x;
    /// `blockDim.y`
    block_dim_y => _block_dim_y;
    /// `blockDim.z`
    block_dim_z => _block_dim_z;
    /// `gridDim.x`
    grid_dim_x => _grid_dim_x;
    /// `gridDim.y`
    grid_dim_y => _grid_dim_y;
    /// `gridDim.z`
    grid_dim_z => _grid_dim_z;
}

/// `blockIdx.x * blockDim.x + threadIdx.x`, widened before multiplying.
#[inline(always)]
pub fn global_id_x() -> usize {
    block_idx_x() as usize * block_dim_x() as usize + thread_idx_x() as usize
}

/// `blockIdx.y * blockDim.y + threadIdx.y`.
#[inline(always)]
pub fn global_id_y() -> usize {
    block_idx_y() as usize * block_dim_y() as usize + thread_idx_y() as usize
}

/// `blockIdx.z * blockDim.z + threadIdx.z`.
#[inline(always)]
pub fn global_id_z() -> usize {
    block_idx_z() as usize * block_dim_z() as usize + thread_idx_z() as usize
}

/// Threads in the grid along x: `blockDim.x * gridDim.x` (the grid stride).
#[inline(always)]
pub fn grid_threads_x() -> usize {
    block_dim_x() as usize * grid_dim_x() as usize
}

/// Linear index of this thread inside its block (x fastest).
#[inline(always)]
pub fn thread_rank_in_block() -> u32 {
    (thread_idx_z() * block_dim_y() + thread_idx_y()) * block_dim_x() + thread_idx_x()
}

/// Threads per block: `blockDim.x * blockDim.y * blockDim.z`.
#[inline(always)]
pub fn block_threads() -> u32 {
    block_dim_x() * block_dim_y() * block_dim_z()
}
