// The host/knowledge/resolution pipeline shared by plan, apply and lock (see pipeline.hpp).
#include "cli/pipeline.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/render.hpp"
#include "specs/wheel_filename.hpp"

#include "probe/installed_kernels.hpp"
#include "resolver/index_provider.hpp"
#include "resolver/installed.hpp"
#include "resolver/knowledge_adapter.hpp"
#include "specs/name.hpp"
#include "util/env.hpp"
#include "util/parallel.hpp"

namespace envfix::cli {

namespace fs = std::filesystem;

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0, j; i <= s.size(); i = j + 1) {
    j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
  }
  return out;
}

std::string human_size(std::uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) { v /= 1024; ++u; }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string human_duration(double seconds) {
  return seconds < 1.0 ? fmt::format("{:.0f}ms", seconds * 1000) : fmt::format("{:.2f}s", seconds);
}

Expected<Host> make_host(const Globals& g, const matrices::Knowledge* k) {
  Host h;
  std::vector<std::string> gpu_specs = g.gpus;
  if (gpu_specs.empty())
    if (auto e = util::get_env("ENVFIX_GPU"); e && !e->empty()) gpu_specs = split_commas(*e);
  std::string driver = g.driver.empty() ? util::get_env("ENVFIX_DRIVER").value_or("") : g.driver;

  probe::ProbeOptions po;
  po.gpus = gpu_specs.empty() || driver.empty();
  po.survey_path = false;
  if (!g.python.empty()) po.python = fs::path(g.python);
  if (!g.cache_dir.empty()) po.cache_dir = g.cache_dir;
  else if (auto c = index::default_cache_dir()) po.cache_dir = *c;
  auto facts = probe::probe_host(po);
  if (!facts) return std::unexpected(std::move(facts.error()).context("could not probe the target interpreter"));
  if (!facts->python) return make_error(ErrorCode::not_found, "no target interpreter", "pass --python PATH");
  const auto& py = *facts->python;

  for (const auto& s : gpu_specs) {
    if (s == "none") continue; // a CPU-only planned host
    if (auto cc = specs::ComputeCapability::parse(s)) h.gpus.emplace_back("planned " + cc->sm_name(), *cc);
    else if (auto p = k ? k->gpu(s) : std::nullopt) h.gpus.emplace_back(p->name, p->cc);
    else
      return make_error(ErrorCode::invalid_input, fmt::format("--gpu '{}': not an arch (sm_120, 12.0) or a known GPU name", s),
                        "run `envfix matrix` to list known GPUs");
  }
  h.gpus_planned = !gpu_specs.empty();
  if (gpu_specs.empty())
    for (const auto& gi : facts->gpus) h.gpus.emplace_back(gi.name, gi.cc);
  if (!driver.empty()) h.driver = driver;
  else if (facts->driver) {
    h.driver = facts->driver->version;
    h.driver_cuda = facts->driver->cuda;
  }

  specs::TagEnvironment te = py.tag_env;
  specs::MarkerEnvironment markers = py.markers;
  std::string full = py.version.to_string();
  if (!g.python_version.empty()) {
    // "3.13t": a free-threaded interpreter (PEP 703), ABI tag cp313t, no abi3 (specs/tag.cpp).
    std::string pv = g.python_version;
    const bool threaded = pv.ends_with('t');
    if (threaded) pv.pop_back();
    auto v = specs::Version::parse(pv);
    if (!v || v->release().size() < 2)
      return make_error(ErrorCode::invalid_input, fmt::format("--python-version '{}': expected X.Y, X.Y.Z or X.Yt", g.python_version),
                        "a trailing t plans for a free-threaded interpreter: 3.13t");
    te.major = static_cast<int>(v->release()[0]);
    te.minor = static_cast<int>(v->release()[1]);
    if (threaded && (te.major < 3 || (te.major == 3 && te.minor < 13)))
      return make_error(ErrorCode::invalid_input, fmt::format("--python-version '{}': free-threaded builds exist from 3.13 on", g.python_version));
    te.abiflags = threaded ? "t" : "";
    full = v->release().size() >= 3 ? v->to_string() : fmt::format("{}.{}.0", te.major, te.minor);
    markers.values["python_version"] = fmt::format("{}.{}", te.major, te.minor);
    markers.values["python_full_version"] = full;
    markers.values["implementation_version"] = full;
  }
  if (!g.platform.empty()) {
    // manylinux_2_28_x86_64 → glibc 2.28 on x86_64; linux_aarch64 → aarch64.
    std::string p = g.platform;
    int a = 0, b = 0;
    char arch[64] = {0};
    if (std::sscanf(p.c_str(), "manylinux_%d_%d_%63s", &a, &b, arch) == 3) {
      te.glibc = std::make_pair(a, b);
      te.arch = arch;
    } else if (p.starts_with("linux_")) {
      te.arch = p.substr(6);
    } else {
      return make_error(ErrorCode::invalid_input, fmt::format("--platform '{}': expected manylinux_X_Y_ARCH or linux_ARCH", p));
    }
    markers.values["platform_machine"] = te.arch;
    h.platform_tag = p;
  }
  h.platform = "linux_" + te.arch;
  h.tag_env = te;
  h.python.tags = specs::supported_tags(te);
  h.python.markers = markers;
  h.python.python_full_version = *specs::Version::parse(full);
  const bool free_threaded = te.abiflags.find('t') != std::string::npos;
  h.python_mm = fmt::format("{}.{}{}", te.major, te.minor, free_threaded ? "t" : "");
  h.python_text = fmt::format("Python {}{} (cp{}{}{}{})", full, free_threaded ? " free-threaded" : "", te.major, te.minor,
                              free_threaded ? "t" : "",
                              te.glibc ? fmt::format(", glibc {}.{}", te.glibc->first, te.glibc->second) : "");
  for (const auto& d : facts->installed) {
    resolver::InstalledPackage ip{d.normalized_name(), d.version, d.requires_dist, ""};
    if (d.conda)
      ip.conda = d.conda->build.empty() ? fmt::format("{} {} (INSTALLER conda)", d.conda->name, d.conda->version)
                                        : fmt::format("{} {} {}", d.conda->name, d.conda->version, d.conda->build);
    h.installed_names.push_back(ip.name);
    h.installed.push_back(std::move(ip));
  }
  h.facts = std::move(*facts);
  return h;
}

