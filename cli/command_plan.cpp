// envfix plan [REQ...]: resolve and show the plan; changes nothing (docs/architecture.md, Choosing
// the framework set; docs/json.md "plan").
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>

#include <fmt/ranges.h>

#include "cli/globals.hpp"
#include "api/plan.hpp"
#include "cli/render.hpp"
#include "cli/views.hpp"
#include "i18n/i18n.hpp"
#include "resolver/plan.hpp"

namespace envfix::cli {

namespace {

using nlohmann::json;

struct PlanOptions {
  std::vector<std::string> requests;
  api::RequestFiles files;
  bool dry_run = false;
  bool explain = false;
  bool pre = false;
  bool upgrade = false;
  bool reinstall = false;
  bool allow_unhashed = false;
  bool allow_breaking = false;
  bool allow_conda_overwrite = false;
};

void render_rejected(const std::vector<resolver::Rejection>& rejected) {
  human(styled(i18n::trf("rejected ({}):", rejected.size()), Style::bold));
  // The reason code stays English (docs/json.md names it); the detail is translated by its id.
  for (const auto& r : rejected)
    human(fmt::format("  {} {} [{}] {}{}", r.name, r.version.empty() ? i18n::tr("(index)") : r.version,
                      resolver::to_string(r.reason), i18n::tr(r.why()),
                      r.index.empty() ? "" : styled(" — " + r.index, Style::dim)));
}

void render_text(const api::PlanContext& ctx, const PlanOptions& o, bool verbose) {
  const auto& p = ctx.plan;
  human(host_line(ctx.host));
  if (!p.channel.empty())
    human(fmt::format("{} {} ({})", styled(i18n::tr("chose:"), Style::bold), i18n::tr(p.why), p.index));
  else
    human(fmt::format("{} {}{}", styled(i18n::tr("index:"), Style::bold), p.index,
                      ctx.index_from.empty() ? "" : " " + i18n::trf("(from {})", ctx.index_from)));
  if (!ctx.extra_indexes.empty())
    human(fmt::format("{} {}", styled(i18n::tr("extra indexes:"), Style::bold),
                      i18n::trf("{} (for packages that are not the framework's: each from the first index that has it)",
                                fmt::format("{}", fmt::join(ctx.extra_indexes, ", ")))));
  for (const auto& w : p.warnings) warn(w);
  human(styled((ctx.resolved == 1 ? i18n::trf("Resolved {} package in {}", ctx.resolved, human_duration(ctx.seconds))
                                  : i18n::trf("Resolved {} packages in {}", ctx.resolved, human_duration(ctx.seconds))),
               Style::dim));
  if (verbose) human(styled(index_traffic(ctx), Style::dim));
  for (const auto& c : change_list(p, true)) human(c);
  if (p.empty())
    human(i18n::tr("Nothing to do: the environment already matches the plan."));
  else
    human(download_line(p, o.dry_run));
  if (o.explain) render_rejected(p.rejected);
}

Expected<int> run_plan(const Globals& g, const PlanOptions& o, std::vector<resolver::Rejection>* rejected_out) {
  api::PlanRequest r{.requirements = o.requests,
                     .files = o.files,
                     .pre = o.pre,
                     .allow_unhashed = o.allow_unhashed,
                     .upgrade = o.upgrade,
                     .reinstall = o.reinstall,
                     .allow_breaking = o.allow_breaking,
                     .allow_conda_overwrite = o.allow_conda_overwrite};
  auto ctx = ENVFIX_TRY(api::plan(g, r, rejected_out));
  if (g.format == "json") {
    auto j = plan_json(ctx.plan, ctx.host);
    j["extra_indexes"] = ctx.extra_indexes;
    j["index_from"] = ctx.index_from.empty() ? json(nullptr) : json(ctx.index_from);
    machine_json(j);
  } else {
    render_text(ctx, o, g.verbose > 0);
  }
  return 0;
}

} // namespace

void add_plan_command(CLI::App& app, Globals& g) {
  auto opts = std::make_shared<PlanOptions>();
  auto* cmd = app.add_subcommand("plan", i18n::trs("Resolve and show the plan; changes nothing"));
  add_examples(
      *cmd, {{"envfix plan torch", i18n::trs("the torch set for this host's GPUs and driver")},
             {"envfix plan -r requirements.txt -c constraints.txt", i18n::trs("files in pip's format")},
             {"envfix plan 'jax[cuda13]' --gpu sm_120 --driver 580.65.06", i18n::trs("for another machine: its GPU and driver")},
             {"envfix plan torch --explain", i18n::trs("every file turned down, with its reason")}});
  cmd->add_option("requirements", opts->requests, i18n::trs("Requirements (default: the framework packages installed)"));
  add_request_file_options(*cmd, opts->files);
  cmd->add_flag("--dry-run", opts->dry_run, i18n::trs("Accepted for symmetry with apply; plan never changes anything"));
  cmd->add_flag("--explain", opts->explain, i18n::trs("List every rejected candidate with its reason code"));
  cmd->add_flag("--pre", opts->pre, i18n::trs("Allow pre-releases for every package"));
  cmd->add_flag(
      "-U,--upgrade", opts->upgrade,
      i18n::trs(
          "Upgrade the requested packages to the newest allowed version (default: keep an installed version that satisfies the request)"));
  cmd->add_flag(
      "--reinstall", opts->reinstall,
      i18n::trs("Reinstall every planned package from the index, even when the installed version satisfies the request"));
  cmd->add_flag("--allow-unhashed", opts->allow_unhashed, i18n::trs("Accept files whose index gives no sha256"));
  cmd->add_flag("--allow-breaking", opts->allow_breaking,
                i18n::trs("Plan even when an installed package's requirement would break"));
  cmd->add_flag("--allow-conda-overwrite", opts->allow_conda_overwrite,
                i18n::trs("Remove or overwrite packages conda owns (conda-meta records, INSTALLER conda)"));
  cmd->callback([&g, opts] {
    std::vector<resolver::Rejection> rejected;
    auto rc = run_plan(g, *opts, &rejected);
    if (!rc) {
      print_error(rc.error());
      // --explain on a failed plan too: what was rejected is the answer to "why nothing fits".
      if (opts->explain && g.format != "json") render_rejected(rejected);
      // --format json: the error as one document too (causes stay a list: the derivation chain is the message).
      if (g.format == "json") {
        json doc{{"error",
                  {{"code", to_string(rc.error().code)},
                   {"message", rc.error().message},
                   {"causes", rc.error().causes},
                   {"hint", rc.error().hint}}}};
        if (opts->explain) {
          json rj = json::array();
          for (const auto& r : rejected)
            rj.push_back({{"name", r.name},
                          {"version", r.version},
                          {"index", r.index},
                          {"reason", std::string(resolver::to_string(r.reason))},
                          {"detail", r.detail},
                          {"filename", r.filename}});
          doc["error"]["rejected"] = rj;
        }
        machine_json(doc);
      }
      g.exit_code = exit_code_for(rc.error());
      return;
    }
    g.exit_code = *rc;
  });
}

} // namespace envfix::cli
