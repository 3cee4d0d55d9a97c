//! The `copy` suite (lesson 000, vectorized memory access): device-to-device copy bandwidth of the scalar, vec2 and
//! vec4 copy kernels and of the driver's `cuMemcpyDtoDAsync`, over power-of-two sizes.
//!
//! * **Buffer pool.** Each size rotates over `pairs = clamp(ceil(3·L2 / (2·size)), 1, 256)` source/destination pairs
//!   ([`Pool`]), so consecutive copies touch at least 3× the L2 in between. Where even 256 pairs stay under 2× L2 the
//!   size is *L2-resident*: its figures measure the cache (or launch overhead), not DRAM, and the table and plot say
//!   so.
//! * **Bandwidth** = 2·size / median time (read + written), GB = 1e9 bytes.
//! * **Verification.** After timing a method, pair 0's destination is poisoned, copied once more, and compared with its
//!   source.
//!
//! Goal: vec4 at ≥ 95% of `cuMemcpyDtoD` at every size ≥ 256 MiB.

use super::harness::{Stats, gbps};
use super::report::Series;
use super::run::{Common, Fmt, Goal, POISON, Rec, Run, Suite, elems, pow2_sizes};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::CopyVariant::{self, Scalar, Vec2, Vec4};
use crate::text::{human_bytes, parse_size};
use crate::{CopyPolicy, DeviceBuffer, DeviceCopy, Error, Gpu};
use bytemuck::Zeroable;

/// Sizes from which the goal applies (256 MiB).
pub const GOAL_MIN_BYTES: u64 = 256 << 20;
/// The goal: vec4 bandwidth at least this fraction of `cuMemcpyDtoD`'s.
pub const GOAL_RATIO: f64 = 0.95;
/// Most source/destination pairs in a size's pool.
pub const MAX_PAIRS: u64 = 256;
/// Device memory left free besides the pool.
pub const FREE_MEMORY_MARGIN: u64 = 256 << 20;
/// Most device memory one size's pool may take.
pub const POOL_CAP: u64 = 8 << 30;

/// `coalesce bench copy`.
#[derive(clap::Args, Clone, Debug)]
pub struct Copy {
    /// Smallest copy size (4096, 4KiB, 256MiB, 2GiB) [default: 4KiB, 64KiB with --quick].
    #[arg(long, value_parser = parse_size)]
    pub min_size: Option<u64>,
    /// Largest copy size [default: 2GiB, 64MiB with --quick].
    #[arg(long, value_parser = parse_size)]
    pub max_size: Option<u64>,
    /// Run the lesson's kernels as the lesson launches them (one access per thread per step, 256 threads, grid capped
    /// at one wave) instead of the tuned policy (8 accesses per thread, 512 threads, 8 waves).
    #[arg(long)]
    pub lesson_launch: bool,
    /// The shared options.
    #[command(flatten)]
    pub common: Common,
}

/// The methods, in table order: name, kernel variant (`None`: the driver).
const METHODS: [(&str, Option<CopyVariant>); 4] =
    [("scalar", Some(Scalar)), ("vec2", Some(Vec2)), ("vec4", Some(Vec4)), ("DtoD", None)];

/// The buffers a size rotates over so that consecutive operations touch at least 3× the L2 (shared by the copy, reduce
/// and transpose suites).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool {
    /// Buffers in the rotation (for copies: source/destination pairs).
    pub pairs: u64,
    /// True when the pool is under 2× L2.
    pub l2_resident: bool,
}

impl Pool {
    /// `clamp(ceil(3·l2 / unit), 1, max)` buffers of `unit` bytes each.
    pub fn rotating(unit: u64, l2: u64, max: u64) -> Pool {
        let pairs = (3 * l2).div_ceil(unit.max(1)).clamp(1, max);
        Pool { pairs, l2_resident: pairs * unit < 2 * l2 }
    }

    /// The pool for copies of `size` bytes with `l2` bytes of L2: pairs as [`Pool::rotating`] (at most [`MAX_PAIRS`]),
    /// fewer if `cap` bytes or the `free` device memory less [`FREE_MEMORY_MARGIN`] run short. `Err` says why not even
    /// one pair fits.
    pub fn plan(size: u64, l2: u64, cap: u64, free: u64) -> Result<Pool, String> {
        let (pair, budget) = (size.saturating_mul(2), cap.min(free.saturating_sub(FREE_MEMORY_MARGIN)));
        if pair == 0 {
            return Err("empty size".into());
        }
        if budget < pair {
            let [p, b, c, f, m] = [pair, budget, cap, free, FREE_MEMORY_MARGIN].map(human_bytes);
            return Err(format!(
                "one source/destination pair needs {p}; the budget is {b} (cap {c}, {f} free on the device less {m} \
                 margin)"
            ));
        }
        Ok(Pool::rotating(pair, l2, MAX_PAIRS.min(budget / pair)))
    }

