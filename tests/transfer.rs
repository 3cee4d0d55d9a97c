//! Host <-> device transfers (lesson 004) against the host data they start
//! from: every path round-trips fresh random data exactly — pageable,
//! pinned, stream-ordered, mapped (zero-copy) in both directions — at odd
//! sizes (0, 1, non-multiples of 4 bytes and of 4 elements) and misaligned
//! device offsets, into poisoned destinations whose untouched padding must
//! stay poisoned; the multi-stream pipeline against the CPU reference; the
//! error paths. The first tests need no GPU.

mod common;

use coalesce::transfer::chunk_range;
use coalesce::{DeviceBuffer, Error, Gpu, ScaleAdd, Stage, reference};
use common::POISON;
use rand::rngs::StdRng;

/// Element counts: empty, one, odd, around a block, large.
fn lengths() -> Vec<usize> {
    vec![0, 1, 2, 3, 5, 7, 1023, 1025, 4099, (1 << 20) + 3, common::big(1 << 24, 1 << 16) + 1]
}

/// Room around device views so writes outside them are caught.
const PAD: usize = 8;

const POISON_WORD: u32 = u32::from_ne_bytes([POISON; 4]);

// ---- without a GPU -------------------------------------------------------

#[test]
fn scale_add_reference_is_the_iterated_step() {
    let (mut rng, seed) = common::rng();
    let input = common::random_u32(&mut rng, 10_001);
    for k in [0u32, 1, 2, 17, 300] {
        let op = ScaleAdd::lcg(k);
        let mut out = vec![0u32; input.len()];
        op.reference(&input, &mut out).unwrap();
        for (i, (&x, &y)) in input.iter().zip(&out).enumerate() {
            assert_eq!(y, op.iterate(x), "k={k} i={i} seed={seed}");
        }
    }
    // k = 0 is the identity; k = 1 one step.
    let mut out = vec![0u32; 3];
    ScaleAdd { a: 3, b: 5, k: 0 }.reference(&[1, 2, 3], &mut out).unwrap();
    assert_eq!(out, [1, 2, 3]);
    ScaleAdd { a: 3, b: 5, k: 1 }.reference(&[1, 2, u32::MAX], &mut out).unwrap();
    assert_eq!(out, [8, 11, 2]);
}

#[test]
fn reference_length_mismatch_is_an_error() {
    let e = ScaleAdd::lcg(3).reference(&[1, 2, 3], &mut [0; 2]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 2, got: 3, .. }), "{e}");
}

#[test]
fn chunks_partition_every_length() {
    for n in lengths() {
        for chunks in [1usize, 3, 4, 16] {
            let total: usize = (0..chunks).map(|c| chunk_range(n, chunks, c).len()).sum();
            assert_eq!(total, n);
            assert_eq!(chunk_range(n, chunks, chunks - 1).end, n);
        }
    }
}

#[test]
fn zero_copy_kernels_move_128_bits_and_keep_no_stack() {
    for c in common::sass::compiled("zero_copy_kernels_move_128_bits_and_keep_no_stack") {
        for k in ["zero_copy_read", "zero_copy_write"] {
            let w = c.global_widths(k);
            use coalesce::inspect::Access::{Load, Store};
            assert!(w.contains(&(Load, 128)) && w.contains(&(Store, 128)), "sm_{} {k}: {w:?}", c.arch);
            assert!(w.iter().all(|(_, bits)| [32, 128].contains(bits)), "sm_{} {k}: {w:?}", c.arch);
        }
        let w = c.global_widths("scale_add_u32");
        assert!(!w.is_empty() && w.iter().all(|(_, bits)| *bits == 32), "sm_{} scale_add_u32: {w:?}", c.arch);
        for k in ["zero_copy_read", "zero_copy_write", "scale_add_u32"] {
            let r = c.resources_of(k).unwrap_or_else(|| panic!("sm_{}: {k} not assembled", c.arch));
            assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "sm_{} {k}", c.arch);
        }
    }
}

// ---- on the GPU ----------------------------------------------------------

fn random_bytes<const N: usize>(rng: &mut StdRng, n: usize) -> Vec<[u8; N]> {
    let flat = common::random_bytes(rng, n * N);
    flat.chunks_exact(N).map(|c| c.try_into().unwrap()).collect()
}

/// A poisoned device buffer of `n + PAD` elements.
fn poisoned_device<T: coalesce::DeviceCopy + bytemuck::Pod>(gpu: &Gpu, n: usize) -> DeviceBuffer<T> {
    let mut d = gpu.alloc_zeroed::<T>(n + PAD).unwrap();
    d.fill_bytes(POISON).unwrap();
    d
}

