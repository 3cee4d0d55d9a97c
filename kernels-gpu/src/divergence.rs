//! Warp divergence (the execution-model lesson's `simpleDivergence`).
//!
//! Each kernel writes `c[tid] = a + b` where exactly one of `a = 100`,
//! `b = 200` is set, chosen by a condition on the thread id:
//!
//! | kernel | condition for `a` | threads of one warp taking each path |
//! | --- | --- | --- |
//! | `math_kernel1` | `tid % 2 == 0` | 16 and 16: divergent |
//! | `math_kernel2` | `(tid / warpSize) % 2 == 0` | 32 or 0: warp-uniform |
//! | `math_kernel3` | two separate `if`s on `tid % 2 == 0` and its negation | 16 and 16 |
//! | `math_kernel4` | `((tid >> 5) & 1) == 0` | 32 or 0: warp-uniform |
//! | `warming_up` | as `math_kernel2` | (run first, untimed) |
//!
//! `math_kernel4` in the lesson is written `if (itid & 0x01 == 0)`. In C,
//! `==` binds tighter than `&`, so that reads `itid & (0x01 == 0)`, i.e.
//! `itid & 0`, which is always 0: every thread takes the `else` path and
//! writes 200. The intent — the warp-granular test of `math_kernel2`
//! written with a shift — is what is compiled here. (Rust's `&` binds
//! tighter than `==`, so `itid & 1 == 0` would already mean the intended
//! thing; the parentheses are spelled out anyway.)
//!
//! Whether the compiler keeps a branch at all is its choice: for bodies
//! this small it usually emits predicated code or a select, so no warp
//! diverges. The host's SASS check reports which one each kernel got.
//!
//! Unlike the lesson's kernels these take the element count and skip
//! threads past it, so any grid may cover any size.

// The conditions keep the lesson's spelling (`tid % 2 == 0`).
#[cfg(target_arch = "nvptx64")]
#[allow(clippy::manual_is_multiple_of)]
mod kernels {
    use crate::dev::index::global_id_x;
    use crate::dev::warp::WARP_SIZE;

    /// Declares one kernel: `$body(tid) -> (a, b)`.
    macro_rules! math_kernel {
        ($(#[$doc:meta])* $name:ident, |$tid:ident| $body:block) => {
            $(#[$doc])*
            ///
            /// # Safety
            /// `c` must be valid for `n` `f32` writes.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(c: *mut f32, n: usize) {
                let $tid = global_id_x();
                if $tid >= n {
                    return;
                }
                let (a, b): (f32, f32) = $body;
                // SAFETY: tid < n.
                unsafe { *c.add($tid) = a + b };
            }
        };
    }

    math_kernel!(
        /// `mathKernel1`: even threads set `a`, odd threads set `b`.
        math_kernel1,
        |tid| {
            let (mut a, mut b) = (0.0, 0.0);
            if tid % 2 == 0 {
                a = 100.0;
            } else {
                b = 200.0;
            }
            (a, b)
        }
    );

    math_kernel!(
        /// `mathKernel2`: even warps set `a`, odd warps set `b`.
        math_kernel2,
        |tid| {
            let (mut a, mut b) = (0.0, 0.0);
            if (tid / WARP_SIZE as usize) % 2 == 0 {
                a = 100.0;
            } else {
                b = 200.0;
            }
            (a, b)
        }
    );

    math_kernel!(
        /// `mathKernel3`: the condition of `math_kernel1` as a predicate
        /// and two separate `if`s.
        math_kernel3,
        |tid| {
            let (mut ia, mut ib) = (0.0, 0.0);
            let ipred = tid % 2 == 0;
            if ipred {
                ia = 100.0;
            }
            if !ipred {
                ib = 200.0;
            }
            (ia, ib)
        }
    );

    math_kernel!(
        /// `mathKernel4` as intended: the warp index by a shift, its low
        /// bit decides (see the module docs for the lesson's precedence
        /// bug).
        math_kernel4,
        |tid| {
            let (mut ia, mut ib) = (0.0, 0.0);
            let itid = tid >> 5;
            if (itid & 0x01) == 0 {
                ia = 100.0;
            } else {
                ib = 200.0;
            }
            (ia, ib)
        }
    );

    math_kernel!(
        /// `warmingup`: `math_kernel2`'s body, launched first so the timed
        /// kernels do not pay for module loading and clock ramp-up.
        warming_up,
        |tid| {
            let (mut ia, mut ib) = (0.0, 0.0);
            if (tid / WARP_SIZE as usize) % 2 == 0 {
                ia = 100.0;
            } else {
                ib = 200.0;
            }
            (ia, ib)
        }
    );
}
