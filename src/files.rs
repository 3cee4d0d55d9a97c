//! Filtering files: a `.npy` array or a raw little-endian file in, a file
//! of the same format, element type and shape out, through the streaming
//! filters ([`crate::streaming`]). The input is memory-mapped and the
//! output is written into a memory-mapped temporary file next to it that
//! is renamed into place only once it is complete, so files larger than
//! the GPU's memory (or the host's) go through in chunks and a failure
//! never leaves a partial output behind.
//!
//! This is the `coalesce filter` command; programs can use it too:
//!
//! ```no_run
//! use clap::Parser;
//! use coalesce::files::{self, FilterArgs};
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     filter: FilterArgs,
//! }
//!
//! let cli = Cli::parse_from(["prog", "in.npy", "out.npy", "--gaussian", "2.5", "--mode", "nearest"]);
//! let summary = files::run(&cli.filter).expect("filtered");
//! println!("{summary}");
//! ```
//!
//! # What filter runs
//!
//! | array                    | mask                                      | filter                                   |
//! |--------------------------|-------------------------------------------|------------------------------------------|
//! | `(N,)`                   | 1D mask, or one σ                         | 1D                                       |
//! | `(R, C)`                 | 1D mask                                   | 1D along `--axis` (scipy's `correlate1d`) |
//! | `(H, W)`                 | 2D mask, σ or `SY,SX` (or `--image`)      | 2D on one channel                        |
//! | `(H, W, C)`, C = 1, 3, 4 | 2D mask, σ or `SY,SX`                     | 2D on each interleaved channel           |
//!
//! # Formats
//!
//! * `.npy` (by extension, any case): little-endian `<f4`, `<f8`, `<f2`,
//!   `|u1`, `<u2`, C order. The output has the same header fields.
//! * Anything else: raw little-endian elements of `--dtype` (which may be
//!   `bf16`, which `.npy` has no type for) in the `--shape` given.
//!
//! The input is read in place through its map: it must not be modified or
//! truncated while the command runs.

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{ArgGroup, Args, ValueEnum};
use memmap2::{Mmap, MmapMut, MmapOptions};
use npyz::{DType, Endianness, NpyFile, Order, TypeChar, TypeStr, WriteOptions, WriterBuilder};

use crate::Gpu;
use crate::conv::batch::Sample;
use crate::conv::{Boundary, ConvOp, parse_boundary};
use crate::streaming::{Backend, Layout, Report, Spec, Streaming};
use crate::text::parse_size;

/// The element types a file may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum)]
pub enum Dtype {
    /// 32-bit float (`<f4`).
    F32,
    /// 64-bit float (`<f8`).
    F64,
    /// IEEE half (`<f2`).
    F16,
    /// bfloat16 (raw files only: `.npy` has no such type).
    Bf16,
    /// Unsigned byte (`|u1`).
    U8,
    /// Unsigned 16-bit integer (`<u2`).
    U16,
}

impl Dtype {
    /// Every type.
    pub const ALL: [Dtype; 6] = [Dtype::F32, Dtype::F64, Dtype::F16, Dtype::Bf16, Dtype::U8, Dtype::U16];

