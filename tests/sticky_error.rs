//! A kernel that faults, with synchronized launches on: the error names the
//! faulting kernel and its configuration, and says the error is sticky.
//!
//! Alone in its own test binary because the fault poisons the process's
//! context, and excluded from compute-sanitizer runs because the fault is
//! deliberate.

mod common;

use coalesce::{DevicePtr, Error, LaunchConfig};

#[test]
fn faulting_kernel_is_named_in_sync_mode() {
    let gpu = gpu_or_skip!();
    gpu.set_sync_launches(true);
    let cfg = LaunchConfig::new(4, 256);
    let n: usize = 1 << 16;
    // SAFETY: deliberately violated: address 0x10 is not a device
    // allocation. This is the point of the test; the process's context is
    // unusable afterwards and nothing else runs in this binary.
    let e = unsafe { gpu.launch("copy_scalar", &cfg, &[&DevicePtr(0x10), &DevicePtr(0x10), &n]) }.unwrap_err();
    match &e {
        Error::Kernel { kernel: "copy_scalar", config, source, hint } => {
            assert_eq!(*config, cfg);
            assert!(source.is_sticky(), "{source}");
            assert!(hint.contains("COALESCE_SYNC_LAUNCHES"), "{hint}");
        }
        e => panic!("expected Error::Kernel for copy_scalar, got {e}"),
    }
    println!("{e}");
}
