#!/usr/bin/env bash
# python-sdk.sh makes sure the Debian packages the Python worker SDK
# (sdk/python) is generated, built and tested with are installed, and prints
# the Python that sees them on stdout (/usr/bin/python3: a pyenv or other
# python3 first on PATH does not see Debian's packages):
#   py=$(deploy/local/python-sdk.sh)
#
# The packages: python3-grpcio and python3-protobuf (the runtime),
# protobuf-compiler and protobuf-compiler-grpc (protoc 3.21 and
# grpc_python_plugin, which buf runs for sdk/python/gen.sh: their generated
# code matches that runtime), python3-pytest, -pytest-timeout and
# -pytest-asyncio (tests), python3-venv, -pip, -setuptools, -wheel and
# -build (packaging without a package index). The Python package index is
# not reachable from the machines this project is built on, so nothing here
# comes from it. As root (or through sudo) on Debian it installs what is
# missing with apt-get --no-install-recommends; otherwise it exits non-zero
# and says what to install. Messages go to stderr. Safe to run again.
set -euo pipefail

log() { printf 'python-sdk.sh: %s\n' "$*" >&2; }

packages=(python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc
  python3-pytest python3-pytest-timeout python3-pytest-asyncio
  python3-venv python3-pip python3-setuptools python3-wheel python3-build)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]})); then
  if ! command -v apt-get >/dev/null 2>&1; then
    log "missing ${missing[*]} and apt-get is not here; install them (Debian 12 names)"
    exit 1
  fi
  as_root=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { log "missing ${missing[*]}; run as root: apt-get install -y --no-install-recommends ${missing[*]}"; exit 1; }
    as_root=(sudo)
  fi
  log "installing ${missing[*]} (apt-get --no-install-recommends)"
  "${as_root[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
printf '%s\n' /usr/bin/python3
