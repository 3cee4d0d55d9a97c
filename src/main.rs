//! `coalesce`: the command-line front end of the library.
//!
//! * `coalesce info`: the device, its limits and the loaded PTX.
//! * `coalesce bench <suite>`: run a benchmark suite (`bench list` lists
//!   them); tables go to stdout, JSON and SVG into `--out`.
//! * `coalesce filter IN OUT`: filter a `.npy` or raw file of any size
//!   through the GPUs (or, without one, the CPU references).
//! * `coalesce stress`: many threads share the GPU, every result checked.
//! * `coalesce sass`: the compiled kernels' resources and global access
//!   widths, from `ptxas` and `cuobjdump` (no GPU needed).
//!
//! Exit codes: 0 success, 1 failure, 2 no CUDA device (or missing tools,
//! or invalid arguments).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use coalesce::Gpu;
use coalesce::bench::batch as conv_batch;
use coalesce::bench::report::{Align, Table, human_bytes, parse_size};
use coalesce::bench::{
    self, BenchError, access, alignment, concurrency, constant, conv, copy, harness, local, matrix, reduce, run,
    stream, texture, transfer, transpose,
};
use coalesce::inspect::{Access, Tools};

/// Exit code when the machine lacks what the command needs (a CUDA
/// device, the SASS tools).
const EXIT_UNAVAILABLE: u8 = 2;

