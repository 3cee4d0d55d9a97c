//! Host side of `coalesce`: run the crate's Rust-written GPU kernels through
//! the CUDA driver (via `cust`), safely.
//!
//! * [`Gpu`]: device + primary context + the kernel module JIT-loaded from
//!   the embedded PTX that suits the device + a stream. Everything else hangs
//!   off it.
//! * [`DeviceBuffer`] and its views: typed device memory, sub-ranges at any
//!   offset, host transfers ordered on the stream.
//! * [`LaunchConfig`]: launch shapes validated against the device and the
//!   kernel before the driver sees them; violations are typed errors.
//! * [`Gpu::write_symbol`]: constant memory written by name.
//! * [`Gpu::time`]: CUDA-event timing.
//! * [`copy`]: the vectorized copy lesson (scalar / vec2 / vec4).
//! * [`conv`]: convolution with constant-memory masks and shared tiles
//!   with halo cells, every `scipy.ndimage` boundary mode.
//! * [`PitchedBuffer`]: pitched 2D device memory and 2D copies
//!   ([`pitched`]); [`matrix`]: matrix addition in three layouts and
//!   `sum_matrix_2d` with validated 2D block shapes.
//! * [`query`], [`occupancy`], [`divergence`], [`reduce`]: the execution
//!   model lesson: device query and Little's law, the occupancy calculator,
//!   warp divergence, and sums of `i32`/`f32`/`f64`.
//! * [`transfer`]: host <-> device transfers: [`PinnedBuffer`] (page-locked),
//!   [`MappedBuffer`] (zero-copy), synchronous and stream-ordered copies,
//!   [`Stream`]s and [`Event`]s, and the copy/compute overlap
//!   pipeline ([`Gpu::pipeline`]).
//! * [`access`], [`alignment`], [`local`]: lesson 004's access patterns
//!   (offsets and strides), 12- vs 16-byte points vs structures of arrays,
//!   and a per-thread array in local memory vs registers.
//! * [`transpose`]: matrix transpose, naive and through shared tiles with
//!   and without bank conflicts; [`constant`]: constant-memory broadcast
//!   against serialized reads, and the same patterns from global memory.
//! * [`texture`]: texture memory: CUDA arrays, 2D texture objects (address
//!   modes, linear filtering), convolution and resizing through them.
//! * [`reference`](mod@reference): rayon CPU references the kernels are verified against.
//! * [`inspect`]: `ptxas` resource reports and SASS, for checking what the
//!   compiler really emitted.
//!
//! No public function panics on bad input or can cause undefined behaviour
//! without an `unsafe` block at the call site: bad lengths, ranges, launch
//! shapes and symbol sizes are [`Error`]s.

pub mod access;
pub mod alignment;
pub mod constant;
pub mod context;
pub mod conv;
pub mod copy;
pub mod device;
pub mod divergence;
mod driver;
pub mod error;
mod gpu;
pub mod inspect;
pub mod launch;
pub mod local;
pub mod matrix;
mod memory;
mod module;
pub mod occupancy;
pub mod pitched;
pub mod ptx;
pub mod query;
pub mod reduce;
pub mod reference;
pub mod stream;
pub mod streaming;
pub mod texture;
pub mod transfer;
pub mod transpose;

pub use access::Pattern;
pub use alignment::{Point12, Point16, PointLayout, Transform};
pub use constant::{ConstantTable, ConstantVariant};
pub use context::Fault;
pub use copy::{CopyPlan, CopyPolicy, CopyVariant, Width};
pub use cust::memory::DeviceCopy;
pub use device::{DeviceInfo, DeviceLimits};
pub use error::{DriverError, Error, Result};
pub use gpu::{DEPENDENT_LAUNCHES_ENV, Gpu, SYNC_LAUNCHES_ENV};
pub use half;
pub use launch::{Axis, DevicePtr, Dim3, KernelArg, KernelLimits, LaunchConfig, LaunchLimit, LimitViolation};
pub use local::HistogramVariant;
pub use matrix::{BlockShape, MatrixLayout, SumVariant};
pub use memory::{DeviceBuffer, DeviceView, DeviceViewMut};
pub use module::PtxModule;
pub use occupancy::{Occupancy, Suggestion};
pub use pitched::{PitchedBuffer, Rect};
pub use reduce::{ReduceElem, ReducePlan, ReducePolicy, ReduceVariant};
pub use stream::{Event, Stream};
pub use texture::{AddressMode, Coordinates, CudaArray, FilterMode, Texture2d, TextureDesc};
pub use transfer::{HostAllocFlags, MappedBuffer, PinnedBuffer, PipelineRun, ScaleAdd, Stage, StageSpan};
pub use transpose::{TransposePolicy, TransposeVariant};

/// The device crate (kernels' shared constants and index arithmetic).
pub use coalesce_kernels as kernels;
