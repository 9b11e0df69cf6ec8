#pragma once
// PEP 508 environment markers (the dependency specifiers spec:
// https://packaging.python.org/en/latest/specifications/dependency-specifiers/), evaluated with the
// current spec's rules (not pip 23.2.1's): version semantics for version-valued variables when both
// sides parse, else strings.
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace envfix::specs {

struct MarkerEnvironment {
  // PEP 508 variable names → values (python_version, python_full_version, os_name, sys_platform,
  // platform_release, platform_system, platform_version, platform_machine,
  // platform_python_implementation, implementation_name, implementation_version).
  std::map<std::string, std::string> values;
};

namespace detail {
struct MarkerNode;
}

class Marker {
public:
  // `python_version >= "3.8" and (sys_platform == 'linux' or extra == "gpu")`. Unknown variables
  // are a parse error (the requirement is then ineligible).
  [[nodiscard]] static Expected<Marker> parse(std::string_view text);

  // True when the marker holds. With extras E, true iff it holds with `extra` bound to some e ∈ E
  // (both sides normalized, PEP 685); with no extras, `extra` is "" so `extra == "x"` is false.
  // Variables missing from `env` read as "0" (version-valued) or "".
  bool evaluate(const MarkerEnvironment& env, const std::vector<std::string>& extras = {}) const;

  // Canonical: double quotes (single when the value holds '"'), minimal parentheses.
  std::string to_string() const;

  friend bool operator==(const Marker& a, const Marker& b) { return a.to_string() == b.to_string(); }

private:
  std::shared_ptr<const detail::MarkerNode> m_root; // immutable, shared between copies
};

} // namespace envfix::specs
