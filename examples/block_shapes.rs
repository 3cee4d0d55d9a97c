//! Lesson 002 §3.7–3.9 in one run: `sum_matrix_2d` on a square `f32`
//! matrix with each of the lesson's block shapes, verified against the
//! rayon reference, timed against the DRAM floor (two reads and one write
//! at the driver's device-to-device copy bandwidth), with the driver's
//! theoretical occupancy per shape. `(256, 8)` is refused before any launch.
//!
//! Short by default (4096 x 4096, 5 samples per shape); `--full` runs the
//! lesson's 16384 x 16384 with 20 samples and judges the goal (best shape
//! at >= 90% of the floor). It runs the `matrix` suite's sweep as
//! `coalesce bench matrix --only sweep` does (tables, goal line,
//! `bench-out/matrix.json` and `matrix.svg`), then reads the fastest shape
//! of each kernel back from the returned record.
//!
//! ```sh
//! cargo run --release --example block_shapes            # short
//! cargo run --release --example block_shapes -- --full  # 16384^2
//! ```

use clap::Parser;
use coalesce::bench::{matrix, run};
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
    let n = args.n.unwrap_or(if args.full { matrix::GOAL_N } else { 4096 });
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
    let side = n.to_string();
    let mut words = vec!["--only", "sweep", "--sweep-n", &side];
    if !args.full {
        words.push("--quick");
    }
    let suite: matrix::Matrix = run::parse(&words)?;
    let record = run::execute(&gpu, &suite)?;
    // Each row of the "sweep" table is one block shape; `x1_pct_floor` is
    // sum_matrix_2d's fraction of the DRAM floor (null where not measured).
    for v in ["x1", "x4"] {
        let key = format!("{v}_pct_floor");
        let best = (record.rows("sweep").iter())
            .filter_map(|r| Some((r["block"].as_str()?, r[&key].as_f64()?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((block, f)) = best {
            println!("fastest {v} block: {block} at {:.1}% of the DRAM floor", 100.0 * f);
        }
    }
    Ok(())
}
