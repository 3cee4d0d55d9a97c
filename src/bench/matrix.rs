//! The `matrix` suite (lessons 003 and 002 §3.7–3.9): `C = A + B` on square `f32` matrices. **Layouts** (10000², block
//! (32, 32)): the row-major, column-major and pitched kernels, their times over the row-major one (the lesson: 3.37×
//! and 0.986 on an RTX 2070), the pitch and its padding. **Block-shape sweep** (16384², lesson 002's fifteen shapes):
//! `sum_matrix_2d` and `sum_matrix_2d_x4` (four elements per thread) with the driver's theoretical occupancy, plotted
//! in `matrix.svg`; `(256, 8)` is refused before any launch (over 1024 threads).
//!
//! Bytes: two reads and one write of the matrix (padding not counted); the DRAM floor moves them at the DtoD bandwidth
//! of the same run. Outputs are poisoned, written by one more launch after the timing and compared with the rayon
//! reference. Goal: the best shape's `sum_matrix_2d` at ≥ 90% of the floor at 16384² (the x4 kernel's best is named
//! beside it).

use std::collections::BTreeMap;

use super::copy::pattern_word;
use super::harness::{self, DtodReference};
use super::report::Series;
use super::run::{Common, Fmt, Goal, POISON, Rec, Run, Suite};
use super::{BenchResult, SuiteInfo};
use crate::MatrixLayout::{self, ColMajor, RowMajor};
use crate::matrix::{PITCHED_KERNEL, reference_add};
use crate::text::human_bytes;
use crate::{BlockShape, DeviceBuffer, PitchedBuffer, SumVariant};

/// The goal: the best shape at this fraction of the DRAM floor or better.
pub const GOAL_RATIO: f64 = 0.90;
/// The matrix side the goal applies to.
pub const GOAL_N: usize = 16_384;

/// `coalesce bench matrix`.
#[derive(clap::Args, Clone, Debug)]
pub struct Matrix {
    /// Only this part: `layouts` (row/column/pitched) or `sweep` (block shapes).
    #[arg(long, value_parser = ["layouts", "sweep"])]
    pub only: Option<String>,
    /// Side of the layout experiment's square matrix [default: 10000, 4000 with --quick].
    #[arg(long)]
    pub layout_n: Option<usize>,
    /// Block of the layout experiment (XxY) [default: 32x32].
    #[arg(long)]
    pub layout_block: Option<BlockShape>,
    /// Side of the sweep's square matrix [default: 16384, 4096 with --quick].
    #[arg(long)]
    pub sweep_n: Option<usize>,
    /// Sweep only these block shapes (XxY, repeatable) [default: the lesson's fifteen].
    #[arg(long = "shape")]
    pub shapes: Vec<BlockShape>,
    /// Sweep only this kernel: x1 (sum_matrix_2d) or x4 (sum_matrix_2d_x4) [default: both].
    #[arg(long, value_parser = ["x1", "x4"])]
    pub variant: Option<String>,
    /// The shared options.
    #[command(flatten)]
    pub common: Common,
}

impl Suite for Matrix {
    const INFO: SuiteInfo = SuiteInfo {
        name: "matrix",
        about: "matrix add: row-major vs column-major vs pitched (10000^2), sum_matrix_2d block-shape sweep (16384^2)",
    };
    const UNITS: &'static str = "GB = 1e9 bytes; bytes = 2 reads + 1 write of the matrix (padding not counted); times \
                                 in ms per launch; % of floor = DtoD-bound time / kernel time";

    fn common(&self) -> &Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let (layout_n, sweep_n) = (run.pick(self.layout_n, 10_000, 4_000), run.pick(self.sweep_n, GOAL_N, 4_096));
        let (layouts, sweep) = (self.only.as_deref() != Some("sweep"), self.only.as_deref() != Some("layouts"));
        if layouts && layout_n == 0 || sweep && sweep_n == 0 {
            return Err(run.bad_options("matrix sides must be at least 1"));
        }
        if layouts {
            measure_layouts(run, layout_n, self.layout_block.unwrap_or(BlockShape::LESSON_2D))?;
        }
        let shapes = if self.shapes.is_empty() { &BlockShape::LESSON_SWEEP[..] } else { &self.shapes };
        let variants: Vec<SumVariant> =
            SumVariant::ALL.into_iter().filter(|v| self.variant.as_deref().is_none_or(|w| w == v.name())).collect();
        if sweep { measure_sweep(run, sweep_n, shapes, &variants) } else { Ok(()) }
    }
}

