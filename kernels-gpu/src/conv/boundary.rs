//! Boundary modes: what a convolution reads outside its input.
//!
//! The modes and their names are those of `scipy.ndimage` (`correlate1d`,
//! `convolve1d`, `correlate`, `convolve`); for an input `a b c d`:
//!
//! | mode | left ghosts … input … right ghosts |
//! | --- | --- |
//! | [`Boundary::Zero`] (scipy `constant`, `cval = 0`) | `0 0 0 \| a b c d \| 0 0 0` |
//! | [`Boundary::Nearest`] | `a a a \| a b c d \| d d d` |
//! | [`Boundary::Reflect`] (half-sample symmetric) | `c b a \| a b c d \| d c b` |
//! | [`Boundary::Mirror`] (whole-sample symmetric) | `d c b \| a b c d \| c b a` |
//! | [`Boundary::Wrap`] (periodic) | `b c d \| a b c d \| a b c` |
//!
//! The extension continues as far as a mask reaches, also past a whole
//! period when the mask is wider than the input (scipy does the same).
//! Multi-dimensional convolutions apply the mode to each axis on its own.
//! The same function, [`map_index`], runs in the kernels and on the host.

/// How ghost cells (positions outside the input) get their values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum Boundary {
    /// Zero outside the input (the lesson's ghost cells; scipy `constant`
    /// with `cval = 0`).
    Zero = 0,
    /// The nearest valid value (the lesson's alternative; scipy `nearest`).
    Nearest = 1,
    /// Reflection about the edge, edge sample repeated (scipy `reflect`).
    Reflect = 2,
    /// Reflection about the edge sample, not repeated (scipy `mirror`).
    Mirror = 3,
    /// Periodic continuation (scipy `wrap`).
    Wrap = 4,
}

impl Boundary {
    /// Every mode, in declaration order.
    pub const ALL: [Boundary; 5] =
        [Boundary::Zero, Boundary::Nearest, Boundary::Reflect, Boundary::Mirror, Boundary::Wrap];

    /// The mode with raw value `v` (as kernels receive it).
    pub const fn from_raw(v: u32) -> Option<Boundary> {
        match v {
            0 => Some(Boundary::Zero),
            1 => Some(Boundary::Nearest),
            2 => Some(Boundary::Reflect),
            3 => Some(Boundary::Mirror),
            4 => Some(Boundary::Wrap),
            _ => None,
        }
    }

    /// The value a kernel receives.
    pub const fn raw(self) -> u32 {
        self as u32
    }

    /// The name `scipy.ndimage` uses for this mode.
    pub const fn scipy_name(self) -> &'static str {
        match self {
            Boundary::Zero => "constant",
            Boundary::Nearest => "nearest",
            Boundary::Reflect => "reflect",
            Boundary::Mirror => "mirror",
            Boundary::Wrap => "wrap",
        }
    }

    /// The name used here (`zero`, `nearest`, `reflect`, `mirror`, `wrap`).
    pub const fn name(self) -> &'static str {
        match self {
            Boundary::Zero => "zero",
            Boundary::Nearest => "nearest",
            Boundary::Reflect => "reflect",
            Boundary::Mirror => "mirror",
            Boundary::Wrap => "wrap",
        }
    }
}

macro_rules! map_index_fn {
    ($(#[$doc:meta])* $name:ident, $i:ty, $u:ty, checked = $checked:literal) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(x: $i, n: $i, mode: u32) -> Option<$u> {
            // x mod d in [0, d); with `checked`, `None` where `rem_euclid`
            // panics (d = 0, or the one overflowing quotient).
            let rem = |d: $i| if $checked { x.checked_rem_euclid(d) } else { Some(x.rem_euclid(d)) };
            if 0 <= x && x < n {
                return Some(x as $u);
            }
            if $checked && n <= 0 {
                return None;
            }
            let m = match mode {
                1 => {
                    if x < 0 {
                        0
                    } else {
                        n - 1
                    }
                }
                2 => {
                    let p = rem(2 * n)?;
                    if p < n { p } else { 2 * n - 1 - p }
                }
                3 => {
                    if n == 1 {
                        0
                    } else {
                        let p = rem(2 * n - 2)?;
                        if p < n { p } else { 2 * n - 2 - p }
                    }
                }
                4 => rem(n)?,
                _ => return None,
            };
            Some(m as $u)
        }
    };
}

map_index_fn!(
    /// Maps position `x` (any integer) of an axis of length `n > 0` to the
    /// input index whose value it takes under mode `mode` (a [`Boundary`]
    /// raw value), or `None` when it takes zero. In-range positions map to
    /// themselves. Unknown raw modes behave as [`Boundary::Zero`].
    map_index, isize, usize, checked = false
);

/// Axes shorter than this many elements are what the 2D kernels handle in
/// 32-bit arithmetic: both the boundary map ([`map_index32`]) and their
/// tile geometry (row and column offsets, a tile's reach past the last
/// element, byte offsets within a row of the box filters). Twice the axis,
/// a mask's reach past either end and a tile's offset past the last
/// element all fit an `i32`. The host checks it ([`axis_maps32`]) before
/// it plans a kernel that relies on it.
pub const MAP32_AXIS_END: usize = 1 << 30;

