// probe → resolve → diff (see plan.hpp).
#include "api/plan.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>

#include "api/doctor.hpp"
#include "diagnosis/diagnose.hpp"
#include "resolver/evidence.hpp"
#include "resolver/framework_plan.hpp"
#include "resolver/frameworks.hpp"
#include "index/url.hpp"
#include "project/requirements_file.hpp"
#include "probe/installed_kernels.hpp"
#include "resolver/index_provider.hpp"
#include "resolver/installed.hpp"
#include "resolver/knowledge_adapter.hpp"
#include "resolver/user_limits.hpp"
#include "specs/name.hpp"
#include "specs/wheel_filename.hpp"
#include "util/parallel.hpp"
#include "util/strings.hpp"

namespace envfix::api {

namespace {

// The framework's own packages (main package, companions, every variant's set: resolver/frameworks.hpp):
// with extra indexes, these come only from the framework's index (README.md, Index options).
resolver::FirstIndexProvider::Pinned own_packages(const matrices::Framework* fw) {
  if (!fw) return {};
  return [fw](const std::string& n) { return !resolver::package_role(*fw, n).empty(); };
}

// --extra-index-url: searched after the first index for the projects it lacks
// (resolver::FirstIndexProvider).
struct ExtraIndexes {
  std::vector<std::unique_ptr<resolver::IndexProvider>> providers;
  [[nodiscard]] std::unique_ptr<resolver::FirstIndexProvider> after(resolver::CandidateProvider& first,
                                                                    resolver::FirstIndexProvider::Pinned pinned) const {
    std::vector<resolver::CandidateProvider*> all{&first};
    for (const auto& e : providers) all.push_back(e.get());
    return std::make_unique<resolver::FirstIndexProvider>(std::move(all), std::move(pinned));
  }
};

// The names upgraded to the newest allowed version whatever is installed: the requested ones with
// --upgrade; without it an installed version that satisfies the request stays, as with pip and uv.
std::set<std::string> upgraded_names(const PlanRequest& flags, const std::vector<specs::Requirement>& request) {
  std::set<std::string> out;
  if (flags.upgrade)
    for (const auto& q : request) out.insert(q.normalized_name());
  return out;
}

std::vector<resolver::InstalledPackage> preferred(const PlanRequest& flags, const Host& host) {
  return flags.prefer_installed ? host.installed : std::vector<resolver::InstalledPackage>{};
}

// The names taken from the index even at their installed version: every one with --reinstall, and
// those whose installed binaries were read (`read`).
std::set<std::string> from_index(const PlanRequest& flags, const Host& host, std::set<std::string> read = {}) {
  if (flags.reinstall)
    for (const auto& p : host.installed) read.insert(p.name);
  return read;
}

// The wheel files of the request that replace another build installed at their version.
std::set<std::string> direct_replacements(const PlanContext& ctx) {
  if (ctx.direct.empty()) return {};
  auto& client = *ctx.client;
  return resolver::direct_replacements(ctx.direct, ctx.host.facts.installed,
                                       [&client](const index::Candidate& c) { return client.fetch_record(c); });
}

// A plain resolver over exactly one index (plus find-links folders and extra indexes), pip-like: no
// host checks.
Expected<resolver::Plan> plan_plain(const Options& g, const PlanRequest& flags, PlanContext& ctx, const std::string& index_url,
                                    const ExtraIndexes& extras, std::vector<resolver::Rejection>* rejected_out) {
  if (ctx.request.empty())
    return make_error(ErrorCode::invalid_input, util::msg("nothing to resolve"),
                      util::msg("name packages: envfix plan PKG... --index-url URL"));
  const Host& host = ctx.host;
  resolver::IndexProvider primary(*ctx.client, index_url, g.find_links);
  std::unique_ptr<resolver::FirstIndexProvider> chained;
  if (!extras.providers.empty()) chained = extras.after(primary, {});
  resolver::CandidateProvider& provider = chained ? static_cast<resolver::CandidateProvider&>(*chained) : primary;
  resolver::ResolveOptions ro;
  ro.target = host.python;
  ro.allow_unhashed = flags.allow_unhashed;
  if (flags.pre) ro.prereleases = resolver::PrereleasePolicy::allow;
  resolver::PreferInstalledProvider preferring(provider, preferred(flags, host), upgraded_names(flags, ctx.request),
                                               from_index(flags, host));
  resolver::IndexProvider reader(*ctx.client, "", {});
  resolver::DirectFileProvider direct(preferring, reader, ctx.direct);
  ro.filter = resolver::limits_filter(ctx.limits);
  resolver::Resolver r(ctx.direct.empty() ? static_cast<resolver::CandidateProvider&>(preferring) : direct, ro);
  auto res = r.resolve(ctx.request);
  if (!res) {
    if (rejected_out) *rejected_out = r.rejected();
    return std::unexpected(res.error());
  }
  ctx.resolution = std::move(*res);
  const auto replaced = direct_replacements(ctx);
  resolver::PlanInputs in{
      &ctx.resolution, host.installed,  {},
      {"nvidia-"},     flags.reinstall, [&replaced](const resolver::Pin& p) { return replaced.contains(p.name); }};
  auto plan = resolver::make_plan(in);
  plan.index = primary.describe();
  return plan;
}

// A request that misses a covering build only by a companion its index lacks: the request without
// it, resolved here before it is offered (issue 56, item 1: a printed fix is proven to resolve).
void offer_without_companion(Error& e, const resolver::CompanionGap& gap, const resolver::FrameworkRequest& nearest,
                             const resolver::HostTarget& target, const Options& g, const PlanContext& ctx,
                             const resolver::ProviderFor& provider_for, NearestFix* out) {
  auto proven = resolver::select_framework_set(*ctx.spec, target, nearest, provider_for);
  if (!proven) return;
  const auto* pin = proven->resolution.find(gap.main);
  const bool managed = ctx.host.facts.python && ctx.host.facts.python->externally_managed;
  auto offer =
      diagnosis::companion_gap_offer(gap, nearest, ctx.spec->name, pin ? pin->version.to_string() : gap.version.to_string(),
                                     diagnose_options(g, {}).fix, managed, e.said_hint());
  if (out) *out = {std::move(offer.command), std::move(offer.why)};
  e.advise(std::move(offer.hint));
}

// The framework's way: the matrices' indexes (or --index-url as the framework's), evidence first, the
// selector choosing the set for the host's GPUs and driver.

Expected<resolver::Plan> plan_framework(const Options& g, const PlanRequest& flags, PlanContext& ctx,
                                        const std::string& index_url, const ExtraIndexes& extras,
                                        const resolver::FrameworkTargets& fws, std::vector<resolver::Rejection>* rejected_out) {
  if (!ctx.knowledge) return make_error(ErrorCode::internal, util::msg("the matrices could not be loaded"));
  const auto& knowledge = *ctx.knowledge;
  const Host& host = ctx.host;
  auto& client = *ctx.client;
  const std::string& framework = fws.names.front();
  const auto* fw = knowledge.framework(framework);
  const std::string mirror = mirror_of(g);
  ctx.spec = std::make_unique<resolver::FrameworkSpec>(
      ENVFIX_TRY(resolver::framework_spec_from(knowledge, framework, mirror, host.platform)));
  auto store = std::make_shared<wheel::EvidenceStore>(evidence_store(client));
  std::vector<specs::ComputeCapability> gpus;
  for (const auto& [name, cc] : host.gpus) gpus.push_back(cc);
  const auto builds =
      resolver::attach_evidence(*ctx.spec, host.facts.installed, gpus, store, ctx.request, util::default_threads(),
                                [&client](const index::Candidate& c) { return client.fetch_record(c); });
  const auto read = from_index(flags, host, builds.read);
  std::map<std::string, std::unique_ptr<resolver::IndexProvider>> providers;
  auto base_provider = [&](const std::string& url) -> resolver::IndexProvider& {
    auto& p = providers[url];
    if (!p) p = std::make_unique<resolver::IndexProvider>(client, url, g.find_links);
    return *p;
  };
  if (!index_url.empty() && fw) {
    // --index-url is the framework's index, for the channel and variant it serves.
    ctx.spec->indexes = ENVFIX_TRY(
        resolver::indexes_for_url(*ctx.spec, *fw, knowledge, {g.channel, g.variant}, index_url, base_provider(index_url)));
  } else {
    // What the channels' aggregate indexes offer beyond the matrices (resolver/discovery.hpp).
    std::map<std::string, std::unique_ptr<resolver::IndexProvider>> aggregates;
    resolver::discover_indexes(*ctx.spec, resolver::discovery_sources(knowledge, framework, mirror),
                               resolver::variant_describer(knowledge, framework),
                               [&](const std::string& url) -> resolver::CandidateProvider& {
                                 auto& p = aggregates[url];
                                 if (!p) p = std::make_unique<resolver::IndexProvider>(client, url);
                                 return *p;
                               },
                               {g.variant});
    resolver::add_jetpack_index(*ctx.spec, knowledge, framework, host.facts);
  }
  const auto& spec = *ctx.spec;
  auto req = resolver::split_request(spec, ctx.request, host.installed_names);
  req.channel = g.channel;
  req.variant = g.variant.empty() && fw ? resolver::direct_variant(*fw, ctx.direct) : g.variant;
  req.allow_cpu = g.allow_cpu;
  req.allow_unhashed = flags.allow_unhashed;
  req.user_filter = resolver::limits_filter(ctx.limits);
  req.rejected_out = rejected_out;
  std::map<std::string, std::unique_ptr<resolver::FirstIndexProvider>> chained;
  std::map<std::string, std::unique_ptr<resolver::PreferInstalledProvider>> preferring;
  std::map<std::string, std::unique_ptr<resolver::DirectFileProvider>> direct;
  resolver::IndexProvider reader(client, "", {});
  auto upgrade = upgraded_names(flags, ctx.request);
  for (auto& n : resolver::whole_set(spec)) upgrade.insert(std::move(n));
  std::optional<resolver::CompanionGap> gap;
  req.gap_out = &gap;
  const auto target = resolver::host_target(host.facts, host.python, knowledge);
  const resolver::ProviderFor provider_for = [&](const resolver::FrameworkIndex& i) -> resolver::CandidateProvider& {
    resolver::CandidateProvider* p = &base_provider(i.url);
    if (!extras.providers.empty()) {
      // The framework's own packages only from its index; other projects from the
      // first that has them.
      auto& c = chained[i.url];
      if (!c) c = extras.after(*p, own_packages(fw));
      p = c.get();
    }
    auto& pp = preferring[i.url];
    if (!pp) pp = std::make_unique<resolver::PreferInstalledProvider>(*p, preferred(flags, host), upgrade, read);
    if (ctx.direct.empty()) return *pp;
    auto& d = direct[i.url];
    if (!d) d = std::make_unique<resolver::DirectFileProvider>(*pp, reader, ctx.direct);
    return *d;
  };
  auto choice = resolver::select_framework_set(spec, target, req, provider_for);
  if (!choice) {
    auto e = resolver::selection_error(std::move(choice).error(), spec, providers);
    if (gap)
      offer_without_companion(e, *gap, resolver::without_companion(spec, req, *gap), target, g, ctx, provider_for,
                              flags.nearest_out);
    return std::unexpected(std::move(e));
  }
  const auto replaced = direct_replacements(ctx);
  auto plan = resolver::framework_plan({&*choice, &spec, host.installed, fws.note, flags.reinstall, !host.gpus.empty(),
                                        [&](const resolver::Pin& p) { return builds.replaces(p) || replaced.contains(p.name); }});
  resolver::name_direct_choice(plan, spec.main_package, ctx.direct);
  ctx.resolution = std::move(choice->resolution);
  ctx.framework_index = choice->index;
  return plan;
}

// The request's -r and -c files read: their requirements join the request, their index options count
// where the options name none (the command line and the ENVFIX_* variables come first), and
// --no-index in a file drops pip's and uv's configured index.
struct FileRequest {
  Options options;
  PlanRequest flags;
  project::FileInput input;
  std::vector<std::string> texts; // the files' requirements
};

Expected<FileRequest> read_request_files(const Options& g, const PlanRequest& flags) {
  FileRequest out{g, flags, ENVFIX_TRY(project::read_request_files(flags.files, !flags.requirements.empty())), {}};
  const auto& in = out.input;
  for (const auto& r : in.requirements) out.texts.push_back(r.text);
  out.flags.requirements.insert(out.flags.requirements.end(), out.texts.begin(), out.texts.end());
  out.flags.pre = flags.pre || in.pre;
  auto& o = out.options;
  if (plain_index_url(o).empty() && !in.index_url.empty()) o.index_url = in.index_url;
  if (extra_index_urls(o).empty()) o.extra_index_urls = in.extra_index_urls;
  o.find_links.insert(o.find_links.end(), in.find_links.begin(), in.find_links.end());
  if (in.no_index) {
    o.tool_index.clear();
    o.tool_extra_indexes.clear();
  }
  return out;
}

// The files' constraints (those whose markers hold for the target) and their hashes by project.
Expected<resolver::UserLimits> user_limits(const project::FileInput& in, const specs::MarkerEnvironment& env) {
  resolver::UserLimits l;
  std::vector<std::string> constraints;
  for (const auto& c : in.constraints) constraints.push_back(c.text);
  l.constraints = ENVFIX_TRY(resolver::applicable_constraints(constraints, env));
  l.hash_mode = in.require_hashes;
  for (const auto& r : in.requirements)
    if (auto q = specs::Requirement::parse(r.text); q && !r.sha256.empty())
      l.hashes[q->normalized_name()].insert(r.sha256.begin(), r.sha256.end());
  return l;
}

// The index client's warnings, the counts and the time, once the plan is made.
Expected<PlanContext> finish_plan(PlanContext ctx, std::chrono::steady_clock::time_point t0) {
  if (auto u = resolver::unhashed_pin(ctx.limits, ctx.resolution.pins))
    return make_error(ErrorCode::invalid_input,
                      util::msg("{} {} would be installed, but no requirement lists its hashes", u->name, u->version),
                      util::msg("in hash-checking mode every package installed is listed with its hashes: add "
                                "{}=={} --hash=sha256:…, or generate the file with --generate-hashes",
                                u->name, u->version));
  for (auto& w : ctx.client->warnings()) ctx.plan.warnings.push_back(std::move(w));
  ctx.resolved = ctx.resolution.pins.size();
  ctx.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return ctx;
}

} // namespace

Expected<PlanContext> build_plan(const Options& given, const PlanRequest& asked, std::vector<resolver::Rejection>* rejected_out) {
  auto t0 = std::chrono::steady_clock::now();
  PlanContext ctx;
  const auto files = ENVFIX_TRY(read_request_files(given, asked));
  const Options& g = files.options;
  const PlanRequest& flags = files.flags;
  ctx.file_requirements = files.texts;
  ctx.knowledge = ENVFIX_TRY(load_knowledge(g));
  ctx.host = ENVFIX_TRY(make_host(g, ctx.knowledge.get()));
  ctx.limits = ENVFIX_TRY(user_limits(files.input, ctx.host.python.markers));
  auto request = ENVFIX_TRY(resolver::parse_request(flags.requirements));
  ctx.request = std::move(request.requirements);
  ctx.direct = std::move(request.direct);
  ctx.client = ENVFIX_TRY(make_index_client(g));
  const std::string index_url = plain_index_url(g);
  ExtraIndexes extras;
  auto add_extra = [&](const std::string& u, const std::string& from) {
    extras.providers.push_back(std::make_unique<resolver::IndexProvider>(*ctx.client, u));
    ctx.extra_indexes.push_back(from.empty() ? index::redact_url(u) : fmt::format("{} ({})", index::redact_url(u), from));
  };
  const auto extra_urls = extra_index_urls(g);
  for (const auto& u : extra_urls) add_extra(u, "");
  if (extra_urls.empty())
    for (const auto& u : g.tool_extra_indexes) add_extra(u, g.tool_index_from);
  // No --framework: the one the request names, none for a request naming none, else (no request) the
  // one installed in the target, else torch, said so (resolver/frameworks.hpp).
  auto fws = ENVFIX_TRY(resolver::choose_plan_framework(g.framework, g.detect_framework, ctx.knowledge.get(),
                                                        ctx.host.facts.installed, ctx.request));
  if (fws.names.empty()) {
    // Just the request, pip-like, from --index-url/--find-links, else the index pip or uv is
    // configured with, else pip's default.
    const bool no_index = index_url.empty() && g.find_links.empty();
    if (no_index && !g.tool_index.empty()) ctx.index_from = g.tool_index_from;
    const std::string plain = no_index ? (g.tool_index.empty() ? std::string(kDefaultIndexUrl) : g.tool_index) : index_url;
    ctx.plan = ENVFIX_TRY(plan_plain(g, flags, ctx, plain, extras, rejected_out));
    return finish_plan(std::move(ctx), t0);
  }
  if (fws.names.size() > 1)
    fws.note = util::msg("{} are installed; planning {} (use --framework)", util::join(fws.names, ", "), fws.names.front());
  const auto* fw = ctx.knowledge ? ctx.knowledge->framework(fws.names.front()) : nullptr;
  if (resolver::framework_path({!g.detect_framework, !index_url.empty(), !g.find_links.empty(), !ctx.host.gpus.empty()},
                               ctx.request, fw)) {
    // pip's or uv's index (a PyPI mirror) serves what the framework's index lacks, searched last.
    if (!g.tool_index.empty() && g.tool_index != index_url) add_extra(g.tool_index, g.tool_index_from);
    ctx.plan = ENVFIX_TRY(plan_framework(g, flags, ctx, index_url, extras, fws, rejected_out));
  } else {
    ctx.plan = ENVFIX_TRY(plan_plain(g, flags, ctx, index_url, extras, rejected_out));
  }
  return finish_plan(std::move(ctx), t0);
}

Expected<std::vector<std::string>> check_installed(PlanContext& ctx, bool allow_breaking, bool allow_conda_overwrite) {
  ENVFIX_TRY_VOID(resolver::check_conda(ctx.plan, allow_conda_overwrite));
  return resolver::check_breaking(ctx.host.installed, ctx.plan, ctx.host.python.markers, allow_breaking);
}

Expected<PlanContext> plan(const Options& o, const PlanRequest& r, std::vector<resolver::Rejection>* rejected) {
  auto ctx = ENVFIX_TRY(build_plan(o, r, rejected));
  ENVFIX_TRY(check_installed(ctx, r.allow_breaking, r.allow_conda_overwrite));
  return ctx;
}

std::vector<std::string> recorded_request(const PlanContext& ctx, const std::vector<std::string>& requirements) {
  if (!requirements.empty() || !ctx.framework_mode()) return requirements;
  std::vector<std::string> r;
  for (const auto& n : resolver::framework_family(*ctx.spec))
    if (ctx.resolution.find(n)) r.push_back(n);
  return r;
}

} // namespace envfix::api
