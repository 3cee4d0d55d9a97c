//! The CPU reference of the batched 1D filters
//! (`conv::reference_batch::filter1d`) against `scipy.ndimage`'s
//! `correlate1d`, `convolve1d` and `gaussian_filter1d` for the parameters
//! the batched filters take from scipy: `axis`, `origin`, `cval` and
//! `truncate`, in every boundary mode, with odd and even widths and masks
//! wider than the signal. The fixture, `tests/fixtures/scipy_params.json`,
//! is written by `scripts/scipy_params_fixture.py`; no GPU and no scipy are
//! needed here.
//!
//! Also checks scipy's rules for `origin` (`batch::left_for_origin`) and
//! `axis` (`batch::Axis::from_scipy`) directly, and runs every case on
//! the GPU through `batch::Filter1d` (f64, and f32 against the f32 bound)
//! with scipy's parameters as the user passes them.

mod common;

use coalesce::conv::batch::{Axis, Filter1d, Sample, Shape, left_for_origin};
use coalesce::conv::reference_batch::filter1d;
use coalesce::conv::{ConvElem, ConvOp, gaussian_truncated, parse_boundary};

/// The fewest cases the script writes (it wrote 384).
const MIN_CASES: usize = 384;

#[derive(serde::Deserialize)]
struct Fixture {
    scipy: String,
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    kind: String,
    rows: usize,
    cols: usize,
    input: Vec<f64>,
    mask: Option<Vec<f64>>,
    sigma: Option<f64>,
    truncate: Option<f64>,
    axis: isize,
    origin: isize,
    mode: String,
    cval: f64,
    output: Vec<f64>,
}

impl Case {
    /// The parameters, for failure messages.
    fn describe(&self) -> String {
        let filter = match (&self.mask, self.sigma, self.truncate) {
            (Some(m), _, _) => format!("w={} mask={m:?}", m.len()),
            (None, Some(s), Some(t)) => format!("sigma={s} truncate={t}"),
            _ => "no mask or sigma".into(),
        };
        format!(
            "{} {}x{} axis={} origin={} mode={} cval={} {filter}",
            self.kind, self.rows, self.cols, self.axis, self.origin, self.mode, self.cval
        )
    }
}

/// The reference reproduces every case of the fixture: each output within
/// `1e-12 · (1 + |scipy's|)` plus the reference's own bound.
#[test]
fn reference_matches_scipy_params() {
    let fixture: Fixture = serde_json::from_str(include_str!("fixtures/scipy_params.json")).unwrap();
    assert!(
        fixture.cases.len() >= MIN_CASES,
        "fixture has {} cases, expected at least {MIN_CASES}",
        fixture.cases.len()
    );
    let mut kinds = [0usize; 3];
    for (k, c) in fixture.cases.iter().enumerate() {
        let what = format!("case {k} (scipy {}): {}", fixture.scipy, c.describe());
        assert_eq!(c.input.len(), c.rows * c.cols, "{what}: input length");
        assert_eq!(c.output.len(), c.rows * c.cols, "{what}: output length");
        let (taps, w, left) = match c.kind.as_str() {
            "correlate1d" | "convolve1d" => {
                let op = if c.kind == "correlate1d" { ConvOp::Correlate } else { ConvOp::Convolve };
                kinds[if op == ConvOp::Correlate { 0 } else { 1 }] += 1;
                let mask = c.mask.as_ref().unwrap_or_else(|| panic!("{what}: no mask"));
                let (taps, _) = op.correlation_taps(mask);
                let w = mask.len();
                let left = left_for_origin(w, c.origin, op).unwrap_or_else(|e| panic!("{what}: {e}"));
                (taps, w, left)
            }
            "gaussian_filter1d" => {
                kinds[2] += 1;
                let sigma = c.sigma.unwrap_or_else(|| panic!("{what}: no sigma"));
                let truncate = c.truncate.unwrap_or_else(|| panic!("{what}: no truncate"));
                let taps = gaussian_truncated::<f64>(sigma, truncate).unwrap_or_else(|e| panic!("{what}: {e}"));
                let w = taps.len();
                (taps, w, w / 2)
            }
            other => panic!("{what}: unknown kind `{other}`"),
        };
        let axis = Axis::from_scipy(c.axis).unwrap_or_else(|e| panic!("{what}: {e}"));
        let mode = parse_boundary(&c.mode).unwrap_or_else(|e| panic!("{what}: {e}"));
        let got = filter1d::<f64>(&c.input, Shape::new(c.rows, c.cols), axis, &taps, w, left, mode, c.cval)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(got.len(), c.output.len(), "{what}: output length");
        for (i, (g, want)) in got.iter().zip(&c.output).enumerate() {
            assert!(
                (g.value - want).abs() <= 1e-12 * (1.0 + want.abs()) + g.bound,
                "{what}: output {i} (row {}, col {}): {} (bound {:e}) vs scipy {want}",
                i / c.cols,
                i % c.cols,
                g.value,
                g.bound
            );
        }
    }
    assert!(
        kinds.iter().all(|&n| n > 0),
        "fixture lacks a kind: {kinds:?} (correlate1d, convolve1d, gaussian_filter1d)"
    );
}

