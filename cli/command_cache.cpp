// envfix cache dir|size|clean: the index cache (downloads, pages, metadata, interpreter probes).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>

#include "api/cache.hpp"
#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "cli/views.hpp"
#include "i18n/i18n.hpp"

namespace envfix::cli {

namespace {

using nlohmann::json;

Expected<int> run_cache(const Globals& g, const std::string& action) {
  const bool js = g.format == "json";
  if (action == "dir") {
    const auto dir = ENVFIX_TRY(api::cache_dir(g));
    if (js)
      machine_json(json{{"dir", dir.string()}});
    else
      std::fprintf(stdout, "%s\n", dir.string().c_str());
    return 0;
  }
  if (action == "size") {
    const auto u = ENVFIX_TRY(api::cache_usage(g));
    if (js)
      machine_json(json{{"dir", u.dir.string()}, {"bytes", u.bytes}, {"files", u.files}, {"human", human_size(u.bytes)}});
    else {
      std::fprintf(stdout, "%llu\n", static_cast<unsigned long long>(u.bytes));
      human(i18n::trf("{} in {} files ({})", human_size(u.bytes), u.files, u.dir.string()));
    }
    return 0;
  }
  const auto u = ENVFIX_TRY(api::clean_cache(g));
  if (js)
    machine_json(json{{"dir", u.dir.string()}, {"freed_bytes", u.bytes}, {"files", u.files}});
  else
    human(i18n::trf("Removed {} files ({}) from {}", u.files, human_size(u.bytes), u.dir.string()));
  return 0;
}

} // namespace

void add_cache_command(CLI::App& app, Globals& g) {
  auto action = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("cache", i18n::trs("The download/page cache: dir, size, clean"));
  cmd->add_option("action", *action, i18n::trs("dir | size | clean"))->required()->check(CLI::IsMember({"dir", "size", "clean"}));
  cmd->callback([&g, action] { g.exit_code = finish_command(run_cache(g, *action)); });
}

} // namespace envfix::cli
