//! The measurement mechanism every benchmark suite shares: warm-up, batch calibration, timed samples with CUDA events,
//! and the statistics over them.
//!
//! A suite hands [`measure`] a closure that queues *one* operation on the [`Gpu`]'s stream. Operations too short to
//! time one by one (a few microseconds, near the events' resolution and the launch overhead) are queued in batches:
//! each sample times `batch` back-to-back operations and is divided by `batch`, so every figure in [`Stats`] is per
//! operation.
//!
//! Each sample (and the calibrating call) is queued behind one untimed operation, so that its start event fires when
//! the GPU finishes that operation, with the sample's first operation already queued: a sample times the GPU's work on
//! back-to-back operations, not the host's time to queue the first of them (a `Filter2d::run` call that took 13 µs on
//! the host added 2 µs, 7%, to each of a batch of six 33 µs box filters on the H200). Where the host takes longer per
//! operation than the GPU, the GPU waits between operations and the samples show it.
//!
//! Units: times in milliseconds; bandwidth in GB/s with 1 GB = 1e9 bytes, where the bytes moved by an operation are the
//! bytes it reads plus the bytes it writes (a copy of `n` bytes moves `2n`).

use serde::Serialize;

use crate::{Error, Gpu};

/// Largest number of operations one timed sample may hold.
pub const MAX_BATCH: usize = 1000;

/// How a measurement is taken.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Settings {
    /// Untimed operations run first (clocks up, caches and TLBs warm, lazy module loading done). Default 3.
    pub warmup: usize,
    /// Timed samples. Default 20.
    pub reps: usize,
    /// Shortest acceptable sample, ms: operations faster than this are
    /// timed in batches long enough to reach it. Default 0.2.
    pub min_sample_ms: f32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { warmup: 3, reps: 20, min_sample_ms: 0.2 }
    }
}

/// Statistics over the samples of one measurement, per operation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// Median time per operation, ms.
    pub median_ms: f64,
    /// Fastest sample, ms per operation.
    pub min_ms: f64,
    /// Slowest sample, ms per operation.
    pub max_ms: f64,
    /// Mean over the samples, ms per operation.
    pub mean_ms: f64,
    /// 10th percentile, ms per operation.
    pub p10_ms: f64,
    /// 90th percentile, ms per operation.
    pub p90_ms: f64,
    /// Number of samples.
    pub reps: usize,
    /// Operations per sample.
    pub batch: usize,
}

impl Stats {
    /// Statistics over per-operation times `per_op_ms` (one per sample, each already divided by `batch`). `None` when
    /// there are no samples or one of them is not a finite number.
    pub fn from_samples(per_op_ms: &[f64], batch: usize) -> Option<Stats> {
        if per_op_ms.is_empty() || per_op_ms.iter().any(|t| !t.is_finite()) {
            return None;
        }
        let mut sorted = per_op_ms.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Stats {
            median_ms: percentile(&sorted, 50.0),
            min_ms: sorted[0],
            max_ms: sorted[sorted.len() - 1],
            mean_ms: sorted.iter().sum::<f64>() / sorted.len() as f64,
            p10_ms: percentile(&sorted, 10.0),
            p90_ms: percentile(&sorted, 90.0),
            reps: sorted.len(),
            batch,
        })
    }
}

/// The `p`-th percentile (0–100) of ascending `sorted` values, linearly interpolated between the two nearest ranks (so
/// the 50th percentile of an even count is the mean of the middle two). `NaN` for an empty slice.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let rank = (p.clamp(0.0, 100.0) / 100.0) * (n - 1) as f64;
            let lo = rank.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            let frac = rank - lo as f64;
            sorted[lo] + (sorted[hi] - sorted[lo]) * frac
        }
    }
}

