//! How benchmark results are shown: plain-text tables for the terminal,
//! pretty JSON records, SVG plots of bandwidth against size, and byte sizes
//! written and read the way people write them ("4 KiB", "256MiB").
//!
//! Sizes use binary units (1 KiB = 1024 bytes); bandwidths use decimal ones
//! (1 GB = 1e9 bytes), as the rest of the benchmarks do.

use std::fmt;
use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;

use super::transfer::SpanRecord;
use super::{BenchError, BenchResult};
use crate::Stage;

/// A plain-text table: a header row and data rows of strings. By default
/// the first column is left-aligned (labels) and the others right-aligned
/// (numbers); [`Table::align`] changes a column.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    left: Vec<usize>,
}

/// How a table column's cells are padded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text starts at the column's left edge.
    Left,
    /// Text ends at the column's right edge.
    Right,
}

impl Table {
    /// A table with these column headers and no rows.
    pub fn new<I, S>(headers: I) -> Table
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Table { headers: headers.into_iter().map(Into::into).collect(), rows: Vec::new(), left: vec![0] }
    }

    /// Sets the alignment of column `column` (0-based).
    pub fn align(&mut self, column: usize, align: Align) -> &mut Table {
        self.left.retain(|&c| c != column);
        if align == Align::Left {
            self.left.push(column);
        }
        self
    }

    /// Appends a row. Missing cells render empty; extra cells add columns.
    pub fn row<I, S>(&mut self, cells: I) -> &mut Table
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    /// Number of data rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when the table has no data rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as text: header, a rule of dashes, the rows; columns
    /// separated by two spaces, no trailing spaces, no final newline.
    pub fn render(&self) -> String {
        let ncols = self.rows.iter().map(Vec::len).chain([self.headers.len()]).max().unwrap_or(0);
        let cell = |row: &[String], c: usize| row.get(c).map_or("", String::as_str).to_string();
        let mut widths = vec![0usize; ncols];
        for row in std::iter::once(&self.headers).chain(&self.rows) {
            for (c, w) in widths.iter_mut().enumerate() {
                *w = (*w).max(cell(row, c).chars().count());
            }
        }
        let line = |row: &[String]| {
            let cells: Vec<String> = (0..ncols)
                .map(|c| {
                    let text = cell(row, c);
                    let pad = " ".repeat(widths[c] - text.chars().count());
                    if self.left.contains(&c) { format!("{text}{pad}") } else { format!("{pad}{text}") }
                })
                .collect();
            cells.join("  ").trim_end().to_string()
        };
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        let mut out = vec![line(&self.headers), rule.join("  ")];
        out.extend(self.rows.iter().map(|r| line(r)));
        out.join("\n")
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

fn create_parent(path: &Path) -> BenchResult<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => {
            std::fs::create_dir_all(dir).map_err(|source| BenchError::Output { path: dir.to_path_buf(), source })
        }
        _ => Ok(()),
    }
}

/// Writes `value` as pretty-printed JSON to `path`, creating its parent
/// directories.
pub fn write_json(path: impl AsRef<Path>, value: &impl Serialize) -> BenchResult<()> {
    let path = path.as_ref();
    create_parent(path)?;
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| BenchError::Output { path: path.to_path_buf(), source: e.into() })?;
    text.push('\n');
    std::fs::write(path, text).map_err(|source| BenchError::Output { path: path.to_path_buf(), source })
}

/// One line of a plot: `(x, y)` points, x a size in bytes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// The points, in any order (drawn sorted by x). Points with x ≤ 0 or a
    /// non-finite coordinate are left out.
    pub points: Vec<(f64, f64)>,
}

/// Line colours, distinguishable with the common colour-vision
/// deficiencies (Okabe–Ito).
const COLORS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(0, 0, 0),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(240, 228, 66),
];

/// Most x-axis labels drawn; powers of two are thinned to stay below.
const MAX_X_LABELS: usize = 14;

