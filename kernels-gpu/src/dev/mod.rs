//! Device support: the small layer that plays the role `cuda_std` plays for
//! the NVVM backend, written for rustc's own NVPTX backend.
//!
//! Every piece here is exercised by a kernel (see [`crate::probe`] and
//! [`crate::copy`]) and its PTX/SASS is checked by the host's tests, because
//! what the compiler emits is a property to verify, not to hope for:
//!
//! | piece | module | checked in SASS as |
//! | --- | --- | --- |
//! | thread/block/grid indices, global ids | [`index`] | `S2R`/`S2UR` of `SR_TID.*`, `SR_CTAID.*` |
//! | grid-stride range | [`grid`] | (the loop of every copy kernel; GPU-tested) |
//! | block barrier, warp size, lane id | [`sync`], [`warp`] | `BAR.SYNC` |
//! | 64/128-bit vector loads and stores | [`vector`] | `LDG.E.64`/`.128`, `STG.E.64`/`.128` |
//! | constant-memory arrays | [`constant`] | constant-bank operands / `LDC` |
//! | arrays passed by value as kernel parameters | [`param`] | bank-0 operands / `LDC`, `ULDC` of `c[0x0]`, no local copy |
//! | static and dynamic shared memory | [`shared`] | `LDS`/`STS` |
//! | warp shuffles (down, xor) | [`warp`] | `SHFL.DOWN`, `SHFL.BFLY` |
//! | pitched 2D row/element addresses | [`pitched`] | (the pitched matrix kernel; GPU-tested) |
//! | asynchronous global → shared copies, warp barrier | [`pipeline`], [`warp`] | `LDGSTS`, `LDGDEPBAR`, `DEPBAR` (the 2D strip kernels) |
//! | bulk global → shared copies on `mbarrier`s, L2 prefetch (sm_90) | [`pipeline`] | `UBLKCP`, `SYNCS`, `UBLKPF` (the bf16 rows tensor form) |
//! | device-scope atomics, fence | [`atomic`] | `ATOMG`, `MEMBAR` (the batched rows kernels' work counter) |
//!
//! Pure arithmetic (grid-stride bounds, vector split of a misaligned range) is
//! compiled on the host too, so the host plans launches with the very same
//! functions the kernels use, and unit tests run without a GPU.

#[cfg(target_arch = "nvptx64")]
pub mod atomic;
pub mod grid;
pub mod pitched;
pub mod vector;

#[cfg(target_arch = "nvptx64")]
pub mod constant;
#[cfg(target_arch = "nvptx64")]
pub mod index;
#[cfg(target_arch = "nvptx64")]
pub mod mma;
#[cfg(target_arch = "nvptx64")]
pub mod param;
#[cfg(target_arch = "nvptx64")]
pub mod pipeline;
#[cfg(target_arch = "nvptx64")]
pub mod shared;
#[cfg(target_arch = "nvptx64")]
pub mod sync;
pub mod warp;
