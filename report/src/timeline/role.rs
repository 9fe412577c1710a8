//! What one record becomes: a step, plumbing folded into a step, a failure, or a marker; and
//! the words of each, cleaned and cut to the report's limits ([`crate::limits`]).

use super::mcp;
use super::{str_of, Category, FailWhat, Markers, Verdict, What, MAX_MARKER_ENTRIES};
use crate::limits::*;
use crate::text::{clean, line, Lines};
use cdp_evidence::{
    ActionMethod, ConsoleLevel, Kind, LifecycleEvent, MarkerKind, Source, Status, StoredAction,
    StoredPayload, StoredRecord, Word,
};
use serde_json::Value;

/// Methods that are framework plumbing rather than steps.
fn plumbing_category(method: &Word<ActionMethod>) -> Option<Category> {
    use ActionMethod as M;
    Some(match method {
        Word::Known(M::RuntimeEvaluate | M::RuntimeCallFunctionOn) => Category::Evaluation,
        Word::Known(
            M::TargetAttachToTarget
            | M::TargetActivateTarget
            | M::TargetSetAutoAttach
            | M::TargetGetTargets
            | M::TargetGetTargetInfo
            | M::TargetSetDiscoverTargets
            | M::PageBringToFront,
        ) => Category::Attach,
        Word::Known(M::PageStartScreencast | M::PageStopScreencast | M::PageScreencastFrame) => {
            Category::Screencast
        }
        Word::Known(M::Frame) => Category::Frame,
        Word::Known(_) => return None,
        // CDP methods the format does not name: queries by their domain.
        Word::Other(m) if is_cdp_query(m) => Category::Query,
        Word::Other(_) => return None,
    })
}

/// A CDP method (not one of [`ActionMethod`]) that reads the page without changing it: one of
/// the query domains, or a `Page` getter.
fn is_cdp_query(method: &str) -> bool {
    const QUERY_DOMAINS: [&str; 5] = ["DOM", "Runtime", "Accessibility", "CSS", "DOMSnapshot"];
    const PAGE_QUERIES: [&str; 3] = ["get", "addScriptToEvaluate", "createIsolatedWorld"];
    match method.split_once('.') {
        Some(("Page", name)) => PAGE_QUERIES.iter().any(|p| name.starts_with(p)),
        Some((domain, _)) => QUERY_DOMAINS.contains(&domain),
        None => false,
    }
}

/// Flattens a JSON payload into at most [`MAX_FIELDS`] `(path, value)` pairs for display.
pub(crate) fn flatten(v: &Value) -> Vec<(String, String)> {
    fn walk(v: &Value, path: &mut String, out: &mut Vec<(String, String)>, depth: usize) {
        if out.len() > MAX_FIELDS {
            return;
        }
        match v {
            Value::Object(m) if depth < 4 && !m.is_empty() => {
                for (k, child) in m {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(&line(k, MAX_KEY));
                    walk(child, path, out, depth + 1);
                    path.truncate(len);
                }
            }
            Value::Array(a) if depth < 4 && !a.is_empty() => {
                for (i, child) in a.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(child, path, out, depth + 1);
                    path.truncate(len);
                }
            }
            Value::String(s) => out.push((path.clone(), line(s, MAX_FIELD))),
            other => {
                let text = serde_json::to_string(other).unwrap_or_default();
                out.push((path.clone(), line(&text, MAX_FIELD)));
            }
        }
    }
    let mut out = Vec::new();
    let mut path = String::new();
    walk(v, &mut path, &mut out, 0);
    if out.len() > MAX_FIELDS {
        out.truncate(MAX_FIELDS);
        out.push(("…".to_owned(), "more fields not shown".to_owned()));
    }
    out
}

/// What one record becomes.
pub(crate) enum Role {
    Step(What),
    Plumb(Category, String),
    Fail(FailWhat, bool),
    Marker,
}

