//! Websocket frame headers, read as the bytes stream past (RFC 6455 §5.2).
//!
//! The splice forwards bytes as they arrive; this scanner tells it where frames and messages
//! start and end, which bytes are data payload (for the evidence copy), when a close frame went
//! by, and where the stream must stop: a message over the size limit, or a client breaking the
//! protocol. Pure and incremental (a header may straddle two reads); it never allocates, never
//! copies and never judges what a browser sends beyond what forwarding needs.

use std::ops::Range;

/// Which end a stream comes from: clients must mask and may not use reserved bits or opcodes;
/// the browser is trusted to speak its own protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum From {
    /// A client: frames must be masked, no reserved bits or opcodes.
    Client,
    /// The browser.
    Browser,
}

/// What the scanner saw in a chunk, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A data message starts (`text` or binary). A new message while another was unfinished
    /// abandons the old one (the browser would read it the same way).
    MessageStart {
        /// A text message (else binary).
        text: bool,
        /// Its first frame's payload length: the message is at least this long (exactly, when
        /// that frame is the last). Lets a consumer decline a copy before any of it is held.
        first_frame: u64,
    },
    /// Payload bytes of the current data message at `range` of the chunk, masked with `mask`
    /// from byte `phase` of its 4-byte cycle when the sender masked them.
    Data {
        /// Where in the chunk.
        range: Range<usize>,
        /// The masking key and the phase of the range's first byte, for masked frames.
        mask: Option<([u8; 4], u8)>,
    },
    /// The current data message is complete.
    MessageEnd {
        /// The message's payload length.
        len: u64,
    },
    /// A close frame went by completely, with its status code when it had one.
    Close {
        /// The status code, when the frame carried one.
        code: Option<u16>,
    },
    /// A ping went by completely.
    Ping,
    /// A pong went by completely.
    Pong,
}

/// Why the stream cannot go on. `at` is where the offending frame's header starts in the
/// chunk: the bytes before it may still be forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The message would exceed the size limit.
    TooBig {
        /// Where the frame's header starts.
        at: usize,
    },
    /// The client broke the protocol: the reason, for the log (never a payload).
    Violation {
        /// Where the frame's header starts.
        at: usize,
        /// What rule it broke.
        why: &'static str,
    },
}

impl Stop {
    /// Where the stream must stop.
    pub fn at(self) -> usize {
        match self {
            Stop::TooBig { at } | Stop::Violation { at, .. } => at,
        }
    }
}

const OP_CONTINUATION: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

/// A parsed frame header.
#[derive(Debug, Clone, Copy)]
struct Head {
    fin: bool,
    opcode: u8,
    mask: Option<[u8; 4]>,
    len: u64,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Between frames: the next bytes are a header.
    Header,
    /// Inside a frame's payload: `done` of `head.len` bytes seen.
    Payload { head: Head, done: u64 },
}

/// The scanner of one direction of one session.
#[derive(Debug)]
pub struct Scanner {
    from: From,
    max_message: u64,
    state: State,
    /// Bytes so far of the data message in progress, `None` between messages.
    message: Option<u64>,
    /// The first two payload bytes of the close frame being read (its status code).
    close_code: [u8; 2],
}

impl Scanner {
    pub fn new(from: From, max_message: usize) -> Scanner {
        Scanner {
            from,
            max_message: max_message as u64,
            state: State::Header,
            message: None,
            close_code: [0; 2],
        }
    }

    /// True between frames: a frame of our own (a close) can be written here without
    /// corrupting the stream.
    pub fn at_boundary(&self) -> bool {
        matches!(self.state, State::Header)
    }

    /// Scans the next `chunk` of the stream, reporting events to `on`. Returns how many bytes
    /// were consumed: a header cut off at the end of the chunk is not, so that no byte of a
    /// frame is forwarded before its header was judged; pass those bytes again with more.
    pub fn scan(&mut self, chunk: &[u8], on: &mut impl FnMut(Event)) -> Result<usize, Stop> {
        let mut pos = 0;
        while pos < chunk.len() {
            match self.state {
                State::Header => {
                    let rest = &chunk[pos..];
                    let Some(need) = header_len(rest).filter(|&n| n <= rest.len()) else {
                        return Ok(pos);
                    };
                    let head = parse(&rest[..need]);
                    self.check(rest[0], &head, pos)?;
                    pos += need;
                    self.start_frame(head, on);
                }
                State::Payload { head, done } => {
                    let take = (head.len - done).min((chunk.len() - pos) as u64) as usize;
                    let range = pos..pos + take;
                    self.state = State::Payload {
                        head,
                        done: done + take as u64,
                    };
                    pos += take;
                    self.payload(&head, range, done, chunk, on);
                    if done + take as u64 == head.len {
                        self.end_frame(&head, on);
                    }
                }
            }
        }
        Ok(pos)
    }

