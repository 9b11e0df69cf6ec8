#pragma once
// Test helpers: real CUDA objects built with the local nvcc at test time from tests/fixtures/cuda,
// cached in the build directory. Without nvcc the test exits 77 (ctest: skipped) and says why.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "util/subprocess.hpp"
#include "wheel/kernel_set.hpp"

namespace envfix::test {

namespace fs = std::filesystem;
using wheel::KernelSet;

inline const fs::path nvcc = "/usr/local/cuda/bin/nvcc";
inline const fs::path cuda_src = fs::path(ENVFIX_SOURCE_DIR) / "tests/fixtures/cuda";
inline const fs::path fixture_dir = fs::path(ENVFIX_BINARY_DIR) / "kernel-fixtures";

inline void require_nvcc() {
  if (!fs::exists(nvcc)) {
    std::fprintf(stderr, "SKIP: %s not found; the nvcc fixture tests need the CUDA toolkit\n", nvcc.c_str());
    std::exit(77);
  }
}

// Runs `argv` (paths relative to the fixture dir) unless `out` is newer than the sources.
inline fs::path build(const std::string& out, std::vector<std::string> argv) {
  require_nvcc();
  fs::create_directories(fixture_dir);
  fs::path target = fixture_dir / out;
  auto newest_src = fs::last_write_time(cuda_src / "k1.cu");
  for (const char* s : {"k2.cu", "rdc1.cu", "rdc2.cu"}) newest_src = std::max(newest_src, fs::last_write_time(cuda_src / s));
  if (fs::exists(target) && fs::last_write_time(target) > newest_src) return target;
  util::SubprocessOptions opt;
  opt.cwd = fixture_dir;
  opt.timeout = std::chrono::minutes(5);
  opt.merge_stderr = true;
  auto r = util::run_process(argv, opt);
  REQUIRE(r);
  INFO("command output: ", r->out);
  REQUIRE(r->ok());
  REQUIRE(fs::exists(target));
  return target;
}

inline fs::path so(const std::string& out, std::vector<std::string> gencode, std::vector<std::string> extra = {},
                   std::vector<std::string> srcs = {"k1.cu"}) {
  std::vector<std::string> argv = {nvcc.string(), "-shared", "-Xcompiler", "-fPIC", "-o", out};
  argv.insert(argv.end(), gencode.begin(), gencode.end());
  argv.insert(argv.end(), extra.begin(), extra.end());
  for (auto& s : srcs) argv.push_back((cuda_src / s).string());
  return build(out, argv);
}

inline KernelSet read(const fs::path& p) {
  auto ks = wheel::read_kernels_file(p);
  INFO(p.string(), ": ", ks ? "" : ks.error().render());
  REQUIRE(ks);
  return *ks;
}

} // namespace envfix::test
