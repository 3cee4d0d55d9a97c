//! `coalesce filter`: the real binary on `.npy` and raw files in a
//! temporary directory.
//!
//! * Values: an f32 signal (1D mask, wrap, origin), a u8 RGB raw image
//!   (Gaussian, constant mode with cval) and an f64 batch filtered along
//!   axis 0 (convolution) against the rayon references within their
//!   bounds, written back by each type's output rule.
//! * The file result equals the in-memory `Streaming` result bit for bit:
//!   on the CPU (`--gpus cpu`) always, and on the GPUs (the default) when
//!   a CUDA device exists, for f32, u8, bf16 and f16.
//! * Errors: exit status 1 and a message naming the problem, for a missing
//!   input, a raw file of the wrong size, a dtype mismatch, an existing
//!   output without `--force` (left untouched), bf16 `.npy`, a bad mask
//!   list; no temporary file is left behind, also when the filter fails
//!   after the output file was started.
//!
//! Runs without a GPU (the command falls back to the CPU). Inputs are
//! random and fresh on every run (`COALESCE_TEST_SEED` pins them).

mod common;

use std::ffi::OsStr;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Output;

use bytemuck::Pod;
use coalesce::Gpu;
use coalesce::conv::batch::{Axis, Sample, Shape, left_for_origin};
use coalesce::conv::channels::Image;
use coalesce::conv::reference::Checked;
use coalesce::conv::reference_batch::{filter1d, filter2d, sample_matches};
use coalesce::conv::{Boundary, ConvOp, gaussian_truncated};
use coalesce::files::{Dtype, npy_header};
use coalesce::half::{bf16, f16};
use coalesce::streaming::{Backend, Layout, Spec, Streaming};

/// The `coalesce` binary: the one cargo built, or, in the GPU bundle
/// (scripts/bundle.sh), `bin/coalesce` beside the `tests/` folder holding
/// this test binary.
fn binary() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_coalesce"));
    if built.exists() {
        return built;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let bundled = exe.parent().and_then(Path::parent).map(|d| d.join("bin").join("coalesce"));
    bundled.filter(|p| p.exists()).unwrap_or(built)
}