    /// Rules a header must pass before any of its frame is forwarded.
    fn check(&self, byte0: u8, head: &Head, at: usize) -> Result<(), Stop> {
        if self.from == From::Client {
            if byte0 & 0x70 != 0 {
                return Err(Stop::Violation {
                    at,
                    why: "reserved bits set without a negotiated extension",
                });
            }
            if !matches!(
                head.opcode,
                OP_CONTINUATION | OP_TEXT | OP_BINARY | OP_CLOSE | OP_PING | OP_PONG
            ) {
                return Err(Stop::Violation {
                    at,
                    why: "reserved opcode",
                });
            }
            if head.mask.is_none() {
                return Err(Stop::Violation {
                    at,
                    why: "unmasked frame from a client",
                });
            }
            if head.len >> 63 != 0 {
                return Err(Stop::Violation {
                    at,
                    why: "payload length with the most significant bit set",
                });
            }
        }
        let so_far = if is_data(head.opcode) {
            self.message.filter(|_| head.opcode == OP_CONTINUATION)
        } else {
            None
        };
        if so_far.unwrap_or(0).saturating_add(head.len) > self.max_message {
            return Err(Stop::TooBig { at });
        }
        Ok(())
    }

    fn start_frame(&mut self, head: Head, on: &mut impl FnMut(Event)) {
        match head.opcode {
            OP_TEXT | OP_BINARY => {
                self.message = Some(0);
                on(Event::MessageStart {
                    text: head.opcode == OP_TEXT,
                    first_frame: head.len,
                });
            }
            // A continuation with nothing to continue: the browser reads it as a text message.
            OP_CONTINUATION if self.message.is_none() => {
                self.message = Some(0);
                on(Event::MessageStart {
                    text: true,
                    first_frame: head.len,
                });
            }
            OP_CLOSE => self.close_code = [0; 2],
            _ => {}
        }
        self.state = State::Payload { head, done: 0 };
        if head.len == 0 {
            self.end_frame(&head, on);
        }
    }

    fn payload(
        &mut self,
        head: &Head,
        range: Range<usize>,
        done_before: u64,
        chunk: &[u8],
        on: &mut impl FnMut(Event),
    ) {
        if range.is_empty() {
            return;
        }
        if is_data(head.opcode) {
            if let Some(len) = &mut self.message {
                *len += range.len() as u64;
            }
            on(Event::Data {
                range,
                mask: head.mask.map(|k| (k, (done_before % 4) as u8)),
            });
        } else if head.opcode == OP_CLOSE && done_before < 2 {
            // Only the status code matters; it is in the first two payload bytes.
            let first = done_before as usize;
            for (i, &b) in chunk[range].iter().take(2 - first).enumerate() {
                let at = first + i;
                let key = head.mask.map_or(0, |k| k[at]);
                self.close_code[at] = b ^ key;
            }
        }
    }

    fn end_frame(&mut self, head: &Head, on: &mut impl FnMut(Event)) {
        self.state = State::Header;
        if is_data(head.opcode) && head.fin {
            if let Some(len) = self.message.take() {
                on(Event::MessageEnd { len });
            }
        } else if head.opcode == OP_CLOSE {
            let code = (head.len >= 2).then(|| u16::from_be_bytes(self.close_code));
            on(Event::Close { code });
        } else if head.opcode == OP_PING {
            on(Event::Ping);
        } else if head.opcode == OP_PONG {
            on(Event::Pong);
        }
    }
}

fn is_data(opcode: u8) -> bool {
    matches!(opcode, OP_CONTINUATION | OP_TEXT | OP_BINARY)
}

