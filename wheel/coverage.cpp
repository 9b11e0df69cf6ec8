#include "wheel/coverage.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace envfix::wheel {

using specs::GpuArch;

Reading read_coverage(const PackageCoverage& pc, CodeRole role) {
  if (!pc.has_gpu_code()) return Reading::covered;
  switch (pc.verdict) {
  case Verdict::none: return Reading::not_covered;
  case Verdict::partial: return role == CodeRole::library ? Reading::specialised : Reading::gap;
  case Verdict::full: return pc.jit_only && role != CodeRole::library ? Reading::jit_only : Reading::covered;
  }
  return Reading::not_covered;
}

const char* to_string(Verdict v) {
  switch (v) {
  case Verdict::full: return "full";
  case Verdict::partial: return "partial";
  case Verdict::none: return "none";
  }
  return "none";
}

KernelProfile KernelProfile::of(const KernelSet& ks) {
  std::map<std::pair<std::vector<GpuArch>, bool>, std::uint64_t> groups;
  for (const auto& c : ks.containers) {
    std::set<GpuArch> archs;
    for (const auto& e : c.entries)
      if (e.arch.kind != GpuArch::Kind::lto) archs.insert(e.arch);
    if (archs.empty()) continue; // empty or LTO-IR only: nothing a device loads
    ++groups[{std::vector<GpuArch>(archs.begin(), archs.end()), c.registered()}];
  }
  KernelProfile p;
  p.zstd = ks.has_zstd();
  for (auto& [key, n] : groups) p.groups.push_back({key.first, key.second, n});
  std::sort(p.groups.begin(), p.groups.end());
  return p;
}

std::uint64_t KernelProfile::containers() const {
  std::uint64_t n = 0;
  for (const auto& g : groups) n += g.count;
  return n;
}

namespace {

std::vector<std::string> names_of(const KernelProfile& p, GpuArch::Kind kind) {
  std::set<GpuArch> s;
  for (const auto& g : p.groups)
    for (const auto& a : g.archs)
      if (a.kind == kind) s.insert(a);
  std::vector<std::string> out;
  for (const auto& a : s) out.push_back(a.to_string());
  return out;
}

// Where one container stands for a device.
enum class Class { sass, ptx, newer_only, older_only, other };

Class classify(const std::vector<GpuArch>& archs, specs::ComputeCapability cc) {
  bool sass = false, ptx = false, all_newer = true, all_older = true;
  for (const auto& a : archs) {
    if (a.runs_on(cc)) (a.kind == GpuArch::Kind::sass ? sass : ptx) = true;
    all_newer = all_newer && a.cc() > cc;
    all_older = all_older && a.cc() < cc;
  }
  if (sass) return Class::sass;
  if (ptx) return Class::ptx;
  if (all_newer) return Class::newer_only;
  if (all_older) return Class::older_only;
  return Class::other;
}

void add(ContainerCounts& c, Class k, std::uint64_t n) {
  switch (k) {
  case Class::sass: c.sass += n; break;
  case Class::ptx: c.ptx += n; break;
  case Class::newer_only: c.newer_only += n; break;
  case Class::older_only: c.older_only += n; break;
  case Class::other: c.other += n; break;
  }
}

Verdict verdict_of(std::uint64_t runnable, std::uint64_t total) {
  if (runnable == 0) return Verdict::none;
  return runnable == total ? Verdict::full : Verdict::partial;
}

} // namespace

std::vector<std::string> KernelProfile::sass() const { return names_of(*this, GpuArch::Kind::sass); }
std::vector<std::string> KernelProfile::ptx() const { return names_of(*this, GpuArch::Kind::ptx); }

nlohmann::json KernelProfile::to_json() const {
  nlohmann::json g = nlohmann::json::array();
  for (const auto& grp : groups) {
    std::vector<std::string> archs;
    for (const auto& a : grp.archs) archs.push_back(a.to_string());
    g.push_back({{"archs", archs}, {"registered", grp.registered}, {"count", grp.count}});
  }
  return {{"groups", g}, {"zstd", zstd}};
}

