//! Streaming filters: the batched 1D and 2D channel filters
//! ([`crate::conv::batch`], [`crate::conv::channels`]) over data the host
//! holds, of any length: slices, page-locked buffers, memory-mapped files.
//! The data goes through the GPU (or several) in chunks that fit a device
//! memory budget, with copies in, kernels and copies out overlapped.
//!
//! ```no_run
//! use coalesce_host::conv::Boundary;
//! use coalesce_host::streaming::{Layout, Spec, Streaming};
//! # fn main() -> coalesce_host::Result<()> {
//! let signal: Vec<f32> = (0..50_000_000).map(|i| (i % 1000) as f32).collect();
//! let mut out = vec![0f32; signal.len()];
//! let spec = Spec::gaussian1d(4.0, 4.0).with_mode(Boundary::Reflect);
//! let report = Streaming::new(spec)
//!     .with_budget(256 << 20) // device bytes per GPU
//!     .run(Layout::signal(signal.len()), &signal, &mut out)?;
//! println!("{} chunks on {:?}", report.chunks, report.devices);
//! # Ok(())
//! # }
//! ```
//!
//! # How the data is cut
//!
//! * A 1D filter along the rows (`axis = 1`) of a batch of many rows (at
//!   least 8, or little data): whole rows per chunk when a row fits the
//!   budget ([`Kind::Rows`]: no halo). A single signal, a few long rows,
//!   or rows too long for the budget: each row in segments
//!   ([`Kind::Segments`]; chunk units are then samples).
//! * A 1D filter along the columns (`axis = 0`) and every 2D filter: bands
//!   of whole rows ([`Kind::Bands`]).
//!
//! A segment or band carries its halo: the `left` units before it and the
//! `w − 1 − left` after it, taken from its neighbours. At the true ends of
//! the data the halo is built by the boundary mode from the data itself
//! (reflect, mirror, nearest, wrap: copies of existing samples, so exact
//! in every storage type); in constant mode the piece stops at the true
//! end and the kernel supplies `cval` there, as it does in memory. The
//! kernel filters the whole piece and only the outputs of the chunk's own
//! units are kept, which read nothing but true data or true ghosts: each
//! is computed from the same values, in the same order, as in a
//! single in-memory run, so seams are bit-identical to it.
//!
//! # The pipeline
//!
//! Each GPU gets its own context handle, [`Streaming::with_slots`] (≥ 3)
//! slots of a stream, device buffers and (where needed) page-locked
//! staging. Chunk `k` of a GPU runs on slot `k mod slots`: copy in, filter,
//! copy out, all queued on the slot's stream, so one chunk's copy in, the
//! previous chunk's kernel and the one before's copy out overlap, and the
//! link carries both directions at once. Before a slot is reused the host
//! waits for its stream and moves its staged result out.
//!
//! * Input or output in page-locked memory the driver allocated (a
//!   [`PinnedBuffer`], in this GPU's context or portable) is copied
//!   directly, with no staging.
//! * Pageable memory (a `Vec`, a memory-mapped file) is staged through
//!   page-locked slot buffers with parallel (rayon) host copies.
//!
//! With several GPUs, chunks are handed out in order from one queue to
//! whichever GPU is free; each chunk's result is written to its own place
//! in the output.
//!
//! # Budget
//!
//! [`Streaming::with_budget`] caps the device memory each GPU uses for its
//! slots (default: half the free memory when the stream starts). Chunks
//! are sized so that every slot's input piece and output piece fit; a
//! band whose halo alone does not fit is an error naming the sizes.
//!
//! # Faults
//!
//! A failed allocation, a kernel fault or any failed call stops the stream:
//! every worker stops claiming chunks, waits for its queued work, frees
//! its buffers and joins, and the call returns [`Error::Chunk`] naming the
//! chunk and device. A fault leaves that device's context unusable for the
//! process ([`crate::context`]).
//!
//! # Without a GPU
//!
//! [`Backend::Cpu`] runs the same chunks through the rayon references
//! ([`crate::conv::reference_batch`]) in `f64`, written back by each type's
//! output rule: within the bound the GPU kernels are tested at, and slower.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rayon::prelude::*;

use crate::conv::batch::{Axis, Filter1d, Sample, Shape, left_for_origin};
use crate::conv::channels::{CHANNELS, Filter2d, Image};
use crate::conv::conv2d::correlation_taps_2d;
use crate::conv::{Boundary, ConvElem, ConvOp, gaussian_truncated, reference_batch};
use crate::driver;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::memory::DeviceBuffer;
use crate::stream::{Event, Stream};
use crate::transfer::{PinnedBuffer, Stage};

/// A filter's mask, independent of any device.
#[derive(Clone, Debug, PartialEq)]
pub enum Mask {
    /// A 1D mask of `width` taps for every signal, or one per signal, one
    /// after another (a depthwise filter).
    Line {
        /// The taps, `masks × width`.
        taps: Vec<f64>,
        /// Taps per mask.
        width: usize,
    },
    /// scipy's `gaussian_filter1d`: σ in samples, cut at `truncate` σ.
    Gaussian1d {
        /// Standard deviation, samples.
        sigma: f64,
        /// Radius in standard deviations.
        truncate: f64,
    },
    /// A 2D mask of `height × width` taps (row-major) for every channel, or
    /// one per channel.
    Plane {
        /// The taps, `masks × height × width`.
        taps: Vec<f64>,
        /// Columns.
        width: usize,
        /// Rows.
        height: usize,
    },
    /// scipy's `gaussian_filter` on each channel of an image.
    Gaussian2d {
        /// Standard deviation along the rows axis (axis 0), pixels.
        sigma_y: f64,
        /// Standard deviation along the columns axis (axis 1), pixels.
        sigma_x: f64,
        /// Radius in standard deviations.
        truncate: f64,
    },
}

/// What a streaming filter computes: mask, operation and scipy's
/// parameters. Built with [`Spec::line`], [`Spec::gaussian1d`],
/// [`Spec::plane`] or [`Spec::gaussian2d`] and the `with_` methods.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    mask: Mask,
    op: ConvOp,
    mode: Boundary,
    cval: f64,
    /// `(axis 0, axis 1)`; a 1D filter's origin is the second.
    origin: (isize, isize),
    axis: Axis,
}

impl Spec {
    fn of(mask: Mask, op: ConvOp) -> Spec {
        Spec { mask, op, mode: Boundary::Reflect, cval: 0.0, origin: (0, 0), axis: Axis::Rows }
    }

