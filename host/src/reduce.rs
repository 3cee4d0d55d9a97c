//! Sums of `i32`, `f32` and `f64` on the GPU (the execution-model lesson's
//! parallel reduction), their CPU references and the error bound floats
//! are held to.
//!
//! Three kernels per type ([`ReduceVariant`]): the lesson's neighbored-pair
//! and interleaved-pair trees in shared memory, and the fast one (grid-stride
//! 128-bit loads, eight in flight per thread, warp shuffles, one partial per
//! block). Each writes one partial sum per block, so a sum is a short chain
//! of passes ([`ReducePlan`]): the tree kernels reduce by `threads` per pass
//! until one value is left; the fast kernel reads the input once with a
//! grid of a few waves and sums its partials in a second, one-block pass.
//!
//! **Semantics.** `i32` sums wrap (two's complement, the exact sum modulo
//! 2³²), so every variant and every order gives the same answer as
//! [`cpu::sum_i32_wrapping`]. Float sums round; for a given plan (variant,
//! policy, length, start alignment and the device's resident-block count)
//! the order of additions is fixed, so a result repeats bit for bit from
//! run to run. No atomics are used (they would make the order, and the
//! float result, vary between runs). Against the exact sum the error is at
//! most [`ReducePlan::error_bound`]: `γ_h · Σ|xᵢ|` with `γ_h = h·u / (1 − h·u)`
//! (`u` = half an ulp of 1) and `h` the longest chain of additions any
//! element goes through in the plan ([`ReducePlan::chain_length`]), the
//! classic bound for recursive summation in any order.

use coalesce_kernels::reduce::{ITEMS, vector_split};
use cust::memory::DeviceCopy;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{DevicePtr, LaunchConfig, blocks_for};
use crate::memory::{DeviceView, DeviceViewMut};

/// Which reduction kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceVariant {
    /// The lesson's neighbored pairs (`tid % (2·stride) == 0`): divergent.
    Neighbored,
    /// The lesson's interleaved pairs (`tid < stride`).
    Interleaved,
    /// Grid-stride 128-bit loads, warp shuffles, one partial per block.
    Fast,
}

impl ReduceVariant {
    /// Every variant, slowest first.
    pub const ALL: [ReduceVariant; 3] = [ReduceVariant::Neighbored, ReduceVariant::Interleaved, ReduceVariant::Fast];

    /// Short name (`neighbored`, `interleaved`, `fast`).
    pub fn name(self) -> &'static str {
        match self {
            ReduceVariant::Neighbored => "neighbored",
            ReduceVariant::Interleaved => "interleaved",
            ReduceVariant::Fast => "fast",
        }
    }
}

impl std::fmt::Display for ReduceVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ReduceVariant {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        ReduceVariant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| format!("unknown reduction `{s}` (neighbored, interleaved, fast)"))
    }
}

/// An element type the reduction kernels sum.
pub trait ReduceElem: DeviceCopy + bytemuck::Pod + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    /// `i32`, `f32`, `f64`.
    const NAME: &'static str;
    /// Half an ulp of 1 (`ε / 2`) for floats, 0 for integers (exact).
    const UNIT_ROUNDOFF: f64;
    /// The kernel of `variant` for this type.
    fn kernel(variant: ReduceVariant) -> &'static str;
}

macro_rules! reduce_elem {
    ($t:ty, $u:expr, $n:literal, $i:literal, $f:literal) => {
        impl ReduceElem for $t {
            const NAME: &'static str = stringify!($t);
            const UNIT_ROUNDOFF: f64 = $u;
            fn kernel(variant: ReduceVariant) -> &'static str {
                match variant {
                    ReduceVariant::Neighbored => $n,
                    ReduceVariant::Interleaved => $i,
                    ReduceVariant::Fast => $f,
                }
            }
        }
    };
}
reduce_elem!(i32, 0.0, "reduce_neighbored_i32", "reduce_interleaved_i32", "reduce_fast_i32");
reduce_elem!(f32, f32::EPSILON as f64 / 2.0, "reduce_neighbored_f32", "reduce_interleaved_f32", "reduce_fast_f32");
reduce_elem!(f64, f64::EPSILON / 2.0, "reduce_neighbored_f64", "reduce_interleaved_f64", "reduce_fast_f64");

