//! `summary.md`: the run as plain text, readable in a terminal and by an MCP tool, and safe in a
//! Markdown viewer: every journal string is a code span (so it cannot become a link, emphasis
//! or HTML), already stripped of control characters and cut to length.

use crate::limits::{MAX_KINDS_SHOWN, MAX_REDACTION_NAME, MAX_REDACTION_NAMES};
use crate::model::{Report, RunState};
use crate::notes::Level;
use crate::text::{count, duration, md_code, offset};
use crate::timeline::{FailWhat, Failure, FrameState, Headline, Page, Step, What};
use cdp_evidence::Redactions;
use std::fmt::Write as _;

fn headline(h: &Headline) -> String {
    let mut s = h.verb.clone();
    if let Some(o) = &h.object {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(&md_code(o));
    }
    if let Some(n) = &h.note {
        s.push(' ');
        s.push_str(&md_code_if_needed(n));
    }
    s
}

/// Notes we build are our words plus journal text in a few cases (a URL): quote them when they
/// hold anything Markdown would interpret.
fn md_code_if_needed(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_alphanumeric() || " ().,×→-:".contains(c))
    {
        s.to_owned()
    } else {
        md_code(s)
    }
}

fn failure_line(r: &Report, f: &Failure) -> String {
    let when = r.timeline.when(f.at_ms, f.time_known);
    let step = match r.timeline.step_of(f).number {
        Some(n) => format!("step {n}"),
        None => "setup".into(),
    };
    let what = match &f.what {
        FailWhat::Request {
            method,
            url,
            status,
            resource_type,
            duration_ms,
            error_text,
        } => {
            let mut s = format!(
                "{} {} {}",
                status.map_or("failed".to_owned(), |s| s.to_string()),
                md_code(method),
                md_code(url)
            );
            if let Some(t) = resource_type {
                let _ = write!(s, " ({})", md_code(t));
            }
            if let Some(d) = duration_ms {
                let _ = write!(s, ", {}", duration(*d));
            }
            if let Some(e) = error_text {
                let _ = write!(s, ": {}", md_code(e));
            }
            s
        }
        FailWhat::Console {
            level,
            text,
            url,
            line,
            column,
        } => {
            let one = text.replace('\n', " ⏎ ");
            let mut s = format!("console.{level} {}", md_code(&one));
            if let Some(u) = url {
                let mut loc = u.clone();
                if let Some(l) = line {
                    let _ = write!(loc, ":{l}");
                    if let Some(c) = column {
                        let _ = write!(loc, ":{c}");
                    }
                }
                let _ = write!(s, " at {}", md_code(&loc));
            }
            s
        }
        FailWhat::ConnectionLost { detail } => {
            let mut s = "browser connection lost".to_owned();
            if let Some(d) = detail {
                let _ = write!(s, ": {}", md_code(d));
            }
            s
        }
        FailWhat::Generic { kind, fields } => {
            let parts: Vec<String> = fields
                .iter()
                .map(|(k, v)| md_code(&format!("{k}={v}")))
                .collect();
            format!(
                "{} (unreadable payload) {}",
                md_code(kind.as_str()),
                parts.join(" ")
            )
        }
    };
    let mark = if f.is_error { "✗" } else { "!" };
    let mut line = format!("F{} {mark} {step}, {when}: {what}", f.id);
    if let Some(rep) = &f.repeat {
        let _ = write!(line, " (×{} more", rep.count);
        if let (Some(a), Some(b)) = (
            r.timeline.offset(rep.first_ms),
            r.timeline.offset(rep.last_ms),
        ) {
            let _ = write!(line, ", {} – {}", offset(a), offset(b));
        }
        line.push(')');
    }
    line
}

/// What a tool call returned, and the CDP actions done during it, one per line.
fn tool_call(out: &mut String, r: &Report, c: &crate::timeline::ToolCall, indent: &str) {
    if let Some(ret) = &c.returned {
        let _ = writeln!(out, "{indent}returned {ret}");
    }
    for e in &c.effects {
        let _ = write!(
            out,
            "{indent}→ {} {}",
            r.timeline.when(e.at_ms, true),
            headline(&e.headline())
        );
        if e.outcome != crate::timeline::Outcome::Ok {
            let _ = write!(out, " [{}]", e.outcome.word());
        }
        if let Some(err) = &e.error {
            let _ = write!(out, ": {}", md_code(err));
        }
        if let Some(v) = e.verdict() {
            let _ = write!(out, " — {}", verdict_words(v));
        }
        out.push('\n');
    }
    if c.more_effects > 0 {
        let _ = writeln!(out, "{indent}→ … {} more", c.more_effects);
    }
}

fn verdict_words(v: &crate::timeline::Verdict) -> String {
    format!(
        "verified: {} ({}) {}",
        v.words(),
        md_code(v.reason.as_str()),
        md_code(&v.note)
    )
}

