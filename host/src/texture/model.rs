//! CPU models of what the texture unit returns, for verifying the texture
//! kernels (rayon where whole images are modelled).
//!
//! Written from the texture-fetching rules of the CUDA programming guide,
//! not from the kernels:
//!
//! * A coordinate `c` becomes a position in texels, `x = c` (pixel
//!   coordinates) or `x = c · n` (normalized, `n` texels on the axis).
//! * **Point** filtering returns texel `⌊x⌋`.
//! * **Linear** filtering returns `(1 − α)(1 − β)·T[i, j] + α(1 − β)·T[i +
//!   1, j] + (1 − α)β·T[i, j + 1] + αβ·T[i + 1, j + 1]` with `i = ⌊x −
//!   0.5⌋`, `α = frac(x − 0.5)` (and `j`, `β` along y). The hardware holds
//!   `α` and `β` in 9-bit fixed point with 8 fractional bits: each weight
//!   may be off by up to [`WEIGHT_STEP`] = 1/256 from the exact fraction.
//! * The **address mode** decides which texel an index outside `0..n`
//!   reads ([`texel_index`]): clamp the nearest edge texel, border none
//!   (the border colour), wrap `i mod n`, mirror the reflection with
//!   period `2n` whose edge texels repeat (`… 1 0 | 0 1 … n−1 | n−1 n−2
//!   …`). The guide states wrap and mirror on normalized coordinates (`x ←
//!   frac(x)`; mirrored when `⌊x⌋` is odd); on texel indices that is the
//!   same mapping, as a unit test below checks.
//!
//! # Tolerance of linear filtering
//!
//! A weight off by `δ ≤ 1/256` moves a bilinear result by at most
//! `δ·|∂f/∂α| ≤ δ·max(|T[i+1, j] − T[i, j]|, |T[i+1, j+1] − T[i, j+1]|)`,
//! the same along y, plus `δ²` times the sum of the four texels'
//! magnitudes for both at once. The hardware also scales normalized
//! coordinates by `n` in `f32` (allowed for as `2⁻²³·(|x| + n)`, added to
//! `δ`: wrap and mirror scale the wrapped coordinate, up to `n`).
//! On top, [`ARITHMETIC`] allows for the blend's own rounding (`2⁻¹⁶` of
//! the largest texel magnitude: generous for `f32`, far below the weight
//! term wherever neighbouring texels differ). Where the exact fractions
//! are multiples of 1/256 the weights are exact and only the
//! arithmetic term remains ([`LinearSample::arithmetic_bound`]).

use rayon::prelude::*;

use super::{AddressMode, Coordinates, FilterMode, TextureDesc, resize_scale};
use crate::conv::reference::Checked;

/// The largest error of one filtering weight: 1/256 (8 fractional bits).
pub const WEIGHT_STEP: f64 = 1.0 / 256.0;

/// Relative error allowed for the hardware's `f32` scaling of normalized
/// coordinates by the texture's size: `2⁻²³`.
pub const SCALING: f64 = 1.0 / 8_388_608.0;

/// Allowance for the rounding of the bilinear blend, relative to the
/// largest magnitude among the four texels: `2⁻¹⁶`.
pub const ARITHMETIC: f64 = 1.0 / 65536.0;

/// One channel of a `width × height` texture, contiguous rows.
#[derive(Clone, Copy, Debug)]
pub struct Texels<'a> {
    /// The texels (`width · height`).
    pub data: &'a [f32],
    /// Width.
    pub width: usize,
    /// Height.
    pub height: usize,
}

/// The texel index that index `i` (any integer) reads on an axis of `n`
/// texels under `mode`; `None` for the border colour.
pub fn texel_index(i: i64, n: usize, mode: AddressMode) -> Option<usize> {
    let n = n as i64;
    if n == 0 {
        return None;
    }
    let k = match mode {
        AddressMode::Clamp => i.clamp(0, n - 1),
        AddressMode::Border if (0..n).contains(&i) => i,
        AddressMode::Border => return None,
        AddressMode::Wrap => i.rem_euclid(n),
        AddressMode::Mirror => {
            let q = i.rem_euclid(2 * n);
            if q < n { q } else { 2 * n - 1 - q }
        }
    };
    Some(k as usize)
}

/// The position in texels of coordinate `c` on an axis of `n` texels.
pub fn texel_position(c: f32, n: usize, coordinates: Coordinates) -> f64 {
    match coordinates {
        Coordinates::Pixel => f64::from(c),
        Coordinates::Normalized => f64::from(c) * n as f64,
    }
}

/// The texel `(column, row)` point filtering reads at `(u, v)`, `None`
/// for the border colour.
pub fn point_texel(desc: &TextureDesc, width: usize, height: usize, u: f32, v: f32) -> Option<(usize, usize)> {
    let x = texel_position(u, width, desc.coordinates).floor() as i64;
    let y = texel_position(v, height, desc.coordinates).floor() as i64;
    Some((texel_index(x, width, desc.address[0])?, texel_index(y, height, desc.address[1])?))
}

