//! Texture memory on the GPU against CPU models, plus the checks that need
//! no GPU.
//!
//! GPU (skipped with one line each when there is none):
//! * point sampling in every address mode (clamp, border with a random
//!   colour, wrap, mirror; pixel and normalized coordinates; different
//!   modes per axis) against `texture::model::point_texel`: exact, at
//!   random positions a tenth of a texel or more from texel edges, up to
//!   two periods outside the texture;
//! * `float4` textures (all four channels exact) and `u8` textures read as
//!   normalized floats (`value / 255`);
//! * linear filtering against the bilinear model: within the 9-bit weight
//!   bound at random positions (see `texture::model`), and within the
//!   arithmetic allowance alone where the weights are multiples of 1/256;
//! * the texture convolution (both kernels, both operations) against
//!   `reference2d` in every boundary mode that has an address mode, on
//!   1×777, 777×1, 33×65 and 1000×1007 images, masks 1×1, 3×3, 5×5, 3×7
//!   and 4×2, from CUDA arrays and from pitched buffers, into pitched
//!   outputs whose padding must keep its poison; a 65×65 mask (global
//!   memory);
//! * resizing (down, up, identity, to 1×1, odd ratios) against the
//!   bilinear model, point and linear, clamp, border and wrap;
//! * array round trips and every error path of arrays, textures, fetches,
//!   the convolution and resizing.
//!
//! CPU: descriptor validation, the boundary → address-mode mapping and
//! its refusal of scipy's `mirror`, plans, extent checks.

mod common;

use coalesce::conv::reference::{Checked, compare};
use coalesce::conv::reference2d::{Image, conv2d_checked};
use coalesce::conv::{Boundary, ConvOp, MaskSource};
use coalesce::texture::conv::{address_for, boundary_desc, plan_tex_conv};
use coalesce::texture::model::{self, Texels};
use coalesce::texture::{
    AddressMode, Coordinates, FilterMode, TexConv2d, TexConvVariant, Texture2d, TextureDesc, TextureLimits,
    TextureProblem,
};
use coalesce::{Axis, DeviceLimits, Error, Gpu};
use common::POISON;
use rand::Rng;
use rand::rngs::StdRng;

fn random_f32(rng: &mut StdRng, n: usize) -> Vec<f32> {
    let v: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    assert!(v.iter().any(|&x| x != 0.0), "random input came out all zero");
    v
}

/// Samples `tex` at `(u[i], v[i])` through `tex_fetch_2d` into a poisoned
/// buffer; returns `channels` values per sample.
fn fetch(gpu: &Gpu, tex: &Texture2d<'_>, u: &[f32], v: &[f32]) -> Vec<f32> {
    let du = gpu.upload(u).unwrap();
    let dv = gpu.upload(v).unwrap();
    let mut out = gpu.alloc_zeroed::<f32>(u.len() * tex.texel().channels as usize).unwrap();
    out.fill_bytes(POISON).unwrap();
    tex.fetch(&du.as_view(), &dv.as_view(), &mut out.as_view_mut()).unwrap();
    out.to_vec().unwrap()
}

/// `n` coordinates along an axis of `size` texels: texel `k` (up to two
/// periods either side) plus a fraction in `[0.1, 0.9]`, in the units of
/// `coords`.
fn interior_coords(rng: &mut StdRng, n: usize, size: usize, coords: Coordinates) -> Vec<f32> {
    let s = size as i64;
    (0..n)
        .map(|_| {
            let p = rng.random_range(-2 * s..3 * s) as f64 + rng.random_range(0.1..0.9);
            match coords {
                Coordinates::Pixel => p as f32,
                Coordinates::Normalized => (p / size as f64) as f32,
            }
        })
        .collect()
}

/// The descriptors the sampling tests cover.
fn descs(rng: &mut StdRng, filter: FilterMode) -> Vec<TextureDesc> {
    let colour = [rng.random_range(-3.0f32..3.0), 0.5, -0.25, 1.0];
    let mut v = Vec::new();
    for mode in AddressMode::ALL {
        v.push(TextureDesc::for_mode(mode, filter).with_border(colour));
        v.push(TextureDesc::new(mode, filter, Coordinates::Normalized).with_border(colour));
    }
    v.push(
        TextureDesc::new(AddressMode::Wrap, filter, Coordinates::Normalized)
            .with_address(AddressMode::Wrap, AddressMode::Clamp),
    );
    v.push(
        TextureDesc::new(AddressMode::Border, filter, Coordinates::Normalized)
            .with_address(AddressMode::Border, AddressMode::Mirror)
            .with_border(colour),
    );
    v.push(
        TextureDesc::new(AddressMode::Clamp, filter, Coordinates::Pixel)
            .with_address(AddressMode::Clamp, AddressMode::Border)
            .with_border(colour),
    );
    v
}

