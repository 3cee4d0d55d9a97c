//! CPU references for the 2D convolutions (rayon), independent of the
//! kernels' index arithmetic: each axis is extended with the 1D
//! reference's [`extend`](super::reference::extend()) (applied to the list
//! of row indices and to the list of column indices, so the mode acts on
//! each axis on its own), then the window sums are taken plainly. Checked
//! against `scipy.ndimage.correlate`/`convolve` outputs in
//! `tests/fixtures/scipy_conv2d.json`.
//!
//! Sums are accumulated in `f64`; each output carries the bound its GPU
//! counterpart in `T` must meet ([`Checked`]).

use rayon::prelude::*;

use super::conv2d::{check_layout, check_mask_dims, correlation_taps_2d};
use super::reference::{Checked, extend};
use super::{Boundary, ConvElem, ConvOp};
use crate::error::{Error, Result};

/// A `width × height` image whose rows start `pitch` elements apart.
#[derive(Clone, Copy, Debug)]
pub struct Image<'a, T> {
    /// The elements (at least `(height − 1) · pitch + width`).
    pub data: &'a [T],
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Elements from one row's start to the next (`≥ width`).
    pub pitch: usize,
}

impl<'a, T> Image<'a, T> {
    /// A contiguous image (`pitch = width`).
    pub fn dense(data: &'a [T], width: usize, height: usize) -> Self {
        Image { data, width, height, pitch: width }
    }

    fn check(&self) -> Result<()> {
        check_layout(self.data.len(), self.data.len(), self.width, self.height, self.pitch).map(|_| ())
    }
}

/// For an axis of length `n`, the input index (or `None`, a zero) that
/// each position `−before … n − 1 + after` takes under `mode`, built with
/// the 1D extension.
fn axis_map(n: usize, before: usize, after: usize, mode: Boundary) -> Vec<Option<usize>> {
    let idx: Vec<Option<usize>> = (0..n).map(Some).collect();
    extend(&idx, before, after, mode)
}

/// The 2D correlation `out[y][x] = Σ_j Σ_i in[y − left_y + j][x − left_x +
/// i] · taps[j · mw + i]` of `img` under `mode` (per axis), as a dense
/// `width × height` array of [`Checked`] values for a GPU result in `T`.
#[allow(clippy::too_many_arguments)]
pub fn correlate2d_checked<T: ConvElem + Default>(
    img: Image<'_, T>,
    taps: &[T],
    mw: usize,
    mh: usize,
    left_x: usize,
    left_y: usize,
    mode: Boundary,
) -> Result<Vec<Checked>> {
    let terms = mw * mh;
    let gamma = (terms as f64 + 2.0) * T::UNIT_ROUNDOFF;
    correlate2d_bounded(img, taps, (mw, mh), (left_x, left_y), mode, |abs| gamma * abs + terms as f64 * T::MIN_NORMAL)
}

/// [`correlate2d_checked`] with the bound of each output given by `bound`
/// from the sum of its terms' magnitudes (for arithmetic other than the
/// element type's own, such as the TF32 tensor-core products).
pub fn correlate2d_bounded<T: ConvElem + Default>(
    img: Image<'_, T>,
    taps: &[T],
    (mw, mh): (usize, usize),
    (left_x, left_y): (usize, usize),
    mode: Boundary,
    bound: impl Fn(f64) -> f64 + Sync,
) -> Result<Vec<Checked>> {
    check_mask_dims(taps.len(), mw, mh)?;
    img.check()?;
    if left_x >= mw || left_y >= mh {
        return Err(Error::InvalidArgument {
            op: "reference::correlate2d",
            message: format!("left ({left_x}, {left_y}) must be below the mask size ({mw}, {mh})"),
        });
    }
    let (w, h) = (img.width, img.height);
    if w == 0 || h == 0 {
        return Ok(Vec::new());
    }
    let cols = axis_map(w, left_x, mw - 1 - left_x, mode);
    let rows = axis_map(h, left_y, mh - 1 - left_y, mode);
    let taps: Vec<f64> = taps.iter().map(|t| t.to_f64()).collect();
    // The extended image, row by row (ghost rows and columns resolved).
    let ext_w = w + mw - 1;
    let ext: Vec<f64> = rows
        .par_iter()
        .flat_map_iter(|r| {
            cols.iter().map(move |c| match (r, c) {
                (Some(r), Some(c)) => img.data[r * img.pitch + c].to_f64(),
                _ => 0.0,
            })
        })
        .collect();
    let mut out = vec![Checked { value: 0.0, bound: 0.0 }; w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(y, line)| {
        for (x, o) in line.iter_mut().enumerate() {
            let (mut value, mut abs) = (0.0f64, 0.0f64);
            for j in 0..mh {
                let row = &ext[(y + j) * ext_w + x..(y + j) * ext_w + x + mw];
                for (v, m) in row.iter().zip(&taps[j * mw..(j + 1) * mw]) {
                    let p = v * m;
                    value += p;
                    abs += p.abs();
                }
            }
            *o = Checked { value, bound: bound(abs) };
        }
    });
    Ok(out)
}