/// Plots `series` against a base-2 logarithmic x axis of sizes in bytes
/// (ticks labelled "4K", "1M", "1G") and a linear y axis from 0, one
/// coloured line with point markers per series, and a legend, into an SVG
/// file at `path` (parent directories are created).
///
/// Lines of `title` after the first are drawn smaller, as subtitles. The
/// SVG holds `<text>` elements rendered by the viewer: no font is needed to
/// write it.
pub fn plot_svg(
    path: impl AsRef<Path>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> BenchResult<()> {
    write_plot(path.as_ref(), |p| draw_plot(p, title, x_label, y_label, series))
}

/// Creates `path`'s parent directories, then lets `draw` write the file.
fn write_plot(path: &Path, draw: impl FnOnce(&Path) -> Result<(), String>) -> BenchResult<()> {
    create_parent(path)?;
    draw(path).map_err(|e| BenchError::Output { path: path.to_path_buf(), source: std::io::Error::other(e) })
}

/// The points of each series that `keep` accepts (and whose coordinates
/// are finite), sorted by x.
fn sorted_lines(series: &[Series], keep: impl Fn(f64) -> bool) -> Vec<(&str, Vec<(f64, f64)>)> {
    series
        .iter()
        .map(|se| {
            let mut pts: Vec<(f64, f64)> =
                se.points.iter().filter(|(x, y)| keep(*x) && x.is_finite() && y.is_finite()).copied().collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (se.name.as_str(), pts)
        })
        .collect()
}

/// The top of a y axis from 0: 10% above the largest value (1 if none).
fn y_top(lines: &[(&str, Vec<(f64, f64)>)]) -> f64 {
    let y_max = lines.iter().flat_map(|(_, p)| p.iter().map(|&(_, y)| y)).fold(0.0f64, f64::max);
    if y_max > 0.0 { y_max * 1.1 } else { 1.0 }
}

fn draw_plot(path: &Path, title: &str, x_label: &str, y_label: &str, series: &[Series]) -> Result<(), String> {
    let s = |e: &dyn fmt::Display| e.to_string();
    // Axis limits are found in log2 space, ticks are whole powers of two.
    let lines = sorted_lines(series, |x| x > 0.0);
    let all = || lines.iter().flat_map(|(_, p)| p.iter().copied());
    let (mut x0, mut x1) =
        all().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (x, _)| (lo.min(x.log2()), hi.max(x.log2())));
    if !x0.is_finite() {
        (x0, x1) = (10.0, 30.0);
    }
    let (mut x0, mut x1) = (x0.floor(), x1.ceil());
    if x1 - x0 < 1.0 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let y_top = y_top(&lines);

    let exps: Vec<i64> = ((x0 as i64)..=(x1 as i64)).collect();
    let step = exps.len().div_ceil(MAX_X_LABELS).max(1);
    let ticks: Vec<f64> =
        exps.iter().filter(|e| (**e - exps[0]) % step as i64 == 0).map(|&e| (e as f64).exp2()).collect();

    let root = SVGBackend::new(path, (1100, 650)).into_drawing_area();
    let area = titled_area(&root, title)?;
    let mut chart = ChartBuilder::on(&area)
        .margin(8)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d((x0.exp2()..x1.exp2()).log_scale().base(2.0).with_key_points(ticks), 0.0..y_top)
        .map_err(|e| s(&e))?;
    let x_fmt = |x: &f64| axis_size(x.round() as u64);
    finish(&root, &mut chart, (x_label, y_label), &x_fmt, None, &lines)
}

/// Axes (labels, `x_fmt` ticks, at most `x_labels` of them when given),
/// the lines and the legend on `chart`; then the file is written.
fn finish<'a, X: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>>(
    root: &Area<'a>,
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    (x_label, y_label): (&str, &str),
    x_fmt: &dyn Fn(&f64) -> String,
    x_labels: Option<usize>,
    lines: &[(&str, Vec<(f64, f64)>)],
) -> Result<(), String> {
    let s = |e: &dyn fmt::Display| e.to_string();
    let y_fmt = |y: &f64| format!("{y:.0}");
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_label)
        .y_desc(y_label)
        .x_label_formatter(x_fmt)
        .y_label_formatter(&y_fmt)
        .light_line_style(RGBColor(235, 235, 235))
        .y_max_light_lines(1)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16));
    if let Some(n) = x_labels {
        mesh.x_labels(n);
    }
    mesh.draw().map_err(|e| s(&e))?;
    draw_lines(chart, lines)?;
    root.present().map_err(|e| s(&e))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The white plot area under the title (first line large, the rest as
/// subtitles).
fn titled_area<'a>(root: &Area<'a>, title: &str) -> Result<Area<'a>, String> {
    let s = |e: &dyn fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| s(&e))?;
    let mut lines_of_title = title.lines();
    let mut area = root.margin(10, 10, 10, 20);
    if let Some(first) = lines_of_title.next() {
        area = area.titled(first, ("sans-serif", 24)).map_err(|e| s(&e))?;
    }
    for sub in lines_of_title {
        area = area.titled(sub, ("sans-serif", 15).into_font().color(&RGBColor(80, 80, 80))).map_err(|e| s(&e))?;
    }
    Ok(area)
}

