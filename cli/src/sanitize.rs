//! `cdp-relay sanitize`: stream stdin through cdp-sanitize to stdout.
//!
//! Text mode reads line by line with a cap on line length, so memory stays bounded whatever the
//! input size, and output is flushed whenever input would block, so it works in a pipe that stays
//! open. `--json` reads a stream of JSON documents (one document such as a HAR file, or JSON
//! Lines) and streams each one through the sanitizer structurally (memory bounded by the largest
//! string, not the document), writing it on its own line. A closed stdout (`| head`) ends the
//! command quietly with status 0.

use crate::args::Usage;
use anyhow::Context;
use cdp_evidence::BoundedLine;
use cdp_sanitize::{LineSanitizer, Sanitizer};
use std::io::{self, BufReader, BufWriter, Write};
use std::process::ExitCode;

/// By default lines longer than 1 MiB are cut.
pub const DEFAULT_MAX_LINE_BYTES: usize = 1 << 20;

/// Flags of `cdp-relay sanitize`.
#[derive(Debug, clap::Args)]
pub struct SanitizeArgs {
    /// Treat the input as JSON (one document such as a HAR file, or one per line) and walk it
    /// structurally, streaming; each document is written on one line, keys in input order.
    #[arg(long)]
    pub json: bool,

    /// With --json, pretty-print each document instead of one per line.
    #[arg(long, requires = "json")]
    pub pretty: bool,

    /// Replace the value of environment variable NAME with ${NAME} wherever it appears.
    /// Repeatable. NAME must match [A-Z_][A-Z0-9_]*.
    #[arg(long = "secret-env", value_name = "NAME")]
    pub secret_env: Vec<String>,

    /// In text mode, keep at most this many bytes of a line; the rest is dropped with a
    /// visible marker.
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES, value_name = "BYTES",
          value_parser = clap::value_parser!(usize))]
    pub max_line_bytes: usize,

    /// Print the redaction summary (counts by rule, as JSON) on stderr at the end.
    #[arg(long)]
    pub summary: bool,
}

/// Runs `cdp-relay sanitize`.
pub fn run(args: SanitizeArgs) -> anyhow::Result<ExitCode> {
    if args.max_line_bytes == 0 {
        return Err(Usage("--max-line-bytes must be at least 1".into()).into());
    }
    let sanitizer = Sanitizer::new();
    for (name, value) in super::secrets::from_env(&args.secret_env)? {
        sanitizer
            .register_secret(&name, &value)
            .map_err(|e| Usage(format!("--secret-env {name}: {e}")))?;
    }
    let stdin = io::stdin().lock();
    let stdout = io::stdout().lock();
    let result = if args.json {
        json(&sanitizer, stdin, stdout, args.pretty)
    } else {
        text(&sanitizer, stdin, stdout, args.max_line_bytes)
    };
    match result {
        Ok(()) => {}
        Err(Failure::Output(e)) => return Err(e).context("cannot write stdout"),
        Err(Failure::Input(e)) => return Err(e).context("cannot read stdin"),
        Err(Failure::Json(e)) => return Err(anyhow::anyhow!("invalid JSON on stdin: {e}")),
    }
    if args.summary {
        eprintln!("{}", serde_json::to_string(&sanitizer.summary())?);
    }
    Ok(ExitCode::SUCCESS)
}

/// Where a failure came from (a broken pipe on stdout is success; `main` decides that).
enum Failure {
    Input(io::Error),
    Output(io::Error),
    Json(serde_json::Error),
}

