//! The `access` suite (lesson 004, §5.3.2 "global memory" and "two-dimensional arrays"): effective bandwidth of f32
//! copies with a misaligned side (`read_offset`: `out[i] = in[i + offset]`, and `write_offset`; offsets 0..=32) or a
//! strided side (`read_stride`: `out[i] = in[i · stride]`, and `write_stride`; strides 1..=32, the strided side
//! spanning up to 4 GiB), and of `C = A + B` on rows of width 8192, 8191 and 8200 in linear vs pitched memory
//! ([`crate::PitchedBuffer`]). Effective bandwidth = useful bytes (elements read + written, 4 bytes each) / time; `% of
//! DtoD` divides it by the driver's device-to-device copy measured in the same run. Every timed launch's output is
//! poisoned, computed once more and compared with the CPU reference, the untouched elements included.

use rayon::prelude::*;

use super::report::Series;
use super::run::{Common, POISON, Rec, Run, Suite, Tab, elems, parse_elems};
use super::{BenchResult, SuiteInfo, harness::gbps, matrix::input_value};
use crate::text::{human_bytes, parse_size};
use crate::{BlockShape, MatrixLayout::RowMajor, access::Pattern};

/// Salts of the source values: the wide (misaligned or strided) side's, the unit-stride side's.
const SALTS: [u64; 2] = [0xACCE55, 0x5EED];
/// A kernel of a sweep: its pattern at an offset or stride.
type Kernel = fn(usize) -> Pattern;

/// `coalesce bench access`.
#[derive(clap::Args, Clone, Debug)]
pub struct Access {
    /// Only this part: offset, stride or 2d [default: all three].
    #[arg(long, value_parser = ["offset", "stride", "2d"])]
    pub only: Option<String>,
    /// Offsets swept, elements, comma-separated [default: 0..=32].
    #[arg(long, value_delimiter = ',')]
    pub offsets: Option<Vec<usize>>,
    /// Strides swept, elements, comma-separated [default: 1..=32].
    #[arg(long, value_delimiter = ',')]
    pub strides: Option<Vec<usize>>,
    /// Only the read-side kernels (read_offset, read_stride) or the write-side ones.
    #[arg(long, value_parser = ["read", "write"])]
    pub side: Option<String>,
    /// Elements moved per offset launch: a number or 2^k [default: 2^26, 2^22 with --quick].
    #[arg(long, value_parser = parse_elems)]
    pub offset_elems: Option<u64>,
    /// Elements moved per stride launch, at most [default: 2^25, 2^22 with --quick].
    #[arg(long, value_parser = parse_elems)]
    pub stride_elems: Option<u64>,
    /// Largest span of the strided side [default: 4GiB, 256MiB with --quick].
    #[arg(long, value_parser = parse_size)]
    pub footprint: Option<u64>,
    /// Row widths of the 2D part, comma-separated [default: 8192,8191,8200].
    #[arg(long, value_delimiter = ',')]
    pub widths: Option<Vec<usize>>,
    /// Rows of the 2D part [default: 8192, 2048 with --quick].
    #[arg(long)]
    pub rows: Option<usize>,
    /// Block of the 2D part (XxY) [default: 32x8].
    #[arg(long)]
    pub block: Option<BlockShape>,
    /// The shared options.
    #[command(flatten)]
    pub common: Common,
}

/// Elements moved at `stride`: `max`, fewer when the strided span (`(n - 1) · stride + 1` elements) would pass
/// `footprint` bytes (one element at least).
pub fn stride_n(max: usize, footprint: u64, stride: usize) -> usize {
    max.min(((footprint / 4).max(1) as usize - 1) / stride.max(1) + 1)
}

impl Suite for Access {
    const INFO: SuiteInfo = SuiteInfo {
        name: "access",
        about: "misaligned (offset 0..32) and strided (1..32) f32 reads and writes; 2D widths 8192/8191/8200, linear vs pitched",
    };
    const UNITS: &'static str = "GB = 1e9 bytes; effective bandwidth = useful bytes (elements read + written, 4 bytes \
                                 each) / time; times in ms per launch; % of DtoD = effective GB/s / cuMemcpyDtoD GB/s";

