//! The 2D channels filters against `scipy.ndimage`'s `correlate`,
//! `convolve` and `gaussian_filter` for the parameters they take from
//! scipy: `origin = (origin_y, origin_x)` (both ends of scipy's range for
//! each axis's mask width, and 0), `cval` in constant mode, σ per axis and
//! `truncate`, in every boundary mode, with odd, even and non-square masks
//! and a mask larger than the image on both axes. The fixture,
//! `tests/fixtures/scipy_params2d.json`, is written by
//! `scripts/scipy_params_fixture.py`; no scipy is needed here.
//!
//! Checks the CPU reference (`conv::reference_batch::filter2d`) on every
//! case, and runs every case on the GPU through `channels::Filter2d` (f64)
//! with scipy's parameters as the user passes them: one channel, then 3
//! and 4 interleaved channels of differently scaled copies with one mask
//! for all, and one mask per channel.
//!
//! A channel scaled by `s` does not see a scaled `cval` (there is one
//! `cval` for all channels), so the one-mask runs feed channel `c`
//! `(1 + c)·x − c·cval`: every tap, inside the image or not, then reads
//! `(1 + c)·v − c·cval` where scipy's read `v`, and the output is
//! `(1 + c)·scipy − c·cval·Σmask` (just `(1 + c)·scipy` when `cval` is 0).

mod common;

use coalesce::conv::batch::left_for_origin;
use coalesce::conv::channels::{Filter2d, Image};
use coalesce::conv::conv2d::correlation_taps_2d;
use coalesce::conv::reference_batch::filter2d;
use coalesce::conv::{ConvOp, gaussian_truncated, parse_boundary};

/// The fewest cases the script writes (it wrote 359).
const MIN_CASES: usize = 359;

#[derive(serde::Deserialize)]
struct Fixture {
    scipy: String,
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    kind: String,
    height: usize,
    width: usize,
    input: Vec<f64>,
    mask: Option<Vec<f64>>,
    mh: Option<usize>,
    mw: Option<usize>,
    sigma_y: Option<f64>,
    sigma_x: Option<f64>,
    truncate: Option<f64>,
    origin_y: isize,
    origin_x: isize,
    mode: String,
    cval: f64,
    output: Vec<f64>,
}

impl Case {
    /// The parameters, for failure messages.
    fn describe(&self) -> String {
        let filter = match (&self.mask, self.mh, self.mw, self.sigma_y, self.sigma_x, self.truncate) {
            (Some(m), Some(mh), Some(mw), ..) => format!("mask {mh}x{mw} {m:?}"),
            (None, _, _, Some(sy), Some(sx), Some(t)) => format!("sigma=({sy}, {sx}) truncate={t}"),
            _ => "no mask or sigma".into(),
        };
        format!(
            "{} {}x{} origin=({}, {}) mode={} cval={} {filter}",
            self.kind, self.height, self.width, self.origin_y, self.origin_x, self.mode, self.cval
        )
    }

    /// `Correlate` or `Convolve` for the mask cases, `None` for the Gaussian.
    fn op(&self) -> Option<ConvOp> {
        match self.kind.as_str() {
            "correlate" => Some(ConvOp::Correlate),
            "convolve" => Some(ConvOp::Convolve),
            _ => None,
        }
    }

    /// The mask as scipy took it, with `(mw, mh)`.
    fn mask(&self) -> (&[f64], usize, usize) {
        let what = self.describe();
        let mask = self.mask.as_deref().unwrap_or_else(|| panic!("{what}: no mask"));
        let (mw, mh) = (self.mw.expect("mw"), self.mh.expect("mh"));
        assert_eq!(mask.len(), mw * mh, "{what}: mask length");
        (mask, mw, mh)
    }

    /// The tolerance for a result computed in another order than scipy's:
    /// `1e-12 · (1 + Σ|input| + |cval|)`.
    fn tolerance(&self) -> f64 {
        1e-12 * (1.0 + self.input.iter().map(|v| v.abs()).sum::<f64>() + self.cval.abs())
    }
}

fn fixture() -> Fixture {
    let fixture: Fixture = serde_json::from_str(include_str!("fixtures/scipy_params2d.json")).unwrap();
    assert!(
        fixture.cases.len() >= MIN_CASES,
        "fixture has {} cases, expected at least {MIN_CASES}",
        fixture.cases.len()
    );
    fixture
}

