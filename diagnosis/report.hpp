#pragma once
// What doctor reports (docs/json.md "doctor"): the facts it read, per framework its packages, their
// kernels and the repro, the GPU extensions, the findings, the verdict and the fix; and everything
// diagnose() reads (diagnosis/diagnose.hpp). Pure data: cli/ renders it.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "diagnosis/finding.hpp"
#include "matrices/knowledge.hpp"
#include "probe/base_env.hpp"
#include "probe/host_facts.hpp"
#include "probe/installed_kernels.hpp"
#include "util/error.hpp"
#include "util/message.hpp"
#include "wheel/coverage.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::diagnosis {

struct GpuCoverage {
  std::string arch;                // "sm_90"
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
  const probe::InstalledDist* dist = nullptr; // into DoctorReport::facts.installed
  std::string role;                           // main | companion | variant (in a variant's set: jaxlib, jax-cuda13-plugin)
  std::string variant;                        // cu128, cuda13, cpu, … or "" when unknown
  // local-label | conda-meta | gpu-package (a package only one variant has: jax-cuda13-plugin) |
  // no-gpu-package (none of the GPU variants' packages is installed) | extra (the variant's extra,
  // and-cuda, is installed) | requires-dist | pypi-default | ""
  std::string variant_from;
  std::string source; // index URL dir from direct_url.json, else "installer:<name>"
  std::optional<KernelSummary> kernels;
  bool kernel_package = false; // its binaries carry the variant's kernels (Framework::kernel_packages)
};

struct Repro {
  std::string step_a = "skipped", step_b = "skipped";
  std::string error;
  util::Message note;
};

// One framework's part of the report (steps 2 and 3, and its fix).
struct FrameworkReport {
  const matrices::Framework* fw = nullptr; // null: not in the matrices
  std::string name;                        // as asked (--framework), detected, or assumed
  std::string variant;                     // the installed variant (cuda13, cu128, cpu); "" unknown
  std::vector<PackageReport> packages;
  Repro repro;
  std::string fix;                      // the `envfix apply …` that fixes this framework; "" when a reinstall would not
  std::vector<std::string> fix_request; // the packages `fix` names, as the planner takes them
  FixProof proof = FixProof::not_tried; // api/doctor.cpp runs the planner on the fix before it is shown
  util::Message proof_detail;           // what the planner said: the plan, the nearest request's why, or its error
};

// A distribution outside every framework's set and its dependencies whose binaries hold GPU code
// (xformers, flash-attn, bitsandbytes, a custom CUDA op), found by reading them, not from a list,
// and judged per device with the same coverage model as the framework's.
struct ExtensionReport {
  const probe::InstalledDist* dist = nullptr;      // into DoctorReport::facts.installed
  std::string framework;                           // the framework whose main package it requires; "" none
  std::string requirement;                         // that Requires-Dist ("torch==2.4.0"); "" none
  std::optional<specs::Version> framework_version; // the installed main package's
  bool requirement_met = true;
  KernelSummary kernels;
  util::Message recipe; // how to build it from source for the GPUs it does not cover; "" when it covers them
};

// A Jetson as doctor shows it: the device tree and L4T facts, and what jetson.yaml says of that release.
struct JetsonView {
  std::string model, soc, l4t, kernel, power_mode; // as read (probe::TegraInfo)
  std::string jetpack;                             // "6.2"; "" when the L4T release is not in the matrices
  std::optional<specs::CudaVersion> cuda;          // the CUDA of that L4T release
  std::map<std::string, std::string> indexes;      // framework → the JetPack index with the SoC's arch
};

struct DoctorReport {
  probe::HostFacts facts;
  std::optional<JetsonView> jetson;
  probe::BaseEnv base; // the framework's CUDA runtime, the local nvcc, pip, WSL2 and containers
  std::unique_ptr<matrices::Knowledge> knowledge;
  std::string framework_from;              // option (--framework) | installed | assumed (none installed)
  std::vector<FrameworkReport> frameworks; // at least one; each installed one without --framework
  std::vector<ExtensionReport> extensions; // installed GPU extensions outside the frameworks' sets
  std::vector<Finding> findings;           // errors first, then warnings, then info
  Verdict verdict = Verdict::healthy;
  std::string fix; // the frameworks' fixes joined by " && "; "" when a reinstall would not fix it
  [[nodiscard]] const FrameworkReport* framework(std::string_view name) const {
    for (const auto& s : frameworks)
      if (s.name == name) return &s;
    return nullptr;
  }
};

// One repro step's outcome: passed, or the error line (the exception, "timed out after N s", …).
struct StepOutcome {
  bool ok = false;
  std::string error;
};

// Everything diagnose() reads. doctor() fills it from the machine; a scenario fills it from YAML.
struct DoctorInputs {
  probe::HostFacts facts;                         // planned GPUs and driver already laid over (api/host.hpp)
  probe::BaseEnv base;                            // probe::probe_base_env(facts) on a machine
  std::unique_ptr<matrices::Knowledge> knowledge; // null: the matrices did not load
  std::optional<std::string> cuda_visible_devices;
  // The kernels of an installed dist (null: none are read, as with --no-kernels).
  std::function<Expected<probe::InstalledKernels>(const probe::InstalledDist&)> kernels;
  // Runs the repro's steps (step A, step B) in order in the target interpreter, up to the first
  // that fails: one outcome each, fewer when one failed (null: the repro is not run). Called once per
  // framework, the frameworks' calls at the same time from their own threads.
  std::function<std::vector<StepOutcome>(const std::vector<std::string>& codes)> run_steps;
  // Builds read before (null: none); a stable build they show not fully covering a GPU is never suggested.
  std::shared_ptr<const wheel::EvidenceStore> evidence;
};

} // namespace envfix::diagnosis
