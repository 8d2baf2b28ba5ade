#!/usr/bin/env bash
# playwright.sh makes sure playwright-core (pinned with its lock in
# deploy/local/playwright/package-lock.json) is installed, for the console's
# browser tests (services/gateway/dashboard/e2e, run by
# services/cmd/switchboard TestConsoleEndToEnd), and prints the directory
# that holds its node_modules on stdout. playwright-core is the library
# without a bundled browser: the tests drive Debian's chromium
# (deploy/local/chromium.sh), so nothing is downloaded at run time.
#
# deploy/local/npm-lock.sh installs it: `npm ci` of the lock, once per
# machine and lock, into ~/.cache/switchboard-npm. It needs node and npm
# (Debian: apt-get install nodejs npm) and the npm registry; if it cannot
# install, it exits non-zero and says why. Messages go to stderr so stdout is
# only ever the path. Safe to run again.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$here/npm-lock.sh" "$here/playwright" node_modules/playwright-core/package.json
