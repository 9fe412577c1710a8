//! Records from producers outside the pipeline go through the one writer: one write per batch,
//! and the session's next run when the run ended under the writer.

use super::{AppendError, Emit};
use crate::{Hooks, Pipeline, Settings};
use cdp_evidence::{
    CustomKind, EvidenceConfig, Record, RecordKind, RunEnded, Source, Store, Totals,
};
use cdp_sanitize::{SafeText, Sanitizer};
use serde_json::json;
use std::collections::HashMap;
use std::path::Path;

fn record(s: &Sanitizer, kind: &str, payload: serde_json::Value, source: &str) -> Record {
    let kind = CustomKind::new(kind, s.json(&payload)).expect("kind");
    Record::new(SafeText::literal("test"), RecordKind::Custom(kind))
        .source(Source::new(source).expect("source"))
}

fn start(root: &Path, session: &str) -> Pipeline {
    let settings = Settings {
        session: Some(session.into()),
        ..Settings::at(root)
    };
    Pipeline::start(&settings, Hooks::default()).expect("pipeline")
}

fn finish(pipeline: Pipeline) -> std::path::PathBuf {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(pipeline.finish()).expect("summary").run_dir
}

fn kinds(store: &Store, run_id: &str) -> Vec<String> {
    let journal = store.read_journal(run_id).expect("journal");
    assert!(journal.corrupt.is_empty(), "{:?}", journal.corrupt);
    journal.records.into_iter().map(|r| r.kind).collect()
}

#[test]
fn external_records_follow_the_session_into_its_next_run() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pipeline = start(tmp.path(), "handover");
    let writer = pipeline.handle().writer().clone();
    let s = Sanitizer::new();
    let store = Store::open(EvidenceConfig::at(tmp.path())).expect("store");

    let first = writer
        .append_records_blocking(vec![record(&s, "first", json!({}), "device")])
        .expect("append");
    assert_eq!(first.rejoined, None);
    assert_eq!(first.run_id, pipeline.handle().status().run_id);

    // Another producer (`evidence finalize`) finalizes the run under the writer: the next
    // request lands in the session's next run, which the relay goes on recording in.
    let other = store
        .active_run("handover", "device")
        .expect("active run")
        .expect("one");
    assert_eq!(other.id(), first.run_id);
    other.finalize(Totals::default()).expect("finalize");
    let second = writer
        .append_records_blocking(vec![record(&s, "second", json!({}), "device")])
        .expect("append after another producer finalized the run");
    assert_eq!(second.rejoined, Some(RunEnded::Finalized));
    assert_ne!(second.run_id, first.run_id);
    assert_eq!(pipeline.handle().status().run_id, second.run_id);

    // Its directory deleted while recording: the same, to the run after.
    std::fs::remove_dir_all(store.run_dir(&second.run_id).expect("dir")).expect("delete");
    let third = writer
        .append_records_blocking(vec![record(&s, "third", json!({}), "device")])
        .expect("append after the run was deleted");
    assert_eq!(third.rejoined, Some(RunEnded::Deleted));
    assert_ne!(third.run_id, second.run_id);

    // The relay's own records go where the producer's went: one writer, one run.
    writer.send_blocking(vec![Emit::Record(record(&s, "own", json!({}), "relay"))]);
    let run_dir = finish(pipeline);
    assert!(run_dir.ends_with(&third.run_id), "{}", run_dir.display());

    assert!(kinds(&store, &first.run_id).contains(&"first".to_owned()));
    let last = kinds(&store, &third.run_id);
    let at = |k: &str| last.iter().position(|x| x == k);
    assert!(at("third").is_some() && at("own") > at("third"), "{last:?}");
    let manifest = store.read_manifest(&third.run_id).expect("manifest");
    assert_eq!(manifest.status.as_deref(), Some("finalized"));
}

