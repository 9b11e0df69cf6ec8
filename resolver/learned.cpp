#include "resolver/learned.hpp"

#include <algorithm>
#include <set>

#include "matrices/answers.hpp"
#include "specs/name.hpp"

namespace envfix::resolver {

namespace {

std::vector<std::string> evidence_archs(const wheel::BuildEvidence& e, bool ptx) {
  std::set<std::string> all;
  for (const auto& file : e.files)
    for (const auto& a : ptx ? file.profile.ptx() : file.profile.sass()) all.insert(a);
  std::vector<std::string> out(all.begin(), all.end());
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    auto x = specs::GpuArch::parse(a), y = specs::GpuArch::parse(b);
    if (x && y && x->number() != y->number()) return x->number() < y->number();
    return a < b;
  });
  return out;
}

std::vector<std::string> minus(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const auto& x : a)
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  return out;
}

RowComparison compare_with_row(const matrices::Knowledge& k, const matrices::Framework& f, const LearnedBuild& lb) {
  RowComparison c;
  const auto& key = lb.evidence.key;
  auto v = specs::Version::parse(key.version);
  if (!v || specs::normalize_name(key.project) != specs::normalize_name(f.main_package) || key.variant.empty()) return c;
  c.state = RowComparison::State::not_listed;
  // A wheel's platform tags name the matrices platform as a --platform tag does; no GPU to ask.
  const std::string plat = matrices::matrix_platform(key.platform, {});
  for (const auto& b : k.variants_for(f.name, *v, plat)) {
    if (b.variant != key.variant) continue;
    const matrices::Release* r = f.release(*v);
    const matrices::ReleaseVariant* rv = r ? r->variant(b.variant) : nullptr;
    const matrices::ArchBuild* ab = rv ? rv->platform(plat) : nullptr;
    c.row_label = r ? r->label() : "";
    c.where = ab ? ab->where.to_string() : "";
    c.confidence = b.confidence;
    if (!b.sass && !b.ptx) {
      c.state = RowComparison::State::no_arch_data;
      return c;
    }
    c.state = RowComparison::State::compared;
    c.table_sass = matrices::arch_names(b.sass);
    c.table_ptx = matrices::arch_names(b.ptx);
    c.table_only = minus(c.table_sass, lb.sass);
    c.binary_only = minus(lb.sass, c.table_sass);
    for (auto& x : minus(c.table_ptx, lb.ptx)) c.table_only.push_back(x);
    for (auto& x : minus(lb.ptx, c.table_ptx)) c.binary_only.push_back(x);
    return c;
  }
  return c;
}

} // namespace

std::vector<LearnedBuild> learned_builds(const matrices::Knowledge& k, const matrices::Framework& f,
                                         const wheel::EvidenceStore& store, const std::optional<specs::Version>& version,
                                         const std::vector<specs::ComputeCapability>& gpus) {
  std::set<std::string> projects;
  for (const auto& n : f.family(true)) projects.insert(n);
  for (const auto& var : f.variants) { // jax: jaxlib, jax-cuda13-plugin, jax-cuda13-pjrt
    projects.insert(specs::normalize_name(f.main_package_of(var.name)));
    for (const auto& p : f.kernel_packages(var.name)) projects.insert(specs::normalize_name(p));
  }
  std::vector<LearnedBuild> out;
  for (auto& e : store.builds()) {
    if (!projects.contains(specs::normalize_name(e.key.project))) continue;
    if (version) {
      auto v = specs::Version::parse(e.key.version);
      if (!v || v->public_version() != version->public_version()) continue;
    }
    LearnedBuild lb;
    lb.evidence = std::move(e);
    lb.sass = evidence_archs(lb.evidence, false);
    lb.ptx = evidence_archs(lb.evidence, true);
    for (const auto& file : lb.evidence.files) lb.containers += file.profile.containers();
    for (const auto& cc : gpus) lb.coverage.push_back(wheel::package_coverage(lb.evidence.files, cc));
    lb.row = compare_with_row(k, f, lb);
    out.push_back(std::move(lb));
  }
  return out;
}

} // namespace envfix::resolver
