//! The traffic reader's thread: takes the tap's copies in the evidence order (`order.rs`),
//! runs the [`TrafficReader`] and hands its records to the run writer in batches.
//!
//! Copies are handled in stamp order, not in the order they reached the queues: the splice
//! offers a keystroke after writing it, so the browser's echo of it can be queued first. Each
//! round runs a gate (every client → browser chunk stamped below its mark has offered its
//! copies), pulls the queues, and handles everything stamped below the mark, lowest first; then
//! it tells readers waiting in [`Order::caught_up`](cdp_relay_tap::order::Order::caught_up). A connection's
//! `Opened` is stamped before its first chunk and its `Closed` after its last, so they fall in
//! place too.
//!
//! While copies keep coming it polls rather than blocks when the queues are empty, so a
//! `try_send` on the hot path has no parked thread to wake; a reader that waits for it wakes it
//! instead. Once the queues have stayed empty for [`SLEEP_AFTER`] with nothing timed pending (a
//! typing burst to end, a verdict to wait for), it sleeps on the queues: the first copy after
//! that wakes it (one wake per quiet spell on the hot path), so an idle relay does not wake it.

use super::TrafficReader;
use crate::trim::Trim;
use crate::writer::RunWriter;
use cdp_relay_tap::order::Order;
use cdp_relay_tap::tap::{Stamped, TapEvent, TapReceiver};
use cdp_sanitize::Sanitizer;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc::error::TryRecvError;

/// How long the thread sleeps when its queues are empty. Evidence is written at most this much
/// later; at 16k events of queue, floods up to ~1.6M events/s fit between two looks.
const IDLE_POLL: Duration = Duration::from_millis(10);

/// How long the queues stay empty before the thread sleeps on them instead of polling.
const SLEEP_AFTER: Duration = Duration::from_secs(1);

/// While it sleeps on its queues, it still looks this often (a bound on a missed wake, not a
/// poll). Tests never rely on it: only a wake wakes the thread there.
#[cfg(not(test))]
const SLEEP_LOOK: Duration = Duration::from_secs(1);
#[cfg(test)]
const SLEEP_LOOK: Duration = Duration::from_secs(600);

/// How long it sleeps while a client → browser write it must wait for is in progress.
const GATE_POLL: Duration = Duration::from_millis(1);

/// Records handed to the writer at once when the queues are busy.
const BATCH: usize = 256;

/// The reader's work budget: after this many copies in a row it steps off the CPU for
/// [`PAUSE`], unless a reader waits for it (whose unpark also ends a pause at once). Under a
/// flood on two cores this leaves the relay's workers a core, which the normal class alone
/// does not (BENCHMARKS.md, "Scheduling the evidence threads"); evidence it cannot keep up with
/// is dropped and counted, never a frame delayed.
const BUDGET: usize = 32;
const PAUSE: Duration = Duration::from_micros(50);

/// At the end, how long typing steps may still wait for their verdicts.
const FINISH_WAIT: Duration = Duration::from_secs(4);

/// Copies taken from the queues, lowest stamp first (the messages of one chunk share a stamp
/// and keep their arrival order). The heap orders small keys; the copies stay where they
/// arrived, so a busy round moves 16 bytes per comparison, not a whole event.
#[derive(Default)]
struct Queue {
    /// `(stamp, arrival)` of every copy waiting.
    heap: BinaryHeap<Reverse<(u64, u64)>>,
    /// The copies by arrival: `slots[i]` arrived `first + i`-th; handled ones are `None`.
    slots: VecDeque<Option<TapEvent>>,
    /// Arrival number of `slots[0]`.
    first: u64,
    /// The pipeline asked to stop.
    finishing: bool,
}

impl Queue {
    fn push(&mut self, s: Stamped) {
        self.finishing |= matches!(s.event, TapEvent::Finish { .. });
        let arrival = self.first + self.slots.len() as u64;
        self.heap.push(Reverse((s.stamp, arrival)));
        self.slots.push_back(Some(s.event));
    }