#[test]
fn point_sampling_matches_the_model_in_every_address_mode() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let (w, h) = (37, 23);
    let data = random_f32(&mut rng, w * h);
    let array = gpu.upload_array(&data, w, h).unwrap();
    for desc in descs(&mut rng, FilterMode::Point) {
        let tex = array.texture(&desc).unwrap();
        let n = 4000;
        let u = interior_coords(&mut rng, n, w, desc.coordinates);
        let v = interior_coords(&mut rng, n, h, desc.coordinates);
        let got = fetch(&gpu, &tex, &u, &v);
        for i in 0..n {
            let want = match model::point_texel(&desc, w, h, u[i], v[i]) {
                Some((c, r)) => data[r * w + c],
                None => desc.border[0],
            };
            assert_eq!(
                got[i].to_bits(),
                want.to_bits(),
                "seed {seed}, {desc}: sample {i} at ({}, {}) = {}, model {want}",
                u[i],
                v[i],
                got[i]
            );
        }
    }
}

#[test]
fn float4_and_u8_textures() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let (w, h) = (19, 11);
    let quads: Vec<[f32; 4]> = (0..w * h).map(|_| std::array::from_fn(|_| rng.random_range(-5.0f32..5.0))).collect();
    let array = gpu.upload_array(&quads, w, h).unwrap();
    assert_eq!(array.to_vec().unwrap(), quads);
    let desc = TextureDesc::for_mode(AddressMode::Border, FilterMode::Point).with_border([1.0, 2.0, 3.0, 4.0]);
    let tex = array.texture(&desc).unwrap();
    assert_eq!((tex.texel().name, tex.texel().channels), ("float4", 4));
    let n = 2000;
    let u = interior_coords(&mut rng, n, w, Coordinates::Pixel);
    let v = interior_coords(&mut rng, n, h, Coordinates::Pixel);
    let got = fetch(&gpu, &tex, &u, &v);
    for i in 0..n {
        let want = model::point_texel(&desc, w, h, u[i], v[i]).map_or(desc.border, |(c, r)| quads[r * w + c]);
        assert_eq!(got[4 * i..4 * i + 4], want, "seed {seed}: float4 sample {i} at ({}, {})", u[i], v[i]);
    }

    // Bytes read as normalized floats: value / 255.
    let bytes = common::random_bytes(&mut rng, w * h);
    let array = gpu.upload_array(&bytes, w, h).unwrap();
    assert_eq!(array.to_vec().unwrap(), bytes);
    let desc = TextureDesc::for_mode(AddressMode::Clamp, FilterMode::Point);
    let tex = array.texture(&desc).unwrap();
    let got = fetch(&gpu, &tex, &u, &v);
    for i in 0..n {
        let (c, r) = model::point_texel(&desc, w, h, u[i], v[i]).expect("clamp always has a texel");
        let want = f64::from(bytes[r * w + c]) / 255.0;
        // Two units in the last place of a value in [0.5, 1) (2^-23):
        // the conversion need not be correctly rounded.
        assert!(
            (f64::from(got[i]) - want).abs() <= f64::from(f32::EPSILON),
            "seed {seed}: u8 sample {i}: {} vs {want}",
            got[i]
        );
    }
}

