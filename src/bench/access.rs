//! The `access` suite (lesson 004, §5.3.2 "global memory" and "two-
//! dimensional arrays"): how the addresses of a warp decide the bandwidth.
//!
//! * **Offsets** (default 0..=32 elements, 2^26 `f32` = 256 MiB moved each
//!   way): `read_offset` (`out[i] = in[i + offset]`) and `write_offset`
//!   (`out[i + offset] = in[i]`). A warp's 128 bytes start `4 · offset`
//!   bytes past a 128-byte boundary: 5 sectors instead of 4 unless the
//!   offset is a multiple of 8 elements (32 bytes).
//! * **Strides** (default 1..=32, 2^25 elements moved, the strided side
//!   spanning up to 4 GiB): `read_stride` (`out[i] = in[i · stride]`) and
//!   `write_stride` (`out[i · stride] = in[i]`). A warp's 32 accesses
//!   touch `min(32, stride)` times the sectors of a unit-stride one.
//! * **2D** (default 8192 rows of width 8192, 8191 and 8200): `C = A + B`
//!   row-major on linear memory (rows `width · 4` bytes apart) and on
//!   pitched memory ([`crate::PitchedBuffer`], every row aligned), block
//!   (32, 8): the guide's advice to pad rows to a multiple of the warp
//!   size, measured.
//!
//! Every figure is **effective** bandwidth: the useful bytes (elements
//! read plus elements written, 4 bytes each) over the time; the sectors a
//! pattern wastes do not count. `% of DtoD` divides by the driver's
//! device-to-device copy measured in the same run
//! ([`harness::measure_dtod`]). Every timed launch's output is verified
//! (poisoned, launched once more, compared element by element, including
//! the elements a pattern must not touch); a mismatch stops the suite.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;

use super::copy::DeviceSummary;
use super::harness::{self, DtodReference, Settings, Stats};
use super::matrix::{Timing, input_value};
use super::report::{self, Series, Table, human_bytes};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::access::Pattern;
use crate::matrix::reference_add;
use crate::{BlockShape, DeviceBuffer, Gpu, MatrixLayout};

/// This suite's entry in [`super::SUITES`].
pub const SUITE: SuiteInfo = SuiteInfo {
    name: "access",
    about: "misaligned (offset 0..32) and strided (1..32) f32 reads and writes; 2D widths 8192/8191/8200, linear vs pitched",
};

/// The byte outputs are poisoned with before a verification launch.
pub const POISON: u8 = 0xA5;

/// Units of every figure.
pub const UNITS_NOTE: &str = "GB = 1e9 bytes; effective bandwidth = useful bytes (elements read + written, 4 bytes each) \
                              / time; times in ms per launch; % of DtoD (pct_of_floor in the JSON) = effective GB/s / \
                              cuMemcpyDtoD GB/s";

/// Salts of the source values (offset/stride source, write-side source).
const SALT_WIDE: u64 = 0xACCE55;
const SALT_NARROW: u64 = 0x5EED;

/// What the suite runs.
#[derive(Clone, Debug, PartialEq)]
pub struct AccessOptions {
    /// Elements moved by each offset launch (default 2^26).
    pub offset_elems: usize,
    /// Offsets swept, elements (default 0..=32).
    pub offsets: Vec<usize>,
    /// Elements moved by each stride launch, at most (default 2^25).
    pub stride_elems: usize,
    /// Largest span of the strided side, bytes (default 4 GiB): a stride
    /// whose span would exceed it moves fewer elements.
    pub stride_footprint: u64,
    /// Strides swept (default 1..=32).
    pub strides: Vec<usize>,
    /// Run the read-side kernels (`read_offset`, `read_stride`).
    pub reads: bool,
    /// Run the write-side kernels.
    pub writes: bool,
    /// Row widths of the 2D part, elements (default 8192, 8191, 8200).
    pub widths: Vec<usize>,
    /// Rows of the 2D part (default 8192).
    pub rows: usize,
    /// Block of the 2D part (default (32, 8)).
    pub block: BlockShape,
    /// Run the offset sweep.
    pub offset_part: bool,
    /// Run the stride sweep.
    pub stride_part: bool,
    /// Run the 2D part.
    pub two_d_part: bool,
    /// Warm-up, samples, batching.
    pub settings: Settings,
    /// Where `access.json` and the plots go.
    pub out_dir: PathBuf,
}

