#pragma once
// Shared helpers for resolver tests: a CPython 3.11 manylinux x86_64 target and requirement parsing.
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "resolver/resolver.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::resolver::test {

// CPython X.Y on Linux x86_64 with glibc `glibc_minor` (2.X).
TargetEnvironment cpython_linux(int minor = 11, int glibc_minor = 36, std::string full = "");
std::vector<specs::Requirement> reqs(const std::vector<std::string>& texts);
// "a==1.0 b==2.0" (sorted by name) for compact assertions.
std::string pins_text(const Resolution& r);
// A scenario's `evidence:` list (what binaries said, as the kernel gate records it): each entry
// {file: WHEEL_NAME, variant, source, files: [{path, groups: [{archs: [...], count, registered}]}]}.
std::vector<wheel::BuildEvidence> scenario_evidence(const YAML::Node& list);

} // namespace envfix::resolver::test
