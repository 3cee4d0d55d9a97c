//! Lesson 004, host <-> device transfers, in one short run.
//!
//! Copies one buffer to the device and back through ordinary (pageable)
//! memory, page-locked (pinned) memory and mapped memory read or written
//! directly by a kernel (zero-copy), verifies each, and prints GB/s (bytes
//! counted once, 1 GB = 1e9 bytes). Then runs the copy → kernel → copy
//! pipeline in chunks on one stream and on four, and prints the speedup of
//! the overlapped run.
//!
//! ```sh
//! cargo run --release --example transfers -- --mib 64
//! ```
//!
//! Without a GPU it says so and exits successfully.

use clap::Parser;
use coalesce::bench::harness::{Settings, gbps, measure};
use coalesce::{Gpu, ScaleAdd, reference};

#[derive(Parser)]
#[command(about = "Pageable vs pinned vs mapped transfers, and copy/kernel overlap on streams")]
struct Args {
    /// Transfer size in MiB (u32 elements).
    #[arg(long, default_value_t = 64)]
    mib: usize,
    /// Timed repetitions (median reported).
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Chunks of the pipeline.
    #[arg(long, default_value_t = 16)]
    chunks: usize,
    /// Streams of the overlapped pipeline.
    #[arg(long, default_value_t = 4)]
    streams: usize,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let n = (args.mib << 20) / 4;
    if n == 0 || args.chunks == 0 || args.streams == 0 {
        return Err("--mib, --chunks and --streams must be at least 1".into());
    }
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) if e.is_no_device() => {
            println!("no CUDA device ({e}); nothing to transfer here.");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    println!("{}", gpu.info());
    let bytes = (4 * n) as f64;
    let settings = Settings { reps: args.reps, ..Settings::default() };
    let host: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) ^ 0x5bd1_e995).collect();

    let mut dev = gpu.alloc_zeroed::<u32>(n)?;
    let mut pageable = host.clone();
    let mut pinned = gpu.pinned_from_slice(&host)?;
    let mut mapped = gpu.mapped_from_slice(&host)?;
    println!("\n{} MiB per transfer, median of {} (GB/s, 1e9 bytes/s, bytes counted once)", args.mib, args.reps);
    println!("{:<10} {:>8} {:>8}", "path", "HtoD", "DtoH");
    for path in ["pageable", "pinned", "mapped"] {
        let htod = |dev: &mut coalesce::DeviceBuffer<u32>| -> coalesce::Result<()> {
            match path {
                "pageable" => gpu.htod(&pageable, &mut dev.as_view_mut()),
                "pinned" => pinned.copy_to_device(&mut dev.as_view_mut()),
                _ => gpu.zero_copy_to_device(&mapped, &mut dev.as_view_mut()).map(|_| ()),
            }
        };
        let up = measure(&gpu, &settings, |_| htod(&mut dev))?;
        dev.fill_bytes(0xA5)?;
        htod(&mut dev)?;
        if reference::first_mismatch(&dev.to_vec()?, &host)?.is_some() {
            return Err(format!("{path}: the device copy differs from the host data").into());
        }
        let mut dtoh = |fill: bool| -> coalesce::Result<bool> {
            let out: &mut [u32] = match path {
                "pageable" => &mut pageable,
                "pinned" => &mut pinned,
                _ => &mut mapped,
            };
            if fill {
                out.fill(0xA5A5_A5A5);
            }
            match path {
                "pageable" => gpu.dtoh(&dev.as_view(), &mut pageable)?,
                "pinned" => pinned.copy_from_device(&dev.as_view())?,
                _ => {
                    gpu.zero_copy_from_device(&dev.as_view(), &mut mapped)?;
                }
            }
            let back: &[u32] = match path {
                "pageable" => &pageable,
                "pinned" => &pinned,
                _ => &mapped,
            };
            Ok(back == host.as_slice())
        };
        let down = measure(&gpu, &settings, |_| dtoh(false).map(|_| ()))?;
        if !dtoh(true)? {
            return Err(format!("{path}: the host copy differs from the device data").into());
        }
        println!("{path:<10} {:>8.2} {:>8.2}", gbps(bytes, up.median_ms), gbps(bytes, down.median_ms));
    }

    // The overlap experiment: the kernel's step count is chosen so that it
    // takes about as long as one chunk's copy.
    let m = n / args.chunks.min(n);
    let copy_ms = measure(&gpu, &settings, |_| gpu.htod(&pinned[..m], &mut dev.view_mut(0..m)?))?.median_ms;
    let mut out_dev = gpu.alloc_zeroed::<u32>(n)?;
    let probe = ScaleAdd::lcg(64);
    let kern_ms =
        measure(&gpu, &settings, |_| gpu.scale_add(&dev.view(0..m)?, &mut out_dev.view_mut(0..m)?, probe))?.median_ms;
    let op = ScaleAdd::lcg((64.0 * copy_ms / kern_ms.max(1e-6)).round().clamp(1.0, 1e6) as u32);
    let streams: Vec<_> = (0..args.streams).map(|_| gpu.new_stream()).collect::<Result<_, _>>()?;
    let mut output = gpu.alloc_pinned::<u32>(n)?;
    let mut want = vec![0u32; n];
    op.reference(&host, &mut want)?;
    let mut total = |s: usize| -> Result<f64, Box<dyn std::error::Error>> {
        let mut times = Vec::new();
        for _ in 0..=args.reps.max(1) {
            output.fill(0xA5A5_A5A5);
            let run = gpu.pipeline(&streams[..s], &pinned, &mut output, &mut dev, &mut out_dev, args.chunks, op)?;
            if reference::first_mismatch(&output, &want)?.is_some() {
                return Err(format!("the pipeline on {s} stream(s) differs from the CPU reference").into());
            }
            times.push(run.total_ms);
        }
        times.remove(0); // warm-up
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    };
    let serial = total(1)?;
    let overlapped = total(args.streams)?;
    println!(
        "\npipeline: {} chunks, copy in -> kernel ({} steps/element) -> copy out, outputs verified",
        args.chunks, op.k
    );
    println!("one stream:  {serial:.3} ms");
    println!("{} streams:   {overlapped:.3} ms  (speedup {:.2}x)", args.streams, serial / overlapped);
    Ok(())
}