    /// A 1D filter with one `width`-tap mask, or one per signal
    /// (`taps.len() = signals × width`), along the rows (see
    /// [`Spec::with_axis`]); boundary mode reflect (scipy's default).
    pub fn line(taps: Vec<f64>, width: usize, op: ConvOp) -> Spec {
        Spec::of(Mask::Line { taps, width }, op)
    }

    /// scipy's `gaussian_filter1d(sigma, truncate=truncate)`.
    pub fn gaussian1d(sigma: f64, truncate: f64) -> Spec {
        Spec::of(Mask::Gaussian1d { sigma, truncate }, ConvOp::Correlate)
    }

    /// A 2D filter with one `height × width` mask (row-major), or one per
    /// channel.
    pub fn plane(taps: Vec<f64>, width: usize, height: usize, op: ConvOp) -> Spec {
        Spec::of(Mask::Plane { taps, width, height }, op)
    }

    /// scipy's `gaussian_filter(sigma=(sigma_y, sigma_x), truncate=…)` on
    /// each channel.
    pub fn gaussian2d(sigma_y: f64, sigma_x: f64, truncate: f64) -> Spec {
        Spec::of(Mask::Gaussian2d { sigma_y, sigma_x, truncate }, ConvOp::Correlate)
    }

    /// This filter with boundary `mode`.
    pub fn with_mode(mut self, mode: Boundary) -> Spec {
        self.mode = mode;
        self
    }

    /// This filter with scipy's `cval` (constant mode's value).
    pub fn with_cval(mut self, cval: f64) -> Spec {
        self.cval = cval;
        self
    }

    /// A 1D filter's `origin` (scipy's rule; checked when it runs).
    pub fn with_origin(mut self, origin: isize) -> Spec {
        self.origin = (0, origin);
        self
    }

    /// A 2D filter's `origin = (origin_y, origin_x)`.
    pub fn with_origin_2d(mut self, origin_y: isize, origin_x: isize) -> Spec {
        self.origin = (origin_y, origin_x);
        self
    }

    /// A 1D filter's `axis` (0 or -2: columns; 1 or -1: rows).
    pub fn with_axis(mut self, axis: isize) -> Result<Spec> {
        self.axis = Axis::from_scipy(axis)?;
        Ok(self)
    }

    /// The mask.
    pub fn mask(&self) -> &Mask {
        &self.mask
    }

    /// The boundary mode.
    pub fn mode(&self) -> Boundary {
        self.mode
    }

    /// Whether the mask is 2D.
    pub fn is_2d(&self) -> bool {
        matches!(self.mask, Mask::Plane { .. } | Mask::Gaussian2d { .. })
    }

    /// The correlation taps (rounded to `A`, widened back), their shape
    /// `(width, height)` (height 1 in 1D), the count of masks and the
    /// taps left of / above the centre: what the references run.
    fn resolve<A: ConvElem>(&self) -> Result<Resolved> {
        let round = |v: f64| A::from_f64(v).to_f64();
        let op = self.op;
        let (taps, mw, mh) = match &self.mask {
            Mask::Line { taps, width } => {
                if *width == 0 || taps.is_empty() || !taps.len().is_multiple_of(*width) {
                    return Err(Error::InvalidArgument {
                        op: "streaming",
                        message: format!("{} taps are not a whole number of {width}-tap masks", taps.len()),
                    });
                }
                let t = taps.chunks(*width).flat_map(|m| op.correlation_taps(m).0).map(round).collect();
                (t, *width, 1)
            }
            Mask::Gaussian1d { sigma, truncate } => {
                let t: Vec<f64> = gaussian_truncated::<A>(*sigma, *truncate)?.into_iter().map(|v| v.to_f64()).collect();
                let w = t.len();
                (t, w, 1)
            }
            Mask::Plane { taps, width, height } => {
                let size = width.checked_mul(*height).filter(|&s| s > 0);
                let size = size.ok_or_else(|| Error::InvalidArgument {
                    op: "streaming",
                    message: format!("a {width} x {height} mask is empty or too large"),
                })?;
                if taps.is_empty() || !taps.len().is_multiple_of(size) {
                    return Err(Error::InvalidArgument {
                        op: "streaming",
                        message: format!("{} taps are not a whole number of {width} x {height} masks", taps.len()),
                    });
                }
                let t =
                    taps.chunks(size).flat_map(|m| correlation_taps_2d(op, m, *width, *height).0).map(round).collect();
                (t, *width, *height)
            }
            Mask::Gaussian2d { sigma_y, sigma_x, truncate } => {
                let gx = gaussian_truncated::<f64>(*sigma_x, *truncate)?;
                let gy = gaussian_truncated::<f64>(*sigma_y, *truncate)?;
                let t = gy.iter().flat_map(|y| gx.iter().map(move |x| round(x * y))).collect();
                (t, gx.len(), gy.len())
            }
        };
        let op = match self.mask {
            Mask::Gaussian1d { .. } | Mask::Gaussian2d { .. } => ConvOp::Correlate,
            _ => op,
        };
        let left = left_for_origin(mw, self.origin.1, op)?;
        let top = if self.is_2d() { left_for_origin(mh, self.origin.0, op)? } else { 0 };
        let masks = taps.len() / (mw * mh);
        Ok(Resolved { taps, mw, mh, masks, left, top })
    }
}

/// A [`Spec`] in numbers.
#[derive(Clone, Debug)]
struct Resolved {
    taps: Vec<f64>,
    mw: usize,
    mh: usize,
    masks: usize,
    left: usize,
    top: usize,
}

/// The data's shape: `rows × cols` positions of `channels` interleaved
/// values each, row-major and dense (a single signal is one row).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Rows (signals of a batch; image rows).
    pub rows: usize,
    /// Positions per row.
    pub cols: usize,
    /// Values per position: 1, or 1/3/4 for a 2D filter's image.
    pub channels: usize,
}

impl Layout {
    /// One signal of `n` samples.
    pub fn signal(n: usize) -> Layout {
        Layout { rows: 1, cols: n, channels: 1 }
    }

    /// `rows` signals of `cols` samples.
    pub fn batch(rows: usize, cols: usize) -> Layout {
        Layout { rows, cols, channels: 1 }
    }

    /// An image of `height` rows of `width` pixels of `channels` values.
    pub fn image(height: usize, width: usize, channels: usize) -> Layout {
        Layout { rows: height, cols: width, channels }
    }

    /// Elements in all (`None` on overflow).
    pub fn len(&self) -> Option<usize> {
        self.rows.checked_mul(self.cols)?.checked_mul(self.channels)
    }