    /// `f32`, `f64`, `f16`, `bf16`, `u8` or `u16`.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
            Dtype::U8 => "u8",
            Dtype::U16 => "u16",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::F64 => 8,
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::Bf16 | Dtype::U16 => 2,
            Dtype::U8 => 1,
        }
    }

    /// The `.npy` type string (`None` for `bf16`).
    pub fn npy_descr(self) -> Option<&'static str> {
        match self {
            Dtype::F32 => Some("<f4"),
            Dtype::F64 => Some("<f8"),
            Dtype::F16 => Some("<f2"),
            Dtype::U8 => Some("|u1"),
            Dtype::U16 => Some("<u2"),
            Dtype::Bf16 => None,
        }
    }

    /// The type an `.npy` type string names, if it is one of these.
    fn from_npy(t: &TypeStr) -> Option<Dtype> {
        let little = match t.endianness() {
            Endianness::Little => true,
            Endianness::Big => false,
            Endianness::Irrelevant => t.size_field() == 1,
        };
        match (t.type_char(), t.size_field()) {
            (TypeChar::Uint, 1) => Some(Dtype::U8),
            (_, 1) => None,
            _ if !little => None,
            (TypeChar::Float, 4) => Some(Dtype::F32),
            (TypeChar::Float, 8) => Some(Dtype::F64),
            (TypeChar::Float, 2) => Some(Dtype::F16),
            (TypeChar::Uint, 2) => Some(Dtype::U16),
            _ => None,
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `coalesce filter`'s arguments.
#[derive(Clone, Debug, Args)]
#[command(group(ArgGroup::new("filter").required(true).args(["mask", "gaussian"])))]
pub struct FilterArgs {
    /// The input: a .npy file (<f4, <f8, <f2, |u1, <u2; C order), or
    /// anything else as raw little-endian elements of --dtype in --shape.
    #[arg(value_name = "INPUT")]
    pub input: PathBuf,

    /// The output, in the input's format (.npy with its dtype and shape,
    /// or raw). Written to a temporary file beside it and renamed into
    /// place when complete.
    #[arg(value_name = "OUTPUT")]
    pub output: PathBuf,

    /// Correlate with the mask, as scipy.ndimage.correlate(1d) (the
    /// default).
    #[arg(long, conflicts_with = "convolve")]
    pub correlate: bool,

    /// Convolve with the mask, as scipy.ndimage.convolve(1d) (--gaussian
    /// always correlates).
    #[arg(long)]
    pub convolve: bool,

    /// The mask: a list such as `1,2,1` (rows separated by `;` for a 2D
    /// mask: `1,2,1;2,4,2;1,2,1`), or a file: a 1D or 2D .npy array, or
    /// text with one mask row per line, numbers separated by spaces or
    /// commas (several lines: a 2D mask).
    #[arg(long, value_name = "FILE|LIST", allow_hyphen_values = true)]
    pub mask: Option<String>,

    /// A Gaussian of standard deviation SIGMA (scipy's gaussian_filter1d
    /// on a 1D array, gaussian_filter on an image), or `SY,SX` per axis
    /// for a 2D filter.
    #[arg(long, value_name = "SIGMA|SY,SX")]
    pub gaussian: Option<String>,

    /// The Gaussian's radius in standard deviations (scipy's truncate)
    /// [default: 4].
    #[arg(long, requires = "gaussian")]
    pub truncate: Option<f64>,

    /// Boundary mode (scipy.ndimage names): reflect, constant, nearest,
    /// mirror, wrap.
    #[arg(long, value_parser = parse_boundary, default_value = "reflect")]
    pub mode: Boundary,

    /// The value outside the data in constant mode.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub cval: f64,

    /// scipy's origin: an integer, or `OY,OX` for a 2D filter [default: 0].
    #[arg(long, value_name = "O|OY,OX", allow_hyphen_values = true)]
    pub origin: Option<String>,

    /// The axis a 1D filter of a 2D array runs along (0 or -2: each
    /// column; 1 or -1: each row) [default: -1].
    #[arg(long, allow_negative_numbers = true)]
    pub axis: Option<isize>,

    /// The element type: required for a raw input; for a .npy input it
    /// must match the file's.
    #[arg(long)]
    pub dtype: Option<Dtype>,

    /// The shape of a raw input: `N`, `R,C` or `H,W,C` (for a .npy input,
    /// if given, it must match the file's).
    #[arg(long, value_name = "N|R,C|H,W,C")]
    pub shape: Option<String>,

    /// Treat a 2D array (H,W) or a 3D array (H,W,C with C = 1, 3 or 4) as
    /// an image: a 2D filter. Implied by a 2D mask, by --gaussian on a 2D
    /// array and by every 3D array.
    #[arg(long)]
    pub image: bool,

    /// Where to run: `all` visible GPUs, `cpu` (the rayon reference path),
    /// or a list of device ordinals such as `0,1`. Without a CUDA device
    /// the CPU runs it.
    #[arg(long, value_name = "all|cpu|LIST", default_value = "all")]
    pub gpus: String,

    /// Device memory each GPU may use (e.g. 512MiB, 2GiB) [default: half
    /// the free memory].
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub device_budget: Option<u64>,

    /// Overwrite OUTPUT if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Why filtering a file failed.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// A file could not be opened, read or mapped.
    #[error("cannot read `{}`: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The output (or its temporary file) could not be written.
    #[error("cannot write `{}`: {source}", path.display())]
    Unwritable {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A `.npy` file's header is malformed or names what is not supported.
    #[error("`{}` is not a usable .npy file: {message}", path.display())]
    BadNpy {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// `--dtype` names another type than the file holds.
    #[error("`{}` holds {found} elements, but --dtype is {given}", path.display())]
    DtypeMismatch {
        /// The file.
        path: PathBuf,
        /// The file's type (its .npy type string).
        found: String,
        /// `--dtype`.
        given: Dtype,
    },
    /// A file's size or shape does not match what it should hold.
    #[error("`{}`: {message}", path.display())]
    ShapeMismatch {
        /// The file.
        path: PathBuf,
        /// What does not match.
        message: String,
    },
    /// The output exists and `--force` was not given.
    #[error("the output `{}` exists; pass --force to overwrite it", path.display())]
    OutputExists {
        /// The output.
        path: PathBuf,
    },
    /// An option's value is invalid, or options do not fit together or
    /// with the data.
    #[error("{option}: {message}")]
    BadOption {
        /// The option (`--mask`, …).
        option: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The filter itself failed.
    #[error(transparent)]
    Filter(#[from] crate::Error),
}

fn bad(option: &'static str, message: impl Into<String>) -> FilterError {
    FilterError::BadOption { option, message: message.into() }
}

/// What [`run`] did.
#[derive(Clone, Debug)]
pub struct FilterSummary {
    /// The output written.
    pub output: PathBuf,
    /// The element type.
    pub dtype: Dtype,
    /// The array's shape.
    pub shape: Vec<usize>,
    /// The filter, in words (`1D`, `1D along axis 0`, `2D`).
    pub filter: String,
    /// Whether the CPU ran it.
    pub cpu: bool,
    /// The streaming run.
    pub report: Report,
}

impl FilterSummary {
    /// Elements filtered.
    pub fn elements(&self) -> u64 {
        self.shape.iter().map(|&d| d as u64).product()
    }

    /// Input bytes filtered per second of the filter, in GB/s (10⁹).
    pub fn gb_per_s(&self) -> f64 {
        if self.report.seconds > 0.0 { self.report.bytes as f64 / self.report.seconds / 1e9 } else { 0.0 }
    }
}

impl fmt::Display for FilterSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shape: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        let devices = if self.report.devices.is_empty() { "none".to_string() } else { self.report.devices.join(", ") };
        write!(
            f,
            "filtered {} {} elements ({}, {} filter) in {} chunk{} on {}: {:.3} s, {:.2} GB/s -> {}",
            self.elements(),
            self.dtype,
            shape.join(" x "),
            self.filter,
            self.report.chunks,
            if self.report.chunks == 1 { "" } else { "s" },
            devices,
            self.report.seconds,
            self.gb_per_s(),
            self.output.display()
        )
    }
}

/// The `.npy` header (magic, version, length, dictionary, padding) of a
/// C-order array of `dtype` and `shape`, as npyz writes it; the data start
/// right after it, at a multiple of 64 bytes. `None` for `bf16`.
pub fn npy_header(dtype: Dtype, shape: &[u64]) -> Option<Vec<u8>> {
    let descr: TypeStr = dtype.npy_descr()?.parse().ok()?;
    let mut header = Vec::new();
    let writer = WriteOptions::<HeaderOnly>::new()
        .dtype(DType::Plain(descr))
        .shape(shape)
        .order(Order::C)
        .writer(&mut header)
        .begin_nd()
        .ok()?;
    // npyz writes the whole header when the writer begins. The elements
    // never go through npyz: the filter writes them straight into the
    // mapped file after this header, so the writer is dropped unfinished
    // (its check that every element was pushed does not apply here).
    drop(writer);
    Some(header)
}

/// The row type of [`npy_header`]'s npyz writer: accepts any dtype and
/// is never written.
struct HeaderOnly;

struct NoRows;

impl npyz::TypeWrite for NoRows {
    type Value = HeaderOnly;
    fn write_one<W: Write>(&self, _: W, _: &HeaderOnly) -> io::Result<()> {
        Err(io::Error::other("the npy header writer writes no elements"))
    }
}

impl npyz::Serialize for HeaderOnly {
    type TypeWriter = NoRows;
    fn writer(_: &DType) -> Result<NoRows, npyz::DTypeError> {
        Ok(NoRows)
    }
}

/// Whether `path` names a `.npy` file (by its extension, any case).
pub fn is_npy(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("npy"))
}

/// The input file, its format, type and shape, its data mapped.
struct Input {
    dtype: Dtype,
    shape: Vec<usize>,
    /// The `.npy` header to write out (`None`: raw).
    npy: Option<Vec<u8>>,
    /// The data bytes (`None` when there are none).
    data: Option<Mmap>,
}

impl Input {
    fn bytes(&self) -> &[u8] {
        self.data.as_deref().unwrap_or(&[])
    }
}

fn unreadable(path: &Path) -> impl FnOnce(io::Error) -> FilterError + '_ {
    move |source| FilterError::Unreadable { path: path.to_path_buf(), source }
}

/// `N`, `R,C` or `H,W,C`.
fn parse_shape(text: &str) -> Result<Vec<usize>, FilterError> {
    let dims: Result<Vec<usize>, _> = text.split(',').map(|d| d.trim().parse::<usize>()).collect();
    match dims {
        Ok(d) if (1..=3).contains(&d.len()) => Ok(d),
        _ => Err(bad("--shape", format!("`{text}` is not a shape: N, R,C or H,W,C (positive integers)"))),
    }
}

fn shape_text(shape: &[usize]) -> String {
    shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(",")
}

/// Elements and bytes of `shape` of `dtype`, or an error on overflow.
fn extent(path: &Path, shape: &[usize], dtype: Dtype) -> Result<(usize, usize), FilterError> {
    let elems = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let bytes = elems.and_then(|e| e.checked_mul(dtype.size()));
    match (elems, bytes) {
        (Some(e), Some(b)) => Ok((e, b)),
        _ => Err(FilterError::ShapeMismatch {
            path: path.to_path_buf(),
            message: format!("the shape ({}) of {dtype} is too large for this machine", shape_text(shape)),
        }),
    }
}

/// Maps `len` bytes of `file` from `offset` read-only (`None` when empty).
fn map_input(path: &Path, file: &File, offset: u64, len: usize) -> Result<Option<Mmap>, FilterError> {
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: the map is read-only and lives no longer than this command;
    // like any file map it assumes no other process truncates or rewrites
    // the input while it is being filtered (the documented contract of
    // `coalesce filter`, as of any tool reading a file in place).
    let map = unsafe { MmapOptions::new().offset(offset).len(len).map(file) }.map_err(unreadable(path))?;
    // Read ahead: the chunks read it front to back. Only a hint.
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(Some(map))
}

fn open_input(args: &FilterArgs) -> Result<Input, FilterError> {
    let path = args.input.as_path();
    let mut file = File::open(path).map_err(unreadable(path))?;
    let file_len = file.metadata().map_err(unreadable(path))?.len();
    let given_shape = args.shape.as_deref().map(parse_shape).transpose()?;
    if is_npy(path) {
        let bad_npy = |message: String| FilterError::BadNpy { path: path.to_path_buf(), message };
        if args.dtype == Some(Dtype::Bf16) {
            return Err(bad(
                "--dtype",
                format!("bf16 is for raw files only: .npy has no bfloat16 type (`{}` is a .npy file)", path.display()),
            ));
        }
        let header = npyz::NpyHeader::from_reader(&mut file).map_err(|e| bad_npy(e.to_string()))?;
        let offset = file.stream_position().map_err(unreadable(path))?;
        let (dtype, found) = match header.dtype() {
            DType::Plain(t) => match Dtype::from_npy(&t) {
                Some(d) => (d, t.to_string()),
                None if t.endianness() == Endianness::Big => {
                    return Err(bad_npy(format!(
                        "big-endian data ({t}) is not supported; convert it with arr.astype(arr.dtype.newbyteorder('<'))"
                    )));
                }
                None => {
                    return Err(bad_npy(format!("elements of type {t} are not supported (<f4, <f8, <f2, |u1 or <u2)")));
                }
            },
            d => return Err(bad_npy(format!("structured elements {} are not supported", d.descr()))),
        };
        if let Some(given) = args.dtype
            && given != dtype
        {
            return Err(FilterError::DtypeMismatch { path: path.to_path_buf(), found, given });
        }
        let shape: Vec<usize> = header
            .shape()
            .iter()
            .map(|&d| usize::try_from(d))
            .collect::<Result<_, _>>()
            .map_err(|_| bad_npy("a dimension does not fit in memory".into()))?;
        if shape.is_empty() || shape.len() > 3 {
            return Err(bad_npy(format!(
                "a {}-dimensional array: filters take 1D (N), 2D (R,C) or 3D (H,W,C) arrays",
                shape.len()
            )));
        }
        if header.order() == Order::Fortran && shape.len() > 1 {
            return Err(bad_npy(
                "the array is in Fortran (column-major) order; save it in C order (np.ascontiguousarray)".into(),
            ));
        }
        if let Some(given) = given_shape
            && given != shape
        {
            return Err(FilterError::ShapeMismatch {
                path: path.to_path_buf(),
                message: format!(
                    "--shape {} does not match the file's shape ({})",
                    shape_text(&given),
                    shape_text(&shape)
                ),
            });
        }
        let (_, bytes) = extent(path, &shape, dtype)?;
        let available = file_len.saturating_sub(offset);
        if available < bytes as u64 {
            return Err(bad_npy(format!(
                "the header promises {bytes} bytes of data ({} {dtype} elements) but the file holds {available}",
                shape.iter().product::<usize>()
            )));
        }
        let npy = npy_header(dtype, header.shape()).ok_or_else(|| bad_npy("no header for this type".into()))?;
        let data = map_input(path, &file, offset, bytes)?;
        Ok(Input { dtype, shape, npy: Some(npy), data })
    } else {
        let dtype = args.dtype.ok_or_else(|| {
            bad(
                "--dtype",
                format!(
                    "`{}` is a raw file (not .npy): give its element type with --dtype (f32, f64, f16, bf16, u8, u16)",
                    path.display()
                ),
            )
        })?;
        let shape = given_shape.ok_or_else(|| {
            bad(
                "--shape",
                format!(
                    "`{}` is a raw file (not .npy): give its shape with --shape (N, R,C or H,W,C); it holds {file_len} bytes",
                    path.display()
                ),
            )
        })?;
        let (elems, bytes) = extent(path, &shape, dtype)?;
        if file_len != bytes as u64 {
            return Err(FilterError::ShapeMismatch {
                path: path.to_path_buf(),
                message: format!(
                    "the file holds {file_len} bytes, but --shape {} of {dtype} ({elems} elements x {} bytes) needs {bytes} bytes",
                    shape_text(&shape),
                    dtype.size()
                ),
            });
        }
        let data = map_input(path, &file, 0, bytes)?;
        Ok(Input { dtype, shape, npy: None, data })
    }
}

/// A mask: `rows × cols` values, row-major; `two_d` when given as rows.
#[derive(Clone, Debug, PartialEq)]
struct MaskValues {
    values: Vec<f64>,
    rows: usize,
    cols: usize,
    two_d: bool,
}

fn parse_number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Rows of numbers, each row split by `split`; every row the same length.
fn mask_from_rows<'a>(
    rows: impl Iterator<Item = &'a str>,
    split: impl Fn(&'a str) -> Vec<&'a str>,
    what: &str,
) -> Result<MaskValues, String> {
    let mut values = Vec::new();
    let (mut n, mut cols) = (0usize, 0usize);
    for row in rows {
        let items = split(row);
        let parsed: Vec<f64> = items
            .iter()
            .map(|s| parse_number(s).ok_or_else(|| format!("{what}: `{}` is not a number", s.trim())))
            .collect::<Result<_, _>>()?;
        if parsed.is_empty() {
            return Err(format!("{what}: an empty mask row"));
        }
        if n > 0 && parsed.len() != cols {
            return Err(format!("{what}: mask row {} has {} values, the first has {cols}", n + 1, parsed.len()));
        }
        cols = parsed.len();
        n += 1;
        values.extend(parsed);
    }
    if n == 0 {
        return Err(format!("{what}: no mask values"));
    }
    Ok(MaskValues { values, rows: n, cols, two_d: n > 1 })
}

/// A 1D or 2D `.npy` mask of any float or integer type.
fn mask_from_npy(path: &Path) -> Result<MaskValues, FilterError> {
    let file = File::open(path).map_err(unreadable(path))?;
    let bad_npy = |message: String| FilterError::BadNpy { path: path.to_path_buf(), message };
    let npy = NpyFile::new(io::BufReader::new(file)).map_err(|e| bad_npy(e.to_string()))?;
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let order = npy.order();
    let DType::Plain(t) = npy.dtype() else {
        return Err(bad_npy(format!("a mask of structured elements {}", npy.dtype().descr())));
    };
    let read = |e: io::Error| bad_npy(e.to_string());
    let values: Vec<f64> = match (t.type_char(), t.size_field()) {
        (TypeChar::Float, 4) => npy.into_vec::<f32>().map_err(read)?.into_iter().map(f64::from).collect(),
        (TypeChar::Float, 8) => npy.into_vec::<f64>().map_err(read)?,
        (TypeChar::Int, 1) => npy.into_vec::<i8>().map_err(read)?.into_iter().map(f64::from).collect(),
        (TypeChar::Int, 2) => npy.into_vec::<i16>().map_err(read)?.into_iter().map(f64::from).collect(),
        (TypeChar::Int, 4) => npy.into_vec::<i32>().map_err(read)?.into_iter().map(f64::from).collect(),
        (TypeChar::Int, 8) => npy.into_vec::<i64>().map_err(read)?.into_iter().map(|v| v as f64).collect(),
        (TypeChar::Uint, 1) => npy.into_vec::<u8>().map_err(read)?.into_iter().map(f64::from).collect(),
        (TypeChar::Uint, 2) => npy.into_vec::<u16>().map_err(read)?.into_iter().map(f64::from).collect(),
        (TypeChar::Uint, 4) => npy.into_vec::<u32>().map_err(read)?.into_iter().map(f64::from).collect(),
        (TypeChar::Uint, 8) => npy.into_vec::<u64>().map_err(read)?.into_iter().map(|v| v as f64).collect(),
        _ => return Err(bad_npy(format!("a mask of {t} elements: masks are float (f4, f8) or integer arrays"))),
    };
    if let Some(v) = values.iter().find(|v| !v.is_finite()) {
        return Err(bad("--mask", format!("`{}` holds {v}: mask values must be finite", path.display())));
    }
    let (rows, cols, two_d) = match shape[..] {
        [n] => (1, n, false),
        [r, c] => (r, c, true),
        _ => {
            return Err(bad(
                "--mask",
                format!("`{}` is {}-dimensional: masks are 1D or 2D", path.display(), shape.len()),
            ));
        }
    };
    if values.is_empty() {
        return Err(bad("--mask", format!("`{}` is an empty mask", path.display())));
    }
    let values = if order == Order::Fortran && two_d {
        (0..rows * cols).map(|i| values[(i % cols) * rows + i / cols]).collect()
    } else {
        values
    };
    Ok(MaskValues { values, rows, cols, two_d })
}

/// A text mask file's row: numbers separated by commas or white space.
fn split_row(line: &str) -> Vec<&str> {
    line.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).collect()
}

fn parse_mask(text: &str) -> Result<MaskValues, FilterError> {
    let path = Path::new(text);
    if path.is_file() {
        if is_npy(path) {
            return mask_from_npy(path);
        }
        let body = std::fs::read_to_string(path).map_err(unreadable(path))?;
        let rows = body.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
        return mask_from_rows(rows, split_row, &format!("`{text}`")).map_err(|m| bad("--mask", m));
    }
    let rows = text.split(';').map(str::trim).filter(|r| !r.is_empty());
    mask_from_rows(rows, |r| r.split(',').collect(), &format!("`{text}` is not a file, and"))
        .map_err(|m| bad("--mask", format!("{m} (a list looks like 1,2,1; rows of a 2D mask are separated by ;)")))
}

fn parse_pair<T: std::str::FromStr>(text: &str, option: &'static str, what: &str) -> Result<Vec<T>, FilterError> {
    let items: Result<Vec<T>, _> = text.split(',').map(|s| s.trim().parse::<T>()).collect();
    match items {
        Ok(v) if v.len() == 1 || v.len() == 2 => Ok(v),
        _ => Err(bad(option, format!("`{text}` is not {what}"))),
    }
}

/// The spec and layout for this input.
fn plan(args: &FilterArgs, shape: &[usize]) -> Result<(Spec, Layout, String), FilterError> {
    let op = if args.convolve { ConvOp::Convolve } else { ConvOp::Correlate };
    let mask = args.mask.as_deref().map(parse_mask).transpose()?;
    let sigmas = match args.gaussian.as_deref() {
        Some(g) => {
            let s: Vec<f64> = parse_pair(g, "--gaussian", "a standard deviation or SY,SX")?;
            if let Some(v) = s.iter().find(|v| !(v.is_finite() && **v > 0.0)) {
                return Err(bad("--gaussian", format!("standard deviations must be positive and finite, got {v}")));
            }
            Some(s)
        }
        None => None,
    };
    if args.truncate.is_some() && sigmas.is_none() {
        return Err(bad("--truncate", "applies to --gaussian only"));
    }
    let truncate = args.truncate.unwrap_or(4.0);
    if !(truncate.is_finite() && truncate >= 0.0) {
        return Err(bad("--truncate", format!("must be a finite number >= 0, got {truncate}")));
    }
    if !args.cval.is_finite() {
        return Err(bad("--cval", format!("must be finite, got {}", args.cval)));
    }
    let origin: Option<Vec<isize>> =
        args.origin.as_deref().map(|o| parse_pair(o, "--origin", "an integer or OY,OX")).transpose()?;
    let mask_2d = mask.as_ref().is_some_and(|m| m.two_d) || sigmas.as_ref().is_some_and(|s| s.len() == 2);
    let image = match shape.len() {
        1 => {
            if args.image {
                return Err(bad("--image", "a 1D array is not an image: images are (H,W) or (H,W,C)"));
            }
            if mask_2d {
                return Err(bad(
                    if mask.is_some() { "--mask" } else { "--gaussian" },
                    "a 2D filter needs a 2D (H,W) or 3D (H,W,C) array; this one is 1D",
                ));
            }
            false
        }
        2 => args.image || mask_2d || sigmas.is_some(),
        _ => true,
    };
    if image && mask.as_ref().is_some_and(|m| !m.two_d) {
        return Err(bad(
            "--mask",
            format!(
                "a {} array filtered as an image needs a 2D mask (rows separated by ; or lines of a file) or --gaussian; \
                 a 1D mask filters a 2D array along --axis without --image",
                if shape.len() == 3 { "3D" } else { "2D" }
            ),
        ));
    }
    if image {
        if args.axis.is_some() {
            return Err(bad("--axis", "applies to 1D filters of 2D arrays, not to images (2D filters)"));
        }
        let (h, w, c) = match shape[..] {
            [h, w] => (h, w, 1),
            [h, w, c] => (h, w, c),
            _ => unreachable!("images are 2D or 3D"),
        };
        if ![1, 3, 4].contains(&c) {
            return Err(bad(
                "--shape",
                format!("a 3D array of {c} channels: images have 1 (gray), 3 (RGB) or 4 (RGBA) interleaved channels"),
            ));
        }
        let (oy, ox) = match origin.as_deref() {
            None => (0, 0),
            Some([o]) => (*o, *o),
            Some([oy, ox]) => (*oy, *ox),
            Some(_) => unreachable!("one or two origins"),
        };
        let spec = match (&mask, &sigmas) {
            (Some(m), _) => Spec::plane(m.values.clone(), m.cols, m.rows, op),
            (None, Some(s)) => {
                let (sy, sx) = if s.len() == 2 { (s[0], s[1]) } else { (s[0], s[0]) };
                Spec::gaussian2d(sy, sx, truncate)
            }
            (None, None) => unreachable!("clap requires --mask or --gaussian"),
        };
        let spec = spec.with_mode(args.mode).with_cval(args.cval).with_origin_2d(oy, ox);
        return Ok((spec, Layout::image(h, w, c), "2D".into()));
    }
    let origin = match origin.as_deref() {
        None => 0,
        Some([o]) => *o,
        Some(_) => return Err(bad("--origin", "a 1D filter takes one origin, not OY,OX")),
    };
    let spec = match (&mask, &sigmas) {
        (Some(m), _) => Spec::line(m.values.clone(), m.cols, op),
        (None, Some(s)) => Spec::gaussian1d(s[0], truncate),
        (None, None) => unreachable!("clap requires --mask or --gaussian"),
    };
    let spec = spec.with_mode(args.mode).with_cval(args.cval).with_origin(origin);
    match shape[..] {
        [n] => {
            if let Some(a) = args.axis
                && a != 0
                && a != -1
            {
                return Err(bad("--axis", format!("axis {a} is out of range for a 1D array (0 or -1)")));
            }
            Ok((spec, Layout::signal(n), "1D".into()))
        }
        [r, c] => {
            let axis = args.axis.unwrap_or(-1);
            let spec = spec.with_axis(axis).map_err(|e| bad("--axis", e.to_string()))?;
            let along = if matches!(axis, 0 | -2) { 0 } else { 1 };
            Ok((spec, Layout::batch(r, c), format!("1D along axis {along}")))
        }
        _ => unreachable!("3D arrays are images"),
    }
}

/// The backend `--gpus` asks for, and whether the CPU runs it.
fn backend(args: &FilterArgs) -> Result<(Backend, bool), FilterError> {
    let text = args.gpus.trim();
    let asked = match text.to_ascii_lowercase().as_str() {
        "all" => Backend::AllGpus,
        "cpu" => Backend::Cpu,
        _ => {
            let list: Result<Vec<u32>, _> = text.split(',').map(|s| s.trim().parse::<u32>()).collect();
            match list {
                Ok(l) if !l.is_empty() => Backend::Gpus(l),
                _ => {
                    return Err(bad(
                        "--gpus",
                        format!("`{text}` is not `all`, `cpu` or a list of GPU ordinals like 0,1"),
                    ));
                }
            }
        }
    };
    if matches!(asked, Backend::Cpu) {
        eprintln!("coalesce filter: running the CPU reference path (rayon)");
        return Ok((Backend::Cpu, true));
    }
    let count = Gpu::count();
    if count == 0 {
        eprintln!("coalesce filter: no CUDA device; running the CPU reference path (rayon)");
        return Ok((Backend::Cpu, true));
    }
    if let Backend::Gpus(list) = &asked
        && let Some(bad_ordinal) = list.iter().find(|&&o| o >= count)
    {
        return Err(bad("--gpus", format!("there is no GPU {bad_ordinal}: {count} visible (0..{count})")));
    }
    Ok((asked, false))
}

/// The output's temporary file, mapped; renamed into place by `finish`.
struct Output {
    /// Declared first: unmapped before the file is removed on drop.
    map: Option<MmapMut>,
    temp: tempfile::NamedTempFile,
    path: PathBuf,
}

impl Output {
    /// A temporary file beside `path` of `header` followed by `data`
    /// bytes (mapped writable).
    fn create(path: &Path, header: &[u8], data: usize) -> Result<Output, FilterError> {
        let unwritable = |source| FilterError::Unwritable { path: path.to_path_buf(), source };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix(".coalesce-filter-").suffix(".tmp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // What a newly created file gets: 0o666 less the umask.
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let mut temp = builder.tempfile_in(dir).map_err(unwritable)?;
        let total = (header.len() as u64)
            .checked_add(data as u64)
            .ok_or_else(|| unwritable(io::Error::new(io::ErrorKind::InvalidInput, "the output is too large")))?;
        temp.as_file().set_len(total).map_err(unwritable)?;
        reserve(temp.as_file(), total).map_err(unwritable)?;
        temp.as_file_mut().write_all(header).map_err(unwritable)?;
        let map = if data == 0 {
            None
        } else {
            // SAFETY: the temporary file was just created under a fresh
            // random name with its full length set; only this process
            // knows it, and the map is dropped before the file is renamed.
            let map = unsafe { MmapOptions::new().offset(header.len() as u64).len(data).map_mut(temp.as_file()) };
            Some(map.map_err(unwritable)?)
        };
        Ok(Output { map, temp, path: path.to_path_buf() })
    }

    fn data(&mut self) -> &mut [u8] {
        self.map.as_deref_mut().unwrap_or(&mut [])
    }

    /// Flushes the data and renames the file to the output (replacing an
    /// existing one only when `force`).
    fn finish(self, force: bool) -> Result<(), FilterError> {
        let Output { map, temp, path } = self;
        let unwritable = |source| FilterError::Unwritable { path: path.clone(), source };
        if let Some(map) = map {
            map.flush().map_err(unwritable)?;
        }
        temp.as_file().sync_all().map_err(unwritable)?;
        let persisted = if force { temp.persist(&path) } else { temp.persist_noclobber(&path) };
        match persisted {
            Ok(_) => Ok(()),
            Err(e) if !force && e.error.kind() == io::ErrorKind::AlreadyExists => {
                Err(FilterError::OutputExists { path })
            }
            Err(e) => Err(FilterError::Unwritable { path, source: e.error }),
        }
    }
}

/// Reserves the file's blocks on disk, so that a full disk is an error
/// now rather than a fault (SIGBUS) when the mapped output is written.
/// Filesystems that cannot reserve (no `fallocate`) are left as they are.
#[cfg(unix)]
fn reserve(file: &File, bytes: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let len = libc::off_t::try_from(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too large"))?;
    // SAFETY: a plain system call on a file descriptor this process owns.
    match unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) } {
        0 | libc::EOPNOTSUPP | libc::EINVAL => Ok(()),
        code => Err(io::Error::from_raw_os_error(code)),
    }
}

#[cfg(not(unix))]
fn reserve(_: &File, _: u64) -> io::Result<()> {
    Ok(())
}

/// Runs `streaming` over `input` into `output` (raw bytes of `S`),
/// copying where a side is not aligned for `S`.
fn filter_typed<S: Sample>(
    streaming: &Streaming,
    layout: Layout,
    input: &[u8],
    output: &mut [u8],
) -> Result<Report, FilterError> {
    let input: Cow<'_, [S]> = match bytemuck::try_cast_slice::<u8, S>(input) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => {
            let mut v = vec![S::zeroed(); input.len() / size_of::<S>()];
            bytemuck::cast_slice_mut::<S, u8>(&mut v).copy_from_slice(input);
            Cow::Owned(v)
        }
    };
    let report = match bytemuck::try_cast_slice_mut::<u8, S>(output) {
        Ok(out) => streaming.run(layout, &input, out)?,
        Err(_) => {
            let mut v = vec![S::zeroed(); output.len() / size_of::<S>()];
            let report = streaming.run(layout, &input, &mut v)?;
            output.copy_from_slice(bytemuck::cast_slice(&v));
            report
        }
    };
    Ok(report)
}

