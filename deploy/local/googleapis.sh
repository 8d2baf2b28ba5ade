#!/usr/bin/env bash
# googleapis.sh copies the google/api HTTP annotation protos that proto/ imports
# (annotations.proto, http.proto and, when present, httpbody.proto) from a Go
# module in the module cache into third_party/googleapis/, which buf.yaml lists
# as a second buf module. The folder is git-ignored: these files are fetched at
# generate time and never committed.
#
# Source module: $GOOGLEAPIS_MODULE (module@version), default
# github.com/grpc-ecosystem/grpc-gateway@v1.16.0, the only module on the Go
# module proxy that ships these .proto sources (grpc-gateway v2 and genproto do
# not). Only the Go module proxy is needed.
#
# Idempotent and quiet: prints nothing on success and leaves files that are
# already up to date untouched. Run from anywhere; paths are relative to the
# repository root.
set -euo pipefail

module=${GOOGLEAPIS_MODULE:-github.com/grpc-ecosystem/grpc-gateway@v1.16.0}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dest=$root/third_party/googleapis/google/api

# Download outside any workspace so go.work and the repo's go.mod files neither
# influence nor get touched by the lookup.
if ! json=$(cd "$root" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$module" 2>&1); then
  printf 'googleapis.sh: go mod download %s failed:\n%s\n' "$module" "$json" >&2
  exit 1
fi
dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [[ -z $dir || ! -d $dir ]]; then
  printf 'googleapis.sh: no module directory for %s in:\n%s\n' "$module" "$json" >&2
  exit 1
fi

# grpc-gateway v1 keeps them under third_party/googleapis; a googleapis-style
# module keeps them at its root.
src=
for candidate in "$dir/third_party/googleapis/google/api" "$dir/google/api"; do
  if [[ -f $candidate/annotations.proto && -f $candidate/http.proto ]]; then
    src=$candidate
    break
  fi
done
if [[ -z $src ]]; then
  printf 'googleapis.sh: %s has no google/api/{annotations,http}.proto\n' "$module" >&2
  exit 1
fi

mkdir -p "$dest"
for name in annotations.proto http.proto httpbody.proto; do
  [[ -f $src/$name ]] || continue
  # Module cache files are read-only: install(1) writes a fresh 0644 copy,
  # and an up-to-date copy is only made writable again.
  if cmp -s "$src/$name" "$dest/$name"; then
    chmod 0644 "$dest/$name"
  else
    install -m 0644 "$src/$name" "$dest/$name"
  fi
done
