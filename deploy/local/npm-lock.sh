#!/usr/bin/env bash
# npm-lock.sh SRC CHECK: installs the npm packages pinned by SRC's
# package.json and package-lock.json, once per machine and lock, and prints
# the folder that holds them (its node_modules) on stdout. CHECK is a path
# inside that folder that a complete install has, e.g.
# node_modules/playwright-core/package.json.
#
# It runs `npm ci` (exactly the lock, no install scripts) into
# ~/.cache/switchboard-npm/<SRC's name>-<the lock's sha256, 16 digits>
# ($SWITCHBOARD_NPM_CACHE moves it), so every checkout on the machine, a
# fresh clone included, shares one install per lock: a fresh clone paid
# 15.9 s (the MCP Inspector, 103 packages) and 3.4 s (playwright-core) of
# npm ci per run before. An install is made in a scratch folder and renamed
# into place, under a lock, so a run that dies half way leaves no half
# install behind and two runs at once install once. Installs unused for 30
# days are removed.
#
# It needs node and npm (Debian: apt-get install nodejs npm) and the npm
# registry; if it cannot install, it exits non-zero and says why. Messages go
# to stderr, so stdout is only ever the path. mcp-inspector.sh and
# playwright.sh call it.
set -euo pipefail

src=${1:?usage: npm-lock.sh SRC CHECK}
check=${2:?usage: npm-lock.sh SRC CHECK}
name=$(basename "$src")
log() { printf 'npm-lock.sh (%s): %s\n' "$name" "$*" >&2; }

for tool in node npm sha256sum flock; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    log "$tool is missing; install Node.js 20 or later with npm (Debian: apt-get install -y nodejs npm)"
    exit 1
  fi
done

cache=${SWITCHBOARD_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard-npm}
sum=$(sha256sum "$src/package-lock.json")
dir=$cache/$name-${sum:0:16}

if [[ ! -e $dir/$check ]]; then
  mkdir -p "$cache"
  exec 9>"$cache/.lock"
  flock 9
  if [[ ! -e $dir/$check ]]; then
    log "installing (npm ci into $dir)"
    scratch=$(mktemp -d "$cache/.install-$name-XXXXXX")
    trap 'rm -rf "$scratch"' EXIT
    cp "$src/package.json" "$src/package-lock.json" "$scratch/"
    if ! (cd "$scratch" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2); then
      log "npm ci failed; check access to the npm registry"
      exit 1
    fi
    if [[ ! -e $scratch/$check ]]; then
      log "npm ci succeeded but $check is missing"
      exit 1
    fi
    rm -rf "$dir"
    mv "$scratch" "$dir"
    trap - EXIT
    # Installs of locks no longer used (30 days without a run touching them).
    find "$cache" -mindepth 1 -maxdepth 1 -type d -name '*-*' ! -name '.*' -mtime +30 -exec rm -rf {} + 2>/dev/null || true
  fi
  exec 9>&-
fi
touch "$dir"
printf '%s\n' "$dir"
