#pragma once
// How a lock target describes the host it is made for (docs/lockfile.md, "Fields of a target"): the
// platform its set installs on, and `lock --target` descriptions of hosts envfix is not on.
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace envfix::lockfile {

// The most demanding manylinux tag any of the wheels was picked for on `arch` (every interpreter that
// supports it can install the whole set); linux_ARCH when none has one.
[[nodiscard]] std::string set_platform(const std::vector<std::string>& wheel_filenames, std::string_view arch);

// `--target gpu=sm_86+sm_120,python=3.10,driver=550.54,platform=manylinux_2_28_x86_64`, every key
// optional: GPUs as archs or names, {"none"} (gpu=none, or no gpu key) for a CPU-only target.
struct TargetSpec {
  std::vector<std::string> gpus{"none"};
  std::string python, driver, platform;
};
[[nodiscard]] Expected<TargetSpec> parse_target_spec(std::string_view spec);

} // namespace envfix::lockfile
