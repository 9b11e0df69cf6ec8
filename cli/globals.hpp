#pragma once
// Options shared by every command (README.md, "Commands"; docs/environment.md for their variables).
#include <string>

#include "api/options.hpp"
#include "api/plan.hpp"

namespace CLI {
class App;
}

namespace envfix::cli {

// The global options: the api/ request every command shares (api/options.hpp), plus how to print.
struct Globals : api::Options {
  std::string format = "text"; // text | json
  std::string color = "auto";  // auto | always | never
  int verbose = 0;
  bool quiet = false;
  bool no_progress = false;
  bool no_cache = false; // --no-cache: cache_dir is a temporary directory (cli/main.cpp)
  std::string lang;      // --lang: en | zh_CN; empty: from the environment (i18n/i18n.hpp)

  int exit_code = 0; // set by the command that ran
};

void add_global_options(CLI::App& app, Globals& g);
// -r, -c, --extra, --all-extras, --require-hashes (plan, apply, lock).
void add_request_file_options(CLI::App& cmd, api::RequestFiles& files);
// A command's --help footer: "Examples:", then each command line with what it does under it.
struct Example {
  const char* command;
  std::string what; // translated (i18n::trs)
};
void add_examples(CLI::App& cmd, const std::vector<Example>& examples);

// One function per command file (cli/command_<name>.cpp).
void add_doctor_command(CLI::App& app, Globals& g);
void add_inspect_command(CLI::App& app, Globals& g);
void add_matrix_command(CLI::App& app, Globals& g);
void add_plan_command(CLI::App& app, Globals& g);
void add_apply_command(CLI::App& app, Globals& g);
void add_lock_command(CLI::App& app, Globals& g);
void add_export_command(CLI::App& app, Globals& g);
void add_rollback_command(CLI::App& app, Globals& g);
void add_verify_command(CLI::App& app, Globals& g);
void add_cache_command(CLI::App& app, Globals& g);
// `envfix completions SHELL` and `envfix man`, hidden: made from `app` itself (cli/completions.cpp).
void add_generated_commands(CLI::App& app, Globals& g);

} // namespace envfix::cli