Expected<KernelProfile> KernelProfile::from_json(const nlohmann::json& j) {
  auto bad = [](std::string what) {
    return make_error(ErrorCode::invalid_input, util::msg("kernel profile: {}", what),
                      util::msg("the evidence cache may be damaged: `envfix cache clean` removes it"));
  };
  if (!j.is_object() || !j.contains("groups") || !j["groups"].is_array()) return bad("no `groups` array");
  KernelProfile p;
  if (j.contains("zstd") && !j["zstd"].is_boolean()) return bad("`zstd` is not a boolean");
  p.zstd = j.contains("zstd") && j["zstd"].get<bool>();
  for (const auto& g : j["groups"]) {
    if (!g.is_object() || !g.contains("archs") || !g["archs"].is_array() || !g.contains("count") ||
        !g["count"].is_number_unsigned())
      return bad("a group without `archs` or `count`");
    ContainerGroup grp;
    if (g.contains("registered") && !g["registered"].is_boolean()) return bad("`registered` is not a boolean");
    grp.registered = !g.contains("registered") || g["registered"].get<bool>();
    grp.count = g["count"].get<std::uint64_t>();
    for (const auto& a : g["archs"]) {
      if (!a.is_string()) return bad("an arch that is not a string");
      auto arch = GpuArch::parse(a.get<std::string>());
      if (!arch) return bad(arch.error().message);
      grp.archs.push_back(*arch);
    }
    std::sort(grp.archs.begin(), grp.archs.end());
    p.groups.push_back(std::move(grp));
  }
  std::sort(p.groups.begin(), p.groups.end());
  return p;
}

ContainerCounts& ContainerCounts::operator+=(const ContainerCounts& o) {
  sass += o.sass;
  ptx += o.ptx;
  newer_only += o.newer_only;
  older_only += o.older_only;
  other += o.other;
  return *this;
}

std::string FileCoverage::via() const {
  std::uint64_t s = registered.sass + embedded.sass, p = registered.ptx + embedded.ptx;
  if (s + p == 0) return "none";
  if (p == 0) return "sass";
  if (s == 0) return "ptx";
  return "mixed";
}

FileCoverage coverage(const KernelProfile& p, specs::ComputeCapability cc) {
  FileCoverage fc;
  for (const auto& g : p.groups) add(g.registered ? fc.registered : fc.embedded, classify(g.archs, cc), g.count);
  fc.verdict = verdict_of(fc.runnable(), fc.total());
  return fc;
}

FileCoverage coverage(const KernelSet& ks, specs::ComputeCapability cc) { return coverage(KernelProfile::of(ks), cc); }

std::vector<GpuArch> archs_of(const std::vector<ProfiledFile>& files) {
  std::set<GpuArch> all;
  for (const auto& f : files)
    for (const auto& g : f.profile.groups) all.insert(g.archs.begin(), g.archs.end());
  return {all.begin(), all.end()};
}

PackageCoverage package_coverage(const std::vector<ProfiledFile>& files, specs::ComputeCapability cc) {
  PackageCoverage pc;
  bool any_sass = false;
  for (const auto& f : files) {
    if (f.profile.empty()) continue;
    auto fc = coverage(f.profile, cc);
    ++pc.files;
    pc.registered += fc.registered;
    pc.embedded += fc.embedded;
    any_sass = any_sass || fc.registered.sass + fc.embedded.sass > 0;
    if (fc.verdict == Verdict::none)
      pc.none_files.push_back(f.path);
    else if (fc.verdict == Verdict::partial)
      pc.partial_files.push_back(fmt::format("{}: {}/{}", f.path, fc.runnable(), fc.total()));
  }
  if (pc.files == 0) return pc;
  if (pc.runnable() == 0)
    pc.verdict = Verdict::none;
  else if (pc.none_files.empty() && pc.partial_files.empty())
    pc.verdict = Verdict::full;
  else
    pc.verdict = Verdict::partial;
  pc.jit_only = pc.runnable() > 0 && !any_sass;
  return pc;
}

bool zstd_unloadable(const std::vector<ProfiledFile>& files, std::optional<specs::CudaVersion> driver_cuda) {
  if (!driver_cuda || !(*driver_cuda < specs::kZstdMinCuda)) return false;
  return std::any_of(files.begin(), files.end(), [](const ProfiledFile& f) { return f.profile.zstd; });
}

} // namespace envfix::wheel