    /// The next copy stamped below `below`.
    fn pop_below(&mut self, below: u64) -> Option<TapEvent> {
        let &Reverse((stamp, arrival)) = self.heap.peek()?;
        if stamp >= below {
            return None;
        }
        self.heap.pop();
        let slot = usize::try_from(arrival - self.first).ok()?;
        let event = self.slots.get_mut(slot)?.take();
        while matches!(self.slots.front(), Some(None)) {
            self.slots.pop_front();
            self.first += 1;
        }
        event
    }

    fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// Lets readers through once the thread is gone, however it ends (a panic included): nothing
/// will be registered after that.
struct CloseOnExit(Arc<Order>);

impl Drop for CloseOnExit {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Runs until a `Finish` event (or until every tap is gone); returns the observer's own drops.
pub(crate) fn run(
    mut rx: TapReceiver,
    mut observer: TrafficReader,
    writer: RunWriter,
    sanitizer: Arc<Sanitizer>,
) -> u64 {
    let order = rx.order.clone();
    order.set_passive(std::thread::current());
    let _close = CloseOnExit(order.clone());
    let mut queue = Queue::default();
    let hand_over = |observer: &mut TrafficReader| {
        writer.send_blocking(observer.take().emits);
    };
    let mut stuck: Option<Instant> = None;
    let mut quiet: Option<Instant> = None;
    let mut trim = Trim::default();
    let waker = Waker::from(Arc::new(Wakes(std::thread::current())));
    loop {
        let control_gone = take_control(&mut rx, &mut queue);
        let below = match order.try_gate() {
            Some(below) => below,
            // Stopping, and a write to the browser has not completed for seconds: what it
            // carried is given up for lost, and everything is handled.
            None if queue.finishing
                && stuck.get_or_insert_with(Instant::now).elapsed() > FINISH_WAIT =>
            {
                sanitizer.withhold_free_text();
                u64::MAX
            }
            None => {
                // A keystroke is being written: what follows it waits until it is offered.
                stuck.get_or_insert_with(Instant::now);
                std::thread::park_timeout(GATE_POLL);
                continue;
            }
        };
        stuck = None;
        // Every client → browser copy stamped below `below` is queued now, or lost.
        let gone = take_copies(&mut rx, &mut queue) && control_gone;
        take_control(&mut rx, &mut queue);
        if order.first_lost().is_some_and(|lost| lost < below) {
            // A keystroke may have gone unseen: nothing stamped after it may be trusted.
            sanitizer.withhold_free_text();
        }
        let mut handled = 0;
        while let Some(event) = queue.pop_below(below) {
            if let TapEvent::Finish { at } = event {
                // Nothing is registered after this: no reader need wait any longer (the relay
                // stopped forwarding before it asked the pipeline to finish), and the relay's
                // own observer must be free to answer the verifications `finish` waits for.
                order.close();
                return finish(&mut observer, at, &hand_over);
            }
            observer.handle(event);
            handled += 1;
            if observer.pending_records() >= BATCH {
                hand_over(&mut observer);
            }
            if handled % BUDGET == 0 && !order.awaited() {
                std::thread::park_timeout(PAUSE);
            }
        }
        order.handled_below(below);
        if gone && queue.is_empty() {
            return finish(&mut observer, SystemTime::now(), &hand_over);
        }
        if handled == 0 {
            observer.tick(SystemTime::now());
            hand_over(&mut observer);
            trim.quiet();
            let quiet_for = quiet.get_or_insert_with(Instant::now).elapsed();
            let nothing_due = queue.is_empty() && !observer.ticking() && !order.awaited();
            if quiet_for >= SLEEP_AFTER && nothing_due {
                sleep_on_queues(&mut rx, &mut queue, &waker);
            } else {
                std::thread::park_timeout(IDLE_POLL);
            }
        } else {
            trim.busy(handled);
            quiet = None;
        }
    }
}

/// Wakes the thread sleeping on its queues (registered with each queue).
struct Wakes(Thread);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Sleeps until a copy or a lifecycle event arrives, a reader waiting for the thread unparks
/// it, or [`SLEEP_LOOK`] passes. Registering the waker looks at each queue once more: what
/// arrived meanwhile is taken, and the thread does not sleep.
fn sleep_on_queues(rx: &mut TapReceiver, queue: &mut Queue, waker: &Waker) {
    let mut cx = Context::from_waker(waker);
    let mut arrived = false;
    for q in [&mut rx.commands, &mut rx.frames] {
        match q.poll_recv(&mut cx) {
            Poll::Ready(Some(s)) => {
                queue.push(s);
                arrived = true;
            }
            // Every tap is gone: the next round sees it.
            Poll::Ready(None) => arrived = true,
            Poll::Pending => {}
        }
    }
    match rx.control.poll_recv(&mut cx) {
        Poll::Ready(Some(s)) => {
            queue.push(s);
            arrived = true;
        }
        Poll::Ready(None) => arrived = true,
        Poll::Pending => {}
    }
    if !arrived {
        std::thread::park_timeout(SLEEP_LOOK);
    }
}

/// Takes lifecycle events; true when every tap is gone.
fn take_control(rx: &mut TapReceiver, queue: &mut Queue) -> bool {
    loop {
        match rx.control.try_recv() {
            Ok(s) => queue.push(s),
            Err(TryRecvError::Empty) => return false,
            Err(TryRecvError::Disconnected) => return true,
        }
    }
}

/// Takes what the copy queues hold; true when every tap is gone and they are empty.
fn take_copies(rx: &mut TapReceiver, queue: &mut Queue) -> bool {
    let mut gone = true;
    for q in [&mut rx.commands, &mut rx.frames] {
        loop {
            match q.try_recv() {
                Ok(s) => queue.push(s),
                Err(TryRecvError::Empty) => {
                    gone = false;
                    break;
                }
                Err(TryRecvError::Disconnected) => break,
            }
        }
    }
    gone
}

/// The pipeline stops: open bursts end, their steps wait a little for verdicts, then every open
/// connection ends.
fn finish(
    observer: &mut TrafficReader,
    at: SystemTime,
    hand_over: &impl Fn(&mut TrafficReader),
) -> u64 {
    observer.finish_typing(at);
    // Typing steps waiting for a verdict get a little longer.
    let deadline = Instant::now() + FINISH_WAIT;
    while observer.holding() > 0 && Instant::now() < deadline {
        observer.tick(SystemTime::now());
        hand_over(observer);
        std::thread::sleep(IDLE_POLL);
    }
    observer.finish(at);
    hand_over(observer);
    observer.dropped()
}

#[cfg(test)]
mod tests {
    //! The order, forced: a keystroke written to the browser but not yet offered to the tap
    //! (the splice's window between its write and its copy), while the browser's echo of it
    //! reaches the relay's own observer connection, or the client's connection, first.

