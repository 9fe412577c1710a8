//! The few facts about other processes the launcher reads from `/proc`.

/// Every process id in `/proc`.
pub(crate) fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
}

/// The fields of `/proc/<pid>/stat` after the command name (field 3, the state, comes first).
/// The command name may hold spaces and parentheses: fields restart after the last ')'.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// A process's start time in clock ticks since boot (field 22), which tells a reused pid apart.
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// True while a process of group `pgid` is running. Zombies do not count: a dead helper waiting
/// for a slow init to reap it holds no port and no file.
pub(crate) fn group_running(pgid: u32) -> bool {
    pids().any(|pid| {
        stat_fields(pid).is_some_and(|f| {
            f.first().is_some_and(|state| state != "Z")
                && f.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_known() {
        let me = std::process::id();
        assert!(start_time(me).is_some());
        assert_eq!(start_time(u32::MAX), None);
        let group = nix::unistd::getpgrp().as_raw() as u32;
        assert!(group_running(group));
        assert!(!group_running(u32::MAX));
    }
}
