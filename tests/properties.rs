//! Property tests over the public API's input space: random lengths,
//! offsets, pitches, mask sizes, modes, block shapes and device limits give
//! a valid plan or a typed error, never a panic or an overflow (this binary
//! is built with overflow checks in debug runs: `cargo test`).
//!
//! Without a GPU they run on the planning and validation functions, which
//! need none. With one, small random cases also run on the device against
//! the CPU references.

mod common;

use coalesce::conv::conv2d::{check_layout, check_mask_dims, plan_conv2d, plan_separable};
use coalesce::conv::reference::{compare, correlate1d_checked};
use coalesce::conv::reference2d::{Image, correlate2d_checked};
use coalesce::conv::{
    Boundary, Conv1d, Conv1dVariant, Conv2d, Conv2dVariant, ConvOp, max_constant_taps, persistent_grid, plan_1d,
};
use coalesce::matrix::validate_launch;
use coalesce::texture::conv::{TexConvVariant, plan_tex_conv};
use coalesce::{
    BlockShape, CopyPlan, CopyVariant, DeviceLimits, Error, KernelLimits, LaunchConfig, Rect, ReducePlan, ReducePolicy,
    ReduceVariant, TransposePolicy, TransposeVariant,
};
use proptest::prelude::*;

/// Device limits around the H100's, some far smaller (old or odd devices).
fn limits() -> impl Strategy<Value = DeviceLimits> {
    (64u32..=2048, 1024u32..=300 * 1024, 1u32..=u32::MAX, 1u32..=65_535).prop_map(|(threads, shared, gx, gy)| {
        DeviceLimits {
            max_threads_per_block: threads,
            max_block_dim: [threads, threads, 64],
            max_grid_dim: [gx, gy, 65_535],
            max_shared_per_block: shared.min(48 * 1024),
            max_shared_per_block_optin: shared,
            ..DeviceLimits::H100
        }
    })
}

fn conv1d_variant() -> impl Strategy<Value = Conv1dVariant> {
    prop::sample::select(Conv1dVariant::ALL.into_iter().chain([Conv1dVariant::Auto]).collect::<Vec<_>>())
}

fn conv2d_variant() -> impl Strategy<Value = Conv2dVariant> {
    prop::sample::select(Conv2dVariant::ALL.into_iter().chain([Conv2dVariant::Auto]).collect::<Vec<_>>())
}