    /// Whether there is no element.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }
}

/// Where the chunks run.
#[derive(Clone, Debug)]
pub enum Backend {
    /// Every visible GPU.
    AllGpus,
    /// These device ordinals (one worker each; an ordinal may repeat).
    Gpus(Vec<u32>),
    /// These handles (one worker each): no new handle, no module load per
    /// call. Each worker queues on streams of its own.
    Handles(Vec<Gpu>),
    /// The rayon references on the CPU.
    Cpu,
}

/// How the data is cut (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Whole rows per chunk, no halo (1D along rows that fit).
    Rows,
    /// Segments of each row with their halos (1D along rows too long for
    /// the budget).
    Segments,
    /// Bands of rows with halo rows (1D along columns, 2D).
    Bands,
}

/// A failure [`Streaming`] causes on purpose at one chunk, to test the
/// stop (a real driver failure either way).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inject {
    /// An allocation larger than any device.
    Alloc,
    /// A kernel reading an address that is not device memory (a sticky
    /// fault: the context is lost for the process).
    Fault,
}

/// The progress callback: bytes of input filtered so far.
pub type Progress = Arc<dyn Fn(u64) + Send + Sync>;

/// One stage of one chunk on a GPU, in ms after that GPU's first event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Span {
    /// Worker (index into [`Report::devices`]).
    pub worker: usize,
    /// Chunk index.
    pub chunk: usize,
    /// Slot (stream) of the worker.
    pub slot: usize,
    /// Which stage.
    pub stage: Stage,
    /// Start, ms.
    pub start_ms: f64,
    /// End, ms.
    pub end_ms: f64,
}

/// What a streaming run did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// How the data was cut.
    pub kind: Option<Kind>,
    /// Chunks.
    pub chunks: usize,
    /// Units (rows, or samples for segments) per chunk, the last excepted.
    pub chunk_units: usize,
    /// `GPU <n>` per worker, or `CPU`.
    pub devices: Vec<String>,
    /// Chunks each worker ran.
    pub per_worker: Vec<usize>,
    /// Whether each worker staged the input / the output through
    /// page-locked buffers (false: direct copies).
    pub staged: Vec<(bool, bool)>,
    /// Bytes of input (= bytes of output).
    pub bytes: u64,
    /// Wall time of the whole call, s.
    pub seconds: f64,
    /// Per chunk stage spans, when asked for ([`Streaming::with_timeline`]).
    pub spans: Vec<Span>,
}

/// A streaming filter: a [`Spec`], where it runs and how.
#[derive(Clone)]
pub struct Streaming {
    spec: Spec,
    backend: Backend,
    budget: Option<usize>,
    chunk_units: Option<usize>,
    slots: usize,
    timeline: bool,
    progress: Option<Progress>,
    inject: Option<(usize, Inject)>,
}

impl std::fmt::Debug for Streaming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streaming")
            .field("spec", &self.spec)
            .field("backend", &self.backend)
            .field("budget", &self.budget)
            .field("chunk_units", &self.chunk_units)
            .field("slots", &self.slots)
            .finish()
    }
}

/// Slots per GPU by default.
pub const DEFAULT_SLOTS: usize = 3;

/// Fewest elements a chunk gets when the budget is not the limit, so that
/// large data is cut into at least [`MIN_CHUNKS`] chunks that overlap.
const MIN_CHUNK_ELEMS: usize = 1 << 22;

/// Chunks large data is cut into at least, for overlap.
const MIN_CHUNKS: usize = 8;

/// Chunk units of the CPU backend when none is given: about this many
/// elements per chunk.
const CPU_CHUNK_ELEMS: usize = 1 << 20;

impl Streaming {
    /// `spec` on every visible GPU, 3 slots each, the default budget.
    pub fn new(spec: Spec) -> Streaming {
        Streaming {
            spec,
            backend: Backend::AllGpus,
            budget: None,
            chunk_units: None,
            slots: DEFAULT_SLOTS,
            timeline: false,
            progress: None,
            inject: None,
        }
    }

    /// Runs on `backend`.
    pub fn with_backend(mut self, backend: Backend) -> Streaming {
        self.backend = backend;
        self
    }

    /// Device bytes each GPU may use for its slots.
    pub fn with_budget(mut self, bytes: usize) -> Streaming {
        self.budget = Some(bytes);
        self
    }

    /// Units per chunk (rows, or samples of a segment), instead of sizing
    /// them from the budget (a chunk that does not fit it is an error).
    pub fn with_chunk_units(mut self, units: usize) -> Streaming {
        self.chunk_units = Some(units);
        self
    }

    /// Slots (streams with their buffers) per GPU; at least 3.
    pub fn with_slots(mut self, slots: usize) -> Streaming {
        self.slots = slots;
        self
    }

    /// Records every chunk's stage spans with CUDA events.
    pub fn with_timeline(mut self, on: bool) -> Streaming {
        self.timeline = on;
        self
    }

    /// Calls `progress` with the input bytes done after each chunk.
    pub fn with_progress(mut self, progress: Progress) -> Streaming {
        self.progress = Some(progress);
        self
    }

    #[doc(hidden)]
    pub fn with_injected(mut self, chunk: usize, what: Inject) -> Streaming {
        self.inject = Some((chunk, what));
        self
    }

