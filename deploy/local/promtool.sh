#!/usr/bin/env bash
# promtool.sh makes sure Prometheus's promtool is installed, for the checks
# of deploy/observability (promtool check rules, promtool test rules), and
# prints the path of the binary on stdout:
#   PROMTOOL_BIN=$(deploy/local/promtool.sh)
#
# When promtool is already there (PROMTOOL_BIN, /usr/bin/promtool or on PATH)
# it only prints that path. Otherwise, on Debian, it installs the prometheus
# package with apt-get --no-install-recommends (promtool ships in it; the
# server it also installs is stopped and disabled where a service manager
# started it, since it listens on 9090), as root or through sudo; if it cannot, it exits non-zero and says why. Messages go to stderr so
# stdout is only ever the path. Safe to run again.
set -euo pipefail

log() { printf 'promtool.sh: %s\n' "$*" >&2; }

find_promtool() {
  if [[ -n ${PROMTOOL_BIN:-} && -x $PROMTOOL_BIN ]]; then
    printf '%s\n' "$PROMTOOL_BIN"
  elif [[ -x /usr/bin/promtool ]]; then
    printf '%s\n' /usr/bin/promtool
  elif command -v promtool >/dev/null 2>&1; then
    command -v promtool
  else
    return 1
  fi
}

if find_promtool; then
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  log "promtool is not installed and apt-get is missing; install Prometheus's promtool and set PROMTOOL_BIN"
  exit 1
fi
as_root=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null 2>&1; then
    log "promtool is not installed and this is not root (and there is no sudo); run as root: apt-get install -y --no-install-recommends prometheus"
    exit 1
  fi
  as_root=(sudo)
fi

log "installing promtool (apt-get install prometheus)"
export DEBIAN_FRONTEND=noninteractive
if ! "${as_root[@]}" apt-get update -qq >&2; then
  log "apt-get update failed; check network access to the Debian mirrors"
  exit 1
fi
if ! "${as_root[@]}" apt-get install -y -qq --no-install-recommends prometheus >&2; then
  log "apt-get install prometheus failed"
  exit 1
fi

# The package also installs the Prometheus server, which listens on 9090:
# Switchboard's default gRPC port. Where a service manager started it, stop it
# and keep it from starting at boot; only promtool is wanted.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
  log "stopping and disabling the prometheus service the package started (it takes port 9090)"
  "${as_root[@]}" systemctl disable --now prometheus >&2 || log "could not stop the prometheus service; stop it before using port 9090"
fi

if find_promtool; then
  exit 0
fi
log "prometheus was installed but no promtool was found at /usr/bin/promtool or on PATH"
exit 1
