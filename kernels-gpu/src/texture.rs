//! Texture memory (lesson 004, "texture and surface memory"): reads through
//! the texture unit, which caches with 2D locality, computes addresses
//! outside the kernel, applies an address mode at the edges and can filter
//! linearly between texels.
//!
//! The texture is a CUDA texture object (a 64-bit handle made on the host
//! by `cuTexObjectCreate`) passed as a plain `u64` kernel parameter and
//! read with PTX's `tex.2d.v4.f32.f32` in unified texture mode
//! ([`tex2d`]). Coordinates are `f32`: in pixel units texel `i` covers
//! `[i, i + 1)` and its centre is `i + 0.5`; in normalized units the same
//! texel covers `[i / n, (i + 1) / n)`.
//!
//! | kernel | what it does |
//! | --- | --- |
//! | `tex_fetch_2d` | sample at `n` given `(u, v)` pairs, write `channels` components per sample (tests of address modes and filtering) |
//! | `tex_conv2d_f32` | the 2D correlation with every tap read through the texture (the address mode is the boundary), one output per thread, mask in its `taps` parameter (constant bank 0) |
//! | `tex_conv2d_blocked_f32` | the same with [`BLOCK_Y`] × [`BLOCK_X`] outputs per thread: each texel fetched once per thread feeds every output of the block that uses it |
//! | `tex_conv2d_gm_f32`, `tex_conv2d_blocked_gm_f32` | the two above with the mask in global memory (masks larger than the parameter holds) |
//! | `tex_resize_f32` | resampling: output `(x, y)` samples at `((x + 0.5) · sx, (y + 0.5) · sy)`, bilinear when the texture filters linearly |
//!
//! The convolution kernels take `(tex, output, width, height, pitch, mask,
//! mw, mh, left_x, left_y, sx, sy)`: output `(x, y)` (at `y · pitch + x`)
//! is `Σ_j Σ_i T(x − left_x + i, y − left_y + j) · M[j · mw + i]`, where
//! `T(p, q)` is the texel fetched at `((p + 0.5) · sx, (q + 0.5) · sy)`:
//! `sx = sy = 1` for a texture in pixel coordinates, `1 / width` and
//! `1 / height` for one in normalized coordinates. Only output elements
//! are written; the texture is never read outside what the hardware's
//! address mode defines, so no position needs a bounds check. The
//! constant-mask kernels take one more parameter, `taps`: the `mw · mh`
//! taps by value ([`PARAM_MASK_BYTES`](crate::conv::PARAM_MASK_BYTES)
//! bytes, see [`crate::dev::param`]).

/// Outputs per thread along x of `tex_conv2d_blocked_*`.
pub const BLOCK_X: usize = 4;

/// Outputs per thread along y of `tex_conv2d_blocked_*`.
pub const BLOCK_Y: usize = 4;

/// Texels one thread of a convolution kernel with `rx × ry` outputs per
/// thread fetches for an `mw × mh` mask: `(rx + mw − 1) · (ry + mh − 1)`
/// (`mw · mh` for one output per thread).
pub const fn fetches_per_thread(rx: usize, ry: usize, mw: usize, mh: usize) -> usize {
    (rx + mw - 1) * (ry + mh - 1)
}