    /// The spec.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// Filters `input` (laid out as `layout`) into `output` (same length,
    /// not overlapping it). Returns what ran.
    pub fn run<S: Sample>(&self, layout: Layout, input: &[S], output: &mut [S]) -> Result<Report> {
        let started = Instant::now();
        let len = layout.len().ok_or_else(|| Error::InvalidArgument {
            op: "streaming",
            message: format!("{} x {} x {} elements overflow", layout.rows, layout.cols, layout.channels),
        })?;
        for (name, got) in [("streaming (input)", input.len()), ("streaming (output)", output.len())] {
            if got != len {
                return Err(Error::LengthMismatch { op: name, expected: len, got });
            }
        }
        let r = self.spec.resolve::<S::Acc>()?;
        self.check_layout(layout, &r)?;
        if self.slots < 3 {
            return Err(Error::InvalidArgument {
                op: "streaming",
                message: format!("{} slots: the pipeline needs at least 3 (copy in, kernel, copy out)", self.slots),
            });
        }
        let mut report = Report { bytes: (len * std::mem::size_of::<S>()) as u64, ..Report::default() };
        if len == 0 {
            return Ok(report);
        }
        let mut targets: Option<Vec<Target>> = match &self.backend {
            Backend::Cpu => None,
            Backend::Gpus(list) => Some(list.iter().map(|&d| Target::Ordinal(d)).collect()),
            Backend::Handles(list) => Some(list.iter().map(|g| Target::Handle(g.clone())).collect()),
            Backend::AllGpus => {
                let n = Gpu::count();
                if n == 0 {
                    return Err(Error::NoDevice { reason: "no CUDA device is visible".into() });
                }
                Some((0..n).map(Target::Ordinal).collect())
            }
        };
        let size = std::mem::size_of::<S>();
        let geo = match &mut targets {
            None => self.geometry(layout, &r, size, self.budget)?,
            Some(list) if list.is_empty() => {
                return Err(Error::InvalidArgument { op: "streaming", message: "an empty list of GPUs".into() });
            }
            Some(list) => {
                let budget = match self.budget {
                    Some(b) => b,
                    None => {
                        // The default budget asks the first GPU; the handle
                        // opened for that serves its worker too.
                        let gpu = match &list[0] {
                            Target::Handle(g) => g.clone(),
                            Target::Ordinal(d) => Gpu::with_device(*d)?,
                        };
                        let free = gpu.memory_info()?.0;
                        list[0] = Target::Handle(gpu);
                        free / 2
                    }
                };
                self.geometry(layout, &r, size, Some(budget))?
            }
        };
        let chunks = geo.chunks();
        report.kind = Some(geo.kind);
        report.chunks = chunks.len();
        report.chunk_units = geo.chunk_units;
        // Each chunk's output, in chunk order: contiguous and disjoint.
        let mut outs: Vec<&mut [S]> = Vec::with_capacity(chunks.len());
        let mut rest = output;
        for c in &chunks {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(c.units.len() * geo.unit);
            outs.push(head);
            rest = tail;
        }
        let progress = Tracker { done: AtomicU64::new(0), callback: self.progress.clone() };
        match targets {
            None => {
                self.run_cpu(&geo, &r, input, &chunks, outs, &progress)?;
                report.devices = vec!["CPU".into()];
                report.per_worker = vec![chunks.len()];
                report.staged = vec![(false, false)];
            }
            Some(list) => {
                let queue = Mutex::new(chunks.iter().cloned().zip(outs).collect::<Vec<_>>().into_iter());
                let ctx = Shared { geo: &geo, input, queue, abort: AtomicBool::new(false), progress };
                let results: Vec<Result<WorkerReport>> = std::thread::scope(|scope| {
                    let handles: Vec<_> = list
                        .iter()
                        .enumerate()
                        .map(|(i, target)| {
                            let ctx = &ctx;
                            let target = target.clone();
                            scope.spawn(move || {
                                let r = self.worker::<S>(ctx, i, target);
                                if r.is_err() {
                                    ctx.abort.store(true, Ordering::SeqCst);
                                }
                                r
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| {
                            h.join().unwrap_or_else(|_| {
                                Err(Error::InvalidArgument { op: "streaming", message: "a worker panicked".into() })
                            })
                        })
                        .collect()
                });
                // The error to report: the failed chunk with the lowest
                // index; a worker's own setup error only when no chunk
                // failed (after a fault, late workers fail to start too).
                let mut first: Option<Error> = None;
                for (i, r) in results.into_iter().enumerate() {
                    match r {
                        Ok(w) => {
                            report.per_worker.push(w.chunks);
                            report.staged.push(w.staged);
                            report.spans.extend(w.spans);
                        }
                        Err(e) => {
                            report.per_worker.push(0);
                            report.staged.push((false, false));
                            let better = match (&first, &e) {
                                (None, _) => true,
                                (Some(Error::Chunk { chunk: a, .. }), Error::Chunk { chunk: b, .. }) => b < a,
                                (Some(Error::Chunk { .. }), _) => false,
                                (Some(_), Error::Chunk { .. }) => true,
                                (Some(_), _) => false,
                            };
                            if better {
                                first = Some(e);
                            }
                        }
                    }
                    report.devices.push(list[i].name());
                }
                if let Some(e) = first {
                    return Err(e);
                }
            }
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    fn check_layout(&self, layout: Layout, r: &Resolved) -> Result<()> {
        let bad = |message: String| Err(Error::InvalidArgument { op: "streaming", message });
        if self.spec.is_2d() {
            if !CHANNELS.contains(&layout.channels) {
                return bad(format!(
                    "{} channels: images have 1 (gray), 3 (RGB) or 4 (RGBA) interleaved channels",
                    layout.channels
                ));
            }
            if r.masks != 1 && r.masks != layout.channels {
                return bad(format!(
                    "{} masks for {} channels: one mask, or one per channel",
                    r.masks, layout.channels
                ));
            }
        } else {
            if layout.channels != 1 {
                return bad(format!("a 1D filter takes 1 channel, not {}", layout.channels));
            }
            let signals = match self.spec.axis {
                Axis::Rows => layout.rows,
                Axis::Columns => layout.cols,
            };
            if r.masks != 1 && r.masks != signals {
                return bad(format!(
                    "{} masks for {signals} signals (axis {}): a depthwise filter takes one mask per signal",
                    r.masks,
                    self.spec.axis.scipy()
                ));
            }
        }
        Ok(())
    }

    /// How the data is cut, for `budget` device bytes per GPU (`None`:
    /// the CPU).
    fn geometry(&self, layout: Layout, r: &Resolved, size: usize, budget: Option<usize>) -> Result<Geometry> {
        let Layout { rows, cols, channels } = layout;
        let (halo_lo, halo_hi) =
            if self.spec.is_2d() { (r.top, r.mh - 1 - r.top) } else { (r.left, r.mw - 1 - r.left) };
        let mode = self.spec.mode;
        // A 1D filter along the rows: whole rows, no halo (unless cut into
        // segments below); along the columns, and in 2D: bands of rows.
        let bands = self.spec.is_2d() || self.spec.axis == Axis::Columns;
        let mut geo = Geometry {
            kind: if bands { Kind::Bands } else { Kind::Rows },
            n: rows,
            lines: 1,
            unit: cols * channels,
            line_stride: 0,
            lo: if bands { halo_lo } else { 0 },
            hi: if bands { halo_hi } else { 0 },
            mode,
            cols,
            channels,
            chunk_units: 0,
        };
        let per_unit_slots = |g: &Geometry| g.unit.saturating_mul(size).saturating_mul(2 * self.slots);
        // Units per chunk the budget allows (each slot: input and output
        // pieces of chunk + halo units).
        let fit = |g: &Geometry| -> Option<usize> {
            let b = budget?;
            let per = per_unit_slots(g).max(1);
            Some((b / per).saturating_sub(g.lo + g.hi))
        };
        // Whole rows per chunk only for a batch: of many rows (or little
        // data), each fitting the budget. One signal, or a few long ones,
        // goes in segments, so that it streams.
        let total = rows.saturating_mul(cols);
        let few = rows == 1 || (rows < MIN_CHUNKS && total > MIN_CHUNK_ELEMS);
        if geo.kind == Kind::Rows && (few || fit(&geo) == Some(0)) {
            geo = Geometry {
                kind: Kind::Segments,
                n: cols,
                lines: rows,
                unit: 1,
                line_stride: cols,
                lo: halo_lo,
                hi: halo_hi,
                ..geo
            };
        }
        let units = match (self.chunk_units, fit(&geo)) {
            (Some(0), _) => {
                return Err(Error::InvalidArgument { op: "streaming", message: "chunks of 0 units".into() });
            }
            (Some(u), Some(f)) if u > f => {
                return Err(Error::InvalidArgument {
                    op: "streaming",
                    message: format!(
                        "chunks of {u} units with {} halo units need {} bytes in {} slots; the budget is {} bytes",
                        geo.lo + geo.hi,
                        (u + geo.lo + geo.hi).saturating_mul(per_unit_slots(&geo)),
                        self.slots,
                        budget.unwrap_or(0)
                    ),
                });
            }
            (Some(u), _) => u,
            (None, Some(0)) => {
                return Err(Error::InvalidArgument {
                    op: "streaming",
                    message: format!(
                        "a device budget of {} bytes cannot hold one {} of {} elements with its {} halo units in {} \
                         slots ({} bytes); raise the budget",
                        budget.unwrap_or(0),
                        if geo.kind == Kind::Segments { "sample" } else { "row" },
                        geo.unit,
                        geo.lo + geo.hi,
                        self.slots,
                        (1 + geo.lo + geo.hi).saturating_mul(per_unit_slots(&geo))
                    ),
                });
            }
            (None, Some(f)) => {
                let total = geo.n.saturating_mul(geo.lines).saturating_mul(geo.unit);
                let want = geo.n.div_ceil(MIN_CHUNKS).max(MIN_CHUNK_ELEMS.div_ceil(geo.unit.max(1)));
                // Small data: at least MIN_CHUNK_ELEMS per chunk; large: at
                // least MIN_CHUNKS chunks; never past the budget.
                if total <= MIN_CHUNK_ELEMS { f } else { f.min(want) }
            }
            (None, None) => CPU_CHUNK_ELEMS.div_ceil(geo.unit.max(1)).max(1),
        };
        geo.chunk_units = units.clamp(1, geo.n.max(1));
        Ok(geo)
    }

    fn run_cpu<S: Sample>(
        &self,
        geo: &Geometry,
        r: &Resolved,
        input: &[S],
        chunks: &[ChunkDesc],
        outs: Vec<&mut [S]>,
        progress: &Tracker,
    ) -> Result<()> {
        let n = chunks.len();
        chunks.par_iter().zip(outs).try_for_each(|(c, out)| {
            let piece = geo.piece(c);
            let mut host = vec![input[0]; piece.len() * geo.unit];
            geo.gather(input, c, &mut host);
            let values: Vec<f64> = host.iter().map(|v| v.to_f64()).collect();
            let pu = piece.len();
            let checked = match geo.kind {
                Kind::Rows | Kind::Segments => {
                    let (first, shape) = match geo.kind {
                        Kind::Rows => (c.units.start, Shape::new(pu, geo.cols)),
                        _ => (c.line, Shape::signal(pu)),
                    };
                    let taps =
                        if r.masks == 1 { &r.taps[..] } else { &r.taps[first * r.mw..(first + shape.rows) * r.mw] };
                    reference_batch::filter1d::<S::Acc>(
                        &values,
                        shape,
                        Axis::Rows,
                        taps,
                        r.mw,
                        r.left,
                        self.spec.mode,
                        self.spec.cval,
                    )
                }
                Kind::Bands if !self.spec.is_2d() => reference_batch::filter1d::<S::Acc>(
                    &values,
                    Shape::new(pu, geo.cols),
                    Axis::Columns,
                    &r.taps,
                    r.mw,
                    r.left,
                    self.spec.mode,
                    self.spec.cval,
                ),
                Kind::Bands => reference_batch::filter2d::<S::Acc>(
                    &values,
                    Image::new(geo.cols, pu, geo.channels)?,
                    &r.taps,
                    (r.mw, r.mh),
                    (r.left, r.top),
                    self.spec.mode,
                    self.spec.cval,
                ),
            }
            .map_err(|e| chunk_error(c.index, n, "CPU", e))?;
            let kept = geo.kept(c);
            for (o, v) in out.iter_mut().zip(&checked[kept]) {
                *o = S::from_f64(v.value);
            }
            progress.add(std::mem::size_of_val(out));
            Ok(())
        })
    }

    fn worker<'a, S: Sample>(&self, ctx: &Shared<'a, S>, index: usize, target: Target) -> Result<WorkerReport> {
        let geo = ctx.geo;
        let name = target.name();
        let gpu = match target {
            Target::Handle(g) => g,
            Target::Ordinal(d) => Gpu::with_device(d)?,
        };
        let total = geo.chunks_count();
        let staged_in = !page_locked(&gpu, ctx.input);
        let mut slots: Slots<'a, S> = Slots { slots: Vec::new() };
        let base = self.device_filter::<S>(&gpu)?;
        for _ in 0..self.slots {
            let stream = gpu.new_stream()?;
            let filter = base.on(&stream)?;
            slots.slots.push(Slot { stream, filter, d_in: None, d_out: None, h_in: None, h_out: None, pending: None });
        }
        let zero = if self.timeline { Some(slots.slots[0].stream.record()?) } else { None };
        if let Some(z) = &zero {
            for s in &slots.slots[1..] {
                s.stream.wait(z)?;
            }
        }
        let mut report = WorkerReport { chunks: 0, staged: (staged_in, false), spans: Vec::new() };
        let mut k = 0usize;
        loop {
            if ctx.abort.load(Ordering::SeqCst) {
                break;
            }
            let next = ctx.queue.lock().map_err(|_| poisoned())?.next();
            let Some((chunk, out)) = next else { break };
            let slot = k % self.slots;
            // The slot's previous chunk first: its stream is done, its
            // staged output moves to the caller.
            slots
                .complete(slot, ctx, index, zero.as_ref(), &mut report)
                .map_err(|(c, e)| chunk_error(c, total, &name, e))?;
            let staged_out = !page_locked(&gpu, out);
            report.staged.1 |= staged_out;
            let idx = chunk.index;
            slots
                .queue(slot, ctx, chunk, out, staged_in, staged_out, self.timeline, self.inject)
                .map_err(|e| chunk_error(idx, total, &name, e))?;
            report.chunks += 1;
            k += 1;
        }
        for i in 0..self.slots {
            let slot = (k + i) % self.slots;
            slots
                .complete(slot, ctx, index, zero.as_ref(), &mut report)
                .map_err(|(c, e)| chunk_error(c, total, &name, e))?;
        }
        Ok(report)
    }

    fn device_filter<S: Sample>(&self, gpu: &Gpu) -> Result<DevFilter<S>> {
        let s = &self.spec;
        let acc = |v: &[f64]| -> Vec<S::Acc> { v.iter().map(|&x| S::Acc::from_f64(x)).collect() };
        Ok(match &s.mask {
            Mask::Line { taps, width } => DevFilter::One(
                Filter1d::<S>::depthwise(gpu, &acc(taps), *width, s.op, s.mode)?
                    .with_cval(s.cval)
                    .with_origin(s.origin.1)?
                    .with_axis(s.axis.scipy() as isize)?,
            ),
            Mask::Gaussian1d { sigma, truncate } => DevFilter::One(
                Filter1d::<S>::gaussian(gpu, *sigma, *truncate, s.mode)?
                    .with_cval(s.cval)
                    .with_origin(s.origin.1)?
                    .with_axis(s.axis.scipy() as isize)?,
            ),
            Mask::Plane { taps, width, height } => DevFilter::Two(
                Filter2d::<S>::per_channel(gpu, &acc(taps), *width, *height, s.op, s.mode)?
                    .with_cval(s.cval)
                    .with_origin(s.origin.0, s.origin.1)?,
            ),
            Mask::Gaussian2d { sigma_y, sigma_x, truncate } => DevFilter::Two(
                Filter2d::<S>::gaussian(gpu, *sigma_x, *sigma_y, *truncate, s.mode)?
                    .with_cval(s.cval)
                    .with_origin(s.origin.0, s.origin.1)?,
            ),
        })
    }
}

/// A worker's GPU: a device to open, or a caller's handle.
#[derive(Clone)]
enum Target {
    Ordinal(u32),
    Handle(Gpu),
}

impl Target {
    fn name(&self) -> String {
        match self {
            Target::Ordinal(d) => format!("GPU {d}"),
            Target::Handle(g) => format!("GPU {}", g.info().ordinal),
        }
    }
}

fn poisoned() -> Error {
    Error::InvalidArgument { op: "streaming", message: "the chunk queue was poisoned by a panicking worker".into() }
}

fn chunk_error(chunk: usize, chunks: usize, device: &str, e: Error) -> Error {
    match e {
        e @ Error::Chunk { .. } => e,
        e => Error::Chunk { chunk, chunks, device: device.to_string(), source: Box::new(e) },
    }
}

/// Whether `data` lies in page-locked memory this GPU's context copies
/// directly (empty: treated as page-locked, nothing to stage).
fn page_locked<S>(gpu: &Gpu, data: &[S]) -> bool {
    if data.is_empty() {
        return true;
    }
    gpu.bind().is_ok()
        && driver::host_is_page_locked(data.as_ptr().cast())
        && driver::host_is_page_locked(data.as_ptr().wrapping_add(data.len() - 1).cast())
}

/// A chunk: units `units` of line `line`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkDesc {
    /// Its index, in data order.
    pub index: usize,
    /// The row it lies in ([`Kind::Segments`]; 0 otherwise).
    pub line: usize,
    /// Its units (rows, or samples of the row).
    pub units: Range<usize>,
}

/// How the data is cut: `lines` lines of `n` units of `unit` elements,
/// line `l` starting at element `l · line_stride`; halos of `lo` and `hi`
/// units.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    kind: Kind,
    n: usize,
    lines: usize,
    unit: usize,
    line_stride: usize,
    lo: usize,
    hi: usize,
    mode: Boundary,
    cols: usize,
    channels: usize,
    chunk_units: usize,
}

impl Geometry {
    fn chunks_count(&self) -> usize {
        self.lines * self.n.div_ceil(self.chunk_units)
    }

    fn chunks(&self) -> Vec<ChunkDesc> {
        let per = self.n.div_ceil(self.chunk_units);
        (0..self.lines)
            .flat_map(|line| {
                (0..per).map(move |i| {
                    let start = i * self.chunk_units;
                    ChunkDesc { index: line * per + i, line, units: start..(start + self.chunk_units).min(self.n) }
                })
            })
            .collect()
    }

    /// The units of chunk `c`'s input piece (outside `0..n`: ghosts).
    fn piece(&self, c: &ChunkDesc) -> Range<isize> {
        let (a, b) = (c.units.start as isize - self.lo as isize, (c.units.end + self.hi) as isize);
        if self.mode == Boundary::Zero { a.max(0)..b.min(self.n as isize) } else { a..b }
    }

    /// Chunk `c`'s own outputs within its piece's output, elements.
    fn kept(&self, c: &ChunkDesc) -> Range<usize> {
        let at = (c.units.start as isize - self.piece(c).start) as usize * self.unit;
        at..at + c.units.len() * self.unit
    }

    /// The ghost units of `piece` (outside `0..n`): `(index in the piece,
    /// position)`, before the data then after it.
    fn ghosts(&self, piece: &Range<isize>) -> impl Iterator<Item = (usize, isize)> + use<> {
        let (start, n) = (piece.start, self.n as isize);
        let before = start..piece.end.min(0);
        let after = start.max(n)..piece.end;
        before.chain(after).map(move |p| ((p - start) as usize, p))
    }

    /// The units of `piece` inside `0..n`.
    fn inner(&self, piece: &Range<isize>) -> Range<usize> {
        piece.start.max(0) as usize..piece.end.min(self.n as isize) as usize
    }

    /// First element of unit `q` of line `l`.
    fn at(&self, line: usize, q: usize) -> usize {
        line * self.line_stride + q * self.unit
    }

    /// The unit of `input` that ghost position `p` of line `line` copies.
    fn ghost_unit<'s, S>(&self, input: &'s [S], line: usize, p: isize) -> &'s [S] {
        let q = ghost_index(self.mode, p, self.n).expect("constant mode pieces stay inside the data");
        let from = self.at(line, q);
        &input[from..from + self.unit]
    }