Expected<std::unique_ptr<matrices::Knowledge>> load_knowledge(const Globals& g) {
  auto k = matrices::Knowledge::load_default(g.matrices_dir);
  if (k) return std::make_unique<matrices::Knowledge>(std::move(*k));
  // A broken override the user named is an error; a broken embedded set only disables framework mode.
  if (!g.matrices_dir.empty() || util::get_env("ENVFIX_MATRICES").value_or("") != "") return std::unexpected(k.error());
  return std::unique_ptr<matrices::Knowledge>{};
}

Expected<std::unique_ptr<index::IndexClient>> make_index_client(const Globals& g) {
  index::IndexClientOptions io;
  if (!g.cache_dir.empty()) io.cache_dir = g.cache_dir;
  io.offline = g.offline || util::get_env("ENVFIX_OFFLINE").value_or("") == "1";
  auto client = ENVFIX_TRY(index::IndexClient::create(io));
  return std::make_unique<index::IndexClient>(std::move(client));
}

wheel::EvidenceStore evidence_store(const index::IndexClient& client) {
  return wheel::EvidenceStore(client.cache_dir() / "evidence-v1");
}

std::string plain_index_url(const Globals& g) {
  return g.index_url.empty() ? util::get_env("ENVFIX_INDEX_URL").value_or("") : g.index_url;
}

