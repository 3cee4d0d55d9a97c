//! Vectorized copies (lesson 000).
//!
//! A device-to-device copy is the purest memory-bound kernel: every byte is
//! read once and written once, so its speed is the memory system's. The
//! lesson's point is that *how many bytes one instruction moves* matters:
//! `copy_scalar` issues one 32-bit load and store per word, `copy_vec2`
//! one 64-bit pair per two words, `copy_vec4` one 128-bit pair per four. Fewer
//! instructions in flight for the same bytes lets the loads keep more memory
//! transactions outstanding per thread.
//!
//! Vector accesses must be aligned to their size. Every copy is therefore
//! planned first ([`CopyPlan`]), from the two addresses and the byte count:
//!
//! 1. bytes before the first 4-byte boundary, and after the last whole
//!    word, go through `copy_bytes` (only for byte-sized or misaligned
//!    data);
//! 2. the words go through the chosen word kernel, which itself peels a
//!    scalar head up to the first vector-aligned address and a scalar tail
//!    ([`coalesce_kernels::dev::vector::split`], the same function the
//!    kernel runs);
//! 3. if source and destination differ modulo the vector size, no vector
//!    access is legal on both at once: the plan falls back to the widest
//!    width that is ([`CopyPlan::downgraded`] says so).
//!
//! The grid follows the lesson's `min(ceil(n / width / threads), MAX_BLOCKS)`
//! with each thread's `items` accesses per step counted as one unit:
//! `min(ceil(accesses / (threads · items)), waves · MAX_BLOCKS)`, where
//! `MAX_BLOCKS` is SMs × resident blocks per SM for that kernel (the
//! driver's occupancy answer) and `items`, `threads`, `waves` come from the
//! [`CopyPolicy`]. [`CopyPolicy::LESSON`] is the lesson's launch exactly (one
//! item, 256 threads, one wave). The tuned default (eight items, 512
//! threads, eight waves) keeps the running blocks on one contiguous window
//! of memory; on an H100 it copies at 96–98% of the driver's own
//! device-to-device copy for 256 MiB–2 GiB, against 92–94% for the lesson's
//! launch (`docs/copy-tuning.md`).

use coalesce_kernels::copy::{ITEMS, LESSON_ITEMS};
use coalesce_kernels::dev::vector::{Split, split};
use cust::memory::DeviceCopy;

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{DevicePtr, LaunchConfig, blocks_for};
use crate::memory::{DeviceView, DeviceViewMut};

/// The copy kernel a caller asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CopyVariant {
    /// 32-bit words (`copy_scalar`, SASS `LDG.E`/`STG.E`).
    Scalar,
    /// 64-bit pairs (`copy_vec2`, `LDG.E.64`/`STG.E.64`), or narrower where
    /// alignment forbids.
    Vec2,
    /// 128-bit quads (`copy_vec4`, `LDG.E.128`/`STG.E.128`), or narrower
    /// where alignment forbids.
    Vec4,
    /// The widest width the alignment allows.
    Auto,
}

impl CopyVariant {
    /// The three lesson variants, narrowest first.
    pub const LESSON: [CopyVariant; 3] = [CopyVariant::Scalar, CopyVariant::Vec2, CopyVariant::Vec4];

    fn max_words(self) -> usize {
        match self {
            CopyVariant::Scalar => 1,
            CopyVariant::Vec2 => 2,
            CopyVariant::Vec4 | CopyVariant::Auto => 4,
        }
    }

    /// Short name (`scalar`, `vec2`, `vec4`, `auto`).
    pub fn name(self) -> &'static str {
        match self {
            CopyVariant::Scalar => "scalar",
            CopyVariant::Vec2 => "vec2",
            CopyVariant::Vec4 => "vec4",
            CopyVariant::Auto => "auto",
        }
    }
}

impl std::fmt::Display for CopyVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for CopyVariant {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "scalar" => Ok(CopyVariant::Scalar),
            "vec2" => Ok(CopyVariant::Vec2),
            "vec4" => Ok(CopyVariant::Vec4),
            "auto" => Ok(CopyVariant::Auto),
            _ => Err(format!("unknown copy variant `{s}` (scalar, vec2, vec4, auto)")),
        }
    }
}