/// The 2D correlation or convolution of `img` with the row-major `mw ×
/// mh` mask under `mode`, as `scipy.ndimage.correlate`/`convolve` compute
/// it, with bounds for a GPU result in `T` (dense `width × height`).
pub fn conv2d_checked<T: ConvElem + Default>(
    img: Image<'_, T>,
    mask: &[T],
    mw: usize,
    mh: usize,
    op: ConvOp,
    mode: Boundary,
) -> Result<Vec<Checked>> {
    check_mask_dims(mask.len(), mw, mh)?;
    let (taps, lx, ly) = correlation_taps_2d(op, mask, mw, mh);
    correlate2d_checked(img, &taps, mw, mh, lx, ly, mode)
}

/// [`conv2d_checked`]'s values rounded to `T`.
pub fn conv2d<T: ConvElem + Default>(
    img: Image<'_, T>,
    mask: &[T],
    mw: usize,
    mh: usize,
    op: ConvOp,
    mode: Boundary,
) -> Result<Vec<T>> {
    Ok(conv2d_checked(img, mask, mw, mh, op, mode)?.into_iter().map(|c| T::from_f64(c.value)).collect())
}

/// The separable convolution (rows with `mask_x`, then columns with
/// `mask_y`) as the GPU computes it, with bounds that include the
/// rounding of the intermediate image to `T`: the row pass gives `R` with
/// bound `B_R` per element (its own [`Checked`]); the column pass sums
/// `m_j · R̂_j` where `|R̂_j − R_j| ≤ B_R,j`, so its bound is
/// `Σ|m_j|·B_R,j + γ_y · Σ|m_j|·(|R_j| + B_R,j)` plus the underflow term.
/// Dense `width × height` output.
pub fn separable_checked<T: ConvElem + Default>(
    img: Image<'_, T>,
    mask_x: &[T],
    mask_y: &[T],
    op: ConvOp,
    mode: Boundary,
) -> Result<Vec<Checked>> {
    img.check()?;
    if mask_x.is_empty() || mask_y.is_empty() {
        return Err(Error::InvalidArgument { op: "reference::separable", message: "a mask is empty".into() });
    }
    let (w, h) = (img.width, img.height);
    if w == 0 || h == 0 {
        return Ok(Vec::new());
    }
    let (tx, lx) = op.correlation_taps(mask_x);
    let (ty, ly) = op.correlation_taps(mask_y);
    // Row pass: a 1 × mw correlation.
    let mid = correlate2d_checked(img, &tx, tx.len(), 1, lx, 0, mode)?;
    // Column pass over the exact intermediate, rows extended per mode.
    let mh = ty.len();
    let rows = axis_map(h, ly, mh - 1 - ly, mode);
    let taps: Vec<f64> = ty.iter().map(|t| t.to_f64()).collect();
    let gamma = (mh as f64 + 2.0) * T::UNIT_ROUNDOFF;
    let mut out = vec![Checked { value: 0.0, bound: 0.0 }; w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(y, line)| {
        for (x, o) in line.iter_mut().enumerate() {
            let (mut value, mut carried, mut abs) = (0.0f64, 0.0f64, 0.0f64);
            for (j, m) in taps.iter().enumerate() {
                let r = match rows[y + j] {
                    Some(r) => mid[r * w + x],
                    None => Checked { value: 0.0, bound: 0.0 },
                };
                value += m * r.value;
                carried += m.abs() * r.bound;
                abs += m.abs() * (r.value.abs() + r.bound);
            }
            *o = Checked { value, bound: carried + gamma * abs + mh as f64 * T::MIN_NORMAL };
        }
    });
    Ok(out)
}

