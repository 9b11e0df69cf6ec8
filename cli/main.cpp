#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "api/host.hpp"
#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "i18n/i18n.hpp"
#include "util/fs.hpp"

namespace envfix::cli {

void add_global_options(CLI::App& app, Globals& g) {
  app.option_defaults()->always_capture_default(false);
  auto* out = app.add_option_group(i18n::trs("Output"));
  out->add_option("--format", g.format, i18n::trs("Output format: text (stderr) or json (stdout)"))
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            if (v == "text" || v == "json") return {};
            if (v == "pylock" || v == "requirements") return i18n::trf("export's file format is `envfix export --as {}`", v);
            return i18n::trf("'{}' is not text or json", v);
          },
          "text|json"));
  out->add_option("--color", g.color, i18n::trs("auto|always|never"))->check(CLI::IsMember({"auto", "always", "never"}));
  out->add_flag("-v,--verbose", g.verbose, i18n::trs("More detail (repeatable)"));
  out->add_flag("-q,--quiet", g.quiet, i18n::trs("Only errors"));
  out->add_flag("--no-progress", g.no_progress, i18n::trs("No progress bars"));
  out->add_option("--lang", g.lang,
                  i18n::trs("Language of the human output: en or zh_CN (default: from LANGUAGE, LC_ALL, LC_MESSAGES, LANG; "
                            "JSON stays English)"));
  auto* env = app.add_option_group(i18n::trs("Environment"));
  env->add_option("--python", g.python, i18n::trs("Target interpreter (default: $VIRTUAL_ENV, $CONDA_PREFIX, python3 on PATH)"));
  g.detect_framework = true; // until --framework is given (api/options.hpp)
  env->add_option("--framework", g.framework,
                  i18n::trs("Framework: torch, jax, tensorflow, paddlepaddle (default: the ones installed, else torch)"))
      ->each([&g](const std::string&) { g.detect_framework = false; });
  env->add_option("--channel", g.channel, i18n::trs("auto|stable|test|nightly"))
      ->check(CLI::IsMember({"auto", "stable", "test", "nightly"}));
  env->add_option("--variant", g.variant, i18n::trs("Build variant, e.g. cu128"));
  env->add_option("--mirror", g.mirror, i18n::trs("Replace the official base URL in every index template"));
  env->add_option(
      "--index-url,-i", g.index_url,
      i18n::trs("The index to use; with a framework, its index for the variant it serves (GPU, driver and kernel checks apply)"));
  // Repeatable options take one value per occurrence (as pip's and uv's do): CLI11's default for a
  // vector would swallow the requirements or files that follow (`--gpu sm_120 torch`).
  env->add_option(
         "--extra-index-url", g.extra_index_urls,
         i18n::trs("Another index for packages that are not the framework's; each from the first index that has it (repeatable)"))
      ->allow_extra_args(false);
  env->add_option("--find-links", g.find_links, i18n::trs("Directory of wheels (repeatable)"))->allow_extra_args(false);
  env->add_option("--matrices", g.matrices_dir, i18n::trs("Directory of YAML files overriding the embedded matrices"));
  auto* cache_dir = env->add_option("--cache-dir", g.cache_dir, i18n::trs("Cache directory"));
  env->add_flag("--no-cache,-n", g.no_cache,
                i18n::trs("Read and write no cache: a temporary one, removed when the command ends (as uv's -n)"))
      ->excludes(cache_dir);
  env->add_flag("--offline", g.offline, i18n::trs("Use only the cache"));
  env->add_flag("--allow-cpu", g.allow_cpu, i18n::trs("Allow a CPU build when no GPU build fits"));
  env->add_option("--lockfile", g.lockfile, i18n::trs("Lockfile path"));
  env->add_flag("--no-config", g.no_config, i18n::trs("Read no configuration file (envfix.toml, uv.toml, pip.conf)"));
  auto* tgt = app.add_option_group(i18n::trs("Target host (plan for another machine)"));
  tgt->add_option("--gpu", g.gpus, i18n::trs("GPU arch or name to plan for (repeatable, or a comma list)"))
      ->allow_extra_args(false)
      ->delimiter(',');
  tgt->add_option("--driver", g.driver, i18n::trs("Driver version to plan for"));
  tgt->add_option("--python-version", g.python_version, i18n::trs("Python version to plan for"));
  tgt->add_option("--platform", g.platform, i18n::trs("Platform tag to plan for"));
}

void add_examples(CLI::App& cmd, const std::vector<Example>& examples) {
  std::string text = i18n::trs("Examples:");
  for (const auto& e : examples) text += fmt::format("\n  {}\n      {}", e.command, e.what);
  const auto before = cmd.get_footer(); // a command's own footer (verify's exit codes) comes first
  cmd.footer(before.empty() ? text : before + "\n\n" + text);
}

void add_request_file_options(CLI::App& cmd, api::RequestFiles& files) {
  cmd.add_option("-r,--requirement", files.requirements,
                 i18n::trs("Requirements from FILE (pip's format, or a pyproject.toml); repeatable"))
      ->allow_extra_args(false)
      ->type_name("FILE");
  cmd.add_option("-c,--constraint", files.constraints, i18n::trs("Constrain versions with FILE (pip's format); repeatable"))
      ->allow_extra_args(false)
      ->type_name("FILE");
  cmd.add_option("--extra", files.extras, i18n::trs("An optional-dependency group of the pyproject.toml given with -r"))
      ->allow_extra_args(false);
  cmd.add_flag("--all-extras", files.all_extras, i18n::trs("Every optional-dependency group of the pyproject.toml"));
  cmd.add_flag(
      "--require-hashes", files.require_hashes,
      i18n::trs("Every requirement pinned with == and --hash, every file checked against them (pip's hash-checking mode)"));
}

