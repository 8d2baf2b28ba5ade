#!/usr/bin/env bash
# sdk-typescript.sh makes sure sdk/typescript has its npm dependencies (its
# committed package-lock.json: protobuf-es, Connect, TypeScript, tsx), and
# prints the package's folder on stdout:
#   (cd "$(deploy/local/sdk-typescript.sh)" && npm test)
#
# deploy/local/npm-lock.sh installs the lock once per machine (npm ci into
# ~/.cache/switchboard-npm), and sdk/typescript/node_modules is made a link
# to that install, so a fresh clone does not run npm ci again. A real
# node_modules folder (a developer's own npm install) is left alone. It needs
# node and npm (Debian: apt-get install nodejs npm). Messages go to stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pkg=$(cd "$here/../../sdk/typescript" && pwd)
if [[ ! -d $pkg/node_modules || -L $pkg/node_modules ]]; then
  dir=$("$here/npm-lock.sh" "$pkg" node_modules/.bin/tsc)
  ln -sfn "$dir/node_modules" "$pkg/node_modules"
fi
printf '%s\n' "$pkg"
