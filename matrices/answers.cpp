#include "matrices/answers.hpp"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "util/strings.hpp"

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
  out.support_end = k.support_end(f.name, cc);
  if (out.support_end) out.last_release = k.last_release_for(f.name, cc, platform);
  return out;
}

namespace {
// The one "arch or GPU name" rule (Knowledge::resolve_gpu); a bare arch shows no product name.
Expected<ResolvedGpu> shown_gpu(const Knowledge& k, std::string_view query) {
  auto g = ENVFIX_TRY(k.resolve_gpu(query));
  if (g.bare_arch) g.name.clear();
  return g;
}
} // namespace

Expected<GpuAnswer> answer_gpu(const Knowledge& k, std::string_view query, std::string_view platform_tag) {
  GpuAnswer a;
  a.gpu = ENVFIX_TRY(shown_gpu(k, query));
  a.platform = matrix_platform(platform_tag, a.gpu.cc);
  a.os = a.platform.starts_with("windows") ? "windows" : "linux";
  a.first = k.first_toolkit_for(a.gpu.cc);
  if (const auto* t = a.first.toolkit) {
    const std::string& d = a.os == "windows" ? t->min_driver_windows : t->min_driver_linux;
    if (!d.empty()) a.min_driver = d;
    // A toolkit whose release driver is not confirmed (Rubin in CUDA 13.4) is judged by its CUDA
    // major's minor-version floor (matrices/data/cuda.yaml).
    a.minor_floor = a.os == "windows" ? t->minor_compat_windows : t->minor_compat_linux;
  }
  a.l4t = k.l4t_for(a.gpu.cc);
  return a;
}

Expected<const Framework*> framework_named(const Knowledge& k, std::string_view name) {
  if (const auto* f = k.framework(name)) return f;
  std::vector<std::string> names;
  for (const auto& x : k.frameworks()) names.push_back(x.name);
  return std::unexpected(Error{
      ErrorCode::not_found, fmt::format("unknown framework '{}'", name), {}, fmt::format("known: {}", util::join(names, ", "))});
}

namespace {
VariantAnswer answer_variant(const Knowledge& k, const Framework& f, const ReleaseAnswer& r, const ReleaseVariant& rv,
                             std::string_view mirror) {
  VariantAnswer va;
  va.row = &rv;
  va.variant = f.variant(rv.variant);
  if (auto url = f.index_url(r.channel, rv.variant, mirror)) va.index_url = *url;
  if (va.variant && va.variant->cuda) {
    const specs::CudaVersion cuda = *va.variant->cuda;
    va.drivers = VariantAnswer::Drivers{k.min_driver(cuda, "linux"), k.min_driver(cuda, "windows"),
                                        k.minor_compat_driver(cuda, "linux"), k.minor_compat_driver(cuda, "windows")};
  }
  for (const auto& b : rv.platforms) {
    PlatformAnswer pa{&b, {}};
    auto builds = k.variants_for(f.name, r.version, b.platform);
    auto it = std::find_if(builds.begin(), builds.end(), [&](const auto& x) { return x.variant == rv.variant; });
    for (const auto& g : r.gpus) pa.runs_on.push_back(it == builds.end() ? RunKind::unknown : it->runs_on(g.cc));
    va.platforms.push_back(std::move(pa));
  }
  return va;
}
} // namespace

Expected<ReleaseAnswer> answer_release(const Knowledge& k, const Framework& f, std::string_view version,
                                       const std::vector<std::string>& gpu_queries, std::string_view mirror) {
  ReleaseAnswer r;
  auto v = specs::Version::parse(version);
  if (!v) return std::unexpected(Error(v.error()).context(util::msg("--version {}", version)));
  r.version = *v;
  r.row = f.release(*v);
  if (!r.row) {
    std::vector<std::string> known;
    for (const auto* row : rows_newest_first(f)) known.push_back(row->label());
    return std::unexpected(
        Error::made(ErrorCode::not_found, util::msg("{} {} is not in the matrices", f.name, v->to_string()), {},
                    util::msg("known: {}; add a release with --matrices DIR (matrices/README.md)", util::join(known, "; "))));
  }
  for (const auto& q : gpu_queries) r.gpus.push_back(ENVFIX_TRY(shown_gpu(k, q)));
  r.channel = r.row->channels.empty() ? "stable" : r.row->channels.front();
  for (const auto* list : {&f.companions, &f.optional_companions})
    for (const auto& c : *list) r.companions.emplace_back(c, k.companion_version(f.name, *v, c));
  for (const auto& rv : r.row->variants) r.variants.push_back(answer_variant(k, f, r, rv, mirror));
  return r;
}

} // namespace envfix::matrices
