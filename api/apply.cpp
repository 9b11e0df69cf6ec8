// `apply` and `apply --locked` (see apply.hpp).
#include "api/apply.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "api/lock.hpp"
#include "fetch/fetch.hpp"
#include "fetch/lock_target.hpp"
#include "fetch/locked.hpp"
#include "smoke/smoke.hpp"
#include "probe/base_env.hpp"
#include "probe/host_facts.hpp"
#include "installer/env_lock.hpp"
#include "installer/install_target.hpp"
#include "installer/kernel_gate.hpp"
#include "installer/transaction.hpp"
#include "lockfile/lockfile.hpp"
#include "lockfile/select.hpp"
#include "resolver/installed.hpp"
#include "resolver/locked.hpp"
#include "resolver/plan.hpp"
#include "resolver/resolver.hpp"
#include "specs/name.hpp"
#include "specs/wheel_filename.hpp"
#include "util/env.hpp"
#include "util/fs.hpp"
#include "util/parallel.hpp"
#include "util/sha256.hpp"
#include "util/subprocess.hpp"
#include "util/strings.hpp"
#include "util/text.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::api {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The kernel gate (installer/kernel_gate.hpp) for the wheels about to be installed, judged for the
// host's GPUs and driver (fetch::gate_packages: each package's role and evidence key).
installer::KernelGate make_gate(const Host& host, std::vector<installer::GatePackage> pkgs, const wheel::EvidenceStore* store,
                                bool refuse_partial, std::set<wheel::BuildKey> accept_partial) {
  installer::GateOptions go;
  for (const auto& [name, cc] : host.gpus) go.gpus.push_back({name, cc});
  go.driver_cuda = host.driver_cuda;
  go.evidence = store;
  go.refuse_partial_framework = refuse_partial;
  go.accept_partial = std::move(accept_partial);
  go.threads = util::configured_threads();
  return installer::KernelGate(std::move(pkgs), std::move(go));
}

// The interpreter to install into: --venv creates (or reuses) a venv from --python / python3.
Expected<Options> prepare_venv(Options o, const ApplyRequest& r, Reporter& rep) {
  if (r.venv.empty()) return o;
  fs::path base = o.python.empty() ? util::find_in_path("python3").value_or("python3") : fs::path(o.python);
  auto py = ENVFIX_TRY(installer::create_venv(r.venv, base));
  rep.note(util::msg("Using venv {} ({})", r.venv, py.string()));
  o.python = py.string();
  return o;
}

// The environment lock, taken before anything is probed or planned (installer/env_lock.hpp) and held
// through the install: a second apply on the same environment waits here, then plans on what the
// first left.
Expected<std::optional<installer::EnvLock>> lock_before_planning(const Options& o, Reporter& rep) {
  auto python = probe::default_interpreter(o.python.empty() ? std::nullopt : std::optional<fs::path>(o.python));
  const auto prefix = python ? installer::lockable_prefix(*python) : std::nullopt; // no interpreter: make_host says why
  if (!prefix) return std::optional<installer::EnvLock>{};
  installer::EnvLockOptions lo;
  lo.on_wait = [&rep](const util::Message& text) { rep.note(text); };
  return std::optional<installer::EnvLock>(ENVFIX_TRY(installer::EnvLock::acquire(*prefix, lo)));
}

// The transaction reports its steps as progress notes (installer/transaction.hpp, `progress`); this
// is the one place that reads them, turning them into typed phases for timings and the reporter.
// The reporter's phase for a transaction phase (unpacking is reported before the transaction
// runs, through unpack_progress; rolling back ends the phases).
std::optional<Phase> phase_of(installer::TxnPhase p) {
  switch (p) {
  case installer::TxnPhase::kernel_check: return Phase::kernel_check;
  case installer::TxnPhase::remove: return Phase::uninstall;
  case installer::TxnPhase::install: return Phase::install;
  case installer::TxnPhase::verify: return Phase::verify;
  case installer::TxnPhase::unpack:
  case installer::TxnPhase::rolling_back: return std::nullopt;
  }
  return std::nullopt;
}

