#pragma once
// Helpers shared by the probe tests: fixture paths, scoped environment variables, temp dirs.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "util/fs.hpp"

namespace envfix::test {

inline std::filesystem::path fixtures_dir() { return std::filesystem::path(ENVFIX_FIXTURES_DIR); }
inline std::filesystem::path h200() { return fixtures_dir() / "gpu-h200"; }
inline std::string fixture(const std::string& name) { return util::read_file(h200() / name).value(); }

// Sets (or unsets, with nullopt) an environment variable for the scope.
class ScopedEnv {
public:
  ScopedEnv(std::string name, std::optional<std::string> value) : m_name(std::move(name)) {
    if (const char* old = std::getenv(m_name.c_str())) m_old = old;
    if (value)
      ::setenv(m_name.c_str(), value->c_str(), 1);
    else
      ::unsetenv(m_name.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (m_old)
      ::setenv(m_name.c_str(), m_old->c_str(), 1);
    else
      ::unsetenv(m_name.c_str());
  }

private:
  std::string m_name;
  std::optional<std::string> m_old;
};

// A temp dir removed at scope exit.
class TempDir {
public:
  TempDir() : m_path(util::make_temp_dir({}, "envfix-probe-test").value()) {}
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  const std::filesystem::path& path() const { return m_path; }

private:
  std::filesystem::path m_path;
};

inline void write(const std::filesystem::path& p, const std::string& text, unsigned mode = 0644) {
  std::filesystem::create_directories(p.parent_path());
  REQUIRE(util::write_file_atomic(p, text, mode));
}

} // namespace envfix::test
