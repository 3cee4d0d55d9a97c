//! Size and alignment (lesson 004, §5.3.2): one operation on three layouts
//! of points, `p' = p · scale + shift` per coordinate
//! ([`coalesce_kernels::alignment`]).
//!
//! * [`Point12`]: three `f32`, 12 bytes — three 32-bit loads per point.
//! * [`Point16`]: the same padded to 16 bytes, `#[repr(C, align(16))]` —
//!   one 128-bit load per point, 4 of every 16 bytes moved are padding.
//! * Structure of arrays: three `f32` buffers — three 32-bit loads, each
//!   warp's fully contiguous.
//!
//! The host types have the kernel types' layout (a test compares sizes,
//! alignments and field offsets); they are `Pod`, so buffers of them can
//! be poisoned and read back.

use bytemuck::{Pod, Zeroable};
use coalesce_kernels::alignment::THREADS;
use cust::memory::DeviceCopy;
use rayon::prelude::*;

use crate::access::{holds, one_per_thread};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::launch::{KernelArg, LaunchConfig};
use crate::memory::{DeviceView, DeviceViewMut};

/// A 12-byte point (`coalesce_kernels::alignment::Point12`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Point12 {
    /// x coordinate.
    pub x: f32,
    /// y coordinate.
    pub y: f32,
    /// z coordinate.
    pub z: f32,
}

/// A point padded to 16 bytes and aligned to 16
/// (`coalesce_kernels::alignment::Point16`).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Point16 {
    /// x coordinate.
    pub x: f32,
    /// y coordinate.
    pub y: f32,
    /// z coordinate.
    pub z: f32,
    /// Padding (the kernel writes 0).
    pub pad: f32,
}

// SAFETY: plain `repr(C)` structures of `f32`, no pointers, no padding
// bytes: any bit pattern copied to the device is a valid value.
unsafe impl DeviceCopy for Point12 {}
// SAFETY: as above (the padding is a named `f32` field).
unsafe impl DeviceCopy for Point16 {}

/// The operation: `p · scale + shift`, per coordinate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transform {
    /// Factor for every coordinate.
    pub scale: f32,
    /// Added to x, y, z.
    pub shift: [f32; 3],
}

impl Transform {
    /// The transformed coordinates of `(x, y, z)`, on the CPU: one
    /// single-precision multiply and add each (with a power-of-two scale
    /// the product is exact, so a fused multiply-add gives the same bits).
    pub fn apply(&self, p: [f32; 3]) -> [f32; 3] {
        [0, 1, 2].map(|k| p[k] * self.scale + self.shift[k])
    }
}

/// The three layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PointLayout {
    /// Array of 12-byte [`Point12`].
    Aos12,
    /// Array of 16-byte [`Point16`].
    Aos16,
    /// Three `f32` arrays.
    Soa,
}

impl PointLayout {
    /// All three, in the lesson's order.
    pub const ALL: [PointLayout; 3] = [PointLayout::Aos12, PointLayout::Aos16, PointLayout::Soa];

    /// The kernel.
    pub fn kernel(self) -> &'static str {
        match self {
            PointLayout::Aos12 => "points_aos12",
            PointLayout::Aos16 => "points_aos16",
            PointLayout::Soa => "points_soa",
        }
    }

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            PointLayout::Aos12 => "aos12",
            PointLayout::Aos16 => "aos16",
            PointLayout::Soa => "soa",
        }
    }

    /// Bytes the kernel reads per point (and writes as many).
    pub fn bytes_per_point(self) -> usize {
        match self {
            PointLayout::Aos16 => 16,
            PointLayout::Aos12 | PointLayout::Soa => 12,
        }
    }
}

impl Gpu {
    /// Common checks and the launch of a point kernel over `n` points.
    fn points_launch(&self, kernel: &'static str, n: usize, args: &[&dyn KernelArg]) -> Result<Option<LaunchConfig>> {
        if n == 0 {
            return Ok(None);
        }
        let cfg = one_per_thread(n, THREADS);
        // SAFETY: every caller checked that its views are live views of
        // this context holding at least `n` points and that the outputs
        // overlap nothing; `args` are in the kernel's parameter order.
        unsafe { self.launch(kernel, &cfg, args)? };
        Ok(Some(cfg))
    }

