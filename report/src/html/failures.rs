//! A failure as the report shows it: its entry under a step, its line in the jump list, its
//! badge, and the links between a failure, its step and the frame taken after it.

use super::*;

pub(super) fn where_(r: &Report, f: &Failure) -> String {
    let s = r.timeline.step_of(f);
    let step = match s.number {
        Some(n) => format!("step {n}"),
        None => "setup".into(),
    };
    format!("{step} · {}", r.timeline.when(f.at_ms, f.time_known))
}

pub(super) fn fail_badge(f: &Failure) -> Markup {
    let (class, word) = match &f.what {
        FailWhat::Request {
            status: Some(s), ..
        } => ("error", s.to_string()),
        FailWhat::Request { .. } => ("error", "failed".to_owned()),
        FailWhat::Console { level, .. } => (
            if f.is_error { "error" } else { "warning" },
            format!("console.{level}"),
        ),
        FailWhat::ConnectionLost { .. } => ("error", "connection".to_owned()),
        FailWhat::Generic { kind, .. } => (
            if f.is_error { "error" } else { "warning" },
            kind.as_str().to_owned(),
        ),
    };
    html! { span class={ "badge " (class) } { (word) } }
}

/// One line naming a failure (for the jump list).
pub(super) fn fail_line(f: &Failure) -> Markup {
    html! {
        @match &f.what {
            FailWhat::Request { method, url, error_text, status, .. } => {
                span.http-method { (method) } " " code.run-text { (shorten(url, JUMP_URL)) }
                @if status.is_none() { @if let Some(e) = error_text { " " span.run-text { (e) } } }
            }
            FailWhat::Console { text, .. } => {
                span.run-text { (first_line(text, JUMP_MESSAGE)) }
            }
            FailWhat::ConnectionLost { .. } => { "The browser connection was lost" }
            FailWhat::Generic { fields, .. } => {
                span.run-text { "record with an unreadable payload" @if let Some((k, v)) = fields.first() { " (" (k) ": " (shorten(v, JUMP_FIELD)) ")" } }
            }
        }
    }
}

/// At most `max` characters of an already cleaned string.
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

fn first_line(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    let mut out: String = first.chars().take(max).collect();
    if first.chars().count() > max || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

pub(super) fn location(
    url: &Option<String>,
    line: Option<u32>,
    column: Option<u32>,
) -> Option<String> {
    let url = url.as_deref()?;
    let mut s = url.to_owned();
    if let Some(l) = line {
        s.push_str(&format!(":{l}"));
        if let Some(c) = column {
            s.push_str(&format!(":{c}"));
        }
    }
    Some(s)
}

fn frame_link(r: &Report, f: &Failure) -> Markup {
    html! {
        @if let Some(i) = f.frame_after {
            @let s = &r.timeline.steps[i];
            " · " a href={ "#" (s.anchor()) } {
                "frame after: " @match s.number { Some(n) => { "step " (n) } None => { "setup" } }
            }
        }
    }
}

/// "×N more, +a – +b": the repeats a record stands for.
pub(super) fn repeats(r: &Report, f: &Failure) -> Markup {
    html! {
        @if let Some(rep) = &f.repeat {
            span.repeats {
                "×" (rep.count) " more"
                @if let (Some(a), Some(b)) = (r.timeline.offset(rep.first_ms), r.timeline.offset(rep.last_ms)) {
                    ", " (offset(a)) " – " (offset(b))
                }
            }
        }
    }
}

pub(super) fn failure(r: &Report, f: &Failure) -> Markup {
    html! {
        li id=(f.anchor()) class={ "fail" @if !f.is_error { " warning" } } {
            (repeats(r, f))
            @match &f.what {
                FailWhat::Request { method, url, status, resource_type, duration_ms, error_text } => {
                    span.head {
                        (fail_badge(f)) span.http-method { (method) } code.run-text { (url) }
                        span.failure-id { "F" (f.id) }
                    }
                    span.sub {
                        (r.timeline.when(f.at_ms, f.time_known))
                        @if let Some(t) = resource_type { " · " span.run-text { (t) } }
                        @if let Some(d) = duration_ms { " · " (duration(*d)) }
                        @if status.is_some() { @if let Some(e) = error_text { " · " span.run-text { (e) } } }
                        @if status.is_none() { @if let Some(e) = error_text { " · " span.run-text { (e) } } }
                        (frame_link(r, f))
                    }
                }
                FailWhat::Console { text, url, line, column, .. } => {
                    span.head { (fail_badge(f)) span.failure-id { "F" (f.id) } }
                    pre.console-text.run-text { (text) }
                    span.sub {
                        (r.timeline.when(f.at_ms, f.time_known))
                        @if let Some(loc) = location(url, *line, *column) { " · " span.run-text.mono { (loc) } }
                        (frame_link(r, f))
                    }
                }
                FailWhat::ConnectionLost { detail } => {
                    span.head { (fail_badge(f)) "The browser connection was lost without a close frame" span.failure-id { "F" (f.id) } }
                    span.sub {
                        (r.timeline.when(f.at_ms, f.time_known))
                        @if let Some(d) = detail { " · " span.run-text { (d) } }
                    }
                }
                FailWhat::Generic { fields, .. } => {
                    span.head { (fail_badge(f)) "Payload does not fit its kind; shown field by field" span.failure-id { "F" (f.id) } }
                    dl.fields { @for (k, v) in fields { dt.run-text { (k) } dd.run-text { (v) } } }
                    span.sub { (r.timeline.when(f.at_ms, f.time_known)) (frame_link(r, f)) }
                }
            }
            @if let Some(src) = &f.source { span.sub { "from " span.run-text { (src) } } }
        }
    }
}

/// Where a link to a failure goes: the failure under its step when it is listed there, else
/// the step (a step lists only its first failures).
pub(super) fn failure_href(r: &Report, f: &Failure) -> String {
    let tl = &r.timeline;
    let s = tl.step_of(f);
    if s.failures.iter().any(|&i| tl.failures[i].id == f.id) {
        format!("#{}", f.anchor())
    } else {
        format!("#{}", s.anchor())
    }
}

pub(super) fn step_link(r: &Report, f: &Failure) -> Markup {
    let s = r.timeline.step_of(f);
    html! {
        a href=(failure_href(r, f)) {
            @match s.number { Some(n) => { (n) } None => { "setup" } }
        }
    }
}
