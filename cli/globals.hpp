#pragma once
// Options shared by every command (README.md, "Commands"; docs/environment.md for their variables).
#include <optional>
#include <string>
#include <vector>

namespace CLI { class App; }

namespace envfix::cli {

struct Globals {
  std::string format = "text";        // text | json
  std::string color = "auto";         // auto | always | never
  int verbose = 0;
  bool quiet = false;
  bool no_progress = false;
  std::string python;                  // --python PATH
  std::string framework = "torch";
  std::string channel = "auto";        // auto | stable | test | nightly
  std::string variant;                 // cu128 …
  std::string mirror;
  std::string index_url;
  std::vector<std::string> find_links;
  std::string matrices_dir;
  std::string cache_dir;
  bool offline = false;
  bool allow_cpu = false;
  std::string lockfile = "envfix.lock";
  // Planning for a machine you are not on.
  std::vector<std::string> gpus;       // --gpu sm_120 (repeatable)
  std::string driver;
  std::string python_version;
  std::string platform;

  int exit_code = 0;                   // set by the command that ran
};

void add_global_options(CLI::App& app, Globals& g);

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

} // namespace envfix::cli