/// Launch choices of the reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReducePolicy {
    /// Threads per block: a power of two in 32..=1024 for the tree kernels,
    /// a multiple of 32 up to 1024 for the fast one.
    pub threads: u32,
    /// The fast kernel's grid cap, in waves of resident blocks (SMs ×
    /// blocks per SM). The tree kernels use one block per `threads`
    /// elements.
    pub waves: u32,
}

impl ReducePolicy {
    /// 512 threads, at most 4 waves: 8 × 128-bit loads per thread per
    /// tile, each block striding over the input tile by tile.
    pub const TUNED: ReducePolicy = ReducePolicy { threads: 512, waves: 4 };

    fn check(&self, variant: ReduceVariant) -> Result<()> {
        let t = self.threads;
        let ok = match variant {
            ReduceVariant::Fast => (32..=1024).contains(&t) && t.is_multiple_of(32),
            _ => (32..=1024).contains(&t) && t.is_power_of_two(),
        };
        if !ok || self.waves == 0 {
            return Err(Error::InvalidArgument {
                op: "reduce",
                message: format!(
                    "{variant} reduction cannot run with {t} threads per block and {} waves (threads: {}; waves >= 1)",
                    self.waves,
                    if variant == ReduceVariant::Fast {
                        "a multiple of 32 in 32..=1024"
                    } else {
                        "a power of two in 32..=1024"
                    }
                ),
            });
        }
        Ok(())
    }
}

impl Default for ReducePolicy {
    fn default() -> Self {
        ReducePolicy::TUNED
    }
}

/// One kernel launch of a reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// Elements the pass reads.
    pub len: usize,
    /// Grid and block (and dynamic shared memory for the tree kernels).
    pub config: LaunchConfig,
    /// Where it reads: `None` the input, `Some(offset)` the scratch buffer.
    pub input_offset: Option<usize>,
    /// Where it writes `config.grid.x` partials: `None` the output (one
    /// value, last pass), `Some(offset)` the scratch buffer.
    pub output_offset: Option<usize>,
    /// The longest chain of additions an element goes through in this pass.
    pub chain: usize,
}

/// How one sum is computed: the passes, in order. Computed without a GPU
/// from the length, the start address and the device's resident blocks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReducePlan {
    /// The kernel family.
    pub variant: ReduceVariant,
    /// The launches.
    pub passes: Vec<Pass>,
    /// Scratch elements the passes need for partials.
    pub scratch_len: usize,
}

impl ReducePlan {
    /// Plans the sum of `n` elements of `elem_bytes` bytes starting at
    /// device address `addr`, given the fast kernel's resident blocks on
    /// the whole device (SMs × blocks per SM; unused by the tree kernels).
    pub fn new(
        variant: ReduceVariant,
        n: usize,
        addr: u64,
        elem_bytes: usize,
        policy: &ReducePolicy,
        resident_blocks: u32,
    ) -> Result<ReducePlan> {
        policy.check(variant)?;
        // No buffer holds more bytes than this; larger `n` cannot come from
        // a view and would overflow the vector split.
        if n.checked_mul(elem_bytes).is_none_or(|b| b > isize::MAX as usize) {
            return Err(Error::SizeOverflow { op: "reduce", count: n, elem_size: elem_bytes });
        }
        let t = policy.threads;
        let mut passes = Vec::new();
        let mut scratch = 0usize;
        let (mut len, mut input_offset) = (n, None);
        loop {
            let (grid, shared, chain) = match variant {
                ReduceVariant::Fast => {
                    // The first pass reads the input (any alignment); later
                    // passes read partials, whose alignment the kernel
                    // handles the same way.
                    let start = if input_offset.is_none() { addr as usize } else { 0 };
                    let (_, vectors, _) = vector_split(start, len, elem_bytes);
                    let cap = resident_blocks.max(1).saturating_mul(policy.waves);
                    let tiles = vectors.div_ceil(ITEMS);
                    let grid = if input_offset.is_none() { blocks_for(tiles, t, cap) } else { 1 };
                    let per_thread = len.div_ceil(grid as usize * t as usize);
                    (grid, 0, per_thread + 2 * ITEMS + 14)
                }
                _ => {
                    let grid = u32::try_from(len.div_ceil(t as usize).max(1)).map_err(|_| Error::InvalidArgument {
                        op: "reduce",
                        message: format!("{len} elements need more than 2^32 blocks of {t}"),
                    })?;
                    (grid, t * elem_bytes as u32, t.trailing_zeros() as usize)
                }
            };
            let last = grid == 1;
            let output_offset = if last { None } else { Some(scratch) };
            passes.push(Pass {
                len,
                config: LaunchConfig::new(grid, t).with_shared_mem(shared),
                input_offset,
                output_offset,
                chain,
            });
            if last {
                break;
            }
            input_offset = output_offset;
            scratch += grid as usize;
            len = grid as usize;
        }
        Ok(ReducePlan { variant, passes, scratch_len: scratch })
    }

