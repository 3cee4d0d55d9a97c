//! Benchmarks behind `coalesce bench`: each suite measures a family of kernels against the hardware's limits and the
//! driver's own primitives, verifies every variant's output, and writes a table (stdout), a JSON record and its SVG
//! plots.
//!
//! * [`run`]: the suite pattern. A suite is a clap struct (its own options plus the shared [`run::Common`] flattened
//!   in) implementing [`run::Suite`]: its `run` measures its cases through a [`run::Run`], which owns the settings,
//!   sampling, the DtoD floor, L2 residency, progress, verification errors, tables, the one JSON schema
//!   ([`run::Record`]), plots and goal lines.
//! * [`harness`]: how a measurement is taken (warm-up, batching, CUDA-event
//!   samples, statistics) — the one place that decides it.
//! * [`report`]: text tables, JSON files, SVG plots and timelines, byte sizes.
//! * one module per suite, listed in [`SUITES`]; [`twin`] builds the CUDA C++ twins the conv suite compares against.
//!
//! Units everywhere: GB = 1e9 bytes; the bytes an operation moves are the bytes it reads plus the bytes it writes.

use std::path::PathBuf;

pub mod access;
pub mod alignment;
pub mod concurrency;
pub mod constant;
pub mod conv;
pub mod copy;
pub mod harness;
pub mod local;
pub mod matrix;
pub mod reduce;
pub mod report;
pub mod run;
pub mod stream;
pub mod texture;
pub mod transfer;
pub mod transpose;
pub mod twin;

/// A benchmark suite's name and one-line description (for `bench list`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuiteInfo {
    /// The name given on the command line (`coalesce bench <name>`).
    pub name: &'static str,
    /// What the suite measures.
    pub about: &'static str,
}

/// Every suite, in the order `bench list` shows them.
pub const SUITES: &[SuiteInfo] = &[
    <copy::Copy as run::Suite>::INFO,
    <conv::Conv as run::Suite>::INFO,
    <matrix::Matrix as run::Suite>::INFO,
    <reduce::Reduce as run::Suite>::INFO,
    <transfer::Transfer as run::Suite>::INFO,
    <access::Access as run::Suite>::INFO,
    <alignment::Alignment as run::Suite>::INFO,
    <local::Local as run::Suite>::INFO,
    <transpose::Transpose as run::Suite>::INFO,
    <constant::Constant as run::Suite>::INFO,
    <texture::Texture as run::Suite>::INFO,
    <concurrency::Concurrency as run::Suite>::INFO,
    <stream::Stream as run::Suite>::INFO,
];

/// Why a benchmark run stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A GPU operation failed (including "no device"). Boxed: the library's
    /// error is large and results carry it on every path.
    #[error("{0}")]
    Gpu(#[source] Box<crate::Error>),
    /// A variant produced wrong output: the suite's numbers would be meaningless, so it stops.
    #[error("{suite}: verification failed: {message}")]
    Verification {
        /// The suite.
        suite: &'static str,
        /// What went wrong, with the variant, the size and the first bad element.
        message: String,
    },
    /// Writing a result file failed.
    #[error("cannot write {}: {source}", path.display())]
    Output {
        /// The file (or directory) being written.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The suite's options are unusable (empty size range, zero samples…).
    #[error("invalid options: {0}")]
    Options(String),
}

/// Result alias for benchmark runs.
pub type BenchResult<T> = Result<T, BenchError>;

impl BenchError {
    /// True when the run failed because there is no CUDA device.
    pub fn is_no_device(&self) -> bool {
        self.no_device_reason().is_some()
    }

    /// The driver's reason when the run failed because there is no CUDA device.
    pub fn no_device_reason(&self) -> Option<&str> {
        match self {
            BenchError::Gpu(e) => match e.as_ref() {
                crate::Error::NoDevice { reason } => Some(reason),
                _ => None,
            },
            _ => None,
        }
    }
}

impl From<crate::Error> for BenchError {
    fn from(e: crate::Error) -> Self {
        BenchError::Gpu(Box::new(e))
    }
}
