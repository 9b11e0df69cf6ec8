#!/usr/bin/env bash
# Cross-builds envfix for aarch64 with Debian's cross toolchain (preset `aarch64`,
# cmake/aarch64-linux-gnu.cmake) and runs the low modules' unit tests and `envfix --version` under
# qemu-user. Usage: scripts/cross-aarch64.sh [BUILD_DIR] (default build/aarch64). Idempotent: it
# installs what is missing (arm64 multiarch, the cross compiler, qemu-user, the :arm64 -dev packages
# of scripts/install-deps.sh's libraries). Fails when a build step or a test fails.
# ENVFIX_CROSS_TARGETS overrides the targets built (default: the tests of util, specs, wheel and envfix).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=$(realpath -m "${1:-build/aarch64}")
start=$SECONDS

# Header-only libraries (nlohmann-json, doctest, CLI11) are Architecture: all; the native ones serve.
# toml++ is arch-specific only for its CMake config (/usr/lib/<triplet>/cmake). libyaml-cpp-dev is
# not Multi-Arch: same in bookworm (installing :arm64 removes the native one), so only its runtime
# library is installed for arm64 and the -dev package is unpacked under BUILD_DIR/deps (below).
cross_pkgs=(g++-aarch64-linux-gnu binutils-aarch64-linux-gnu qemu-user file
  libcurl4-openssl-dev:arm64 libarchive-dev:arm64 libyaml-cpp0.7:arm64 libssl-dev:arm64 libfmt-dev:arm64
  libgumbo-dev:arm64 libtomlplusplus-dev:arm64 libzstd-dev:arm64 zlib1g-dev:arm64)
missing=()
for p in "${cross_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "cross-aarch64: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
scripts/install-deps.sh # the native tools the tests call (python3, zip, nvcc-free parts)

# libyaml-cpp-dev:arm64, unpacked, not installed; its CMake config points at the arm64 runtime library
# that libyaml-cpp0.7:arm64 installed.
deps=$build/deps
yaml_dir=$deps/usr/lib/aarch64-linux-gnu/cmake/yaml-cpp
if [[ ! -f $yaml_dir/yaml-cpp-config.cmake ]]; then
  mkdir -p "$deps/dl"
  (cd "$deps/dl" && apt-get download libyaml-cpp-dev:arm64 2>&1 | grep -v "unsandboxed" || true)
  dpkg-deb -x "$deps"/dl/libyaml-cpp-dev_*_arm64.deb "$deps"
  lib=$(readlink -f /usr/lib/aarch64-linux-gnu/libyaml-cpp.so.0.7)
  ln -sf "$lib" "$deps/usr/lib/aarch64-linux-gnu/$(basename "$lib")"
fi

cmake --preset aarch64 -B "$build" -Dyaml-cpp_DIR="$yaml_dir" >/dev/null
read -r -a targets <<<"${ENVFIX_CROSS_TARGETS:-test_util test_specs test_wheel envfix}"
cmake --build "$build" -j "${ENVFIX_CROSS_JOBS:-2}" --target "${targets[@]}"
built=$SECONDS

bin=$build/cli/envfix
[[ -x $bin ]] || bin=$build/tests/wheel/test_wheel
file "$bin"
readelf -h "$bin" | grep -E "Class|Machine"
readelf -h "$bin" | grep -q "Machine: *AArch64" || { echo "cross-aarch64: $bin is not AArch64" >&2; exit 1; }

qemu=(qemu-aarch64 -L /)
if [[ -x $build/cli/envfix ]]; then
  echo "cross-aarch64: ${qemu[*]} $build/cli/envfix --version"
  "${qemu[@]}" "$build/cli/envfix" --version
fi
# Each test binary runs under qemu as ctest would run it (its folder, English messages: tests/CMakeLists.txt
# and cmake/EnvfixModule.cmake), label `unit` only: integration cases need nginx, pip and venvs.
# Excluded case: "subprocess captures output…" checks that spawning a missing program fails; under
# qemu-user the posix_spawn child is a fork, not a shared-memory vfork, so the exec error never reaches
# the parent (it sees exit 127). A qemu limitation, not envfix's: the case runs natively in scripts/test.sh.
run_test() { # MODULE DOCTEST-ARGS...
  local m=$1; shift
  echo "cross-aarch64: ${qemu[*]} test_$m $*"
  (cd "$build/tests/$m" && env -u LC_ALL -u LANGUAGE LC_MESSAGES=C ENVFIX_BIN="$build/cli/envfix" \
    "${qemu[@]}" "./test_$m" --force-colors=0 "$@")
}
for t in "${targets[@]}"; do
  [[ $t == test_* ]] || continue
  run_test "${t#test_}" --test-suite='unit/*' --test-case-exclude="subprocess captures output*" # doctest splits filters at commas
done
# The aarch64 kernel case (tests/wheel/test_aarch64.cpp): an nvcc-compiled aarch64 .so, read by the
# aarch64 build itself. It skips (77) without nvcc.
if [[ " ${targets[*]} " == *" test_wheel "* ]]; then
  rc=0
  run_test wheel --test-suite='integration/*' --test-case="aarch64*" || rc=$?
  ((rc == 0 || rc == 77)) || exit "$rc"
fi
echo "cross-aarch64: built in $((built - start)) s, tests in $((SECONDS - built)) s"