// The smoke test, unless --no-verify (smoke/smoke.hpp decides the steps and the device). It checks
// what the set holds afterwards: the wheels installed and what stays installed, never a companion
// the transaction removes (the covering nightly without torchaudio, issue 56).
std::vector<smoke::SmokeStep> plan_smoke(const Host& host, const std::vector<std::string>& wheel_names,
                                         const std::vector<fs::path>& removals, const ApplyRequest& o,
                                         const matrices::Framework* framework, std::string_view variant, Smoke& out) {
  const auto* v = framework ? framework->variant(variant) : nullptr;
  smoke::ApplySmokeRequest req{.framework = framework, .cpu_build = v && v->kind == "cpu", .present = wheel_names};
  for (const auto& p : host.installed)
    if (std::find(removals.begin(), removals.end(), p.dist_info) == removals.end()) req.present.push_back(p.name);
  req.layers.clear();
  for (const auto& layer : util::split(o.smoke_layers, ',')) // cli/command_apply.cpp refuses other names
    if (auto l = smoke::parse_layer(layer)) req.layers.push_back(*l);
  req.has_gpu = !host.gpus.empty();
  req.gpus_planned = host.gpus_planned;
  req.skipped = o.no_verify;
  auto planned = smoke::plan_apply_smoke(req);
  out.note = std::move(planned.note);
  out.cpu_why = smoke::describe(planned.cpu);
  return std::move(planned.steps);
}

struct TxnInput {
  const Host* host = nullptr;
  const installer::InstallTarget* target = nullptr;
  std::vector<installer::WheelToInstall> wheels;
  std::vector<std::string> wheel_names;
  std::vector<fs::path> removals;
  const matrices::Framework* framework = nullptr;
  std::string variant;
  fs::path unpacked_cache;
};

// The transaction's options from the request: backups, link mode, threads, the kernel check.
Expected<installer::TransactionOptions> transaction_options(const TxnInput& in, const ApplyRequest& o,
                                                            installer::KernelGate& gate) {
  installer::TransactionOptions to;
  to.break_system_packages = o.break_system_packages;
  to.keep_backup = !o.no_backup;
  to.keep_backups = o.keep_backups;
  to.unpacked_cache = in.unpacked_cache;
  std::string mode = !o.link_mode.empty() ? o.link_mode : util::get_env(util::Env::link_mode).value_or("auto");
  auto link_mode = installer::parse_link_mode(mode);
  if (!link_mode)
    return std::unexpected(std::move(link_mode.error()).context(o.link_mode.empty() ? "$ENVFIX_LINK_MODE" : "--link-mode"));
  to.link_mode = *link_mode;
  to.threads = util::configured_threads();
  to.kernel_check = [&gate](const std::vector<installer::StagedObject>& sos) { return gate(sos); };
  return to;
}

// The smoke test as the transaction's verify step (none when plan_smoke gave no steps). A failure
// under --no-rollback is kept in the result and the set stays.
void wire_smoke(installer::TransactionOptions& to, std::vector<smoke::SmokeStep> steps, const fs::path& python,
                const ApplyRequest& o, Applied& rr) {
  if (steps.empty()) return;
  auto timeout = std::chrono::milliseconds(std::chrono::seconds(o.smoke_timeout_s));
  to.verify = [&rr, no_rollback = o.no_rollback, steps = std::move(steps), python, timeout]() -> Expected<void> {
    auto r = smoke::run_smoke(python, steps, timeout);
    if (r) {
      rr.smoke.passed = r->passed;
      rr.smoke.seconds = r->seconds;
      rr.smoke.interpreters = r->interpreters;
      return {};
    }
    if (no_rollback) {
      rr.smoke.failure_kept = r.error();
      return {};
    }
    return std::unexpected(r.error());
  };
}