/// The reference reproduces every case of the fixture: correlate and
/// convolve within `1e-12 · (1 + |scipy's|)` plus the reference's own
/// bound, the Gaussian (one 2D pass over the outer product, where scipy
/// makes two 1D passes) within `1e-12 · (1 + Σ|input| + |cval|)`.
#[test]
fn reference_matches_scipy_params2d() {
    let fixture = fixture();
    let mut kinds = [0usize; 3];
    for (k, c) in fixture.cases.iter().enumerate() {
        let what = format!("case {k} (scipy {}): {}", fixture.scipy, c.describe());
        assert_eq!(c.input.len(), c.height * c.width, "{what}: input length");
        assert_eq!(c.output.len(), c.height * c.width, "{what}: output length");
        let (taps, (mw, mh), (left, top)) = match c.op() {
            Some(op) => {
                kinds[if op == ConvOp::Correlate { 0 } else { 1 }] += 1;
                let (mask, mw, mh) = c.mask();
                let (taps, _, _) = correlation_taps_2d(op, mask, mw, mh);
                let left = left_for_origin(mw, c.origin_x, op).unwrap_or_else(|e| panic!("{what}: {e}"));
                let top = left_for_origin(mh, c.origin_y, op).unwrap_or_else(|e| panic!("{what}: {e}"));
                (taps, (mw, mh), (left, top))
            }
            None => {
                assert_eq!(c.kind, "gaussian_filter", "{what}: unknown kind");
                kinds[2] += 1;
                assert_eq!((c.origin_y, c.origin_x), (0, 0), "{what}: gaussian_filter with an origin");
                let truncate = c.truncate.unwrap_or_else(|| panic!("{what}: no truncate"));
                let sx = c.sigma_x.unwrap_or_else(|| panic!("{what}: no sigma_x"));
                let sy = c.sigma_y.unwrap_or_else(|| panic!("{what}: no sigma_y"));
                let gx = gaussian_truncated::<f64>(sx, truncate).unwrap_or_else(|e| panic!("{what}: {e}"));
                let gy = gaussian_truncated::<f64>(sy, truncate).unwrap_or_else(|e| panic!("{what}: {e}"));
                let taps: Vec<f64> = gy.iter().flat_map(|y| gx.iter().map(move |x| x * y)).collect();
                let (mw, mh) = (gx.len(), gy.len());
                (taps, (mw, mh), (mw / 2, mh / 2))
            }
        };
        let mode = parse_boundary(&c.mode).unwrap_or_else(|e| panic!("{what}: {e}"));
        let img = Image::new(c.width, c.height, 1).unwrap();
        let got = filter2d::<f64>(&c.input, img, &taps, (mw, mh), (left, top), mode, c.cval)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(got.len(), c.output.len(), "{what}: output length");
        let gaussian = c.op().is_none();
        for (i, (g, want)) in got.iter().zip(&c.output).enumerate() {
            let tol = if gaussian { c.tolerance() } else { 1e-12 * (1.0 + want.abs()) + g.bound };
            assert!(
                (g.value - want).abs() <= tol,
                "{what}: output {i} (y {}, x {}): {} (± {tol:e}) vs scipy {want}",
                i / c.width,
                i % c.width,
                g.value,
            );
        }
    }
    assert!(kinds.iter().all(|&n| n > 0), "fixture lacks a kind: {kinds:?} (correlate, convolve, gaussian_filter)");
}

/// Runs `filter` on `input` laid out as `img` (output poisoned first).
fn run_gpu(gpu: &coalesce::Gpu, filter: &Filter2d<f64>, input: &[f64], img: Image, what: &str) -> Vec<f64> {
    let d_in = gpu.upload(input).unwrap();
    let mut d_out = gpu.alloc_zeroed::<f64>(input.len()).unwrap();
    d_out.fill_bytes(common::POISON).unwrap();
    filter.run(&d_in.as_view(), &mut d_out.as_view_mut(), img).unwrap_or_else(|e| panic!("{what}: {e}"));
    d_out.to_vec().unwrap()
}

