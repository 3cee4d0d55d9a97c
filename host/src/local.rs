//! Local memory (lesson 004, §5.3.2): a per-thread histogram kept in local
//! memory (indexed by the data) or in registers (constant indices only),
//! [`coalesce_kernels::local`].
//!
//! Thread `t` of the grid's `T` threads counts the elements `t, t + T, …`
//! of `data` into [`BINS`] bins (`(v >> shift) % BINS`) and writes bin `b`
//! to `counts[b · T + t]`. Both variants compute the same counts; what
//! differs is where the 16-word array lives, which `ptxas -v` shows as a
//! stack frame (and the driver as local bytes per thread,
//! [`crate::KernelLimits::local_bytes_per_thread`]).

use coalesce_kernels::local::{BINS as KERNEL_BINS, THREADS};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::LaunchConfig;
use crate::memory::{DeviceView, DeviceViewMut};

/// Bins of the per-thread histogram.
pub const BINS: usize = KERNEL_BINS;

// The reference takes the bin with a mask.
const _: () = assert!(BINS.is_power_of_two());

/// Where the per-thread histogram lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HistogramVariant {
    /// `hist[bin] += 1`: a run-time index, so local memory
    /// (`local_histogram_dynamic`).
    Local,
    /// `hist[k] += (k == bin)` for every `k`: constant indices, registers
    /// (`local_histogram_registers`).
    Registers,
}

impl HistogramVariant {
    /// Both, local memory first.
    pub const ALL: [HistogramVariant; 2] = [HistogramVariant::Local, HistogramVariant::Registers];

    /// The kernel.
    pub fn kernel(self) -> &'static str {
        match self {
            HistogramVariant::Local => "local_histogram_dynamic",
            HistogramVariant::Registers => "local_histogram_registers",
        }
    }

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            HistogramVariant::Local => "local",
            HistogramVariant::Registers => "registers",
        }
    }
}

/// The launch of `blocks` blocks of the histogram kernels' threads.
pub fn histogram_launch(blocks: u32) -> LaunchConfig {
    LaunchConfig::new(blocks, THREADS)
}

/// Words of `counts` for a grid of `blocks` blocks: `BINS · blocks ·
/// THREADS`.
pub fn counts_len(blocks: u32) -> usize {
    BINS * blocks as usize * THREADS as usize
}

impl Gpu {
    /// Runs `variant` over `data` with `blocks` blocks, writing the
    /// per-thread counts into `counts` (exactly [`counts_len`] words).
    /// Queued on the stream; returns the launch.
    ///
    /// Errors before any launch: `shift` ≥ 32, a zero or oversized grid,
    /// `counts` of the wrong length, a view of another context.
    pub fn local_histogram(
        &self,
        variant: HistogramVariant,
        data: &DeviceView<'_, u32>,
        counts: &mut DeviceViewMut<'_, u32>,
        shift: u32,
        blocks: u32,
    ) -> Result<LaunchConfig> {
        let k = variant.kernel();
        if shift >= 32 {
            return Err(Error::InvalidArgument { op: k, message: format!("shift {shift} is not below 32") });
        }
        if blocks == 0 {
            return Err(Error::InvalidArgument { op: k, message: "the grid needs at least one block".into() });
        }
        if counts.len() != counts_len(blocks) {
            return Err(Error::LengthMismatch { op: k, expected: counts_len(blocks), got: counts.len() });
        }
        data.check_gpu(self, k)?;
        counts.check_gpu(self, k)?;
        let cfg = histogram_launch(blocks);
        let (c, d, n) = (counts.device_ptr(), data.device_ptr(), data.len());
        // SAFETY: `data` is a live view of this context of `n` words;
        // `counts` holds BINS · (blocks · THREADS) words (checked) and is
        // borrowed mutably, so it overlaps nothing the kernel reads.
        unsafe { self.launch(k, &cfg, &[&c, &d, &n, &shift])? };
        Ok(cfg)
    }

    /// A grid for the histogram kernels: `waves` times the blocks of
    /// `variant` that fit on the device at once.
    pub fn histogram_blocks(&self, variant: HistogramVariant, waves: u32) -> Result<u32> {
        Ok(self.max_resident_blocks(variant.kernel(), THREADS)?.saturating_mul(waves.max(1)))
    }
}

/// The CPU reference: the counts `T = counts.len() / BINS` threads write
/// (`counts.len()` must be a multiple of `BINS`), with rayon.
pub fn reference_histogram(data: &[u32], shift: u32, counts: &mut [u32]) -> Result<()> {
    const OP: &str = "local::reference_histogram";
    if shift >= 32 {
        return Err(Error::InvalidArgument { op: OP, message: format!("shift {shift} is not below 32") });
    }
    if counts.is_empty() || !counts.len().is_multiple_of(BINS) {
        return Err(Error::InvalidArgument {
            op: OP,
            message: format!("{} counts are not a positive multiple of {BINS} bins", counts.len()),
        });
    }
    let threads = counts.len() / BINS;
    let per_thread: Vec<[u32; BINS]> = (0..threads)
        .into_par_iter()
        .map(|t| {
            let mut h = [0u32; BINS];
            for &v in data.iter().skip(t).step_by(threads) {
                h[((v >> shift) & (BINS as u32 - 1)) as usize] += 1;
            }
            h
        })
        .collect();
    counts.par_chunks_mut(threads).enumerate().for_each(|(b, row)| {
        for (c, h) in row.iter_mut().zip(&per_thread) {
            *c = h[b];
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_counts_per_thread_and_bin() {
        // 2 threads; thread 0 sees 0, 17, 2; thread 1 sees 1, 33.
        let data = [0u32, 1, 17, 33, 2];
        let mut counts = vec![u32::MAX; BINS * 2];
        reference_histogram(&data, 0, &mut counts).unwrap();
        let mut want = vec![0u32; BINS * 2];
        want[0] = 1; // bin 0, thread 0: 0
        want[2] = 1; // bin 1, thread 0: 17
        want[2 + 1] = 2; // bin 1, thread 1: 1, 33
        want[4] = 1; // bin 2, thread 0: 2
        assert_eq!(counts, want);
        // Shifted: 16 >> 4 = 1.
        reference_histogram(&[16u32], 4, &mut counts[..BINS]).unwrap();
        assert_eq!(counts[1], 1);
        assert_eq!(counts[..BINS].iter().sum::<u32>(), 1);
    }

    #[test]
    fn reference_refuses_bad_arguments() {
        assert!(matches!(reference_histogram(&[1], 32, &mut [0; BINS]), Err(Error::InvalidArgument { .. })));
        assert!(matches!(reference_histogram(&[1], 0, &mut [0; BINS + 1]), Err(Error::InvalidArgument { .. })));
        assert!(matches!(reference_histogram(&[1], 0, &mut []), Err(Error::InvalidArgument { .. })));
        assert_eq!(counts_len(3), BINS * 3 * THREADS as usize);
        assert_eq!(histogram_launch(7).grid.x, 7);
    }
}
