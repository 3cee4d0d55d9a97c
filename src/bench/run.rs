//! The suite pattern: a suite declares its options (a clap struct with [`Common`] flattened in), and in [`Suite::run`]
//! measures its cases through a [`Run`], which owns everything else: the settings, warm-up and samples
//! ([`Run::measure`]), the DtoD floor ([`Run::dtod`]), L2 residency, progress, verification errors, the text tables,
//! the JSON record (one schema for every suite, see [`Record`]), the SVG plots and the goal lines.
//!
//! A case is a [`Rec`]: named cells that become one table row and one JSON object. A goal is a [`Goal`], printed as
//! `goal <what>: MET|NOT MET|NOT EVALUATED (<numbers>)`.

use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use serde_json::{Map, Value};

use super::harness::{self, DtodReference, Settings, Stats};
use super::report::{self, Scale, Series, TimelineRun};
use super::{BenchError, BenchResult, SuiteInfo};
use crate::text::{Align, Table};
use crate::{DeviceBuffer, DeviceCopy, DeviceViewMut, Gpu, PtxModule};

/// The byte every verified output is poisoned with before its launch.
pub const POISON: u8 = 0xA5;

/// Options every suite takes.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct Common {
    /// Untimed warm-up operations per measurement.
    #[arg(long, default_value_t = Settings::default().warmup)]
    pub warmup: usize,
    /// Timed samples per measurement [default: the suite's; 20 for most, 5 with --quick].
    #[arg(long)]
    pub reps: Option<usize>,
    /// Directory for the JSON and SVG results.
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// A short smoke run (smaller sizes, fewer samples).
    #[arg(long)]
    pub quick: bool,
}

impl Default for Common {
    fn default() -> Self {
        Common { warmup: Settings::default().warmup, reps: None, out: PathBuf::from("bench-out"), quick: false }
    }
}

/// A benchmark suite: its options are the clap struct itself.
pub trait Suite: clap::Args {
    /// Name and one-line description.
    const INFO: SuiteInfo;
    /// What the figures mean (units, bytes counted), printed and recorded.
    const UNITS: &'static str;
    /// Samples per measurement: full run, `--quick` run.
    const REPS: (usize, usize) = (20, 5);
    /// The shared options.
    fn common(&self) -> &Common;
    /// Measures and verifies every case, recording rows, goals and plots.
    fn run(&self, run: &mut Run<'_>) -> BenchResult<()>;
}

/// The device a record was measured on, as the JSON `device` object.
pub fn device_summary(gpu: &Gpu) -> Value {
    let i = gpu.info();
    serde_json::json!({
        "name": i.name,
        "compute_capability": format!("{}.{}", i.cc_major, i.cc_minor),
        "sm_count": i.sm_count,
        "l2_bytes": i.l2_bytes,
        "total_memory_bytes": i.total_memory,
        "theoretical_dram_gbps": i.theoretical_dram_gbps(),
        "ptx_arch": gpu.ptx_arch(),
        "embedded_ptx_archs": crate::ptx::archs(),
        "driver_version": i.driver_version,
    })
}

/// How a number is shown in a table (the JSON holds the plain value).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fmt {
    /// Fixed decimals.
    Fixed(u8),
    /// A fraction shown as a percentage with these decimals (`0.971` → `97.1%`).
    Pct(u8),
    /// A ratio with an `x` (`1.48x`), these decimals.
    Times(u8),
}

