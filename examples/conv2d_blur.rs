//! Lesson 001 in 2D: a Gaussian blur of an image on the GPU.
//!
//! Blurs a generated test image (or a PNG given with `--input`;
//! grayscale or RGB, each channel as `f32`) with a Gaussian of standard
//! deviation `--sigma` (and `--sigma-y`), either as a separable pair of
//! 1D passes (`--variant separable`, the default) or as one 2D
//! convolution with the outer-product mask (`--variant basic|const|tiled|
//! fast|tensor|auto`; `tensor` needs sm_80 or newer and a mask that
//! `conv2d::t2_takes` accepts, `auto` takes it from 9 × 9), or
//! (`--variant u8`) on the 8-bit pixels themselves: interleaved RGB (or
//! gray) `u8` in and out, accumulated in `f32`, rounded and saturated
//! (`conv::channels::Filter2d`). Verifies every output against the rayon reference,
//! prints CUDA-event timings, and writes `before.png` and `after.png`
//! into `--out-dir`.
//!
//! ```sh
//! cargo run --release --example conv2d_blur -- --sigma 3 --mode reflect --variant fast
//! cargo run --release --example conv2d_blur -- --input photo.png --sigma 2
//! cargo run --release --example conv2d_blur -- --input photo.png --sigma 2 --variant u8
//! ```
//!
//! Without a GPU it says so, computes the blur with the CPU reference and
//! writes the same two images.

use std::path::PathBuf;

use clap::Parser;
use coalesce::conv::conv2d::{Conv2d, Conv2dVariant, Separable};
use coalesce::conv::reference::compare;
use coalesce::conv::reference2d::{Image, conv2d_checked, outer_product, separable_checked};
use coalesce::conv::{Boundary, ConvOp, gaussian, parse_boundary};
use coalesce::picture::{Picture, generated, read_png, write_png};
use coalesce::{DeviceBuffer, Gpu};

#[derive(Parser)]
#[command(about = "Gaussian blur on the GPU, verified against the CPU reference")]
struct Args {
    /// A PNG to blur (grayscale or RGB; alpha is dropped). Without it a
    /// generated RGB test image is used.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Width of the generated image.
    #[arg(long, default_value_t = 1920)]
    width: usize,
    /// Height of the generated image.
    #[arg(long, default_value_t = 1080)]
    height: usize,
    /// Standard deviation along x, pixels.
    #[arg(long, default_value_t = 2.0)]
    sigma: f64,
    /// Standard deviation along y (default: the same as --sigma).
    #[arg(long)]
    sigma_y: Option<f64>,
    /// Boundary mode: zero, nearest, reflect, mirror, wrap (or scipy's names).
    #[arg(long, default_value = "reflect", value_parser = parse_boundary)]
    mode: Boundary,
    /// separable, a 2D kernel (basic, const, tiled, fast, tensor, auto), or u8 (8-bit interleaved pixels).
    #[arg(long, default_value = "separable")]
    variant: String,
    /// Timed repetitions per channel (median reported).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Where before.png and after.png go.
    #[arg(long, default_value = "target/conv2d_blur")]
    out_dir: PathBuf,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let sigma_y = args.sigma_y.unwrap_or(args.sigma);
    if args.variant == "u8" {
        return blur_u8(&args, sigma_y);
    }
    let variant = match args.variant.as_str() {
        "separable" => None,
        v => Some(v.parse::<Conv2dVariant>()?),
    };
    let picture = match &args.input {
        Some(p) => read_png(p)?,
        None => generated(args.width, args.height),
    };
    let (w, h) = (picture.width, picture.height);
    if w == 0 || h == 0 {
        return Err("the image is empty".into());
    }
    let (gx, gy) = (gaussian::<f32>(args.sigma)?, gaussian::<f32>(sigma_y)?);
    println!(
        "{w}×{h}, {} channel(s); Gaussian σ = ({}, {sigma_y}) → {}×{} taps; mode {}; {}",
        picture.channels.len(),
        args.sigma,
        gx.len(),
        gy.len(),
        args.mode.name(),
        variant.map_or("separable (rows, then columns)".to_string(), |v| format!("2D {}", v.name()))
    );
    std::fs::create_dir_all(&args.out_dir)?;
    write_png(&args.out_dir.join("before.png"), &picture)?;

