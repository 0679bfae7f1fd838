//! Latency summaries from HdrHistogram, printed the same way by every benchmark.
//!
//! A benchmark records nanoseconds into a [`Recorder`], then prints one row per class with
//! [`print_header`] / [`Summary::print_row`], and a ratio against its raw baseline with
//! [`Summary::ratio_to`].

use hdrhistogram::Histogram;
use std::fmt::Write as _;
use std::time::Instant;

/// Records latencies in nanoseconds (1 ns .. 100 s, 3 significant digits).
#[derive(Debug, Clone)]
pub struct Recorder {
    hist: Histogram<u64>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// Return an empty recorder.
    pub fn new() -> Recorder {
        Recorder {
            hist: Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds"),
        }
    }

    /// Record one sample in nanoseconds (clamped into the histogram's range).
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
    }

    /// Add every sample of `other`.
    pub fn merge(&mut self, other: &Recorder) {
        // Same bounds on both sides (`new`), so adding cannot fail; saturate if it ever did.
        self.add_histogram(&other.hist);
    }

    /// Add every sample of histogram `h` (values outside this recorder's range saturate).
    pub fn add_histogram(&mut self, h: &Histogram<u64>) {
        if self.hist.add(h).is_err() {
            for v in h.iter_recorded() {
                self.hist
                    .saturating_record_n(v.value_iterated_to().max(1), v.count_at_value());
            }
        }
    }

    /// Return the number of samples.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// Return whether no sample was recorded.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// Return the underlying histogram.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// Return the summary of what was recorded under `name`.
    pub fn summary(&self, name: &str) -> Summary {
        let h = &self.hist;
        let q = |p: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(p)
            }
        };
        Summary {
            name: name.to_string(),
            n: h.len(),
            min: if h.is_empty() { 0 } else { h.min() },
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            p9999: q(0.9999),
            max: if h.is_empty() { 0 } else { h.max() },
            mean: if h.is_empty() { 0.0 } else { h.mean() },
        }
    }

    /// Return `(value_ns, cumulative_fraction)` points for a CDF plot.
    pub fn cdf_points(&self) -> Vec<(u64, f64)> {
        let n = self.hist.len().max(1) as f64;
        let mut acc = 0u64;
        let mut out = Vec::new();
        for v in self.hist.iter_recorded() {
            acc += v.count_since_last_iteration();
            out.push((v.value_iterated_to(), acc as f64 / n));
        }
        out
    }
}

/// Percentiles of one class of measurements, in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Class name.
    pub name: String,
    /// Samples.
    pub n: u64,
    /// Minimum.
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// 99.99th percentile.
    pub p9999: u64,
    /// Maximum.
    pub max: u64,
    /// Mean.
    pub mean: f64,
}

/// Print the column header matching [`Summary::row`].
pub fn print_header() {
    println!("{}", header());
}

/// Return the column header matching [`Summary::row`].
pub fn header() -> String {
    format!(
        "{:<34} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}   (µs)",
        "class", "n", "min", "p50", "p90", "p99", "p99.9", "p99.99", "max"
    )
}

fn us(ns: u64) -> String {
    format!("{:.2}", ns as f64 / 1000.0)
}

impl Summary {
    /// Return one table row, values in microseconds.
    pub fn row(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "{:<34} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            self.name,
            self.n,
            us(self.min),
            us(self.p50),
            us(self.p90),
            us(self.p99),
            us(self.p999),
            us(self.p9999),
            us(self.max)
        );
        s
    }

    /// Print [`Summary::row`].
    pub fn print_row(&self) {
        println!("{}", self.row());
    }

    /// Return the absolute jitter (max − min) in nanoseconds, as the partitioning paper defines it.
    pub fn abs_jitter(&self) -> u64 {
        self.max.saturating_sub(self.min)
    }

    /// Return a line comparing this class with `baseline` (p50 and p99 ratios).
    pub fn ratio_to(&self, baseline: &Summary) -> String {
        let r = |a: u64, b: u64| {
            if b == 0 {
                f64::NAN
            } else {
                a as f64 / b as f64
            }
        };
        format!(
            "{} vs {}: p50 ratio {}x, p99 ratio {}x",
            self.name,
            baseline.name,
            ratio_text(r(self.p50, baseline.p50)),
            ratio_text(r(self.p99, baseline.p99))
        )
    }
}

/// Format a ratio with 3 significant digits (`2.00`, `12.3`, `0.00123`; from 100 on every
/// integer digit: `1234`): with a fixed
/// two decimals a ratio below 0.005 printed as `0.00` (found by review). `NaN` (no baseline) and
/// an exact 0 print as such.
pub fn ratio_text(x: f64) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".into();
    }
    if x.abs() >= 99.95 {
        // Whole numbers keep every digit.
        return format!("{x:.0}");
    }
    // Round to 3 significant digits first, so that 9.996 prints as 10.0, not 10.00.
    let digits = |v: f64| v.abs().log10().floor() as i32;
    let scale = 10f64.powi(2 - digits(x));
    let rounded = (x * scale).round() / scale;
    let decimals = (2 - digits(rounded)).max(0) as usize;
    format!("{rounded:.decimals$}")
}