/// The full header length, once the first two bytes are known.
fn header_len(start: &[u8]) -> Option<usize> {
    let [_, b1, ..] = *start else {
        return None;
    };
    let ext = match b1 & 0x7F {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let mask = if b1 & 0x80 != 0 { 4 } else { 0 };
    Some(2 + ext + mask)
}

/// Parses a complete header (its length checked by `header_len`).
fn parse(h: &[u8]) -> Head {
    let (len, rest) = match h[1] & 0x7F {
        126 => (u64::from(u16::from_be_bytes([h[2], h[3]])), &h[4..]),
        127 => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[2..10]);
            (u64::from_be_bytes(b), &h[10..])
        }
        n => (u64::from(n), &h[2..]),
    };
    let mask = (h[1] & 0x80 != 0).then(|| [rest[0], rest[1], rest[2], rest[3]]);
    Head {
        fin: h[0] & 0x80 != 0,
        opcode: h[0] & 0x0F,
        mask,
        len,
    }
}

/// A close frame of the relay's own. Frames to the browser are masked with a fresh random key
/// (the relay is the browser's client); frames to a client are not.
pub fn close_frame(code: u16, reason: &str, masked: bool) -> Vec<u8> {
    let reason = &reason.as_bytes()[..reason.len().min(123)];
    let mut payload = Vec::with_capacity(2 + reason.len());
    payload.extend_from_slice(&code.to_be_bytes());
    payload.extend_from_slice(reason);
    let mut out = vec![0x80 | OP_CLOSE];
    if masked {
        let key: [u8; 4] = fastrand::u32(..).to_be_bytes();
        out.push(0x80 | payload.len() as u8);
        out.extend_from_slice(&key);
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= key[i % 4];
        }
    } else {
        out.push(payload.len() as u8);
    }
    out.extend_from_slice(&payload);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame as a client (masked) or the browser (unmasked) would write it.
    fn frame(fin: bool, opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
        let mut out = vec![(if fin { 0x80 } else { 0 }) | opcode];
        let m = if mask.is_some() { 0x80 } else { 0 };
        match payload.len() {
            n if n < 126 => out.push(m | n as u8),
            n if n < 65536 => {
                out.push(m | 126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(m | 127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        match mask {
            Some(k) => {
                out.extend_from_slice(&k);
                out.extend(payload.iter().enumerate().map(|(i, b)| b ^ k[i % 4]));
            }
            None => out.extend_from_slice(payload),
        }
        out
    }

    const KEY: [u8; 4] = [0xA1, 0x02, 0x33, 0xF4];

    /// Scans `bytes` split into pieces of `step` bytes; returns the events and, for data, the
    /// unmasked payload of each message.
    fn scan_split(
        from: From,
        bytes: &[u8],
        step: usize,
        max: usize,
    ) -> (Vec<Event>, Vec<Vec<u8>>, Result<(), Stop>) {
        let mut s = Scanner::new(from, max);
        let mut events = Vec::new();
        let mut messages = Vec::new();
        let mut current = Vec::new();
        // Like the pump: unconsumed bytes (a cut header) are passed again with the next piece.
        let mut offset = 0;
        let mut end = 0;
        while end < bytes.len() {
            end = (end + step.max(1)).min(bytes.len());
            let piece = &bytes[offset..end];
            let mut local = Vec::new();
            let r = s.scan(piece, &mut |e| local.push(e));
            for e in &local {
                match e {
                    Event::MessageStart { .. } => current.clear(),
                    Event::Data { range, mask } => {
                        let mut d = piece[range.clone()].to_vec();
                        if let Some((k, phase)) = mask {
                            crate::tap::Mask {
                                key: *k,
                                phase: *phase,
                            }
                            .apply(&mut d);
                        }
                        current.extend(d);
                    }
                    Event::MessageEnd { .. } => messages.push(std::mem::take(&mut current)),
                    Event::Close { .. } | Event::Ping | Event::Pong => {}
                }
            }
            events.extend(local.into_iter().map(|e| match e {
                Event::Data { range, mask } => Event::Data {
                    range: range.start + offset..range.end + offset,
                    mask,
                },
                other => other,
            }));
            match r {
                Ok(consumed) => offset += consumed,
                Err(stop) => {
                    let stop = match stop {
                        Stop::TooBig { at } => Stop::TooBig { at: at + offset },
                        Stop::Violation { at, why } => Stop::Violation {
                            at: at + offset,
                            why,
                        },
                    };
                    return (events, messages, Err(stop));
                }
            }
        }
        assert_eq!(offset, bytes.len(), "everything consumed");
        (events, messages, Ok(()))
    }

    #[test]
    fn messages_come_out_whole_at_any_split() {
        let big = vec![b'x'; 70_000];
        let mut stream = frame(true, OP_TEXT, br#"{"id":1,"method":"A.b"}"#, Some(KEY));
        stream.extend(frame(true, OP_PING, b"hi", Some(KEY)));
        stream.extend(frame(false, OP_TEXT, b"{\"id\":2,", Some(KEY)));
        stream.extend(frame(true, OP_PONG, b"", Some(KEY)));
        stream.extend(frame(true, OP_CONTINUATION, b"\"x\":1}", Some(KEY)));
        stream.extend(frame(true, OP_BINARY, &big, Some(KEY)));
        stream.extend(frame(true, OP_TEXT, b"", Some(KEY)));
        stream.extend(frame(
            true,
            OP_CLOSE,
            &[0x0F, 0xA0, b'b', b'y', b'e'],
            Some(KEY),
        ));
        let mut reference = None;
        for step in [1, 2, 3, 7, 13, 100, 4096, stream.len()] {
            let (events, messages, r) = scan_split(From::Client, &stream, step, 1 << 20);
            assert_eq!(r, Ok(()));
            assert_eq!(messages.len(), 4, "step {step}");
            assert_eq!(messages[0], br#"{"id":1,"method":"A.b"}"#);
            assert_eq!(messages[1], b"{\"id\":2,\"x\":1}");
            assert_eq!(messages[2], big);
            assert!(messages[3].is_empty());
            assert_eq!(events.last(), Some(&Event::Close { code: Some(4000) }));
            let ends: Vec<_> = events
                .iter()
                .filter_map(|e| match e {
                    Event::MessageEnd { len } => Some(*len),
                    _ => None,
                })
                .collect();
            assert_eq!(ends, vec![23, 14, 70_000, 0]);
            // Data ranges merge to the same bytes whatever the split.
            let data: Vec<u8> = events
                .iter()
                .filter_map(|e| match e {
                    Event::Data { range, .. } => Some(range.clone()),
                    _ => None,
                })
                .flat_map(|r| stream[r].to_vec())
                .collect();
            match &reference {
                None => reference = Some(data),
                Some(r) => assert_eq!(&data, r, "step {step}"),
            }
        }
    }

    #[test]
    fn browser_frames_are_unmasked_and_trusted() {
        let mut stream = frame(true, OP_TEXT, b"{\"method\":\"X\"}", None);
        stream.extend(frame(true, 0x3, b"odd", None));
        stream.extend(frame(true, OP_CLOSE, &1000u16.to_be_bytes(), None));
        let (events, messages, r) = scan_split(From::Browser, &stream, 5, 1 << 20);
        assert_eq!(r, Ok(()));
        assert_eq!(messages, vec![b"{\"method\":\"X\"}".to_vec()]);
        assert_eq!(events.last(), Some(&Event::Close { code: Some(1000) }));
    }

    #[test]
    fn client_violations_stop_before_the_offending_frame() {
        let ok = frame(true, OP_TEXT, b"{}", Some(KEY));
        let cases: [(Vec<u8>, &str); 4] = [
            (frame(true, OP_TEXT, b"{}", None), "unmasked"),
            (
                {
                    let mut f = frame(true, OP_TEXT, b"{}", Some(KEY));
                    f[0] |= 0x40;
                    f
                },
                "reserved bits",
            ),
            (frame(true, 0x3, b"{}", Some(KEY)), "reserved opcode"),
            (
                {
                    let mut f = vec![0x81, 0xFF];
                    f.extend_from_slice(&(1u64 << 63).to_be_bytes());
                    f.extend_from_slice(&KEY);
                    f
                },
                "most significant bit",
            ),
        ];
        for (bad, what) in cases {
            let mut stream = ok.clone();
            stream.extend(&bad);
            for step in [1, 3, stream.len()] {
                let (_, messages, r) = scan_split(From::Client, &stream, step, usize::MAX >> 1);
                match r {
                    Err(Stop::Violation { at, why }) => {
                        assert_eq!(at, ok.len(), "{what} step {step}");
                        assert!(why.contains(what), "{why} vs {what}");
                    }
                    other => panic!("{what}: {other:?}"),
                }
                assert_eq!(messages.len(), 1, "the frame before it is whole");
            }
        }
    }

    #[test]
    fn chromium_tolerates_these_so_the_relay_forwards_them() {
        // Oversized ping, a stray continuation, invalid UTF-8 text: Chromium answers them
        // (pong, -32700) and keeps the socket open.
        let mut stream = frame(true, OP_PING, &[b'p'; 200], Some(KEY));
        stream.extend(frame(true, OP_CONTINUATION, b"abc", Some(KEY)));
        stream.extend(frame(true, OP_TEXT, b"\xff\xfe", Some(KEY)));
        let (_, messages, r) = scan_split(From::Client, &stream, 4, 1 << 20);
        assert_eq!(r, Ok(()));
        assert_eq!(messages, vec![b"abc".to_vec(), b"\xff\xfe".to_vec()]);
    }

    #[test]
    fn size_limit_counts_whole_messages() {
        let max = 100;
        let mut stream = frame(true, OP_TEXT, &[b'a'; 100], Some(KEY));
        stream.extend(frame(false, OP_TEXT, &[b'a'; 60], Some(KEY)));
        let second = stream.len();
        stream.extend(frame(true, OP_CONTINUATION, &[b'a'; 41], Some(KEY)));
        let (_, messages, r) = scan_split(From::Client, &stream, 9, max);
        assert_eq!(r, Err(Stop::TooBig { at: second }));
        assert_eq!(messages.len(), 1);
        let (_, _, r) = scan_split(
            From::Browser,
            &frame(true, OP_TEXT, &[0; 101], None),
            50,
            max,
        );
        assert_eq!(r, Err(Stop::TooBig { at: 0 }));
    }

    #[test]
    fn own_close_frames_parse_back() {
        for (masked, from) in [(true, From::Client), (false, From::Browser)] {
            let bytes = close_frame(1011, "the browser connection was lost", masked);
            let mut s = Scanner::new(from, 1 << 20);
            let mut events = Vec::new();
            assert_eq!(s.scan(&bytes, &mut |e| events.push(e)), Ok(bytes.len()));
            assert_eq!(events, vec![Event::Close { code: Some(1011) }]);
            assert!(s.at_boundary());
        }
    }

    proptest::proptest! {
        /// Any sequence of frames, cut anywhere: every message comes out whole and in order, and
        /// everything is consumed.
        #[test]
        fn any_frames_at_any_cuts(
            frames in proptest::collection::vec(
                (0u8..4, proptest::collection::vec(proptest::num::u8::ANY, 0..300), proptest::bool::ANY),
                1..12,
            ),
            step in 1usize..64,
            masked in proptest::bool::ANY,
        ) {
            // (kind, payload, fin): kinds 0..2 are data starts, 3 a ping in between.
            let mask = masked.then_some(KEY);
            let from = if masked { From::Client } else { From::Browser };
            let mut stream = Vec::new();
            let mut expected = Vec::new();
            let mut open: Option<Vec<u8>> = None;
            for (kind, payload, fin) in &frames {
                if *kind == 3 {
                    stream.extend(frame(true, OP_PING, &payload[..payload.len().min(125)], mask));
                    continue;
                }
                let opcode = match (&open, kind) {
                    (Some(_), _) => OP_CONTINUATION,
                    (None, 0) => OP_BINARY,
                    (None, _) => OP_TEXT,
                };
                stream.extend(frame(*fin, opcode, payload, mask));
                let mut m = open.take().unwrap_or_default();
                m.extend_from_slice(payload);
                if *fin {
                    expected.push(m);
                } else {
                    open = Some(m);
                }
            }
            let (_, messages, r) = scan_split(from, &stream, step, 1 << 20);
            proptest::prop_assert_eq!(r, Ok(()));
            proptest::prop_assert_eq!(messages, expected);
        }
    }
}
