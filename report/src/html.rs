//! `report.html`: one self-contained file, rendered with maud, which escapes every string it is
//! given. No string from the run is ever written as markup, into the style, into a URL or into
//! an attribute other than text-like ones (`alt`, `data-label` carry only our own words): the
//! only `href`s are `#anchors` built from numbers, the only `src`s are `data:` images built from
//! bytes whose signature was checked. There is no script at all, and the Content-Security-Policy
//! forbids every fetch but `data:` images and the one inline style, pinned by its hash.

use crate::limits::{JUMP_FIELD, JUMP_MESSAGE, JUMP_URL};
use crate::model::{Report, RunState};
use crate::notes::Level;
use crate::text::{bytes, count, duration, offset, rail_offset};
use crate::timeline::{
    FailWhat, Failure, Frame, FrameState, Headline, Outcome, Page, Step, ToolCall, What,
};
use base64::Engine as _;
use cdp_evidence::{VerdictReason, Verified};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use sha2::{Digest, Sha256};

mod failures;
mod tables;

use failures::{
    fail_badge, fail_line, failure, failure_href, location, repeats, step_link, where_,
};
use tables::{console_table, records, redactions, requests_table, typing_table};

/// The report's only style, inlined verbatim.
pub(crate) const STYLE: &str = include_str!("report.css");

/// `'sha256-…'` of [`STYLE`], as the CSP names it.
pub(crate) fn style_hash() -> String {
    let digest = Sha256::digest(STYLE.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The Content-Security-Policy of the report.
pub(crate) fn csp() -> String {
    format!(
        "default-src 'none'; img-src data:; style-src {}; base-uri 'none'; form-action 'none'",
        style_hash()
    )
}

pub(crate) fn render(r: &Report) -> String {
    let title = format!("Run {} — cdp-relay report", r.run_id);
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(csp());
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                meta name="color-scheme" content="light dark";
                meta name="generator" content=(concat!("cdp-report ", env!("CARGO_PKG_VERSION")));
                title { (title) }
                link rel="icon" href="data:,";
                style { (PreEscaped(STYLE)) }
            }
            body {
                (header(r))
                main.wrap {
                    (notes(r))
                    (jump_list(r))
                    (filmstrip(r))
                    (requests_table(r))
                    (console_table(r))
                    (typing_table(r))
                    (redactions(r))
                    (records(r))
                    footer {
                        "Rendered by cdp-report " (env!("CARGO_PKG_VERSION"))
                        " from the run's journal. Times are offsets from the run start; clock times are UTC. "
                        "This file makes no network request and runs no script."
                    }
                }
            }
        }
    };
    markup.into_string()
}

/// The run's name, when and how it ran, and its figures.
fn header(r: &Report) -> Markup {
    let tl = &r.timeline;
    let totals = &tl.totals;
    let frames = &r.frames;
    html! {
        header.top {
            div.wrap {
                p.eyebrow { "cdp-relay evidence report" }
                h1 { "Run " code.run-text { (r.run_id) } }
                p.meta {
                    @if let Some(s) = &r.session { span { "Session " code.run-text { (s) } } }
                    @if let Some(t) = &r.started_utc { span { "Started " (t) } }
                    @if let Some(d) = r.duration_ms { span { (duration(d)) } }
                    span.state { (state_words(&r.state)) }
                }
                p.meta.replay {
                    "Replay it as a Playwright test (typed text from environment variables): "
                    code.run-text { "cdp-relay export " (r.run_id) " --out " (crate::replay::SPEC_FILE) }
                }
                p.meta.replay {
                    "Open it in Playwright's trace viewer: "
                    code.run-text { "cdp-relay export " (r.run_id) " --format trace --out run.zip" }
                    ", then "
                    code.run-text { "npx playwright show-trace run.zip" }
                }
                dl.figures {
                    div { dt { "Steps" } dd { (tl.real_steps()) } }
                    div.bad[totals.requests > 0] { dt { "Failed requests" } dd { (totals.requests) } }
                    div.bad[totals.console > 0] { dt { "Console errors" } dd { (totals.console) } }
                    @if totals.other_errors() > 0 {
                        div.bad { dt { "Other failures" } dd { (totals.other_errors()) } }
                    }
                    div {
                        dt { "Frames" }
                        dd {
                            (frames.embedded)
                            @if frames.left_out + frames.refused > 0 {
                                span.out-of { " of " (frames.embedded + frames.left_out + frames.refused) }
                            }
                        }
                    }
                    div { dt { "Records" } dd { (tl.records) } }
                }
            }
        }
    }
}