impl Default for AccessOptions {
    fn default() -> Self {
        AccessOptions {
            offset_elems: 1 << 26,
            offsets: (0..=32).collect(),
            stride_elems: 1 << 25,
            stride_footprint: 4 << 30,
            strides: (1..=32).collect(),
            reads: true,
            writes: true,
            widths: vec![8192, 8191, 8200],
            rows: 8192,
            block: BlockShape::new(32, 8),
            offset_part: true,
            stride_part: true,
            two_d_part: true,
            settings: Settings::default(),
            out_dir: PathBuf::from("bench-out"),
        }
    }
}

impl AccessOptions {
    /// A smoke run: 2^22 elements, 256 MiB strided spans, 2048 rows, 5
    /// samples.
    pub fn quick() -> Self {
        AccessOptions {
            offset_elems: 1 << 22,
            stride_elems: 1 << 22,
            stride_footprint: 256 << 20,
            rows: 2048,
            settings: Settings { reps: 5, ..Settings::default() },
            ..AccessOptions::default()
        }
    }

    /// Elements moved at `stride`: `stride_elems`, fewer when the strided
    /// span would pass `stride_footprint`.
    pub fn stride_n(&self, stride: usize) -> usize {
        let cap = (self.stride_footprint / 4) as usize;
        let fit = if stride <= 1 { cap } else { (cap - 1) / stride + 1 };
        self.stride_elems.min(fit)
    }
}

/// One pattern's measurement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PatternResult {
    /// The kernel.
    pub kernel: &'static str,
    /// The offset or stride, elements.
    pub param: usize,
    /// Elements moved.
    pub n: usize,
    /// Useful bytes per launch (8 · n: read + written).
    pub useful_bytes: u64,
    /// Time, effective GB/s, and % of DtoD (`pct_of_floor`).
    pub timing: Timing,
}

/// One 2D measurement.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TwoDResult {
    /// Row width, elements.
    pub width: usize,
    /// Rows.
    pub rows: usize,
    /// `linear` or `pitched`.
    pub layout: &'static str,
    /// Bytes from one row's start to the next (`width · 4` linear, the
    /// pitch otherwise).
    pub row_stride_bytes: usize,
    /// Largest power of two (≤ 4096) dividing the row stride: every row
    /// starts this well aligned.
    pub row_alignment: usize,
    /// Useful bytes per launch (3 · width · rows · 4).
    pub useful_bytes: u64,
    /// Time, effective GB/s, and % of DtoD (`pct_of_floor`).
    pub timing: Timing,
}

/// Everything the suite measured; written as `access.json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AccessReport {
    /// `"access"`.
    pub suite: &'static str,
    /// The device.
    pub device: DeviceSummary,
    /// How each figure was measured.
    pub settings: Settings,
    /// The units note.
    pub units: &'static str,
    /// The DtoD reference.
    pub dtod: DtodReference,
    /// The offset sweep (read and write kernels), if run.
    pub offsets: Vec<PatternResult>,
    /// The stride sweep, if run.
    pub strides: Vec<PatternResult>,
    /// The 2D part, if run.
    pub two_d: Vec<TwoDResult>,
    /// The 2D part's block.
    pub two_d_block: [u32; 2],
}

/// ms, GB/s, % of DtoD.
fn timing_cells(t: &Timing) -> [String; 3] {
    [format!("{:.3}", t.ms), format!("{:.1}", t.gbps), format!("{:.1}%", t.pct_of_floor)]
}

/// The kernels among `results`, read side first.
fn kernels_of(results: &[PatternResult]) -> Vec<&'static str> {
    let mut kernels: Vec<&'static str> = results.iter().map(|r| r.kernel).collect();
    kernels.sort_unstable();
    kernels.dedup();
    kernels
}

