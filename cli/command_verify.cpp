// envfix verify [--layers repro,model,app] [--app CMD]: parses, runs api::verify (api/verify.hpp)
// and renders each step as it ends, then the verdict (text) or the document (docs/json.md, verify).
#include <chrono>
#include <filesystem>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/verify.hpp"
#include "diagnosis/cuda_error.hpp"
#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "cli/views.hpp"
#include "i18n/i18n.hpp"
#include "util/strings.hpp"

namespace envfix::cli {
namespace {

using nlohmann::json;

struct VerifyOptions {
  std::string layers = "repro,model,app";
  std::string app;
  int timeout_s = 600;
  bool sync = false;
};

// --layers: a comma-separated subset of repro, model, app (app needs --app, unless it is the default).
Expected<api::VerifyRequest> parse_request(const VerifyOptions& o) {
  api::VerifyRequest r;
  r.layers.clear();
  for (const auto& l : util::split(o.layers, ',')) {
    auto layer = api::parse_verify_layer(l);
    if (!layer)
      return make_error(ErrorCode::invalid_input, util::msg("--layers: unknown layer '{}'", l),
                        util::msg("layers are repro, model and app, comma-separated"));
    r.layers.insert(*layer);
  }
  if (r.layers.contains(api::VerifyLayer::app) && o.app.empty() && o.layers != VerifyOptions{}.layers)
    return make_error(ErrorCode::invalid_input, util::msg("--layers app needs --app CMD"),
                      util::msg("e.g. --app 'python train.py --steps 10'"));
  r.app = o.app;
  r.sync = o.sync;
  r.timeout = std::chrono::seconds(o.timeout_s);
  return r;
}

json step_json(const api::VerifyStep& s) {
  return {{"name", s.name},
          {"status", s.ok ? "passed" : "failed"},
          {"seconds", s.seconds},
          {"error", s.error.empty() ? json(nullptr) : json(s.error)},
          {"operator", s.op.empty() ? json(nullptr) : json(s.op)},
          {"class", s.cuda_class == diagnosis::CudaError::none ? json(nullptr) : json(diagnosis::to_string(s.cuda_class))}};
}

// The --format json document of a verify run (docs/json.md, verify).
json verify_json(const api::VerifyReport& r) {
  json j{{"framework", r.framework},
         {"python", r.python.string()},
         {"device", r.cpu ? "cpu" : "gpu"},
         {"device_note", r.device_note.text},
         {"verdict", r.ok() ? "passed" : "failed"}};
  json gpus = json::array();
  for (const auto& [name, cc] : r.host.gpus) gpus.push_back({{"name", name}, {"arch", cc.sm_name()}});
  j["gpus"] = gpus;
  j["interpreters"] = r.interpreters;
  json lj = json::object();
  for (auto l : {api::VerifyLayer::repro, api::VerifyLayer::model}) {
    if (!r.layers.contains(l)) continue;
    json steps = json::array();
    bool lok = true;
    for (const auto& s : r.steps)
      if (s.layer == l) {
        steps.push_back(step_json(s));
        lok = lok && s.ok;
      }
    lj[std::string(to_string(l))] = {{"status", lok ? "passed" : "failed"}, {"steps", steps}};
  }
  if (const auto& app = r.app) {
    json mem = json::array();
    for (std::size_t i = 0; i < app->gpu_memory.size(); ++i)
      mem.push_back(
          {{"index", i}, {"peak_used_bytes", app->gpu_memory[i].first}, {"baseline_used_bytes", app->gpu_memory[i].second}});
    lj["app"] = {
        {"status", app->exit_code == 0 ? "passed" : "failed"},
        {"command", app->command},
        {"exit_code", app->exit_code},
        {"seconds", app->seconds},
        {"gpu_memory", mem},
        {"gpu_memory_note", app->memory_note},
        {"cuda_error", app->error_line.empty() ? json(nullptr) : json(app->error_line)},
        {"class", app->cuda_class == diagnosis::CudaError::none ? json(nullptr) : json(diagnosis::to_string(app->cuda_class))},
        {"fix", app->fix.empty() ? json(nullptr) : json(app->fix)},
        {"fix_proof", fix_proof_json(app->fix_proof, app->fix_proof_detail)},
        {"fix_note", app->fix_note.empty() ? json(nullptr) : json(app->fix_note.text)},
        {"sync", app->sync},
        {"where", app->where.empty() ? json(nullptr) : json(app->where)},
        {"async_note", app->async_note.empty() ? json(nullptr) : json(app->async_note.text)}};
  }
  j["layers"] = lj;
  return j;
}

// "PASS" / "FAIL", coloured: four cells in every language (the step columns stay aligned).
std::string pass_fail(bool ok) {
  return ok ? styled(i18n::pad(i18n::tr("PASS"), 4), Style::green) : styled(i18n::pad(i18n::tr("FAIL"), 4), Style::red);
}

// Each step as it ends (stderr; the JSON document goes to stdout at the end).
class VerifyView final : public api::VerifyReporter {
public:
  void started(const api::VerifyReport& r) override {
    human(host_line(r.host));
    if (!r.framework_note.empty()) human(styled(i18n::tr(r.framework_note), Style::dim));
    if (!r.device_note.empty()) human(styled(i18n::tr(r.device_note), Style::yellow));
  }
  void layer(api::VerifyLayer l) override {
    const char* n = l == api::VerifyLayer::repro ? "1. repro" : l == api::VerifyLayer::model ? "2. model" : "3. app";
    human(styled(i18n::tr(n), Style::bold));
  }
  void note(const util::Message& text) override { human(fmt::format("  {}", i18n::tr(text))); }
  void step(const api::VerifyStep& s) override {
    // The step's name is the check's own (a model, an operator); the error is the framework's text.
    human(fmt::format("  {} {:<40} {:>7.2f}s{}", pass_fail(s.ok), s.name, s.seconds,
                      s.ok ? "" : fmt::format("  {}{}", s.op.empty() ? "" : "[" + s.op + "] ", s.error)));
    // envfix's own steps always run synchronously: say so, since the user's app does not.
    if (!s.ok && s.cuda_class != diagnosis::CudaError::none)
      human("       " + i18n::trs("(run with CUDA_LAUNCH_BLOCKING=1: the error is raised at the launch that failed)"));
  }
  void app(const api::AppRun& a) override {
    std::string mem;
    for (std::size_t i = 0; i < a.gpu_memory.size(); ++i)
      mem += (mem.empty() ? "" : ", ") + i18n::trf("GPU {} peak {}", i, human_size(a.gpu_memory[i].first));
    human(fmt::format("  {} {} {}{}", pass_fail(a.exit_code == 0), a.command,
                      i18n::trf("(exit {}) {}", a.exit_code, fmt::format("{:.2f}s", a.seconds)), mem.empty() ? "" : "; " + mem));
    if (!a.error_line.empty())
      human("  " + i18n::trf("first CUDA error: {} [{}]", a.error_line, diagnosis::to_string(a.cuda_class)));
    if (!a.where.empty())
      human("  " +
            (a.sync ? i18n::trf("raised (CUDA_LAUNCH_BLOCKING=1) at: {}", a.where) : i18n::trf("reported at: {}", a.where)));
    const auto label = [](std::string_view l) { return styled(i18n::tr(l), Style::bold); };
    if (!a.async_note.empty()) human(fmt::format("  {} {}", label("note:"), i18n::tr(a.async_note)));
    for (const auto& p : a.stopped) human("  " + i18n::trf("left running by the app, stopped: {}", p));
    if (!a.fix.empty()) {
      human(fmt::format("{} {}", label("fix:"), a.fix));
      render_fix_proof(a.fix_proof, a.fix_proof_detail);
    }
    if (!a.fix_note.empty()) human(fmt::format("{} {}", label("note:"), i18n::tr(a.fix_note)));
  }
};

Expected<int> run_verify(const Globals& g, const VerifyOptions& o) {
  const auto request = ENVFIX_TRY(parse_request(o));
  VerifyView view;
  const auto report = ENVFIX_TRY(api::verify(g, request, view));
  const bool ok = report.ok();
  human(fmt::format("{} {}", styled(i18n::tr("verify:"), Style::bold),
                    ok ? styled(i18n::tr("passed"), Style::green) : styled(i18n::tr("failed"), Style::red)));
  if (g.format == "json") machine_json(verify_json(report));
  return ok ? 0 : 1;
}

} // namespace

void add_verify_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<VerifyOptions>();
  auto* cmd = app.add_subcommand("verify", i18n::trs("Layered checks in the target interpreter: repro, small models, your app"));
  cmd->add_option("--layers", o->layers, i18n::trs("Comma-separated: repro, model, app (default all; app needs --app)"));
  cmd->add_option("--app", o->app,
                  i18n::trs("Your command, run with the target interpreter first on PATH (e.g. 'python train.py')"));
  cmd->add_flag("--sync", o->sync,
                i18n::trs("Run the app with CUDA_LAUNCH_BLOCKING=1: a kernel error stops at the launch that failed (slower)"));
  cmd->add_option("--timeout", o->timeout_s, i18n::trs("Seconds each step (and the app) may run (default 600)"))
      ->check(CLI::Range(1, 86400));
  cmd->footer(i18n::trs("Exit 0 when every step passed, 1 when one failed, 2 when it could not run."));
  add_examples(*cmd,
               {{"envfix verify", i18n::trs("the repro and the small models on the GPU")},
                {"envfix verify --app 'python train.py --steps 10'", i18n::trs("your own program, judged by the same rules")}});
  cmd->callback([&g, o] { g.exit_code = finish_command(run_verify(g, *o)); });
}

} // namespace envfix::cli
