//! The one policy for a run that ends under its writer (docs/evidence-format.md, *When
//! writing fails*): when another producer finalized it, or its directory was deleted, the write
//! goes to the session's next run — joined once per failed write, so a run that ends again at
//! once is an error, never a loop. `cdp-relay evidence append` writes through
//! [`Store::write_or_rejoin`]; the relay's run writer, which rebuilds its loss markers between
//! the two tries, decides with [`Error::run_ended`] and joins with [`Store::join_as`].

use crate::{Error, Run, Store};
use std::path::PathBuf;

/// Why a run can no longer be written to, when the session's next run can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnded {
    /// Another producer (or `evidence finalize`) finalized it.
    Finalized,
    /// Its directory or manifest is gone (deleted while recording), with whatever it held.
    Deleted,
}

impl Error {
    /// `Some` when this error means the run ended under its writer (see [`RunEnded`]).
    pub fn run_ended(&self) -> Option<RunEnded> {
        match self {
            Error::RunFinalized { .. } => Some(RunEnded::Finalized),
            Error::RunNotFound { .. } => Some(RunEnded::Deleted),
            _ => None,
        }
    }
}

/// How a writer joins a session (see [`Store::join_session_transient`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinAs {
    /// A long-lived producer (the relay): its exit without finalizing is an owner dying.
    Owner,
    /// One CLI invocation.
    Transient,
}

/// A run that ended under its writer, and where writing went on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejoined {
    /// The run that ended.
    pub from_id: String,
    /// Its directory (gone when `ended` is [`RunEnded::Deleted`]).
    pub from_dir: PathBuf,
    /// Why it ended.
    pub ended: RunEnded,
}

impl Store {
    /// Joins `session` as `join` says.
    pub fn join_as(&self, session: &str, source: &str, join: JoinAs) -> Result<Run, Error> {
        match join {
            JoinAs::Owner => self.join_session(session, source),
            JoinAs::Transient => self.join_session_transient(session, source),
        }
    }

    /// Runs `write` on `run`; if the run ended under it, replaces `run` with the session's next
    /// run and runs `write` once more there. Says whether it moved. A failed join is returned
    /// as the error (and `run` is left as it was).
    pub fn write_or_rejoin<T>(
        &self,
        run: &mut Run,
        session: &str,
        source: &str,
        join: JoinAs,
        mut write: impl FnMut(&Run) -> Result<T, Error>,
    ) -> Result<(T, Option<Rejoined>), Error> {
        let ended = match write(run) {
            Ok(t) => return Ok((t, None)),
            Err(e) => match e.run_ended() {
                Some(ended) => ended,
                None => return Err(e),
            },
        };
        let next = self.join_as(session, source, join)?;
        let from = std::mem::replace(run, next);
        let moved = Rejoined {
            from_id: from.id().to_owned(),
            from_dir: from.dir().to_path_buf(),
            ended,
        };
        drop(from);
        let t = write(run)?;
        Ok((t, Some(moved)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Action, EvidenceConfig, Record, RecordKind, Totals};
    use cdp_sanitize::SafeText;

    fn record() -> Record {
        Record::new(
            SafeText::literal("test"),
            RecordKind::Action(Action::new(SafeText::literal("click"))),
        )
    }

    fn store(dir: &std::path::Path) -> Store {
        Store::open(EvidenceConfig::at(dir)).expect("store")
    }

    #[test]
    fn a_run_finalized_by_another_producer_moves_the_write_to_the_next_run() {
        let tmp = tempfile::tempdir().expect("tmp");
        let store = store(tmp.path());
        let mut run = store.join_session("s1", "relay").expect("join");
        let first = run.id().to_owned();
        let (_, moved) = store
            .write_or_rejoin(&mut run, "s1", "relay", JoinAs::Owner, |r| {
                r.append(record())
            })
            .expect("append");
        assert_eq!(moved, None);

        // Another producer finalizes it.
        let other = store.join_session_transient("s1", "cli").expect("join");
        assert_eq!(other.id(), first);
        other.finalize(Totals::default()).expect("finalize");

        let (_, moved) = store
            .write_or_rejoin(&mut run, "s1", "relay", JoinAs::Owner, |r| {
                r.append(record())
            })
            .expect("append after finalize");
        let moved = moved.expect("moved");
        assert_eq!(moved.ended, RunEnded::Finalized);
        assert_eq!(moved.from_id, first);
        assert_ne!(run.id(), first, "writing went on in the session's next run");
        let journal = std::fs::File::open(run.dir().join(crate::JOURNAL_FILE)).expect("journal");
        let records = crate::read_journal_from(std::io::BufReader::new(journal))
            .expect("read")
            .records;
        assert!(!records.is_empty());
    }

    #[test]
    fn a_deleted_run_moves_the_write_and_other_errors_do_not() {
        let tmp = tempfile::tempdir().expect("tmp");
        let store = store(tmp.path());
        let mut run = store.join_session("s2", "relay").expect("join");
        let first = run.id().to_owned();
        std::fs::remove_dir_all(run.dir()).expect("delete the run");
        let (_, moved) = store
            .write_or_rejoin(&mut run, "s2", "relay", JoinAs::Owner, |r| {
                r.append(record())
            })
            .expect("append after delete");
        assert_eq!(
            moved.map(|m| (m.ended, m.from_id)),
            Some((RunEnded::Deleted, first.clone()))
        );

        // An error that is not the run ending is returned as it is, without a join.
        let before = run.id().to_owned();
        let err = store
            .write_or_rejoin(&mut run, "s2", "relay", JoinAs::Owner, |_| {
                Err::<(), _>(Error::RecordTooLarge { bytes: 2, max: 1 })
            })
            .expect_err("not moved");
        assert!(err.run_ended().is_none());
        assert_eq!(run.id(), before);
    }
}
