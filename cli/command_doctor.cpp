// envfix doctor: four diagnostic steps (1 hardware and driver, 2 framework version, variant,
// companions and their sources, 3 a minimal repro in the target interpreter, 4 the matrices and the
// kernels really present; docs/json.md "doctor"), ending in a verdict and the exact
// `envfix apply` that fixes what was found. Facts come from probe/, knowledge from matrices/,
// kernels from wheel/; this file only compares them and renders the result.
#include <algorithm>
#include <map>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "cli/smoke.hpp"
#include "index/index_client.hpp"
#include "matrices/knowledge.hpp"
#include "probe/base_env.hpp"
#include "probe/host_facts.hpp"
#include "probe/installed.hpp"
#include "probe/installed_kernels.hpp"
#include "probe/python_probe.hpp"
#include "specs/name.hpp"
#include "util/env.hpp"
#include "util/parallel.hpp"
#include "util/python.hpp"
#include "util/subprocess.hpp"
#include "wheel/coverage.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::cli {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct DoctorOptions {
  bool no_repro = false;
  int repro_timeout_s = 120;
  bool no_kernels = false;
};

struct Finding {
  std::string code;
  std::string severity; // error | warning | info
  std::string message;
  std::string hint;
};

struct GpuCoverage {
  std::string arch;          // "sm_90"
  wheel::PackageCoverage coverage; // the one coverage model (wheel/coverage.hpp)
};

struct KernelSummary {
  std::size_t files = 0, scanned = 0, containers = 0, from_evidence = 0;
  std::vector<wheel::ProfiledFile> profiles;
  std::set<std::string> sass, ptx;
  bool zstd = false;
  std::vector<GpuCoverage> per_gpu;
};

struct PackageReport {
  const probe::InstalledDist* dist = nullptr;
  std::string role;         // main | companion
  std::string variant;      // cu128, cpu, … or "" when unknown
  std::string variant_from; // local-label | requires-dist | pypi-default | ""
  std::string source;       // index URL dir from direct_url.json, else "installer:<name>"
  std::optional<KernelSummary> kernels;
};

struct Repro {
  std::string step_a = "skipped", step_b = "skipped";
  std::string error;
  std::string note;
};

struct Report {
  probe::HostFacts facts;
  probe::BaseEnv base;
  std::optional<matrices::Knowledge> knowledge;
  const matrices::Framework* fw = nullptr;
  std::vector<PackageReport> packages;
  Repro repro;
  std::vector<Finding> findings;
  std::string verdict;
  std::string fix;
  std::string zstd_driver; // the minimum driver for CUDA 12.4 (ZSTD-compressed kernels), from the matrices
};

void add(Report& r, std::string code, std::string severity, std::string message, std::string hint = {}) {
  for (const auto& f : r.findings)
    if (f.code == code && f.message == message) return;
  r.findings.push_back({std::move(code), std::move(severity), std::move(message), std::move(hint)});
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? std::string(sep) : std::string()) + v[i];
  return out;
}

// ---------------------------------------------------------------- step 1: hardware and environment

Expected<std::vector<probe::GpuInfo>> planned_gpus(const std::vector<std::string>& specs_in,
                                                   const matrices::Knowledge* k) {
  std::vector<probe::GpuInfo> out;
  for (const auto& s : specs_in) {
    probe::GpuInfo g;
    g.index = static_cast<int>(out.size());
    if (auto cc = specs::ComputeCapability::parse(s)) {
      g.cc = *cc;
      g.name = "planned " + cc->sm_name();
    } else if (auto p = k ? k->gpu(s) : std::nullopt) {
      g.cc = p->cc;
      g.name = p->name;
    } else {
      return make_error(ErrorCode::invalid_input, fmt::format("--gpu '{}': not an arch (sm_120, 12.0) or a known GPU name", s),
                        "run `envfix matrix` to list known GPUs");
    }
    out.push_back(std::move(g));
  }
  return out;
}

// The highest CUDA whose GA driver floor this driver meets (when libcuda was not there to ask).
std::optional<specs::CudaVersion> cuda_for_driver(const matrices::Knowledge* k, std::string_view driver) {
  if (!k) return std::nullopt;
  std::optional<specs::CudaVersion> best;
  for (const auto& t : k->toolkits()) {
    if (t.min_driver_linux.empty()) continue;
    if (matrices::compare_driver_versions(driver, t.min_driver_linux) >= 0 && (!best || t.version > *best))
      best = t.version;
  }
  return best;
}

fs::path env_prefix_of(const fs::path& interpreter) {
  // <prefix>/bin/python → <prefix>; no symlink resolution (a venv's python links to its base).
  return fs::absolute(interpreter).lexically_normal().parent_path().parent_path();
}

void check_environment(Report& r) {
  const auto& f = r.facts;
  if (!f.python) return;
  const auto& py = *f.python;
  if (py.externally_managed) {
    auto msg = py.externally_managed_message.empty() ? std::string("the distribution manages its packages")
                                                      : std::string(py.externally_managed_message.substr(
                                                            0, py.externally_managed_message.find('\n')));
    add(r, "externally-managed", "warning",
        fmt::format("{} is externally managed (PEP 668): {}", py.executable.string(), msg),
        "install into a virtual environment: envfix apply --venv .venv");
  }
  if (f.pip_interpreter) {
    auto pip_prefix = env_prefix_of(*f.pip_interpreter);
    auto target = fs::absolute(py.prefix).lexically_normal();
    if (pip_prefix != target) {
      add(r, "pip-other-interpreter", "warning",
          fmt::format("`pip` on PATH ({}) installs into {}, not into the target {}",
                      f.pip_on_path ? f.pip_on_path->string() : std::string("pip"), pip_prefix.string(),
                      target.string()),
          fmt::format("use `{} -m pip`, or activate the environment first", py.executable.string()));
    }
  }
}