/// The access width a plan's body uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// Single bytes: source and destination are misaligned relative to each
    /// other even at 4 bytes.
    Bytes,
    /// 32-bit words.
    Word32,
    /// 64-bit vectors.
    Vec64,
    /// 128-bit vectors.
    Vec128,
}

impl Width {
    /// The kernel that moves this width with `items` accesses per thread
    /// per step ([`ITEMS`] for the tuned kernels, 1 for the lesson's
    /// `_x1` kernels); `None` for other item counts. `copy_bytes` serves
    /// [`Width::Bytes`] whatever the count.
    pub fn kernel(self, items: u32) -> Option<&'static str> {
        let tuned = items as usize == ITEMS;
        let lesson = items as usize == LESSON_ITEMS;
        Some(match (self, tuned, lesson) {
            (Width::Bytes, _, _) => "copy_bytes",
            (Width::Word32, true, _) => "copy_scalar",
            (Width::Vec64, true, _) => "copy_vec2",
            (Width::Vec128, true, _) => "copy_vec4",
            (Width::Word32, _, true) => "copy_scalar_x1",
            (Width::Vec64, _, true) => "copy_vec2_x1",
            (Width::Vec128, _, true) => "copy_vec4_x1",
            _ => return None,
        })
    }

    /// Bytes per access.
    pub fn bytes(self) -> usize {
        match self {
            Width::Bytes => 1,
            Width::Word32 => 4,
            Width::Vec64 => 8,
            Width::Vec128 => 16,
        }
    }

    fn words(self) -> usize {
        self.bytes() / 4
    }
}

/// Launch choices of the copy kernels: data, separate from the kernels, so
/// benchmarks can sweep them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CopyPolicy {
    /// Threads per block.
    pub threads: u32,
    /// Accesses each thread copies per step: [`ITEMS`] (the tuned kernels)
    /// or 1 (the lesson's `_x1` kernels). Other values are refused.
    pub items: u32,
    /// Grid cap in waves: at most `waves × SMs × resident blocks per SM`
    /// blocks (fewer when there are fewer tiles).
    pub waves: u32,
}

impl CopyPolicy {
    /// The lesson's kernels and launch: one access per thread per
    /// grid-stride step, 256 threads, grid capped at one wave (`MAX_BLOCKS`
    /// = SMs × resident blocks per SM).
    pub const LESSON: CopyPolicy = CopyPolicy { threads: 256, items: LESSON_ITEMS as u32, waves: 1 };

    /// The tuned default. Measured on an H100 (copy_vec4, 2 GiB, % of
    /// cuMemcpyDtoD in the same run): one item, 256 threads, 1 wave 93.7%;
    /// 8 items, 256 threads, 8 waves 95.1%; 8 items, 512 threads, 8 waves
    /// 96.0% (97.8% at 256 MiB).
    pub const TUNED: CopyPolicy = CopyPolicy { threads: 512, items: ITEMS as u32, waves: 8 };

    /// Most blocks a launch may use: `waves ×` the kernel's resident blocks
    /// on the whole device (SMs × blocks per SM).
    pub fn grid_cap(&self, resident_blocks: u32) -> u32 {
        resident_blocks.max(1).saturating_mul(self.waves.max(1))
    }

    /// The lesson's block count rule for `units` work units of one thread
    /// each: `min(ceil(units / threads), grid_cap)`, at least one block.
    pub fn grid(&self, units: usize, resident_blocks: u32) -> LaunchConfig {
        LaunchConfig::new(blocks_for(units, self.threads, self.grid_cap(resident_blocks)), self.threads)
    }

    /// The kernel this policy runs for `width`, or an error for an item
    /// count no kernel is built for.
    pub fn kernel(&self, width: Width) -> Result<&'static str> {
        width.kernel(self.items).ok_or_else(|| Error::InvalidArgument {
            op: "copy",
            message: format!(
                "no copy kernel copies {} items per thread (built: {LESSON_ITEMS} and {ITEMS})",
                self.items
            ),
        })
    }
}