/// Fresh inputs: a cheap hash of the index, finite, mixed signs, never 0.
pub fn input_value(i: usize, salt: u64) -> f32 {
    let w = pattern_word(i ^ salt as usize);
    // 24 bits of the hash, scaled into ±(1 .. 2^12).
    let m = (w >> 8) as f32 / (1u32 << 12) as f32 + 1.0;
    if w & 1 == 0 { m } else { -m }
}

/// Theoretical occupancy: resident warps over the SM's maximum.
pub fn theoretical_occupancy(blocks_per_sm: u32, threads: u64, warp: u32, max_threads_per_sm: u32) -> f64 {
    let warps_per_block = threads.div_ceil(u64::from(warp.max(1)));
    (u64::from(blocks_per_sm) * warps_per_block) as f64 / u64::from(max_threads_per_sm / warp.max(1)).max(1) as f64
}

/// The bytes of an `n²` matrix, the inputs `a`, `b` and the reference `a + b`.
fn inputs(run: &Run<'_>, n: usize) -> BenchResult<(u64, [Vec<f32>; 3])> {
    let elems = n.checked_mul(n).filter(|e| e.checked_mul(4).is_some());
    let elems = elems.ok_or_else(|| run.bad_options(format!("{n}^2 overflows")))?;
    let [a, b] = [0x5EED, 0xB0B].map(|salt| (0..elems).map(|i| input_value(i, salt)).collect::<Vec<f32>>());
    let mut want = vec![0f32; elems];
    reference_add(&a, &b, &mut want)?;
    Ok((elems as u64 * 4, [a, b, want]))
}

/// The columns `<p>ms`, `<p>GB/s` and `<p><floor>` of a launch moving `moved` bytes (`None`: not measured, shown as
/// `-`).
fn figures(rec: Rec, p: &str, floor: &str, ms: Option<f64>, moved: f64, dtod: &DtodReference) -> Rec {
    let (gbps, pct) = (ms.map(|ms| harness::gbps(moved, ms)), ms.map(|ms| dtod.floor_ms(moved) / ms));
    rec.num(&format!("{p}ms"), ms, 3).num(&format!("{p}GB/s"), gbps, 1).pct(&format!("{p}{floor}"), pct)
}

/// The layout experiment at `n`²: row-major, column-major and pitched adds.
fn measure_layouts(run: &mut Run<'_>, n: usize, block: BlockShape) -> BenchResult<()> {
    let (gpu, (bytes, [ha, hb, want])) = (run.gpu, inputs(run, n)?);
    let (a, b, mut c) = (gpu.upload(&ha)?, gpu.upload(&hb)?, gpu.alloc_zeroed::<f32>(want.len())?);
    let (pa, pb) = (gpu.upload_pitched(&ha, n, n)?, gpu.upload_pitched(&hb, n, n)?);
    let mut pc = gpu.alloc_pitched_zeroed::<f32>(n, n)?;
    let (dtod, mut got, mut base) = (run.dtod(bytes)?, vec![0f32; want.len()], None);
    let title =
        format!("layouts: {n} x {n} f32, block {block}; DtoD {:.1} GB/s ({} copied)", dtod.gbps, human_bytes(bytes));
    let t = run.table("layouts", title);
    for (name, layout) in [("row-major", Some(RowMajor)), ("col-major", Some(ColMajor)), ("pitched", None)] {
        let kernel = layout.map_or(PITCHED_KERNEL, MatrixLayout::kernel);
        let add = |c: &mut DeviceBuffer<f32>, pc: &mut PitchedBuffer<f32>| match layout {
            Some(l) => gpu.matrix_add(l, &a.as_view(), &b.as_view(), &mut c.as_view_mut(), n, n, block),
            None => gpu.matrix_add_pitched(&pa, &pb, pc, block),
        };
        let stats = run.measure(|_| add(&mut c, &mut pc).map(drop).map_err(Into::into))?;
        c.fill_bytes(POISON)?;
        pc.fill_bytes(POISON)?;
        let grid = add(&mut c, &mut pc)?.grid;
        let pitch = match layout {
            Some(_) => c.copy_to_host(&mut got).map(|()| String::new())?,
            None => pc.copy_to_host(&mut got).map(|()| format!(" (pitch {})", pc.pitch()))?,
        };
        run.check(&format!("{kernel} {n} x {n}{pitch}"), &got, &want)?;
        let (ms, rec) = (stats.median_ms, Rec::new().text("layout", name).text("kernel", kernel).text("grid", grid));
        let rec = figures(rec, "", "% of floor", Some(ms), 3.0 * bytes as f64, &dtod);
        run.row(t, rec.times("time / row-major", ms / *base.get_or_insert(ms)).json("stats", stats));
    }
    let [col, pitched] = [1, 2].map(|i| run.rows(t)[i].get("time / row-major").unwrap_or(f64::NAN));
    run.line(format!(
        "column/row time ratio {col:.2}x (lesson: 3.37x on an RTX 2070); pitched/linear {pitched:.3} (lesson: 0.986)"
    ));
    let (pitch, row, align, overhead) = (pc.pitch(), pc.row_bytes(), pc.row_alignment(), 100.0 * pc.overhead());
    let texture = gpu.pitch_alignment()?;
    run.line(format!(
        "pitch {pitch} bytes for {row} bytes of data per row (rows {align}-byte aligned; texture pitch alignment \
         {texture}): overhead {overhead:.2}% (lesson: 40192 bytes, 0.48% by its own numbers)"
    ));
    Ok(())
}

