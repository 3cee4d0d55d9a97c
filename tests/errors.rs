//! Every error path of the public API returns a typed error (never a panic,
//! never undefined behaviour). The first test runs everywhere; the rest
//! need a device.

mod common;

use coalesce::{CopyVariant, Error, Gpu};

#[test]
fn without_a_device_creation_fails_cleanly() {
    match Gpu::new() {
        Ok(gpu) => assert!(gpu.info().sm_count > 0),
        Err(e) => assert!(e.is_no_device(), "expected NoDevice, got {e:?}"),
    }
}

#[test]
fn length_and_range_errors() {
    let gpu = gpu_or_skip!();
    let src = gpu.upload(&[1u32, 2, 3, 4, 5]).unwrap();
    let mut dst = gpu.alloc_zeroed::<u32>(4).unwrap();
    let e = gpu.copy(&src.as_view(), &mut dst.as_view_mut(), CopyVariant::Auto).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { op: "copy", expected: 4, got: 5 }), "{e}");
    let e = gpu.copy_with_driver(&src.as_view(), &mut dst.as_view_mut()).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    let e = src.view(2..6).unwrap_err();
    assert!(matches!(e, Error::OutOfBounds { start: 2, end: 6, len: 5, .. }), "{e}");
    #[allow(clippy::reversed_empty_ranges)]
    let e = src.view(3..2).unwrap_err();
    assert!(matches!(e, Error::OutOfBounds { .. }), "{e}");
    let e = dst.copy_from_host(&[1, 2, 3]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { op: "copy_from_host", .. }), "{e}");
    let e = dst.copy_to_host(&mut [0u32; 7]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { op: "copy_to_host", .. }), "{e}");
    // Nothing above touched the data.
    assert_eq!(dst.to_vec().unwrap(), [0; 4]);
    assert_eq!(src.to_vec().unwrap(), [1, 2, 3, 4, 5]);
}

#[test]
fn allocation_errors() {
    let gpu = gpu_or_skip!();
    let e = gpu.alloc_zeroed::<u64>(usize::MAX / 4).unwrap_err();
    assert!(matches!(e, Error::SizeOverflow { .. }), "{e}");
    // More than the card has: a typed out-of-memory error.
    let total = gpu.info().total_memory;
    let e = gpu.alloc_zeroed::<u32>(total / 4 * 2).unwrap_err();
    match e {
        Error::OutOfMemory { requested, total: t, .. } => assert_eq!((requested, t), (total / 4 * 8, total)),
        e => panic!("expected OutOfMemory, got {e}"),
    }
    // The handle still works afterwards.
    let b = gpu.upload(&[7u32; 3]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [7; 3]);
}

#[test]
fn symbol_errors() {
    let gpu = gpu_or_skip!();
    let table_bytes = gpu.symbol_size("PROBE_TABLE").unwrap();
    assert_eq!(table_bytes, coalesce::kernels::probe::TABLE_LEN * 4);
    let e = gpu.write_symbol("PROBE_TABLE", &[1u32; 3]).unwrap_err();
    assert!(e.to_string().contains("holds 256 bytes"), "{e}");
    let e = gpu.write_symbol("NO_SUCH_SYMBOL", &[1u32]).unwrap_err();
    assert!(e.to_string().contains("not found"), "{e}");
    let e = gpu.write_symbol("BAD\0NAME", &[1u32]).unwrap_err();
    assert!(matches!(e, Error::Symbol { .. }), "{e}");
}

#[test]
fn unknown_kernel_is_named() {
    let gpu = gpu_or_skip!();
    let cfg = coalesce::LaunchConfig::new(1, 32);
    // SAFETY: the kernel does not exist, nothing is launched.
    let e = unsafe { gpu.launch("no_such_kernel", &cfg, &[]) }.unwrap_err();
    assert!(matches!(e, Error::UnknownKernel("no_such_kernel")), "{e}");
}

#[test]
fn wrong_kernel_arguments_are_refused_before_the_driver() {
    let gpu = gpu_or_skip!();
    let buf = gpu.alloc_zeroed::<u32>(8).unwrap();
    let cfg = coalesce::LaunchConfig::new(1, 32);
    let (p, n) = (buf.device_ptr(), 8usize);
    // SAFETY: refused by the argument check, nothing runs.
    let e = unsafe { gpu.launch("copy_scalar", &cfg, &[&p, &p]) }.unwrap_err();
    match &e {
        Error::KernelArgs { kernel: "copy_scalar", expected, got } => {
            assert_eq!((expected.as_slice(), got.as_slice()), (&[8, 8, 8][..], &[8, 8][..]))
        }
        e => panic!("expected KernelArgs, got {e}"),
    }
    // SAFETY: refused by the argument check, nothing runs.
    let e = unsafe { gpu.launch("copy_scalar", &cfg, &[&p, &p, &n, &n]) }.unwrap_err();
    assert!(matches!(e, Error::KernelArgs { .. }), "{e}");
    // SAFETY: refused by the argument check, nothing runs.
    let e = unsafe { gpu.launch("copy_scalar", &cfg, &[&p, &p, &8u32]) }.unwrap_err();
    assert!(e.to_string().contains("[8, 8, 4]"), "{e}");
}