/// One coloured line with point markers per series, and the legend.
fn draw_lines<'a, X: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    lines: &[(&str, Vec<(f64, f64)>)],
) -> Result<(), String> {
    let s = |e: &dyn fmt::Display| e.to_string();
    for (i, (name, pts)) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(|e| s(&e))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(2)));
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(|e| s(&e))?;
    }
    if !lines.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(160, 160, 160))
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(|e| s(&e))?;
    }
    Ok(())
}

/// Plots `series` against a linear x axis (small whole numbers such as
/// offsets or strides, each labelled when there are few) and a linear y
/// axis from 0, otherwise as [`plot_svg`]. Points with a non-finite
/// coordinate are left out.
pub fn plot_svg_linear(
    path: impl AsRef<Path>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
) -> BenchResult<()> {
    write_plot(path.as_ref(), |p| draw_linear(p, title, x_label, y_label, series))
}

fn draw_linear(path: &Path, title: &str, x_label: &str, y_label: &str, series: &[Series]) -> Result<(), String> {
    let s = |e: &dyn fmt::Display| e.to_string();
    let lines = sorted_lines(series, |_| true);
    let all = || lines.iter().flat_map(|(_, p)| p.iter().copied());
    let (mut x0, mut x1) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (x, _)| (lo.min(x), hi.max(x)));
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 - x0 < 1.0 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let y_top = y_top(&lines);
    // One label per whole number when they fit, else about MAX_X_LABELS.
    let labels = ((x1 - x0).round() as usize + 1).min(2 * MAX_X_LABELS + 6);

    let root = SVGBackend::new(path, (1100, 650)).into_drawing_area();
    let area = titled_area(&root, title)?;
    let mut chart = ChartBuilder::on(&area)
        .margin(8)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(x0 - 0.5..x1 + 0.5, 0.0..y_top)
        .map_err(|e| s(&e))?;
    finish(&root, &mut chart, (x_label, y_label), &|x: &f64| format!("{x:.0}"), Some(labels), &lines)
}

const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];

/// A byte count in binary units: "512 B", "4 KiB", "256 MiB", "2 GiB";
/// one decimal where the count is not a whole number of the unit
/// ("1.5 KiB").
pub fn human_bytes(bytes: u64) -> String {
    let mut unit = 0;
    while unit + 1 < UNITS.len() && bytes >= 1u64 << (10 * (unit + 1)) {
        unit += 1;
    }
    let scale = 1u64 << (10 * unit);
    if bytes.is_multiple_of(scale) {
        format!("{} {}", bytes / scale, UNITS[unit])
    } else {
        format!("{:.1} {}", bytes as f64 / scale as f64, UNITS[unit])
    }
}

/// A compact axis label for a size: "512", "4K", "1M", "1G" (falls back to
/// [`human_bytes`] for sizes that are not whole units).
pub fn axis_size(bytes: u64) -> String {
    let full = human_bytes(bytes);
    match full.split_once(' ') {
        Some((n, "B")) if !n.contains('.') => n.to_string(),
        Some((n, unit)) if !n.contains('.') => format!("{n}{}", &unit[..1]),
        _ => full,
    }
}

