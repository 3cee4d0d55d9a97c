//! The occupancy calculator against the driver: for every kernel of the
//! loaded module (whatever it holds), every block size 32..=1024 step 32
//! the kernel can launch, with 0 and 16 KiB of dynamic shared memory
//! (where the kernel can take 16 KiB without an opt-in), the calculator's
//! resident blocks per SM must equal `cuOccupancyMaxActiveBlocksPerMultiprocessor`:
//! 100% agreement. And the guideline-based suggestion must reach the
//! occupancy of the driver's `cuOccupancyMaxPotentialBlockSize`.

mod common;

use coalesce::occupancy::occupancy;

const DYNAMIC: [u32; 2] = [0, 16 * 1024];

#[test]
fn calculator_agrees_with_the_driver_on_every_kernel() {
    let gpu = gpu_or_skip!();
    let device = gpu.info().limits;
    let units = gpu.granularity();
    let kernels = gpu.kernel_names();
    assert!(kernels.len() >= 20, "the module lists only {} kernels: {kernels:?}", kernels.len());
    let (mut checked, mut skipped) = (0usize, 0usize);
    let mut disagreements = Vec::new();
    // Kernels compared in fewer configurations than every block size up to
    // their limit without dynamic shared memory.
    let mut short = Vec::new();
    for &name in &kernels {
        let limits = gpu.kernel_limits(name).unwrap();
        let before = checked;
        for dynamic in DYNAMIC {
            if limits.static_shared_bytes + dynamic > device.max_shared_per_block {
                skipped += 1;
                continue;
            }
            for threads in (32..=1024).step_by(32) {
                if threads > limits.max_threads_per_block {
                    skipped += 1;
                    continue;
                }
                let ours = occupancy(&device, &units, &limits, threads, dynamic).unwrap();
                let driver = gpu.max_active_blocks_per_sm(name, threads, dynamic as usize).unwrap();
                checked += 1;
                if ours.active_blocks != driver {
                    disagreements.push(format!(
                        "{name} threads={threads} dynamic={dynamic}: calculator {} ({}), driver {driver}; kernel {limits:?}",
                        ours.active_blocks,
                        ours
                    ));
                }
            }
        }
        let sizes = (limits.max_threads_per_block.min(1024) / 32) as usize;
        if checked - before < sizes {
            short.push(format!("{name}: {} of {sizes}", checked - before));
        }
    }
    println!(
        "occupancy: {} kernels, {checked} configurations compared, {} agree ({:.1}%), {skipped} skipped \
         (block above the kernel's limit, or 16 KiB would need an opt-in)",
        kernels.len(),
        checked - disagreements.len(),
        100.0 * (checked - disagreements.len()) as f64 / checked.max(1) as f64
    );
    // Every kernel in every block size up to its limit (256 for those with
    // launch bounds), at least without dynamic shared memory.
    assert!(short.is_empty(), "kernels compared in too few configurations: {short:?}");
    assert!(checked >= kernels.len() * 8, "only {checked} configurations compared");
    assert!(disagreements.is_empty(), "{} disagreements:\n{}", disagreements.len(), disagreements.join("\n"));
}

#[test]
fn suggestion_reaches_the_drivers_occupancy() {
    let gpu = gpu_or_skip!();
    let mut rows = Vec::new();
    for name in gpu.kernel_names() {
        let limits = gpu.kernel_limits(name).unwrap();
        let s = gpu.suggest_block_size(name, 0).unwrap();
        assert_eq!(s.threads % 32, 0, "{name}");
        assert!(s.threads >= 128 || limits.max_threads_per_block < 128, "{name}: {}", s.threads);
        let (min_grid, block) = gpu.driver_suggested_launch(name, 0).unwrap();
        let driver_blocks = gpu.max_active_blocks_per_sm(name, block, 0).unwrap();
        let driver_warps = driver_blocks * block.div_ceil(32);
        rows.push(format!(
            "{name:<28} ours {:>4} threads {:>2} warps/SM | driver {block:>4} threads {driver_warps:>2} warps/SM, min grid {min_grid}",
            s.threads, s.occupancy.active_warps
        ));
        // Ours must be what the driver itself says for our block size.
        assert_eq!(gpu.max_active_blocks_per_sm(name, s.threads, 0).unwrap(), s.occupancy.active_blocks, "{name}");
        if block >= 128 && block % 32 == 0 {
            assert_eq!(s.occupancy.active_warps, driver_warps, "{name}: ours {s:?}, driver block {block}");
        } else {
            println!("{name}: the driver prefers {block} threads, outside the guideline range");
        }
    }
    println!("{}", rows.join("\n"));
}

#[test]
fn lesson_block_40_by_2_wastes_16_slots() {
    let gpu = gpu_or_skip!();
    let o = gpu.occupancy("math_kernel1", 80, 0).unwrap();
    assert_eq!((o.warps_per_block, o.wasted_thread_slots), (3, 16));
    assert_eq!(o.active_blocks, gpu.max_active_blocks_per_sm("math_kernel1", 80, 0).unwrap());
    println!("math_kernel1, (40, 2) block: {o}");
}
