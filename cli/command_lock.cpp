// envfix lock [REQ...] [--target SPEC]... [-o FILE] [--check]: resolve for one or more hosts without
// installing anything and write envfix.lock (docs/lockfile.md). Deterministic: the same indexes and
// arguments give the same bytes.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "cli/globals.hpp"
#include "cli/pipeline.hpp"
#include "cli/render.hpp"
#include "lockfile/lockfile.hpp"
#include "specs/name.hpp"
#include "util/fs.hpp"

namespace envfix::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct LockOptions {
  std::vector<std::string> requests;
  std::vector<std::string> targets;
  std::string output;
  bool check = false;
  bool pre = false;
  bool allow_unhashed = false;
};

// "gpu=sm_86+sm_120,python=3.10,driver=550.54,platform=manylinux_2_28_x86_64" applied to a copy of
// the globals. gpu=none (or no gpu key) is a CPU-only target.
Expected<Globals> apply_target_spec(const Globals& g, const std::string& spec) {
  Globals t = g;
  t.gpus = {"none"};
  for (const auto& part : split_commas(spec)) {
    auto eq = part.find('=');
    if (eq == std::string::npos)
      return make_error(ErrorCode::invalid_input, fmt::format("--target '{}': '{}' is not key=value", spec, part),
                        "e.g. --target gpu=sm_120,python=3.10,driver=570.86,platform=manylinux_2_28_x86_64");
    std::string key = part.substr(0, eq), value = part.substr(eq + 1);
    if (key == "gpu") {
      t.gpus.clear();
      for (std::size_t i = 0, j; i <= value.size(); i = j + 1) {
        j = value.find('+', i);
        if (j == std::string::npos) j = value.size();
        if (j > i) t.gpus.push_back(value.substr(i, j - i));
      }
      if (t.gpus.empty()) t.gpus = {"none"};
    } else if (key == "python") {
      t.python_version = value;
    } else if (key == "driver") {
      t.driver = value;
    } else if (key == "platform") {
      t.platform = value;
    } else {
      return make_error(ErrorCode::invalid_input, fmt::format("--target '{}': unknown key '{}'", spec, key),
                        "keys: gpu, python, driver, platform");
    }
  }
  return t;
}

// The request with the framework's main package pinned to `version` (other clauses kept).
std::vector<std::string> pin_main(const PlanContext& ctx, const std::vector<std::string>& requests, const std::string& version) {
  const std::string main = specs::normalize_name(ctx.spec->main_package);
  std::vector<std::string> out;
  bool found = false;
  auto pin = *specs::SpecifierSet::parse("==" + version);
  for (const auto& r : requests) {
    auto req = specs::Requirement::parse(r);
    if (req && req->normalized_name() == main) {
      req->specifier = req->specifier.intersect(pin);
      out.push_back(req->to_string());
      found = true;
    } else {
      out.push_back(r);
    }
  }
  if (!found) {
    if (requests.empty())
      for (const auto& n : resolver::framework_family(*ctx.spec))
        if (n != main && ctx.resolution.find(n)) out.push_back(n);
    out.insert(out.begin(), main + "==" + version);
  }
  return out;
}

std::string main_version(const PlanContext& ctx) {
  if (!ctx.spec) return "";
  const auto* p = ctx.resolution.find(specs::normalize_name(ctx.spec->main_package));
  return p ? p->version.public_version().to_string() : "";
}

// Package-level differences between two locks, for --check.
std::vector<std::string> lock_diff(const lockfile::LockFile& a, const lockfile::LockFile& b) {
  std::vector<std::string> out;
  if (a.framework != b.framework || a.request != b.request) out.push_back("the request or framework changed");
  std::set<std::string> ids;
  for (const auto& t : a.targets) ids.insert(t.id);
  for (const auto& t : b.targets) ids.insert(t.id);
  for (const auto& id : ids) {
    const auto* ta = a.find(id);
    const auto* tb = b.find(id);
    if (!ta) { out.push_back(fmt::format("target {}: new", id)); continue; }
    if (!tb) { out.push_back(fmt::format("target {}: no longer requested", id)); continue; }
    std::map<std::string, const lockfile::LockedPackage*> pa, pb;
    for (const auto& p : ta->packages) pa[p.name] = &p;
    for (const auto& p : tb->packages) pb[p.name] = &p;
    for (const auto& [n, p] : pa)
      if (!pb.contains(n)) out.push_back(fmt::format("target {}: - {}=={}", id, n, p->version));
    for (const auto& [n, p] : pb) {
      auto it = pa.find(n);
      if (it == pa.end()) out.push_back(fmt::format("target {}: + {}=={}", id, n, p->version));
      else if (!(*it->second == *p))
        out.push_back(fmt::format("target {}: {} {} -> {}{}", id, n, it->second->version, p->version,
                                  it->second->sha256 != p->sha256 ? " (file changed)" : ""));
    }
    if (ta->index != tb->index || ta->channel != tb->channel || ta->variant != tb->variant || !(ta->host == tb->host))
      out.push_back(fmt::format("target {}: index, channel, variant or host changed", id));
  }
  return out;
}

