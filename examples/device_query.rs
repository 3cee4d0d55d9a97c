//! The execution-model lesson's `simpleDeviceQuery`, and more: the
//! device's limits, its memory system and theoretical DRAM bandwidth, then
//! Little's law (§3.4) for this device: how many operations and bytes must
//! be in flight per SM to hide arithmetic and memory latency.
//!
//! ```sh
//! cargo run --release --example device_query -- --mem-latency 600 --bytes-per-thread 16
//! ```
//!
//! The latencies are assumptions (the lesson's 20 and 800 cycles), stated
//! in the output and overridable. Without a GPU it prints the lesson's own
//! Fermi rows from the same formulas.

use clap::Parser;
use coalesce::Gpu;
use coalesce::query::{ArithmeticParallelism, DeviceReport, LittleAssumptions, MemoryParallelism};

#[derive(Parser)]
#[command(about = "Device properties and Little's-law tables for latency hiding")]
struct Args {
    /// Device ordinal.
    #[arg(long, default_value_t = 0)]
    device: u32,
    /// Arithmetic instruction latency, cycles (assumed).
    #[arg(long, default_value_t = LittleAssumptions::default().arithmetic_latency_cycles)]
    arith_latency: f64,
    /// Global memory latency, cycles (assumed).
    #[arg(long, default_value_t = LittleAssumptions::default().memory_latency_cycles)]
    mem_latency: f64,
    /// Bytes each thread has in flight (4 = one float, 16 = one 128-bit load).
    #[arg(long, default_value_t = LittleAssumptions::default().bytes_per_thread)]
    bytes_per_thread: f64,
    /// FP32 operations per SM per cycle (default: from the compute capability).
    #[arg(long)]
    fp32_per_cycle: Option<f64>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let assumptions = LittleAssumptions {
        arithmetic_latency_cycles: args.arith_latency,
        memory_latency_cycles: args.mem_latency,
        bytes_per_thread: args.bytes_per_thread,
    };
    let gpu = match Gpu::with_device(args.device) {
        Ok(g) => g,
        Err(e) if e.is_no_device() => {
            println!("no CUDA device ({e}); the lesson's Fermi rows from the same formulas:");
            let a = ArithmeticParallelism::new(assumptions.arithmetic_latency_cycles, 32.0, 32);
            println!(
                "  arithmetic: {:.0} cycles x 32 ops/cycle = {:.0} ops = {:.0} warps per SM",
                a.latency_cycles, a.ops_in_flight, a.warps_per_sm
            );
            let m = MemoryParallelism::new(
                assumptions.memory_latency_cycles,
                144.0,
                1.566,
                assumptions.bytes_per_thread,
                32,
                16,
            );
            println!(
                "  memory: 144 GB/s / 1.566 GHz = {:.0} B/cycle x {:.0} = {:.0} KB = {:.0} threads = {:.0} warps = {:.0} per SM",
                m.bytes_per_cycle,
                m.latency_cycles,
                m.bytes_in_flight / 1000.0,
                m.threads,
                m.warps,
                m.warps_per_sm
            );
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let report = DeviceReport::new(gpu.info(), assumptions, args.fp32_per_cycle);
    print!("{}", report.render());
    println!(
        "\nassumed: arithmetic latency {} cycles, memory latency {} cycles, {} bytes in flight per thread \
         (--arith-latency, --mem-latency, --bytes-per-thread, --fp32-per-cycle)",
        assumptions.arithmetic_latency_cycles, assumptions.memory_latency_cycles, assumptions.bytes_per_thread
    );
    Ok(())
}