    use super::*;
    use crate::pages::Pages;
    use crate::traffic::TrafficOptions;
    use crate::writer;
    use cdp_evidence::{EvidenceConfig, Store};
    use cdp_relay_tap::tap::{Direction, Payload, Tap};
    use serde_json::json;

    const PAGE: &str = "8E5B0E1C2F4D43A1B0B7A3F2E6D9C4B1";
    const TYPED: &str = "Zw4TypeSecretBBB2";

    struct Rig {
        _dir: tempfile::TempDir,
        store: Store,
        run_id: String,
        sanitizer: Arc<Sanitizer>,
        /// The page model the traffic reader and the writer share, as in a pipeline.
        pages: Arc<Pages>,
        tap: Tap,
        order: Arc<Order>,
        rx: Option<TapReceiver>,
        writer: RunWriter,
        passive: Option<std::thread::JoinHandle<u64>>,
    }

    impl Rig {
        fn new(capacity: usize) -> Rig {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = Store::open(EvidenceConfig::at(dir.path())).expect("store");
            let run = store.join_session("unit", "relay").expect("run");
            let run_id = run.id().to_owned();
            let sanitizer = Arc::new(Sanitizer::new());
            let pages = Arc::new(Pages::new(sanitizer.clone(), true));
            let (writer, _thread) = writer::start(
                Store::open(EvidenceConfig::at(dir.path())).expect("store"),
                "unit".into(),
                run,
                sanitizer.clone(),
                pages.clone(),
                crate::calls::ToolCalls::default(),
                (None, None),
            )
            .expect("writer");
            let (tap, rx) = Tap::channel(capacity);
            let order = rx.order.clone();
            Rig {
                _dir: dir,
                store,
                run_id,
                sanitizer,
                pages,
                tap,
                order,
                rx: Some(rx),
                writer,
                passive: None,
            }
        }