#[test]
fn linear_filtering_matches_the_bilinear_model() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let (w, h) = (37, 23);
    let data = random_f32(&mut rng, w * h);
    let texels = Texels { data: &data, width: w, height: h };
    let array = gpu.upload_array(&data, w, h).unwrap();
    let mut interpolated = 0;
    for desc in descs(&mut rng, FilterMode::Linear) {
        let tex = array.texture(&desc).unwrap();
        // Anywhere, up to two periods outside.
        let n = 4000;
        let to = |p: f64, size: usize| match desc.coordinates {
            Coordinates::Pixel => p as f32,
            Coordinates::Normalized => (p / size as f64) as f32,
        };
        let u: Vec<f32> = (0..n).map(|_| to(rng.random_range(-2.0 * w as f64..3.0 * w as f64), w)).collect();
        let v: Vec<f32> = (0..n).map(|_| to(rng.random_range(-2.0 * h as f64..3.0 * h as f64), h)).collect();
        let got = fetch(&gpu, &tex, &u, &v);
        for i in 0..n {
            let s = model::linear(texels, &desc, u[i], v[i]);
            let err = (f64::from(got[i]) - s.value).abs();
            assert!(
                err <= s.weight_bound + s.arithmetic_bound,
                "seed {seed}, {desc}: sample {i} at ({}, {}) = {}, model {} ± {} (weights) + {}",
                u[i],
                v[i],
                got[i],
                s.value,
                s.weight_bound,
                s.arithmetic_bound
            );
            if !data.iter().any(|&t| f64::from(t) == s.value) {
                interpolated += 1;
            }
        }
    }
    assert!(interpolated > 1000, "only {interpolated} samples fell between texels");

    // Coordinates whose weights are multiples of 1/256 (representable in
    // the 9-bit weights): the hardware does not return the exact blend
    // there either (on the H100 such samples differ from it by up to one
    // weight step), so they are held to the same bound as any position, and
    // the share that is exact is reported.
    for mode in [AddressMode::Clamp, AddressMode::Border] {
        let desc = TextureDesc::for_mode(mode, FilterMode::Linear);
        let tex = array.texture(&desc).unwrap();
        let n = 4000;
        let grid = |rng: &mut StdRng, size: usize| -> Vec<f32> {
            (0..n)
                .map(|_| {
                    let k = rng.random_range(-3..size as i64 + 3) as f32;
                    k + 0.5 + rng.random_range(0..256) as f32 / 256.0
                })
                .collect()
        };
        let (u, v) = (grid(&mut rng, w), grid(&mut rng, h));
        let got = fetch(&gpu, &tex, &u, &v);
        let mut exact = 0;
        for i in 0..n {
            let s = model::linear(texels, &desc, u[i], v[i]);
            assert!(s.exact_weights, "({}, {}) is not on the 1/256 grid", u[i], v[i]);
            let err = (f64::from(got[i]) - s.value).abs();
            assert!(
                err <= s.weight_bound + s.arithmetic_bound,
                "seed {seed}, {desc}: grid sample {i} at ({}, {}) = {}, model {} ± {} (weights) + {}",
                u[i],
                v[i],
                got[i],
                s.value,
                s.weight_bound,
                s.arithmetic_bound
            );
            exact += usize::from(err <= s.arithmetic_bound);
        }
        println!("{desc}: {exact} of {n} samples on the 1/256 grid equal the exact blend to the rounding allowance");
    }
}

/// Masks of the convolution tests, `(mw, mh)`.
const MASKS: [(usize, usize); 5] = [(1, 1), (3, 3), (5, 5), (3, 7), (4, 2)];
/// Boundary modes the texture unit reproduces.
const MODES: [Boundary; 4] = [Boundary::Zero, Boundary::Nearest, Boundary::Wrap, Boundary::Reflect];
/// Elements after the last output row.
const TAIL: usize = 5;

fn shapes() -> [(usize, usize); 4] {
    [(1, 777), (777, 1), (33, 65), (common::big(1000, 300), common::big(1007, 307))]
}

/// Runs `conv` over the texture into a poisoned output with rows `pitch`
/// apart and checks it against `want`, and that nothing else was written.
fn check_conv(gpu: &Gpu, conv: &TexConv2d, variant: TexConvVariant, tex: &Texture2d<'_>, want: &[Checked], ctx: &str) {
    let (w, h) = (tex.width(), tex.height());
    let pitch = w + 3;
    let mut out = gpu.alloc_zeroed::<f32>((h - 1) * pitch + w + TAIL).unwrap();
    out.fill_bytes(POISON).unwrap();
    let plan = conv.run(variant, tex, &mut out.as_view_mut(), pitch).unwrap();
    let got = out.to_vec().unwrap();
    let mut image = Vec::with_capacity(w * h);
    for (i, v) in got.iter().enumerate() {
        if i / pitch < h && i % pitch < w {
            image.push(*v);
        } else {
            assert_eq!(
                v.to_bits(),
                u32::from_ne_bytes([POISON; 4]),
                "{ctx} ({}): element {i} outside the image was written",
                plan.kernel
            );
        }
    }
    if let Err((m, bad)) = compare(&image, want) {
        panic!("{ctx} ({}): {bad} wrong outputs; first at ({}, {}): {m:?}", plan.kernel, m.index % w, m.index / w);
    }
}