/// A bar of bytes done / total and GB/s on stderr, hidden when stderr is
/// not a terminal.
fn progress_bar(total: u64) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    let style = indicatif::ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {wide_bar} {decimal_bytes}/{decimal_total_bytes} ({decimal_bytes_per_sec}, {eta})",
    )
    .expect("a valid template");
    bar.set_style(style);
    bar
}

/// `coalesce filter`: filters `args.input` into `args.output` (see the
/// module docs). The output appears only when complete; on any error no
/// file is left behind.
pub fn run(args: &FilterArgs) -> Result<FilterSummary, FilterError> {
    if cfg!(target_endian = "big") {
        return Err(bad("INPUT", "little-endian files on a big-endian machine are not supported"));
    }
    let output_exists =
        args.output.try_exists().map_err(|source| FilterError::Unwritable { path: args.output.clone(), source })?;
    if output_exists && !args.force {
        return Err(FilterError::OutputExists { path: args.output.clone() });
    }
    if output_exists && args.output.is_dir() {
        return Err(FilterError::Unwritable {
            path: args.output.clone(),
            source: io::Error::new(io::ErrorKind::IsADirectory, "the output is a directory"),
        });
    }
    let input = open_input(args)?;
    let (spec, layout, filter) = plan(args, &input.shape)?;
    let (backend, cpu) = backend(args)?;
    let mut streaming = Streaming::new(spec).with_backend(backend);
    if let Some(b) = args.device_budget {
        streaming = streaming.with_budget(usize::try_from(b).unwrap_or(usize::MAX));
    }
    let total = input.bytes().len() as u64;
    let bar = progress_bar(total);
    let progress_bar = bar.clone();
    streaming = streaming.with_progress(Arc::new(move |done: u64| progress_bar.set_position(done)));

    let mut output = Output::create(&args.output, input.npy.as_deref().unwrap_or(&[]), input.bytes().len())?;
    let data = input.bytes();
    let out = output.data();
    let report = match input.dtype {
        Dtype::F32 => filter_typed::<f32>(&streaming, layout, data, out),
        Dtype::F64 => filter_typed::<f64>(&streaming, layout, data, out),
        Dtype::F16 => filter_typed::<crate::half::f16>(&streaming, layout, data, out),
        Dtype::Bf16 => filter_typed::<crate::half::bf16>(&streaming, layout, data, out),
        Dtype::U8 => filter_typed::<u8>(&streaming, layout, data, out),
        Dtype::U16 => filter_typed::<u16>(&streaming, layout, data, out),
    };
    bar.finish_and_clear();
    let report = report?;
    output.finish(args.force)?;
    Ok(FilterSummary { output: args.output.clone(), dtype: input.dtype, shape: input.shape, filter, cpu, report })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_headers_parse_back() {
        for dtype in Dtype::ALL {
            let Some(h) = npy_header(dtype, &[3, 5]) else {
                assert_eq!(dtype, Dtype::Bf16);
                continue;
            };
            assert_eq!(h.len() % 64, 0);
            let parsed = npyz::NpyHeader::from_reader(&h[..]).expect("a valid header");
            assert_eq!(parsed.shape(), &[3, 5]);
            assert_eq!(parsed.order(), Order::C);
            let DType::Plain(t) = parsed.dtype() else { panic!("a plain dtype") };
            assert_eq!(Dtype::from_npy(&t), Some(dtype));
        }
    }

    #[test]
    fn mask_lists() {
        let m = parse_mask("1, 2,-3").expect("a list");
        assert_eq!((m.values, m.rows, m.cols, m.two_d), (vec![1.0, 2.0, -3.0], 1, 3, false));
        let m = parse_mask("1,2;3,4;5,6").expect("rows");
        assert_eq!((m.rows, m.cols, m.two_d), (3, 2, true));
        assert!(parse_mask("1,x").is_err());
        assert!(parse_mask("1,2;3").is_err());
        assert!(parse_mask("1,inf").is_err());
        assert!(parse_mask("").is_err());
    }

    #[test]
    fn shapes() {
        assert_eq!(parse_shape("7").unwrap(), vec![7]);
        assert_eq!(parse_shape("3, 4,1").unwrap(), vec![3, 4, 1]);
        assert!(parse_shape("1,2,3,4").is_err());
        assert!(parse_shape("-1").is_err());
    }
}
