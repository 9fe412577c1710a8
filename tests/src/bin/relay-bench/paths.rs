//! The paths a benchmark compares, all in front of the same upstream: direct, cdp-relay with
//! evidence on, cdp-relay `--no-evidence`, nginx (a websocket reverse proxy, Debian's package),
//! and node-http-proxy (the usual hand-rolled CDP proxy). Each is a child process killed on drop.

use crate::clients_dir;
use cdp_relay_tests::RelayProcess;
use std::path::PathBuf;
use std::process::Stdio;
use tokio::io::AsyncBufReadExt;

/// One way to reach the upstream.
pub struct Path {
    /// Name in the tables.
    pub name: &'static str,
    /// `127.0.0.1:PORT` to connect to.
    pub authority: String,
    /// The process doing the forwarding, for its memory (none for direct).
    pub pid: Option<u32>,
    /// It records evidence: its losses are counted (`/relay/v1/status`).
    pub records: bool,
}

/// The paths and the processes behind them.
pub struct Paths {
    pub list: Vec<Path>,
    /// Where the recording relay writes its run.
    evidence: PathBuf,
    _relays: Vec<RelayProcess>,
    _children: Vec<tokio::process::Child>,
    _groups: Vec<Group>,
    _dirs: Vec<tempfile::TempDir>,
}

impl Paths {
    /// Starts every path in front of `upstream` (`http://127.0.0.1:PORT`); `extra` are added to
    /// both relays' flags; `node`: include node-http-proxy. Peers that cannot run here (no nginx,
    /// no node) are left out with a note.
    pub async fn start(upstream: &str, extra: &[&str], node: bool) -> Paths {
        let up_auth = upstream.trim_start_matches("http://").to_owned();
        let evidence = tempfile::tempdir().expect("evidence dir");
        let evidence_dir = evidence.path().to_string_lossy().into_owned();
        let mut base = vec!["serve", "--upstream", upstream, "--listen", "127.0.0.1:0"];
        base.extend_from_slice(extra);
        let mut recording = base.clone();
        recording.extend(["--evidence-dir", &evidence_dir]);
        let relay = RelayProcess::spawn(&recording, &[]).await;
        let mut forwarding = base.clone();
        forwarding.push("--no-evidence");
        let plain = RelayProcess::spawn(&forwarding, &[]).await;
        let mut list = vec![
            Path {
                name: "direct",
                authority: up_auth.clone(),
                pid: None,
                records: false,
            },
            Path {
                name: "cdp-relay (evidence on)",
                authority: relay.authority(),
                pid: Some(relay.pid()),
                records: true,
            },
            Path {
                name: "cdp-relay --no-evidence",
                authority: plain.authority(),
                pid: Some(plain.pid()),
                records: false,
            },
        ];
        let mut children = Vec::new();
        let mut groups = Vec::new();
        let mut dirs = vec![evidence];
        match start_nginx(&up_auth).await {
            Ok((child, dir, authority, worker)) => {
                list.push(Path {
                    name: "nginx",
                    authority,
                    pid: worker,
                    records: false,
                });
                groups.push(child);
                dirs.push(dir);
            }
            Err(why) => eprintln!("note: nginx left out: {why}"),
        }
        let peer = if node {
            start_node_peer(upstream).await
        } else {
            Err("--no-node-peer".to_owned())
        };
        match peer {
            Ok((child, authority)) => {
                let pid = child.id();
                list.push(Path {
                    name: "node-http-proxy",
                    authority,
                    pid,
                    records: false,
                });
                children.push(child);
            }
            Err(why) => eprintln!("note: node-http-proxy left out: {why}"),
        }
        Paths {
            list,
            evidence: PathBuf::from(&evidence_dir),
            _relays: vec![relay, plain],
            _children: children,
            _groups: groups,
            _dirs: dirs,
        }
    }
}

/// A child process leading its own process group, which is killed whole on drop: nginx's master
/// does not take its worker with it when it is killed.
pub struct Group(tokio::process::Child);

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(pid) = self.0.id().and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Paths {
    /// The index of the first path whose name contains `name`, if that path runs here.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.list.iter().position(|p| p.name.contains(name))
    }

    /// Waits until the recording relay has written what the last scenario gave it (its journal
    /// stops growing), so its evidence work does not run into the next path's measurement.
    pub async fn settle(&self) {
        let mut last = None;
        for _ in 0..400 {
            let size = dir_size(&self.evidence);
            if last == Some(size) {
                return;
            }
            last = Some(size);
            tokio::time::sleep(std::time::Duration::from_millis(40)).await;
        }
    }
}

fn dir_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// nginx as a websocket reverse proxy in front of `upstream`, with its own config and prefix in a
/// temporary directory, one worker (like the relay's single process), access log off.
async fn start_nginx(
    upstream: &str,
) -> Result<(Group, tempfile::TempDir, String, Option<u32>), String> {
    let exe = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or("not installed (scripts/bench.sh installs Debian's nginx)")?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        l.local_addr().map_err(|e| e.to_string())?.port()
    };
    let prefix = dir.path().display().to_string();
    let user = if nix::unistd::geteuid().is_root() {
        "user root;"
    } else {
        ""
    };
    let conf = format!(
        r#"{user}
worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://{upstream};
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host {upstream};
            proxy_buffering off;
            proxy_read_timeout 3600s;
            proxy_send_timeout 3600s;
            tcp_nodelay on;
        }}
    }}
}}
"#
    );
    let conf_path = dir.path().join("nginx.conf");
    std::fs::write(&conf_path, conf).map_err(|e| e.to_string())?;
    let child = tokio::process::Command::new(exe)
        .arg("-p")
        .arg(dir.path())
        .arg("-c")
        .arg(&conf_path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .process_group(0)
        .spawn()
        .map_err(|e| e.to_string())?;
    let child = Group(child);
    // Ready once it accepts.
    let authority = format!("127.0.0.1:{port}");
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(&authority).await.is_ok() {
            // The master forks its worker after it binds: give it a moment to appear.
            let mut worker = None;
            for _ in 0..40 {
                worker = child.0.id().and_then(first_child);
                if worker.is_some() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(25)).await;
            }
            return Ok((child, dir, authority, worker));
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    Err("did not start listening".into())
}

/// A child process of `pid` (nginx's worker), found by scanning `/proc/*/stat` for its parent
/// (`/proc/PID/task/PID/children` needs a kernel option these machines lack).
fn first_child(pid: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let child: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so split after the last ')'.
        let ppid: u32 = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        (ppid == pid).then_some(child)
    })
}

async fn start_node_peer(upstream: &str) -> Result<(tokio::process::Child, String), String> {
    let dir = clients_dir();
    let mut child = tokio::process::Command::new("node")
        .arg("peer-proxy.mjs")
        .arg(upstream)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let line = tokio::io::BufReader::new(stdout)
        .lines()
        .next_line()
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no endpoint line")?;
    Ok((child, line.trim_start_matches("http://").to_owned()))
}

/// Resets the peak-RSS counter of `pid` (`/proc/PID/clear_refs`), so [`peak_rss_kib`] then
/// measures one scenario.
pub fn reset_peak(pid: u32) {
    let _ = std::fs::write(format!("/proc/{pid}/clear_refs"), "5");
}

/// Peak resident memory of `pid` since start or the last [`reset_peak`], in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    cdp_relay_tests::status_kib(pid, "VmHWM")
}