/// A sweep's table: one row per parameter, read and write side by side.
fn sweep_table(what: &str, results: &[PatternResult]) -> Table {
    let mut params: Vec<usize> = results.iter().map(|r| r.param).collect();
    params.sort_unstable();
    params.dedup();
    let kernels = kernels_of(results);
    let mut head = vec![what.to_string(), "n".to_string()];
    for k in &kernels {
        head.extend([format!("{k} ms"), format!("{k} GB/s"), "% of DtoD".to_string()]);
    }
    let mut t = Table::new(head);
    for p in params {
        let first = results.iter().find(|r| r.param == p);
        let mut row = vec![p.to_string(), first.map_or("-".into(), |r| r.n.to_string())];
        for k in &kernels {
            match results.iter().find(|r| r.param == p && r.kernel == *k) {
                Some(r) => row.extend(timing_cells(&r.timing)),
                None => row.extend(["-".to_string(), "-".to_string(), "-".to_string()]),
            }
        }
        t.row(row);
    }
    t
}

/// One series per kernel: effective GB/s against the parameter.
fn sweep_series(results: &[PatternResult]) -> Vec<Series> {
    kernels_of(results)
        .into_iter()
        .map(|k| Series {
            name: k.to_string(),
            points: results.iter().filter(|r| r.kernel == k).map(|r| (r.param as f64, r.timing.gbps)).collect(),
        })
        .collect()
}

impl AccessReport {
    /// The offset sweep's table.
    pub fn offset_table(&self) -> Table {
        sweep_table("offset", &self.offsets)
    }

    /// The stride sweep's table.
    pub fn stride_table(&self) -> Table {
        sweep_table("stride", &self.strides)
    }

    /// The 2D table.
    pub fn two_d_table(&self) -> Table {
        let mut t =
            Table::new(["width", "rows", "layout", "row stride (B)", "row alignment (B)", "ms", "GB/s", "% of DtoD"]);
        for r in &self.two_d {
            let mut row = vec![
                r.width.to_string(),
                r.rows.to_string(),
                r.layout.to_string(),
                r.row_stride_bytes.to_string(),
                r.row_alignment.to_string(),
            ];
            row.extend(timing_cells(&r.timing));
            t.row(row);
        }
        t.align(2, report::Align::Left);
        t
    }

    /// Writes `access.json`, `access-offset.svg` and `access-stride.svg`
    /// (the plots of the sweeps that ran) into `dir`; returns the paths.
    pub fn write(&self, dir: &Path) -> BenchResult<Vec<PathBuf>> {
        let json = dir.join("access.json");
        report::write_json(&json, self)?;
        let mut paths = vec![json];
        let sub = format!(
            "{} (compute capability {}); effective GB/s (useful bytes / time); cuMemcpyDtoD {:.0} GB/s",
            self.device.name, self.device.compute_capability, self.dtod.gbps
        );
        if !self.offsets.is_empty() {
            let svg = dir.join("access-offset.svg");
            let n = self.offsets[0].n;
            let title = format!("f32 copy with a misaligned side: {n} elements\n{sub}");
            report::plot_svg_linear(&svg, &title, "offset (elements)", "GB/s", &sweep_series(&self.offsets))?;
            paths.push(svg);
        }
        if !self.strides.is_empty() {
            let svg = dir.join("access-stride.svg");
            let title = format!("f32 copy with a strided side\n{sub}");
            report::plot_svg(&svg, &title, "stride (elements)", "GB/s", &sweep_series(&self.strides))?;
            paths.push(svg);
        }
        Ok(paths)
    }
}