/// Samples the 2D texture object `tex` at `(x, y)`: the four components
/// `[r, g, b, a]` as `f32` (`tex.2d.v4.f32.f32`). One-channel textures
/// carry their value in `r`.
///
/// # Safety
/// `tex` is a live texture object of the current context whose texels
/// read as floating point (float formats, or integer formats read as
/// normalized floats).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn tex2d(tex: u64, x: f32, y: f32) -> [f32; 4] {
    let (r, g, b, a): (f32, f32, f32, f32);
    // SAFETY: the caller guarantees a live texture object; the fetch reads
    // only through the texture unit, which applies the address mode to
    // every coordinate.
    unsafe {
        core::arch::asm!(
            "tex.2d.v4.f32.f32 {{{r}, {g}, {b}, {a}}}, [{t}, {{{x}, {y}}}];",
            r = out(reg32) r, g = out(reg32) g, b = out(reg32) b, a = out(reg32) a,
            t = in(reg64) tex, x = in(reg32) x, y = in(reg32) y,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    [r, g, b, a]
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{BLOCK_X, BLOCK_Y, tex2d};
    use crate::conv::PARAM_MASK_BYTES;
    use crate::conv::elem::ConvElem;
    use crate::dev::grid::grid_stride;
    use crate::dev::index::{block_dim_x, block_dim_y, block_idx_x, block_idx_y, grid_dim_x, grid_dim_y};
    use crate::dev::index::{thread_idx_x, thread_idx_y};
    use crate::dev::param::{ParamBytes, ParamElem};

    /// Samples the texture at `(u[i], v[i])` for `i < n` and writes the
    /// first `channels` components (1 to 4) of each sample to
    /// `out[i · channels ..]`.
    ///
    /// # Safety
    /// `tex` a live texture object; `u`, `v` valid for `n` reads, `out` for
    /// `n · channels` writes, not overlapping them; `1 ≤ channels ≤ 4`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn tex_fetch_2d(
        tex: u64,
        u: *const f32,
        v: *const f32,
        n: usize,
        out: *mut f32,
        channels: u32,
    ) {
        let ch = channels.clamp(1, 4) as usize;
        for i in grid_stride(n) {
            // SAFETY: i < n: inside both coordinate arrays; a live texture.
            let t = unsafe { tex2d(tex, *u.add(i), *v.add(i)) };
            // SAFETY: i · ch + c < n · ch for c < ch.
            let o = unsafe { out.add(i * ch) };
            for (c, &value) in t.iter().enumerate() {
                if c < ch {
                    // SAFETY: see above.
                    unsafe { *o.add(c) = value };
                }
            }
        }
    }

    /// Tap `k` of the mask: from the `taps` parameter at `.param` address
    /// `taps` when `CONST`, from `mask` otherwise.
    ///
    /// # Safety
    /// `k` below the mask's taps, which are in the parameter (`CONST`) or
    /// at `mask`.
    #[inline(always)]
    unsafe fn tap<const CONST: bool>(taps: u64, mask: *const f32, k: u32) -> f32 {
        if CONST {
            // SAFETY: the host passes the taps in the parameter.
            unsafe { f32::ld_param(taps + u64::from(k) * 4) }
        } else {
            // SAFETY: the host passes mw · mh taps.
            unsafe { *mask.add(k as usize) }
        }
    }

    /// The texture convolution with `RX × RY` outputs per thread.
    ///
    /// Thread `(gx, gy)` of the grid owns outputs `x0 = RX · gx …`,
    /// `y0 = RY · gy …` (grid-stride in both dimensions). It walks the
    /// `RY + mh − 1` input rows and `RX + mw − 1` input columns its outputs
    /// need, fetches each texel once, and applies it to every output whose
    /// window holds it (tap `(c − q, ir − rr)` for output `(q, rr)`).
    /// Positions outside the image are the texture's business: its
    /// address mode is the boundary mode.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn conv<const CONST: bool, const RX: usize, const RY: usize>(
        tex: u64,
        output: *mut f32,
        (width, height, pitch): (usize, usize, usize),
        (taps, mask): (u64, *const f32),
        (mw, mh): (u32, u32),
        (lx, ly): (u32, u32),
        (sx, sy): (f32, f32),
    ) {
        let (bdx, bdy) = (block_dim_x() as usize, block_dim_y() as usize);
        let (units_x, units_y) = (width.div_ceil(RX), height.div_ceil(RY));
        let mut gy = block_idx_y() as usize * bdy + thread_idx_y() as usize;
        while gy < units_y {
            let mut gx = block_idx_x() as usize * bdx + thread_idx_x() as usize;
            while gx < units_x {
                let (x0, y0) = (gx * RX, gy * RY);
                // Pixel centres of the window's first column and row (exact
                // in f32: image sides stay far below 2^23).
                let fx0 = (x0 as i64 - i64::from(lx)) as f32 + 0.5;
                let fy0 = (y0 as i64 - i64::from(ly)) as f32 + 0.5;
                let mut acc = [[0.0f32; RX]; RY];
                for ir in 0..RY as u32 + mh - 1 {
                    let yc = (fy0 + ir as f32) * sy;
                    for c in 0..RX as u32 + mw - 1 {
                        let xc = (fx0 + c as f32) * sx;
                        // SAFETY: a live texture object (the caller's contract).
                        let t = unsafe { tex2d(tex, xc, yc) }[0];
                        for (rr, row) in acc.iter_mut().enumerate() {
                            let rr = rr as u32;
                            if rr <= ir && ir - rr < mh {
                                let j = ir - rr;
                                for (q, a) in row.iter_mut().enumerate() {
                                    let q = q as u32;
                                    if q <= c && c - q < mw {
                                        // SAFETY: j < mh, c − q < mw: a tap of the mask.
                                        let m = unsafe { tap::<CONST>(taps, mask, j * mw + c - q) };
                                        *a = f32::fma(t, m, *a);
                                    }
                                }
                            }
                        }
                    }
                }
                for (rr, row) in acc.iter().enumerate() {
                    let y = y0 + rr;
                    if y < height {
                        // SAFETY: y < height, and only x0 + q < width is
                        // written (inside the output's rows).
                        unsafe {
                            let p = output.add(y * pitch + x0);
                            if RX == 4 && x0 + 4 <= width && (p as usize).is_multiple_of(16) {
                                let mut v = [0.0f32; 4];
                                v[..RX].copy_from_slice(&row[..]);
                                f32::store4(p, v);
                            } else {
                                for (q, &value) in row.iter().enumerate() {
                                    if x0 + q < width {
                                        *p.add(q) = value;
                                    }
                                }
                            }
                        }
                    }
                }
                gx += grid_dim_x() as usize * bdx;
            }
            gy += grid_dim_y() as usize * bdy;
        }
    }

    macro_rules! tex_conv_kernel {
        ($name:ident, global, $rx:expr, $ry:expr) => {
            /// See the module documentation (`texture`).
            ///
            /// # Safety
            /// `tex` a live one-channel float texture object of `width ×
            /// height` texels, in pixel coordinates (`sx = sy = 1`) or
            /// normalized ones (`sx = 1 / width`, `sy = 1 / height`);
            /// `output` valid for `(height − 1) · pitch + width` elements,
            /// `pitch ≥ width`; `mask` valid for `mw · mh` elements;
            /// `mw, mh ≥ 1`.
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                tex: u64,
                output: *mut f32,
                width: usize,
                height: usize,
                pitch: usize,
                mask: *const f32,
                mw: u32,
                mh: u32,
                left_x: u32,
                left_y: u32,
                sx: f32,
                sy: f32,
            ) {
                let (size, left) = ((width, height, pitch), (left_x, left_y));
                // SAFETY: same contract.
                unsafe { conv::<false, { $rx }, { $ry }>(tex, output, size, (0, mask), (mw, mh), left, (sx, sy)) }
            }
        };
        ($name:ident, param, $rx:expr, $ry:expr) => {
            /// See the module documentation (`texture`).
            ///
            /// # Safety
            /// As the global-memory form, with the `mw · mh` taps in `taps`
            /// (`mask` is not read).
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $name(
                tex: u64,
                output: *mut f32,
                width: usize,
                height: usize,
                pitch: usize,
                mask: *const f32,
                mw: u32,
                mh: u32,
                left_x: u32,
                left_y: u32,
                sx: f32,
                sy: f32,
                _taps: ParamBytes<PARAM_MASK_BYTES>,
            ) {
                let (size, left) = ((width, height, pitch), (left_x, left_y));
                let taps = crate::param_base!($name, 12);
                // SAFETY: same contract.
                unsafe { conv::<true, { $rx }, { $ry }>(tex, output, size, (taps, mask), (mw, mh), left, (sx, sy)) }
            }
        };
    }

    tex_conv_kernel!(tex_conv2d_f32, param, 1, 1);
    tex_conv_kernel!(tex_conv2d_gm_f32, global, 1, 1);
    tex_conv_kernel!(tex_conv2d_blocked_f32, param, BLOCK_X, BLOCK_Y);
    tex_conv_kernel!(tex_conv2d_blocked_gm_f32, global, BLOCK_X, BLOCK_Y);

    /// Resampling: output `(x, y)` is the texture sampled at `((x + 0.5) ·
    /// sx, (y + 0.5) · sy)` (component `r`). For an `in_w × in_h` texture
    /// in pixel coordinates `sx = in_w / width`, `sy = in_h / height`
    /// (pixel centres map to pixel centres); in normalized coordinates
    /// `sx = 1 / width`, `sy = 1 / height`.
    ///
    /// # Safety
    /// `tex` a live float texture object; `output` valid for `(height − 1)
    /// · pitch + width` elements, `pitch ≥ width`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn tex_resize_f32(
        tex: u64,
        output: *mut f32,
        width: usize,
        height: usize,
        pitch: usize,
        sx: f32,
        sy: f32,
    ) {
        let (bdx, bdy) = (block_dim_x() as usize, block_dim_y() as usize);
        let mut y = block_idx_y() as usize * bdy + thread_idx_y() as usize;
        while y < height {
            let v = (y as f32 + 0.5) * sy;
            let mut x = block_idx_x() as usize * bdx + thread_idx_x() as usize;
            while x < width {
                let u = (x as f32 + 0.5) * sx;
                // SAFETY: a live texture; x < width, y < height.
                unsafe { *output.add(y * pitch + x) = tex2d(tex, u, v)[0] };
                x += grid_dim_x() as usize * bdx;
            }
            y += grid_dim_y() as usize * bdy;
        }
    }
}
