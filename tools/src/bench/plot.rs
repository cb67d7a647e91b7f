//! Draws an A/B run as SVG: throughput and p99 send latency against the
//! queue count, one line per series (backend, flush), log-scale queues.

use std::path::Path;

use plotters::prelude::*;

/// One measured point.
#[derive(Debug, Clone)]
pub struct Point {
    /// Series name, e.g. "rocksdb ASYNC_FLUSH".
    pub series: String,
    /// Queues in the run.
    pub queues: usize,
    /// Messages/s acknowledged.
    pub rate: f64,
    /// p99 send latency, ms.
    pub p99_ms: f64,
}

/// Which figure of a point a chart shows.
type Measure = fn(&Point) -> f64;

const COLORS: [RGBColor; 6] = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];

/// Writes the two charts side by side to `path`.
pub fn draw(path: &Path, title: &str, points: &[Point]) -> anyhow::Result<()> {
    if points.is_empty() {
        anyhow::bail!("nothing to plot");
    }
    let root = SVGBackend::new(path, (1200, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 20))?;
    let (left, right) = root.split_horizontally(600);
    let mut series: Vec<&str> = Vec::new();
    for p in points {
        if !series.contains(&p.series.as_str()) {
            series.push(&p.series);
        }
    }
    let q_min = points.iter().map(|p| p.queues).min().unwrap_or(1).max(1) as f64;
    let q_max = points.iter().map(|p| p.queues).max().unwrap_or(1).max(2) as f64;
    let x_range = (q_min * 0.8)..(q_max * 1.25);
    let charts: [(_, &str, Measure); 2] = [
        (&left, "messages/s", |p| p.rate),
        (&right, "p99 send latency, ms", |p| p.p99_ms),
    ];
    for (area, label, value) in charts {
        let y_max = points.iter().map(value).fold(0.0, f64::max).max(1e-3) * 1.15;
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .caption(label, ("sans-serif", 16))
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range.clone().log_scale(), 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc("queues")
            .y_desc(label)
            .x_label_formatter(&|x| format!("{}", x.round() as u64))
            .y_label_formatter(&|y| {
                if y.abs() < 10.0 {
                    format!("{y:.1}")
                } else {
                    format!("{y:.0}")
                }
            })
            .draw()?;
        for (i, name) in series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let mut pts: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.series == *name)
                .map(|p| (p.queues as f64, value(p)))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
                .label(*name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_an_svg_with_both_series() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ab.svg");
        let mut points = Vec::new();
        for (s, f) in [("file", 1.0), ("rocksdb", 0.8)] {
            for q in [8, 1000, 10_000] {
                points.push(Point {
                    series: s.into(),
                    queues: q,
                    rate: 1000.0 * f,
                    p99_ms: 2.0 / f,
                });
            }
        }
        assert!(draw(&path, "test", &points).is_ok());
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(100)]);
        assert!(svg.contains("rocksdb") && svg.contains("file"));
        assert!(draw(&path, "test", &[]).is_err());
    }
}
