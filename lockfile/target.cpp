#include "lockfile/target.hpp"

#include <optional>
#include <utility>

#include <fmt/format.h>

#include "specs/tag.hpp"
#include "specs/wheel_filename.hpp"
#include "util/strings.hpp"

namespace envfix::lockfile {

std::string set_platform(const std::vector<std::string>& wheel_filenames, std::string_view arch) {
  std::optional<std::pair<int, int>> need;
  for (const auto& f : wheel_filenames) {
    auto wf = specs::WheelFilename::parse(f);
    if (!wf) continue;
    std::optional<std::pair<int, int>> least; // the wheel's easiest tag
    for (const auto& t : wf->platform_tags)
      if (auto m = specs::manylinux_glibc(t); m && m->arch == arch)
        if (!least || m->glibc < *least) least = m->glibc;
    if (least && (!need || *least > *need)) need = least;
  }
  return need ? fmt::format("manylinux_{}_{}_{}", need->first, need->second, arch) : fmt::format("linux_{}", arch);
}

Expected<TargetSpec> parse_target_spec(std::string_view spec) {
  TargetSpec t;
  for (const auto& part : util::split(spec, ',')) {
    auto eq = part.find('=');
    if (eq == std::string::npos)
      return make_error(ErrorCode::invalid_input, util::msg("--target '{}': '{}' is not key=value", spec, part),
                        util::msg("e.g. --target gpu=sm_120,python=3.10,driver=570.86,platform=manylinux_2_28_x86_64"));
    std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "gpu") {
      t.gpus = util::split(value, '+');
      if (t.gpus.empty()) t.gpus = {"none"};
    } else if (key == "python") {
      t.python = value;
    } else if (key == "driver") {
      t.driver = value;
    } else if (key == "platform") {
      t.platform = value;
    } else {
      return make_error(ErrorCode::invalid_input, util::msg("--target '{}': unknown key '{}'", spec, key),
                        util::msg("keys: gpu, python, driver, platform"));
    }
  }
  return t;
}

} // namespace envfix::lockfile
