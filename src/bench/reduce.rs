//! The `reduce` suite (execution-model lesson, parallel reduction): sums of
//! `f32`, `i32` and `f64` with the neighbored, interleaved and fast
//! kernels, against the DRAM floor.
//!
//! * **Floor.** A sum must read its input once: the floor is `n · size`
//!   bytes at the bandwidth of the driver's device-to-device copy measured
//!   in the same run (`2 · n · size` bytes moved by `cuMemcpyDtoDAsync`
//!   over its median time). `% of floor` = floor time / kernel time.
//! * **Inputs.** Powers of two from `min_elems` to `max_elems` (default
//!   2^20..2^28). Small inputs rotate over a pool of copies so
//!   consecutive sums touch at least 3× the L2 (as the `copy` suite does);
//!   a size whose pool stays under 2× L2 is marked L2-resident.
//! * **Timing.** [`harness::measure`] of one `reduce_sum_into` (all passes,
//!   nothing allocated); GB/s = bytes read / median time (1 GB = 1e9 B).
//! * **Verification.** Each variant's result is read back and compared
//!   with the CPU reference: `i32` exactly (wrapping), floats within the
//!   plan's bound [`ReducePlan::error_bound`](crate::ReducePlan::error_bound).
//!
//! Goal: the fast kernel at >= 93% of the floor at 2^28 elements, for `f32`
//! and `i32` alike.

use super::copy::pattern_word;
use super::harness;
use super::report::Series;
use super::run::{POISON, Rec, Run, Suite, parse_elems};
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
    #[arg(long, value_delimiter = ',', default_value = "f32,i32,f64")]
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
    pub common: super::run::Common,
}

/// Element types the suite sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// `f32`
    F32,
    /// `i32`
    I32,
    /// `f64`
    F64,
}

impl ElemType {
    /// All, in table order.
    pub const ALL: [ElemType; 3] = [ElemType::F32, ElemType::I32, ElemType::F64];

    /// `f32`, `i32`, `f64`.
    pub fn name(self) -> &'static str {
        match self {
            ElemType::F32 => "f32",
            ElemType::I32 => "i32",
            ElemType::F64 => "f64",
        }
    }

    fn bytes(self) -> u64 {
        if self == ElemType::F64 { 8 } else { 4 }
    }
}

impl std::str::FromStr for ElemType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ElemType::ALL.into_iter().find(|t| t.name() == s).ok_or_else(|| format!("unknown type `{s}` (f32, i32, f64)"))
    }
}

/// Copies of an input of `bytes` so a rotation touches 3× the L2:
/// `clamp(ceil(3·l2 / bytes), 1, MAX_POOL)`, and whether that stays under
/// 2× L2.
pub fn pool(bytes: u64, l2: u64) -> (u64, bool) {
    let n = (3 * l2).div_ceil(bytes.max(1)).clamp(1, MAX_POOL);
    (n, n * bytes < 2 * l2)
}

impl Suite for Reduce {
    const INFO: SuiteInfo = SuiteInfo {
        name: "reduce",
        about: "sums of f32/i32/f64: neighbored, interleaved and fast kernels vs the DRAM floor (DtoD), 2^20..2^28",
    };
    const UNITS: &'static str = "GB = 1e9 bytes; a sum reads each element once; DtoD counts read + written";

    fn common(&self) -> &super::run::Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        let list = super::run::pow2_sizes(
            self.min_elems.unwrap_or(1 << 20).max(1),
            run.pick(self.max_elems, GOAL_ELEMS, 1 << 24),
        );
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
            let mut lines: Vec<Series> =
                self.variants.iter().map(|v| Series { name: format!("{} {v}", ty.name()), points: vec![] }).collect();
            let mut floor = Series { name: format!("{} floor (DtoD)", ty.name()), points: vec![] };
            for &n in &list {
                run.tick(&format!("{} 2^{}", ty.name(), n.trailing_zeros()));
                let rows = match ty {
                    ElemType::F32 => measure::<f32>(run, self, &policy, ty, n, |i| {
                        (pattern_word(i) >> 8) as f32 / (1u32 << 24) as f32 - 0.5
                    })?,
                    ElemType::I32 => measure::<i32>(run, self, &policy, ty, n, |i| pattern_word(i) as i32)?,
                    ElemType::F64 => {
                        measure::<f64>(run, self, &policy, ty, n, |i| pattern_word(i) as f64 / 4_294_967_296.0 - 0.5)?
                    }
                };
                let bytes = (n * ty.bytes()) as f64;
                for (i, r) in rows.into_iter().enumerate() {
                    lines[i].points.push((bytes, r.get("GB/s").unwrap_or(f64::NAN)));
                    if i == 0 {
                        // Bytes read at the DtoD bandwidth: the floor's rate.
                        floor.points.push((bytes, r.get("DtoD GB/s").unwrap_or(f64::NAN)));
                    }
                    run.row(t, r);
                }
                run.inc();
            }
            series.extend(lines);
            series.push(floor);
        }
        let title = format!(
            "sum bandwidth vs size: {} (PTX sm_{}); fast kernel {} threads, {} waves; floor = bytes read at cuMemcpyDtoD's bandwidth",
            run.gpu.info().name,
            run.gpu.ptx_arch(),
            policy.threads,
            policy.waves
        );
        run.plot("reduce", &title, "bytes read (log2 scale)", "GB/s read (1e9 B/s)", &series)?;
        for ty in [ElemType::F32, ElemType::I32] {
            let at = format!("2^{}", GOAL_ELEMS.trailing_zeros());
            let of_floor = run
                .rows(t)
                .iter()
                .find(|r| {
                    r.get_text("type") == Some(ty.name())
                        && r.get_text("elements") == Some(at.as_str())
                        && r.get_text("variant") == Some("fast")
                })
                .and_then(|r| r.get("% of floor"));
            let goal = format!("{} fast >= {:.0}% of the DRAM floor at 2^28 elements", ty.name(), GOAL_RATIO * 100.0);
            run.goal(super::run::Goal::worst(
                goal,
                of_floor.map(|v| (v, String::new())),
                GOAL_RATIO,
                true,
                super::run::Fmt::Pct(1),
                "2^28 not measured",
            ));
        }
        Ok(())
    }
}