// The base environment (docs/environment.md, The base environment): the local toolkit matters only
// for building extensions, WSL and containers for where the driver comes from.
void check_base(Report& r) {
  const auto& b = r.base;
  if (b.toolkit && b.toolkit->version && b.runtime && b.toolkit->version->major != b.runtime->version.major)
    add(r, "toolkit-runtime-mismatch", "warning",
        fmt::format("the local CUDA toolkit (nvcc {} from {}) is CUDA {}, the framework's runtime ({}) is CUDA {}: "
                    "extensions built with this nvcc (torch.utils.cpp_extension, source builds) will not load",
                    b.toolkit->version->to_string(), b.toolkit->from, b.toolkit->version->major, b.runtime->from,
                    b.runtime->version.to_string()),
        fmt::format("installed wheels carry their own runtime and need no toolkit; to build extensions put a CUDA {}.x "
                    "nvcc first on PATH or set CUDA_HOME",
                    b.runtime->version.major));
  if (b.platform.is_wsl())
    add(r, "wsl", "info",
        fmt::format("WSL2 ({}): the GPU driver is the Windows one, reached through /dev/dxg", join(b.platform.wsl, ", ")),
        "never install a Linux NVIDIA driver inside WSL; run python, pip and envfix on the same side (all in WSL), "
        "not a Windows interpreter over a WSL path or the reverse");
  if (!b.platform.container.empty())
    add(r, "container", "info",
        fmt::format("running in a container ({}: {}): the driver comes from the host", b.platform.container,
                    join(b.platform.container_evidence, ", ")),
        "GPU access needs the NVIDIA container toolkit (docker --gpus all, CDI); fix the image's Python "
        "environment here and the driver on the host");
}

// ---------------------------------------------------------------- step 2: framework packages

// cu128 from nvidia-cuda-runtime-cu12==12.8.90, cuda-toolkit==13.0.2, nvidia-cuda-runtime==13.0.96.
std::optional<std::string> variant_from_requires(const probe::InstalledDist& d, const specs::MarkerEnvironment& env) {
  for (const auto& req : d.requires_dist) {
    auto n = req.normalized_name();
    if (n != "cuda-toolkit" && !n.starts_with("nvidia-cuda-runtime")) continue;
    if (req.marker && !req.applies(env)) continue;
    for (const auto& c : req.specifier.clauses()) {
      if (c.op() != specs::SpecOperator::equal || !c.version()) continue;
      const auto& rel = c.version()->release();
      if (rel.size() < 2) continue;
      return fmt::format("cu{}{}", rel[0], rel[1]);
    }
  }
  return std::nullopt;
}

std::string source_of(const probe::InstalledDist& d) {
  if (d.conda) return fmt::format("conda:{} {} {}", d.conda->name, d.conda->version, d.conda->build);
  auto url = probe::direct_url_of(d);
  if (!url.empty()) {
    auto slash = url.rfind('/');
    return slash == std::string::npos ? url : url.substr(0, slash);
  }
  return d.installer.empty() ? std::string("unknown") : "installer:" + d.installer;
}

std::optional<specs::CudaVersion> cuda_of_variant(const Report& r, const std::string& variant) {
  if (r.fw)
    if (const auto* v = r.fw->variant(variant)) return v->cuda;
  if (variant.starts_with("cu"))
    if (auto c = specs::CudaVersion::from_variant(variant)) return *c;
  return std::nullopt;
}

bool gpu_host(const Report& r) { return !r.facts.gpus.empty(); }