/// The block-shape sweep at `n`²: a row per shape, refused or measured, and `matrix.svg`.
fn measure_sweep(run: &mut Run<'_>, n: usize, shapes: &[BlockShape], variants: &[SumVariant]) -> BenchResult<()> {
    let (gpu, (bytes, [ha, hb, want])) = (run.gpu, inputs(run, n)?);
    // One output, no rotation.
    let (a, b, mut c) = (gpu.upload(&ha)?, gpu.upload(&hb)?, [gpu.alloc_zeroed::<f32>(want.len())?]);
    let (moved, dtod, limits, mut got) = (3.0 * bytes as f64, run.dtod(bytes)?, gpu.info().limits, vec![]);
    let (total, gbps, floor) = (human_bytes(3 * bytes), dtod.gbps, dtod.floor_ms(moved));
    let title = format!(
        "block-shape sweep: {n} x {n} f32 ({total} moved per launch); DtoD {gbps:.1} GB/s; floor {floor:.3} ms"
    );
    let t = run.table("sweep", title);
    let mut plot: BTreeMap<(&str, u32), Vec<(f64, f64)>> = BTreeMap::new();
    for &shape in shapes {
        let (rec, threads) = (Rec::new().text("block", shape).int("threads", shape.threads()), shape.threads());
        // A shape over the limits is refused before any launch.
        let cfg = variants.iter().map(|v| gpu.matrix_launch_config(v.kernel(), n, n, shape, v.items()));
        let grid = match cfg.collect::<Result<Vec<_>, _>>() {
            Ok(cfg) => cfg[0].grid,
            Err(e) => {
                run.row(t, rec.text("grid", format!("refused: {e}")));
                continue;
            }
        };
        let blocks = gpu.max_active_blocks_per_sm(variants[0].kernel(), threads as u32, 0)?;
        let occupancy = theoretical_occupancy(blocks, threads, limits.warp_size, limits.max_threads_per_sm);
        let mut rec = rec.text("grid", grid).int("blocks/SM", blocks).pct("theor. occ.", occupancy);
        for v in SumVariant::ALL {
            let mut ms = None;
            if variants.contains(&v) {
                let what = format!("{} {n} x {n} block {shape}", v.kernel());
                let (stats, _) = run.measure_checked(&mut c, &what, &want, &mut got, |_, c| {
                    gpu.sum_matrix_2d(&a.as_view(), &b.as_view(), &mut c.as_view_mut(), n, n, shape, v)
                })?;
                (ms, rec) = (Some(stats.median_ms), rec.json(&format!("{}_stats", v.name()), stats));
                let pct = 100.0 * dtod.floor_ms(moved) / stats.median_ms;
                plot.entry((v.name(), shape.y)).or_default().push((f64::from(shape.x), pct));
            }
            rec = figures(rec, &format!("{} ", v.name()), "% floor", ms, moved, &dtod);
        }
        run.row(t, rec);
    }
    run.line("theor. occ. = resident warps per SM (cuOccupancyMaxActiveBlocksPerMultiprocessor) / max warps per SM");
    run.goal(sweep_goal(n, run.rows(t)));
    let (info, matrix) = (gpu.info(), human_bytes(bytes));
    let title = format!(
        "sum_matrix_2d, {n} x {n} f32: % of the DRAM floor by block shape\n{} (compute capability {}.{}); floor = 3 x \
         {matrix} at cuMemcpyDtoD's {gbps:.0} GB/s",
        info.name, info.cc_major, info.cc_minor
    );
    let series: Vec<Series> =
        plot.into_iter().map(|((v, y), points)| Series { name: format!("{v} block.y = {y}"), points }).collect();
    run.plot("matrix", &title, "block.x (threads along columns)", "% of DRAM floor", &series)
}

