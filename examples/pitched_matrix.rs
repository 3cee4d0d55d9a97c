//! Lesson 003, pitched memory, in one run: allocate three pitched `f32`
//! matrices (`cuMemAllocPitch`), copy the inputs in from contiguous host
//! rows (`cuMemcpy2D`), add them with `matrix_add_pitched`, copy the result
//! out, verify it against the rayon reference, and print the pitch and the
//! padding overhead.
//!
//! ```sh
//! cargo run --release --example pitched_matrix -- --rows 10000 --cols 10000
//! ```
//!
//! Without a GPU it prints the lesson's address arithmetic (which needs
//! none) and says so.

use clap::Parser;
use coalesce::kernels::dev::pitched::byte_offset;
use coalesce::matrix::reference_add;
use coalesce::{BlockShape, Gpu, reference};
use rand::{Rng, SeedableRng, rngs::StdRng};

#[derive(Parser)]
#[command(about = "Pitched 2D matrices: allocate, copy in, add, copy out, verify")]
struct Args {
    /// Rows (height).
    #[arg(long, default_value_t = 10_000)]
    rows: usize,
    /// Columns (width, elements).
    #[arg(long, default_value_t = 10_000)]
    cols: usize,
    /// Block shape (XxY).
    #[arg(long, default_value = "32x32")]
    block: BlockShape,
    /// Seed for the random inputs.
    #[arg(long, default_value_t = 2026)]
    seed: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let (rows, cols) = (args.rows, args.cols);
    let n = rows.checked_mul(cols).ok_or("rows x cols overflows")?;
    if n == 0 {
        return Err("--rows and --cols must be at least 1".into());
    }
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) if e.is_no_device() => {
            println!("no CUDA device ({e}); the kernel cannot run here.");
            println!("The lesson's arithmetic needs none: with a pitch of 40192 bytes, element (row 2, col 5)");
            println!(
                "of an f32 matrix is {} bytes from the base (2 x 40192 + 5 x 4).",
                byte_offset::<f32>(2, 5, 40_192)
            );
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    println!("{}", gpu.info());

    let mut rng = StdRng::seed_from_u64(args.seed);
    let a: Vec<f32> = (0..n).map(|_| rng.random_range(-1000.0..1000.0)).collect();
    let b: Vec<f32> = (0..n).map(|_| rng.random_range(-1000.0..1000.0)).collect();

    // cudaMallocPitch + cudaMemcpy2D, three times.
    let da = gpu.upload_pitched(&a, cols, rows)?;
    let db = gpu.upload_pitched(&b, cols, rows)?;
    let mut dc = gpu.alloc_pitched_zeroed::<f32>(cols, rows)?;
    println!(
        "{rows} x {cols} f32: {} bytes of data per row, pitch {} bytes (rows {}-byte aligned; the device's texture \
         pitch alignment is {} bytes)",
        dc.row_bytes(),
        dc.pitch(),
        dc.row_alignment(),
        gpu.pitch_alignment()?
    );
    println!(
        "padding {} bytes per row, {} bytes in all: {:.2}% over the {} bytes of data",
        dc.pitch() - dc.row_bytes(),
        dc.padding_bytes(),
        100.0 * dc.overhead(),
        dc.row_bytes() * rows
    );

    let cfg = gpu.matrix_add_pitched(&da, &db, &mut dc, args.block)?; // warm-up and launch shape
    let ms = gpu.time(|| gpu.matrix_add_pitched(&da, &db, &mut dc, args.block).map(|_| ()))?;
    println!(
        "matrix_add_pitched {cfg}: {ms:.3} ms, {:.1} GB/s (2 reads + 1 write of the data)",
        3.0 * (n * 4) as f64 / (ms as f64 * 1e6)
    );

    // cudaMemcpy2D back to contiguous host rows, then check every element.
    let got = dc.to_vec()?;
    let mut want = vec![0f32; n];
    reference_add(&a, &b, &mut want)?;
    let (g, w): (Vec<u32>, Vec<u32>) =
        (got.iter().map(|x| x.to_bits()).collect(), want.iter().map(|x| x.to_bits()).collect());
    match reference::first_mismatch(&g, &w)? {
        None => println!("verified: all {n} elements equal the CPU reference bit for bit"),
        Some((i, gv, wv)) => {
            return Err(format!(
                "element (row {}, col {}) is {}, expected {}",
                i / cols,
                i % cols,
                f32::from_bits(gv),
                f32::from_bits(wv)
            )
            .into());
        }
    }
    Ok(())
}