// Stage, kernel check, uninstall and install times from when each phase began (t0: the run's start).
void fill_timings(Timings& t, const std::map<Phase, Clock::time_point>& began, Clock::time_point t0) {
  auto at = [&](Phase p) { return began.contains(p) ? std::optional(began.at(p)) : std::nullopt; };
  auto secs = [](Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  const auto t_rm = at(Phase::uninstall), t_in = at(Phase::install), t_kc = at(Phase::kernel_check);
  const auto end = at(Phase::verify).value_or(Clock::now());
  if (t_rm) {
    auto staged = t_kc.value_or(*t_rm);
    t.stage = secs(t0, staged);
    t.kernels = secs(staged, *t_rm);
  }
  if (t_rm && t_in) t.uninstall = secs(*t_rm, *t_in);
  t.install = t_in ? secs(*t_in, end) : since(t0);
}

// Runs the transaction with the kernel check and the smoke test wired in.
Expected<Applied> run_transaction(const TxnInput& in, const ApplyRequest& o, installer::KernelGate& gate, Reporter& rep) {
  Applied rr;
  // prepare_wheels began the unpack phase when it unpacked during the downloads.
  if (std::none_of(in.wheels.begin(), in.wheels.end(), [](const auto& w) { return w.unpacked_now; })) rep.phase(Phase::unpack);
  auto to = ENVFIX_TRY(transaction_options(in, o, gate));
  std::map<Phase, Clock::time_point> began;
  to.unpack_progress = [&rep](std::uint64_t done, std::uint64_t total) { rep.progress(Phase::unpack, done, total, {}); };
  to.progress = [&](const installer::TxnEvent& e) {
    if (auto p = phase_of(e.phase); p && !began.contains(*p)) {
      began[*p] = Clock::now();
      rep.phase(*p);
    }
  };
  wire_smoke(to, plan_smoke(*in.host, in.wheel_names, in.removals, o, in.framework, in.variant, rr.smoke), in.target->python, o,
             rr);
  for (const auto& w : in.wheels) rr.unpacked_while_downloading += w.unpacked_now ? 1 : 0;
  installer::Transaction txn(*in.target, to);
  for (const auto& d : in.removals) txn.remove(d);
  for (const auto& w : in.wheels) txn.install(w);
  auto t0 = Clock::now();
  auto res = txn.run();
  if (!res) return std::unexpected(std::move(res.error()));
  fill_timings(rr.timings, began, t0);
  rr.txn = std::move(*res);
  rr.gate_warnings = gate.warnings();
  rr.gate_notes = gate.notes();
  return rr;
}

// What the kernel gate refused so far in this run, in order: apply falls through to the next
// candidate after each (the resolver sees the refused build's evidence), and lists them when none fits.
struct FallThrough {
  std::vector<util::Message> refused;
  std::set<wheel::BuildKey> seen;
  std::set<wheel::BuildKey> accept_partial; // partly covered builds the resolver chose again: nothing better
  bool confirmed = false;
  [[nodiscard]] Error decorate(Error e) const {
    for (auto it = refused.rbegin(); it != refused.rend(); ++it) {
      auto m = util::msg("refused by the kernel check in this run: {}", *it);
      e.causes.insert(e.causes.begin(), m.text);
      e.said.push_back(std::move(m));
    }
    return e;
  }
};

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
  // The interpreter by kind and version, not by path: a committed lock must not carry one
  // developer's absolute paths (nor change when another developer's venv lives elsewhere).
  const auto& py = *host.facts.python;
  v.interpreter = fmt::format("{} {}{}", py.executable.filename().string(), py.version.to_string(), py.is_venv ? " (venv)" : "");
  auto platform = probe::probe_platform();
  if (platform.is_wsl()) v.environment = "WSL2";
  if (!platform.container.empty())
    v.environment += fmt::format("{}container ({})", v.environment.empty() ? "" : ", ", platform.container);
  v.smoke = smoke;
  return v;
}

