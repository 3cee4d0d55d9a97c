//! CPU reference (rayon) for the batched filters ([`super::batch`]):
//! every signal of a 2D array extended with its ghost cells by
//! [`super::reference::extend`] (`cval` in constant mode), then correlated
//! plainly in `f64`, with the error bound its GPU counterpart must meet.
//! Checked against `scipy.ndimage` outputs for `cval`, `origin`, `axis`
//! and `truncate` (`tests/fixtures/scipy_params.json`). [`filter2d`] is
//! the same for the 2D channels filters ([`super::channels`]).

use rayon::prelude::*;

use super::batch::{Axis, Sample, Shape};
use super::channels::Image;
use super::reference::{Checked, extend};
use super::{Boundary, ConvElem};
use crate::error::{Error, Result};

/// `line` (non-empty) with `before` ghost cells to its left and `after`
/// to its right under `mode`, `cval` in constant mode ([`Boundary::Zero`]).
pub fn extend_cval(line: &[f64], before: usize, after: usize, mode: Boundary, cval: f64) -> Vec<f64> {
    if mode != Boundary::Zero {
        return extend(line, before, after, mode);
    }
    let mut out = vec![cval; before];
    out.extend_from_slice(line);
    out.resize(before + line.len() + after, cval);
    out
}

/// One signal correlated with `taps` (`left` of them left of the centre)
/// under `mode` / `cval`, each output with the bound `bound(Σ|terms|)`.
pub fn correlate_line(
    line: &[f64],
    taps: &[f64],
    left: usize,
    mode: Boundary,
    cval: f64,
    bound: impl Fn(f64) -> f64,
) -> Vec<Checked> {
    let w = taps.len();
    if line.is_empty() {
        return Vec::new();
    }
    let ext = extend_cval(line, left, w - 1 - left, mode, cval);
    (0..line.len())
        .map(|i| {
            let (mut value, mut abs) = (0.0f64, 0.0f64);
            for (x, m) in ext[i..i + w].iter().zip(taps) {
                let p = x * m;
                value += p;
                abs += p.abs();
            }
            Checked { value, bound: bound(abs) }
        })
        .collect()
}

/// The batched filter in `f64`: `input` laid out as `shape` (only its
/// `in_pitch` is used), each signal along `axis` correlated with its mask
/// (`taps` holds one `w`-tap mask, or one per signal, in correlation
/// order). The result is dense, `rows × cols`, each value with the bound
/// an accumulation in `A` (`f32` or `f64`) in tap order meets.
#[allow(clippy::too_many_arguments)]
pub fn filter1d<A: ConvElem>(
    input: &[f64],
    shape: Shape,
    axis: Axis,
    taps: &[f64],
    w: usize,
    left: usize,
    mode: Boundary,
    cval: f64,
) -> Result<Vec<Checked>> {
    let (rows, cols) = (shape.rows, shape.cols);
    let (signals, n) = match axis {
        Axis::Rows => (rows, cols),
        Axis::Columns => (cols, rows),
    };
    if w == 0 || left >= w || taps.is_empty() || !taps.len().is_multiple_of(w) {
        return Err(Error::InvalidArgument {
            op: "reference::filter1d",
            message: format!("{} taps, width {w}, left {left}", taps.len()),
        });
    }
    let masks = taps.len() / w;
    if masks != 1 && masks != signals {
        return Err(Error::InvalidArgument {
            op: "reference::filter1d",
            message: format!("{masks} masks for {signals} signals"),
        });
    }
    // Accumulating w terms in A: each partial sum rounds once (fma), so
    // the error is below (w + 1)·u·Σ|terms| plus the underflow floor.
    let u = A::UNIT_ROUNDOFF;
    let bound = move |abs: f64| (w as f64 + 1.0) * u * abs * (1.0 + 1e-6) + 4.0 * w as f64 * A::MIN_NORMAL;
    let lines: Vec<Vec<Checked>> = (0..signals)
        .into_par_iter()
        .map(|s| {
            let line: Vec<f64> = (0..n)
                .map(|i| match axis {
                    Axis::Rows => input[s * shape.in_pitch + i],
                    Axis::Columns => input[i * shape.in_pitch + s],
                })
                .collect();
            let m = if masks == 1 { &taps[..w] } else { &taps[s * w..(s + 1) * w] };
            correlate_line(&line, m, left, mode, cval, bound)
        })
        .collect();
    let mut out = vec![Checked { value: 0.0, bound: 0.0 }; rows * cols];
    for (s, line) in lines.into_iter().enumerate() {
        for (i, c) in line.into_iter().enumerate() {
            let at = match axis {
                Axis::Rows => s * cols + i,
                Axis::Columns => i * cols + s,
            };
            out[at] = c;
        }
    }
    Ok(out)
}

