#pragma once
// Every environment variable envfix reads is declared here, once (docs/environment.md lists them).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace envfix::util {

struct EnvVar {
  std::string_view name;
  std::string_view meaning;
};

// The documented list; docs/environment.md is checked against it by a test.
const std::vector<EnvVar>& known_env_vars();

// Reads a variable that must be in known_env_vars() (asserts in debug builds).
[[nodiscard]] std::optional<std::string> get_env(std::string_view name);

} // namespace envfix::util