/// The warnings, the reminder that pixels are not redacted, then the other notes.
fn notes(r: &Report) -> Markup {
    html! {
        section.notes aria-label="Notes" {
            @for n in r.notes.iter().filter(|n| n.level() == Level::Warn) {
                div.note.warn { strong { (n.title()) } (n.text()) }
            }
            div.note.pixels {
                strong { "Screenshots are not redacted." }
                "Text in the journal is sanitized, but pixels cannot be: review the frames before sharing this report."
            }
            @for n in r.notes.iter().filter(|n| n.level() == Level::Info) {
                div.note.info { strong { (n.title()) } (n.text()) }
            }
        }
    }
}

/// Every error by number, linked to where it happened. The model keeps at most `Caps::jump`
/// entries: the list shows them all and counts the rest.
fn jump_list(r: &Report) -> Markup {
    let tl = &r.timeline;
    let totals = &tl.totals;
    let more = totals.errors_not_listed(tl.jump.len());
    html! {
        @if totals.errors > 0 {
            nav.jump aria-label="Failures" {
                h2 {
                    (count(totals.errors, "failure", "failures"))
                    @if totals.repeated > 0 {
                        " " span.out-of { "(+" (totals.repeated) " repeats)" }
                    }
                }
                ol {
                    @for f in tl.jump.iter().map(|&i| &tl.failures[i]) {
                        li { a href=(failure_href(r, f)) {
                            span.failure-id { "F" (f.id) }
                            span.jump-text { (fail_badge(f)) " " (fail_line(f)) @if let Some(rep) = &f.repeat { " " span.repeats { "×" (rep.count) " more" } } }
                            span.where { (where_(r, f)) }
                        } }
                    }
                }
                @if more > 0 {
                    p.small { (more) " more, counted in the figures above; the tables below list the first and the last ones." }
                }
            }
        }
    }
}

fn filmstrip(r: &Report) -> Markup {
    let steps = &r.timeline.steps;
    html! {
        section #filmstrip {
            h2 { "Filmstrip" }
            @if steps.is_empty() {
                p.empty { "No steps were recorded." }
            } @else {
                ol.steps { @for s in steps { (step(r, s)) } }
            }
        }
    }
}

fn state_words(s: &RunState) -> String {
    match s {
        RunState::Finalized => "Finalized".into(),
        RunState::Running => "Not finalized".into(),
        RunState::Legacy(Some(w)) => format!("Legacy run ({w})"),
        RunState::Legacy(None) => "Legacy run".into(),
        RunState::Unknown => "No manifest".into(),
    }
}

/// A step's time on the rail, short enough to fit it ([`rail_offset`]).
fn rail_time(r: &Report, at_ms: Option<u64>, known: bool) -> Markup {
    match r.timeline.offset(at_ms) {
        Some(o) if known => html! { span.step-time { (rail_offset(o)) } },
        _ => html! { span.step-time { "no time" } },
    }
}

fn headline(h: &Headline) -> Markup {
    html! {
        @if !h.verb.is_empty() { (h.verb) }
        @if let Some(o) = &h.object { @if !h.verb.is_empty() { " " } code.run-text { (o) } }
        @if let Some(n) = &h.note { " " span.headline-note { (n) } }
    }
}

fn page(p: &Page, inferred: bool, tabs: usize) -> Markup {
    html! {
        p.page {
            @if tabs > 1 { @if let Some(t) = p.tab { span.tab { "tab " (t) } } }
            @if let Some(t) = &p.title { span.title.run-text { (t) } }
            @if let Some(u) = &p.url { span.url.run-text { (u) } }
            @if p.title.is_none() && p.url.is_none() { span { "page without title or URL" } }
            @if inferred { span.last { "(last known page)" } }
        }
    }
}

fn badge(o: &Outcome) -> Markup {
    html! { span class={ "badge " (o.class()) } { (o.word()) } }
}

