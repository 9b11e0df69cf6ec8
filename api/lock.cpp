// `lock` and the lock targets apply writes (see lock.hpp).
#include "api/lock.hpp"

#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "fetch/lock_target.hpp"
#include "lockfile/diff.hpp"
#include "lockfile/target.hpp"
#include "resolver/framework_selector.hpp"
#include "resolver/index_provider.hpp"
#include "resolver/installed.hpp"
#include "specs/name.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"

namespace envfix::api {

namespace fs = std::filesystem;

std::string created_by() { return "envfix " ENVFIX_VERSION; }

lockfile::HostView host_view(const Host& host) {
  lockfile::HostView v;
  for (const auto& [n, cc] : host.gpus) v.gpus.insert(cc.sm_name());
  v.python = host.python_mm;
  for (const auto& tag : host.python.tags)
    if (std::find(v.platforms.begin(), v.platforms.end(), tag.platform) == v.platforms.end()) v.platforms.push_back(tag.platform);
  v.driver = host.driver;
  return v;
}

namespace {

// The plan's resolution and host, as fetch/lock_target.hpp makes a target of them.
fetch::TargetInputs target_inputs(const PlanContext& ctx) {
  fetch::TargetInputs in;
  in.resolution = &ctx.resolution;
  in.knowledge = ctx.knowledge.get();
  in.spec = ctx.spec.get();
  in.framework_index = ctx.framework_index ? &*ctx.framework_index : nullptr;
  for (const auto& [name, cc] : ctx.host.gpus) in.gpus.insert(cc);
  in.python_mm = ctx.host.python_mm;
  in.platform_tag = ctx.host.platform_tag;
  in.arch = ctx.host.tag_env.arch;
  in.platform = ctx.host.platform;
  in.driver = ctx.host.driver;
  in.installed = &ctx.host.facts.installed;
  in.channel = ctx.plan.channel;
  in.variant = ctx.plan.variant;
  in.index = ctx.plan.index;
  return in;
}

} // namespace

Expected<std::string> update_lockfile(const std::string& lockfile_path, const PlanContext& ctx,
                                      const std::vector<std::string>& request,
                                      const std::map<std::string, lockfile::LockedKernels>& verified,
                                      const std::map<std::string, LocalFile>& local, std::vector<util::Message>* warnings,
                                      std::optional<lockfile::VerifiedOn> verified_here) {
  fs::path path = lockfile_path;
  lockfile::LockFile lock;
  std::string framework = ctx.framework_mode() ? ctx.spec->name : "";
  std::error_code ec;
  if (fs::exists(path, ec)) {
    auto old = lockfile::LockFile::read(path);
    if (!old) return std::unexpected(std::move(old.error()).context(util::msg("not updating {}", path.string())));
    if (old->framework == framework && old->request == request) lock = std::move(*old);
  }
  lock.created_by = created_by();
  lock.framework = framework;
  lock.request = request;
  // Kernels: read from the binaries just checked, else an earlier lock's read of the same file, else
  // what the matrices claim.
  const auto in = target_inputs(ctx);
  auto kernels = fetch::claimed_kernels(in);
  for (const auto& [n, k] : verified) kernels[n] = k;
  auto target = ENVFIX_TRY(fetch::lock_target(in, kernels, local));
  if (warnings)
    for (const auto& io : target.installed_only) warnings->push_back(lockfile::installed_only_warning(io, path.string()));
  const auto* old_t = lock.find(target.id);
  if (old_t) lockfile::keep_learned(target, *old_t);
  // Where it was verified: this run's smoke test, else the record of the run that installed the
  // same files (a later apply that changed nothing).
  if (verified_here)
    target.verified_on = std::move(verified_here);
  else if (old_t && old_t->packages == target.packages)
    target.verified_on = old_t->verified_on;
  lock.upsert(std::move(target));
  ENVFIX_TRY_VOID(lock.write(path));
  return path.string();
}

// A --target description (lockfile/target.hpp) applied to a copy of the globals.
Expected<Options> apply_target_spec(const Options& g, const std::string& spec) {
  auto ts = ENVFIX_TRY(lockfile::parse_target_spec(spec));
  Options t = g;
  t.gpus = std::move(ts.gpus);
  if (!ts.python.empty()) t.python_version = std::move(ts.python);
  if (!ts.driver.empty()) t.driver = std::move(ts.driver);
  if (!ts.platform.empty()) t.platform = std::move(ts.platform);
  return t;
}

namespace {

std::string main_version(const PlanContext& ctx) {
  if (!ctx.spec) return "";
  const auto* p = ctx.resolution.find(specs::normalize_name(ctx.spec->main_package));
  return p ? p->version.public_version().to_string() : "";
}

} // namespace

// `lock --check` with no request and no --target: what the lock records, not this host. Each recorded
// target becomes a host (its GPUs, Python, platform, the driver floor it records, its channel, variant
// and index unless the run names its own), so that the check re-resolves the lock's own request for
// the lock's own targets (issue 56, item 7).
std::vector<Options> recorded_hosts(const Options& g, const lockfile::LockFile& lock) {
  std::vector<Options> hosts;
  for (const auto& t : lock.targets) {
    Options h = g;
    h.gpus = t.host.gpus.empty() ? std::vector<std::string>{"none"} : t.host.gpus;
    h.python_version = t.host.python;
    h.platform = t.host.platform;
    if (!t.host.driver_min.empty()) h.driver = t.host.driver_min;
    if (!lock.framework.empty()) {
      h.framework = lock.framework;
      h.detect_framework = false;
    }
    if (g.channel == "auto" && !t.channel.empty()) h.channel = t.channel;
    if (g.variant.empty()) h.variant = t.variant;
    if (g.index_url.empty() && g.mirror.empty() && !t.index.empty()) h.index_url = t.index;
    hosts.push_back(std::move(h));
  }
  return hosts;
}

// One framework version for every target when one version serves them all: the lowest of the
// versions each target chose on its own. `names[i]`: how the notes call target i.
void align_versions(std::vector<PlanContext>& ctxs, const std::vector<Options>& hosts, const PlanRequest& flags,
                    const std::vector<std::string>& request, const std::vector<std::string>& names,
                    std::vector<util::Message>& notes) {
  if (ctxs.size() > 1 && ctxs[0].framework_mode()) {
    std::optional<specs::Version> lowest;
    bool differ = false;
    for (const auto& c : ctxs) {
      auto v = specs::Version::parse(main_version(c));
      if (!v) continue;
      if (lowest && *v != *lowest) differ = true;
      if (!lowest || *v < *lowest) lowest = *v;
    }
    if (differ && lowest) {
      auto vs = lowest->to_string();
      util::Message failed;
      for (std::size_t i = 0; i < ctxs.size() && failed.empty(); ++i) {
        if (main_version(ctxs[i]) == vs) continue;
        auto pinned = flags;
        std::vector<std::string> resolved;
        for (const auto& p : ctxs[i].resolution.pins) resolved.push_back(p.name);
        pinned.requirements = resolver::pin_main_request(*ctxs[i].spec, request, *lowest, resolved);
        auto c = build_plan(hosts[i], pinned);
        if (!c)
          failed = util::msg("{} ({})", names.at(i), c.error().said_message());
        else
          ctxs[i] = std::move(*c);
      }
      if (failed.empty())
        notes.push_back(util::msg("{} {} serves every target", ctxs[0].spec->main_package, vs));
      else
        notes.push_back(util::msg("targets use different {} versions: {} {} does not resolve for {}", ctxs[0].spec->main_package,
                                  ctxs[0].spec->main_package, vs, failed));
    }
  }
}

Expected<LockReport> lock(const Options& g, const LockRequest& o) {
  LockReport rep;
  const fs::path out = o.output.empty() ? fs::path(g.lockfile) : fs::path(o.output);
  rep.path = out.string();
  std::vector<Options> hosts;
  if (o.targets.empty()) hosts.push_back(g);
  for (const auto& t : o.targets) hosts.push_back(ENVFIX_TRY(apply_target_spec(g, t)));
  PlanRequest flags{.requirements = o.requirements,
                    .files = o.files,
                    .pre = o.pre,
                    .allow_unhashed = o.allow_unhashed,
                    .prefer_installed = false};
  std::vector<std::string> request = o.requirements;
  std::vector<std::string> recorded_ids; // the lock's own targets, when the check reads them
  if (o.check && o.targets.empty() && o.requirements.empty() && o.files.requirements.empty())
    if (auto recorded = lockfile::LockFile::read(out); recorded && !recorded->targets.empty()) {
      hosts = recorded_hosts(g, *recorded);
      for (const auto& t : recorded->targets) recorded_ids.push_back(t.id);
      flags.requirements = request = recorded->request;
      rep.notes.push_back(util::msg("checking the lock's own request ({}) for its {} recorded target(s)",
                                    request.empty() ? util::msg("the framework's set") : util::plain(util::join(request, " ")),
                                    hosts.size()));
    }

  std::vector<PlanContext> ctxs;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    auto ctx = build_plan(hosts[i], flags);
    if (!ctx)
      return std::unexpected(std::move(ctx.error())
                                 .context(!recorded_ids.empty() ? util::msg("resolving for the lock's target {}", recorded_ids[i])
                                          : o.targets.empty()   ? util::msg("resolving for this host")
                                                                : util::msg("resolving for --target {}", o.targets[i])));
    ctxs.push_back(std::move(*ctx));
  }
  align_versions(ctxs, hosts, flags, request, recorded_ids.empty() ? o.targets : recorded_ids, rep.notes);

