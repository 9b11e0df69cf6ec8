// envfix verify [--layers repro,model,app] [--app CMD]: the layered checks users are told to do by
// hand after a fix, in the target interpreter, on the GPU (on the CPU when there is none, saying
// so), each step with a timeout and its wall time (docs/json.md, verify):
//   repro  the framework's smoke test: step A (a host-to-device copy), step B (a kernel), companions;
//   model  small models built in code (matrices `smoke.model`), each naming the operator that failed;
//   app    the user's command: exit code, wall time, peak GPU memory (NVML), the first CUDA error
//          line classified ("no kernel image" → missing arch, with the fix command).
#include <chrono>
#include <filesystem>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/globals.hpp"
#include "api/host.hpp"
#include "api/smoke.hpp"
#include "cli/views.hpp"
#include "util/strings.hpp"
#include "cli/render.hpp"
#include "probe/host_facts.hpp"
#include "specs/name.hpp"
#include "util/python.hpp"
#include "util/subprocess.hpp"

namespace envfix::cli {
namespace {

using namespace envfix::api; // smoke steps and the CUDA error classes (api/smoke.hpp)

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct VerifyOptions {
  std::string layers = "repro,model,app";
  std::string app;
  int timeout_s = 600;
};

struct StepResult {
  std::string layer, name;
  bool ok = false;
  double seconds = 0;
  std::string error;     // the exception line (or "timed out after N s", "exit code N")
  std::string op;        // model layer: the operator it was running when it failed
  std::string cuda_class; // missing-arch | out-of-memory | cuda-error | "" (no CUDA error seen)
};

// The last "OP <name>" line a model script printed: the operator that was running.
std::string last_op(const std::string& out) {
  std::string op;
  std::size_t i = 0;
  while (i < out.size()) {
    auto j = out.find('\n', i);
    if (j == std::string::npos) j = out.size();
    std::string_view line(out.data() + i, j - i);
    if (line.starts_with("OP ")) op = std::string(line.substr(3));
    i = j + 1;
  }
  return op;
}

// The first line naming a CUDA error, and its class.
std::pair<std::string, std::string> first_cuda_error(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto j = text.find('\n', i);
    if (j == std::string::npos) j = text.size();
    std::string line = text.substr(i, j - i);
    if (line.find("CUDA error") != std::string::npos || line.find("CUDA_ERROR") != std::string::npos ||
        line.find("no kernel image") != std::string::npos || line.find("CUDA out of memory") != std::string::npos)
      return {line, cuda_error_class(line)};
    i = j + 1;
  }
  return {"", ""};
}

StepResult run_step(const fs::path& python, const std::string& layer, const std::string& name, const std::string& code,
                    bool cpu, std::chrono::seconds timeout) {
  StepResult s{layer, name};
  util::SubprocessOptions o;
  o.timeout = timeout;
  o.set_env["CUDA_LAUNCH_BLOCKING"] = "1";
  o.set_env["ENVFIX_DEVICE"] = cpu ? "cpu" : "cuda";
  if (cpu) o.set_env["CUDA_VISIBLE_DEVICES"] = "";
  o.unset_env = {"PYTHONPATH", "PYTHONHOME"};
  auto t0 = Clock::now();
  auto r = util::run_python(python, {"-B", "-c", code}, o);
  s.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!r) {
    s.error = r.error().message;
    return s;
  }
  s.ok = r->ok();
  if (s.ok) return s;
  s.op = last_op(r->out);
  s.error = r->timed_out ? fmt::format("timed out after {} s", timeout.count()) : exception_line(r->out, r->err);
  if (s.error.empty()) s.error = fmt::format("exit code {}", r->exit_code);
  s.cuda_class = cuda_error_class(s.error);
  return s;
}

json step_json(const StepResult& s) {
  return {{"name", s.name},
          {"status", s.ok ? "passed" : "failed"},
          {"seconds", s.seconds},
          {"error", s.error.empty() ? json(nullptr) : json(s.error)},
          {"operator", s.op.empty() ? json(nullptr) : json(s.op)},
          {"class", s.cuda_class.empty() ? json(nullptr) : json(s.cuda_class)}};
}

// The command that installs a build with kernels for these GPUs (as doctor prints it).
std::string fix_command(const Globals& g, const matrices::Framework& fw, const api::Host& host) {
  std::set<std::string> family{specs::normalize_name(fw.main_package)};
  for (const auto& c : fw.companions) family.insert(specs::normalize_name(c));
  std::string pkgs;
  for (const auto& n : host.installed_names)
    if (family.contains(n) && pkgs.find(" " + n + " ") == std::string::npos) pkgs += n + " ";
  if (pkgs.empty()) pkgs = specs::normalize_name(fw.main_package) + " ";
  std::string cmd = "envfix apply " + pkgs;
  if (fw.name != "torch") cmd += "--framework " + fw.name + " ";
  if (!g.python.empty()) cmd += "--python " + g.python + " ";
  if (!g.mirror.empty()) cmd += "--mirror " + g.mirror + " ";
  if (!g.matrices_dir.empty()) cmd += "--matrices " + g.matrices_dir + " ";
  cmd.pop_back();
  return cmd;
}