/// `got` equals `want` inside `off..off + want.len()` and is poison
/// outside it.
fn check_padded<T: bytemuck::Pod + PartialEq + Send + Sync>(got: &[T], want: &[T], off: usize, ctx: &str) {
    let g = bytemuck::cast_slice::<T, u8>(got);
    let size = std::mem::size_of::<T>();
    let (lo, hi) = (off * size, (off + want.len()) * size);
    let mut expect = vec![POISON; g.len()];
    expect[lo..hi].copy_from_slice(bytemuck::cast_slice(want));
    if let Some((i, gb, wb)) = reference::first_mismatch(g, &expect).unwrap() {
        let place = if (lo..hi).contains(&i) { "inside the view" } else { "outside the view (padding)" };
        panic!("{ctx}: byte {i} ({place}) is {gb:#04x}, expected {wb:#04x}");
    }
}

/// Pageable, pinned and mapped round trips of `host` through a device view
/// at element offset `off`.
fn round_trips<T: coalesce::DeviceCopy + bytemuck::Pod + PartialEq + Send + Sync>(
    gpu: &Gpu,
    host: &[T],
    off: usize,
    ctx: &str,
) {
    let n = host.len();
    let poison_t = || {
        let mut v = vec![T::zeroed(); n];
        bytemuck::cast_slice_mut::<T, u8>(&mut v).fill(POISON);
        v
    };
    // Pageable.
    let mut dev = poisoned_device::<T>(gpu, n);
    gpu.htod(host, &mut dev.view_mut(off..off + n).unwrap()).unwrap();
    check_padded(&dev.to_vec().unwrap(), host, off, &format!("{ctx}: pageable HtoD"));
    let mut back = poison_t();
    gpu.dtoh(&dev.view(off..off + n).unwrap(), &mut back).unwrap();
    assert!(back == host, "{ctx}: pageable DtoH differs");

    // Pinned (the library's pinned path).
    let pinned = gpu.pinned_from_slice(host).unwrap();
    let mut dev = poisoned_device::<T>(gpu, n);
    pinned.copy_to_device(&mut dev.view_mut(off..off + n).unwrap()).unwrap();
    check_padded(&dev.to_vec().unwrap(), host, off, &format!("{ctx}: pinned HtoD"));
    let mut back = gpu.pinned_from_slice(&poison_t()).unwrap();
    back.copy_from_device(&dev.view(off..off + n).unwrap()).unwrap();
    assert!(back.as_slice() == host, "{ctx}: pinned DtoH differs");

    // Stream-ordered, on a stream of its own.
    let stream = gpu.new_stream().unwrap();
    let mut dev = poisoned_device::<T>(gpu, n);
    let mut back = gpu.pinned_from_slice(&poison_t()).unwrap();
    let t0 = stream.record().unwrap();
    // SAFETY: `pinned`, `back` and `dev` live, and are not touched by the
    // host, until the stream is synchronized below.
    unsafe {
        stream.htod_async(&pinned, &mut dev.view_mut(off..off + n).unwrap()).unwrap();
        stream.dtoh_async(&dev.view(off..off + n).unwrap(), &mut back).unwrap();
    }
    let t1 = stream.record().unwrap();
    stream.synchronize().unwrap();
    assert!(back.as_slice() == host, "{ctx}: stream-ordered round trip differs");
    check_padded(&dev.to_vec().unwrap(), host, off, &format!("{ctx}: stream-ordered HtoD"));
    let ms = t1.ms_since(&t0).unwrap();
    assert!(ms >= 0.0 && ms.is_finite(), "{ctx}: event time {ms}");

    // Mapped: a kernel reads host memory, then writes it.
    let mapped = gpu.mapped_from_slice(host).unwrap();
    assert!(n == 0 || mapped.device_ptr().0 != 0, "{ctx}: mapped memory has no device address");
    let mut dev = poisoned_device::<T>(gpu, n);
    let plan = gpu.zero_copy_to_device(&mapped, &mut dev.view_mut(off..off + n).unwrap()).unwrap();
    assert_eq!(plan.bytes, std::mem::size_of_val(host), "{ctx}");
    check_padded(&dev.to_vec().unwrap(), host, off, &format!("{ctx}: mapped HtoD (zero_copy_read), plan {plan:?}"));
    let mut out = gpu.mapped_from_slice(&poison_t()).unwrap();
    let plan = gpu.zero_copy_from_device(&dev.view(off..off + n).unwrap(), &mut out).unwrap();
    if out[..] != host[..] {
        let (g, w) = (bytemuck::cast_slice::<T, u8>(&out), bytemuck::cast_slice::<T, u8>(host));
        let i = g.iter().zip(w).position(|(a, b)| a != b).unwrap();
        panic!("{ctx}: mapped DtoH (zero_copy_write) byte {i} is {:#04x}, expected {:#04x}; plan {plan:?}", g[i], w[i]);
    }
}

