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

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use coalesce::Gpu;
use coalesce::bench::{
    self, BenchError, access, alignment, concurrency, constant, conv, copy, local, matrix, reduce, run, stream,
    texture, transfer, transpose,
};
use coalesce::inspect::{Access, Tools};
use coalesce::text::{Align, Table, human_bytes};

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
        #[arg(long, value_parser = run::parse_elems, default_value = "262144")]
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
    Matrix(matrix::Matrix),
    /// Sums of f32 / i32 / f64: neighbored, interleaved, fast vs the DRAM floor.
    Reduce(reduce::Reduce),
    /// Convolution: the lesson's 1D kernels and the fast one vs the DRAM
    /// floor and their CUDA C++ twins.
    Conv(Box<conv::Conv>),
    /// Host <-> device transfers: pageable / pinned / mapped vs size,
    /// batching, copy/kernel overlap on streams.
    Transfer(transfer::Transfer),
    /// Access patterns: misaligned and strided f32 reads and writes, 2D
    /// widths linear vs pitched.
    Access(Box<access::Access>),
    /// Size and alignment: 12-byte points vs 16-byte aligned points vs a
    /// structure of arrays.
    Alignment(alignment::Alignment),
    /// Local memory: a per-thread histogram in local memory vs in registers.
    Local(local::Local),
    /// Transpose: naive vs 32x32 shared tile (bank conflicts) vs padded
    /// 32x33 tile, against the vec4 copy and cuMemcpyDtoD.
    Transpose(transpose::Transpose),
    /// Constant memory: warp broadcast vs serialized reads, and the same
    /// patterns from global memory.
    Constant(constant::Constant),
    /// Texture memory: 2D convolution through the texture unit vs the
    /// shared-memory tiled kernels, and bilinear resizing.
    Texture(texture::Texture),
    /// Sharing the GPU: the cost of alternating convolution masks, and two
    /// threads on two streams against one after the other.
    Concurrency(concurrency::Concurrency),
    /// Streaming filter of host data larger than the device budget, from
    /// page-locked memory and from a Vec, end to end against the host link
    /// (and one GPU against all of them).
    Stream(stream::Stream),
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
        Command::Bench { suite: BenchCommand::Matrix(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Reduce(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Conv(args) } => {
            with_gpu(|gpu| run::execute(gpu, args.as_ref()).map(drop))
        }
        Command::Bench { suite: BenchCommand::Transfer(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Access(args) } => with_gpu(|gpu| run::execute(gpu, &*args).map(drop)),
        Command::Bench { suite: BenchCommand::Alignment(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Local(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Transpose(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Constant(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Texture(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Concurrency(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
        Command::Bench { suite: BenchCommand::Stream(args) } => with_gpu(|gpu| run::execute(gpu, &args).map(drop)),
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