void check_framework(Report& r, const std::string& framework) {
  std::string main_pkg = r.fw ? r.fw->main_package : framework;
  std::vector<std::string> companions;
  if (r.fw) {
    companions = r.fw->companions;
    companions.insert(companions.end(), r.fw->optional_companions.begin(), r.fw->optional_companions.end());
  }
  auto main_norm = specs::normalize_name(main_pkg);
  std::set<std::string> companion_norm;
  for (auto& c : companions) companion_norm.insert(specs::normalize_name(c));
  const specs::MarkerEnvironment empty_env;
  const auto& env = r.facts.python ? r.facts.python->markers : empty_env;

  for (const auto& d : r.facts.installed) {
    auto n = d.normalized_name();
    if (n != main_norm && !companion_norm.count(n)) continue;
    PackageReport p;
    p.dist = &d;
    p.role = n == main_norm ? "main" : "companion";
    if (!d.local().empty()) {
      p.variant = d.local();
      p.variant_from = "local-label";
    } else if (auto cv = d.conda ? probe::conda_build_variant(d.conda->build) : std::nullopt) {
      // conda's build string says which build it is; pypi-default would be a guess about another package.
      p.variant = *cv;
      p.variant_from = "conda-meta";
    } else if (auto v = variant_from_requires(d, env)) {
      p.variant = *v;
      p.variant_from = "requires-dist";
    }
    p.source = source_of(d);
    r.packages.push_back(std::move(p));
  }
  const PackageReport* main = nullptr;
  for (const auto& p : r.packages)
    if (p.role == "main" && (!main || main->dist->version < p.dist->version)) main = &p;
  // PyPI's unlabelled build: the release row says which variant pypi.org serves.
  if (main && r.fw) {
    if (const auto* rel = r.fw->release(main->dist->version); rel && !rel->pypi_default.empty()) {
      for (auto& p : r.packages)
        if (p.variant.empty()) {
          p.variant = rel->pypi_default;
          p.variant_from = "pypi-default";
        }
    }
  }
  // conda's packages: the fix below would be refused by apply (docs/json.md, plan); say so up front.
  for (const auto& p : r.packages)
    if (p.dist->conda)
      add(r, "conda-owned", "info",
          fmt::format("{} {} belongs to conda ({} {} {}); envfix apply will not replace it", p.dist->name, p.dist->version.to_string(),
                      p.dist->conda->name, p.dist->conda->version, p.dist->conda->build),
          "change it with conda (`conda install` the build you need), or add --allow-conda-overwrite to the fix");
  if (!main) {
    add(r, "framework-not-installed", "warning",
        fmt::format("{} is not installed in {}", main_pkg,
                    r.facts.python ? r.facts.python->executable.string() : std::string("the target")),
        fmt::format("envfix apply {}", main_pkg));
    return;
  }
  const auto& mv = main->dist->version;
  // Duplicates and missing RECORDs (all dists: they break uninstall and upgrades alike).
  for (const auto& group : probe::find_duplicates(r.facts.installed)) {
    std::vector<std::string> where;
    for (auto* d : group) where.push_back(d->dist_info.string());
    bool fw_pkg = group[0]->normalized_name() == main_norm || companion_norm.count(group[0]->normalized_name());
    add(r, "duplicate-dist", fw_pkg ? "error" : "warning",
        fmt::format("{} is installed {} times: {}", group[0]->name, group.size(), join(where, ", ")),
        "remove the stale copy: envfix apply reinstalls one clean set");
  }
  for (const auto& d : r.facts.installed)
    if (!d.has_record)
      add(r, "missing-record", "warning",
          fmt::format("{} {} has no RECORD ({}): it cannot be uninstalled cleanly", d.name, d.version.to_string(),
                      d.dist_info.string()),
          "reinstall it so that a RECORD is written");
  // CPU build on a GPU host.
  if (gpu_host(r)) {
    for (const auto& p : r.packages)
      if (p.variant == "cpu")
        add(r, "cpu-build-on-gpu-host", "error",
            fmt::format("{} {} is a CPU-only build, but this host has {} GPU(s) ({})", p.dist->name,
                        p.dist->version.to_string(), r.facts.gpus.size(), r.facts.gpus[0].cc.sm_name()),
            "install the CUDA build for this GPU (see the fix command below)");
  }
  // Mixed variants across the set.
  std::map<std::string, std::vector<std::string>> by_variant;
  for (const auto& p : r.packages)
    if (!p.variant.empty()) by_variant[p.variant].push_back(fmt::format("{} {}", p.dist->name, p.dist->version.to_string()));
  if (by_variant.size() > 1) {
    std::vector<std::string> parts;
    for (auto& [v, names] : by_variant) parts.push_back(fmt::format("{} ({})", v, join(names, ", ")));
    add(r, "mixed-variants", "error", fmt::format("the {} packages mix build variants: {}", framework, join(parts, "; ")),
        "every package of the set must come from the same variant index");
  }
  // Mixed sources: different indexes are a problem; only different installers is a hint.
  std::set<std::string> urls, installers;
  for (const auto& p : r.packages) {
    if (!p.source.starts_with("installer:")) urls.insert(p.source);
    if (!p.dist->installer.empty()) installers.insert(p.dist->installer);
  }
  if (urls.size() > 1)
    add(r, "mixed-sources", "warning", fmt::format("the {} packages came from different indexes: {}", framework,
                                                   join(std::vector<std::string>(urls.begin(), urls.end()), ", ")));
  else if (installers.size() > 1)
    add(r, "mixed-sources", "info",
        fmt::format("the {} packages were installed by different tools: {}", framework,
                    join(std::vector<std::string>(installers.begin(), installers.end()), ", ")));
  // Companion versions: the matrices' coupling, and the companion's own Requires-Dist on the main package.
  for (const auto& p : r.packages) {
    if (p.role != "companion") continue;
    const auto& d = *p.dist;
    if (r.knowledge) {
      if (auto want = r.knowledge->companion_version(framework, mv, d.normalized_name())) {
        auto w = specs::Version::parse(*want);
        if (w && w->public_version() != d.version.public_version())
          add(r, "companion-mismatch", "error",
              fmt::format("{} {} does not match {} {} (it needs {} {})", d.name, d.version.to_string(), main_pkg,
                          mv.to_string(), d.name, *want),
              "install the coupled versions together (see the fix command below)");
      }
    }
    for (const auto& req : d.requires_dist) {
      if (req.normalized_name() != main_norm || req.specifier.empty()) continue;
      if (req.marker && !req.applies(env)) continue;
      if (!req.specifier.contains(mv.public_version(), true))
        add(r, "companion-mismatch", "error",
            fmt::format("{} {} requires {}{}, but {} {} is installed", d.name, d.version.to_string(), main_pkg,
                        req.specifier.to_string(), main_pkg, mv.to_string()),
            "install the coupled versions together (see the fix command below)");
    }
  }
  // Driver vs the build's CUDA.
  const auto& drv = r.facts.driver;
  if (drv && !main->variant.empty()) {
    if (auto cuda = cuda_of_variant(r, main->variant)) {
      bool ok = r.knowledge ? r.knowledge->driver_supports(drv->version, *cuda)
                            : (!drv->cuda || *drv->cuda >= *cuda);
      if (!ok) {
        auto need = r.knowledge ? r.knowledge->min_driver(*cuda) : std::nullopt;
        add(r, "driver-too-old", "error",
            fmt::format("{} {} is built for CUDA {}, which driver {}{} cannot run", main_pkg, mv.to_string(),
                        cuda->to_string(), drv->version,
                        drv->cuda ? fmt::format(" (CUDA {})", drv->cuda->to_string()) : std::string()),
            need ? fmt::format("upgrade the driver to >= {}, or install a build for an older CUDA", *need)
                 : std::string("upgrade the driver, or install a build for an older CUDA"));
      }
    }
  }
}

// ---------------------------------------------------------------- step 3: repro

