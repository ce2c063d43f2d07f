//! One figure per report (plotters): for each experiment a row of three panels — box plots of
//! the iteration time per policy, the empirical CDF per policy, and the iteration-time series
//! coloured by policy, the last two with a legend naming the policies beside their plotting area.
//!
//! Text needs a TrueType font (plotters' `ab_glyph` backend, no system font library). It is read
//! at run time: `AAR_REPORT_FONT` if set, else DejaVu Sans or Liberation Sans where Debian, SUSE
//! (Cray's OS), RHEL or Arch put them. Without one the plots are still drawn, without any text,
//! after one warning (the HTML page's tables still name the policies, with their colours).

use super::analysis::ExperimentReport;
use super::output::{clean_to, Unit};
use super::OutputError;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;
use std::sync::OnceLock;

/// Colours of the policies, in order (Tableau 10, then a cyan and a near-black), as RGB: one each
/// for the most policies an experiment has (a simulated one: `auto`, `steady`, `off` and every
/// mode the simulator pins).
pub const PALETTE: [(u8, u8, u8); 12] = [
    (0x4e, 0x79, 0xa7),
    (0xf2, 0x8e, 0x2b),
    (0xe1, 0x57, 0x59),
    (0x76, 0xb7, 0xb2),
    (0x59, 0xa1, 0x4f),
    (0xed, 0xc9, 0x48),
    (0xb0, 0x7a, 0xa1),
    (0xff, 0x9d, 0xa7),
    (0x9c, 0x75, 0x5f),
    (0xba, 0xb0, 0xac),
    (0x17, 0xbe, 0xcf),
    (0x2f, 0x2f, 0x2f),
];

pub fn colour(k: usize) -> RGBColor {
    let (r, g, b) = PALETTE[k % PALETTE.len()];
    RGBColor(r, g, b)
}

pub fn colour_hex(k: usize) -> String {
    let (r, g, b) = PALETTE[k % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

const FONT_PATHS: [&str; 6] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

/// No TrueType font of a plot's text is larger (DejaVu Sans: 740 KiB; a CJK font: 20 MiB).
const MAX_FONT_BYTES: u64 = 64 << 20;

/// Register the font for "sans-serif" once; `Err(warning)` when no font could be had.
pub fn font() -> Result<(), String> {
    static FONT: OnceLock<Result<(), String>> = OnceLock::new();
    FONT.get_or_init(|| {
        let candidates: Vec<String> = match std::env::var_os("AAR_REPORT_FONT") {
            Some(p) => vec![p.to_string_lossy().into_owned()],
            None => FONT_PATHS.iter().map(|p| p.to_string()).collect(),
        };
        for path in &candidates {
            // A regular file of a font's size: a FIFO would wait for a writer, a device never end.
            let fits = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() <= MAX_FONT_BYTES);
            let Some(bytes) = fits.then(|| std::fs::read(path).ok()).flatten() else { continue };
            // plotters keeps fonts for the life of the process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                return Ok(());
            }
        }
        let looked = if std::env::var_os("AAR_REPORT_FONT").is_some() {
            format!("AAR_REPORT_FONT={}", candidates[0])
        } else {
            format!("{} and {} other places", FONT_PATHS[0], FONT_PATHS.len() - 1)
        };
        Err(format!(
            "no usable TrueType font for the plots' text (looked at {looked}; Debian: apt-get install fonts-dejavu-core, \
             or set AAR_REPORT_FONT to a .ttf file): the plots are drawn without text"
        ))
    })
    .clone()
}

const WIDTH: u32 = 1500;
/// Legends name at most this many policies (the tables name them all).
const LEGEND_MAX: usize = 12;
const ROW: u32 = 500;

pub fn size(exps: &[ExperimentReport]) -> (u32, u32) {
    (WIDTH, ROW.saturating_mul(u32::try_from(exps.len().max(1)).unwrap_or(u32::MAX)))
}

/// A drawing error of plotters, whatever the backend.
pub fn drawn<E: std::error::Error + Send + Sync + 'static>(e: DrawingAreaErrorKind<E>) -> OutputError {
    OutputError::Draw(Box::new(e))
}

/// The figure as an SVG document.
pub fn svg(r: &[ExperimentReport], text: bool) -> Result<String, OutputError> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, size(r)).into_drawing_area();
        draw(&root, r, text)?;
        root.present().map_err(drawn)?;
    }
    Ok(s)
}