impl Fmt {
    /// `v` formatted.
    pub fn show(self, v: f64) -> String {
        match self {
            Fmt::Fixed(p) => format!("{v:.*}", p as usize),
            Fmt::Pct(p) => format!("{:.*}%", p as usize, v * 100.0),
            Fmt::Times(p) => format!("{v:.*}x", p as usize),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Cell {
    Text(String),
    Num(Option<f64>, Fmt),
    Int(i64),
    Json(Value),
}

/// One case: named cells, each a table column (in first-seen order) and a JSON field (the column name in snake case,
/// `%` as `pct`), plus JSON-only fields ([`Rec::json`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rec(Vec<(String, Cell)>);

impl Rec {
    /// An empty record.
    pub fn new() -> Rec {
        Rec::default()
    }
    fn with(mut self, col: &str, cell: Cell) -> Rec {
        self.0.push((col.to_string(), cell));
        self
    }
    /// A text cell.
    pub fn text(self, col: &str, v: impl std::fmt::Display) -> Rec {
        self.with(col, Cell::Text(v.to_string()))
    }
    /// An integer cell.
    pub fn int(self, col: &str, v: impl TryInto<i64>) -> Rec {
        self.with(col, Cell::Int(v.try_into().unwrap_or(i64::MAX)))
    }
    /// A number with `prec` decimals; `None` shows `-` (JSON `null`).
    pub fn num(self, col: &str, v: impl Into<Option<f64>>, prec: u8) -> Rec {
        self.with(col, Cell::Num(v.into().filter(|x| x.is_finite()), Fmt::Fixed(prec)))
    }
    /// A fraction shown as a percentage with one decimal.
    pub fn pct(self, col: &str, v: impl Into<Option<f64>>) -> Rec {
        self.with(col, Cell::Num(v.into().filter(|x| x.is_finite()), Fmt::Pct(1)))
    }
    /// A ratio shown as `1.48x`.
    pub fn times(self, col: &str, v: impl Into<Option<f64>>) -> Rec {
        self.with(col, Cell::Num(v.into().filter(|x| x.is_finite()), Fmt::Times(2)))
    }
    /// `yes` / `no`.
    pub fn flag(self, col: &str, v: bool) -> Rec {
        self.text(col, if v { "yes" } else { "no" })
    }
    /// A JSON-only field.
    pub fn json(self, key: &str, v: impl Serialize) -> Rec {
        self.with(key, Cell::Json(serde_json::to_value(v).unwrap_or(Value::Null)))
    }
    /// The number in column `col`.
    pub fn get(&self, col: &str) -> Option<f64> {
        self.0.iter().find(|(c, _)| c == col).and_then(|(_, v)| match v {
            Cell::Num(x, _) => *x,
            Cell::Int(i) => Some(*i as f64),
            _ => None,
        })
    }
    /// The text in column `col`.
    pub fn get_text(&self, col: &str) -> Option<&str> {
        self.0.iter().find(|(c, _)| c == col).and_then(|(_, v)| match v {
            Cell::Text(t) => Some(t.as_str()),
            _ => None,
        })
    }
    fn shown(&self) -> impl Iterator<Item = (&str, String)> {
        self.0.iter().filter_map(|(c, v)| match v {
            Cell::Text(t) => Some((c.as_str(), t.clone())),
            Cell::Int(i) => Some((c.as_str(), i.to_string())),
            Cell::Num(x, f) => Some((c.as_str(), x.map_or_else(|| "-".to_string(), |x| f.show(x)))),
            Cell::Json(_) => None,
        })
    }
    /// The record as a JSON object.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        for (c, v) in &self.0 {
            let val = match v {
                Cell::Text(t) => Value::from(t.as_str()),
                Cell::Int(i) => Value::from(*i),
                Cell::Num(x, _) => x.map_or(Value::Null, Value::from),
                Cell::Json(j) => {
                    m.insert(c.clone(), j.clone());
                    continue;
                }
            };
            m.insert(json_key(c), val);
        }
        Value::Object(m)
    }
}

/// A column name as a JSON key: `vec4/DtoD %` → `vec4_dtod_pct`.
pub fn json_key(col: &str) -> String {
    let mut k = String::new();
    for ch in col.replace('%', " pct ").chars() {
        if ch.is_ascii_alphanumeric() {
            k.push(ch.to_ascii_lowercase());
        } else if !k.ends_with('_') {
            k.push('_');
        }
    }
    k.trim_matches('_').to_string()
}

/// A goal's verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Goal {
    /// What is required.
    pub goal: String,
    /// `MET`, `NOT MET` or `NOT EVALUATED`.
    pub status: &'static str,
    /// The numbers behind it.
    pub detail: String,
}

impl Goal {
    /// A verdict from a yes/no (`None`: not evaluated) and its numbers.
    pub fn new(goal: impl Into<String>, met: Option<bool>, detail: impl Into<String>) -> Goal {
        let status = match met {
            Some(true) => "MET",
            Some(false) => "NOT MET",
            None => "NOT EVALUATED",
        };
        Goal { goal: goal.into(), status, detail: detail.into() }
    }

