//! The synchronization lesson's experiment: remove a barrier, see the race.
//!
//! `race_demo_missing_barrier` is the interleaved sum of
//! `reduce_interleaved_f32` with the `__syncthreads()` inside its loop
//! removed: at each step, threads of one warp read shared-memory slots that
//! threads of another warp may not have written yet. The result is often
//! still right (warps happen to run in order), which is why such bugs
//! survive testing; `compute-sanitizer --tool racecheck` finds them
//! regardless:
//!
//! ```sh
//! cargo build --release --example race_demo
//! compute-sanitizer --tool racecheck target/release/examples/race_demo
//! ```
//!
//! This example only runs the kernel and compares with the correct one; it
//! never fails on a wrong sum (the race is the lesson). No test launches
//! the broken kernel.

use coalesce::{Gpu, LaunchConfig, ReduceVariant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) if e.is_no_device() => {
            println!("no CUDA device ({e}); run this under compute-sanitizer --tool racecheck on a GPU.");
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let threads = 512u32;
    let blocks = 256u32;
    let n = (threads * blocks) as usize;
    let host: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let input = gpu.upload(&host)?;
    let partials = gpu.alloc_zeroed::<f32>(blocks as usize)?;
    let cfg = LaunchConfig::new(blocks, threads).with_shared_mem(threads * 4);
    // SAFETY: `input` holds n = blocks × threads floats, `partials` one per
    // block, and the launch gives each block `threads` floats of dynamic
    // shared memory; the kernel's only defect is the missing barrier, which
    // makes the values racy, not the accesses out of bounds.
    unsafe { gpu.launch("race_demo_missing_barrier", &cfg, &[&input.device_ptr(), &partials.device_ptr(), &n])? };
    let got = partials.to_vec()?;
    let racy: f32 = got.iter().sum();
    let right = gpu.reduce_sum(&input.as_view(), ReduceVariant::Interleaved)?;
    // Each block's values are small integers: its exact sum is exact in f32.
    let wrong_blocks = host.chunks(threads as usize).zip(&got).filter(|(c, p)| c.iter().sum::<f32>() != **p).count();
    println!("sum without the barrier: {racy}; with it: {right}; {wrong_blocks} of {blocks} block sums differ");
    println!("(a race need not show in the result; run under compute-sanitizer --tool racecheck to see the hazards)");
    Ok(())
}
