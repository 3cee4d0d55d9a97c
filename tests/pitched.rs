//! Pitched 2D memory (lesson 003) on the GPU: the pitch's guarantees for
//! 4-, 8- and 16-byte elements, bit-exact round trips through host, linear
//! and pitched device memory (whole matrices and sub-rectangles, on fresh
//! random data, into poisoned buffers whose padding and untouched elements
//! must stay poisoned), and every error path.

mod common;

use bytemuck::Pod;
use coalesce::kernels::dev::pitched::byte_offset;
use coalesce::pitched::BASE_ALIGNMENT;
use coalesce::{DeviceCopy, Error, Gpu, PitchedBuffer, Rect};
use common::POISON;
use rand::rngs::StdRng;

fn random<T: Pod>(rng: &mut StdRng, n: usize) -> Vec<T> {
    let mut v = vec![T::zeroed(); n];
    let bytes = common::random_bytes(rng, n * std::mem::size_of::<T>());
    bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(&bytes);
    v
}

fn bytes_of<T: Pod>(v: &[T]) -> &[u8] {
    bytemuck::cast_slice(v)
}

/// Every padding byte of `m` (after each row's data) still holds `POISON`.
fn assert_padding_poisoned<T: DeviceCopy + Pod>(m: &PitchedBuffer<T>, ctx: &str) {
    let raw = m.raw_bytes().unwrap();
    assert_eq!(raw.len(), m.pitch() * m.height(), "{ctx}");
    for r in 0..m.height() {
        let pad = &raw[r * m.pitch() + m.row_bytes()..(r + 1) * m.pitch()];
        if let Some(i) = pad.iter().position(|&b| b != POISON) {
            panic!("{ctx}: padding byte {i} of row {r} is {:#04x}, not the poison", pad[i]);
        }
    }
}

fn check_pitch<T: DeviceCopy + Pod>(gpu: &Gpu, width: usize, height: usize) -> usize {
    let ctx = format!("{} x {height} of {}", width, std::any::type_name::<T>());
    let m = gpu.alloc_pitched_zeroed::<T>(width, height).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    let size = std::mem::size_of::<T>();
    let align = gpu.pitch_alignment().unwrap();
    assert!(align >= 1, "{ctx}: texture pitch alignment {align}");
    assert!(m.pitch() >= width * size, "{ctx}: pitch {} < {} bytes of data", m.pitch(), width * size);
    assert_eq!(m.pitch() % align, 0, "{ctx}: pitch {} not a multiple of the pitch alignment {align}", m.pitch());
    assert_eq!(m.pitch() % size, 0, "{ctx}: pitch {} not a multiple of the element size", m.pitch());
    assert!(m.pitch() <= gpu.max_pitch().unwrap(), "{ctx}");
    assert_eq!(m.device_ptr().0 % BASE_ALIGNMENT, 0, "{ctx}: base {:#x}", m.device_ptr().0);
    assert_eq!((m.width(), m.height(), m.row_bytes()), (width, height, width * size), "{ctx}");
    assert_eq!(m.allocated_bytes(), m.pitch() * height, "{ctx}");
    assert_eq!(m.padding_bytes(), (m.pitch() - width * size) * height, "{ctx}");
    // Zeroed means every byte, padding included.
    assert!(m.raw_bytes().unwrap().iter().all(|&b| b == 0), "{ctx}");
    // Each row starts where the device view's arithmetic says it does.
    assert_eq!(byte_offset::<T>(height - 1, 0, m.pitch()), (height - 1) * m.pitch());
    println!(
        "{ctx}: pitch {} bytes (rows {}-byte aligned, texture pitch alignment {align})",
        m.pitch(),
        m.row_alignment()
    );
    m.pitch()
}

#[test]
fn pitch_guarantees_for_4_8_and_16_byte_elements() {
    let gpu = gpu_or_skip!();
    for width in [1, 3, 33, 1000, 10_000, 10_001, 16_384] {
        check_pitch::<f32>(&gpu, width, 3);
        check_pitch::<u64>(&gpu, width, 2);
        check_pitch::<[u32; 4]>(&gpu, width, 2);
    }
    // The lesson's 10000 f32 columns: 40 000 bytes of data per row.
    let p = check_pitch::<f32>(&gpu, 10_000, 10_000);
    assert!((40_000..40_000 + 4096).contains(&p), "pitch {p}");
}

