//! CPU references for the convolutions (rayon), written independently of
//! the kernels' index arithmetic: a line is first *extended* with its ghost
//! cells, built by walking outward from each edge and bouncing the way
//! each mode does (the kernels instead map each position with
//! `coalesce_kernels::conv::map_index`), then correlated plainly. The
//! extension and the sums are checked against outputs of
//! `scipy.ndimage.correlate1d`/`convolve1d` (`tests/fixtures`).
//!
//! Sums are accumulated in `f64`, and each output comes with the bound
//! its GPU counterpart must meet ([`Checked`]).

use rayon::prelude::*;

use super::{Boundary, ConvElem, ConvOp};
use crate::error::{Error, Result};

/// The ghost cells of `line` (non-empty) under `mode`: `before` cells to
/// its left (nearest first) and `after` to its right (nearest first).
pub fn ghosts<T: Copy + Default>(line: &[T], before: usize, after: usize, mode: Boundary) -> (Vec<T>, Vec<T>) {
    let outward = |from_left: bool, count: usize| -> Vec<T> {
        let n = line.len();
        // Index as seen from the edge being extended.
        let at = |k: usize| if from_left { line[k] } else { line[n - 1 - k] };
        let mut out = Vec::with_capacity(count);
        match mode {
            Boundary::Zero => out.resize(count, T::default()),
            Boundary::Nearest => out.resize(count, at(0)),
            Boundary::Wrap => {
                // Continue from the far edge inward-going: positions −1, −2, … take
                // n−1, n−2, … (seen from this edge's side).
                let mut k = n - 1;
                for _ in 0..count {
                    out.push(at(k));
                    k = if k == 0 { n - 1 } else { k - 1 };
                }
            }
            Boundary::Reflect => {
                // Walk away from the edge, starting on the edge sample; on
                // reaching an end, stay there one step and turn.
                let (mut k, mut up) = (0usize, true);
                for _ in 0..count {
                    out.push(at(k));
                    if up {
                        if k + 1 == n { up = false } else { k += 1 }
                    } else if k == 0 {
                        up = true
                    } else {
                        k -= 1
                    }
                }
            }
            Boundary::Mirror => {
                // As reflect, but starting one past the edge sample and
                // turning without repeating the end sample.
                if n == 1 {
                    out.resize(count, at(0));
                } else {
                    let (mut k, mut up) = (1usize, true);
                    for _ in 0..count {
                        out.push(at(k));
                        if up {
                            if k + 1 == n {
                                up = false;
                                k -= 1;
                            } else {
                                k += 1;
                            }
                        } else if k == 0 {
                            up = true;
                            k += 1;
                        } else {
                            k -= 1;
                        }
                    }
                }
            }
        }
        out
    };
    (outward(true, before), outward(false, after))
}

/// `line` with its ghost cells: `before` cells, the line, `after` cells.
pub fn extend<T: Copy + Default>(line: &[T], before: usize, after: usize, mode: Boundary) -> Vec<T> {
    if line.is_empty() {
        return Vec::new();
    }
    let (mut left, right) = ghosts(line, before, after, mode);
    left.reverse();
    left.extend_from_slice(line);
    left.extend(right);
    left
}

/// One reference output: the exact-as-possible sum, and the error a GPU
/// sum of the same terms in precision `T` may have.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Checked {
    /// The sum, accumulated in `f64`.
    pub value: f64,
    /// `γ·Σ|terms|` with `γ = (terms + 2)·u_T` (`u_T` the unit roundoff of
    /// the GPU's type), plus `terms` smallest normals for underflow: the
    /// classic bound for a recursively summed dot product, plus the final
    /// rounding to `T`.
    pub bound: f64,
}

/// The correlation `out[i] = Σ_j x[i − left + j] · taps[j]` of `input`
/// under `mode`, in `f64`, with error bounds for a GPU result in `T`.
pub fn correlate1d_checked<T: ConvElem + Default>(
    input: &[T],
    taps: &[T],
    left: usize,
    mode: Boundary,
) -> Result<Vec<Checked>> {
    let gamma = (taps.len() as f64 + 2.0) * T::UNIT_ROUNDOFF;
    let w = taps.len() as f64;
    correlate1d_bounded(input, taps, left, mode, |abs| gamma * abs + w * T::MIN_NORMAL)
}

/// [`correlate1d_checked`] with the bound of each output given by `bound`
/// from the sum of its terms' magnitudes (for arithmetic other than the
/// element type's own, such as the TF32 tensor-core products).
pub fn correlate1d_bounded<T: ConvElem + Default>(
    input: &[T],
    taps: &[T],
    left: usize,
    mode: Boundary,
    bound: impl Fn(f64) -> f64 + Sync,
) -> Result<Vec<Checked>> {
    if taps.is_empty() {
        return Err(Error::InvalidArgument { op: "reference::correlate1d", message: "the mask is empty".into() });
    }
    if left >= taps.len() {
        return Err(Error::InvalidArgument {
            op: "reference::correlate1d",
            message: format!("left = {left} must be below the width {}", taps.len()),
        });
    }
    let w = taps.len();
    let ext = extend(input, left, w - 1 - left, mode);
    let taps: Vec<f64> = taps.iter().map(|t| t.to_f64()).collect();
    Ok((0..input.len())
        .into_par_iter()
        .map(|i| {
            let (mut value, mut abs) = (0.0f64, 0.0f64);
            for (x, m) in ext[i..i + w].iter().zip(&taps) {
                let p = x.to_f64() * m;
                value += p;
                abs += p.abs();
            }
            Checked { value, bound: bound(abs) }
        })
        .collect())
}

