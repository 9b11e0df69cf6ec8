#include "api/inspect.hpp"

#include <algorithm>
#include <chrono>

#include "api/host.hpp"

namespace envfix::api {

namespace {

std::map<std::string, SectionSummary> sections_of(const KernelSet& ks) {
  std::map<std::string, SectionSummary> out;
  for (const auto& c : ks.containers) {
    auto& s = out[c.section.empty() ? "(raw)" : c.section];
    ++s.containers;
    s.entries += c.entries.size();
    for (const auto& e : c.entries) ++s.archs[e.arch.to_string()];
  }
  return out;
}

InspectedFile inspect_file(const std::string& path, const std::vector<specs::ComputeCapability>& gpus) {
  const auto t0 = std::chrono::steady_clock::now();
  InspectedFile f{path, wheel::read_kernels_file(path)};
  f.read_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!f.kernels) return f;
  f.sections = sections_of(*f.kernels);
  const auto profile = wheel::KernelProfile::of(*f.kernels);
  if (profile.empty()) return f; // no GPU code: nothing to judge
  for (const auto& cc : gpus) f.gpus.push_back({cc, wheel::coverage(profile, cc)});
  return f;
}

} // namespace

Expected<InspectReport> inspect(const Options& o, const std::vector<std::string>& files) {
  const auto knowledge = ENVFIX_TRY(load_knowledge(o));
  InspectReport r;
  if (auto planned = ENVFIX_TRY(planned_gpus(o, knowledge.get())))
    for (const auto& g : *planned)
      if (std::find(r.gpus.begin(), r.gpus.end(), g.cc) == r.gpus.end()) r.gpus.push_back(g.cc);
  for (const auto& path : files) r.files.push_back(inspect_file(path, r.gpus));
  return r;
}

} // namespace envfix::api
