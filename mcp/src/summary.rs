//! `evidence_summary`: what an agent needs to reason about what went wrong without reading the
//! report — first the typing steps whose text did not land or could not be verified, then the
//! run, its counts, and the failures so far, each with the tool call it happened during and the
//! resource URI of the frame taken after it.
//!
//! Built from the run's journal as written (every string in it went through the run's
//! sanitizer), read through the confined [`cdp_evidence::RunDir`].

use cdp_evidence::{
    ActionMethod, Kind, RunDir, Source, Status, StoredPayload, StoredRecord, Verified,
};
use serde::Serialize;
use std::collections::HashMap;

/// Failures listed at most (the latest ones).
pub(crate) const MAX_FAILURES: usize = 50;

/// The summary an agent gets.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Summary {
    /// Typing steps whose verdict is `false` or `indeterminate` (the latest ones), first: the
    /// agent's text may not be where it meant it.
    pub unverified_typing: Vec<TypingLine>,
    /// Unverified typing steps before the listed ones.
    #[serde(skip_serializing_if = "is_zero")]
    pub earlier_unverified_typing: usize,
    pub run_id: String,
    /// The resource that renders the report now (never the run directory's path: the agent
    /// reads the evidence through resources and has no business writing there).
    pub report_resource: String,
    /// The resource that renders `summary.md` now.
    pub summary_resource: String,
    pub records: usize,
    pub tool_calls: usize,
    pub tool_calls_failed: usize,
    pub failed_requests: usize,
    pub console_errors: usize,
    pub frames: usize,
    pub failures: Vec<FailureLine>,
    /// Failures before the listed ones.
    #[serde(skip_serializing_if = "is_zero")]
    pub earlier_failures: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// One failure, as the journal holds it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FailureLine {
    /// `request`, `console` or `connection`.
    pub kind: &'static str,
    pub at: Option<String>,
    /// The tool call it happened during: `#3 click`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `evidence://runs/{runId}/artifacts/{name}` of the frame taken after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame: Option<String>,
}

/// A typing step that did not land or could not be verified. Counts and words only.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TypingLine {
    pub at: Option<String>,
    /// The tool call it belongs to: `#3 fill`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    pub chars: Option<u64>,
    pub input_type: Option<String>,
    /// `false` or `"indeterminate"`.
    pub verified: cdp_evidence::Verified,
    pub reason: String,
    pub note: String,
}

