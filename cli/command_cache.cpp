// envfix cache dir|size|clean: the index cache (downloads, pages, metadata, interpreter probes).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>

#include "cli/globals.hpp"
#include "cli/views.hpp"
#include "cli/render.hpp"
#include "i18n/i18n.hpp"
#include "index/cache.hpp"
#include "index/index_client.hpp"

namespace envfix::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Expected<fs::path> cache_dir(const Globals& g) {
  if (!g.cache_dir.empty()) return fs::path(g.cache_dir);
  return index::default_cache_dir();
}

struct Usage {
  std::uint64_t bytes = 0, files = 0;
};

Expected<Usage> usage(const fs::path& dir) {
  Usage u;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return u;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
  if (ec) return fail(ErrorCode::io, "{}: {}", dir.string(), ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return fail(ErrorCode::io, "{}: {}", dir.string(), ec.message());
    if (it->is_symlink(ec)) continue;
    if (it->is_regular_file(ec)) {
      u.bytes += it->file_size(ec);
      ++u.files;
    }
  }
  return u;
}

Expected<int> run_cache(const Globals& g, const std::string& action) {
  auto dir = ENVFIX_TRY(cache_dir(g));
  const bool js = g.format == "json";
  if (action == "dir") {
    if (js) machine(json{{"dir", dir.string()}}.dump(2));
    else std::fprintf(stdout, "%s\n", dir.string().c_str());
    return 0;
  }
  if (action == "size") {
    auto u = ENVFIX_TRY(usage(dir));
    if (js) machine(json{{"dir", dir.string()}, {"bytes", u.bytes}, {"files", u.files}, {"human", human_size(u.bytes)}}.dump(2));
    else {
      std::fprintf(stdout, "%llu\n", static_cast<unsigned long long>(u.bytes));
      human(i18n::trf("{} in {} files ({})", human_size(u.bytes), u.files, dir.string()));
    }
    return 0;
  }
  // clean: index::clean_cache refuses a directory that is not an envfix cache, or one a run holds.
  const auto u = ENVFIX_TRY(index::clean_cache(dir));
  if (js) machine(json{{"dir", dir.string()}, {"freed_bytes", u.bytes}, {"files", u.files}}.dump(2));
  else human(i18n::trf("Removed {} files ({}) from {}", u.files, human_size(u.bytes), dir.string()));
  return 0;
}

} // namespace

void add_cache_command(CLI::App& app, Globals& g) {
  auto action = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("cache", i18n::trs("The download/page cache: dir, size, clean"));
  cmd->add_option("action", *action, i18n::trs("dir | size | clean"))->required()->check(CLI::IsMember({"dir", "size", "clean"}));
  cmd->callback([&g, action] {
    g.exit_code = finish_command(run_cache(g, *action));
  });
}

} // namespace envfix::cli