/// Operations per sample so that one sample lasts at least `min_sample_ms`, given that one operation took `single_ms`:
/// `ceil(min / single)` clamped to `1..=MAX_BATCH` (the maximum when `single_ms` is zero or not a number, as happens
/// for work below the events' resolution).
pub fn batch_size(single_ms: f64, min_sample_ms: f64) -> usize {
    if min_sample_ms.is_nan() || min_sample_ms <= 0.0 {
        return 1;
    }
    if single_ms.is_nan() || single_ms <= 0.0 {
        return MAX_BATCH;
    }
    let n = (min_sample_ms / single_ms).ceil();
    if n >= MAX_BATCH as f64 { MAX_BATCH } else { (n as usize).max(1) }
}

/// Measures the operation `op` queues: `s.warmup` untimed calls, one timed call to choose the batch size
/// ([`batch_size`]), then `s.reps` samples of `batch` calls each, timed with CUDA events ([`Gpu::time`]); each timed
/// call or sample is queued behind one untimed call (module docs).
///
/// `op(i)` must queue exactly one operation on `gpu`'s stream without waiting for it; `i` counts calls from 0 across
/// warm-up, calibration and samples, so the caller can rotate among buffers (`i % pool`). Its error type is the
/// caller's: [`crate::Error`] itself, or any error a GPU error converts into (such as
/// [`BenchError`](super::BenchError)).
pub fn measure<E: From<Error>>(
    gpu: &Gpu,
    s: &Settings,
    mut op: impl FnMut(usize) -> Result<(), E>,
) -> Result<Stats, E> {
    if s.reps == 0 {
        let message = "at least one timed sample is needed".into();
        return Err(Error::InvalidArgument { op: "measure", message }.into());
    }
    let mut next = 0usize;
    let mut step = || -> Result<(), E> {
        let i = next;
        next += 1;
        op(i)
    };
    for _ in 0..s.warmup {
        step()?;
    }
    gpu.synchronize()?;

    step()?;
    let single = time(gpu, &mut step)?;
    let batch = batch_size(f64::from(single), f64::from(s.min_sample_ms));

    let mut per_op = Vec::with_capacity(s.reps);
    for _ in 0..s.reps {
        // The lead-in: the start event is recorded behind it.
        step()?;
        let ms = time(gpu, || (0..batch).try_for_each(|_| step()))?;
        per_op.push(f64::from(ms) / batch as f64);
    }
    let unusable = || Error::InvalidArgument {
        op: "measure",
        message: format!("the event timer returned an unusable time ({per_op:?})"),
    };
    Stats::from_samples(&per_op, batch).ok_or_else(|| unusable().into())
}

/// [`Gpu::time`] for work that fails with the caller's error type: the
/// work's own error comes back unchanged, a timing failure converted.
fn time<E: From<Error>>(gpu: &Gpu, f: impl FnOnce() -> Result<(), E>) -> Result<f32, E> {
    let mut inner = None;
    let timed = gpu.time(|| {
        f().map_err(|e| {
            inner = Some(e);
            Error::InvalidArgument { op: "measure", message: "the timed operation failed".into() }
        })
    });
    match (timed, inner) {
        (_, Some(e)) => Err(e),
        (Ok(ms), None) => Ok(ms),
        (Err(e), None) => Err(e.into()),
    }
}

/// Bandwidth in GB/s (1 GB = 1e9 bytes) of an operation that moves
/// `bytes_moved` bytes (bytes read + bytes written) in `ms` milliseconds.
pub fn gbps(bytes_moved: f64, ms: f64) -> f64 {
    bytes_moved / (ms * 1e-3) / 1e9
}

/// The driver's device-to-device copy (`cuMemcpyDtoDAsync`) of one size, measured like any operation: the DRAM
/// reference every "% of the DRAM floor" figure divides by.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DtodReference {
    /// Bytes copied per operation.
    pub bytes: u64,
    /// Bandwidth from the median, GB/s (`2 · bytes` read + written).
    pub gbps: f64,
    /// Per-copy time statistics.
    pub stats: Stats,
}

impl DtodReference {
    /// The floor for an operation that must move `bytes_moved` bytes (read
    /// + written): `bytes_moved / DtoD bandwidth`, ms.
    pub fn floor_ms(&self, bytes_moved: f64) -> f64 {
        bytes_moved / (self.gbps * 1e9) * 1e3
    }
}