/// `origin` must lie in `−(w/2) ..= (w−1)/2` for both operations; both
/// ends are accepted and one past either end is not.
#[test]
fn left_for_origin_range() {
    for op in [ConvOp::Correlate, ConvOp::Convolve] {
        for w in 1..=8usize {
            let (lo, hi) = (-((w / 2) as isize), ((w - 1) / 2) as isize);
            for origin in [lo, hi] {
                let left =
                    left_for_origin(w, origin, op).unwrap_or_else(|e| panic!("{op:?} w={w} origin={origin}: {e}"));
                assert!(left < w, "{op:?} w={w} origin={origin}: left {left}");
            }
            for origin in [lo - 1, hi + 1] {
                assert!(left_for_origin(w, origin, op).is_err(), "{op:?} w={w} origin={origin} was accepted");
            }
        }
    }
    assert!(left_for_origin(0, 0, ConvOp::Correlate).is_err());
}

/// `left` for a few origins: a correlation shifts by `origin` from `w/2`;
/// a convolution of even width takes scipy's extra shift of one.
#[test]
fn left_for_origin_values() {
    assert_eq!(left_for_origin(4, -2, ConvOp::Correlate).unwrap(), 0);
    assert_eq!(left_for_origin(4, 1, ConvOp::Correlate).unwrap(), 3);
    assert_eq!(left_for_origin(4, 0, ConvOp::Correlate).unwrap(), 2);
    assert_eq!(left_for_origin(4, 0, ConvOp::Convolve).unwrap(), 1);
    assert_eq!(left_for_origin(5, 0, ConvOp::Convolve).unwrap(), 2);
}

/// scipy's axis numbers for a 2D array.
#[test]
fn axis_from_scipy() {
    assert_eq!(Axis::from_scipy(0).unwrap(), Axis::Columns);
    assert_eq!(Axis::from_scipy(-2).unwrap(), Axis::Columns);
    assert_eq!(Axis::from_scipy(1).unwrap(), Axis::Rows);
    assert_eq!(Axis::from_scipy(-1).unwrap(), Axis::Rows);
    for axis in [2, -3] {
        assert!(Axis::from_scipy(axis).is_err(), "axis {axis} was accepted");
    }
}

/// A fixture case's filter, built from scipy's parameters as given.
fn gpu_filter<S: Sample>(gpu: &coalesce::Gpu, c: &Case) -> coalesce::Result<Filter1d<S>> {
    let mode = parse_boundary(&c.mode).expect("fixture mode");
    let filter = match (c.kind.as_str(), &c.mask) {
        ("gaussian_filter1d", _) => {
            Filter1d::<S>::gaussian(gpu, c.sigma.expect("sigma"), c.truncate.expect("truncate"), mode)?
        }
        (kind, Some(mask)) => {
            let op = if kind == "correlate1d" { ConvOp::Correlate } else { ConvOp::Convolve };
            let taps: Vec<S::Acc> = mask.iter().map(|&v| S::Acc::from_f64(v)).collect();
            Filter1d::<S>::new(gpu, &taps, op, mode)?.with_origin(c.origin)?
        }
        _ => panic!("case without a mask"),
    };
    filter.with_cval(c.cval).with_axis(c.axis)
}

/// Every fixture case on the GPU: f64 data within `1e-12 · Σ|terms|` of
/// scipy, f32 data (inputs, taps and cval rounded to f32 first) within
/// the f32 accumulation bound of the same sum.
#[test]
fn gpu_matches_scipy_params() {
    let gpu = gpu_or_skip!();
    let fixture: Fixture = serde_json::from_str(include_str!("fixtures/scipy_params.json")).unwrap();
    for (k, c) in fixture.cases.iter().enumerate() {
        let what = format!("case {k}: {}", c.describe());
        let shape = Shape::new(c.rows, c.cols);
        let scale: f64 = c.input.iter().map(|v| v.abs()).sum::<f64>() + c.cval.abs() + 1.0;
        // f64.
        let filter = gpu_filter::<f64>(&gpu, c).unwrap_or_else(|e| panic!("{what}: {e}"));
        let d_in = gpu.upload(&c.input).unwrap();
        let mut d_out = gpu.alloc_zeroed::<f64>(c.input.len()).unwrap();
        d_out.fill_bytes(common::POISON).unwrap();
        filter.run(&d_in.as_view(), &mut d_out.as_view_mut(), shape).unwrap_or_else(|e| panic!("{what}: {e}"));
        for (i, (g, want)) in d_out.to_vec().unwrap().iter().zip(&c.output).enumerate() {
            assert!((g - want).abs() <= 1e-12 * scale, "{what} (f64): output {i}: {g} vs scipy {want}");
        }
        // f32: scipy's answer is for the f64 inputs; the f32 run sees
        // them rounded, so it is held to the f32 sum's bound plus the
        // inputs' rounding.
        let filter = gpu_filter::<f32>(&gpu, c).unwrap_or_else(|e| panic!("{what}: {e}"));
        let input: Vec<f32> = c.input.iter().map(|&v| v as f32).collect();
        let d_in = gpu.upload(&input).unwrap();
        let mut d_out = gpu.alloc_zeroed::<f32>(input.len()).unwrap();
        d_out.fill_bytes(common::POISON).unwrap();
        filter.run(&d_in.as_view(), &mut d_out.as_view_mut(), shape).unwrap_or_else(|e| panic!("{what}: {e}"));
        let w = filter.width() as f64;
        let taps_abs: f64 = filter.taps().iter().map(|t| t.abs() as f64).sum::<f64>().max(1.0);
        for (i, (g, want)) in d_out.to_vec().unwrap().iter().zip(&c.output).enumerate() {
            let bound = (w + 3.0) * f32::EPSILON as f64 * scale * taps_abs;
            assert!((*g as f64 - want).abs() <= bound, "{what} (f32): output {i}: {g} vs scipy {want} (± {bound:e})");
        }
    }
}
