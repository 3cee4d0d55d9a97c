//! Streams, events, and how buffers stay ordered across streams.
//!
//! A [`Stream`] is a queue of GPU work: what one stream runs, it runs in
//! order; work on different streams may overlap. Every [`Gpu`] handle is
//! bound to one stream (its clones share it); [`Gpu::new_stream`] makes
//! another and [`Gpu::on`] binds a handle to it, so every operation of the
//! library runs on the stream its caller chooses:
//!
//! ```no_run
//! use coalesce_host::conv::{Boundary, Conv1d, Conv1dVariant, ConvOp};
//! use coalesce_host::Gpu;
//! # fn main() -> coalesce_host::Result<()> {
//! let gpu = Gpu::new()?;
//! let side = gpu.on(&gpu.new_stream()?)?; // same device, its own queue
//! let conv = Conv1d::new(&side, &[0.25f32, 0.5, 0.25], ConvOp::Correlate, Boundary::Reflect)?;
//! let input = side.upload(&vec![1.0f32; 1 << 20])?;
//! let mut output = side.alloc_zeroed::<f32>(1 << 20)?;
//! conv.run(Conv1dVariant::Auto, &input.as_view(), &mut output.as_view_mut())?; // queued on `side`
//! let done = side.record_event()?;
//! gpu.wait_event(&done)?; // gpu's stream waits for it, the host does not
//! # Ok(())
//! # }
//! ```
//!
//! **Buffers across streams.** Each buffer remembers which streams used
//! which of its bytes since they were last written (`Tracker`). When an
//! operation on stream `S` reads bytes last written on another stream, `S`
//! first waits (on the GPU, through an event) for that stream; when it
//! writes them, it waits for every stream that used them. So a buffer
//! handed from one stream, or thread, to another is never read before it
//! is written, nor overwritten while read, and no wrong result can come
//! from forgetting an event; views of disjoint parts of one buffer on
//! different streams still run concurrently. Work that stays on one stream
//! pays one uncontended lock per buffer and operation, nothing more.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cust::sys::{CUevent, CUstream};

use crate::context::Ctx;
use crate::driver;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

/// A stream owned by this crate, destroyed when the last handle goes.
pub(crate) struct StreamInner {
    raw: CUstream,
    ctx: Arc<Ctx>,
    id: u64,
}

// SAFETY: a stream handle may be used from any thread of its context; the
// driver serializes what needs it.
unsafe impl Send for StreamInner {}
// SAFETY: as above.
unsafe impl Sync for StreamInner {}

static NEXT_STREAM: AtomicU64 = AtomicU64::new(1);

impl StreamInner {
    /// A new stream in `ctx` (current on this thread). `non_blocking`: it
    /// does not synchronize with the legacy default stream.
    pub(crate) fn create(ctx: &Arc<Ctx>, non_blocking: bool) -> Result<Arc<StreamInner>> {
        ctx.bind()?;
        let raw = driver::stream_create(if non_blocking { driver::STREAM_NON_BLOCKING } else { 0 })?;
        Ok(Arc::new(StreamInner { raw, ctx: ctx.clone(), id: NEXT_STREAM.fetch_add(1, Ordering::Relaxed) }))
    }

    pub(crate) fn raw(&self) -> CUstream {
        self.raw
    }

    /// Waits for everything queued so far.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.ctx.bind()?;
        Ok(driver::stream_synchronize(self.raw)?)
    }
}

impl Drop for StreamInner {
    fn drop(&mut self) {
        if self.ctx.enter() {
            // SAFETY: created by stream_create in this context, destroyed
            // once; the driver lets its queued work finish.
            let _ = unsafe { driver::stream_destroy(self.raw) };
        }
    }
}