void write_lockfile(const Options& o, const PlanContext& ctx, const std::vector<std::string>& requirements,
                    const std::map<std::string, lockfile::LockedKernels>& verified, const std::map<std::string, LocalFile>& local,
                    ApplyReport& report, std::optional<lockfile::VerifiedOn> verified_here = std::nullopt) {
  auto lp = update_lockfile(o.lockfile, ctx, recorded_request(ctx, requirements), verified, local, &report.lockfile_warnings,
                            std::move(verified_here));
  if (lp)
    report.lockfile = *lp;
  else
    report.lockfile_error = lp.error();
}

// The files of the plan or the lock on disk (fetch/fetch.hpp), told through the reporter.
Expected<fetch::PreparedSet> prepare(index::IndexClient& client, const std::vector<fetch::WantedWheel>& want,
                                     std::set<std::string> family, const std::function<std::string(std::size_t)>& where,
                                     Reporter& rep) {
  fetch::FetchOptions fo;
  fo.threads = util::configured_threads();
  fo.early_unpack = util::get_env(util::Env::early_unpack).value_or("1") != "0";
  auto phase = [](fetch::Stage s) { return s == fetch::Stage::download ? Phase::download : Phase::unpack; };
  fetch::Progress told{[&](fetch::Stage s) { rep.phase(phase(s)); },
                       [&](fetch::Stage s, std::uint64_t d, std::uint64_t t, std::size_t fd, std::size_t fn) {
                         rep.progress(phase(s), d, t, {fd, fn});
                       },
                       [&](const util::Message& w) { rep.warning(w); }};
  // Ctrl-C while downloading ends the transfers (their partial files removed) and says so, instead
  // of the default handler's silent exit that left .part files in the cache (issue 36, item 7).
  util::InterruptScope interrupts;
  auto prepared = fetch::prepare(client, want, std::move(family), where, fo, told);
  if (!prepared && prepared.error().code == ErrorCode::interrupted)
    prepared.error().advise(util::msg("nothing was installed or removed, and the partial downloads were deleted; the "
                                      "files already downloaded stay in the cache for the next run"));
  return prepared;
}

// The plan's files, prepared; each one's own METADATA checked against what the resolver used.
Expected<fetch::PreparedSet> prepare_set(const PlanContext& ctx, ApplyReporter& rep) {
  const auto& plan = ctx.plan;
  std::set<std::string> requested, family;
  for (const auto& r : ctx.request) requested.insert(r.normalized_name());
  if (ctx.framework_mode())
    for (const auto& n : resolver::framework_family(*ctx.spec)) family.insert(n);
  if (ctx.request.empty()) requested.insert(family.begin(), family.end());
  std::vector<fetch::WantedWheel> want;
  for (const auto& i : plan.install) {
    const auto* pin = ctx.resolution.find(i.name);
    if (!pin) return make_error(ErrorCode::internal, util::msg("{}: planned but not in the resolution", i.name));
    want.push_back({i.name, i.version, pin->file, requested.contains(i.name)});
  }
  auto where = [&](std::size_t i) {
    return fmt::format("could not download {}=={} ({})", want[i].name, want[i].version, index::redact_url(want[i].file.url));
  };
  auto out = ENVFIX_TRY(prepare(*ctx.client, want, std::move(family), where, rep));
  ENVFIX_TRY_VOID(fetch::check_metadata_agrees(*ctx.client, ctx.resolution, plan, out.wheels));
  return out;
}

