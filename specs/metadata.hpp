#pragma once
// Core metadata (METADATA, PKG-INFO, PEP 658 `.metadata`): the core metadata spec,
// https://packaging.python.org/en/latest/specifications/core-metadata/.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "specs/requirement.hpp"
#include "specs/rfc822.hpp"
#include "specs/specifier.hpp"
#include "specs/version.hpp"
#include "util/error.hpp"

namespace envfix::specs {

// The headers of read_headers (specs/rfc822.hpp) as (name, value) pairs; a non-empty body is
// appended as ("Description", body) unless a Description header exists.
[[nodiscard]] Expected<std::vector<std::pair<std::string, std::string>>> parse_rfc822(std::string_view text);

struct CoreMetadata {
  std::string metadata_version;
  std::string name;
  Version version;
  std::optional<SpecifierSet> requires_python;
  std::vector<Requirement> requires_dist;
  std::vector<std::string> provides_extra;
  std::vector<std::pair<std::string, std::string>> fields; // every field, in order

  // Requires Metadata-Version (major ≤ 2), Name, Version; errors name the line and field.
  [[nodiscard]] static Expected<CoreMetadata> parse(std::string_view text);

  // All values of a field (case-insensitive name), in order.
  std::vector<std::string> get_all(std::string_view field) const;
  // The first value of a field, if present.
  std::optional<std::string> get(std::string_view field) const;
};

} // namespace envfix::specs
