#pragma once
// Wheel file names `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl` (PEP 427, binary
// distribution format spec "File name convention"; compressed tag sets: PEP 425), parsed like
// packaging's parse_wheel_filename().
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "specs/tag.hpp"
#include "specs/version.hpp"
#include "util/error.hpp"

namespace envfix::specs {

struct WheelFilename {
  std::string name; // as written, e.g. "torch", "nvidia_cudnn_cu13"
  Version version;
  // Build tag `^(\d+)(.*)$` as (number, rest); nullopt sorts below any build tag (PEP 427).
  std::optional<std::pair<std::uint64_t, std::string>> build;
  // Compressed tag set fields as written, split on '.'.
  std::vector<std::string> python_tags, abi_tags, platform_tags;

  // The cartesian product of the three fields, lower-cased (PEP 425 compressed tag sets).
  [[nodiscard]] std::vector<Tag> tags() const;
  // PEP 503 name ("nvidia-cudnn-cu13").
  [[nodiscard]] std::string normalized_name() const;
  // Errors name the file name and put a caret under the offending part.
  [[nodiscard]] static Expected<WheelFilename> parse(std::string_view filename);
  // The file name with the version in canonical form; parses back equal.
  [[nodiscard]] std::string to_string() const;
  // The best rank of this wheel's tags in `ranking` (as in pip's candidate sort key); nullopt when it does not install.
  [[nodiscard]] std::optional<std::size_t> best_rank(const TagRanking& ranking) const { return ranking.best_rank(tags()); }

  bool operator==(const WheelFilename&) const = default;
};

} // namespace envfix::specs
