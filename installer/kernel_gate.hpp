#pragma once
// The kernel gate: before anything is removed, the staged binaries of the new set are judged
// against every GPU with the one coverage model (wheel/coverage.hpp). It refuses only what cannot
// run: a package whose binaries hold nothing runnable for a GPU. Partial coverage of a framework
// package is a warning naming the files (and, unless accepted, a reason for apply to look for a
// fully covered candidate), of an extension a warning; in a vendor library (arch-specialised
// modules are normal there) it is information (wheel::read_coverage). What it reads is recorded as
// evidence (wheel/kernel_evidence.hpp).
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "installer/transaction.hpp"
#include "specs/cuda_version.hpp"
#include "specs/gpu_arch.hpp"
#include "util/message.hpp"
#include "wheel/coverage.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::installer {

struct GateGpu {
  std::string name; // "NVIDIA H200"
  specs::ComputeCapability cc;
};

struct GatePackage {
  std::string name; // normalized
  std::string version;
  wheel::BuildKey key; // how its evidence is kept
  // A framework package or an extension: partial coverage is a gap; a vendor library's is normal
  // (wheel::read_coverage).
  wheel::CodeRole role = wheel::CodeRole::library;
  std::string sha256; // of the wheel file: its build record's key in the evidence store
};

struct GatePackageReport {
  GatePackage package;
  std::vector<wheel::ProfiledFile> files; // files with GPU code
  std::vector<std::pair<GateGpu, wheel::PackageCoverage>> per_gpu;
  [[nodiscard]] std::vector<std::string> sass() const;
  [[nodiscard]] std::vector<std::string> ptx() const;
};

// Why the gate stopped a package, as data (apply falls through to the next candidate on it).
struct GateRefusal {
  GatePackage package;
  GateGpu gpu;
  wheel::PackageCoverage coverage;
  bool partial = false;           // refused for partial coverage only (a fully covered candidate may exist)
  std::vector<std::string> holds; // the archs its binaries hold
  [[nodiscard]] util::Message message() const;
};

struct GateOptions {
  std::vector<GateGpu> gpus;
  std::optional<specs::CudaVersion> driver_cuda;
  // Refuse a framework package that is only partly covered, unless its build is listed here.
  bool refuse_partial_framework = false;
  std::set<wheel::BuildKey> accept_partial;
  const wheel::EvidenceStore* evidence = nullptr; // read first, written after; may be null
  unsigned threads = 1;
};

class KernelGate {
public:
  KernelGate(std::vector<GatePackage> packages, GateOptions options)
      : m_packages(std::move(packages)), m_options(std::move(options)) {}

  // The transaction's kernel_check. Fails (ErrorCode::unsatisfiable) on the first refusal; the
  // refusal is kept in refusal().
  [[nodiscard]] Expected<void> operator()(const std::vector<StagedObject>& objects);

  [[nodiscard]] const std::vector<GatePackageReport>& reports() const { return m_reports; }
  [[nodiscard]] const std::optional<GateRefusal>& refusal() const { return m_refusal; }
  [[nodiscard]] const std::vector<util::Message>& warnings() const { return m_warnings; }
  [[nodiscard]] const std::vector<util::Message>& notes() const { return m_notes; } // vendor partial coverage
  [[nodiscard]] std::size_t files_read() const { return m_read; }
  [[nodiscard]] std::size_t files_from_evidence() const { return m_cached; }

private:
  void judge(GatePackageReport& r);
  std::vector<GatePackage> m_packages;
  GateOptions m_options;
  std::vector<GatePackageReport> m_reports;
  std::optional<GateRefusal> m_refusal;
  std::vector<util::Message> m_warnings, m_notes;
  std::size_t m_read = 0, m_cached = 0;
};

// "sm_75 sm_80 … compute_120" (SASS then PTX), "(nothing runnable)" when empty.
[[nodiscard]] std::string describe_archs(const std::vector<std::string>& sass, const std::vector<std::string>& ptx);

} // namespace envfix::installer