#[test]
fn external_batches_are_one_write_each_never_interleaved() {
    const PRODUCERS: u64 = 4;
    const REQUESTS: u64 = 30;
    const PER_REQUEST: u64 = 40;
    let tmp = tempfile::tempdir().expect("tmp");
    let pipeline = start(tmp.path(), "busy");
    let writer = pipeline.handle().writer();

    std::thread::scope(|scope| {
        for p in 0..PRODUCERS {
            let writer = writer.clone();
            scope.spawn(move || {
                let s = Sanitizer::new();
                for r in 0..REQUESTS {
                    let batch = (0..PER_REQUEST)
                        .map(|i| record(&s, "batch", json!({"p": p, "r": r, "i": i}), "device"))
                        .collect();
                    writer.append_records_blocking(batch).expect("append");
                }
            });
        }
        // The relay's own records at the same time, one by one.
        let writer = writer.clone();
        scope.spawn(move || {
            let s = Sanitizer::new();
            for i in 0..500u64 {
                writer.send_blocking(vec![Emit::Record(record(
                    &s,
                    "own",
                    json!({"i": i}),
                    "relay",
                ))]);
            }
        });
    });
    let run_dir = finish(pipeline);

    let store = Store::open(EvidenceConfig::at(tmp.path())).expect("store");
    let run_id = run_dir
        .file_name()
        .expect("id")
        .to_string_lossy()
        .into_owned();
    let journal = store.read_journal(&run_id).expect("journal");
    let mut blocks: HashMap<(u64, u64), Vec<(usize, u64)>> = HashMap::new();
    let mut own = 0;
    for (pos, r) in journal.records.iter().enumerate() {
        match r.kind.as_str() {
            "batch" => {
                let at = |k: &str| r.payload[k].as_u64().expect("number");
                blocks
                    .entry((at("p"), at("r")))
                    .or_default()
                    .push((pos, at("i")));
                assert_eq!(r.source.as_deref(), Some("device"));
            }
            "own" => own += 1,
            _ => {}
        }
    }
    assert_eq!(own, 500, "the relay's own records");
    assert_eq!(blocks.len() as u64, PRODUCERS * REQUESTS, "batches lost");
    for ((p, r), recs) in &blocks {
        assert_eq!(recs.len() as u64, PER_REQUEST, "{p}/{r} lost or doubled");
        for (k, &(pos, i)) in recs.iter().enumerate() {
            assert_eq!(i, k as u64, "{p}/{r} out of order");
            assert_eq!(pos, recs[0].0 + k, "{p}/{r} interleaved with other records");
        }
    }
}

#[test]
fn a_stopped_writer_says_so() {
    let tmp = tempfile::tempdir().expect("tmp");
    let pipeline = start(tmp.path(), "stopped");
    let writer = pipeline.handle().writer().clone();
    finish(pipeline);
    let s = Sanitizer::new();
    let refused = writer.append_records_blocking(vec![record(&s, "late", json!({}), "device")]);
    assert!(matches!(refused, Err(AppendError::Stopped)), "{refused:?}");
}

/// What an observer was told, in order: `written <run> <kinds>` and `ended <run> <finalized>`.
#[derive(Debug, Default)]
struct Told(std::sync::Mutex<Vec<String>>);

impl super::WriteObserver for Told {
    fn written(&self, run: super::RunRef<'_>, records: &[Record]) {
        let kinds: Vec<&str> = records.iter().map(|r| r.kind().name()).collect();
        self.0
            .lock()
            .expect("told")
            .push(format!("written {} {}", run.id, kinds.join(",")));
    }

    fn ended(&self, run: super::RunRef<'_>, finalized: bool) {
        assert!(run.dir.ends_with(run.id), "{}", run.dir.display());
        self.0
            .lock()
            .expect("told")
            .push(format!("ended {} {finalized}", run.id));
    }
}

#[test]
fn the_observer_sees_each_write_in_its_run_and_each_runs_end() {
    let tmp = tempfile::tempdir().expect("tmp");
    let told = std::sync::Arc::new(Told::default());
    let settings = Settings {
        session: Some("observed".into()),
        ..Settings::at(tmp.path())
    };
    let hooks = Hooks {
        written: Some(told.clone()),
        ..Hooks::default()
    };
    let pipeline = Pipeline::start(&settings, hooks).expect("pipeline");
    let writer = pipeline.handle().writer().clone();
    let s = Sanitizer::new();
    let store = Store::open(EvidenceConfig::at(tmp.path())).expect("store");
    let first = writer
        .append_records_blocking(vec![
            record(&s, "one", json!({}), "device"),
            record(&s, "two", json!({}), "device"),
        ])
        .expect("append");
    // A refused write is not told: nothing was written.
    store
        .active_run("observed", "device")
        .expect("active run")
        .expect("one")
        .finalize(Totals::default())
        .expect("finalize");
    let second = writer
        .append_records_blocking(vec![record(&s, "three", json!({}), "device")])
        .expect("append");
    finish(pipeline);
    let told = told.0.lock().expect("told").clone();
    let (a, b) = (&first.run_id, &second.run_id);
    assert_eq!(
        told,
        [
            format!("written {a} one,two"),
            format!("ended {a} false"),
            format!("written {b} three"),
            format!("ended {b} true"),
        ],
        "{told:#?}"
    );
}