    /// Copies chunk `c`'s piece from `input` into `dst` (its length).
    fn gather<S: Sample>(&self, input: &[S], c: &ChunkDesc, dst: &mut [S]) {
        let piece = self.piece(c);
        let inner = self.inner(&piece);
        let off = (inner.start as isize - piece.start) as usize * self.unit;
        let len = inner.len() * self.unit;
        let from = self.at(c.line, inner.start);
        par_copy(&mut dst[off..off + len], &input[from..from + len]);
        for (i, p) in self.ghosts(&piece) {
            dst[i * self.unit..(i + 1) * self.unit].copy_from_slice(self.ghost_unit(input, c.line, p));
        }
    }
}

/// The unit that position `p` of a line of `n` units reads under `mode`
/// (scipy's rules, any distance outside); `None` in constant mode outside
/// `0..n`.
pub fn ghost_index(mode: Boundary, p: isize, n: usize) -> Option<usize> {
    let n = n as isize;
    if n <= 0 {
        return None;
    }
    if (0..n).contains(&p) {
        return Some(p as usize);
    }
    let q = match mode {
        Boundary::Zero => return None,
        Boundary::Nearest => p.clamp(0, n - 1),
        Boundary::Wrap => p.rem_euclid(n),
        Boundary::Reflect => {
            let q = p.rem_euclid(2 * n);
            if q < n { q } else { 2 * n - 1 - q }
        }
        Boundary::Mirror => {
            if n == 1 {
                0
            } else {
                let q = p.rem_euclid(2 * n - 2);
                if q < n { q } else { 2 * n - 2 - q }
            }
        }
    };
    Some(q as usize)
}

