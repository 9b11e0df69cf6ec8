#include "api/verify.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "api/doctor.hpp"
#include "diagnosis/diagnose.hpp"
#include "diagnosis/run_output.hpp"
#include "resolver/frameworks.hpp"
#include "api/host.hpp"
#include "smoke/smoke.hpp"
#include "probe/host_facts.hpp"
#include "probe/installed_kernels.hpp"
#include "specs/name.hpp"
#include "util/python.hpp"
#include "util/strings.hpp"
#include "util/subprocess.hpp"

namespace envfix::api {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// What verify runs (a step, the app) gets its own session, stopped with it on SIGINT/SIGTERM
// (verify's InterruptScope) and on its exit or timeout; and no index credentials.
void child_session(util::SubprocessOptions& o) {
  o.new_session = true;
  o.drop_index_credentials = true;
  o.cancel = [] { return util::interrupt_signal() != 0; };
}

std::vector<std::string> stopped_lines(const std::vector<util::LeftoverProcess>& left) {
  std::vector<std::string> out;
  for (const auto& p : left) out.push_back(fmt::format("pid {} ({})", p.pid, p.command));
  return out;
}

// A smoke step's outcome as verify reports it: the exception line (or the timeout, the signal, the
// exit code), the operator a model check named last, the CUDA error's class.
VerifyStep verify_step(const smoke::StepRun& s, VerifyStep v, std::chrono::seconds timeout) {
  v.ok = s.ok;
  v.seconds = s.seconds;
  if (s.ok) return v;
  v.op = diagnosis::last_op(s.out);
  v.error = smoke::failure_text(s, timeout);
  v.cuda_class = diagnosis::classify_cuda_error(v.error);
  return v;
}

// The reinstall of the framework's installed packages, with the options of this run (diagnosis
// builds every printed command): the fix when no GPU is there for the binaries to be judged against.
std::string reinstall_command(const Options& g, const matrices::Framework& fw, const Host& host) {
  const bool managed = host.facts.python && host.facts.python->externally_managed;
  return diagnosis::reinstall_command(fw, host.installed_names, diagnose_options(g, {}).fix, managed);
}

// The reinstall, proven like doctor's fixes before it is shown (issue 56): the nearest request where
// the whole one does not resolve; said beside the fix where nothing does.
void reinstall_fix(const Options& o, const matrices::Framework& fw, const Host& host, AppRun& app) {
  app.fix = reinstall_command(o, fw, host);
  if (o.offline || (host.facts.python && host.facts.python->externally_managed)) return; // a new venv: nothing to plan
  auto p = prove_fix(o, fw.name, diagnosis::reinstall_request(fw, host.installed_names));
  app.fix_proof = p.proof;
  app.fix_proof_detail = std::move(p.detail);
  if (!p.command.empty()) app.fix = std::move(p.command);
}

// "no kernel image" in the app: doctor's diagnosis of the binaries (framework and GPU extensions,
// api/doctor.hpp) gives the fix, so verify and doctor print the same command. When they all hold
// code for the GPUs, no reinstall can help, and the note says where the kernel must come from.
void missing_arch_fix(const Options& o, const matrices::Framework& fw, const Host& host, AppRun& app) {
  if (host.gpus.empty()) return reinstall_fix(o, fw, host, app);
  auto d = doctor(o, DoctorRequest{.no_repro = true});
  if (!d) return reinstall_fix(o, fw, host, app);
  if (!d->fix.empty()) {
    // doctor proved each framework's fix (api/doctor.cpp); its proof goes with the command.
    app.fix = d->fix;
    if (const auto* s = d->framework(fw.name)) {
      app.fix_proof = s->proof;
      app.fix_proof_detail = s->proof_detail;
    }
    return;
  }
  std::string gpus;
  for (const auto& [name, cc] : host.gpus) gpus += (gpus.empty() ? "" : ", ") + cc.sm_name();
  app.fix_note = diagnosis::rebuild_note(fw.name, gpus);
}

AppRun run_app(const std::string& cmd, const fs::path& python, std::chrono::seconds timeout, bool sync) {
  AppRun a;
  a.command = cmd;
  a.sync = sync;
  util::SubprocessOptions o;
  o.timeout = timeout;
  if (sync) o.set_env["CUDA_LAUNCH_BLOCKING"] = "1";
  // `python` in the command is the target interpreter.
  std::string path = python.parent_path().string();
  if (auto p = std::getenv("PATH")) path += std::string(":") + p;
  o.set_env["PATH"] = path;
  o.cwd = fs::current_path();
  child_session(o);
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
  a.exit_code = r->timed_out || r->cancelled ? -1 : r->exit_code;
  a.stopped = stopped_lines(r->leftovers);
  auto [line, cls] = diagnosis::first_cuda_error(r->err + "\n" + r->out);
  a.error_line = line;
  a.cuda_class = cls;
  if (!line.empty()) a.where = diagnosis::traceback_end(r->err);
  a.async_note = diagnosis::async_note(a.command, a.where, a.sync, !a.error_line.empty());
  if (r->timed_out && a.error_line.empty()) a.error_line = fmt::format("timed out after {} s", timeout.count());
  return a;
}

// The repro and model layers, every step in one interpreter where it can (smoke/smoke.hpp), each
// told as it ends; a layer is announced before its first step (without steps, in its turn).
Expected<void> run_layers(const matrices::Framework& fw, const VerifyRequest& r, VerifyReport& report, VerifyReporter& rep) {
  const auto device = report.cpu ? smoke::SmokeDevice::cpu : smoke::SmokeDevice::gpu;
  std::vector<std::pair<VerifyLayer, std::size_t>> layers; // each layer asked, its first step
  std::vector<smoke::SmokeStep> steps;
  for (auto l : {smoke::Layer::repro, smoke::Layer::model}) {
    const auto layer = l == smoke::Layer::repro ? VerifyLayer::repro : VerifyLayer::model;
    if (!r.layers.contains(layer)) continue;
    layers.emplace_back(layer, steps.size());
    for (auto& st : smoke::layer_steps(l, fw.smoke, report.host.installed_names, device)) steps.push_back(std::move(st));
  }
  // A step as verify names it: a model by its own name, less apply's "model: " (smoke/smoke.cpp).
  auto blank = [&](std::size_t i) {
    const auto& st = steps[i];
    const bool model = st.kind == smoke::StepKind::model;
    return VerifyStep{model ? VerifyLayer::model : VerifyLayer::repro, model ? st.name.substr(st.name.find(": ") + 2) : st.name,
                      st.kind == smoke::StepKind::kernel};
  };
  std::size_t announced = 0;
  auto announce = [&](std::size_t upto) {
    for (; announced < layers.size() && layers[announced].second <= upto; ++announced) {
      rep.layer(layers[announced].first);
      if (layers[announced].first == VerifyLayer::model && fw.smoke.model.empty())
        rep.note(util::msg("the matrices define no model checks for {}", fw.name));
    }
  };
  auto tell = [&](VerifyStep v) {
    announce(report.steps.size());
    report.steps.push_back(std::move(v));
    if (!util::interrupt_signal()) rep.step(report.steps.back());
  };
  smoke::SmokeRunOptions ro;
  ro.timeout = r.timeout;
  ro.stop_at_failure = false;
  ro.cancel = [] { return util::interrupt_signal() != 0; };
  ro.on_step = [&](const smoke::StepRun& s) { tell(verify_step(s, blank(report.steps.size()), r.timeout)); };
  auto run = smoke::run_steps(report.python, steps, ro);
  if (!run && run.error().code == ErrorCode::interrupted) return std::unexpected(std::move(run.error()));
  if (run)
    report.interpreters = run->interpreters;
  else // the interpreter could not be started: every step left says why
    while (report.steps.size() < steps.size()) {
      auto v = blank(report.steps.size());
      v.error = run.error().message;
      tell(std::move(v));
    }
  announce(steps.size());
  return {};
}

// The repro on a local GPU is a real run of the variant's kernel packages on GPU 0: recorded in the
// evidence store as doctor records its own (diagnosis/diagnose.cpp, "runs observed"; wheel/kernel_evidence.hpp).
void record_runs(const Options& o, const matrices::Framework& fw, std::string_view variant, const VerifyReport& report) {
  const auto& gpus = report.host.facts.gpus;
  if (report.cpu || gpus.empty()) return;
  std::optional<std::pair<bool, std::string>> outcome;
  std::string error;
  for (const auto& st : report.steps) {
    if (st.layer != VerifyLayer::repro) continue;
    if (st.cuda_class == diagnosis::CudaError::missing_arch) {
      outcome = {false, st.name};
      error = st.error;
      break;
    }
    if (st.kernel && st.ok) outcome = {true, st.name};
  }
  const fs::path cache = outcome ? run_cache_dir(o) : fs::path();
  if (cache.empty()) return;
  const auto store = evidence_store_at(cache);
  std::set<std::string> kernels;
  for (const auto& k : fw.kernel_packages(variant)) kernels.insert(specs::normalize_name(k));
  for (const auto& d : report.host.facts.installed)
    if (d.has_record && kernels.contains(d.normalized_name()))
      if (auto ob = probe::run_observation(d, gpus.front(), outcome->first, outcome->second, error, "envfix verify"))
        (void)store.put_observation(*ob); // a cache that cannot be written loses a note, not the verification
}

} // namespace

