#include "resolver/discovery.hpp"

#include <algorithm>
#include <set>

#include "specs/name.hpp"
#include "specs/wheel_filename.hpp"

namespace envfix::resolver {

std::vector<FrameworkIndex> discover_indexes(FrameworkSpec& spec, const std::vector<DiscoverySource>& sources,
                                             const DescribeVariant& describe,
                                             const std::function<CandidateProvider&(const std::string& url)>& provider_for,
                                             const std::vector<std::string>& try_names) {
  std::vector<FrameworkIndex> added;
  const std::string main = specs::normalize_name(spec.main_package);
  for (const auto& src : sources) {
    std::set<std::string> labels(try_names.begin(), try_names.end());
    labels.erase("");
    auto files = provider_for(src.aggregate_url).candidates(main);
    if (!files) files = std::vector<index::Candidate>{}; // no aggregate index here: only the names tried
    for (const auto& c : *files) {
      auto wf = specs::WheelFilename::parse(c.filename);
      if (!wf) continue;
      auto label = wf->version.local();
      if (!label.empty()) labels.insert(label);
    }
    for (const auto& variant : labels) {
      bool listed = std::any_of(spec.indexes.begin(), spec.indexes.end(),
                                [&](const FrameworkIndex& i) { return i.channel == src.channel && i.variant == variant; });
      if (listed) continue;
      auto d = describe(src.channel, variant);
      if (!d) continue;
      FrameworkIndex idx{src.channel, variant, d->cuda, src.index_url(variant), d->note};
      spec.indexes.push_back(idx);
      added.push_back(std::move(idx));
    }
  }
  return added;
}

} // namespace envfix::resolver