void run_repro(Report& r, const DoctorOptions& opt) {
  auto& rp = r.repro;
  if (opt.no_repro) {
    rp.note = "skipped (--no-repro)";
    return;
  }
  if (!r.facts.python) return;
  bool have_main = std::any_of(r.packages.begin(), r.packages.end(), [](auto& p) { return p.role == "main"; });
  if (!have_main) {
    rp.note = "skipped: the framework is not installed";
    return;
  }
  if (!r.fw || r.fw->smoke.step_a.empty() || r.fw->smoke.step_b.empty()) {
    rp.note = fmt::format("skipped: the matrices define no smoke test for {}", r.fw ? r.fw->name : "this framework");
    return;
  }
  if (r.facts.gpus.empty()) {
    rp.note = "skipped: no GPU";
    return;
  }
  util::SubprocessOptions so;
  so.timeout = std::chrono::seconds(opt.repro_timeout_s);
  so.set_env["CUDA_LAUNCH_BLOCKING"] = "1";
  so.unset_env = {"PYTHONPATH", "PYTHONHOME"};
  auto run = [&](const std::string& code, std::string& status) -> bool {
    auto res = util::run_python(r.facts.python->executable, {"-c", code}, so);
    if (!res) {
      status = "failed";
      rp.error = res.error().message;
      return false;
    }
    if (res->ok()) {
      status = "passed";
      return true;
    }
    status = "failed";
    rp.error = res->timed_out ? fmt::format("timed out after {} s", opt.repro_timeout_s) : exception_line(res->out, res->err);
    if (rp.error.empty()) rp.error = fmt::format("exit code {}", res->exit_code);
    return false;
  };
  // "No kernel image" is the missing-arch class whichever step raises it (a step A that launched a
  // kernel would fail so on a build without the GPU's arch).
  auto no_image = [&] { return cuda_error_class(rp.error) == "missing-arch"; };
  auto missing_arch = [&](std::string_view step) {
    std::vector<std::string> archs;
    for (auto& g : r.facts.gpus) archs.push_back(g.cc.sm_name());
    add(r, "arch-not-covered", "error",
        fmt::format("the installed build has no kernel image for {} ({}: \"no kernel image is available\")",
                    join(archs, ", "), step),
        "install a build whose kernels include this architecture (see the fix command below)");
  };
  if (!run(r.fw->smoke.step_a, rp.step_a)) {
    const bool arch = no_image();
    add(r, "repro-failed", "error", fmt::format("step A (move a tensor to the GPU) failed: {}", rp.error),
        arch ? "the installed build has no kernels for this GPU's architecture"
             : "the framework cannot reach the GPU: check the driver, CUDA_VISIBLE_DEVICES and a CPU-only build");
    if (arch) missing_arch("step A");
    return;
  }
  if (!run(r.fw->smoke.step_b, rp.step_b)) {
    const bool arch = no_image();
    add(r, "repro-failed", "error", fmt::format("step B (run a matmul on the GPU) failed: {}", rp.error),
        arch ? "the installed build has no kernels for this GPU's architecture"
             : "a kernel failed on the GPU; rerun with -v for the details");
    if (arch) missing_arch("step B");
  }
}

// ---------------------------------------------------------------- step 4: matrices and kernels

std::string platform_of(const Report& r) {
  std::string arch = r.facts.python ? r.facts.python->tag_env.arch : "x86_64";
  return "linux_" + arch;
}

void check_matrices(Report& r) {
  if (!r.knowledge || !r.fw) return;
  for (const auto& p : r.packages) {
    if (p.role != "main" || p.variant.empty()) continue;
    auto builds = r.knowledge->variants_for(r.fw->name, p.dist->version, platform_of(r));
    const matrices::VariantBuild* vb = nullptr;
    for (const auto& b : builds)
      if (b.variant == p.variant) vb = &b;
    if (!vb) continue;
    for (const auto& g : r.facts.gpus) {
      switch (vb->runs_on(g.cc)) {
        case matrices::RunKind::none:
          add(r, "arch-not-covered", "error",
              fmt::format("{} {} ({}) ships no kernels for {} ({}) according to the matrices [{}]", p.dist->name,
                          p.dist->version.to_string(), p.variant, g.cc.sm_name(), g.name, vb->source),
              "install a build that covers this GPU (see the fix command below)");
          break;
        case matrices::RunKind::jit:
          add(r, "ptx-jit-only", "warning",
              fmt::format("{} {} ({}) runs on {} only by JIT-compiling PTX (slow first start, needs a recent driver)",
                          p.dist->name, p.dist->version.to_string(), p.variant, g.cc.sm_name()),
              "a build with SASS for this GPU starts faster");
          break;
        default: break;
      }
    }
  }
}

// The guide's last fix: a nightly or test build installed because stable did not cover a new GPU
// yet. Once a stable release covers every GPU (matrices/knowledge.hpp, stable_covering), say so.
void check_back_to_stable(Report& r, const wheel::EvidenceStore* store) {
  if (!r.knowledge || !r.fw || r.facts.gpus.empty()) return;
  for (const auto& p : r.packages) {
    if (p.role != "main") continue;
    const auto& v = p.dist->version;
    std::string channel = v.is_devrelease() ? "nightly"
                          : p.source.find("/test/") != std::string::npos || v.is_prerelease() ? "test"
                                                                                              : "";
    if (channel.empty()) return;
    std::vector<specs::ComputeCapability> ccs;
    for (const auto& g : r.facts.gpus) ccs.push_back(g.cc);
    // What the binaries said beats the table: a stable build read before (evidence store) that is
    // not fully covered on some GPU is never suggested.
    auto contradicted = [&](const specs::Version& sv, std::string_view variant) {
      if (!store) return false;
      for (const auto& b : store->builds()) {
        if (b.key.project != specs::normalize_name(r.fw->main_package) || b.key.variant != variant) continue;
        auto bv = specs::Version::parse(b.key.version);
        if (!bv || bv->public_version() != sv.public_version()) continue;
        for (const auto& cc : ccs)
          if (wheel::package_coverage(b.files, cc).verdict != wheel::Verdict::full) return true;
      }
      return false;
    };
    auto cover = r.knowledge->stable_covering(r.fw->name, ccs, r.facts.driver ? r.facts.driver->version : "",
                                              platform_of(r), contradicted);
    if (!cover) return;
    std::vector<std::string> archs;
    for (const auto& cc : ccs)
      if (std::find(archs.begin(), archs.end(), cc.sm_name()) == archs.end()) archs.push_back(cc.sm_name());
    add(r, "stable-covers-gpu", "info",
        fmt::format("{} {} is a {} build; the stable release {} ({}) now has native kernels for {}{}", p.dist->name,
                    v.to_string(), channel, cover->version.to_string(), cover->variant, join(archs, ", "),
                    cover->verified ? "" : " (claimed by the matrices, checked after download)"),
        fmt::format("envfix apply --framework {} --channel stable", r.fw->name));
    return;
  }
}

