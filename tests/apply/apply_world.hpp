#pragma once
// The apply tests' world (tests/apply/test_apply.cpp, tests/apply/test_security_cli.cpp): the real
// envfix binary, an index made by tests/support/index_builder.py served by nginx over HTTPS with a CA
// made for the test, real venvs, and the host's pip as the reference.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support/nginx_server.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "util/subprocess.hpp"
#include "tests/support/envfix_bin.hpp"
#include "tests/support/tree_manifest.hpp"

namespace envfix::apply_test {

namespace fs = std::filesystem;
using json = nlohmann::json;

using envfix::testing::envfix_bin;

// A PyTorch-shaped variant index: torch 2.7.0+cu126, which the matrices say has no sm_120 code.
inline constexpr const char* kTorchCu126Index = R"({"simple_dir": "pt/whl/cu126", "files_dir": "pt/whl/files", "packages": [
  {"name": "torch", "version": "2.7.0+cu126", "tags": ["py3-none-manylinux_2_17_x86_64"]}
]})";

// The smallest plain index: one pure-Python package.
inline constexpr const char* kAlphaIndex = R"({"packages": [
  {"name": "alpha", "version": "1.0", "files": {"alpha/__init__.py": "VALUE = 1\n"}}
]})";

inline std::string python3() { return util::find_in_path("python3").value_or("python3").string(); }

inline void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  REQUIRE(util::write_file_atomic(p, text, 0644));
}

inline std::string slurp(const fs::path& p) {
  auto t = util::read_file(p);
  REQUIRE_MESSAGE(t, p.string());
  return *t;
}

// Every path under a venv with its mode and content hash; envfix's own .envfix/ state (lock, journals,
// kept backups) is not part of the environment (tests/support/tree_manifest.hpp).
inline testing::Manifest manifest(const fs::path& root) { return testing::tree_manifest(root); }

struct Run {
  int rc = -1;
  std::string out, err;
};

// One test's world: a temp dir, an index served by nginx, a cache, a lockfile path.
class World {
public:
  explicit World(const std::string& spec_json) {
    m_root = util::make_temp_dir({}, "envfix-apply-test").value();
    m_index = m_root / "index";
    auto s = testing::build_index(m_index, spec_json);
    REQUIRE_MESSAGE(s, (s ? "" : s.error().render()));
    auto n = testing::NginxServer::start({.root = m_index});
    REQUIRE_MESSAGE(n, (n ? "" : n.error().render()));
    m_nginx = std::move(*n);
  }
  ~World() {
    m_nginx.reset();
    std::error_code ec;
    fs::remove_all(m_root, ec);
  }
  const fs::path& root() const { return m_root; }
  std::string index_url() const { return m_nginx->https_url() + "/simple"; }
  std::string base_url() const { return m_nginx->https_url(); }
  // pip gets the same tree over plain HTTP on loopback (a secure origin for pip): its TLS stack does
  // not take this test's CA through --python re-execution.
  std::string pip_index_url() const { return m_nginx->http_url() + "/simple"; }
  std::string http_base() const { return m_nginx->http_url(); }
  fs::path lockfile() const { return m_root / "envfix.lock"; }
  fs::path cache() const { return m_root / "cache"; }

  fs::path venv(const std::string& name) {
    auto dir = m_root / name;
    auto r = util::run_process({python3(), "-m", "venv", "--without-pip", dir.string()}, {.timeout = std::chrono::seconds(600)})
                 .value();
    REQUIRE_MESSAGE(r.ok(), r.err);
    return dir;
  }

  // How every envfix of this world runs: in its root, trusting its CA only, no ambient ENVFIX_* settings.
  util::SubprocessOptions envfix_options(std::map<std::string, std::string> env = {}) const {
    util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(300);
    o.cwd = m_root;
    o.set_env = std::move(env);
    o.set_env["SSL_CERT_FILE"] = m_nginx->ca_file().string();
    o.unset_env = {"REQUESTS_CA_BUNDLE", "PIP_FIND_LINKS",      "VIRTUAL_ENV",      "CONDA_PREFIX",
                   "ENVFIX_GPU",         "ENVFIX_DRIVER",       "ENVFIX_INDEX_URL", "ENVFIX_EXTRA_INDEX_URL",
                   "ENVFIX_MATRICES",    "ENVFIX_CACHE_DIR",    "ENVFIX_OFFLINE",   "ENVFIX_NO_CONFIG",
                   "PIP_INDEX_URL",      "PIP_EXTRA_INDEX_URL", "UV_DEFAULT_INDEX", "UV_INDEX_URL",
                   "UV_INDEX",           "UV_EXTRA_INDEX_URL",  "UV_NO_CONFIG",     "XDG_CONFIG_HOME"};
    // No pip or uv configuration of the developer's own (issue 36: envfix reads them); a test that
    // wants one passes it.
    o.set_env.emplace("PIP_CONFIG_FILE", "/dev/null");
    o.set_env.emplace("XDG_CONFIG_HOME", (m_root / "xdg").string());
    for (const auto& k : o.set_env) std::erase(o.unset_env, k.first);
    return o;
  }

