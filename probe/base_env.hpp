#pragma once
// The base environment around the framework (docs/architecture.md, Pipeline): the CUDA runtime the
// installed framework brings, the local toolkit (nvcc) when there is one, and whether the host is
// WSL or a container. probe/ reports; doctor judges (a toolkit that differs from the runtime, the
// bridged-environment trap of WSL, a container's driver coming from its host).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/host_facts.hpp"
#include "specs/cuda_version.hpp"

namespace envfix::probe {

// A path on the host, under $ENVFIX_SYSFS_ROOT when tests set it (a fake /proc, /sys, /dev, /usr).
[[nodiscard]] std::filesystem::path host_path(std::string_view absolute);
// The text of a host file (host_path), only when it is a regular file of at most 1 MiB (what /proc
// and /sys report too): a FIFO or a device planted at one of these paths would block the probe
// forever in open() or read(). nullopt for anything else, as for a missing file.
[[nodiscard]] std::optional<std::string> read_host_file(std::string_view absolute);

struct Toolkit {
  std::filesystem::path nvcc;                // the nvcc that was run
  std::string from;                          // "PATH", "$CUDA_HOME", "$CUDA_PATH", "/usr/local/cuda"
  std::optional<specs::CudaVersion> version; // "release 13.0" of `nvcc --version`
  std::string error;                         // why the version is unknown
};

// "Cuda compilation tools, release 13.0, V13.0.88" → 13.0.
[[nodiscard]] std::optional<specs::CudaVersion> parse_nvcc_version(std::string_view out);
// nvcc from PATH, then $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin; nullopt when none exists.
[[nodiscard]] std::optional<Toolkit> probe_toolkit();

struct CudaRuntime {
  specs::CudaVersion version;
  std::string from; // "nvidia-cuda-runtime 13.0.96"
};
// The CUDA of a CUDA runtime wheel: nvidia-cuda-runtime (CUDA 13 names) or nvidia-cuda-runtime-cuXX,
// whose version starts with the toolkit's major.minor (13.0.96, 12.8.90); nullopt for any other package.
[[nodiscard]] std::optional<specs::CudaVersion> runtime_cuda(std::string_view normalized_name, const specs::Version& version);
// The CUDA runtime the installed set carries (nvidia-cuda-runtime[-cuXX] wheels); nullopt without one.
[[nodiscard]] std::optional<CudaRuntime> cuda_runtime_of(const std::vector<InstalledDist>& installed);

struct Platform {
  std::vector<std::string> wsl;                // evidence of WSL2: "/dev/dxg", "/usr/lib/wsl/lib", "osrelease …"
  std::string container;                       // "docker", "podman", "kubernetes", "container", or ""
  std::vector<std::string> container_evidence; // "/.dockerenv", "/proc/1/cgroup: kubepods", "$container=podman"
  [[nodiscard]] bool is_wsl() const { return !wsl.empty(); }
};
[[nodiscard]] Platform probe_platform();

struct BaseEnv {
  std::optional<CudaRuntime> runtime;
  std::optional<Toolkit> toolkit;
  Platform platform;
  std::optional<std::filesystem::path> target_pip; // <scripts>/pip of the target interpreter, when it exists
};
[[nodiscard]] BaseEnv probe_base_env(const HostFacts& facts);

} // namespace envfix::probe
