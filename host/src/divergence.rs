//! Warp divergence (the execution-model lesson's `simpleDivergence`): the
//! `math_kernel*` kernels, their CPU reference, and a SASS classifier that
//! says whether the compiler kept a divergent branch or predicated it away.
//!
//! See [`coalesce_kernels::divergence`] for the kernels and the lesson's
//! operator-precedence bug in `mathKernel4`.

use crate::error::Result;
use crate::gpu::Gpu;
use crate::inspect::Instr;
use crate::launch::{LaunchConfig, blocks_for};
use crate::memory::DeviceViewMut;

/// One of the lesson's kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathKernel {
    /// `warmingup`: run first, untimed.
    WarmingUp,
    /// `mathKernel1`: `tid % 2` (divergent in every warp).
    K1,
    /// `mathKernel2`: `(tid / warpSize) % 2` (warp-uniform).
    K2,
    /// `mathKernel3`: `tid % 2` as two predicated `if`s.
    K3,
    /// `mathKernel4`: `(tid >> 5) & 1` (warp-uniform), as intended.
    K4,
}

impl MathKernel {
    /// In the lesson's order.
    pub const ALL: [MathKernel; 5] =
        [MathKernel::WarmingUp, MathKernel::K1, MathKernel::K2, MathKernel::K3, MathKernel::K4];

    /// The kernel's name in the module.
    pub fn kernel(self) -> &'static str {
        match self {
            MathKernel::WarmingUp => "warming_up",
            MathKernel::K1 => "math_kernel1",
            MathKernel::K2 => "math_kernel2",
            MathKernel::K3 => "math_kernel3",
            MathKernel::K4 => "math_kernel4",
        }
    }

    /// The lesson's name (`mathKernel1`, `warmup`).
    pub fn lesson_name(self) -> &'static str {
        match self {
            MathKernel::WarmingUp => "warmup",
            MathKernel::K1 => "mathKernel1",
            MathKernel::K2 => "mathKernel2",
            MathKernel::K3 => "mathKernel3",
            MathKernel::K4 => "mathKernel4",
        }
    }

    /// What thread `tid` writes (the CPU reference): 100 on one path, 200
    /// on the other.
    pub fn expected(self, tid: usize) -> f32 {
        let first = match self {
            MathKernel::K1 | MathKernel::K3 => tid.is_multiple_of(2),
            MathKernel::K2 | MathKernel::WarmingUp => (tid / 32).is_multiple_of(2),
            MathKernel::K4 => ((tid >> 5) & 1) == 0,
        };
        if first { 100.0 } else { 200.0 }
    }
}

/// What the lesson's own `mathKernel4` computes: `if (itid & 0x01 == 0)`
/// is `itid & (0x01 == 0)` in C, i.e. `itid & 0`, so every thread takes the
/// `else` path and writes 200.
pub fn lesson_kernel4_as_written(tid: usize) -> f32 {
    let itid = tid >> 5;
    let c_condition = itid & usize::from(0x01 == 0);
    if c_condition != 0 { 100.0 } else { 200.0 }
}

impl Gpu {
    /// Launches `kernel` over `out` (every element written) with `block`
    /// threads per block and `ceil(n / block)` blocks, as the lesson does.
    /// Queued on this handle's stream; returns the configuration.
    pub fn math_kernel(
        &self,
        kernel: MathKernel,
        out: &mut DeviceViewMut<'_, f32>,
        block: u32,
    ) -> Result<LaunchConfig> {
        out.check_gpu(self, "math_kernel")?;
        let n = out.len();
        let cfg = LaunchConfig::new(blocks_for(n, block, u32::MAX), block);
        // SAFETY: `out` is a live view of `n` f32 of this context; the
        // kernel writes only indices below `n`.
        unsafe { self.launch(kernel.kernel(), &cfg, &[&out.device_ptr(), &n])? };
        Ok(cfg)
    }
}

/// How a kernel's SASS handles its condition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BranchForm {
    /// Branches before the kernel's last `EXIT` (the `BRA` to itself after
    /// it is padding, not counted).
    pub branches: usize,
    /// Of those, predicated (conditional) branches: where a warp can split.
    pub conditional_branches: usize,
    /// `BSSY`/`BSYNC`: the convergence barriers Volta and later emit around
    /// a region whose threads may diverge.
    pub convergence_barriers: usize,
    /// Selects (`SEL`, `FSEL`, …): both values computed, one kept per thread.
    pub selects: usize,
    /// Predicated instructions other than branches and exits.
    pub predicated: usize,
}