    /// `pairs` device copies of `data` and as many zeroed destinations, allocated pair by pair: (sources,
    /// destinations).
    pub fn alloc<T: DeviceCopy + Zeroable>(self, gpu: &Gpu, data: &[T]) -> Result<(Buffers<T>, Buffers<T>), Error> {
        let pairs = (0..self.pairs).map(|_| Ok((gpu.upload(data)?, gpu.alloc_zeroed(data.len())?)));
        Ok(pairs.collect::<Result<Vec<_>, Error>>()?.into_iter().unzip())
    }
}

/// Device buffers of one kind (a pool's sources or destinations).
pub type Buffers<T> = Vec<DeviceBuffer<T>>;

/// The non-zero source data: a cheap hash of the index that is never 0 and never the poison pattern.
pub fn pattern_word(i: usize) -> u32 {
    let mut x = (i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    let w = (x ^ (x >> 31)) as u32;
    let poison = u32::from_ne_bytes([POISON; 4]);
    if w == 0 || w == poison { !poison } else { w }
}

/// True for the driver's out-of-memory errors.
pub fn is_out_of_memory(e: &Error) -> bool {
    matches!(e, Error::OutOfMemory { .. }) || matches!(e, Error::Driver(d) if d.code == 2)
}

impl Suite for Copy {
    const INFO: SuiteInfo = SuiteInfo {
        name: "copy",
        about: "device-to-device copy: scalar / vec2 / vec4 kernels vs cuMemcpyDtoD, 4 KiB..2 GiB",
    };
    const UNITS: &'static str = "GB = 1e9 bytes; bytes = read + written; times in ms per copy";

    fn common(&self) -> &Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let (min, max) = (run.pick(self.min_size, 4 << 10, 64 << 10), run.pick(self.max_size, 2 << 30, 64 << 20));
        let sizes = pow2_sizes(min.max(4), max);
        if sizes.is_empty() {
            let (min, max) = (human_bytes(min), human_bytes(max));
            let why = format!("no power of two between {min} and {max} (the smallest size is 4 bytes, one u32)");
            return Err(run.bad_options(why));
        }
        let policy = if self.lesson_launch { CopyPolicy::LESSON } else { CopyPolicy::TUNED };
        let CopyPolicy { threads, items, waves } = policy;
        run.param("policy", [("threads", threads), ("items", items), ("waves", waves)]);
        run.line(format!(
            "kernels: {items} access(es) per thread per step, {threads} threads per block, grid capped at {waves} \
             wave(s) of resident blocks"
        ));
        let (t, l2) = (run.table("sizes", ""), u64::from(run.gpu.info().l2_bytes));
        let mut series = METHODS.map(|(n, v)| Series { name: v.map_or("cuMemcpyDtoD", |_| n).into(), points: vec![] });
        let (mut resident, mut worst) = (Vec::new(), Vec::new());
        run.progress(sizes.len() * METHODS.len());
        for size in sizes {
            let (free, _) = run.gpu.memory_info()?;
            let measured = Pool::plan(size, l2, POOL_CAP, free as u64)
                .map_err(BenchError::Options)
                .and_then(|pool| measure_size(run, size, pool, &policy).map(|g| (pool, g)));
            let (pool, gbps) = match measured {
                Ok(m) => m,
                Err(BenchError::Options(why)) => {
                    run.line(format!("skipped {}: {why}", human_bytes(size)));
                    continue;
                }
                Err(BenchError::Gpu(e)) if is_out_of_memory(&e) => {
                    run.line(format!("skipped {}: allocating the pool failed: {e}", human_bytes(size)));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let mut rec = Rec::new().text("size", human_bytes(size)).flag("L2?", pool.l2_resident);
            for (i, (name, _)) in METHODS.iter().enumerate() {
                rec = rec.num(if i == 3 { "DtoD (GB/s)" } else { name }, gbps[i].0, 1).json(name, gbps[i].1);
                series[i].points.push((size as f64, gbps[i].0));
            }
            let vs_dtod = gbps[2].0 / gbps[3].0;
            let rec = rec.times("vec2/scalar", gbps[1].0 / gbps[0].0).times("vec4/scalar", gbps[2].0 / gbps[0].0);
            run.row(t, rec.pct("vec4/DtoD %", vs_dtod).int("bytes", size).int("pairs", pool.pairs));
            resident.extend(pool.l2_resident.then(|| human_bytes(size)));
            worst.extend((size >= GOAL_MIN_BYTES).then(|| (vs_dtod, human_bytes(size))));
        }
        let l2_text = human_bytes(l2);
        let note = match &resident[..] {
            [] => format!("no size L2-resident ({l2_text} L2): DRAM bandwidth throughout"),
            [one] => format!("L2-resident, not DRAM figures (pool < 2 x {l2_text} L2): {one}"),
            [lo, .., hi] => format!("L2-resident, not DRAM figures (pool < 2 x {l2_text} L2): {lo} to {hi}"),
        };
        let info = run.gpu.info();
        run.line(format!("{note}; theoretical DRAM bandwidth: {:.1} GB/s", info.theoretical_dram_gbps()));
        let (name, arch) = (&info.name, run.gpu.ptx_arch());
        let title = format!(
            "copy bandwidth vs size: {name} (PTX sm_{arch})\n{items} items/thread, {threads} threads, {waves} \
             wave(s); {note}"
        );
        run.plot("copy", &title, "bytes copied (log2 scale)", "GB/s (1e9 B/s, read + written)", &series)?;
        let goal = format!("vec4 >= {:.0}% of DtoD for sizes >= {}", GOAL_RATIO * 100.0, human_bytes(GOAL_MIN_BYTES));
        let none = format!("no size >= {} was measured", human_bytes(GOAL_MIN_BYTES));
        run.goal(Goal::worst(goal, worst, GOAL_RATIO, true, Fmt::Pct(1), &none));
        Ok(())
    }
}

/// Times every method on one size's pool and verifies each: (GB/s, stats) per method.
fn measure_size(run: &Run<'_>, size: u64, pool: Pool, policy: &CopyPolicy) -> BenchResult<Vec<(f64, Stats)>> {
    let (gpu, human) = (run.gpu, human_bytes(size));
    let data: Vec<u32> = (0..elems(size / 4)?).map(pattern_word).collect();
    run.tick(&format!("{human}: allocating {} pairs", pool.pairs));
    let (srcs, mut dsts) = pool.alloc(gpu, &data)?;
    let (mut out, mut got) = (Vec::new(), Vec::new());
    for (name, v) in METHODS {
        run.tick(&format!("{human} {name}"));
        let what = format!("{name} copy of {human}");
        let (stats, ()) = run.measure_checked(&mut dsts, &what, &data, &mut got, |i, dst| match v {
            None => gpu.copy_with_driver(&srcs[i].as_view(), &mut dst.as_view_mut()),
            Some(v) => gpu.copy_with(&srcs[i].as_view(), &mut dst.as_view_mut(), v, policy).map(drop),
        })?;
        out.push((gbps(2.0 * size as f64, stats.median_ms), stats));
        run.inc();
    }
    srcs[0].copy_to_host(&mut got)?;
    run.check(&format!("the source of the {human} copies"), &got, &data)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100_L2: u64 = 50 << 20;
    const BIG: u64 = 80 << 30;

    #[test]
    fn pools_rotate_past_l2_and_respect_memory() {
        assert_eq!(Pool::plan(4 << 10, H100_L2, 8 << 30, BIG).unwrap(), Pool { pairs: 256, l2_resident: true });
        assert_eq!(Pool::plan(256 << 10, H100_L2, 8 << 30, BIG).unwrap(), Pool { pairs: 256, l2_resident: false });
        assert_eq!(Pool::plan(16 << 20, H100_L2, 8 << 30, BIG).unwrap(), Pool { pairs: 5, l2_resident: false });
        assert_eq!(Pool::plan(2 << 30, H100_L2, 8 << 30, BIG).unwrap(), Pool { pairs: 1, l2_resident: false });
        assert_eq!(Pool::plan(16 << 20, H100_L2, 64 << 20, BIG).unwrap(), Pool { pairs: 2, l2_resident: true });
        assert!(Pool::plan(8 << 30, H100_L2, 8 << 30, BIG).unwrap_err().contains("needs 16 GiB"));
        assert!(Pool::plan(2 << 30, H100_L2, 8 << 30, 4 << 30).is_err());
        assert_eq!(Pool::plan(2 << 30, H100_L2, 8 << 30, (4 << 30) + FREE_MEMORY_MARGIN).unwrap().pairs, 1);
    }

    #[test]
    fn pattern_is_never_zero_or_poison() {
        assert!((0..1_000_000).map(pattern_word).all(|w| w != 0 && w != 0xA5A5_A5A5));
        assert_ne!(pattern_word(0), pattern_word(1));
    }
}