/// Runs the suite: measures, verifies, prints the tables, writes
/// `access.json` and the plots into `opts.out_dir`.
pub fn run(gpu: &Gpu, opts: &AccessOptions) -> BenchResult<AccessReport> {
    let r = measure_suite(gpu, opts)?;
    println!("access patterns on {} ({UNITS_NOTE})", r.device.name);
    println!("cuMemcpyDtoD {:.1} GB/s ({} copied)", r.dtod.gbps, human_bytes(r.dtod.bytes));
    if !r.offsets.is_empty() {
        println!();
        println!("offsets: the misaligned side starts `offset` elements past a 256-byte-aligned base");
        println!("{}", r.offset_table());
    }
    if !r.strides.is_empty() {
        println!();
        println!("strides: the strided side spans (n - 1) * stride + 1 elements");
        println!("{}", r.stride_table());
    }
    if !r.two_d.is_empty() {
        println!();
        println!("2D: C = A + B row-major, block ({}, {})", r.two_d_block[0], r.two_d_block[1]);
        println!("{}", r.two_d_table());
    }
    let paths = r.write(&opts.out_dir)?;
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {}", names.join(", "));
    Ok(r)
}

/// Measures and verifies (no printing, no files).
pub fn measure_suite(gpu: &Gpu, opts: &AccessOptions) -> BenchResult<AccessReport> {
    check_options(opts)?;
    let dtod_elems = match (opts.offset_part, opts.stride_part) {
        (true, _) => opts.offset_elems,
        (false, true) => opts.stride_elems,
        (false, false) => opts.widths.iter().max().copied().unwrap_or(1) * opts.rows,
    };
    let dtod = harness::measure_dtod(gpu, &opts.settings, 4 * dtod_elems as u64)?;
    let offsets = if opts.offset_part { measure_offsets(gpu, opts, &dtod)? } else { vec![] };
    let strides = if opts.stride_part { measure_strides(gpu, opts, &dtod)? } else { vec![] };
    let two_d = if opts.two_d_part { measure_two_d(gpu, opts, &dtod)? } else { vec![] };
    Ok(AccessReport {
        suite: SUITE.name,
        device: DeviceSummary::of(gpu),
        settings: opts.settings,
        units: UNITS_NOTE,
        dtod,
        offsets,
        strides,
        two_d,
        two_d_block: [opts.block.x, opts.block.y],
    })
}

fn check_options(opts: &AccessOptions) -> BenchResult<()> {
    let bad = |m: &str| Err(BenchError::Options(m.to_string()));
    if opts.settings.reps == 0 {
        return bad("--reps must be at least 1");
    }
    if !opts.reads && !opts.writes {
        return bad("neither reads nor writes selected");
    }
    if opts.offset_part && (opts.offset_elems == 0 || opts.offsets.is_empty()) {
        return bad("the offset sweep needs at least one element and one offset");
    }
    if opts.stride_part && (opts.stride_elems == 0 || opts.strides.is_empty() || opts.strides.contains(&0)) {
        return bad("the stride sweep needs at least one element and strides of at least 1");
    }
    if opts.stride_part && opts.stride_footprint < 4 {
        return bad("the strided span must hold at least one element");
    }
    if opts.two_d_part && (opts.rows == 0 || opts.widths.is_empty() || opts.widths.contains(&0)) {
        return bad("the 2D part needs at least one row and widths of at least 1");
    }
    Ok(())
}

/// A device buffer of `len` elements holding `input_value(j, salt)`,
/// uploaded in pieces (the strided side can be several GiB).
fn upload_values(gpu: &Gpu, len: usize, salt: u64) -> BenchResult<DeviceBuffer<f32>> {
    const PIECE: usize = 1 << 24;
    let mut buf = gpu.alloc_zeroed::<f32>(len)?;
    let mut host = vec![0f32; PIECE.min(len)];
    for start in (0..len).step_by(PIECE) {
        let end = (start + PIECE).min(len);
        let h = &mut host[..end - start];
        h.par_iter_mut().enumerate().for_each(|(k, v)| *v = input_value(start + k, salt));
        buf.view_mut(start..end)?.copy_from_host(h)?;
    }
    Ok(buf)
}

