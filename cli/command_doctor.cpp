// envfix doctor: parses, calls api::doctor (api/doctor.hpp; diagnosis/diagnose.hpp: the four diagnostic steps, the
// findings, the verdict and the fix command) and renders the report as text or JSON (docs/json.md
// "doctor").
#include <algorithm>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/doctor.hpp"
#include "diagnosis/finding.hpp"
#include "diagnosis/report.hpp"
#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "cli/views.hpp"
#include "i18n/i18n.hpp"
#include "util/strings.hpp"

namespace envfix::cli {

namespace {

using json = nlohmann::json;
using util::join;

std::string python_tag(const probe::PythonInfo& py) {
  return fmt::format("{}{}{}", py.tag_env.implementation, py.tag_env.major, py.tag_env.minor);
}

std::string env_kind(const probe::PythonInfo& py) { return py.is_venv ? "venv" : py.is_conda ? "conda" : "system"; }

// Each file with GPU code of a package: its modules, archs and coverage per GPU of the host.
json per_file(const diagnosis::KernelSummary& k) {
  auto out = json::array();
  for (const auto& f : k.profiles) {
    json cov = json::object();
    for (const auto& g : k.per_gpu) {
      auto cc = specs::ComputeCapability::parse(g.arch);
      if (!cc) continue;
      auto fc = wheel::coverage(f.profile, *cc);
      cov[g.arch] = {{"verdict", wheel::to_string(fc.verdict)}, {"runnable", fc.runnable()}, {"total", fc.total()}};
    }
    out.push_back({{"path", f.path},
                   {"containers", f.profile.containers()},
                   {"sass", f.profile.sass()},
                   {"ptx", f.profile.ptx()},
                   {"coverage", cov}});
  }
  return out;
}

// What a package's binaries hold, and per GPU what runs.
json kernels_json(const diagnosis::KernelSummary& k) {
  json cov = json::object();
  for (const auto& c : k.per_gpu) {
    const auto& pc = c.coverage;
    cov[c.arch] = {{"verdict", pc.has_gpu_code() ? json(wheel::to_string(pc.verdict)) : json(nullptr)},
                   {"runnable", pc.runnable()},
                   {"total", pc.total()},
                   {"via_sass", pc.registered.sass + pc.embedded.sass},
                   {"via_ptx", pc.registered.ptx + pc.embedded.ptx},
                   {"newer_only", pc.registered.newer_only + pc.embedded.newer_only},
                   {"older_only", pc.registered.older_only + pc.embedded.older_only},
                   {"embedded_total", pc.embedded.total()},
                   {"none_files", pc.none_files},
                   {"partial_files", pc.partial_files}};
  }
  return {{"files", k.files},
          {"scanned", k.scanned},
          {"containers", k.containers},
          {"from_evidence", k.from_evidence},
          {"sass", std::vector<std::string>(k.sass.begin(), k.sass.end())},
          {"ptx", std::vector<std::string>(k.ptx.begin(), k.ptx.end())},
          {"zstd", k.zstd},
          {"coverage", cov},
          {"per_file", per_file(k)}};
}

// Step 1's base environment: CUDA runtime, toolkit, pip, Jetson, WSL, container.
json base_json(const diagnosis::DoctorReport& r) {
  const auto& b = r.base;
  return {
      {"cuda_runtime", b.runtime ? json{{"version", b.runtime->version.to_string()}, {"from", b.runtime->from}} : json(nullptr)},
      {"toolkit", b.toolkit ? json{{"nvcc", b.toolkit->nvcc.string()},
                                   {"from", b.toolkit->from},
                                   {"version", b.toolkit->version ? json(b.toolkit->version->to_string()) : json(nullptr)},
                                   {"error", b.toolkit->error.empty() ? json(nullptr) : json(b.toolkit->error)}}
                            : json(nullptr)},
      {"pip",
       {{"target", b.target_pip ? json(b.target_pip->string()) : json(nullptr)},
        {"on_path", r.facts.pip_on_path ? json(r.facts.pip_on_path->string()) : json(nullptr)},
        {"on_path_interpreter", r.facts.pip_interpreter ? json(r.facts.pip_interpreter->string()) : json(nullptr)}}},
      {"jetson", !r.jetson ? json(nullptr)
                           : json{{"model", r.jetson->model},
                                  {"soc", r.jetson->soc},
                                  {"l4t", r.jetson->l4t},
                                  {"jetpack", r.jetson->jetpack.empty() ? json(nullptr) : json(r.jetson->jetpack)},
                                  {"cuda", r.jetson->cuda ? json(r.jetson->cuda->to_string()) : json(nullptr)},
                                  {"kernel", r.jetson->kernel},
                                  {"power_mode", r.jetson->power_mode.empty() ? json(nullptr) : json(r.jetson->power_mode)},
                                  {"indexes", r.jetson->indexes}}},
      {"wsl", b.platform.wsl},
      {"container", b.platform.container.empty()
                        ? json(nullptr)
                        : json{{"kind", b.platform.container}, {"evidence", b.platform.container_evidence}}}};
}

json to_json(const diagnosis::DoctorReport& r) {
  json j;
  j["verdict"] = diagnosis::to_string(r.verdict);
  j["gpus"] = json::array();
  for (const auto& g : r.facts.gpus)
    j["gpus"].push_back({{"index", g.index},
                         {"name", g.name},
                         {"arch", g.cc.sm_name()},
                         {"cc", g.cc.to_string()},
                         {"uuid", g.uuid},
                         {"memory_bytes", g.memory_bytes},
                         {"planned", r.facts.gpus_planned},
                         {"mig_of", g.mig_of.empty() ? json(nullptr) : json(g.mig_of)}});
  if (r.facts.driver)
    j["driver"] = {{"version", r.facts.driver->version},
                   {"cuda", r.facts.driver->cuda ? json(r.facts.driver->cuda->to_string()) : json(nullptr)},
                   {"source", r.facts.driver->source}};
  else
    j["driver"] = nullptr;
  if (r.facts.python) {
    const auto& py = *r.facts.python;
    j["python"] = {{"path", py.executable.string()}, {"version", py.version.to_string()},
                   {"tag", python_tag(py)},          {"env", env_kind(py)},
                   {"prefix", py.prefix.string()},   {"externally_managed", py.externally_managed}};
  } else
    j["python"] = nullptr;
  j["base"] = base_json(r);
  auto repro_json = [](const diagnosis::Repro& rp) {
    return json{{"step_a", rp.step_a},
                {"step_b", rp.step_b},
                {"error", rp.error.empty() ? json(nullptr) : json(rp.error)},
                {"note", rp.note.text}};
  };
  j["framework_from"] = r.framework_from;
  j["frameworks"] = json::array();
  for (const auto& s : r.frameworks) {
    std::vector<std::string> names;
    for (const auto& p : s.packages) names.push_back(p.dist->name);
    j["frameworks"].push_back({{"name", s.name},
                               {"variant", s.variant.empty() ? json(nullptr) : json(s.variant)},
                               {"packages", names},
                               {"repro", repro_json(s.repro)},
                               {"fix", s.fix.empty() ? json(nullptr) : json(s.fix)},
                               {"fix_proof", fix_proof_json(s.proof, s.proof_detail)}});
  }
  j["packages"] = json::array();
  for (const auto& s : r.frameworks)
    for (const auto& p : s.packages) {
      json pj = {{"name", p.dist->name},
                 {"version", p.dist->version.to_string()},
                 {"role", p.role},
                 {"framework", s.name},
                 {"kernel_package", p.kernel_package},
                 {"variant", p.variant.empty() ? json(nullptr) : json(p.variant)},
                 {"variant_from", p.variant_from},
                 {"installer", p.dist->installer},
                 {"source", p.source},
                 {"dist_info", p.dist->dist_info.string()}};
      pj["kernels"] = p.kernels ? kernels_json(*p.kernels) : json(nullptr);
      j["packages"].push_back(std::move(pj));
    }
  j["extensions"] = json::array();
  for (const auto& e : r.extensions)
    j["extensions"].push_back({{"name", e.dist->name},
                               {"version", e.dist->version.to_string()},
                               {"framework", e.framework.empty() ? json(nullptr) : json(e.framework)},
                               {"requirement", e.requirement.empty() ? json(nullptr) : json(e.requirement)},
                               {"requirement_met", e.requirement_met},
                               {"dist_info", e.dist->dist_info.string()},
                               {"kernels", kernels_json(e.kernels)},
                               {"build_from_source", e.recipe.empty() ? json(nullptr) : json(e.recipe.text)}});
  j["findings"] = json::array();
  for (const auto& f : r.findings)
    j["findings"].push_back({{"code", diagnosis::to_string(f.code)},
                             {"severity", diagnosis::to_string(f.severity)},
                             {"message", f.message.text},
                             {"hint", f.hint.text},
                             {"framework", f.framework.empty() ? json(nullptr) : json(f.framework)},
                             {"package", f.package.empty() ? json(nullptr) : json(f.package)}});
  j["repro"] = repro_json(r.frameworks.front().repro); // the first framework's, as before several were reported
  j["fix"] = r.fix.empty() ? json(nullptr) : json(r.fix);
  j["notes"] = util::texts(r.facts.notes);
  return j;
}

std::string gpu_memory(std::uint64_t b) { // ", 80 GiB" beside a GPU's name
  if (b == 0) return "";
  return fmt::format(", {:.0f} GiB", static_cast<double>(b) / (1024.0 * 1024 * 1024));
}

void heading(std::string_view t) { human(styled(t, Style::bold)); }

using i18n::tr;
using i18n::trf;

// "   driver   …": a label of step 1 padded to its column, in cells (a translated label may be wide).
std::string row(std::string_view label, std::string_view text) { return fmt::format("   {} {}", i18n::pad(label, 8), text); }

// Step 1: GPUs, driver, interpreter and pip, CUDA runtime and toolkit, WSL or container.
void render_hardware(const diagnosis::DoctorReport& r) {
  auto head = heading;
  head(tr("1. Hardware and base environment"));
  if (r.facts.gpus.empty()) human(row("GPU", tr("none")));
  for (const auto& gpu : r.facts.gpus)
    human(r.facts.gpus_planned
              ? fmt::format("   GPU {}    {} {}", gpu.index, gpu.cc.sm_name(), styled(tr("[planned]"), Style::dim))
              : fmt::format("   GPU {}    {} ({}{})", gpu.index, gpu.name, gpu.cc.sm_name(), gpu_memory(gpu.memory_bytes)));
  if (r.facts.driver)
    human(row(tr("driver"), fmt::format("{}{} [{}]",
                                        r.facts.driver->version.empty() && r.facts.driver->source == "l4t"
                                            ? std::string(tr("part of Jetson Linux (L4T)"))
                                            : r.facts.driver->version,
                                        r.facts.driver->cuda ? trf(", supports CUDA {}", r.facts.driver->cuda->to_string()) : "",
                                        r.facts.driver->source)));
  else
    human(row(tr("driver"), tr("none")));
  if (r.facts.python) {
    const auto& py = *r.facts.python;
    human(row("python",
              fmt::format("{} {} ({}, {})", py.executable.string(), py.version.to_string(), python_tag(py), env_kind(py))));
    human(row("pip", fmt::format("{}{}",
                                 r.base.target_pip ? r.base.target_pip->string() : std::string(tr("none beside the interpreter")),
                                 r.facts.pip_on_path && (!r.base.target_pip || *r.facts.pip_on_path != *r.base.target_pip)
                                     ? trf(" (`pip` on PATH is {})", r.facts.pip_on_path->string())
                                     : std::string())));
  }
  const auto& b = r.base;
  human(row("CUDA", trf("runtime {} · toolkit {}",
                        b.runtime ? fmt::format("{} ({})", b.runtime->version.to_string(), b.runtime->from)
                                  : std::string(tr("none installed")),
                        !b.toolkit ? std::string(tr("none (no nvcc on PATH, $CUDA_HOME or /usr/local/cuda)"))
                                   : fmt::format("nvcc {} ({}, {})", b.toolkit->version ? b.toolkit->version->to_string() : "?",
                                                 b.toolkit->nvcc.string(), b.toolkit->from))));
  if (const auto& jv = r.jetson) {
    std::vector<std::string> parts;
    if (!jv->model.empty()) parts.push_back(jv->model);
    if (!jv->soc.empty()) parts.push_back(jv->soc);
    if (!jv->l4t.empty()) parts.push_back("L4T " + jv->l4t);
    if (!jv->jetpack.empty()) parts.push_back("JetPack " + jv->jetpack);
    if (jv->cuda) parts.push_back("CUDA " + jv->cuda->to_string());
    if (!jv->power_mode.empty()) parts.push_back(trf("power mode {}", jv->power_mode));
    if (!jv->kernel.empty()) parts.push_back(trf("kernel {}", jv->kernel));
    human(row("Jetson", util::join(parts, " · ")));
  }
  if (b.platform.is_wsl() || !b.platform.container.empty())
    human(row(tr("platform"), fmt::format("{}{}", b.platform.is_wsl() ? "WSL2" : "",
                                          b.platform.container.empty() ? std::string()
                                                                       : (b.platform.is_wsl() ? ", " : "") +
                                                                             trf("container ({})", b.platform.container))));
}

// "passed" / "failed" / "skipped", coloured and in the chosen language.
std::string step_status(const std::string& x) {
  return styled(tr(x), x == "passed" ? Style::green : x == "failed" ? Style::red : Style::dim);
}

// Steps 2 and 3: each framework's installed packages, and its repro.
void render_frameworks(const diagnosis::DoctorReport& r) {
  auto head = heading;
  const bool several = r.frameworks.size() > 1;
  for (const auto& s : r.frameworks) {
    head(trf("2. Framework {}", s.name) + (r.framework_from == "installed" ? styled(tr(" [installed]"), Style::dim)
                                           : r.framework_from == "assumed" ? styled(tr(" [assumed: none installed]"), Style::dim)
                                                                           : std::string()));
    if (s.packages.empty()) human(fmt::format("   {}", tr("not installed")));
    for (const auto& p : s.packages)
      human(fmt::format("   {:<12} {:<16} {} {:<8} {}{}", p.dist->name, p.dist->version.to_string(), tr("variant"),
                        p.variant.empty() ? "?" : p.variant,
                        p.variant_from.empty() ? "" : styled(fmt::format("({}) ", p.variant_from), Style::dim), p.source));
  }
  for (const auto& s : r.frameworks) {
    head(several ? trf("3. Minimal repro ({})", s.name) : std::string(tr("3. Minimal repro")));
    const auto& rp = s.repro;
    if (rp.step_a == "skipped" && rp.step_b == "skipped")
      human(fmt::format("   {}", i18n::tr(rp.note)));
    else {
      const auto a = tr("step A (tensor to GPU):"), b = tr("step B (matmul):");
      const auto w = std::max(i18n::display_width(a), i18n::display_width(b));
      human(fmt::format("   {} {}", i18n::pad(a, w), step_status(rp.step_a)));
      human(fmt::format("   {} {}", i18n::pad(b, w), step_status(rp.step_b)));
      if (!rp.error.empty()) human(fmt::format("   {}: {}", tr("error"), rp.error));
    }
  }
}

// One package's GPU code: its modules and archs, per GPU what runs, then each file.
void render_summary(const std::string& name, const diagnosis::KernelSummary& k) {
  human("   " + trf("{}: {} files with GPU code, {} modules; sass [{}] ptx [{}]", name, k.files, k.containers,
                    join({k.sass.begin(), k.sass.end()}, " "), join({k.ptx.begin(), k.ptx.end()}, " ")));
  for (const auto& c : k.per_gpu) {
    const auto& pc = c.coverage;
    human("     " + trf("{} {}: {}/{} modules runnable ({} sass, {} ptx-jit)", c.arch, tr(wheel::to_string(pc.verdict)),
                        pc.runnable(), pc.total(), pc.registered.sass + pc.embedded.sass, pc.registered.ptx + pc.embedded.ptx));
  }
  for (const auto& f : k.profiles) {
    std::vector<std::string> per;
    for (const auto& c : k.per_gpu) {
      auto fc = wheel::coverage(f.profile, specs::ComputeCapability::parse(c.arch).value_or(specs::ComputeCapability{}));
      per.push_back(fmt::format("{} {} {}/{}", c.arch, tr(wheel::to_string(fc.verdict)), fc.runnable(), fc.total()));
    }
    human(styled("       " +
                     trf("{}: {} modules, sass [{}] ptx [{}]", f.path, f.profile.containers(), join(f.profile.sass(), " "),
                         join(f.profile.ptx(), " ")) +
                     (per.empty() ? "" : "; " + join(per, ", ")),
                 Style::dim));
  }
}

// Step 4: the GPU code read from each installed framework binary and each extension, and per GPU what runs.
void render_kernels(const diagnosis::DoctorReport& r) {
  auto head = heading;
  head(tr("4. Kernels and matrices"));
  bool any = false, read = false;
  for (const auto& s : r.frameworks)
    for (const auto& p : s.packages) {
      read = read || p.kernels.has_value();
      if (!p.kernels || p.kernels->files == 0) continue;
      any = true;
      render_summary(p.dist->name, *p.kernels);
    }
  if (!r.extensions.empty()) human(fmt::format("   {}", tr("GPU extensions outside the framework sets:")));
  for (const auto& e : r.extensions)
    render_summary(fmt::format("{} {}{}", e.dist->name, e.dist->version.to_string(),
                               e.framework.empty() ? std::string() : " (" + e.requirement + ")"),
                   e.kernels);
  if (!read)
    human(fmt::format("   {}", tr("kernels not read (--no-kernels, or no RECORD lists the binaries)")));
  else if (!any)
    human(fmt::format("   {}", tr("no GPU code found in the installed framework binaries")));
}

// The findings (code, message and hint; the message and hint as api/ composed them, in the chosen
// language where the catalog knows the sentence), the verdict and the fix command.
void render_findings(const diagnosis::DoctorReport& r) {
  auto head = heading;
  head(tr("Findings"));
  if (r.findings.empty()) human(fmt::format("   {}", tr("none")));
  for (const auto& f : r.findings) {
    auto style = f.severity == diagnosis::Severity::error     ? Style::red
                 : f.severity == diagnosis::Severity::warning ? Style::yellow
                                                              : Style::blue;
    human(fmt::format("   {} {}: {}", styled(i18n::pad(tr(diagnosis::to_string(f.severity)), 7), style),
                      diagnosis::to_string(f.code), i18n::tr(f.message)));
    if (!f.hint.empty()) human(fmt::format("           {}: {}", tr("hint"), i18n::tr(f.hint)));
  }
  auto vs = r.verdict == diagnosis::Verdict::healthy  ? Style::green
            : r.verdict == diagnosis::Verdict::broken ? Style::red
                                                      : Style::yellow;
  human("");
  human(fmt::format("{} {}", styled(tr("verdict:"), Style::bold), styled(tr(diagnosis::to_string(r.verdict)), vs)));
  if (!r.fix.empty()) human(fmt::format("{} {}", styled(tr("fix:"), Style::bold), r.fix));
  // What the planner said of each fix before it was shown (api/doctor.cpp prove_fixes).
  for (const auto& s : r.frameworks)
    if (!s.fix.empty()) render_fix_proof(s.proof, s.proof_detail);
}

void render_text(const diagnosis::DoctorReport& r, const Globals& g) {
  render_hardware(r);
  render_frameworks(r);
  render_kernels(r);
  if (g.verbose > 0)
    for (const auto& n : r.facts.notes) human(styled("   " + trf("note: {}", i18n::tr(n)), Style::dim));
  render_findings(r);
}

} // namespace

void add_doctor_command(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("doctor", i18n::trs("Diagnose the GPU, driver, interpreter and framework install"));
  add_examples(*cmd,
               {{"envfix doctor", i18n::trs("this host and the interpreter in use, with a repro on the GPU")},
                {"envfix doctor --python .venv/bin/python --framework jax", i18n::trs("another interpreter, one framework")},
                {"envfix --format json doctor", i18n::trs("the findings as JSON (docs/json.md)")}});
  auto opt = std::make_shared<api::DoctorRequest>();
  cmd->add_flag("--no-repro", opt->no_repro, i18n::trs("Skip the minimal repro in the target interpreter (step 3)"));
  cmd->add_option("--repro-timeout", opt->repro_timeout_s, i18n::trs("Seconds for each repro step (default 120)"))
      ->check(CLI::Range(1, 3600));
  cmd->add_flag("--no-kernels", opt->no_kernels, i18n::trs("Do not read the kernels in the installed binaries"));
  cmd->callback([&g, opt] {
    auto r = api::doctor(g, *opt);
    if (!r) {
      (void)fail(r.error());
      // 2: could not diagnose; 128 + N after SIGINT/SIGTERM stopped the repro.
      g.exit_code = r.error().code == ErrorCode::invalid_input ? 1
                    : r.error().code == ErrorCode::interrupted ? exit_code_for(r.error())
                                                               : 2;
      return;
    }
    if (g.format == "json")
      machine_json(to_json(*r));
    else
      render_text(*r, g);
    g.exit_code = r->verdict == diagnosis::Verdict::healthy ? 0 : 1;
  });
}

} // namespace envfix::cli