/// The lines of one step: its headline, then what the step did and met, indented.
fn step_block(out: &mut String, r: &Report, s: &Step) {
    if let What::Gap {
        until_ms, effects, ..
    } = &s.what
    {
        return gap_block(out, r, s, *until_ms, *effects);
    }
    let label = match s.number {
        Some(n) => format!("{n:>3}."),
        None => "  -".to_owned(),
    };
    let _ = write!(
        out,
        "{label} {}  {}",
        r.timeline.when(s.at_ms, s.time_known),
        headline(&s.what.headline(s.repeat))
    );
    if s.number.is_some() {
        let _ = write!(out, "  [{}", s.outcome.word());
        if let Some(d) = s.duration_ms {
            let _ = write!(out, ", {}", duration(d));
        }
        out.push(']');
    }
    if let Some(src) = &s.source {
        let _ = write!(out, " (from {})", md_code(src));
    }
    out.push('\n');
    if let What::Type {
        verdict: Some(v), ..
    } = &s.what
    {
        let _ = writeln!(out, "{INDENT}{}", verdict_words(v));
    }
    if let What::ToolCall(c) = &s.what {
        tool_call(out, r, c, INDENT);
    }
    if let Some(p) = &s.page {
        page_line(out, p, s.page_inferred);
    }
    if let Some(e) = &s.error {
        let _ = writeln!(out, "{INDENT}error: {}", md_code(e));
    }
    for (k, v) in &s.fields {
        let _ = writeln!(out, "{INDENT}{}: {}", md_code(k), md_code(v));
    }
    fold_line(out, s);
    artifact_lines(out, s);
    for &i in &s.failures {
        let _ = writeln!(out, "{INDENT}{}", failure_line(r, &r.timeline.failures[i]));
    }
    if s.more_failures > 0 {
        let _ = writeln!(
            out,
            "{INDENT}… and {} more failures during this step",
            s.more_failures
        );
    }
    if s.more_frames > 0 {
        let _ = writeln!(out, "{INDENT}… and {} more artifacts", s.more_frames);
    }
}

/// Under a step's headline.
const INDENT: &str = "       ";

/// The entry that stands for the steps left out of a long run.
fn gap_block(out: &mut String, r: &Report, s: &Step, until_ms: Option<u64>, effects: u64) {
    let _ = write!(
        out,
        "  … {}  {}",
        r.timeline.when(s.at_ms, s.time_known),
        headline(&s.what.headline(1))
    );
    if let Some(u) = until_ms {
        let _ = write!(out, ", until {}", r.timeline.when(Some(u), true));
    }
    out.push('\n');
    if s.failure_count > 0 {
        let _ = writeln!(out, "{INDENT}{} failures during them", s.failure_count);
    }
    if effects > 0 {
        let _ = writeln!(out, "{INDENT}{effects} browser actions of their tool calls");
    }
    for &i in &s.failures {
        let _ = writeln!(out, "{INDENT}{}", failure_line(r, &r.timeline.failures[i]));
    }
}

fn page_line(out: &mut String, p: &Page, inferred: bool) {
    let mut parts = Vec::new();
    if let Some(t) = &p.title {
        parts.push(md_code(t));
    }
    if let Some(u) = &p.url {
        parts.push(md_code(u));
    }
    if !parts.is_empty() {
        let last = if inferred { " (last known)" } else { "" };
        let _ = writeln!(out, "{INDENT}page: {}{last}", parts.join(" — "));
    }
}

/// "+38 evaluations (2 failed), 3 queries": the plumbing folded into the step.
fn fold_line(out: &mut String, s: &Step) {
    let folds = s.fold_counts();
    if folds.is_empty() {
        return;
    }
    let parts: Vec<String> = folds
        .iter()
        .map(|(c, (n, failed))| {
            let mut p = format!("{n} {}", c.words(*n));
            if *failed > 0 {
                let _ = write!(p, " ({failed} failed)");
            }
            p
        })
        .collect();
    let _ = writeln!(out, "{INDENT}+{}", parts.join(", "));
}

/// The step's frames and other artifacts, and the frame the relay withheld.
fn artifact_lines(out: &mut String, s: &Step) {
    for f in &s.frames {
        let state = match &f.state {
            FrameState::Embedded { .. } => "frame".to_owned(),
            FrameState::LeftOut(w) => format!("frame left out ({w})"),
            FrameState::Refused(w) => format!("frame refused ({w})"),
            FrameState::Pending => continue,
        };
        let _ = writeln!(out, "{INDENT}{state}: {}", md_code(&f.shown_path));
    }
    for file in &s.files {
        let state = match file.refused {
            Some(w) => format!("artifact refused ({w})"),
            None => "artifact".to_owned(),
        };
        let _ = writeln!(out, "{INDENT}{state}: {}", md_code(&file.shown_path));
    }
    if let Some(w) = &s.withheld {
        let _ = writeln!(out, "{INDENT}frame withheld: {}", md_code(w));
    }
}

pub(crate) fn render(r: &Report) -> String {
    let mut out = String::new();
    header(&mut out, r);
    notes(&mut out, r);
    failures(&mut out, r);
    timeline(&mut out, r);
    out
}