/// Compares every element of `got` with `expect(j)` bit for bit; the
/// first difference stops the suite.
fn verify(what: &str, got: &[f32], expect: impl Fn(usize) -> f32 + Sync) -> BenchResult<()> {
    let bad = got.par_iter().enumerate().find_first(|(j, g)| g.to_bits() != expect(*j).to_bits());
    if let Some((j, g)) = bad {
        let poison = f32::from_bits(u32::from_ne_bytes([POISON; 4]));
        let note = if g.to_bits() == poison.to_bits() {
            " (never written: still the poison)"
        } else if expect(j).to_bits() == poison.to_bits() {
            " (written where the pattern writes nothing)"
        } else {
            ""
        };
        return Err(BenchError::Verification {
            suite: SUITE.name,
            message: format!("{what}: element {j} is {g}, expected {}{note}", expect(j)),
        });
    }
    Ok(())
}

fn poison() -> f32 {
    f32::from_bits(u32::from_ne_bytes([POISON; 4]))
}

/// Times `pattern` over `n` elements from `src` into `dst`, then verifies
/// the whole of `dst` (read back into `host`).
#[allow(clippy::too_many_arguments)]
fn measure_pattern(
    gpu: &Gpu,
    opts: &AccessOptions,
    dtod: &DtodReference,
    pattern: Pattern,
    n: usize,
    src: &DeviceBuffer<f32>,
    src_salt: u64,
    dst: &mut DeviceBuffer<f32>,
    host: &mut [f32],
) -> BenchResult<PatternResult> {
    let stats = harness::measure(gpu, &opts.settings, |_| {
        gpu.access_pattern(pattern, &src.as_view(), &mut dst.as_view_mut(), n).map(|_| ())
    })?;
    dst.fill_bytes(POISON)?;
    gpu.access_pattern(pattern, &src.as_view(), &mut dst.as_view_mut(), n)?;
    let host = &mut host[..dst.len()];
    dst.copy_to_host(host)?;
    let v = |j: usize| input_value(j, src_salt);
    let what = format!("{pattern} n={n}");
    match pattern {
        Pattern::ReadOffset(o) => verify(&what, host, |j| if j < n { v(j + o) } else { poison() })?,
        Pattern::WriteOffset(o) => verify(&what, host, |j| if j >= o && j - o < n { v(j - o) } else { poison() })?,
        Pattern::ReadStride(s) => verify(&what, host, |j| if j < n { v(j * s) } else { poison() })?,
        Pattern::WriteStride(s) => verify(&what, host, |j| if j % s == 0 && j / s < n { v(j / s) } else { poison() })?,
    }
    let useful = 8 * n as u64;
    Ok(PatternResult {
        kernel: pattern.kernel(),
        param: pattern.param(),
        n,
        useful_bytes: useful,
        timing: Timing::new(stats, useful as f64, dtod),
    })
}

fn measure_offsets(gpu: &Gpu, opts: &AccessOptions, dtod: &DtodReference) -> BenchResult<Vec<PatternResult>> {
    let n = opts.offset_elems;
    let max = opts.offsets.iter().max().copied().unwrap_or(0);
    let len = n.checked_add(max).ok_or_else(|| BenchError::Options("offset too large".into()))?;
    // The unit-stride side holds the values of both directions; the
    // misaligned side is one buffer of n + max elements either way.
    let wide = upload_values(gpu, len, SALT_WIDE)?;
    let narrow = upload_values(gpu, n, SALT_NARROW)?;
    let mut dst_wide = gpu.alloc_zeroed::<f32>(len)?;
    let mut dst_narrow = gpu.alloc_zeroed::<f32>(n)?;
    let mut host = vec![0f32; len];
    let mut out = Vec::new();
    for &o in &opts.offsets {
        if opts.reads {
            let p = Pattern::ReadOffset(o);
            out.push(measure_pattern(gpu, opts, dtod, p, n, &wide, SALT_WIDE, &mut dst_narrow, &mut host)?);
        }
        if opts.writes {
            let p = Pattern::WriteOffset(o);
            out.push(measure_pattern(gpu, opts, dtod, p, n, &narrow, SALT_NARROW, &mut dst_wide, &mut host)?);
        }
    }
    Ok(out)
}

