//! The report's tables and counts below the filmstrip: failed requests, console entries,
//! typing steps, redactions and records by kind.

use super::*;
use crate::limits::{MAX_KINDS_SHOWN, MAX_REDACTION_NAME, MAX_REDACTION_NAMES};

pub(super) fn requests_table(r: &Report) -> Markup {
    let tl = &r.timeline;
    let rows: Vec<&Failure> = tl.request_rows.iter().map(|&i| &tl.failures[i]).collect();
    let more = tl.totals.request_rows.saturating_sub(rows.len());
    html! {
        section #requests {
            h2 { "Failed requests" }
            @if rows.is_empty() {
                p.empty { "No failed requests were recorded." }
            } @else {
                table.table {
                    thead { tr { th { "Step" } th { "Time" } th { "Request" } th { "Status" } th { "Type" } th { "Took" } th { "Error" } } }
                    tbody {
                        @for f in &rows {
                            tr {
                                td.numeric data-label="Step" { (step_link(r, f)) " " span.failure-id { "F" (f.id) } }
                                td.numeric data-label="Time" { (r.timeline.when(f.at_ms, f.time_known)) (repeats(r, f)) }
                                @match &f.what {
                                    FailWhat::Request { method, url, status, resource_type, duration_ms, error_text } => {
                                        td.wide data-label="Request" { b { (method) } " " code.run-text { (url) } }
                                        td.numeric data-label="Status" { @match status { Some(s) => { (s) } None => { "—" } } }
                                        td data-label="Type" { @if let Some(t) = resource_type { span.run-text { (t) } } @else { "—" } }
                                        td.numeric data-label="Took" { @match duration_ms { Some(d) => { (duration(*d)) } None => { "—" } } }
                                        td.full.none[error_text.is_none()] data-label="Error" { @if let Some(e) = error_text { span.run-text { (e) } } @else { "—" } }
                                    }
                                    FailWhat::Generic { fields, .. } => { (unreadable_cell("Request", 5, fields)) }
                                    _ => {}
                                }
                            }
                        }
                    }
                }
                @if more > 0 { p.small { (more) " more between the first and the last ones listed, not shown (counted above)." } }
            }
        }
    }
}

/// The cell of a table row whose record does not fit its kind: its fields, over the columns
/// the row would have had (`label` names the cell on a narrow screen).
fn unreadable_cell(label: &str, columns: u32, fields: &[(String, String)]) -> Markup {
    html! {
        td.wide data-label=(label) colspan=(columns) {
            "Unreadable payload: "
            @for (i, (k, v)) in fields.iter().enumerate() { @if i > 0 { ", " } span.run-text { (k) "=" (v) } }
        }
    }
}

pub(super) fn console_table(r: &Report) -> Markup {
    let tl = &r.timeline;
    let rows: Vec<&Failure> = tl.console_rows.iter().map(|&i| &tl.failures[i]).collect();
    let more = tl.totals.console_rows.saturating_sub(rows.len());
    html! {
        section #console {
            h2 { "Console errors and warnings" }
            @if rows.is_empty() {
                p.empty { "No console errors or warnings were recorded." }
            } @else {
                table.table {
                    thead { tr { th { "Step" } th { "Time" } th { "Level" } th { "Message" } th { "Location" } } }
                    tbody {
                        @for f in &rows {
                            tr {
                                td.numeric data-label="Step" { (step_link(r, f)) " " span.failure-id { "F" (f.id) } }
                                td.numeric data-label="Time" { (r.timeline.when(f.at_ms, f.time_known)) (repeats(r, f)) }
                                td data-label="Level" { (fail_badge(f)) }
                                @match &f.what {
                                    FailWhat::Console { text, url, line, column, .. } => {
                                        td.wide data-label="Message" { pre.run-text { (text) } }
                                        td data-label="Location" {
                                            @match location(url, *line, *column) { Some(l) => { span.run-text.mono { (l) } } None => { "—" } }
                                        }
                                    }
                                    FailWhat::Generic { fields, .. } => { (unreadable_cell("Message", 2, fields)) }
                                    _ => {}
                                }
                            }
                        }
                    }
                }
                @if more > 0 { p.small { (more) " more between the first and the last ones listed, not shown (counted above)." } }
            }
        }
    }
}

