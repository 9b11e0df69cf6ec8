#include "installer/kernel_gate.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "util/strings.hpp"
#include "wheel/kernel_set.hpp"

namespace envfix::installer {

namespace {

std::vector<std::string> names_of(const std::vector<wheel::ProfiledFile>& files, specs::GpuArch::Kind kind) {
  std::vector<std::string> out;
  for (const auto& a : wheel::archs_of(files))
    if (a.kind == kind) out.push_back(a.to_string());
  return out;
}

std::string label(const GatePackage& p) { return fmt::format("{} {}", p.name, p.version); }

} // namespace

std::string describe_archs(const std::vector<std::string>& sass, const std::vector<std::string>& ptx) {
  auto all = sass;
  all.insert(all.end(), ptx.begin(), ptx.end());
  return all.empty() ? "(nothing runnable)" : util::join(all, " ");
}

std::vector<std::string> GatePackageReport::sass() const { return names_of(files, specs::GpuArch::Kind::sass); }
std::vector<std::string> GatePackageReport::ptx() const { return names_of(files, specs::GpuArch::Kind::ptx); }

namespace {
// "NVIDIA H200 (sm_90)"; a planned GPU is named by its arch already ("planned sm_90").
std::string gpu_text(const GateGpu& g) {
  const auto sm = g.cc.sm_name();
  return g.name.find(sm) != std::string::npos ? g.name : fmt::format("{} ({})", g.name, sm);
}
} // namespace

util::Message GateRefusal::message() const {
  if (partial)
    return util::msg("{}: {} of its {} GPU modules have no code for {}: {}", label(package),
                     coverage.total() - coverage.runnable(), coverage.total(), gpu_text(gpu),
                     util::join(coverage.none_files.empty() ? coverage.partial_files : coverage.none_files, ", "));
  if (coverage.files == 1)
    return util::msg("{}: none of its {} GPU modules (1 file) has code that runs on {}", label(package), coverage.total(),
                     gpu_text(gpu));
  return util::msg("{}: none of its {} GPU modules ({} files) has code that runs on {}", label(package), coverage.total(),
                   coverage.files, gpu_text(gpu));
}

Expected<void> KernelGate::operator()(const std::vector<StagedObject>& objects) {
  // Reading is the slow part (hundreds of MB of shared objects): all files at once; a file already
  // read once (same RECORD hash) comes from the evidence store.
  std::vector<wheel::ProfileSource> sources;
  for (const auto& o : objects) sources.push_back({o.path, o.hash});
  auto profiles = wheel::read_profiles(sources, m_options.evidence, m_options.threads);

  m_reports.clear();
  for (const auto& p : m_packages) m_reports.push_back({p, {}, {}});
  for (std::size_t i = 0; i < objects.size(); ++i) {
    const auto& o = objects[i];
    auto& p = profiles[i].profile;
    const std::string pkg = o.wheel < m_packages.size() ? label(m_packages[o.wheel]) : "?";
    if (!p) return std::unexpected(std::move(p.error()).context(util::msg("{}: reading the kernels of {}", pkg, o.member)));
    ++(profiles[i].from_store ? m_cached : m_read);
    if (!p->empty() && o.wheel < m_reports.size()) m_reports[o.wheel].files.push_back({o.member, std::move(*p)});
  }
  for (auto& r : m_reports) {
    std::sort(r.files.begin(), r.files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    judge(r);
    // What the binaries said is kept whatever the outcome: a refused build is the most useful fact.
    // Kept by the sha256 of the file read, so that it speaks for that file only (wheel/kernel_evidence.hpp).
    if (m_options.evidence && !r.package.key.project.empty() && !r.package.sha256.empty())
      (void)m_options.evidence->put_build(
          {r.package.key, fmt::format("downloaded {}", r.package.key.to_string()), r.files, r.package.sha256});
  }
  if (m_refusal) {
    Error e{ErrorCode::unsatisfiable};
    e.say(m_refusal->message());
    e.add_cause(util::msg("its binaries hold: {}", describe_archs(m_refusal->holds, {})));
    e.advise(util::msg("another build is needed for this GPU"));
    return std::unexpected(std::move(e));
  }
  return {};
}

void KernelGate::judge(GatePackageReport& r) {
  if (r.files.empty()) return;
  const auto& pkg = r.package;
  for (const auto& gpu : m_options.gpus) {
    auto pc = wheel::package_coverage(r.files, gpu.cc);
    const std::string where = gpu_text(gpu);
    auto refuse = [&](bool partial) {
      if (m_refusal) return;
      auto holds = r.sass();
      auto ptx = r.ptx();
      holds.insert(holds.end(), ptx.begin(), ptx.end());
      m_refusal = GateRefusal{pkg, gpu, pc, partial, holds};
    };
    const auto reading = wheel::read_coverage(pc, pkg.role);
    if (reading == wheel::Reading::not_covered)
      refuse(false);
    else if (reading == wheel::Reading::gap || reading == wheel::Reading::specialised) {
      auto files = util::join(pc.none_files.empty() ? pc.partial_files : pc.none_files, ", ");
      auto text = util::msg("{}: {} of {} GPU modules have no code for {} ({})", label(pkg), pc.total() - pc.runnable(),
                            pc.total(), where, files);
      if (reading == wheel::Reading::specialised)
        m_notes.push_back(util::msg("{}; normal for a vendor library (arch-specialised modules)", text));
      else if (pkg.role == wheel::CodeRole::framework && m_options.refuse_partial_framework &&
               !m_options.accept_partial.contains(pkg.key))
        refuse(true);
      else
        m_warnings.push_back(util::msg("{} — a small test may pass and the full app fail", text));
    } else if (reading == wheel::Reading::jit_only) {
      m_warnings.push_back(util::msg("{} runs on {} only by PTX JIT compilation (slow first start)", label(pkg), where));
    }
    r.per_gpu.emplace_back(gpu, std::move(pc));
  }
  if (wheel::zstd_unloadable(r.files, m_options.driver_cuda))
    m_warnings.push_back(util::msg("{} has ZSTD-compressed kernels, which need a driver for CUDA >= {}", label(pkg),
                                   specs::kZstdMinCuda.to_string()));
}

} // namespace envfix::installer
