#!/usr/bin/env bash
# Installs the Debian packages envfix needs to build and test. Idempotent; quiet when all is there.
set -euo pipefail
pkgs=(
  cmake ninja-build g++ pkg-config git
  libcurl4-openssl-dev libarchive-dev libyaml-cpp-dev nlohmann-json3-dev libssl-dev doctest-dev
  libfmt-dev libcli11-dev libgumbo-dev libtomlplusplus-dev libzstd-dev zlib1g-dev
  nginx-light openssl python3 python3-venv python3-pip zip unzip zstd
  clang-19 libclang-rt-19-dev lld clang-format-19 zsh fish groff-base man-db
  g++-aarch64-linux-gnu binutils-aarch64-linux-gnu
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
