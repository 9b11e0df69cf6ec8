#include "resolver/evidence.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "probe/installed_kernels.hpp"
#include "specs/name.hpp"

namespace envfix::resolver {

std::vector<std::string> whole_set(const FrameworkSpec& spec) {
  auto out = framework_packages(spec);
  for (const auto& i : spec.indexes)
    for (const auto& k : i.kernels)
      if (auto n = specs::normalize_name(k); std::find(out.begin(), out.end(), n) == out.end()) out.push_back(std::move(n));
  return out;
}

std::set<std::string> attach_evidence(FrameworkSpec& spec, const std::vector<probe::InstalledDist>& installed_dists,
                                      bool has_gpus, std::shared_ptr<wheel::EvidenceStore> store,
                                      const std::vector<specs::Requirement>& request, unsigned threads) {
  std::set<std::string> read;
  auto installed = std::make_shared<std::map<wheel::BuildKey, BuildFacts>>();
  if (has_gpus) {
    // The set's packages, and every one the request names (a GPU extension such as xformers): an
    // installed build whose binaries hold nothing for a GPU is never kept as "nothing to do".
    auto family = whole_set(spec);
    for (const auto& q : request) family.push_back(q.normalized_name());
    for (const auto& d : installed_dists) {
      if (std::find(family.begin(), family.end(), d.normalized_name()) == family.end()) continue;
      auto ik = probe::read_installed_kernels(d, store.get(), threads);
      if (!ik || ik->files.empty()) continue;
      auto key = probe::installed_build_key(d);
      BuildFacts facts{std::move(ik->files), fmt::format("installed in {}", d.dist_info.parent_path().string())};
      (void)store->put_build({key, facts.source, facts.files});
      (*installed)[key] = std::move(facts);
      read.insert(d.normalized_name());
    }
  }
  auto find = [installed](const wheel::BuildKey& key) -> std::optional<BuildFacts> {
    if (auto it = installed->find(key); it != installed->end()) return it->second;
    return std::nullopt;
  };
  spec.evidence = [find, store](const index::Candidate& c, const specs::WheelFilename& wf,
                                std::string_view variant) -> std::optional<BuildFacts> {
    auto key = wheel::build_key(wf, variant);
    if (auto facts = find(key)) return facts;
    if (c.sha256)
      if (auto e = store->build(*c.sha256); e && wheel::same_wheel(e->key, key))
        return BuildFacts{std::move(e->files), std::move(e->source)};
    // A file without a local label is the same build on whichever index lists it (jax-cuda13-pjrt
    // 0.11.2 names its variant in its project name): installed builds are keyed by the label alone.
    if (wf.version.has_local() || variant.empty()) return std::nullopt;
    key.variant.clear();
    return find(key);
  };
  return read;
}

} // namespace envfix::resolver