// A framework set falls through to the next candidate when the kernel gate refused a build the
// next plan can avoid: the refused build's evidence is now in the store, so the next plan ranks it
// out (or, when only partly covered, below a full one). Recorded in `ft`; false: the refusal is final.
bool falls_through(const installer::KernelGate& gate, const PlanContext& ctx, FallThrough& ft, ApplyReporter& rep) {
  const auto& ref = gate.refusal();
  if (!ref || !ctx.framework_mode() || !ft.seen.insert(ref->package.key).second) return false;
  auto text = util::msg("{} ({} {})", ref->message(), ctx.plan.channel, ctx.plan.variant);
  rep.warning(util::msg("kernel check refused {}; trying the next candidate", text));
  ft.refused.push_back(std::move(text));
  if (ref->partial) ft.accept_partial.insert(ref->package.key);
  return true;
}

// The request as the lockfile records it: the command line's requirements and the -r files'.
std::vector<std::string> requested(const ApplyRequest& o, const PlanContext& ctx) {
  auto r = o.requirements;
  r.insert(r.end(), ctx.file_requirements.begin(), ctx.file_requirements.end());
  return r;
}

// The report of an attempt that ends before anything changes: nothing to do (the lockfile still
// written), or the user declined the plan; nullopt to go on.
std::optional<ApplyReport> stop_before_changes(const Options& g, const ApplyRequest& o, PlanContext& ctx, FallThrough& ft,
                                               ApplyReporter& rep) {
  ApplyReport report;
  if (o.dry_run) {
    report.outcome = ApplyReport::Outcome::dry_run; // nothing downloaded, nothing written
  } else if (ctx.plan.empty()) {
    report.outcome = ApplyReport::Outcome::nothing_to_do;
    write_lockfile(g, ctx, requested(o, ctx), {}, {}, report);
  } else if (!ft.confirmed && !rep.proceed(ctx)) {
    report.outcome = ApplyReport::Outcome::aborted;
  } else {
    ft.confirmed = true;
    return std::nullopt;
  }
  report.plan = std::move(ctx);
  return report;
}

// One attempt: plan, prepare, transaction. nullopt when the kernel gate refused a candidate that
// the next plan can avoid (recorded in `ft`).
Expected<std::optional<ApplyReport>> apply_attempt(const Options& g, const ApplyRequest& o, FallThrough& ft, ApplyReporter& rep) {
  PlanRequest pr{.requirements = o.requirements,
                 .files = o.files,
                 .pre = o.pre,
                 .allow_unhashed = o.allow_unhashed,
                 .upgrade = o.upgrade,
                 .reinstall = o.reinstall};
  auto ctx = ENVFIX_TRY(build_plan(g, pr));
  ENVFIX_TRY(
      check_installed(ctx, o.allow_breaking, o.allow_conda_overwrite)); // before anything changes: pip check of the after-state
  const auto& plan = ctx.plan;
  const Host& host = ctx.host;
  auto target = installer::InstallTarget::from_python_info(*host.facts.python);
  ENVFIX_TRY_VOID(installer::check_externally_managed(target, o.break_system_packages));
  rep.planned(ctx, !ft.confirmed);

  if (auto early = stop_before_changes(g, o, ctx, ft, rep)) return std::optional<ApplyReport>(std::move(*early));
  ApplyReport report;
  auto prep = ENVFIX_TRY(prepare_set(ctx, rep));
  TxnInput in{&host, &target, std::move(prep.wheels), std::move(prep.names),
              {},    nullptr, plan.variant,           fetch::unpacked_cache_dir(*ctx.client)};
  for (const auto& r : plan.remove)
    if (!r.dist_info.empty()) in.removals.push_back(r.dist_info); // empty: a dist not read from this disk
  in.framework = ctx.framework_mode() && ctx.knowledge ? ctx.knowledge->framework(ctx.spec->name) : nullptr;
  auto store = evidence_store(*ctx.client);
  auto gate =
      make_gate(host, fetch::gate_packages(prep.gate_in, plan.variant, prep.family, ctx.resolution.required_through(prep.family)),
                &store, ctx.framework_mode(), ft.accept_partial);
  auto rr = run_transaction(in, o, gate, rep);
  if (!rr) {
    if (falls_through(gate, ctx, ft, rep)) return std::optional<ApplyReport>{};
    return std::unexpected(ft.decorate(std::move(rr.error())));
  }
  rr->timings.download = prep.download_seconds;
  for (const auto& m : ft.refused) report.kernel_refusals.push_back(m.text);
  // The lockfile is written right after the commit, unless the smoke test failed and the set was
  // only kept (--no-rollback).
  if (!rr->smoke.failure_kept)
    write_lockfile(g, ctx, requested(o, ctx), fetch::kernels_read(gate), prep.local, report, verified_on(ctx, rr->smoke.passed));
  report.applied = std::move(*rr);
  report.plan = std::move(ctx);
  return report;
}