/// `dst.copy_from_slice(src)` on rayon's threads, 1 MiB pieces.
fn par_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    let piece = ((1 << 20) / std::mem::size_of::<T>().max(1)).max(1);
    if src.len() <= piece {
        dst.copy_from_slice(src);
        return;
    }
    dst.par_chunks_mut(piece).zip(src.par_chunks(piece)).for_each(|(d, s)| d.copy_from_slice(s));
}

struct Tracker {
    done: AtomicU64,
    callback: Option<Progress>,
}

impl Tracker {
    fn add(&self, bytes: usize) {
        let now = self.done.fetch_add(bytes as u64, Ordering::SeqCst) + bytes as u64;
        if let Some(f) = &self.callback {
            f(now);
        }
    }
}

type Queue<'a, S> = Mutex<std::vec::IntoIter<(ChunkDesc, &'a mut [S])>>;

struct Shared<'a, S: Sample> {
    geo: &'a Geometry,
    input: &'a [S],
    queue: Queue<'a, S>,
    abort: AtomicBool,
    progress: Tracker,
}

struct WorkerReport {
    chunks: usize,
    staged: (bool, bool),
    spans: Vec<Span>,
}

enum DevFilter<S: Sample> {
    One(Filter1d<S>),
    Two(Filter2d<S>),
}