impl BranchForm {
    /// True when the warp can split: a conditional branch or a convergence
    /// barrier.
    pub fn may_diverge(&self) -> bool {
        self.conditional_branches > 0 || self.convergence_barriers > 0
    }

    /// One word: `branch`, `select`, `predicated` or `straight`.
    pub fn kind(&self) -> &'static str {
        if self.may_diverge() {
            "branch"
        } else if self.selects > 0 {
            "select"
        } else if self.predicated > 0 {
            "predicated"
        } else {
            "straight"
        }
    }
}

impl std::fmt::Display for BranchForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} branches, {} conditional, {} BSSY/BSYNC, {} selects, {} predicated)",
            self.kind(),
            self.branches,
            self.conditional_branches,
            self.convergence_barriers,
            self.selects,
            self.predicated
        )
    }
}

/// Classifies a kernel's SASS (from [`crate::inspect`]).
pub fn classify(sass: &[Instr]) -> BranchForm {
    let end = sass.iter().rposition(|i| i.base() == "EXIT").map_or(sass.len(), |p| p + 1);
    let mut f = BranchForm::default();
    for i in &sass[..end] {
        match i.base() {
            "BRA" | "BRX" | "JMP" | "JMX" => {
                f.branches += 1;
                if i.predicated {
                    f.conditional_branches += 1;
                }
            }
            "BSSY" | "BSYNC" => f.convergence_barriers += 1,
            "SEL" | "FSEL" | "ISEL" | "USEL" => f.selects += 1,
            "EXIT" => {}
            _ if i.predicated => f.predicated += 1,
            _ => {}
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect::parse_sass;

    #[test]
    fn references() {
        let k1: Vec<f32> = (0..4).map(|t| MathKernel::K1.expected(t)).collect();
        assert_eq!(k1, [100.0, 200.0, 100.0, 200.0]);
        for t in [0usize, 31, 32, 63, 64, 1000] {
            assert_eq!(MathKernel::K2.expected(t), MathKernel::K4.expected(t), "{t}");
            assert_eq!(MathKernel::K1.expected(t), MathKernel::K3.expected(t), "{t}");
        }
        assert_eq!(MathKernel::K4.expected(31), 100.0);
        assert_eq!(MathKernel::K4.expected(32), 200.0);
        // The lesson's version writes 200 everywhere.
        assert!((0..1000).all(|t| lesson_kernel4_as_written(t) == 200.0));
    }

    const SELECT: &str = "
		Function : sel
        /*0090*/               @P0 EXIT ;
        /*0100*/                   FSEL R3, R0, 100, P0 ;
        /*0110*/                   STG.E [R4.64], R3 ;
        /*0120*/                   EXIT ;
        /*0130*/                   BRA 0x130;
		Function : div
        /*0090*/               @P0 EXIT ;
        /*00a0*/                   BSSY B0, 0x200 ;
        /*00b0*/               @P1 BRA 0x100 ;
        /*00c0*/                   MOV R3, 0x42c80000 ;
        /*00d0*/                   BRA 0x110 ;
        /*0100*/                   MOV R3, 0x43480000 ;
        /*0110*/                   BSYNC B0 ;
        /*0120*/                   EXIT ;
        /*0130*/                   BRA 0x130;
		Function : pred
        /*0090*/               @P0 MOV R3, 0x1 ;
        /*0120*/                   EXIT ;
";

    #[test]
    fn classifier_tells_branches_from_selects() {
        let s = parse_sass(SELECT);
        let sel = classify(&s["sel"]);
        assert_eq!((sel.kind(), sel.branches, sel.selects), ("select", 0, 1));
        let div = classify(&s["div"]);
        assert_eq!((div.kind(), div.branches, div.conditional_branches, div.convergence_barriers), ("branch", 2, 1, 2));
        assert_eq!(classify(&s["pred"]).kind(), "predicated");
        assert_eq!(classify(&[]).kind(), "straight");
    }
}