/// Most experiments one PNG figure draws: a PNG is drawn whole in memory, 3 bytes a pixel, a row
/// of [`ROW`] pixels per experiment, so a folder of many jobs' records would take gigabytes (and
/// the process, the text report with it, would be killed before writing anything) for an image
/// taller than viewers open. 64 rows are 32,000 pixels and 144 MB; an SVG figure has no such
/// limit (its size grows with the points drawn).
pub const MAX_PNG_EXPERIMENTS: usize = 64;

/// The figure as PNG bytes.
pub fn png(r: &[ExperimentReport], text: bool) -> Result<Vec<u8>, OutputError> {
    let (w, h) = size(r);
    if r.len() > MAX_PNG_EXPERIMENTS {
        return Err(OutputError::TooTall { experiments: r.len(), width: w, height: h });
    }
    let mut rgb = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw(&root, r, text)?;
        root.present().map_err(drawn)?;
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header()?;
    writer.write_image_data(&rgb)?;
    writer.finish()?;
    Ok(out)
}

/// The figure as the file `path` names: PNG or SVG by its extension.
pub fn render(path: &Path, r: &[ExperimentReport], text: bool) -> Result<Vec<u8>, OutputError> {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png")) {
        png(r, text)
    } else {
        Ok(svg(r, text)?.into_bytes())
    }
}

/// Text of a legend's names.
const LEGEND_FONT: u32 = 14;
/// Height of a legend's line, and the width of its colour swatch.
const LEGEND_LINE: i32 = 20;
const SWATCH: i32 = 16;
/// Space around and between a legend's parts.
const LEGEND_PAD: i32 = 6;

/// The policies a panel's legend names, in their colours: those with iterations (the tables name
/// the policies beyond [`LEGEND_MAX`]).
fn legend_names(e: &ExperimentReport) -> impl Iterator<Item = (usize, String)> + '_ {
    (0..e.policies.len().min(LEGEND_MAX))
        .filter(|&p| !e.samples[p].is_empty())
        .map(|p| (p, clean_to(&e.policies[p], 24)))
}

/// A panel, or a part of one, in the figure's pixels.
type Area<DB> = DrawingArea<DB, Shift>;

/// A panel split into the room for its chart and, on its right, for its legend (as wide as its
/// longest name needs): beside the plotting area, not over it, so that the legend covers no
/// data point or line, however many policies and wherever their data lie. Without text, no
/// legend and the whole panel for the chart.
fn beside_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    e: &ExperimentReport,
    text: bool,
) -> Result<(Area<DB>, Option<Area<DB>>), OutputError>
where
    DB::ErrorType: 'static,
{
    if !text || legend_names(e).next().is_none() {
        return Ok((area.clone(), None));
    }
    let font = ("sans-serif", LEGEND_FONT).into_text_style(area);
    let mut widest = 0;
    for (_, name) in legend_names(e) {
        widest = widest.max(area.estimate_text_size(&name, &font).map_err(drawn)?.0 as i32);
    }
    let width = 3 * LEGEND_PAD + SWATCH + widest + LEGEND_PAD;
    let (chart, legend) = area.split_horizontally(area.dim_in_pixel().0 as i32 - width);
    Ok((chart, Some(legend)))
}