#[test]
fn every_path_round_trips_u32() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    for n in lengths() {
        let host = common::random_u32(&mut rng, n);
        for off in [0, 1, 3] {
            round_trips(&gpu, &host, off, &format!("u32 n={n} offset {off} seed={seed}"));
        }
    }
}

#[test]
fn every_path_round_trips_bytes_and_odd_elements() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    for n in [0usize, 1, 2, 3, 5, 17, 4099, common::big((1 << 20) + 3, 65_539)] {
        let bytes = common::random_bytes(&mut rng, n);
        let triples = random_bytes::<3>(&mut rng, n);
        let quads = random_bytes::<8>(&mut rng, n);
        for off in [0, 1, 2, 5] {
            round_trips(&gpu, &bytes, off, &format!("u8 n={n} offset {off} seed={seed}"));
            round_trips(&gpu, &triples, off, &format!("[u8; 3] n={n} offset {off} seed={seed}"));
            round_trips(&gpu, &quads, off, &format!("[u8; 8] n={n} offset {off} seed={seed}"));
        }
    }
}

#[test]
fn flagged_pinned_memory_round_trips() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let host = common::random_u32(&mut rng, 100_003);
    for flags in [
        coalesce::HostAllocFlags { portable: true, ..Default::default() },
        coalesce::HostAllocFlags { write_combined: true, ..Default::default() },
        coalesce::HostAllocFlags::MAPPED,
    ] {
        let mut src = gpu.alloc_pinned_with::<u32>(host.len(), flags).unwrap();
        assert!(src.iter().all(|&x| x == 0), "{flags:?}: not zeroed");
        assert_eq!(src.flags(), flags);
        src.copy_from_slice(&host);
        let mut dev = poisoned_device::<u32>(&gpu, host.len());
        src.copy_to_device(&mut dev.view_mut(0..host.len()).unwrap()).unwrap();
        check_padded(&dev.to_vec().unwrap(), &host, 0, &format!("{flags:?} seed={seed}"));
    }
}

#[test]
fn scale_add_kernel_matches_reference() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    for n in lengths() {
        let host = common::random_u32(&mut rng, n);
        let x = gpu.upload(&host).unwrap();
        for k in [0u32, 1, 7, 1000] {
            let op = ScaleAdd { a: 1_664_525 + 2 * k, b: 1_013_904_223 ^ k, k };
            let mut y = poisoned_device::<u32>(&gpu, n);
            gpu.scale_add(&x.as_view(), &mut y.view_mut(1..1 + n).unwrap(), op).unwrap();
            let mut want = vec![0u32; n];
            op.reference(&host, &mut want).unwrap();
            check_padded(&y.to_vec().unwrap(), &want, 1, &format!("scale_add n={n} {op:?} seed={seed}"));
        }
    }
}

#[test]
fn pipeline_matches_reference_with_a_consistent_timeline() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let streams: Vec<_> = (0..4).map(|_| gpu.new_stream().unwrap()).collect();
    for n in [0usize, 1, 2, 3, 1023, (1 << 20) + 3, common::big(1 << 24, 1 << 16) + 5] {
        let host = common::random_u32(&mut rng, n);
        let input = gpu.pinned_from_slice(&host).unwrap();
        let mut output = gpu.alloc_pinned::<u32>(n).unwrap();
        let mut d_in = gpu.alloc_zeroed::<u32>(n).unwrap();
        let mut d_out = gpu.alloc_zeroed::<u32>(n).unwrap();
        let op = ScaleAdd::lcg(37);
        let mut want = vec![0u32; n];
        op.reference(&host, &mut want).unwrap();
        for (s, chunks) in [(1usize, 1usize), (1, 4), (2, 7), (4, 16), (3, 5)] {
            let ctx = format!("n={n} streams={s} chunks={chunks} seed={seed}");
            output.fill(POISON_WORD);
            d_out.fill_bytes(POISON).unwrap();
            let run = gpu.pipeline(&streams[..s], &input, &mut output, &mut d_in, &mut d_out, chunks, op).unwrap();
            if let Some((i, g, w)) = reference::first_mismatch(&output, &want).unwrap() {
                panic!("{ctx}: output {i} is {g:#010x}, expected {w:#010x}");
            }
            let used = chunks.min(n);
            assert_eq!((run.chunks, run.streams, run.spans.len()), (used, s, 3 * used), "{ctx}");
            for (j, sp) in run.spans.iter().enumerate() {
                assert_eq!((sp.chunk, sp.stage, sp.stream), (j / 3, Stage::ALL[j % 3], (j / 3) % s), "{ctx}");
                assert!(sp.start_ms >= 0.0 && sp.end_ms >= sp.start_ms, "{ctx}: {sp:?}");
                assert!(sp.end_ms <= run.total_ms, "{ctx}: {sp:?} ends after the total {}", run.total_ms);
                if j % 3 > 0 {
                    // A chunk's stages follow one another on its stream.
                    assert_eq!(sp.start_ms, run.spans[j - 1].end_ms, "{ctx}: {sp:?}");
                }
            }
            if n == 0 {
                assert_eq!(run.total_ms, 0.0);
            } else {
                assert!(run.total_ms > 0.0, "{ctx}: total {}", run.total_ms);
            }
        }
        assert!(input.as_slice() == host.as_slice(), "the pipeline modified its input");
    }
}