/// A modelled linear fetch: the exact-weight value and its two error
/// allowances.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinearSample {
    /// The blend with exact weights.
    pub value: f64,
    /// The most the 9-bit weights can move it.
    pub weight_bound: f64,
    /// The allowance for the blend's rounding.
    pub arithmetic_bound: f64,
    /// True when both exact weights are multiples of 1/256 (the hardware's
    /// weights are then exact).
    pub exact_weights: bool,
}

/// The linear fetch at `(u, v)` of channel `tex` (border colour `border`).
pub fn linear(tex: Texels<'_>, desc: &TextureDesc, u: f32, v: f32) -> LinearSample {
    let x = texel_position(u, tex.width, desc.coordinates);
    let y = texel_position(v, tex.height, desc.coordinates);
    let (xb, yb) = (x - 0.5, y - 0.5);
    let (i, j) = (xb.floor(), yb.floor());
    let (a, b) = (xb - i, yb - j);
    let at = |di: i64, dj: i64| -> f64 {
        let c = texel_index(i as i64 + di, tex.width, desc.address[0]);
        let r = texel_index(j as i64 + dj, tex.height, desc.address[1]);
        match (c, r) {
            (Some(c), Some(r)) => f64::from(tex.data[r * tex.width + c]),
            _ => f64::from(desc.border[0]),
        }
    };
    let (t00, t10, t01, t11) = (at(0, 0), at(1, 0), at(0, 1), at(1, 1));
    let value = (1.0 - a) * (1.0 - b) * t00 + a * (1.0 - b) * t10 + (1.0 - a) * b * t01 + a * b * t11;
    // The hardware scales normalized coordinates in f32.
    // (Wrapped or mirrored first: a position up to n.)
    let scaling = |p: f64, n: usize| match desc.coordinates {
        Coordinates::Pixel => 0.0,
        Coordinates::Normalized => (p.abs() + n as f64) * SCALING,
    };
    let (dx, dy) = (WEIGHT_STEP + scaling(x, tex.width), WEIGHT_STEP + scaling(y, tex.height));
    let slope_x = (t10 - t00).abs().max((t11 - t01).abs());
    let slope_y = (t01 - t00).abs().max((t11 - t10).abs());
    let sum = t00.abs() + t10.abs() + t01.abs() + t11.abs();
    let largest = t00.abs().max(t10.abs()).max(t01.abs()).max(t11.abs());
    let on_grid = |f: f64| (f * 256.0).fract() == 0.0;
    LinearSample {
        value,
        weight_bound: dx * slope_x + dy * slope_y + dx * dy * sum,
        arithmetic_bound: ARITHMETIC * largest + f64::from(f32::MIN_POSITIVE),
        exact_weights: desc.coordinates == Coordinates::Pixel && on_grid(a) && on_grid(b),
    }
}

/// What a fetch at `(u, v)` of channel `tex` returns, with its bound:
/// exact (bound 0) for point filtering, [`linear`]'s two allowances
/// summed for linear filtering.
pub fn sample(tex: Texels<'_>, desc: &TextureDesc, u: f32, v: f32) -> Checked {
    match desc.filter {
        FilterMode::Point => {
            let value = match point_texel(desc, tex.width, tex.height, u, v) {
                Some((c, r)) => tex.data[r * tex.width + c],
                None => desc.border[0],
            };
            Checked { value: f64::from(value), bound: 0.0 }
        }
        FilterMode::Linear => {
            let s = linear(tex, desc, u, v);
            Checked { value: s.value, bound: s.weight_bound + s.arithmetic_bound }
        }
    }
}

