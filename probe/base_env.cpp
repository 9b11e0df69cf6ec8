#include "probe/base_env.hpp"

#include <system_error>

#include <fmt/format.h>

#include "specs/name.hpp"
#include "specs/version.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"
#include "util/subprocess.hpp"

namespace envfix::probe {

namespace fs = std::filesystem;

fs::path host_path(std::string_view absolute) {
  auto root = util::get_env(util::Env::sysfs_root);
  if (!root || root->empty()) return fs::path(absolute);
  return fs::path(*root) / fs::path(absolute).relative_path();
}

std::optional<std::string> read_host_file(std::string_view absolute) {
  constexpr std::uint64_t limit = 1 << 20;
  const auto path = host_path(absolute);
  auto fd = util::open_local_file(path, limit);
  if (!fd) return std::nullopt;
  auto text = util::read_fd(*fd, path, limit);
  if (!text || text->size() > limit) return std::nullopt;
  return std::move(*text);
}

std::optional<specs::CudaVersion> parse_nvcc_version(std::string_view out) {
  auto at = out.find("release ");
  if (at == std::string_view::npos) return std::nullopt;
  auto v = out.substr(at + 8);
  auto c = specs::CudaVersion::parse(v.substr(0, v.find_first_of(", \n")));
  if (!c) return std::nullopt;
  return *c;
}

std::optional<Toolkit> probe_toolkit() {
  std::vector<std::pair<fs::path, std::string>> candidates;
  if (auto p = util::find_in_path("nvcc")) candidates.emplace_back(*p, "PATH");
  for (const auto var : {util::Env::cuda_home, util::Env::cuda_path})
    if (auto home = util::get_env(var); home && !home->empty())
      candidates.emplace_back(fs::path(*home) / "bin" / "nvcc", fmt::format("${}", util::env_name(var)));
  candidates.emplace_back(host_path("/usr/local/cuda/bin/nvcc"), "/usr/local/cuda");
  for (const auto& [path, from] : candidates) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) continue;
    Toolkit t{path, from, std::nullopt, {}};
    util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(20);
    auto r = util::run_process({path.string(), "--version"}, o);
    if (!r)
      t.error = r.error().message;
    else if (!r->ok())
      t.error = fmt::format("`nvcc --version` exited {}", r->exit_code);
    else if (!(t.version = parse_nvcc_version(r->out)))
      t.error = "no 'release X.Y' in `nvcc --version`";
    return t;
  }
  return std::nullopt;
}

std::optional<specs::CudaVersion> runtime_cuda(std::string_view n, const specs::Version& version) {
  if (n != "nvidia-cuda-runtime" && !(n.starts_with("nvidia-cuda-runtime-cu") && n.size() <= 25)) return std::nullopt;
  const auto& rel = version.release();
  if (rel.size() < 2) return std::nullopt;
  return specs::CudaVersion{static_cast<int>(rel[0]), static_cast<int>(rel[1])};
}

std::optional<CudaRuntime> cuda_runtime_of(const std::vector<InstalledDist>& installed) {
  for (const auto& d : installed)
    if (auto c = runtime_cuda(d.normalized_name(), d.version))
      return CudaRuntime{*c, fmt::format("{} {}", d.name, d.version.to_string())};
  return std::nullopt;
}

Platform probe_platform() {
  Platform p;
  std::error_code ec;
  // WSL2: the Windows driver reaches Linux through /dev/dxg and the libraries in /usr/lib/wsl/lib.
  for (const char* path : {"/dev/dxg", "/usr/lib/wsl/lib"})
    if (fs::exists(host_path(path), ec)) p.wsl.emplace_back(path);
  if (auto v = read_host_file("/proc/version"))
    if (v->find("microsoft") != std::string::npos || v->find("WSL") != std::string::npos)
      p.wsl.emplace_back("/proc/version names Microsoft");
  auto set = [&](std::string kind, std::string evidence) {
    if (p.container.empty()) p.container = std::move(kind);
    p.container_evidence.push_back(std::move(evidence));
  };
  if (fs::exists(host_path("/.dockerenv"), ec)) set("docker", "/.dockerenv");
  if (fs::exists(host_path("/run/.containerenv"), ec)) set("podman", "/run/.containerenv");
  if (auto v = util::get_env(util::Env::container); v && !v->empty()) set(*v, fmt::format("$container={}", *v));
  if (auto k = util::get_env(util::Env::kubernetes_service_host); k && !k->empty()) set("kubernetes", "$KUBERNETES_SERVICE_HOST");
  if (auto cg = read_host_file("/proc/1/cgroup")) {
    for (const char* word : {"kubepods", "docker", "containerd", "libpod", "lxc"})
      if (cg->find(word) != std::string::npos) {
        set(std::string(word) == "kubepods" ? "kubernetes"
            : std::string(word) == "libpod" ? "podman"
                                            : "container",
            fmt::format("/proc/1/cgroup: {}", word));
        break;
      }
  }
  return p;
}

BaseEnv probe_base_env(const HostFacts& facts) {
  BaseEnv b;
  b.runtime = cuda_runtime_of(facts.installed);
  b.toolkit = probe_toolkit();
  b.platform = probe_platform();
  if (facts.python) {
    if (auto it = facts.python->scheme.find("scripts"); it != facts.python->scheme.end()) {
      std::error_code ec;
      if (fs::exists(it->second / "pip", ec)) b.target_pip = it->second / "pip";
    }
  }
  return b;
}

} // namespace envfix::probe