#[test]
fn error_paths_are_answered_before_the_driver() {
    let gpu = gpu_or_skip!();
    let host = vec![7u32; 10];
    let pinned = gpu.pinned_from_slice(&host).unwrap();
    let mut dev = gpu.upload(&[1u32; 9]).unwrap();
    let e = gpu.htod(&host, &mut dev.as_view_mut()).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { op: "htod", expected: 9, got: 10 }), "{e}");
    let e = gpu.dtoh(&dev.as_view(), &mut [0u32; 10]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { op: "dtoh", expected: 10, got: 9 }), "{e}");
    let e = pinned.copy_to_device(&mut dev.as_view_mut()).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    let mut pinned_out = gpu.alloc_pinned::<u32>(10).unwrap();
    let e = pinned_out.copy_from_device(&dev.as_view()).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    let mut mapped = gpu.mapped_from_slice(&host).unwrap();
    let e = gpu.zero_copy_to_device(&mapped, &mut dev.as_view_mut()).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { op: "zero_copy_to_device", .. }), "{e}");
    let e = gpu.zero_copy_from_device(&dev.as_view(), &mut mapped).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { op: "zero_copy_from_device", .. }), "{e}");
    let stream = gpu.new_stream().unwrap();
    // SAFETY: refused by the length check; nothing is queued.
    let e = unsafe { stream.htod_async(&pinned, &mut dev.as_view_mut()) }.unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { op: "htod_async", .. }), "{e}");
    // SAFETY: as above.
    let e = unsafe { stream.dtoh_async(&dev.as_view(), &mut pinned_out) }.unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { op: "dtoh_async", .. }), "{e}");
    let mut y = gpu.alloc_zeroed::<u32>(10).unwrap();
    let e = gpu.scale_add(&dev.as_view(), &mut y.as_view_mut(), ScaleAdd::lcg(1)).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { op: "scale_add", .. }), "{e}");

    // The pipeline: lengths, streams, chunks.
    let mut out = gpu.alloc_pinned::<u32>(10).unwrap();
    let mut d_in = gpu.alloc_zeroed::<u32>(10).unwrap();
    let op = ScaleAdd::lcg(1);
    let e = gpu.pipeline(&[stream], &pinned, &mut out, &mut d_in, &mut dev, 2, op).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { op: "pipeline (d_out)", expected: 10, got: 9 }), "{e}");
    let e = gpu.pipeline(&[], &pinned, &mut out, &mut d_in, &mut y, 2, op).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "pipeline", .. }), "{e}");
    let streams = [gpu.new_stream().unwrap()];
    let e = gpu.pipeline(&streams, &pinned, &mut out, &mut d_in, &mut y, 0, op).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { op: "pipeline", .. }), "{e}");

    // Nothing above touched any data.
    assert_eq!(dev.to_vec().unwrap(), [1; 9]);
    assert_eq!(y.to_vec().unwrap(), [0; 10]);
    assert!(out.iter().all(|&x| x == 0) && pinned_out.iter().all(|&x| x == 0));
    assert!(mapped.iter().all(|&x| x == 7));
    // Size overflow is refused before any allocation.
    let e = gpu.alloc_pinned::<u64>(usize::MAX / 4).unwrap_err();
    assert!(matches!(e, Error::SizeOverflow { .. }), "{e}");
}