// 1-based line of the first occurrence of `needle` in `text` (0 when absent).
std::size_t line_of(const std::string& text, std::string_view needle) {
  auto pos = text.find(needle);
  if (pos == std::string::npos) return 0;
  return static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n')) + 1;
}

// The packages the kernel gate holds to a framework's standard (its main package and companions).
std::set<std::string> family_set(const matrices::Framework* fw) {
  if (!fw) return {};
  auto f = fw->family();
  return {f.begin(), f.end()};
}

} // namespace

Expected<ApplyReport> apply(const Options& options, const ApplyRequest& r, ApplyReporter& rep) {
  const Options o = ENVFIX_TRY(prepare_venv(options, r, rep));
  const auto env_lock = ENVFIX_TRY(lock_before_planning(o, rep));
  FallThrough ft;
  while (true) {
    auto a = apply_attempt(o, r, ft, rep);
    if (!a) return std::unexpected(ft.decorate(std::move(a.error())));
    if (*a) return std::move(**a);
  }
}

namespace {

// apply --locked --mirror M: the locked files of the framework's index, re-pointed from the mirror the
// lock was made against to M (fetch/locked.hpp). Said, never silent.
void repoint_to_mirror(std::vector<index::Candidate>& cands, const lockfile::LockTarget& chosen, const matrices::Framework* fw,
                       const std::string& mirror, ApplyReporter& rep) {
  if (mirror.empty()) return;
  const std::string old = fw ? fw->mirror_of_index(chosen.index, chosen.channel, chosen.variant) : "";
  const auto r = fetch::repoint(cands, old, mirror);
  if (!r.note.empty()) rep.note(r.note);
  if (!r.warning.empty()) rep.warning(r.warning);
}

// The lockfile read and parsed, the host probed, and the target that matches it (not_found, with
// each target's reason, when none does; its installed-only packages must be here already).
struct OpenLock {
  std::string text;
  lockfile::LockFile lock;
  std::unique_ptr<matrices::Knowledge> knowledge;
  Host host;
  const lockfile::LockTarget* chosen = nullptr;
};

Expected<OpenLock> open_lock(const Options& g, ApplyReporter& rep) {
  auto text = util::read_file(g.lockfile);
  if (!text)
    return make_error(ErrorCode::not_found, util::msg("cannot read the lockfile {}", g.lockfile),
                      util::msg("run `envfix lock` or `envfix apply` first, or pass --lockfile PATH"));
  OpenLock lk{*text, ENVFIX_TRY(lockfile::LockFile::parse(*text, g.lockfile)), ENVFIX_TRY(load_knowledge(g)), {}, nullptr};
  lk.host = ENVFIX_TRY(make_host(g, lk.knowledge.get()));
  rep.locked_host(lk.host);
  auto sel = lockfile::select(lk.lock, host_view(lk.host));
  if (!sel.chosen)
    return std::unexpected(
        Error::made(ErrorCode::not_found,
                    lk.lock.targets.size() == 1
                        ? util::msg("no target in {} matches this host (1 target)", g.lockfile)
                        : util::msg("no target in {} matches this host ({} targets)", g.lockfile, lk.lock.targets.size()),
                    util::plains(sel.reasons()),
                    util::msg("run `envfix lock --target ...` for this host, or plan for it with --gpu/--python-version")));
  lk.chosen = sel.chosen;
  rep.locked_target(lk.chosen->id, g.lockfile);
  // A target's installed-only packages (no index serves them) must already be in the environment.
  std::vector<std::pair<std::string, std::string>> have;
  for (const auto& d : lk.host.facts.installed) have.emplace_back(d.normalized_name(), d.version.to_string());
  ENVFIX_TRY_VOID(lockfile::check_installed_only(*lk.chosen, have, g.lockfile));
  return lk;
}

} // namespace