/// The goal, judged on `sum_matrix_2d` at [`GOAL_N`]² only.
fn sweep_goal(n: usize, rows: &[Rec]) -> Goal {
    let best = |v: &str| {
        let col = format!("{v} % floor");
        let best =
            rows.iter().filter_map(|r| Some((r.get_text("block")?, r.get(&col)?))).max_by(|a, b| a.1.total_cmp(&b.1));
        best.map(|(s, f)| (f, format!("{s}: {}", Fmt::Pct(1).show(f))))
    };
    let goal = format!("best sum_matrix_2d block shape >= {:.0}% of the DRAM floor at {GOAL_N}^2", GOAL_RATIO * 100.0);
    let x4 = best("x4").map_or(String::new(), |b| format!("; x4 best {}", b.1));
    match best("x1") {
        None => Goal::new(goal, None, "sum_matrix_2d was not measured"),
        Some((_, b)) if n != GOAL_N => Goal::new(goal, None, format!("swept {n}^2, not {GOAL_N}^2; best {b}{x4}")),
        Some((f, b)) => Goal::new(goal, Some(f >= GOAL_RATIO), format!("{b}{x4}")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::run::parse;
    use super::*;

    #[test]
    fn goal_and_floor() {
        let row =
            |s: &str, x1, x4: Option<f64>| Rec::new().text("block", s).pct("x1 % floor", x1).pct("x4 % floor", x4);
        let rows = [row("(32, 32)", 0.85, Some(0.95)), row("(128, 1)", 0.925, Some(0.93)), row("(64, 2)", 0.9, None)];
        let line = "goal best sum_matrix_2d block shape >= 90% of the DRAM floor at 16384^2: MET ((128, 1): 92.5%; \
                    x4 best (32, 32): 95.0%)";
        assert_eq!(sweep_goal(GOAL_N, &rows).line(), line);
        assert_eq!(sweep_goal(GOAL_N, &rows[..1]).status, "NOT MET");
        assert!(sweep_goal(4096, &rows).line().contains("NOT EVALUATED (swept 4096^2"));
        assert_eq!(sweep_goal(GOAL_N, &[]).status, "NOT EVALUATED");
        let dtod =
            DtodReference { bytes: 1 << 30, gbps: 3000.0, stats: harness::Stats::from_samples(&[0.7], 1).unwrap() };
        let r = figures(Rec::new(), "x1 ", "% floor", Some(dtod.floor_ms(3e9) / 0.91), 3e9, &dtod);
        assert!((r.get("x1 % floor").unwrap() - 0.91).abs() < 1e-9);
        assert!((r.get("x1 GB/s").unwrap() - 2730.0).abs() < 1e-6);
        assert!(figures(Rec::new(), "", "% of floor", None, 3e9, &dtod).to_json()["pct_of_floor"].is_null());
    }

    #[test]
    fn occupancy_and_inputs() {
        // 2 x 1024 threads = 64 warps of 64; 8 x (16, 16) = 64 warps; 40 threads take 2 warps.
        assert_eq!(theoretical_occupancy(2, 1024, 32, 2048), 1.0);
        assert_eq!(theoretical_occupancy(8, 256, 32, 2048), 1.0);
        assert_eq!(theoretical_occupancy(16, 40, 32, 2048), 0.5);
        let v: Vec<f32> = (0..100_000).map(|i| input_value(i, 7)).collect();
        assert!(v.iter().all(|x| x.is_finite() && x.abs() >= 1.0));
        assert!(v.iter().any(|&x| x < 0.0) && v.iter().any(|&x| x > 0.0));
    }

    #[test]
    fn options_parse() {
        let m: Matrix = parse(&["--only", "sweep", "--shape", "128x1", "--shape", "32,16", "--variant", "x4"]).unwrap();
        assert_eq!((m.only.as_deref(), m.variant.as_deref(), m.layout_n), (Some("sweep"), Some("x4"), None));
        assert_eq!(m.shapes, [BlockShape::new(128, 1), BlockShape::new(32, 16)]);
        let m: Matrix = parse(&["--sweep-n", "4096", "--layout-block", "16x16", "--quick"]).unwrap();
        assert_eq!((m.sweep_n, m.layout_block, m.common.quick), (Some(4096), Some(BlockShape::new(16, 16)), true));
        assert!(parse::<Matrix>(&["--only", "both"]).is_err() && parse::<Matrix>(&["--variant", "x2"]).is_err());
    }
}