/// Text mode: line by line, bounded memory.
fn text(
    sanitizer: &Sanitizer,
    input: impl io::Read,
    output: impl Write,
    max_line_bytes: usize,
) -> Result<(), Failure> {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut writer = BufWriter::with_capacity(64 * 1024, output);
    let mut lines = sanitizer.lines();
    let mut buf = Vec::with_capacity(4096);
    loop {
        buf.clear();
        // Flush before a read that could block, so output keeps up with a slow producer.
        if !reader.buffer().contains(&b'\n') {
            writer.flush().map_err(Failure::Output)?;
        }
        let line = cdp_evidence::read_line_prefix(&mut reader, &mut buf, max_line_bytes)
            .map_err(Failure::Input)?;
        if line.at_end() {
            break;
        }
        write_line(&mut lines, &buf, &line, &mut writer).map_err(Failure::Output)?;
        if !line.terminated {
            break;
        }
    }
    writer.flush().map_err(Failure::Output)
}

fn write_line(
    lines: &mut LineSanitizer<'_>,
    buf: &[u8],
    info: &BoundedLine,
    writer: &mut impl Write,
) -> io::Result<()> {
    let raw = String::from_utf8_lossy(buf);
    let (kept, marker) = if info.dropped_chars > 0 {
        // Cut where no secret can straddle the cut; everything after it is dropped too.
        let cut = lines.safe_cut(&raw);
        let dropped = raw[cut..].chars().count() as u64 + info.dropped_chars;
        (&raw[..cut], Some(format!("…[truncated {dropped} chars]")))
    } else {
        (&raw[..], None)
    };
    let Some(clean) = lines.line(kept) else {
        return Ok(()); // inside a private key block
    };
    writer.write_all(clean.as_str().as_bytes())?;
    if let Some(marker) = marker {
        writer.write_all(marker.as_bytes())?;
    }
    if info.terminated {
        writer.write_all(b"\n")?;
    }
    Ok(())
}

/// JSON mode: a stream of documents (one document such as a HAR file, or JSON Lines), each
/// streamed through the sanitizer without being held in memory and written on its own line.
fn json(
    sanitizer: &Sanitizer,
    input: impl io::Read,
    output: impl Write,
    pretty: bool,
) -> Result<(), Failure> {
    let reader = BufReader::with_capacity(64 * 1024, input);
    let mut writer = Recorded::new(BufWriter::with_capacity(64 * 1024, output));
    let mut de = serde_json::Deserializer::from_reader(reader);
    loop {
        // Only whitespace left: done. Anything else is the next document.
        match de.end() {
            Ok(()) => break,
            Err(e) if e.is_io() => return Err(Failure::Input(io::Error::other(e))),
            Err(_) => {}
        }
        let streamed = if pretty {
            let mut ser = serde_json::Serializer::pretty(&mut writer);
            sanitizer.json_stream(&mut de, &mut ser, usize::MAX)
        } else {
            let mut ser = serde_json::Serializer::new(&mut writer);
            sanitizer.json_stream(&mut de, &mut ser, usize::MAX)
        };
        if let Err(e) = streamed {
            // A write failure surfaces as text through the parser's error; the writer kept the
            // real one (a closed pipe must end the command quietly).
            if let Some(failure) = writer.failure.take() {
                return Err(Failure::Output(failure));
            }
            return Err(if e.is_io() {
                Failure::Input(io::Error::other(e))
            } else {
                Failure::Json(e)
            });
        }
        writer.write_all(b"\n").map_err(Failure::Output)?;
        writer.flush().map_err(Failure::Output)?;
    }
    writer.flush().map_err(Failure::Output)
}

/// A writer that remembers its first failure, so it can be told apart from a parse error after
/// passing through serde.
struct Recorded<W> {
    inner: W,
    failure: Option<io::Error>,
}

impl<W: Write> Recorded<W> {
    fn new(inner: W) -> Self {
        Recorded {
            inner,
            failure: None,
        }
    }

    fn record<T>(&mut self, result: io::Result<T>) -> io::Result<T> {
        if let Err(e) = &result {
            self.failure
                .get_or_insert_with(|| io::Error::new(e.kind(), e.to_string()));
        }
        result
    }
}

impl<W: Write> Write for Recorded<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let result = self.inner.write(buf);
        self.record(result)
    }

    fn flush(&mut self) -> io::Result<()> {
        let result = self.inner.flush();
        self.record(result)
    }
}