  auto& lock = rep.lock;
  lock.created_by = created_by();
  lock.framework = ctxs[0].framework_mode() ? ctxs[0].spec->name : "";
  // The -r files' requirements are part of the request the lock records (and `lock --check` re-reads).
  auto asked = request;
  asked.insert(asked.end(), ctxs[0].file_requirements.begin(), ctxs[0].file_requirements.end());
  lock.request = recorded_request(ctxs[0], asked);

  // Kernels verified from binaries by an earlier apply stay, as long as the file is the same.
  std::optional<lockfile::LockFile> old;
  std::optional<std::string> old_text;
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (auto t = util::read_file(out)) {
      old_text = *t;
      if (auto l = lockfile::LockFile::parse(*t, out.string())) old = std::move(*l);
    }
  }
  for (auto& c : ctxs) {
    // A size the index does not give is asked of the server (HEAD or a one-byte range); still
    // unknown, it is left out of the file, never written as 0 (docs/lockfile.md).
    for (auto& pin : c.resolution.pins)
      if (!pin.file.size) pin.file.size = c.client->file_size(pin.file);
    const auto in = target_inputs(c);
    auto target = ENVFIX_TRY(fetch::lock_target(in, fetch::claimed_kernels(in)));
    if (old)
      if (const auto* ot = old->find(target.id)) lockfile::keep_learned(target, *ot);
    if (lock.find(target.id))
      rep.notes.push_back(util::msg("two --target options describe the same host {}; the last one wins", target.id));
    rep.resolved.push_back({target.id, c.resolved, c.seconds});
    lock.upsert(std::move(target));
  }
  rep.host = std::move(ctxs[0].host);

  const std::string yaml = lock.to_yaml();
  if (o.check) {
    if (old_text && *old_text == yaml) return rep;
    rep.stale = true;
    rep.differences = old ? lockfile::diff(*old, lock)
                          : std::vector<std::string>{old_text ? "the file does not parse" : "the file does not exist"};
    if (rep.differences.empty()) rep.differences.push_back("formatting differs from the canonical form");
    return rep;
  }
  ENVFIX_TRY_VOID(util::write_file_atomic(out, yaml, 0644));
  rep.written = true;
  return rep;
}

} // namespace envfix::api