    /// The longest chain of additions any element goes through: the sum of
    /// each pass's chain (per-thread accumulation, vector lanes, the merge
    /// of the per-load accumulators, shuffle and shared-memory tree steps).
    pub fn chain_length(&self) -> usize {
        self.passes.iter().map(|p| p.chain).sum()
    }

    /// The worst-case rounding error of this plan's float sum against the
    /// exact sum: `γ_h · Σ|xᵢ|`, `γ_h = h·u / (1 − h·u)`, `h` =
    /// [`chain_length`](Self::chain_length), `u` the unit roundoff of the
    /// element type (`f32::EPSILON / 2`, `f64::EPSILON / 2`). Every
    /// partial sum of a summation tree of depth `h` carries at most `h`
    /// roundings, whence the bound (Higham, *Accuracy and Stability of
    /// Numerical Algorithms*, §4.2). Infinite when `h·u >= 1`.
    pub fn error_bound(&self, unit_roundoff: f64, sum_abs: f64) -> f64 {
        let hu = self.chain_length() as f64 * unit_roundoff;
        if hu >= 1.0 { f64::INFINITY } else { hu / (1.0 - hu) * sum_abs }
    }
}

impl Gpu {
    /// The plan [`Gpu::reduce_sum_into`] follows for `input` on this device.
    pub fn reduce_plan<T: ReduceElem>(
        &self,
        input: &DeviceView<'_, T>,
        variant: ReduceVariant,
        policy: &ReducePolicy,
    ) -> Result<ReducePlan> {
        policy.check(variant)?;
        let resident = match variant {
            ReduceVariant::Fast => self.max_resident_blocks(T::kernel(variant), policy.threads)?,
            _ => 1,
        };
        ReducePlan::new(variant, input.len(), input.device_ptr().0, std::mem::size_of::<T>(), policy, resident)
    }

    /// Queues the sum of `input` into `out` (one element) on this handle's
    /// stream, with `scratch` (at least the plan's
    /// [`scratch_len`](ReducePlan::scratch_len) elements) for partial sums.
    /// Nothing is allocated, nothing waits: this is the form benchmarks
    /// time. The sum of no elements is 0. Returns the plan it followed.
    pub fn reduce_sum_into<T: ReduceElem>(
        &self,
        input: &DeviceView<'_, T>,
        scratch: &mut DeviceViewMut<'_, T>,
        out: &mut DeviceViewMut<'_, T>,
        variant: ReduceVariant,
        policy: &ReducePolicy,
    ) -> Result<ReducePlan> {
        if out.len() != 1 {
            return Err(Error::LengthMismatch { op: "reduce_sum_into (out)", expected: 1, got: out.len() });
        }
        input.check_gpu(self, "reduce_sum_into")?;
        scratch.check_gpu(self, "reduce_sum_into")?;
        out.check_gpu(self, "reduce_sum_into")?;
        let plan = self.reduce_plan(input, variant, policy)?;
        if scratch.len() < plan.scratch_len {
            return Err(Error::LengthMismatch {
                op: "reduce_sum_into (scratch)",
                expected: plan.scratch_len,
                got: scratch.len(),
            });
        }
        let size = std::mem::size_of::<T>() as u64;
        let at = |base: DevicePtr, off: usize| DevicePtr(base.0 + off as u64 * size);
        let kernel = T::kernel(variant);
        for p in &plan.passes {
            let src = p.input_offset.map_or(input.device_ptr(), |o| at(scratch.device_ptr(), o));
            let dst = p.output_offset.map_or(out.device_ptr(), |o| at(scratch.device_ptr(), o));
            // SAFETY: `src` holds `p.len` elements (the input view, or the
            // scratch region the previous pass filled); `dst` holds
            // `grid.x` elements (one for the output, else a scratch region
            // disjoint from `src`: regions follow each other); the block
            // size meets the kernel's contract (checked by the policy) and
            // the tree kernels get `threads` elements of dynamic shared
            // memory. All three buffers are live views of this context.
            unsafe { self.launch(kernel, &p.config, &[&src, &dst, &p.len])? };
        }
        Ok(plan)
    }

