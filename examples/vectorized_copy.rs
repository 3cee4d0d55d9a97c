//! Lesson 000, vectorized memory access, in one run.
//!
//! Copies a buffer with the lesson's three grid-stride kernels — 32-bit
//! words, 64-bit pairs, 128-bit quads, one access per thread per step,
//! launched as the lesson launches them — then with the tuned 128-bit kernel
//! (8 accesses in flight per thread, tiles, a grid of 8 waves) and with the
//! driver's own device-to-device copy. Each copy is verified against the
//! rayon reference and timed. Finally it shows the lesson's `d_in + 1`: the
//! start is misaligned for vectors, so the kernel peels a scalar head
//! instead of issuing a misaligned vector access.
//!
//! ```sh
//! cargo run --release --example vectorized_copy -- --mib 256 --reps 20
//! ```
//!
//! Without a GPU it prints the copy plans (which need none) and says so.

use clap::Parser;
use coalesce::bench::harness::{Settings, gbps, measure};
use coalesce::{CopyPlan, CopyPolicy, CopyVariant, Gpu, reference};
use rand::{Rng, SeedableRng, rngs::StdRng};

#[derive(Parser)]
#[command(about = "Scalar vs 64-bit vs 128-bit copies, verified and timed")]
struct Args {
    /// Buffer size in MiB (u32 elements).
    #[arg(long, default_value_t = 256)]
    mib: usize,
    /// Timed repetitions (median reported).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Seed for the random input.
    #[arg(long, default_value_t = 2026)]
    seed: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let n = (args.mib << 20) / 4;
    if n == 0 {
        return Err("--mib must be at least 1".into());
    }
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) if e.is_no_device() => {
            println!("no CUDA device ({e}); the kernels cannot run here.");
            println!("The copy plans need no GPU; for buffers at 256-byte-aligned addresses:");
            show_plans(0x7f00_0000_0000, n);
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    println!("{}", gpu.info());
    println!("copying {} MiB of u32 ({} elements), median of {} runs\n", args.mib, n, args.reps);

    let mut rng = StdRng::seed_from_u64(args.seed);
    let host: Vec<u32> = (0..n).map(|_| rng.random()).collect();
    let src = gpu.upload(&host)?;
    let mut dst = gpu.alloc_zeroed::<u32>(n)?;
    let settings = Settings { reps: args.reps, ..Settings::default() };
    let mut want = vec![0u32; n];
    reference::copy(&host, &mut want)?;

    println!("{:<22} {:<15} {:>8} {:>8} {:>10}", "copy", "kernel", "ms", "GB/s", "vs scalar");
    let lesson = |v| (format!("lesson {v}"), Some((v, CopyPolicy::LESSON)));
    let runs = [
        lesson(CopyVariant::Scalar),
        lesson(CopyVariant::Vec2),
        lesson(CopyVariant::Vec4),
        ("tuned vec4".to_string(), Some((CopyVariant::Vec4, CopyPolicy::TUNED))),
        ("driver".to_string(), None),
    ];
    let mut scalar_ms = None;
    for (label, run) in runs {
        dst.fill_bytes(0xA5)?;
        let copy = |dst: &mut coalesce::DeviceBuffer<u32>| -> coalesce::Result<&'static str> {
            match run {
                Some((v, p)) => {
                    let plan = gpu.copy_with(&src.as_view(), &mut dst.as_view_mut(), v, &p)?;
                    p.kernel(plan.width)
                }
                None => gpu.copy_with_driver(&src.as_view(), &mut dst.as_view_mut()).map(|()| "cuMemcpyDtoD"),
            }
        };
        let kernel = copy(&mut dst)?;
        if let Some((i, got, exp)) = reference::first_mismatch(&dst.to_vec()?, &want)? {
            return Err(format!("{label}: element {i} is {got:#x}, expected {exp:#x}").into());
        }
        let stats = measure(&gpu, &settings, |_| copy(&mut dst).map(|_| ()))?;
        let ms = stats.median_ms;
        let speedup = *scalar_ms.get_or_insert(ms) / ms;
        println!("{label:<22} {kernel:<15} {ms:>8.3} {:>8.0} {speedup:>9.2}x", gbps(2.0 * (n * 4) as f64, ms));
    }
    println!("(GB = 1e9 bytes; read + written)");

    println!("\nthe lesson's d_in + 1, with vec4 requested:");
    let off = 1;
    let plan = gpu.copy(&src.view(off..n)?, &mut dst.view_mut(off..n)?, CopyVariant::Vec4)?;
    describe(&plan);
    let plan = gpu.copy(&src.view(off..n - 1)?, &mut dst.view_mut(off + 1..n)?, CopyVariant::Vec4)?;
    println!("source at +1 word, destination at +2 words:");
    describe(&plan);
    let got = dst.view(off + 1..n)?.to_vec()?;
    if reference::first_mismatch(&got, &host[off..n - 1])?.is_some() {
        return Err("the misaligned copy differs from the reference".into());
    }
    println!("\nall copies verified against the CPU reference");
    Ok(())
}

fn describe(plan: &CopyPlan) {
    let s = plan.split.map_or((0, 0, 0), |s| (s.head, s.body, s.tail));
    println!(
        "  {} ({}): {} scalar head words, {} accesses of {} bytes, {} scalar tail words{}",
        CopyPolicy::TUNED.kernel(plan.width).unwrap_or("?"),
        plan.requested,
        s.0,
        s.1,
        plan.width.bytes(),
        s.2,
        if plan.downgraded() { "  [narrowed: no wider access is aligned on both sides]" } else { "" }
    );
}

fn show_plans(base: u64, n: usize) {
    for (so, d_o) in [(0u64, 0u64), (4, 4), (4, 8)] {
        println!("source +{so} bytes, destination +{d_o} bytes:");
        describe(&CopyPlan::new(base + so, base + (1 << 30) + d_o, n * 4, CopyVariant::Vec4));
    }
}