struct AppResult {
  int exit_code = -1;
  double seconds = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> gpu_memory; // {peak, baseline} per GPU
  std::string memory_note;
  std::string error_line, cuda_class, fix;
};

AppResult run_app(const std::string& cmd, const fs::path& python, std::chrono::seconds timeout) {
  AppResult a;
  util::SubprocessOptions o;
  o.timeout = timeout;
  // `python` in the command is the target interpreter.
  std::string path = python.parent_path().string();
  if (auto p = std::getenv("PATH")) path += std::string(":") + p;
  o.set_env["PATH"] = path;
  o.cwd = fs::current_path();
  probe::GpuMemorySampler sampler;
  auto t0 = Clock::now();
  auto r = util::run_process({"/bin/sh", "-c", cmd}, o);
  a.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  sampler.stop();
  a.gpu_memory = sampler.peak();
  a.memory_note = sampler.why();
  if (!r) {
    a.error_line = r.error().message;
    return a;
  }
  a.exit_code = r->timed_out ? -1 : r->exit_code;
  auto [line, cls] = first_cuda_error(r->err + "\n" + r->out);
  a.error_line = line;
  a.cuda_class = cls;
  if (r->timed_out && a.error_line.empty()) a.error_line = fmt::format("timed out after {} s", timeout.count());
  return a;
}

// --layers: a comma-separated subset of repro, model, app (app needs --app, unless it is the default).
Expected<std::set<std::string>> parse_layers(const VerifyOptions& o) {
  std::set<std::string> layers;
  for (const auto& l : util::split(o.layers, ',')) {
    if (l != "repro" && l != "model" && l != "app")
      return make_error(ErrorCode::invalid_input, fmt::format("--layers: unknown layer '{}'", l),
                        "layers are repro, model and app, comma-separated");
    layers.insert(l);
  }
  if (layers.contains("app") && o.app.empty() && o.layers != VerifyOptions{}.layers)
    return make_error(ErrorCode::invalid_input, "--layers app needs --app CMD", "e.g. --app 'python train.py --steps 10'");
  return layers;
}

// The --format json document of a verify run (docs/json.md, verify).
json verify_json(const matrices::Framework& fw_ref, const fs::path& python, bool cpu, const std::string& device_note, bool ok,
                 const api::Host& host, const std::set<std::string>& layers, const std::vector<StepResult>& results,
                 const std::optional<AppResult>& app, const std::string& app_command) {
  const auto* fw = &fw_ref;
  json j{{"framework", fw->name}, {"python", python.string()}, {"device", cpu ? "cpu" : "gpu"},
         {"device_note", device_note}, {"verdict", ok ? "passed" : "failed"}};
  json gpus = json::array();
  for (const auto& [name, cc] : host.gpus) gpus.push_back({{"name", name}, {"arch", cc.sm_name()}});
  j["gpus"] = gpus;
  json lj = json::object();
  for (const auto& l : {"repro", "model"}) {
    if (!layers.contains(l)) continue;
    json steps = json::array();
    bool lok = true;
    for (const auto& r : results)
      if (r.layer == l) {
        steps.push_back(step_json(r));
        lok = lok && r.ok;
      }
    lj[l] = {{"status", lok ? "passed" : "failed"}, {"steps", steps}};
  }
  if (app) {
    json mem = json::array();
    for (std::size_t i = 0; i < app->gpu_memory.size(); ++i)
      mem.push_back({{"index", i}, {"peak_used_bytes", app->gpu_memory[i].first}, {"baseline_used_bytes", app->gpu_memory[i].second}});
    lj["app"] = {{"status", app->exit_code == 0 ? "passed" : "failed"}, {"command", app_command}, {"exit_code", app->exit_code},
                 {"seconds", app->seconds}, {"gpu_memory", mem}, {"gpu_memory_note", app->memory_note},
                 {"cuda_error", app->error_line.empty() ? json(nullptr) : json(app->error_line)},
                 {"class", app->cuda_class.empty() ? json(nullptr) : json(app->cuda_class)},
                 {"fix", app->fix.empty() ? json(nullptr) : json(app->fix)}};
  }
  j["layers"] = lj;
  return j;
}