/// Sizes spread over every scale: small, around powers of two, huge.
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..=300, (0u32..63).prop_map(|k| (1usize << k).wrapping_add(k as usize % 3) - 1), any::<usize>()]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn plan_1d_gives_a_launchable_plan_or_an_error(l in limits(), w in size(), n in size(), v in conv1d_variant(), f64 in any::<bool>()) {
        let plan = if f64 { plan_1d::<f64>(&l, w, v, n) } else { plan_1d::<f32>(&l, w, v, n) };
        match plan {
            Ok(p) => {
                prop_assert!(w >= 1);
                prop_assert!(p.grid >= 1 && p.grid <= l.max_grid_dim[0]);
                prop_assert!(p.threads >= 1 && p.threads <= l.max_threads_per_block);
                prop_assert!(p.shared_bytes <= l.max_shared_per_block_optin);
                prop_assert!(p.tile >= 1 && !p.kernel.is_empty());
                let c = persistent_grid(p, 132, 8);
                prop_assert!(c.grid >= 1 && c.grid <= p.grid);
            }
            Err(e) => prop_assert!(matches!(e, Error::InvalidArgument { .. }), "{e}"),
        }
    }

    #[test]
    fn plan_conv2d_gives_a_launchable_plan_or_an_error(
        l in limits(), mw in size(), mh in size(), w in size(), h in size(), v in conv2d_variant(), f64 in any::<bool>()
    ) {
        let plan = if f64 { plan_conv2d::<f64>(&l, v, (mw, mh), (w, h)) } else { plan_conv2d::<f32>(&l, v, (mw, mh), (w, h)) };
        match plan {
            Ok(p) => {
                prop_assert!(mw >= 1 && mh >= 1);
                let cfg = p.launch_config();
                prop_assert!(cfg.validate(&l, &KernelLimits::unconstrained()).is_ok(), "{cfg} on {l:?}");
            }
            Err(e) => prop_assert!(matches!(e, Error::InvalidArgument { .. }), "{e}"),
        }
        let sep = plan_separable::<f32>(&l, mw, mh, (w, h));
        if let Err(e) = sep {
            prop_assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        }
    }

    #[test]
    fn texture_plans_and_mask_checks_never_overflow(mw in size(), mh in size(), len in size(), w in size(), h in size()) {
        for v in [TexConvVariant::Direct, TexConvVariant::Blocked] {
            if let Ok(p) = plan_tex_conv(&DeviceLimits::H100, v, (mw, mh), (w, h)) {
                prop_assert!(p.grid.0 >= 1 && p.grid.1 >= 1);
                prop_assert!(p.fetches_per_output.is_finite());
            }
        }
        if check_mask_dims(len, mw, mh).is_ok() {
            prop_assert_eq!(Some(len), mw.checked_mul(mh));
        }
    }

    #[test]
    fn layouts_are_checked_without_overflow(input in size(), output in size(), w in size(), h in size(), pitch in size()) {
        if let Ok(need) = check_layout(input, output, w, h, pitch) {
            prop_assert!(pitch >= w && need <= input && need <= output);
            if w > 0 && h > 0 {
                prop_assert_eq!(need, (h - 1) * pitch + w);
            }
        }
    }

    #[test]
    fn launch_validation_accepts_only_what_fits(
        l in limits(), gx in 0u32..=u32::MAX, gy in 0u32..=70_000, bx in 0u32..=4096, by in 0u32..=64, shared in any::<u32>()
    ) {
        let cfg = LaunchConfig::new((gx, gy), (bx, by)).with_shared_mem(shared);
        if cfg.validate(&l, &KernelLimits::unconstrained()).is_ok() {
            prop_assert!(gx >= 1 && gy >= 1 && bx >= 1 && by >= 1);
            prop_assert!(u64::from(bx) * u64::from(by) <= u64::from(l.max_threads_per_block));
            prop_assert!(gx <= l.max_grid_dim[0] && gy <= l.max_grid_dim[1]);
            prop_assert!(shared <= l.max_shared_per_block_optin);
        }
    }

    #[test]
    fn matrix_and_transpose_launches(nrow in size(), ncol in size(), bx in 0u32..=2048, by in 0u32..=2048, items in 0u32..=8, rows_of_block in 0u32..=40) {
        let block = BlockShape::new(bx, by);
        if let Ok(cfg) = validate_launch("sum_matrix_2d", nrow, ncol, block, items, &DeviceLimits::H100, &KernelLimits::unconstrained()) {
            prop_assert!(nrow >= 1 && ncol >= 1 && cfg.grid.x >= 1 && cfg.grid.y >= 1);
        }
        let policy = TransposePolicy::with_block_rows(rows_of_block);
        for v in TransposeVariant::ALL {
            let _ = v.kernel(rows_of_block);
        }
        let cfg = coalesce::transpose::launch_config(nrow, ncol, policy, 65_535);
        prop_assert!(cfg.grid.y <= 65_535);
    }

    #[test]
    fn reduce_plans_cover_their_input(n in size(), addr in any::<u64>(), v in prop::sample::select(ReduceVariant::ALL.to_vec()), resident in 0u32..=100_000, elem in prop::sample::select(vec![4usize, 8])) {
        let addr = addr & !(elem as u64 - 1);
        if let Ok(p) = ReducePlan::new(v, n, addr, elem, &ReducePolicy::default(), resident) {
            prop_assert_eq!(p.passes[0].len, n);
            prop_assert!(p.passes.last().unwrap().config.grid.x == 1);
            prop_assert!(p.error_bound(f32::EPSILON as f64 / 2.0, 1.0) >= 0.0);
        }
    }

    #[test]
    fn copy_plans_account_for_every_byte(src in any::<u64>(), dst in any::<u64>(), bytes in size(), v in prop::sample::select(vec![CopyVariant::Scalar, CopyVariant::Vec2, CopyVariant::Vec4, CopyVariant::Auto])) {
        let bytes = bytes % (1 << 40);
        let p = CopyPlan::new(src, dst, bytes, v);
        prop_assert_eq!(p.head_bytes + 4 * p.words + p.tail_bytes, bytes);
    }

    #[test]
    fn rectangles_are_checked_without_overflow(col in size(), row in size(), w in size(), h in size(), bw in size(), bh in size()) {
        let r = Rect::new(col, row, w, h);
        if r.check_inside("rect", bw, bh).is_ok() {
            prop_assert!(w >= 1 && h >= 1 && col + w <= bw && row + h <= bh);
        }
    }
}

