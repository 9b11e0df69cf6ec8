// envfix plan [REQ...]: resolve and show the plan; changes nothing (design.md §3.2, §4).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>

#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "index/index_client.hpp"
#include "matrices/knowledge.hpp"
#include "probe/host_facts.hpp"
#include "resolver/framework_selector.hpp"
#include "resolver/index_provider.hpp"
#include "resolver/knowledge_adapter.hpp"
#include "resolver/plan.hpp"
#include "specs/name.hpp"
#include "util/env.hpp"

namespace envfix::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct PlanOptions {
  std::vector<std::string> requests;
  bool dry_run = false;
  bool explain = false;
  bool pre = false;
  bool allow_unhashed = false;
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0, j; i <= s.size(); i = j + 1) {
    j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    if (j > i) out.push_back(s.substr(i, j - i));
  }
  return out;
}

struct Host {
  std::vector<std::pair<std::string, specs::ComputeCapability>> gpus; // name, cc
  std::string driver;
  std::optional<specs::CudaVersion> driver_cuda;
  resolver::TargetEnvironment python;
  std::string python_text;  // "3.11.7 (cp311, manylinux_2_36_x86_64)"
  std::string platform = "linux_x86_64";
  std::vector<resolver::InstalledPackage> installed;
  std::vector<std::string> installed_names;
};

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
    if (auto cc = specs::ComputeCapability::parse(s)) h.gpus.emplace_back("planned " + cc->sm_name(), *cc);
    else if (auto p = k ? k->gpu(s) : std::nullopt) h.gpus.emplace_back(p->name, p->cc);
    else
      return make_error(ErrorCode::invalid_input, fmt::format("--gpu '{}': not an arch (sm_120, 12.0) or a known GPU name", s),
                        "run `envfix matrix` to list known GPUs");
  }
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
    auto v = specs::Version::parse(g.python_version);
    if (!v || v->release().size() < 2)
      return make_error(ErrorCode::invalid_input, fmt::format("--python-version '{}': expected X.Y or X.Y.Z", g.python_version));
    te.major = static_cast<int>(v->release()[0]);
    te.minor = static_cast<int>(v->release()[1]);
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
  }
  h.platform = "linux_" + te.arch;
  h.python.tags = specs::supported_tags(te);
  h.python.markers = markers;
  h.python.python_full_version = *specs::Version::parse(full);
  h.python_text = fmt::format("Python {} (cp{}{}{})", full, te.major, te.minor,
                              te.glibc ? fmt::format(", glibc {}.{}", te.glibc->first, te.glibc->second) : "");
  for (const auto& d : facts->installed) {
    resolver::InstalledPackage ip{d.normalized_name(), d.version, d.requires_dist};
    h.installed_names.push_back(ip.name);
    h.installed.push_back(std::move(ip));
  }
  return h;
}

std::string human_size(std::uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) { v /= 1024; ++u; }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.1f} {}", v, units[u]);
}

json plan_json(const resolver::Plan& p, const Host& h) {
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
    j["install"].push_back(x);
  }
  j["remove"] = json::array();
  for (const auto& r : p.remove) j["remove"].push_back({{"name", r.name}, {"version", r.version}, {"why", r.why}});
  j["keep"] = p.keep;
  j["rejected"] = json::array();
  for (const auto& r : p.rejected)
    j["rejected"].push_back({{"name", r.name}, {"version", r.version}, {"index", r.index}, {"reason", std::string(resolver::to_string(r.reason))},
                             {"detail", r.detail}, {"filename", r.filename}});
  j["warnings"] = p.warnings;
  j["download_size"] = p.download_size();
  json gpus = json::array();
  for (const auto& [name, cc] : h.gpus) gpus.push_back({{"name", name}, {"arch", cc.sm_name()}});
  j["host"] = {{"gpus", gpus}, {"driver", h.driver}, {"python", h.python.python_full_version.to_string()}};
  return j;
}

void render_text(const resolver::Plan& p, const Host& h, const PlanOptions& o, double seconds, std::size_t resolved) {
  std::string gpus;
  for (const auto& [name, cc] : h.gpus) gpus += (gpus.empty() ? "" : ", ") + fmt::format("{} ({})", name, cc.sm_name());
  human(fmt::format("{} {}; driver {}; {}", styled("host:", Style::bold), gpus.empty() ? "no GPU" : gpus,
                    h.driver.empty() ? "none" : h.driver, h.python_text));
  if (!p.channel.empty()) human(fmt::format("{} {} ({})", styled("chose:", Style::bold), p.why, p.index));
  else human(fmt::format("{} {}", styled("index:", Style::bold), p.index));
  for (const auto& w : p.warnings) warn(w);
  human(styled(fmt::format("Resolved {} packages in {:.0f}ms", resolved, seconds * 1000), Style::dim));
  for (const auto& r : p.remove) human(fmt::format(" {} {}=={}{}", styled("-", Style::red), r.name, r.version,
                                                   r.why == "replaced" ? "" : styled(" (" + r.why + ")", Style::dim)));
  for (const auto& i : p.install) human(fmt::format(" {} {}=={}", styled("+", Style::green), i.name, i.version));
  if (p.empty()) human("Nothing to do: the environment already matches the plan.");
  else human(fmt::format("Would download {} ({} files). Nothing was changed{}.", human_size(p.download_size()), p.install.size(),
                         o.dry_run ? " (--dry-run)" : " (plan only; `envfix apply` executes it)"));
  if (o.explain) {
    human(styled(fmt::format("rejected ({}):", p.rejected.size()), Style::bold));
    for (const auto& r : p.rejected)
      human(fmt::format("  {} {} [{}] {}{}", r.name, r.version.empty() ? "(index)" : r.version, resolver::to_string(r.reason),
                        r.detail, r.index.empty() ? "" : styled(" — " + r.index, Style::dim)));
  }
}