#[test]
fn other_element_sizes_zero_and_overflowing_extents_are_refused() {
    let gpu = gpu_or_skip!();
    let e = gpu.alloc_pitched_zeroed::<u8>(16, 16).unwrap_err();
    assert!(matches!(e, Error::PitchedElementSize { elem_size: 1, .. }), "{e}");
    let e = gpu.alloc_pitched_zeroed::<u16>(16, 16).unwrap_err();
    assert!(matches!(e, Error::PitchedElementSize { elem_size: 2, .. }), "{e}");
    let e = gpu.alloc_pitched_zeroed::<[f32; 3]>(16, 16).unwrap_err();
    assert!(matches!(e, Error::PitchedElementSize { elem_size: 12, .. }), "{e}");
    assert!(e.to_string().contains("4, 8 or 16"), "{e}");
    let e = gpu.upload_pitched(&[1u16; 4], 2, 2).unwrap_err();
    assert!(matches!(e, Error::PitchedElementSize { .. }), "{e}");
    for (w, h) in [(0, 7), (7, 0)] {
        let e = gpu.alloc_pitched_zeroed::<f32>(w, h).unwrap_err();
        assert!(matches!(e, Error::ZeroExtent { width, height, .. } if (width, height) == (w, h)), "{e}");
    }
    let e = gpu.alloc_pitched_zeroed::<f64>(usize::MAX / 4, 2).unwrap_err();
    assert!(matches!(e, Error::ExtentOverflow { elem_size: 8, .. }), "{e}");
    let e = gpu.alloc_pitched_zeroed::<f32>(1 << 33, 1 << 33).unwrap_err();
    assert!(matches!(e, Error::ExtentOverflow { .. }), "{e}");
    // A row wider than the largest pitch the driver accepts.
    let too_wide = gpu.max_pitch().unwrap() / 4 + 1;
    let e = gpu.alloc_pitched_zeroed::<f32>(too_wide, 1).unwrap_err();
    if too_wide * 4 <= gpu.info().total_memory {
        assert!(matches!(e, Error::InvalidArgument { op: "alloc_pitched", .. }), "{e}");
        assert!(e.to_string().contains("largest pitch"), "{e}");
    } else {
        // A maximum pitch beyond the card's memory: refused as too large.
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    }
    // Wrong host length: nothing is allocated.
    let e = gpu.upload_pitched(&[1f32; 5], 2, 3).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 6, got: 5, .. }), "{e}");
}

#[test]
fn larger_than_the_card_is_out_of_memory() {
    let gpu = gpu_or_skip!();
    let total = gpu.info().total_memory;
    // Rows of 256 KiB, twice as many as the card holds.
    let width = 1 << 16;
    let height = total / (width * 4) * 2 + 1;
    let e = gpu.alloc_pitched_zeroed::<f32>(width, height).unwrap_err();
    match e {
        Error::OutOfMemory { op: "alloc_pitched", requested, total: t, .. } => {
            assert_eq!((requested, t), (width * 4 * height, total));
            assert!(requested > total);
        }
        e => panic!("expected OutOfMemory, got {e}"),
    }
    // The handle still works afterwards.
    let m = gpu.upload_pitched(&[1f32, 2.0, 3.0, 4.0], 2, 2).unwrap();
    assert_eq!(m.to_vec().unwrap(), [1.0, 2.0, 3.0, 4.0]);
}

/// Host → pitched → host, bit-exact, padding untouched.
fn round_trip<T: DeviceCopy + Pod + std::fmt::Debug>(
    gpu: &Gpu,
    rng: &mut StdRng,
    seed: u64,
    width: usize,
    height: usize,
) {
    let ctx = format!("{} x {height} of {} seed={seed}", width, std::any::type_name::<T>());
    let host: Vec<T> = random(rng, width * height);
    // SAFETY: poisoned before anything reads it.
    let mut m = unsafe { gpu.alloc_pitched_uninit::<T>(width, height) }.unwrap();
    m.fill_bytes(POISON).unwrap();
    m.copy_from_host(&host).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    let back = m.to_vec().unwrap();
    assert!(bytes_of(&back) == bytes_of(&host), "{ctx}: host -> pitched -> host differs");
    assert_padding_poisoned(&m, &ctx);
    // The raw rows hold the data at `row · pitch`.
    let raw = m.raw_bytes().unwrap();
    let row_bytes = width * std::mem::size_of::<T>();
    for r in [0, height / 2, height - 1] {
        let at = byte_offset::<T>(r, 0, m.pitch());
        assert_eq!(&raw[at..at + row_bytes], &bytes_of(&host)[r * row_bytes..(r + 1) * row_bytes], "{ctx} row {r}");
    }
    // And through a linear buffer both ways.
    let mut linear = gpu.alloc_zeroed::<T>(width * height).unwrap();
    m.copy_to_linear(&mut linear.as_view_mut()).unwrap();
    assert!(bytes_of(&linear.to_vec().unwrap()) == bytes_of(&host), "{ctx}: pitched -> linear");
    m.fill_bytes(POISON).unwrap();
    m.copy_from_linear(&linear.as_view()).unwrap();
    assert!(bytes_of(&m.to_vec().unwrap()) == bytes_of(&host), "{ctx}: linear -> pitched");
    assert_padding_poisoned(&m, &ctx);
}