std::string_view to_string(VerifyLayer l) {
  switch (l) {
  case VerifyLayer::repro: return "repro";
  case VerifyLayer::model: return "model";
  case VerifyLayer::app: break;
  }
  return "app";
}

std::optional<VerifyLayer> parse_verify_layer(std::string_view s) {
  for (auto l : {VerifyLayer::repro, VerifyLayer::model, VerifyLayer::app})
    if (s == to_string(l)) return l;
  return std::nullopt;
}

bool VerifyReport::ok() const {
  return std::all_of(steps.begin(), steps.end(), [](const auto& s) { return s.ok; }) && (!app || app->exit_code == 0);
}

Expected<VerifyReport> verify(const Options& o, const VerifyRequest& r, VerifyReporter& rep) {
  auto knowledge = ENVFIX_TRY(load_knowledge(o));
  if (!knowledge) return make_error(ErrorCode::internal, util::msg("the matrices could not be loaded"));
  VerifyReport report;
  report.host = ENVFIX_TRY(make_host(o, knowledge.get()));
  report.layers = r.layers;
  const auto chosen = ENVFIX_TRY(resolver::installed_framework(
      o.framework, o.detect_framework, *knowledge, report.host.facts.installed, report.host.facts.python->executable.string()));
  report.framework_note = chosen.note;
  const auto* fw = chosen.framework;
  const std::string& main_local = chosen.main_local;
  report.framework = fw->name;
  report.python = report.host.facts.python->executable;
  const auto* variant = fw->variant(main_local);
  const Host& host = report.host;
  const auto cpu = smoke::cpu_reason(!host.gpus.empty(), host.gpus_planned, variant && variant->kind == "cpu");
  report.cpu = cpu != smoke::CpuReason::none;
  if (report.cpu) report.device_note = util::msg("{}: verifying on the CPU", smoke::describe(cpu));
  rep.started(report);
  // SIGINT/SIGTERM: the running child's session is killed, then envfix exits 128 + the signal.
  util::InterruptScope interrupts;
  auto interrupted = [] {
    return fail(ErrorCode::interrupted, "verify stopped: envfix was interrupted by signal {}", util::interrupt_signal());
  };
  if (!run_layers(*fw, r, report, rep) || util::interrupt_signal()) return interrupted();
  record_runs(o, *fw, variant ? std::string_view(variant->name) : std::string_view(main_local), report);
  if (r.layers.contains(VerifyLayer::app) && !r.app.empty()) {
    rep.layer(VerifyLayer::app);
    report.app = run_app(r.app, report.python, r.timeout, r.sync);
    if (util::interrupt_signal()) return interrupted();
    if (report.app->cuda_class == diagnosis::CudaError::missing_arch) missing_arch_fix(o, *fw, host, *report.app);
    rep.app(*report.app);
  }
  return report;
}

} // namespace envfix::api