/// Measure the cost of one `Instant::now()` (CLOCK_MONOTONIC via vDSO) in nanoseconds (median).
pub fn clock_read_cost_ns() -> u64 {
    let mut r = Recorder::new();
    for _ in 0..10_000 {
        let a = Instant::now();
        let b = Instant::now();
        r.record(b.duration_since(a).as_nanos() as u64);
    }
    r.summary("clock").p50
}

/// Return a one-line description of the machine and the build, for the head of a report.
pub fn machine_line() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown cpu".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    format!(
        "machine: {model}, {cpus} cpus, linux {kernel}; partix {} ({})",
        env!("CARGO_PKG_VERSION"),
        option_env!("PARTIX_GIT_COMMIT").unwrap_or("commit unknown")
    )
}

/// Line colours of the plots, in series order (distinct for up to 24 series: the rtt bench's
/// five transports with their queuing and C API classes, 15, and its baselines, 8 at most in
/// one plot (raw cache-line, raw copy, the two raw slots, raw futex, raw UDP, raw TCP,
/// iceoryx2): 23; with fewer colours series were drawn alike, found by reviews).
const PALETTE: [plotters::style::RGBColor; 24] = {
    use plotters::style::{RGBColor, BLACK, BLUE, CYAN, GREEN, MAGENTA, RED};
    [
        BLACK,
        BLUE,
        RED,
        GREEN,
        MAGENTA,
        CYAN,
        RGBColor(255, 140, 0),
        RGBColor(128, 0, 128),
        RGBColor(128, 128, 128),
        RGBColor(139, 69, 19),
        RGBColor(0, 128, 128),
        RGBColor(255, 105, 180),
        RGBColor(85, 107, 47),
        RGBColor(70, 130, 180),
        RGBColor(220, 20, 60),
        RGBColor(0, 0, 128),
        RGBColor(184, 134, 11),
        RGBColor(0, 100, 0),
        RGBColor(199, 21, 133),
        RGBColor(95, 158, 160),
        RGBColor(128, 0, 0),
        RGBColor(154, 205, 50),
        RGBColor(106, 90, 205),
        RGBColor(210, 105, 30),
    ]
};

/// A CDF plot (as the papers draw them): one line per class, x = latency in µs up to the largest
/// `x_quantile` of the classes (× 1.1), y = cumulative fraction. Written as SVG to `path`.
///
/// # Errors
/// An I/O or drawing error.
pub fn plot_cdf(
    path: &std::path::Path,
    title: &str,
    x_desc: &str,
    series: &[(&str, &Recorder)],
    x_quantile: f64,
) -> anyhow::Result<()> {
    use plotters::prelude::*;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let xmax = series
        .iter()
        .filter(|(_, r)| !r.is_empty())
        .map(|(_, r)| r.histogram().value_at_quantile(x_quantile) as f64 / 1000.0)
        .fold(1.0f64, f64::max)
        * 1.1;
    let area = SVGBackend::new(path, (900, 560)).into_drawing_area();
    area.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&area)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0f64..xmax, 0f64..1f64)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("cumulative fraction")
        .draw()?;
    for (i, (name, r)) in series.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        let pts: Vec<(f64, f64)> = r
            .cdf_points()
            .into_iter()
            .map(|(ns, f)| (ns as f64 / 1000.0, f))
            .filter(|(x, _)| *x <= xmax)
            .collect();
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))?
            .label(name.to_string())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    area.present()?;
    Ok(())
}

/// Largest factor by which [`series_offset`] moves a series along the size axis: ±3 %, so that
/// series drawn at one size do not hide each other's bars, while the closest sizes the rtt bench
/// draws (56 and 64 B, 14 % apart) stay apart.
pub const SERIES_SPREAD: f64 = 1.03;

/// The factor by which series `i` of `n` is drawn moved along the (log) size axis: spread
/// evenly in log space from 1 / [`SERIES_SPREAD`] to [`SERIES_SPREAD`], the middle series in
/// place (1 with one series).
pub fn series_offset(i: usize, n: usize) -> f64 {
    if n < 2 {
        return 1.0;
    }
    let t = 2.0 * i as f64 / (n - 1) as f64 - 1.0;
    SERIES_SPREAD.powf(t)
}

