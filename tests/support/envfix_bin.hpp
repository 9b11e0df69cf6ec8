#pragma once
// The envfix binary under test, for every test that runs it: $ENVFIX_BIN (ctest sets it to the
// built target, cmake/EnvfixModule.cmake), else the dev build's cli/envfix. Header-only: it needs only
// ENVFIX_BINARY_DIR, which envfix_test() defines for every test binary.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace envfix::testing {

inline std::filesystem::path envfix_bin() {
  if (const char* b = std::getenv("ENVFIX_BIN"); b && *b) return b;
  return std::filesystem::path(ENVFIX_BINARY_DIR) / "cli" / "envfix";
}

} // namespace envfix::testing
