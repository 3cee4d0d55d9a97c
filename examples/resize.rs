//! Lesson 004, texture memory: image resizing by the texture unit's
//! bilinear filtering.
//!
//! Each channel of a generated test image (or a PNG given with `--input`)
//! goes into a CUDA array; a texture over it, clamped at the edges and
//! filtered linearly, is sampled at every output pixel's centre
//! (`Texture2d::resize`). Every output is verified against the CPU model
//! of the texture unit (`texture::model`: bilinear with the hardware's
//! 9-bit weights as the tolerance), timed with CUDA events, and the input
//! and output are written as `before.png` and `after.png` into
//! `--out-dir`.
//!
//! ```sh
//! cargo run --release --example resize -- --out-width 960 --out-height 540
//! cargo run --release --example resize -- --input photo.png --scale 2.5 --filter point
//! ```
//!
//! Without a GPU it says so, resizes with the CPU model instead, writes
//! the same two images and exits successfully.

use std::path::PathBuf;

use clap::Parser;
use coalesce::conv::reference::compare;
use coalesce::picture::{Picture, generated, read_png, write_png};
use coalesce::texture::model::{self, Texels};
use coalesce::texture::{AddressMode, FilterMode, TextureDesc};
use coalesce::{DeviceBuffer, Gpu};

#[derive(Parser)]
#[command(about = "Bilinear image resize through the texture unit, verified against the CPU model")]
struct Args {
    /// A PNG to resize (grayscale or RGB; alpha is dropped). Without it a
    /// generated RGB test image is used.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Width of the generated image.
    #[arg(long, default_value_t = 1920)]
    width: usize,
    /// Height of the generated image.
    #[arg(long, default_value_t = 1080)]
    height: usize,
    /// Output width [default: the input's width times --scale].
    #[arg(long)]
    out_width: Option<usize>,
    /// Output height [default: the input's height times --scale].
    #[arg(long)]
    out_height: Option<usize>,
    /// Scale factor for the sides not given (0.5 halves, 2 doubles).
    #[arg(long, default_value_t = 0.5)]
    scale: f64,
    /// Filter: linear (bilinear) or point (nearest neighbour).
    #[arg(long, default_value = "linear", value_parser = ["linear", "point"])]
    filter: String,
    /// Address mode at the edges: clamp, border, wrap, mirror.
    #[arg(long, default_value = "clamp")]
    mode: AddressMode,
    /// Timed repetitions per channel (median reported).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Where before.png and after.png go.
    #[arg(long, default_value = "target/resize")]
    out_dir: PathBuf,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let picture = match &args.input {
        Some(p) => read_png(p)?,
        None => generated(args.width, args.height),
    };
    let (w, h) = (picture.width, picture.height);
    if w == 0 || h == 0 {
        return Err("the image is empty".into());
    }
    let side =
        |given: Option<usize>, n: usize| given.unwrap_or_else(|| ((n as f64 * args.scale).round() as usize).max(1));
    let (ow, oh) = (side(args.out_width, w), side(args.out_height, h));
    if ow == 0 || oh == 0 {
        return Err("the output size must be at least 1 x 1".into());
    }
    let filter = if args.filter == "point" { FilterMode::Point } else { FilterMode::Linear };
    let desc = TextureDesc::for_mode(args.mode, filter);
    println!("{w}×{h} → {ow}×{oh}, {} channel(s); texture: {desc}", picture.channels.len());
    std::fs::create_dir_all(&args.out_dir)?;
    write_png(&args.out_dir.join("before.png"), &picture)?;
    let model_of = |c: &[f32]| model::resize(Texels { data: c, width: w, height: h }, &desc, ow, oh);

    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) if e.is_no_device() => {
            println!("no CUDA device ({e}); resizing with the CPU model of the texture unit instead.");
            let t = std::time::Instant::now();
            let channels =
                picture.channels.iter().map(|c| model_of(c).into_iter().map(|v| v.value as f32).collect()).collect();
            println!("CPU model: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
            write_png(&args.out_dir.join("after.png"), &Picture { width: ow, height: oh, channels })?;
            println!("wrote {} and after.png", args.out_dir.join("before.png").display());
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    println!("{}", gpu.info());

    let mut out: DeviceBuffer<f32> = gpu.alloc_zeroed(ow * oh)?;
    let mut channels = Vec::new();
    for (k, c) in picture.channels.iter().enumerate() {
        let array = gpu.upload_array(c, w, h)?;
        let tex = array.texture(&desc)?;
        out.fill_bytes(0xA5)?;
        let plan = tex.resize(&mut out.as_view_mut(), ow, oh, ow)?;
        let got = out.to_vec()?;
        if let Err((m, count)) = compare(&got, &model_of(c)) {
            return Err(format!("channel {k}: {count} outputs differ from the model; first: {m:?}").into());
        }
        let mut times = Vec::with_capacity(args.reps.max(1));
        for _ in 0..args.reps.max(1) {
            times.push(gpu.time(|| tex.resize(&mut out.as_view_mut(), ow, oh, ow).map(|_| ()))?);
        }
        times.sort_by(f32::total_cmp);
        let ms = f64::from(times[times.len() / 2]);
        let bytes = ((w * h + ow * oh) * 4) as f64;
        println!(
            "channel {k}: {} {:?} blocks of {:?}: {ms:.3} ms, {:.1} Gpixel/s out, {:.0} GB/s (input read once + output), verified",
            plan.kernel,
            plan.grid,
            plan.block,
            (ow * oh) as f64 / (ms * 1e-3) / 1e9,
            bytes / (ms * 1e-3) / 1e9
        );
        channels.push(got);
    }
    write_png(&args.out_dir.join("after.png"), &Picture { width: ow, height: oh, channels })?;
    println!("wrote {} and after.png", args.out_dir.join("before.png").display());
    Ok(())
}