/// Small random cases on the device: 1D and 2D convolutions in every
/// variant and mode, against the CPU references. Few cases, each a fresh
/// size, mask and input; the shrinker reports the smallest failure.
#[test]
fn random_small_convolutions_on_the_device_match_the_references() {
    let gpu = gpu_or_skip!();
    let cases = if common::under_sanitizer() { 8 } else { 64 };
    let cfg = ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() };
    let strategy = (
        1usize..=3000,
        1usize..=70,
        conv1d_variant(),
        prop::sample::select(Boundary::ALL.to_vec()),
        prop::sample::select(ConvOp::ALL.to_vec()),
        (1usize..=90, 1usize..=40, 0usize..=3, 1usize..=9, 1usize..=9, conv2d_variant()),
        any::<u64>(),
    );
    let mut runner = proptest::test_runner::TestRunner::new(cfg);
    runner
        .run(&strategy, |(n, w, v1, mode, op, (iw, ih, pad, mw, mh, v2), seed)| {
            use rand::{Rng, SeedableRng};
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let mut values = |k: usize| -> Vec<f32> { (0..k).map(|_| rng.random_range(-1.0f32..1.0)).collect() };
            let (mask, input) = (values(w), values(n));
            let conv = Conv1d::new(&gpu, &mask, op, mode).unwrap();
            let d_in = gpu.upload(&input).unwrap();
            let mut d_out = gpu.alloc_zeroed::<f32>(n).unwrap();
            d_out.fill_bytes(common::POISON).unwrap();
            conv.run(v1, &d_in.as_view(), &mut d_out.as_view_mut()).unwrap();
            let want = correlate1d_checked(&input, conv.taps(), conv.left(), mode).unwrap();
            let r = compare(&d_out.to_vec().unwrap(), &want);
            prop_assert!(r.is_ok(), "conv1d {v1:?} w={w} n={n} {mode:?} {op:?}: {:?}", r.err());
            let pitch = iw + pad;
            let len = (ih - 1) * pitch + iw;
            let (mask2, img) = (values(mw * mh), values(len));
            let conv = Conv2d::new(&gpu, &mask2, mw, mh, op, mode).unwrap();
            let d_in = gpu.upload(&img).unwrap();
            let mut d_out = gpu.alloc_zeroed::<f32>(len).unwrap();
            d_out.fill_bytes(common::POISON).unwrap();
            conv.run(v2, &d_in.as_view(), &mut d_out.as_view_mut(), iw, ih, pitch).unwrap();
            let (lx, ly) = conv.left();
            let image = Image { data: &img, width: iw, height: ih, pitch };
            let want = correlate2d_checked(image, conv.taps(), mw, mh, lx, ly, mode).unwrap();
            let got = d_out.to_vec().unwrap();
            let dense: Vec<f32> = (0..ih).flat_map(|y| got[y * pitch..y * pitch + iw].to_vec()).collect();
            let r = compare(&dense, &want);
            prop_assert!(r.is_ok(), "conv2d {v2:?} {mw}x{mh} on {iw}x{ih} pitch {pitch} {mode:?}: {:?}", r.err());
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(max_constant_taps::<f32>() >= 70, "the random widths cover constant-memory masks");
}
