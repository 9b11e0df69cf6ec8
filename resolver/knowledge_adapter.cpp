#include "resolver/knowledge_adapter.hpp"

#include <algorithm>
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
    // The CPU build is on every channel that has per-variant indexes (torch's /whl/cpu,
    // /whl/test/cpu, /whl/nightly/cpu; matrices/data/torch.yaml lists no `cpu` row per release):
    // without it --allow-cpu and GPU-less hosts had no CPU set to choose.
    if (tmpl.find("{variant}") != std::string::npos)
      for (const auto& v : fw->variants)
        if (v.kind == "cpu") variants.insert(v.name);
    for (const auto& name : variants) {
      const matrices::Variant* v = fw->variant(name);
      if (!v || (v->kind != "cuda" && v->kind != "cpu")) continue;
      auto url = fw->index_url(channel, name, mirror);
      if (!url) continue;
      FrameworkIndex idx{channel, name, v->cuda, *url};
      idx.extra = v->extra;
      if (!v->main_package.empty() && v->main_package != fw->main_package) idx.main_package = v->main_package;
      idx.packages = v->packages;
      idx.kernels = v->kernels;
      if (v->cuda)
        if (const auto* tk = knowledge.toolkit(*v->cuda)) idx.ptx_isa = tk->ptx_isa;
      spec.indexes.push_back(std::move(idx));
    }
  }
  std::string fw_name = fw->name, plat(platform);
  const matrices::Knowledge* k = &knowledge;
  spec.archs = [k, fw_name, plat](const specs::Version& version,
                                  std::string_view variant) -> std::optional<std::vector<specs::GpuArch>> {
    for (const auto& b : k->variants_for(fw_name, version, plat)) {
      if (b.variant != variant) continue;
      if (!b.sass && !b.ptx) return std::nullopt;
      std::vector<specs::GpuArch> all = b.sass.value_or(std::vector<specs::GpuArch>{});
      if (b.ptx) all.insert(all.end(), b.ptx->begin(), b.ptx->end());
      return all;
    }
    return std::nullopt;
  };
  spec.archs_verified = [k, fw_name, plat](const specs::Version& version, std::string_view variant) {
    for (const auto& b : k->variants_for(fw_name, version, plat))
      if (b.variant == variant) return b.verified;
    return false;
  };
  spec.companion_version = [k, fw_name](const specs::Version& v, std::string_view companion) {
    return k->companion_version(fw_name, v, companion);
  };
  spec.first_toolkit = [k](specs::ComputeCapability cc) -> std::optional<specs::CudaVersion> {
    auto ft = k->first_toolkit_for(cc);
    if (!ft.toolkit) return std::nullopt;
    return ft.toolkit->version;
  };
  for (const auto& e : fw->support_ends) spec.support_ends.push_back(SupportEndInfo{e.from, e.below, e.variant, e.source});
  return spec;
}

std::optional<FrameworkIndex> jetpack_index(const matrices::Knowledge& knowledge, std::string_view framework,
                                            const matrices::L4tRelease& release) {
  const matrices::Framework* fw = knowledge.framework(framework);
  if (!fw) return std::nullopt;
  auto it = release.indexes.find(fw->name);
  if (it == release.indexes.end() || it->second.empty()) return std::nullopt;
  FrameworkIndex idx{"stable", "jetpack" + release.jetpack, release.cuda, it->second};
  idx.supplementary = true;
  if (const auto* tk = knowledge.toolkit(release.cuda)) idx.ptx_isa = tk->ptx_isa;
  idx.discovered = util::msg("{} from the JetPack {} index {} (L4T {}; matrices l4t row, confidence {}): not {}'s own "
                             "build; the matrices know no arch list for it, its kernels are checked after download",
                             fw->main_package, release.jetpack, it->second, release.release,
                             matrices::to_string(release.confidence), fw->name);
  return idx;
}

std::vector<DiscoverySource> discovery_sources(const matrices::Knowledge& knowledge, std::string_view framework,
                                               std::string_view mirror) {
  std::vector<DiscoverySource> out;
  const matrices::Framework* fw = knowledge.framework(framework);
  if (!fw) return out;
  for (const auto& [channel, tmpl] : fw->channel_templates) {
    std::string t = tmpl;
    bool slash = t.ends_with("/");
    if (slash) t.pop_back();
    if (!t.ends_with("/{variant}")) continue; // no per-variant directories: nothing to discover
    // The aggregate is the template without its last component, with the mirror applied.
    auto probe = fw->index_url(channel, "{variant}", mirror); // {variant} stays in place
    if (!probe) continue;
    std::string agg = probe->substr(0, probe->rfind("{variant}"));
    while (!agg.empty() && agg.back() == '/') agg.pop_back();
    std::string ch = channel, m(mirror);
    out.push_back(DiscoverySource{channel, agg, [fw, ch, m](std::string_view variant) {
                                    auto u = fw->index_url(ch, variant, m);
                                    return u ? *u : std::string();
                                  }});
  }
  return out;
}

