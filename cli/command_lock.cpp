// envfix lock [REQ...] [--target SPEC]... [-o FILE] [--check]: parses, calls api::lock (api/lock.hpp:
// resolve for one or more hosts, installs nothing, writes envfix.lock; docs/lockfile.md) and renders.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <memory>

#include "api/lock.hpp"
#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "cli/views.hpp"
#include "i18n/i18n.hpp"

namespace envfix::cli {

namespace {

using nlohmann::json;

Expected<int> run_lock(const Globals& g, const api::LockRequest& o) {
  auto rep = ENVFIX_TRY(api::lock(g, o));
  for (const auto& n : rep.notes) human(i18n::tr(n));
  human(interpreter_line(rep.host));
  for (const auto& r : rep.resolved)
    human(styled((r.resolved == 1 ? i18n::trf("Resolved {} package for {} in {}", r.resolved, r.id, human_duration(r.seconds))
                                  : i18n::trf("Resolved {} packages for {} in {}", r.resolved, r.id, human_duration(r.seconds))),
                 Style::dim));
  if (o.check) {
    if (!rep.stale) {
      human(i18n::trf("{} is up to date", rep.path));
      if (g.format == "json") machine_json(json{{"lockfile", rep.path}, {"stale", false}, {"differences", json::array()}});
      return 0;
    }
    human(i18n::trf("{} is stale:", rep.path));
    for (const auto& d : rep.differences) human("  " + d);
    if (g.format == "json") machine_json(json{{"lockfile", rep.path}, {"stale", true}, {"differences", rep.differences}});
    return 1;
  }
  const auto& lock = rep.lock;
  human(lock.targets.size() == 1 ? i18n::trf("Wrote {} ({} target)", rep.path, lock.targets.size())
                                 : i18n::trf("Wrote {} ({} targets)", rep.path, lock.targets.size()));
  if (g.format == "json") {
    const auto& py = rep.host.facts.python;
    json j{{"lockfile", rep.path},
           {"targets", json::array()},
           {"notes", util::texts(rep.notes)},
           {"interpreter", py ? json(py->executable.string()) : json(nullptr)},
           {"interpreter_from", rep.host.facts.python_from}};
    for (const auto& t : lock.targets) {
      json pk = json::array();
      for (const auto& p : t.packages)
        pk.push_back({{"name", p.name}, {"version", p.version}, {"filename", p.filename}, {"sha256", p.sha256}});
      j["targets"].push_back(
          {{"id", t.id}, {"index", t.index}, {"channel", t.channel}, {"variant", t.variant}, {"packages", pk}});
    }
    machine_json(j);
  }
  return 0;
}

} // namespace

void add_lock_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<api::LockRequest>();
  auto* cmd = app.add_subcommand("lock", i18n::trs("Resolve for one or more hosts and write the lockfile; installs nothing"));
  add_examples(
      *cmd,
      {{"envfix lock torch", i18n::trs("a target for this host")},
       {"envfix lock torch --target gpu=sm_90,python=3.12,driver=580.65.06 --target gpu=sm_120,python=3.12,driver=580.65.06",
        i18n::trs("one target per kind of machine in a fleet")},
       {"envfix lock --check", i18n::trs("does the lockfile still resolve as it records (CI)")}});
  cmd->add_option("requirements", o->requirements, i18n::trs("Requirements (default: the framework's set)"));
  add_request_file_options(*cmd, o->files);
  cmd->add_option(
         "--target", o->targets,
         i18n::trs(
             "Host to lock for: gpu=sm_86+sm_120,python=3.10[,driver=570.86][,platform=manylinux_2_28_x86_64] (repeatable; default: this host)"))
      ->allow_extra_args(false); // one spec per --target: its commas are its own, and REQs may follow
  cmd->add_option("-o,--output", o->output, i18n::trs("Lockfile to write (default: --lockfile, envfix.lock)"));
  cmd->add_flag("--check", o->check, i18n::trs("Exit 1 when the lockfile is stale (re-resolves; writes nothing)"));
  cmd->add_flag("--pre", o->pre, i18n::trs("Allow pre-releases for every package"));
  cmd->add_flag("--allow-unhashed", o->allow_unhashed, i18n::trs("Accept files whose index gives no sha256"));
  cmd->callback([&g, o] { g.exit_code = finish_command(run_lock(g, *o)); });
}

} // namespace envfix::cli