impl<S: Sample> DevFilter<S> {
    fn on(&self, stream: &Stream) -> Result<DevFilter<S>> {
        Ok(match self {
            DevFilter::One(f) => DevFilter::One(f.on(stream)?),
            DevFilter::Two(f) => DevFilter::Two(f.on(stream)?),
        })
    }
}

struct Pending<'a, S> {
    chunk: usize,
    out: &'a mut [S],
    staged_out: bool,
    events: Option<[Event; 4]>,
}

struct Slot<'a, S: Sample> {
    stream: Stream,
    filter: DevFilter<S>,
    d_in: Option<DeviceBuffer<S>>,
    d_out: Option<DeviceBuffer<S>>,
    /// Staging of the input piece (pageable input), or of its ghost units
    /// (page-locked input).
    h_in: Option<PinnedBuffer<S>>,
    h_out: Option<PinnedBuffer<S>>,
    pending: Option<Pending<'a, S>>,
}

/// A worker's slots. Dropping them waits for every stream first, so no
/// queued copy outlives the buffers or the caller's slices, even when a
/// chunk fails.
struct Slots<'a, S: Sample> {
    slots: Vec<Slot<'a, S>>,
}

impl<S: Sample> Drop for Slots<'_, S> {
    fn drop(&mut self) {
        for s in &self.slots {
            let _ = s.stream.synchronize();
        }
    }
}

/// A buffer of at least `len` elements in `slot` (grown by reallocation).
fn ensure<T, F: FnOnce(usize) -> Result<T>>(
    buf: &mut Option<T>,
    have: impl Fn(&T) -> usize,
    len: usize,
    alloc: F,
) -> Result<()> {
    if buf.as_ref().is_none_or(|b| have(b) < len) {
        *buf = None;
        *buf = Some(alloc(len)?);
    }
    Ok(())
}

impl<'a, S: Sample> Slots<'a, S> {
    /// Waits for `slot`'s chunk in flight, moves its staged output to the
    /// caller and records its spans. Errors carry the chunk.
    fn complete(
        &mut self,
        slot: usize,
        ctx: &Shared<'a, S>,
        worker: usize,
        zero: Option<&Event>,
        report: &mut WorkerReport,
    ) -> std::result::Result<(), (usize, Error)> {
        let s = &mut self.slots[slot];
        let Some(p) = s.pending.take() else { return Ok(()) };
        let chunk = p.chunk;
        let fail = |e: Error| (chunk, e);
        s.stream.synchronize().map_err(fail)?;
        if p.staged_out {
            let h = s.h_out.as_ref().expect("a staged chunk has its staging buffer");
            par_copy(p.out, &h[..p.out.len()]);
        }
        if let (Some(ev), Some(z)) = (&p.events, zero) {
            let t: Vec<f64> = ev.iter().map(|e| e.ms_since(z).map(f64::from)).collect::<Result<_>>().map_err(fail)?;
            for (i, stage) in Stage::ALL.into_iter().enumerate() {
                report.spans.push(Span { worker, chunk, slot, stage, start_ms: t[i], end_ms: t[i + 1] });
            }
        }
        ctx.progress.add(std::mem::size_of_val(p.out));
        Ok(())
    }