DescribeVariant variant_describer(const matrices::Knowledge& knowledge, std::string_view framework) {
  const matrices::Knowledge* k = &knowledge;
  std::string fw(framework);
  return [k, fw](std::string_view channel, std::string_view variant) -> std::optional<DiscoveredVariant> {
    auto guess = k->understand_variant(fw, variant);
    if (!guess || (guess->variant.kind != "cuda" && guess->variant.kind != "cpu")) return std::nullopt;
    // Contained: an unknown variant older than every CUDA the framework declares is history (cu92,
    // cu102 on download.pytorch.org/whl/torch/), not news.
    if (!guess->known && guess->variant.cuda) {
      const matrices::Framework* f = k->framework(fw);
      bool newer = !f || std::none_of(f->variants.begin(), f->variants.end(),
                                      [&](const matrices::Variant& v) { return v.cuda && *v.cuda >= *guess->variant.cuda; });
      if (!newer) return std::nullopt;
    }
    DiscoveredVariant d;
    d.cuda = guess->variant.cuda;
    util::Message what =
        guess->known ? util::msg("variant {} is in the matrices but no {} release row lists it", variant, channel)
        : d.cuda ? util::msg("variant {} is not in the matrices: CUDA {} understood from its name", variant, d.cuda->to_string())
                 : util::msg("variant {} is not in the matrices", variant);
    util::Message driver = util::msg("no driver floor known for CUDA {}", d.cuda ? d.cuda->to_string() : "");
    if (!d.cuda) {
      d.note = util::msg("{} (found on the {} channel's index); its kernels are unverified until the binary is read "
                         "(checked after download)",
                         what, channel);
      return d;
    }
    if (auto f = k->driver_floor(*d.cuda))
      driver = f->exact ? util::msg("driver ≥ {} (CUDA {} in cuda.yaml)", f->version, d.cuda->to_string())
               : f->toolkit_known
                   ? util::msg("driver floor {} is only the {}.x minor-version-compatibility floor (CUDA {} has no confirmed "
                               "driver in cuda.yaml)",
                               f->version, d.cuda->major, d.cuda->to_string())
                   : util::msg("driver floor {} is only the {}.x minor-version-compatibility floor (CUDA {} is not in cuda.yaml)",
                               f->version, d.cuda->major, d.cuda->to_string());
    d.note = util::msg("{} (found on the {} channel's index); {}; its kernels are unverified until the binary is read "
                       "(checked after download)",
                       what, channel, driver);
    return d;
  };
}

void add_jetpack_index(FrameworkSpec& spec, const matrices::Knowledge& knowledge, std::string_view framework,
                       const probe::HostFacts& facts) {
  if (!facts.tegra || facts.tegra->l4t.empty()) return;
  const auto* release = knowledge.l4t(facts.tegra->l4t);
  if (!release) return;
  if (auto idx = jetpack_index(knowledge, framework, *release)) spec.indexes.push_back(std::move(*idx));
}

void complete_tegra(const matrices::Knowledge& knowledge, probe::HostFacts& facts) {
  if (!facts.tegra) return;
  const auto& t = *facts.tegra;
  auto product = t.soc.empty() ? std::nullopt : knowledge.gpu_for_soc(t.soc);
  if (facts.gpus.empty() && product) {
    probe::GpuInfo g;
    g.name = t.model.empty() ? product->name : t.model;
    g.cc = product->cc;
    facts.gpus.push_back(std::move(g));
    facts.notes.push_back(util::msg("GPU from the device tree (nvidia,{}): {} (compute capability {}, integrated)", t.soc,
                                    product->name, product->cc.to_string()));
  }
  const auto* rel = t.l4t.empty() ? nullptr : knowledge.l4t(t.l4t);
  if (!rel) return;
  if (!facts.driver)
    facts.driver = probe::DriverInfo{rel->driver, rel->cuda, "l4t"};
  else if (!facts.driver->cuda)
    facts.driver->cuda = rel->cuda;
}

HostTarget host_target(const probe::HostFacts& facts, const TargetEnvironment& python, const matrices::Knowledge& knowledge) {
  HostTarget target;
  for (const auto& g : facts.gpus) target.gpus.push_back(g.cc);
  target.driver_version = facts.driver ? facts.driver->version : "";
  target.python = python;
  if (const auto& d = facts.driver; d && d->source == "l4t" && d->cuda) {
    // A Jetson: the driver is part of L4T and runs the CUDA of its release and older (jetson.yaml).
    const specs::CudaVersion l4t = *d->cuda;
    target.driver_supports = [l4t](const specs::CudaVersion& c) { return c <= l4t; };
  } else if (!target.driver_version.empty()) {
    const auto* kp = &knowledge;
    std::string drv = target.driver_version;
    target.driver_supports = [kp, drv](const specs::CudaVersion& c) { return kp->driver_supports(drv, c); };
    target.driver_native = [kp, drv](const specs::CudaVersion& c) { return kp->driver_supports(drv, c, false); };
  } else if (!target.gpus.empty()) {
    target.driver_supports = [](const specs::CudaVersion&) { return false; };
  }
  if (!(facts.driver && facts.driver->source == "l4t")) // a Jetson's driver comes with its L4T release
    target.driver_floor = [kp = &knowledge](const specs::CudaVersion& c) {
      auto d = kp->minor_compat_driver(c);
      return d ? d : kp->min_driver(c);
    };
  return target;
}

} // namespace envfix::resolver
