//! The `alignment` suite (lesson 004, §5.3.2 "size and alignment
//! requirement"): `p' = p · scale + shift` on `n` points (default 2^25)
//! stored as 12-byte [`Point12`]s, as 16-byte aligned [`Point16`]s, and as
//! three `f32` arrays.
//!
//! For every layout the **useful** bytes are 12 read + 12 written per
//! point; the **moved** bytes are what the kernel actually reads and
//! writes (16 + 16 for the padded layout). Reported: time, useful GB/s,
//! moved GB/s, and `% of floor` = the time the useful bytes take at the
//! driver's device-to-device bandwidth measured in the same run, over the
//! kernel's time. Each layout's output is verified against the rayon
//! reference (poisoned, launched once more, compared bit for bit: the
//! scale is a power of two, so no rounding difference can hide).

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use super::copy::DeviceSummary;
use super::harness::{self, DtodReference, Settings, Stats};
use super::matrix::{Timing, input_value};
use super::report::{self, Table, human_bytes};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::alignment::{reference_aos12, reference_aos16, reference_soa};
use crate::{DeviceCopy, DeviceView, DeviceViewMut, Gpu, LaunchConfig, Point12, Point16, PointLayout, Transform};

/// This suite's entry in [`super::SUITES`].
pub const SUITE: SuiteInfo = SuiteInfo {
    name: "alignment",
    about: "scale+translate 2^25 points: 12-byte struct vs 16-byte aligned struct vs structure of arrays",
};

/// The byte outputs are poisoned with before a verification launch.
pub const POISON: u8 = 0xA5;

/// Units of every figure.
pub const UNITS_NOTE: &str = "GB = 1e9 bytes; useful bytes = 12 read + 12 written per point; moved bytes = what the \
                              kernel reads + writes; % of floor = useful bytes at cuMemcpyDtoD speed / kernel time";

/// The transform every layout applies (a power-of-two scale).
pub const TRANSFORM: Transform = Transform { scale: 0.5, shift: [1.5, -2.25, 3.0] };

/// What the suite runs.
#[derive(Clone, Debug, PartialEq)]
pub struct AlignmentOptions {
    /// Points (default 2^25: 384 MiB of 12-byte points).
    pub points: usize,
    /// Warm-up, samples, batching.
    pub settings: Settings,
    /// Where `alignment.json` goes.
    pub out_dir: PathBuf,
}

impl Default for AlignmentOptions {
    fn default() -> Self {
        AlignmentOptions { points: 1 << 25, settings: Settings::default(), out_dir: PathBuf::from("bench-out") }
    }
}

impl AlignmentOptions {
    /// A smoke run: 2^21 points, 5 samples.
    pub fn quick() -> Self {
        AlignmentOptions { points: 1 << 21, settings: Settings { reps: 5, ..Settings::default() }, ..Self::default() }
    }
}

/// One layout's measurement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayoutResult {
    /// `aos12`, `aos16` or `soa`.
    pub layout: &'static str,
    /// The kernel.
    pub kernel: &'static str,
    /// Bytes read per point (and as many written).
    pub bytes_per_point: usize,
    /// Useful bytes per launch (24 · points).
    pub useful_bytes: u64,
    /// Bytes the kernel moves per launch.
    pub moved_bytes: u64,
    /// Moved bytes / time, GB/s.
    pub moved_gbps: f64,
    /// Time, useful GB/s, and the floor time of the useful bytes / kernel
    /// time.
    pub timing: Timing,
}

/// Everything the suite measured; written as `alignment.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AlignmentReport {
    /// `"alignment"`.
    pub suite: &'static str,
    /// The device.
    pub device: DeviceSummary,
    /// How each figure was measured.
    pub settings: Settings,
    /// The units note.
    pub units: &'static str,
    /// Points per launch.
    pub points: usize,
    /// The DtoD reference (12 · points bytes copied).
    pub dtod: DtodReference,
    /// Per layout.
    pub results: Vec<LayoutResult>,
}

