#include "resolver/discovery.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "index/url.hpp"
#include "resolver/frameworks.hpp"
#include "resolver/knowledge_adapter.hpp"
#include "specs/name.hpp"
#include "specs/wheel_filename.hpp"
#include "util/url.hpp"

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

bool framework_path(const PathFacts& f, const std::vector<specs::Requirement>& request, const matrices::Framework* fw) {
  if (!f.index_url && !f.find_links) return true;
  if (!fw) return false;
  if (f.framework_asked) return true;
  if (!f.index_url) return false;
  if (request.empty()) return true;
  return f.gpus && std::any_of(request.begin(), request.end(),
                               [&](const specs::Requirement& r) { return !package_role(*fw, r.normalized_name()).empty(); });
}

Expected<std::vector<FrameworkIndex>> indexes_for_url(const FrameworkSpec& spec, const matrices::Framework& fw,
                                                      const matrices::Knowledge& knowledge, const IndexAsked& g,
                                                      const std::string& url, CandidateProvider& provider) {
  std::vector<FrameworkIndex> out;
  for (auto i : spec.indexes)
    if (util::same_url(i.url, url)) out.push_back(std::move(i));
  if (!out.empty()) return out;
  const bool per_variant = std::any_of(fw.channel_templates.begin(), fw.channel_templates.end(),
                                       [](const auto& t) { return t.second.find("{variant}") != std::string::npos; });
  if (!per_variant) {
    for (auto i : spec.indexes) {
      i.url = url;
      out.push_back(std::move(i));
    }
    return out;
  }
  const auto segs = util::url_path_segments(url);
  std::string channel = g.channel != "auto" ? g.channel : "stable";
  if (g.channel == "auto")
    for (const auto& s : segs)
      if (s == "nightly" || s == "test") channel = s;
  std::vector<std::string> variants;
  if (!g.variant.empty()) variants.push_back(g.variant);
  if (variants.empty()) {
    auto files = provider.candidates(specs::normalize_name(spec.main_package));
    if (!files) return std::unexpected(std::move(files).error().context(util::msg("--index-url {}", index::redact_url(url))));
    for (const auto& f : *files)
      if (auto wf = specs::WheelFilename::parse(f.filename); wf && wf->version.has_local()) {
        auto label = wf->version.local();
        if (std::find(variants.begin(), variants.end(), label) == variants.end()) variants.push_back(label);
      }
  }
  if (variants.empty())
    for (const auto& s : segs)
      if (fw.variant(s)) variants = {s};
  auto describe = variant_describer(knowledge, fw.name);
  for (const auto& v : variants) {
    FrameworkIndex i{.channel = channel, .variant = v, .cuda = std::nullopt, .url = url, .discovered = {}};
    if (const auto* mv = fw.variant(v))
      i.cuda = mv->cuda;
    else if (auto d = describe(channel, v))
      i.cuda = d->cuda, i.discovered = d->note;
    else
      continue; // a label that names no variant (+local.build)
    out.push_back(std::move(i));
  }
  if (out.empty()) out.push_back({.channel = channel, .variant = "", .cuda = std::nullopt, .url = url, .discovered = {}});
  return out;
}

} // namespace envfix::resolver
