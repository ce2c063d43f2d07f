//! `--html FILE`: one self-contained page (no script, no external resource): the tables of the
//! text report and, per experiment, the figure as inline SVG.

use super::analysis::{ExperimentReport, Report};
use super::output::{self, Unit};
use super::plot;
use super::OutputError;

/// Escape text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if !output::printable(c) && c != '\n' && c != '\t' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

fn table(out: &mut String, class: &str, header: &[String], rows: &[Vec<String>], swatches: bool) {
    out.push_str(&format!("<table class=\"{class}\">\n<thead><tr>"));
    for h in header {
        out.push_str(&format!("<th>{}</th>", esc(h)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (k, r) in rows.iter().enumerate() {
        out.push_str(&format!("<tr class=\"policy\" data-policy=\"{}\">", esc(&r[0])));
        for (c, cell) in r.iter().enumerate() {
            if c == 0 && swatches {
                out.push_str(&format!(
                    "<th scope=\"row\"><span class=\"swatch\" style=\"background:{}\"></span>{}</th>",
                    plot::colour_hex(k),
                    esc(cell)
                ));
            } else if c == 0 {
                out.push_str(&format!("<th scope=\"row\">{}</th>", esc(cell)));
            } else {
                out.push_str(&format!("<td>{}</td>", esc(cell)));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
}

/// The figure of one experiment, ready to sit inside the page.
fn inline_svg(e: &ExperimentReport, text: bool) -> Result<String, OutputError> {
    let svg = plot::svg(std::slice::from_ref(e), text)?;
    let start = svg.find("<svg").ok_or_else(|| OutputError::Draw("the plot has no <svg> element".into()))?;
    let svg = &svg[start..];
    Ok(svg.replacen("<svg ", "<svg role=\"img\" style=\"max-width:100%;height:auto\" ", 1))
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1600px}\
h1{font-size:1.5em}h2{font-size:1.25em;margin-top:2em}h3{font-size:1.05em}\
table{border-collapse:collapse;margin:.5em 0}th,td{padding:.25em .6em;border-bottom:1px solid #ddd}\
td{text-align:right;font-variant-numeric:tabular-nums}thead th{text-align:right;background:#f4f4f4}\
thead th:first-child,tbody th{text-align:left}tbody th{font-weight:normal}\
.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.4em;vertical-align:-.1em;border-radius:2px}\
.notes{color:#555;font-size:.9em}.warnings{color:#8a4b00}figure{margin:1em 0}";

pub fn page(r: &Report, inputs: &[String], text: bool) -> Result<String, OutputError> {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!("<title>aar report: {}</title>\n", esc(&inputs.join(" "))));
    out.push_str(&format!("<style>{STYLE}</style>\n</head>\n<body>\n<h1>aar report</h1>\n"));
    out.push_str(&format!("<p>Read from {} by aar {}.</p>\n", esc(&inputs.join(", ")), env!("CARGO_PKG_VERSION")));
    for e in &r.experiments {
        let u = Unit::for_experiment(e);
        out.push_str(&format!("<section class=\"experiment\">\n<h2>{}</h2>\n", esc(&output::describe(e))));
        out.push_str(&format!("<p>{}; times in {}.</p>\n", esc(&output::describe_iterations(e)), u.name));
        let first_n = e.policy_stats.first().map_or(0, |p| p.iterations);
        let rows: Vec<Vec<String>> = e.policy_stats.iter().map(|p| output::policy_cells(p, first_n, &u)).collect();
        let header: Vec<String> = output::POLICY_HEADER.iter().map(|h| h.to_string()).collect();
        table(&mut out, "policies", &header, &rows, true);
        out.push_str("<ul class=\"notes\">\n");
        for n in output::notes(e, r) {
            out.push_str(&format!("<li>{}</li>\n", esc(&n)));
        }
        out.push_str("</ul>\n");
        out.push_str(&format!("<figure>\n{}\n</figure>\n", inline_svg(e, text)?));
        out.push_str("<h3>Routing modes (share of bytes; modes that carried none left out) and decisions, summed over ranks</h3>\n");
        let (h, rows) = output::routing_cells(e);
        table(&mut out, "routing", &h, &rows, true);
        if !e.congestion.is_empty() {
            out.push_str("<h3>Congestion impact = congested / isolated</h3>\n");
            let (h, rows) = output::congestion_cells(e, &u);
            table(&mut out, "congestion", &h, &rows, true);
        }
        if !e.per_rank.is_empty() {
            out.push_str(&format!(
                "<h3>Per rank: each rank's median iteration time ({})</h3>\n<p class=\"notes\">Outliers: more than 3 \
                 scaled MADs and 1% from the median of ranks.</p>\n",
                u.name
            ));
            let (h, rows) = output::rank_cells(e, &u);
            table(&mut out, "ranks", &h, &rows, true);
        }
        if !e.slowest_ranks.is_empty() {
            let list: Vec<String> = e
                .slowest_ranks
                .iter()
                .map(|s| {
                    format!("rank {} ({})", s.rank, aar_record::count(s.iterations as u64, "iteration", "iterations"))
                })
                .collect();
            out.push_str(&format!("<p>Slowest rank most often: {}.</p>\n", esc(&list.join(", "))));
        }
        out.push_str("</section>\n");
    }
    if !r.warnings.is_empty() {
        out.push_str("<h2>Warnings</h2>\n<ul class=\"warnings\">\n");
        for w in &r.warnings {
            out.push_str(&format!("<li>{}</li>\n", esc(w)));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</body>\n</html>\n");
    Ok(out)
}