/// [`Texture2d::resize`](super::Texture2d::resize) of `tex` to `out_w ×
/// out_h` (dense rows), modelled: output `(x, y)` is [`sample`] at the
/// very `f32` coordinates the kernel computes, `((x + 0.5) · sx, (y + 0.5)
/// · sy)` with [`resize_scale`].
pub fn resize(tex: Texels<'_>, desc: &TextureDesc, out_w: usize, out_h: usize) -> Vec<Checked> {
    let (sx, sy) = resize_scale(desc, (tex.width, tex.height), (out_w, out_h));
    let mut out = vec![Checked { value: 0.0, bound: 0.0 }; out_w * out_h];
    out.par_chunks_mut(out_w.max(1)).enumerate().for_each(|(y, row)| {
        let v = (y as f32 + 0.5) * sy;
        for (x, o) in row.iter_mut().enumerate() {
            *o = sample(tex, desc, (x as f32 + 0.5) * sx, v);
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::Boundary;
    use crate::texture::conv::address_for;
    use coalesce_kernels::conv::map_index;

    /// The guide's coordinate-level rules for normalized coordinates,
    /// point filtering: wrap takes `frac(u)`, mirror flips every other
    /// period, clamp clamps `u` to `[0, 1)`.
    fn guide_point(u: f64, n: usize, mode: AddressMode) -> Option<usize> {
        let n_f = n as f64;
        let u = match mode {
            AddressMode::Wrap => u - u.floor(),
            AddressMode::Mirror => {
                let f = u.floor();
                if (f as i64).rem_euclid(2) == 0 { u - f } else { 1.0 - (u - f) }
            }
            AddressMode::Clamp => u.clamp(0.0, (n_f - 0.5) / n_f),
            AddressMode::Border if (0.0..1.0).contains(&u) => u,
            AddressMode::Border => return None,
        };
        Some(((u * n_f).floor() as usize).min(n - 1))
    }

    #[test]
    fn index_rules_equal_the_guides_coordinate_rules() {
        for n in [1usize, 2, 3, 7, 16] {
            for mode in AddressMode::ALL {
                // Texel interiors (a quarter from an edge) over five periods.
                for k in -(3 * n as i64)..(3 * n as i64) {
                    for f in [0.25, 0.75] {
                        let u = (k as f64 + f) / n as f64;
                        assert_eq!(texel_index(k, n, mode), guide_point(u, n, mode), "n {n} {mode} k {k} f {f}");
                    }
                }
            }
        }
    }

    #[test]
    fn address_modes_are_the_boundaries_they_map_to() {
        // Clamp = nearest, border 0 = zero, wrap = wrap, mirror = reflect;
        // scipy's mirror (edge not repeated) has no address mode.
        for n in 1..=9usize {
            for b in Boundary::ALL {
                let Ok(mode) = address_for(b) else {
                    assert_eq!(b, Boundary::Mirror);
                    continue;
                };
                for i in -(4 * n as isize)..(5 * n as isize) {
                    assert_eq!(
                        texel_index(i as i64, n, mode),
                        map_index(i, n as isize, b.raw()),
                        "{b:?} as {mode}, n {n}, i {i}"
                    );
                }
            }
        }
        assert!(address_for(Boundary::Mirror).is_err());
    }

    #[test]
    fn point_and_linear_fetches() {
        // 3 × 2: [[1 2 3] [4 5 6]].
        let data = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let t = Texels { data: &data, width: 3, height: 2 };
        let clamp = TextureDesc::for_mode(AddressMode::Clamp, FilterMode::Point);
        assert_eq!(sample(t, &clamp, 2.9, 1.1).value, 6.0);
        assert_eq!(sample(t, &clamp, -7.0, 0.5).value, 1.0);
        let border = TextureDesc::for_mode(AddressMode::Border, FilterMode::Point).with_border([9.0, 0.0, 0.0, 0.0]);
        assert_eq!(sample(t, &border, 3.0, 0.5).value, 9.0);
        let wrap = TextureDesc::for_mode(AddressMode::Wrap, FilterMode::Point);
        assert_eq!(point_texel(&wrap, 3, 2, 1.2, -0.25), Some((0, 1)));
        // Linear: halfway between texel centres 0 and 1 of row 0.
        let lin = TextureDesc::for_mode(AddressMode::Clamp, FilterMode::Linear);
        let s = linear(t, &lin, 1.0, 0.5);
        assert_eq!(s.value, 1.5);
        assert!(s.exact_weights);
        // Slopes 1 along x, 3 along y; texel magnitudes sum to 12.
        assert!((s.weight_bound - (4.0 / 256.0 + 12.0 / 65536.0)).abs() < 1e-15, "{s:?}");
        // At a texel centre the blend is that texel.
        assert_eq!(linear(t, &lin, 2.5, 1.5).value, 6.0);
        // Centre of all four texels of columns 1..3.
        assert_eq!(linear(t, &lin, 2.0, 1.0).value, (2.0 + 3.0 + 5.0 + 6.0) / 4.0);
        let off = linear(t, &lin, 1.0 + 1.0 / 1000.0, 0.5);
        assert!(!off.exact_weights);
        // Border colour enters the blend.
        let lb = TextureDesc::for_mode(AddressMode::Border, FilterMode::Linear);
        assert_eq!(linear(t, &lb, 0.0, 0.5).value, 0.5);
    }

    #[test]
    fn resize_samples_pixel_centres() {
        let data: Vec<f32> = (0..16).map(|i| i as f32).collect();
        let t = Texels { data: &data, width: 4, height: 4 };
        let lin = TextureDesc::for_mode(AddressMode::Clamp, FilterMode::Linear);
        // 4 → 2: output centres at input positions 1 and 3, between texels.
        let half = resize(t, &lin, 2, 2);
        let v: Vec<f64> = half.iter().map(|c| c.value).collect();
        assert_eq!(v, [2.5, 4.5, 10.5, 12.5]);
        // Same size: the identity.
        let same: Vec<f64> = resize(t, &lin, 4, 4).iter().map(|c| c.value).collect();
        assert_eq!(same, data.iter().map(|&x| f64::from(x)).collect::<Vec<_>>());
    }
}