/// The outer-product mask `mask_y[j] · mask_x[i]`, row-major
/// (`mask_x.len()` wide), rounded to `T`: the 2D mask a separable pair
/// stands for.
pub fn outer_product<T: ConvElem>(mask_x: &[T], mask_y: &[T]) -> Vec<T> {
    mask_y.iter().flat_map(|y| mask_x.iter().map(move |x| T::from_f64(y.to_f64() * x.to_f64()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::reference::correlate1d_checked;

    #[test]
    fn one_row_equals_the_1d_reference() {
        let line: Vec<f64> = (0..11).map(|v| (v * v % 7) as f64 - 2.5).collect();
        let mask = [0.5, -1.0, 2.0, 0.25];
        for mode in Boundary::ALL {
            let one = correlate1d_checked(&line, &mask, 2, mode).unwrap();
            let two = correlate2d_checked(Image::dense(&line, 11, 1), &mask, 4, 1, 2, 0, mode).unwrap();
            let vals = |v: &[Checked]| v.iter().map(|c| c.value).collect::<Vec<_>>();
            assert_eq!(vals(&one), vals(&two), "{mode:?}");
            // A column is the same line transposed.
            let col = correlate2d_checked(Image::dense(&line, 1, 11), &mask, 1, 4, 0, 2, mode).unwrap();
            assert_eq!(vals(&one), vals(&col), "{mode:?}");
        }
    }

    #[test]
    fn pitch_padding_is_ignored() {
        // 3 × 2 image in rows of 5, padding NaN.
        let n = f64::NAN;
        let data = [1.0, 2.0, 3.0, n, n, 4.0, 5.0, 6.0];
        let dense = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let img = Image { data: &data, width: 3, height: 2, pitch: 5 };
        for mode in Boundary::ALL {
            let a = conv2d(img, &[1.0; 9], 3, 3, ConvOp::Convolve, mode).unwrap();
            let b = conv2d(Image::dense(&dense, 3, 2), &[1.0; 9], 3, 3, ConvOp::Convolve, mode).unwrap();
            assert_eq!(a, b, "{mode:?}");
            assert!(a.iter().all(|v| v.is_finite()));
        }
        assert_eq!(
            conv2d(Image::dense(&dense, 3, 2), &[1.0; 9], 3, 3, ConvOp::Correlate, Boundary::Zero).unwrap()[0],
            12.0
        );
    }

    #[test]
    fn separable_equals_the_outer_product() {
        let img: Vec<f32> = (0..9 * 7).map(|v| ((v * 37) % 19) as f32 - 9.0).collect();
        let (mx, my) = ([1.0f32, 2.0, -1.0, 0.5], [0.25f32, 1.0, 3.0]);
        for op in ConvOp::ALL {
            for mode in Boundary::ALL {
                let s = separable_checked(Image::dense(&img, 9, 7), &mx, &my, op, mode).unwrap();
                let f = conv2d_checked(Image::dense(&img, 9, 7), &outer_product(&mx, &my), 4, 3, op, mode).unwrap();
                for (i, (a, b)) in s.iter().zip(&f).enumerate() {
                    assert!((a.value - b.value).abs() <= b.bound, "{op:?} {mode:?} {i}: {a:?} vs {b:?}");
                    assert!(a.bound > 0.0);
                }
            }
        }
    }

    #[test]
    fn errors() {
        let d = [1.0f32; 6];
        assert!(correlate2d_checked(Image::dense(&d, 3, 2), &[1.0; 4], 2, 3, 0, 0, Boundary::Zero).is_err());
        assert!(correlate2d_checked(Image::dense(&d, 3, 2), &[1.0; 4], 2, 2, 2, 0, Boundary::Zero).is_err());
        assert!(correlate2d_checked(Image::dense(&d, 3, 3), &[1.0; 4], 2, 2, 0, 0, Boundary::Zero).is_err());
        assert!(separable_checked(Image::dense(&d, 3, 2), &[], &[1.0], ConvOp::Correlate, Boundary::Zero).is_err());
        assert!(conv2d(Image::dense(&d, 0, 5), &[1.0], 1, 1, ConvOp::Correlate, Boundary::Zero).unwrap().is_empty());
    }
}
