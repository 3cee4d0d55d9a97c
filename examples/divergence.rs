//! The execution-model lesson's `simpleDivergence`: a warm-up kernel, then
//! `mathKernel1..4`, each timed with CUDA events and checked against the
//! CPU reference.
//!
//! ```sh
//! cargo run --release --example divergence -- 64 4194304   # [block size] [data size]
//! ```
//!
//! The lesson's defaults are a block of 64 and 64 elements; the data size
//! defaults here to 2^22 so the times are above the events' resolution.
//! `mathKernel4` runs as intended (`(tid >> 5) & 1`); the lesson's version
//! has a C precedence bug that makes every thread write 200 (see
//! `coalesce::kernels::divergence`).

use coalesce::Gpu;
use coalesce::divergence::{MathKernel, lesson_kernel4_as_written};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let block: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(64);
    let size: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1 << 22);
    if block == 0 || size == 0 {
        return Err("block size and data size must be positive".into());
    }
    let gpu = match Gpu::new() {
        Ok(g) => g,
        Err(e) if e.is_no_device() => {
            println!("no CUDA device ({e}); nothing to time.");
            let written: Vec<f32> = (0..64).map(lesson_kernel4_as_written).collect();
            println!("the lesson's mathKernel4 as written gives {:?}... for every thread", &written[..4]);
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    println!("divergence using Device {}: {}", gpu.info().ordinal, gpu.info().name);
    println!("Data size {size} Execution Configure (block {block}, grid {})", size.div_ceil(block as usize));
    let mut c = gpu.alloc_zeroed::<f32>(size)?;
    for k in MathKernel::ALL {
        c.fill_bytes(0xA5)?;
        let mut cfg = None;
        let ms = gpu.time(|| {
            cfg = Some(gpu.math_kernel(k, &mut c.as_view_mut(), block)?);
            Ok(())
        })?;
        let cfg = cfg.ok_or("no launch")?;
        let got = c.to_vec()?;
        if let Some(i) = (0..size).find(|&i| got[i] != k.expected(i)) {
            return Err(format!("{}: c[{i}] = {}, expected {}", k.lesson_name(), got[i], k.expected(i)).into());
        }
        println!(
            "{:<12} <<< {:4} {:4} >>> elapsed {:.6} sec",
            k.lesson_name(),
            cfg.grid.x,
            cfg.block.x,
            ms as f64 / 1e3
        );
    }
    println!("(CUDA-event times; every result verified against the CPU reference)");
    Ok(())
}