/// The legend of `e`'s policies in `area` (from [`beside_legend`]), its top at the top of the
/// plotting area `plot` (pixels of the whole figure) and a margin from the panel's right.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    e: &ExperimentReport,
    plot: (std::ops::Range<i32>, std::ops::Range<i32>),
) -> Result<(), OutputError>
where
    DB::ErrorType: 'static,
{
    let names: Vec<(usize, String)> = legend_names(e).collect();
    let (w, _) = area.dim_in_pixel();
    let (x0, y0) = (LEGEND_PAD, plot.1.start - area.get_base_pixel().1);
    let (x1, y1) = (w as i32 - LEGEND_PAD, y0 + LEGEND_PAD + LEGEND_LINE * names.len() as i32 + LEGEND_PAD / 2);
    area.draw(&Rectangle::new([(x0, y0), (x1, y1)], BLACK.mix(0.4))).map_err(drawn)?;
    let style = ("sans-serif", LEGEND_FONT).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
    for (k, (p, name)) in names.into_iter().enumerate() {
        let y = y0 + LEGEND_PAD + LEGEND_LINE * k as i32 + LEGEND_LINE / 2;
        let x = x0 + LEGEND_PAD;
        area.draw(&Rectangle::new([(x, y - 5), (x + SWATCH, y + 5)], colour(p).filled())).map_err(drawn)?;
        area.draw(&Text::new(name, (x + SWATCH + LEGEND_PAD, y), style.clone())).map_err(drawn)?;
    }
    Ok(())
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &[ExperimentReport],
    text: bool,
) -> Result<(), OutputError>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE).map_err(drawn)?;
    let rows = root.split_evenly((r.len().max(1), 1));
    for (e, row) in r.iter().zip(rows) {
        let row = if text {
            // The pooled experiments' row is no experiment of that name: "3 experiments pooled".
            let name = if e.pooled_from.is_empty() {
                format!("experiment \"{}\"", clean_to(&e.experiment, 80))
            } else {
                e.experiment.clone()
            };
            let title = format!("{name}: {}", aar_record::count(e.iterations_used as u64, "iteration", "iterations"));
            row.titled(&title, ("sans-serif", 20)).map_err(drawn)?
        } else {
            row.margin(24, 0, 0, 0)
        };
        let areas = row.split_evenly((1, 3));
        let (lo, hi) = y_range(e);
        let panel = Panel { e, u: Unit::for_experiment(e), lo, hi, text };
        boxes(&areas[0], &panel)?;
        ecdf(&areas[1], &panel)?;
        series(&areas[2], &panel)?;
    }
    Ok(())
}

/// What the three panels of an experiment's row share.
struct Panel<'a> {
    e: &'a ExperimentReport,
    u: Unit,
    /// The iteration-time axis, ns.
    lo: f64,
    hi: f64,
    /// Whether to write text (a font was found).
    text: bool,
}

fn y_range(e: &ExperimentReport) -> (f64, f64) {
    let lo = e.samples.iter().filter_map(|s| s.first()).fold(f64::INFINITY, |a, &b| a.min(b));
    let hi = e.samples.iter().filter_map(|s| s.last()).fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo { 0.05 * (hi - lo) } else { (0.05 * hi).max(1.0) };
    ((lo - pad).max(0.0), hi + pad)
}

/// Tick labels in the experiment's unit, with as many decimals as the axis span needs.
fn axis_format(u: &Unit, span_ns: f64) -> impl Fn(&f64) -> String {
    let span = span_ns / u.ns;
    let decimals =
        if span > 0.0 && span.is_finite() { (1 - span.log10().floor() as i64).clamp(0, 6) as usize } else { 0 };
    let scale = u.ns;
    move |v: &f64| format!("{:.*}", decimals, v / scale)
}

fn axis_name(u: &Unit) -> String {
    format!("iteration time ({})", u.name)
}

/// The box plot's x axis: policy p at x = p, in one slot of width 1 each, ticks at the slots'
/// centres only.
pub struct Slots(pub usize);

impl Ranged for Slots {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v + 0.5) / self.0 as f64;
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }
    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        (0..self.0).map(|p| p as f64).collect()
    }
    fn range(&self) -> std::ops::Range<f64> {
        -0.5..self.0 as f64 - 0.5
    }
}

