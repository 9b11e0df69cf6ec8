#pragma once
// The WHEEL file of a wheel's .dist-info (PEP 427, binary distribution format spec): email-style headers
// Wheel-Version, Generator, Root-Is-Purelib, Tag (repeated) and Build.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "specs/tag.hpp"
#include "util/error.hpp"

namespace envfix::wheel {

struct WheelInfo {
  // The Wheel-Version this code implements; a larger major is refused, a larger minor only flagged.
  static constexpr int supported_major = 1;
  static constexpr int supported_minor = 0;

  int version_major = 1;
  int version_minor = 0;
  std::string generator;
  bool root_is_purelib = false; // true iff the value, lower-cased, is "true" (as pip)
  std::vector<specs::Tag> tags; // every Tag line, compressed sets expanded
  std::string build;            // "" when absent
  // Set when Wheel-Version is 1.N with N > supported_minor: install, but warn.
  bool newer_minor = false;
  // Every header in file order (names as written), including ones not interpreted above.
  std::vector<std::pair<std::string, std::string>> fields;

  // Errors name `name_for_errors` and the 1-based line.
  [[nodiscard]] static Expected<WheelInfo> parse(std::string_view text, std::string_view name_for_errors);
  // Canonical WHEEL text (Wheel-Version, Generator, Root-Is-Purelib, Tag..., Build) with LF endings.
  [[nodiscard]] std::string to_string() const;
};

} // namespace envfix::wheel