impl AlignmentReport {
    /// The text table.
    pub fn table(&self) -> Table {
        let mut t = Table::new(["layout", "kernel", "B/point", "ms", "useful GB/s", "moved GB/s", "% of floor"]);
        for r in &self.results {
            t.row([
                r.layout.to_string(),
                r.kernel.to_string(),
                r.bytes_per_point.to_string(),
                format!("{:.3}", r.timing.ms),
                format!("{:.1}", r.timing.gbps),
                format!("{:.1}", r.moved_gbps),
                format!("{:.1}%", r.timing.pct_of_floor),
            ]);
        }
        t.align(1, report::Align::Left);
        t
    }

    /// Writes `alignment.json` into `dir`; returns its path.
    pub fn write(&self, dir: &Path) -> BenchResult<PathBuf> {
        let json = dir.join("alignment.json");
        report::write_json(&json, self)?;
        Ok(json)
    }
}

/// Runs the suite: measures, verifies, prints the table, writes
/// `alignment.json` into `opts.out_dir`.
pub fn run(gpu: &Gpu, opts: &AlignmentOptions) -> BenchResult<AlignmentReport> {
    let r = measure_suite(gpu, opts)?;
    println!("size and alignment on {} ({UNITS_NOTE})", r.device.name);
    println!(
        "{} points, {:?}; cuMemcpyDtoD {:.1} GB/s ({} copied)",
        r.points,
        TRANSFORM,
        r.dtod.gbps,
        human_bytes(r.dtod.bytes)
    );
    println!("{}", r.table());
    let path = r.write(&opts.out_dir)?;
    println!("wrote {}", path.display());
    Ok(r)
}

/// The first point where `got` and `want` differ in any bit.
fn first_bad<T: Sync>(got: &[T], want: &[T], bits: impl Fn(&T) -> [u32; 4] + Sync) -> Option<usize> {
    got.par_iter().zip(want.par_iter()).position_first(|(g, w)| bits(g) != bits(w))
}

fn mismatch(layout: PointLayout, n: usize, i: usize, got: String, want: String) -> BenchError {
    BenchError::Verification {
        suite: SUITE.name,
        message: format!("{} n={n}: point {i} is {got}, the reference {want}", layout.kernel()),
    }
}

/// Times `launch` on a copy of `host`, then verifies one more launch
/// (output poisoned first) against `reference`, bit for bit.
#[allow(clippy::too_many_arguments)]
fn measure_aos<P: DeviceCopy + bytemuck::Pod + Default + std::fmt::Debug + Send + Sync>(
    gpu: &Gpu,
    opts: &AlignmentOptions,
    layout: PointLayout,
    host: &[P],
    launch: impl Fn(&DeviceView<'_, P>, &mut DeviceViewMut<'_, P>) -> crate::Result<Option<LaunchConfig>>,
    reference: fn(&[P], &mut [P], Transform) -> crate::Result<()>,
    bits: impl Fn(&P) -> [u32; 4] + Sync,
) -> BenchResult<Stats> {
    let n = host.len();
    let src = gpu.upload(host)?;
    let mut dst = gpu.alloc_zeroed::<P>(n)?;
    let stats = harness::measure(gpu, &opts.settings, |_| launch(&src.as_view(), &mut dst.as_view_mut()).map(|_| ()))?;
    dst.fill_bytes(POISON)?;
    launch(&src.as_view(), &mut dst.as_view_mut())?;
    let got = dst.to_vec()?;
    let mut want = vec![P::default(); n];
    reference(host, &mut want, TRANSFORM)?;
    match first_bad(&got, &want, bits) {
        Some(i) => Err(mismatch(layout, n, i, format!("{:?}", got[i]), format!("{:?}", want[i]))),
        None => Ok(stats),
    }
}