/// Measures [`Gpu::copy_with_driver`] on a fresh pair of `bytes`-byte buffers (freed afterwards) with settings `s`.
pub fn measure_dtod(gpu: &Gpu, s: &Settings, bytes: u64) -> Result<DtodReference, Error> {
    let words = usize::try_from(bytes / 4).map_err(|_| Error::InvalidArgument {
        op: "measure_dtod",
        message: format!("{bytes} bytes do not fit this machine's address space"),
    })?;
    let src = gpu.alloc_zeroed::<u32>(words)?;
    let mut dst = gpu.alloc_zeroed::<u32>(words)?;
    let stats = measure(gpu, s, |_| gpu.copy_with_driver(&src.as_view(), &mut dst.as_view_mut()))?;
    let copied = 4 * words as u64;
    Ok(DtodReference { bytes: copied, gbps: gbps(2.0 * copied as f64, stats.median_ms), stats })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_over_samples() {
        let s = Stats::from_samples(&[2.5], 7).unwrap();
        assert_eq!((s.median_ms, s.min_ms, s.max_ms, s.mean_ms, s.p10_ms, s.p90_ms), (2.5, 2.5, 2.5, 2.5, 2.5, 2.5));
        assert_eq!((s.reps, s.batch), (1, 7));
        // An odd count: the middle value; p10 and p90 at ranks 0.4 and 3.6 of [1, 2, 3, 4, 5].
        let s = Stats::from_samples(&[5.0, 1.0, 3.0, 4.0, 2.0], 1).unwrap();
        assert_eq!((s.median_ms, s.min_ms, s.max_ms, s.mean_ms, s.reps), (3.0, 1.0, 5.0, 3.0, 5));
        assert!((s.p10_ms - 1.4).abs() < 1e-12 && (s.p90_ms - 4.6).abs() < 1e-12);
        // An even count: the mean of the middle two.
        let s = Stats::from_samples(&[4.0, 1.0, 3.0, 2.0], 1).unwrap();
        assert_eq!((s.median_ms, s.mean_ms), (2.5, 2.5));
        assert_eq!([0.0, 100.0].map(|p| percentile(&[1.0, 2.0, 3.0, 4.0], p)), [1.0, 4.0]);
        let s = Stats::from_samples(&(1..=20).rev().map(f64::from).collect::<Vec<_>>(), 3).unwrap();
        assert_eq!(s.median_ms, 10.5);
        assert!((s.p10_ms - 2.9).abs() < 1e-12 && (s.p90_ms - 18.1).abs() < 1e-12);
        // No samples, or one that is not a number.
        assert_eq!((Stats::from_samples(&[], 1), Stats::from_samples(&[1.0, f64::NAN], 1)), (None, None));
        assert!(percentile(&[], 50.0).is_nan());
    }

    #[test]
    fn batch_sizes() {
        assert_eq!(batch_size(0.005, 0.2), 40);
        assert_eq!(batch_size(0.2, 0.2), 1);
        assert_eq!(batch_size(3.0, 0.2), 1);
        assert_eq!(batch_size(0.0001, 0.2), MAX_BATCH);
        assert_eq!(batch_size(0.0, 0.2), MAX_BATCH);
        assert_eq!(batch_size(f64::NAN, 0.2), MAX_BATCH);
        assert_eq!(batch_size(0.01, 0.0), 1);
        assert_eq!(batch_size(0.03, 0.2), 7);
    }

    #[test]
    fn dtod_floor() {
        let stats = Stats::from_samples(&[1.0], 1).unwrap();
        let r = DtodReference { bytes: 1 << 30, gbps: 3000.0, stats };
        // 3 GB at 3000 GB/s: 1 ms.
        assert!((r.floor_ms(3e9) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn bandwidth_units() {
        // 1e9 bytes in one second is 1 GB/s; 2 GiB read + written in 1 ms.
        assert!((gbps(1e9, 1000.0) - 1.0).abs() < 1e-12);
        assert!((gbps(2.0 * 2_147_483_648.0, 1.0) - 4294.967296).abs() < 1e-9);
    }
}