/// Runs `coalesce filter ARGS`.
fn filter<S: AsRef<OsStr>>(args: &[S]) -> Output {
    std::process::Command::new(binary()).arg("filter").args(args).output().expect("the coalesce binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `coalesce filter ARGS` and expects success.
fn filter_ok<S: AsRef<OsStr>>(args: &[S]) -> String {
    let out = filter(args);
    assert!(
        out.status.success(),
        "coalesce filter failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("filtered") && summary.contains("GB/s"), "no summary line: {summary}");
    // Without a GPU (or with --gpus cpu) exactly one line says the CPU runs.
    let cpu_lines = stderr(&out).lines().filter(|l| l.contains("running the CPU reference path (rayon)")).count();
    let cpu_asked = args.iter().any(|a| a.as_ref() == "cpu");
    let expected = usize::from(cpu_asked || Gpu::count() == 0);
    assert_eq!(cpu_lines, expected, "stderr: {}", stderr(&out));
    summary.into_owned()
}

/// The chunk count the summary line names (`… in 12 chunks on …`).
fn chunks(summary: &str) -> usize {
    let words: Vec<&str> = summary.split_whitespace().collect();
    let at = words.iter().position(|w| w.starts_with("chunk")).expect("a chunk count in the summary");
    words[at - 1].parse().expect("a number of chunks")
}

/// Runs `coalesce filter ARGS`, expects exit status 1 and `fragment` in
/// the message.
fn filter_fails<S: AsRef<OsStr>>(args: &[S], fragment: &str) {
    let out = filter(args);
    assert_eq!(out.status.code(), Some(1), "expected exit status 1; stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(fragment), "expected `{fragment}` in stderr: {err}");
}

/// Files in `dir` (names), sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .expect("readable")
        .map(|e| e.expect("an entry").file_name().to_string_lossy().into())
        .collect();
    v.sort();
    v
}

fn write_raw<S: Pod>(path: &Path, data: &[S]) {
    fs::write(path, bytemuck::cast_slice::<S, u8>(data)).expect("written");
}

/// An `.npy` file of `data` in `shape` (the header from the library).
fn write_npy<S: Pod>(path: &Path, dtype: Dtype, shape: &[u64], data: &[S]) {
    let mut f = BufWriter::new(fs::File::create(path).expect("created"));
    f.write_all(&npy_header(dtype, shape).expect("an npy type")).expect("written");
    f.write_all(bytemuck::cast_slice::<S, u8>(data)).expect("written");
    f.flush().expect("flushed");
}

fn pod_vec<S: Pod>(bytes: &[u8]) -> Vec<S> {
    assert_eq!(bytes.len() % size_of::<S>(), 0, "{} bytes are not whole elements", bytes.len());
    let mut v = vec![S::zeroed(); bytes.len() / size_of::<S>()];
    bytemuck::cast_slice_mut::<S, u8>(&mut v).copy_from_slice(bytes);
    v
}

/// An `.npy` file's type string, shape and elements.
fn read_npy<S: Pod>(path: &Path) -> (String, Vec<u64>, Vec<S>) {
    let bytes = fs::read(path).expect("readable");
    let mut rest = &bytes[..];
    let header = npyz::NpyHeader::from_reader(&mut rest).expect("a valid npy header");
    assert_eq!(header.order(), npyz::Order::C);
    let npyz::DType::Plain(t) = header.dtype() else { panic!("a plain dtype") };
    (t.to_string(), header.shape().to_vec(), pod_vec(rest))
}

fn widen<S: Sample>(v: &[S]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// Every element of `got` is what a kernel may write for `want`.
fn assert_matches<S: Sample>(got: &[S], want: &[Checked], what: &str, seed: u64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = got.iter().zip(want).position(|(g, w)| !sample_matches(*g, w)) {
        panic!("{what} (seed {seed}): element {i} is {:?}, expected {:?}", got[i], want[i]);
    }
}

/// (a) An f32 signal of odd length, a 1D mask, wrap mode, origin 1.
#[test]
fn f32_signal_matches_the_reference() {
    let (mut rng, seed) = common::rng();
    let dir = tempfile::tempdir().expect("a temp dir");
    let (input, output) = (dir.path().join("signal.npy"), dir.path().join("filtered.npy"));
    let n = 100_003;
    let x: Vec<f32> = common::samples(&mut rng, n);
    write_npy(&input, Dtype::F32, &[n as u64], &x);
    filter_ok(&[
        input.as_os_str(),
        output.as_os_str(),
        "--mask".as_ref(),
        "1,2,3,-1".as_ref(),
        "--mode".as_ref(),
        "wrap".as_ref(),
        "--origin".as_ref(),
        "1".as_ref(),
    ]);
    let (descr, shape, got) = read_npy::<f32>(&output);
    assert_eq!((descr.as_str(), shape), ("<f4", vec![n as u64]));
    let mask = [1.0, 2.0, 3.0, -1.0];
    let left = left_for_origin(4, 1, ConvOp::Correlate).expect("a valid origin");
    let want = filter1d::<f32>(&widen(&x), Shape::signal(n), Axis::Rows, &mask, 4, left, Boundary::Wrap, 0.0)
        .expect("the reference runs");
    assert_matches(&got, &want, "f32 signal", seed);
    assert_eq!(listing(dir.path()), ["filtered.npy", "signal.npy"]);
}

/// The taps `Spec::gaussian2d` filters with: the outer product of the two
/// 1D Gaussians, rounded to f32 (u8's accumulation type).
fn gaussian_taps_f32(sigma_y: f64, sigma_x: f64, truncate: f64) -> (Vec<f64>, usize, usize) {
    let gx = gaussian_truncated::<f64>(sigma_x, truncate).expect("a Gaussian");
    let gy = gaussian_truncated::<f64>(sigma_y, truncate).expect("a Gaussian");
    let taps = gy.iter().flat_map(|y| gx.iter().map(move |x| (x * y) as f32 as f64)).collect();
    (taps, gx.len(), gy.len())
}

/// (b) A raw u8 RGB image, a Gaussian, constant mode with cval 7.
#[test]
fn u8_raw_image_matches_the_reference() {
    let (mut rng, seed) = common::rng();
    let dir = tempfile::tempdir().expect("a temp dir");
    let (input, output) = (dir.path().join("image.rgb"), dir.path().join("blurred.rgb"));
    let (h, w, c) = (37, 29, 3);
    let x: Vec<u8> = common::samples(&mut rng, h * w * c);
    write_raw(&input, &x);
    filter_ok(&[
        input.as_os_str(),
        output.as_os_str(),
        "--gaussian".as_ref(),
        "1.5".as_ref(),
        "--dtype".as_ref(),
        "u8".as_ref(),
        "--shape".as_ref(),
        "37,29,3".as_ref(),
        "--mode".as_ref(),
        "constant".as_ref(),
        "--cval".as_ref(),
        "7".as_ref(),
    ]);
    let got = fs::read(&output).expect("the output");
    assert_eq!(got.len(), x.len(), "a raw output of the input's size");
    let (taps, mw, mh) = gaussian_taps_f32(1.5, 1.5, 4.0);
    let img = Image::new(w, h, c).expect("an image");
    let want = filter2d::<f32>(&widen(&x), img, &taps, (mw, mh), (mw / 2, mh / 2), Boundary::Zero, 7.0)
        .expect("the reference runs");
    assert_matches(&got, &want, "u8 image", seed);
}

/// (c) An f64 batch, a 1D mask convolved along axis 0, origin -1.
#[test]
fn f64_batch_along_axis_0_matches_the_reference() {
    let (mut rng, seed) = common::rng();
    let dir = tempfile::tempdir().expect("a temp dir");
    let (input, output) = (dir.path().join("batch.NPY"), dir.path().join("out.npy"));
    let (rows, cols) = (301, 45);
    let x: Vec<f64> = common::samples(&mut rng, rows * cols);
    write_npy(&input, Dtype::F64, &[rows as u64, cols as u64], &x);
    let mask = [0.25, -0.5, 1.5, 0.125];
    filter_ok(&[
        input.as_os_str(),
        output.as_os_str(),
        "--mask".as_ref(),
        "0.25,-0.5,1.5,0.125".as_ref(),
        "--convolve".as_ref(),
        "--axis".as_ref(),
        "0".as_ref(),
        "--origin=-1".as_ref(),
        "--mode".as_ref(),
        "mirror".as_ref(),
        "--gpus".as_ref(),
        "all".as_ref(),
    ]);
    let (descr, shape, got) = read_npy::<f64>(&output);
    assert_eq!((descr.as_str(), shape), ("<f8", vec![rows as u64, cols as u64]));
    let (taps, _) = ConvOp::Convolve.correlation_taps(&mask);
    let left = left_for_origin(4, -1, ConvOp::Convolve).expect("a valid origin");
    let want =
        filter1d::<f64>(&widen(&x), Shape::new(rows, cols), Axis::Columns, &taps, 4, left, Boundary::Mirror, 0.0)
            .expect("the reference runs");
    assert_matches(&got, &want, "f64 batch", seed);
}

/// The in-memory streaming result on `backend`.
fn in_memory<S: Sample>(spec: &Spec, layout: Layout, x: &[S], backend: Backend) -> Vec<S> {
    let mut out = vec![S::zeroed(); x.len()];
    Streaming::new(spec.clone()).with_backend(backend).run(layout, x, &mut out).expect("the in-memory filter runs");
    out
}

/// Whether a CUDA device is visible; with `COALESCE_EXPECT_GPU=1` (the
/// GPU bundle's runner) none is a failure.
fn gpus_present() -> bool {
    let present = Gpu::count() > 0;
    if !present && std::env::var("COALESCE_EXPECT_GPU").is_ok_and(|v| v == "1") {
        panic!("COALESCE_EXPECT_GPU=1 but no CUDA device is visible");
    }
    present
}

/// One file-versus-memory case: the file's bytes after its header equal
/// the in-memory result's bytes.
fn same_as_in_memory<S: Sample>(
    dir: &Path,
    name: &str,
    x: &[S],
    npy: Option<(Dtype, &[u64])>,
    args: &[&str],
    spec: &Spec,
    layout: Layout,
) {
    let input = dir.join(name);
    let header = match npy {
        Some((dtype, shape)) => {
            write_npy(&input, dtype, shape, x);
            npy_header(dtype, shape).expect("an npy type").len()
        }
        None => {
            write_raw(&input, x);
            0
        }
    };
    let mut runs: Vec<(&str, Backend)> = vec![("cpu", Backend::Cpu)];
    if gpus_present() {
        runs.push(("all", Backend::AllGpus));
    }
    for (gpus, backend) in runs {
        let output: PathBuf = dir.join(format!("{gpus}-{name}"));
        let mut full: Vec<&OsStr> = vec![input.as_os_str(), output.as_os_str(), "--gpus".as_ref(), gpus.as_ref()];
        full.extend(args.iter().map(OsStr::new));
        let summary = filter_ok(&full);
        if args.contains(&"--device-budget") {
            assert!(chunks(&summary) > 1, "{name} on {gpus}: a small budget cuts the data into chunks: {summary}");
        }
        let file = fs::read(&output).expect("the output");
        let want = in_memory(spec, layout, x, backend);
        assert!(
            file[header..] == *bytemuck::cast_slice::<S, u8>(&want),
            "{name} on {gpus}: the file's result differs from the in-memory result"
        );
        if header > 0 {
            let input_bytes = fs::read(&input).expect("the input");
            assert_eq!(file[..header], input_bytes[..header], "{name}: the output's header is the input's");
        }
    }
}

/// (d) File results equal in-memory `Streaming` results bit for bit, on
/// the CPU and, where there is one, on the GPU.
#[test]
fn file_results_equal_in_memory_results() {
    let (mut rng, _seed) = common::rng();
    let dir = tempfile::tempdir().expect("a temp dir");
    let d = dir.path();

    let n = 250_001;
    let x: Vec<f32> = common::samples(&mut rng, n);
    let spec = Spec::line(vec![0.5, -1.0, 2.0, 0.25, 1.0], 5, ConvOp::Correlate).with_mode(Boundary::Reflect);
    let shape = [n as u64];
    same_as_in_memory(
        d,
        "a.npy",
        &x,
        Some((Dtype::F32, &shape)),
        &["--mask", "0.5,-1,2,0.25,1", "--device-budget", "256KiB"],
        &spec,
        Layout::signal(n),
    );

    let (h, w) = (61, 47);
    let x: Vec<u8> = common::samples(&mut rng, h * w * 3);
    let spec = Spec::gaussian2d(2.0, 1.25, 3.0).with_mode(Boundary::Nearest);
    let args = [
        "--gaussian",
        "2,1.25",
        "--truncate",
        "3",
        "--mode",
        "nearest",
        "--dtype",
        "u8",
        "--shape",
        "61,47,3",
        "--device-budget",
        "16KiB",
    ];
    same_as_in_memory(d, "b.raw", &x, None, &args, &spec, Layout::image(h, w, 3));

    let (rows, cols) = (129, 33);
    let x: Vec<bf16> = common::samples(&mut rng, rows * cols);
    let spec = Spec::line(vec![1.0, 2.0, 1.0], 3, ConvOp::Convolve)
        .with_mode(Boundary::Zero)
        .with_cval(-2.5)
        .with_axis(0)
        .expect("a valid axis");
    let args = [
        "--mask",
        "1,2,1",
        "--convolve",
        "--axis",
        "0",
        "--mode",
        "constant",
        "--cval=-2.5",
        "--dtype",
        "bf16",
        "--shape",
        "129,33",
    ];
    same_as_in_memory(d, "c.bin", &x, None, &args, &spec, Layout::batch(rows, cols));

    let (h, w) = (40, 53);
    let x: Vec<f16> = common::samples(&mut rng, h * w);
    let mask = vec![0.0625, 0.125, 0.0625, 0.125, 0.25, 0.125, 0.0625, 0.125, 0.0625, -0.5, 0.5, 1.0];
    let spec = Spec::plane(mask, 3, 4, ConvOp::Correlate).with_mode(Boundary::Wrap).with_origin_2d(1, -1);
    let shape = [h as u64, w as u64];
    let args = [
        "--mask",
        "0.0625,0.125,0.0625;0.125,0.25,0.125;0.0625,0.125,0.0625;-0.5,0.5,1",
        "--mode",
        "wrap",
        "--origin=1,-1",
    ];
    same_as_in_memory(d, "d.npy", &x, Some((Dtype::F16, &shape)), &args, &spec, Layout::image(h, w, 1));

    // A mask from a text file and from an .npy file give the same result.
    let mask_txt = d.join("mask.txt");
    fs::write(&mask_txt, "# a 2 x 3 mask\n1 2 -1\n0.5, 0.25, 3\n").expect("written");
    let mask_npy = d.join("mask.npy");
    write_npy(&mask_npy, Dtype::F64, &[2, 3], &[1.0f64, 2.0, -1.0, 0.5, 0.25, 3.0]);
    let (h, w) = (31, 17);
    let x: Vec<f32> = common::samples(&mut rng, h * w);
    let spec = Spec::plane(vec![1.0, 2.0, -1.0, 0.5, 0.25, 3.0], 3, 2, ConvOp::Correlate);
    let shape = [h as u64, w as u64];
    for (name, m) in [("e.npy", &mask_txt), ("f.npy", &mask_npy)] {
        let m = m.to_str().expect("a UTF-8 path");
        same_as_in_memory(d, name, &x, Some((Dtype::F32, &shape)), &["--mask", m], &spec, Layout::image(h, w, 1));
    }
}

/// (e, f) Errors: exit status 1, a message naming the problem, and no
/// file left behind.
#[test]
fn errors_are_reported_and_leave_nothing_behind() {
    let (mut rng, _seed) = common::rng();
    let dir = tempfile::tempdir().expect("a temp dir");
    let d = dir.path();
    let npy = d.join("x.npy");
    let x: Vec<f32> = common::samples(&mut rng, 1000);
    write_npy(&npy, Dtype::F32, &[1000], &x);
    let raw = d.join("x.raw");
    write_raw(&raw, &x);
    let out = d.join("out.npy");
    let out_s = out.to_str().expect("a UTF-8 path");
    let (npy_s, raw_s) = (npy.to_str().expect("UTF-8"), raw.to_str().expect("UTF-8"));
    let before = listing(d);

    let missing = d.join("missing.npy");
    filter_fails(&[missing.to_str().expect("UTF-8"), out_s, "--mask", "1,2,1"], "cannot read");
    filter_fails(&[missing.to_str().expect("UTF-8"), out_s, "--mask", "1,2,1"], "missing.npy");
    filter_fails(
        &[raw_s, out_s, "--mask", "1,2,1", "--dtype", "f32", "--shape", "999"],
        "the file holds 4000 bytes, but --shape 999 of f32 (999 elements x 4 bytes) needs 3996 bytes",
    );
    filter_fails(&[raw_s, out_s, "--mask", "1,2,1", "--shape", "1000"], "--dtype");
    filter_fails(&[npy_s, out_s, "--mask", "1,2,1", "--dtype", "f64"], "holds <f4 elements, but --dtype is f64");
    filter_fails(&[npy_s, out_s, "--mask", "1,2,1", "--dtype", "bf16"], "bf16 is for raw files only");
    filter_fails(&[npy_s, out_s, "--mask", "1,x,1"], "`x` is not a number");
    filter_fails(&[npy_s, out_s, "--mask", "1,2;3,4"], "2D filter needs a 2D");
    filter_fails(&[npy_s, out_s, "--mask", "1,2,1", "--gpus", "zero"], "--gpus");
    // The library refuses the origin when the filter starts: after the
    // output's temporary file exists.
    filter_fails(&[npy_s, out_s, "--mask", "1,2,1", "--origin", "5"], "origin 5 is out of range");
    assert_eq!(listing(d), before, "a failed run left files behind");

    // An existing output is kept without --force, replaced with it.
    fs::write(&out, b"keep me").expect("written");
    filter_fails(&[npy_s, out_s, "--mask", "1,2,1"], "pass --force");
    assert_eq!(fs::read(&out).expect("the output"), b"keep me");
    let out = filter(&[npy_s, out_s, "--mask", "1,2,1", "--force"]);
    assert!(out.status.success(), "--force: {}", stderr(&out));
    let (descr, shape, got) = read_npy::<f32>(&d.join("out.npy"));
    assert_eq!((descr.as_str(), shape, got.len()), ("<f4", vec![1000], 1000));
    let mut after = before.clone();
    after.push("out.npy".into());
    after.sort();
    assert_eq!(listing(d), after);
}