namespace {

// Evidence beats tables: what binaries said about a build, before the matrices. The installed set's
// own framework binaries count (read once per file, kept by RECORD hash), then every build the
// kernel gate read before (wheel/kernel_evidence.hpp).
void attach_evidence(resolver::FrameworkSpec& spec, const Host& host, const index::IndexClient& client) {
  auto store = std::make_shared<wheel::EvidenceStore>(evidence_store(client));
  auto installed = std::make_shared<std::map<wheel::BuildKey, resolver::BuildFacts>>();
  if (!host.gpus.empty()) {
    auto family = resolver::framework_family(spec);
    for (const auto& d : host.facts.installed) {
      if (std::find(family.begin(), family.end(), d.normalized_name()) == family.end()) continue;
      auto ik = probe::read_installed_kernels(d, store.get(), util::default_threads());
      if (!ik || ik->files.empty()) continue;
      auto key = probe::installed_build_key(d);
      resolver::BuildFacts facts{std::move(ik->files), fmt::format("installed in {}", d.dist_info.parent_path().string())};
      (void)store->put_build({key, facts.source, facts.files});
      (*installed)[key] = std::move(facts);
    }
  }
  spec.evidence = [store, installed](const specs::WheelFilename& wf, std::string_view variant) -> std::optional<resolver::BuildFacts> {
    auto key = wheel::build_key(wf, variant);
    if (auto it = installed->find(key); it != installed->end()) return it->second;
    if (auto e = store->build(key)) return resolver::BuildFacts{std::move(e->files), std::move(e->source)};
    return std::nullopt;
  };
}

} // namespace