  Run envfix(std::vector<std::string> args, std::map<std::string, std::string> env = {}, const fs::path& cache = {}) {
    std::vector<std::string> argv{envfix_bin().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--cache-dir");
    argv.push_back((cache.empty() ? this->cache() : cache).string());
    auto r = util::run_process(argv, envfix_options(std::move(env)));
    REQUIRE(r);
    std::string cmd;
    for (const auto& a : args) cmd += " " + a;
    MESSAGE("envfix" << cmd << " -> " << r->exit_code << "\n" << r->err);
    return {r->timed_out ? -2 : r->exit_code, r->out, r->err};
  }

  // The host's pip, pointed at a venv with --python, trusting this test's CA only.
  util::SubprocessResult pip(const fs::path& venv, std::vector<std::string> args) {
    std::vector<std::string> argv{
        python3(), "-m", "pip", "--python", (venv / "bin/python").string(), "--cert", m_nginx->ca_file().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(300);
    o.set_env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1";
    o.set_env["PIP_NO_CACHE_DIR"] = "1";
    o.unset_env = {"PIP_FIND_LINKS",      "PIP_CERT",       "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "PIP_INDEX_URL",
                   "PIP_EXTRA_INDEX_URL", "PIP_CONFIG_FILE"};
    return util::run_process(argv, o).value();
  }

  // name -> version as `pip list` reports it.
  std::map<std::string, std::string> pip_list(const fs::path& venv) {
    auto r = pip(venv, {"list", "--format", "json"});
    REQUIRE_MESSAGE(r.ok(), r.err);
    std::map<std::string, std::string> m;
    for (const auto& e : json::parse(r.out)) m[e["name"].get<std::string>()] = e["version"].get<std::string>();
    return m;
  }

  void rebuild_index(const std::string& spec_json) {
    auto s = testing::build_index(m_index, spec_json);
    REQUIRE_MESSAGE(s, (s ? "" : s.error().render()));
  }
  fs::path index_dir() const { return m_index; }

private:
  fs::path m_root, m_index;
  std::unique_ptr<testing::NginxServer> m_nginx;
};

// A wheel member given as bytes in an index_builder spec.
inline std::string byte_list(const std::string& data) {
  std::string o = "[";
  for (std::size_t i = 0; i < data.size(); ++i) o += (i ? "," : "") + std::to_string(static_cast<unsigned char>(data[i]));
  return o + "]";
}

// A real CUDA shared object with SASS for one arch only ("80", "90"), built once per test process by nvcc.
inline const std::string& arch_shared_object(const std::string& arch) {
  static std::map<std::string, std::string> cached;
  if (auto it = cached.find(arch); it != cached.end()) return it->second;
  auto work = util::make_temp_dir({}, "envfix-fixfw-so").value();
  write(
      work / "k.cu",
      "extern \"C\" __global__ void fixfw_scale(float* x, float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }\n"
      "extern \"C\" int fixfw_launch(float* x, int n) { fixfw_scale<<<(n + 255) / 256, 256>>>(x, 2.0f, n); return 0; }\n");
  auto nvcc = util::run_process({"/usr/local/cuda/bin/nvcc", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", "-gencode",
                                 fmt::format("arch=compute_{0},code=sm_{0}", arch), (work / "k.cu").string(), "-o",
                                 (work / "libk.so").string()},
                                {.timeout = std::chrono::seconds(300)});
  REQUIRE(nvcc);
  REQUIRE_MESSAGE(nvcc->ok(), nvcc->err);
  cached[arch] = slurp(work / "libk.so");
  fs::remove_all(work);
  return cached[arch];
}

} // namespace envfix::apply_test