#[derive(Parser)]
#[command(name = "coalesce", version, about = "Memory-bound GPU kernels in Rust: device info, benchmarks, SASS checks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the device, its limits, its theoretical DRAM bandwidth and the
    /// loaded PTX.
    Info,
    /// Run a benchmark suite.
    Bench {
        #[command(subcommand)]
        suite: BenchCommand,
    },
    /// Many threads share the GPU for a while, mixing copies, convolutions,
    /// sums, transposes, pitched copies and constant tables on shared and
    /// separate streams; every result is checked against the CPU. Prints
    /// operations per second and the wrong results (exit code 1 if any).
    Stress {
        /// How long to run, seconds.
        #[arg(long, default_value_t = 60.0)]
        seconds: f64,
        /// Threads.
        #[arg(long, default_value_t = 16)]
        threads: usize,
        /// Largest input, elements (sides of 2D inputs: its square root).
        #[arg(long, value_parser = parse_elems, default_value = "262144")]
        max_elems: u64,
        /// Seed of the threads' random generators [default: from the clock].
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Filter a .npy or raw file (larger than the GPU's memory if need be)
    /// with a 1D or 2D mask or a Gaussian, on the GPUs or the CPU.
    Filter(Box<coalesce::files::FilterArgs>),
    /// Assemble the embedded PTX with ptxas and show each kernel's
    /// resources and global load/store widths (no GPU needed).
    Sass {
        /// Target architecture (the number in sm_90).
        #[arg(long, default_value_t = 90)]
        arch: u32,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// List the benchmark suites: one name per line (for scripts), or a
    /// table with what each measures (--long).
    List {
        /// Also say what each suite measures.
        #[arg(long)]
        long: bool,
    },
    /// Copy bandwidth: scalar / vec2 / vec4 kernels vs cuMemcpyDtoD.
    Copy(copy::Copy),
    /// Matrix add: row-major vs column-major vs pitched, and the
    /// sum_matrix_2d block-shape sweep.
    Matrix(MatrixArgs),
    /// Sums of f32 / i32 / f64: neighbored, interleaved, fast vs the DRAM floor.
    Reduce(reduce::Reduce),
    /// Convolution: the lesson's 1D kernels and the fast one vs the DRAM
    /// floor and their CUDA C++ twins.
    Conv(Box<ConvArgs>),
    /// Host <-> device transfers: pageable / pinned / mapped vs size,
    /// batching, copy/kernel overlap on streams.
    Transfer(transfer::Transfer),
    /// Access patterns: misaligned and strided f32 reads and writes, 2D
    /// widths linear vs pitched.
    Access(Box<AccessArgs>),
    /// Size and alignment: 12-byte points vs 16-byte aligned points vs a
    /// structure of arrays.
    Alignment(AlignmentArgs),
    /// Local memory: a per-thread histogram in local memory vs in registers.
    Local(LocalArgs),
    /// Transpose: naive vs 32x32 shared tile (bank conflicts) vs padded
    /// 32x33 tile, against the vec4 copy and cuMemcpyDtoD.
    Transpose(TransposeArgs),
    /// Constant memory: warp broadcast vs serialized reads, and the same
    /// patterns from global memory.
    Constant(constant::Constant),
    /// Texture memory: 2D convolution through the texture unit vs the
    /// shared-memory tiled kernels, and bilinear resizing.
    Texture(TextureArgs),
    /// Sharing the GPU: the cost of alternating convolution masks, and two
    /// threads on two streams against one after the other.
    Concurrency(ConcurrencyArgs),
    /// Streaming filter of host data larger than the device budget, from
    /// page-locked memory and from a Vec, end to end against the host link
    /// (and one GPU against all of them).
    Stream(StreamArgs),
}

#[derive(Args)]
struct StreamArgs {
    /// Signal size from page-locked memory (f32) [default: 16GiB, 1GiB with --quick].
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Signal size of the Vec run, 0 to skip it [default: as --size].
    #[arg(long, value_parser = parse_size)]
    vec_size: Option<u64>,
    /// Device budget per GPU [default: 1GiB, 128MiB with --quick].
    #[arg(long, value_parser = parse_size)]
    budget: Option<u64>,
    /// Mask width.
    #[arg(long, default_value_t = 31)]
    width: usize,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
struct ConcurrencyArgs {
    /// Runs per mask-alternation loop [default: 10000, 500 with --quick].
    #[arg(long)]
    runs: Option<usize>,
    /// Samples per 1D input; 2D images are the largest square not above it [default: 4096].
    #[arg(long)]
    n: Option<usize>,
    /// Samples per job of the two-stream part [default: 2^24, 2^20 with --quick].
    #[arg(long, value_parser = parse_elems)]
    overlap_n: Option<u64>,
    #[command(flatten)]
    common: CommonArgs,
}

/// Options every suite takes.
#[derive(Args)]
struct CommonArgs {
    /// Untimed warm-up operations per measurement.
    #[arg(long, default_value_t = harness::Settings::default().warmup)]
    warmup: usize,
    /// Timed samples per measurement [default: 20, 5 with --quick].
    #[arg(long)]
    reps: Option<usize>,
    /// Directory for the JSON and SVG results.
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
    /// A short smoke run (smaller sizes, fewer samples).
    #[arg(long)]
    quick: bool,
}

impl CommonArgs {
    fn settings(&self, defaults: harness::Settings) -> harness::Settings {
        harness::Settings { warmup: self.warmup, reps: self.reps.unwrap_or(defaults.reps), ..defaults }
    }
}

#[derive(Args)]
struct MatrixArgs {
    /// Only this part: `layouts` (row/column/pitched) or `sweep` (block shapes).
    #[arg(long, value_parser = ["layouts", "sweep"])]
    only: Option<String>,
    /// Side of the layout experiment's square matrix [default: 10000, 4000 with --quick].
    #[arg(long)]
    layout_n: Option<usize>,
    /// Block of the layout experiment (XxY) [default: 32x32].
    #[arg(long)]
    layout_block: Option<coalesce::BlockShape>,
    /// Side of the sweep's square matrix [default: 16384, 4096 with --quick].
    #[arg(long)]
    sweep_n: Option<usize>,
    /// Sweep only these block shapes (XxY, repeatable) [default: the lesson's fifteen].
    #[arg(long = "shape")]
    shapes: Vec<coalesce::BlockShape>,
    /// Sweep only this kernel: x1 (sum_matrix_2d) or x4 (sum_matrix_2d_x4) [default: both].
    #[arg(long, value_parser = ["x1", "x4"])]
    variant: Option<String>,
    #[command(flatten)]
    common: CommonArgs,
}

/// `268435456` or `2^28`.
fn parse_elems(text: &str) -> Result<u64, String> {
    let t = text.trim();
    match t.strip_prefix("2^") {
        Some(e) => e.parse::<u32>().ok().filter(|&e| e < 63).map(|e| 1u64 << e),
        None => t.parse::<u64>().ok(),
    }
    .ok_or_else(|| format!("`{text}` is not an element count (a number or 2^k)"))
}

#[derive(Args)]
struct ConvArgs {
    /// Mask widths, comma-separated [default: 3,7,15,31,63,127,255; 3,31 with --quick].
    #[arg(long, value_delimiter = ',')]
    widths: Option<Vec<usize>>,
    /// Input lengths, comma-separated, numbers or 2^k [default: 2^20,2^22,2^24,2^26,2^27,2^28].
    #[arg(long, value_delimiter = ',', value_parser = parse_elems)]
    lengths: Option<Vec<u64>>,
    /// Kernels, comma-separated (basic, const, tiled, tiled_l2, fast) [default: all].
    #[arg(long, value_delimiter = ',')]
    variants: Option<Vec<String>>,
    /// Boundary mode (zero, nearest, reflect, mirror, wrap).
    #[arg(long, default_value = "zero")]
    mode: String,
    /// Skip the CUDA C++ twins.
    #[arg(long)]
    no_twins: bool,
    /// Square 2D mask sizes, comma-separated (5 = 5x5) [default: 3,5,..,15; 3,5 with --quick].
    #[arg(long, value_delimiter = ',')]
    masks_2d: Option<Vec<usize>>,
    /// Square mask sizes run with the separable filter alone, comma-separated [default: 17,21,25,31; 31 with --quick].
    #[arg(long, value_delimiter = ',')]
    separable_2d: Option<Vec<usize>>,
    /// Gaussian sigmas run with the separable filter, comma-separated [default: 2,5; 5 with --quick].
    #[arg(long, value_delimiter = ',')]
    gaussians_2d: Option<Vec<f64>>,
    /// 2D image side [default: 8192, 2048 with --quick].
    #[arg(long)]
    image_2d: Option<usize>,
    /// Only the 1D part.
    #[arg(long, conflicts_with = "only_2d")]
    only_1d: bool,
    /// Only the 2D part.
    #[arg(long)]
    only_2d: bool,
    /// Batched depthwise workloads ROWSxLEN@W, comma-separated, or `default` (64x2^21@31,1024x2^17@7).
    #[arg(long, value_delimiter = ',')]
    batch: Option<Vec<String>>,
    /// Storage types of the batched workloads (f32, f64, f16, bf16, u8, u16).
    #[arg(long, value_delimiter = ',', default_value = "f32,bf16")]
    dtype: Vec<String>,
    /// 2D images of interleaved channels (1, 3, 4), comma-separated: a 4096x4096 image, 5x5 box, per --dtype.
    #[arg(long, value_delimiter = ',')]
    channels: Option<Vec<usize>>,
    /// Box sizes of the channels workloads, comma-separated (5 = 5x5) [default: 5].
    #[arg(long, value_delimiter = ',')]
    channel_masks: Option<Vec<usize>>,
    /// Image side of the channels workloads [default: 4096].
    #[arg(long)]
    channel_side: Option<usize>,
    /// Only the batched and channels workloads (implies --batch default and --channels 3 when not given).
    #[arg(long, conflicts_with_all = ["only_1d", "only_2d"])]
    only_batch: bool,
    /// Seed of the random input and masks.
    #[arg(long, default_value_t = 2026)]
    seed: u64,
    #[command(flatten)]
    common: CommonArgs,
}

/// `--batch`'s workloads (`default` expands to the two).
fn batch_workloads(args: &ConvArgs) -> Result<Vec<conv_batch::Workload>, BenchError> {
    let specs = match &args.batch {
        Some(specs) => specs.clone(),
        None if args.only_batch => vec!["default".into()],
        None => return Ok(Vec::new()),
    };
    let mut out = Vec::new();
    for s in specs {
        if s == "default" {
            out.extend(conv_batch::Workload::DEFAULTS);
        } else {
            out.push(conv_batch::Workload::parse(&s).map_err(BenchError::Options)?);
        }
    }
    for d in &args.dtype {
        if !conv_batch::DTYPES.contains(&d.as_str()) {
            return Err(BenchError::Options(format!("unknown dtype `{d}` ({})", conv_batch::DTYPES.join(", "))));
        }
    }
    Ok(out)
}

/// `--channels`' workloads (3 with `--only-batch` alone).
fn channel_workloads(args: &ConvArgs) -> Result<Vec<conv_batch::ChannelWorkload>, BenchError> {
    let counts = match &args.channels {
        Some(c) => c.clone(),
        None if args.only_batch => vec![3],
        None => return Ok(Vec::new()),
    };
    let default = conv_batch::ChannelWorkload::DEFAULT;
    let masks = args.channel_masks.clone().unwrap_or(vec![default.mask]);
    let side = args.channel_side.unwrap_or(default.side);
    if side == 0 || masks.contains(&0) {
        return Err(BenchError::Options("--channel-side and --channel-masks take positive sizes".into()));
    }
    let mut out = Vec::new();
    for channels in counts {
        if !coalesce::conv::channels::CHANNELS.contains(&channels) {
            return Err(BenchError::Options(format!("--channels {channels}: images have 1, 3 or 4 channels")));
        }
        out.extend(masks.iter().map(|&mask| conv_batch::ChannelWorkload { side, channels, mask }));
    }
    Ok(out)
}

fn conv_bench(gpu: &Gpu, args: &ConvArgs) -> Result<(), BenchError> {
    let base = if args.common.quick { conv::ConvOptions::quick() } else { conv::ConvOptions::default() };
    let variants = match &args.variants {
        Some(v) => v.iter().map(|v| v.parse()).collect::<Result<Vec<_>, _>>().map_err(BenchError::Options)?,
        None => base.variants.clone(),
    };
    let lengths = match &args.lengths {
        Some(l) => l
            .iter()
            .map(|&n| usize::try_from(n).map_err(|_| BenchError::Options(format!("length {n} too large"))))
            .collect::<Result<Vec<_>, _>>()?,
        None => base.lengths.clone(),
    };
    let opts = conv::ConvOptions {
        widths: args.widths.clone().unwrap_or(base.widths.clone()),
        lengths,
        variants,
        mode: coalesce::conv::parse_boundary(&args.mode).map_err(BenchError::Options)?,
        twins: !args.no_twins,
        settings: args.common.settings(base.settings),
        out_dir: args.common.out.clone(),
        seed: args.seed,
        masks_2d: if args.only_1d || args.only_batch {
            vec![]
        } else {
            args.masks_2d.clone().unwrap_or(base.masks_2d.clone())
        },
        separable_2d: if args.only_1d || args.only_batch {
            vec![]
        } else {
            args.separable_2d.clone().unwrap_or(base.separable_2d.clone())
        },
        gaussians_2d: if args.only_1d || args.only_batch {
            vec![]
        } else {
            args.gaussians_2d.clone().unwrap_or(base.gaussians_2d.clone())
        },
        image_2d: args.image_2d.unwrap_or(base.image_2d),
        skip_1d: args.only_2d || args.only_batch,
        batches: batch_workloads(args)?,
        dtypes: args.dtype.clone(),
        channels: channel_workloads(args)?,
    };
    conv::run(gpu, &opts).map(|_| ())
}

#[derive(Args)]
struct AccessArgs {
    /// Only this part: offset, stride or 2d [default: all three].
    #[arg(long, value_parser = ["offset", "stride", "2d"])]
    only: Option<String>,
    /// Offsets swept, elements, comma-separated [default: 0..=32].
    #[arg(long, value_delimiter = ',')]
    offsets: Option<Vec<usize>>,
    /// Strides swept, elements, comma-separated [default: 1..=32].
    #[arg(long, value_delimiter = ',')]
    strides: Option<Vec<usize>>,
    /// Only the read-side kernels (read_offset, read_stride) or the write-side ones.
    #[arg(long, value_parser = ["read", "write"])]
    side: Option<String>,
    /// Elements moved per offset launch: a number or 2^k [default: 2^26, 2^22 with --quick].
    #[arg(long, value_parser = parse_elems)]
    offset_elems: Option<u64>,
    /// Elements moved per stride launch, at most [default: 2^25, 2^22 with --quick].
    #[arg(long, value_parser = parse_elems)]
    stride_elems: Option<u64>,
    /// Largest span of the strided side [default: 4GiB, 256MiB with --quick].
    #[arg(long, value_parser = parse_size)]
    footprint: Option<u64>,
    /// Row widths of the 2D part, comma-separated [default: 8192,8191,8200].
    #[arg(long, value_delimiter = ',')]
    widths: Option<Vec<usize>>,
    /// Rows of the 2D part [default: 8192, 2048 with --quick].
    #[arg(long)]
    rows: Option<usize>,
    /// Block of the 2D part (XxY) [default: 32x8].
    #[arg(long)]
    block: Option<coalesce::BlockShape>,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
struct AlignmentArgs {
    /// Points: a number or 2^k [default: 2^25, 2^21 with --quick].
    #[arg(long, value_parser = parse_elems)]
    points: Option<u64>,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args)]
struct LocalArgs {
    /// The bin of a word v is (v >> shift) % 16.
    #[arg(long, default_value_t = 0)]
    shift: u32,
    /// Grid size in waves of resident blocks.
    #[arg(long, default_value_t = 1)]
    waves: u32,
    /// Words histogrammed: a number or 2^k [default: 2^26, 2^22 with --quick].
    #[arg(long, value_parser = parse_elems)]
    elems: Option<u64>,
    #[command(flatten)]
    common: CommonArgs,
}

/// An element count from the command line, or `default`.
fn elems_arg(arg: Option<u64>, default: usize) -> Result<usize, BenchError> {
    arg.map_or(Ok(default), |n| {
        usize::try_from(n).map_err(|_| BenchError::Options(format!("{n} elements is too many")))
    })
}

fn access_bench(gpu: &Gpu, args: &AccessArgs) -> Result<(), BenchError> {
    let base = if args.common.quick { access::AccessOptions::quick() } else { access::AccessOptions::default() };
    let only = args.only.as_deref();
    let opts = access::AccessOptions {
        offset_elems: elems_arg(args.offset_elems, base.offset_elems)?,
        offsets: args.offsets.clone().unwrap_or(base.offsets.clone()),
        stride_elems: elems_arg(args.stride_elems, base.stride_elems)?,
        stride_footprint: args.footprint.unwrap_or(base.stride_footprint),
        strides: args.strides.clone().unwrap_or(base.strides.clone()),
        reads: args.side.as_deref() != Some("write"),
        writes: args.side.as_deref() != Some("read"),
        widths: args.widths.clone().unwrap_or(base.widths.clone()),
        rows: args.rows.unwrap_or(base.rows),
        block: args.block.unwrap_or(base.block),
        offset_part: only.is_none_or(|o| o == "offset"),
        stride_part: only.is_none_or(|o| o == "stride"),
        two_d_part: only.is_none_or(|o| o == "2d"),
        settings: args.common.settings(base.settings),
        out_dir: args.common.out.clone(),
    };
    access::run(gpu, &opts).map(|_| ())
}

#[derive(Args)]
struct TransposeArgs {
    /// Matrix shape ROWSxCOLS, repeatable, each measured at every block height
    /// [default: 16384x16384, 8192x32768, 32768x8192, 16383x16385; 4096x4096, 1000x1007 with --quick].
    #[arg(long = "shape", value_parser = parse_shape)]
    shapes: Vec<(usize, usize)>,
    /// Block heights for the shapes, comma-separated (4, 8, 16, 32: blocks of 32 x H) [default: all].
    #[arg(long, value_delimiter = ',')]
    block_rows: Option<Vec<u32>>,
    /// Sides of the square size sweep, comma-separated [default: 512,1024,2048,4096,8192; 512,1024,2048 with --quick].
    #[arg(long, value_delimiter = ',', conflicts_with = "no_sweep")]
    sweep: Option<Vec<usize>>,
    /// Skip the size sweep.
    #[arg(long)]
    no_sweep: bool,
    /// Kernels, comma-separated (naive, tiled, padded) [default: all].
    #[arg(long, value_delimiter = ',')]
    variants: Option<Vec<String>>,
    /// Skip the vec4 copy and cuMemcpyDtoD references (no ratios, no goal).
    #[arg(long)]
    no_reference: bool,
    #[command(flatten)]
    common: CommonArgs,
}

/// `4096x4096` (rows x columns).
fn parse_shape(text: &str) -> Result<(usize, usize), String> {
    let (r, c) = text
        .trim()
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("`{text}` is not a shape: write ROWSxCOLS, e.g. 4096x4096"))?;
    let n = |v: &str| v.trim().parse::<usize>().map_err(|e| format!("`{text}`: `{}`: {e}", v.trim()));
    Ok((n(r)?, n(c)?))
}

fn transpose_bench(gpu: &Gpu, args: &TransposeArgs) -> Result<(), BenchError> {
    let base =
        if args.common.quick { transpose::TransposeOptions::quick() } else { transpose::TransposeOptions::default() };
    let variants = match &args.variants {
        Some(v) => v.iter().map(|v| v.parse()).collect::<Result<Vec<_>, _>>().map_err(BenchError::Options)?,
        None => base.variants.clone(),
    };
    let opts = transpose::TransposeOptions {
        shapes: if args.shapes.is_empty() { base.shapes.clone() } else { args.shapes.clone() },
        block_rows: args.block_rows.clone().unwrap_or(base.block_rows.clone()),
        sweep: if args.no_sweep { vec![] } else { args.sweep.clone().unwrap_or(base.sweep.clone()) },
        variants,
        references: !args.no_reference,
        settings: args.common.settings(base.settings),
        out_dir: args.common.out.clone(),
        ..base
    };
    transpose::run(gpu, &opts).map(|_| ())
}

#[derive(Args)]
struct TextureArgs {
    /// Side of the square convolution image; 0 skips the convolution [default: 8192, 2048 with --quick].
    #[arg(long)]
    image: Option<usize>,
    /// Square mask sizes, comma-separated (5 = 5x5) [default: 3,5,7,11; 3,5 with --quick].
    #[arg(long, value_delimiter = ',')]
    masks: Option<Vec<usize>>,
    /// Boundary modes, comma-separated (zero, nearest, wrap, reflect) [default: all four].
    #[arg(long, value_delimiter = ',')]
    modes: Option<Vec<String>>,
    /// Convolution variants, comma-separated (tex, tex_blocked, tex_pitched, tex_blocked_pitched, tiled, fast) [default: all].
    #[arg(long, value_delimiter = ',')]
    variants: Option<Vec<String>>,
    /// Resizes, comma-separated IN:OUT square sides [default: 8192:4096,8192:2731,4096:8192,2048:8192].
    #[arg(long, value_delimiter = ',', value_parser = parse_resize, conflicts_with = "no_resize")]
    resize: Option<Vec<(usize, usize)>>,
    /// Skip the resize part.
    #[arg(long)]
    no_resize: bool,
    /// Seed of the random images and masks.
    #[arg(long, default_value_t = 2026)]
    seed: u64,
    #[command(flatten)]
    common: CommonArgs,
}

/// `8192:4096`.
fn parse_resize(text: &str) -> Result<(usize, usize), String> {
    let (a, b) = text.split_once(':').ok_or_else(|| format!("`{text}` is not IN:OUT"))?;
    let side = |s: &str| s.trim().parse::<usize>().map_err(|_| format!("`{s}` in `{text}` is not a side"));
    Ok((side(a)?, side(b)?))
}

fn texture_bench(gpu: &Gpu, args: &TextureArgs) -> Result<(), BenchError> {
    let base = if args.common.quick { texture::TextureOptions::quick() } else { texture::TextureOptions::default() };
    let modes = match &args.modes {
        Some(m) => m
            .iter()
            .map(|m| coalesce::conv::parse_boundary(m))
            .collect::<Result<Vec<_>, _>>()
            .map_err(BenchError::Options)?,
        None => base.modes.clone(),
    };
    let variants = match &args.variants {
        Some(v) => v.iter().map(|v| v.parse()).collect::<Result<Vec<_>, _>>().map_err(BenchError::Options)?,
        None => base.variants.clone(),
    };
    let resize = if args.no_resize { Vec::new() } else { args.resize.clone().unwrap_or(base.resize.clone()) };
    let opts = texture::TextureOptions {
        image: args.image.unwrap_or(base.image),
        masks: args.masks.clone().unwrap_or(base.masks.clone()),
        modes,
        variants,
        resize,
        settings: args.common.settings(base.settings),
        out_dir: args.common.out.clone(),
        seed: args.seed,
    };
    texture::run(gpu, &opts).map(|_| ())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Info => with_gpu(info),
        Command::Bench { suite: BenchCommand::List { long } } => {
            list_suites(long);
            ExitCode::SUCCESS
        }
        Command::Bench { suite: BenchCommand::Copy(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Matrix(args) } => with_gpu(|gpu| {
            let base =
                if args.common.quick { matrix::MatrixOptions::quick() } else { matrix::MatrixOptions::default() };
            let variants = match args.variant.as_deref() {
                Some("x1") => vec![coalesce::SumVariant::X1],
                Some(_) => vec![coalesce::SumVariant::X4],
                None => base.variants.clone(),
            };
            let opts = matrix::MatrixOptions {
                layout_n: args.layout_n.unwrap_or(base.layout_n),
                layout_block: args.layout_block.unwrap_or(base.layout_block),
                sweep_n: args.sweep_n.unwrap_or(base.sweep_n),
                shapes: if args.shapes.is_empty() { base.shapes.clone() } else { args.shapes.clone() },
                variants,
                layouts: args.only.as_deref() != Some("sweep"),
                sweep: args.only.as_deref() != Some("layouts"),
                settings: args.common.settings(base.settings),
                out_dir: args.common.out.clone(),
            };
            matrix::run(gpu, &opts).map(|_| ())
        }),
        Command::Bench { suite: BenchCommand::Reduce(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Conv(args) } => with_gpu(|gpu| conv_bench(gpu, &args)),
        Command::Bench { suite: BenchCommand::Transfer(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Access(args) } => with_gpu(|gpu| access_bench(gpu, &args)),
        Command::Bench { suite: BenchCommand::Alignment(args) } => with_gpu(|gpu| {
            let base = if args.common.quick { alignment::AlignmentOptions::quick() } else { Default::default() };
            let points = elems_arg(args.points, base.points)?;
            let opts = alignment::AlignmentOptions {
                points,
                settings: args.common.settings(base.settings),
                out_dir: args.common.out.clone(),
            };
            alignment::run(gpu, &opts).map(|_| ())
        }),
        Command::Bench { suite: BenchCommand::Local(args) } => with_gpu(|gpu| {
            let base = if args.common.quick { local::LocalOptions::quick() } else { Default::default() };
            let opts = local::LocalOptions {
                elems: elems_arg(args.elems, base.elems)?,
                shift: args.shift,
                waves: args.waves,
                settings: args.common.settings(base.settings),
                out_dir: args.common.out.clone(),
            };
            local::run(gpu, &opts).map(|_| ())
        }),
        Command::Bench { suite: BenchCommand::Transpose(args) } => with_gpu(|gpu| transpose_bench(gpu, &args)),
        Command::Bench { suite: BenchCommand::Constant(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Texture(args) } => with_gpu(|gpu| texture_bench(gpu, &args)),
        Command::Bench { suite: BenchCommand::Concurrency(args) } => with_gpu(|gpu| {
            let base = if args.common.quick {
                concurrency::ConcurrencyOptions::quick()
            } else {
                concurrency::ConcurrencyOptions::default()
            };
            let opts = concurrency::ConcurrencyOptions {
                runs: args.runs.unwrap_or(base.runs),
                n: args.n.unwrap_or(base.n),
                overlap_n: elems_arg(args.overlap_n, base.overlap_n)?,
                reps: args.common.reps.unwrap_or(base.reps),
                out_dir: args.common.out.clone(),
            };
            concurrency::run(gpu, &opts).map(|_| ())
        }),
        Command::Bench { suite: BenchCommand::Stream(args) } => with_gpu(|gpu| {
            let base =
                if args.common.quick { stream::StreamOptions::quick() } else { stream::StreamOptions::default() };
            // Default sizes shrink to fit the host's memory; given ones are kept.
            let base = match (args.size, args.vec_size, stream::host_available_bytes()) {
                (None, None, Some(avail)) => {
                    let (fit, changed) = base.fit_host(avail);
                    if changed {
                        eprintln!(
                            "stream: {} of host memory available: signals of {} (pass --size to choose)",
                            human_bytes(avail),
                            human_bytes(fit.bytes)
                        );
                    }
                    fit
                }
                _ => base,
            };
            let bytes = args.size.unwrap_or(base.bytes);
            let opts = stream::StreamOptions {
                bytes,
                vec_bytes: args.vec_size.unwrap_or(if args.size.is_some() { bytes } else { base.vec_bytes }),
                budget: args.budget.unwrap_or(base.budget),
                width: args.width,
                reps: args.common.reps.unwrap_or(base.reps),
                out_dir: Some(args.common.out.clone()),
            };
            stream::run(gpu, &opts).map(|_| ())
        }),
        Command::Filter(args) => match coalesce::files::run(&args) {
            Ok(summary) => {
                println!("{summary}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Sass { arch } => sass(arch),
        Command::Stress { seconds, threads, max_elems, seed } => stress(seconds, threads, max_elems, seed),
    }
}

/// `coalesce stress`: exit code 0 when every operation was right, 1 when
/// any was wrong or failed, 2 without a GPU.
fn stress(seconds: f64, threads: usize, max_elems: u64, seed: Option<u64>) -> ExitCode {
    if !(seconds.is_finite() && seconds >= 0.0) || threads == 0 || max_elems == 0 {
        eprintln!("error: --seconds must be a finite number >= 0, --threads and --max-elems at least 1");
        return ExitCode::FAILURE;
    }
    let seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    let opts = coalesce::stress::StressOptions {
        duration: std::time::Duration::from_secs_f64(seconds),
        threads,
        max_elems: usize::try_from(max_elems).unwrap_or(usize::MAX),
        seed,
    };
    with_gpu(|gpu| {
        println!(
            "stress: {threads} threads for {seconds} s on {} (seed {seed}, inputs up to {max_elems} elements)",
            gpu.info().name
        );
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}").expect("a valid template"));
        let start = std::time::Instant::now();
        let r = coalesce::stress::run(gpu, &opts, |done| {
            let rate = done as f64 / start.elapsed().as_secs_f64().max(1e-9);
            bar.set_message(format!("{done} operations checked ({rate:.0}/s)"));
            bar.tick();
        })?;
        bar.finish_and_clear();
        let mut t = Table::new(["operation", "checked", "wrong"]);
        for (i, name) in coalesce::stress::OPS.iter().enumerate() {
            t.row([name.to_string(), r.ops[i].to_string(), r.wrong[i].to_string()]);
        }
        t.align(0, Align::Left);
        println!("{}", t.render());
        for f in &r.failures {
            println!("wrong: {f}");
        }
        println!(
            "stress: {} operations in {:.1} s ({:.0} per second), {} wrong",
            r.total(),
            r.seconds,
            r.total() as f64 / r.seconds.max(1e-9),
            r.total_wrong()
        );
        if r.total_wrong() > 0 {
            return Err(BenchError::Verification {
                suite: "stress",
                message: format!("{} wrong results or errors", r.total_wrong()),
            });
        }
        Ok(())
    })
}

/// Opens the first GPU and runs `f` on it; "no device" is one line on
/// stderr and exit code 2, any other error its message and exit code 1.
fn with_gpu(f: impl FnOnce(&Gpu) -> Result<(), BenchError>) -> ExitCode {
    let result = Gpu::new().map_err(BenchError::from).and_then(|gpu| f(&gpu));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_no_device() => {
            eprintln!("no CUDA device: {}", e.no_device_reason().unwrap_or_default());
            ExitCode::from(EXIT_UNAVAILABLE)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn list_suites(long: bool) {
    if !long {
        for s in bench::SUITES {
            println!("{}", s.name);
        }
        return;
    }
    let mut t = Table::new(["suite", "measures"]);
    for s in bench::SUITES {
        t.row([s.name, s.about]);
    }
    t.align(1, Align::Left);
    println!("{t}");
}

fn info(gpu: &Gpu) -> Result<(), BenchError> {
    let i = gpu.info();
    let l = &i.limits;
    let (free, total) = gpu.memory_info()?;
    println!("{i}");
    println!();
    let archs: Vec<String> = coalesce::ptx::archs().iter().map(|a| format!("sm_{a}")).collect();
    let mut t = Table::new(["property", "value"]);
    t.row(["memory free / total".to_string(), format!("{} / {}", human_bytes(free as u64), human_bytes(total as u64))]);
    t.row([
        "memory bus".to_string(),
        format!("{} bits at {} MHz (double data rate)", i.memory_bus_bits, i.memory_clock_khz / 1000),
    ]);
    t.row([
        "theoretical DRAM bandwidth".to_string(),
        format!("{:.1} GB/s (1 GB = 1e9 bytes)", i.theoretical_dram_gbps()),
    ]);
    t.row(["L2 cache".to_string(), human_bytes(u64::from(i.l2_bytes))]);
    t.row(["constant memory".to_string(), human_bytes(u64::from(i.constant_bytes))]);
    t.row(["PTX loaded".to_string(), format!("sm_{}", gpu.ptx_arch())]);
    t.row(["PTX embedded".to_string(), archs.join(", ")]);
    t.row(["threads per block".to_string(), l.max_threads_per_block.to_string()]);
    t.row(["block dims (x, y, z)".to_string(), dims(l.max_block_dim)]);
    t.row(["grid dims (x, y, z)".to_string(), dims(l.max_grid_dim)]);
    t.row(["shared memory per block".to_string(), human_bytes(u64::from(l.max_shared_per_block))]);
    t.row(["shared memory per block (opt-in)".to_string(), human_bytes(u64::from(l.max_shared_per_block_optin))]);
    t.row(["shared memory per SM".to_string(), human_bytes(u64::from(l.shared_per_sm))]);
    t.row(["shared memory reserved per block".to_string(), human_bytes(u64::from(l.reserved_shared_per_block))]);
    t.row(["registers per block".to_string(), l.registers_per_block.to_string()]);
    t.row(["registers per SM".to_string(), l.registers_per_sm.to_string()]);
    t.row(["warp size".to_string(), l.warp_size.to_string()]);
    t.row(["threads per SM".to_string(), l.max_threads_per_sm.to_string()]);
    t.row(["blocks per SM".to_string(), l.max_blocks_per_sm.to_string()]);
    t.align(1, Align::Left);
    println!("{t}");
    println!();

    let threads = coalesce::CopyPolicy::TUNED.threads;
    let mut k = Table::new(["copy kernel", "registers", "blocks/SM", "max blocks"]);
    for name in
        ["copy_scalar", "copy_vec2", "copy_vec4", "copy_scalar_x1", "copy_vec2_x1", "copy_vec4_x1", "copy_bytes"]
    {
        let limits = gpu.kernel_limits(name)?;
        k.row([
            name.to_string(),
            limits.registers_per_thread.to_string(),
            gpu.max_active_blocks_per_sm(name, threads, 0)?.to_string(),
            gpu.max_resident_blocks(name, threads)?.to_string(),
        ]);
    }
    println!("{k}");
    println!(
        "(at {threads} threads per block, the tuned copy policy; max blocks = SMs x blocks/SM; the grid cap is {} waves of it)",
        coalesce::CopyPolicy::TUNED.waves
    );
    Ok(())
}

fn dims(d: [u32; 3]) -> String {
    format!("{} x {} x {}", d[0], d[1], d[2])
}

fn sass(arch: u32) -> ExitCode {
    let Some(tools) = Tools::find() else {
        eprintln!(
            "SASS tools not found: ptxas and cuobjdump are needed (looked in ${}, .tools/sass/bin, \
             /usr/local/cuda/bin and PATH; scripts/setup-build-machine.sh installs them)",
            coalesce::inspect::TOOLS_ENV
        );
        return ExitCode::from(EXIT_UNAVAILABLE);
    };
    let Some(ptx) = coalesce::ptx::text(arch) else {
        let archs: Vec<String> = coalesce::ptx::archs().iter().map(|a| a.to_string()).collect();
        eprintln!("error: no PTX embedded for sm_{arch}; this build embeds {} (--arch)", archs.join(", "));
        return ExitCode::FAILURE;
    };
    let compiled = match tools.compile(ptx, arch) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ptxas = tools.ptxas.canonicalize().unwrap_or_else(|_| tools.ptxas.clone());
    match tools.ptxas_version() {
        Ok(v) => println!("sm_{arch} PTX assembled by {} ({v})", ptxas.display()),
        Err(_) => println!("sm_{arch} PTX assembled by {}", ptxas.display()),
    }
    println!();
    println!("{}", compiled.resource_table());
    println!();
    let mut t = Table::new(["kernel", "global loads (bits)", "global stores (bits)"]);
    for name in compiled.sass.keys() {
        let widths = compiled.global_widths(name);
        let list = |dir: Access| {
            let w: Vec<String> = widths.iter().filter(|(a, _)| *a == dir).map(|(_, b)| b.to_string()).collect();
            if w.is_empty() { "-".to_string() } else { w.join(", ") }
        };
        t.row([name.clone(), list(Access::Load), list(Access::Store)]);
    }
    println!("{t}");
    ExitCode::SUCCESS
}
