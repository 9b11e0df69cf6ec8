// envfix export --as pylock|requirements [-o FILE] [--target ID] [--all]: a lockfile target as
// PEP 751 pylock.toml or as pip requirements with --hash lines (docs/lockfile.md, "export").
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include "api/export.hpp"
#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "i18n/i18n.hpp"

namespace envfix::cli {

namespace {

using nlohmann::json;

struct ExportOptions {
  std::string format;
  std::string output;
  std::string target;
  bool all = false;
};

Expected<int> run_export(const Globals& g, const ExportOptions& o) {
  const api::ExportRequest r{o.format == "pylock" ? api::ExportFormat::pylock : api::ExportFormat::requirements, o.output,
                             o.target, o.all};
  const auto files = ENVFIX_TRY(api::export_lock(g, r));
  json written = json::array();
  for (const auto& f : files) {
    if (f.path == "-") {
      std::fwrite(f.text.data(), 1, f.text.size(), stdout);
      std::fflush(stdout);
    } else {
      human(i18n::trf("Wrote {} (target {}, {} packages)", f.path, f.target, f.packages));
    }
    written.push_back({{"target", f.target}, {"path", f.path}});
  }
  if (g.format == "json") machine_json(json{{"format", o.format}, {"files", written}});
  return 0;
}

} // namespace

void add_export_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<ExportOptions>();
  auto* cmd = app.add_subcommand("export", i18n::trs("Write a lockfile target as pylock.toml (PEP 751) or hashed requirements"));
  add_examples(*cmd,
               {{"envfix export --as pylock", i18n::trs("this host's target as pylock.toml, for uv or pip")},
                {"envfix export --as requirements --all -o locks/", i18n::trs("every target as a hashed requirements file")}});
  // --as, not --format: the global --format (text|json) stays the output format here too.
  cmd->add_option("--as", o->format, i18n::trs("pylock | requirements"))
      ->required()
      ->check(CLI::IsMember({"pylock", "requirements"}));
  cmd->add_option("-o,--output", o->output, i18n::trs("File to write ('-' = stdout; with --all: a directory)"));
  cmd->add_option("--target", o->target,
                  i18n::trs("Target id in the lockfile (default: the one matching this host, or the only one)"));
  cmd->add_flag("--all", o->all, i18n::trs("Every target, one file each (pylock.<id>.toml, requirements-<id>.txt)"));
  cmd->callback([&g, o] { g.exit_code = finish_command(run_export(g, *o)); });
}

} // namespace envfix::cli
