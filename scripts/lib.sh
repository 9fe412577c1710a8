# Shell helpers the scripts share; each script `cd`s to the repository's root, then
# `source scripts/lib.sh` (bash).

# Runs a command as root: directly when we are root, else through sudo.
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# Installs Debian packages. One apt at a time across the scripts (they share the lock file): CI
# installs its test clients while the container's base is prepared, and concurrent
# `apt-get update`s fail on apt's lists lock. The package lists are updated once per script.
apt_updated=0
apt_lock=/var/lock/cdp-relay-apt.lock
apt_install() {
  if [ "$apt_updated" -eq 0 ]; then as_root flock "$apt_lock" apt-get update -qq; apt_updated=1; fi
  as_root flock "$apt_lock" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    -o DPkg::Lock::Timeout=600 "$@" >/dev/null
}