Expected<PlanContext> build_plan(const Globals& g, const std::vector<std::string>& requests, PlanFlags flags) {
  auto t0 = std::chrono::steady_clock::now();
  PlanContext ctx;
  ctx.knowledge = ENVFIX_TRY(load_knowledge(g));
  ctx.host = ENVFIX_TRY(make_host(g, ctx.knowledge.get()));
  const Host& host = ctx.host;

  for (const auto& r : requests) {
    auto req = specs::Requirement::parse(r);
    if (!req) return std::unexpected(std::move(req).error().context(fmt::format("request '{}'", r)));
    ctx.request.push_back(std::move(*req));
  }
  ctx.client = ENVFIX_TRY(make_index_client(g));
  auto& client = *ctx.client;

  std::string index_url = plain_index_url(g);
  resolver::Plan plan;
  if (!index_url.empty() || !g.find_links.empty()) {
    // A plain resolver over exactly one index (plus find-links folders).
    if (ctx.request.empty())
      return make_error(ErrorCode::invalid_input, "nothing to resolve", "name packages: envfix plan PKG... --index-url URL");
    resolver::IndexProvider provider(client, index_url, g.find_links);
    resolver::ResolveOptions ro;
    ro.target = host.python;
    ro.allow_unhashed = flags.allow_unhashed;
    if (flags.pre) ro.prereleases = resolver::PrereleasePolicy::allow;
    std::set<std::string> upgrade;
    for (const auto& q : ctx.request) upgrade.insert(q.normalized_name());
    resolver::PreferInstalledProvider preferring(provider, flags.prefer_installed ? host.installed : std::vector<resolver::InstalledPackage>{},
                                                 upgrade);
    resolver::Resolver r(preferring, ro);
    auto res = r.resolve(ctx.request);
    if (!res) {
      if (flags.rejected_out) *flags.rejected_out = r.rejected();
      return std::unexpected(res.error());
    }
    ctx.resolution = std::move(*res);
    resolver::PlanInputs in{&ctx.resolution, host.installed, {}, {"nvidia-"}};
    plan = resolver::make_plan(in);
    plan.index = provider.describe();
  } else {
    if (!ctx.knowledge) return make_error(ErrorCode::internal, "the matrices could not be loaded");
    const auto& knowledge = *ctx.knowledge;
    std::string mirror = g.mirror.empty() ? util::get_env("ENVFIX_MIRROR").value_or("") : g.mirror;
    ctx.spec = std::make_unique<resolver::FrameworkSpec>(
        ENVFIX_TRY(resolver::framework_spec_from(knowledge, g.framework, mirror, host.platform)));
    attach_evidence(*ctx.spec, host, client);
    // What the channels' aggregate indexes offer beyond the matrices (resolver/discovery.hpp).
    std::map<std::string, std::unique_ptr<resolver::IndexProvider>> aggregates;
    resolver::discover_indexes(*ctx.spec, resolver::discovery_sources(knowledge, g.framework, mirror),
                               resolver::variant_describer(knowledge, g.framework),
                               [&](const std::string& url) -> resolver::CandidateProvider& {
                                 auto& p = aggregates[url];
                                 if (!p) p = std::make_unique<resolver::IndexProvider>(client, url);
                                 return *p;
                               },
                               {g.variant});
    const auto& spec = *ctx.spec;
    resolver::HostTarget target;
    for (const auto& [name, cc] : host.gpus) target.gpus.push_back(cc);
    target.driver_version = host.driver;
    target.python = host.python;
    if (!host.driver.empty()) {
      const auto* kp = &knowledge;
      std::string drv = host.driver;
      target.driver_supports = [kp, drv](const specs::CudaVersion& c) { return kp->driver_supports(drv, c); };
      target.driver_native = [kp, drv](const specs::CudaVersion& c) { return kp->driver_supports(drv, c, false); };
    } else if (!host.gpus.empty()) {
      target.driver_supports = [](const specs::CudaVersion&) { return false; };
    }
    auto req = resolver::split_request(spec, ctx.request, host.installed_names);
    req.channel = g.channel;
    req.variant = g.variant;
    req.allow_cpu = g.allow_cpu;
    req.allow_unhashed = flags.allow_unhashed;
    req.rejected_out = flags.rejected_out;
    std::map<std::string, std::unique_ptr<resolver::IndexProvider>> providers;
    std::map<std::string, std::unique_ptr<resolver::PreferInstalledProvider>> preferring;
    std::set<std::string> upgrade;
    for (const auto& q : ctx.request) upgrade.insert(q.normalized_name());
    for (const auto& n : resolver::framework_family(spec)) upgrade.insert(n);
    auto choice = resolver::select_framework_set(spec, target, req, [&](const resolver::FrameworkIndex& i) -> resolver::CandidateProvider& {
      auto& p = providers[i.url];
      if (!p) p = std::make_unique<resolver::IndexProvider>(client, i.url);
      auto& pp = preferring[i.url];
      if (!pp)
        pp = std::make_unique<resolver::PreferInstalledProvider>(
            *p, flags.prefer_installed ? host.installed : std::vector<resolver::InstalledPackage>{}, upgrade);
      return *pp;
    });
    if (!choice) {
      // Every index answering 404 for the main package is a wrong URL (a --mirror without that
      // tree), not "no build fits": say so, naming the URLs.
      const auto main = specs::normalize_name(spec.main_package);
      std::vector<std::string> urls;
      bool all_missing = !providers.empty();
      for (const auto& [url, p] : providers) {
        auto it = p->missing_pages().find(main);
        if (it == p->missing_pages().end()) all_missing = false;
        else urls.push_back(it->second.message);
      }
      if (all_missing)
        return std::unexpected(Error{ErrorCode::not_found,
                                     fmt::format("no index holds {}: every index envfix tried answered HTTP 404", spec.main_package),
                                     urls, "check --mirror / ENVFIX_MIRROR (it replaces the base URL of every index template) "
                                           "or --index-url"});
      return std::unexpected(choice.error());
    }
    ctx.resolution = std::move(choice->resolution);
    resolver::PlanInputs in{&ctx.resolution, host.installed, resolver::framework_family(spec), {"nvidia-"}};
    plan = resolver::make_plan(in);
    plan.channel = choice->index.channel;
    plan.variant = choice->index.variant;
    plan.index = index::redact_url(choice->index.url);
    plan.why = choice->why;
    plan.warnings = choice->warnings;
    plan.rejected.insert(plan.rejected.begin(), choice->rejected.begin(), choice->rejected.end());
    ctx.framework_index = choice->index;
  }
  ctx.resolved = ctx.resolution.pins.size();
  ctx.plan = std::move(plan);
  ctx.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return ctx;
}