/// True when an axis of `n` elements is one the kernels map in 32-bit
/// arithmetic: `n <` [`MAP32_AXIS_END`].
pub const fn axis_maps32(n: usize) -> bool {
    n < MAP32_AXIS_END
}

map_index_fn!(
    /// [`map_index`] in 32-bit arithmetic, for axes shorter than 2³¹ (the
    /// 2D kernels' image axes): `x` and `2n` must fit in an `i32`. On the
    /// GPU 64-bit division is a long subroutine; 32-bit is a few
    /// instructions and registers. It never panics: an empty axis maps
    /// every position to `None`.
    ///
    /// A panic in a kernel is a call and an exit on a path some lanes may
    /// take; after one `ptxas` cannot prove the warp converged at any later
    /// warp-wide instruction, checks before each (`BRA.DIV`), and keeps
    /// warp-uniform values (a kernel's taps) in ordinary registers rather
    /// than uniform ones: on sm_90 the 5 × 5 strip kernel took 128
    /// registers with `rem_euclid` here, 112 without, and fits 80 (three
    /// blocks per SM) without spilling, where it spilled before.
    /// [`map_index`] keeps `rem_euclid`: the same change there made 32 of
    /// the batched rows kernels spill on sm_90.
    map_index32, i32, u32, checked = true
);

/// [`map_index`] as the kernels call it. In-range positions map at once;
/// for the others the axis length first passes through an opaque register
/// move, so the compiler keeps the modes' arithmetic (`2n`, `2n − 2`, the
/// remainders' corrections, …) on this rarely taken path. Without it that
/// arithmetic is loop-invariant and is hoisted in front of the kernels'
/// grid-stride loops, where every thread runs it, edge or not.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn map_index_edge(x: isize, n: isize, mode: u32) -> Option<usize> {
    if 0 <= x && x < n {
        return Some(x as usize);
    }
    let mut n = n;
    // SAFETY: a register move; not `pure`, so it is not hoisted.
    unsafe { core::arch::asm!("mov.b64 {0}, {0};", inout(reg64) n, options(nomem, nostack, preserves_flags)) };
    map_index(x, n, mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(a: &[i32], lo: isize, hi: isize, mode: Boundary) -> std::vec::Vec<i32> {
        (lo..hi).map(|x| map_index(x, a.len() as isize, mode.raw()).map_or(0, |i| a[i])).collect()
    }

    extern crate std;

    #[test]
    fn the_table_in_the_module_docs() {
        let a = [1, 2, 3, 4];
        assert_eq!(ext(&a, -3, 7, Boundary::Zero), [0, 0, 0, 1, 2, 3, 4, 0, 0, 0]);
        assert_eq!(ext(&a, -3, 7, Boundary::Nearest), [1, 1, 1, 1, 2, 3, 4, 4, 4, 4]);
        assert_eq!(ext(&a, -3, 7, Boundary::Reflect), [3, 2, 1, 1, 2, 3, 4, 4, 3, 2]);
        assert_eq!(ext(&a, -3, 7, Boundary::Mirror), [4, 3, 2, 1, 2, 3, 4, 3, 2, 1]);
        assert_eq!(ext(&a, -3, 7, Boundary::Wrap), [2, 3, 4, 1, 2, 3, 4, 1, 2, 3]);
    }

    #[test]
    fn beyond_one_period() {
        let a = [1, 2, 3];
        assert_eq!(ext(&a, -7, 0, Boundary::Reflect), [1, 1, 2, 3, 3, 2, 1]);
        assert_eq!(ext(&a, 3, 10, Boundary::Mirror), [2, 1, 2, 3, 2, 1, 2]);
        assert_eq!(ext(&a, 3, 10, Boundary::Wrap), [1, 2, 3, 1, 2, 3, 1]);
        assert_eq!(ext(&[5], -3, 4, Boundary::Mirror), [5; 7]);
        assert_eq!(ext(&[5], -3, 4, Boundary::Reflect), [5; 7]);
    }

    #[test]
    fn empty_axis_maps_outside_to_none() {
        for m in Boundary::ALL {
            for x in [-3, -1, 0, 2] {
                assert_eq!(map_index32(x, 0, m.raw()), None, "{m:?} x = {x}");
            }
        }
    }

    #[test]
    fn both_widths_agree() {
        for m in Boundary::ALL {
            for n in 1..6isize {
                for x in -13..13isize {
                    let wide = map_index(x, n, m.raw());
                    assert_eq!(
                        map_index32(x as i32, n as i32, m.raw()),
                        wide.map(|i| i as u32),
                        "{m:?} n = {n} x = {x}"
                    );
                }
            }
        }
    }

    #[test]
    fn raw_round_trip() {
        for m in Boundary::ALL {
            assert_eq!(Boundary::from_raw(m.raw()), Some(m));
        }
        assert_eq!(Boundary::from_raw(5), None);
        assert_eq!(map_index(-1, 4, 99), None);
    }
}
