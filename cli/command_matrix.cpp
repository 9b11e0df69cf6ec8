// envfix matrix [--gpu NAME|sm_XX]... [--framework F] [--version V]: what the knowledge (matrices/) says.
//   --gpu "RTX 5090"                → which releases/variants run on it (natively or by PTX JIT), minimum driver
//   --gpu sm_61 --framework torch   → the same for one framework, with the newest release that still runs
//   --framework torch --version 2.7.0 → variants, archs, companions, Python tags, drivers, index URLs
#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "api/matrix.hpp"
#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "i18n/i18n.hpp"
#include "util/strings.hpp"

namespace envfix::cli {
namespace {

using matrices::Knowledge;
using matrices::RunKind;
using nlohmann::json;

std::string platform_of(const Globals& g) { return api::matrix_platform(g.platform, {}); }

std::string words(const std::vector<std::string>& v) { return util::join(v, " "); }

json opt_str(const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); }

json row_json(const matrices::Release& r) {
  json j;
  j["label"] = r.label();
  json versions = json::array();
  for (const auto& v : r.versions) versions.push_back(v.to_string());
  j["versions"] = versions;
  j["nightly"] = r.nightly ? json(r.nightly->to_string()) : json(nullptr);
  j["range"] = r.range ? json(r.range->to_string()) : json(nullptr);
  j["channels"] = r.channels;
  return j;
}

// The matrices' row for a learned build: JSON (null when there is none) and its text line.
json row_view(const api::RowComparison& c, std::vector<std::string>& text, const std::string& indent) {
  using State = api::RowComparison::State;
  if (c.state == State::not_applicable) return nullptr;
  if (c.state == State::not_listed) {
    text.push_back(i18n::trf("{}    not in the matrices (a build the table does not list)", indent));
    return nullptr;
  }
  json row = json::object();
  row["row"] = c.row_label.empty() ? json(nullptr) : json(c.row_label);
  row["where"] = c.where.empty() ? json(nullptr) : json(c.where);
  row["confidence"] = matrices::to_string(c.confidence);
  if (c.state == State::no_arch_data) {
    row["sass"] = row["ptx"] = nullptr;
    row["agrees"] = nullptr;
    text.push_back(i18n::trf("{}    the matrices have no arch data for this build; the binary's list stands", indent));
    return row;
  }
  row["sass"] = c.table_sass;
  row["ptx"] = c.table_ptx;
  row["agrees"] = c.agrees();
  row["table_only"] = c.table_only;
  row["binary_only"] = c.binary_only;
  const std::string label = c.row_label.empty() ? "?" : c.row_label;
  if (c.agrees())
    text.push_back(i18n::trf("{}    agrees with the matrices row {} ({})", indent, label, matrices::to_string(c.confidence)));
  else
    text.push_back(styled(i18n::trf("{}    disagrees with the matrices row {} ({}, {}): the table lists {} the "
                                    "binary lacks; the binary has {} the table lacks",
                                    indent, label, c.where.empty() ? "?" : c.where, matrices::to_string(c.confidence),
                                    c.table_only.empty() ? i18n::trs("nothing") : words(c.table_only),
                                    c.binary_only.empty() ? i18n::trs("nothing") : words(c.binary_only)),
                          Style::yellow));
  return row;
}

// --- Learned evidence (api::learned_builds): kernel facts read from binaries on this machine,
// shown beside and above the matrices' claims.

// JSON and text lines for the learned builds; `gpus` are the GPUs asked (coverage verdicts per GPU).
json evidence_view(const Knowledge& k, const Globals& g, const matrices::Framework& f,
                   const std::optional<specs::Version>& version,
                   const std::vector<std::pair<std::string, specs::ComputeCapability>>& gpus, std::vector<std::string>& text,
                   const std::string& indent) {
  std::vector<specs::ComputeCapability> ccs;
  for (const auto& [label, cc] : gpus) ccs.push_back(cc);
  json out = json::array();
  auto builds = api::learned_builds(k, f, g.cache_dir, version, ccs);
  if (builds.empty()) return out;
  text.push_back(
      fmt::format("{}{}", indent,
                  styled(i18n::tr("read from the binary on this machine (evidence store; outranks the table):"), Style::bold)));
  for (const auto& lb : builds) {
    const auto& e = lb.evidence;
    json j;
    j["project"] = e.key.project;
    j["version"] = e.key.version;
    j["variant"] = e.key.variant.empty() ? json(nullptr) : json(e.key.variant);
    j["platform"] = e.key.platform;
    j["source"] = e.source;
    j["sass"] = lb.sass;
    j["ptx"] = lb.ptx;
    j["files"] = e.files.size();
    j["containers"] = lb.containers;
    text.push_back(fmt::format("{}  {}: SASS {}; PTX {} ({} file{}, {} containers; {})", indent, e.key.to_string(),
                               lb.sass.empty() ? "none" : words(lb.sass), lb.ptx.empty() ? "none" : words(lb.ptx), e.files.size(),
                               e.files.size() == 1 ? "" : "s", lb.containers, e.source));
    json cov = json::object();
    for (std::size_t i = 0; i < gpus.size() && i < lb.coverage.size(); ++i) {
      const auto& [label, cc] = gpus[i];
      const auto& pc = lb.coverage[i];
      std::string verdict = pc.has_gpu_code() ? api::to_string(pc.verdict) : "none";
      cov[cc.sm_name()] = {{"verdict", verdict},      {"runnable", pc.runnable()},         {"total", pc.total()},
                           {"jit_only", pc.jit_only}, {"partial_files", pc.partial_files}, {"none_files", pc.none_files}};
      text.push_back(i18n::trf("{}    on {}: {} ({} of {} modules runnable{}){}", indent, label,
                               verdict == "full" ? styled(verdict, Style::green)
                                                 : styled(verdict, verdict == "partial" ? Style::yellow : Style::red),
                               pc.runnable(), pc.total(), pc.jit_only ? i18n::tr(", by PTX JIT only") : "",
                               pc.partial_files.empty() ? "" : i18n::trf("; partly: {}", util::join(pc.partial_files, ", "))));
    }
    j["coverage"] = cov;
    j["matrices"] = row_view(lb.row, text, indent);
    out.push_back(j);
  }
  return out;
}

// --gpu, one GPU: what it is and the oldest driver that runs code for it (JSON, and text lines).
json gpu_json(const api::GpuAnswer& a, std::vector<std::string>& text) {
  const matrices::ResolvedGpu& rg = a.gpu;
  const std::string& os = a.os;
  json jg;
  jg["query"] = rg.query;
  jg["name"] = rg.name.empty() ? json(nullptr) : json(rg.name);
  jg["cc"] = rg.cc.to_string();
  jg["arch"] = rg.cc.sm_name();
  jg["family"] = rg.family.empty() ? json(nullptr) : json(rg.family);
  jg["integrated"] = rg.cc.tegra;
  jg["source"] = rg.source.empty() ? json(nullptr) : json(rg.source);
  const matrices::FirstToolkit& ft = a.first;
  const auto* first = ft.toolkit;
  const std::optional<std::string>& gpu_min_driver = a.min_driver;
  jg["min_driver"] = {{"version", opt_str(gpu_min_driver)},
                      {"cuda", first ? json(first->version.to_string()) : json(nullptr)},
                      {"os", os},
                      {"own_arch", ft.own_arch},
                      {"oldest_listed", ft.oldest_listed}};
  text.push_back(styled(i18n::trf("{}{} → {} (compute capability {}{})", rg.query,
                                  rg.name.empty() || rg.name == rg.query ? "" : " = " + rg.name, rg.cc.sm_name(),
                                  rg.cc.to_string(), rg.family.empty() ? "" : ", " + rg.family),
                        Style::bold));
  if (!rg.source.empty()) text.push_back(i18n::trf("  source: {}", rg.source));
  if (rg.cc.tegra)
    text.push_back(i18n::trf("  integrated (Tegra) GPU: SASS runs only when built for {} exactly, PTX by JIT as on a desktop "
                             "part (CUDA C++ Programming Guide, Binary Compatibility; docs/kernels.md); builds for linux_aarch64",
                             rg.cc.sm_name()));
  json jl = json::array();
  for (const auto* r : a.l4t) {
    std::string idx;
    for (const auto& [fw, url] : r->indexes) idx += i18n::trf("; {} from {}", fw, url);
    text.push_back(fmt::format("  L4T {} (JetPack {}): CUDA {}{} [{}]", r->release, r->jetpack, r->cuda.to_string(), idx,
                               to_string(r->confidence)));
    jl.push_back({{"l4t", r->release},
                  {"jetpack", r->jetpack},
                  {"cuda", r->cuda.to_string()},
                  {"indexes", r->indexes},
                  {"confidence", to_string(r->confidence)},
                  {"source", r->source}});
  }
  if (rg.cc.tegra) jg["l4t"] = jl;
  if (rg.cc.tegra) {
    // A Jetson's driver is part of L4T: the desktop driver floors do not apply (matrices/data/jetson.yaml).
    text.push_back(i18n::trs("  driver: part of Jetson Linux (L4T, above), not a desktop driver branch"));
  } else if (first && gpu_min_driver) {
    // The oldest toolkit of the table is not "the first" for a GPU older than the table.
    std::string what = ft.oldest_listed ? i18n::trf("the oldest toolkit in the matrices, which already has code for {}; older "
                                                    "toolkits are not listed",
                                                    rg.cc.sm_name())
                       : ft.own_arch    ? i18n::trf("the first toolkit with code for {}", rg.cc.sm_name())
                                        : i18n::trf("the first toolkit whose code runs on {}", rg.cc.sm_name());
    text.push_back(i18n::trf("  minimum driver: {} on {} (CUDA {}, {})", *gpu_min_driver, os, first->version.to_string(), what));
  } else if (first) {
    const auto& floor = a.minor_floor;
    text.push_back(i18n::trf("  minimum driver: not confirmed (CUDA {} is the first toolkit with code for {}; its "
                             "release driver is not in the matrices, so the CUDA {}.x floor applies: {})",
                             first->version.to_string(), rg.cc.sm_name(), first->version.major,
                             floor.empty() ? std::string("unknown") : floor));
  } else {
    text.push_back(i18n::trs("  minimum driver: unknown (no toolkit in the matrices targets this GPU)"));
  }
  return jg;
}

// The legacy ladder: the last release for a GPU its newest releases dropped (null and "" when none).
json last_release_json(const api::GpuBuilds& found, const matrices::Framework& f, const matrices::ResolvedGpu& rg,
                       std::string& line) {
  const auto* end = found.support_end;
  if (!end) return nullptr;
  const auto& lr = found.last_release;
  line =
      lr ? i18n::trf("    {} {} ({}) is the last release with code for {}: {} from {} on drops it{} ({})", f.name,
                     lr->version.to_string(), lr->variant, rg.cc.sm_name(), f.name, end->from.to_string(),
                     end->variant.empty() ? "" : i18n::trf(" with {}", end->variant), end->source)
         : i18n::trf("    {} from {} on has no build for {} ({})", f.name, end->from.to_string(), rg.cc.sm_name(), end->source);
  return {{"version", lr ? json(lr->version.to_string()) : json(nullptr)},
          {"variant", lr ? json(lr->variant) : json(nullptr)},
          {"dropped_from", end->from.to_string()},
          {"dropped_variant", end->variant.empty() ? json(nullptr) : json(end->variant)},
          {"confidence", matrices::to_string(end->confidence)},
          {"source", end->source}};
}

// --gpu, one GPU and framework (api::builds_for_gpu): every build that runs on it as JSON and text
// lines, and the newest stable one natively and by PTX JIT.
struct GpuBuildsView {
  json builds = json::array();
  json newest = {{"native", nullptr}, {"jit", nullptr}};
  std::vector<std::string> lines;
  std::size_t unknown = 0;
  json last_release; // the legacy ladder (last_release_json)
  std::string last_line;
};
GpuBuildsView builds_for_gpu(const Knowledge& k, const Globals& g, const matrices::Framework& f, const matrices::ResolvedGpu& rg,
                             const std::string& platform, const std::string& os) {
  auto found = api::builds_for_gpu(k, f, rg.cc, platform, os, g.driver);
  GpuBuildsView out;
  out.unknown = found.unknown;
  out.last_release = last_release_json(found, f, rg, out.last_line);
  auto newest = [](const std::optional<api::NewestStable>& n) -> json {
    return n ? json{{"version", n->version}, {"variant", n->variant}, {"channel", "stable"}} : json(nullptr);
  };
  out.newest = {{"native", newest(found.native)}, {"jit", newest(found.jit)}};
  for (const auto& gb : found.builds) {
    const auto& b = gb.build;
    json jb = row_json(*gb.row);
    jb["variant"] = b.variant;
    jb["cuda"] = b.cuda ? json(b.cuda->to_string()) : json(nullptr);
    jb["runs"] = matrices::to_string(gb.runs);
    jb["via"] = gb.via ? json(gb.via->to_string()) : json(nullptr);
    jb["min_driver"] = opt_str(gb.min_driver);
    jb["minor_compat_driver"] = opt_str(gb.minor_compat_driver);
    jb["confidence"] = matrices::to_string(b.confidence);
    jb["verified"] = b.verified;
    if (gb.driver_ok) jb["driver_ok"] = *gb.driver_ok;
    out.builds.push_back(jb);
    if (gb.runs == RunKind::unknown) continue;
    const auto* r = gb.row;
    const auto how =
        gb.runs == RunKind::native ? styled(i18n::tr("native"), Style::green) : styled(i18n::tr("PTX JIT"), Style::yellow);
    out.lines.push_back(
        fmt::format("    {} {} {}{}{}", i18n::pad(r->label() + (gb.stable ? "" : " (" + util::join(r->channels, ",") + ")"), 22),
                    i18n::pad(b.variant, 7), i18n::trf("{} via {}", how, gb.via ? gb.via->to_string() : "?"),
                    gb.min_driver ? i18n::trf("; driver ≥ {}", *gb.min_driver) : "",
                    b.verified ? "" : styled(fmt::format(" [{}]", matrices::to_string(b.confidence)), Style::dim)));
  }
  return out;
}

// --gpu, one GPU and framework: JSON and text lines.
json framework_for_gpu(const Knowledge& k, const Globals& g, const matrices::Framework& f, const matrices::ResolvedGpu& rg,
                       const std::string& platform, const std::string& os, std::vector<std::string>& text) {
  json jf;
  jf["name"] = f.name;
  auto found = builds_for_gpu(k, g, f, rg, platform, os);
  jf["builds"] = std::move(found.builds);
  const json& newest = found.newest;
  jf["newest"] = newest;
  const std::string& last_line = found.last_line;
  jf["last_release"] = std::move(found.last_release);
  std::vector<std::string> ev_text;
  jf["evidence"] = evidence_view(k, g, f, std::nullopt, {{rg.query, rg.cc}}, ev_text, "  ");
  for (auto& l : ev_text) text.push_back(std::move(l));
  if (found.lines.empty() && found.unknown == 0) {
    text.push_back(i18n::trf("  {}: no release in the matrices runs on {}", f.name, rg.cc.sm_name()));
    return jf;
  }
  std::string head = fmt::format("  {}:", f.name);
  if (!newest["native"].is_null())
    head += i18n::trf(" newest stable release with {} code: {} ({})", rg.cc.sm_name(),
                      newest["native"]["version"].get<std::string>(), newest["native"]["variant"].get<std::string>());
  else if (!newest["jit"].is_null())
    head += i18n::trf(" no native code; newest stable release by PTX JIT: {} ({})", newest["jit"]["version"].get<std::string>(),
                      newest["jit"]["variant"].get<std::string>());
  text.push_back(head);
  if (!last_line.empty()) text.push_back(styled(last_line, Style::bold));
  for (auto& l : found.lines) text.push_back(std::move(l));
  if (found.unknown > 0)
    text.push_back(found.unknown == 1
                       ? i18n::trf("    {} build without arch data: unverified, checked after download", found.unknown)
                       : i18n::trf("    {} builds without arch data: unverified, checked after download", found.unknown));
  return jf;
}

// --gpu: per GPU, per framework, the builds that run on it.
int gpu_query(const Knowledge& k, const Globals& g, const std::vector<const matrices::Framework*>& fws) {
  json out;
  out["platform"] = platform_of(g);
  out["gpus"] = json::array();
  std::vector<std::string> text;
  for (const auto& q : g.gpus) {
    auto a = api::answer_gpu(k, q, g.platform);
    if (!a) return fail(a.error());
    json jg = gpu_json(*a, text);
    jg["platform"] = a->platform;
    jg["frameworks"] = json::array();
    for (const auto* f : fws) jg["frameworks"].push_back(framework_for_gpu(k, g, *f, a->gpu, a->platform, a->os, text));
    out["gpus"].push_back(jg);
  }
  if (g.format == "json")
    machine_json(out);
  else
    for (const auto& l : text) human(l);
  return 0;
}

// --framework F --version V, one variant on one platform: its archs, and how it runs on each --gpu.
json platform_json(const Globals& g, const api::PlatformAnswer& pa, const std::vector<matrices::ResolvedGpu>& gpus,
                   std::vector<std::string>& text) {
  const matrices::ArchBuild& b = *pa.build;
  json jp;
  jp["platform"] = b.platform;
  jp["sass"] = b.sass ? json(api::arch_names(b.sass)) : json(nullptr);
  jp["ptx"] = b.ptx ? json(api::arch_names(b.ptx)) : json(nullptr);
  jp["confidence"] = matrices::to_string(b.confidence);
  jp["verified"] = b.confidence == matrices::Confidence::verified && b.known();
  jp["source"] = b.source;
  if (!b.known()) jp["note"] = "unverified (no arch data), checked after download";
  std::string runs;
  if (!gpus.empty()) {
    json jr = json::object();
    for (std::size_t i = 0; i < gpus.size() && i < pa.runs_on.size(); ++i) {
      jr[gpus[i].cc.sm_name()] = matrices::to_string(pa.runs_on[i]);
      runs += fmt::format(" {}:{}", gpus[i].cc.sm_name(), matrices::to_string(pa.runs_on[i]));
    }
    jp["runs_on"] = jr;
  }
  std::string archs = b.known()
                          ? fmt::format("SASS {}; PTX {}", b.sass->empty() ? i18n::trs("none") : words(api::arch_names(b.sass)),
                                        b.ptx->empty() ? i18n::trs("none") : words(api::arch_names(b.ptx)))
                          : i18n::trs("archs unknown: unverified, checked after download");
  text.push_back(fmt::format("    {} {}{}{}", i18n::pad(b.platform, 15), archs,
                             b.confidence == matrices::Confidence::verified
                                 ? ""
                                 : styled(fmt::format(" [{}]", matrices::to_string(b.confidence)), Style::dim),
                             runs.empty() ? "" : " →" + runs));
  if (g.verbose > 0) text.push_back(styled(i18n::trf("      source: {}", b.source), Style::dim));
  return jp;
}

// --framework F --version V, one variant: its CUDA, drivers, index and platforms.
json variant_json(const Globals& g, const api::VariantAnswer& va, const std::vector<matrices::ResolvedGpu>& gpus,
                  std::vector<std::string>& text) {
  const auto* var = va.variant;
  json jv;
  jv["name"] = va.row->variant;
  jv["kind"] = var ? var->kind : "cuda";
  jv["cuda"] = var && var->cuda ? json(var->cuda->to_string()) : json(nullptr);
  jv["index_url"] = opt_str(va.index_url);
  std::string drivers;
  if (va.drivers) {
    const auto& d = *va.drivers;
    jv["min_driver"] = {{"linux", opt_str(d.linux_min)}, {"windows", opt_str(d.windows_min)}};
    jv["minor_compat_driver"] = {{"linux", opt_str(d.linux_minor)}, {"windows", opt_str(d.windows_minor)}};
    drivers = i18n::trf("CUDA {}; Linux driver ≥ {}{}", var->cuda->to_string(), d.linux_min.value_or("?"),
                        d.linux_minor ? i18n::trf(" (≥ {} with minor-version compatibility)", *d.linux_minor) : "");
  } else {
    drivers = var ? var->kind : i18n::trs("unknown");
  }
  text.push_back(fmt::format("  {}: {}{}", styled(va.row->variant, Style::bold), drivers,
                             va.index_url ? i18n::trf("; index {}", *va.index_url) : ""));
  jv["platforms"] = json::array();
  for (const auto& pa : va.platforms) jv["platforms"].push_back(platform_json(g, pa, gpus, text));
  return jv;
}

// --framework F --version V: everything about one release.
int release_query(const Knowledge& k, const Globals& g, const matrices::Framework& f, const std::string& version_text) {
  auto a = api::answer_release(k, f, version_text, g.gpus, g.mirror);
  if (!a) return fail(a.error());
  const matrices::Release* r = a->row;
  const std::vector<matrices::ResolvedGpu>& gpus = a->gpus;
  json out;
  out["framework"] = f.name;
  out["main_package"] = f.main_package;
  out["version"] = a->version.to_string();
  out["release"] = row_json(*r);
  out["release"]["python"] = r->python;
  out["release"]["pypi_default"] = r->pypi_default.empty() ? json(nullptr) : json(r->pypi_default);
  out["release"]["source"] = r->source;
  json comps = json::object();
  std::vector<std::string> comp_text; // framework order, not JSON's sorted keys
  for (const auto& [c, version] : a->companions) {
    comps[c] = opt_str(version);
    comp_text.push_back(fmt::format("{} {}", c, version ? *version : i18n::trs("(none coupled)")));
  }
  out["companions"] = comps;
  out["variants"] = json::array();

  std::vector<std::string> text;
  text.push_back(
      styled(i18n::trf("{} {} ({}; channel {})", f.name, a->version.to_string(), r->label(), util::join(r->channels, ",")),
             Style::bold));
  text.push_back(i18n::trf("  companions: {}", comp_text.empty() ? i18n::trs("none") : util::join(comp_text, ", ")));
  text.push_back(fmt::format("  python: {}", words(r->python)));
  if (!r->pypi_default.empty()) text.push_back(i18n::trf("  pypi.org default variant: {}", r->pypi_default));

  for (const auto& va : a->variants) out["variants"].push_back(variant_json(g, va, gpus, text));
  {
    std::vector<std::pair<std::string, specs::ComputeCapability>> asked;
    for (const auto& rg : gpus) asked.emplace_back(rg.query, rg.cc);
    std::vector<std::string> ev_text;
    out["evidence"] = evidence_view(k, g, f, a->version, asked, ev_text, "");
    // Evidence first: what the binaries said outranks the rows below.
    if (!ev_text.empty()) text.insert(text.begin() + 1, ev_text.begin(), ev_text.end());
  }
  if (g.format == "json")
    machine_json(out);
  else
    for (const auto& l : text) human(l);
  return 0;
}

// --framework F alone: its release rows; nothing at all: an overview.
int overview(const Knowledge& k, const Globals& g, const std::vector<const matrices::Framework*>& fws) {
  json out;
  out["frameworks"] = json::array();
  std::vector<std::string> text;
  for (const auto* f : fws) {
    json jf;
    jf["name"] = f->name;
    jf["main_package"] = f->main_package;
    jf["companions"] = f->companions;
    jf["optional_companions"] = f->optional_companions;
    jf["channels"] = f->channel_templates;
    jf["default_mirror"] = f->default_mirror;
    // What `apply` runs after installing: on the GPU, or on the CPU without one.
    jf["smoke"] = {{"step_a", f->smoke.step_a},
                   {"step_b", f->smoke.step_b},
                   {"companions", f->smoke.companions},
                   {"cpu", f->smoke.cpu.empty() ? json(nullptr) : json(f->smoke.cpu)},
                   {"cpu_companions", f->smoke.cpu_companions}};
    jf["releases"] = json::array();
    text.push_back(styled(i18n::trf("{} (package {}; companions: {})", f->name, f->main_package,
                                    f->companions.empty() ? i18n::trs("none") : util::join(f->companions, ", ")),
                          Style::bold));
    jf["evidence"] = evidence_view(k, g, *f, std::nullopt, {}, text, "  ");
    for (const auto* r : api::rows_newest_first(*f)) {
      json jr = row_json(*r);
      std::vector<std::string> vs;
      for (const auto& rv : r->variants) vs.push_back(rv.variant);
      jr["variants"] = vs;
      jf["releases"].push_back(jr);
      bool stable = std::find(r->channels.begin(), r->channels.end(), "stable") != r->channels.end();
      text.push_back(fmt::format("  {} {}", i18n::pad(r->label() + (stable ? "" : " (" + util::join(r->channels, ",") + ")"), 24),
                                 words(vs)));
    }
    out["frameworks"].push_back(jf);
  }
  out["cuda_toolkits"] = json::array();
  std::vector<std::string> tk;
  for (const auto& t : k.toolkits()) {
    out["cuda_toolkits"].push_back({{"cuda", t.version.to_string()},
                                    {"min_driver",
                                     {{"linux", t.min_driver_linux},
                                      {"windows", t.min_driver_windows.empty() ? json(nullptr) : json(t.min_driver_windows)}}},
                                    {"minor_compat_driver", t.minor_compat_linux},
                                    {"confidence", matrices::to_string(t.confidence)}});
    // A toolkit whose GA driver is not confirmed (matrices/data/cuda.yaml): its minor-version floor.
    tk.push_back(!t.min_driver_linux.empty()     ? fmt::format("{} ≥ {}", t.version.to_string(), t.min_driver_linux)
                 : !t.minor_compat_linux.empty() ? i18n::trf("{} ≥ {} (minor-version floor; GA driver unconfirmed)",
                                                             t.version.to_string(), t.minor_compat_linux)
                                                 : i18n::trf("{} (driver unknown)", t.version.to_string()));
  }
  if (fws.size() > 1) text.push_back(i18n::trf("CUDA toolkits (Linux driver): {}", util::join(tk, ", ")));
  if (g.format == "json")
    machine_json(out);
  else
    for (const auto& l : text) human(l);
  return 0;
}

} // namespace