fn measure_strides(gpu: &Gpu, opts: &AccessOptions, dtod: &DtodReference) -> BenchResult<Vec<PatternResult>> {
    let plan: Vec<(usize, usize)> = opts.strides.iter().map(|&s| (s, opts.stride_n(s))).collect();
    let mut span = 0usize;
    for &(s, n) in &plan {
        let (a, _) = Pattern::ReadStride(s).extents(n)?;
        span = span.max(a);
    }
    let n_max = plan.iter().map(|p| p.1).max().unwrap_or(1);
    let mut host = vec![0f32; span.max(n_max)];
    let mut out = Vec::new();
    // Reads first: the wide buffer holds the values, the narrow one is
    // the destination; then the roles swap.
    if opts.reads {
        let wide = upload_values(gpu, span, SALT_WIDE)?;
        let mut narrow = gpu.alloc_zeroed::<f32>(n_max)?;
        for &(s, n) in &plan {
            let p = Pattern::ReadStride(s);
            out.push(measure_pattern(gpu, opts, dtod, p, n, &wide, SALT_WIDE, &mut narrow, &mut host)?);
        }
    }
    if opts.writes {
        let narrow = upload_values(gpu, n_max, SALT_NARROW)?;
        let mut wide = gpu.alloc_zeroed::<f32>(span)?;
        for &(s, n) in &plan {
            let p = Pattern::WriteStride(s);
            out.push(measure_pattern(gpu, opts, dtod, p, n, &narrow, SALT_NARROW, &mut wide, &mut host)?);
        }
    }
    // Read and write results of one stride side by side in the JSON.
    out.sort_by_key(|r| r.param);
    Ok(out)
}