#[test]
fn texture_convolution_matches_the_reference_in_every_mapped_mode() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    for (w, h) in shapes() {
        let data = random_f32(&mut rng, w * h);
        let array = gpu.upload_array(&data, w, h).unwrap();
        let pitched = gpu.upload_pitched(&data, w, h).unwrap();
        for (mw, mh) in MASKS {
            let mask = random_f32(&mut rng, mw * mh);
            for mode in MODES {
                for op in ConvOp::ALL {
                    let conv = TexConv2d::new(&gpu, &mask, mw, mh, op, mode).unwrap();
                    let want = conv2d_checked(Image::dense(&data, w, h), &mask, mw, mh, op, mode).unwrap();
                    let tex = conv.texture(&array).unwrap();
                    for variant in TexConvVariant::ALL {
                        let ctx =
                            format!("seed {seed}: {w}x{h} {mw}x{mh} {} {} {}", mode.name(), op.name(), variant.name());
                        check_conv(&gpu, &conv, variant, &tex, &want, &ctx);
                    }
                    drop(tex);
                    // The same through a pitched texture, where the device
                    // gives it (the pitch is the allocator's; the texture
                    // unit checks its own alignments).
                    if op == ConvOp::Correlate {
                        let tex = conv.texture_pitched(&pitched).unwrap();
                        let ctx = format!("seed {seed}: pitched {w}x{h} {mw}x{mh} {}", mode.name());
                        check_conv(&gpu, &conv, TexConvVariant::Blocked, &tex, &want, &ctx);
                    }
                }
            }
        }
    }
}

#[test]
fn wide_masks_read_global_memory() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let (w, h, mw, mh) = (70, 40, 65, 65);
    let data = random_f32(&mut rng, w * h);
    let array = gpu.upload_array(&data, w, h).unwrap();
    let mask = random_f32(&mut rng, mw * mh);
    for mode in [Boundary::Reflect, Boundary::Zero] {
        let conv = TexConv2d::new(&gpu, &mask, mw, mh, ConvOp::Convolve, mode).unwrap();
        let want = conv2d_checked(Image::dense(&data, w, h), &mask, mw, mh, ConvOp::Convolve, mode).unwrap();
        let tex = conv.texture(&array).unwrap();
        for variant in TexConvVariant::ALL {
            let plan = conv.plan(variant, w, h).unwrap();
            assert_eq!(plan.mask, MaskSource::Global);
            assert!(plan.kernel.contains("_gm_"), "{}", plan.kernel);
            check_conv(&gpu, &conv, variant, &tex, &want, &format!("seed {seed}: 65x65 {}", mode.name()));
        }
    }
}

#[test]
fn resize_matches_the_bilinear_model() {
    let gpu = gpu_or_skip!();
    let (mut rng, seed) = common::rng();
    let (w, h) = (97, 61);
    let data = random_f32(&mut rng, w * h);
    let texels = Texels { data: &data, width: w, height: h };
    let array = gpu.upload_array(&data, w, h).unwrap();
    let descs = [
        TextureDesc::for_mode(AddressMode::Clamp, FilterMode::Linear),
        TextureDesc::for_mode(AddressMode::Border, FilterMode::Linear),
        TextureDesc::for_mode(AddressMode::Wrap, FilterMode::Linear),
        TextureDesc::for_mode(AddressMode::Clamp, FilterMode::Point),
        TextureDesc::new(AddressMode::Mirror, FilterMode::Linear, Coordinates::Normalized),
    ];
    for desc in descs {
        let tex = array.texture(&desc).unwrap();
        // Point filtering picks a texel by position: only sizes whose
        // sample positions stay a quarter texel or more from texel edges
        // (identity, exact 2× upscaling, one output at the centre), since
        // the unit resolves positions to 1/256 of a texel.
        let sizes: &[(usize, usize)] = match desc.filter {
            FilterMode::Point => &[(97, 61), (194, 122), (1, 1)],
            FilterMode::Linear => &[(48, 30), (200, 150), (97, 61), (1, 1), (301, 7), (33, 65), (194, 122)],
        };
        for &(ow, oh) in sizes {
            let pitch = ow + 2;
            let mut out = gpu.alloc_zeroed::<f32>((oh - 1) * pitch + ow + TAIL).unwrap();
            out.fill_bytes(POISON).unwrap();
            tex.resize(&mut out.as_view_mut(), ow, oh, pitch).unwrap();
            let got = out.to_vec().unwrap();
            let mut image = Vec::with_capacity(ow * oh);
            for (i, v) in got.iter().enumerate() {
                if i / pitch < oh && i % pitch < ow {
                    image.push(*v);
                } else {
                    assert_eq!(v.to_bits(), u32::from_ne_bytes([POISON; 4]), "{desc} {ow}x{oh}: element {i} written");
                }
            }
            let want = model::resize(texels, &desc, ow, oh);
            if let Err((m, bad)) = compare(&image, &want) {
                panic!("seed {seed}, {desc}, {w}x{h} -> {ow}x{oh}: {bad} wrong outputs; first: {m:?}");
            }
        }
    }
}

