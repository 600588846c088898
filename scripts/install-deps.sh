#!/usr/bin/env bash
# Installs the host packages drakit's local cluster and image builds need, and
# only those that are missing: runc (containerd's OCI runtime), gcc and the
# static C library (the pause image is a static C program), util-linux
# (unshare, mount) and libc-bin (ldd, for images that carry shared libraries).
# Idempotent: a host that has everything is left untouched and apt is not run.
# A policy-rc.d that forbids service starts is in place while apt runs, so no
# package starts a daemon (Debian's runc pulls none, but its dependencies may).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || die "install-deps.sh must run as root (it runs apt-get)"

# need CMD PACKAGE: queue PACKAGE when CMD is not found.
missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || missing+=("$2"); }
# need_file PATH PACKAGE: queue PACKAGE when PATH does not exist.
need_file() { [ -e "$1" ] || missing+=("$2"); }

need_cmd runc runc
need_cmd gcc gcc
need_file /usr/lib/x86_64-linux-gnu/libc.a libc6-dev
need_cmd unshare util-linux
need_cmd mount mount
need_cmd ldd libc-bin

if [ "${#missing[@]}" -eq 0 ]; then
  log "install-deps: everything present (runc, gcc, libc6-dev, unshare, mount, ldd)"
  exit 0
fi

# Forbid service starts for the duration of the install; restore whatever
# policy-rc.d was there before.
policy=/usr/sbin/policy-rc.d
backup=""
if [ -e "$policy" ]; then
  backup=$(mktemp)
  cp -p "$policy" "$backup"
fi
restore_policy() {
  if [ -n "$backup" ]; then cp -p "$backup" "$policy" && rm -f "$backup"; else rm -f "$policy"; fi
}
trap restore_policy EXIT
printf '#!/bin/sh\nexit 101\n' >"$policy"
chmod 0755 "$policy"

log "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
log "install-deps: done"