    /// The worst of `cases` (value, where) must be at least `target` (`higher = true`) or at most it: the detail names
    /// the worst case (`min 97.1% at 512 MiB`), or `none` (nothing measured) is said.
    pub fn worst(
        goal: impl Into<String>,
        cases: impl IntoIterator<Item = (f64, String)>,
        target: f64,
        higher: bool,
        fmt: Fmt,
        none: &str,
    ) -> Goal {
        let worst = cases
            .into_iter()
            .filter(|(v, _)| !v.is_nan())
            .min_by(|a, b| if higher { a.0.total_cmp(&b.0) } else { b.0.total_cmp(&a.0) });
        match worst {
            Some((v, at)) => {
                let met = if higher { v >= target } else { v <= target };
                let word = if higher { "min" } else { "max" };
                let at = if at.is_empty() { at } else { format!(" at {at}") };
                Goal::new(goal, Some(met), format!("{word} {}{at}", fmt.show(v)))
            }
            None => Goal::new(goal, None, none),
        }
    }

    /// `goal <what>: <STATUS> (<detail>)`.
    pub fn line(&self) -> String {
        format!("goal {}: {} ({})", self.goal, self.status, self.detail)
    }
}

/// A table of a run, by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tab(usize);

/// What a run shows, in order: lines, and tables (JSON name, title, cases).
#[derive(Clone, Debug)]
enum Block {
    Line(String),
    Table(String, String, Vec<Rec>),
}

/// What a run wrote: `<out>/<suite>.json` holds it. One schema for every suite.
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    /// The suite's name.
    pub suite: &'static str,
    /// The device ([`device_summary`]).
    pub device: Value,
    /// How each figure was measured.
    pub settings: Settings,
    /// What the figures mean.
    pub units: &'static str,
    /// The suite's own parameters (sizes, policies, options).
    pub params: Map<String, Value>,
    /// The DtoD references measured, by size.
    pub dtod: Vec<DtodReference>,
    /// The tables, each a list of case objects.
    pub tables: Vec<Value>,
    /// Lines printed beside the tables.
    pub notes: Vec<String>,
    /// The goals' verdicts.
    pub goals: Vec<Goal>,
    /// The SVG files written.
    pub plots: Vec<PathBuf>,
}

impl Record {
    /// The rows of table `name` (empty if it has none).
    pub fn rows(&self, name: &str) -> &[Value] {
        self.tables.iter().find(|t| t["name"] == name).and_then(|t| t["rows"].as_array()).map_or(&[], Vec::as_slice)
    }
}

/// One suite's run: the GPU, the settings, and everything it records.
pub struct Run<'g> {
    /// The device.
    pub gpu: &'g Gpu,
    /// Warm-up, samples, batching.
    pub settings: Settings,
    /// `--quick`.
    pub quick: bool,
    info: SuiteInfo,
    units: &'static str,
    out: PathBuf,
    blocks: Vec<Block>,
    params: Map<String, Value>,
    goals: Vec<Goal>,
    dtod: Vec<DtodReference>,
    plots: Vec<PathBuf>,
    bar: ProgressBar,
}

impl<'g> Run<'g> {
    fn new<S: Suite>(gpu: &'g Gpu, suite: &S) -> Run<'g> {
        let c = suite.common();
        let reps = c.reps.unwrap_or(if c.quick { S::REPS.1 } else { S::REPS.0 });
        Run {
            gpu,
            settings: Settings { warmup: c.warmup, reps, ..Settings::default() },
            quick: c.quick,
            info: S::INFO,
            units: S::UNITS,
            out: c.out.clone(),
            blocks: Vec::new(),
            params: Map::new(),
            goals: Vec::new(),
            dtod: Vec::new(),
            plots: Vec::new(),
            bar: ProgressBar::hidden(),
        }
    }

    /// `given`, or the full run's default, or the quick run's.
    pub fn pick<T>(&self, given: Option<T>, full: T, quick: T) -> T {
        given.unwrap_or(if self.quick { quick } else { full })
    }

    /// Records a parameter of the run (JSON `params`).
    pub fn param(&mut self, key: &str, v: impl Serialize) {
        self.params.insert(key.to_string(), serde_json::to_value(v).unwrap_or(Value::Null));
    }

    /// A line printed at this place among the tables (and kept in the JSON).
    pub fn line(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Line(text.into()));
    }