    /// The sum of `input` with `variant` and the tuned policy: allocates
    /// the scratch and output, waits, and reads the value back.
    pub fn reduce_sum<T: ReduceElem>(&self, input: &DeviceView<'_, T>, variant: ReduceVariant) -> Result<T> {
        let policy = ReducePolicy::default();
        let plan = self.reduce_plan(input, variant, &policy)?;
        let mut scratch = self.alloc_zeroed::<T>(plan.scratch_len)?;
        let mut out = self.alloc_zeroed::<T>(1)?;
        self.reduce_sum_into(input, &mut scratch.as_view_mut(), &mut out.as_view_mut(), variant, &policy)?;
        let v = out.to_vec()?;
        Ok(v[0])
    }
}

/// The reductions' CPU references (rayon).
pub mod cpu {
    use super::*;

    /// Elements per rayon task.
    const CHUNK: usize = 1 << 16;

    /// Wrapping sum of `i32`s (the exact sum modulo 2³²).
    pub fn sum_i32_wrapping(x: &[i32]) -> i32 {
        x.par_chunks(CHUNK).map(|c| c.iter().fold(0i32, |s, &v| s.wrapping_add(v))).reduce(|| 0, i32::wrapping_add)
    }

    /// Compensated (Neumaier) accumulation: `(sum, correction)`.
    fn neumaier(acc: (f64, f64), x: f64) -> (f64, f64) {
        let (s, c) = acc;
        let t = s + x;
        let c = if s.abs() >= x.abs() { c + ((s - t) + x) } else { c + ((x - t) + s) };
        (t, c)
    }

    /// The sum of `x` in `f64` with compensated summation (per chunk and
    /// across chunks), and `Σ|xᵢ|`. The sum's own error is at most about
    /// `2u·|S| + n·u²·Σ|x|` (`u = 2⁻⁵³`): far below any float kernel's
    /// bound, so it serves as the exact sum for `f32` and `f64` alike.
    pub fn sum_f64<T: Copy + Into<f64> + Send + Sync>(x: &[T]) -> (f64, f64) {
        let parts: Vec<((f64, f64), f64)> = x
            .par_chunks(CHUNK)
            .map(|c| {
                let acc = c.iter().fold((0.0, 0.0), |a, &v| neumaier(a, v.into()));
                (acc, c.iter().map(|&v| v.into().abs()).sum::<f64>())
            })
            .collect();
        let (mut acc, mut abs) = ((0.0, 0.0), 0.0);
        for ((s, c), a) in parts {
            acc = neumaier(neumaier(acc, s), c);
            abs += a;
        }
        (acc.0 + acc.1, abs)
    }