/// The run's title and figures.
fn header(out: &mut String, r: &Report) {
    let tl = &r.timeline;
    let _ = writeln!(out, "# cdp-relay run {}\n", md_code(&r.run_id));
    if let Some(s) = &r.session {
        let _ = writeln!(out, "- Session: {}", md_code(s));
    }
    let mut when = Vec::new();
    if let Some(t) = &r.started_utc {
        when.push(format!("started {t}"));
    }
    if let Some(d) = r.duration_ms {
        when.push(format!("duration {}", duration(d)));
    }
    when.push(state_words(&r.state));
    let _ = writeln!(out, "- Run: {}", when.join(", "));
    let _ = write!(
        out,
        "- Steps: {} · failed requests: {} · console errors: {} · frames embedded: {}",
        tl.real_steps(),
        tl.totals.requests,
        tl.totals.console,
        r.frames.embedded,
    );
    if tl.totals.repeated > 0 {
        let _ = write!(out, " · repeats folded: {}", tl.totals.repeated);
    }
    out.push('\n');
    let kinds: Vec<String> = tl
        .kinds
        .iter()
        .take(MAX_KINDS_SHOWN)
        .map(|(k, n)| format!("{} {n}", md_code(k)))
        .collect();
    let _ = writeln!(
        out,
        "- Records: {} (by kind: {})",
        tl.records,
        if kinds.is_empty() {
            "none".to_owned()
        } else {
            kinds.join(", ")
        }
    );
    let statuses: Vec<String> = tl
        .statuses
        .iter()
        .map(|(k, n)| format!("{} {n}", md_code(k)))
        .collect();
    if !statuses.is_empty() {
        let _ = writeln!(out, "- By status: {}", statuses.join(", "));
    }
    redactions(out, r.redactions.as_ref());
    out.push('\n');
}

fn state_words(state: &RunState) -> String {
    match state {
        RunState::Finalized => "finalized".to_owned(),
        RunState::Running => "not finalized".to_owned(),
        RunState::Legacy(Some(w)) => format!("legacy run, status {}", md_code(w)),
        RunState::Legacy(None) => "legacy run".to_owned(),
        RunState::Unknown => "no manifest".to_owned(),
    }
}

/// Redaction counts by rule and by registered secret name (never a value).
fn redactions(out: &mut String, redactions: Option<&Redactions>) {
    let Some(red) = redactions else {
        out.push_str("- Redactions: not reported\n");
        return;
    };
    let name = |k: &str| crate::text::line(k, MAX_REDACTION_NAME);
    let mut parts: Vec<String> = red
        .rules
        .iter()
        .take(MAX_REDACTION_NAMES)
        .map(|(k, n)| format!("{} {n}", md_code(&name(k))))
        .collect();
    let (named, typed, literals) = crate::text::secret_counts(&red.secrets);
    parts.extend(
        named
            .iter()
            .take(MAX_REDACTION_NAMES)
            .map(|(k, n)| format!("{} {n}", md_code(&format!("${{{}}}", name(k))))),
    );
    if literals > 0 {
        parts.push(format!("typed-text echoes {typed}"));
    }
    let _ = write!(out, "- Redactions: {}", red.total);
    if !parts.is_empty() {
        let _ = write!(out, " ({})", parts.join(", "));
    }
    if red.truncated > 0 {
        let _ = write!(out, "; {} cut at a length limit", red.truncated);
    }
    out.push('\n');
}

/// The warnings, the reminder that pixels are not redacted, then the other notes.
fn notes(out: &mut String, r: &Report) {
    for n in r.notes.iter().filter(|n| n.level() == Level::Warn) {
        let _ = writeln!(out, "> **Warning — {}:** {}\n", n.title(), n.text());
    }
    out.push_str(
        "> Screenshots are not redacted: review the frames in report.html before sharing it.\n\n",
    );
    for n in r.notes.iter().filter(|n| n.level() == Level::Info) {
        let _ = writeln!(out, "> {}: {}\n", n.title(), n.text());
    }
}

/// The failures the jump list names, and how many it does not.
fn failures(out: &mut String, r: &Report) {
    let tl = &r.timeline;
    if tl.totals.errors == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "## {}\n",
        count(tl.totals.errors, "failure", "failures")
    );
    for &i in &tl.jump {
        let _ = writeln!(out, "- {}", failure_line(r, &tl.failures[i]));
    }
    let more = tl.totals.errors_not_listed(tl.jump.len());
    if more > 0 {
        let _ = writeln!(
            out,
            "- … and {more} more (the first {} are listed)",
            tl.jump.len()
        );
    }
    out.push('\n');
}

/// Every step, in a fenced block.
fn timeline(out: &mut String, r: &Report) {
    out.push_str("## Timeline\n\n");
    if r.timeline.steps.is_empty() {
        out.push_str("No steps were recorded.\n");
        return;
    }
    let mut body = String::new();
    for s in &r.timeline.steps {
        step_block(&mut body, r, s);
    }
    // Inside a fenced block nothing is interpreted, so code spans are not needed there; but a
    // line of backticks could close the fence: the fence is made longer than any run.
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let _ = writeln!(out, "{fence}text");
    out.push_str(&body);
    let _ = writeln!(out, "{fence}");
}
