// The one host builder (see host.hpp).
#include "api/host.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "index/url.hpp"
#include "project/settings.hpp"
#include "resolver/installed.hpp"
#include "resolver/knowledge_adapter.hpp"
#include "resolver/planned_python.hpp"
#include "probe/text.hpp"
#include "specs/cuda_version.hpp"
#include "util/cache_trust.hpp"
#include "util/env.hpp"
#include "util/strings.hpp"

namespace envfix::api {

namespace fs = std::filesystem;

Expected<std::optional<std::vector<probe::GpuInfo>>> planned_gpus(const Options& o, const matrices::Knowledge* k) {
  std::vector<std::string> queries = o.gpus;
  if (queries.empty())
    if (auto e = util::get_env(util::Env::gpu); e && !e->empty()) queries = util::split(*e, ',');
  if (queries.empty()) return std::nullopt;
  std::vector<probe::GpuInfo> planned;
  for (const auto& s : queries) {
    if (s == "none") continue; // a CPU-only planned host
    if (!k) {
      auto cc = specs::ComputeCapability::parse(s);
      if (!cc)
        return make_error(ErrorCode::invalid_input, util::msg("--gpu '{}': not an arch (sm_120, 12.0)", s),
                          util::msg("GPU names need the matrices, which could not be loaded"));
      planned.push_back({.index = static_cast<int>(planned.size()), .name = "planned " + cc->sm_name(), .cc = *cc});
      continue;
    }
    auto g = k->resolve_gpu(s);
    if (!g) return std::unexpected(std::move(g.error()).context(util::msg("--gpu '{}'", s)));
    planned.push_back({.index = static_cast<int>(planned.size()), .name = g->name, .cc = g->cc});
  }
  return planned;
}

Expected<Host> make_host(const Options& o, const matrices::Knowledge* k, HostNeeds needs) {
  Host h;
  auto planned = ENVFIX_TRY(planned_gpus(o, k));
  std::string driver = o.driver.empty() ? util::get_env(util::Env::driver).value_or("") : o.driver;
  if (!driver.empty()) ENVFIX_TRY_VOID(matrices::check_driver_text(driver, k));

  probe::ProbeOptions po;
  po.gpus = !planned || driver.empty();
  po.survey_path = needs.survey_path;
  if (!o.python.empty()) po.python = fs::path(o.python);
  po.cache_dir = run_cache_dir(o);
  auto facts = probe::probe_host(po);
  if (!facts) return std::unexpected(std::move(facts.error()).context(util::msg("could not probe the target interpreter")));
  if (!facts->python && needs.require_python)
    return make_error(ErrorCode::not_found, util::msg("no target interpreter"), util::msg("pass --python PATH"));

  const bool gpus_given = planned.has_value();
  if (planned) {
    facts->gpus = std::move(*planned);
    facts->gpus_planned = true;
  }
  if (k && !gpus_given) resolver::complete_tegra(*k, *facts);
  if (!driver.empty()) facts->driver = probe::DriverInfo{driver, std::nullopt, "planned"};
  h.gpus_planned = facts->gpus_planned;
  for (const auto& gi : facts->gpus) h.gpus.emplace_back(gi.name, gi.cc);
  if (facts->driver) {
    h.driver = facts->driver->version;
    h.driver_cuda = facts->driver->cuda; // the kernel gate's ZSTD rule takes only what libcuda said
    // A planned driver, or libcuda not there to ask: the matrices' driver floors say which CUDA it runs.
    if (!facts->driver->cuda && k) facts->driver->cuda = k->cuda_for_driver(facts->driver->version);
  }
  if (facts->python) {
    auto py = ENVFIX_TRY(resolver::planned_python(*facts->python, o.python_version, o.platform));
    h.python = std::move(py.target);
    h.tag_env = std::move(py.tag_env);
    h.python_mm = std::move(py.mm);
    h.python_text = std::move(py.text);
    h.platform = std::move(py.platform);
    h.platform_tag = o.platform;
  }
  h.installed = resolver::installed_packages(facts->installed);
  for (const auto& p : h.installed) h.installed_names.push_back(p.name);
  h.facts = std::move(*facts);
  return h;
}

Expected<std::unique_ptr<matrices::Knowledge>> load_knowledge(const Options& o, util::Message* why) {
  auto k = matrices::Knowledge::load_default(o.matrices_dir);
  if (k) return std::make_unique<matrices::Knowledge>(std::move(*k));
  // A broken override the user named is an error; a broken embedded set only disables framework mode.
  if (!o.matrices_dir.empty() || util::get_env(util::Env::matrices).value_or("") != "") return std::unexpected(k.error());
  if (why) *why = k.error().said_message();
  return std::unique_ptr<matrices::Knowledge>{};
}

Expected<std::unique_ptr<index::IndexClient>> make_index_client(const Options& o) {
  index::IndexClientOptions io;
  if (!o.cache_dir.empty()) io.cache_dir = o.cache_dir;
  io.offline = o.offline || util::get_env(util::Env::offline).value_or("") == "1";
  if (o.http_retries) io.http.retries = *o.http_retries;
  // ENVFIX_PAGE_DEADLINE / ENVFIX_DOWNLOAD_DEADLINE, when set.
  if (auto d = ENVFIX_TRY(util::seconds_from_env(util::Env::page_deadline))) io.http.page_deadline = *d;
  if (auto d = ENVFIX_TRY(util::seconds_from_env(util::Env::download_deadline))) io.http.download_deadline = *d;
  io.index_urls = extra_index_urls(o);
  io.index_urls.insert(io.index_urls.end(), o.find_links.begin(), o.find_links.end());
  io.index_urls.insert(io.index_urls.end(), o.tool_extra_indexes.begin(), o.tool_extra_indexes.end());
  for (const auto& u : {plain_index_url(o), mirror_of(o), o.tool_index})
    if (!u.empty()) io.index_urls.push_back(u);
  auto client = ENVFIX_TRY(index::IndexClient::create(io));
  return std::make_unique<index::IndexClient>(std::move(client));
}

wheel::EvidenceStore evidence_store_at(const fs::path& cache) { return wheel::open_evidence_store(cache); }

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

namespace {

void fill(std::string& field, util::Env env, const std::optional<project::Setting>& s) {
  if (field.empty() && util::get_env(env).value_or("").empty() && s) field = s->value;
}

} // namespace

Expected<void> configure(Options& o) {
  const auto at = project::Places::from_environment(o.no_config);
  const auto mine = ENVFIX_TRY(project::read_envfix_config(at));
  fill(o.index_url, util::Env::index_url, mine.index_url);
  fill(o.mirror, util::Env::mirror, mine.mirror);
  fill(o.cache_dir, util::Env::cache_dir, mine.cache_dir);
  if (o.channel == "auto" && mine.channel) o.channel = mine.channel->value;
  if (o.variant.empty() && mine.variant) o.variant = mine.variant->value;
  if (o.extra_index_urls.empty() && util::get_env(util::Env::extra_index_url).value_or("").empty())
    for (const auto& u : mine.extra_index_urls) o.extra_index_urls.push_back(u.value);
  if (o.find_links.empty())
    for (const auto& d : mine.find_links) o.find_links.push_back(d.value);
  o.config_files = mine.files;
  const auto tool = ENVFIX_TRY(project::read_tool_indexes(at));
  if (tool.index) {
    o.tool_index = tool.index->value;
    o.tool_index_from = tool.index->from;
  }
  for (const auto& u : tool.extra) o.tool_extra_indexes.push_back(u.value);
  return {};
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