/// Parses a byte size: a whole number, optionally followed by a binary
/// unit `K`/`KiB`, `M`/`MiB`, `G`/`GiB`, `T`/`TiB` (any case, optional
/// space) or `B`. Decimal units (`KB`, `MB`, `GB`) are refused as
/// ambiguous.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = (&t[..split], t[split..].trim());
    if digits.is_empty() {
        return Err(format!("`{text}` is not a size (examples: 4096, 4KiB, 256MiB, 2GiB)"));
    }
    let n: u64 = digits.parse().map_err(|_| format!("`{text}`: number too large"))?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        "kb" | "mb" | "gb" | "tb" => {
            return Err(format!(
                "`{text}`: decimal units are ambiguous here; write binary units (KiB, MiB, GiB) or bytes"
            ));
        }
        _ => return Err(format!("`{text}`: unknown unit `{unit}` (use B, KiB, MiB, GiB, TiB)")),
    };
    n.checked_mul(1u64 << shift).ok_or_else(|| format!("`{text}` does not fit in 64 bits"))
}

/// Stage colours in the timeline (Okabe–Ito blue, green, vermillion).
const STAGE_COLORS: [RGBColor; 3] = [RGBColor(0, 114, 178), RGBColor(0, 158, 115), RGBColor(213, 94, 0)];

/// One run of a pipeline timeline: its name, its rows (streams, or
/// worker × slot) and its stage spans (`stream` indexes the row).
#[derive(Clone, Debug)]
pub struct TimelineRun<'a> {
    /// Label prefix of its rows.
    pub name: String,
    /// Rows.
    pub rows: usize,
    /// Spans.
    pub spans: &'a [SpanRecord],
}

