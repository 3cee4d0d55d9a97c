//! Faults and out-of-memory, in a test binary of their own (a fault poisons
//! the device's context for every `Gpu` in the process until a new one
//! resets it), excluded from compute-sanitizer runs because the fault is
//! deliberate.
//!
//! * An allocation that fails in the middle of an operation leaves device
//!   memory as it found it (first: nothing works after the fault).
//! * A kernel that faults, with synchronized launches on: the error names
//!   the kernel and says the error is sticky. Every later call on that
//!   `Gpu`, its clones, its stream views, a separately made `Gpu` of the
//!   device and a `Gpu` made after the fault returns `Error::Faulted`
//!   naming the first fault; none hangs, and dropping everything
//!   afterwards does not panic. (CUDA allows no new context on the device
//!   in a process after such a fault: see `coalesce::context`.)

mod common;

use coalesce::conv::{Boundary, Conv1d, Conv1dVariant, ConvOp, Separable};
use coalesce::{DevicePtr, Error, Gpu, LaunchConfig, ReduceVariant};

fn expect_faulted(what: &str, r: Result<impl std::fmt::Debug, Error>) {
    match r {
        Err(Error::Faulted { fault, .. }) => {
            assert_eq!(fault.kernel, Some("copy_scalar"), "{what}: {fault}");
            assert!(fault.error.is_sticky(), "{what}: {fault}");
        }
        other => panic!("{what}: expected Error::Faulted naming copy_scalar, got {other:?}"),
    }
}

/// Out of memory first, the fault second: the order matters, so one test.
#[test]
fn out_of_memory_then_a_fault() {
    let gpu = gpu_or_skip!();
    out_of_memory_in_the_middle_of_an_operation_frees_what_it_allocated(&gpu);
    a_fault_makes_every_later_call_name_it(gpu);
}

fn a_fault_makes_every_later_call_name_it(gpu: Gpu) {
    let (mut rng, _) = common::rng();
    let old_data: Vec<i32> = common::random_u32(&mut rng, 1 << 16).into_iter().map(|x| x as i32).collect();
    let old_buffer = gpu.upload(&old_data).unwrap();
    let clone = gpu.clone();
    let side = gpu.on(&gpu.new_stream().unwrap()).unwrap();
    let separate = Gpu::new().unwrap();
    let old_conv = Conv1d::new(&side, &[1.0f32, 2.0, 1.0], ConvOp::Correlate, Boundary::Zero).unwrap();

    gpu.set_sync_launches(true);
    let cfg = LaunchConfig::new(4, 256);
    let n: usize = 1 << 16;
    // SAFETY: deliberately violated: address 0x10 is not a device
    // allocation. This is the point of the test.
    let e = unsafe { gpu.launch("copy_scalar", &cfg, &[&DevicePtr(0x10), &DevicePtr(0x10), &n]) }.unwrap_err();
    match &e {
        Error::Kernel { kernel: "copy_scalar", config, source, hint } => {
            assert_eq!(*config, cfg);
            assert!(source.is_sticky(), "{source}");
            assert!(hint.contains("COALESCE_SYNC_LAUNCHES"), "{hint}");
        }
        e => panic!("expected Error::Kernel for copy_scalar, got {e}"),
    }
    assert!(e.is_fault());
    println!("the fault: {e}");

    // Every later call on this context's handles names the first fault.
    for (what, g) in [("the Gpu", &gpu), ("a clone", &clone), ("a stream view", &side), ("a separate Gpu", &separate)] {
        expect_faulted(&format!("{what}: upload"), g.upload(&[1u32, 2, 3]));
        expect_faulted(&format!("{what}: synchronize"), g.synchronize());
        expect_faulted(&format!("{what}: new_stream"), g.new_stream());
        expect_faulted(&format!("{what}: reduce"), g.reduce_sum(&old_buffer.as_view(), ReduceVariant::Fast));
        assert_eq!(g.fault().and_then(|f| f.kernel), Some("copy_scalar"), "{what}");
    }
    expect_faulted("to_vec of an old buffer", old_buffer.to_vec());
    expect_faulted("a convolution", {
        let (src, mut dst) = (gpu.upload(&[1f32; 4]), gpu.alloc_zeroed::<f32>(4));
        match (src, &mut dst) {
            (Ok(s), Ok(d)) => old_conv.run(Conv1dVariant::Fast, &s.as_view(), &mut d.as_view_mut()).map(|_| ()),
            (Err(e), _) => Err(e),
            (_, Err(_)) => dst.map(|_| ()),
        }
    });

    // A Gpu made after the fault reports it too.
    expect_faulted("a Gpu made after the fault", Gpu::new());
    // Dropping everything does not panic.
    drop((old_buffer, old_conv, clone, side, separate, gpu));
}

fn out_of_memory_in_the_middle_of_an_operation_frees_what_it_allocated(gpu: &Gpu) {
    // A 4096 × 4096 image; the two-pass separable filter needs an
    // intermediate of the same 64 MiB, allocated on its first run (the
    // fused kernel needs none, so it is turned off here).
    let (w, h) = (4096, 4096);
    let input = gpu.alloc_zeroed::<f32>(w * h).unwrap();
    let mut output = gpu.alloc_zeroed::<f32>(w * h).unwrap();
    let blur = Separable::<f32>::gaussian(gpu, 2.0, 2.0, Boundary::Nearest).unwrap().with_fused(false);
    // Leave less than that free.
    let (free, _) = gpu.memory_info().unwrap();
    let ballast_bytes = free.saturating_sub(32 << 20);
    let ballast = gpu.alloc_zeroed::<u8>(ballast_bytes).unwrap();
    let (before, _) = gpu.memory_info().unwrap();
    assert!(before < 64 << 20, "{before} bytes still free");
    let e = blur.run(&input.as_view(), &mut output.as_view_mut(), w, h, w).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    let (after, _) = gpu.memory_info().unwrap();
    assert_eq!(after, before, "the failed run kept {} bytes", before.saturating_sub(after));
    let too_big = gpu.alloc_zeroed::<f32>(before);
    assert!(matches!(too_big, Err(Error::OutOfMemory { .. })), "{too_big:?}");
    assert_eq!(gpu.memory_info().unwrap().0, before);
    // With the memory back, the same run succeeds.
    drop(ballast);
    blur.run(&input.as_view(), &mut output.as_view_mut(), w, h, w).unwrap();
    gpu.synchronize().unwrap();
}
