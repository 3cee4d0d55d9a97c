use coalesce::conv::channels::{Filter2d, Image};
use coalesce::conv::{Boundary, ConvOp};
use coalesce::{Gpu, KernelArg, LaunchConfig};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() -> coalesce::Result<()> {
    let gpu = Gpu::new()?;
    let (w, h, c) = (4096usize, 4096usize, 3usize);
    let n = w * h * c;
    let host: Vec<u8> = (0..n).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let input = gpu.upload(&host)?;
    let mut output = gpu.alloc_zeroed::<u8>(n)?;
    let filter = Filter2d::<u8>::new(&gpu, &[1.0f32 / 25.0; 25], 5, 5, ConvOp::Correlate, Boundary::Zero)?;
    let img = Image::new(w, h, c)?;
    let plan = filter.plan(img)?;
    println!("plan {} grid {} rows {}", plan.kernel, plan.grid, plan.rows);
    let (src, mut dst) = (input.as_view(), output.as_view_mut());
    for _ in 0..20 {
        filter.run(&src, &mut dst, img)?;
    }
    gpu.synchronize()?;
    // Host cost of a call, fewer calls than the launch queue holds.
    let mut host_us = Vec::new();
    for _ in 0..20 {
        gpu.synchronize()?;
        let t = Instant::now();
        for _ in 0..100 {
            filter.run(&src, &mut dst, img)?;
        }
        host_us.push(t.elapsed().as_secs_f64() * 1e6 / 100.0);
    }
    gpu.synchronize()?;
    println!("host per run(): {:.2} us (median of 20 x 100)", median(host_us));
    let mut plan_us = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        for _ in 0..100 {
            std::hint::black_box(filter.plan(std::hint::black_box(img))?);
        }
        plan_us.push(t.elapsed().as_secs_f64() * 1e6 / 100.0);
    }
    println!("host per plan(): {:.2} us", median(plan_us));
    let mut chk = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        for _ in 0..100 {
            std::hint::black_box(coalesce::launch::ParamArray::new(&[1.0f32, 2.0, 3.0], 16)?);
            std::hint::black_box(gpu.info());
        }
        chk.push(t.elapsed().as_secs_f64() * 1e6 / 100.0);
    }
    println!("host per ParamArray: {:.2} us", median(chk));
    let time = |f: &mut dyn FnMut() -> coalesce::Result<()>| -> coalesce::Result<f64> {
        let mut v = Vec::new();
        for rep in 0..30 {
            let ms = gpu.time(|| {
                for _ in 0..20 {
                    f()?;
                }
                Ok(())
            })?;
            if rep >= 5 {
                v.push(ms as f64 / 20.0);
            }
        }
        Ok(median(v))
    };
    let t_run = time(&mut || filter.run(&src, &mut dst, img).map(drop))?;
    let (s, d) = (src.device_ptr(), dst.device_ptr());
    let t = 1.0f32 / 25.0;
    let taps = coalesce::launch::ParamArray::new(&[t, -8_388_608.0 * t, 8_388_608.0, 0.0], 16)?;
    let (wu, hu, pitch, rows, mode) = (w as u32, h as u32, w * c, plan.rows, 0u32);
    let cfg = LaunchConfig::new(plan.grid, plan.threads).with_shared_mem(plan.shared_bytes);
    let args: [&dyn KernelArg; 9] = [&s, &d, &wu, &hu, &pitch, &pitch, &rows, &mode, &taps];
    let mut host2 = Vec::new();
    for _ in 0..20 {
        gpu.synchronize()?;
        let t0 = Instant::now();
        for _ in 0..100 {
            unsafe { gpu.launch(plan.kernel, &cfg, &args)? };
        }
        host2.push(t0.elapsed().as_secs_f64() * 1e6 / 100.0);
    }
    gpu.synchronize()?;
    println!("host per gpu.launch: {:.2} us", median(host2));
    let t_launch = time(&mut || unsafe { gpu.launch(plan.kernel, &cfg, &args) })?;
    let t_run2 = time(&mut || filter.run(&src, &mut dst, img).map(drop))?;
    let t_launch2 = time(&mut || unsafe { gpu.launch(plan.kernel, &cfg, &args) })?;
    println!("event ms: run {t_run:.4} launch {t_launch:.4} run {t_run2:.4} launch {t_launch2:.4}");
    Ok(())
}