Expected<void> check_conda(const std::vector<resolver::InstalledPackage>& installed, resolver::Plan& plan, bool allow_conda_overwrite) {
  // conda's packages are left to conda (docs/json.md, plan).
  if (auto owned = resolver::conda_owned_changes(installed, plan); !owned.empty()) {
    if (!allow_conda_overwrite) {
      Error e{ErrorCode::invalid_input,
              fmt::format("the plan would remove or overwrite {} package{} conda owns: {}", owned.size(), owned.size() == 1 ? "" : "s",
                          owned.front()),
              owned,
              "change it the conda way (`conda install` the build you need, e.g. `conda install pytorch pytorch-cuda=12.4 -c "
              "pytorch -c nvidia`, or `conda remove` it first and run envfix again), or pass --allow-conda-overwrite to "
              "replace it anyway (conda-meta will then describe files that are gone); nothing was changed"};
      return std::unexpected(std::move(e));
    }
    for (const auto& o : owned) plan.warnings.push_back("--allow-conda-overwrite: replacing " + o);
  }
  return {};
}

Expected<std::vector<std::string>> check_installed(PlanContext& ctx, bool allow_breaking, bool allow_conda_overwrite) {
  ENVFIX_TRY_VOID(check_conda(ctx.host.installed, ctx.plan, allow_conda_overwrite));
  return check_breaking(ctx.host.installed, ctx.plan, ctx.host.python.markers, allow_breaking);
}

Expected<std::vector<std::string>> check_breaking(const std::vector<resolver::InstalledPackage>& installed, resolver::Plan& plan,
                                                  const specs::MarkerEnvironment& env, bool allow_breaking) {
  auto broken = resolver::check_environment(installed, plan, env);
  std::vector<std::string> lines;
  for (const auto& b : broken) lines.push_back(fmt::format("{} requires {}, but {}", b.package, b.requirement, b.problem));
  if (lines.empty()) return lines;
  if (!allow_breaking) {
    Error e{ErrorCode::unsatisfiable,
            fmt::format("the plan would break {} installed package{}: {}", lines.size(), lines.size() == 1 ? "" : "s", lines.front()),
            {}, "pin what the installed package needs (e.g. add its requirement to the request), use an index that holds "
                "it, or pass --allow-breaking to go ahead anyway; nothing was changed"};
    e.causes = lines;
    return std::unexpected(std::move(e));
  }
  for (const auto& l : lines) plan.warnings.push_back("--allow-breaking: " + l);
  return lines;
}

nlohmann::json plan_json(const resolver::Plan& p, const Host& h) {
  using nlohmann::json;
  json j;
  j["channel"] = p.channel;
  j["index"] = p.index;
  j["variant"] = p.variant;
  j["why"] = p.why;
  j["install"] = json::array();
  for (const auto& i : p.install) {
    json x{{"name", i.name}, {"version", i.version}, {"filename", i.filename}, {"url", index::redact_url(i.url)}};
    x["sha256"] = i.sha256 ? json(*i.sha256) : json(nullptr);
    x["size"] = i.size ? json(*i.size) : json(nullptr);
    x["replaces"] = i.replaces.empty() ? json(nullptr) : json(i.replaces);
    x["required_by"] = i.required_by;
    j["install"].push_back(x);
  }
  j["remove"] = json::array();
  for (const auto& r : p.remove)
    j["remove"].push_back({{"name", r.name}, {"version", r.version}, {"why", r.why},
                           {"conda", r.conda.empty() ? json(nullptr) : json(r.conda)}});
  j["keep"] = p.keep;
  j["rejected"] = json::array();
  for (const auto& r : p.rejected)
    j["rejected"].push_back({{"name", r.name}, {"version", r.version}, {"index", r.index}, {"reason", std::string(resolver::to_string(r.reason))},
                             {"detail", r.detail}, {"filename", r.filename}});
  j["warnings"] = p.warnings;
  j["download_size"] = p.download_size();
  std::size_t unknown = 0;
  for (const auto& i : p.install) unknown += i.size ? 0 : 1;
  j["download_size_unknown"] = unknown; // files of install[] whose size the index does not give
  json gpus = json::array();
  for (const auto& [name, cc] : h.gpus) gpus.push_back({{"name", name}, {"arch", cc.sm_name()}});
  j["host"] = {{"gpus", gpus}, {"driver", h.driver}, {"python", h.python.python_full_version.to_string()},
               {"interpreter", h.facts.python ? json(h.facts.python->executable.string()) : json(nullptr)},
               {"interpreter_from", h.facts.python_from}};
  return j;
}

