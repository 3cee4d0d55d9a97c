//! The `transpose` suite (lesson 004, "shared memory": banks): `f32` transpose, naive against a `32 × 32` shared tile
//! (bank conflicts) and a padded `32 × 33` tile (none), next to the copy suite's tuned `vec4` kernel on the same
//! [`copy::Pool`] and the DtoD floor ([`Run::dtod`]); bytes: the matrix read + written. Every launch is checked once
//! more on a poisoned output against the rayon reference (copies against the input, which must stay unchanged). Goal:
//! padded at `32 × 8` ≥ 85% of the vec4 copy at 16384².

use super::copy::{self, Pool};
use super::harness::gbps;
use super::report::Series;
use super::run::{Common, Goal, Rec, Run, Suite};
use super::{BenchResult, SuiteInfo};
use crate::transpose::reference_transpose;
use crate::{CopyPolicy, CopyVariant, TransposePolicy as Policy, TransposeVariant as Variant};

/// The goal: padded transpose GB/s at least this fraction of vec4 copy's.
pub const GOAL_RATIO: f64 = 0.85;
/// The square side the goal applies to.
pub const GOAL_SIDE: usize = 16_384;
const CLASSIC: u32 = Policy::CLASSIC.block_rows;
const DTOD: &str = "cuMemcpyDtoD";
const VEC4: &str = "copy_vec4 (tuned)";
/// One matrix to measure: `(rows, cols)`, its blocks, and whether it is in the size sweep.
pub type Case = ((usize, usize), Vec<Policy>, bool);

/// `coalesce bench transpose`.
#[derive(clap::Args, Clone, Debug)]
pub struct Transpose {
    /// Matrix shape ROWSxCOLS, repeatable, each measured at every block height [default: 16384x16384, 8192x32768,
    /// 32768x8192, 16383x16385; 4096x4096, 1000x1007 with --quick].
    #[arg(long = "shape", value_parser = parse_shape)]
    pub shapes: Vec<(usize, usize)>,
    /// Block heights for the shapes, comma-separated (4, 8, 16, 32: blocks of 32 x H).
    #[arg(long, value_delimiter = ',', default_value = "4,8,16,32")]
    pub block_rows: Vec<u32>,
    /// Sides of the square size sweep, comma-separated [default: 512,1024,2048,4096,8192; 512,1024,2048 with --quick].
    #[arg(long, value_delimiter = ',', conflicts_with = "no_sweep")]
    pub sweep: Option<Vec<usize>>,
    /// Skip the size sweep.
    #[arg(long)]
    pub no_sweep: bool,
    /// Kernels, comma-separated (naive, tiled, padded).
    #[arg(long, value_delimiter = ',', default_value = "naive,tiled,padded")]
    pub variants: Vec<Variant>,
    /// Skip the vec4 copy and cuMemcpyDtoD references (no ratios, no goal).
    #[arg(long)]
    pub no_reference: bool,
    /// The shared options.
    #[command(flatten)]
    pub common: Common,
}

/// `4096x4096` (rows x columns, at least 1 each).
pub fn parse_shape(text: &str) -> Result<(usize, usize), String> {
    let n = |v: &str| v.trim().parse::<usize>().ok().filter(|&n| n > 0);
    let shape = text.split_once(['x', 'X']).and_then(|(r, c)| Some((n(r)?, n(c)?)));
    shape.ok_or_else(|| format!("`{text}` is not a shape: write ROWSxCOLS, e.g. 4096x4096"))
}

/// Input element `i`: finite, in ±[1, 2), never the poison, rarely repeated.
pub fn element(i: usize) -> f32 {
    let w = copy::pattern_word(i);
    f32::from_bits((w & 0x8000_0000) | 0x3F80_0000 | (w & 0x007F_FFFF))
}

/// The matrices `t` measures as `((rows, cols), blocks, in the sweep)`, or why the options are unusable.
pub fn plan(t: &Transpose, quick: bool) -> Result<Vec<Case>, String> {
    let full = vec![(GOAL_SIDE, GOAL_SIDE), (8192, 32_768), (32_768, 8192), (16_383, 16_385)];
    let shapes = if quick { vec![(4096, 4096), (1000, 1007)] } else { full };
    let shapes = if t.shapes.is_empty() { shapes } else { t.shapes.clone() };
    let sweep = if quick { vec![512, 1024, 2048] } else { vec![512, 1024, 2048, 4096, 8192] };
    let sweep = if t.no_sweep { vec![] } else { t.sweep.clone().unwrap_or(sweep) };
    let heights: Vec<Policy> = t.block_rows.iter().map(|&h| Policy::with_block_rows(h)).collect();
    if t.variants.is_empty() || t.block_rows.iter().any(|r| !Policy::BLOCK_ROWS.contains(r)) || heights.is_empty() {
        return Err(format!("need a transpose variant and block rows among {:?}", Policy::BLOCK_ROWS));
    }
    let sweep = sweep.into_iter().filter(|&n| !shapes.contains(&(n, n))).map(|n| ((n, n), vec![Policy::CLASSIC], true));
    Ok(shapes.iter().map(|&s| (s, heights.clone(), false)).chain(sweep).collect())
}

