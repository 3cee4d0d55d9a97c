//! Grid-stride ranges: each thread starts at its global id and steps by the
//! number of threads in the grid, so any grid size covers any `n`.

/// The indices `start, start + step, start + 2·step, …` below `end`.
///
/// `step` must be non-zero. Indices are `usize`, so no element count a
/// device allocation can hold overflows them (`next + step` stays below
/// `end + step`, far from `usize::MAX` for real allocations).
#[derive(Clone, Debug)]
pub struct GridStride {
    next: usize,
    end: usize,
    step: usize,
}

impl GridStride {
    /// A range from `start` by `step` up to (excluding) `end`.
    #[inline(always)]
    pub const fn new(start: usize, step: usize, end: usize) -> Self {
        Self { next: start, end, step }
    }
}

impl Iterator for GridStride {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.next < self.end {
            let i = self.next;
            self.next += self.step;
            Some(i)
        } else {
            None
        }
    }
}

/// This thread's grid-stride range over `0..n` in x: starts at the global x
/// id and steps by `blockDim.x · gridDim.x`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn grid_stride(n: usize) -> GridStride {
    GridStride::new(crate::dev::index::global_id_x(), crate::dev::index::grid_threads_x(), n)
}

/// `ceil(n / d)` for launch arithmetic shared by host and device (`d > 0`).
#[inline(always)]
pub const fn div_ceil(n: usize, d: usize) -> usize {
    n.div_ceil(d)
}

#[cfg(test)]
mod tests {
    use super::GridStride;

    #[test]
    fn every_index_once_across_threads() {
        for n in [0usize, 1, 5, 31, 32, 33, 1000] {
            for threads in [1usize, 3, 32, 256] {
                let mut seen = [0u8; 1000];
                for t in 0..threads {
                    for i in GridStride::new(t, threads, n) {
                        seen[i] += 1;
                    }
                }
                assert!(seen[..n].iter().all(|&c| c == 1), "n={n} threads={threads}");
                assert!(seen[n..].iter().all(|&c| c == 0));
            }
        }
    }
}
