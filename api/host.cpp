// The one host builder (see host.hpp).
#include "api/host.hpp"

#include <charconv>
#include <mutex>
#include <set>
#include <filesystem>

#include <fmt/format.h>

#include "index/url.hpp"
#include "probe/text.hpp"
#include "util/cache_trust.hpp"
#include "util/env.hpp"
#include "util/strings.hpp"

namespace envfix::api {

namespace fs = std::filesystem;

namespace {

// A Jetson (probe::TegraInfo): its integrated GPU from the device tree when neither NVML nor libcuda
// answered, and the CUDA its driver runs from the L4T release (matrices/data/jetson.yaml): on a
// Jetson the driver is part of L4T, so the desktop driver floors do not say it.
void apply_tegra(const matrices::Knowledge& k, probe::HostFacts& facts) {
  const auto& t = *facts.tegra;
  auto product = t.soc.empty() ? std::nullopt : k.gpu_for_soc(t.soc);
  if (facts.gpus.empty() && product) {
    probe::GpuInfo g;
    g.name = t.model.empty() ? product->name : t.model;
    g.cc = product->cc;
    facts.gpus.push_back(std::move(g));
    facts.notes.push_back(fmt::format("GPU from the device tree (nvidia,{}): {} (compute capability {}, integrated)", t.soc,
                                      product->name, product->cc.to_string()));
  }
  const auto* rel = t.l4t.empty() ? nullptr : k.l4t(t.l4t);
  if (!rel) return;
  if (!facts.driver)
    facts.driver = probe::DriverInfo{rel->driver, rel->cuda, "l4t"};
  else if (!facts.driver->cuda)
    facts.driver->cuda = rel->cuda;
}

// The interpreter part: --python-version and --platform laid over what the probe read.
Expected<void> plan_python(const Options& o, const probe::PythonInfo& py, Host& h) {
  specs::TagEnvironment te = py.tag_env;
  specs::MarkerEnvironment markers = py.markers;
  std::string full = py.version.to_string();
  if (!o.python_version.empty()) {
    // "3.13t": a free-threaded interpreter (PEP 703), ABI tag cp313t, no abi3 (specs/tag.cpp).
    std::string pv = o.python_version;
    const bool threaded = pv.ends_with('t');
    if (threaded) pv.pop_back();
    auto v = specs::Version::parse(pv);
    if (!v || v->release().size() < 2)
      return make_error(ErrorCode::invalid_input,
                        fmt::format("--python-version '{}': expected X.Y, X.Y.Z or X.Yt", o.python_version),
                        "a trailing t plans for a free-threaded interpreter: 3.13t");
    te.major = static_cast<int>(v->release()[0]);
    te.minor = static_cast<int>(v->release()[1]);
    if (threaded && (te.major < 3 || (te.major == 3 && te.minor < 13)))
      return make_error(ErrorCode::invalid_input,
                        fmt::format("--python-version '{}': free-threaded builds exist from 3.13 on", o.python_version));
    te.abiflags = threaded ? "t" : "";
    full = v->release().size() >= 3 ? v->to_string() : fmt::format("{}.{}.0", te.major, te.minor);
    markers.values["python_version"] = fmt::format("{}.{}", te.major, te.minor);
    markers.values["python_full_version"] = full;
    markers.values["implementation_version"] = full;
  }
  if (!o.platform.empty()) {
    // specs owns the platform tags: manylinux_X_Y_ARCH, manylinux2014_ARCH, musllinux_X_Y_ARCH, linux_ARCH.
    if (auto ok = specs::apply_platform_tag(te, o.platform); !ok)
      return std::unexpected(std::move(ok.error()).context(fmt::format("--platform '{}'", o.platform)));
    markers.values["platform_machine"] = te.arch;
    h.platform_tag = o.platform;
  }
  h.platform = "linux_" + te.arch;
  h.tag_env = te;
  h.python.tags = specs::supported_tags(te);
  h.python.markers = markers;
  h.python.python_full_version = *specs::Version::parse(full);
  const bool free_threaded = te.abiflags.find('t') != std::string::npos;
  h.python_mm = fmt::format("{}.{}{}", te.major, te.minor, free_threaded ? "t" : "");
  h.python_text =
      fmt::format("Python {}{} (cp{}{}{}{})", full, free_threaded ? " free-threaded" : "", te.major, te.minor,
                  free_threaded ? "t" : "", te.glibc ? fmt::format(", glibc {}.{}", te.glibc->first, te.glibc->second) : "");
  return {};
}

} // namespace

Expected<Host> make_host(const Options& o, const matrices::Knowledge* k, HostNeeds needs) {
  Host h;
  std::vector<std::string> gpu_specs = o.gpus;
  if (gpu_specs.empty())
    if (auto e = util::get_env(util::Env::gpu); e && !e->empty()) gpu_specs = util::split(*e, ',');
  std::string driver = o.driver.empty() ? util::get_env(util::Env::driver).value_or("") : o.driver;
  if (!driver.empty() && !matrices::is_driver_version(driver))
    return make_error(ErrorCode::invalid_input, fmt::format("--driver '{}': not a driver version", driver),
                      "write it as nvidia-smi does, e.g. 570.86.10");

  probe::ProbeOptions po;
  po.gpus = gpu_specs.empty() || driver.empty();
  po.survey_path = needs.survey_path;
  if (!o.python.empty()) po.python = fs::path(o.python);
  po.cache_dir = run_cache_dir(o);
  auto facts = probe::probe_host(po);
  if (!facts) return std::unexpected(std::move(facts.error()).context("could not probe the target interpreter"));
  if (!facts->python && needs.require_python)
    return make_error(ErrorCode::not_found, "no target interpreter", "pass --python PATH");

  if (!gpu_specs.empty()) {
    std::vector<probe::GpuInfo> planned;
    for (const auto& s : gpu_specs) {
      if (s == "none") continue; // a CPU-only planned host
      if (!k) {
        auto cc = specs::ComputeCapability::parse(s);
        if (!cc)
          return make_error(ErrorCode::invalid_input, fmt::format("--gpu '{}': not an arch (sm_120, 12.0)", s),
                            "GPU names need the matrices, which could not be loaded");
        planned.push_back({.index = static_cast<int>(planned.size()), .name = "planned " + cc->sm_name(), .cc = *cc});
        continue;
      }
      auto g = k->resolve_gpu(s);
      if (!g) return std::unexpected(std::move(g.error()).context(fmt::format("--gpu '{}'", s)));
      planned.push_back({.index = static_cast<int>(planned.size()), .name = g->name, .cc = g->cc});
    }
    facts->gpus = std::move(planned);
    facts->gpus_planned = true;
  }
  if (facts->tegra && k && gpu_specs.empty()) apply_tegra(*k, *facts);
  if (!driver.empty()) facts->driver = probe::DriverInfo{driver, std::nullopt, "planned"};
  h.gpus_planned = facts->gpus_planned;
  for (const auto& gi : facts->gpus) h.gpus.emplace_back(gi.name, gi.cc);
  if (facts->driver) {
    h.driver = facts->driver->version;
    h.driver_cuda = facts->driver->cuda; // the kernel gate's ZSTD rule takes only what libcuda said
    // A planned driver, or libcuda not there to ask: the matrices' driver floors say which CUDA it runs.
    if (!facts->driver->cuda && k) facts->driver->cuda = k->cuda_for_driver(facts->driver->version);
  }
  if (facts->python) ENVFIX_TRY_VOID(plan_python(o, *facts->python, h));
  for (const auto& d : facts->installed) {
    resolver::InstalledPackage ip{d.normalized_name(), d.version, d.requires_dist, "", d.dist_info};
    if (d.conda)
      ip.conda = d.conda->build.empty() ? fmt::format("{} {} (INSTALLER conda)", d.conda->name, d.conda->version)
                                        : fmt::format("{} {} {}", d.conda->name, d.conda->version, d.conda->build);
    h.installed_names.push_back(ip.name);
    h.installed.push_back(std::move(ip));
  }
  h.facts = std::move(*facts);
  return h;
}

Expected<std::unique_ptr<matrices::Knowledge>> load_knowledge(const Options& o, std::string* why) {
  auto k = matrices::Knowledge::load_default(o.matrices_dir);
  if (k) return std::make_unique<matrices::Knowledge>(std::move(*k));
  // A broken override the user named is an error; a broken embedded set only disables framework mode.
  if (!o.matrices_dir.empty() || util::get_env(util::Env::matrices).value_or("") != "") return std::unexpected(k.error());
  if (why) *why = k.error().message;
  return std::unique_ptr<matrices::Knowledge>{};
}

namespace {

// ENVFIX_PAGE_DEADLINE / ENVFIX_DOWNLOAD_DEADLINE: whole seconds, at least 1; unset keeps `fallback`.
Expected<std::chrono::milliseconds> deadline_from_env(util::Env var, std::chrono::milliseconds fallback) {
  const auto v = util::get_env(var);
  const auto name = util::env_name(var);
  if (!v || v->empty()) return fallback;
  unsigned long long s = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), s);
  if (ec != std::errc{} || end != v->data() + v->size() || s == 0 || s > 1'000'000'000ull)
    return make_error(ErrorCode::invalid_input, fmt::format("{}={:?} is not a number of seconds", name, *v),
                      fmt::format("set {} to a whole number of seconds, e.g. 600, or unset it", name));
  return std::chrono::milliseconds(s * 1000);
}

} // namespace

