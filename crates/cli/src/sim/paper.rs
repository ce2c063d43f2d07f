//! `aar sim paper`: runs the SC'19 suite at paper scale (`aar_sim::paper`), writes its document
//! and, next to it, one box plot per benchmark of the iteration times normalised to ADAPTIVE0's
//! median (the paper's Fig. 8), drawn with `aar report`'s box.

use crate::report::plot::{colour, draw_box, drawn, font, Slots};
use crate::report::OutputError;
use aar_sim::paper::{CaseReport, PaperReport};
use plotters::prelude::*;

/// The file name of a benchmark's plot: `paper-<bench>.svg` with the name's words joined by `-`.
pub fn plot_name(bench: &str) -> String {
    let words: Vec<String> = bench
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .collect();
    format!("paper-{}.svg", words.join("-"))
}

/// The box plot of one benchmark: per size, one box per policy, times / ADAPTIVE0's median.
pub fn plot(r: &PaperReport, bench: &str) -> Result<String, OutputError> {
    let cases: Vec<&CaseReport> = r.cases.iter().filter(|c| c.case.bench == bench).collect();
    let arms = cases.first().map_or(0, |c| c.arms.len());
    let slots = (cases.len() * (arms + 1)).max(1);
    let all = cases.iter().flat_map(|c| c.arms.iter().flat_map(|a| a.normalised.iter().copied()));
    let (lo, hi) = all.fold((1.0f64, 1.0f64), |(l, h), v| (l.min(v), h.max(v)));
    let pad = 0.05 * (hi - lo).max(0.02);
    let text = font().is_ok();
    let mut s = String::new();
    {
        let width = 240 + 110 * slots as u32;
        let root = SVGBackend::with_string(&mut s, (width, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(drawn)?;
        let mut b = ChartBuilder::on(&root);
        b.margin(16);
        if text {
            b.caption(format!("{bench}: iteration time / ADAPTIVE0's median"), ("sans-serif", 20))
                .x_label_area_size(48)
                .y_label_area_size(70);
        }
        let mut chart = b.build_cartesian_2d(Slots(slots), (lo - pad)..(hi + pad)).map_err(drawn)?;
        let label = |v: &f64| {
            let k = v.round() as usize;
            let (c, a) = (k / (arms + 1), k % (arms + 1));
            match cases.get(c) {
                Some(case) if a < arms && (v - v.round()).abs() < 1e-6 => {
                    format!("{} {}", case.case.size, case.arms[a].policy.replace("ADAPTIVE", "A"))
                }
                _ => String::new(),
            }
        };
        let mut mesh = chart.configure_mesh();
        mesh.disable_x_mesh();
        if text {
            mesh.x_labels(slots)
                .x_label_formatter(&label)
                .y_label_formatter(&|v: &f64| format!("{v:.2}"))
                .label_style(("sans-serif", 13))
                .y_desc("normalised time");
        } else {
            mesh.x_labels(0).y_labels(0);
        }
        mesh.draw().map_err(drawn)?;
        chart
            .draw_series([PathElement::new(vec![(-0.5, 1.0), (slots as f64 - 0.5, 1.0)], BLACK.mix(0.4))])
            .map_err(drawn)?;
        for (c, case) in cases.iter().enumerate() {
            for (a, arm) in case.arms.iter().enumerate() {
                draw_box(&mut chart, (c * (arms + 1) + a) as f64, &arm.normalised, colour(a))?;
            }
        }
        root.present().map_err(drawn)?;
    }
    Ok(s)
}