void add_matrix_command(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("matrix", i18n::trs("What the knowledge says: GPUs, framework releases, variants, drivers"));
  auto version = std::make_shared<std::string>();
  cmd->add_option("--version", *version, i18n::trs("A framework release (with --framework), e.g. 2.7.0"));
  cmd->footer(i18n::trs("Examples:\n"
                        "  envfix matrix --gpu \"RTX 5090\"               which releases run on it, minimum driver\n"
                        "  envfix matrix --gpu sm_61 --framework torch  newest torch that still runs on a GTX 1080\n"
                        "  envfix matrix --framework torch --version 2.7.0\n"
                        "Data: embedded, plus --matrices DIR / ENVFIX_MATRICES (matrices/README.md)."));
  cmd->callback([&app, &g, version] {
    auto k = api::matrix_knowledge(g.matrices_dir);
    if (!k) {
      g.exit_code = fail(k.error());
      return;
    }
    // --framework has a default (torch); only an explicit one narrows the GPU view.
    const auto* fw_opt = app.get_option_no_throw("--framework");
    bool framework_given = fw_opt && fw_opt->count() > 0;
    std::vector<const matrices::Framework*> fws;
    if (framework_given || !version->empty()) {
      auto f = api::framework_named(*k, g.framework);
      if (!f) {
        g.exit_code = fail(f.error());
        return;
      }
      fws.push_back(*f);
    } else {
      for (const auto& f : k->frameworks()) fws.push_back(&f);
    }
    if (!version->empty())
      g.exit_code = release_query(*k, g, *fws.front(), *version);
    else if (!g.gpus.empty())
      g.exit_code = gpu_query(*k, g, fws);
    else
      g.exit_code = overview(*k, g, fws);
  });
}

} // namespace envfix::cli