Expected<std::unique_ptr<index::IndexClient>> make_index_client(const Options& o) {
  index::IndexClientOptions io;
  if (!o.cache_dir.empty()) io.cache_dir = o.cache_dir;
  io.offline = o.offline || util::get_env(util::Env::offline).value_or("") == "1";
  io.http.page_deadline = ENVFIX_TRY(deadline_from_env(util::Env::page_deadline, io.http.page_deadline));
  io.http.download_deadline = ENVFIX_TRY(deadline_from_env(util::Env::download_deadline, io.http.download_deadline));
  io.index_urls = extra_index_urls(o);
  io.index_urls.insert(io.index_urls.end(), o.find_links.begin(), o.find_links.end());
  for (const auto& u : {plain_index_url(o), mirror_of(o)})
    if (!u.empty()) io.index_urls.push_back(u);
  auto client = ENVFIX_TRY(index::IndexClient::create(io));
  return std::make_unique<index::IndexClient>(std::move(client));
}

wheel::EvidenceStore evidence_store_at(const fs::path& cache) {
  // An older envfix's store is migrated once per cache and run (wheel/kernel_evidence.hpp), and said.
  static std::mutex mu;
  static std::set<fs::path> migrated;
  if (std::lock_guard lock(mu); migrated.insert(cache).second) {
    auto m = wheel::migrate_evidence_v1(cache);
    if (!m)
      util::cache_notice(m.error().message + " (kernel evidence of the older store not migrated)");
    else if (*m)
      util::cache_notice((*m)->to_string());
  }
  return wheel::EvidenceStore(cache / wheel::evidence_dir_name);
}

