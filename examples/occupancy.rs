//! The occupancy calculator on this device: for each kernel of the module,
//! its registers and shared memory, the occupancy at a block size, what
//! limits it, and the block size the lesson's guidelines suggest (next to
//! the driver's own suggestion). Also the lesson's 40 × 2 block: 80
//! threads, 3 warps, 16 idle thread slots.
//!
//! ```sh
//! cargo run --release --example occupancy -- --threads 256 --dynamic 0
//! ```
//!
//! Without a GPU it shows the calculator on an H100's limits for a few
//! register counts.

use clap::Parser;
use coalesce::occupancy::{Granularity, occupancy, suggest};
use coalesce::text::{Align, Table};
use coalesce::{DeviceLimits, Gpu, KernelLimits};

#[derive(Parser)]
#[command(about = "Occupancy per kernel: calculator, limits, suggestion")]
struct Args {
    /// Threads per block to evaluate.
    #[arg(long, default_value_t = 256)]
    threads: u32,
    /// Dynamic shared memory per block, bytes.
    #[arg(long, default_value_t = 0)]
    dynamic: u32,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) if e.is_no_device() => {
            println!("no CUDA device ({e}); the calculator on an H100's limits:");
            for regs in [16u32, 32, 40, 64, 128] {
                let k = KernelLimits { registers_per_thread: regs, ..KernelLimits::unconstrained() };
                let o = occupancy(&DeviceLimits::H100, &Granularity::SM90, &k, args.threads, args.dynamic)?;
                println!("  {regs:>3} registers: {o}");
            }
            let k = KernelLimits { registers_per_thread: 32, ..KernelLimits::unconstrained() };
            let lesson = occupancy(&DeviceLimits::H100, &Granularity::SM90, &k, 80, 0)?;
            println!("  the lesson's 40 x 2 block: {lesson}");
            let s = suggest(&DeviceLimits::H100, &Granularity::SM90, &k, 0, 132)?;
            println!("  suggested for 32 registers: {} threads ({})", s.threads, s.reasons.join("; "));
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    println!("{}\n", gpu.info());
    let mut t = Table::new([
        "kernel",
        "regs",
        "smem",
        "threads",
        "warps",
        "blocks/SM",
        "warps/SM",
        "occupancy",
        "limited by",
        "driver",
        "suggest",
        "driver suggests",
    ]);
    for name in gpu.kernel_names() {
        let limits = gpu.kernel_limits(name)?;
        if args.threads > limits.max_threads_per_block {
            continue;
        }
        let o = gpu.occupancy(name, args.threads, args.dynamic)?;
        let driver = gpu.max_active_blocks_per_sm(name, args.threads, args.dynamic as usize)?;
        let s = gpu.suggest_block_size(name, args.dynamic)?;
        let (_, dblock) = gpu.driver_suggested_launch(name, args.dynamic as usize)?;
        t.row([
            name.to_string(),
            limits.registers_per_thread.to_string(),
            limits.static_shared_bytes.to_string(),
            args.threads.to_string(),
            o.warps_per_block.to_string(),
            o.active_blocks.to_string(),
            format!("{}/{}", o.active_warps, o.max_warps),
            format!("{:.0}%", o.occupancy * 100.0),
            o.limiters.iter().map(ToString::to_string).collect::<Vec<_>>().join("+"),
            driver.to_string(),
            format!("{} ({:.0}%)", s.threads, s.occupancy.occupancy * 100.0),
            dblock.to_string(),
        ]);
    }
    t.align(0, Align::Left);
    println!("{t}");
    let lesson = gpu.occupancy("math_kernel1", 80, 0)?;
    println!("\nthe lesson's 40 x 2 block of math_kernel1: {lesson}");
    Ok(())
}