/// The goal, judged on the table's padded rows at 16384² (not sweep rows).
pub fn goal(rows: &[Rec]) -> Goal {
    let (side, pct) = (format!("{GOAL_SIDE} x {GOAL_SIDE}"), GOAL_RATIO * 100.0);
    let at = rows.iter().filter(|r| r.get_text("shape") == Some(&side) && r.to_json()["sweep"] == false);
    let of = |h| at.clone().find(|r| r.get_text("kernel") == Variant::Padded.kernel(h).ok())?.get("% of vec4");
    let best = Policy::BLOCK_ROWS.iter().filter_map(|&h| Some((h, of(h)?))).max_by(|a, b| a.1.total_cmp(&b.1));
    let p = |x: f64| format!("{:.1}%", x * 100.0);
    let text = of(CLASSIC).zip(best).map(|(r, (b, br))| format!("{}; fastest padded block 32 x {b}: {}", p(r), p(br)));
    let none = format!("needs {side} with the padded kernel at the classic block and the references");
    let what = format!("padded transpose (block 32 x {CLASSIC}) >= {pct:.0}% of the vec4 copy at {GOAL_SIDE}^2");
    Goal::new(what, of(CLASSIC).map(|r| r >= GOAL_RATIO), text.unwrap_or(none))
}

impl Suite for Transpose {
    const INFO: SuiteInfo = SuiteInfo {
        name: "transpose",
        about: "f32 transpose: naive / 32x32 shared tile / padded 32x33 tile vs the vec4 copy and cuMemcpyDtoD",
    };
    const UNITS: &'static str = "GB = 1e9 bytes; bytes = matrix read + matrix written; times in ms per launch; \
                                 % of vec4 = kernel GB/s / vec4 copy GB/s; % of floor = kernel GB/s / DtoD GB/s; \
                                 L2? yes: the buffers are under 2 x L2, cache figures, not DRAM";

