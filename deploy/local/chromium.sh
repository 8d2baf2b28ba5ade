#!/usr/bin/env bash
# chromium.sh makes sure Debian's Chromium is installed, for the browser tests
# of the admin dashboard (services/gateway/dashboard), and prints the path of
# the binary on stdout:
#   CHROMIUM_BIN=$(deploy/local/chromium.sh)
#
# When /usr/bin/chromium (or a chromium on PATH) already exists it only prints
# that path. Otherwise, when root on Debian, it installs the chromium package
# with apt-get --no-install-recommends (what it recommends, chromium-sandbox,
# is not needed: the tests run it headless with --no-sandbox); if it cannot,
# it exits non-zero and says why. Messages go to stderr so stdout is only
# ever the path.
set -euo pipefail

log() { printf 'chromium.sh: %s\n' "$*" >&2; }

find_chromium() {
  if [[ -n ${CHROMIUM_BIN:-} && -x $CHROMIUM_BIN ]]; then
    printf '%s\n' "$CHROMIUM_BIN"
  elif [[ -x /usr/bin/chromium ]]; then
    printf '%s\n' /usr/bin/chromium
  elif command -v chromium >/dev/null 2>&1; then
    command -v chromium
  else
    return 1
  fi
}

if find_chromium; then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  log "chromium is not installed and this is not root; run: sudo apt-get install -y --no-install-recommends chromium"
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  log "chromium is not installed and apt-get is missing; install Chromium and set CHROMIUM_BIN"
  exit 1
fi

log "installing chromium (apt-get)"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -qq >&2; then
  log "apt-get update failed; check network access to the Debian mirrors"
  exit 1
fi
if ! apt-get install -y -qq --no-install-recommends chromium >&2; then
  log "apt-get install chromium failed"
  exit 1
fi

if find_chromium; then
  exit 0
fi
log "chromium was installed but no binary was found at /usr/bin/chromium or on PATH"
exit 1