#[test]
fn whole_matrix_round_trips_are_bit_exact() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    for (w, h) in [(1, 1), (1000, 1), (1, 1000), (65, 33), (33, 65), (1023, 7)] {
        round_trip::<f32>(&gpu, &mut rng, seed, w, h);
        round_trip::<u64>(&gpu, &mut rng, seed, w, h);
        round_trip::<[u32; 4]>(&gpu, &mut rng, seed, w, h);
    }
    round_trip::<u32>(&gpu, &mut rng, seed, common::big(10_001, 1001), common::big(10_000, 1000));
}

/// The rectangles the sub-rectangle tests use on a `w × h` buffer: corners,
/// edges, single elements, whole rows and columns, the whole buffer.
fn rects(w: usize, h: usize) -> Vec<Rect> {
    vec![
        Rect::new(0, 0, 1, 1),
        Rect::new(w - 1, h - 1, 1, 1),
        Rect::new(0, 0, w, 1),
        Rect::new(0, h - 1, w, 1),
        Rect::new(0, 0, 1, h),
        Rect::new(w - 1, 0, 1, h),
        Rect::new(w / 3, h / 4, w - w / 3, h / 2 + 1),
        Rect::new(1, 1, w - 2, h - 2),
        Rect::full(w, h),
    ]
}

#[test]
fn sub_rectangles_from_and_to_the_host() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let (w, h) = (67usize, 29usize);
    let mut m = gpu.alloc_pitched_zeroed::<f32>(w, h).unwrap();
    for rect in rects(w, h) {
        let ctx = format!("{rect} of {w} x {h} seed={seed}");
        // Any bit pattern (NaNs included): copies must not interpret them.
        let data: Vec<f32> = common::random_u32(&mut rng, rect.len()).into_iter().map(f32::from_bits).collect();
        m.fill_bytes(POISON).unwrap();
        m.copy_rect_from_host(rect, &data).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        // The whole matrix: the rectangle holds the data, the rest poison.
        let all = m.to_vec().unwrap();
        let poison = f32::from_bits(u32::from_ne_bytes([POISON; 4]));
        for r in 0..h {
            for c in 0..w {
                let inside =
                    (rect.col..rect.col + rect.width).contains(&c) && (rect.row..rect.row + rect.height).contains(&r);
                let want = if inside { data[(r - rect.row) * rect.width + (c - rect.col)] } else { poison };
                assert_eq!(all[r * w + c].to_bits(), want.to_bits(), "{ctx}: element (row {r}, col {c})");
            }
        }
        assert_padding_poisoned(&m, &ctx);
        let back = m.rect_to_vec(rect).unwrap();
        assert!(bytes_of(&back) == bytes_of(&data), "{ctx}: rectangle read back differs");
    }
}

/// What `dst.copy_rect_from(col, row, src, rect)` must produce, on host
/// arrays of contiguous rows.
#[allow(clippy::too_many_arguments)]
fn emulate_rect_copy(dst: &mut [u64], dst_w: usize, col: usize, row: usize, src: &[u64], src_w: usize, rect: Rect) {
    for r in 0..rect.height {
        let s = (rect.row + r) * src_w + rect.col;
        let d = (row + r) * dst_w + col;
        dst[d..d + rect.width].copy_from_slice(&src[s..s + rect.width]);
    }
}