    fn common(&self) -> &Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let on = |part: &str| self.only.as_deref().is_none_or(|o| o == part);
        let offsets = if on("offset") { self.offsets.clone().unwrap_or_else(|| (0..=32).collect()) } else { vec![] };
        let strides = if on("stride") { self.strides.clone().unwrap_or_else(|| (1..=32).collect()) } else { vec![] };
        let widths = if on("2d") { self.widths.clone().unwrap_or_else(|| vec![8192, 8191, 8200]) } else { vec![] };
        let offset_n = elems(run.pick(self.offset_elems, 1 << 26, 1 << 22))?;
        let stride_max = elems(run.pick(self.stride_elems, 1 << 25, 1 << 22))?;
        let (footprint, rows) = (run.pick(self.footprint, 4 << 30, 256 << 20), run.pick(self.rows, 8192, 2048));
        let block = self.block.unwrap_or(BlockShape::new(32, 8));
        if offset_n == 0 || stride_max == 0 || rows == 0 || strides.contains(&0) || widths.contains(&0) {
            return Err(run.bad_options("--offset-elems, --stride-elems, --strides, --rows and --widths must be >= 1"));
        }
        let n_2d = widths.iter().max().map_or(1, |w| w.saturating_mul(rows));
        let dtod_n =
            [(offsets.len(), offset_n), (strides.len(), stride_max)].iter().find(|p| p.0 > 0).map_or(n_2d, |p| p.1);
        let dtod = run.dtod(4 * dtod_n as u64)?;
        run.param("stride_footprint", footprint);
        run.line(format!("cuMemcpyDtoD {:.1} GB/s ({} copied)", dtod.gbps, human_bytes(dtod.bytes)));
        let side = |k: &Kernel| self.side.as_deref().is_none_or(|s| (s == "read") == k(1).on_loads());
        let (name, d) = (&run.gpu.info().name, dtod.gbps);
        let sub = format!("{name}; effective GB/s (useful bytes / time); cuMemcpyDtoD {d:.0} GB/s");
        if !offsets.is_empty() {
            let t = run
                .table("offsets", "offsets: the misaligned side starts `offset` elements past a 256-byte-aligned base");
            let plan: Vec<_> = offsets.iter().map(|&o| (o, offset_n)).collect();
            let kernels: Vec<Kernel> = [Pattern::ReadOffset, Pattern::WriteOffset].into_iter().filter(side).collect();
            let series = sweep(run, t, &plan, &kernels, dtod.gbps)?;
            let title = format!("f32 copy with a misaligned side: {offset_n} elements\n{sub}");
            run.plot_linear("access-offset", &title, "offset (elements)", "GB/s", &series)?;
        }
        if !strides.is_empty() {
            let t = run.table("strides", "strides: the strided side spans (n - 1) * stride + 1 elements");
            let plan: Vec<_> = strides.iter().map(|&s| (s, stride_n(stride_max, footprint, s))).collect();
            let kernels: Vec<Kernel> = [Pattern::ReadStride, Pattern::WriteStride].into_iter().filter(side).collect();
            let series = sweep(run, t, &plan, &kernels, dtod.gbps)?;
            let title = format!("f32 copy with a strided side\n{sub}");
            run.plot("access-stride", &title, "stride (elements)", "GB/s", &series)?;
        }
        if widths.is_empty() { Ok(()) } else { two_d(run, &widths, rows, block, dtod.gbps) }
    }
}

/// Measures the kernels of a sweep (`sides`: read, write or both) at every `(param, n)` of `plan`, each verified, into
/// table `t` (the kernels side by side); returns the plot's series (GB/s per kernel).
fn sweep(run: &mut Run<'_>, t: Tab, plan: &[(usize, usize)], sides: &[Kernel], dtod: f64) -> BenchResult<Vec<Series>> {
    let what = sides[0](0).kernel().rsplit('_').next().unwrap_or_default(); // "offset" or "stride"
    let wide = plan.iter().filter_map(|&(p, n)| sides[0](p).extents(n).ok()).map(|(s, d)| s.max(d)).max();
    let (gpu, wide, narrow) = (run.gpu, wide.unwrap_or(1), plan.iter().map(|c| c.1).max().unwrap_or(1));
    // Per kernel: itself, its source (on the device, on the host), its destination. The misaligned or
    // strided side is the wide buffer: the source of reads, the destination of writes.
    let mut bufs = Vec::new();
    for &k in sides {
        let (salt, src, dst) = if k(1).on_loads() { (SALTS[0], wide, narrow) } else { (SALTS[1], narrow, wide) };
        let host: Vec<f32> = (0..src).into_par_iter().map(|j| input_value(j, salt)).collect();
        bufs.push((k, gpu.upload(&host)?, host, [gpu.alloc_zeroed::<f32>(dst)?]));
    }
    let mut series: Vec<_> = sides.iter().map(|k| Series { name: k(0).kernel().into(), points: vec![] }).collect();
    let (mut got, mut want) = (Vec::with_capacity(wide), vec![0f32; wide]);
    for &(param, n) in plan {
        let mut rec = Rec::new().int(what, param).int("n", n).json("useful_bytes", 8 * n);
        for ((make, src, host, dst), s) in bufs.iter_mut().zip(&mut series) {
            let (p, want) = (make(param), &mut want[..dst[0].len()]);
            want.par_iter_mut().for_each(|w| *w = f32::from_bits(u32::from_ne_bytes([POISON; 4])));
            crate::access::reference(p, host, want, n)?;
            let (stats, _) = run.measure_checked(dst, &format!("{p} n={n}"), want, &mut got, |_, d| {
                gpu.access_pattern(p, &src.as_view(), &mut d.as_view_mut(), n)
            })?;
            let (name, ms, g) = (&s.name, stats.median_ms, gbps(8.0 * n as f64, stats.median_ms));
            rec = rec.num(&format!("{name} ms"), ms, 3).num(&format!("{name} GB/s"), g, 1);
            rec = rec.pct(&format!("{name} % of DtoD"), g / dtod).json(&format!("{name}_stats"), stats);
            s.points.push((param as f64, g));
        }
        run.row(t, rec);
    }
    Ok(series)
}

