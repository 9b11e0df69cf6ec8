#include "api/export.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "api/host.hpp"
#include "api/lock.hpp"
#include "lockfile/lockfile.hpp"
#include "lockfile/select.hpp"
#include "util/fs.hpp"
#include "util/strings.hpp"

namespace envfix::api {
namespace {

namespace fs = std::filesystem;

// "a, b": the lockfile's target ids, for the hint that names them.
std::string target_ids(const lockfile::LockFile& lock) {
  std::vector<std::string> ids;
  for (const auto& x : lock.targets) ids.push_back(x.id);
  return util::join(ids, ", ");
}

} // namespace

Expected<std::vector<ExportedFile>> export_lock(const Options& g, const ExportRequest& o) {
  auto lock = ENVFIX_TRY(lockfile::LockFile::read(g.lockfile));
  if (lock.targets.empty()) return make_error(ErrorCode::invalid_input, util::msg("{} has no targets", g.lockfile));
  std::vector<const lockfile::LockTarget*> chosen;
  if (o.all) {
    for (const auto& t : lock.targets) chosen.push_back(&t);
  } else if (!o.target.empty()) {
    const auto* t = lock.find(o.target);
    if (!t) {
      const std::string ids = target_ids(lock);
      return make_error(ErrorCode::not_found, util::msg("{} has no target '{}'", g.lockfile, o.target),
                        util::msg("targets: {}", ids));
    }
    chosen.push_back(t);
  } else if (lock.targets.size() == 1) {
    chosen.push_back(&lock.targets.front());
  } else {
    // The same rule as `apply --locked` (lockfile/select.hpp).
    auto knowledge = ENVFIX_TRY(load_knowledge(g));
    auto host = ENVFIX_TRY(make_host(g, knowledge.get()));
    auto sel = lockfile::select(lock, host_view(host));
    if (!sel.chosen) {
      const std::string ids = target_ids(lock);
      return std::unexpected(Error::made(ErrorCode::not_found, util::msg("no target in {} matches this host", g.lockfile),
                                         util::plains(sel.reasons()),
                                         util::msg("pick one with --target ID ({}) or export them all with --all", ids)));
    }
    chosen.push_back(sel.chosen);
  }
  const bool pylock = o.format == ExportFormat::pylock;
  // Every file's text and name first: a target that cannot be exported leaves no file behind.
  std::vector<ExportedFile> files;
  for (const auto* t : chosen) {
    auto text = pylock ? lockfile::to_pylock_toml(lock, *t) : lockfile::to_requirements_txt(lock, *t);
    if (!text) return std::unexpected(std::move(text.error()).context(util::msg("exporting {}", g.lockfile)));
    std::string out = o.output;
    if (o.all) {
      fs::path base = o.output.empty() ? fs::path(".") : fs::path(o.output);
      out = (base / ENVFIX_TRY(lockfile::export_file_name(*t, pylock, g.lockfile))).string();
    } else if (out.empty()) {
      out = pylock ? "pylock.toml" : "-";
    }
    files.push_back({t->id, t->packages.size(), std::move(out), std::move(*text)});
  }
  if (o.all && !o.output.empty() && o.output != "-") {
    // --all -o DIR: DIR is created (with its parents), as `mkdir -p` would; a file there is an error.
    std::error_code ec;
    fs::create_directories(o.output, ec);
    if (ec || !fs::is_directory(o.output))
      return make_error(
          ErrorCode::io,
          fmt::format("-o {}: cannot create the directory: {}", o.output, ec ? ec.message() : "a file of that name exists"),
          "with --all, -o names a directory for one file per target");
  }
  for (const auto& f : files)
    if (f.path != "-") ENVFIX_TRY_VOID(util::write_file_atomic(f.path, f.text, 0644));
  return files;
}

} // namespace envfix::api