/// The 2D channels filter in `f64` ([`super::channels::Filter2d`]):
/// `input` laid out as `img` (only its `in_pitch` is used), each channel
/// correlated with its `mh × mw` taps (`taps` holds one mask, or one per
/// channel, in correlation order), `left` and `top` taps left of and
/// above the centre, each axis extended by `mode` (`cval` in constant
/// mode: a tap outside the image on either axis reads `cval`). The result
/// is dense, `height × width × channels`, each value with the bound an
/// accumulation in `A` meets.
#[allow(clippy::too_many_arguments)]
pub fn filter2d<A: ConvElem>(
    input: &[f64],
    img: Image,
    taps: &[f64],
    (mw, mh): (usize, usize),
    (left, top): (usize, usize),
    mode: Boundary,
    cval: f64,
) -> Result<Vec<Checked>> {
    let (w, h, ch) = (img.width, img.height, img.channels);
    let size = mw * mh;
    if size == 0 || left >= mw || top >= mh || taps.is_empty() || !taps.len().is_multiple_of(size) {
        return Err(Error::InvalidArgument {
            op: "reference::filter2d",
            message: format!("{} taps for {mw} x {mh}, left {left}, top {top}", taps.len()),
        });
    }
    let masks = taps.len() / size;
    if masks != 1 && masks != ch {
        return Err(Error::InvalidArgument {
            op: "reference::filter2d",
            message: format!("{masks} masks for {ch} channels"),
        });
    }
    // Each axis's positions, extended: the index each ghost reads, or
    // None (constant mode).
    let axis = |n: usize, before: usize, after: usize| -> Vec<Option<usize>> {
        let line: Vec<Option<usize>> = (0..n).map(Some).collect();
        extend(&line, before, after, mode)
    };
    let (xs, ys) = (axis(w, left, mw - 1 - left), axis(h, top, mh - 1 - top));
    let u = A::UNIT_ROUNDOFF;
    let bound = |abs: f64| (size as f64 + 1.0) * u * abs * (1.0 + 1e-6) + 4.0 * size as f64 * A::MIN_NORMAL;
    Ok((0..h)
        .into_par_iter()
        .flat_map_iter(|y| {
            let (xs, ys) = (&xs, &ys);
            (0..w * ch).map(move |e| {
                let (x, c) = (e / ch, e % ch);
                let m = if masks == 1 { &taps[..size] } else { &taps[c * size..(c + 1) * size] };
                let (mut value, mut abs) = (0.0f64, 0.0f64);
                for dy in 0..mh {
                    for dx in 0..mw {
                        let v = match (ys[y + dy], xs[x + dx]) {
                            (Some(yy), Some(xx)) => input[yy * img.in_pitch + xx * ch + c],
                            _ => cval,
                        };
                        let p = v * m[dy * mw + dx];
                        value += p;
                        abs += p.abs();
                    }
                }
                Checked { value, bound: bound(abs) }
            })
        })
        .collect())
}

/// Whether `got` is what a kernel may write for `want`: the output rule
/// ([`Sample::from_acc`]) is monotonic, so `got` must lie between the
/// rule applied to `value − bound` and to `value + bound`.
pub fn sample_matches<S: Sample>(got: S, want: &Checked) -> bool {
    let g = got.to_f64();
    if want.value.is_nan() {
        return g.is_nan() || S::NAME == "u8" || S::NAME == "u16";
    }
    let lo = S::from_f64(want.value - want.bound).to_f64();
    let hi = S::from_f64(want.value + want.bound).to_f64();
    (lo <= g && g <= hi) || (g == want.value)
}

/// The first element of `got` (dense, as [`filter1d`] returns) that does
/// not match `want`, with its index.
pub fn first_mismatch<S: Sample>(got: &[S], want: &[Checked]) -> Option<(usize, f64, Checked)> {
    if got.len() != want.len() {
        return Some((got.len().min(want.len()), f64::NAN, Checked { value: f64::NAN, bound: 0.0 }));
    }
    got.iter().zip(want).enumerate().find(|(_, (g, w))| !sample_matches(**g, w)).map(|(i, (g, w))| (i, g.to_f64(), *w))
}
