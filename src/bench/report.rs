//! How benchmark results are written: pretty JSON records, SVG plots of figures against sizes (binary units) or small
//! whole numbers, and pipeline timelines. Bandwidths use decimal units (1 GB = 1e9 bytes).

use std::fmt;
use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;

use super::transfer::SpanRecord;
use super::{BenchError, BenchResult};
use crate::Stage;
use crate::text::human_bytes;

fn create_parent(path: &Path) -> BenchResult<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => {
            std::fs::create_dir_all(dir).map_err(|source| BenchError::Output { path: dir.to_path_buf(), source })
        }
        _ => Ok(()),
    }
}

/// Writes `value` as pretty-printed JSON to `path`, creating its parent directories.
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
    /// The points, in any order (drawn sorted by x). Points with x ≤ 0 or a non-finite coordinate are left out.
    pub points: Vec<(f64, f64)>,
}

/// Line colours, distinguishable with the common colour-vision deficiencies (Okabe–Ito).
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

/// Most x-axis labels drawn; ticks are thinned to stay below.
const MAX_X_LABELS: usize = 14;

/// How a plot's x axis is scaled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Base 2 logarithmic, x a size in bytes: ticks at powers of two
    /// labelled "4K", "1M", "1G"; points with x ≤ 0 are left out.
    Log2Bytes,
    /// Linear, x small whole numbers (offsets, strides): every whole number labelled when there are few.
    Linear,
}

/// Plots `series` against an x axis of `scale` and a linear y axis from 0, one coloured line with point markers per
/// series, and a legend, into an SVG file at `path` (parent directories are created). Points with a non-finite
/// coordinate are left out.
///
/// Lines of `title` after the first are drawn smaller, as subtitles. The SVG holds `<text>` elements rendered by the
/// viewer: no font is needed to write it.
pub fn plot_svg(
    path: impl AsRef<Path>,
    title: &str,
    axes: (&str, &str),
    series: &[Series],
    scale: Scale,
) -> BenchResult<()> {
    write_plot(path.as_ref(), |p| draw_plot(p, title, axes, series, scale))
}

/// Creates `path`'s parent directories, then lets `draw` write the file.
fn write_plot(path: &Path, draw: impl FnOnce(&Path) -> Result<(), String>) -> BenchResult<()> {
    create_parent(path)?;
    draw(path).map_err(|e| BenchError::Output { path: path.to_path_buf(), source: std::io::Error::other(e) })
}

fn draw_plot(
    path: &Path,
    title: &str,
    (x_label, y_label): (&str, &str),
    series: &[Series],
    scale: Scale,
) -> Result<(), String> {
    let s = |e: &dyn fmt::Display| e.to_string();
    // A log axis is drawn as a linear one over log2(x), with whole-number ticks.
    let log = scale == Scale::Log2Bytes;
    let lines: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|se| {
            let keep = |&&(x, y): &&(f64, f64)| x.is_finite() && y.is_finite() && (!log || x > 0.0);
            let mut pts: Vec<(f64, f64)> =
                se.points.iter().filter(keep).map(|&(x, y)| (if log { x.log2() } else { x }, y)).collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (se.name.as_str(), pts)
        })
        .collect();
    let all = || lines.iter().flat_map(|(_, p)| p.iter().copied());
    let (mut x0, mut x1) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (x, _)| (lo.min(x), hi.max(x)));
    if !x0.is_finite() {
        (x0, x1) = if log { (10.0, 30.0) } else { (0.0, 1.0) };
    }
    if log {
        (x0, x1) = (x0.floor(), x1.ceil());
    }
    if x1 - x0 < 1.0 {
        x0 -= 1.0;
        x1 += 1.0;
    }
    let y_max = all().map(|(_, y)| y).fold(0.0f64, f64::max);
    let y_top = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
    // Whole-number ticks: plotters picks steps of 1, 2, 5, 10… with at most this many points.
    let whole = (x0.ceil() as i64..=x1.floor() as i64).count();
    let labels = whole.min(if log { MAX_X_LABELS } else { 2 * MAX_X_LABELS + 6 });
    let pad = if log { 0.0 } else { 0.5 };

    let root = SVGBackend::new(path, (1100, 650)).into_drawing_area();
    let area = titled_area(&root, title)?;
    let mut chart = ChartBuilder::on(&area)
        .margin(8)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(x0 - pad..x1 + pad, 0.0..y_top)
        .map_err(|e| s(&e))?;
    let x_fmt = |x: &f64| if log { axis_size(x.exp2().round() as u64) } else { format!("{x:.0}") };
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_labels(labels)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&|y: &f64| format!("{y:.0}"))
        .light_line_style(RGBColor(235, 235, 235))
        .y_max_light_lines(1)
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(|e| s(&e))?;
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
        legend(&mut chart, SeriesLabelPosition::LowerRight)?;
    }
    root.present().map_err(|e| s(&e))
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The legend box of `chart`'s labelled series, at `at`.
fn legend<'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    at: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())
}

/// The white plot area under the title (first line large, the rest as subtitles).
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
        let color = COLORS[[0, 2, 1][i]]; // HtoD blue, kernel green, DtoH vermillion
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
    legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(|e| s(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels() {
        let sizes = [512, 4096, 1 << 20, 1 << 30, 1536].map(axis_size);
        assert_eq!(sizes, ["512", "4K", "1M", "1G", "1.5 KiB"]);
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
        let title = "copy on a test device\nsizes up to 128 KiB are L2-resident";
        plot_svg(&path, title, ("size", "GB/s"), &series, Scale::Log2Bytes).unwrap();
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
        plot_svg(dir.join("none.svg"), "nothing", ("x", "y"), &[], Scale::Log2Bytes).unwrap();
        let one = [Series { name: "one".into(), points: vec![(4096.0, 0.0)] }];
        plot_svg(dir.join("one.svg"), "one", ("x", "y"), &one, Scale::Log2Bytes).unwrap();
        assert!(std::fs::read_to_string(dir.join("one.svg")).unwrap().contains("one"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn linear_plot_keeps_zero_and_labels_whole_numbers() {
        let dir = temp_dir("svg-linear");
        let path = dir.join("offsets.svg");
        let series =
            [Series { name: "read_offset".into(), points: (0..=32).map(|o| (o as f64, 3000.0 - o as f64)).collect() }];
        plot_svg(&path, "offsets", ("offset (elements)", "GB/s"), &series, Scale::Linear).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        // Text elements hold their text on a line of its own; 1 and 31 can
        // only be x labels here (the y labels step by hundreds).
        for text in ["read_offset", "offset (elements)", "\n1\n", "\n31\n", "\n32\n", "GB/s"] {
            assert!(svg.contains(text), "missing {text}");
        }
        plot_svg(dir.join("empty.svg"), "nothing", ("x", "y"), &[], Scale::Linear).unwrap();
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