std::string host_line(const Host& h) {
  std::string gpus;
  for (const auto& [name, cc] : h.gpus) gpus += (gpus.empty() ? "" : ", ") + fmt::format("{} ({})", name, cc.sm_name());
  return fmt::format("{} {}; driver {}; {}\n{}", styled("host:", Style::bold), gpus.empty() ? "no GPU" : gpus,
                     h.driver.empty() ? "none" : h.driver, h.python_text, interpreter_line(h));
}

std::string interpreter_line(const Host& h) {
  // The environment diffed against and changed: never implicit (a python3 on PATH may not be the one meant).
  if (!h.facts.python) return fmt::format("{} none", styled("interpreter:", Style::bold));
  return fmt::format("{} {} (from {})", styled("interpreter:", Style::bold), h.facts.python->executable.string(),
                     h.facts.python_from.empty() ? "?" : h.facts.python_from);
}

namespace {

// glibc a.b a manylinux platform tag needs (legacy aliases included); nullopt for other tags.
std::optional<std::pair<int, int>> manylinux_glibc(const std::string& tag, std::string* arch) {
  int a = 0, b = 0;
  char buf[64] = {0};
  if (std::sscanf(tag.c_str(), "manylinux_%d_%d_%63s", &a, &b, buf) == 3) {
    *arch = buf;
    return std::make_pair(a, b);
  }
  static const std::pair<const char*, std::pair<int, int>> legacy[] = {
      {"manylinux2014_", {2, 17}}, {"manylinux2010_", {2, 12}}, {"manylinux1_", {2, 5}}};
  for (const auto& [prefix, v] : legacy)
    if (tag.starts_with(prefix)) {
      *arch = tag.substr(std::string_view(prefix).size());
      return v;
    }
  return std::nullopt;
}

} // namespace

lockfile::LockedHost lock_host(const PlanContext& ctx) {
  lockfile::LockedHost lh;
  std::set<specs::ComputeCapability> ccs;
  for (const auto& [name, cc] : ctx.host.gpus) ccs.insert(cc);
  for (const auto& cc : ccs) lh.gpus.push_back(cc.sm_name());
  lh.python = ctx.host.python_mm;
  if (!ctx.host.platform_tag.empty()) {
    lh.platform = ctx.host.platform_tag;
  } else {
    // The most demanding manylinux tag any wheel of the set was picked for: every interpreter that
    // supports it can install the whole set.
    std::optional<std::pair<int, int>> need;
    for (const auto& pin : ctx.resolution.pins) {
      auto wf = specs::WheelFilename::parse(pin.file.filename);
      if (!wf) continue;
      std::optional<std::pair<int, int>> least; // the wheel's easiest tag
      for (const auto& t : wf->platform_tags) {
        std::string arch;
        if (auto v = manylinux_glibc(t, &arch); v && arch == ctx.host.tag_env.arch)
          if (!least || *v < *least) least = v;
      }
      if (least && (!need || *least > *need)) need = least;
    }
    lh.platform = need ? fmt::format("manylinux_{}_{}_{}", need->first, need->second, ctx.host.tag_env.arch)
                       : "linux_" + ctx.host.tag_env.arch;
  }
  if (ctx.knowledge && ctx.framework_index && ctx.framework_index->cuda && !ctx.host.gpus.empty())
    lh.driver_min = ctx.knowledge->min_driver(*ctx.framework_index->cuda).value_or("");
  return lh;
}