pub(super) fn typing_table(r: &Report) -> Markup {
    // Typing steps, and the typing a tool call did (its effects), with the step they are in.
    let mut rows: Vec<(&Step, Option<u64>, bool, Headline)> = Vec::new();
    for s in &r.timeline.steps {
        match &s.what {
            What::Type { .. } => rows.push((s, s.at_ms, s.time_known, s.what.headline(1))),
            What::ToolCall(c) => rows.extend(
                c.effects
                    .iter()
                    .filter(|e| matches!(e.what, What::Type { .. }))
                    .map(|e| (s, e.at_ms, true, e.headline())),
            ),
            _ => {}
        }
    }
    html! {
        @if !rows.is_empty() {
            section #typing {
                h2 { "Typing" }
                p.small { "Only the length and the kind of field are recorded, never the characters." }
                table.table {
                    thead { tr { th { "Step" } th { "Time" } th { "Typed" } th { "Page" } } }
                    tbody {
                        @for (s, at_ms, known, what) in &rows {
                            tr {
                                td.numeric data-label="Step" { a href={ "#" (s.anchor()) } { (s.label()) } }
                                td.numeric data-label="Time" { (r.timeline.when(*at_ms, *known)) }
                                td.wide data-label="Typed" { (headline(what)) }
                                td data-label="Page" {
                                    @if let Some(p) = &s.page {
                                        @if let Some(t) = &p.title { span.run-text { (t) } " " }
                                        @if let Some(u) = &p.url { code.run-text { (u) } }
                                    } @else { "—" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

pub(super) fn redactions(r: &Report) -> Markup {
    html! {
        section #redactions {
            h2 { "Redactions" }
            @match &r.redactions {
                None => p.empty { "The run's manifest reports no redaction counts (it may not be finalized)." },
                Some(red) => {
                    p.small {
                        (count(red.total as usize, "value was", "values were")) " replaced before reaching the journal"
                        @if red.truncated > 0 { ", and " (count(red.truncated as usize, "text was", "texts were")) " cut at a length limit" }
                        ". Counts by rule and by registered secret name; the values themselves are never stored."
                    }
                    @if !red.rules.is_empty() {
                        ul.counts { @for (k, n) in red.rules.iter().take(MAX_REDACTION_NAMES) { li { span.run-text { (crate::text::line(k, MAX_REDACTION_NAME)) } " " b { (n) } } } }
                    }
                    @let (named, typed, literals) = crate::text::secret_counts(&red.secrets);
                    @if !named.is_empty() {
                        p.small { "Registered secrets:" }
                        ul.counts { @for (k, n) in named.iter().take(MAX_REDACTION_NAMES) { li { code.run-text { "${" (crate::text::line(k, MAX_REDACTION_NAME)) "}" } " " b { (n) } } } }
                    }
                    @if literals > 0 {
                        p.small {
                            "Echoes of typed text masked: " b { (typed) } " (from "
                            (count(literals, "typing step", "typing steps")) ", shown as " code.run-text { "${TYPED_n}" } ")."
                        }
                    }
                }
            }
        }
    }
}

pub(super) fn records(r: &Report) -> Markup {
    let tl = &r.timeline;
    html! {
        section #records {
            h2 { "Records" }
            p.small { (count(tl.records, "record", "records")) " in the journal by kind and by status." }
            ul.counts { @for (k, n) in tl.kinds.iter().take(MAX_KINDS_SHOWN) { li { span.run-text { (k) } " " b { (n) } } } }
            @if tl.kinds.len() > MAX_KINDS_SHOWN { p.small { (tl.kinds.len() - MAX_KINDS_SHOWN) " more kinds." } }
            ul.counts { @for (k, n) in &tl.statuses { li { span.run-text { (k) } " " b { (n) } } } }
        }
    }
}