        fn start(&mut self) {
            let observer = TrafficReader::new(self.pages.clone(), TrafficOptions::default());
            let (rx, writer, sanitizer) = (
                self.rx.take().expect("not started"),
                self.writer.clone(),
                self.sanitizer.clone(),
            );
            self.passive = Some(
                std::thread::Builder::new()
                    .name("rig-reader".into())
                    .spawn(move || run(rx, observer, writer, sanitizer))
                    .expect("a thread"),
            );
        }

        /// Waits (on the passive thread's own progress, not on time) until it has tried at
        /// least `n` more gates.
        fn let_it_go_round(&self, n: u64) {
            let start = self.order.gates_tried();
            while self.order.gates_tried() < start + n {
                std::thread::yield_now();
            }
        }

        /// Stops the passive thread and the writer; the journal's text.
        fn finish(mut self) -> String {
            self.tap.finish();
            if let Some(t) = self.passive.take() {
                t.join().expect("passive thread");
            }
            self.writer.finish_blocking(0);
            let dir = self.store.run_dir(&self.run_id).expect("dir");
            std::fs::read_to_string(dir.join("actions.jsonl")).expect("journal")
        }
    }

    fn insert_text(id: u64, text: &str) -> Payload {
        let m = json!({"id": id, "method": "Input.insertText", "params": {"text": text}});
        Payload::text(m.to_string())
    }

    fn console_error(text: &str) -> Payload {
        let m = json!({"method": "Runtime.consoleAPICalled", "params": {
            "type": "error", "args": [{"type": "string", "value": text}],
            "executionContextId": 1, "timestamp": 1.5}});
        Payload::text(m.to_string())
    }

    #[test]
    fn an_echo_on_the_observer_connection_waits_for_the_keystroke() {
        let mut rig = Rig::new(64);
        rig.start();
        rig.tap.opened(1, format!("/devtools/page/{PAGE}"));
        // The splice took the keystroke's chunk and wrote it: the browser has it, the tap not yet.
        let keystroke = rig.tap.chunk(Direction::ToBrowser);
        // The page echoes it; the relay's own observer connection receives the echo and waits.
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let waiter = {
            let (order, sanitizer) = (rig.order.clone(), rig.sanitizer.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .expect("runtime");
                rt.block_on(order.caught_up());
                let _ = done_tx.send(sanitizer.text(&format!("live {TYPED}")).into_string());
            })
        };
        // However often the passive thread goes round, the echo is not let through...
        rig.let_it_go_round(20);
        assert!(
            done_rx.try_recv().is_err(),
            "let through before the keystroke"
        );
        // ...and it would have leaked had it been sanitized now.
        assert!(rig.sanitizer.text(TYPED).as_str().contains(TYPED));
        // The splice gets round to its copy.
        rig.tap
            .offer(&keystroke, 1, Direction::ToBrowser, insert_text(1, TYPED));
        drop(keystroke);
        let echoed = done_rx.recv().expect("let through");
        assert_eq!(echoed, "live ${TYPED_1}");
        waiter.join().expect("waiter");
        let journal = rig.finish();
        assert!(!journal.contains(&TYPED[..4]), "{journal}");
    }