    /// Checks and launches an array-of-structures kernel: `(out, in, n,
    /// scale, tx, ty, tz)`.
    fn transform_aos<P: DeviceCopy>(
        &self,
        layout: PointLayout,
        src: &DeviceView<'_, P>,
        dst: &mut DeviceViewMut<'_, P>,
        n: usize,
        t: Transform,
    ) -> Result<Option<LaunchConfig>> {
        let k = layout.kernel();
        holds(k, src.len(), n)?;
        holds(k, dst.len(), n)?;
        src.check_gpu(self, k)?;
        dst.check_gpu(self, k)?;
        let (o, i) = (dst.device_ptr(), src.device_ptr());
        self.points_launch(k, n, &[&o, &i, &n, &t.scale, &t.shift[0], &t.shift[1], &t.shift[2]])
    }

    /// `dst[i] = t(src[i])` for the first `n` 12-byte points. Queued on
    /// the stream; `None` when `n` is 0.
    pub fn transform_aos12(
        &self,
        src: &DeviceView<'_, Point12>,
        dst: &mut DeviceViewMut<'_, Point12>,
        n: usize,
        t: Transform,
    ) -> Result<Option<LaunchConfig>> {
        self.transform_aos(PointLayout::Aos12, src, dst, n, t)
    }

    /// `dst[i] = t(src[i])` for the first `n` 16-byte points (padding
    /// written as 0). Queued on the stream; `None` when `n` is 0. A view of
    /// `Point16` always starts 16-byte aligned (allocations are 256-byte
    /// aligned, views step by whole points), as the 128-bit accesses need.
    pub fn transform_aos16(
        &self,
        src: &DeviceView<'_, Point16>,
        dst: &mut DeviceViewMut<'_, Point16>,
        n: usize,
        t: Transform,
    ) -> Result<Option<LaunchConfig>> {
        self.transform_aos(PointLayout::Aos16, src, dst, n, t)
    }