/// The entry that stands for the steps left out of a run too long to show whole.
fn gap(r: &Report, s: &Step) -> Markup {
    let (until, effects) = match &s.what {
        What::Gap {
            until_ms, effects, ..
        } => (*until_ms, *effects),
        _ => (None, 0),
    };
    html! {
        li.step.noframe.gap id=(s.anchor()) {
            div.rail { span.step-number { "…" } (rail_time(r, s.at_ms, s.time_known)) }
            div.card {
                div.step-head { h3.what { (headline(&s.what.headline(1))) } }
                p.small {
                    "Between " (r.timeline.when(s.at_ms, s.time_known))
                    @if let Some(u) = until { " and " (r.timeline.when(Some(u), true)) }
                    ". Their failures are counted in the figures above"
                    @if s.failure_count > 0 { " (" (s.failure_count) " during them; the first are listed below)" }
                    "."
                    @if effects > 0 { " The agent's tool calls among them did " (count(effects as usize, "browser action", "browser actions")) "." }
                }
                @if !s.failures.is_empty() {
                    ul.fails { @for &i in &s.failures { (failure(r, &r.timeline.failures[i])) } }
                }
            }
        }
    }
}

/// One entry of the filmstrip: the rail (number, time), the card, and the frames beside it.
fn step(r: &Report, s: &Step) -> Markup {
    if matches!(s.what, What::Gap { .. }) {
        return gap(r, s);
    }
    let tl = &r.timeline;
    let has_frames = !s.frames.is_empty() || !s.files.is_empty();
    let has_fail = s.failures.iter().any(|&i| tl.failures[i].is_error);
    let class = format!(
        "step outcome-{}{}{}{}",
        s.outcome.class(),
        if has_fail { " has-fail" } else { "" },
        if has_frames { "" } else { " noframe" },
        if s.number.is_none() { " setup" } else { "" }
    );
    html! {
        li id=(s.anchor()) class=(class) {
            div.rail {
                span.step-number { (s.label()) }
                (rail_time(r, s.at_ms, s.time_known))
            }
            div.card {
                div.step-head {
                    h3.what { (headline(&s.what.headline(s.repeat))) }
                    @if s.number.is_some() { (chips(s)) }
                }
                @if let Some(p) = &s.page { (page(p, s.page_inferred, tl.tabs)) }
                @if let What::Type { verdict: Some(v), .. } = &s.what { (verdict(v)) }
                @if let What::ToolCall(c) = &s.what { (tool_call(r, c)) }
                @if let Some(e) = &s.error { p.error-text.run-text { (e) } }
                @if !s.fields.is_empty() {
                    dl.fields { @for (k, v) in &s.fields { dt.run-text { (k) } dd.run-text { (v) } } }
                }
                @if !s.failures.is_empty() {
                    ul.fails { @for &i in &s.failures { (failure(r, &tl.failures[i])) } }
                }
                @if s.more_failures > 0 {
                    p.small.more { "and " (count(s.more_failures, "more failure", "more failures")) " during this step (counted above; the tables list the first and the last ones of the run)." }
                }
                @if !s.plumbing.is_empty() { (fold(r, s)) }
            }
            @if has_frames { (frames_column(s)) }
        }
    }
}

/// Beside a step's headline: who recorded it, a withheld frame, its outcome, how long it took.
fn chips(s: &Step) -> Markup {
    html! {
        p.chips {
            @if let Some(src) = &s.source {
                span.chip.source.run-text { (src) @if let Some(t) = &s.tool { " · " (t) } }
            }
            @if let Some(w) = &s.withheld { span.chip { "frame withheld: " (w) } }
            @if s.outcome != Outcome::Ok { (badge(&s.outcome)) }
            @if let Some(d) = s.duration_ms { span.chip { (duration(d)) } }
        }
    }
}

/// The plumbing folded into a step: counts by category, the entries on opening.
fn fold(r: &Report, s: &Step) -> Markup {
    html! {
        details.fold {
            summary {
                "+"
                @for (i, (cat, (n, failed))) in s.fold_counts().iter().enumerate() {
                    @if i > 0 { " · " }
                    (n) " " (cat.words(*n))
                    @if *failed > 0 { " " span.failed-text { "(" (failed) " failed)" } }
                }
            }
            ol {
                @for p in &s.plumbing {
                    li {
                        span.entry-time { (r.timeline.when(p.at_ms, true)) }
                        code.run-text { (p.label) }
                        @if p.outcome == Outcome::Error { (badge(&p.outcome)) }
                        @if let Some(e) = &p.error { span.run-text.failed-text { (e) } }
                        @if let Some(d) = p.duration_ms { span.took { (duration(d)) } }
                    }
                }
                @if s.more_plumbing > 0 {
                    li { "… " (s.more_plumbing) " more" }
                }
            }
        }
    }
}

