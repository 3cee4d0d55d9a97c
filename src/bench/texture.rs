//! The `texture` suite (lesson 004, texture memory): the 2D convolution
//! read through the texture unit against the shared-memory tiled
//! convolution, and bilinear resizing by the texture unit.
//!
//! * **Convolution**: one random `image × image` `f32` image (8192² by
//!   default: 256 MiB, five times the H100's L2), each `k × k` mask, each
//!   boundary mode the texture unit reproduces (zero = border 0, nearest
//!   = clamp, wrap, reflect = mirror). Variants: the texture kernels
//!   ([`TexConvVariant`]) over a CUDA array and over a pitched buffer, and
//!   the shared-memory kernels `Conv2d` `tiled` (the lesson's) and `fast`
//!   (the project's fastest). Every output is checked against
//!   `reference2d` (each output within its `Checked` bound: the float
//!   rounding of a `k²`-term sum) before timing.
//! * **DRAM floor**: the image read once plus the output written once, at
//!   the `cuMemcpyDtoD` bandwidth measured in the same run; `% floor` =
//!   floor time / median time. `tex/tiled` and `tex/fast` are ratios of
//!   median times (below 1: the texture kernel is faster).
//! * **Resize**: square `in → out` resamplings with bilinear filtering,
//!   clamp addressing; bytes = input read once + output written once;
//!   every output checked against the texture unit's CPU model
//!   (`texture::model`, 9-bit weights as the tolerance).
//!
//! Units: GB = 1e9 bytes; bytes moved = bytes read + bytes written.

use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::copy::DeviceSummary;
use super::harness::{self, DtodReference, Settings, Stats};
use super::report::{Series, Table, plot_svg, write_json};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::conv::reference::{Checked, compare};
use crate::conv::reference2d::{Image, conv2d_checked};
use crate::conv::{Boundary, Conv2d, Conv2dVariant, ConvOp};
use crate::texture::model::{self, Texels};
use crate::texture::{AddressMode, FilterMode, TexConv2d, TexConvVariant, Texture2d, TextureDesc};
use crate::{DeviceBuffer, Gpu};

/// The suite's entry for `bench list`.
pub const SUITE: SuiteInfo = SuiteInfo {
    name: "texture",
    about: "texture memory: 2D convolution via the texture unit vs shared-memory tiling, bilinear resize",
};

/// The poison byte outputs are filled with before each verified launch.
pub const POISON: u8 = 0xA5;

/// A convolution variant of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvVariant {
    /// A texture kernel over a CUDA array.
    Array(TexConvVariant),
    /// A texture kernel over a pitched buffer.
    Pitched(TexConvVariant),
    /// A shared-memory kernel of `Conv2d`.
    Shared(Conv2dVariant),
}

impl ConvVariant {
    /// Every variant the suite knows, in table order.
    pub const ALL: [ConvVariant; 6] = [
        ConvVariant::Array(TexConvVariant::Direct),
        ConvVariant::Array(TexConvVariant::Blocked),
        ConvVariant::Pitched(TexConvVariant::Direct),
        ConvVariant::Pitched(TexConvVariant::Blocked),
        ConvVariant::Shared(Conv2dVariant::Tiled),
        ConvVariant::Shared(Conv2dVariant::Fast),
    ];

    /// `tex`, `tex_blocked`, `tex_pitched`, `tex_blocked_pitched`,
    /// `tiled`, `fast`.
    pub fn name(self) -> String {
        match self {
            ConvVariant::Array(v) => v.name().to_string(),
            ConvVariant::Pitched(v) => format!("{}_pitched", v.name()),
            ConvVariant::Shared(v) => v.name().to_string(),
        }
    }

    /// True for the texture kernels.
    pub fn is_texture(self) -> bool {
        !matches!(self, ConvVariant::Shared(_))
    }
}

impl std::str::FromStr for ConvVariant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ConvVariant::ALL.into_iter().find(|v| v.name() == s).ok_or_else(|| {
            let names: Vec<String> = ConvVariant::ALL.iter().map(|v| v.name()).collect();
            format!("unknown variant `{s}` ({})", names.join(", "))
        })
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct TextureOptions {
    /// Side of the square convolution image (0 skips the convolution).
    pub image: usize,
    /// Square mask sizes (`k` for `k × k`).
    pub masks: Vec<usize>,
    /// Boundary modes (each must have an address mode).
    pub modes: Vec<Boundary>,
    /// Convolution variants.
    pub variants: Vec<ConvVariant>,
    /// Resize cases, `(input side, output side)`.
    pub resize: Vec<(usize, usize)>,
    /// Timing settings.
    pub settings: Settings,
    /// Where JSON and SVG go.
    pub out_dir: PathBuf,
    /// Seed of the random images and masks.
    pub seed: u64,
}