    /// The same on a structure of arrays: `dst[c][i] = t(src[·][i])[c]` for
    /// the first `n` points, `c` = x, y, z. Queued on the stream; `None`
    /// when `n` is 0.
    pub fn transform_soa(
        &self,
        src: [&DeviceView<'_, f32>; 3],
        dst: [&mut DeviceViewMut<'_, f32>; 3],
        n: usize,
        t: Transform,
    ) -> Result<Option<LaunchConfig>> {
        let k = PointLayout::Soa.kernel();
        for s in &src {
            holds(k, s.len(), n)?;
            s.check_gpu(self, k)?;
        }
        for d in &dst {
            holds(k, d.len(), n)?;
            d.check_gpu(self, k)?;
        }
        let [xi, yi, zi] = src.map(|s| s.device_ptr());
        let [xo, yo, zo] = dst.map(|d| d.device_ptr());
        // The three outputs are distinct mutable borrows: no two overlap,
        // and none overlaps an input.
        self.points_launch(k, n, &[&xo, &yo, &zo, &xi, &yi, &zi, &n, &t.scale, &t.shift[0], &t.shift[1], &t.shift[2]])
    }
}

fn same_len(op: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got { Ok(()) } else { Err(Error::LengthMismatch { op, expected, got }) }
}

/// CPU reference for 12-byte points: `dst[i] = t(src[i])` (same lengths).
pub fn reference_aos12(src: &[Point12], dst: &mut [Point12], t: Transform) -> Result<()> {
    same_len("alignment::reference_aos12", dst.len(), src.len())?;
    dst.par_iter_mut().zip(src.par_iter()).for_each(|(d, s)| {
        let [x, y, z] = t.apply([s.x, s.y, s.z]);
        *d = Point12 { x, y, z };
    });
    Ok(())
}

/// CPU reference for 16-byte points: `dst[i] = t(src[i])`, padding 0.
pub fn reference_aos16(src: &[Point16], dst: &mut [Point16], t: Transform) -> Result<()> {
    same_len("alignment::reference_aos16", dst.len(), src.len())?;
    dst.par_iter_mut().zip(src.par_iter()).for_each(|(d, s)| {
        let [x, y, z] = t.apply([s.x, s.y, s.z]);
        *d = Point16 { x, y, z, pad: 0.0 };
    });
    Ok(())
}

/// CPU reference for a structure of arrays (all six slices one length).
pub fn reference_soa(src: [&[f32]; 3], dst: [&mut [f32]; 3], t: Transform) -> Result<()> {
    const OP: &str = "alignment::reference_soa";
    let n = src[0].len();
    for len in src.iter().map(|s| s.len()).chain(dst.iter().map(|d| d.len())) {
        same_len(OP, n, len)?;
    }
    let [xo, yo, zo] = dst;
    xo.par_iter_mut().zip(yo.par_iter_mut()).zip(zo.par_iter_mut()).enumerate().for_each(|(i, ((x, y), z))| {
        [*x, *y, *z] = t.apply([src[0][i], src[1][i], src[2][i]]);
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use coalesce_kernels::alignment as k;
    use std::mem::{align_of, offset_of, size_of};

    #[test]
    fn host_types_have_the_kernel_layouts() {
        assert_eq!((size_of::<Point12>(), align_of::<Point12>()), (size_of::<k::Point12>(), align_of::<k::Point12>()));
        assert_eq!((size_of::<Point16>(), align_of::<Point16>()), (size_of::<k::Point16>(), align_of::<k::Point16>()));
        assert_eq!((size_of::<Point12>(), size_of::<Point16>(), align_of::<Point16>()), (12, 16, 16));
        assert_eq!(
            [offset_of!(Point12, x), offset_of!(Point12, y), offset_of!(Point12, z)],
            [offset_of!(k::Point12, x), offset_of!(k::Point12, y), offset_of!(k::Point12, z)]
        );
        assert_eq!(
            [offset_of!(Point16, x), offset_of!(Point16, y), offset_of!(Point16, z), offset_of!(Point16, pad)],
            [
                offset_of!(k::Point16, x),
                offset_of!(k::Point16, y),
                offset_of!(k::Point16, z),
                offset_of!(k::Point16, pad)
            ]
        );
        for l in PointLayout::ALL {
            let want = if l == PointLayout::Aos16 { 16 } else { 12 };
            assert_eq!(l.bytes_per_point(), want, "{}", l.name());
        }
    }

    #[test]
    fn references_agree_across_layouts() {
        let t = Transform { scale: 0.5, shift: [1.0, -2.0, 3.25] };
        let pts: Vec<[f32; 3]> = (0..1000).map(|i| [i as f32, -(i as f32) * 1.5, 7.0 - i as f32 * 0.25]).collect();
        let a12: Vec<Point12> = pts.iter().map(|p| Point12 { x: p[0], y: p[1], z: p[2] }).collect();
        let a16: Vec<Point16> = pts.iter().map(|p| Point16 { x: p[0], y: p[1], z: p[2], pad: 9.0 }).collect();
        let soa: [Vec<f32>; 3] = [0, 1, 2].map(|c| pts.iter().map(|p| p[c]).collect());
        let mut o12 = vec![Point12::default(); 1000];
        let mut o16 = vec![Point16 { pad: 5.0, ..Default::default() }; 1000];
        let mut os = [vec![0f32; 1000], vec![0f32; 1000], vec![0f32; 1000]];
        reference_aos12(&a12, &mut o12, t).unwrap();
        reference_aos16(&a16, &mut o16, t).unwrap();
        let [ox, oy, oz] = &mut os;
        reference_soa([&soa[0], &soa[1], &soa[2]], [ox, oy, oz], t).unwrap();
        for i in 0..1000 {
            let want = [i as f32 * 0.5 + 1.0, -(i as f32) * 0.75 - 2.0, 3.5 - i as f32 * 0.125 + 3.25];
            assert_eq!([o12[i].x, o12[i].y, o12[i].z], want, "{i}");
            assert_eq!([o16[i].x, o16[i].y, o16[i].z, o16[i].pad], [want[0], want[1], want[2], 0.0], "{i}");
            assert_eq!([os[0][i], os[1][i], os[2][i]], want, "{i}");
        }
        let e = reference_aos12(&a12[1..], &mut o12, t).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { expected: 1000, got: 999, .. }), "{e}");
    }
}