wheel::EvidenceStore evidence_store(const index::IndexClient& client) { return evidence_store_at(client.cache_dir()); }

fs::path run_cache_dir(const Options& o, bool create) {
  fs::path dir = o.cache_dir;
  if (dir.empty()) dir = index::default_cache_dir().value_or(fs::path{});
  if (dir.empty()) return {};
  return util::open_cache(dir, create).value_or(fs::path{});
}

std::string plain_index_url(const Options& o) {
  return o.index_url.empty() ? util::get_env(util::Env::index_url).value_or("") : o.index_url;
}

std::string mirror_of(const Options& o) { return o.mirror.empty() ? util::get_env(util::Env::mirror).value_or("") : o.mirror; }

std::vector<std::string> extra_index_urls(const Options& o) {
  if (!o.extra_index_urls.empty()) return o.extra_index_urls;
  std::vector<std::string> out;
  const std::string env = util::get_env(util::Env::extra_index_url).value_or("");
  for (auto u : probe::split_ws(env)) out.emplace_back(u);
  return out;
}

std::vector<std::string> index_args(const Options& o) {
  // The options as given: the variables they fall back to are inherited by the command run later.
  // Printed, so credentials become *** (index/url.hpp): the user puts theirs back, or uses ~/.netrc.
  std::vector<std::string> args;
  if (!o.mirror.empty()) args.insert(args.end(), {"--mirror", index::redact_url(o.mirror)});
  if (!o.index_url.empty()) args.insert(args.end(), {"--index-url", index::redact_url(o.index_url)});
  for (const auto& u : o.extra_index_urls) args.insert(args.end(), {"--extra-index-url", index::redact_url(u)});
  for (const auto& d : o.find_links) args.insert(args.end(), {"--find-links", d});
  return args;
}

} // namespace envfix::api