impl Default for TextureOptions {
    fn default() -> Self {
        TextureOptions {
            image: 8192,
            masks: vec![3, 5, 7, 11],
            modes: vec![Boundary::Zero, Boundary::Nearest, Boundary::Wrap, Boundary::Reflect],
            variants: ConvVariant::ALL.to_vec(),
            resize: vec![(8192, 4096), (8192, 2731), (4096, 8192), (2048, 8192)],
            settings: Settings::default(),
            out_dir: PathBuf::from("bench-out"),
            seed: 2026,
        }
    }
}

impl TextureOptions {
    /// A short smoke run.
    pub fn quick() -> Self {
        TextureOptions {
            image: 2048,
            masks: vec![3, 5],
            modes: vec![Boundary::Zero, Boundary::Wrap],
            resize: vec![(2048, 1024), (1024, 2048)],
            settings: Settings { reps: 5, ..Settings::default() },
            ..TextureOptions::default()
        }
    }
}

/// One convolution variant on one mask and mode.
#[derive(Clone, Debug, Serialize)]
pub struct ConvRow {
    /// Mask side.
    pub mask: usize,
    /// Boundary mode.
    pub mode: &'static str,
    /// Image side.
    pub side: usize,
    /// Variant name.
    pub variant: String,
    /// Kernel that ran.
    pub kernel: String,
    /// Texture fetches per output (texture variants).
    pub fetches_per_output: Option<f64>,
    /// Timing.
    pub stats: Stats,
    /// (image + output bytes) / median time, GB/s.
    pub gbps: f64,
    /// Floor time / median time.
    pub of_floor: f64,
    /// This median / the tiled kernel's (same mask and mode).
    pub over_tiled: Option<f64>,
    /// This median / the fast kernel's.
    pub over_fast: Option<f64>,
}

