#include "tests/resolver/resolver_test_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>

#include "specs/wheel_filename.hpp"

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

std::vector<wheel::BuildEvidence> scenario_evidence(const YAML::Node& list) {
  std::vector<wheel::BuildEvidence> out;
  if (!list) return out;
  for (const auto& e : list) {
    auto wf = specs::WheelFilename::parse(e["file"].as<std::string>()).value();
    wheel::BuildEvidence ev{
        wheel::build_key(wf, e["variant"].as<std::string>()), e["source"] ? e["source"].as<std::string>() : "scenario", {}};
    for (const auto& f : e["files"]) {
      wheel::ProfiledFile pf{f["path"].as<std::string>(), {}};
      for (const auto& g : f["groups"]) {
        wheel::ContainerGroup grp;
        for (const auto& a : g["archs"]) grp.archs.push_back(specs::GpuArch::parse(a.as<std::string>()).value());
        std::sort(grp.archs.begin(), grp.archs.end());
        grp.count = g["count"] ? g["count"].as<std::uint64_t>() : 1;
        grp.registered = !g["registered"] || g["registered"].as<bool>();
        pf.profile.groups.push_back(std::move(grp));
      }
      std::sort(pf.profile.groups.begin(), pf.profile.groups.end());
      ev.files.push_back(std::move(pf));
    }
    out.push_back(std::move(ev));
  }
  return out;
}

} // namespace envfix::resolver::test