/// A Gantt chart into an SVG file at `path` (parent directories are
/// created): one row per (run, stream), one bar per stage span.
pub fn draw_timeline(path: &Path, title: &str, runs: &[TimelineRun<'_>]) -> BenchResult<()> {
    write_plot(path, |p| draw_gantt(p, title, runs))
}

fn draw_gantt(path: &Path, title: &str, runs: &[TimelineRun<'_>]) -> Result<(), String> {
    let s = |e: &dyn std::fmt::Display| e.to_string();
    let mut rows: Vec<String> = Vec::new();
    let mut first_row = Vec::new();
    for r in runs {
        first_row.push(rows.len());
        rows.extend((0..r.rows).map(|k| format!("{} s{k}", r.name)));
    }
    let x_max = runs.iter().flat_map(|r| r.spans.iter().map(|t| t.end_ms)).fold(0.0f64, f64::max).max(1e-3) * 1.02;
    let height = 170 + 45 * rows.len() as u32;
    let root = SVGBackend::new(path, (1100, height)).into_drawing_area();
    let area = titled_area(&root, title)?;
    let n_rows = rows.len() as u32;
    let mut chart = ChartBuilder::on(&area)
        .margin(8)
        .x_label_area_size(45)
        .y_label_area_size(110)
        .build_cartesian_2d(0.0..x_max, (0..n_rows).into_segmented())
        .map_err(|e| s(&e))?;
    let label = |v: &SegmentValue<u32>| match v {
        SegmentValue::CenterOf(i) => rows.get(*i as usize).cloned().unwrap_or_default(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .x_desc("ms after the run's first event")
        .y_labels(rows.len())
        .y_label_formatter(&label)
        .disable_y_mesh()
        .light_line_style(RGBColor(235, 235, 235))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(|e| s(&e))?;
    for (i, stage) in Stage::ALL.into_iter().enumerate() {
        let color = STAGE_COLORS[i];
        let mut bars = Vec::new();
        for (r, run) in runs.iter().enumerate() {
            for t in run.spans.iter().filter(|t| t.stage == stage.name()) {
                let row = (first_row[r] + t.stream) as u32;
                let mut rect = Rectangle::new(
                    [(t.start_ms, SegmentValue::Exact(row)), (t.end_ms, SegmentValue::Exact(row + 1))],
                    color.mix(0.85).filled(),
                );
                rect.set_margin(6, 6, 0, 1);
                bars.push(rect);
            }
        }
        chart
            .draw_series(bars)
            .map_err(|e| s(&e))?
            .label(stage.name())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|e| s(&e))?;
    root.present().map_err(|e| s(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(4096), "4 KiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(256 << 20), "256 MiB");
        assert_eq!(human_bytes(2 << 30), "2 GiB");
        assert_eq!(human_bytes(3 << 40), "3 TiB");
        assert_eq!(human_bytes(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn axis_labels() {
        assert_eq!(axis_size(512), "512");
        assert_eq!(axis_size(4096), "4K");
        assert_eq!(axis_size(1 << 20), "1M");
        assert_eq!(axis_size(1 << 30), "1G");
        assert_eq!(axis_size(1536), "1.5 KiB");
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("4 kib"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("64B"), Ok(64));
        assert!(parse_size("4KB").unwrap_err().contains("ambiguous"));
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("1.5GiB").is_err());
        assert!(parse_size("4 parsecs").is_err());
        assert!(parse_size("99999999999TiB").is_err());
    }

    #[test]
    fn table_alignment() {
        let mut t = Table::new(["size", "GB/s", "note"]);
        t.row(["4 KiB", "12.5", "yes"]).row(["256 MiB", "3012.0"]);
        assert_eq!(t.len(), 2);
        let want = "size       GB/s  note\n-------  ------  ----\n4 KiB      12.5   yes\n256 MiB  3012.0";
        assert_eq!(t.render(), want);
        assert_eq!(t.to_string(), want);
        assert_eq!(Table::new(["a"]).render(), "a\n-");
        let mut kv = Table::new(["key", "value"]);
        kv.align(1, Align::Left).row(["threads", "1024"]).row(["L2", "50 MiB"]);
        assert_eq!(kv.render(), "key      value\n-------  ------\nthreads  1024\nL2       50 MiB");
        kv.align(0, Align::Right);
        assert!(kv.render().starts_with("    key  value"));
    }

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("coalesce-report-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn svg_plot_renders_without_fonts() {
        let dir = temp_dir("svg");
        let path = dir.join("nested/plot.svg");
        let sizes: Vec<f64> = (12..=31).map(|e| f64::from(1u32 << e.min(31))).collect();
        let series = vec![
            Series { name: "vec4".into(), points: sizes.iter().map(|&x| (x, x.log2() * 100.0)).collect() },
            Series { name: "cuMemcpyDtoD".into(), points: sizes.iter().map(|&x| (x, x.log2() * 90.0)).collect() },
            Series { name: "empty".into(), points: vec![(0.0, 1.0), (f64::NAN, 2.0)] },
        ];
        plot_svg(&path, "copy on a test device\nsizes up to 128 KiB are L2-resident", "size", "GB/s", &series).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        for text in ["copy on a test device", "L2-resident", "vec4", "cuMemcpyDtoD", "4K", "1M", "1G", "GB/s"] {
            assert!(svg.contains(text), "missing {text}");
        }
        assert!(svg.contains("<text") && svg.contains("<polyline"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn svg_plot_of_nothing_or_one_point() {
        let dir = temp_dir("svg-degenerate");
        plot_svg(dir.join("none.svg"), "nothing", "x", "y", &[]).unwrap();
        let one = [Series { name: "one".into(), points: vec![(4096.0, 0.0)] }];
        plot_svg(dir.join("one.svg"), "one", "x", "y", &one).unwrap();
        assert!(std::fs::read_to_string(dir.join("one.svg")).unwrap().contains("one"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn linear_plot_keeps_zero_and_labels_whole_numbers() {
        let dir = temp_dir("svg-linear");
        let path = dir.join("offsets.svg");
        let series =
            [Series { name: "read_offset".into(), points: (0..=32).map(|o| (o as f64, 3000.0 - o as f64)).collect() }];
        plot_svg_linear(&path, "offsets", "offset (elements)", "GB/s", &series).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        // Text elements hold their text on a line of its own; 1 and 31 can
        // only be x labels here (the y labels step by hundreds).
        for text in ["read_offset", "offset (elements)", "\n1\n", "\n31\n", "\n32\n", "GB/s"] {
            assert!(svg.contains(text), "missing {text}");
        }
        plot_svg_linear(dir.join("empty.svg"), "nothing", "x", "y", &[]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn json_is_pretty_and_dirs_are_created() {
        let dir = temp_dir("json");
        let path = dir.join("a/b/out.json");
        write_json(&path, &Series { name: "s".into(), points: vec![(1.0, 2.0)] }).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\n  \"name\": \"s\""), "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["points"][0][1], 2.0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
