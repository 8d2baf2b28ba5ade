#!/usr/bin/env bash
# playwright.sh makes sure playwright-core (pinned with its lock in
# deploy/local/playwright/package-lock.json) is installed, for the console's
# browser tests (services/gateway/dashboard/e2e, run by
# services/cmd/switchboard TestConsoleEndToEnd), and prints the directory
# that holds its node_modules on stdout. playwright-core is the library
# without a bundled browser: the tests drive Debian's chromium
# (deploy/local/chromium.sh), so nothing is downloaded at run time.
#
# It runs `npm ci` (exactly the lock, no install scripts) into
# .local/playwright, which is not committed, and again only when the lock
# changed. It needs node and npm (Debian: apt-get install nodejs npm) and the
# npm registry; if it cannot install, it exits non-zero and says why.
# Messages go to stderr so stdout is only ever the path. Safe to run again.
set -euo pipefail

log() { printf 'playwright.sh: %s\n' "$*" >&2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
src=$root/deploy/local/playwright
dir=$root/.local/playwright
lib=$dir/node_modules/playwright-core/package.json

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    log "$tool is missing; install Node.js 20 or later with npm (Debian: apt-get install -y nodejs npm)"
    exit 1
  fi
done

if [[ -f $lib ]] && cmp -s "$src/package-lock.json" "$dir/package-lock.json"; then
  printf '%s\n' "$dir"
  exit 0
fi

log "installing playwright-core (npm ci into $dir)"
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
if ! (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2); then
  log "npm ci failed; check access to the npm registry"
  exit 1
fi
if [[ ! -f $lib ]]; then
  log "npm ci succeeded but $lib is missing"
  exit 1
fi
printf '%s\n' "$dir"