    fn common(&self) -> &Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let cases = plan(self, run.quick).map_err(|e| run.bad_options(e))?;
        let (t, gpu, tuned, mut resident) = (run.table("kernels", ""), run.gpu, &CopyPolicy::TUNED, vec![]);
        let keys = Variant::ALL.map(|v| (format!("{v} (32 x {CLASSIC})"), v.kernel(CLASSIC).unwrap_or_default()));
        let keys = keys.into_iter().chain([("copy_vec4".into(), VEC4), (DTOD.into(), DTOD)]);
        let mut series: Vec<_> = keys.map(|(name, k)| (Series { name, points: vec![] }, k)).collect();
        run.progress(cases.len());
        for &((rows, cols), ref heights, sweep) in &cases {
            let (n, shape, l2) = (rows.saturating_mul(cols), format!("{rows} x {cols}"), gpu.info().l2_bytes);
            let (bytes, moved, (free, _)) = ((n as u64).saturating_mul(4), 8.0 * n as f64, gpu.memory_info()?);
            let pool = Pool::plan(bytes, l2.into(), copy::POOL_CAP, free as u64);
            let Ok(pool) = pool.map_err(|why| run.line(format!("skipped {shape}: {why}"))) else { continue };
            let floor = if self.no_reference { None } else { Some(run.dtod(bytes)?) };
            let (data, mut want, mut got) = ((0..n).map(element).collect::<Vec<f32>>(), vec![0f32; n], vec![]);
            reference_transpose(&data, rows, cols, &mut want)?;
            let (srcs, mut dsts) = pool.alloc(gpu, &data)?;
            let mut done: Vec<_> = floor.iter().map(|f| (DTOD, f.stats, None)).collect();
            let kernels = self.variants.iter().flat_map(|&v| heights.iter().map(move |&p| Some((v, p))));
            for kernel in floor.map(|_| None).into_iter().chain(kernels) {
                let name = kernel.map_or(Ok(VEC4), |(v, p)| v.kernel(p.block_rows))?;
                let (what, want) = (format!("{name} of {shape}"), if kernel.is_some() { &want } else { &data });
                let (stats, cfg) = run.measure_checked(&mut dsts, &what, want, &mut got, |i, d| {
                    let (s, d) = (&srcs[i].as_view(), &mut d.as_view_mut());
                    match kernel {
                        Some((v, p)) => gpu.transpose_with(s, d, rows, cols, v, p).map(Some),
                        None => gpu.copy_with(s, d, CopyVariant::Vec4, tuned).map(|_| None),
                    }
                })?;
                done.push((name, stats, cfg));
            }
            run.check(&format!("input of the {shape} transposes"), &srcs[0].to_vec()?, &data)?;
            let vec4 = done.iter().find(|d| d.0 == VEC4).map(|d| gbps(moved, d.1.median_ms));
            for (name, stats, cfg) in done {
                let g = gbps(moved, stats.median_ms);
                for (s, _) in series.iter_mut().filter(|s| rows == cols && s.1 == name) {
                    s.points.push((bytes as f64, g));
                }
                let r = Rec::new()
                    .text("shape", &shape)
                    .flag("L2?", if name == DTOD { run.l2_resident(2 * bytes) } else { pool.l2_resident })
                    .text("kernel", name)
                    .text("block", cfg.map_or("-".into(), |c| format!("32 x {}", c.block.y)))
                    .num("ms", stats.median_ms, 3)
                    .num("GB/s", g, 1)
                    .pct("% of vec4", vec4.map(|v| g / v))
                    .pct("% of floor", floor.map(|f| g / f.gbps))
                    .json("sweep", sweep)
                    .json("stats", stats);
                run.row(t, r);
            }
            resident.extend((rows == cols && pool.l2_resident).then_some(shape));
            run.inc();
        }
        let (i, note) = (gpu.info(), format!("L2-resident (not DRAM figures): {}", resident.join(", ")));
        let note = if resident.is_empty() { "no square L2-resident" } else { &note };
        let dev = format!("{} (compute capability {}.{}, PTX sm_{})", i.name, i.cc_major, i.cc_minor, gpu.ptx_arch());
        let title = format!("f32 transpose vs matrix size: {dev}\nsquare matrices; {note}");
        let series: Vec<Series> = series.into_iter().map(|s| s.0).filter(|s| !s.points.is_empty()).collect();
        run.plot("transpose", &title, "bytes per matrix (log2 scale)", "GB/s (1e9 B/s, read + written)", &series)?;
        run.goal(goal(run.rows(t)));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_is_judged_on_the_classic_block_at_16384() {
        let pad = |side: usize, sweep: bool, h: u32, gbps: f64| {
            let r = Rec::new().text("shape", format!("{side} x {side}")).json("sweep", sweep);
            r.text("kernel", Variant::Padded.kernel(h).unwrap()).pct("% of vec4", gbps / 2900.0)
        };
        let g = goal(&[(4, 2400.0), (8, 2500.0), (16, 2600.0)].map(|(h, g)| pad(16384, false, h, g)));
        let want = "goal padded transpose (block 32 x 8) >= 85% of the vec4 copy at 16384^2: MET (86.2%; fastest padded \
                    block 32 x 16: 89.7%)";
        assert_eq!(g.line(), want);
        let g = goal(&[pad(16384, false, 8, 2400.0)]);
        assert!(g.line().ends_with(": NOT MET (82.8%; fastest padded block 32 x 8: 82.8%)"), "{}", g.line());
        // Not at 16384², not at the classic block there, or only as a sweep row: nothing to judge.
        for r in [pad(4096, false, 8, 2800.0), pad(16384, false, 16, 2800.0), pad(16384, true, 8, 2800.0)] {
            assert!(goal(&[r]).line().contains("NOT EVALUATED"));
        }
    }

    #[test]
    fn elements_are_finite_distinct_and_never_poison() {
        let bits: std::collections::HashSet<u32> = (0..100_000).map(|i| element(i).to_bits()).collect();
        assert!(bits.len() > 99_000 && bits.iter().all(|&b| (b >> 23) & 0xFF == 127 && b != 0xA5A5_A5A5));
    }

    #[test]
    fn options_parse_and_plan() -> Result<(), String> {
        let parse = |w: &[&str]| crate::bench::run::parse::<Transpose>(w).map_err(|e| e.to_string());
        let (full, b) = (plan(&parse(&[])?, false)?, Policy::with_block_rows);
        assert_eq!((full.len(), &full[4]), (9, &((512, 512), vec![b(8)], true)));
        assert_eq!((&full[0].1[..], &parse(&[])?.variants[..]), (&Policy::BLOCK_ROWS.map(b)[..], &Variant::ALL[..]));
        let quick = plan(&parse(&["--quick", "--sweep", "4096,1024"])?, true)?;
        assert_eq!(quick.iter().map(|c| c.0).collect::<Vec<_>>(), [(4096, 4096), (1000, 1007), (1024, 1024)]);
        let mut t = parse(&["--shape", "64X48", "--block-rows", "16", "--variants", "padded", "--no-sweep"])?;
        assert_eq!((plan(&t, false)?, &t.variants[..]), (vec![((64, 48), vec![b(16)], false)], &[Variant::Padded][..]));
        let bad = [&["--block-rows=6"][..], &["--shape=0x5"], &["--variants=x"], &["--no-sweep", "--sweep=9"]];
        assert!(bad.iter().all(|w| parse(w).and_then(|t| plan(&t, false)).is_err()));
        t.variants.clear();
        assert!(plan(&t, false).is_err());
        Ok(())
    }
}