Expected<int> run_plan(const Globals& g, const PlanOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  std::optional<matrices::Knowledge> knowledge;
  if (auto k = matrices::Knowledge::load_default(g.matrices_dir)) knowledge = std::move(*k);
  else if (!g.matrices_dir.empty()) return std::unexpected(k.error());
  Host host = ENVFIX_TRY(make_host(g, knowledge ? &*knowledge : nullptr));

  std::vector<specs::Requirement> request;
  for (const auto& r : o.requests) {
    auto req = specs::Requirement::parse(r);
    if (!req) return std::unexpected(std::move(req).error().context(fmt::format("request '{}'", r)));
    request.push_back(std::move(*req));
  }
  index::IndexClientOptions io;
  if (!g.cache_dir.empty()) io.cache_dir = g.cache_dir;
  io.offline = g.offline || util::get_env("ENVFIX_OFFLINE").value_or("") == "1";
  auto client = ENVFIX_TRY(index::IndexClient::create(io));

  std::string index_url = g.index_url.empty() ? util::get_env("ENVFIX_INDEX_URL").value_or("") : g.index_url;
  resolver::Plan plan;
  std::size_t resolved = 0;
  if (!index_url.empty() || !g.find_links.empty()) {
    // A plain resolver over exactly one index (plus find-links folders).
    if (request.empty()) return make_error(ErrorCode::invalid_input, "nothing to resolve", "name packages: envfix plan PKG... --index-url URL");
    resolver::IndexProvider provider(client, index_url, g.find_links);
    resolver::ResolveOptions ro;
    ro.target = host.python;
    ro.allow_unhashed = o.allow_unhashed;
    if (o.pre) ro.prereleases = resolver::PrereleasePolicy::allow;
    resolver::Resolver r(provider, ro);
    auto res = r.resolve(request);
    if (!res) return std::unexpected(res.error());
    resolved = res->pins.size();
    resolver::PlanInputs in{&*res, host.installed, {}, {"nvidia-"}};
    plan = resolver::make_plan(in);
    plan.index = provider.describe();
  } else {
    if (!knowledge) return make_error(ErrorCode::internal, "the matrices could not be loaded");
    std::string mirror = g.mirror.empty() ? util::get_env("ENVFIX_MIRROR").value_or("") : g.mirror;
    auto spec = ENVFIX_TRY(resolver::framework_spec_from(*knowledge, g.framework, mirror, host.platform));
    resolver::HostTarget target;
    for (const auto& [name, cc] : host.gpus) target.gpus.push_back(cc);
    target.driver_version = host.driver;
    target.python = host.python;
    if (!host.driver.empty()) {
      const auto* kp = &*knowledge;
      std::string drv = host.driver;
      target.driver_supports = [kp, drv](const specs::CudaVersion& c) { return kp->driver_supports(drv, c); };
    } else if (!host.gpus.empty()) {
      target.driver_supports = [](const specs::CudaVersion&) { return false; };
    }
    auto req = resolver::split_request(spec, request, host.installed_names);
    req.channel = g.channel;
    req.variant = g.variant;
    req.allow_cpu = g.allow_cpu;
    req.allow_unhashed = o.allow_unhashed;
    std::map<std::string, std::unique_ptr<resolver::IndexProvider>> providers;
    auto choice = resolver::select_framework_set(spec, target, req, [&](const resolver::FrameworkIndex& i) -> resolver::CandidateProvider& {
      auto& p = providers[i.url];
      if (!p) p = std::make_unique<resolver::IndexProvider>(client, i.url);
      return *p;
    });
    if (!choice) return std::unexpected(choice.error());
    resolved = choice->resolution.pins.size();
    resolver::PlanInputs in{&choice->resolution, host.installed, resolver::framework_family(spec), {"nvidia-"}};
    plan = resolver::make_plan(in);
    plan.channel = choice->index.channel;
    plan.variant = choice->index.variant;
    plan.index = index::redact_url(choice->index.url);
    plan.why = choice->why;
    plan.warnings = choice->warnings;
    plan.rejected.insert(plan.rejected.begin(), choice->rejected.begin(), choice->rejected.end());
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (g.format == "json") machine(plan_json(plan, host).dump(2));
  else render_text(plan, host, o, secs, resolved);
  return 0;
}

} // namespace

void add_plan_command(CLI::App& app, Globals& g) {
  auto opts = std::make_shared<PlanOptions>();
  auto* cmd = app.add_subcommand("plan", "Resolve and show the plan; changes nothing");
  cmd->add_option("requirements", opts->requests, "Requirements (default: the framework packages installed)");
  cmd->add_flag("--dry-run", opts->dry_run, "Accepted for symmetry with apply; plan never changes anything");
  cmd->add_flag("--explain", opts->explain, "List every rejected candidate with its reason code");
  cmd->add_flag("--pre", opts->pre, "Allow pre-releases for every package");
  cmd->add_flag("--allow-unhashed", opts->allow_unhashed, "Accept files whose index gives no sha256");
  cmd->callback([&g, opts] {
    auto rc = run_plan(g, *opts);
    if (!rc) {
      print_error(rc.error());
      g.exit_code = exit_code_for(rc.error());
      return;
    }
    g.exit_code = *rc;
  });
}

} // namespace envfix::cli