impl Default for CopyPolicy {
    fn default() -> Self {
        CopyPolicy::TUNED
    }
}

/// How one copy is carried out: computed from the addresses and size alone
/// (no GPU needed), then executed by [`Gpu::copy`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyPlan {
    /// What the caller asked for.
    pub requested: CopyVariant,
    /// The body's access width.
    pub width: Width,
    /// Total bytes copied.
    pub bytes: usize,
    /// Bytes before the first 4-byte-aligned source address (`copy_bytes`).
    pub head_bytes: usize,
    /// Whole 32-bit words given to the word kernel.
    pub words: usize,
    /// How the word kernel splits `words` (scalar head, vector body, scalar
    /// tail), `None` for [`Width::Bytes`].
    pub split: Option<Split>,
    /// Bytes after the last whole word (`copy_bytes`).
    pub tail_bytes: usize,
}

impl CopyPlan {
    /// Plans a copy of `bytes` bytes from device address `src` to `dst`.
    pub fn new(src: u64, dst: u64, bytes: usize, requested: CopyVariant) -> CopyPlan {
        let (src, dst) = (src as usize, dst as usize);
        let empty =
            CopyPlan { requested, width: Width::Bytes, bytes, head_bytes: 0, words: 0, split: None, tail_bytes: 0 };
        if bytes == 0 {
            return empty;
        }
        if src % 4 != dst % 4 {
            return CopyPlan { tail_bytes: bytes, ..empty };
        }
        let head_bytes = ((4 - src % 4) % 4).min(bytes);
        let words = (bytes - head_bytes) / 4;
        let tail_bytes = (bytes - head_bytes) % 4;
        let (ws, wd) = (src + head_bytes, dst + head_bytes);
        let width = [Width::Vec128, Width::Vec64, Width::Word32]
            .into_iter()
            .filter(|w| w.words() <= requested.max_words())
            .find(|w| ws % w.bytes() == wd % w.bytes())
            .unwrap_or(Width::Word32);
        CopyPlan { requested, width, bytes, head_bytes, words, split: split(ws, wd, words, width.words()), tail_bytes }
    }

    /// True when alignment forced a narrower width than requested.
    pub fn downgraded(&self) -> bool {
        self.requested != CopyVariant::Auto && self.width.words() < self.requested.max_words()
    }

    /// Accesses of the main kernel's body: vectors (or words for the
    /// scalar kernel, bytes for the byte kernel). Heads and tails (< 4 words
    /// each) need none of their own: the grid's first threads copy them.
    pub fn accesses(&self) -> usize {
        match (self.width, self.split) {
            (Width::Bytes, _) => self.tail_bytes,
            (_, Some(s)) => s.body,
            (_, None) => 0,
        }
    }

    /// Launch configuration of the main kernel under `policy`, given the
    /// kernel's resident blocks on the whole device (SMs × blocks per SM):
    /// one block per tile of `threads × items` accesses, at least one, at
    /// most `waves × resident_blocks`.
    pub fn launch_config(&self, policy: &CopyPolicy, resident_blocks: u32) -> LaunchConfig {
        let per_thread = if self.width == Width::Bytes { 1 } else { policy.items.max(1) };
        policy.grid(self.accesses().div_ceil(per_thread as usize), resident_blocks)
    }
}

impl Gpu {
    /// Copies `src` into `dst` (same length) with the requested variant and
    /// the tuned [`CopyPolicy`], and returns the plan it followed. Queued on
    /// this handle's stream like a kernel launch: later transfers and
    /// launches on the handle see the result. Any `T: DeviceCopy` is copied
    /// by bytes; views may start at any element.
    pub fn copy<T: DeviceCopy>(
        &self,
        src: &DeviceView<'_, T>,
        dst: &mut DeviceViewMut<'_, T>,
        variant: CopyVariant,
    ) -> Result<CopyPlan> {
        self.copy_with(src, dst, variant, &CopyPolicy::default())
    }

