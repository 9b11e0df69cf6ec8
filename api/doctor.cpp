// `doctor` (see doctor.hpp): probe the machine once, read the installed kernels, run the repro,
// then diagnosis::diagnose(); no printing.
#include "api/doctor.hpp"

#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "api/host.hpp"
#include "api/plan.hpp"
#include "smoke/smoke.hpp"
#include "probe/installed_kernels.hpp"
#include "util/env.hpp"
#include "util/parallel.hpp"
#include "util/subprocess.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::api {

namespace fs = std::filesystem;

diagnosis::DiagnoseOptions diagnose_options(const Options& g, const DoctorRequest& r) {
  diagnosis::DiagnoseOptions d{g.framework, g.detect_framework, r.no_repro, r.no_kernels, {g.python, {}}};
  auto& args = d.fix.rest;
  for (const auto& gpu : g.gpus) args.insert(args.end(), {"--gpu", gpu});
  if (!g.driver.empty()) args.insert(args.end(), {"--driver", g.driver});
  if (!g.matrices_dir.empty()) args.insert(args.end(), {"--matrices", g.matrices_dir});
  for (auto& a : index_args(g)) args.push_back(std::move(a));
  if (g.channel != "auto") args.insert(args.end(), {"--channel", g.channel});
  if (!g.variant.empty()) args.insert(args.end(), {"--variant", g.variant});
  if (!g.cache_dir.empty()) args.insert(args.end(), {"--cache-dir", g.cache_dir});
  if (!g.python_version.empty()) args.insert(args.end(), {"--python-version", g.python_version});
  if (!g.platform.empty()) args.insert(args.end(), {"--platform", g.platform});
  if (g.offline) args.push_back("--offline");
  if (g.allow_cpu) args.push_back("--allow-cpu");
  return d;
}

namespace {

// A fix is a plan proven to resolve (issue 56): each framework's fix is planned in memory with the
// same interpreter, indexes, GPUs and driver before it is shown. A request that misses a covering
// release only by a companion its index lacks becomes the nearest request that resolves; one that
// does not resolve says why beside the fix. One attempt per request: an unreachable index costs no
// retry waits, and leaves the fix as built, not proven.
void prove_fixes(const Options& o, diagnosis::DoctorReport& r) {
  // A fix for an externally managed interpreter makes a new venv (--venv .venv): nothing to plan for.
  if (o.offline || (r.facts.python && r.facts.python->externally_managed)) return;
  bool changed = false;
  for (auto& s : r.frameworks) {
    if (s.fix.empty() || s.fix_request.empty()) continue;
    auto p = prove_fix(o, s.name, s.fix_request);
    s.proof = p.proof;
    s.proof_detail = std::move(p.detail);
    if (!p.command.empty()) {
      s.fix = std::move(p.command);
      changed = true;
    }
  }
  if (changed) r.fix = diagnosis::joined_fix(r);
}

} // namespace

ProvenFix prove_fix(const Options& o, const std::string& framework, const std::vector<std::string>& request) {
  Options po = o;
  po.framework = framework;
  po.detect_framework = false;
  po.http_retries = 0;
  NearestFix nearest;
  ProvenFix out;
  auto ctx = build_plan(po, PlanRequest{.requirements = request, .nearest_out = &nearest});
  if (ctx) {
    out.proof = diagnosis::FixProof::proven;
    out.detail = ctx->plan.why;
  } else if (!nearest.command.empty()) {
    out.proof = diagnosis::FixProof::nearest;
    out.detail = nearest.why;
    out.command = nearest.command;
  } else {
    out.proof = ctx.error().code == ErrorCode::network ? diagnosis::FixProof::unreachable : diagnosis::FixProof::failed;
    out.detail = ctx.error().said_message();
    if (!ctx.error().hint.empty() && out.proof == diagnosis::FixProof::failed)
      out.detail = util::msg("{}; {}", out.detail, ctx.error().said_hint());
  }
  return out;
}

Expected<diagnosis::DoctorReport> doctor(const Options& o, const DoctorRequest& opt) {
  diagnosis::DoctorInputs in;
  util::Message why;
  in.knowledge = ENVFIX_TRY(load_knowledge(o, &why));
  auto host = ENVFIX_TRY(make_host(o, in.knowledge.get(), HostNeeds{.survey_path = true, .require_python = false}));
  in.facts = std::move(host.facts);
  if (!in.knowledge) in.facts.notes.push_back(util::msg("matrices not loaded: {}", why));
  in.cuda_visible_devices = util::get_env(util::Env::cuda_visible_devices);
  in.base = probe::probe_base_env(in.facts);

  const fs::path cache = run_cache_dir(o);
  auto store = cache.empty() ? nullptr : std::make_shared<wheel::EvidenceStore>(evidence_store_at(cache));
  in.evidence = store;
  in.kernels = [store](const probe::InstalledDist& d) -> Expected<probe::InstalledKernels> {
    auto ik = ENVFIX_TRY(probe::read_installed_kernels(d, store.get(), util::default_threads()));
    if (store && !ik.files.empty()) // what the installed binaries say, for plan and `envfix matrix`
      (void)store->put_build(
          {probe::installed_build_key(d), fmt::format("installed in {}", d.dist_info.parent_path().string()), ik.files});
    return ik;
  };
  if (in.facts.python) {
    const fs::path python = in.facts.python->executable;
    const int timeout_s = opt.repro_timeout_s;
    in.run_steps = [python, timeout_s](const std::vector<std::string>& codes) {
      std::vector<smoke::SmokeStep> steps;
      for (const auto& code : codes) steps.push_back({fmt::format("step {}", static_cast<char>('A' + steps.size())), code});
      smoke::SmokeRunOptions ro;
      ro.timeout = std::chrono::seconds(timeout_s);
      ro.cancel = [] { return util::interrupt_signal() != 0; };
      auto run = smoke::run_steps(python, steps, ro);
      if (!run) return std::vector<diagnosis::StepOutcome>{{false, run.error().message}};
      std::vector<diagnosis::StepOutcome> out;
      for (const auto& st : run->steps) out.push_back({st.ok, smoke::failure_text(st, ro.timeout)});
      return out;
    };
  }
  // SIGINT/SIGTERM: a running repro's session is killed (it runs in its own, so it would outlive
  // envfix and hold GPU memory), then doctor exits 128 + the signal, as verify does. One scope on this
  // thread (the repros of several frameworks run at once); none for verify's --no-repro call, which
  // runs inside verify's own scope.
  std::optional<util::InterruptScope> interrupts;
  if (!opt.no_repro) interrupts.emplace();
  auto report = diagnosis::diagnose(diagnose_options(o, opt), std::move(in));
  if (!util::interrupt_signal()) prove_fixes(o, report);
  if (interrupts && util::interrupt_signal())
    return fail(ErrorCode::interrupted, "doctor stopped: envfix was interrupted by signal {}", util::interrupt_signal());
  return report;
}

} // namespace envfix::api