/// The points [`plot_vs_size`] draws for each series: `(x, p50 µs, p99 µs)` in order of size,
/// `x` the size moved by the series' [`series_offset`]; the point, the line through it and its
/// p50–p99 bar are all drawn at that `x`.
pub fn vs_size_points(series: &[(String, Vec<(usize, Summary)>)]) -> Vec<Vec<(f64, f64, f64)>> {
    let n = series.len();
    series
        .iter()
        .enumerate()
        .map(|(i, (_, pts))| {
            let off = series_offset(i, n);
            let mut v: Vec<(f64, f64, f64)> = pts
                .iter()
                .map(|(sz, s)| {
                    (
                        *sz as f64 * off,
                        s.p50.max(1) as f64 / 1000.0,
                        s.p99.max(1) as f64 / 1000.0,
                    )
                })
                .collect();
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            v
        })
        .collect()
}

/// RTT vs message size (the RDMA sampling-port paper's fig. 2a): one line per class through its
/// p50 at each size, with a bar from p50 up to p99; log-scaled axes. Each series is drawn moved
/// by a few percent along the size axis ([`series_offset`]), its points and bars together, so
/// that the bars of classes at one size do not hide each other. Written as SVG to `path`.
///
/// # Errors
/// An I/O or drawing error.
pub fn plot_vs_size(
    path: &std::path::Path,
    title: &str,
    series: &[(String, Vec<(usize, Summary)>)],
) -> anyhow::Result<()> {
    use plotters::prelude::*;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let (mut xmin, mut xmax, mut ymin, mut ymax) = (f64::MAX, 1f64, f64::MAX, 0.001f64);
    for (size, s) in pts {
        xmin = xmin.min(*size as f64);
        xmax = xmax.max(*size as f64);
        ymin = ymin.min(s.p50.max(1) as f64 / 1000.0);
        ymax = ymax.max(s.p99.max(1) as f64 / 1000.0);
    }
    if xmin > xmax {
        xmin = 1.0;
    }
    if ymin > ymax {
        ymin = 0.001;
    }
    let area = SVGBackend::new(path, (900, 560)).into_drawing_area();
    area.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&area)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (xmin * 0.8..xmax * 1.25).log_scale(),
            (ymin * 0.7..ymax * 1.5).log_scale(),
        )?;
    chart
        .configure_mesh()
        .x_desc("message size (bytes)")
        .y_desc("round-trip time (µs)")
        .draw()?;
    let drawn = vs_size_points(series);
    for (i, ((name, _), pts)) in series.iter().zip(&drawn).enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        let line: Vec<(f64, f64)> = pts.iter().map(|&(x, p50, _)| (x, p50)).collect();
        chart
            .draw_series(LineSeries::new(line.clone(), c.stroke_width(2)))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart.draw_series(
            line.iter()
                .map(|&(x, y)| Circle::new((x, y), 3, c.filled())),
        )?;
        // Bars from p50 to p99 at the series' own points.
        chart.draw_series(
            pts.iter().map(|&(x, p50, p99)| {
                PathElement::new(vec![(x, p50), (x, p99)], c.stroke_width(1))
            }),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    area.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_percentiles_follow_the_samples() {
        let mut r = Recorder::new();
        for v in 1..=1000u64 {
            r.record(v * 1000);
        }
        let s = r.summary("x");
        assert_eq!(s.n, 1000);
        assert!((499_000..=501_000).contains(&s.p50), "{s:?}");
        assert!(s.min <= 1001 && s.max >= 999_000, "{s:?}");
        assert_eq!(s.abs_jitter(), s.max - s.min);
        let cdf = r.cdf_points();
        assert!((cdf.last().unwrap().1 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn plot_cdf_writes_an_svg_with_every_class() {
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        for v in 1..=100u64 {
            a.record(v * 1000);
            b.record(v * 2000);
        }
        let path = std::env::temp_dir()
            .join(format!("partix-report-{}", std::process::id()))
            .join("cdf.svg");
        plot_cdf(&path, "t", "x", &[("class-a", &a), ("class-b", &b)], 0.99).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("class-a") && svg.contains("class-b"));
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }

    #[test]
    fn plot_vs_size_writes_an_svg_with_every_class() {
        let mut a = Recorder::new();
        for v in 1..=100u64 {
            a.record(v * 100);
        }
        let series = vec![
            (
                "one-sided".to_string(),
                vec![(16, a.summary("x")), (4096, a.summary("y"))],
            ),
            ("raw UDP".to_string(), vec![(16, a.summary("z"))]),
        ];
        let path = std::env::temp_dir()
            .join(format!("partix-report-size-{}", std::process::id()))
            .join("size.svg");
        plot_vs_size(&path, "t", &series).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("one-sided") && svg.contains("raw UDP"));
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }

    /// The series are spread over ±3 % of the size axis, evenly in log space and centred, so
    /// that 20 series at 56 B stay clear of the same series at 64 B (with 2 % per series the
    /// last ones' bars landed at 64 B), and each series' points come in order of size with the
    /// bar at the point.
    #[test]
    fn series_are_spread_a_little_and_drawn_in_order_of_size() {
        assert_eq!(series_offset(0, 1), 1.0);
        for n in [2, 5, 19, 20] {
            let offs: Vec<f64> = (0..n).map(|i| series_offset(i, n)).collect();
            assert!((offs[0] * offs[n - 1] - 1.0).abs() < 1e-12, "{offs:?}");
            assert!((offs[n - 1] - SERIES_SPREAD).abs() < 1e-12, "{offs:?}");
            assert!(offs.windows(2).all(|w| w[0] < w[1]), "{offs:?}");
            assert!(56.0 * offs[n - 1] < 64.0 * offs[0], "{offs:?}");
        }
        let mut r = Recorder::new();
        r.record(1000);
        r.record(3000);
        let s = r.summary("x");
        let series: Vec<(String, Vec<(usize, Summary)>)> = (0..20)
            .map(|i| {
                (
                    format!("class {i}"),
                    vec![
                        (4096, s.clone()),
                        (56, s.clone()),
                        (64, s.clone()),
                        (16, s.clone()),
                    ],
                )
            })
            .collect();
        let drawn = vs_size_points(&series);
        for (i, pts) in drawn.iter().enumerate() {
            let off = series_offset(i, 20);
            let xs: Vec<f64> = pts.iter().map(|p| p.0 / off).collect();
            assert_eq!(
                xs.iter().map(|x| x.round() as usize).collect::<Vec<_>>(),
                [16, 56, 64, 4096]
            );
            let (p50, p99) = (s.p50 as f64 / 1000.0, s.p99 as f64 / 1000.0);
            assert!(pts.iter().all(|p| p.1 == p50 && p.2 == p99), "{pts:?}");
        }
        let max56 = drawn.iter().map(|p| p[1].0).fold(0.0, f64::max);
        let min64 = drawn.iter().map(|p| p[2].0).fold(f64::MAX, f64::min);
        assert!(max56 < min64, "{max56} {min64}");
        // In the SVG each bar (a vertical path from p50 to p99) stands at a point of its series.
        let path = std::env::temp_dir()
            .join(format!("partix-report-spread-{}", std::process::id()))
            .join("size.svg");
        plot_vs_size(&path, "t", &series[..3]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        // `attr="…"` of an SVG element's text.
        let attr = |tag: &str, name: &str| -> String {
            tag.split(&format!(" {name}=\""))
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap_or("")
                .to_string()
        };
        let circles: Vec<(String, String, String)> = svg
            .split("<circle")
            .skip(1)
            .map(|t| (attr(t, "cx"), attr(t, "cy"), attr(t, "fill")))
            .collect();
        assert_eq!(circles.len(), 12, "{svg}");
        // (stroke colour, points) of every polyline.
        let lines: Vec<(String, Vec<String>)> = svg
            .split("<polyline")
            .skip(1)
            .map(|t| {
                let pts = attr(t, "points")
                    .split_whitespace()
                    .map(String::from)
                    .collect();
                (attr(t, "stroke"), pts)
            })
            .collect();
        for (cx, cy, colour) in &circles {
            let at = format!("{cx},{cy}");
            // The series' line goes through its point, and the series' bar stands on it.
            assert!(
                lines
                    .iter()
                    .any(|(c, p)| c == colour && p.len() == 4 && p.contains(&at)),
                "no line of {colour} through {at} in\n{svg}"
            );
            assert!(
                lines.iter().any(|(c, p)| c == colour
                    && p.len() == 2
                    && p[0] == at
                    && p[1].split(',').next() == Some(cx.as_str())),
                "no bar of {colour} at {at} in\n{svg}"
            );
        }
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }

    #[test]
    fn ratio_mentions_both_classes() {
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        a.record(2000);
        b.record(1000);
        let line = a.summary("a").ratio_to(&b.summary("b"));
        assert!(line.contains("2.00x"), "{line}");
    }

    /// Ratios keep 3 significant digits: a tiny ratio printed as "0.00x" with two decimals.
    #[test]
    fn ratios_print_three_significant_digits() {
        for (x, want) in [
            (2.0, "2.00"),
            (0.00123, "0.00123"),
            (99.96, "100"),
            (0.004, "0.00400"),
            (0.0456, "0.0456"),
            (12.345, "12.3"),
            (9.996, "10.0"),
            (0.99951, "1.00"),
            (123.4, "123"),
            (45678.0, "45678"),
            (0.0, "0"),
        ] {
            assert_eq!(ratio_text(x), want, "{x}");
        }
        assert_eq!(ratio_text(f64::NAN), "NaN");
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        a.record(3);
        b.record(1000);
        let line = a.summary("a").ratio_to(&b.summary("b"));
        assert!(line.contains("p50 ratio 0.00300x"), "{line}");
    }
}