fn boxes<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, panel: &Panel) -> Result<(), OutputError>
where
    DB::ErrorType: 'static,
{
    let &Panel { e, ref u, lo, hi, text } = panel;
    let k = e.policies.len();
    let mut b = ChartBuilder::on(area);
    b.margin(12);
    // Names side by side while they fit their slots (about 40 characters across the panel);
    // else each upright, whole up to 12 characters: cut to fewer, ADAPTIVE0..3 would all read
    // "ADAPTIVE…".
    let longest = e.policies.iter().map(|p| p.chars().count()).max().unwrap_or(0);
    let upright = k * longest.min(24) > 40;
    let width = if upright { 12 } else { 24 };
    if text {
        b.caption("box plot (whiskers: 1.5 IQR)", ("sans-serif", 16))
            .x_label_area_size(if upright { 110 } else { 36 })
            .y_label_area_size(84);
    }
    // Policy p sits at x = p, labelled at exactly those points.
    let mut chart = b.build_cartesian_2d(Slots(k.max(1)), lo..hi).map_err(drawn)?;
    let names: Vec<String> = e.policies.iter().map(|p| clean_to(p, width)).collect();
    let xfmt = |v: &f64| {
        let p = v.round();
        // Beyond LEGEND_MAX policies the names would overlap: the tables name them. Upright names
        // are drawn below (the mesh would centre them on the axis).
        if !upright && k <= LEGEND_MAX && (v - p).abs() < 1e-6 && p >= 0.0 && (p as usize) < k {
            names[p as usize].clone()
        } else {
            String::new()
        }
    };
    let yfmt = axis_format(u, hi - lo);
    let mut mesh = chart.configure_mesh();
    mesh.disable_x_mesh().light_line_style(WHITE.mix(0.0));
    if text {
        mesh.x_labels(k)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 14))
            .x_label_formatter(&xfmt)
            .y_label_formatter(&yfmt)
            .y_desc(axis_name(u));
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(drawn)?;
    if text && upright && k <= LEGEND_MAX {
        // Read from the bottom up, each ending just below its slot's tick.
        let style = ("sans-serif", 14)
            .into_font()
            .transform(FontTransform::Rotate270)
            .color(&BLACK)
            .pos(Pos::new(HPos::Right, VPos::Center));
        let labels = names
            .iter()
            .enumerate()
            .map(|(p, name)| EmptyElement::at((p as f64, lo)) + Text::new(name.clone(), (0, 8), style.clone()));
        chart.draw_series(labels).map_err(drawn)?;
    }
    for (p, s) in e.samples.iter().enumerate() {
        draw_box(&mut chart, p as f64, s, colour(p))?;
    }
    Ok(())
}

/// One box of a box plot at `x` (slot width 1) for an ascending sample: quartiles, median,
/// whiskers at 1.5 IQR, and the points beyond them (at most 500 at each end); nothing for an
/// empty sample. `aar report`'s box plots and `aar sim paper`'s normalised ones draw with it.
pub fn draw_box<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<Slots, RangedCoordf64>>,
    x: f64,
    s: &[f64],
    c: RGBColor,
) -> Result<(), OutputError>
where
    DB::ErrorType: 'static,
{
    let q = |f| aar_stats::quantile(s, f);
    let (Some(q1), Some(med), Some(q3)) = (q(0.25), q(0.5), q(0.75)) else { return Ok(()) };
    let iqr = q3 - q1;
    let low = s.iter().copied().find(|v| *v >= q1 - 1.5 * iqr).unwrap_or(q1);
    let high = s.iter().rev().copied().find(|v| *v <= q3 + 1.5 * iqr).unwrap_or(q3);
    let (x0, x1) = (x - 0.25, x + 0.25);
    chart
        .draw_series([
            Rectangle::new([(x0, q3), (x1, q1)], c.mix(0.35).filled()),
            Rectangle::new([(x0, q3), (x1, q1)], c.stroke_width(2)),
        ])
        .map_err(drawn)?;
    chart
        .draw_series([
            PathElement::new(vec![(x0, med), (x1, med)], c.stroke_width(3)),
            PathElement::new(vec![(x, q3), (x, high)], c.stroke_width(2)),
            PathElement::new(vec![(x, q1), (x, low)], c.stroke_width(2)),
        ])
        .map_err(drawn)?;
    let above = s.iter().rev().take_while(|v| **v > high).take(500);
    let below = s.iter().take_while(|v| **v < low).take(500);
    chart.draw_series(above.chain(below).map(|&v| Circle::new((x, v), 2, c.filled()))).map_err(drawn)?;
    Ok(())
}

/// At most `max` points of a sorted sample, evenly spaced in rank, always with both ends.
fn thin(n: usize, max: usize) -> Vec<usize> {
    if n <= max {
        return (0..n).collect();
    }
    (0..max).map(|j| j * (n - 1) / (max - 1)).collect()
}

