// envfix apply [REQ...]: plan, prepare (download + hash + kernel check), transaction, smoke test,
// lockfile (docs/architecture.md, The transaction; docs/json.md "apply"; docs/lockfile.md).
// `--locked` installs exactly a lockfile target instead.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "cli/globals.hpp"
#include "cli/pipeline.hpp"
#include "cli/progress.hpp"
#include "cli/render.hpp"
#include "cli/smoke.hpp"
#include "probe/base_env.hpp"
#include "installer/install_target.hpp"
#include "installer/kernel_gate.hpp"
#include "installer/transaction.hpp"
#include "installer/unpacked_cache.hpp"
#include "lockfile/lockfile.hpp"
#include "specs/name.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"
#include "util/sha256.hpp"
#include "util/subprocess.hpp"
#include "specs/wheel_filename.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct ApplyOptions {
  std::vector<std::string> requests;
  bool yes = false;
  bool locked = false;
  bool no_verify = false;
  bool no_rollback = false;
  bool no_backup = false;
  bool break_system_packages = false;
  bool allow_unhashed = false;
  bool pre = false;
  bool allow_breaking = false;
  bool allow_conda_overwrite = false;
  std::string venv;
  std::string link_mode; // empty: $ENVFIX_LINK_MODE, else auto
  int smoke_timeout = 600;
  std::string smoke_layers = "repro,model"; // envfix verify's layers 1 and 2
};

// ---------------------------------------------------------------------------------------------
// The kernel gate (installer/kernel_gate.hpp) for the wheels about to be installed: each package's
// evidence key (wheel name + the index's variant) and whether it is a framework package.

struct GateInput {
  std::string name, version, filename;
};

installer::KernelGate make_gate(const Host& host, const std::vector<GateInput>& wheels, std::string_view variant,
                                const std::set<std::string>& family, const wheel::EvidenceStore* store,
                                bool refuse_partial, std::set<wheel::BuildKey> accept_partial) {
  std::vector<installer::GatePackage> pkgs;
  for (const auto& w : wheels) {
    installer::GatePackage p{w.name, w.version, {}, family.contains(w.name)};
    if (auto wf = specs::WheelFilename::parse(w.filename)) p.key = wheel::build_key(*wf, variant);
    pkgs.push_back(std::move(p));
  }
  installer::GateOptions go;
  for (const auto& [name, cc] : host.gpus) go.gpus.push_back({name, cc});
  go.driver_cuda = host.driver_cuda;
  go.evidence = store;
  go.refuse_partial_framework = refuse_partial;
  go.accept_partial = std::move(accept_partial);
  go.threads = util::default_threads();
  if (auto t = util::get_env("ENVFIX_THREADS")) go.threads = static_cast<unsigned>(std::strtoul(t->c_str(), nullptr, 10));
  return installer::KernelGate(std::move(pkgs), std::move(go));
}