#[test]
fn array_round_trips() {
    let gpu = gpu_or_skip!();
    let (mut rng, _) = common::rng();
    for (w, h) in [(1, 1), (1, 300), (300, 1), (129, 67)] {
        let data = random_f32(&mut rng, w * h);
        let mut array = gpu.upload_array(&data, w, h).unwrap();
        assert_eq!(array.to_vec().unwrap(), data, "{w}x{h}");
        assert_eq!((array.width(), array.height()), (w, h));
        let other = random_f32(&mut rng, w * h);
        let pitched = gpu.upload_pitched(&other, w, h).unwrap();
        array.copy_from_pitched(&pitched).unwrap();
        assert_eq!(array.to_vec().unwrap(), other, "{w}x{h} from pitched");
        let zero = gpu.alloc_array_zeroed::<f32>(w, h).unwrap();
        assert!(zero.to_vec().unwrap().iter().all(|&x| x == 0.0));
    }
}

#[test]
fn error_paths() {
    let gpu = gpu_or_skip!();
    let limits = gpu.texture_limits().unwrap();
    assert!(limits.array_width >= 1024 && limits.array_height >= 1024, "{limits:?}");
    assert!(limits.pitch_alignment.is_power_of_two() && limits.texture_alignment.is_power_of_two(), "{limits:?}");
    // Arrays.
    let e = gpu.upload_array(&[1.0f32; 5], 2, 3).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { expected: 6, got: 5, .. }), "{e}");
    let e = gpu.alloc_array_zeroed::<f32>(0, 3).unwrap_err();
    assert!(matches!(e, Error::ZeroExtent { .. }), "{e}");
    let e = gpu.alloc_array_zeroed::<f32>(limits.array_width + 1, 1).unwrap_err();
    assert!(matches!(e, Error::Texture { problem: TextureProblem::TooLarge { .. }, .. }), "{e}");
    let mut array = gpu.upload_array(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], 3, 2).unwrap();
    assert!(matches!(array.copy_from_host(&[0.0; 7]), Err(Error::LengthMismatch { .. })));
    assert!(matches!(array.copy_to_host(&mut [0.0; 5]), Err(Error::LengthMismatch { .. })));
    let wrong = gpu.upload_pitched(&[0.0f32; 6], 2, 3).unwrap();
    assert!(matches!(array.copy_from_pitched(&wrong), Err(Error::ExtentMismatch { .. })));
    // Texture descriptors.
    let e = array.texture(&TextureDesc::new(AddressMode::Wrap, FilterMode::Point, Coordinates::Pixel)).unwrap_err();
    assert!(matches!(e, Error::Texture { problem: TextureProblem::NeedsNormalizedCoordinates { .. }, .. }), "{e}");
    // Fetch lengths.
    let tex = array.texture(&TextureDesc::for_mode(AddressMode::Clamp, FilterMode::Point)).unwrap();
    let (u, v) = (gpu.upload(&[0.5f32; 4]).unwrap(), gpu.upload(&[0.5f32; 3]).unwrap());
    let mut out = gpu.alloc_zeroed::<f32>(4).unwrap();
    assert!(matches!(tex.fetch(&u.as_view(), &v.as_view(), &mut out.as_view_mut()), Err(Error::LengthMismatch { .. })));
    let mut short = gpu.alloc_zeroed::<f32>(3).unwrap();
    assert!(matches!(
        tex.fetch(&u.as_view(), &u.as_view(), &mut short.as_view_mut()),
        Err(Error::LengthMismatch { .. })
    ));
    // Resize layouts.
    assert!(tex.resize(&mut out.as_view_mut(), 3, 2, 2).is_err(), "pitch below the width");
    assert!(matches!(tex.resize(&mut out.as_view_mut(), 2, 3, 2), Err(Error::LengthMismatch { .. })));
    // Convolution: the texture must sample as the boundary mode says.
    let conv = TexConv2d::new(&gpu, &[1.0; 9], 3, 3, ConvOp::Correlate, Boundary::Reflect).unwrap();
    let mut image = gpu.alloc_zeroed::<f32>(6).unwrap();
    let e = conv.run(TexConvVariant::Direct, &tex, &mut image.as_view_mut(), 3).unwrap_err();
    assert!(matches!(e, Error::Texture { problem: TextureProblem::Unsuitable { .. }, .. }), "{e}");
    assert!(e.to_string().contains("mirror"), "{e}");
    let right = conv.texture(&array).unwrap();
    assert!(matches!(
        conv.run(TexConvVariant::Direct, &right, &mut out.as_view_mut(), 3),
        Err(Error::LengthMismatch { .. })
    ));
    conv.run(TexConvVariant::Direct, &right, &mut image.as_view_mut(), 3).unwrap();
    let e = TexConv2d::new(&gpu, &[1.0; 9], 3, 3, ConvOp::Correlate, Boundary::Mirror).unwrap_err();
    assert!(matches!(e, Error::Texture { problem: TextureProblem::NoAddressMode(Boundary::Mirror), .. }), "{e}");
    assert!(TexConv2d::new(&gpu, &[1.0; 8], 3, 3, ConvOp::Correlate, Boundary::Zero).is_err());
    // Four-channel textures: no convolution, no resize.
    let quads = gpu.upload_array(&[[0.0f32; 4]; 6], 3, 2).unwrap();
    let qt = quads.texture(conv.desc()).unwrap();
    let e = conv.run(TexConvVariant::Direct, &qt, &mut image.as_view_mut(), 3).unwrap_err();
    assert!(matches!(e, Error::Texture { problem: TextureProblem::Unsuitable { .. }, .. }), "{e}");
    assert!(qt.resize(&mut image.as_view_mut(), 3, 2, 3).is_err());
    gpu.synchronize().unwrap();
}

