//! The `reduce` suite (execution-model lesson, parallel reduction): sums of `f32`, `i32` and `f64` with the neighbored,
//! interleaved and fast kernels, against the DRAM floor.
//!
//! * **Floor.** A sum must read its input once: the floor is `n · size` bytes at the bandwidth of the driver's
//!   device-to-device copy measured in the same run (`2 · n · size` bytes moved by `cuMemcpyDtoDAsync` over its median
//!   time). `% of floor` = floor time / kernel time.
//! * **Inputs.** Powers of two from `min_elems` to `max_elems` (default 2^20..2^28). Small inputs rotate over a pool of
//!   copies so consecutive sums touch at least 3× the L2 ([`Pool::rotating`], as the `copy` suite does); a size whose
//!   pool stays under 2× L2 is marked L2-resident.
//! * **Timing.** [`harness::measure`](super::harness::measure) of one `reduce_sum_into` (all passes, nothing
//!   allocated); GB/s = bytes read / median time (1 GB = 1e9 B).
//! * **Verification.** Each variant's result is read back and compared with the CPU reference: `i32` exactly
//!   (wrapping), floats within the plan's bound [`ReducePlan::error_bound`](crate::ReducePlan::error_bound).
//!
//! Goal: the fast kernel at >= 93% of the floor at 2^28 elements, for `f32` and `i32` alike.

use super::copy::{Pool, pattern_word};
use super::harness::gbps;
use super::report::Series;
use super::run::{Common, Fmt, Goal, POISON, Rec, Run, Suite, elems, parse_elems, pow2_sizes};
use super::{BenchResult, SuiteInfo};
use crate::reduce::cpu;
use crate::{DeviceBuffer, ReduceElem, ReducePolicy, ReduceVariant};

/// The goal's size, elements.
pub const GOAL_ELEMS: u64 = 1 << 28;
/// The goal: fast kernel time at most floor / this.
pub const GOAL_RATIO: f64 = 0.93;
/// Most copies of one input in a pool.
pub const MAX_POOL: u64 = 64;

/// `coalesce bench reduce`.
#[derive(clap::Args, Clone, Debug)]
pub struct Reduce {
    /// Smallest element count: a number or 2^k [default: 2^20].
    #[arg(long, value_parser = parse_elems)]
    pub min_elems: Option<u64>,
    /// Largest element count [default: 2^28, 2^24 with --quick].
    #[arg(long, value_parser = parse_elems)]
    pub max_elems: Option<u64>,
    /// Element types, comma-separated (f32, i32, f64).
    #[arg(long, value_delimiter = ',', default_value = "f32,i32,f64", hide_possible_values = true)]
    pub types: Vec<ElemType>,
    /// Kernels, comma-separated (neighbored, interleaved, fast).
    #[arg(long, value_delimiter = ',', default_value = "neighbored,interleaved,fast")]
    pub variants: Vec<ReduceVariant>,
    /// Threads per block.
    #[arg(long, default_value_t = ReducePolicy::TUNED.threads)]
    pub threads: u32,
    /// The fast kernel's grid cap in waves of resident blocks.
    #[arg(long, default_value_t = ReducePolicy::TUNED.waves)]
    pub waves: u32,
    /// The shared options.
    #[command(flatten)]
    pub common: Common,
}

/// Element types the suite sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum ElemType {
    /// `f32`
    F32,
    /// `i32`
    I32,
    /// `f64`
    F64,
}

impl ElemType {
    /// `f32`, `i32`, `f64`.
    pub fn name(self) -> &'static str {
        ["f32", "i32", "f64"][self as usize]
    }

    fn bytes(self) -> u64 {
        if self == ElemType::F64 { 8 } else { 4 }
    }
}

impl Suite for Reduce {
    const INFO: SuiteInfo = SuiteInfo {
        name: "reduce",
        about: "sums of f32/i32/f64: neighbored, interleaved and fast kernels vs the DRAM floor (DtoD), 2^20..2^28",
    };
    const UNITS: &'static str = "GB = 1e9 bytes; a sum reads each element once; DtoD counts read + written";

    fn common(&self) -> &Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let list = pow2_sizes(self.min_elems.unwrap_or(1 << 20).max(1), run.pick(self.max_elems, GOAL_ELEMS, 1 << 24));
        if list.is_empty() || self.types.is_empty() || self.variants.is_empty() {
            return Err(run.bad_options("no size, type or variant to run"));
        }
        let policy = ReducePolicy { threads: self.threads, waves: self.waves };
        run.param("threads", policy.threads);
        run.param("waves", policy.waves);
        let t = run.table("sums", "");
        let mut series = Vec::new();
        run.progress(self.types.len() * list.len());
        for &ty in &self.types {
            let name = ty.name();
            // A line per variant, then the floor: bytes read at the DtoD bandwidth.
            let names = self.variants.iter().map(|v| format!("{name} {v}")).chain([format!("{name} floor (DtoD)")]);
            let mut lines: Vec<Series> = names.map(|name| Series { name, points: vec![] }).collect();
            for &n in &list {
                run.tick(&format!("{name} 2^{}", n.trailing_zeros()));
                let rows = match ty {
                    ElemType::F32 => {
                        measure(run, self, &policy, ty, n, |w| (w >> 8) as f32 / (1u32 << 24) as f32 - 0.5)?
                    }
                    ElemType::I32 => measure(run, self, &policy, ty, n, |w| w as i32)?,
                    ElemType::F64 => measure(run, self, &policy, ty, n, |w| w as f64 / 4_294_967_296.0 - 0.5)?,
                };
                let bytes = (n * ty.bytes()) as f64;
                let ys = rows.iter().map(|r| r.get("GB/s")).chain([rows[0].get("DtoD GB/s")]);
                for (line, y) in lines.iter_mut().zip(ys) {
                    line.points.push((bytes, y.unwrap_or(f64::NAN)));
                }
                rows.into_iter().for_each(|r| run.row(t, r));
                run.inc();
            }
            series.extend(lines);
        }
        let (dev, arch, ReducePolicy { threads, waves }) = (&run.gpu.info().name, run.gpu.ptx_arch(), policy);
        let title = format!(
            "sum bandwidth vs size: {dev} (PTX sm_{arch}); fast kernel {threads} threads, {waves} waves; floor = bytes \
             read at cuMemcpyDtoD's bandwidth"
        );
        run.plot("reduce", &title, "bytes read (log2 scale)", "GB/s read (1e9 B/s)", &series)?;
        let at = format!("2^{}", GOAL_ELEMS.trailing_zeros());
        for ty in [ElemType::F32, ElemType::I32] {
            let cells = [("type", ty.name()), ("elements", at.as_str()), ("variant", "fast")];
            let row = run.rows(t).iter().find(|r| cells.iter().all(|&(c, v)| r.get_text(c) == Some(v)));
            let of_floor = row.and_then(|r| r.get("% of floor")).map(|v| (v, String::new()));
            let goal = format!("{} fast >= {:.0}% of the DRAM floor at 2^28 elements", ty.name(), GOAL_RATIO * 100.0);
            run.goal(Goal::worst(goal, of_floor, GOAL_RATIO, true, Fmt::Pct(1), "2^28 not measured"));
        }
        Ok(())
    }
}