#[test]
fn device_to_device_rectangles_between_different_pitches() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    // Different widths, so different pitches.
    let (sw, sh, dw, dh) = (1000usize, 50usize, 37usize, 80usize);
    let src_host: Vec<u64> = random(&mut rng, sw * sh);
    let src = gpu.upload_pitched(&src_host, sw, sh).unwrap();
    let mut dst = gpu.alloc_pitched_zeroed::<u64>(dw, dh).unwrap();
    let cases = [
        (0, 0, Rect::new(0, 0, 37, 50)),
        (5, 7, Rect::new(963, 3, 32, 47)),
        (36, 79, Rect::new(999, 49, 1, 1)),
        (0, 30, Rect::new(400, 0, 37, 50)),
    ];
    let poison = u64::from_ne_bytes([POISON; 8]);
    for (col, row, rect) in cases {
        let ctx = format!("{rect} of {sw} x {sh} to ({col}, {row}) of {dw} x {dh} seed={seed}");
        dst.fill_bytes(POISON).unwrap();
        dst.copy_rect_from(col, row, &src, rect).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let mut want = vec![poison; dw * dh];
        emulate_rect_copy(&mut want, dw, col, row, &src_host, sw, rect);
        assert_eq!(dst.to_vec().unwrap(), want, "{ctx}");
        assert_padding_poisoned(&dst, &ctx);
    }
    // Whole-matrix device copy between equal extents.
    let mut twin = gpu.alloc_pitched_zeroed::<u64>(sw, sh).unwrap();
    twin.copy_from(&src).unwrap();
    assert_eq!(twin.to_vec().unwrap(), src_host, "seed={seed}");
    assert_eq!(src.to_vec().unwrap(), src_host, "the source was modified");
}

#[test]
fn rectangle_and_length_errors_leave_the_data_alone() {
    let gpu = gpu_or_skip!();
    let host: Vec<f32> = (0..40).map(|i| i as f32 + 0.5).collect();
    let mut m = gpu.upload_pitched(&host, 8, 5).unwrap();
    let mut other = gpu.alloc_pitched_zeroed::<f32>(4, 4).unwrap();
    let e = m.copy_rect_from_host(Rect::new(6, 0, 3, 1), &[0.0; 3]).unwrap_err();
    assert!(matches!(e, Error::RectOutOfBounds { width: 8, height: 5, .. }), "{e}");
    let e = m.copy_rect_from_host(Rect::new(0, 4, 1, 2), &[0.0; 2]).unwrap_err();
    assert!(matches!(e, Error::RectOutOfBounds { .. }), "{e}");
    let e = m.copy_rect_from_host(Rect::new(0, 0, 2, 2), &[0.0; 3]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 4, got: 3, .. }), "{e}");
    let e = m.copy_rect_from_host(Rect::new(0, 0, 0, 2), &[]).unwrap_err();
    assert!(matches!(e, Error::ZeroExtent { .. }), "{e}");
    let e = m.copy_from_host(&host[1..]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 40, got: 39, .. }), "{e}");
    let e = m.copy_to_host(&mut [0.0; 41]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    let e = m.rect_to_vec(Rect::new(usize::MAX, 0, 2, 1)).unwrap_err();
    assert!(matches!(e, Error::RectOutOfBounds { .. }), "{e}");
    let e = m.copy_rect_to_host(Rect::new(7, 4, 2, 1), &mut [0.0; 2]).unwrap_err();
    assert!(matches!(e, Error::RectOutOfBounds { .. }), "{e}");
    // Device to device: source rectangle outside the source, destination
    // outside the destination, different extents for a whole copy.
    let e = other.copy_rect_from(0, 0, &m, Rect::new(7, 0, 2, 2)).unwrap_err();
    assert!(matches!(e, Error::RectOutOfBounds { width: 8, height: 5, .. }), "{e}");
    let e = other.copy_rect_from(3, 0, &m, Rect::new(0, 0, 2, 2)).unwrap_err();
    assert!(matches!(e, Error::RectOutOfBounds { width: 4, height: 4, .. }), "{e}");
    let e = other.copy_from(&m).unwrap_err();
    assert!(matches!(e, Error::ExtentMismatch { expected: (4, 4), got: (8, 5), .. }), "{e}");
    let lin = gpu.alloc_zeroed::<f32>(39).unwrap();
    let e = m.copy_from_linear(&lin.as_view()).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 40, got: 39, .. }), "{e}");
    // Nothing above touched either buffer.
    assert_eq!(m.to_vec().unwrap(), host);
    assert_eq!(other.to_vec().unwrap(), [0.0; 16]);
}