// What the binaries just checked hold, for the lockfile (verified: true).
std::map<std::string, lockfile::LockedKernels> locked_kernels(const installer::KernelGate& gate) {
  std::map<std::string, lockfile::LockedKernels> out;
  for (const auto& r : gate.reports()) {
    if (r.files.empty()) continue;
    lockfile::LockedKernels k;
    k.sass = r.sass();
    k.ptx = r.ptx();
    k.verified = true;
    out[r.package.name] = std::move(k);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

bool confirm(const ApplyOptions& o, const Globals& g) {
  if (o.yes) return true;
  if (g.format == "json" || !::isatty(STDIN_FILENO) || !::isatty(STDERR_FILENO)) {
    human(styled("no TTY: proceeding without confirmation (pass --yes to silence this note)", Style::dim));
    return true;
  }
  std::fputs("Proceed? [y/N] ", stderr);
  std::fflush(stderr);
  std::string line;
  if (!std::getline(std::cin, line)) return false;
  return line == "y" || line == "Y" || line == "yes";
}

// The interpreter to install into: --venv creates (or reuses) a venv from --python / python3.
Expected<void> prepare_venv(Globals& g, const ApplyOptions& o) {
  if (o.venv.empty()) return {};
  fs::path base = g.python.empty() ? util::find_in_path("python3").value_or("python3") : fs::path(g.python);
  auto py = ENVFIX_TRY(installer::create_venv(o.venv, base));
  human(fmt::format("Using venv {} ({})", o.venv, py.string()));
  g.python = py.string();
  return {};
}

struct RunResult {
  installer::TransactionResult txn;
  double t_download = 0;                 // set by the caller: downloads (or cache lookups)
  double t_stage = 0, t_kernels = 0;     // inside the transaction, before the environment changes
  double t_uninstall = 0, t_install = 0;
  std::vector<std::string> smoke_passed;
  std::string smoke_cpu_why;             // "no GPU" | "CPU build" when the smoke test runs on the CPU
  std::string smoke_note;
  std::optional<Error> smoke_failure_kept; // --no-rollback
};

// Runs the transaction with the kernel check and the smoke test wired in.
Expected<RunResult> run_transaction(const Host& host, const installer::InstallTarget& target,
                                    const std::vector<installer::WheelToInstall>& wheels,
                                    const std::vector<std::string>& wheel_names,
                                    const std::vector<fs::path>& removals, const ApplyOptions& o,
                                    const matrices::Framework* framework, std::string_view variant,
                                    installer::KernelGate& gate, const fs::path& unpacked_cache, const Globals& g) {
  RunResult rr;
  ProgressLine unpack_bar(g, "Unpacking");
  installer::TransactionOptions to;
  to.break_system_packages = o.break_system_packages;
  to.keep_backup = !o.no_backup;
  to.unpacked_cache = unpacked_cache;
  std::string mode = !o.link_mode.empty() ? o.link_mode : util::get_env("ENVFIX_LINK_MODE").value_or("auto");
  auto link_mode = installer::parse_link_mode(mode);
  if (!link_mode) return std::unexpected(std::move(link_mode.error()).context(o.link_mode.empty() ? "$ENVFIX_LINK_MODE" : "--link-mode"));
  to.link_mode = *link_mode;
  if (auto t = util::get_env("ENVFIX_THREADS")) to.threads = static_cast<unsigned>(std::strtoul(t->c_str(), nullptr, 10));
  to.kernel_check = [&gate](const std::vector<installer::StagedObject>& sos) { return gate(sos); };
  Clock::time_point t_rm{}, t_in{}, t_ver{}, t_kc{};
  to.unpack_progress = [&unpack_bar](std::uint64_t done, std::uint64_t total) { unpack_bar.update(done, total); };
  to.progress = [&](std::string_view s) {
    if (s.starts_with("checking kernels")) { unpack_bar.clear(); t_kc = Clock::now(); }
    else if (s.starts_with("removing")) t_rm = Clock::now();
    else if (s.starts_with("installing")) t_in = Clock::now();
    else if (s == "verifying") t_ver = Clock::now();
  };
  // The smoke test, unless --no-verify: on the GPU; on the CPU when the host has none or the new set
  // is a CPU build (a CUDA step would fail there for the wrong reason).
  const auto* v = framework ? framework->variant(variant) : nullptr;
  const bool cpu_build = v && v->kind == "cpu";
  const bool on_cpu = host.gpus.empty() || cpu_build;
  const std::string why_cpu = host.gpus.empty() ? "no GPU" : "CPU build";
  std::vector<SmokeStep> steps;
  if (framework && !o.no_verify) {
    std::vector<std::string> present;
    for (const auto& n : wheel_names) present.push_back(n);
    for (const auto& i : host.installed_names) present.push_back(i);
    const auto device = on_cpu ? SmokeDevice::cpu : SmokeDevice::gpu;
    for (const auto& layer : split_commas(o.smoke_layers)) {
      auto more = layer == "repro" ? smoke_steps(framework->smoke, present, device) : model_steps(framework->smoke, present, device);
      steps.insert(steps.end(), more.begin(), more.end());
    }
  }
  if (o.no_verify) rr.smoke_note = "smoke test skipped (--no-verify)";
  else if (!framework) rr.smoke_note = "no framework: smoke test skipped (plain requirement set)";
  else if (steps.empty() && on_cpu)
    rr.smoke_note = fmt::format("{}: smoke test skipped ({} has no CPU smoke test in the matrices)", why_cpu, framework->name);
  else if (steps.empty()) rr.smoke_note = fmt::format("{} has no smoke test in the matrices", framework->name);
  else if (on_cpu) {
    rr.smoke_note = fmt::format("{}: smoke test ran on the CPU", why_cpu);
    rr.smoke_cpu_why = why_cpu;
  }
  if (!steps.empty()) {
    fs::path python = target.python;
    auto timeout = std::chrono::milliseconds(std::chrono::seconds(o.smoke_timeout));
    to.verify = [&rr, &o, steps, python, timeout]() -> Expected<void> {
      auto r = run_smoke(python, steps, timeout);
      if (r) {
        rr.smoke_passed = r->passed;
        return {};
      }
      if (o.no_rollback) {
        rr.smoke_failure_kept = r.error();
        return {};
      }
      return std::unexpected(r.error());
    };
  }
  installer::Transaction txn(target, to);
  for (const auto& d : removals) txn.remove(d);
  for (const auto& w : wheels) txn.install(w);
  auto t0 = Clock::now();
  auto res = txn.run();
  if (!res) return std::unexpected(std::move(res.error()));
  auto end = t_ver != Clock::time_point{} ? t_ver : Clock::now();
  auto secs = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  if (t_rm != Clock::time_point{}) {
    auto staged = t_kc != Clock::time_point{} ? t_kc : t_rm;
    rr.t_stage = secs(t0, staged);
    rr.t_kernels = secs(staged, t_rm);
  }
  if (t_rm != Clock::time_point{} && t_in != Clock::time_point{})
    rr.t_uninstall = std::chrono::duration<double>(t_in - t_rm).count();
  if (t_in != Clock::time_point{}) rr.t_install = std::chrono::duration<double>(end - t_in).count();
  else rr.t_install = since(t0);
  rr.txn = std::move(*res);
  return rr;
}

void print_result(const RunResult& rr, const installer::KernelGate& gate, const Globals& g) {
  // uv's meaning of "prepared": downloaded, unpacked and checked, ready to go into place.
  const auto n_prep = rr.txn.installed.size();
  human(styled(fmt::format("Prepared {} package{} in {}", n_prep, n_prep == 1 ? "" : "s",
                           human_duration(rr.t_download + rr.t_stage + rr.t_kernels)), Style::dim));
  // An earlier envfix was killed mid-transaction (or mid-preparation): say what was undone first.
  for (const auto& a : rr.txn.recovered) warn(fmt::format("recovered from an interrupted envfix run: {}", a));
  if (!rr.txn.removed.empty())
    human(styled(fmt::format("Uninstalled {} package{} in {}", rr.txn.removed.size(), rr.txn.removed.size() == 1 ? "" : "s",
                             human_duration(rr.t_uninstall)), Style::dim));
  std::string how;
  if (rr.txn.link_mode)
    how = fmt::format(" ({}{})", installer::to_string(*rr.txn.link_mode),
                      rr.txn.cache_hits ? fmt::format(", {} from the unpacked cache", rr.txn.cache_hits) : "");
  human(styled(fmt::format("Installed {} package{} in {}{}", rr.txn.installed.size(), rr.txn.installed.size() == 1 ? "" : "s",
                           human_duration(rr.t_install), how), Style::dim));
  for (const auto& d : rr.txn.removed)
    human(fmt::format(" {} {}=={}", styled("-", Style::red), specs::normalize_name(d.name), d.version));
  for (const auto& d : rr.txn.installed)
    human(fmt::format(" {} {}=={}", styled("+", Style::green), specs::normalize_name(d.name), d.version));
  for (const auto& w : rr.txn.warnings) warn(w);
  if (!rr.smoke_passed.empty()) {
    std::string s;
    for (const auto& p : rr.smoke_passed) s += (s.empty() ? "" : ", ") + p;
    if (!rr.smoke_cpu_why.empty()) human(fmt::format("Smoke test passed on the CPU ({}): {}", rr.smoke_cpu_why, s));
    else human(fmt::format("Smoke test passed: {}", s));
  } else if (!rr.smoke_note.empty()) {
    human(styled(rr.smoke_note, Style::dim));
  }
  if (rr.txn.backup_bytes > 0)
    human(styled(fmt::format("Backup kept for `envfix rollback`: {}", human_size(rr.txn.backup_bytes)), Style::dim));
  for (const auto& w : gate.warnings()) warn(w);
  if (g.verbose > 0)
    for (const auto& n : gate.notes()) human(styled(n, Style::dim));
}

json result_json(const RunResult& rr) {
  json j;
  j["transaction"] = rr.txn.id;
  j["installed"] = json::array();
  for (const auto& d : rr.txn.installed) j["installed"].push_back({{"name", d.name}, {"version", d.version}});
  j["removed"] = json::array();
  for (const auto& d : rr.txn.removed) j["removed"].push_back({{"name", d.name}, {"version", d.version}});
  j["backup_bytes"] = rr.txn.backup_bytes;
  j["warnings"] = rr.txn.warnings;
  j["smoke"] = {{"passed", rr.smoke_passed},
                {"device", rr.smoke_passed.empty() ? json(nullptr) : json(rr.smoke_cpu_why.empty() ? "gpu" : "cpu")},
                {"note", rr.smoke_note}};
  j["timings"] = {{"download_s", rr.t_download}, {"unpack_s", rr.t_stage},     {"kernel_check_s", rr.t_kernels},
                  {"prepare_s", rr.t_download + rr.t_stage + rr.t_kernels},
                  {"uninstall_s", rr.t_uninstall},  {"install_s", rr.t_install}};
  json steps = json::object(); // installer::TransactionResult::steps
  for (const auto& [step, secs] : rr.txn.steps) steps[step] = steps.value(step, 0.0) + secs;
  j["timings"]["steps"] = std::move(steps);
  j["link_mode"] = rr.txn.link_mode ? json(installer::to_string(*rr.txn.link_mode)) : json(nullptr);
  j["unpacked_cache_hits"] = rr.txn.cache_hits;
  return j;
}

// <cache>/unpacked-v1: wheels unpacked once, linked into every later install.
fs::path unpacked_cache_dir(const index::IndexClient& client) { return client.cache_dir() / "unpacked-v1"; }

// Every file ready for the transaction: a wheel already in the unpacked cache needs nothing more
// (no download, no archive hash); the others are downloaded (or found in the wheel cache) in
// parallel, hash-verified. The first failure names the package.
Expected<std::vector<installer::WheelToInstall>> prepare_wheels(const Globals& g, index::IndexClient& client,
                                                                const std::vector<index::Candidate>& cands,
                                                                const std::function<std::string(std::size_t)>& where) {
  std::vector<installer::WheelToInstall> wheels(cands.size());
  installer::UnpackedCache cache(unpacked_cache_dir(client));
  std::vector<index::Candidate> fetch;
  std::vector<std::size_t> fetch_index;
  std::vector<std::string> shas; // all entries looked up at once (UnpackedCache::find_many)
  for (const auto& c : cands) shas.push_back(c.sha256.value_or(""));
  auto found = cache.find_many(shas, util::default_threads());
  for (std::size_t i = 0; i < cands.size(); ++i) {
    wheels[i].sha256 = cands[i].sha256;
    wheels[i].size = cands[i].size;
    wheels[i].cached = std::move(found[i]);
    if (!wheels[i].cached) {
      fetch.push_back(cands[i]);
      fetch_index.push_back(i);
    }
  }
  // Bytes, rate and ETA over all downloads together; sizes the index did not publish join the
  // total when their transfer announces them.
  ProgressLine bar(g, "Downloading");
  std::vector<std::uint64_t> done(fetch.size()), total(fetch.size());
  for (std::size_t k = 0; k < fetch.size(); ++k) total[k] = fetch[k].size.value_or(0);
  auto results = client.download_many(fetch, [&](std::size_t k, std::uint64_t d, std::optional<std::uint64_t> t) {
    done[k] = d;
    if (t && *t > total[k]) total[k] = *t;
    std::uint64_t sd = 0, st = 0;
    for (std::size_t j = 0; j < fetch.size(); ++j) {
      sd += done[j];
      st += total[j];
    }
    bar.update(sd, st);
  });
  bar.clear();
  for (std::size_t k = 0; k < results.size(); ++k) {
    if (!results[k]) return std::unexpected(std::move(results[k].error()).context(where(fetch_index[k])));
    auto& w = wheels[fetch_index[k]];
    w.wheel = *results[k];
    w.sha256_verified = w.sha256.has_value(); // download_many checked it against the index's hash
  }
  return wheels;
}

// dist-info folders of installed projects named in `names` (normalized), any version.
std::vector<fs::path> installed_dist_infos(const Host& host, const std::set<std::string>& names) {
  std::vector<fs::path> out;
  for (const auto& d : host.facts.installed)
    if (names.contains(d.normalized_name())) out.push_back(d.dist_info);
  return out;
}

// Write or update the lockfile after a commit.
// The machine the smoke test just passed on (lockfile VerifiedOn); none for planned GPUs, which
// nothing ran on.
std::optional<lockfile::VerifiedOn> verified_on(const PlanContext& ctx, const std::vector<std::string>& smoke) {
  const Host& host = ctx.host;
  if (host.gpus_planned || smoke.empty() || !host.facts.python) return std::nullopt;
  lockfile::VerifiedOn v;
  for (const auto& [name, cc] : host.gpus) v.gpus.push_back(fmt::format("{} ({})", name, cc.sm_name()));
  v.driver = host.driver;
  for (const auto& p : ctx.resolution.pins)
    if (auto c = probe::runtime_cuda(p.name, p.version)) v.cuda_runtime = c->to_string();
  if (auto t = probe::probe_toolkit(); t && t->version) v.toolkit = fmt::format("nvcc {} ({})", t->version->to_string(), t->from);
  v.interpreter = fmt::format("{} {}", host.facts.python->executable.string(), host.facts.python->version.to_string());
  auto platform = probe::probe_platform();
  if (platform.is_wsl()) v.environment = "WSL2";
  if (!platform.container.empty())
    v.environment += fmt::format("{}container ({})", v.environment.empty() ? "" : ", ", platform.container);
  v.smoke = smoke;
  return v;
}

Expected<std::string> update_lockfile(const Globals& g, const PlanContext& ctx, const std::vector<std::string>& request,
                                      const std::map<std::string, lockfile::LockedKernels>& verified,
                                      const std::map<std::string, LocalFile>& local,
                                      std::optional<lockfile::VerifiedOn> verified_here = std::nullopt) {
  fs::path path = g.lockfile;
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
  for (const auto& io : target.installed_only) warn(lockfile::installed_only_warning(io, path.string()));
  // A kept file the index gives no size for keeps the size an earlier apply learned (same sha256).
  if (const auto* old_t = lock.find(id))
    for (auto& p : target.packages)
      for (const auto& op : old_t->packages)
        if (!p.size && op.name == p.name && op.sha256 == p.sha256) p.size = op.size;
  // Where it was verified: this run's smoke test, else the record of the run that installed the
  // same files (a later apply that changed nothing).
  if (verified_here) target.verified_on = std::move(verified_here);
  else if (const auto* old_t = lock.find(id); old_t && old_t->packages == target.packages) target.verified_on = old_t->verified_on;
  lock.upsert(std::move(target));
  ENVFIX_TRY_VOID(lock.write(path));
  return path.string();
}

std::vector<std::string> lock_request(const PlanContext& ctx, const ApplyOptions& o) {
  if (!o.requests.empty() || !ctx.framework_mode()) return o.requests;
  std::vector<std::string> r;
  for (const auto& n : resolver::framework_family(*ctx.spec))
    if (ctx.resolution.find(n)) r.push_back(n);
  return r;
}

// What the kernel gate refused so far in this run, in order: apply falls through to the next
// candidate after each (the resolver sees the refused build's evidence), and lists them when none fits.
struct FallThrough {
  std::vector<std::string> refused;
  std::set<wheel::BuildKey> seen;
  std::set<wheel::BuildKey> accept_partial; // partly covered builds the resolver chose again: nothing better
  [[nodiscard]] Error decorate(Error e) const {
    for (auto it = refused.rbegin(); it != refused.rend(); ++it)
      e.causes.insert(e.causes.begin(), "refused by the kernel check in this run: " + *it);
    return e;
  }
};

// One attempt: plan, prepare, transaction. nullopt when the kernel gate refused a candidate that
// the next plan can avoid (recorded in `ft`).
Expected<std::optional<int>> apply_attempt(const Globals& g, const ApplyOptions& o, FallThrough& ft, bool& confirmed) {
  auto ctx = ENVFIX_TRY(build_plan(g, o.requests, PlanFlags{o.pre, o.allow_unhashed}));
  ENVFIX_TRY(check_installed(ctx, o.allow_breaking, o.allow_conda_overwrite)); // before anything changes: pip check of the after-state
  const auto& plan = ctx.plan;
  const Host& host = ctx.host;
  auto target = installer::InstallTarget::from_python_info(*host.facts.python);
  ENVFIX_TRY_VOID(installer::check_externally_managed(target, o.break_system_packages));
  const bool json_out = g.format == "json";

  if (!confirmed) human(host_line(host));
  if (!plan.channel.empty()) human(fmt::format("{} {} ({})", styled("chose:", Style::bold), plan.why, plan.index));
  for (const auto& w : plan.warnings) warn(w);
  human(styled(fmt::format("Resolved {} packages in {}", ctx.resolved, human_duration(ctx.seconds)), Style::dim));

  auto request = lock_request(ctx, o);
  if (plan.empty()) {
    human("Nothing to do: the environment already matches the plan.");
    auto lp = update_lockfile(g, ctx, request, {}, {});
    if (!lp) warn(fmt::format("lockfile not written: {}", lp.error().message));
    if (json_out) {
      auto j = plan_json(plan, host);
      j["applied"] = nullptr;
      j["lockfile"] = lp ? json(*lp) : json(nullptr);
      machine(j.dump(2));
    }
    return 0;
  }
  const bool ask = !o.yes && !json_out && ::isatty(STDIN_FILENO) && ::isatty(STDERR_FILENO);
  if (ask && !confirmed) {
    for (const auto& r : plan.remove) human(fmt::format(" {} {}=={}", styled("-", Style::red), r.name, r.version));
    for (const auto& i : plan.install) human(fmt::format(" {} {}=={}", styled("+", Style::green), i.name, i.version));
  }
  if (!confirmed && !confirm(o, g)) {
    human("Aborted; nothing was changed.");
    return 1;
  }
  confirmed = true;

  // Prepare: every file into the cache, hash-verified.
  auto t_prep = Clock::now();
  std::vector<index::Candidate> cands;
  for (const auto& i : plan.install) {
    const auto* pin = ctx.resolution.find(i.name);
    if (!pin) return make_error(ErrorCode::internal, fmt::format("{}: planned but not in the resolution", i.name));
    cands.push_back(pin->file);
  }
  auto wheels = ENVFIX_TRY(prepare_wheels(g, *ctx.client, cands, [&](std::size_t i) {
    return fmt::format("could not download {}=={} ({})", plan.install[i].name, plan.install[i].version, index::redact_url(cands[i].url));
  }));
  std::map<std::string, LocalFile> local;
  std::vector<std::string> names;
  std::vector<GateInput> gate_in;
  std::set<std::string> requested;
  for (const auto& r : ctx.request) requested.insert(r.normalized_name());
  std::set<std::string> family;
  if (ctx.framework_mode())
    for (const auto& n : resolver::framework_family(*ctx.spec)) family.insert(n);
  if (ctx.request.empty()) requested.insert(family.begin(), family.end());
  for (std::size_t i = 0; i < wheels.size(); ++i) {
    auto& w = wheels[i];
    w.requested = requested.contains(plan.install[i].name);
    if (!w.sha256) {
      auto h = ENVFIX_TRY(util::sha256_file_hex(w.wheel));
      std::error_code ec;
      local[plan.install[i].name] = {h, static_cast<std::uint64_t>(fs::file_size(w.wheel, ec))};
    } else if (!w.size) {
      std::error_code ec;
      auto size = w.cached ? w.cached->archive_size : static_cast<std::uint64_t>(fs::file_size(w.wheel, ec));
      local[plan.install[i].name] = {*w.sha256, size};
    }
    names.push_back(plan.install[i].name);
    gate_in.push_back({plan.install[i].name, plan.install[i].version, plan.install[i].filename});
  }
  const double t_download = since(t_prep);

  std::vector<fs::path> removals;
  for (const auto& r : plan.remove)
    for (const auto& d : host.facts.installed)
      if (d.normalized_name() == r.name && d.version.to_string() == r.version) removals.push_back(d.dist_info);

  const matrices::Framework* fw = ctx.framework_mode() && ctx.knowledge ? ctx.knowledge->framework(ctx.spec->name) : nullptr;
  auto store = evidence_store(*ctx.client);
  auto gate = make_gate(host, gate_in, plan.variant, family, &store, ctx.framework_mode(), ft.accept_partial);
  auto rr = run_transaction(host, target, wheels, names, removals, o, fw, plan.variant, gate, unpacked_cache_dir(*ctx.client), g);
  if (!rr) {
    const auto& ref = gate.refusal();
    // A framework set falls through to the next candidate: the refused build's evidence is now in
    // the store, so the next plan ranks it out (or, when only partly covered, below a full one).
    if (ref && ctx.framework_mode() && ft.seen.insert(ref->package.key).second) {
      auto text = fmt::format("{} ({} {})", ref->message(), plan.channel, plan.variant);
      warn(fmt::format("kernel check refused {}; trying the next candidate", text));
      ft.refused.push_back(std::move(text));
      if (ref->partial) ft.accept_partial.insert(ref->package.key);
      return std::optional<int>{};
    }
    return std::unexpected(ft.decorate(std::move(rr.error())));
  }
  rr->t_download = t_download;
  print_result(*rr, gate, g);

  if (rr->smoke_failure_kept) {
    print_error(*rr->smoke_failure_kept);
    human(fmt::format("The new set was left installed (--no-rollback); `envfix rollback` undoes transaction {}.", rr->txn.id));
    if (json_out) {
      auto j = plan_json(plan, host);
      j["applied"] = result_json(*rr);
      j["applied"]["smoke"]["error"] = rr->smoke_failure_kept->message;
      machine(j.dump(2));
    }
    return 2;
  }
  auto lp = update_lockfile(g, ctx, request, locked_kernels(gate), local, verified_on(ctx, rr->smoke_passed));
  if (lp) human(styled(fmt::format("Wrote {}", *lp), Style::dim));
  else warn(fmt::format("lockfile not written: {}", lp.error().message));
  if (json_out) {
    auto j = plan_json(plan, host);
    j["applied"] = result_json(*rr);
    j["applied"]["kernel_refusals"] = ft.refused;
    j["lockfile"] = lp ? json(*lp) : json(nullptr);
    machine(j.dump(2));
  }
  return 0;
}

Expected<int> run_apply(Globals g, const ApplyOptions& o) {
  ENVFIX_TRY_VOID(prepare_venv(g, o));
  FallThrough ft;
  bool confirmed = false;
  while (true) {
    auto r = apply_attempt(g, o, ft, confirmed);
    if (!r) return std::unexpected(ft.decorate(std::move(r.error())));
    if (*r) return **r;
  }
}

// ---------------------------------------------------------------------------------------------
// --locked

// 1-based line of the first occurrence of `needle` in `text` (0 when absent).
std::size_t line_of(const std::string& text, std::string_view needle) {
  auto pos = text.find(needle);
  if (pos == std::string::npos) return 0;
  return static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n')) + 1;
}

// Why `t` does not fit `host` ("" when it does).
std::vector<std::string> target_mismatch(const lockfile::LockTarget& t, const Host& host) {
  std::vector<std::string> why;
  std::set<std::string> hg, tg(t.host.gpus.begin(), t.host.gpus.end());
  for (const auto& [n, cc] : host.gpus) hg.insert(cc.sm_name());
  auto join = [](const std::set<std::string>& s) {
    std::string o;
    for (const auto& x : s) o += (o.empty() ? "" : "+") + x;
    return o.empty() ? std::string("none") : o;
  };
  if (hg != tg) why.push_back(fmt::format("gpus {} (host: {})", join(tg), join(hg)));
  if (t.host.python != host.python_mm) why.push_back(fmt::format("python {} (host: {})", t.host.python, host.python_mm));
  bool platform_ok = false;
  for (const auto& tag : host.python.tags)
    if (tag.platform == t.host.platform) { platform_ok = true; break; }
  if (!platform_ok) why.push_back(fmt::format("platform {} (not supported by the host interpreter)", t.host.platform));
  if (!t.host.driver_min.empty()) {
    if (host.driver.empty()) why.push_back(fmt::format("driver >= {} (host: no driver)", t.host.driver_min));
    else if (matrices::compare_driver_versions(host.driver, t.host.driver_min) < 0)
      why.push_back(fmt::format("driver >= {} (host: {})", t.host.driver_min, host.driver));
  }
  return why;
}

Expected<int> run_locked(Globals g, const ApplyOptions& o) {
  if (!o.requests.empty())
    return make_error(ErrorCode::invalid_input, "--locked installs the lockfile's set; it takes no requirements",
                      "drop the requirements, or run `envfix apply REQ...` to re-resolve");
  ENVFIX_TRY_VOID(prepare_venv(g, o));
  auto text = util::read_file(g.lockfile);
  if (!text) return make_error(ErrorCode::not_found, fmt::format("cannot read the lockfile {}", g.lockfile), "run `envfix lock` or `envfix apply` first, or pass --lockfile PATH");
  auto lock = ENVFIX_TRY(lockfile::LockFile::parse(*text, g.lockfile));
  auto knowledge = ENVFIX_TRY(load_knowledge(g));
  auto host = ENVFIX_TRY(make_host(g, knowledge.get()));
  human(host_line(host));

  const lockfile::LockTarget* chosen = nullptr;
  std::vector<std::string> diffs;
  for (const auto& t : lock.targets) {
    auto why = target_mismatch(t, host);
    if (why.empty()) {
      chosen = &t;
      break;
    }
    std::string s;
    for (const auto& w : why) s += (s.empty() ? "" : "; ") + w;
    diffs.push_back(fmt::format("target {} needs {}", t.id, s));
  }
  if (!chosen)
    return std::unexpected(Error{ErrorCode::not_found,
                                 fmt::format("no target in {} matches this host ({} target{})", g.lockfile, lock.targets.size(),
                                             lock.targets.size() == 1 ? "" : "s"),
                                 diffs, "run `envfix lock --target ...` for this host, or plan for it with --gpu/--python-version"});
  human(fmt::format("{} {} from {}", styled("locked:", Style::bold), chosen->id, g.lockfile));
  {
    std::vector<std::pair<std::string, std::string>> have;
    for (const auto& d : host.facts.installed) have.emplace_back(d.normalized_name(), d.version.to_string());
    if (auto unmet = lockfile::unmet_installed_only(*chosen, have); !unmet.empty())
      return std::unexpected(Error{ErrorCode::invalid_input,
                                   fmt::format("{} target {} keeps {} package{} no index serves, and this environment lacks {}", g.lockfile,
                                               chosen->id, unmet.size(), unmet.size() == 1 ? "" : "s", unmet.front()),
                                   unmet, "install those versions first (from where they came), or re-lock with an index that serves "
                                          "them; nothing was changed"});
  }

  auto target = installer::InstallTarget::from_python_info(*host.facts.python);
  ENVFIX_TRY_VOID(installer::check_externally_managed(target, o.break_system_packages));
  auto client = ENVFIX_TRY(make_index_client(g));

  std::vector<index::Candidate> cands;
  std::set<std::string> lock_names;
  for (const auto& p : chosen->packages) {
    index::Candidate c;
    c.project = p.name;
    c.filename = p.filename;
    c.url = p.url;
    c.sha256 = p.sha256;
    c.size = p.size;
    c.index_url = chosen->index;
    for (const auto& dir : g.find_links) {
      std::error_code ec;
      fs::path f = fs::path(dir) / p.filename;
      if (fs::is_regular_file(f, ec)) {
        c.url = "file://" + fs::absolute(f, ec).string();
        break;
      }
    }
    cands.push_back(std::move(c));
    lock_names.insert(p.name);
  }
  if (!confirm(o, g)) {
    human("Aborted; nothing was changed.");
    return 1;
  }
  auto t_prep = Clock::now();
  auto wheels = ENVFIX_TRY(prepare_wheels(g, *client, cands, [&](std::size_t i) {
    const auto& p = chosen->packages[i];
    std::size_t line = line_of(*text, p.url);
    return fmt::format("locked package {}=={} ({}:{}): {}", p.name, p.version, g.lockfile, line, index::redact_url(cands[i].url));
  }));
  std::vector<std::string> names;
  std::set<std::string> requested;
  for (const auto& r : lock.request)
    if (auto req = specs::Requirement::parse(r)) requested.insert(req->normalized_name());
  for (std::size_t i = 0; i < wheels.size(); ++i) {
    wheels[i].requested = requested.contains(chosen->packages[i].name);
    names.push_back(chosen->packages[i].name);
  }
  const double t_download = since(t_prep);

  // Remove the framework family members the lock does not have (same names are replaced anyway).
  const matrices::Framework* fw = nullptr;
  std::set<std::string> family;
  if (!lock.framework.empty() && knowledge) {
    fw = knowledge->framework(lock.framework);
    if (fw) {
      family.insert(specs::normalize_name(fw->main_package));
      for (const auto& c : fw->companions) family.insert(specs::normalize_name(c));
      for (const auto& c : fw->optional_companions) family.insert(specs::normalize_name(c));
    }
  }
  for (const auto& n : lock_names) family.erase(n);
  auto removals = installed_dist_infos(host, family);
  {
    // Every locked package replaces its installed namesake: conda's are refused here too.
    resolver::Plan touched;
    for (const auto& d : host.facts.installed)
      if (lock_names.contains(d.normalized_name()) || family.contains(d.normalized_name()))
        touched.remove.push_back({d.normalized_name(), d.version.to_string(), "replaced"});
    ENVFIX_TRY_VOID(check_conda(host.installed, touched, o.allow_conda_overwrite));
    // pip check of the after-state, as for a resolved plan: a lock made elsewhere may break a neighbour.
    for (const auto& p : chosen->packages) touched.install.push_back({p.name, p.version, p.filename, p.url, p.sha256, p.size, {}, {}});
    ENVFIX_TRY(check_breaking(host.installed, touched, host.python.markers, o.allow_breaking));
    for (const auto& w : touched.warnings) warn(w);
  }

  std::vector<GateInput> gate_in;
  for (const auto& p : chosen->packages) gate_in.push_back({p.name, p.version, p.filename});
  std::set<std::string> fw_family;
  if (fw) {
    fw_family.insert(specs::normalize_name(fw->main_package));
    for (const auto& c : fw->companions) fw_family.insert(specs::normalize_name(c));
  }
  auto store = evidence_store(*client);
  // A lockfile is exact: a refusal is final, and partial coverage is a warning.
  auto gate = make_gate(host, gate_in, chosen->variant, fw_family, &store, false, {});
  auto rr = ENVFIX_TRY(run_transaction(host, target, wheels, names, removals, o, fw, chosen->variant, gate,
                                       unpacked_cache_dir(*client), g));
  rr.t_download = t_download;
  print_result(rr, gate, g);
  if (rr.smoke_failure_kept) {
    print_error(*rr.smoke_failure_kept);
    human(fmt::format("The locked set was left installed (--no-rollback); `envfix rollback` undoes transaction {}.", rr.txn.id));
    return 2;
  }
  if (g.format == "json") {
    json j;
    j["lockfile"] = g.lockfile;
    j["target"] = chosen->id;
    j["applied"] = result_json(rr);
    machine(j.dump(2));
  }
  return 0;
}

} // namespace

void add_apply_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<ApplyOptions>();
  auto* cmd = app.add_subcommand("apply", "Resolve, install as one transaction, verify, and write the lockfile");
  cmd->add_option("requirements", o->requests, "Requirements (default: the framework packages installed)");
  cmd->add_flag("-y,--yes", o->yes, "Do not ask for confirmation");
  cmd->add_flag("--locked", o->locked, "Install exactly the lockfile target that matches this host");
  cmd->add_flag("--no-verify", o->no_verify, "Skip the smoke test after installing");
  cmd->add_flag("--no-rollback", o->no_rollback, "Leave the new set installed when the smoke test fails");
  cmd->add_flag("--no-backup", o->no_backup, "Do not keep the removed files for `envfix rollback`");
  cmd->add_flag("--break-system-packages", o->break_system_packages, "Allow modifying an externally managed (PEP 668) interpreter");
  cmd->add_option("--venv", o->venv, "Create (or reuse) a venv at PATH and install into it");
  cmd->add_option("--link-mode", o->link_mode,
                  "How files come from the unpacked cache: auto (clone, else hardlink, else copy), clone, hardlink, copy")
      ->check(CLI::IsMember({"auto", "clone", "hardlink", "copy"}));
  cmd->add_flag("--allow-unhashed", o->allow_unhashed, "Accept files whose index gives no sha256 (hashed after download)");
  cmd->add_flag("--pre", o->pre, "Allow pre-releases for every package");
  cmd->add_flag("--allow-breaking", o->allow_breaking, "Apply even when an installed package's requirement would break");
  cmd->add_flag("--allow-conda-overwrite", o->allow_conda_overwrite, "Remove or overwrite packages conda owns (conda-meta records, INSTALLER conda)");
  cmd->add_option("--smoke-timeout", o->smoke_timeout, "Seconds each smoke-test step may run (default 600)");
  cmd->add_option("--smoke-layers", o->smoke_layers,
                  "The smoke test: envfix verify's layers, comma-separated: repro, model (default both)")
      ->check([](const std::string& v) -> std::string {
        for (const auto& l : split_commas(v))
          if (l != "repro" && l != "model") return fmt::format("'{}': the layers are repro and model", l);
        return split_commas(v).empty() ? std::string("name at least one layer (or use --no-verify)") : std::string();
      });
  cmd->callback([&g, o] {
    g.exit_code = finish_command(o->locked ? run_locked(g, *o) : run_apply(g, *o));
  });
}

} // namespace envfix::cli