fn measure_two_d(gpu: &Gpu, opts: &AccessOptions, dtod: &DtodReference) -> BenchResult<Vec<TwoDResult>> {
    let rows = opts.rows;
    let mut out = Vec::new();
    for &width in &opts.widths {
        let n = width.checked_mul(rows).ok_or_else(|| BenchError::Options(format!("{width} x {rows} overflows")))?;
        let a: Vec<f32> = (0..n).into_par_iter().map(|i| input_value(i, SALT_WIDE)).collect();
        let b: Vec<f32> = (0..n).into_par_iter().map(|i| input_value(i, SALT_NARROW)).collect();
        let mut want = vec![0f32; n];
        reference_add(&a, &b, &mut want)?;
        let mut got = vec![0f32; n];
        let useful = 12 * n as u64;
        let result = |layout, row_stride_bytes: usize, stats: Stats| TwoDResult {
            width,
            rows,
            layout,
            row_stride_bytes,
            row_alignment: 1usize << row_stride_bytes.trailing_zeros().min(12),
            useful_bytes: useful,
            timing: Timing::new(stats, useful as f64, dtod),
        };
        {
            let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
            let mut dc = gpu.alloc_zeroed::<f32>(n)?;
            let launch = |dc: &mut DeviceBuffer<f32>| {
                let (va, vb) = (da.as_view(), db.as_view());
                gpu.matrix_add(MatrixLayout::RowMajor, &va, &vb, &mut dc.as_view_mut(), rows, width, opts.block)
            };
            let stats = harness::measure(gpu, &opts.settings, |_| launch(&mut dc).map(|_| ()))?;
            dc.fill_bytes(POISON)?;
            launch(&mut dc)?;
            dc.copy_to_host(&mut got)?;
            verify(&format!("linear {width} x {rows}"), &got, |j| want[j])?;
            out.push(result("linear", width * 4, stats));
        }
        let pa = gpu.upload_pitched(&a, width, rows)?;
        let pb = gpu.upload_pitched(&b, width, rows)?;
        let mut pc = gpu.alloc_pitched_zeroed::<f32>(width, rows)?;
        let stats = harness::measure(gpu, &opts.settings, |_| {
            gpu.matrix_add_pitched(&pa, &pb, &mut pc, opts.block).map(|_| ())
        })?;
        pc.fill_bytes(POISON)?;
        gpu.matrix_add_pitched(&pa, &pb, &mut pc, opts.block)?;
        pc.copy_to_host(&mut got)?;
        verify(&format!("pitched {width} x {rows} (pitch {})", pc.pitch()), &got, |j| want[j])?;
        out.push(result("pitched", pc.pitch(), stats));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(ms: f64) -> Stats {
        Stats::from_samples(&[ms], 1).unwrap()
    }

    fn result(kernel: &'static str, param: usize, gbps: f64) -> PatternResult {
        let dtod = DtodReference { bytes: 1 << 30, gbps: 3000.0, stats: stats(1.0) };
        // gbps GB/s for 8 MB: 8e6 / (gbps · 1e9) s.
        let timing = Timing::new(stats(8e6 / gbps / 1e6), 8e6, &dtod);
        PatternResult { kernel, param, n: 1 << 20, useful_bytes: 8_000_000, timing }
    }

    #[test]
    fn stride_sizes_respect_the_footprint() {
        let o = AccessOptions::default();
        // 4 GiB / 4 bytes / 32 = 2^25: every default stride moves 2^25.
        assert!(o.strides.iter().all(|&s| o.stride_n(s) == 1 << 25));
        let o = AccessOptions { stride_elems: 1 << 26, ..AccessOptions::default() };
        assert_eq!(o.stride_n(1), 1 << 26);
        assert_eq!(o.stride_n(32), 1 << 25);
        for s in [3usize, 7, 17, 31, 32] {
            let n = o.stride_n(s);
            assert!(((n - 1) * s + 1) as u64 * 4 <= o.stride_footprint, "stride {s}");
        }
        let q = AccessOptions::quick();
        assert!(q.strides.iter().all(|&s| ((q.stride_n(s) - 1) * s + 1) as u64 * 4 <= q.stride_footprint));
    }

    #[test]
    fn options_are_checked() {
        let bad = |o: AccessOptions| matches!(check_options(&o), Err(BenchError::Options(_)));
        assert!(bad(AccessOptions { strides: vec![0], ..AccessOptions::quick() }));
        assert!(bad(AccessOptions { reads: false, writes: false, ..AccessOptions::quick() }));
        assert!(bad(AccessOptions { widths: vec![], ..AccessOptions::quick() }));
        assert!(bad(AccessOptions { settings: Settings { reps: 0, ..Settings::default() }, ..AccessOptions::quick() }));
        assert!(check_options(&AccessOptions::default()).is_ok());
    }

    #[test]
    fn sweep_tables_and_series_pair_read_and_write() {
        let r = [result("read_offset", 0, 2800.0), result("write_offset", 0, 2700.0), result("read_offset", 1, 2400.0)];
        let t = sweep_table("offset", &r).render();
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].contains("read_offset GB/s") && lines[0].contains("write_offset GB/s"), "{t}");
        assert!(lines[2].contains("2800.0") && lines[2].contains("2700.0"), "{t}");
        assert!(lines[3].contains("2400.0") && lines[3].trim_end().ends_with('-'), "{t}");
        let s = sweep_series(&r);
        assert_eq!(s.len(), 2);
        let near = |a: (f64, f64), b: (f64, f64)| a.0 == b.0 && (a.1 - b.1).abs() < 1e-6;
        assert!(near(s[0].points[0], (0.0, 2800.0)) && near(s[0].points[1], (1.0, 2400.0)), "{:?}", s[0].points);
    }

    #[test]
    fn verify_names_the_first_bad_element() {
        let got = [1.0f32, 2.0, poison(), 4.0];
        assert!(verify("t", &got, |j| if j == 2 { poison() } else { (j + 1) as f32 }).is_ok());
        let e = verify("t", &got, |j| (j + 1) as f32).unwrap_err().to_string();
        assert!(e.contains("element 2") && e.contains("still the poison"), "{e}");
        let e = verify("t", &got, |j| if j == 3 { poison() } else { got[j] }).unwrap_err().to_string();
        assert!(e.contains("element 3") && e.contains("writes nothing"), "{e}");
    }
}
