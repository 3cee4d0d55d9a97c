//! A kernel fault in the middle of a streaming filter, in a test binary of
//! its own (the fault leaves the device's context unusable for the
//! process; excluded from compute-sanitizer runs because it is
//! deliberate).
//!
//! The stream stops with `Error::Chunk` naming the chunk where the fault
//! was seen (a fault is asynchronous: it surfaces at the next wait, for
//! the faulting chunk or one queued before it), every worker joins (the
//! call returns, with one worker and with two), and a later stream
//! returns an error at once instead of hanging.

mod common;

use coalesce::Error;
use coalesce::conv::ConvOp;
use coalesce::streaming::{Backend, DEFAULT_SLOTS, Inject, Layout, Spec, Streaming};

#[test]
fn a_kernel_fault_stops_the_stream_naming_the_chunk() {
    let _gpu = gpu_or_skip!();
    let n = 200_000;
    let input: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
    let mut out = vec![f32::NAN; n];
    let spec = Spec::line(vec![0.25, 0.5, 0.25], 3, ConvOp::Correlate);
    let s = Streaming::new(spec.clone())
        .with_backend(Backend::Gpus(vec![0, 0]))
        .with_chunk_units(10_000)
        .with_injected(7, Inject::Fault);
    let started = std::time::Instant::now();
    match s.run(Layout::signal(n), &input, &mut out) {
        Err(Error::Chunk { chunk, chunks: 20, device, source }) => {
            assert!((7 - 2 * DEFAULT_SLOTS..=7).contains(&chunk), "chunk {chunk}: {source}");
            assert_eq!(device, "GPU 0");
            let sticky = match &*source {
                Error::Faulted { fault } => fault.error.is_sticky(),
                Error::Driver(d) => d.is_sticky(),
                Error::Kernel { source, .. } => source.is_sticky(),
                _ => false,
            };
            assert!(sticky, "expected a sticky fault, got {source:?}");
        }
        other => panic!("expected Error::Chunk near chunk 7, got {other:?}"),
    }
    // Afterwards: an error at once, no hang.
    let again = Streaming::new(spec).with_backend(Backend::Gpus(vec![0])).with_chunk_units(10_000);
    assert!(again.run(Layout::signal(n), &input, &mut out).is_err());
    assert!(started.elapsed().as_secs() < 60, "took {:?}", started.elapsed());
}
