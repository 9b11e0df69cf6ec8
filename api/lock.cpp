// `lock` and the lock targets apply writes (see lock.hpp).
#include "api/lock.hpp"

#include <filesystem>
#include <set>

#include <fmt/format.h>

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

lockfile::LockedHost lock_host(const PlanContext& ctx) {
  lockfile::LockedHost lh;
  std::set<specs::ComputeCapability> ccs;
  for (const auto& [name, cc] : ctx.host.gpus) ccs.insert(cc);
  for (const auto& cc : ccs) lh.gpus.push_back(cc.sm_name());
  lh.python = ctx.host.python_mm;
  if (!ctx.host.platform_tag.empty()) {
    lh.platform = ctx.host.platform_tag;
  } else {
    std::vector<std::string> files;
    for (const auto& pin : ctx.resolution.pins) files.push_back(pin.file.filename);
    lh.platform = lockfile::set_platform(files, ctx.host.tag_env.arch);
  }
  if (ctx.knowledge && ctx.framework_index && ctx.framework_index->cuda && !ctx.host.gpus.empty())
    lh.driver_min = ctx.knowledge->set_driver_floor(*ctx.framework_index->cuda, ctx.host.driver).value_or("");
  return lh;
}

// What the matrices claim for the main package (verified: false). Never what this machine's cache
// has read: a lock is the same bytes for the same index whatever the cache holds (issue 33 item 8);
// `verified: true` comes only from the binaries an apply's kernel check read in its own run, or
// from the lock being updated, for the same file.
std::map<std::string, lockfile::LockedKernels> claimed_kernels(const PlanContext& ctx) {
  std::map<std::string, lockfile::LockedKernels> out;
  if (!ctx.spec || !ctx.knowledge || !ctx.framework_index) return out;
  const auto* pin = ctx.resolution.find(specs::normalize_name(ctx.spec->main_package));
  if (!pin) return out;
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
  t.index =
      ctx.framework_index ? lockfile::strip_credentials(ctx.framework_index->url) : lockfile::strip_credentials(ctx.plan.index);
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
    if (pin.file.sha256)
      p.sha256 = *pin.file.sha256;
    else if (lf != local.end())
      p.sha256 = lf->second.sha256;
    else
      return make_error(
          ErrorCode::invalid_input,
          fmt::format("{}=={}: the index gives no sha256 for {}; a lockfile needs one", pin.name, p.version, p.filename),
          "use an index that publishes hashes, or `envfix apply` (it hashes what it downloads)");
    if (pin.file.size)
      p.size = *pin.file.size;
    else if (lf != local.end() && lf->second.size > 0)
      p.size = lf->second.size;
    if (auto k = kernels.find(pin.name); k != kernels.end()) p.kernels = k->second;
    t.packages.push_back(std::move(p));
  }
  return t;
}

