#include <CLI/CLI.hpp>

#include "cli/globals.hpp"
#include "cli/render.hpp"

namespace envfix::cli {

void add_global_options(CLI::App& app, Globals& g) {
  app.set_help_all_flag("--help-all", "Show help for all commands");
  app.option_defaults()->always_capture_default(false);
  auto* out = app.add_option_group("Output");
  out->add_option("--format", g.format, "Output format: text (stderr) or json (stdout)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "text" || v == "json") return {};
            if (v == "pylock" || v == "requirements") return "export's file format is `envfix export --as " + v + "`";
            return "'" + v + "' is not text or json";
          },
          "text|json"));
  out->add_option("--color", g.color, "auto|always|never")->check(CLI::IsMember({"auto", "always", "never"}));
  out->add_flag("-v,--verbose", g.verbose, "More detail (repeatable)");
  out->add_flag("-q,--quiet", g.quiet, "Only errors");
  out->add_flag("--no-progress", g.no_progress, "No progress bars");
  out->add_option("--lang", g.lang,
                  "Language of the human output: en or zh_CN (default: from LANGUAGE, LC_ALL, LC_MESSAGES, LANG; "
                  "JSON stays English)");
  auto* env = app.add_option_group("Environment");
  env->add_option("--python", g.python, "Target interpreter (default: $VIRTUAL_ENV, $CONDA_PREFIX, python3 on PATH)");
  g.detect_framework = true; // until --framework is given (api/options.hpp)
  env->add_option("--framework", g.framework, "Framework: torch, jax, tensorflow, paddlepaddle (default: the ones installed, else torch)")
      ->each([&g](const std::string&) { g.detect_framework = false; });
  env->add_option("--channel", g.channel, "auto|stable|test|nightly")
      ->check(CLI::IsMember({"auto", "stable", "test", "nightly"}));
  env->add_option("--variant", g.variant, "Build variant, e.g. cu128");
  env->add_option("--mirror", g.mirror, "Replace the official base URL in every index template");
  env->add_option("--index-url,-i", g.index_url,
                  "The index to use; with a framework, its index for the variant it serves (GPU, driver and kernel checks apply)");
  // Repeatable options take one value per occurrence (as pip's and uv's do): CLI11's default for a
  // vector would swallow the requirements or files that follow (`--gpu sm_120 torch`).
  env->add_option("--extra-index-url", g.extra_index_urls,
                  "Another index for packages that are not the framework's; each from the first index that has it (repeatable)")
      ->allow_extra_args(false);
  env->add_option("--find-links", g.find_links, "Directory of wheels (repeatable)")->allow_extra_args(false);
  env->add_option("--matrices", g.matrices_dir, "Directory of YAML files overriding the embedded matrices");
  env->add_option("--cache-dir", g.cache_dir, "Cache directory");
  env->add_flag("--offline", g.offline, "Use only the cache");
  env->add_flag("--allow-cpu", g.allow_cpu, "Allow a CPU build when no GPU build fits");
  env->add_option("--lockfile", g.lockfile, "Lockfile path");
  auto* tgt = app.add_option_group("Target host (plan for another machine)");
  tgt->add_option("--gpu", g.gpus, "GPU arch or name to plan for (repeatable, or a comma list)")
      ->allow_extra_args(false)
      ->delimiter(',');
  tgt->add_option("--driver", g.driver, "Driver version to plan for");
  tgt->add_option("--python-version", g.python_version, "Python version to plan for");
  tgt->add_option("--platform", g.platform, "Platform tag to plan for");
}

} // namespace envfix::cli

int main(int argc, char** argv) {
  using namespace envfix::cli;
  CLI::App app{"envfix: repair and lock GPU deep-learning environments"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "envfix " ENVFIX_VERSION);
  app.fallthrough(true); // common options may follow the command name
  Globals g;
  add_global_options(app, g);
  add_doctor_command(app, g);
  add_inspect_command(app, g);
  add_matrix_command(app, g);
  add_plan_command(app, g);
  add_apply_command(app, g);
  add_lock_command(app, g);
  add_export_command(app, g);
  add_rollback_command(app, g);
  add_verify_command(app, g);
  add_cache_command(app, g);
  app.parse_complete_callback([&] {
    init_output(g);
    // An unknown --lang: already reported; CLI11 exits with the code and prints nothing more.
    if (int rc = init_language(g); rc != 0) throw CLI::RuntimeError(rc);
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 reports parse errors by exception; they never leave main.
    int rc = app.exit(e);
    return rc == 0 ? 0 : 1;
  }
  return g.exit_code;
}
