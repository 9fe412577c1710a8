//! `summary.md`: the run as plain text, readable in a terminal and by an MCP tool, and safe in a
//! Markdown viewer: every journal string is a code span (so it cannot become a link, emphasis
//! or HTML), already stripped of control characters and cut to length.

use crate::model::{Level, Report, RunState};
use crate::text::{count, duration, md_code, offset};
use crate::timeline::{FailWhat, Failure, FrameState, Headline, Step};
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

fn at(r: &Report, at_ms: Option<u64>, known: bool) -> String {
    match r.timeline.offset(at_ms) {
        Some(o) if known => offset(o),
        _ => "time unknown".into(),
    }
}

fn failure_line(r: &Report, f: &Failure) -> String {
    let when = at(r, f.at_ms, f.time_known);
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
            at(r, e.at_ms, true),
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

fn step_block(out: &mut String, r: &Report, s: &Step) {
    if let crate::timeline::What::Gap {
        until_ms, effects, ..
    } = &s.what
    {
        let _ = write!(
            out,
            "  … {}  {}",
            at(r, s.at_ms, s.time_known),
            headline(&s.what.headline(1))
        );
        if let Some(u) = until_ms {
            let _ = write!(out, ", until {}", at(r, Some(*u), true));
        }
        out.push('\n');
        if s.failure_count > 0 {
            let _ = writeln!(out, "       {} failures during them", s.failure_count);
        }
        if *effects > 0 {
            let _ = writeln!(out, "       {effects} browser actions of their tool calls");
        }
        for &i in &s.failures {
            let _ = writeln!(out, "       {}", failure_line(r, &r.timeline.failures[i]));
        }
        return;
    }
    let label = match s.number {
        Some(n) => format!("{n:>3}."),
        None => "  -".to_owned(),
    };
    let _ = write!(
        out,
        "{label} {}  {}",
        at(r, s.at_ms, s.time_known),
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
    let indent = "       ";
    if let crate::timeline::What::Type {
        verdict: Some(v), ..
    } = &s.what
    {
        let _ = writeln!(out, "{indent}{}", verdict_words(v));
    }
    if let crate::timeline::What::ToolCall(c) = &s.what {
        tool_call(out, r, c, indent);
    }
    if let Some(p) = &s.page {
        let mut parts = Vec::new();
        if let Some(t) = &p.title {
            parts.push(md_code(t));
        }
        if let Some(u) = &p.url {
            parts.push(md_code(u));
        }
        if !parts.is_empty() {
            let last = if s.page_inferred { " (last known)" } else { "" };
            let _ = writeln!(out, "{indent}page: {}{last}", parts.join(" — "));
        }
    }
    if let Some(e) = &s.error {
        let _ = writeln!(out, "{indent}error: {}", md_code(e));
    }
    for (k, v) in &s.fields {
        let _ = writeln!(out, "{indent}{}: {}", md_code(k), md_code(v));
    }
    let folds = s.fold_counts();
    if !folds.is_empty() {
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
        let _ = writeln!(out, "{indent}+{}", parts.join(", "));
    }
    for f in &s.frames {
        let state = match &f.state {
            FrameState::Embedded { .. } => "frame".to_owned(),
            FrameState::LeftOut(w) => format!("frame left out ({w})"),
            FrameState::Refused(w) => format!("frame refused ({w})"),
            FrameState::Pending => continue,
        };
        let _ = writeln!(out, "{indent}{state}: {}", md_code(&f.shown_path));
    }
    for file in &s.files {
        let state = match file.refused {
            Some(w) => format!("artifact refused ({w})"),
            None => "artifact".to_owned(),
        };
        let _ = writeln!(out, "{indent}{state}: {}", md_code(&file.shown_path));
    }
    if let Some(w) = &s.withheld {
        let _ = writeln!(out, "{indent}frame withheld: {}", md_code(w));
    }
    for &i in &s.failures {
        let _ = writeln!(out, "{indent}{}", failure_line(r, &r.timeline.failures[i]));
    }
    if s.more_failures > 0 {
        let _ = writeln!(
            out,
            "{indent}… and {} more failures during this step",
            s.more_failures
        );
    }
    if s.more_frames > 0 {
        let _ = writeln!(out, "{indent}… and {} more artifacts", s.more_frames);
    }
}

pub(crate) fn render(r: &Report) -> String {
    let tl = &r.timeline;
    let mut out = String::new();
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
    when.push(match &r.state {
        RunState::Finalized => "finalized".to_owned(),
        RunState::Running => "not finalized".to_owned(),
        RunState::Legacy(Some(w)) => format!("legacy run, status {}", md_code(w)),
        RunState::Legacy(None) => "legacy run".to_owned(),
        RunState::Unknown => "no manifest".to_owned(),
    });
    let _ = writeln!(out, "- Run: {}", when.join(", "));
    let errors: Vec<&Failure> = tl.jump.iter().map(|&i| &tl.failures[i]).collect();
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
        .take(40)
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
    match &r.redactions {
        Some(red) => {
            let mut parts: Vec<String> = red
                .rules
                .iter()
                .take(100)
                .map(|(k, n)| format!("{} {n}", md_code(&crate::text::line(k, 60))))
                .collect();
            let (named, typed, literals) = crate::text::secret_counts(&red.secrets);
            parts.extend(named.iter().take(100).map(|(k, n)| {
                format!(
                    "{} {n}",
                    md_code(&format!("${{{}}}", crate::text::line(k, 60)))
                )
            }));
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
        None => out.push_str("- Redactions: not reported\n"),
    }
    out.push('\n');
    for n in r.notes.iter().filter(|n| n.level == Level::Warn) {
        let _ = writeln!(out, "> **Warning — {}:** {}\n", n.title, n.text);
    }
    out.push_str(
        "> Screenshots are not redacted: review the frames in report.html before sharing it.\n\n",
    );
    for n in r.notes.iter().filter(|n| n.level == Level::Info) {
        let _ = writeln!(out, "> {}: {}\n", n.title, n.text);
    }

    if tl.totals.errors > 0 {
        let _ = writeln!(
            out,
            "## {}\n",
            count(tl.totals.errors, "failure", "failures")
        );
        for f in &errors {
            let _ = writeln!(out, "- {}", failure_line(r, f));
        }
        if tl.totals.errors > errors.len() {
            let _ = writeln!(
                out,
                "- … and {} more (the first {} are listed)",
                tl.totals.errors - errors.len(),
                errors.len()
            );
        }
        out.push('\n');
    }

    out.push_str("## Timeline\n\n");
    if tl.steps.is_empty() {
        out.push_str("No steps were recorded.\n");
    } else {
        out.push_str("```text\n");
        let start = out.len();
        for s in &tl.steps {
            step_block(&mut out, r, s);
        }
        // Inside a fenced block nothing is interpreted, so code spans are not needed there;
        // but a line of backticks could close the fence: the fence is made longer than any run.
        let body = out.split_off(start);
        let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        if longest >= 3 {
            let fence = "`".repeat(longest + 1);
            out.truncate(out.len() - "```text\n".len());
            let _ = writeln!(out, "{fence}text");
            out.push_str(&body);
            let _ = writeln!(out, "{fence}");
        } else {
            out.push_str(&body);
            out.push_str("```\n");
        }
    }
    out
}
