#!/usr/bin/env bash
# Fetches the nats-server releases the cluster and partition tests run on, from Debian's own
# packages, into .nats/<version>/nats-server (the project's folder, not the system's): unstable's
# current release, and trixie's 2.10 to find the oldest release that holds. apt reads a sources list
# of the project's own and keeps its lists under .nats/apt; nothing is installed over the system's
# nats-server (bookworm's 2.9.10, which the single-node tests use). Idempotent: a release already
# unpacked is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD/.nats"
apt_dir="$root/apt"
# suite=version pairs; the version pins what the tests were measured on.
releases=("unstable=2.15.1-1" "trixie=2.10.27-1+b2")

missing=()
for release in "${releases[@]}"; do
  version="${release#*=}"
  plain="${version%%-*}"
  [ -x "$root/$plain/nats-server" ] || missing+=("$release")
done
if [ "${#missing[@]}" = 0 ]; then
  for release in "${releases[@]}"; do v="${release#*=}"; echo "found $root/${v%%-*}/nats-server"; done
  exit 0
fi

mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/debs"
: >"$apt_dir/sources.list"
for release in "${releases[@]}"; do
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian ${release%%=*} main" >>"$apt_dir/sources.list"
done
apt_opts=(
  -o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=-"
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir/archives"
  -o "Dir::State::status=/dev/null" -o "APT::Sandbox::User=root"
)
apt-get "${apt_opts[@]}" update </dev/null
for release in "${missing[@]}"; do
  version="${release#*=}"
  plain="${version%%-*}"
  (cd "$apt_dir/debs" && apt-get "${apt_opts[@]}" download "nats-server=$version" </dev/null)
  unpacked="$(mktemp -d)"
  dpkg-deb -x "$apt_dir/debs/nats-server_${version//:/%3a}_$(dpkg --print-architecture).deb" "$unpacked"
  mkdir -p "$root/$plain"
  install -m 0755 "$unpacked/usr/sbin/nats-server" "$root/$plain/nats-server"
  rm -rf "$unpacked"
  echo "fetched $root/$plain/nats-server: $("$root/$plain/nats-server" --version)"
done
