// envfix apply [REQ...]: parses, calls api::apply (api/apply.hpp: plan, prepare, transaction, smoke
// test, lockfile) and renders its report (docs/json.md "apply"). `--locked` installs exactly a
// lockfile target instead (api::apply_locked).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "api/apply.hpp"
#include "cli/globals.hpp"
#include "cli/progress.hpp"
#include "cli/render.hpp"
#include "cli/views.hpp"
#include "i18n/i18n.hpp"
#include "specs/name.hpp"
#include "util/strings.hpp"

namespace envfix::cli {

namespace {

using nlohmann::json;

struct ApplyOptions {
  api::ApplyRequest request;
  bool yes = false;
  bool locked = false;
};

bool confirm(const ApplyOptions& o, const Globals& g) {
  if (o.yes) return true;
  if (g.format == "json" || !::isatty(STDIN_FILENO) || !::isatty(STDERR_FILENO)) {
    human(styled(i18n::tr("no TTY: proceeding without confirmation (pass --yes to silence this note)"), Style::dim));
    return true;
  }
  std::fputs(i18n::for_terminal(i18n::trs("Proceed? [y/N] ")).c_str(), stderr);
  std::fflush(stderr);
  std::string line;
  if (!std::getline(std::cin, line)) return false;
  return line == "y" || line == "Y" || line == "yes";
}

// What apply says while it runs: the plan (host first), the question, progress bars.
class ApplyView : public ProgressReporter, public api::ApplyReporter {
public:
  ApplyView(const Globals& g, const ApplyOptions& o) : ProgressReporter(g), m_options(o) {}
  void planned(const api::PlanContext& ctx, bool first) override {
    const auto& plan = ctx.plan;
    if (first) human(host_line(ctx.host));
    if (!plan.channel.empty())
      human(fmt::format("{} {} ({})", styled(i18n::tr("chose:"), Style::bold), i18n::tr(plan.why), plan.index));
    for (const auto& w : plan.warnings) warn(w);
    human(styled((ctx.resolved == 1 ? i18n::trf("Resolved {} package in {}", ctx.resolved, human_duration(ctx.seconds))
                                    : i18n::trf("Resolved {} packages in {}", ctx.resolved, human_duration(ctx.seconds))),
                 Style::dim));
  }
  bool proceed(const api::PlanContext& ctx) override {
    const bool ask = !m_options.yes && m_globals.format != "json" && ::isatty(STDIN_FILENO) && ::isatty(STDERR_FILENO);
    if (ask)
      for (const auto& c : change_list(ctx.plan)) human(c);
    return confirm(m_options, m_globals);
  }
  void locked_host(const api::Host& host) override { human(host_line(host)); }
  void locked_target(const std::string& id, const std::string& lockfile) override {
    human(fmt::format("{} {}", styled(i18n::tr("locked:"), Style::bold), i18n::trf("{} from {}", id, lockfile)));
  }
  bool proceed_locked() override { return confirm(m_options, m_globals); }

private:
  const ApplyOptions& m_options;
};

// "Installed 3 packages in 1.2s": one literal per count form (the catalog has no plurals).
std::string counted(std::size_t n, std::string_view what, const std::string& took) {
  if (what == "Prepared")
    return n == 1 ? i18n::trf("Prepared {} package in {}", n, took) : i18n::trf("Prepared {} packages in {}", n, took);
  if (what == "Uninstalled")
    return n == 1 ? i18n::trf("Uninstalled {} package in {}", n, took) : i18n::trf("Uninstalled {} packages in {}", n, took);
  return n == 1 ? i18n::trf("Installed {} package in {}", n, took) : i18n::trf("Installed {} packages in {}", n, took);
}

void print_smoke(const api::Applied& rr) {
  if (!rr.smoke.passed.empty()) {
    const std::string s = util::join(rr.smoke.passed, ", ");
    if (!rr.smoke.cpu_why.empty())
      human(i18n::trf("Smoke test passed on the CPU ({}): {}", i18n::tr(rr.smoke.cpu_why), s));
    else
      human(i18n::trf("Smoke test passed: {}", s));
  } else if (!rr.smoke.note.empty()) {
    human(styled(i18n::tr(rr.smoke.note), Style::dim));
  }
}

void print_result(const api::Applied& rr, const Globals& g) {
  // uv's meaning of "prepared": downloaded, unpacked and checked, ready to go into place.
  human(styled(counted(rr.txn.installed.size(), "Prepared", human_duration(rr.timings.prepare())), Style::dim));
  // An earlier envfix was killed mid-transaction (or mid-preparation): say what was undone first.
  for (const auto& a : rr.txn.recovered) warn(util::msg("recovered from an interrupted envfix run: {}", a));
  if (!rr.txn.removed.empty())
    human(styled(counted(rr.txn.removed.size(), "Uninstalled", human_duration(rr.timings.uninstall)), Style::dim));
  std::string how;
  if (rr.txn.link_mode)
    how = fmt::format(" ({}{})", installer::to_string(*rr.txn.link_mode),
                      rr.txn.cache_hits ? i18n::trf(", {} from the unpacked cache", rr.txn.cache_hits) : "");
  human(styled(counted(rr.txn.installed.size(), "Installed", human_duration(rr.timings.install)) + how, Style::dim));
  for (const auto& c : change_list(rr.txn)) human(c);
  for (const auto& w : rr.txn.warnings) warn(w);
  print_smoke(rr);
  if (rr.txn.backup_bytes > 0)
    human(styled(i18n::trf("Backup kept for `envfix rollback`: {}", human_size(rr.txn.backup_bytes)), Style::dim));
  for (const auto& w : rr.gate_warnings) warn(w);
  if (g.verbose > 0)
    for (const auto& n : rr.gate_notes) human(styled(i18n::tr(n), Style::dim));
}

json result_json(const api::Applied& rr) {
  json j;
  j["transaction"] = rr.txn.id;
  j["installed"] = json::array();
  for (const auto& d : rr.txn.installed) j["installed"].push_back({{"name", d.name}, {"version", d.version}});
  j["removed"] = json::array();
  for (const auto& d : rr.txn.removed) j["removed"].push_back({{"name", d.name}, {"version", d.version}});
  j["backup_bytes"] = rr.txn.backup_bytes;
  j["warnings"] = util::texts(rr.txn.warnings);
  j["smoke"] = {{"passed", rr.smoke.passed},
                {"device", rr.smoke.passed.empty() ? json(nullptr) : json(rr.smoke.cpu_why.empty() ? "gpu" : "cpu")},
                {"note", rr.smoke.note.text}};
  const auto& t = rr.timings;
  j["timings"] = {{"download_s", t.download}, {"unpack_s", t.stage},        {"kernel_check_s", t.kernels},
                  {"prepare_s", t.prepare()}, {"uninstall_s", t.uninstall}, {"install_s", t.install}};
  json steps = json::object(); // installer::TransactionResult::steps
  for (const auto& [step, secs] : rr.txn.steps) steps[step] = steps.value(step, 0.0) + secs;
  j["timings"]["steps"] = std::move(steps);
  json smoke = json::array(); // smoke/smoke.hpp: every step in one interpreter where it can
  for (const auto& st : rr.smoke.seconds) smoke.push_back({{"name", st.name}, {"seconds", st.seconds}});
  j["timings"]["smoke"] =
      rr.smoke.seconds.empty() ? json(nullptr) : json{{"steps", std::move(smoke)}, {"interpreters", rr.smoke.interpreters}};
  j["link_mode"] = rr.txn.link_mode ? json(installer::to_string(*rr.txn.link_mode)) : json(nullptr);
  j["unpacked_cache_hits"] = rr.txn.cache_hits;
  j["unpacked_while_downloading"] = rr.unpacked_while_downloading;
  return j;
}

Expected<int> run_apply(const Globals& g, const ApplyOptions& o) {
  ApplyView view(g, o);
  auto rep = ENVFIX_TRY(o.locked ? api::apply_locked(g, o.request, view) : api::apply(g, o.request, view));
  view.finish();
  const bool json_out = g.format == "json";
  if (rep.outcome == api::ApplyReport::Outcome::aborted) {
    human(i18n::tr("Aborted; nothing was changed."));
    return 1;
  }
  if (rep.outcome == api::ApplyReport::Outcome::dry_run) {
    const auto& plan = rep.plan->plan;
    for (const auto& c : change_list(plan)) human(c);
    human(plan.empty() ? i18n::tr("Nothing to do: the environment already matches the plan.") : download_line(plan, true));
    if (json_out) {
      auto j = plan_json(plan, rep.plan->host);
      j["applied"] = nullptr;
      j["dry_run"] = true;
      machine_json(j);
    }
    return 0;
  }
  auto lockfile_json = [&] { return rep.lockfile ? json(*rep.lockfile) : json(nullptr); };
  auto lockfile_note = [&] {
    for (const auto& w : rep.lockfile_warnings) warn(w);
    if (rep.lockfile_error)
      warn(util::msg("lockfile not written: {}", rep.lockfile_error->said_message()));
    else if (rep.lockfile && !o.locked && rep.applied)
      human(styled(i18n::trf("Wrote {}", *rep.lockfile), Style::dim));
  };
  if (rep.outcome == api::ApplyReport::Outcome::nothing_to_do) {
    human(i18n::tr("Nothing to do: the environment already matches the plan."));
    lockfile_note();
    if (json_out) {
      auto j = plan_json(rep.plan->plan, rep.plan->host);
      j["applied"] = nullptr;
      j["lockfile"] = lockfile_json();
      machine_json(j);
    }
    return 0;
  }
  const auto& rr = *rep.applied;
  print_result(rr, g);
  if (g.verbose > 0 && rep.plan) human(styled(index_traffic(*rep.plan), Style::dim));
  if (rr.smoke.failure_kept) {
    print_error(*rr.smoke.failure_kept);
    human(
        o.locked
            ? i18n::trf("The locked set was left installed (--no-rollback); `envfix rollback` undoes transaction {}.", rr.txn.id)
            : i18n::trf("The new set was left installed (--no-rollback); `envfix rollback` undoes transaction {}.", rr.txn.id));
    if (json_out && !o.locked) {
      auto j = plan_json(rep.plan->plan, rep.plan->host);
      j["applied"] = result_json(rr);
      j["applied"]["smoke"]["error"] = rr.smoke.failure_kept->message;
      machine_json(j);
    }
    return 2;
  }
  if (o.locked) {
    if (json_out) machine_json(json{{"lockfile", *rep.lockfile}, {"target", rep.locked_target}, {"applied", result_json(rr)}});
    return 0;
  }
  lockfile_note();
  if (json_out) {
    auto j = plan_json(rep.plan->plan, rep.plan->host);
    j["applied"] = result_json(rr);
    j["applied"]["kernel_refusals"] = rep.kernel_refusals;
    j["lockfile"] = lockfile_json();
    machine_json(j);
  }
  return 0;
}

} // namespace

void add_apply_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<ApplyOptions>();
  auto* cmd = app.add_subcommand("apply", i18n::trs("Resolve, install as one transaction, verify, and write the lockfile"));
  add_examples(*cmd, {{"envfix apply torch torchvision", i18n::trs("the set that runs on this host's GPUs, smoke-tested")},
                      {"envfix apply --dry-run torch", i18n::trs("what would change; nothing is downloaded")},
                      {"envfix apply -r requirements.txt --require-hashes", i18n::trs("exactly the hashed files")},
                      {"envfix apply --locked --yes", i18n::trs("the lockfile's target for this host, as in CI")}});
  cmd->add_option("requirements", o->request.requirements, i18n::trs("Requirements (default: the framework packages installed)"));
  add_request_file_options(*cmd, o->request.files);
  cmd->add_flag("--dry-run", o->request.dry_run, i18n::trs("Plan and show what would change; download and change nothing"));
  cmd->add_flag("-y,--yes", o->yes, i18n::trs("Do not ask for confirmation"));
  cmd->add_flag("--locked", o->locked, i18n::trs("Install exactly the lockfile target that matches this host"));
  cmd->add_flag("--no-verify", o->request.no_verify, i18n::trs("Skip the smoke test after installing"));
  cmd->add_flag("--no-rollback", o->request.no_rollback, i18n::trs("Leave the new set installed when the smoke test fails"));
  cmd->add_flag("--no-backup", o->request.no_backup, i18n::trs("Do not keep the removed files for `envfix rollback`"));
  cmd->add_option("--keep-backups", o->request.keep_backups,
                  i18n::trs("How many applies keep their backup, this one included: `envfix rollback` undoes them newest first, "
                            "one per call (default 2)"))
      ->check(CLI::Range(1u, 50u));
  cmd->add_flag("--break-system-packages", o->request.break_system_packages,
                i18n::trs("Allow modifying an externally managed (PEP 668) interpreter"));
  cmd->add_option("--venv", o->request.venv, i18n::trs("Create (or reuse) a venv at PATH and install into it"));
  cmd->add_option(
         "--link-mode", o->request.link_mode,
         i18n::trs("How files come from the unpacked cache: auto (clone, else hardlink, else copy), clone, hardlink, copy"))
      ->check(CLI::IsMember({"auto", "clone", "hardlink", "copy"}));
  cmd->add_flag("--allow-unhashed", o->request.allow_unhashed,
                i18n::trs("Accept files whose index gives no sha256 (hashed after download)"));
  cmd->add_flag("--pre", o->request.pre, i18n::trs("Allow pre-releases for every package"));
  cmd->add_flag(
      "-U,--upgrade", o->request.upgrade,
      i18n::trs(
          "Upgrade the requested packages to the newest allowed version (default: keep an installed version that satisfies the request)"));
  cmd->add_flag(
      "--reinstall", o->request.reinstall,
      i18n::trs("Reinstall every planned package from the index, even when the installed version satisfies the request"));
  cmd->add_flag("--allow-breaking", o->request.allow_breaking,
                i18n::trs("Apply even when an installed package's requirement would break"));
  cmd->add_flag("--allow-conda-overwrite", o->request.allow_conda_overwrite,
                i18n::trs("Remove or overwrite packages conda owns (conda-meta records, INSTALLER conda)"));
  cmd->add_option("--smoke-timeout", o->request.smoke_timeout_s, i18n::trs("Seconds each smoke-test step may run (default 600)"));
  cmd->add_option("--smoke-layers", o->request.smoke_layers,
                  i18n::trs("The smoke test: envfix verify's layers, comma-separated: repro, model (default both)"))
      ->check([](const std::string& v) -> std::string {
        for (const auto& l : util::split(v, ','))
          if (l != "repro" && l != "model") return i18n::trf("'{}': the layers are repro and model", l);
        return util::split(v, ',').empty() ? i18n::trs("name at least one layer (or use --no-verify)") : std::string();
      });
  cmd->callback([&g, o] { g.exit_code = finish_command(run_apply(g, *o)); });
}

} // namespace envfix::cli