/// Makes the work queued on `later` from now on wait for everything queued
/// on `earlier` so far (an event recorded there, waited for here).
fn order_after(later: &StreamInner, earlier: &StreamInner) -> Result<()> {
    later.ctx.bind()?;
    let ev = driver::event_create(driver::EVENT_DISABLE_TIMING)?;
    let result = driver::event_record(ev, earlier.raw).and_then(|()| driver::stream_wait_event(later.raw, ev));
    // SAFETY: created above, destroyed once; the driver keeps it until the
    // wait is satisfied.
    let _ = unsafe { driver::event_destroy(ev) };
    Ok(result?)
}

/// A CUDA stream of a [`Gpu`]'s context: a queue of GPU work, run in order
/// and concurrently with other streams' work. Made by [`Gpu::new_stream`]
/// (non-blocking: it does not wait for the legacy default stream); cheap to
/// clone (the clones are the same stream). Keeps its `Gpu` alive.
#[derive(Clone)]
pub struct Stream {
    gpu: Gpu,
}

impl Stream {
    pub(crate) fn of(gpu: Gpu) -> Stream {
        Stream { gpu }
    }

    /// The [`Gpu`] bound to this stream: everything done through it is
    /// queued here.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Waits until everything queued on the stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.gpu.synchronize()
    }

    /// Records an event at the stream's current end: it completes when the
    /// stream reaches it (and carries a time, see [`Event::ms_since`]).
    pub fn record(&self) -> Result<Event> {
        self.gpu.record_event()
    }

    /// Makes the work queued on this stream from now on wait until `event`
    /// has completed (the host does not wait).
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.gpu.wait_event(event)
    }

    /// Makes the work queued on this stream from now on wait until `other`
    /// has finished everything queued on it so far (the host does not
    /// wait).
    pub fn wait_for(&self, other: &Stream) -> Result<()> {
        if other.gpu.ctx().raw() != self.gpu.ctx().raw() {
            return Err(Error::ForeignBuffer { op: "Stream::wait_for" });
        }
        order_after(&self.gpu.stream, &other.gpu.stream)
    }

    /// True when both handles are the same stream.
    pub fn same(&self, other: &Stream) -> bool {
        Arc::ptr_eq(&self.gpu.stream, &other.gpu.stream)
    }
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stream({})", self.gpu.stream.id)
    }
}

/// A recorded CUDA event: a point in a stream's queue, complete once the
/// stream has run everything queued before it. Other streams can wait for
/// it ([`Stream::wait`], [`Gpu::wait_event`]), the host can
/// ([`Event::synchronize`]), and two events give the GPU time between them
/// ([`Event::ms_since`]).
pub struct Event {
    raw: CUevent,
    ctx: Arc<Ctx>,
}

// SAFETY: an event handle may be used from any thread of its context.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Event {
    /// An event recorded at the current end of `stream`.
    pub(crate) fn record_on(stream: &StreamInner) -> Result<Event> {
        stream.ctx.bind()?;
        let raw = driver::event_create(0)?;
        let ev = Event { raw, ctx: stream.ctx.clone() };
        driver::event_record(raw, stream.raw)?;
        Ok(ev)
    }

    pub(crate) fn raw(&self) -> CUevent {
        self.raw
    }

    pub(crate) fn ctx(&self) -> &Arc<Ctx> {
        &self.ctx
    }

    /// Waits until the event has completed.
    pub fn synchronize(&self) -> Result<()> {
        self.ctx.bind()?;
        Ok(driver::event_synchronize(self.raw)?)
    }

    /// True once the event has completed (never waits).
    pub fn is_complete(&self) -> Result<bool> {
        self.ctx.bind()?;
        Ok(driver::event_query(self.raw)?)
    }

    /// Milliseconds of GPU time from `start` to this event (negative if
    /// this one came first). Waits for both to complete.
    pub fn ms_since(&self, start: &Event) -> Result<f32> {
        if start.ctx.raw() != self.ctx.raw() {
            return Err(Error::ForeignBuffer { op: "Event::ms_since" });
        }
        start.synchronize()?;
        self.synchronize()?;
        Ok(driver::event_elapsed_ms(start.raw, self.raw)?)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if self.ctx.enter() {
            // SAFETY: created in this context, destroyed once.
            let _ = unsafe { driver::event_destroy(self.raw) };
        }
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Event")
    }
}

