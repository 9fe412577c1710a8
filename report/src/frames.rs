//! Frames: which screenshots are embedded in `report.html`, and the checks before one is.
//!
//! Every image artifact is opened through [`cdp_evidence::RunDir::artifact`] — confined to
//! `artifacts/` of the run, never through a symlink, regular files only — and its first bytes
//! must carry the signature of the type its name declares (PNG, JPEG, WebP). A frame that fails
//! either check is shown as refused and never embedded; its content is never read past the
//! signature.
//!
//! The size policy (defaults in [`crate::Options`]): a frame larger than `max_frame_bytes` is
//! left out; at most `max_frames` frames and `max_embedded_bytes` image bytes are embedded.
//! When not all fit, frames next to failures come first (the first frame at or after each
//! failure, and frames of failed steps), then the last frame of the run, then the rest spread
//! evenly over the run (bit-reversed order, so any prefix covers the whole run). The choice
//! depends only on the run, so rendering twice gives the same bytes. Thumbnails are the same
//! `data:` image shown small by CSS: no image is decoded or re-encoded here.

use crate::timeline::{FrameState, Timeline};
use crate::Options;
use base64::Engine as _;
use cdp_evidence::RunDir;
use std::io::Read;

/// What the policy did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FrameStats {
    pub embedded: usize,
    pub embedded_bytes: u64,
    pub left_out: usize,
    pub refused: usize,
}

pub(crate) const TOO_LARGE: &str = "larger than the per-frame limit";
pub(crate) const OVER_COUNT: &str = "over the limit on the number of frames";
pub(crate) const OVER_BUDGET: &str = "over the size budget for embedded frames";
pub(crate) const CHANGED: &str = "changed while the report was rendered";

/// Indexes `0..n` in bit-reversed order: every prefix is spread over the whole range.
pub(crate) fn spread(n: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let bits = usize::BITS - (n - 1).leading_zeros();
    let m = 1usize << bits;
    (0..m)
        .map(|i| {
            if bits == 0 {
                0
            } else {
                i.reverse_bits() >> (usize::BITS - bits)
            }
        })
        .filter(|&i| i < n)
        .collect()
}

/// A frame that passed the checks, waiting for the policy.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    step: usize,
    frame: usize,
    size: u64,
}

/// Opens every pending frame (confined, signature checked), then applies the size policy and
/// embeds the chosen ones.
pub(crate) fn embed(tl: &mut Timeline, run: &RunDir, options: &Options) -> FrameStats {
    let mut candidates = Vec::new();
    for (si, step) in tl.steps.iter_mut().enumerate() {
        for (fi, frame) in step.frames.iter_mut().enumerate() {
            if frame.state != FrameState::Pending {
                continue;
            }
            match run.artifact(&frame.raw_path) {
                Err(refusal) => frame.state = FrameState::Refused(refusal.reason().to_owned()),
                Ok(mut file) => {
                    let mut head = [0u8; 12];
                    let n = read_head(&mut file, &mut head);
                    if !frame.kind.matches(&head[..n]) {
                        frame.state = FrameState::Refused(format!(
                            "its content is not a {} image",
                            frame.kind.name()
                        ));
                        continue;
                    }
                    frame.size = Some(file.len());
                    candidates.push(Candidate {
                        step: si,
                        frame: fi,
                        size: file.len(),
                    });
                }
            }
        }
    }

    let order = priority(tl, &candidates);
    let mut stats = FrameStats::default();
    let mut chosen = Vec::new();
    for i in order {
        let c = candidates[i];
        let verdict = if c.size > options.max_frame_bytes {
            Some(TOO_LARGE)
        } else if chosen.len() >= options.max_frames {
            Some(OVER_COUNT)
        } else if stats.embedded_bytes.saturating_add(c.size) > options.max_embedded_bytes {
            Some(OVER_BUDGET)
        } else {
            None
        };
        match verdict {
            Some(why) => tl.steps[c.step].frames[c.frame].state = FrameState::LeftOut(why),
            None => {
                stats.embedded_bytes += c.size;
                chosen.push(c);
            }
        }
    }
    stats.embedded_bytes = 0;
    for c in chosen {
        let frame = &mut tl.steps[c.step].frames[c.frame];
        let bytes = run
            .artifact(&frame.raw_path)
            .ok()
            .and_then(|f| f.read_capped(c.size).ok().flatten())
            .filter(|b| b.len() as u64 == c.size && frame.kind.matches(b));
        frame.state = match bytes {
            Some(b) => {
                stats.embedded_bytes += b.len() as u64;
                let data = base64::engine::general_purpose::STANDARD.encode(&b);
                FrameState::Embedded {
                    data_uri: format!("data:{};base64,{data}", frame.kind.mime()),
                    bytes: b.len() as u64,
                }
            }
            None => FrameState::LeftOut(CHANGED),
        };
    }
    for f in tl.steps.iter().flat_map(|s| &s.frames) {
        match f.state {
            FrameState::Embedded { .. } => stats.embedded += 1,
            FrameState::LeftOut(_) => stats.left_out += 1,
            FrameState::Refused(_) => stats.refused += 1,
            FrameState::Pending => {}
        }
    }
    stats.refused += tl
        .steps
        .iter()
        .flat_map(|s| &s.files)
        .filter(|f| f.refused.is_some())
        .count();
    stats
}

