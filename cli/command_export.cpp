// envfix export --as pylock|requirements [-o FILE] [--target ID] [--all]: a lockfile target as
// PEP 751 pylock.toml or as pip requirements with --hash lines (docs/lockfile.md, "export").
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include "cli/globals.hpp"
#include "api/host.hpp"
#include "api/lock.hpp"
#include "cli/render.hpp"
#include "i18n/i18n.hpp"
#include "lockfile/lockfile.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"
#include "util/text.hpp"

namespace envfix::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ExportOptions {
  std::string format;
  std::string output;
  std::string target;
  bool all = false;
};

// "a, b": the lockfile's target ids, for the hint that names them.
std::string target_ids(const lockfile::LockFile& lock) {
  std::vector<std::string> ids;
  for (const auto& x : lock.targets) ids.push_back(x.id);
  return util::join(ids, ", ");
}

// Why a target id cannot be part of a file name ("" when it can): a path separator, "..", a control
// character, or nothing at all.
std::string file_name_problem(std::string_view id) {
  if (id.empty()) return "is empty";
  if (id.find('/') != std::string_view::npos || id.find('\\') != std::string_view::npos) return "contains a path separator";
  if (id.find("..") != std::string_view::npos) return "contains '..'";
  for (char ch : id)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) return "contains a control character";
  return {};
}

Expected<int> run_export(const Globals& g, const ExportOptions& o) {
  auto lock = ENVFIX_TRY(lockfile::LockFile::read(g.lockfile));
  if (lock.targets.empty()) return make_error(ErrorCode::invalid_input, fmt::format("{} has no targets", g.lockfile));
  std::vector<const lockfile::LockTarget*> chosen;
  if (o.all) {
    for (const auto& t : lock.targets) chosen.push_back(&t);
  } else if (!o.target.empty()) {
    const auto* t = lock.find(o.target);
    if (!t) {
      const std::string ids = target_ids(lock);
      return make_error(ErrorCode::not_found, fmt::format("{} has no target '{}'", g.lockfile, o.target), fmt::format("targets: {}", ids));
    }
    chosen.push_back(t);
  } else if (lock.targets.size() == 1) {
    chosen.push_back(&lock.targets.front());
  } else {
    // The same rule as `apply --locked` (lockfile/select.hpp).
    auto knowledge = ENVFIX_TRY(api::load_knowledge(g));
    auto host = ENVFIX_TRY(api::make_host(g, knowledge.get()));
    auto sel = lockfile::select(lock, api::host_view(host));
    if (!sel.chosen) {
      const std::string ids = target_ids(lock);
      Error e{ErrorCode::not_found, fmt::format("no target in {} matches this host", g.lockfile), sel.reasons(),
              fmt::format("pick one with --target ID ({}) or export them all with --all", ids)};
      return std::unexpected(std::move(e));
    }
    chosen.push_back(sel.chosen);
  }
  const bool pylock = o.format == "pylock";
  // Every file's text and name first: a target that cannot be exported leaves no file behind.
  struct File {
    const lockfile::LockTarget* target;
    std::string text, path;
  };
  std::vector<File> files;
  for (const auto* t : chosen) {
    auto text = pylock ? lockfile::to_pylock_toml(lock, *t) : lockfile::to_requirements_txt(lock, *t);
    if (!text) return std::unexpected(std::move(text.error()).context(fmt::format("exporting {}", g.lockfile)));
    std::string out = o.output;
    if (o.all) {
      // One file per target: pylock.<id>.toml (PEP 751 names), requirements-<id>.txt. The id comes from
      // the lockfile: one that is not a plain name would choose another directory.
      if (auto why = file_name_problem(t->id); !why.empty())
        return make_error(ErrorCode::invalid_input,
                          fmt::format("{}: target id '{}' {}; --all names files after target ids", g.lockfile,
                                      util::escape_control(t->id, false), why),
                          "export it alone with --target ID -o FILE, or regenerate the lockfile with `envfix lock`");
      fs::path base = o.output.empty() ? fs::path(".") : fs::path(o.output);
      out = (base / (pylock ? fmt::format("pylock.{}.toml", t->id) : fmt::format("requirements-{}.txt", t->id))).string();
    } else if (out.empty()) {
      out = pylock ? "pylock.toml" : "-";
    }
    files.push_back({t, std::move(*text), std::move(out)});
  }
  if (o.all && !o.output.empty() && o.output != "-") {
    // --all -o DIR: DIR is created (with its parents), as `mkdir -p` would; a file there is an error.
    std::error_code ec;
    fs::create_directories(o.output, ec);
    if (ec || !fs::is_directory(o.output))
      return make_error(ErrorCode::io, fmt::format("-o {}: cannot create the directory: {}", o.output,
                                                   ec ? ec.message() : "a file of that name exists"),
                        "with --all, -o names a directory for one file per target");
  }
  json written = json::array();
  for (const auto& f : files) {
    if (f.path == "-") {
      std::fwrite(f.text.data(), 1, f.text.size(), stdout);
      std::fflush(stdout);
    } else {
      ENVFIX_TRY_VOID(util::write_file_atomic(f.path, f.text, 0644));
      human(i18n::trf("Wrote {} (target {}, {} packages)", f.path, f.target->id, f.target->packages.size()));
    }
    written.push_back({{"target", f.target->id}, {"path", f.path}});
  }
  if (g.format == "json") machine(json{{"format", o.format}, {"files", written}}.dump(2));
  return 0;
}

} // namespace

void add_export_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<ExportOptions>();
  auto* cmd = app.add_subcommand("export", i18n::trs("Write a lockfile target as pylock.toml (PEP 751) or hashed requirements"));
  // --as, not --format: the global --format (text|json) stays the output format here too.
  cmd->add_option("--as", o->format, i18n::trs("pylock | requirements"))->required()->check(CLI::IsMember({"pylock", "requirements"}));
  cmd->add_option("-o,--output", o->output, i18n::trs("File to write ('-' = stdout; with --all: a directory)"));
  cmd->add_option("--target", o->target, i18n::trs("Target id in the lockfile (default: the one matching this host, or the only one)"));
  cmd->add_flag("--all", o->all, i18n::trs("Every target, one file each (pylock.<id>.toml, requirements-<id>.txt)"));
  cmd->callback([&g, o] {
    g.exit_code = finish_command(run_export(g, *o));
  });
}

} // namespace envfix::cli