    /// A bound on [`sum_f64`]'s own error for `n` elements.
    pub fn sum_f64_error(n: usize, sum: f64, sum_abs: f64) -> f64 {
        let u = f64::EPSILON / 2.0;
        2.0 * u * sum.abs() + 4.0 * n as f64 * u * u * sum_abs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u64 = 0x7f00_0000_0000;

    #[test]
    fn fast_plan_is_one_wide_pass_and_one_block() {
        let p = ReducePlan::new(ReduceVariant::Fast, 1 << 28, A, 4, &ReducePolicy::TUNED, 528).unwrap();
        assert_eq!(p.passes.len(), 2);
        assert_eq!(p.passes[0].config.grid.x, 4 * 528);
        assert_eq!((p.passes[0].input_offset, p.passes[0].output_offset), (None, Some(0)));
        assert_eq!((p.passes[1].len, p.passes[1].config.grid.x), (4 * 528, 1));
        assert_eq!((p.passes[1].input_offset, p.passes[1].output_offset), (Some(0), None));
        assert_eq!(p.scratch_len, 4 * 528);
        // Small inputs: one block reads everything and writes the output.
        let p = ReducePlan::new(ReduceVariant::Fast, 1000, A + 4, 4, &ReducePolicy::TUNED, 528).unwrap();
        assert_eq!((p.passes.len(), p.scratch_len), (1, 0));
        let p = ReducePlan::new(ReduceVariant::Fast, 0, A, 8, &ReducePolicy::TUNED, 528).unwrap();
        assert_eq!((p.passes.len(), p.passes[0].config.grid.x), (1, 1));
    }

    #[test]
    fn tree_plans_reduce_by_the_block_size() {
        let pol = ReducePolicy { threads: 512, waves: 1 };
        let p = ReducePlan::new(ReduceVariant::Interleaved, (1 << 20) + 7, A, 4, &pol, 0).unwrap();
        let grids: Vec<u32> = p.passes.iter().map(|p| p.config.grid.x).collect();
        assert_eq!(grids, vec![2049, 5, 1]);
        assert_eq!(p.scratch_len, 2049 + 5);
        assert_eq!(p.passes[1].input_offset, Some(0));
        assert_eq!(p.passes[1].output_offset, Some(2049));
        assert_eq!(p.passes[2].input_offset, Some(2049));
        assert_eq!(p.passes[0].config.shared_mem_bytes, 2048);
        assert_eq!(p.chain_length(), 27);
        for n in [0usize, 1, 31, 32, 33, 512, 513] {
            let p = ReducePlan::new(ReduceVariant::Neighbored, n, A, 8, &pol, 0).unwrap();
            assert_eq!(p.passes.last().unwrap().config.grid.x, 1, "n={n}");
            assert_eq!(p.passes.len(), if n > 512 { 2 } else { 1 }, "n={n}");
        }
    }

    #[test]
    fn policies_are_checked() {
        let bad = ReducePolicy { threads: 96, waves: 1 };
        assert!(ReducePlan::new(ReduceVariant::Fast, 10, A, 4, &bad, 1).is_ok());
        let e = ReducePlan::new(ReduceVariant::Neighbored, 10, A, 4, &bad, 1).unwrap_err();
        assert!(e.to_string().contains("power of two"), "{e}");
        assert!(ReducePlan::new(ReduceVariant::Fast, 10, A, 4, &ReducePolicy { threads: 100, waves: 1 }, 1).is_err());
        assert!(ReducePlan::new(ReduceVariant::Fast, 10, A, 4, &ReducePolicy { threads: 64, waves: 0 }, 1).is_err());
    }

    #[test]
    fn bound_grows_with_the_chain() {
        let p = ReducePlan::new(ReduceVariant::Fast, 1 << 28, A, 4, &ReducePolicy::TUNED, 528).unwrap();
        let h = p.chain_length();
        // 2^28 / (2112 · 512) = 248.2 elements per thread, + 30; then the
        // one-block pass over 2112 partials: 5 + 30.
        assert_eq!(h, 249 + 30 + 5 + 30);
        let u = f32::EPSILON as f64 / 2.0;
        let b = p.error_bound(u, 1.0e6);
        assert!((b - h as f64 * u / (1.0 - h as f64 * u) * 1.0e6).abs() < 1e-9);
        assert!(p.error_bound(0.5, 1.0).is_infinite());
    }

    #[test]
    fn cpu_references() {
        assert_eq!(cpu::sum_i32_wrapping(&[i32::MAX, 1, 5]), i32::MIN + 5);
        let v: Vec<i32> = (0..300_001).map(|i: i32| i.wrapping_mul(2_654_435_761u32 as i32)).collect();
        assert_eq!(cpu::sum_i32_wrapping(&v), v.iter().fold(0i32, |s, &x| s.wrapping_add(x)));
        // 1 + 1e16 - 1e16 loses the 1 in plain f64; compensation keeps it.
        let (s, a) = cpu::sum_f64(&[1.0f64, 1e16, -1e16]);
        assert_eq!((s, a), (1.0, 2e16 + 1.0));
        let f: Vec<f32> = (0..200_003).map(|i| ((i % 17) as f32 - 8.0) * 0.25).collect();
        let exact: f64 = f.iter().map(|&x| x as f64).sum();
        assert_eq!(cpu::sum_f64(&f).0, exact);
    }
}