// "torch/lib/libx.so: 2/3" → "libx.so: 2/3" (the count after ": " keeps its slash).
std::string base_name(const std::string& path) {
  auto slash = path.rfind('/', path.find(": "));
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::vector<std::string> base_names(const std::vector<std::string>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(base_name(s));
  return out;
}

void check_kernels(Report& r, const DoctorOptions& opt, const wheel::EvidenceStore* store) {
  if (opt.no_kernels) return;
  for (auto& p : r.packages) {
    if (!p.dist->has_record) continue;
    auto ik = probe::read_installed_kernels(*p.dist, store, util::default_threads());
    if (!ik) {
      r.facts.notes.push_back(ik.error().message);
      continue;
    }
    for (auto& n : ik->notes) r.facts.notes.push_back(n);
    KernelSummary ks;
    ks.scanned = ik->scanned;
    ks.from_evidence = ik->from_evidence;
    ks.files = ik->files.size();
    for (const auto& f : ik->files) {
      for (auto& s : f.profile.sass()) ks.sass.insert(s);
      for (auto& s : f.profile.ptx()) ks.ptx.insert(s);
      ks.containers += f.profile.containers();
      ks.zstd = ks.zstd || f.profile.zstd;
    }
    ks.profiles = std::move(ik->files);
    if (store && !ks.profiles.empty()) // what the installed binaries say, for plan and `envfix matrix`
      (void)store->put_build({probe::installed_build_key(*p.dist),
                              fmt::format("installed in {}", p.dist->dist_info.parent_path().string()), ks.profiles});
    for (const auto& g : r.facts.gpus) {
      GpuCoverage gc{g.cc.sm_name(), wheel::package_coverage(ks.profiles, g.cc)};
      const auto& c = gc.coverage;
      if (c.has_gpu_code()) {
        auto label = fmt::format("{} {}", p.dist->name, p.dist->version.to_string());
        if (c.verdict == wheel::Verdict::none)
          add(r, "arch-not-covered", "error",
              fmt::format("{}: none of its {} GPU modules has code for {} (binaries read: {})", label, c.total(),
                          gc.arch, join(base_names(c.none_files), ", ")),
              "install a build that covers this GPU (see the fix command below)");
        else if (c.verdict == wheel::Verdict::partial)
          add(r, "arch-partly-covered", "warning",
              fmt::format("{}: {} of {} GPU modules lack code for {} — a small test may pass and the full app fail "
                          "({})",
                          label, c.total() - c.runnable(), c.total(), gc.arch,
                          join(base_names(c.none_files.empty() ? c.partial_files : c.none_files), ", ")),
              "install a build with full coverage for this GPU (see the fix command below)");
        else if (c.jit_only)
          add(r, "ptx-jit-only", "warning",
              fmt::format("{}: runs on {} only by JIT-compiling PTX", label, gc.arch),
              "a build with SASS for this GPU starts faster");
      }
      ks.per_gpu.push_back(std::move(gc));
    }
    if (ks.zstd && r.facts.driver && r.facts.driver->cuda && *r.facts.driver->cuda < specs::CudaVersion{12, 4})
      add(r, "zstd-needs-newer-driver", "error",
          fmt::format("{} has ZSTD-compressed kernels, which need a driver for CUDA >= 12.4 (this one: CUDA {})",
                      p.dist->name, r.facts.driver->cuda->to_string()),
          fmt::format("upgrade the driver (>= {})", r.zstd_driver.empty() ? "one for CUDA 12.4" : r.zstd_driver));
    p.kernels = std::move(ks);
  }
}

// ---------------------------------------------------------------- verdict, fix, rendering

void conclude(Report& r, const Globals& g, const std::string& framework) {
  // Advice about the user's shell, not the environment: shown as a warning, but a healthy
  // environment stays healthy (a `pip` on PATH that belongs elsewhere breaks nothing installed).
  static const std::set<std::string> advisory = {"pip-other-interpreter"};
  bool error = false, warning = false;
  for (const auto& f : r.findings) {
    if (advisory.count(f.code)) continue;
    error = error || f.severity == "error";
    warning = warning || f.severity == "warning";
  }
  r.verdict = error ? "broken" : warning ? "degraded" : "healthy";
  if (r.verdict == "healthy") return;
  // Only problems that a reinstall fixes get a command; hardware and driver problems do not.
  static const std::set<std::string> fixable = {"arch-not-covered", "arch-partly-covered", "ptx-jit-only",
                                                "cpu-build-on-gpu-host", "companion-mismatch", "mixed-variants",
                                                "mixed-sources", "duplicate-dist", "missing-record",
                                                "repro-failed", "framework-not-installed", "externally-managed"};
  bool want = false;
  for (const auto& f : r.findings) want = want || (f.severity != "info" && fixable.count(f.code));
  if (!want) return;
  std::vector<std::string> args = {"envfix", "apply"};
  std::vector<std::string> pkgs;
  for (const auto& p : r.packages) pkgs.push_back(specs::normalize_name(p.dist->name));
  std::sort(pkgs.begin(), pkgs.end());
  pkgs.erase(std::unique(pkgs.begin(), pkgs.end()), pkgs.end());
  if (pkgs.empty()) pkgs.push_back(r.fw ? r.fw->main_package : framework);
  args.insert(args.end(), pkgs.begin(), pkgs.end());
  if (framework != "torch") args.insert(args.end(), {"--framework", framework});
  bool em = r.facts.python && r.facts.python->externally_managed;
  if (em) args.insert(args.end(), {"--venv", ".venv"});
  else if (!g.python.empty()) args.insert(args.end(), {"--python", g.python});
  for (const auto& gpu : g.gpus) args.insert(args.end(), {"--gpu", gpu});
  if (!g.driver.empty()) args.insert(args.end(), {"--driver", g.driver});
  if (!g.matrices_dir.empty()) args.insert(args.end(), {"--matrices", g.matrices_dir});
  // Every option that shaped the diagnosis or names where builds come from, so that the command
  // runs as printed against the same indexes and knowledge.
  if (!g.mirror.empty()) args.insert(args.end(), {"--mirror", g.mirror});
  if (!g.index_url.empty()) args.insert(args.end(), {"--index-url", g.index_url});
  for (const auto& d : g.find_links) args.insert(args.end(), {"--find-links", d});
  if (g.channel != "auto") args.insert(args.end(), {"--channel", g.channel});
  if (!g.variant.empty()) args.insert(args.end(), {"--variant", g.variant});
  if (!g.cache_dir.empty()) args.insert(args.end(), {"--cache-dir", g.cache_dir});
  if (!g.python_version.empty()) args.insert(args.end(), {"--python-version", g.python_version});
  if (!g.platform.empty()) args.insert(args.end(), {"--platform", g.platform});
  if (g.offline) args.push_back("--offline");
  if (g.allow_cpu) args.push_back("--allow-cpu");
  for (auto& a : args)
    if (a.find_first_of(" \t'\"$`\\") != std::string::npos) a = "'" + a + "'";
  r.fix = join(args, " ");
}

std::string python_tag(const probe::PythonInfo& py) {
  return fmt::format("{}{}{}", py.tag_env.implementation, py.tag_env.major, py.tag_env.minor);
}

std::string env_kind(const probe::PythonInfo& py) {
  return py.is_venv ? "venv" : py.is_conda ? "conda" : "system";
}

json to_json(const Report& r) {
  json j;
  j["verdict"] = r.verdict;
  j["gpus"] = json::array();
  for (const auto& g : r.facts.gpus)
    j["gpus"].push_back({{"index", g.index}, {"name", g.name}, {"arch", g.cc.sm_name()}, {"cc", g.cc.to_string()},
                         {"uuid", g.uuid}, {"memory_bytes", g.memory_bytes}, {"planned", r.facts.gpus_planned},
                         {"mig_of", g.mig_of.empty() ? json(nullptr) : json(g.mig_of)}});
  if (r.facts.driver)
    j["driver"] = {{"version", r.facts.driver->version},
                   {"cuda", r.facts.driver->cuda ? json(r.facts.driver->cuda->to_string()) : json(nullptr)},
                   {"source", r.facts.driver->source}};
  else j["driver"] = nullptr;
  if (r.facts.python) {
    const auto& py = *r.facts.python;
    j["python"] = {{"path", py.executable.string()}, {"version", py.version.to_string()}, {"tag", python_tag(py)},
                   {"env", env_kind(py)}, {"prefix", py.prefix.string()},
                   {"externally_managed", py.externally_managed}};
  } else j["python"] = nullptr;
  const auto& b = r.base;
  j["base"] = {
      {"cuda_runtime", b.runtime ? json{{"version", b.runtime->version.to_string()}, {"from", b.runtime->from}} : json(nullptr)},
      {"toolkit", b.toolkit ? json{{"nvcc", b.toolkit->nvcc.string()}, {"from", b.toolkit->from},
                                   {"version", b.toolkit->version ? json(b.toolkit->version->to_string()) : json(nullptr)},
                                   {"error", b.toolkit->error.empty() ? json(nullptr) : json(b.toolkit->error)}}
                            : json(nullptr)},
      {"pip", {{"target", b.target_pip ? json(b.target_pip->string()) : json(nullptr)},
               {"on_path", r.facts.pip_on_path ? json(r.facts.pip_on_path->string()) : json(nullptr)},
               {"on_path_interpreter", r.facts.pip_interpreter ? json(r.facts.pip_interpreter->string()) : json(nullptr)}}},
      {"wsl", b.platform.wsl},
      {"container", b.platform.container.empty() ? json(nullptr)
                                                 : json{{"kind", b.platform.container}, {"evidence", b.platform.container_evidence}}}};
  j["packages"] = json::array();
  for (const auto& p : r.packages) {
    json pj = {{"name", p.dist->name}, {"version", p.dist->version.to_string()}, {"role", p.role},
               {"variant", p.variant.empty() ? json(nullptr) : json(p.variant)},
               {"variant_from", p.variant_from}, {"installer", p.dist->installer}, {"source", p.source},
               {"dist_info", p.dist->dist_info.string()}};
    if (p.kernels) {
      json cov = json::object();
      for (const auto& c : p.kernels->per_gpu) {
        const auto& pc = c.coverage;
        cov[c.arch] = {{"verdict", pc.has_gpu_code() ? json(wheel::to_string(pc.verdict)) : json(nullptr)},
                       {"runnable", pc.runnable()}, {"total", pc.total()},
                       {"via_sass", pc.registered.sass + pc.embedded.sass}, {"via_ptx", pc.registered.ptx + pc.embedded.ptx},
                       {"newer_only", pc.registered.newer_only + pc.embedded.newer_only},
                       {"older_only", pc.registered.older_only + pc.embedded.older_only},
                       {"embedded_total", pc.embedded.total()},
                       {"none_files", pc.none_files}, {"partial_files", pc.partial_files}};
      }
      pj["kernels"] = {{"files", p.kernels->files}, {"scanned", p.kernels->scanned},
                       {"containers", p.kernels->containers}, {"from_evidence", p.kernels->from_evidence},
                       {"sass", std::vector<std::string>(p.kernels->sass.begin(), p.kernels->sass.end())},
                       {"ptx", std::vector<std::string>(p.kernels->ptx.begin(), p.kernels->ptx.end())},
                       {"zstd", p.kernels->zstd}, {"coverage", cov}};
    } else pj["kernels"] = nullptr;
    j["packages"].push_back(std::move(pj));
  }
  j["findings"] = json::array();
  for (const auto& f : r.findings)
    j["findings"].push_back({{"code", f.code}, {"severity", f.severity}, {"message", f.message}, {"hint", f.hint}});
  j["repro"] = {{"step_a", r.repro.step_a}, {"step_b", r.repro.step_b},
                {"error", r.repro.error.empty() ? json(nullptr) : json(r.repro.error)}, {"note", r.repro.note}};
  j["fix"] = r.fix.empty() ? json(nullptr) : json(r.fix);
  j["notes"] = r.facts.notes;
  return j;
}

std::string human_bytes(std::uint64_t b) {
  if (b == 0) return "";
  return fmt::format(", {:.0f} GiB", static_cast<double>(b) / (1024.0 * 1024 * 1024));
}

void render_text(const Report& r, const Globals& g) {
  auto head = [](std::string_view t) { human(styled(t, Style::bold)); };
  head("1. Hardware and base environment");
  if (r.facts.gpus.empty()) human("   GPU      none");
  for (const auto& gpu : r.facts.gpus)
    human(r.facts.gpus_planned
              ? fmt::format("   GPU {}    {} {}", gpu.index, gpu.cc.sm_name(), styled("[planned]", Style::dim))
              : fmt::format("   GPU {}    {} ({}{})", gpu.index, gpu.name, gpu.cc.sm_name(), human_bytes(gpu.memory_bytes)));
  if (r.facts.driver)
    human(fmt::format("   driver   {}{} [{}]", r.facts.driver->version,
                      r.facts.driver->cuda ? fmt::format(", supports CUDA {}", r.facts.driver->cuda->to_string()) : "",
                      r.facts.driver->source));
  else human("   driver   none");
  if (r.facts.python) {
    const auto& py = *r.facts.python;
    human(fmt::format("   python   {} {} ({}, {})", py.executable.string(), py.version.to_string(), python_tag(py),
                      env_kind(py)));
    human(fmt::format("   pip      {}{}", r.base.target_pip ? r.base.target_pip->string() : std::string("none beside the interpreter"),
                      r.facts.pip_on_path && (!r.base.target_pip || *r.facts.pip_on_path != *r.base.target_pip)
                          ? fmt::format(" (`pip` on PATH is {})", r.facts.pip_on_path->string())
                          : std::string()));
  }
  const auto& b = r.base;
  human(fmt::format("   CUDA     runtime {} · toolkit {}",
                    b.runtime ? fmt::format("{} ({})", b.runtime->version.to_string(), b.runtime->from) : std::string("none installed"),
                    !b.toolkit ? std::string("none (no nvcc on PATH, $CUDA_HOME or /usr/local/cuda)")
                               : fmt::format("nvcc {} ({}, {})", b.toolkit->version ? b.toolkit->version->to_string() : "?",
                                             b.toolkit->nvcc.string(), b.toolkit->from)));
  if (b.platform.is_wsl() || !b.platform.container.empty())
    human(fmt::format("   platform {}{}", b.platform.is_wsl() ? "WSL2" : "",
                      b.platform.container.empty() ? std::string()
                                                   : fmt::format("{}container ({})", b.platform.is_wsl() ? ", " : "",
                                                                 b.platform.container)));
  head(fmt::format("2. Framework {}", r.fw ? r.fw->name : g.framework));
  if (r.packages.empty()) human("   not installed");
  for (const auto& p : r.packages)
    human(fmt::format("   {:<12} {:<16} variant {:<8} {}{}", p.dist->name, p.dist->version.to_string(),
                      p.variant.empty() ? "?" : p.variant,
                      p.variant_from.empty() ? "" : styled(fmt::format("({}) ", p.variant_from), Style::dim), p.source));
  head("3. Minimal repro");
  if (r.repro.step_a == "skipped" && r.repro.step_b == "skipped") human(fmt::format("   {}", r.repro.note));
  else {
    auto st = [](const std::string& s) {
      return styled(s, s == "passed" ? Style::green : s == "failed" ? Style::red : Style::dim);
    };
    human(fmt::format("   step A (tensor to GPU): {}", st(r.repro.step_a)));
    human(fmt::format("   step B (matmul):        {}", st(r.repro.step_b)));
    if (!r.repro.error.empty()) human(fmt::format("   error: {}", r.repro.error));
  }
  head("4. Kernels and matrices");
  bool any = false;
  for (const auto& p : r.packages) {
    if (!p.kernels || p.kernels->files == 0) continue;
    any = true;
    human(fmt::format("   {}: {} files with GPU code, {} modules; sass [{}] ptx [{}]", p.dist->name, p.kernels->files,
                      p.kernels->containers, join({p.kernels->sass.begin(), p.kernels->sass.end()}, " "),
                      join({p.kernels->ptx.begin(), p.kernels->ptx.end()}, " ")));
    for (const auto& c : p.kernels->per_gpu) {
      const auto& pc = c.coverage;
      human(fmt::format("     {} {}: {}/{} modules runnable ({} sass, {} ptx-jit)", c.arch, wheel::to_string(pc.verdict),
                        pc.runnable(), pc.total(), pc.registered.sass + pc.embedded.sass, pc.registered.ptx + pc.embedded.ptx));
      if (g.verbose > 0)
        for (const auto& f : p.kernels->profiles) {
          auto fc = wheel::coverage(f.profile, specs::ComputeCapability::parse(c.arch).value_or(specs::ComputeCapability{}));
          human(styled(fmt::format("       {} {}: {}/{}", f.path, wheel::to_string(fc.verdict), fc.runnable(), fc.total()), Style::dim));
        }
    }
  }
  bool read = std::any_of(r.packages.begin(), r.packages.end(), [](auto& p) { return p.kernels.has_value(); });
  if (!read) human("   kernels not read (--no-kernels, or no RECORD lists the binaries)");
  else if (!any) human("   no GPU code found in the installed framework binaries");
  if (g.verbose > 0)
    for (const auto& n : r.facts.notes) human(styled("   note: " + n, Style::dim));
  head("Findings");
  if (r.findings.empty()) human("   none");
  for (const auto& f : r.findings) {
    auto style = f.severity == "error" ? Style::red : f.severity == "warning" ? Style::yellow : Style::blue;
    human(fmt::format("   {} {}: {}", styled(fmt::format("{:<7}", f.severity), style), f.code, f.message));
    if (!f.hint.empty()) human(fmt::format("           hint: {}", f.hint));
  }
  auto vs = r.verdict == "healthy" ? Style::green : r.verdict == "broken" ? Style::red : Style::yellow;
  human("");
  human(fmt::format("{} {}", styled("verdict:", Style::bold), styled(r.verdict, vs)));
  if (!r.fix.empty()) human(fmt::format("{} {}", styled("fix:", Style::bold), r.fix));
}

// ---------------------------------------------------------------- the command

Expected<Report> diagnose(const Globals& g, const DoctorOptions& opt) {
  Report r;
  auto k = matrices::Knowledge::load_default(g.matrices_dir);
  if (k) r.knowledge = std::move(*k);
  else if (!g.matrices_dir.empty()) return std::unexpected(std::move(k.error()));
  else r.facts.notes.push_back("matrices not loaded: " + k.error().message);
  const matrices::Knowledge* kp = r.knowledge ? &*r.knowledge : nullptr;
  if (kp) r.fw = kp->framework(g.framework);

  std::vector<std::string> gpu_specs = g.gpus;
  if (gpu_specs.empty())
    if (auto e = util::get_env("ENVFIX_GPU"); e && !e->empty())
      for (std::size_t i = 0, j; i <= e->size(); i = j + 1) {
        j = e->find(',', i);
        if (j == std::string::npos) j = e->size();
        if (j > i) gpu_specs.push_back(e->substr(i, j - i));
      }
  std::string driver = g.driver.empty() ? util::get_env("ENVFIX_DRIVER").value_or("") : g.driver;

  probe::ProbeOptions po;
  po.gpus = gpu_specs.empty() || driver.empty();
  if (!g.python.empty()) po.python = fs::path(g.python);
  if (!g.cache_dir.empty()) po.cache_dir = g.cache_dir;
  else if (auto c = index::default_cache_dir()) po.cache_dir = *c;
  auto facts = probe::probe_host(po);
  if (!facts) return std::unexpected(std::move(facts.error()).context("could not probe the target interpreter"));
  r.facts = std::move(*facts);
  if (!gpu_specs.empty()) {
    r.facts.gpus = ENVFIX_TRY(planned_gpus(gpu_specs, kp));
    r.facts.gpus_planned = true;
  }
  if (!driver.empty()) {
    if (kp && !matrices::is_driver_version(driver))
      return make_error(ErrorCode::invalid_input, fmt::format("--driver '{}': not a driver version", driver),
                        "write it as nvidia-smi does, e.g. 570.86.10");
    r.facts.driver = probe::DriverInfo{driver, std::nullopt, "planned"};
  }
  if (r.facts.driver && !r.facts.driver->cuda) r.facts.driver->cuda = cuda_for_driver(kp, r.facts.driver->version);

  // Step 1.
  check_framework(r, g.framework); // needs packages before deciding GPU-related severities
  bool cuda_build = std::any_of(r.packages.begin(), r.packages.end(),
                                [](auto& p) { return p.variant.starts_with("cu"); });
  if (r.facts.gpus.empty()) {
    std::string why = r.facts.driver ? fmt::format("driver {} is loaded but no GPU is visible", r.facts.driver->version)
                                     : std::string("no NVIDIA GPU and no driver found");
    if (auto cvd = util::get_env("CUDA_VISIBLE_DEVICES")) why += fmt::format(" (CUDA_VISIBLE_DEVICES='{}')", *cvd);
    add(r, "no-gpu", r.facts.driver || cuda_build ? "error" : "info", why,
        r.facts.driver ? "check CUDA_VISIBLE_DEVICES, container GPU access (--gpus all) and `nvidia-smi`"
                       : "to plan for another machine, pass --gpu sm_XX --driver VERSION");
  } else if (!r.facts.driver) {
    add(r, "no-driver", "error", "GPUs are present but no NVIDIA driver was found",
        "install the NVIDIA driver, then check `nvidia-smi`");
  }
  check_environment(r);
  r.base = probe::probe_base_env(r.facts);
  check_base(r);
  // Step 3 and 4.
  run_repro(r, opt);
  check_matrices(r);
  if (kp) r.zstd_driver = kp->min_driver(specs::CudaVersion{12, 4}).value_or("");
  std::optional<wheel::EvidenceStore> store;
  if (!po.cache_dir.empty()) store.emplace(po.cache_dir / "evidence-v1");
  check_kernels(r, opt, store ? &*store : nullptr);
  check_back_to_stable(r, store ? &*store : nullptr);
  // Errors first, then warnings, then info; stable within a severity.
  auto rank = [](const std::string& s) { return s == "error" ? 0 : s == "warning" ? 1 : 2; };
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [&](const Finding& a, const Finding& b) { return rank(a.severity) < rank(b.severity); });
  conclude(r, g, g.framework);
  return r;
}

} // namespace

void add_doctor_command(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("doctor", "Diagnose the GPU, driver, interpreter and framework install");
  auto opt = std::make_shared<DoctorOptions>();
  cmd->add_flag("--no-repro", opt->no_repro, "Skip the minimal repro in the target interpreter (step 3)");
  cmd->add_option("--repro-timeout", opt->repro_timeout_s, "Seconds for each repro step (default 120)")
      ->check(CLI::Range(1, 3600));
  cmd->add_flag("--no-kernels", opt->no_kernels, "Do not read the kernels in the installed binaries");
  cmd->callback([&g, opt] {
    auto r = diagnose(g, *opt);
    if (!r) {
      print_error(r.error());
      g.exit_code = 2; // could not diagnose
      if (r.error().code == ErrorCode::invalid_input) g.exit_code = 1;
      return;
    }
    if (g.format == "json") machine(to_json(*r).dump(2));
    else render_text(*r, g);
    g.exit_code = r->verdict == "healthy" ? 0 : 1;
  });
}

} // namespace envfix::cli