    // The reference, per channel.
    let mask2d = outer_product(&gx, &gy);
    let reference = |c: &[f32]| {
        let img = Image::dense(c, w, h);
        match variant {
            None => separable_checked(img, &gx, &gy, ConvOp::Correlate, args.mode),
            Some(_) => conv2d_checked(img, &mask2d, gx.len(), gy.len(), ConvOp::Correlate, args.mode),
        }
    };

    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) if e.is_no_device() => {
            println!("no CUDA device ({e}); blurring with the CPU reference instead.");
            let t = std::time::Instant::now();
            let channels = picture
                .channels
                .iter()
                .map(|c| Ok(reference(c)?.into_iter().map(|v| v.value as f32).collect()))
                .collect::<coalesce::Result<Vec<Vec<f32>>>>()?;
            println!("CPU reference: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
            let after = Picture { width: w, height: h, channels };
            write_png(&args.out_dir.join("after.png"), &after)?;
            println!("wrote {} and after.png", args.out_dir.join("before.png").display());
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    println!("{}", gpu.info());

    let sep = Separable::new(&gpu, &gx, &gy, ConvOp::Correlate, args.mode)?;
    let conv = Conv2d::new(&gpu, &mask2d, gx.len(), gy.len(), ConvOp::Correlate, args.mode)?;
    let mut src: DeviceBuffer<f32> = gpu.alloc_zeroed(w * h)?;
    let mut dst: DeviceBuffer<f32> = gpu.alloc_zeroed(w * h)?;
    let mut channels = Vec::new();
    for (k, c) in picture.channels.iter().enumerate() {
        src.copy_from_host(c)?;
        dst.fill_bytes(0xA5)?;
        let run = |dst: &mut DeviceBuffer<f32>| -> coalesce::Result<String> {
            Ok(match variant {
                None => {
                    let p = sep.run(&src.as_view(), &mut dst.as_view_mut(), w, h, w)?;
                    format!("{} + {}", p.rows.kernel, p.cols.kernel)
                }
                Some(v) => conv.run(v, &src.as_view(), &mut dst.as_view_mut(), w, h, w)?.kernel.to_string(),
            })
        };
        let kernel = run(&mut dst)?;
        let got = dst.to_vec()?;
        let want = reference(c)?;
        if let Err((m, count)) = compare(&got, &want) {
            return Err(format!("channel {k}: {count} outputs differ from the reference; first: {m}").into());
        }
        let mut times = Vec::with_capacity(args.reps.max(1));
        for _ in 0..args.reps.max(1) {
            times.push(gpu.time(|| run(&mut dst).map(|_| ()))?);
        }
        times.sort_by(f32::total_cmp);
        let ms = times[times.len() / 2] as f64;
        let bytes = 2.0 * (w * h * 4) as f64;
        println!(
            "channel {k}: {kernel}: {:.3} ms, {:.0} GB/s (image read + written once), verified",
            ms,
            bytes / (ms * 1e-3) / 1e9
        );
        channels.push(got);
    }
    let after = Picture { width: w, height: h, channels };
    write_png(&args.out_dir.join("after.png"), &after)?;
    println!("wrote {} and after.png", args.out_dir.join("before.png").display());
    Ok(())
}

/// `--variant u8`: the blur on the interleaved 8-bit pixels.
fn blur_u8(args: &Args, sigma_y: f64) -> Result<(), Box<dyn std::error::Error>> {
    use coalesce::conv::batch::Sample;
    use coalesce::conv::channels::{Filter2d, Image as ChanImage};
    use coalesce::conv::reference_batch::{filter2d, first_mismatch};
    let picture = match &args.input {
        Some(p) => read_png(p)?,
        None => generated(args.width, args.height),
    };
    let (w, h, n) = (picture.width, picture.height, picture.channels.len());
    let pixels = picture.to_interleaved_u8();
    let img = ChanImage::new(w, h, n)?;
    std::fs::create_dir_all(&args.out_dir)?;
    write_png(&args.out_dir.join("before.png"), &picture)?;
    let reference = |taps: &[f32], size: (usize, usize), left: (usize, usize)| {
        let values: Vec<f64> = pixels.iter().map(|&v| v as f64).collect();
        let taps: Vec<f64> = taps.iter().map(|&t| t as f64).collect();
        filter2d::<f32>(&values, img, &taps, size, left, args.mode, 0.0)
    };
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) if e.is_no_device() => {
            println!("no CUDA device ({e}); blurring with the CPU reference instead.");
            let (gx, gy) = (gaussian::<f32>(args.sigma)?, gaussian::<f32>(sigma_y)?);
            let taps: Vec<f32> = gy.iter().flat_map(|y| gx.iter().map(move |x| x * y)).collect();
            let (size, left) = ((gx.len(), gy.len()), (gx.len() / 2, gy.len() / 2));
            let out: Vec<u8> = reference(&taps, size, left)?.iter().map(|c| u8::from_f64(c.value)).collect();
            write_png(&args.out_dir.join("after.png"), &Picture::from_interleaved_u8(w, h, n, &out))?;
            println!("wrote {} and after.png", args.out_dir.join("before.png").display());
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    println!("{}", gpu.info());
    let blur = Filter2d::<u8>::gaussian(&gpu, args.sigma, sigma_y, 4.0, args.mode)?;
    let (mw, mh) = blur.size();
    println!(
        "{w}×{h}, {n} channel(s) of u8; Gaussian σ = ({}, {sigma_y}) → {mw}×{mh} taps; mode {}",
        args.sigma,
        args.mode.name()
    );
    let src = gpu.upload(&pixels)?;
    let mut dst = gpu.alloc_zeroed::<u8>(pixels.len())?;
    dst.fill_bytes(0xA5)?;
    let plan = blur.run(&src.as_view(), &mut dst.as_view_mut(), img)?;
    let got = dst.to_vec()?;
    let want = reference(blur.taps(), (mw, mh), blur.left())?;
    if let Some((i, g, c)) = first_mismatch(&got, &want) {
        return Err(format!("sample {i}: got {g}, want {} ± {}", c.value, c.bound).into());
    }
    let mut times = Vec::with_capacity(args.reps.max(1));
    for _ in 0..args.reps.max(1) {
        times.push(gpu.time(|| blur.run(&src.as_view(), &mut dst.as_view_mut(), img).map(|_| ()))?);
    }
    times.sort_by(f32::total_cmp);
    let ms = times[times.len() / 2] as f64;
    let bytes = 2.0 * pixels.len() as f64;
    println!(
        "{}: {ms:.3} ms, {:.0} GB/s (u8 image read + written once), verified",
        plan.kernel,
        bytes / (ms * 1e-3) / 1e9
    );
    write_png(&args.out_dir.join("after.png"), &Picture::from_interleaved_u8(w, h, n, &got))?;
    println!("wrote {} and after.png", args.out_dir.join("before.png").display());
    Ok(())
}