fn ecdf<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, panel: &Panel) -> Result<(), OutputError>
where
    DB::ErrorType: 'static,
{
    let &Panel { e, ref u, lo, hi, text } = panel;
    let (area, legend) = beside_legend(area, e, text)?;
    let mut b = ChartBuilder::on(&area);
    b.margin(12);
    if text {
        b.caption("empirical CDF", ("sans-serif", 16)).x_label_area_size(36).y_label_area_size(60);
    }
    let mut chart = b.build_cartesian_2d(lo..hi, 0f64..1f64).map_err(drawn)?;
    let xfmt = axis_format(u, hi - lo);
    let mut mesh = chart.configure_mesh();
    if text {
        mesh.label_style(("sans-serif", 14)).axis_desc_style(("sans-serif", 14));
        mesh.x_label_formatter(&xfmt).x_desc(axis_name(u)).y_desc("fraction of iterations").x_labels(6);
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(drawn)?;
    for (p, s) in e.samples.iter().enumerate() {
        if s.is_empty() {
            continue;
        }
        let n = s.len();
        let mut pts = Vec::new();
        for j in thin(n, 2000) {
            pts.push((s[j], j as f64 / n as f64));
            pts.push((s[j], (j + 1) as f64 / n as f64));
        }
        chart.draw_series(LineSeries::new(pts, colour(p).stroke_width(2))).map_err(drawn)?;
    }
    if let Some(legend) = legend {
        draw_legend(&legend, e, chart.plotting_area().get_pixel_range())?;
    }
    Ok(())
}

fn series<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, panel: &Panel) -> Result<(), OutputError>
where
    DB::ErrorType: 'static,
{
    let &Panel { e, ref u, lo, hi, text } = panel;
    let first = e.series.first().map_or(0, |p| p.0) as f64;
    let last = e.series.last().map_or(1, |p| p.0) as f64;
    // Room for the first and the last points (not cut in half by the panel's edges), and a run of
    // one iteration has no negative one.
    let pad = (0.01 * (last - first)).max(0.5);
    let (x0, x1) = (first - pad, last + pad);
    // Long runs: per policy, the least and the greatest time of each of 1,500 buckets of
    // iterations, so that spikes stay visible.
    const MAX_POINTS: usize = 6000;
    let thinned = e.series.len() > MAX_POINTS;
    let (area, legend) = beside_legend(area, e, text)?;
    let mut b = ChartBuilder::on(&area);
    b.margin(12);
    if text {
        let caption = if thinned { "time series (min and max per bucket)" } else { "time series" };
        b.caption(caption, ("sans-serif", 16)).x_label_area_size(36).y_label_area_size(84);
    }
    let mut chart = b.build_cartesian_2d(x0..x1, lo..hi).map_err(drawn)?;
    let yfmt = axis_format(u, hi - lo);
    // Iterations are whole: a tick between two (0.2, 0.4, ... of a run of 2) has no label, or the
    // axis of a short run would read 0 0 0 1 1 1.
    let xfmt = |v: &f64| if (v - v.round()).abs() < 1e-6 { format!("{v:.0}") } else { String::new() };
    let mut mesh = chart.configure_mesh();
    if text {
        mesh.label_style(("sans-serif", 14)).axis_desc_style(("sans-serif", 14));
        mesh.x_label_formatter(&xfmt).y_label_formatter(&yfmt).x_desc("iteration").y_desc(axis_name(u)).x_labels(6);
    } else {
        mesh.x_labels(0).y_labels(0);
    }
    mesh.draw().map_err(drawn)?;
    for p in 0..e.policies.len() {
        let mut pts: Vec<(f64, f64)> = e.series.iter().filter(|s| s.2 == p).map(|s| (s.0 as f64, s.1)).collect();
        if thinned && pts.len() > 3000 {
            let buckets = 1500;
            let span = (x1 - x0) / buckets as f64;
            type Extremes = Option<((f64, f64), (f64, f64))>; // (least, greatest) point
            let mut ext: Vec<Extremes> = vec![None; buckets];
            for &pt in &pts {
                let bkt = (((pt.0 - x0) / span) as usize).min(buckets - 1);
                ext[bkt] = Some(match ext[bkt] {
                    None => (pt, pt),
                    Some((lo, hi)) => (if pt.1 < lo.1 { pt } else { lo }, if pt.1 > hi.1 { pt } else { hi }),
                });
            }
            pts = ext.into_iter().flatten().flat_map(|(a, b)| [a, b]).collect();
        }
        let c = colour(p);
        chart.draw_series(pts.into_iter().map(|pt| Circle::new(pt, 2, c.filled()))).map_err(drawn)?;
    }
    if let Some(legend) = legend {
        draw_legend(&legend, e, chart.plotting_area().get_pixel_range())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_of_an_experiment_has_a_colour_of_its_own() {
        let most = aar_sim::config::Mode::ALL.len() + ["auto", "steady", "off"].len();
        assert!(PALETTE.len() >= most, "{} colours for up to {most} policies", PALETTE.len());
        for (i, c) in PALETTE.iter().enumerate() {
            assert!(!PALETTE[..i].contains(c), "colour {i} repeats");
        }
    }
}