/// The 1D correlation or convolution of `input` with `mask` under `mode`,
/// as `scipy.ndimage.correlate1d`/`convolve1d` compute it (accumulated in
/// `f64`, rounded to `T`). An empty mask is an error.
pub fn conv1d<T: ConvElem + Default>(input: &[T], mask: &[T], op: ConvOp, mode: Boundary) -> Result<Vec<T>> {
    if mask.is_empty() {
        return Err(Error::InvalidArgument { op: "reference::conv1d", message: "the mask is empty".into() });
    }
    let (taps, left) = op.correlation_taps(mask);
    Ok(correlate1d_checked(input, &taps, left, mode)?.into_iter().map(|c| T::from_f64(c.value)).collect())
}

/// The first output where `got` misses its reference, if any.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// Index of the output.
    pub index: usize,
    /// What the GPU produced (widened).
    pub got: f64,
    /// The reference value.
    pub want: f64,
    /// The allowed error.
    pub bound: f64,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "output {}: got {:e}, want {:e} (|diff| {:e} > bound {:e})",
            self.index,
            self.got,
            self.want,
            (self.got - self.want).abs(),
            self.bound
        )
    }
}

/// True when a GPU value in `T` matches its reference: NaN where the
/// reference is NaN, the same infinity where it is infinite (or overflows
/// `T`), otherwise within `bound` (`approx::abs_diff_eq!`).
pub fn matches<T: ConvElem>(got: T, want: &Checked) -> bool {
    let g = got.to_f64();
    let w = want.value;
    if w.is_nan() {
        return g.is_nan();
    }
    let w_t = T::from_f64(w).to_f64();
    if w_t.is_infinite() {
        // Infinite in f64, or an overflow when rounded to T.
        return g == w_t || (w.is_finite() && approx::abs_diff_eq!(g, w, epsilon = want.bound));
    }
    approx::abs_diff_eq!(g, w, epsilon = want.bound)
}

/// Compares GPU output with references; `Err` holds the first mismatch
/// and the number of mismatching outputs.
pub fn compare<T: ConvElem>(got: &[T], want: &[Checked]) -> std::result::Result<(), (Mismatch, usize)> {
    if got.len() != want.len() {
        let m = Mismatch { index: got.len().min(want.len()), got: f64::NAN, want: f64::NAN, bound: 0.0 };
        return Err((m, got.len().abs_diff(want.len())));
    }
    let bad: Vec<usize> = (0..got.len()).into_par_iter().filter(|&i| !matches(got[i], &want[i])).collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => {
            Err((Mismatch { index: i, got: got[i].to_f64(), want: want[i].value, bound: want[i].bound }, bad.len()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coalesce_kernels::conv::map_index;

    #[test]
    fn extension_agrees_with_the_kernels_index_map() {
        for n in 1..=9usize {
            let line: Vec<i64> = (1..=n as i64).collect();
            for mode in Boundary::ALL {
                for reach in [0usize, 1, n, 2 * n + 3, 5 * n] {
                    let ext = extend(&line, reach, reach, mode);
                    for (k, &v) in ext.iter().enumerate() {
                        let x = k as isize - reach as isize;
                        let want = map_index(x, n as isize, mode.raw()).map_or(0, |i| line[i]);
                        assert_eq!(v, want, "n={n} mode={mode:?} x={x}");
                    }
                }
            }
        }
    }

    #[test]
    fn lesson_example_zero_ghosts() {
        // The lesson's 7-element example: N = 1..7, M = [3 4 5 4 3].
        let n: Vec<f32> = (1..=7).map(|v| v as f32).collect();
        let m = [3.0f32, 4.0, 5.0, 4.0, 3.0];
        let p = conv1d(&n, &m, ConvOp::Correlate, Boundary::Zero).unwrap();
        assert_eq!(p[2], 57.0); // 1·3 + 2·4 + 3·5 + 4·4 + 5·3
        assert_eq!(p[1], 38.0); // 0·3 + 1·4 + 2·5 + 3·4 + 4·3
    }

    #[test]
    fn comparison_rules() {
        let c = |value, bound| Checked { value, bound };
        assert!(matches(1.0f32, &c(1.0, 0.0)));
        assert!(!matches(1.0f32 + 1e-3, &c(1.0, 1e-6)));
        assert!(matches(f32::NAN, &c(f64::NAN, 0.0)));
        assert!(!matches(1.0f32, &c(f64::NAN, 1e9)));
        assert!(matches(f32::INFINITY, &c(f64::INFINITY, 0.0)));
        assert!(!matches(f32::NEG_INFINITY, &c(f64::INFINITY, 0.0)));
        assert!(matches(f32::INFINITY, &c(1e300, 0.0)));
        assert!(compare(&[1.0f32, 2.0], &[c(1.0, 0.0), c(3.0, 0.5)]).is_err());
        assert!(compare(&[1.0f32], &[c(1.0, 0.0), c(3.0, 0.5)]).is_err());
        assert!(correlate1d_checked::<f32>(&[1.0], &[], 0, Boundary::Zero).is_err());
        assert!(correlate1d_checked::<f32>(&[1.0], &[1.0], 1, Boundary::Zero).is_err());
    }
}
