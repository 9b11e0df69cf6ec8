// doctor's judgement (diagnosis/diagnose.hpp): compare the facts with the knowledge; no I/O but the
// evidence store's run records, no printing.
#include "diagnosis/diagnose.hpp"

#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <set>

#include <fmt/format.h>

#include "diagnosis/cuda_error.hpp"
#include "probe/installed.hpp"
#include "probe/installed_kernels.hpp"
#include "matrices/answers.hpp"
#include "resolver/frameworks.hpp"
#include "resolver/source_build.hpp"
#include "specs/name.hpp"
#include "util/strings.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::diagnosis {

using resolver::extra_requirements;
using resolver::gpu_markers;
using resolver::is_cuda_compiler_wheel;
using resolver::missing_for_extra;
using resolver::package_role;
using resolver::variant_by_absence;
using resolver::variant_marked_by;

namespace {

namespace fs = std::filesystem;
using util::join;

void add(DoctorReport& r, FindingCode code, Severity severity, util::Message message, util::Message hint = {}) {
  for (const auto& f : r.findings)
    if (f.code == code && f.message.text == message.text) return;
  r.findings.push_back({code, severity, std::move(message), std::move(hint)});
}

// ---------------------------------------------------------------- step 1: hardware and environment

fs::path env_prefix_of(const fs::path& interpreter) {
  // <prefix>/bin/python → <prefix>; no symlink resolution (a venv's python links to its base).
  return fs::absolute(interpreter).lexically_normal().parent_path().parent_path();
}

// How to make `python` the target in the user's shell, naming only what exists: a conda env's
// `conda activate`, a venv's bin/activate, a pyenv version's `pyenv local`. Each is one whole
// message, translated by its id (i18n/zh_CN.po).
util::Message run_with_hint(const fs::path& python, const fs::path& prefix) {
  std::error_code ec;
  if (fs::is_directory(prefix / "conda-meta", ec))
    return util::msg("run your program with {}, or activate it first (conda activate {})", python.string(), prefix.string());
  if (fs::exists(prefix / "bin/activate", ec))
    return util::msg("run your program with {}, or activate the environment first (source {}/bin/activate)", python.string(),
                     prefix.string());
  const auto versions = prefix.parent_path();
  if (versions.filename() == "versions" && fs::is_directory(versions.parent_path() / "shims", ec))
    return util::msg("run your program with {}, or select it for this project (pyenv local {})", python.string(),
                     prefix.filename().string());
  return util::msg("run your program with {}", python.string());
}

// The guide's wrong-interpreter pitfall, the `python` half: `python app.py` runs the first
// interpreter on PATH, which may not see the environment envfix fixed. Same environment: the same
// prefix, or (two interpreters outside any venv) the same real file.
void check_python_on_path(DoctorReport& r) {
  const auto& f = r.facts;
  if (!f.python || f.path_interpreters.empty()) return;
  const auto& first = f.path_interpreters.front();
  const auto target = fs::absolute(f.python->prefix).lexically_normal();
  const auto prefix = env_prefix_of(first.path);
  std::error_code ec;
  if (prefix == target) return;
  const bool in_venv = fs::exists(prefix / "pyvenv.cfg", ec) || fs::exists(target / "pyvenv.cfg", ec);
  if (!in_venv && fs::equivalent(first.resolved, f.python->executable, ec)) return;
  add(r, FindingCode::python_other_interpreter, Severity::warning,
      util::msg("`{}` first on PATH ({}) is another interpreter than the target {}: a program started with it "
                "does not see the packages envfix checks and fixes",
                first.path.filename().string(), first.path.string(), f.python->executable.string()),
      run_with_hint(f.python->executable, target));
}

void check_environment(DoctorReport& r) {
  const auto& f = r.facts;
  if (!f.python) return;
  const auto& py = *f.python;
  if (py.externally_managed) {
    // The distribution's own words (its EXTERNALLY-MANAGED file) are shown as they are.
    auto msg = py.externally_managed_message.empty()
                   ? util::msg("the distribution manages its packages")
                   : util::plain(py.externally_managed_message.substr(0, py.externally_managed_message.find('\n')));
    add(r, FindingCode::externally_managed, Severity::warning,
        util::msg("{} is externally managed (PEP 668): {}", py.executable.string(), msg),
        util::msg("install into a virtual environment: {}", "envfix apply --venv .venv"));
  }
  check_python_on_path(r);
  if (f.pip_interpreter) {
    auto pip_prefix = env_prefix_of(*f.pip_interpreter);
    auto target = fs::absolute(py.prefix).lexically_normal();
    if (pip_prefix != target) {
      add(r, FindingCode::pip_other_interpreter, Severity::warning,
          util::msg("`pip` on PATH ({}) installs into {}, not into the target {}",
                    f.pip_on_path ? f.pip_on_path->string() : std::string("pip"), pip_prefix.string(), target.string()),
          util::msg("use `{} -m pip`, or activate the environment first", py.executable.string()));
    }
  }
}

// The base environment (docs/environment.md, The base environment): the local toolkit matters only
// for building extensions, WSL and containers for where the driver comes from.
void check_base(DoctorReport& r) {
  const auto& b = r.base;
  if (b.toolkit && b.toolkit->version && b.runtime && b.toolkit->version->major != b.runtime->version.major)
    add(r, FindingCode::toolkit_runtime_mismatch, Severity::warning,
        util::msg("the local CUDA toolkit (nvcc {} from {}) is CUDA {}, the framework's runtime ({}) is CUDA {}: "
                  "extensions built with this nvcc (torch.utils.cpp_extension, source builds) will not load",
                  b.toolkit->version->to_string(), b.toolkit->from, b.toolkit->version->major, b.runtime->from,
                  b.runtime->version.to_string()),
        util::msg("installed wheels carry their own runtime and need no toolkit; to build extensions put a CUDA {}.x "
                  "nvcc first on PATH or set CUDA_HOME",
                  b.runtime->version.major));
  if (b.platform.is_wsl())
    add(r, FindingCode::wsl, Severity::info,
        util::msg("WSL2 ({}): the GPU driver is the Windows one, reached through /dev/dxg", join(b.platform.wsl, ", ")),
        util::msg("never install a Linux NVIDIA driver inside WSL; run python, pip and envfix on the same side (all in WSL), "
                  "not a Windows interpreter over a WSL path or the reverse"));
  if (!b.platform.container.empty())
    add(r, FindingCode::container, Severity::info,
        util::msg("running in a container ({}: {}): the driver comes from the host", b.platform.container,
                  join(b.platform.container_evidence, ", ")),
        util::msg("GPU access needs the NVIDIA container toolkit (docker --gpus all, CDI); fix the image's Python "
                  "environment here and the driver on the host"));
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

std::optional<specs::CudaVersion> cuda_of_variant(const FrameworkReport& s, const std::string& variant) {
  if (s.fw)
    if (const auto* v = s.fw->variant(variant)) return v->cuda;
  if (variant.starts_with("cu"))
    if (auto c = specs::CudaVersion::from_variant(variant)) return *c;
  return std::nullopt;
}

bool gpu_host(const DoctorReport& r) { return !r.facts.gpus.empty(); }

const specs::MarkerEnvironment& markers_of(const DoctorReport& r) {
  static const specs::MarkerEnvironment empty_env;
  return r.facts.python ? r.facts.python->markers : empty_env;
}

const PackageReport* main_of(const FrameworkReport& s) {
  const PackageReport* main = nullptr;
  for (const auto& p : s.packages)
    if (p.role == "main" && (!main || main->dist->version < p.dist->version)) main = &p;
  return main;
}

// The variant of the packages that carry no label of their own (jax, jaxlib, tensorflow): the one
// variant whose own packages are installed (jax-cuda13-plugin → cuda13), else cpu when no GPU
// variant's package is (jax without a plugin), else the variant whose extra is installed in full
// (tensorflow[and-cuda]), else nothing.
void infer_set_variant(const DoctorReport& r, FrameworkReport& s) {
  if (!s.fw) return;
  std::set<std::string> marked, names;
  for (const auto& p : s.packages)
    if (p.variant_from == "variant-package") marked.insert(p.variant);
  for (const auto& d : r.facts.installed) names.insert(d.normalized_name());
  std::string variant, from;
  if (marked.size() == 1) {
    variant = *marked.begin();
    from = "variant-package";
  } else if (marked.empty()) {
    if (auto cpu = variant_by_absence(*s.fw, names)) {
      variant = *cpu;
      from = "no-gpu-package";
    } else if (const auto* main = main_of(s)) {
      for (const auto& v : s.fw->variants)
        if (!v.extra.empty() && !extra_requirements(*main->dist, v.extra, markers_of(r)).empty() &&
            missing_for_extra(*main->dist, v.extra, r.facts.installed, markers_of(r)).empty()) {
          variant = v.name;
          from = "extra";
          break;
        }
    }
  }
  if (variant.empty()) return;
  for (auto& p : s.packages)
    if (p.variant.empty() || (p.variant_from == "requires-dist" && from != "no-gpu-package")) {
      p.variant = variant;
      p.variant_from = from;
    }
}

// Which packages' binaries hold the installed variant's kernels (matrices: Variant::kernels); all of
// the set when the variant is unknown or names none (torch: torch and its companions, as read before).
void mark_kernel_packages(FrameworkReport& s) {
  const auto* v = s.fw && !s.variant.empty() ? s.fw->variant(s.variant) : nullptr;
  std::set<std::string> kernels;
  if (v && !v->kernels.empty())
    for (const auto& k : s.fw->kernel_packages(s.variant)) kernels.insert(specs::normalize_name(k));
  for (auto& p : s.packages) p.kernel_package = kernels.empty() || kernels.count(p.dist->normalized_name());
}

// The variant a fix installs: the installed one when it is a GPU build that some release makes cover
// every GPU (or the host has no GPU), else the newest CUDA variant the driver runs that covers them
// (the newest at all without a driver).
const matrices::Variant* target_variant(const DoctorReport& r, const FrameworkReport& s) {
  if (!s.fw) return nullptr;
  const auto* installed = s.variant.empty() ? nullptr : s.fw->variant(s.variant);
  if (!gpu_host(r)) return installed;
  // A variant some release of which has code (SASS or PTX) for every GPU, per the matrices: jax's
  // cuda13 starts at sm_75, so a GTX 1080 (sm_61) gets cuda12 (issue 56, item 7). Each GPU's builds
  // are asked of the matrices once, not once per variant.
  std::vector<std::set<std::string>> runs_on; // per GPU: the variants with a build that runs there
  if (r.knowledge)
    for (const auto& g : r.facts.gpus) {
      auto& names = runs_on.emplace_back();
      for (const auto& b :
           matrices::builds_for_gpu(*r.knowledge, *s.fw, g.cc, matrices::matrix_platform("", g.cc), "linux", "").builds)
        if (b.runs == matrices::RunKind::native || b.runs == matrices::RunKind::jit) names.insert(b.build.variant);
    }
  auto covers = [&](const matrices::Variant& v) {
    return std::all_of(runs_on.begin(), runs_on.end(), [&](const auto& names) { return names.contains(v.name); });
  };
  // The installed GPU variant stays while some release of it covers every GPU; jax[cuda13] on a GTX
  // 1080 does not (issue 36, item 3), and reinstalling it could not fix the host.
  const bool installed_gpu = installed && installed->kind != "cpu";
  if (installed_gpu && (runs_on.empty() || covers(*installed))) return installed;
  const matrices::Variant* best = nullptr;
  bool best_covers = false;
  for (const auto& v : s.fw->variants) {
    if (v.kind != "cuda" || !v.cuda) continue;
    if (r.facts.driver && r.knowledge && !r.knowledge->driver_supports(r.facts.driver->version, *v.cuda)) continue;
    const bool c = covers(v);
    if (!best || (c && !best_covers) || (c == best_covers && *best->cuda < *v.cuda)) {
      best = &v;
      best_covers = c;
    }
  }
  // No variant covers every GPU (a mix no single build spans): the installed GPU build stays.
  if (installed_gpu && !best_covers) return installed;
  return best;
}

// The GPU extra's wheels (tensorflow[and-cuda]'s nvidia-*, jax[cuda13] → jax-cuda13-plugin[with-cuda]'s),
// read from the installed main package's Requires-Dist, that are not installed.
void check_gpu_extra(DoctorReport& r, const FrameworkReport& s, const PackageReport& main) {
  if (!s.fw || !gpu_host(r)) return;
  const matrices::Variant* v = s.variant.empty() ? nullptr : s.fw->variant(s.variant);
  if (!v) // unknown: the GPU variant whose extra the installed metadata names (tensorflow's and-cuda)
    for (const auto& c : s.fw->variants)
      if (c.kind == "cuda" && !c.extra.empty() && !extra_requirements(*main.dist, c.extra, markers_of(r)).empty()) {
        v = &c;
        break;
      }
  if (!v || v->kind != "cuda" || v->extra.empty()) return;
  std::vector<std::string> runtime, compiler, other;
  for (const auto& q : missing_for_extra(*main.dist, v->extra, r.facts.installed, markers_of(r))) {
    const auto n = q.normalized_name();
    if (is_cuda_compiler_wheel(n))
      compiler.push_back(q.name);
    else if (n.starts_with("nvidia-"))
      runtime.push_back(q.name);
    else if (!package_role(*s.fw, n).empty())
      other.push_back(q.name); // numpy & co. are pip check's
  }
  const auto label = fmt::format("{}[{}]", main.dist->name, v->extra);
  const bool only_compiler = runtime.empty() && !compiler.empty();
  if (only_compiler)
    add(r, FindingCode::cuda_runtime_missing, Severity::info,
        util::msg("the CUDA compiler wheels of {} are not installed: {}", label, join(compiler, ", ")),
        util::msg("JIT compilation then uses a ptxas/nvvm from a local CUDA toolkit; install them for a self-contained set"));
  runtime.insert(runtime.end(), compiler.begin(), compiler.end());
  if (!only_compiler && !runtime.empty())
    add(r, FindingCode::cuda_runtime_missing, Severity::error,
        util::msg("{} {} needs the CUDA runtime wheels of {}, and {} of them are not installed: {}", main.dist->name,
                  main.dist->version.to_string(), label, runtime.size(), join(runtime, ", ")),
        util::msg("install {} (see the fix command below); the framework falls back to the CPU without them", label));
  if (!other.empty())
    add(r, FindingCode::gpu_package_missing, Severity::error,
        util::msg("{} {} ({}) lacks packages of {}: {}", main.dist->name, main.dist->version.to_string(), v->name, label,
                  join(other, ", ")),
        util::msg("install {} (see the fix command below)", label));
}

// The framework's installed packages, each with its role and the variant it was built for (and
// how that was read), then the set's variant where one package's evidence speaks for all.
void collect_packages(DoctorReport& r, FrameworkReport& s) {
  const auto* fw = s.fw;
  auto main_norm = specs::normalize_name(fw ? fw->main_package : s.name);
  auto role_of = [&](const std::string& n) -> std::string {
    if (fw) return package_role(*fw, n);
    return n == main_norm ? "main" : "";
  };
  const auto& env = markers_of(r);
  for (const auto& d : r.facts.installed) {
    auto n = d.normalized_name();
    auto role = role_of(n);
    if (role.empty()) continue;
    PackageReport p;
    p.dist = &d;
    p.role = role;
    if (!d.local().empty()) {
      p.variant = d.local();
      p.variant_from = "local-label";
    } else if (auto cv = d.conda ? probe::conda_build_variant(d.conda->build) : std::nullopt) {
      // conda's build string says which build it is; pypi-default would be a guess about another package.
      p.variant = *cv;
      p.variant_from = "conda-meta";
    } else if (auto mv = fw ? variant_marked_by(*fw, n) : std::nullopt) {
      p.variant = *mv; // only one variant has this package (jax-cuda13-plugin, paddlepaddle)
      p.variant_from = "variant-package";
    } else if (auto v = variant_from_requires(d, env)) {
      p.variant = *v;
      p.variant_from = "requires-dist";
    }
    p.source = source_of(d);
    s.packages.push_back(std::move(p));
  }
  infer_set_variant(r, s);
  const PackageReport* main = main_of(s);
  // PyPI's unlabelled build: the release row says which variant pypi.org serves.
  if (main && fw) {
    if (const auto* rel = fw->release(main->dist->version); rel && !rel->pypi_default.empty()) {
      for (auto& p : s.packages)
        if (p.variant.empty()) {
          p.variant = rel->pypi_default;
          p.variant_from = "pypi-default";
        }
    }
  }
  if (main) s.variant = main->variant;
}

// A CPU build of the set on a host with GPUs (nothing on a host without).
void check_cpu_builds(DoctorReport& r, const FrameworkReport& s, const PackageReport& main_pkg) {
  const PackageReport* main = &main_pkg;
  const auto* fw = s.fw;
  if (gpu_host(r)) {
    for (const auto& p : s.packages) {
      if (p.variant != "cpu") continue;
      const auto host = util::msg("this host has {} GPU(s) ({})", r.facts.gpus.size(), r.facts.gpus[0].cc.sm_name());
      if (p.variant_from == "no-gpu-package") {
        if (&p != main) continue; // one finding for the set: no GPU package at all
        add(r, FindingCode::cpu_build_on_gpu_host, Severity::error,
            util::msg("{} {} is a CPU-only install (none of {} is installed), but {}", p.dist->name, p.dist->version.to_string(),
                      join(gpu_markers(*fw), ", "), host),
            util::msg("install the CUDA build for this GPU (see the fix command below)"));
      } else {
        add(r, FindingCode::cpu_build_on_gpu_host, Severity::error,
            util::msg("{} {} is a CPU-only build, but {}", p.dist->name, p.dist->version.to_string(), host),
            util::msg("install the CUDA build for this GPU (see the fix command below)"));
      }
    }
  }
}

// Mixed variants and sources across the set.
void check_mixed(DoctorReport& r, const FrameworkReport& s) {
  const std::string& framework = s.name;
  std::map<std::string, std::vector<std::string>> by_variant;
  for (const auto& p : s.packages)
    if (!p.variant.empty()) by_variant[p.variant].push_back(fmt::format("{} {}", p.dist->name, p.dist->version.to_string()));
  if (by_variant.size() > 1) {
    std::vector<std::string> parts;
    for (auto& [v, names] : by_variant) parts.push_back(fmt::format("{} ({})", v, join(names, ", ")));
    add(r, FindingCode::mixed_variants, Severity::error,
        util::msg("the {} packages mix build variants: {}", framework, join(parts, "; ")),
        util::msg("every package of the set must come from the same variant index"));
  }
  // Mixed sources: different indexes are a problem; only different installers is a hint.
  std::set<std::string> urls, installers;
  for (const auto& p : s.packages) {
    if (!p.source.starts_with("installer:")) urls.insert(p.source);
    if (!p.dist->installer.empty()) installers.insert(p.dist->installer);
  }
  if (urls.size() > 1)
    add(r, FindingCode::mixed_sources, Severity::warning,
        util::msg("the {} packages came from different indexes: {}", framework,
                  join(std::vector<std::string>(urls.begin(), urls.end()), ", ")));
  else if (installers.size() > 1)
    add(r, FindingCode::mixed_sources, Severity::info,
        util::msg("the {} packages were installed by different tools: {}", framework,
                  join(std::vector<std::string>(installers.begin(), installers.end()), ", ")));
}

// Companion versions: the matrices' coupling, and the companion's own Requires-Dist on the main package.
void check_companions(DoctorReport& r, const FrameworkReport& s, const PackageReport& main) {
  const std::string& framework = s.name;
  const std::string main_pkg = s.fw ? s.fw->main_package : framework;
  const auto main_norm = specs::normalize_name(main_pkg);
  const auto& mv = main.dist->version;
  const auto& env = markers_of(r);
  for (const auto& p : s.packages) {
    if (p.role != "companion") continue;
    const auto& d = *p.dist;
    if (r.knowledge) {
      if (auto want = r.knowledge->companion_version(framework, mv, d.normalized_name())) {
        auto w = specs::Version::parse(*want);
        if (w && w->public_version() != d.version.public_version())
          add(r, FindingCode::companion_mismatch, Severity::error,
              util::msg("{} {} does not match {} {} (it needs {} {})", d.name, d.version.to_string(), main_pkg, mv.to_string(),
                        d.name, *want),
              util::msg("install the coupled versions together (see the fix command below)"));
      }
    }
    for (const auto& req : d.requires_dist) {
      if (req.normalized_name() != main_norm || req.specifier.empty()) continue;
      if (req.marker && !req.applies(env)) continue;
      if (!req.specifier.contains(mv.public_version(), true))
        add(r, FindingCode::companion_mismatch, Severity::error,
            util::msg("{} {} requires {}{}, but {} {} is installed", d.name, d.version.to_string(), main_pkg,
                      req.specifier.to_string(), main_pkg, mv.to_string()),
            util::msg("install the coupled versions together (see the fix command below)"));
    }
  }
}

// The driver against the CUDA the main package was built for.
void check_driver(DoctorReport& r, const FrameworkReport& s, const PackageReport& main_rep) {
  const PackageReport* main = &main_rep;
  const std::string main_pkg = s.fw ? s.fw->main_package : s.name;
  const auto& mv = main->dist->version;
  const auto& drv = r.facts.driver;
  if (drv && !main->variant.empty()) {
    if (auto cuda = cuda_of_variant(s, main->variant)) {
      bool ok = r.knowledge ? r.knowledge->driver_supports(drv->version, *cuda) : (!drv->cuda || *drv->cuda >= *cuda);
      if (!ok) {
        auto need = r.knowledge ? r.knowledge->min_driver(*cuda) : std::nullopt;
        add(r, FindingCode::driver_too_old, Severity::error,
            util::msg("{} {} is built for CUDA {}, which driver {}{} cannot run", main_pkg, mv.to_string(), cuda->to_string(),
                      drv->version, drv->cuda ? fmt::format(" (CUDA {})", drv->cuda->to_string()) : std::string()),
            need ? util::msg("upgrade the driver to >= {}, or install a build for an older CUDA", *need)
                 : util::msg("upgrade the driver, or install a build for an older CUDA"));
      }
    }
  }
}

void check_framework(DoctorReport& r, FrameworkReport& s) {
  const std::string& framework = s.name;
  std::string main_pkg = s.fw ? s.fw->main_package : framework;
  collect_packages(r, s);
  const PackageReport* main = main_of(s);
  mark_kernel_packages(s);
  // conda's packages: the fix below would be refused by apply (docs/json.md, plan); say so up front.
  for (const auto& p : s.packages)
    if (p.dist->conda)
      add(r, FindingCode::conda_owned, Severity::info,
          util::msg("{} {} belongs to conda ({} {} {}); envfix apply will not replace it", p.dist->name,
                    p.dist->version.to_string(), p.dist->conda->name, p.dist->conda->version, p.dist->conda->build),
          util::msg("change it with conda (`conda install` the build you need), or add --allow-conda-overwrite to the fix"));
  if (!main) {
    add(r, FindingCode::framework_not_installed, Severity::warning,
        util::msg("{} is not installed in {}", main_pkg,
                  r.facts.python ? util::plain(r.facts.python->executable.string()) : util::msg("the target")),
        util::plain(fmt::format("envfix apply {}{}", main_pkg, framework == "torch" ? "" : " --framework " + framework)));
    return;
  }
  check_cpu_builds(r, s, *main);
  check_gpu_extra(r, s, *main);
  check_mixed(r, s);
  check_companions(r, s, *main);
  check_driver(r, s, *main);
}

// Duplicates and missing RECORDs (all dists: they break uninstall and upgrades alike), once for the
// environment when a framework is installed.
void check_dists(DoctorReport& r) {
  for (const auto& group : probe::find_duplicates(r.facts.installed)) {
    std::vector<std::string> where;
    for (auto* d : group) where.push_back(d->dist_info.string());
    bool fw_pkg = false;
    for (const auto& s : r.frameworks) fw_pkg = fw_pkg || (s.fw && !package_role(*s.fw, group[0]->normalized_name()).empty());
    add(r, FindingCode::duplicate_dist, fw_pkg ? Severity::error : Severity::warning,
        util::msg("{} is installed {} times: {}", group[0]->name, group.size(), join(where, ", ")),
        util::msg("remove the stale copy: envfix apply reinstalls one clean set"));
  }
  for (const auto& d : r.facts.installed)
    if (!d.has_record)
      add(r, FindingCode::missing_record, Severity::warning,
          util::msg("{} {} has no RECORD ({}): it cannot be uninstalled cleanly", d.name, d.version.to_string(),
                    d.dist_info.string()),
          util::msg("reinstall it so that a RECORD is written"));
}

// ---------------------------------------------------------------- step 3: repro

using StepRunner = std::function<std::vector<StepOutcome>(const std::vector<std::string>&)>;

// The repro's steps for one framework, or none (its note then says why it is skipped).
std::optional<std::vector<std::string>> repro_steps(const DoctorReport& r, FrameworkReport& s, const DiagnoseOptions& opt,
                                                    const StepRunner& run_steps) {
  auto& rp = s.repro;
  if (opt.no_repro) {
    rp.note = util::msg("skipped (--no-repro)");
    return std::nullopt;
  }
  if (!r.facts.python) return std::nullopt;
  bool have_main = std::any_of(s.packages.begin(), s.packages.end(), [](auto& p) { return p.role == "main"; });
  if (!have_main) {
    rp.note = util::msg("skipped: the framework is not installed");
    return std::nullopt;
  }
  if (!s.fw || s.fw->smoke.step_a.empty() || s.fw->smoke.step_b.empty()) {
    rp.note = util::msg("skipped: the matrices define no smoke test for {}",
                        s.fw ? util::plain(s.fw->name) : util::msg("this framework"));
    return std::nullopt;
  }
  if (r.facts.gpus.empty()) {
    rp.note = util::msg("skipped: no GPU");
    return std::nullopt;
  }
  if (!run_steps) {
    rp.note = util::msg("skipped: no interpreter to run it in");
    return std::nullopt;
  }
  // Step A before step B (the troubleshooting order), in one interpreter (smoke/smoke.hpp).
  return std::vector<std::string>{s.fw->smoke.step_a, s.fw->smoke.step_b};
}

// The findings of one framework's repro, from the outcomes of its steps.
void judge_repro(DoctorReport& r, FrameworkReport& s, const std::vector<StepOutcome>& outcomes) {
  auto& rp = s.repro;
  std::size_t next = 0;
  auto run = [&](const std::string&, std::string& status) -> bool {
    const StepOutcome res = next < outcomes.size() ? outcomes[next++] : StepOutcome{false, "not run"};
    status = res.ok ? "passed" : "failed";
    if (!res.ok) rp.error = res.error;
    return res.ok;
  };
  // "No kernel image" is the missing-arch class whichever step raises it (a step A that launched a
  // kernel would fail so on a build without the GPU's arch).
  auto no_image = [&] { return classify_cuda_error(rp.error) == CudaError::missing_arch; };
  auto missing_arch = [&](const util::Message& step) {
    std::vector<std::string> archs;
    for (auto& g : r.facts.gpus) archs.push_back(g.cc.sm_name());
    add(r, FindingCode::arch_not_covered, Severity::error,
        util::msg("the installed build has no kernel image for {} ({}: \"no kernel image is available\")", join(archs, ", "),
                  step),
        util::msg("install a build whose kernels include this architecture (see the fix command below)"));
  };
  // The guide's second and third layers: the repro runs with CUDA_LAUNCH_BLOCKING=1 (smoke/run.cpp),
  // so its failing step is the failing launch; the user's own program reports kernel errors
  // asynchronously, at a later call. Said with the finding, with the command that makes it precise.
  auto async = [&](const util::Message& step, const util::Message& op) {
    if (classify_cuda_error(rp.error) == CudaError::none) return util::plain("");
    return util::msg("; the repro ran with CUDA_LAUNCH_BLOCKING=1, so the failing operator is {}'s {}. In your own program CUDA "
                     "reports kernel errors asynchronously: its traceback may point at a later call than the operator that "
                     "failed; `envfix verify --app '<your command>' --sync` runs it with CUDA_LAUNCH_BLOCKING=1 (slower) to stop "
                     "at the failing launch",
                     step, op);
  };
  if (!run(s.fw->smoke.step_a, rp.step_a)) {
    const bool arch = no_image();
    // Planned GPUs (--gpu) are another machine's: step A failing here says only that this one
    // cannot reach them, not that the planned machine is broken.
    if (r.facts.gpus_planned && !arch) {
      rp.note = util::msg("step A failed on this machine, whose GPUs are not the planned ones (--gpu); run doctor on that "
                          "machine for its repro");
      add(r, FindingCode::repro_not_here, Severity::info, util::msg("the repro could not reach a GPU here: {}", rp.error),
          util::msg("the GPUs are planned (--gpu): run doctor on the machine that has them"));
      return;
    }
    add(r, FindingCode::repro_failed, Severity::error, util::msg("step A (move a tensor to the GPU) failed: {}", rp.error),
        util::msg(
            "{}{}",
            arch ? util::msg("the installed build has no kernels for this GPU's architecture")
                 : util::msg("the framework cannot reach the GPU: check the driver, CUDA_VISIBLE_DEVICES and a CPU-only build"),
            async(util::msg("step A"), util::msg("host-to-device copy"))));
    if (arch) missing_arch(util::msg("step A"));
    return;
  }
  if (!run(s.fw->smoke.step_b, rp.step_b)) {
    const bool arch = no_image();
    add(r, FindingCode::repro_failed, Severity::error, util::msg("step B (run a matmul on the GPU) failed: {}", rp.error),
        util::msg("{}{}",
                  arch ? util::msg("the installed build has no kernels for this GPU's architecture")
                       : util::msg("a kernel failed on the GPU; rerun with -v for the details"),
                  async(util::msg("step B"), util::plain("matmul"))));
    if (arch) missing_arch(util::msg("step B"));
  }
}

// ---------------------------------------------------------------- step 4: matrices and kernels

std::string platform_of(const DoctorReport& r) {
  std::string arch = r.facts.python ? r.facts.python->tag_env.arch : "x86_64";
  return "linux_" + arch;
}

void check_matrices(DoctorReport& r, const FrameworkReport& s) {
  if (!r.knowledge || !s.fw) return;
  for (const auto& p : s.packages) {
    if (p.role != "main" || p.variant.empty()) continue;
    auto builds = r.knowledge->variants_for(s.fw->name, p.dist->version, platform_of(r));
    const matrices::VariantBuild* vb = nullptr;
    for (const auto& b : builds)
      if (b.variant == p.variant) vb = &b;
    if (!vb) continue;
    for (const auto& g : r.facts.gpus) {
      switch (vb->runs_on(g.cc)) {
      case matrices::RunKind::none:
        add(r, FindingCode::arch_not_covered, Severity::error,
            util::msg("{} {} ({}) ships no kernels for {} ({}) according to the matrices [{}]", p.dist->name,
                      p.dist->version.to_string(), p.variant, g.cc.sm_name(), g.name, vb->source),
            util::msg("install a build that covers this GPU (see the fix command below)"));
        break;
      case matrices::RunKind::jit:
        add(r, FindingCode::ptx_jit_only, Severity::warning,
            util::msg("{} {} ({}) runs on {} only by JIT-compiling PTX (slow first start, needs a recent driver)", p.dist->name,
                      p.dist->version.to_string(), p.variant, g.cc.sm_name()),
            util::msg("a build with SASS for this GPU starts faster"));
        break;
      default: break;
      }
    }
  }
}

std::string command_line(const DoctorReport& r, std::vector<std::string> args, const FixArgs& g, std::string_view drop = {}) {
  return diagnosis::command_line(std::move(args), g, r.facts.python && r.facts.python->externally_managed, drop);
}

// The guide's last fix: a nightly or test build installed because stable did not cover a new GPU
// yet. Once a stable release covers every GPU (matrices/knowledge.hpp, stable_covering), say so.
void check_back_to_stable(DoctorReport& r, const FrameworkReport& s, const wheel::EvidenceStore* store, const FixArgs& fix) {
  if (!r.knowledge || !s.fw || r.facts.gpus.empty()) return;
  for (const auto& p : s.packages) {
    if (p.role != "main") continue;
    const auto& v = p.dist->version;
    std::string channel = v.is_devrelease()                                                   ? "nightly"
                          : p.source.find("/test/") != std::string::npos || v.is_prerelease() ? "test"
                                                                                              : "";
    if (channel.empty()) return;
    std::vector<specs::ComputeCapability> ccs;
    for (const auto& g : r.facts.gpus) ccs.push_back(g.cc);
    // What the binaries said beats the table: a stable build read before (evidence store) that is
    // not fully covered on some GPU is never suggested.
    // The store's builds of the main package are read once, not once per candidate release.
    std::vector<wheel::BuildEvidence> seen;
    if (store)
      for (auto& b : store->builds())
        if (b.key.project == specs::normalize_name(s.fw->main_package)) seen.push_back(std::move(b));
    auto contradicted = [&](const specs::Version& sv, std::string_view variant) {
      for (const auto& b : seen) {
        if (b.key.variant != variant) continue;
        auto bv = specs::Version::parse(b.key.version);
        if (!bv || bv->public_version() != sv.public_version()) continue;
        for (const auto& cc : ccs)
          if (wheel::package_coverage(b.files, cc).verdict != wheel::Verdict::full) return true;
      }
      return false;
    };
    auto cover = r.knowledge->stable_covering(s.fw->name, ccs, r.facts.driver ? r.facts.driver->version : "", platform_of(r),
                                              contradicted);
    if (!cover) return;
    std::vector<std::string> archs;
    for (const auto& cc : ccs)
      if (std::find(archs.begin(), archs.end(), cc.sm_name()) == archs.end()) archs.push_back(cc.sm_name());
    add(r, FindingCode::stable_covers_gpu, Severity::info,
        util::msg("{} {} is a {} build; the stable release {} ({}) now has native kernels for {}{}", p.dist->name, v.to_string(),
                  channel, cover->version.to_string(), cover->variant, join(archs, ", "),
                  cover->verified ? util::plain("") : util::msg(" (claimed by the matrices, checked after download)")),
        util::plain(command_line(r, {"envfix", "apply", "--framework", s.fw->name, "--channel", "stable"}, fix, "--channel")));
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

// "<label>: none of its N GPU modules has code for sm_XX (binaries read: a.so, b.so)": the framework's
// and the extensions' arch-not-covered findings say it alike.
util::Message none_text(const util::Message& label, const wheel::PackageCoverage& c, const std::string& arch) {
  return util::msg("{}: none of its {} GPU modules has code for {} (binaries read: {})", label, c.total(), arch,
                   join(base_names(c.none_files), ", "));
}

// "<label>: K of N GPU modules lack code for sm_XX", and the files that lack it.
util::Message partial_text(const util::Message& label, const wheel::PackageCoverage& c, const std::string& arch,
                           const util::Message& consequence) {
  return util::msg("{}: {} of {} GPU modules lack code for {}{} ({})", label, c.total() - c.runnable(), c.total(), arch,
                   consequence, join(base_names(c.none_files.empty() ? c.partial_files : c.none_files), ", "));
}

// What one dist's binaries hold, and per GPU of the host what runs (wheel/coverage.hpp).
KernelSummary summarize(probe::InstalledKernels ik, const std::vector<probe::GpuInfo>& gpus) {
  KernelSummary ks;
  ks.scanned = ik.scanned;
  ks.from_evidence = ik.from_evidence;
  ks.files = ik.files.size();
  for (const auto& f : ik.files) {
    for (auto& a : f.profile.sass()) ks.sass.insert(a);
    for (auto& a : f.profile.ptx()) ks.ptx.insert(a);
    ks.containers += f.profile.containers();
    ks.zstd = ks.zstd || f.profile.zstd;
  }
  ks.profiles = std::move(ik.files);
  for (const auto& g : gpus) ks.per_gpu.push_back({g.cc.sm_name(), wheel::package_coverage(ks.profiles, g.cc)});
  return ks;
}

using KernelReader = std::function<Expected<probe::InstalledKernels>(const probe::InstalledDist&)>;

void check_kernels(DoctorReport& r, FrameworkReport& s, const std::string& zstd_driver, const DiagnoseOptions& opt,
                   const KernelReader& read) {
  if (opt.no_kernels || !read) return;
  for (auto& p : s.packages) {
    if (!p.dist->has_record || !p.kernel_package) continue;
    auto ik = read(*p.dist);
    if (!ik) {
      r.facts.notes.push_back(ik.error().said_message());
      continue;
    }
    for (auto& n : ik->notes) r.facts.notes.push_back(n);
    KernelSummary ks = summarize(std::move(*ik), r.facts.gpus);
    for (const auto& gc : ks.per_gpu) {
      const auto& c = gc.coverage;
      auto label = util::plain(fmt::format("{} {}", p.dist->name, p.dist->version.to_string()));
      switch (wheel::read_coverage(c, wheel::CodeRole::framework)) {
      case wheel::Reading::not_covered:
        add(r, FindingCode::arch_not_covered, Severity::error, none_text(label, c, gc.arch),
            util::msg("install a build that covers this GPU (see the fix command below)"));
        break;
      case wheel::Reading::gap:
        add(r, FindingCode::arch_partly_covered, Severity::warning,
            partial_text(label, c, gc.arch, util::msg(" — a small test may pass and the full app fail")),
            util::msg("install a build with full coverage for this GPU (see the fix command below)"));
        break;
      case wheel::Reading::jit_only:
        add(r, FindingCode::ptx_jit_only, Severity::warning,
            util::msg("{}: runs on {} only by JIT-compiling PTX", label, gc.arch),
            util::msg("a build with SASS for this GPU starts faster"));
        break;
      case wheel::Reading::covered:
      case wheel::Reading::specialised: break;
      }
    }
    if (r.facts.driver && wheel::zstd_unloadable(ks.profiles, r.facts.driver->cuda))
      add(r, FindingCode::zstd_needs_newer_driver, Severity::error,
          util::msg("{} has ZSTD-compressed kernels, which need a driver for CUDA >= {} (this one: CUDA {})", p.dist->name,
                    specs::kZstdMinCuda.to_string(), r.facts.driver->cuda->to_string()),
          util::msg("upgrade the driver (>= {})", zstd_driver.empty()
                                                      ? util::msg("one for CUDA {}", specs::kZstdMinCuda.to_string())
                                                      : util::plain(zstd_driver)));
    p.kernels = std::move(ks);
  }
  // A GPU variant whose named kernel packages (jax-cuda13-plugin, -pjrt) hold no GPU code: a passing
  // repro alone does not make it healthy.
  const auto* v = s.fw && !s.variant.empty() ? s.fw->variant(s.variant) : nullptr;
  if (v && v->kind == "cuda" && !v->kernels.empty()) {
    bool read_any = false;
    std::size_t files = 0;
    std::vector<std::string> names;
    for (const auto& p : s.packages)
      if (p.kernel_package && p.kernels) {
        read_any = true;
        files += p.kernels->files;
        names.push_back(p.dist->name);
      }
    if (read_any && files == 0)
      add(r, FindingCode::no_gpu_kernels, Severity::warning,
          util::msg("the {} packages that carry the kernels of its {} build ({}) hold no GPU code", s.name, v->name,
                    join(names, ", ")),
          util::msg("reinstall them (see the fix command below)"));
  }
}

// ---------------------------------------------------------------- runs observed

// The repro on a local GPU is a real run of the framework's kernel packages on GPU 0 (the device
// the framework picks): step B passing ran a kernel, "no kernel image" in either step ran none.
// Recorded in the evidence store; a run that contradicts the rule's verdict for that device is said
// beside it, and the verdict keeps to NVIDIA's documented rule (wheel/kernel_evidence.hpp). A stored
// run is told by the device and time it was recorded with: the store may be shared by machines, and
// planned GPUs ran nothing here (issue 60, 8).
std::optional<std::pair<bool, std::string>> repro_outcome(const DoctorReport& r, const FrameworkReport& s) {
  if (r.facts.gpus.empty() || r.facts.gpus_planned) return std::nullopt;
  if (s.repro.step_b == "passed") return std::pair{true, std::string("step B")};
  if (classify_cuda_error(s.repro.error) == CudaError::missing_arch)
    return std::pair{false, std::string(s.repro.step_a == "failed" ? "step A" : "step B")};
  return std::nullopt;
}

void contrary_finding(DoctorReport& r, const PackageReport& p, const probe::GpuInfo& g, const wheel::PackageCoverage& c,
                      const wheel::RunObservation& o) {
  const auto label = fmt::format("{} {}", p.dist->name, p.dist->version.to_string());
  const auto seen = util::msg("{}'s {}, {}", o.by, o.step, o.when);
  if (o.ran)
    add(r, FindingCode::observed_contrary, Severity::info,
        util::msg("{}: a run recorded on {} ({}; {}) ran its kernels, although none of its {} GPU modules has code "
                  "that NVIDIA documents as running on {}{}; the verdict keeps to the documented rule",
                  label, o.device, o.cc.spec(), seen, c.total(), g.cc.spec(),
                  g.cc.tegra ? util::msg(" (an integrated GPU runs only SASS of its own compute capability, or PTX)")
                             : util::plain("")),
        util::msg("the run is recorded in the evidence store; a build with {} SASS is the one NVIDIA supports on this "
                  "device (docs/kernels.md, \"Runs-on rules\")",
                  g.cc.sm_name()));
  else
    add(r, FindingCode::observed_contrary, Severity::warning,
        util::msg("{}: the binaries read hold code for {} in every GPU module, but a run recorded on {} ({}; {}) found "
                  "no kernel image: {}",
                  label, g.cc.sm_name(), o.device, o.cc.spec(), seen, o.error),
        util::msg("a library envfix did not read, or a rule it gets wrong: run `envfix inspect` on the package's libraries and "
                  "report what it prints"));
}

// The packages whose kernels the repro's steps run: the variant's named kernel packages (jax's
// plugin and pjrt), else the main package alone: torch's matmul imports neither torchvision nor
// torchaudio, so a run says nothing of their binaries.
bool exercised_by_repro(const FrameworkReport& s, const PackageReport& p) {
  const auto* v = s.fw && !s.variant.empty() ? s.fw->variant(s.variant) : nullptr;
  if (v && !v->kernels.empty()) return p.kernel_package;
  return p.role == "main";
}

void observe_runs(DoctorReport& r, const FrameworkReport& s, const wheel::EvidenceStore* store) {
  const auto outcome = repro_outcome(r, s);
  for (const auto& p : s.packages) {
    if (!p.kernel_package || !p.dist->has_record) continue;
    const auto record = probe::record_sha256(*p.dist);
    if (!record) continue;
    std::vector<wheel::RunObservation> seen;
    if (outcome && exercised_by_repro(s, p)) {
      auto now = probe::run_observation(*p.dist, r.facts.gpus.front(), outcome->first, outcome->second,
                                        outcome->first ? "" : s.repro.error, "envfix doctor");
      if (now && store && !store->put_observation(*now))
        r.facts.notes.push_back(util::msg("the repro's run could not be recorded in the evidence store"));
      if (now && !store) seen.push_back(std::move(*now));
    }
    if (store) seen = store->observations(probe::installed_build_key(*p.dist), *record);
    if (!p.kernels) continue;
    for (std::size_t i = 0; i < p.kernels->per_gpu.size() && i < r.facts.gpus.size(); ++i) {
      const auto& g = r.facts.gpus[i];
      const auto& c = p.kernels->per_gpu[i].coverage;
      for (const auto& o : seen)
        if (c.has_gpu_code() && o.cc == g.cc && wheel::contradicts(o, c.verdict)) contrary_finding(r, p, g, c, o);
    }
  }
}

// ---------------------------------------------------------------- extensions

// The framework an extension builds against: the first whose main package its Requires-Dist names.
void link_extension(const DoctorReport& r, ExtensionReport& e) {
  for (const auto& s : r.frameworks) {
    const auto main = specs::normalize_name(s.fw ? s.fw->main_package : s.name);
    for (const auto& q : e.dist->requires_dist) {
      if (q.normalized_name() != main) continue;
      e.framework = s.name;
      e.requirement = q.to_string();
      if (const auto* m = main_of(s)) {
        e.framework_version = m->dist->version;
        e.requirement_met = q.specifier.contains(m->dist->version, true);
      }
      return;
    }
  }
}

util::Message extension_recipe(const DoctorReport& r, const ExtensionReport& e,
                               const std::vector<specs::ComputeCapability>& gpus) {
  resolver::ExtensionBuild b{e.dist->name, std::nullopt, {}, e.framework_version, gpus, std::nullopt};
  if (const auto* s = r.framework(e.framework); s && s->fw) b.framework = s->fw->main_package;
  // The installed release, unless it was built for another framework version.
  if (e.requirement_met) b.version = e.dist->version;
  if (r.knowledge)
    for (const auto& g : gpus)
      if (auto ft = r.knowledge->first_toolkit_for(g); ft.toolkit && (!b.min_cuda || *b.min_cuda < ft.toolkit->version))
        b.min_cuda = ft.toolkit->version;
  return resolver::extension_build_recipe(b);
}

void judge_extension(DoctorReport& r, ExtensionReport& e) {
  const auto label = e.framework.empty()
                         ? util::plain(fmt::format("{} {}", e.dist->name, e.dist->version.to_string()))
                         : util::msg("{} {} (an extension of {})", e.dist->name, e.dist->version.to_string(), e.framework);
  auto added = r.findings.size();
  std::vector<specs::ComputeCapability> uncovered;
  for (const auto& gc : e.kernels.per_gpu) {
    const auto& c = gc.coverage;
    // The framework's reading (wheel::read_coverage): an extension's partial coverage is a gap.
    const auto reading = wheel::read_coverage(c, wheel::CodeRole::extension);
    if (reading == wheel::Reading::not_covered) {
      uncovered.push_back(*specs::ComputeCapability::parse(gc.arch));
      add(r, FindingCode::extension_arch_not_covered, Severity::error, none_text(label, c, gc.arch), {});
    } else if (reading == wheel::Reading::gap) {
      uncovered.push_back(*specs::ComputeCapability::parse(gc.arch));
      add(r, FindingCode::extension_arch_partly_covered, Severity::warning,
          partial_text(label, c, gc.arch, util::msg(": the operators in them fail with \"no kernel image\"")), {});
    }
  }
  if (!e.requirement_met)
    add(r, FindingCode::extension_framework_mismatch, Severity::error,
        util::msg("{} requires {}, but {} {} is installed: its compiled operators are built against another {} "
                  "(import errors or undefined symbols)",
                  label, e.requirement, e.framework, e.framework_version ? e.framework_version->to_string() : "?", e.framework),
        {});
  if (!uncovered.empty()) e.recipe = extension_recipe(r, e, uncovered);
  const auto hint =
      util::msg("install a build of {} that has code for this GPU and matches the chosen {} (the fix "
                "below looks for one on the index); if there is none: {}",
                e.dist->name, e.framework.empty() ? util::msg("framework") : util::plain(e.framework),
                e.recipe.empty() ? util::msg("reinstall it from a build made for this framework version") : e.recipe);
  for (auto i = added; i < r.findings.size(); ++i) {
    r.findings[i].hint = hint;
    r.findings[i].package = e.dist->normalized_name();
    r.findings[i].framework = e.framework.empty() && !r.frameworks.empty() ? r.frameworks.front().name : e.framework;
  }
}

// Every installed dist outside the frameworks' sets and their dependencies whose binaries hold GPU
// code (found by reading them, not from a list): judged per device like the framework's. The sets
// are those of every framework installed, not only the ones diagnosed: `doctor --framework jax` beside
// torch must not judge torch's cuSPARSELt as a third-party extension (issue 56, item 6).
void check_extensions(DoctorReport& r, const DiagnoseOptions& opt, const KernelReader& read) {
  if (opt.no_kernels || !read) return;
  std::vector<std::string> roots;
  for (const auto& s : r.frameworks)
    for (const auto& p : s.packages) roots.push_back(p.dist->normalized_name());
  if (r.knowledge)
    for (const auto* fw : resolver::installed_frameworks(*r.knowledge, r.facts.installed))
      for (const auto& d : r.facts.installed)
        if (!resolver::package_role(*fw, d.normalized_name()).empty()) roots.push_back(d.normalized_name());
  const auto own = probe::requirement_closure(r.facts.installed, roots);
  for (const auto& d : r.facts.installed) {
    if (!d.has_record || own.contains(d.normalized_name())) continue;
    auto ik = read(d);
    if (!ik) {
      r.facts.notes.push_back(ik.error().said_message());
      continue;
    }
    for (auto& n : ik->notes) r.facts.notes.push_back(n);
    if (ik->files.empty()) continue;
    ExtensionReport e;
    e.dist = &d;
    e.kernels = summarize(std::move(*ik), r.facts.gpus);
    link_extension(r, e);
    judge_extension(r, e);
    r.extensions.push_back(std::move(e));
  }
}

// ---------------------------------------------------------------- verdict and fix

// The `envfix apply` for one framework: its installed packages, the main one as the target variant
// names it (paddlepaddle → paddlepaddle-gpu) with the variant's extra ('jax[cuda13]', whose extra
// brings the variant's own packages), and every option that shaped the diagnosis.
std::string fix_for(const DoctorReport& r, const FrameworkReport& s, const FixArgs& g, std::vector<std::string>& request) {
  bool want = false;
  for (const auto& f : r.findings)
    want = want || (f.severity != Severity::info && fixable(f.code) && (f.framework.empty() || f.framework == s.name));
  if (!want) return {};
  const auto* tv = target_variant(r, s);
  const std::string main = s.fw ? (tv ? s.fw->main_package_of(tv->name) : s.fw->main_package) : s.name;
  const std::string extra = tv && !tv->extra.empty() ? "[" + tv->extra + "]" : "";
  std::vector<std::string> args = {"envfix", "apply"};
  std::vector<std::string> pkgs;
  for (const auto& p : s.packages) {
    if (p.role == "main")
      pkgs.push_back(specs::normalize_name(main) + extra);
    else if (p.role != "variant" || extra.empty())
      pkgs.push_back(specs::normalize_name(p.dist->name));
  }
  // A broken extension is replaced in the same transaction, by a build that fits the new set.
  for (const auto& f : r.findings)
    if (about_extension(f.code) && f.framework == s.name && !f.package.empty()) pkgs.push_back(f.package);
  std::sort(pkgs.begin(), pkgs.end());
  pkgs.erase(std::unique(pkgs.begin(), pkgs.end()), pkgs.end());
  if (pkgs.empty()) pkgs.push_back(specs::normalize_name(main) + extra);
  request = pkgs;
  args.insert(args.end(), pkgs.begin(), pkgs.end());
  if (s.name != "torch") args.insert(args.end(), {"--framework", s.name});
  return command_line(r, std::move(args), g);
}

void conclude(DoctorReport& r, const FixArgs& g) {
  // Advice about the user's shell, not the environment: shown as a warning, but a healthy
  // environment stays healthy (a `pip` or `python` on PATH that belongs elsewhere breaks nothing installed).
  bool error = false, warning = false;
  for (const auto& f : r.findings) {
    if (advisory(f.code)) continue;
    error = error || f.severity == Severity::error;
    warning = warning || f.severity == Severity::warning;
  }
  r.verdict = error ? Verdict::broken : warning ? Verdict::degraded : Verdict::healthy;
  if (r.verdict == Verdict::healthy) return;
  for (auto& s : r.frameworks) s.fix = fix_for(r, s, g, s.fix_request);
  r.fix = joined_fix(r);
}

// A Jetson: its L4T release through jetson.yaml, and an info finding that says which rule applies and
// where wheels with the SoC's own arch come from.
void jetson_facts(DoctorReport& r) {
  const auto& t = *r.facts.tegra;
  JetsonView v{t.model, t.soc, t.l4t, t.kernel, t.power_mode, "", std::nullopt, {}};
  const matrices::L4tRelease* rel = r.knowledge && !t.l4t.empty() ? r.knowledge->l4t(t.l4t) : nullptr;
  if (rel) {
    v.jetpack = rel->jetpack;
    v.cuda = rel->cuda;
    v.indexes = rel->indexes;
  }
  // The model and the evidence are the device tree's words: shown as they are.
  const auto where = util::plain(fmt::format("{}{}", t.model.empty() ? "" : " (" + t.model + ")",
                                             t.evidence.empty() ? std::string() : fmt::format(" ({})", join(t.evidence, ", "))));
  std::string arch;
  for (const auto& g : r.facts.gpus)
    if (g.cc.tegra) arch = g.cc.sm_name();
  auto text = util::msg(
      "a Jetson{}: {}", where,
      rel ? util::msg("L4T {} is JetPack {}, whose driver runs CUDA {} and older", t.l4t, rel->jetpack, rel->cuda.to_string())
      : t.l4t.empty() ? util::msg("no L4T release found (/etc/nv_tegra_release)")
                      : util::msg("L4T {} is not in the matrices (jetson.yaml)", t.l4t));
  if (!arch.empty())
    text = util::msg("{}; its integrated GPU runs only {} SASS (or PTX it can JIT): SASS built for another part of the same "
                     "major does not load on it (docs/kernels.md, the Tegra rule)",
                     text, arch);
  std::optional<util::Message> hint;
  for (const auto& [fw, url] : v.indexes) {
    auto one = util::msg("{} wheels for JetPack {}: --index-url {}", fw, v.jetpack, url);
    hint = hint ? util::msg("{}; {}", *hint, one) : one;
  }
  add(r, FindingCode::jetson, Severity::info, text, hint ? *hint : util::msg("see docs/kernels.md (the Tegra rule)"));
  r.jetson = std::move(v);
}

} // namespace

DoctorReport diagnose(const DiagnoseOptions& opt, DoctorInputs in) {
  DoctorReport r;
  r.facts = std::move(in.facts);
  r.base = std::move(in.base);
  r.knowledge = std::move(in.knowledge);
  if (r.facts.tegra) jetson_facts(r);
  // Which frameworks: --framework, else each one installed, else torch (resolver/frameworks.hpp).
  auto choice = resolver::choose_frameworks(opt.framework, opt.detect_framework, r.knowledge.get(), r.facts.installed);
  r.framework_from = choice.from;
  if (!choice.note.empty())
    add(r, FindingCode::framework_assumed, Severity::info, choice.note,
        util::msg("to diagnose another framework, name it: --framework jax|tensorflow|paddlepaddle"));
  for (const auto& name : choice.names) {
    FrameworkReport s;
    s.name = name;
    if (r.knowledge) s.fw = r.knowledge->framework(name);
    r.frameworks.push_back(std::move(s));
  }
  // A finding added while checking one framework is about that framework.
  auto about = [&r](const FrameworkReport& s, std::size_t from) {
    for (auto i = from; i < r.findings.size(); ++i) r.findings[i].framework = s.name;
  };

  // Step 1 (after step 2: GPU-related severities depend on the packages).
  for (auto& s : r.frameworks) {
    auto n = r.findings.size();
    check_framework(r, s);
    about(s, n);
  }
  if (std::any_of(r.frameworks.begin(), r.frameworks.end(), [](auto& s) { return main_of(s) != nullptr; })) check_dists(r);
  bool cuda_build = false;
  for (const auto& s : r.frameworks)
    for (const auto& p : s.packages) cuda_build = cuda_build || p.variant.starts_with("cu");
  if (r.facts.gpus.empty()) {
    auto why = r.facts.driver ? util::msg("driver {} is loaded but no GPU is visible", r.facts.driver->version)
                              : util::msg("no NVIDIA GPU and no driver found");
    if (in.cuda_visible_devices) why = util::msg("{} (CUDA_VISIBLE_DEVICES='{}')", why, *in.cuda_visible_devices);
    add(r, FindingCode::no_gpu, r.facts.driver || cuda_build ? Severity::error : Severity::info, why,
        r.facts.driver ? util::msg("check CUDA_VISIBLE_DEVICES, container GPU access (--gpus all) and `nvidia-smi`")
                       : util::msg("to plan for another machine, pass --gpu sm_XX --driver VERSION"));
  } else if (!r.facts.driver) {
    add(r, FindingCode::no_driver, Severity::error, util::msg("GPUs are present but no NVIDIA driver was found"),
        util::msg("install the NVIDIA driver, then check `nvidia-smi`"));
  }
  check_environment(r);
  check_base(r);
  // Step 3 and 4.
  const std::string zstd_driver = r.knowledge ? r.knowledge->min_driver(specs::kZstdMinCuda).value_or("") : "";
  // Each framework's repro in its own interpreter, all at once (torch and jax each spend seconds
  // importing and initialising CUDA); judged in order, so the report reads as if run one by one.
  std::vector<std::future<std::vector<StepOutcome>>> repros(r.frameworks.size());
  for (std::size_t i = 0; i < r.frameworks.size(); ++i)
    if (auto steps = repro_steps(r, r.frameworks[i], opt, in.run_steps))
      repros[i] = std::async(std::launch::async, in.run_steps, std::move(*steps));
  for (std::size_t i = 0; i < r.frameworks.size(); ++i) {
    auto& s = r.frameworks[i];
    auto n = r.findings.size();
    if (repros[i].valid()) judge_repro(r, s, repros[i].get());
    check_matrices(r, s);
    check_kernels(r, s, zstd_driver, opt, in.kernels);
    observe_runs(r, s, in.evidence.get());
    check_back_to_stable(r, s, in.evidence.get(), opt.fix);
    about(s, n);
  }
  check_extensions(r, opt, in.kernels);
  // Errors first, then warnings, then info; stable within a severity.
  std::stable_sort(r.findings.begin(), r.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.severity < b.severity; });
  conclude(r, opt.fix);
  return r;
}

std::string joined_fix(const DoctorReport& r) {
  std::vector<std::string> fixes;
  for (const auto& s : r.frameworks)
    if (!s.fix.empty()) fixes.push_back(s.fix);
  return join(fixes, " && ");
}

std::string command_line(std::vector<std::string> args, const FixArgs& g, bool externally_managed, std::string_view drop) {
  if (externally_managed)
    args.insert(args.end(), {"--venv", ".venv"});
  else if (!g.python.empty())
    args.insert(args.end(), {"--python", g.python});
  for (std::size_t i = 0; i < g.rest.size(); ++i) {
    if (!drop.empty() && g.rest[i] == drop) {
      ++i; // the option's value too
      continue;
    }
    args.push_back(g.rest[i]);
  }
  for (auto& a : args) a = util::shell_quote(a);
  return join(args, " ");
}

std::vector<std::string> reinstall_request(const matrices::Framework& fw, const std::vector<std::string>& installed_names) {
  std::set<std::string> family{specs::normalize_name(fw.main_package)};
  for (const auto& c : fw.companions) family.insert(specs::normalize_name(c));
  std::vector<std::string> out;
  std::set<std::string> named;
  for (const auto& n : installed_names)
    if (family.contains(n) && named.insert(n).second) out.push_back(n);
  if (out.empty()) out.push_back(specs::normalize_name(fw.main_package));
  return out;
}

std::string reinstall_command(const matrices::Framework& fw, const std::vector<std::string>& installed_names, const FixArgs& g,
                              bool externally_managed) {
  std::vector<std::string> args{"envfix", "apply"};
  for (auto& n : reinstall_request(fw, installed_names)) args.push_back(std::move(n));
  if (fw.name != "torch") args.insert(args.end(), {"--framework", fw.name});
  return command_line(std::move(args), g, externally_managed);
}

NearestOffer companion_gap_offer(const resolver::CompanionGap& gap, const resolver::FrameworkRequest& nearest,
                                 std::string_view framework, std::string_view chosen, const FixArgs& g, bool externally_managed,
                                 const util::Message& rest) {
  std::vector<std::string> args{"envfix", "apply"};
  for (const auto& r : nearest.framework) args.push_back(r.to_string());
  for (const auto& r : nearest.others) args.push_back(r.to_string());
  if (framework != "torch") args.insert(args.end(), {"--framework", std::string(framework)});
  args.insert(args.end(), {"--channel", gap.channel});
  NearestOffer o;
  o.command = command_line(std::move(args), g, externally_managed, "--channel");
  const auto lacks = util::msg("{} has no build for {} {}", gap.companion, gap.main, gap.version.to_string());
  o.why = util::msg("{}: the fix installs {} {} without it (an installed {} is removed)", lacks, gap.main, chosen, gap.companion);
  o.hint = util::msg("{}: `{}` installs {} {} without it (an installed {} is removed); to keep {}, stay on a set that has it. "
                     "Else: {}",
                     lacks, o.command, gap.main, chosen, gap.companion, gap.companion, rest);
  return o;
}

} // namespace envfix::diagnosis
