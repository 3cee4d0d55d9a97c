//! The `texture` suite (lesson 004, texture memory): the 2D convolution read through the texture unit against
//! the shared-memory tiled convolution, and bilinear resizing by the texture unit.
//!
//! * **Convolution**: a random `image²` `f32` image (8192² by default: 256 MiB, five times the H100's L2), each
//!   `k × k` mask and boundary mode the texture unit reproduces (zero = border 0, nearest = clamp, wrap,
//!   reflect = mirror): the texture kernels ([`TexConvVariant`]) over a CUDA array and (`_pitched`) a pitched
//!   buffer, `Conv2d`'s `tiled` (the lesson's) and `fast` kernels. `/ tiled`, `/ fast`: ratios of median times.
//! * **Resize**: square `in → out` resamplings, bilinear filtering, clamp addressing.
//! * **Floor**: input read once + output written once at the `cuMemcpyDtoD` bandwidth (512 MiB, same run).
//! * **Verification** of poisoned outputs before timing, against `reference2d` (within the rounding bound of
//!   each `k²`-term sum) and the texture unit's CPU model (`texture::model`). No goal.

use rand::{Rng, SeedableRng};

use super::harness::gbps;
use super::run::{Rec, Run, Suite};
use super::{BenchError, BenchResult, SuiteInfo, report::Series};
use crate::conv::reference::{Checked, compare};
use crate::conv::reference2d::{Image, conv2d_checked};
use crate::conv::{Boundary, Conv2d, ConvOp, parse_boundary};
use crate::texture::{AddressMode, FilterMode, TexConv2d, TexConvVariant, TextureDesc, conv::address_for, model};
use crate::{DeviceViewMut, PtxModule};

/// The convolution variants, in table order.
const VARIANTS: [&str; 6] = ["tex", "tex_blocked", "tex_pitched", "tex_blocked_pitched", "tiled", "fast"];
const RESIZE: [(usize, usize); 4] = [(8192, 4096), (8192, 2731), (4096, 8192), (2048, 8192)];

/// `coalesce bench texture`.
#[derive(clap::Args, Clone, Debug)]
pub struct Texture {
    /// Side of the square convolution image; 0 skips the convolution [default: 8192, 2048 with --quick].
    #[arg(long)]
    image: Option<usize>,
    /// Square mask sizes, comma-separated (5 = 5x5) [default: 3,5,7,11; 3,5 with --quick].
    #[arg(long, value_delimiter = ',')]
    masks: Option<Vec<usize>>,
    /// Boundary modes, comma-separated (zero, nearest, wrap, reflect) [default: all four].
    #[arg(long, value_delimiter = ',', value_parser = parse_boundary)]
    modes: Option<Vec<Boundary>>,
    /// Convolution variants, comma-separated (tex, tex_blocked, tex_pitched, tex_blocked_pitched, tiled, fast) [default: all].
    #[arg(long, value_delimiter = ',', value_parser = VARIANTS, hide_possible_values = true)]
    variants: Option<Vec<String>>,
    /// Resizes, comma-separated IN:OUT square sides [default: 8192:4096,8192:2731,4096:8192,2048:8192].
    #[arg(long, value_delimiter = ',', value_parser = parse_resize, conflicts_with = "no_resize")]
    resize: Option<Vec<(usize, usize)>>,
    /// Skip the resize part.
    #[arg(long)]
    no_resize: bool,
    /// Seed of the random images and masks.
    #[arg(long, default_value_t = 2026)]
    seed: u64,
    #[command(flatten)]
    common: super::run::Common,
}

/// `8192:4096` (both sides at least 1).
pub fn parse_resize(text: &str) -> Result<(usize, usize), String> {
    let (a, b) = text.split_once(':').ok_or_else(|| format!("`{text}` is not IN:OUT"))?;
    let side = |s: &str| s.trim().parse().ok().filter(|&n| n > 0).ok_or(format!("`{s}` in `{text}` is not a side"));
    Ok((side(a)?, side(b)?))
}