    /// The main kernel's launch configuration for `plan` under `policy` on
    /// this device.
    pub fn copy_launch_config(&self, plan: &CopyPlan, policy: &CopyPolicy) -> Result<LaunchConfig> {
        let kernel = policy.kernel(plan.width)?;
        Ok(plan.launch_config(policy, self.max_resident_blocks(kernel, policy.threads)?))
    }

    /// [`Gpu::copy`] with an explicit launch policy.
    pub fn copy_with<T: DeviceCopy>(
        &self,
        src: &DeviceView<'_, T>,
        dst: &mut DeviceViewMut<'_, T>,
        variant: CopyVariant,
        policy: &CopyPolicy,
    ) -> Result<CopyPlan> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { op: "copy", expected: dst.len(), got: src.len() });
        }
        src.check_gpu(self, "copy")?;
        dst.check_gpu(self, "copy")?;
        let (s, d) = (src.device_ptr().0, dst.device_ptr().0);
        let plan = CopyPlan::new(s, d, src.byte_len(), variant);
        if plan.bytes == 0 {
            return Ok(plan);
        }
        // Each range below lies inside `src` / `dst`: live views of device
        // allocations of this context that cannot overlap (one is borrowed
        // mutably); the word kernels get 4-aligned addresses, as
        // `CopyPlan::new` guarantees.
        let bytes_kernel = |from: u64, n: usize| -> Result<()> {
            if n == 0 {
                return Ok(());
            }
            let cfg = policy.grid(n, self.max_resident_blocks("copy_bytes", policy.threads)?);
            // SAFETY: see above; `copy_bytes(src, dst, n)` has no alignment need.
            unsafe { self.launch("copy_bytes", &cfg, &[&DevicePtr(s + from), &DevicePtr(d + from), &n]) }
        };
        if plan.width == Width::Bytes {
            bytes_kernel(0, plan.bytes)?;
            return Ok(plan);
        }
        bytes_kernel(0, plan.head_bytes)?;
        if plan.words > 0 {
            let kernel = policy.kernel(plan.width)?;
            let cfg = self.copy_launch_config(&plan, policy)?;
            let off = plan.head_bytes as u64;
            // SAFETY: see above; `copy_*(src, dst, words)` on 4-aligned words.
            unsafe { self.launch(kernel, &cfg, &[&DevicePtr(s + off), &DevicePtr(d + off), &plan.words])? };
        }
        bytes_kernel((plan.head_bytes + 4 * plan.words) as u64, plan.tail_bytes)?;
        Ok(plan)
    }

    /// The driver's own device-to-device copy (`cuMemcpyDtoDAsync`) on this
    /// handle's stream: the reference the copy kernels are measured against.
    pub fn copy_with_driver<T: DeviceCopy>(
        &self,
        src: &DeviceView<'_, T>,
        dst: &mut DeviceViewMut<'_, T>,
    ) -> Result<()> {
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { op: "copy_with_driver", expected: dst.len(), got: src.len() });
        }
        src.check_gpu(self, "copy_with_driver")?;
        dst.check_gpu(self, "copy_with_driver")?;
        if src.byte_len() == 0 {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: both ranges are live, non-overlapping views of this context.
        unsafe {
            crate::driver::memcpy_dtod(dst.device_ptr().0, src.device_ptr().0, src.byte_len(), self.raw_stream())?
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u64 = 0x7f00_0000_0000; // 256-byte aligned, like cuMemAlloc

    #[test]
    fn aligned_vec4_has_no_fringes() {
        let p = CopyPlan::new(A, A + 4096, 4 * 1000, CopyVariant::Vec4);
        assert_eq!(p.width, Width::Vec128);
        assert_eq!((p.head_bytes, p.words, p.tail_bytes), (0, 1000, 0));
        assert_eq!(p.split, Some(Split { head: 0, body: 250, tail: 0 }));
        assert!(!p.downgraded());
        // 250 vectors: one tile of 512 × 8.
        assert_eq!(p.launch_config(&CopyPolicy::TUNED, 264).grid.x, 1);
        assert_eq!(p.launch_config(&CopyPolicy::TUNED, 264).block.x, 512);
    }

    #[test]
    fn grid_is_tiles_capped_at_waves_of_resident_blocks() {
        let n_vec = 1usize << 27; // 2 GiB of 128-bit vectors
        let p = CopyPlan::new(A, A + (1 << 32), n_vec * 16, CopyVariant::Vec4);
        assert_eq!(p.accesses(), n_vec);
        let tuned = p.launch_config(&CopyPolicy::TUNED, 264);
        assert_eq!((tuned.grid.x, tuned.block.x), (264 * 8, 512));
        let lesson = p.launch_config(&CopyPolicy::LESSON, 1056);
        assert_eq!((lesson.grid.x, lesson.block.x), (1056, 256));
        // Fewer tiles than the cap: one block per tile.
        let small = CopyPlan::new(A, A + 4096, 4 * 40_000, CopyVariant::Vec4);
        assert_eq!(small.launch_config(&CopyPolicy::LESSON, 1056).grid.x, 40); // ceil(10000 / 256)
        assert_eq!(small.launch_config(&CopyPolicy::TUNED, 264).grid.x, 3); // ceil(10000 / 4096)
    }

    #[test]
    fn document_d_in_plus_one_is_peeled_not_misread() {
        // Both views start one word in: the kernel peels 3 scalar words.
        let p = CopyPlan::new(A + 4, A + 4096 + 4, 4 * 11, CopyVariant::Vec4);
        assert_eq!(p.width, Width::Vec128);
        assert_eq!(p.split, Some(Split { head: 3, body: 2, tail: 0 }));
    }

    #[test]
    fn relative_misalignment_falls_back() {
        let p = CopyPlan::new(A + 4, A + 8, 4 * 100, CopyVariant::Vec4);
        assert_eq!(p.width, Width::Word32);
        assert!(p.downgraded());
        let p = CopyPlan::new(A + 8, A + 4096, 4 * 100, CopyVariant::Auto);
        assert_eq!(p.width, Width::Vec64);
        assert!(!p.downgraded());
        let p = CopyPlan::new(A + 1, A + 2, 100, CopyVariant::Vec4);
        assert_eq!((p.width, p.tail_bytes), (Width::Bytes, 100));
    }

    #[test]
    fn byte_fringes() {
        let p = CopyPlan::new(A + 3, A + 4096 + 3, 10, CopyVariant::Scalar);
        assert_eq!((p.head_bytes, p.words, p.tail_bytes), (1, 2, 1));
        let p = CopyPlan::new(A + 1, A + 4096 + 1, 2, CopyVariant::Vec4);
        assert_eq!((p.head_bytes, p.words, p.tail_bytes), (2, 0, 0));
    }

    #[test]
    fn explicit_variant_never_widens() {
        let p = CopyPlan::new(A, A + 4096, 4096, CopyVariant::Scalar);
        assert_eq!(p.width, Width::Word32);
        let p = CopyPlan::new(A, A + 4096, 4096, CopyVariant::Vec2);
        assert_eq!(p.width, Width::Vec64);
    }

    #[test]
    fn plan_covers_every_byte_exactly_once() {
        for so in 0..16u64 {
            for d_o in 0..16u64 {
                for bytes in [0usize, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 63, 64, 65, 1000] {
                    for v in [CopyVariant::Scalar, CopyVariant::Vec2, CopyVariant::Vec4, CopyVariant::Auto] {
                        let p = CopyPlan::new(A + so, A + 4096 + d_o, bytes, v);
                        let body = p.split.map_or(0, |s| 4 * (s.head + s.body * p.width.words() + s.tail));
                        assert_eq!(p.head_bytes + body + p.tail_bytes, bytes, "{so} {d_o} {bytes} {v}");
                        if let Some(s) = p.split {
                            assert_eq!(s.head + s.body * p.width.words() + s.tail, p.words);
                            let vec_src = A + so + p.head_bytes as u64 + 4 * s.head as u64;
                            let vec_dst = A + 4096 + d_o + p.head_bytes as u64 + 4 * s.head as u64;
                            if s.body > 0 {
                                assert_eq!(vec_src % p.width.bytes() as u64, 0);
                                assert_eq!(vec_dst % p.width.bytes() as u64, 0);
                            }
                        }
                    }
                }
            }
        }
    }
}
