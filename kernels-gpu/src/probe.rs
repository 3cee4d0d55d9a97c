//! Probe kernels: one small kernel per device-support piece, so that each
//! piece runs on the GPU against a CPU answer and is inspected in SASS.
//! They are tests of the support layer, kept in the library so the checks
//! travel with it.

/// Words written per thread by `probe_index`: threadIdx, blockIdx, blockDim,
/// gridDim (x, y, z each).
pub const INDEX_WORDS: usize = 12;

/// Length of the `PROBE_TABLE` constant-memory array.
pub const TABLE_LEN: usize = 64;

/// Elements per block in `probe_shared_reverse` (its static tile).
pub const REVERSE_TILE: usize = 256;

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{INDEX_WORDS, REVERSE_TILE};
    use crate::dev::grid::grid_stride;
    use crate::dev::index::*;
    use crate::dev::shared;
    use crate::dev::sync::sync_threads;
    use crate::dev::warp::{FULL_MASK, WARP_SIZE, lane_id, shfl_down, shfl_xor};

    crate::constant_array!(
        /// A constant-memory table the host fills by name.
        PROBE_TABLE: [u32; 64], align 4, "u32"
    );

    crate::shared_array!(
        /// The static tile of `probe_shared_reverse`.
        PROBE_TILE: [u32; 256], align 16, "u32"
    );

    /// Each thread of a 3D launch writes its indices and the launch shape.
    ///
    /// # Safety
    /// `out` must hold `INDEX_WORDS` words per thread of the launch.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_index(out: *mut u32) {
        let block_linear = (block_idx_z() as usize * grid_dim_y() as usize + block_idx_y() as usize)
            * grid_dim_x() as usize
            + block_idx_x() as usize;
        let t = block_linear * block_threads() as usize + thread_rank_in_block() as usize;
        let v = [
            thread_idx_x(),
            thread_idx_y(),
            thread_idx_z(),
            block_idx_x(),
            block_idx_y(),
            block_idx_z(),
            block_dim_x(),
            block_dim_y(),
            block_dim_z(),
            grid_dim_x(),
            grid_dim_y(),
            grid_dim_z(),
        ];
        for (k, x) in v.into_iter().enumerate() {
            // SAFETY: the caller sized `out` for every thread.
            unsafe { *out.add(t * INDEX_WORDS + k) = x };
        }
    }

    /// `out[i] = PROBE_TABLE[i % 64] ^ i`, every thread of a warp reading
    /// the same table entry at the same time (a constant-cache broadcast).
    ///
    /// # Safety
    /// `out` must hold `n` words.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_const(out: *mut u32, n: usize) {
        for i in grid_stride(n) {
            // warp-uniform index: all 32 lanes of a warp read one entry.
            let entry = PROBE_TABLE::get((i / WARP_SIZE as usize) % PROBE_TABLE::LEN);
            // SAFETY: i < n.
            unsafe { *out.add(i) = entry ^ i as u32 };
        }
    }

    /// Reverses each block's `REVERSE_TILE` elements through a static shared
    /// tile: store, barrier, load the mirrored slot. Launched with
    /// `REVERSE_TILE` threads per block; a partial last block reverses its
    /// partial chunk.
    ///
    /// # Safety
    /// `input` and `out` must hold `n` words; block size `REVERSE_TILE`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_shared_reverse(input: *const u32, out: *mut u32, n: usize) {
        let tile = PROBE_TILE::view();
        let t = thread_idx_x() as usize;
        let base = block_idx_x() as usize * REVERSE_TILE;
        let len = if n - base < REVERSE_TILE { n - base } else { REVERSE_TILE };
        // SAFETY: t < REVERSE_TILE (block size); each slot written by one
        // thread, read only after the barrier.
        unsafe {
            if t < len {
                tile.write(t, *input.add(base + t));
            }
            sync_threads();
            if t < len {
                *out.add(base + t) = tile.read(len - 1 - t);
            }
        }
    }

    /// As `probe_shared_reverse`, through dynamic shared memory sized by the
    /// launch (`blockDim.x` words), so any block size works.
    ///
    /// # Safety
    /// `input` and `out` must hold `n` words; launched with
    /// `blockDim.x · 4` bytes of dynamic shared memory.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_dynamic_reverse(input: *const u32, out: *mut u32, n: usize) {
        // SAFETY: the launch provides blockDim.x words.
        let tile = unsafe { shared::dynamic::<u32>() };
        let t = thread_idx_x() as usize;
        let chunk = block_dim_x() as usize;
        let base = block_idx_x() as usize * chunk;
        let len = if n - base < chunk { n - base } else { chunk };
        // SAFETY: as in `probe_shared_reverse`.
        unsafe {
            if t < len {
                tile.write(t, *input.add(base + t));
            }
            sync_threads();
            if t < len {
                *out.add(base + t) = tile.read(len - 1 - t);
            }
        }
    }

    /// Per full warp: `sums[w]` = wrapping sum of its 32 inputs by a
    /// shuffle-down tree (lane 0 holds it), and every lane's `all[i]` = the
    /// same sum by a butterfly (xor) all-reduce. Launch with a block size
    /// that is a multiple of 32 and `n` a multiple of 32.
    ///
    /// # Safety
    /// `input`, `all` hold `n` words, `sums` holds `n / 32`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn probe_warp_sum(input: *const u32, sums: *mut u32, all: *mut u32, n: usize) {
        let i = global_id_x();
        if i >= n {
            return; // whole warps only: n is a multiple of 32
        }
        // SAFETY: i < n; full warps reach every shuffle together.
        unsafe {
            let x = *input.add(i);
            let mut down = x;
            let mut bfly = x;
            let mut d = WARP_SIZE / 2;
            while d > 0 {
                down = down.wrapping_add(shfl_down(FULL_MASK, down, d));
                bfly = bfly.wrapping_add(shfl_xor(FULL_MASK, bfly, d));
                d /= 2;
            }
            if lane_id() == 0 {
                *sums.add(i / WARP_SIZE as usize) = down;
            }
            *all.add(i) = bfly;
        }
    }
}