/// Channel `c` of every pixel of `got` (`channels` interleaved) against
/// scipy's output × `(1 + c)` − `c · shift`, within `tol · (1 + c)`.
fn check_channels(got: &[f64], c: &Case, channels: usize, shift: f64, tol: f64, what: &str) {
    assert_eq!(got.len(), c.output.len() * channels, "{what}: output length");
    for (i, want) in c.output.iter().enumerate() {
        for ch in 0..channels {
            let s = (1 + ch) as f64;
            let expect = want * s - ch as f64 * shift;
            let g = got[i * channels + ch];
            assert!(
                (g - expect).abs() <= tol * s,
                "{what}: output {i} (y {}, x {}) channel {ch}: {g} vs {expect} (scipy {want} x {s} - {ch} x {shift}) \
                 (± {:e})",
                i / c.width,
                i % c.width,
                tol * s
            );
        }
    }
}

/// A fixture case's filter, built from scipy's parameters as given.
fn gpu_filter(gpu: &coalesce::Gpu, c: &Case) -> coalesce::Result<Filter2d<f64>> {
    let mode = parse_boundary(&c.mode).expect("fixture mode");
    match c.op() {
        Some(op) => {
            let (mask, mw, mh) = c.mask();
            Filter2d::<f64>::new(gpu, mask, mw, mh, op, mode)?.with_cval(c.cval).with_origin(c.origin_y, c.origin_x)
        }
        None => Ok(Filter2d::<f64>::gaussian(
            gpu,
            c.sigma_x.expect("sigma_x"),
            c.sigma_y.expect("sigma_y"),
            c.truncate.expect("truncate"),
            mode,
        )?
        .with_cval(c.cval)),
    }
}

/// Every fixture case on the GPU, f64, within `1e-12 · (1 + Σ|input| +
/// |cval|)` of scipy (× `(1 + c)` for channel `c`): one channel; 3 and 4
/// interleaved channels, channel `c` the input × `(1 + c)` − `c · cval`,
/// with one mask for all; and (correlate and convolve) one mask per
/// channel, channel `c`'s the mask × `(1 + c)`, over unscaled copies.
#[test]
fn gpu_matches_scipy_params2d() {
    let gpu = gpu_or_skip!();
    let fixture = fixture();
    for (k, c) in fixture.cases.iter().enumerate() {
        let what = format!("case {k}: {}", c.describe());
        let tol = c.tolerance();
        let filter = gpu_filter(&gpu, c).unwrap_or_else(|e| panic!("{what}: {e}"));
        let img = Image::new(c.width, c.height, 1).unwrap();
        let got = run_gpu(&gpu, &filter, &c.input, img, &what);
        check_channels(&got, c, 1, 0.0, tol, &what);
        // Σ of the correlation taps: the mask's sum (the Gaussian's ≈ 1).
        let shift = c.cval * filter.taps().iter().sum::<f64>();
        for channels in [3, 4] {
            let img = Image::new(c.width, c.height, channels).unwrap();
            // One mask for all channels, channel c scaled by 1 + c about
            // cval (see the module's doc).
            let cval = c.cval;
            let scaled: Vec<f64> = c
                .input
                .iter()
                .flat_map(|&v| (0..channels).map(move |ch| v * (1 + ch) as f64 - ch as f64 * cval))
                .collect();
            let got = run_gpu(&gpu, &filter, &scaled, img, &what);
            check_channels(&got, c, channels, shift, tol, &format!("{what} ({channels} channels, one mask)"));
            // One mask per channel, channel c's scaled by 1 + c.
            let Some(op) = c.op() else { continue };
            let (mask, mw, mh) = c.mask();
            let masks: Vec<f64> = (0..channels).flat_map(|ch| mask.iter().map(move |m| m * (1 + ch) as f64)).collect();
            let mode = parse_boundary(&c.mode).expect("fixture mode");
            let per = Filter2d::<f64>::per_channel(&gpu, &masks, mw, mh, op, mode)
                .and_then(|f| f.with_cval(c.cval).with_origin(c.origin_y, c.origin_x))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let copies: Vec<f64> = c.input.iter().flat_map(|&v| std::iter::repeat_n(v, channels)).collect();
            let got = run_gpu(&gpu, &per, &copies, img, &what);
            check_channels(&got, c, channels, 0.0, tol, &format!("{what} ({channels} channels, per-channel masks)"));
        }
    }
}
