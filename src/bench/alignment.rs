//! The `alignment` suite (lesson 004, §5.3.2 "size and alignment requirement"): `p' = p · scale + shift`
//! on `n` points (default 2^25) stored as 12-byte [`Point12`]s, as 16-byte aligned [`Point16`]s and as
//! three `f32` arrays. **Useful** bytes: 12 read + 12 written per point, every layout; **moved** bytes:
//! what the kernel reads and writes (16 + 16 padded). `% of floor` = the useful bytes' time at the DtoD
//! bandwidth measured in the same run / the kernel's time. Each layout's output is poisoned, computed
//! once more and compared bit for bit with the rayon reference (a power-of-two scale: no rounding hides).

use bytemuck::cast_slice;
use rayon::prelude::*;

use super::run::{Common, POISON, Rec, Run, Suite};
use super::{BenchResult, SuiteInfo, harness::gbps, matrix::input_value};
use crate::alignment::{reference_aos12, reference_aos16, reference_soa};
use crate::text::human_bytes;
use crate::{DeviceBuffer, Point12, Point16, PointLayout::*, Transform};

/// The transform every layout applies (a power-of-two scale).
pub const TRANSFORM: Transform = Transform { scale: 0.5, shift: [1.5, -2.25, 3.0] };

/// `coalesce bench alignment`.
#[derive(clap::Args, Clone, Debug)]
pub struct Alignment {
    /// Points: a number or 2^k [default: 2^25, 2^21 with --quick].
    #[arg(long, value_parser = super::run::parse_elems)]
    pub points: Option<u64>,
    /// The shared options.
    #[command(flatten)]
    pub common: Common,
}

impl Suite for Alignment {
    const INFO: SuiteInfo = SuiteInfo {
        name: "alignment",
        about: "scale+translate 2^25 points: 12-byte struct vs 16-byte aligned struct vs structure of arrays",
    };
    const UNITS: &'static str = "GB = 1e9 bytes; useful bytes = 12 read + 12 written per point; moved bytes = what \
                                 the kernel reads + writes; % of floor = useful bytes at cuMemcpyDtoD speed / kernel \
                                 time";

    fn common(&self) -> &Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let (n, t) = (super::run::elems(run.pick(self.points, 1 << 25, 1 << 21))?, TRANSFORM);
        let n = std::num::NonZeroUsize::new(n).ok_or_else(|| run.bad_options("--points must be at least 1"))?.get();
        let (dtod, gpu, mut measured) = (run.dtod(12 * n as u64)?, run.gpu, Vec::new());
        run.param("points", n);
        run.line(format!("{n} points, {t:?}; cuMemcpyDtoD {:.1} GB/s ({} copied)", dtod.gbps, human_bytes(dtod.bytes)));
        let c: [Vec<f32>; 3] = [0, 1, 2].map(|k| (0..n).into_par_iter().map(|i| input_value(i, 0xA11 + k)).collect());
        let a: Vec<Point12> = (0..n).map(|i| Point12 { x: c[0][i], y: c[1][i], z: c[2][i] }).collect();
        let (s, mut d, mut want) = (gpu.upload(&a)?, gpu.alloc_zeroed::<Point12>(n)?, vec![Point12::default(); n]);
        reference_aos12(&a, &mut want, t)?;
        let launch = |d: &mut DeviceBuffer<_>| gpu.transform_aos12(&s.as_view(), &mut d.as_view_mut(), n, t).map(drop);
        measured.push((Aos12, run.measure(|_| Ok(launch(&mut d)?))?));
        d.fill_bytes(POISON)?;
        launch(&mut d)?;
        run.check("points_aos12 (32-bit words)", cast_slice::<_, u32>(&d.to_vec()?), cast_slice(&want))?;
        let a: Vec<Point16> = (0..n).map(|i| Point16 { x: c[0][i], y: c[1][i], z: c[2][i], pad: 0.0 }).collect();
        let (s, mut d, mut want) = (gpu.upload(&a)?, gpu.alloc_zeroed::<Point16>(n)?, vec![Point16::default(); n]);
        reference_aos16(&a, &mut want, t)?;
        let launch = |d: &mut DeviceBuffer<_>| gpu.transform_aos16(&s.as_view(), &mut d.as_view_mut(), n, t).map(drop);
        measured.push((Aos16, run.measure(|_| Ok(launch(&mut d)?))?));
        d.fill_bytes(POISON)?;
        launch(&mut d)?;
        run.check("points_aos16 (32-bit words)", cast_slice::<_, u32>(&d.to_vec()?), cast_slice(&want))?;
        let [mut x, mut y, mut z] = c.clone();
        reference_soa([&c[0], &c[1], &c[2]], [&mut x, &mut y, &mut z], t)?;
        let s = [gpu.upload(&c[0])?, gpu.upload(&c[1])?, gpu.upload(&c[2])?];
        let mut d = [gpu.alloc_zeroed::<f32>(n)?, gpu.alloc_zeroed::<f32>(n)?, gpu.alloc_zeroed::<f32>(n)?];
        let launch = |[x, y, z]: &mut [DeviceBuffer<f32>; 3]| {
            let (x, y, z) = (&mut x.as_view_mut(), &mut y.as_view_mut(), &mut z.as_view_mut());
            gpu.transform_soa([&s[0].as_view(), &s[1].as_view(), &s[2].as_view()], [x, y, z], n, t).map(drop)
        };
        measured.push((Soa, run.measure(|_| Ok(launch(&mut d)?))?));
        d.iter_mut().try_for_each(|d| d.fill_bytes(POISON))?;
        launch(&mut d)?;
        let (got, want) = ([d[0].to_vec()?, d[1].to_vec()?, d[2].to_vec()?].concat(), [x, y, z].concat());
        run.check("points_soa (x, then y, then z; 32-bit words)", cast_slice::<_, u32>(&got), cast_slice(&want))?;
        let tab = run.table("layouts", "");
        for (l, stats) in measured {
            let (b, ms, useful) = (l.bytes_per_point(), stats.median_ms, 24.0 * n as f64);
            let rec = Rec::new().text("layout", l.name()).text("kernel", l.kernel()).int("B/point", b).num("ms", ms, 3);
            let rec = rec.num("useful GB/s", gbps(useful, ms), 1).num("moved GB/s", gbps(2.0 * (b * n) as f64, ms), 1);
            run.row(tab, rec.pct("% of floor", dtod.floor_ms(useful) / ms).json("stats", stats));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn options_parse_and_the_scale_is_exact() {
        let a: super::Alignment = super::super::run::parse(&["--points", "2^21", "--reps", "3"]).unwrap();
        assert_eq!((a.points, a.common.reps, a.common.quick), (Some(1 << 21), Some(3), false));
        assert!(super::TRANSFORM.scale.log2().fract() == 0.0, "the scale must be a power of two");
    }
}
