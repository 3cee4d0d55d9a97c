//! Lesson 002 §3.7–3.9 in one run: `sum_matrix_2d` on a square `f32`
//! matrix with each of the lesson's block shapes, verified against the
//! rayon reference, timed against the DRAM floor (two reads and one write
//! at the driver's device-to-device copy bandwidth), with the driver's
//! theoretical occupancy per shape. `(256, 8)` is refused before any launch.
//!
//! Short by default (4096 x 4096, 5 samples per shape); `--full` runs the
//! lesson's 16384 x 16384 with 20 samples and judges the goal (best shape
//! at >= 90% of the floor).
//!
//! ```sh
//! cargo run --release --example block_shapes            # short
//! cargo run --release --example block_shapes -- --full  # 16384^2
//! ```

use clap::Parser;
use coalesce::bench::matrix::{MatrixOptions, measure_suite};
use coalesce::matrix::{launch_config, validate_launch};
use coalesce::{BlockShape, DeviceLimits, Gpu, KernelLimits};

#[derive(Parser)]
#[command(about = "sum_matrix_2d across the lesson's block shapes")]
struct Args {
    /// The lesson's 16384 x 16384 matrix and 20 samples per shape.
    #[arg(long)]
    full: bool,
    /// Matrix side (overrides the default of 4096, or 16384 with --full).
    #[arg(long)]
    n: Option<usize>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let base = if args.full { MatrixOptions::default() } else { MatrixOptions::quick() };
    let n = args.n.unwrap_or(base.sweep_n);
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) if e.is_no_device() => {
            println!("no CUDA device ({e}); the kernels cannot run here.");
            println!("The launches need none; on an H100's limits, for {n} x {n}:");
            for shape in BlockShape::LESSON_SWEEP {
                let cfg = launch_config(n, n, shape, 1);
                match validate_launch(
                    "sum_matrix_2d",
                    n,
                    n,
                    shape,
                    1,
                    &DeviceLimits::H100,
                    &KernelLimits::unconstrained(),
                ) {
                    Ok(_) => println!("  block {shape}: {cfg}"),
                    Err(e) => println!("  block {shape}: refused: {e}"),
                }
            }
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    println!("{}", gpu.info());
    let opts = MatrixOptions { sweep_n: n, layouts: false, ..base };
    let report = measure_suite(&gpu, &opts)?;
    let sweep = report.sweep.ok_or("the sweep did not run")?;
    println!(
        "sum_matrix_2d on {n} x {n} f32: DtoD {:.1} GB/s, floor {:.3} ms (GB = 1e9 bytes; 2 reads + 1 write)",
        sweep.dtod.gbps,
        sweep.dtod.floor_ms(sweep.bytes_moved as f64)
    );
    println!("{}", sweep.table());
    println!("{}", sweep.goal.summary_line(n));
    Ok(())
}
