//! The fleet tests' in-process S3 server ([`cdp_relay_tests::s3::S3Server`]) as a process, for
//! tests that cannot link it: `scripts/container-test.sh` points a relay in a container at it.
//!
//! `s3-server BUCKET...` serves those buckets (created empty) on 127.0.0.1 with an OS-chosen
//! port, prints what a client needs as `NAME=value` lines on stdout (the `AWS_*` environment,
//! and `S3_DATA=<dir>`, where each object is the file `<dir>/<bucket>/<key>`), then `READY`, and
//! serves until its standard input closes or it is sent SIGTERM/SIGINT. The data is removed when
//! it exits.

#![forbid(unsafe_code)]

use cdp_relay_tests::s3::S3Server;
use std::io::{Read, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let buckets: Vec<String> = std::env::args().skip(1).collect();
    if buckets.is_empty() || buckets.iter().any(|b| b.starts_with('-')) {
        eprintln!("usage: s3-server BUCKET...  (serves until stdin closes or SIGTERM)");
        return ExitCode::from(64);
    }
    let names: Vec<&str> = buckets.iter().map(String::as_str).collect();
    let server = S3Server::start(&names);

    let mut out = std::io::stdout().lock();
    for (k, v) in server.env() {
        let _ = writeln!(out, "{k}={v}");
    }
    let _ = writeln!(out, "S3_DATA={}", server.data_dir().display());
    let _ = writeln!(out, "READY");
    let _ = out.flush();
    drop(out);

    // Either end stops the server; dropping it removes the data directory.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let stdin_tx = tx.clone();
    std::thread::spawn(move || {
        let mut sink = [0u8; 512];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        let _ = stdin_tx.send(());
    });
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("s3-server: cannot start a runtime for signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    std::thread::spawn(move || {
        rt.block_on(async {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                return;
            };
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            let _ = tx.send(());
        })
    });
    let _ = rx.recv();
    drop(server);
    ExitCode::SUCCESS
}