/// Which streams used which bytes of a buffer (see the module
/// documentation). Each entry is a byte range (device addresses), a
/// stream, and whether that stream wrote it; an entry is dropped once a
/// write covers it (the write was ordered after it). Views of disjoint
/// ranges on different streams are not ordered against each other, so a
/// buffer split into chunks over several streams keeps its overlap.
#[derive(Default)]
pub(crate) struct Tracker {
    uses: Mutex<Vec<Use>>,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tracker")
    }
}

struct Use {
    range: std::ops::Range<u64>,
    stream: Arc<StreamInner>,
    write: bool,
}

/// Entries kept per buffer before they are merged into one whole-buffer
/// entry per stream (coarser, so it orders more, never less).
const MAX_USES: usize = 64;

/// True when the two byte ranges share a byte.
fn overlaps(a: &std::ops::Range<u64>, b: &std::ops::Range<u64>) -> bool {
    !a.is_empty() && !b.is_empty() && a.start < b.end && b.start < a.end
}

impl Tracker {
    /// Orders a read of bytes `range` on `gpu`'s stream after the writes
    /// of overlapping bytes on other streams.
    pub(crate) fn read(&self, gpu: &Gpu, range: std::ops::Range<u64>) -> Result<()> {
        self.order(gpu, range, false)
    }

    /// Orders a write of bytes `range` on `gpu`'s stream after every use
    /// of overlapping bytes on other streams.
    pub(crate) fn write(&self, gpu: &Gpu, range: std::ops::Range<u64>) -> Result<()> {
        self.order(gpu, range, true)
    }

    fn order(&self, gpu: &Gpu, range: std::ops::Range<u64>, write: bool) -> Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        let s = &gpu.stream;
        let mut uses = self.uses.lock().unwrap_or_else(|p| p.into_inner());
        // Each other stream waited for at most once.
        let mut waited: Vec<&Arc<StreamInner>> = Vec::new();
        for u in uses.iter() {
            let conflict = (write || u.write) && overlaps(&u.range, &range);
            if conflict && !Arc::ptr_eq(&u.stream, s) && !waited.iter().any(|w| Arc::ptr_eq(w, &u.stream)) {
                order_after(s, &u.stream)?;
                waited.push(&u.stream);
            }
        }
        if write {
            uses.retain(|u| !(range.start <= u.range.start && u.range.end <= range.end));
        } else if uses
            .iter()
            .any(|u| Arc::ptr_eq(&u.stream, s) && u.range.start <= range.start && range.end <= u.range.end)
        {
            // This stream already used these bytes, after their writer.
            return Ok(());
        }
        uses.push(Use { range, stream: s.clone(), write });
        if uses.len() > MAX_USES {
            let (lo, hi) = uses.iter().fold((u64::MAX, 0), |(l, h), u| (l.min(u.range.start), h.max(u.range.end)));
            let mut merged: Vec<Use> = Vec::new();
            for u in uses.drain(..) {
                match merged.iter_mut().find(|m| Arc::ptr_eq(&m.stream, &u.stream)) {
                    Some(m) => m.write |= u.write,
                    None => merged.push(Use { range: lo..hi, ..u }),
                }
            }
            *uses = merged;
        }
        Ok(())
    }

    /// Waits for every stream that used the buffer (before it is freed;
    /// errors are ignored: this runs in drops).
    pub(crate) fn quiesce(&self) {
        let uses = self.uses.lock().unwrap_or_else(|p| p.into_inner());
        for u in uses.iter() {
            let _ = driver::stream_synchronize(u.stream.raw);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::overlaps;

    #[test]
    fn ranges_overlap_only_when_they_share_a_byte() {
        assert!(overlaps(&(0..8), &(7..9)));
        assert!(!overlaps(&(0..8), &(8..16)));
        assert!(overlaps(&(4..5), &(0..100)));
        assert!(!overlaps(&(3..3), &(0..10)));
    }
}