pub(crate) fn action_role(a: &StoredAction, foreign: bool) -> Role {
    use ActionMethod as M;
    if !foreign {
        if let Some(c) = plumbing_category(&a.method) {
            return Role::Plumb(c, line(a.method.as_str(), MAX_WORD));
        }
    }
    let url = a.url.as_deref().map(|u| line(u, MAX_URL));
    let detail = a.details();
    let Word::Known(method) = &a.method else {
        return Role::Step(What::Action {
            method: line(a.method.as_str(), MAX_WORD),
            url,
        });
    };
    Role::Step(match method {
        M::PageNavigate => What::Navigate { url },
        M::PageReload => What::Reload,
        M::PageNavigateToHistoryEntry => What::History,
        M::PageCaptureScreenshot => What::Screenshot,
        M::PagePrintToPdf => What::Pdf,
        M::PageStopLoading => What::StopLoading,
        M::Click => match a.point {
            Some(p) => What::Click {
                x: p.x,
                y: p.y,
                button: detail.button.map(|b| clean_word(b, MAX_BUTTON)),
                count: detail.click_count,
            },
            None => What::Action {
                method: M::Click.as_str().into(),
                url,
            },
        },
        M::Tap => What::Tap {
            x: a.point.map(|p| p.x),
            y: a.point.map(|p| p.y),
        },
        M::Scroll => What::Scroll,
        M::Type => What::Type {
            chars: a.input.as_ref().map_or(0, |i| i.chars),
            input_type: a
                .input
                .as_ref()
                .and_then(|i| i.input_type.clone())
                .map(|t| clean_word(t, MAX_STATUS_WORD)),
            verdict: a.verification.as_ref().map(|v| Verdict {
                verified: v.verified,
                reason: clean_word(v.reason.clone(), MAX_REASON),
                note: line(&v.note, MAX_VERDICT_NOTE),
            }),
        },
        M::Press => What::Press {
            key: detail.key.map(|k| line(&k, MAX_KEY_NAME)),
        },
        M::TargetCreateTarget => What::OpenPage { url },
        M::TargetCloseTarget => What::ClosePage,
        M::BrowserClose => What::CloseBrowser,
        M::DomSetFileInputFiles | M::Files => What::Upload {
            files: detail.files,
        },
        other => What::Action {
            method: other.as_str().into(),
            url,
        },
    })
}

/// A word as the report shows it: another producer's word visible and bounded.
pub(crate) fn clean_word<E: cdp_evidence::Words>(w: Word<E>, max_chars: usize) -> Word<E> {
    match w {
        Word::Other(s) => Word::Other(line(&s, max_chars)),
        known => known,
    }
}