Expected<int> run_verify(const Globals& g, const VerifyOptions& o) {
  const std::set<std::string> layers = ENVFIX_TRY(parse_layers(o));
  auto knowledge = ENVFIX_TRY(api::load_knowledge(g));
  if (!knowledge) return make_error(ErrorCode::internal, "the matrices could not be loaded");
  const auto* fw = knowledge->framework(g.framework);
  if (!fw) return make_error(ErrorCode::invalid_input, fmt::format("--framework {}: not in the matrices", g.framework));
  auto host = ENVFIX_TRY(api::make_host(g, knowledge.get()));
  const fs::path python = host.facts.python->executable;
  const std::string main = specs::normalize_name(fw->main_package);
  std::string main_local;
  bool installed = false;
  for (const auto& d : host.facts.installed)
    if (d.normalized_name() == main) {
      installed = true;
      main_local = d.local();
    }
  if (!installed)
    return make_error(ErrorCode::not_found, fmt::format("{} is not installed in {}", fw->main_package, python.string()),
                      fmt::format("install it first: envfix apply {}", main));
  const auto* variant = fw->variant(main_local);
  const bool cpu_build = variant && variant->kind == "cpu";
  const bool cpu = host.gpus.empty() || host.gpus_planned || cpu_build;
  const std::string device_note = host.gpus_planned ? "planned GPUs cannot run anything: verifying on the CPU"
                                  : host.gpus.empty() ? "no GPU: verifying on the CPU"
                                  : cpu_build         ? "CPU build: verifying on the CPU"
                                                      : "";
  human(host_line(host));
  if (!device_note.empty()) human(styled(device_note, Style::yellow));
  const auto timeout = std::chrono::seconds(o.timeout_s);
  std::vector<StepResult> results;
  auto report = [&](const StepResult& s) {
    human(fmt::format("  {} {:<40} {:>7.2f}s{}", s.ok ? styled("PASS", Style::green) : styled("FAIL", Style::red), s.name,
                      s.seconds, s.ok ? "" : fmt::format("  {}{}", s.op.empty() ? "" : "[" + s.op + "] ", s.error)));
    results.push_back(s);
  };
  if (layers.contains("repro")) {
    human(styled("1. repro", Style::bold));
    for (const auto& st : smoke_steps(fw->smoke, host.installed_names, cpu ? SmokeDevice::cpu : SmokeDevice::gpu))
      report(run_step(python, "repro", st.name, st.code, cpu, timeout));
  }
  if (layers.contains("model")) {
    human(styled("2. model", Style::bold));
    if (fw->smoke.model.empty()) human(fmt::format("  the matrices define no model checks for {}", fw->name));
    for (const auto& st : model_steps(fw->smoke, host.installed_names))
      report(run_step(python, "model", st.name.substr(7), st.code, cpu, timeout));
  }
  std::optional<AppResult> app;
  if (layers.contains("app") && !o.app.empty()) {
    human(styled("3. app", Style::bold));
    app = run_app(o.app, python, timeout);
    if (app->cuda_class == "missing-arch") app->fix = fix_command(g, *fw, host);
    std::string mem;
    for (std::size_t i = 0; i < app->gpu_memory.size(); ++i)
      mem += fmt::format("{}GPU {} peak {}", mem.empty() ? "" : ", ", i, human_size(app->gpu_memory[i].first));
    human(fmt::format("  {} {} (exit {}) {:.2f}s{}", app->exit_code == 0 ? styled("PASS", Style::green) : styled("FAIL", Style::red),
                      o.app, app->exit_code, app->seconds, mem.empty() ? "" : "; " + mem));
    if (!app->error_line.empty()) human(fmt::format("  first CUDA error: {} [{}]", app->error_line, app->cuda_class));
    if (!app->fix.empty()) human(fmt::format("{} {}", styled("fix:", Style::bold), app->fix));
  }
  bool ok = std::all_of(results.begin(), results.end(), [](const auto& r) { return r.ok; }) && (!app || app->exit_code == 0);
  human(fmt::format("{} {}", styled("verify:", Style::bold), ok ? styled("passed", Style::green) : styled("failed", Style::red)));
  if (g.format == "json")
    machine(verify_json(*fw, python, cpu, device_note, ok, host, layers, results, app, o.app).dump(2));
  return ok ? 0 : 1;
}

} // namespace

void add_verify_command(CLI::App& app, Globals& g) {
  auto o = std::make_shared<VerifyOptions>();
  auto* cmd = app.add_subcommand("verify", "Layered checks in the target interpreter: repro, small models, your app");
  cmd->add_option("--layers", o->layers, "Comma-separated: repro, model, app (default all; app needs --app)");
  cmd->add_option("--app", o->app, "Your command, run with the target interpreter first on PATH (e.g. 'python train.py')");
  cmd->add_option("--timeout", o->timeout_s, "Seconds each step (and the app) may run (default 600)")->check(CLI::Range(1, 86400));
  cmd->footer("Exit 0 when every step passed, 1 when one failed, 2 when it could not run.");
  cmd->callback([&g, o] { g.exit_code = finish_command(run_verify(g, *o)); });
}

} // namespace envfix::cli