/// The 2D part: `C = A + B` at every width, on linear then on pitched memory, each verified.
fn two_d(run: &mut Run<'_>, widths: &[usize], rows: usize, block: BlockShape, dtod: f64) -> BenchResult<()> {
    let (gpu, t) = (run.gpu, run.table("two_d", format!("2D: C = A + B row-major, block {block}")));
    for &width in widths {
        let n = width.checked_mul(rows).ok_or_else(|| run.bad_options(format!("{width} x {rows} overflows")))?;
        let [a, b] = SALTS.map(|s| (0..n).into_par_iter().map(|i| input_value(i, s)).collect::<Vec<_>>());
        let (mut want, mut got) = (vec![0f32; n], vec![0f32; n]);
        crate::matrix::reference_add(&a, &b, &mut want)?;
        let (da, db, mut dc) = (gpu.upload(&a)?, gpu.upload(&b)?, [gpu.alloc_zeroed::<f32>(n)?]);
        let (linear, _) =
            run.measure_checked(&mut dc, &format!("linear {width} x {rows}"), &want, &mut got, |_, c| {
                gpu.matrix_add(RowMajor, &da.as_view(), &db.as_view(), &mut c.as_view_mut(), rows, width, block)
            })?;
        let (pa, pb) = (gpu.upload_pitched(&a, width, rows)?, gpu.upload_pitched(&b, width, rows)?);
        let mut pc = gpu.alloc_pitched_zeroed::<f32>(width, rows)?;
        let pitched = run.measure(|_| Ok(gpu.matrix_add_pitched(&pa, &pb, &mut pc, block).map(drop)?))?;
        pc.fill_bytes(POISON)?;
        gpu.matrix_add_pitched(&pa, &pb, &mut pc, block)?;
        pc.copy_to_host(&mut got)?;
        run.check(&format!("pitched {width} x {rows} (pitch {})", pc.pitch()), &got, &want)?;
        for (layout, stride, stats) in [("linear", width * 4, linear), ("pitched", pc.pitch(), pitched)] {
            let (ms, g) = (stats.median_ms, gbps(12.0 * n as f64, stats.median_ms));
            let rec = Rec::new().int("width", width).int("rows", rows).text("layout", layout);
            let rec =
                rec.int("row stride (B)", stride).int("row alignment (B)", 1usize << stride.trailing_zeros().min(12));
            let rec = rec.num("ms", ms, 3).num("GB/s", g, 1).pct("% of DtoD", g / dtod).json("useful_bytes", 12 * n);
            run.row(t, rec.json("stats", stats));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::run::parse;
    use super::*;

    #[test]
    fn stride_sizes_respect_the_footprint() {
        // 4 GiB / 4 bytes / 32 = 2^25: every default stride moves 2^25.
        assert!((1..=32).all(|s| stride_n(1 << 25, 4 << 30, s) == 1 << 25));
        assert_eq!((stride_n(1 << 26, 4 << 30, 1), stride_n(1 << 26, 4 << 30, 32)), (1 << 26, 1 << 25));
        // The strided span, bytes, of each stride within the footprint.
        let span = |max, footprint, s: usize| ((stride_n(max, footprint, s) - 1) * s + 1) as u64 * 4;
        assert!([3, 7, 17, 31, 32].into_iter().all(|s| span(1 << 26, 4 << 30, s) <= 4 << 30));
        assert!((1..=32).all(|s| span(1 << 22, 256 << 20, s) <= 256 << 20));
    }

    #[test]
    fn options_parse() {
        let a: Access = parse(&["--only", "stride", "--side", "read", "--strides", "1,4", "--quick"]).unwrap();
        assert_eq!((a.only.as_deref(), a.side.as_deref(), a.strides), (Some("stride"), Some("read"), Some(vec![1, 4])));
        let a: Access = parse(&["--offset-elems", "2^20", "--block", "16x16", "--footprint", "1GiB"]).unwrap();
        let block = Some(BlockShape::new(16, 16));
        assert_eq!((a.offset_elems, a.block, a.footprint), (Some(1 << 20), block, Some(1 << 30)));
        assert!(parse::<Access>(&["--side", "both"]).is_err() && parse::<Access>(&["--only", "3d"]).is_err());
    }
}