/// Reads the run in `dir` (id `run_id`) into a summary.
pub(crate) fn summarize(run_id: &str, dir: &RunDir) -> Summary {
    let mut s = Summary {
        run_id: run_id.to_owned(),
        report_resource: format!("{}/{run_id}/report.html", super::resources::PREFIX),
        summary_resource: format!("{}/{run_id}/summary.md", super::resources::PREFIX),
        ..Summary::default()
    };
    let manifest = dir.manifest().ok().flatten();
    let Ok(Some(journal)) = dir.journal(manifest.as_ref()) else {
        return s;
    };
    let mut records: Vec<&StoredRecord> = journal.records.iter().collect();
    records.sort_by(|a, b| (a.started_at_ms, &a.action_id).cmp(&(b.started_at_ms, &b.action_id)));
    s.records = records.len();
    // Tool calls by id, numbered in time order.
    let mut calls: HashMap<&str, String> = HashMap::new();
    let mut failures = Vec::new();
    let mut unverified = Vec::new();
    for r in records {
        let action = r.kind_word() == Kind::Action;
        if action && r.is_from(&Source::MCP) {
            s.tool_calls += 1;
            if r.status_word().is_some_and(|w| w == Status::Error) {
                s.tool_calls_failed += 1;
            }
            let method = r.action_method();
            let method = method.as_ref().map_or("?", |m| m.as_str());
            calls.insert(&r.action_id, format!("#{} {method}", s.tool_calls));
            continue;
        }
        if r.action_method().is_some_and(|m| m == ActionMethod::Frame) && !r.artifacts.is_empty() {
            s.frames += 1;
        }
        let step = r.tool_call().and_then(|c| calls.get(c).cloned());
        let frame = r.artifacts.first().and_then(|a| {
            cdp_evidence::check_artifact_path(a)
                .ok()
                .map(|name| format!("{}/{run_id}/artifacts/{name}", super::resources::PREFIX))
        });
        let line = |kind| FailureLine {
            kind,
            at: r.started_at.clone(),
            step: step.clone(),
            method: None,
            url: None,
            status: None,
            text: None,
            frame: frame.clone(),
        };
        match r.typed_payload() {
            StoredPayload::Action(a) => {
                let Some(v) = a.verification.filter(|v| v.verified != Verified::True) else {
                    continue;
                };
                unverified.push(TypingLine {
                    at: r.started_at.clone(),
                    step,
                    chars: a.input.as_ref().map(|i| i.chars),
                    input_type: a
                        .input
                        .as_ref()
                        .and_then(|i| i.input_type.as_ref())
                        .map(|w| w.as_str().to_owned()),
                    verified: v.verified,
                    reason: v.reason.as_str().to_owned(),
                    note: v.note,
                });
            }
            StoredPayload::Network(n) => {
                s.failed_requests += 1;
                failures.push(FailureLine {
                    method: Some(n.method),
                    url: Some(n.url),
                    status: n.status,
                    text: n.error_text,
                    ..line("request")
                });
            }
            StoredPayload::Console(c) if is_error(&c) => {
                s.console_errors += 1;
                failures.push(FailureLine {
                    text: Some(c.text.chars().take(500).collect()),
                    url: c.url,
                    ..line("console")
                });
            }
            StoredPayload::Lifecycle(l)
                if l.event == cdp_evidence::LifecycleEvent::UpstreamLost =>
            {
                failures.push(FailureLine {
                    text: l.detail,
                    ..line("connection")
                });
            }
            _ => {}
        }
    }
    s.earlier_unverified_typing = unverified.len().saturating_sub(MAX_FAILURES);
    s.unverified_typing = unverified.split_off(s.earlier_unverified_typing);
    s.earlier_failures = failures.len().saturating_sub(MAX_FAILURES);
    s.failures = failures.split_off(s.earlier_failures);
    s
}

