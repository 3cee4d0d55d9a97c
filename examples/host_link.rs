//! How fast the host feeds its GPUs: page-locked copies of `--mib` MiB to and from 1, 2, … N GPUs at once (every GPU
//! visible), host → device, device → host, and both directions at once (two streams per GPU). A streaming filter moves
//! every input byte in and every output byte out, so on k GPUs its input rate is at most half the k-GPU "both" rate:
//! the ceiling to judge `bench stream`'s all-GPU run against.
//!
//! Each figure is the median wall time of `--reps` rounds (after two untimed ones) from the first copy queued to the
//! last one finished, GB/s with 1 GB = 1e9 bytes counted once per crossing. After the timing every device and host
//! destination is poisoned, copied once more and compared with its source.
//!
//! ```sh
//! cargo run --release --example host_link -- --mib 256
//! ```
//!
//! Without a GPU it says so and exits successfully.

use std::time::Instant;

use clap::Parser;
use coalesce::{DeviceBuffer, Gpu, PinnedBuffer, Stream};

#[derive(Parser)]
#[command(about = "Page-locked host <-> device rates on 1..N GPUs at once, one way and both ways")]
struct Args {
    /// MiB per copy and GPU (u32 elements).
    #[arg(long, default_value_t = 256)]
    mib: usize,
    /// Timed rounds (median reported).
    #[arg(long, default_value_t = 10)]
    reps: usize,
}

/// One GPU's side: page-locked source and destination, device source and destination, a stream each way.
struct Lane {
    up_src: PinnedBuffer<u32>,
    down_dst: PinnedBuffer<u32>,
    up_dst: DeviceBuffer<u32>,
    down_src: DeviceBuffer<u32>,
    up: Stream,
    down: Stream,
}

const POISON: u8 = 0xA5;

/// The words GPU `g` sends (`up`) or returns: distinct per GPU and direction, never the poison.
fn word(g: usize, up: bool, i: usize) -> u32 {
    let x = (i as u32).wrapping_mul(2_654_435_761) ^ ((g as u32) << 24) ^ if up { 0x5bd1_e995 } else { 0x1b87_3593 };
    if x == u32::from_ne_bytes([POISON; 4]) { !x } else { x }
}

/// Queues the copies of `lanes` (`up`, `down` or both) and waits for all of them: the wall time, ms.
fn round(lanes: &mut [Lane], up: bool, down: bool) -> Result<f64, coalesce::Error> {
    let t = Instant::now();
    for l in lanes.iter_mut() {
        // SAFETY: every buffer lives in `lanes` and is touched by nothing else until both streams are synchronized
        // below.
        unsafe {
            if up {
                l.up.htod_async(&l.up_src, &mut l.up_dst.as_view_mut())?;
            }
            if down {
                l.down.dtoh_async(&l.down_src.as_view(), &mut l.down_dst)?;
            }
        }
    }
    for l in lanes.iter() {
        l.up.synchronize()?;
        l.down.synchronize()?;
    }
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let n = (args.mib << 20) / 4;
    if n == 0 || args.reps == 0 {
        return Err("--mib and --reps must be at least 1".into());
    }
    let first = match Gpu::new() {
        Ok(g) => g,
        Err(e) if e.is_no_device() => {
            println!("no CUDA device ({e}); no link to measure here.");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let gpus: Vec<Gpu> =
        std::iter::once(Ok(first)).chain((1..Gpu::count()).map(Gpu::with_device)).collect::<Result<_, _>>()?;
    let mut lanes = Vec::new();
    for (g, gpu) in gpus.iter().enumerate() {
        println!("GPU {g}: {}", gpu.info().name);
        let [up, down] = [true, false].map(|up| (0..n).map(|i| word(g, up, i)).collect::<Vec<u32>>());
        lanes.push(Lane {
            up_src: gpu.pinned_from_slice(&up)?,
            down_dst: gpu.alloc_pinned::<u32>(n)?,
            up_dst: gpu.alloc_zeroed::<u32>(n)?,
            down_src: gpu.upload(&down)?,
            up: gpu.new_stream()?,
            down: gpu.new_stream()?,
        });
    }
    let bytes = (4 * n) as f64;
    println!(
        "\n{} MiB per copy and GPU, median of {} rounds (GB/s, all GPUs together, 1e9 bytes/s)",
        args.mib, args.reps
    );
    println!("{:>4}  {:>9}  {:>9}  {:>15}  {:>16}", "GPUs", "HtoD", "DtoH", "both (in + out)", "both, per GPU");
    for k in 1..=lanes.len() {
        let mut rate = [0.0; 3];
        for (j, (up, down)) in [(true, false), (false, true), (true, true)].into_iter().enumerate() {
            let mut ms: Vec<f64> =
                (0..2 + args.reps).map(|_| round(&mut lanes[..k], up, down)).collect::<Result<_, _>>()?;
            ms.drain(..2);
            ms.sort_by(f64::total_cmp);
            let median = (ms[(ms.len() - 1) / 2] + ms[ms.len() / 2]) / 2.0;
            rate[j] = (k as f64) * bytes * (usize::from(up) + usize::from(down)) as f64 / (median * 1e-3) / 1e9;
        }
        println!("{k:>4}  {:>9.2}  {:>9.2}  {:>15.2}  {:>16.2}", rate[0], rate[1], rate[2], rate[2] / k as f64);
    }
    for (g, l) in lanes.iter_mut().enumerate() {
        l.up_dst.fill_bytes(POISON)?;
        l.down_dst.fill(u32::from_ne_bytes([POISON; 4]));
        round(std::slice::from_mut(l), true, true)?;
        let (got_up, got_down) = (l.up_dst.to_vec()?, &l.down_dst[..]);
        for (what, got, up) in [("host -> device", &got_up[..], true), ("device -> host", got_down, false)] {
            if let Some(i) = (0..n).find(|&i| got[i] != word(g, up, i)) {
                return Err(format!("GPU {g} {what}: word {i} is {:#x}, sent {:#x}", got[i], word(g, up, i)).into());
            }
        }
    }
    println!("every GPU's copies in both directions match their sources");
    Ok(())
}
