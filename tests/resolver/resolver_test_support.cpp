#include "tests/resolver/resolver_test_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

namespace envfix::resolver::test {

TargetEnvironment cpython_linux(int minor, int glibc_minor, std::string full) {
  if (full.empty()) full = fmt::format("3.{}.7", minor);
  TargetEnvironment t;
  specs::TagEnvironment te;
  te.implementation = "cp";
  te.major = 3;
  te.minor = minor;
  te.arch = "x86_64";
  te.glibc = std::make_pair(2, glibc_minor);
  t.tags = specs::supported_tags(te);
  t.python_full_version = *specs::Version::parse(full);
  t.markers.values = {{"python_version", fmt::format("3.{}", minor)},
                      {"python_full_version", full},
                      {"os_name", "posix"},
                      {"sys_platform", "linux"},
                      {"platform_release", "6.1.0"},
                      {"platform_system", "Linux"},
                      {"platform_version", "#1 SMP"},
                      {"platform_machine", "x86_64"},
                      {"platform_python_implementation", "CPython"},
                      {"implementation_name", "cpython"},
                      {"implementation_version", full}};
  return t;
}

std::vector<specs::Requirement> reqs(const std::vector<std::string>& texts) {
  std::vector<specs::Requirement> out;
  for (const auto& t : texts) {
    auto r = specs::Requirement::parse(t);
    REQUIRE_MESSAGE(r.has_value(), t);
    out.push_back(*r);
  }
  return out;
}

std::string pins_text(const Resolution& r) {
  std::string s;
  for (const auto& p : r.pins) s += (s.empty() ? "" : " ") + p.name + "==" + p.version.to_string();
  return s;
}

} // namespace envfix::resolver::test