pub(crate) fn role(r: &StoredRecord, typed: StoredPayload) -> (Role, bool) {
    let foreign = r.source.is_some() && !r.is_from(&Source::RELAY);
    let generic = |r: &StoredRecord| What::Generic {
        kind: line(&r.kind, MAX_WORD),
        method: str_of(&r.payload, "method").map(|m| line(m, MAX_WORD)),
    };
    let role = match typed {
        StoredPayload::Action(a) => mcp::action(r, &a, foreign),
        StoredPayload::Network(n) => Role::Fail(
            FailWhat::Request {
                method: line(&n.method, MAX_HTTP_METHOD),
                url: line(&n.url, MAX_URL),
                status: n.status,
                resource_type: n
                    .resource_type
                    .as_deref()
                    .map(|t| line(t, MAX_RESOURCE_TYPE)),
                duration_ms: n.duration_ms,
                error_text: n.error_text.as_deref().map(|t| line(t, MAX_ERROR)),
            },
            true,
        ),
        StoredPayload::Console(c) => {
            let is_error = c.level != ConsoleLevel::Warning;
            Role::Fail(
                FailWhat::Console {
                    level: c.level,
                    text: clean(&c.text, MAX_MESSAGE, Lines::Keep),
                    url: c.url.as_deref().map(|u| line(u, MAX_URL)),
                    line: c.line,
                    column: c.column,
                },
                is_error,
            )
        }
        StoredPayload::Lifecycle(l) => match mcp::lifecycle_role(&l) {
            Some(role) => role,
            None => match l.event {
                LifecycleEvent::UpstreamLost => Role::Fail(
                    FailWhat::ConnectionLost {
                        detail: l.detail.as_deref().map(|d| line(d, MAX_ERROR)),
                    },
                    true,
                ),
                LifecycleEvent::ClientConnected => {
                    Role::Plumb(Category::Connection, "client connected".into())
                }
                LifecycleEvent::ClientDisconnected => {
                    Role::Plumb(Category::Connection, "client disconnected".into())
                }
                // The gateway's events, handled above.
                _ => Role::Step(generic(r)),
            },
        },
        StoredPayload::Marker(_) => Role::Marker,
        StoredPayload::Mismatch => match r.kind_word().known() {
            Some(kind @ (Kind::Network | Kind::Console)) => Role::Fail(
                FailWhat::Generic {
                    kind,
                    fields: flatten(&r.payload),
                },
                kind == Kind::Network || r.status_word().is_some_and(|s| s == Status::Error),
            ),
            Some(Kind::Marker) => Role::Marker,
            _ => Role::Step(generic(r)),
        },
        StoredPayload::Custom => Role::Step(generic(r)),
        // A future variant of the read model: show it generically.
        _ => Role::Step(generic(r)),
    };
    let is_generic = matches!(
        &role,
        Role::Step(What::Generic { .. }) | Role::Fail(FailWhat::Generic { .. }, _)
    );
    (role, is_generic)
}

pub(crate) fn marker(m: &mut Markers, r: &StoredRecord, typed: &StoredPayload) {
    match typed {
        StoredPayload::Marker(MarkerKind::EvidenceTruncated {
            budget_bytes,
            used_bytes,
            ..
        }) => m.truncated = Some((*budget_bytes, *used_bytes)),
        StoredPayload::Marker(MarkerKind::JournalTruncated {
            budget_bytes,
            used_bytes,
        }) => m.journal_truncated = Some((*budget_bytes, *used_bytes)),
        StoredPayload::Marker(MarkerKind::EvidenceDropped { count, reason }) => {
            m.dropped = m.dropped.saturating_add(*count);
            match reason {
                Some(cdp_evidence::DropReason::WriteFailed) => {
                    m.dropped_writes = m.dropped_writes.saturating_add(*count)
                }
                Some(cdp_evidence::DropReason::RunDeleted) => {
                    m.dropped_deleted = m.dropped_deleted.saturating_add(*count)
                }
                _ => {}
            }
        }
        StoredPayload::Marker(MarkerKind::JournalRepaired { discarded_bytes }) => {
            if m.repaired.len() < MAX_MARKER_ENTRIES {
                m.repaired.push(*discarded_bytes)
            }
        }
        StoredPayload::Marker(MarkerKind::OwnerRecovered { .. }) => m.recovered += 1,
        StoredPayload::Marker(MarkerKind::RunFinalized { records, .. }) => {
            m.finalized_records = Some(*records)
        }
        StoredPayload::Marker(MarkerKind::RunStarted { .. }) => {}
        _ => {
            let word = r.marker();
            let word = word.as_ref().map_or("(no marker word)", |w| w.as_str());
            if m.unknown.len() < MAX_MARKER_ENTRIES {
                *m.unknown.entry(line(word, MAX_WORD)).or_insert(0) += 1;
            }
        }
    }
}

/// Why the relay kept no picture for a record (`detail.screenshotWithheld`).
pub(crate) fn withheld_reason(r: &StoredRecord) -> Option<String> {
    let StoredPayload::Action(a) = r.typed_payload() else {
        return None;
    };
    a.details()
        .screenshot_withheld
        .map(|w| line(&w, MAX_WITHHELD))
}