/// Measures and verifies every variant on `n` elements of `elem`, element `i` being `value(pattern_word(i))`: one row
/// each.
fn measure<T: ReduceElem + Into<f64>>(
    run: &Run<'_>,
    s: &Reduce,
    policy: &ReducePolicy,
    elem: ElemType,
    n: u64,
    value: impl Fn(u32) -> T,
) -> BenchResult<Vec<Rec>> {
    let (gpu, len, bytes, log) = (run.gpu, elems(n)?, n * elem.bytes(), format!("2^{}", n.trailing_zeros()));
    let pool = Pool::rotating(bytes, u64::from(gpu.info().l2_bytes), MAX_POOL);
    let host: Vec<T> = (0..len).map(|i| value(pattern_word(i))).collect();
    let inputs: Vec<DeviceBuffer<T>> = (0..pool.pairs).map(|_| gpu.upload(&host)).collect::<Result<_, _>>()?;
    let input = |i: usize| inputs[i % inputs.len()].as_view();
    let mut copy_dst = gpu.alloc_zeroed::<T>(len)?;
    let dtod = run.measure(|i| Ok(gpu.copy_with_driver(&input(i), &mut copy_dst.as_view_mut())?))?;
    drop(copy_dst);
    let floor_ms = dtod.median_ms / 2.0;
    let exact_i32 = (elem == ElemType::I32).then(|| cpu::sum_i32_wrapping(bytemuck::cast_slice(&host)));
    let (exact, abs) = cpu::sum_f64(&host);
    drop(host);

    let mut rows = Vec::new();
    for &v in &s.variants {
        let plan = gpu.reduce_plan(&input(0), v, policy)?;
        let mut scratch = gpu.alloc_zeroed::<T>(plan.scratch_len)?;
        let mut out = gpu.alloc_zeroed::<T>(1)?;
        let mut sum = |i: usize, out: &mut DeviceBuffer<T>| {
            gpu.reduce_sum_into(&input(i), &mut scratch.as_view_mut(), &mut out.as_view_mut(), v, policy)
        };
        let stats = run.measure(|i| Ok(sum(i, &mut out).map(drop)?))?;
        out.fill_bytes(POISON)?;
        sum(0, &mut out)?;
        let got = out.to_vec()?[0];
        let bound = plan.error_bound(T::UNIT_ROUNDOFF, abs) + cpu::sum_f64_error(len, exact, abs);
        let ok = exact_i32.map_or((got.into() - exact).abs() <= bound, |want| got.into() == f64::from(want));
        if !ok {
            let (name, want) = (elem.name(), exact_i32.map_or(exact.to_string(), |w| w.to_string()));
            let why =
                format!("{name} {v} sum of {log} elements is {got:?}; the CPU reference is {want} (Σ|x| = {abs:e})");
            return Err(run.fail(why));
        }
        let rec = Rec::new().text("type", elem.name()).text("elements", &log).flag("L2?", pool.l2_resident);
        let rec = rec.num("DtoD GB/s", gbps(2.0 * bytes as f64, dtod.median_ms), 0).text("variant", v.name());
        let rec = rec.num("GB/s", gbps(bytes as f64, stats.median_ms), 1).pct("% of floor", floor_ms / stats.median_ms);
        let rec = rec.int("passes", plan.passes.len()).int("grid", plan.passes[0].config.grid.x);
        rows.push(rec.json("floor_ms", floor_ms).json("pool", pool.pairs).json("stats", stats));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn pools_and_types() {
        let (l2, pool) = (50 << 20, |pairs, l2_resident| Pool { pairs, l2_resident });
        assert_eq!(Pool::rotating(4 << 20, l2, MAX_POOL), pool(38, false));
        assert_eq!(Pool::rotating(1 << 30, l2, MAX_POOL), pool(1, false));
        assert_eq!(Pool::rotating(1 << 20, l2, MAX_POOL), pool(64, true));
        assert_eq!(ElemType::from_str("f64", false), Ok(ElemType::F64));
        assert!(ElemType::from_str("u8", false).is_err());
        assert_eq!(ElemType::I32.bytes(), 4);
    }
}