fn is_error(c: &cdp_evidence::StoredConsole) -> bool {
    c.level != cdp_evidence::ConsoleLevel::Warning
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdp_evidence::{
        Action, ActionId, Console, ConsoleLevel, EvidenceConfig, Record, RecordKind, Source, Store,
    };
    use cdp_sanitize::{SafeText, Sanitizer};

    #[test]
    fn frames_are_frame_actions_with_a_picture() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(EvidenceConfig::at(tmp.path())).unwrap();
        let run = store.join_session("s", "relay").unwrap();
        let action = |method: &'static str| {
            Record::new(
                SafeText::literal("cdp"),
                RecordKind::Action(Action::new(SafeText::literal(method))),
            )
        };
        let picture = || {
            let cdp_evidence::ArtifactOutcome::Stored(a) = run
                .store_artifact("frame", "jpeg", b"\xff\xd8\xffjpeg")
                .unwrap()
            else {
                panic!()
            };
            a
        };
        run.append(action("frame").artifact(picture())).unwrap();
        run.append(action("frame")).unwrap();
        run.append(action("Page.captureScreenshot").artifact(picture()))
            .unwrap();
        let dir = RunDir::open(run.dir()).unwrap();
        assert_eq!(summarize(run.id(), &dir).frames, 1);
    }

    #[test]
    fn unverified_typing_comes_first_with_its_call() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(EvidenceConfig::at(tmp.path())).unwrap();
        let run = store.join_session("s", "relay").unwrap();
        let s = Sanitizer::new();
        let t0 = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
        let call = ActionId::at(t0);
        run.append(
            Record::new(
                SafeText::literal("chrome_devtools"),
                RecordKind::Action(Action::new(SafeText::literal("fill"))),
            )
            .source(Source::MCP)
            .action_id(call.clone())
            .started_at(t0),
        )
        .unwrap();
        let step = |ms: u64, verified, reason: &str| {
            let mut a = Action::new(SafeText::literal("type"));
            a.input = Some(cdp_sanitize::InputSummary::from_count(
                6,
                cdp_sanitize::InputType::Text,
            ));
            a.verification = Some(cdp_evidence::Verification::new(
                verified,
                cdp_evidence::VerdictReason::parse(reason).unwrap(),
                s.text("the field holds 4 of 6 characters"),
            ));
            let mut r = Record::new(SafeText::literal("cdp"), RecordKind::Action(a))
                .started_at(t0 + std::time::Duration::from_millis(ms));
            r.link_tool_call(call.clone());
            r
        };
        run.append(step(10, Verified::True, "landed")).unwrap();
        run.append(step(20, Verified::False, "dropped-characters"))
            .unwrap();
        let dir = RunDir::open(run.dir()).unwrap();
        let summary = summarize(run.id(), &dir);
        assert_eq!(
            summary.unverified_typing.len(),
            1,
            "a step that landed is not listed"
        );
        let line = &summary.unverified_typing[0];
        assert_eq!(line.step.as_deref(), Some("#1 fill"));
        assert_eq!(
            (line.chars, line.input_type.as_deref()),
            (Some(6), Some("text"))
        );
        assert_eq!(line.reason, "dropped-characters");
        let json = serde_json::to_string(&summary).unwrap();
        assert!(json.starts_with("{\"unverifiedTyping\":[{"), "{json}");
    }

    #[test]
    fn failures_name_their_call_and_frame() {
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(EvidenceConfig::at(tmp.path())).unwrap();
        let run = store.join_session("s", "relay").unwrap();
        let s = Sanitizer::new();
        let call = ActionId::at(std::time::SystemTime::now());
        run.append(
            Record::new(
                SafeText::literal("chrome_devtools"),
                RecordKind::Action(Action::new(SafeText::literal("click"))),
            )
            .source(Source::MCP)
            .action_id(call.clone())
            .started_at(std::time::SystemTime::now() - std::time::Duration::from_millis(5)),
        )
        .unwrap();
        let mut failure = Record::new(
            SafeText::literal("cdp"),
            RecordKind::Network(s.network_failure(cdp_sanitize::RawNetworkFailure {
                method: "POST",
                url: "https://a.test/api/login?token=x",
                status: Some(500),
                ..Default::default()
            })),
        );
        failure.link_tool_call(call.clone());
        let stored = run
            .store_artifact("frame", "jpeg", b"\xff\xd8\xffjpeg")
            .unwrap();
        let cdp_evidence::ArtifactOutcome::Stored(a) = stored else {
            panic!()
        };
        run.append(failure.artifact(a)).unwrap();
        run.append(Record::new(
            SafeText::literal("cdp"),
            RecordKind::Console(Console::new(ConsoleLevel::Warning, SafeText::literal("w"))),
        ))
        .unwrap();
        let dir = RunDir::open(run.dir()).unwrap();
        let summary = summarize(run.id(), &dir);
        assert_eq!(summary.tool_calls, 1);
        assert_eq!(summary.failed_requests, 1);
        assert_eq!(summary.console_errors, 0, "a warning is not a failure");
        let f = &summary.failures[0];
        assert_eq!(f.step.as_deref(), Some("#1 click"));
        assert_eq!(f.url.as_deref(), Some("https://a.test/api/login"));
        assert_eq!(
            f.frame.as_deref(),
            Some(format!("evidence://runs/{}/artifacts/000001-frame.jpeg", run.id()).as_str())
        );
    }
}