Expected<ApplyReport> apply_locked(const Options& options, const ApplyRequest& o, ApplyReporter& rep) {
  if (!o.requirements.empty() || !o.files.requirements.empty() || !o.files.constraints.empty())
    return make_error(ErrorCode::invalid_input, util::msg("--locked installs the lockfile's set; it takes no requirements"),
                      util::msg("drop the requirements, or run `envfix apply REQ...` to re-resolve"));
  const Options g = ENVFIX_TRY(prepare_venv(options, o, rep));
  const auto env_lock = ENVFIX_TRY(lock_before_planning(g, rep));
  auto lk = ENVFIX_TRY(open_lock(g, rep));
  const auto* chosen = lk.chosen;
  const Host& host = lk.host;
  auto target = installer::InstallTarget::from_python_info(*host.facts.python);
  ENVFIX_TRY_VOID(installer::check_externally_managed(target, o.break_system_packages));
  auto client = ENVFIX_TRY(make_index_client(g));
  const matrices::Framework* fw =
      !lk.lock.framework.empty() && lk.knowledge ? lk.knowledge->framework(lk.lock.framework) : nullptr;
  auto cands = fetch::locked_candidates(*chosen, g.find_links);
  repoint_to_mirror(cands, *chosen, fw, g.mirror, rep);
  ApplyReport report;
  report.locked_target = chosen->id;
  report.lockfile = g.lockfile;
  if (!rep.proceed_locked()) {
    report.outcome = ApplyReport::Outcome::aborted;
    return report;
  }
  auto where = [&](std::size_t i) {
    const auto& p = chosen->packages[i];
    return fmt::format("locked package {}=={} ({}:{}): {}", p.name, p.version, g.lockfile, line_of(lk.text, p.url),
                       index::redact_url(cands[i].url));
  };
  // A lockfile is exact: a refusal is final, and partial coverage is a warning.
  const auto family = fw ? fw->family(true) : std::vector<std::string>{};
  auto prep = ENVFIX_TRY(prepare(*client, fetch::locked_wanted(lk.lock, *chosen, cands), family_set(fw), where, rep));
  TxnInput in{&host, &target, std::move(prep.wheels), std::move(prep.names),
              {},    fw,      chosen->variant,        fetch::unpacked_cache_dir(*client)};
  auto changes = ENVFIX_TRY(resolver::locked_changes(host.installed, fetch::locked_pins(*chosen, cands), family,
                                                     host.python.markers, o.allow_conda_overwrite, o.allow_breaking));
  for (const auto& w : changes.warnings) rep.warning(w);
  in.removals = std::move(changes.removals);
  auto store = evidence_store(*client);
  auto gate = make_gate(host, fetch::gate_packages(prep.gate_in, chosen->variant, prep.family, std::nullopt), &store, false, {});
  auto rr = ENVFIX_TRY(run_transaction(in, o, gate, rep));
  rr.timings.download = prep.download_seconds;
  report.applied = std::move(rr);
  return report;
}

int interrupt_signal() {
  const int txn = installer::interrupt_signal();
  return txn ? txn : util::interrupt_signal();
}

} // namespace envfix::api