std::map<std::string, lockfile::LockedKernels> claimed_kernels(const PlanContext& ctx) {
  std::map<std::string, lockfile::LockedKernels> out;
  if (!ctx.spec || !ctx.knowledge || !ctx.framework_index) return out;
  // What a binary said beats the table: builds read before (by the kernel gate, or installed) are
  // recorded as verified.
  if (ctx.client) {
    auto store = evidence_store(*ctx.client);
    for (const auto& p : ctx.resolution.pins) {
      auto wf = specs::WheelFilename::parse(p.file.filename);
      if (!wf) continue;
      auto e = store.build(wheel::build_key(*wf, ctx.framework_index->variant));
      if (!e || e->files.empty()) continue;
      lockfile::LockedKernels k;
      for (const auto& a : wheel::archs_of(e->files)) (a.kind == specs::GpuArch::Kind::sass ? k.sass : k.ptx).push_back(a.to_string());
      k.verified = true;
      out[p.name] = std::move(k);
    }
  }
  const auto* pin = ctx.resolution.find(specs::normalize_name(ctx.spec->main_package));
  if (!pin || out.contains(pin->name)) return out;
  for (const auto& vb : ctx.knowledge->variants_for(ctx.spec->name, pin->version, ctx.host.platform)) {
    if (vb.variant != ctx.framework_index->variant || (!vb.sass && !vb.ptx)) continue;
    lockfile::LockedKernels k;
    std::set<specs::GpuArch> sass, ptx;
    if (vb.sass) sass.insert(vb.sass->begin(), vb.sass->end());
    if (vb.ptx) ptx.insert(vb.ptx->begin(), vb.ptx->end());
    for (const auto& a : sass) k.sass.push_back(a.to_string());
    for (const auto& a : ptx) k.ptx.push_back(a.to_string());
    k.verified = false;
    out[pin->name] = std::move(k);
  }
  return out;
}

Expected<lockfile::LockTarget> make_lock_target(const PlanContext& ctx,
                                                const std::map<std::string, lockfile::LockedKernels>& kernels,
                                                const std::map<std::string, LocalFile>& local) {
  lockfile::LockTarget t;
  t.host = lock_host(ctx);
  t.id = lockfile::make_target_id(t.host);
  t.channel = ctx.plan.channel;
  t.index = ctx.framework_index ? lockfile::strip_credentials(ctx.framework_index->url)
                                : lockfile::strip_credentials(ctx.plan.index);
  t.variant = ctx.plan.variant;
  for (const auto& pin : ctx.resolution.pins) {
    // Kept as installed, not on the index: no file to lock, so recorded with its provenance (docs/lockfile.md).
    if (resolver::is_installed_candidate(pin.file)) {
      std::string by;
      for (const auto& d : ctx.host.facts.installed)
        if (d.normalized_name() == pin.name) by = d.conda ? "conda" : d.installer;
      t.installed_only.push_back({pin.name, pin.version.to_string(),
                                  fmt::format("installed{}; not served by {}", by.empty() ? "" : " by " + by, t.index)});
      continue;
    }
    lockfile::LockedPackage p;
    p.name = pin.name;
    p.version = pin.version.to_string();
    p.filename = pin.file.filename;
    p.url = lockfile::strip_credentials(pin.file.url);
    auto lf = local.find(pin.name);
    if (pin.file.sha256) p.sha256 = *pin.file.sha256;
    else if (lf != local.end()) p.sha256 = lf->second.sha256;
    else
      return make_error(ErrorCode::invalid_input,
                        fmt::format("{}=={}: the index gives no sha256 for {}; a lockfile needs one", pin.name, p.version, p.filename),
                        "use an index that publishes hashes, or `envfix apply` (it hashes what it downloads)");
    if (pin.file.size) p.size = *pin.file.size;
    else if (lf != local.end() && lf->second.size > 0) p.size = lf->second.size;
    if (auto k = kernels.find(pin.name); k != kernels.end()) p.kernels = k->second;
    t.packages.push_back(std::move(p));
  }
  return t;
}

std::string created_by() { return "envfix " ENVFIX_VERSION; }

} // namespace envfix::cli