fn read_head(file: &mut impl Read, head: &mut [u8]) -> usize {
    let mut n = 0;
    while n < head.len() {
        match file.read(&mut head[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}

/// The order in which candidates are offered to the budget (indexes into `candidates`).
fn priority(tl: &Timeline, candidates: &[Candidate]) -> Vec<usize> {
    let mut first = vec![false; candidates.len()];
    // The first frame at or after each failure. Candidates are in step order, so the search
    // starts at the failure's step: a frame of that step counts if it was taken at or after the
    // failure, any frame of a later step counts.
    for f in tl.failures.iter().filter(|f| f.is_error) {
        let from = candidates.partition_point(|c| c.step < f.step);
        let hit = candidates[from..]
            .iter()
            .position(|c| {
                c.step > f.step
                    || matches!(
                        (tl.steps[c.step].frames[c.frame].at_ms, f.at_ms),
                        (Some(fa), Some(a)) if fa >= a
                    )
            })
            .map(|k| from + k);
        if let Some(i) = hit {
            first[i] = true;
        }
    }
    // Frames of steps that failed.
    for (i, c) in candidates.iter().enumerate() {
        if tl.steps[c.step].outcome == crate::timeline::Outcome::Error {
            first[i] = true;
        }
    }
    let mut order: Vec<usize> = (0..candidates.len()).filter(|&i| first[i]).collect();
    let rest: Vec<usize> = (0..candidates.len()).filter(|&i| !first[i]).collect();
    if let Some(&last) = rest.last() {
        order.push(last);
    }
    order.extend(
        spread(rest.len())
            .into_iter()
            .map(|k| rest[k])
            .filter(|&i| Some(&i) != rest.last()),
    );
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline;
    use cdp_evidence::StoredRecord;
    use serde_json::json;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n0123456789";

    /// Ten screenshot steps with one frame each, a failure after the 7th, frames on disk.
    fn run(dir: &std::path::Path) -> Timeline {
        std::fs::create_dir_all(dir.join("artifacts")).unwrap();
        let mut records = Vec::new();
        for i in 0..10u64 {
            let name = format!("{i:06}-s.png");
            std::fs::write(dir.join("artifacts").join(&name), PNG).unwrap();
            records.push(json!({"actionId": format!("{i}"), "kind": "action", "startedAt": format!("2026-01-01T00:00:{:02}.000Z", i * 2),
                "status": "ok", "artifacts": [format!("artifacts/{name}")], "payload": {"method": "Page.captureScreenshot"}}));
        }
        records.push(json!({"actionId": "f", "kind": "network", "startedAt": "2026-01-01T00:00:13.000Z",
            "status": "error", "payload": {"method": "GET", "url": "https://a.test/", "status": 500}}));
        let records: Vec<StoredRecord> = records
            .into_iter()
            .map(|v| StoredRecord::from_value(v).unwrap())
            .collect();
        timeline::build(&records, None, None)
    }

    fn embedded(tl: &Timeline) -> Vec<usize> {
        tl.steps
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s.frames[0].state, FrameState::Embedded { .. }))
            .map(|(i, _)| i)
            .collect()
    }

    #[test]
    fn frames_after_failures_come_first_then_the_last_then_spread() {
        let tmp = tempfile::tempdir().unwrap();
        let mut tl = run(tmp.path());
        let dir = RunDir::open(tmp.path()).unwrap();
        let options = Options {
            max_frames: 3,
            ..Options::default()
        };
        let stats = embed(&mut tl, &dir, &options);
        assert_eq!((stats.embedded, stats.left_out, stats.refused), (3, 7, 0));
        // The failure at 13 s happened during step 7 (12 s): the frame after it is step 8's.
        // Then the last frame (step 10), then the first of the spread (step 1).
        assert_eq!(embedded(&tl), vec![0, 7, 9]);
        timeline::link_frames_after(&mut tl);
        assert_eq!(tl.failures[0].frame_after, Some(7));
        assert_eq!(stats.embedded_bytes, 3 * PNG.len() as u64);
        assert!(matches!(
            tl.steps[1].frames[0].state,
            FrameState::LeftOut(OVER_COUNT)
        ));
    }

    #[test]
    fn the_byte_budget_and_the_per_frame_cap_apply() {
        let tmp = tempfile::tempdir().unwrap();
        let mut tl = run(tmp.path());
        let dir = RunDir::open(tmp.path()).unwrap();
        let mut options = Options {
            max_embedded_bytes: 2 * PNG.len() as u64,
            ..Options::default()
        };
        let stats = embed(&mut tl, &dir, &options);
        assert_eq!(stats.embedded, 2);
        assert!(matches!(
            tl.steps[0].frames[0].state,
            FrameState::LeftOut(OVER_BUDGET)
        ));
        let mut tl = run(tmp.path());
        options.max_frame_bytes = PNG.len() as u64 - 1;
        let stats = embed(&mut tl, &dir, &options);
        assert_eq!(stats.embedded, 0);
        assert!(matches!(
            tl.steps[0].frames[0].state,
            FrameState::LeftOut(TOO_LARGE)
        ));
    }

    #[test]
    fn spread_covers_everything_once_and_prefixes_are_even() {
        for n in 0..70 {
            let mut s = spread(n);
            assert_eq!(s.len(), n);
            if n >= 4 {
                // The first four picks land in four different quarters of the run.
                let mut quarters: Vec<usize> = s[..4].iter().map(|i| i * 4 / n).collect();
                quarters.sort();
                quarters.dedup();
                assert!(quarters.len() >= 3, "n={n}: {:?}", &s[..4]);
            }
            s.sort();
            assert_eq!(s, (0..n).collect::<Vec<_>>());
        }
        assert_eq!(spread(8), vec![0, 4, 2, 6, 1, 5, 3, 7]);
    }
}