#[test]
fn cpu_checks_without_a_gpu() {
    // Wrap and mirror need normalized coordinates; for_mode picks them.
    let bad = TextureDesc::new(AddressMode::Mirror, FilterMode::Linear, Coordinates::Pixel);
    assert_eq!(
        bad.validate(),
        Err(TextureProblem::NeedsNormalizedCoordinates { axis: Axis::X, mode: AddressMode::Mirror })
    );
    assert_eq!(TextureDesc::for_mode(AddressMode::Mirror, FilterMode::Linear).coordinates, Coordinates::Normalized);
    assert_eq!(TextureDesc::for_mode(AddressMode::Border, FilterMode::Linear).coordinates, Coordinates::Pixel);
    // The boundary mapping, and scipy's mirror refused.
    assert_eq!(address_for(Boundary::Reflect), Ok(AddressMode::Mirror));
    assert_eq!(address_for(Boundary::Nearest), Ok(AddressMode::Clamp));
    assert_eq!(address_for(Boundary::Zero), Ok(AddressMode::Border));
    assert_eq!(address_for(Boundary::Wrap), Ok(AddressMode::Wrap));
    assert!(matches!(boundary_desc(Boundary::Mirror), Err(Error::Texture { .. })));
    // The model's mirror is scipy's reflect on a small line.
    let line: Vec<i64> = (-3..7).map(|i| model::texel_index(i, 4, AddressMode::Mirror).unwrap() as i64).collect();
    assert_eq!(line, [2, 1, 0, 0, 1, 2, 3, 3, 2, 1]);
    // Plans and limits.
    let p = plan_tex_conv(&DeviceLimits::H100, TexConvVariant::Blocked, (7, 7), (8192, 8192)).unwrap();
    assert_eq!(p.fetches_per_output, (10.0 * 10.0) / 16.0);
    assert!(plan_tex_conv(&DeviceLimits::H100, TexConvVariant::Direct, (3, 0), (5, 5)).is_err());
    let limits = TextureLimits {
        array_width: 64,
        array_height: 64,
        linear_width: 64,
        linear_height: 64,
        linear_pitch: 1024,
        texture_alignment: 512,
        pitch_alignment: 32,
    };
    assert!(limits.check_array("t", 64, 64).is_ok());
    assert!(limits.check_array("t", 65, 1).is_err());
    assert!(limits.check_pitched("t", (10, 10), 4, 64, 512).is_ok());
    assert!(limits.check_pitched("t", (10, 10), 4, 48, 512).is_err());
}
