#pragma once
// PEP 508 dependency specifiers (the dependency specifiers spec on packaging.python.org):
// `name[extras] (spec) ; marker` or `name @ url ; marker`.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specs/marker.hpp"
#include "specs/specifier.hpp"
#include "util/error.hpp"

namespace envfix::specs {

struct Requirement {
  std::string name;                // as written
  std::vector<std::string> extras; // as written, sorted, unique
  SpecifierSet specifier;
  std::string url; // non-empty for the `@ url` form
  std::optional<Marker> marker;

  // Accepts the legacy parenthesized form `zope.interface (>3.5.0)`; newlines with indentation
  // (continuation lines of METADATA) count as whitespace.
  [[nodiscard]] static Expected<Requirement> parse(std::string_view text);
  std::string to_string() const; // `name[a,b]>=1,<2; marker` or `name @ url ; marker`
  std::string normalized_name() const;
  // The marker (if any) holds for env with the given extras (see Marker::evaluate).
  bool applies(const MarkerEnvironment& env, const std::vector<std::string>& extras = {}) const;

  friend bool operator==(const Requirement& a, const Requirement& b) { return a.to_string() == b.to_string(); }
};

} // namespace envfix::specs
