#include "resolver/knowledge_adapter.hpp"

#include <set>

#include <fmt/format.h>

namespace envfix::resolver {

Expected<FrameworkSpec> framework_spec_from(const matrices::Knowledge& knowledge, std::string_view framework,
                                            std::string_view mirror, std::string_view platform) {
  const matrices::Framework* fw = knowledge.framework(framework);
  if (!fw) return fail(ErrorCode::invalid_input, "unknown framework '{}'", framework);
  FrameworkSpec spec;
  spec.name = fw->name;
  spec.main_package = fw->main_package;
  spec.companions = fw->companions;
  for (const auto& [channel, tmpl] : fw->channel_templates) {
    // Only variants some release of this channel is built for (not every historical variant).
    std::set<std::string> variants;
    for (const auto& r : fw->releases) {
      auto chans = r.channels.empty() ? std::vector<std::string>{"stable"} : r.channels;
      bool in_channel = std::find(chans.begin(), chans.end(), channel) != chans.end() || (channel == "nightly" && r.nightly);
      if (!in_channel) continue;
      for (const auto& v : r.variants) variants.insert(v.variant);
    }
    for (const auto& name : variants) {
      const matrices::Variant* v = fw->variant(name);
      if (!v || (v->kind != "cuda" && v->kind != "cpu")) continue;
      auto url = fw->index_url(channel, name, mirror);
      if (!url) continue;
      spec.indexes.push_back(FrameworkIndex{channel, name, v->cuda, *url});
    }
  }
  std::string fw_name = fw->name, plat(platform);
  const matrices::Knowledge* k = &knowledge;
  spec.archs = [k, fw_name, plat](const specs::Version& version, std::string_view variant) -> std::optional<std::vector<specs::GpuArch>> {
    for (const auto& b : k->variants_for(fw_name, version, plat)) {
      if (b.variant != variant) continue;
      if (!b.sass && !b.ptx) return std::nullopt;
      std::vector<specs::GpuArch> all = b.sass.value_or(std::vector<specs::GpuArch>{});
      if (b.ptx) all.insert(all.end(), b.ptx->begin(), b.ptx->end());
      return all;
    }
    return std::nullopt;
  };
  spec.companion_version = [k, fw_name](const specs::Version& v, std::string_view companion) {
    return k->companion_version(fw_name, v, companion);
  };
  for (const auto& e : fw->support_ends) spec.support_ends.push_back(SupportEndInfo{e.from, e.below, e.variant, e.source});
  return spec;
}

} // namespace envfix::resolver