/// Measures and verifies (no printing, no files).
pub fn measure_suite(gpu: &Gpu, opts: &AlignmentOptions) -> BenchResult<AlignmentReport> {
    if opts.settings.reps == 0 || opts.points == 0 {
        return Err(BenchError::Options("--reps and --points must be at least 1".into()));
    }
    let n = opts.points;
    let t = TRANSFORM;
    let dtod = harness::measure_dtod(gpu, &opts.settings, 12 * n as u64)?;
    let coords: [Vec<f32>; 3] =
        [0u64, 1, 2].map(|c| (0..n).into_par_iter().map(|i| input_value(i, 0xA11 + c)).collect());
    let mut results = Vec::new();
    let mut record = |layout: PointLayout, stats: Stats| {
        let useful = 24 * n as u64;
        let moved = 2 * (layout.bytes_per_point() * n) as u64;
        results.push(LayoutResult {
            layout: layout.name(),
            kernel: layout.kernel(),
            bytes_per_point: layout.bytes_per_point(),
            useful_bytes: useful,
            moved_bytes: moved,
            moved_gbps: harness::gbps(moved as f64, stats.median_ms),
            timing: Timing::new(stats, useful as f64, &dtod),
        });
    };

    let host: Vec<Point12> = (0..n).map(|i| Point12 { x: coords[0][i], y: coords[1][i], z: coords[2][i] }).collect();
    let stats = measure_aos(
        gpu,
        opts,
        PointLayout::Aos12,
        &host,
        |s, d| gpu.transform_aos12(s, d, n, t),
        reference_aos12,
        |p| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits(), 0],
    )?;
    record(PointLayout::Aos12, stats);
    drop(host);
    let host: Vec<Point16> =
        (0..n).map(|i| Point16 { x: coords[0][i], y: coords[1][i], z: coords[2][i], pad: 0.0 }).collect();
    let stats = measure_aos(
        gpu,
        opts,
        PointLayout::Aos16,
        &host,
        |s, d| gpu.transform_aos16(s, d, n, t),
        reference_aos16,
        |p| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits(), p.pad.to_bits()],
    )?;
    record(PointLayout::Aos16, stats);
    drop(host);
    {
        let l = PointLayout::Soa;
        let src = [gpu.upload(&coords[0])?, gpu.upload(&coords[1])?, gpu.upload(&coords[2])?];
        let mut dst = [gpu.alloc_zeroed::<f32>(n)?, gpu.alloc_zeroed::<f32>(n)?, gpu.alloc_zeroed::<f32>(n)?];
        let launch = |dst: &mut [crate::DeviceBuffer<f32>; 3]| {
            let [x, y, z] = dst;
            let views = [&src[0].as_view(), &src[1].as_view(), &src[2].as_view()];
            gpu.transform_soa(views, [&mut x.as_view_mut(), &mut y.as_view_mut(), &mut z.as_view_mut()], n, t)
        };
        let stats = harness::measure(gpu, &opts.settings, |_| launch(&mut dst).map(|_| ()))?;
        for d in &mut dst {
            d.fill_bytes(POISON)?;
        }
        launch(&mut dst)?;
        let got = [dst[0].to_vec()?, dst[1].to_vec()?, dst[2].to_vec()?];
        let mut want = [vec![0f32; n], vec![0f32; n], vec![0f32; n]];
        let [wx, wy, wz] = &mut want;
        reference_soa([&coords[0], &coords[1], &coords[2]], [wx, wy, wz], t)?;
        for c in 0..3 {
            if let Some(i) = first_bad(&got[c], &want[c], |v| [v.to_bits(), 0, 0, 0]) {
                return Err(mismatch(l, n, i, format!("{} (array {c})", got[c][i]), want[c][i].to_string()));
            }
        }
        record(l, stats);
    }
    Ok(AlignmentReport {
        suite: SUITE.name,
        device: DeviceSummary::of(gpu),
        settings: opts.settings,
        units: UNITS_NOTE,
        points: n,
        dtod,
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_bad_compares_bits() {
        let a = [Point12 { x: 0.0, y: 1.0, z: 2.0 }, Point12 { x: 3.0, y: 4.0, z: 5.0 }];
        let mut b = a;
        let bits = |p: &Point12| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits(), 0];
        assert_eq!(first_bad(&a, &b, bits), None);
        b[0].x = -0.0; // equal as floats, not as bits
        assert_eq!(first_bad(&a, &b, bits), Some(0));
        assert!(TRANSFORM.scale.log2().fract() == 0.0, "the scale must be a power of two");
    }
}