    /// Queues chunk `c` on `slot`: copy in, filter, copy out.
    #[allow(clippy::too_many_arguments)]
    fn queue(
        &mut self,
        slot: usize,
        ctx: &Shared<'a, S>,
        c: ChunkDesc,
        out: &'a mut [S],
        staged_in: bool,
        staged_out: bool,
        timeline: bool,
        inject: Option<(usize, Inject)>,
    ) -> Result<()> {
        let geo = ctx.geo;
        let s = &mut self.slots[slot];
        let gpu = s.stream.gpu().clone();
        let piece = geo.piece(&c);
        let piece_len = piece.len() * geo.unit;
        // Every slot's buffers hold the largest piece.
        let cap = (geo.chunk_units.min(geo.n) + geo.lo + geo.hi) * geo.unit;
        let cap = cap.max(piece_len);
        ensure(&mut s.d_in, |b| b.len(), cap, |l| gpu.alloc_zeroed::<S>(l))?;
        ensure(&mut s.d_out, |b| b.len(), cap, |l| gpu.alloc_zeroed::<S>(l))?;
        if let Some((at, what)) = inject
            && at == c.index
        {
            match what {
                Inject::Alloc => {
                    gpu.alloc_zeroed::<u8>(usize::MAX / 4)?;
                }
                Inject::Fault => {
                    let n: usize = 1 << 16;
                    let cfg = crate::launch::LaunchConfig::new(4, 256);
                    let bad = crate::launch::DevicePtr(0x10);
                    // SAFETY: deliberately not: address 0x10 is not device
                    // memory. The fault is the point (tests of the stop).
                    unsafe { gpu.launch("copy_scalar", &cfg, &[&bad, &bad, &n])? };
                }
            }
        }
        let event = || -> Result<Option<Event>> { if timeline { gpu.record_event().map(Some) } else { Ok(None) } };
        let e0 = event()?;
        let d_in = s.d_in.as_mut().expect("allocated above");
        let inner = geo.inner(&piece);
        let inner_off = (inner.start as isize - piece.start) as usize * geo.unit;
        let ghosts = piece.len() - inner.len();
        if staged_in {
            ensure(&mut s.h_in, |b| b.len(), cap, |l| gpu.alloc_pinned::<S>(l))?;
            let h = s.h_in.as_mut().expect("allocated above");
            geo.gather(ctx.input, &c, &mut h[..piece_len]);
            // SAFETY: the staging buffer and the device buffer belong to
            // this slot, which queues nothing else on them until its stream
            // has been synchronized (`complete`, or the Slots drop).
            unsafe { s.stream.htod_async(&h[..piece_len], &mut d_in.view_mut(0..piece_len)?)? };
        } else {
            let from = geo.at(c.line, inner.start);
            let len = inner.len() * geo.unit;
            // SAFETY: the input is borrowed for the whole run, which waits
            // for every stream before returning; the device range is this
            // slot's.
            unsafe {
                s.stream.htod_async(&ctx.input[from..from + len], &mut d_in.view_mut(inner_off..inner_off + len)?)?
            };
            if ghosts > 0 {
                ensure(&mut s.h_in, |b| b.len(), (geo.lo + geo.hi) * geo.unit, |l| gpu.alloc_pinned::<S>(l))?;
                let h = s.h_in.as_mut().expect("allocated above");
                let before = (inner.start as isize - piece.start) as usize;
                for (k, (_, p)) in geo.ghosts(&piece).enumerate() {
                    h[k * geo.unit..(k + 1) * geo.unit].copy_from_slice(geo.ghost_unit(ctx.input, c.line, p));
                }
                let after = ghosts - before;
                let u = geo.unit;
                // SAFETY: as above; the ghost staging is this slot's.
                unsafe {
                    if before > 0 {
                        s.stream.htod_async(&h[..before * u], &mut d_in.view_mut(0..before * u)?)?;
                    }
                    if after > 0 {
                        let at = inner_off + inner.len() * u;
                        s.stream.htod_async(&h[before * u..ghosts * u], &mut d_in.view_mut(at..at + after * u)?)?;
                    }
                }
            }
        }
        let e1 = event()?;
        let d_out = s.d_out.as_mut().expect("allocated above");
        let pu = piece.len();
        {
            let (i, mut o) = (d_in.view(0..piece_len)?, d_out.view_mut(0..piece_len)?);
            match (&s.filter, geo.kind) {
                (DevFilter::One(f), Kind::Rows) => {
                    f.run_from(c.units.start, &i, &mut o, Shape::new(pu, geo.cols))?;
                }
                (DevFilter::One(f), Kind::Segments) => {
                    f.run_from(c.line, &i, &mut o, Shape::signal(pu))?;
                }
                (DevFilter::One(f), Kind::Bands) => {
                    f.run(&i, &mut o, Shape::new(pu, geo.cols))?;
                }
                (DevFilter::Two(f), _) => {
                    f.run(&i, &mut o, Image::new(geo.cols, pu, geo.channels)?)?;
                }
            }
        }
        let e2 = event()?;
        let kept = geo.kept(&c);
        let src = d_out.view(kept.clone())?;
        if staged_out {
            ensure(&mut s.h_out, |b| b.len(), geo.chunk_units.min(geo.n) * geo.unit, |l| gpu.alloc_pinned::<S>(l))?;
            let h = s.h_out.as_mut().expect("allocated above");
            // SAFETY: the staging buffer is this slot's and is read only
            // after the stream is synchronized (`complete`).
            unsafe { s.stream.dtoh_async(&src, &mut h[..kept.len()])? };
        } else {
            // SAFETY: `out` is this chunk's part of the caller's output,
            // held by the pending entry until the stream is synchronized
            // (`complete`, or the Slots drop before the run returns).
            unsafe { s.stream.dtoh_async(&src, out)? };
        }
        let e3 = event()?;
        let events = match (e0, e1, e2, e3) {
            (Some(a), Some(b), Some(c), Some(d)) => Some([a, b, c, d]),
            _ => None,
        };
        s.pending = Some(Pending { chunk: c.index, out, staged_out, events });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::reference::ghosts;

    #[test]
    fn ghost_index_follows_the_reference_extension() {
        for mode in [Boundary::Zero, Boundary::Nearest, Boundary::Wrap, Boundary::Reflect, Boundary::Mirror] {
            for n in 1..9usize {
                let line: Vec<Option<usize>> = (0..n).map(Some).collect();
                let count = 3 * n + 5;
                let (left, right) = ghosts(&line, count, count, mode);
                for k in 0..count {
                    let want_left = left[k];
                    let want_right = right[k];
                    let got_left = ghost_index(mode, -(k as isize) - 1, n);
                    let got_right = ghost_index(mode, (n + k) as isize, n);
                    assert_eq!(got_left, want_left, "{mode:?} n={n} left {k}");
                    assert_eq!(got_right, want_right, "{mode:?} n={n} right {k}");
                }
            }
        }
    }
}