/// Measures and verifies every variant on `n` elements of `elem`: one row
/// each.
fn measure<T: ReduceElem + Into<f64> + Copy>(
    run: &Run<'_>,
    s: &Reduce,
    policy: &ReducePolicy,
    elem: ElemType,
    n: u64,
    value: impl Fn(usize) -> T,
) -> BenchResult<Vec<Rec>> {
    let gpu = run.gpu;
    let len = super::run::elems(n)?;
    let bytes = n * elem.bytes();
    let (copies, l2_resident) = pool(bytes, u64::from(gpu.info().l2_bytes));
    let host: Vec<T> = (0..len).map(value).collect();
    let inputs: Vec<DeviceBuffer<T>> = (0..copies).map(|_| gpu.upload(&host)).collect::<Result<_, _>>()?;
    let mut copy_dst = gpu.alloc_zeroed::<T>(len)?;
    let dtod =
        run.measure(|i| Ok(gpu.copy_with_driver(&inputs[i % inputs.len()].as_view(), &mut copy_dst.as_view_mut())?))?;
    drop(copy_dst);
    let floor_ms = dtod.median_ms / 2.0;

    let exact_i32 = (elem == ElemType::I32).then(|| {
        let v: Vec<i32> = (0..len).map(|i| pattern_word(i) as i32).collect();
        cpu::sum_i32_wrapping(&v)
    });
    let (exact, abs) = cpu::sum_f64(&host);
    drop(host);

    let mut rows = Vec::new();
    for &v in &s.variants {
        let plan = gpu.reduce_plan(&inputs[0].as_view(), v, policy)?;
        let mut scratch = gpu.alloc_zeroed::<T>(plan.scratch_len)?;
        let mut out = gpu.alloc_zeroed::<T>(1)?;
        let mut sum = |input: &DeviceBuffer<T>| {
            gpu.reduce_sum_into(&input.as_view(), &mut scratch.as_view_mut(), &mut out.as_view_mut(), v, policy)
                .map(drop)
        };
        let stats = run.measure(|i| Ok(sum(&inputs[i % inputs.len()])?))?;
        out.fill_bytes(POISON)?;
        gpu.reduce_sum_into(&inputs[0].as_view(), &mut scratch.as_view_mut(), &mut out.as_view_mut(), v, policy)?;
        let got = out.to_vec()?[0];
        let ok = match exact_i32 {
            Some(want) => got.into() == f64::from(want),
            None => {
                let bound = plan.error_bound(T::UNIT_ROUNDOFF, abs) + cpu::sum_f64_error(len, exact, abs);
                (got.into() - exact).abs() <= bound
            }
        };
        if !ok {
            return Err(run.fail(format!(
                "{} {v} sum of 2^{} elements is {got:?}; the CPU reference is {} (Σ|x| = {abs:e})",
                elem.name(),
                n.trailing_zeros(),
                exact_i32.map_or(exact.to_string(), |w| w.to_string())
            )));
        }
        rows.push(
            Rec::new()
                .text("type", elem.name())
                .text("elements", format!("2^{}", n.trailing_zeros()))
                .flag("L2?", l2_resident)
                .num("DtoD GB/s", harness::gbps(2.0 * bytes as f64, dtod.median_ms), 0)
                .text("variant", v.name())
                .num("GB/s", harness::gbps(bytes as f64, stats.median_ms), 1)
                .pct("% of floor", floor_ms / stats.median_ms)
                .int("passes", plan.passes.len())
                .int("grid", plan.passes[0].config.grid.x)
                .json("floor_ms", floor_ms)
                .json("pool", copies)
                .stats("stats", &stats),
        );
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_and_types() {
        let l2 = 50 << 20;
        assert_eq!(pool(4 << 20, l2), (38, false));
        assert_eq!(pool(1 << 30, l2), (1, false));
        assert_eq!(pool(1 << 20, l2), (64, true));
        assert_eq!("f64".parse::<ElemType>(), Ok(ElemType::F64));
        assert!("u8".parse::<ElemType>().is_err());
        assert_eq!(ElemType::I32.bytes(), 4);
    }
}