Expected<std::string> update_lockfile(const std::string& lockfile_path, const PlanContext& ctx,
                                      const std::vector<std::string>& request,
                                      const std::map<std::string, lockfile::LockedKernels>& verified,
                                      const std::map<std::string, LocalFile>& local, std::vector<std::string>* warnings,
                                      std::optional<lockfile::VerifiedOn> verified_here) {
  fs::path path = lockfile_path;
  lockfile::LockFile lock;
  std::string framework = ctx.framework_mode() ? ctx.spec->name : "";
  std::error_code ec;
  if (fs::exists(path, ec)) {
    auto old = lockfile::LockFile::read(path);
    if (!old) return std::unexpected(std::move(old.error()).context(fmt::format("not updating {}", path.string())));
    if (old->framework == framework && old->request == request) lock = std::move(*old);
  }
  lock.created_by = created_by();
  lock.framework = framework;
  lock.request = request;
  // Kernels: read from the binaries just checked, else what the old lock or the matrices say.
  auto kernels = claimed_kernels(ctx);
  auto id = lockfile::make_target_id(lock_host(ctx));
  if (const auto* old_t = lock.find(id))
    for (const auto& p : old_t->packages)
      if (p.kernels)
        if (const auto* pin = ctx.resolution.find(p.name); pin && pin->file.filename == p.filename) kernels[p.name] = *p.kernels;
  for (const auto& [n, k] : verified) kernels[n] = k;
  auto target = ENVFIX_TRY(make_lock_target(ctx, kernels, local));
  if (warnings)
    for (const auto& io : target.installed_only) warnings->push_back(lockfile::installed_only_warning(io, path.string()));
  // A kept file the index gives no size for keeps the size an earlier apply learned (same sha256).
  if (const auto* old_t = lock.find(id))
    for (auto& p : target.packages)
      for (const auto& op : old_t->packages)
        if (!p.size && op.name == p.name && op.sha256 == p.sha256) p.size = op.size;
  // Where it was verified: this run's smoke test, else the record of the run that installed the
  // same files (a later apply that changed nothing).
  if (verified_here)
    target.verified_on = std::move(verified_here);
  else if (const auto* old_t = lock.find(id); old_t && old_t->packages == target.packages)
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
                    std::vector<std::string>& notes) {
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
      std::string failed;
      for (std::size_t i = 0; i < ctxs.size() && failed.empty(); ++i) {
        if (main_version(ctxs[i]) == vs) continue;
        auto pinned = flags;
        std::vector<std::string> resolved;
        for (const auto& p : ctxs[i].resolution.pins) resolved.push_back(p.name);
        pinned.requirements = resolver::pin_main_request(*ctxs[i].spec, request, *lowest, resolved);
        auto c = build_plan(hosts[i], pinned);
        if (!c)
          failed = fmt::format("{} ({})", names.at(i), c.error().message);
        else
          ctxs[i] = std::move(*c);
      }
      if (failed.empty())
        notes.push_back(fmt::format("{} {} serves every target", ctxs[0].spec->main_package, vs));
      else
        notes.push_back(fmt::format("targets use different {} versions: {} {} does not resolve for {}",
                                    ctxs[0].spec->main_package, ctxs[0].spec->main_package, vs, failed));
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
  PlanRequest flags{.requirements = o.requirements, .pre = o.pre, .allow_unhashed = o.allow_unhashed, .prefer_installed = false};
  std::vector<std::string> request = o.requirements;
  std::vector<std::string> recorded_ids; // the lock's own targets, when the check reads them
  if (o.check && o.targets.empty() && o.requirements.empty())
    if (auto recorded = lockfile::LockFile::read(out); recorded && !recorded->targets.empty()) {
      hosts = recorded_hosts(g, *recorded);
      for (const auto& t : recorded->targets) recorded_ids.push_back(t.id);
      flags.requirements = request = recorded->request;
      rep.notes.push_back(fmt::format("checking the lock's own request ({}) for its {} recorded target(s)",
                                      request.empty() ? "the framework's set" : util::join(request, " "), hosts.size()));
    }

  std::vector<PlanContext> ctxs;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    auto ctx = build_plan(hosts[i], flags);
    if (!ctx)
      return std::unexpected(std::move(ctx.error())
                                 .context(!recorded_ids.empty()
                                              ? fmt::format("resolving for the lock's target {}", recorded_ids[i])
                                          : o.targets.empty() ? std::string("resolving for this host")
                                                              : fmt::format("resolving for --target {}", o.targets[i])));
    ctxs.push_back(std::move(*ctx));
  }
  align_versions(ctxs, hosts, flags, request, recorded_ids.empty() ? o.targets : recorded_ids, rep.notes);

  auto& lock = rep.lock;
  lock.created_by = created_by();
  lock.framework = ctxs[0].framework_mode() ? ctxs[0].spec->name : "";
  lock.request = recorded_request(ctxs[0], request);

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
    auto kernels = claimed_kernels(c);
    auto target = ENVFIX_TRY(make_lock_target(c, kernels));
    if (old)
      if (const auto* ot = old->find(target.id))
        for (auto& p : target.packages)
          for (const auto& op : ot->packages)
            if (op.name == p.name && op.sha256 == p.sha256 && op.kernels && op.kernels->verified) p.kernels = op.kernels;
    if (lock.find(target.id))
      rep.notes.push_back(fmt::format("two --target options describe the same host {}; the last one wins", target.id));
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
