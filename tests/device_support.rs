//! Each device-support piece (indices, constant memory, static and dynamic
//! shared memory with barriers, warp shuffles) run by its probe kernel and
//! compared with a CPU answer.

mod common;

use coalesce::kernels::probe::{INDEX_WORDS, REVERSE_TILE, TABLE_LEN};
use coalesce::{DevicePtr, Dim3, Error, Gpu, LaunchConfig, LaunchLimit};
use common::POISON;

fn poisoned_u32(gpu: &Gpu, n: usize) -> coalesce::DeviceBuffer<u32> {
    let mut b = gpu.alloc_zeroed::<u32>(n).unwrap();
    b.fill_bytes(POISON).unwrap();
    b
}

#[test]
fn indices_in_three_dimensions() {
    let gpu = gpu_or_skip!();
    for (grid, block) in [((3u32, 2u32, 2u32), (8u32, 4u32, 2u32)), ((5, 1, 1), (33, 1, 1)), ((1, 7, 3), (1, 1, 64))] {
        let (grid, block) = (Dim3::from(grid), Dim3::from(block));
        let threads = (grid.volume() * block.volume()) as usize;
        let mut out = poisoned_u32(&gpu, threads * INDEX_WORDS);
        let cfg = LaunchConfig::new(grid, block);
        // SAFETY: `out` holds INDEX_WORDS words per thread of the launch.
        unsafe { gpu.launch("probe_index", &cfg, &[&out.device_ptr()]).unwrap() };
        let got = out.to_vec().unwrap();
        let mut want = Vec::with_capacity(threads * INDEX_WORDS);
        for bz in 0..grid.z {
            for by in 0..grid.y {
                for bx in 0..grid.x {
                    for tz in 0..block.z {
                        for ty in 0..block.y {
                            for tx in 0..block.x {
                                want.extend([
                                    tx, ty, tz, bx, by, bz, block.x, block.y, block.z, grid.x, grid.y, grid.z,
                                ]);
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(got, want, "{cfg}");
        out.fill_bytes(0).unwrap();
    }
}

#[test]
fn constant_table_written_by_name_and_broadcast() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let table = common::random_u32(&mut rng, TABLE_LEN);
    gpu.write_symbol("PROBE_TABLE", &table).unwrap();
    assert_eq!(gpu.read_symbol::<u32>("PROBE_TABLE").unwrap(), table);
    for n in [1usize, 31, 32, 33, 100_003] {
        let out = poisoned_u32(&gpu, n);
        let cfg = LaunchConfig::new(n.div_ceil(256) as u32, 256);
        // SAFETY: `out` holds n words.
        unsafe { gpu.launch("probe_const", &cfg, &[&out.device_ptr(), &n]).unwrap() };
        let want: Vec<u32> = (0..n).map(|i| table[(i / 32) % TABLE_LEN] ^ i as u32).collect();
        assert_eq!(out.to_vec().unwrap(), want, "n={n} seed={seed}");
    }
}

fn reversed_chunks(input: &[u32], chunk: usize) -> Vec<u32> {
    input.chunks(chunk).flat_map(|c| c.iter().rev().copied()).collect()
}

#[test]
fn static_shared_tile_with_barrier() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    for n in [1usize, REVERSE_TILE - 1, REVERSE_TILE, REVERSE_TILE + 1, 1000 * REVERSE_TILE + 37] {
        let host = common::random_u32(&mut rng, n);
        let input = gpu.upload(&host).unwrap();
        let out = poisoned_u32(&gpu, n);
        let cfg = LaunchConfig::new(n.div_ceil(REVERSE_TILE) as u32, REVERSE_TILE as u32);
        // SAFETY: both hold n words; block size is REVERSE_TILE.
        unsafe { gpu.launch("probe_shared_reverse", &cfg, &[&input.device_ptr(), &out.device_ptr(), &n]).unwrap() };
        assert_eq!(out.to_vec().unwrap(), reversed_chunks(&host, REVERSE_TILE), "n={n} seed={seed}");
    }
}

#[test]
fn dynamic_shared_memory_sized_at_launch() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let n = 100_000 + 7;
    let host = common::random_u32(&mut rng, n);
    let input = gpu.upload(&host).unwrap();
    // Block sizes that are not multiples of 32 included; the last case asks
    // for more than the default 48 KiB, which needs the opt-in attribute.
    for (block, smem) in [(32u32, 128u32), (96, 384), (1000, 4000), (1024, 64 * 1024)] {
        let out = poisoned_u32(&gpu, n);
        let cfg = LaunchConfig::new(n.div_ceil(block as usize) as u32, block).with_shared_mem(smem);
        // SAFETY: both hold n words; at least blockDim.x words of dynamic
        // shared memory.
        unsafe { gpu.launch("probe_dynamic_reverse", &cfg, &[&input.device_ptr(), &out.device_ptr(), &n]).unwrap() };
        assert_eq!(out.to_vec().unwrap(), reversed_chunks(&host, block as usize), "{cfg} seed={seed}");
    }
}

#[test]
fn warp_shuffles_down_and_xor() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let n = 32 * 4099;
    let host = common::random_u32(&mut rng, n);
    let input = gpu.upload(&host).unwrap();
    let sums = poisoned_u32(&gpu, n / 32);
    let all = poisoned_u32(&gpu, n);
    let cfg = LaunchConfig::new((n / 128) as u32 + 1, 128);
    // SAFETY: input/all hold n words, sums n/32; n and the block size are
    // multiples of 32.
    unsafe {
        gpu.launch("probe_warp_sum", &cfg, &[&input.device_ptr(), &sums.device_ptr(), &all.device_ptr(), &n]).unwrap()
    };
    let want: Vec<u32> = host.chunks(32).map(|w| w.iter().fold(0u32, |a, &x| a.wrapping_add(x))).collect();
    assert_eq!(sums.to_vec().unwrap(), want, "shfl.down seed={seed}");
    let want_all: Vec<u32> = want.iter().flat_map(|&s| [s; 32]).collect();
    assert_eq!(all.to_vec().unwrap(), want_all, "shfl.bfly seed={seed}");
}

#[test]
fn lesson_block_256_by_8_never_reaches_the_driver() {
    let gpu = gpu_or_skip!();
    let out = gpu.alloc_zeroed::<u32>(16).unwrap();
    let cfg = LaunchConfig::new((1, 1), (256, 8));
    // SAFETY: never launched: validation refuses the configuration.
    let err = unsafe { gpu.launch("probe_index", &cfg, &[&out.device_ptr()]) }.unwrap_err();
    match err {
        Error::InvalidLaunch {
            kernel: "probe_index",
            limit: LaunchLimit::ThreadsPerBlock,
            max: 1024,
            value: 2048,
            ..
        } => {}
        e => panic!("unexpected: {e}"),
    }
    let msg = err_text(&gpu, LaunchConfig::new(1, 32).with_shared_mem(1 << 30));
    assert!(msg.contains("shared memory"), "{msg}");
}

fn err_text(gpu: &Gpu, cfg: LaunchConfig) -> String {
    // SAFETY: never launched: validation refuses the configuration.
    unsafe { gpu.launch("probe_index", &cfg, &[&DevicePtr(0)]) }.unwrap_err().to_string()
}

#[test]
fn occupancy_of_copy_kernels_fills_the_device() {
    let gpu = gpu_or_skip!();
    let per_sm = gpu.max_active_blocks_per_sm("copy_vec4", 256, 0).unwrap();
    let limits = gpu.info().limits;
    assert!(per_sm >= 1 && per_sm * 256 <= limits.max_threads_per_sm, "{per_sm}");
    assert_eq!(gpu.max_resident_blocks("copy_vec4", 256).unwrap(), per_sm * gpu.info().sm_count);
    let k = gpu.kernel_limits("copy_vec4").unwrap();
    assert_eq!(k.local_bytes_per_thread, 0);
    assert!(k.registers_per_thread > 0 && k.max_threads_per_block >= 256);
    assert_eq!(gpu.kernel_limits("probe_shared_reverse").unwrap().static_shared_bytes, 1024);
}