Expected<int> run_lock(const Globals& g, const LockOptions& o) {
  fs::path out = o.output.empty() ? fs::path(g.lockfile) : fs::path(o.output);
  std::vector<Globals> hosts;
  if (o.targets.empty()) hosts.push_back(g);
  for (const auto& t : o.targets) hosts.push_back(ENVFIX_TRY(apply_target_spec(g, t)));
  PlanFlags flags{o.pre, o.allow_unhashed, false};

  std::vector<PlanContext> ctxs;
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    auto ctx = build_plan(hosts[i], o.requests, flags);
    if (!ctx)
      return std::unexpected(std::move(ctx.error()).context(
          o.targets.empty() ? std::string("resolving for this host") : fmt::format("resolving for --target {}", o.targets[i])));
    ctxs.push_back(std::move(*ctx));
  }
  std::vector<std::string> notes;
  // One framework version for every target when one version serves them all: the lowest of the
  // versions each target chose on its own.
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
      std::vector<PlanContext> pinned;
      std::string failed;
      for (std::size_t i = 0; i < ctxs.size() && failed.empty(); ++i) {
        if (main_version(ctxs[i]) == vs) continue;
        auto c = build_plan(hosts[i], pin_main(ctxs[i], o.requests, vs), flags);
        if (!c) failed = fmt::format("{} ({})", o.targets[i], c.error().message);
        else ctxs[i] = std::move(*c);
      }
      if (failed.empty())
        notes.push_back(fmt::format("{} {} serves every target", ctxs[0].spec->main_package, vs));
      else
        notes.push_back(fmt::format("targets use different {} versions: {} {} does not resolve for {}", ctxs[0].spec->main_package,
                                    ctxs[0].spec->main_package, vs, failed));
    }
  }

  lockfile::LockFile lock;
  lock.created_by = created_by();
  lock.framework = ctxs[0].framework_mode() ? ctxs[0].spec->name : "";
  lock.request = o.requests;
  if (lock.request.empty() && ctxs[0].framework_mode())
    for (const auto& n : resolver::framework_family(*ctxs[0].spec))
      if (ctxs[0].resolution.find(n)) lock.request.push_back(n);

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
      notes.push_back(fmt::format("two --target options describe the same host {}; the last one wins", target.id));
    lock.upsert(std::move(target));
  }
  for (const auto& n : notes) human(n);
  human(interpreter_line(ctxs[0].host));
  for (const auto& c : ctxs) {
    const auto id = lockfile::make_target_id(lock_host(c));
    human(styled(fmt::format("Resolved {} packages for {} in {}", c.resolved, id, human_duration(c.seconds)), Style::dim));
  }

  std::string yaml = lock.to_yaml();
  if (o.check) {
    if (old_text && *old_text == yaml) {
      human(fmt::format("{} is up to date", out.string()));
      if (g.format == "json") machine(json{{"lockfile", out.string()}, {"stale", false}, {"differences", json::array()}}.dump(2));
      return 0;
    }
    std::vector<std::string> diff = old ? lock_diff(*old, lock) : std::vector<std::string>{old_text ? "the file does not parse" : "the file does not exist"};
    if (diff.empty()) diff.push_back("formatting differs from the canonical form");
    human(fmt::format("{} is stale:", out.string()));
    for (const auto& d : diff) human("  " + d);
    if (g.format == "json") machine(json{{"lockfile", out.string()}, {"stale", true}, {"differences", diff}}.dump(2));
    return 1;
  }
  ENVFIX_TRY_VOID(util::write_file_atomic(out, yaml, 0644));
  human(fmt::format("Wrote {} ({} target{})", out.string(), lock.targets.size(), lock.targets.size() == 1 ? "" : "s"));
  if (g.format == "json") {
    json j{{"lockfile", out.string()}, {"targets", json::array()}, {"notes", notes},
           {"interpreter", ctxs[0].host.facts.python ? json(ctxs[0].host.facts.python->executable.string()) : json(nullptr)},
           {"interpreter_from", ctxs[0].host.facts.python_from}};
    for (const auto& t : lock.targets) {
      json pk = json::array();
      for (const auto& p : t.packages) pk.push_back({{"name", p.name}, {"version", p.version}, {"filename", p.filename}, {"sha256", p.sha256}});
      j["targets"].push_back({{"id", t.id}, {"index", t.index}, {"channel", t.channel}, {"variant", t.variant}, {"packages", pk}});
    }
    machine(j.dump(2));
  }
  return 0;
}

} // namespace

void add_lock_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<LockOptions>();
  auto* cmd = app.add_subcommand("lock", "Resolve for one or more hosts and write the lockfile; installs nothing");
  cmd->add_option("requirements", o->requests, "Requirements (default: the framework's set)");
  cmd->add_option("--target", o->targets,
                  "Host to lock for: gpu=sm_86+sm_120,python=3.10[,driver=570.86][,platform=manylinux_2_28_x86_64] (repeatable; default: this host)")
      ->allow_extra_args(false); // one spec per --target: its commas are its own, and REQs may follow
  cmd->add_option("-o,--output", o->output, "Lockfile to write (default: --lockfile, envfix.lock)");
  cmd->add_flag("--check", o->check, "Exit 1 when the lockfile is stale (re-resolves; writes nothing)");
  cmd->add_flag("--pre", o->pre, "Allow pre-releases for every package");
  cmd->add_flag("--allow-unhashed", o->allow_unhashed, "Accept files whose index gives no sha256");
  cmd->callback([&g, o] {
    g.exit_code = finish_command(run_lock(g, *o));
  });
}

} // namespace envfix::cli
