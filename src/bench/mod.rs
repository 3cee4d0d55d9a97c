//! Benchmarks behind `coalesce bench`: each suite measures a family of
//! kernels against the hardware's limits and the driver's own primitives,
//! verifies every variant's output, and writes a table (stdout), a JSON
//! record and an SVG plot.
//!
//! * [`harness`]: how a measurement is taken (warm-up, batching, CUDA-event
//!   samples, statistics) — the one place that decides it.
//! * [`report`]: how results are shown (text tables, JSON, SVG plots, byte
//!   sizes).
//! * one module per suite ([`copy`], [`conv`], [`matrix`], [`reduce`],
//!   [`transfer`], [`access`], [`alignment`], [`local`], [`transpose`],
//!   [`constant`], [`texture`], [`concurrency`], [`stream`]); [`twin`] builds the CUDA C++ twins some
//!   suites compare against, listed in [`SUITES`].
//!
//! Units everywhere: GB = 1e9 bytes; the bytes an operation moves are the
//! bytes it reads plus the bytes it writes.

use std::fmt;
use std::path::PathBuf;

pub mod access;
pub mod alignment;
pub mod batch;
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
    conv::SUITE,
    matrix::SUITE,
    <reduce::Reduce as run::Suite>::INFO,
    <transfer::Transfer as run::Suite>::INFO,
    access::SUITE,
    alignment::SUITE,
    local::SUITE,
    transpose::SUITE,
    <constant::Constant as run::Suite>::INFO,
    texture::SUITE,
    concurrency::SUITE,
    stream::SUITE,
];

/// Why a benchmark run stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum BenchError {
    /// A GPU operation failed (including "no device"). Boxed: the library's
    /// error is large and results carry it on every path.
    Gpu(Box<crate::Error>),
    /// A variant produced wrong output: the suite's numbers would be
    /// meaningless, so it stops.
    Verification {
        /// The suite.
        suite: &'static str,
        /// What went wrong, with the variant, the size and the first bad
        /// element.
        message: String,
    },
    /// Writing a result file failed.
    Output {
        /// The file (or directory) being written.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The suite's options are unusable (empty size range, zero samples…).
    Options(String),
}

/// Result alias for benchmark runs.
pub type BenchResult<T> = Result<T, BenchError>;

impl BenchError {
    /// True when the run failed because there is no CUDA device.
    pub fn is_no_device(&self) -> bool {
        matches!(self, BenchError::Gpu(e) if e.is_no_device())
    }

    /// The driver's reason when the run failed because there is no CUDA
    /// device.
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

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Gpu(e) => write!(f, "{e}"),
            BenchError::Verification { suite, message } => write!(f, "{suite}: verification failed: {message}"),
            BenchError::Output { path, source } => write!(f, "cannot write {}: {source}", path.display()),
            BenchError::Options(m) => write!(f, "invalid options: {m}"),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Gpu(e) => Some(e.as_ref()),
            BenchError::Output { source, .. } => Some(source),
            BenchError::Verification { .. } | BenchError::Options(_) => None,
        }
    }
}

impl From<crate::Error> for BenchError {
    fn from(e: crate::Error) -> Self {
        BenchError::Gpu(Box::new(e))
    }
}