// CLI11's own words in the help (its Formatter's labels, the default groups, the help and version
// flags) in the language picked before the app is built (preset_language, cli/render.hpp). Before any
// option or subcommand is added: subcommands copy the help flag, the option defaults and the group.
// CLI11 names an option group "[Option Group: Output]" (CLI/App.hpp, get_display_name): its prefix too.
class HelpFormatter : public CLI::Formatter {
public:
  std::string make_expanded(const CLI::App* sub) const override {
    constexpr std::string_view prefix = "[Option Group: ";
    auto out = CLI::Formatter::make_expanded(sub);
    if (sub->get_name().empty() && out.starts_with(prefix)) out = i18n::trs("[Option Group: ") + out.substr(prefix.size());
    return out;
  }
  // CLI11's layout (CLI/Formatter.hpp, make_help), and for a command the global options too, which it
  // takes before or after its name (fallthrough), ahead of the command's examples (its footer).
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override {
    const CLI::App* root = app->get_parent();
    if (mode != CLI::AppFormatMode::Normal || !root || root->get_parent() || app->get_name().empty())
      return CLI::Formatter::make_help(app, std::move(name), mode);
    std::string out = make_description(app) + make_usage(app, name) + make_positionals(app) + make_groups(app, mode) +
                      make_subcommands(app, mode);
    std::string globals;
    for (const CLI::App* group : root->get_subcommands({}))
      if (group->get_name().empty() && !group->get_group().empty())
        globals +=
            make_group(group->get_group(), false, group->get_options([](const CLI::Option* o) { return o->nonpositional(); }));
    if (!globals.empty()) out += "\n" + i18n::trs("Global options (before or after the command):") + "\n" + globals;
    return out + "\n" + make_footer(app);
  }
};

void localize_help(CLI::App& app) {
  auto f = std::make_shared<HelpFormatter>();
  app.formatter(f);
  for (std::string_view label : {"Usage", "OPTIONS", "SUBCOMMAND", "SUBCOMMANDS", "Positionals", "REQUIRED", "Needs", "Excludes"})
    f->label(std::string(label), i18n::trs(label));
  app.option_defaults()->group(i18n::trs("Options"));
  app.group(i18n::trs("Subcommands"));
  app.set_help_flag("-h,--help", i18n::trs("Print this help message and exit"));
  app.set_help_all_flag("--help-all", i18n::trs("Show help for all commands"));
  app.set_version_flag("--version", "envfix " ENVFIX_VERSION, i18n::trs("Display program version information and exit"));
}

// A subcommand's help flags are added before it copies the option defaults (CLI/App.hpp, the
// subcommand constructor): their group is CLI11's "Options" until set here.
void localize_subcommand_help(CLI::App& app) {
  for (auto* sub : app.get_subcommands({}))
    for (CLI::Option* opt : {sub->get_help_ptr(), sub->get_option_no_throw("--help-all")})
      if (opt) opt->group(i18n::trs("Options"));
}

} // namespace envfix::cli

int main(int argc, char** argv) {
  using namespace envfix::cli;
  preset_language(argc, argv); // the help is built in it (CLI11 takes its texts now)
  CLI::App app{envfix::i18n::trs("envfix: repair and lock GPU deep-learning environments")};
  localize_help(app);
  app.require_subcommand(1);
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
  add_generated_commands(app, g);
  localize_subcommand_help(app);
  std::filesystem::path no_cache_dir; // --no-cache: made after parsing, removed once the command is done
  struct RemoveAfter {
    const std::filesystem::path& dir;
    ~RemoveAfter() {
      std::error_code ec;
      if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
  } remove_after{no_cache_dir};
  app.parse_complete_callback([&] {
    init_output(g);
    // An unknown --lang: already reported; CLI11 exits with the code and prints nothing more.
    if (int rc = init_language(g); rc != 0) throw CLI::RuntimeError(rc);
    if (g.no_cache) {
      auto dir = envfix::util::make_temp_dir({}, "envfix-no-cache");
      if (!dir) {
        print_error(dir.error());
        throw CLI::RuntimeError(2);
      }
      no_cache_dir = *dir;
      g.cache_dir = dir->string(); // before configure(): neither $ENVFIX_CACHE_DIR nor envfix.toml replaces it
    }
    // envfix.toml, then pip's and uv's index settings (README.md, Configuration), for the commands
    // that read an index or the cache: a broken uv.toml stops no `envfix inspect` or `rollback`.
    static const std::set<std::string> reads_no_index{"inspect", "export", "rollback", "recover", "completions", "man"};
    const auto parsed = app.get_subcommands();
    const bool offline_only = !parsed.empty() && reads_no_index.contains(parsed.front()->get_name());
    if (auto configured = offline_only ? envfix::Expected<void>{} : envfix::api::configure(g); !configured) {
      print_error(configured.error());
      throw CLI::RuntimeError(1);
    }
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