impl Suite for Texture {
    const INFO: SuiteInfo = SuiteInfo {
        name: "texture",
        about: "texture memory: 2D convolution via the texture unit vs shared-memory tiling, bilinear resize",
    };
    const UNITS: &'static str = "GB = 1e9 bytes; bytes moved = input read once + output written once; times in ms \
                                 per launch; % floor = those bytes at cuMemcpyDtoD speed / median time";

    fn common(&self) -> &super::run::Common {
        &self.common
    }

    fn run(&self, run: &mut Run<'_>) -> BenchResult<()> {
        use Boundary::{Nearest, Reflect, Wrap, Zero};
        let side = run.pick(self.image, 8192, 2048);
        let masks = run.pick(self.masks.clone(), vec![3, 5, 7, 11], vec![3, 5]);
        let modes = run.pick(self.modes.clone(), vec![Zero, Nearest, Wrap, Reflect], vec![Zero, Wrap]);
        let resize = run.pick(self.resize.clone(), RESIZE.to_vec(), vec![(2048, 1024), (1024, 2048)]);
        let variants = self.variants.clone().unwrap_or(VARIANTS.map(String::from).to_vec());
        modes.iter().try_for_each(|&m| address_for(m).map(drop)).map_err(|e| run.bad_options(e.to_string()))?;
        run.param("seed", self.seed);
        let (dtod, gpu, mut rng) = (run.dtod(512 << 20)?, run.gpu, rand::rngs::StdRng::seed_from_u64(self.seed));
        run.line(format!("cuMemcpyDtoD {:.0} GB/s (512 MiB), the floor's bandwidth", dtod.gbps));
        let mut random = |n: usize| -> Vec<f32> { (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect() };
        if side > 0 {
            let (host, op, bytes) = (random(side * side), ConvOp::Correlate, 8.0 * (side * side) as f64);
            let masks: Vec<(usize, Vec<f32>)> = masks.iter().map(|&k| (k, random(k * k))).collect();
            let (linear, array) = (gpu.upload(&host)?, gpu.upload_array(&host, side, side)?);
            let (pitched, mut out) = (gpu.upload_pitched(&host, side, side)?, gpu.alloc_zeroed::<f32>(side * side)?);
            let mut series: Vec<Series> = variants.iter().map(|v| Series { name: v.clone(), points: vec![] }).collect();
            let (t, lin, floor) = (run.table("conv", ""), linear.as_view(), dtod.floor_ms(bytes));
            for (&(k, ref mask), &mode) in masks.iter().flat_map(|m| modes.iter().map(move |b| (m, b))) {
                let want = conv2d_checked(Image::dense(&host, side, side), mask, k, k, op, mode)?;
                let (shared, tex) =
                    (Conv2d::new(gpu, mask, k, k, op, mode)?, TexConv2d::new(gpu, mask, k, k, op, mode)?);
                let (on_array, on_pitched) = (tex.texture(&array)?, tex.texture_pitched(&pitched)?);
                let mut done = Vec::new();
                for (i, name) in variants.iter().enumerate() {
                    let (base, pitch) = name.strip_suffix("_pitched").map_or((name.as_str(), false), |b| (b, true));
                    let (tv, on) = (base.parse::<TexConvVariant>().ok(), if pitch { &on_pitched } else { &on_array });
                    let what = format!("{name} {k}x{k} {} on {side}^2", mode.name());
                    let launch = |_: Option<&PtxModule>, o: &mut DeviceViewMut<'_, f32>| match tv {
                        Some(v) => Ok(tex.run(v, on, o, side)?.kernel),
                        None => Ok(shared
                            .run(base.parse().map_err(BenchError::Options)?, &lin, o, side, side, side)?
                            .kernel),
                    };
                    let check = |_: &str, got: Vec<f32>| wrong(&what, &got, &want);
                    let (kernel, stats, _) = run.verified(&mut out.as_view_mut(), None, launch, check)?;
                    let fetches = tv.map(|v| tex.plan(v, side, side)).transpose()?.map(|p| p.fetches_per_output);
                    let ms = stats.median_ms;
                    series[i].points.extend((mode == modes[0]).then_some(((k * k) as f64, 100.0 * floor / ms)));
                    let rec = Rec::new().text("mask", format!("{k}x{k}")).text("mode", mode.name());
                    let rec = rec.text("image", format!("{side}^2")).text("variant", name).text("kernel", kernel);
                    let rec = rec.num("fetch/out", fetches, 2).num("median ms", ms, 4).num("GB/s", gbps(bytes, ms), 0);
                    done.push((rec.pct("% floor", floor / ms).json("stats", stats), ms));
                }
                let [tiled, fast] = ["tiled", "fast"].map(|n| variants.iter().position(|v| v == n).map(|i| done[i].1));
                for (r, ms) in done {
                    run.row(t, r.num("/ tiled", tiled.map(|t| ms / t), 2).num("/ fast", fast.map(|f| ms / f), 2));
                }
            }
            let title = format!("2D convolution on {side}^2, boundary {}: share of the DRAM floor", modes[0].name());
            run.plot("texture-conv", &title, "mask taps (k x k)", "% of floor", &series)?;
        }
        let (desc, t) = (TextureDesc::for_mode(AddressMode::Clamp, FilterMode::Linear), run.table("resize", ""));
        for &(input, output) in if self.no_resize { &[][..] } else { &resize } {
            let host = random(input * input);
            let (array, mut out) = (gpu.upload_array(&host, input, input)?, gpu.alloc_zeroed::<f32>(output * output)?);
            let want = model::resize(model::Texels { data: &host, width: input, height: input }, &desc, output, output);
            let (tex, what) = (array.texture(&desc)?, format!("resize {input}^2 -> {output}^2"));
            let launch = |_: Option<&PtxModule>, o: &mut DeviceViewMut<'_, f32>| {
                Ok(tex.resize(o, output, output, output)?.kernel)
            };
            let (_, stats, _) =
                run.verified(&mut out.as_view_mut(), None, launch, |_, got| wrong(&what, &got, &want))?;
            let (bytes, ms) = (((input * input + output * output) * 4) as f64, stats.median_ms);
            let rec = Rec::new().text("input", format!("{input}^2")).text("output", format!("{output}^2"));
            let rec = rec.text("filter", desc.filter.name()).num("median ms", ms, 4);
            let rec = rec.num("Gpixel/s", (output * output) as f64 / ms / 1e6, 1).num("GB/s", gbps(bytes, ms), 0);
            run.row(t, rec.pct("% floor", dtod.floor_ms(bytes) / ms).json("stats", stats));
        }
        Ok(())
    }
}

/// What is wrong with `got` against `want` (`None`: nothing), for [`Run::verified`].
fn wrong(what: &str, got: &[f32], want: &[Checked]) -> Option<String> {
    compare(got, want).err().map(|(m, bad)| format!("{what}: {bad} wrong outputs; first: {m}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        let p = |w: &[&str]| super::super::run::parse::<Texture>(w);
        let t = p(&["--modes=zero,wrap", "--resize=64:32", "--quick", "--variants", &VARIANTS.join(",")]).unwrap();
        assert_eq!((t.modes, t.resize), (Some(vec![Boundary::Zero, Boundary::Wrap]), Some(vec![(64, 32)])));
        assert!(t.seed == 2026 && t.common.quick && t.variants.unwrap() == VARIANTS);
        for bad in [&["--resize=1:2", "--no-resize"][..], &["--resize=8"], &["--resize=0:8"], &["--variants=basic"]] {
            assert!(p(bad).is_err(), "{bad:?}");
        }
    }
}