/// A step's frames and other artifacts.
fn frames_column(s: &Step) -> Markup {
    html! {
        div.frames {
            @for f in &s.frames { (frame(s, f)) }
            @if s.more_frames > 0 {
                div.noimg { (count(s.more_frames, "more artifact", "more artifacts")) " of this step not listed" }
            }
            @for file in &s.files {
                div.noimg.refused[file.refused.is_some()] {
                    @match file.refused {
                        Some(why) => { "Artifact refused: " (why) }
                        None => { "Artifact (not an image, not embedded)" }
                    }
                    span.artifact-path.run-text { (file.shown_path) }
                }
            }
        }
    }
}

fn frame(s: &Step, f: &Frame) -> Markup {
    let alt = match s.number {
        Some(n) => format!("Frame of step {n}"),
        None => "Frame during setup".to_owned(),
    };
    html! {
        @match &f.state {
            FrameState::Embedded { data_uri, bytes: n } => {
                details.frame {
                    summary { img src=(data_uri) alt=(alt) decoding="async"; }
                }
                p.frame-caption { (f.kind.name()) " · " (bytes(*n)) " · " span.hint {} }
            }
            FrameState::LeftOut(why) => {
                div.noimg { "Frame left out: " (why) span.artifact-path.run-text { (f.shown_path) } }
            }
            FrameState::Refused(why) => {
                div.noimg.refused { "Frame refused: " (why) span.artifact-path.run-text { (f.shown_path) } }
            }
            FrameState::Pending => {}
        }
    }
}

/// What a tool call returned, and the CDP actions done during it.
fn tool_call(r: &Report, c: &ToolCall) -> Markup {
    html! {
        @if let Some(ret) = &c.returned { p.small { "Returned " (ret) } }
        @if !c.effects.is_empty() {
            ol.effects aria-label="In the browser" {
                @for e in &c.effects {
                    li {
                        span.entry-time { (r.timeline.when(e.at_ms, true)) }
                        (headline(&e.headline()))
                        @if e.outcome != Outcome::Ok { " " (badge(&e.outcome)) }
                        @if let Some(err) = &e.error { " " span.run-text.failed-text { (err) } }
                        @if let Some(v) = e.verdict() { (verdict(v)) }
                    }
                }
                @if c.more_effects > 0 { li { "… " (c.more_effects) " more" } }
            }
        }
    }
}

/// Whether typed text landed, as the relay's observer judged it in the page (value-free).
fn verdict(v: &crate::timeline::Verdict) -> Markup {
    let (class, mark) = match v.verified {
        Verified::True => ("verdict-landed", "✓"),
        Verified::False => ("verdict-missed", "✗"),
        Verified::Indeterminate => ("verdict-unknown", "?"),
    };
    let reason = v.reason.as_str();
    html! {
        p class=(format!("verdict {class}")) {
            span.verdict-mark { (mark) } " " b { (v.words()) }
            // The note is the reason told for people; the bare reason only stands in for a
            // missing note.
            @if !v.note.is_empty() { " — " span.run-text { (v.note) } }
            @else if !reason.is_empty() && v.reason != VerdictReason::Landed { " — " span.run-text { (reason.replace('-', " ")) } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_style_cannot_end_its_element_and_the_hash_is_of_it() {
        assert!(!STYLE.to_ascii_lowercase().contains("</style"));
        assert!(!STYLE.contains("url("), "the style fetches nothing");
        assert!(!STYLE.contains("@import"));
        let h = style_hash();
        assert!(h.starts_with("'sha256-") && h.ends_with('\''));
        // 32 bytes of SHA-256 are 44 base64 characters.
        assert_eq!(h.len(), "'sha256-".len() + 44 + 1);
        assert!(csp().starts_with("default-src 'none'; img-src data:; style-src 'sha256-"));
    }
}