/// One resize.
#[derive(Clone, Debug, Serialize)]
pub struct ResizeRow {
    /// Input side.
    pub input: usize,
    /// Output side.
    pub output: usize,
    /// Filter.
    pub filter: &'static str,
    /// Timing.
    pub stats: Stats,
    /// Output pixels per second, 1e9.
    pub gpixels_per_s: f64,
    /// (input + output bytes) / median time, GB/s.
    pub gbps: f64,
    /// Floor time / median time.
    pub of_floor: f64,
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct TextureReport {
    /// The device.
    pub device: DeviceSummary,
    /// The DtoD reference the floor comes from.
    pub dtod: DtodReference,
    /// Timing settings.
    pub settings: Settings,
    /// Seed.
    pub seed: u64,
    /// Convolution rows.
    pub conv: Vec<ConvRow>,
    /// Resize rows.
    pub resize: Vec<ResizeRow>,
}

/// Runs the suite; writes `texture.json` and `texture-conv.svg`.
pub fn run(gpu: &Gpu, opts: &TextureOptions) -> BenchResult<TextureReport> {
    for &m in &opts.modes {
        crate::texture::conv::address_for(m).map_err(|e| BenchError::Options(e.to_string()))?;
    }
    if opts.image > 0 && (opts.masks.is_empty() || opts.modes.is_empty() || opts.variants.is_empty()) {
        return Err(BenchError::Options("no masks, modes or variants to run".into()));
    }
    let device = DeviceSummary::of(gpu);
    let dtod = harness::measure_dtod(gpu, &opts.settings, 512 << 20)?;
    println!("texture: {} — cuMemcpyDtoD {:.0} GB/s (512 MiB), the floor's bandwidth", device.name, dtod.gbps);
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let conv = if opts.image > 0 { run_conv(gpu, opts, &dtod, &mut rng)? } else { Vec::new() };
    let resize = run_resize(gpu, opts, &dtod, &mut rng)?;
    let report = TextureReport { device, dtod, settings: opts.settings, seed: opts.seed, conv, resize };
    if !report.conv.is_empty() {
        println!("{}", conv_table(&report.conv).render());
    }
    if !report.resize.is_empty() {
        println!("{}", resize_table(&report.resize).render());
    }
    report.write(&opts.out_dir)?;
    Ok(report)
}

fn random_image(rng: &mut StdRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// Poisons `out`, runs `f` once, and checks the dense `side × side`
/// result against `want`.
fn verify(
    out: &mut DeviceBuffer<f32>,
    want: &[Checked],
    what: &str,
    f: impl FnOnce(&mut DeviceBuffer<f32>) -> BenchResult<()>,
) -> BenchResult<()> {
    out.fill_bytes(POISON)?;
    f(out)?;
    let got = out.to_vec()?;
    compare(&got, want).map_err(|(m, bad)| BenchError::Verification {
        suite: "texture",
        message: format!(
            "{what}: {bad} wrong outputs; first: output {} = {:e}, want {:e} ± {:e}",
            m.index, m.got, m.want, m.bound
        ),
    })
}

fn run_conv(gpu: &Gpu, opts: &TextureOptions, dtod: &DtodReference, rng: &mut StdRng) -> BenchResult<Vec<ConvRow>> {
    let side = opts.image;
    let count = side * side;
    let host = random_image(rng, count);
    let linear = gpu.upload(&host)?;
    let array = gpu.upload_array(&host, side, side)?;
    let pitched = gpu.upload_pitched(&host, side, side)?;
    let mut out = gpu.alloc_zeroed::<f32>(count)?;
    let bytes = 2.0 * (count * 4) as f64;
    let mut rows = Vec::new();
    for &k in &opts.masks {
        let mask: Vec<f32> = (0..k * k).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        for &mode in &opts.modes {
            let want = conv2d_checked(Image::dense(&host, side, side), &mask, k, k, ConvOp::Correlate, mode)?;
            let shared = Conv2d::new(gpu, &mask, k, k, ConvOp::Correlate, mode)?;
            let tex_conv = TexConv2d::new(gpu, &mask, k, k, ConvOp::Correlate, mode)?;
            let tex_array = tex_conv.texture(&array)?;
            let tex_pitched = tex_conv.texture_pitched(&pitched)?;
            let first = rows.len();
            for &variant in &opts.variants {
                let texture: Option<(&Texture2d<'_>, TexConvVariant)> = match variant {
                    ConvVariant::Array(v) => Some((&tex_array, v)),
                    ConvVariant::Pitched(v) => Some((&tex_pitched, v)),
                    ConvVariant::Shared(_) => None,
                };
                let launch = |out: &mut DeviceBuffer<f32>| -> BenchResult<String> {
                    Ok(match (variant, texture) {
                        (_, Some((tex, v))) => tex_conv.run(v, tex, &mut out.as_view_mut(), side)?.kernel.to_string(),
                        (ConvVariant::Shared(v), None) => shared
                            .run(v, &linear.as_view(), &mut out.as_view_mut(), side, side, side)?
                            .kernel
                            .to_string(),
                        _ => unreachable!("texture variants carry a texture"),
                    })
                };
                let what = format!("{} {k}x{k} {} on {side}^2", variant.name(), mode.name());
                let mut kernel = String::new();
                verify(&mut out, &want, &what, |o| {
                    kernel = launch(o)?;
                    Ok(())
                })?;
                let stats = harness::measure(gpu, &opts.settings, |_| launch(&mut out).map(|_| ()))?;
                let fetches = match texture {
                    Some((_, v)) => Some(tex_conv.plan(v, side, side)?.fetches_per_output),
                    None => None,
                };
                rows.push(ConvRow {
                    mask: k,
                    mode: mode.name(),
                    side,
                    variant: variant.name(),
                    kernel,
                    fetches_per_output: fetches,
                    stats,
                    gbps: harness::gbps(bytes, stats.median_ms),
                    of_floor: dtod.floor_ms(bytes) / stats.median_ms,
                    over_tiled: None,
                    over_fast: None,
                });
            }
            let median_of = |name: &str| rows[first..].iter().find(|r| r.variant == name).map(|r| r.stats.median_ms);
            let (tiled, fast) = (median_of("tiled"), median_of("fast"));
            for r in &mut rows[first..] {
                r.over_tiled = tiled.map(|t| r.stats.median_ms / t);
                r.over_fast = fast.map(|f| r.stats.median_ms / f);
            }
        }
    }
    Ok(rows)
}

fn run_resize(gpu: &Gpu, opts: &TextureOptions, dtod: &DtodReference, rng: &mut StdRng) -> BenchResult<Vec<ResizeRow>> {
    let mut rows = Vec::new();
    let desc = TextureDesc::for_mode(AddressMode::Clamp, FilterMode::Linear);
    for &(input, output) in &opts.resize {
        if input == 0 || output == 0 {
            return Err(BenchError::Options(format!("resize {input} -> {output}: sides must be at least 1")));
        }
        let host = random_image(rng, input * input);
        let array = gpu.upload_array(&host, input, input)?;
        let tex = array.texture(&desc)?;
        let mut out = gpu.alloc_zeroed::<f32>(output * output)?;
        let want = model::resize(Texels { data: &host, width: input, height: input }, &desc, output, output);
        let what = format!("resize {input}^2 -> {output}^2");
        verify(&mut out, &want, &what, |o| {
            tex.resize(&mut o.as_view_mut(), output, output, output)?;
            Ok(())
        })?;
        let stats = harness::measure(gpu, &opts.settings, |_| {
            tex.resize(&mut out.as_view_mut(), output, output, output).map(|_| ())
        })?;
        let bytes = ((input * input + output * output) * 4) as f64;
        rows.push(ResizeRow {
            input,
            output,
            filter: desc.filter.name(),
            stats,
            gpixels_per_s: (output * output) as f64 / (stats.median_ms * 1e-3) / 1e9,
            gbps: harness::gbps(bytes, stats.median_ms),
            of_floor: dtod.floor_ms(bytes) / stats.median_ms,
        });
    }
    Ok(rows)
}

/// The convolution table.
pub fn conv_table(rows: &[ConvRow]) -> Table {
    let mut t = Table::new([
        "mask",
        "mode",
        "image",
        "variant",
        "kernel",
        "fetch/out",
        "median ms",
        "GB/s",
        "% floor",
        "/ tiled",
        "/ fast",
    ]);
    let ratio = |q: Option<f64>| q.map_or("-".to_string(), |q| format!("{q:.2}"));
    for r in rows {
        t.row([
            format!("{0}x{0}", r.mask),
            r.mode.to_string(),
            format!("{0}^2", r.side),
            r.variant.clone(),
            r.kernel.clone(),
            r.fetches_per_output.map_or("-".into(), |f| format!("{f:.2}")),
            format!("{:.4}", r.stats.median_ms),
            format!("{:.0}", r.gbps),
            format!("{:.1}%", r.of_floor * 100.0),
            ratio(r.over_tiled),
            ratio(r.over_fast),
        ]);
    }
    t
}

/// The resize table.
pub fn resize_table(rows: &[ResizeRow]) -> Table {
    let mut t = Table::new(["input", "output", "filter", "median ms", "Gpixel/s", "GB/s", "% floor"]);
    for r in rows {
        t.row([
            format!("{0}^2", r.input),
            format!("{0}^2", r.output),
            r.filter.to_string(),
            format!("{:.4}", r.stats.median_ms),
            format!("{:.1}", r.gpixels_per_s),
            format!("{:.0}", r.gbps),
            format!("{:.1}%", r.of_floor * 100.0),
        ]);
    }
    t
}

impl TextureReport {
    /// Writes `texture.json` and `texture-conv.svg` (% of the floor
    /// against the mask's taps, per variant, in the first mode that ran).
    pub fn write(&self, dir: &Path) -> BenchResult<PathBuf> {
        let json = dir.join("texture.json");
        write_json(&json, self)?;
        if let Some(mode) = self.conv.first().map(|r| r.mode) {
            let mut series: Vec<Series> = Vec::new();
            for r in self.conv.iter().filter(|r| r.mode == mode) {
                let point = ((r.mask * r.mask) as f64, r.of_floor * 100.0);
                match series.iter_mut().find(|s| s.name == r.variant) {
                    Some(s) => s.points.push(point),
                    None => series.push(Series { name: r.variant.clone(), points: vec![point] }),
                }
            }
            let svg = dir.join("texture-conv.svg");
            let title = format!("2D convolution on {0}^2, boundary {mode}: share of the DRAM floor", self.conv[0].side);
            plot_svg(&svg, &title, "mask taps (k x k)", "% of floor", &series)?;
            println!("texture: wrote {} and {}", json.display(), svg.display());
        } else {
            println!("texture: wrote {}", json.display());
        }
        Ok(json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_names_parse() {
        for v in ConvVariant::ALL {
            assert_eq!(v.name().parse::<ConvVariant>().unwrap(), v);
        }
        assert_eq!(ConvVariant::ALL.iter().filter(|v| v.is_texture()).count(), 4);
        assert!("basic".parse::<ConvVariant>().is_err());
    }

    #[test]
    fn defaults_cover_the_lesson() {
        let d = TextureOptions::default();
        assert_eq!(d.image, 8192);
        assert!([3, 5, 7].iter().all(|k| d.masks.contains(k)));
        assert_eq!(d.modes.len(), 4);
        assert!(d.resize.iter().any(|&(i, o)| i > o) && d.resize.iter().any(|&(i, o)| i < o));
        // Every default image is beyond the H100's 50 MiB L2.
        assert!(d.image * d.image * 4 > 50 << 20);
    }

    #[test]
    fn tables_render() {
        let stats = Stats::from_samples(&[1.0, 2.0, 3.0], 1).unwrap();
        let row = ConvRow {
            mask: 5,
            mode: "zero",
            side: 8192,
            variant: "tex".into(),
            kernel: "tex_conv2d_f32".into(),
            fetches_per_output: Some(25.0),
            stats,
            gbps: 268.4,
            of_floor: 0.09,
            over_tiled: Some(1.5),
            over_fast: None,
        };
        let text = conv_table(&[row]).render();
        assert!(
            text.contains("5x5") && text.contains("25.00") && text.contains("9.0%") && text.contains("1.50"),
            "{text}"
        );
    }
}