    /// A new table at this place (`name`: its JSON name; `title`: a line printed above it, may be empty).
    pub fn table(&mut self, name: &str, title: impl Into<String>) -> Tab {
        self.blocks.push(Block::Table(name.to_string(), title.into(), Vec::new()));
        Tab(self.blocks.len() - 1)
    }

    /// Appends a case to table `t`.
    pub fn row(&mut self, t: Tab, r: Rec) {
        if let Block::Table(_, _, rows) = &mut self.blocks[t.0] {
            rows.push(r);
        }
    }

    /// The cases of table `t` so far.
    pub fn rows(&self, t: Tab) -> &[Rec] {
        match &self.blocks[t.0] {
            Block::Table(_, _, rows) => rows,
            Block::Line(_) => &[],
        }
    }

    /// Records a goal's verdict.
    pub fn goal(&mut self, g: Goal) {
        self.goals.push(g);
    }

    /// Measures the operation `op(i)` queues with the run's settings.
    pub fn measure(&self, op: impl FnMut(usize) -> BenchResult<()>) -> BenchResult<Stats> {
        harness::measure(self.gpu, &self.settings, op)
    }

    /// The crate's kernel, then `twin`'s where given: each run once (`launch`, which names the kernel) on the poisoned
    /// `out`, whose values `check` judges (`Some`: what is wrong), then timed: (kernel, timing, twin's).
    pub fn verified<T: DeviceCopy + bytemuck::Pod, K: Into<String>>(
        &self,
        out: &mut DeviceViewMut<'_, T>,
        twin: Option<&PtxModule>,
        mut launch: impl FnMut(Option<&PtxModule>, &mut DeviceViewMut<'_, T>) -> BenchResult<K>,
        mut check: impl FnMut(&str, Vec<T>) -> Option<String>,
    ) -> BenchResult<(String, Stats, Option<Stats>)> {
        let mut time = |m: Option<&PtxModule>| -> BenchResult<(K, Stats)> {
            out.fill_bytes(POISON)?;
            let kernel = launch(m, out)?;
            if let Some(wrong) = check(if m.is_some() { "C++ twin" } else { "Rust" }, out.to_vec()?) {
                return Err(self.fail(wrong));
            }
            Ok((kernel, self.measure(|_| launch(m, out).map(drop))?))
        };
        let (kernel, stats) = time(None)?;
        Ok((kernel.into(), stats, twin.map(|m| time(Some(m)).map(|t| t.1)).transpose()?))
    }

    /// Times `op(i, &mut outs[i])` over `outs` in rotation, then poisons `outs[0]`, runs `op(0, ..)` once more, reads
    /// `outs[0]` back into `got` and checks it against `want` (`what` names the case): the statistics and that last
    /// call's result.
    pub fn measure_checked<T: DeviceCopy + bytemuck::Pod + PartialEq + std::fmt::Debug + Send + Sync, R>(
        &self,
        outs: &mut [DeviceBuffer<T>],
        what: &str,
        want: &[T],
        got: &mut Vec<T>,
        mut op: impl FnMut(usize, &mut DeviceBuffer<T>) -> Result<R, crate::Error>,
    ) -> BenchResult<(Stats, R)> {
        let n = outs.len();
        let stats = self.measure(|i| Ok(op(i % n, &mut outs[i % n]).map(drop)?))?;
        outs[0].fill_bytes(POISON)?;
        let last = op(0, &mut outs[0])?;
        got.resize(outs[0].len(), T::zeroed());
        outs[0].copy_to_host(got)?;
        self.check(what, got, want)?;
        Ok((stats, last))
    }

    /// The DtoD reference for copies of `bytes` (measured once per size).
    pub fn dtod(&mut self, bytes: u64) -> BenchResult<DtodReference> {
        if let Some(d) = self.dtod.iter().find(|d| d.bytes == bytes / 4 * 4) {
            return Ok(*d);
        }
        self.tick(&format!("DtoD reference, {}", crate::text::human_bytes(bytes)));
        let d = harness::measure_dtod(self.gpu, &self.settings, bytes)?;
        self.dtod.push(d);
        Ok(d)
    }

    /// True when `pool_bytes` of buffers fit in 2× the L2 cache: figures over them measure the cache, not DRAM.
    pub fn l2_resident(&self, pool_bytes: u64) -> bool {
        pool_bytes < 2 * u64::from(self.gpu.info().l2_bytes)
    }

    /// Shows a progress bar of `len` steps on stderr (hidden when stderr is not a terminal).
    pub fn progress(&mut self, len: usize) {
        self.bar = ProgressBar::new(len as u64);
        let style = format!("{} {{bar:30}} {{pos}}/{{len}} {{msg}} [{{elapsed}}]", self.info.name);
        self.bar.set_style(ProgressStyle::with_template(&style).unwrap_or_else(|_| ProgressStyle::default_bar()));
    }

    /// Sets the progress message.
    pub fn tick(&self, msg: &str) {
        self.bar.set_message(msg.to_string());
    }

    /// One progress step done.
    pub fn inc(&self) {
        self.bar.inc(1);
    }

    /// A note on stderr (around the progress bar).
    pub fn warn(&self, msg: &str) {
        self.bar.suspend(|| eprintln!("{}: {msg}", self.info.name));
    }

    /// The error of a wrong output.
    pub fn fail(&self, message: impl Into<String>) -> BenchError {
        BenchError::Verification { suite: self.info.name, message: message.into() }
    }

    /// An options error.
    pub fn bad_options(&self, message: impl Into<String>) -> BenchError {
        BenchError::Options(message.into())
    }

    /// Checks `got` against `want` element for element: the error names the
    /// first difference, and says when it still holds the poison.
    pub fn check<T>(&self, what: &str, got: &[T], want: &[T]) -> BenchResult<()>
    where
        T: bytemuck::Pod + PartialEq + std::fmt::Debug + Send + Sync,
    {
        match crate::reference::first_mismatch(got, want)? {
            None => Ok(()),
            Some((i, g, w)) => {
                Err(self.fail(format!("{what}: element {i} is {g:?}, the reference is {w:?}{}", poisoned(&g))))
            }
        }
    }

    /// An SVG plot of `series` against sizes in bytes (log2 axis), written as `<out>/<file>.svg`.
    pub fn plot(&mut self, file: &str, title: &str, x: &str, y: &str, series: &[Series]) -> BenchResult<()> {
        self.plot_scaled(file, title, (x, y), series, Scale::Log2Bytes)
    }

    /// The same with a linear x axis.
    pub fn plot_linear(&mut self, file: &str, title: &str, x: &str, y: &str, series: &[Series]) -> BenchResult<()> {
        self.plot_scaled(file, title, (x, y), series, Scale::Linear)
    }

    fn plot_scaled(
        &mut self,
        file: &str,
        title: &str,
        xy: (&str, &str),
        s: &[Series],
        scale: Scale,
    ) -> BenchResult<()> {
        let path = self.out.join(format!("{file}.svg"));
        report::plot_svg(&path, title, xy, s, scale)?;
        self.plots.push(path);
        Ok(())
    }

    /// A timeline SVG of copy and kernel spans.
    pub fn timeline(&mut self, file: &str, title: &str, runs: &[TimelineRun<'_>]) -> BenchResult<()> {
        let path = self.out.join(format!("{file}.svg"));
        report::draw_timeline(&path, title, runs)?;
        self.plots.push(path);
        Ok(())
    }

    fn finish(self) -> BenchResult<Record> {
        self.bar.finish_and_clear();
        let device = device_summary(self.gpu);
        println!("{} on {} ({})", self.info.about, self.gpu.info().name, self.units);
        let (mut notes, mut tables) = (Vec::new(), Vec::new());
        for b in &self.blocks {
            match b {
                Block::Line(l) => {
                    println!("{l}");
                    notes.push(l.clone());
                }
                Block::Table(name, title, rows) => {
                    if !title.is_empty() {
                        println!("{title}");
                    }
                    if !rows.is_empty() {
                        println!("{}", render(rows));
                    }
                    let mut t =
                        serde_json::json!({ "name": name, "rows": rows.iter().map(Rec::to_json).collect::<Vec<_>>() });
                    if !title.is_empty() {
                        t["title"] = Value::from(title.as_str());
                    }
                    tables.push(t);
                }
            }
        }
        for g in &self.goals {
            println!("{}", g.line());
        }
        let record = Record {
            suite: self.info.name,
            device,
            settings: self.settings,
            units: self.units,
            params: self.params,
            dtod: self.dtod,
            tables,
            notes,
            goals: self.goals,
            plots: self.plots,
        };
        let json = self.out.join(format!("{}.json", self.info.name));
        report::write_json(&json, &record)?;
        let mut wrote: Vec<String> = record.plots.iter().map(|p| p.display().to_string()).collect();
        wrote.insert(0, json.display().to_string());
        println!("wrote {}", wrote.join(", "));
        Ok(record)
    }
}

/// ` (never written: still the poison)` when `v`'s bytes are all [`POISON`].
fn poisoned<T: bytemuck::Pod>(v: &T) -> &'static str {
    if bytemuck::bytes_of(v).iter().all(|&b| b == POISON) { " (never written: still the poison)" } else { "" }
}

/// The rows as a text table: a column per cell name in first-seen order,
/// `-` where a row lacks it; columns of text alone are left-aligned.
pub fn render(rows: &[Rec]) -> Table {
    let mut cols: Vec<&str> = Vec::new();
    for r in rows {
        for (c, _) in r.shown() {
            if !cols.contains(&c) {
                cols.push(c);
            }
        }
    }
    let mut t = Table::new(cols.iter().copied());
    for r in rows {
        let cells: Vec<(&str, String)> = r.shown().collect();
        t.row(cols.iter().map(|c| cells.iter().find(|(n, _)| n == c).map_or("-".to_string(), |(_, v)| v.clone())));
    }
    for (i, c) in cols.iter().enumerate() {
        let text = rows
            .iter()
            .all(|r| r.0.iter().all(|(n, v)| n != c || matches!(v, Cell::Text(t) if t.parse::<f64>().is_err())));
        t.align(i, if text { Align::Left } else { Align::Right });
    }
    t
}

/// Runs suite `s` on `gpu`: measures, prints its tables, notes and goals,
/// writes `<out>/<suite>.json` and its plots; returns the record.
pub fn execute<S: Suite>(gpu: &Gpu, s: &S) -> BenchResult<Record> {
    if s.common().reps == Some(0) {
        return Err(BenchError::Options("--reps must be at least 1".into()));
    }
    let mut run = Run::new(gpu, s);
    if let Err(e) = s.run(&mut run) {
        run.bar.abandon();
        return Err(e);
    }
    run.finish()
}

/// A suite's options from command-line words (as after `coalesce bench
/// <suite>`), for programs that run a suite themselves.
pub fn parse<S: Suite>(words: &[&str]) -> Result<S, clap::Error> {
    let cmd = S::augment_args(clap::Command::new(S::INFO.name));
    let m = cmd.try_get_matches_from(std::iter::once(S::INFO.name).chain(words.iter().copied()))?;
    S::from_arg_matches(&m)
}

/// `f`'s host wall-clock time (ms) and result.
pub fn wall_ms<T>(f: impl FnOnce() -> BenchResult<T>) -> BenchResult<(f64, T)> {
    let t0 = std::time::Instant::now();
    let out = f()?;
    Ok((t0.elapsed().as_secs_f64() * 1e3, out))
}

/// `warmup` untimed calls of `f`, then `reps` timed ones: the stats of the times (ms) `f` returns, and its results.
pub fn wall_stats<T>(
    what: &str,
    (warmup, reps): (usize, usize),
    mut f: impl FnMut() -> BenchResult<(f64, T)>,
) -> BenchResult<(Stats, Vec<T>)> {
    let runs = (0..warmup + reps).map(|_| f()).collect::<BenchResult<Vec<_>>>()?;
    let (ms, out): (Vec<f64>, Vec<T>) = runs.into_iter().skip(warmup).unzip();
    let unusable = || BenchError::Options(format!("{what}: unusable times {ms:?}"));
    Ok((Stats::from_samples(&ms, 1).ok_or_else(unusable)?, out))
}

/// The powers of two in `min..=max`.
pub fn pow2_sizes(min: u64, max: u64) -> Vec<u64> {
    (0..64).map(|e| 1u64 << e).filter(|&s| s >= min && s <= max).collect()
}

/// `268435456` or `2^28`: an element count on the command line.
pub fn parse_elems(text: &str) -> Result<u64, String> {
    let t = text.trim();
    match t.strip_prefix("2^") {
        Some(e) => e.parse::<u32>().ok().filter(|&e| e < 63).map(|e| 1u64 << e),
        None => t.parse::<u64>().ok(),
    }
    .ok_or_else(|| format!("`{text}` is not an element count (a number or 2^k)"))
}

/// A count as `usize`, or an options error naming it.
pub fn elems(n: u64) -> BenchResult<usize> {
    usize::try_from(n).map_err(|_| BenchError::Options(format!("{n} elements is too many")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_formats_sizes_and_poison() {
        assert_eq!(json_key("vec4/DtoD %"), "vec4_dtod_pct");
        assert_eq!(json_key("DtoD (GB/s)"), "dtod_gb_s");
        assert_eq!(json_key("ms"), "ms");
        assert_eq!(Fmt::Pct(1).show(0.9714), "97.1%");
        assert_eq!(Fmt::Times(2).show(1.4812), "1.48x");
        assert_eq!(Fmt::Fixed(3).show(2.0), "2.000");
        assert!(poisoned(&1.5f32).is_empty() && poisoned(&0u32).is_empty());
        assert!(!poisoned(&f32::from_bits(0xA5A5_A5A5)).is_empty());
        assert_eq!(pow2_sizes(3000, 9000), vec![4096, 8192]);
        assert_eq!(pow2_sizes(1 << 63, u64::MAX), vec![1 << 63]);
        assert!(pow2_sizes(5000, 6000).is_empty());
        assert_eq!(parse_elems("2^20"), Ok(1 << 20));
        assert_eq!(parse_elems(" 4096 "), Ok(4096));
        assert!(parse_elems("2^63").is_err() && parse_elems("x").is_err());
    }

    #[test]
    fn records_render_and_serialize() {
        let s = Stats::from_samples(&[1.0, 2.0], 1).unwrap();
        let rows = vec![
            Rec::new()
                .text("size", "64 KiB")
                .flag("L2?", true)
                .num("GB/s", 123.456, 1)
                .pct("% of DtoD", 0.5)
                .json("stats", s),
            Rec::new().text("size", "1 GiB").flag("L2?", false).num("GB/s", None, 1).times("x", 2.0).int("n", 7),
        ];
        let text = render(&rows).render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>(),
            ["size", "L2?", "GB/s", "%", "of", "DtoD", "x", "n"]
        );
        assert!(lines[2].starts_with("64 KiB") && lines[2].contains("123.5") && lines[2].contains("50.0%"), "{text}");
        assert!(lines[3].contains("2.00x") && lines[3].ends_with('7') && lines[3].contains(" - "), "{text}");
        let j = rows[0].to_json();
        assert_eq!(j["gb_s"], 123.456);
        assert_eq!(j["pct_of_dtod"], 0.5);
        assert_eq!(j["l2"], "yes");
        assert_eq!(j["stats"]["median_ms"], 1.5);
        assert!(rows[1].to_json()["gb_s"].is_null());
        assert_eq!(rows[0].get("% of DtoD"), Some(0.5));
        assert_eq!(rows[1].get("n"), Some(7.0));
        assert_eq!(rows[0].get_text("size"), Some("64 KiB"));
    }

    #[test]
    fn goals_name_the_worst_case() {
        let cases = vec![(0.97, "256 MiB".to_string()), (0.93, "1 GiB".to_string()), (0.99, "2 GiB".to_string())];
        let g = Goal::worst("vec4 >= 95% of DtoD", cases.clone(), 0.95, true, Fmt::Pct(1), "no size");
        assert_eq!(g.line(), "goal vec4 >= 95% of DtoD: NOT MET (min 93.0% at 1 GiB)");
        let g = Goal::worst(
            "twins <= 1.05x",
            vec![(1.02, String::new()), (1.04, "w = 7".into())],
            1.05,
            false,
            Fmt::Times(3),
            "",
        );
        assert_eq!(g.line(), "goal twins <= 1.05x: MET (max 1.040x at w = 7)");
        let g = Goal::worst("x", Vec::new(), 1.0, true, Fmt::Pct(1), "nothing large enough was measured");
        assert_eq!(g.line(), "goal x: NOT EVALUATED (nothing large enough was measured)");
    }
}