    #[test]
    fn an_echo_on_the_client_connection_queued_first_is_handled_after_the_keystroke() {
        let mut rig = Rig::new(64);
        rig.start();
        rig.tap.opened(1, format!("/devtools/page/{PAGE}"));
        let keystroke = rig.tap.chunk(Direction::ToBrowser);
        // The echo was read from the browser after the keystroke was written, and its copy
        // reaches the queue first.
        let echo = rig.tap.chunk(Direction::ToClient);
        rig.tap.offer(
            &echo,
            1,
            Direction::ToClient,
            console_error(&format!("live {TYPED}")),
        );
        drop(echo);
        rig.let_it_go_round(20);
        rig.tap
            .offer(&keystroke, 1, Direction::ToBrowser, insert_text(1, TYPED));
        drop(keystroke);
        let order = rig.order.clone();
        let journal = rig.finish();
        assert!(journal.contains("live ${TYPED_1}"), "{journal}");
        assert!(!journal.contains(&TYPED[..4]), "{journal}");
        // Once the pipeline finished, nothing is registered any more: nobody waits for it.
        order.stamp();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(order.caught_up());
    }

    #[test]
    fn a_copy_wakes_the_thread_sleeping_on_its_queues() {
        let mut rig = Rig::new(64);
        rig.start();
        // Quiet: it goes round every few milliseconds, then sleeps on its queues.
        let asleep = |rig: &Rig| {
            let before = rig.order.gates_tried();
            std::thread::sleep(Duration::from_millis(300));
            rig.order.gates_tried() == before
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !asleep(&rig) {
            assert!(
                Instant::now() < deadline,
                "the thread never slept on its queues"
            );
        }
        // A copy: the thread wakes and handles it.
        rig.tap.opened(1, format!("/devtools/page/{PAGE}"));
        let echo = rig.tap.chunk(Direction::ToClient);
        rig.tap
            .offer(&echo, 1, Direction::ToClient, console_error("woken"));
        drop(echo);
        let stamp = rig.order.issued();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !rig.order.handled(stamp) {
            assert!(Instant::now() < deadline, "the copy never woke the thread");
            std::thread::yield_now();
        }
        let journal = rig.finish();
        assert!(journal.contains("woken"), "{journal}");
    }

    #[test]
    fn the_queue_hands_copies_over_by_stamp_then_by_arrival() {
        let mut q = Queue::default();
        let frame = |conn: u64| TapEvent::Frame {
            conn,
            dir: Direction::ToClient,
            at: SystemTime::UNIX_EPOCH,
            payload: Payload::text("{}"),
        };
        // (stamp, conn): conn numbers the arrivals; stamps 3 and 5 arrive twice each.
        for (stamp, conn) in [(5, 1), (3, 2), (9, 3), (3, 4), (1, 5), (5, 6)] {
            q.push(Stamped {
                stamp,
                event: frame(conn),
            });
        }
        let take = |q: &mut Queue, below: u64| {
            let mut out = Vec::new();
            while let Some(TapEvent::Frame { conn, .. }) = q.pop_below(below) {
                out.push(conn);
            }
            out
        };
        assert_eq!(take(&mut q, 4), [5, 2, 4]);
        // Arrivals after some were taken keep their place.
        q.push(Stamped {
            stamp: 2,
            event: frame(7),
        });
        assert_eq!(take(&mut q, 9), [7, 1, 6]);
        assert!(!q.is_empty());
        assert_eq!(take(&mut q, u64::MAX), [3]);
        assert!(q.is_empty() && q.slots.is_empty());
    }

    #[test]
    fn a_lost_keystroke_withholds_the_text_recorded_after_it() {
        // Room for one client → browser copy: the second is lost before the thread runs.
        let mut rig = Rig::new(1);
        rig.tap.opened(1, format!("/devtools/page/{PAGE}"));
        for (id, text) in [(1, "first"), (2, TYPED)] {
            let c = rig.tap.chunk(Direction::ToBrowser);
            rig.tap
                .offer(&c, 1, Direction::ToBrowser, insert_text(id, text));
        }
        assert!(rig.order.first_lost().is_some());
        let echo = rig.tap.chunk(Direction::ToClient);
        rig.tap.offer(
            &echo,
            1,
            Direction::ToClient,
            console_error(&format!("live {TYPED}")),
        );
        drop(echo);
        rig.start();
        let journal = rig.finish();
        assert!(journal.contains(cdp_sanitize::WITHHELD), "{journal}");
        assert!(!journal.contains(&TYPED[..4]), "{journal}");
    }
}
