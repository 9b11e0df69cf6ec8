#include "matrices/answers.hpp"

#include <algorithm>
#include <functional>

namespace envfix::matrices {

std::string matrix_platform(std::string_view tag, specs::ComputeCapability cc) {
  if (tag.find("aarch64") != std::string_view::npos) return "linux_aarch64";
  if (tag.find("win") != std::string_view::npos) return "windows_x86_64";
  if (tag.empty() && cc.tegra) return "linux_aarch64";
  return "linux_x86_64";
}

std::vector<std::string> arch_names(const std::optional<std::vector<specs::GpuArch>>& list) {
  std::vector<std::string> out;
  if (list)
    for (const auto& a : *list) out.push_back(a.to_string());
  return out;
}

std::vector<const Release*> rows_newest_first(const Framework& f) {
  std::vector<const Release*> rows;
  for (const auto& r : f.releases) rows.push_back(&r);
  auto top = [](const Release* r) -> std::optional<specs::Version> {
    if (!r->versions.empty()) return *std::max_element(r->versions.begin(), r->versions.end());
    if (r->nightly) return r->nightly;
    return std::nullopt;
  };
  // Equal tops keep the file's order (rows point into one vector); no std::stable_sort, whose
  // libstdc++ 12 buffer clang-19 flags as deprecated.
  std::sort(rows.begin(), rows.end(), [&](const Release* a, const Release* b) {
    auto x = top(a), y = top(b);
    if (x && y && *x != *y) return *x > *y;
    if (x.has_value() != y.has_value()) return x.has_value();
    return std::less<const Release*>{}(a, b);
  });
  return rows;
}

std::vector<VariantBuild> builds_of(const Framework& f, const Release& r, const std::string& platform) {
  std::vector<VariantBuild> out;
  for (const auto& rv : r.variants) {
    const auto* b = rv.platform(platform);
    if (!b) continue;
    const auto* var = f.variant(rv.variant);
    VariantBuild vb;
    vb.variant = rv.variant;
    vb.kind = var ? var->kind : "cuda";
    vb.cuda = var ? var->cuda : std::nullopt;
    vb.platform = platform;
    vb.sass = b->sass;
    vb.ptx = b->ptx;
    vb.confidence = b->confidence;
    vb.verified = b->confidence == Confidence::verified && b->known();
    vb.source = b->source;
    vb.channels = r.channels;
    out.push_back(std::move(vb));
  }
  return out;
}

GpuBuilds builds_for_gpu(const Knowledge& k, const Framework& f, specs::ComputeCapability cc, const std::string& platform,
                         const std::string& os, const std::string& driver) {
  GpuBuilds out;
  for (const auto* r : rows_newest_first(f)) {
    for (auto& b : builds_of(f, *r, platform)) {
      GpuBuild g;
      g.runs = b.runs_on(cc);
      if (g.runs == RunKind::none) continue;
      if (g.runs == RunKind::unknown && b.kind != "cuda") continue;
      g.row = r;
      g.via = b.runnable_arch(cc);
      if (b.cuda) {
        g.min_driver = k.min_driver(*b.cuda, os);
        g.minor_compat_driver = k.minor_compat_driver(*b.cuda, os);
        // PTX JIT of a newer ISA needs the toolkit's own driver; SASS can use minor compatibility.
        if (!driver.empty()) g.driver_ok = k.driver_supports(driver, *b.cuda, g.runs == RunKind::native, os);
      }
      g.stable = std::find(r->channels.begin(), r->channels.end(), "stable") != r->channels.end();
      g.build = std::move(b);
      if (g.runs == RunKind::unknown) {
        ++out.unknown;
      } else if (auto& slot = g.runs == RunKind::native ? out.native : out.jit; !slot && g.stable && !r->versions.empty()) {
        slot = NewestStable{std::max_element(r->versions.begin(), r->versions.end())->to_string(), g.build.variant};
      }
      out.builds.push_back(std::move(g));
    }
  }
  return out;
}

} // namespace envfix::matrices
