#pragma once
// Framework-set selection (docs/architecture.md, Choosing the framework set): the one (channel,
// variant) index and main-package build whose kernels cover every GPU, its companions from the same
// index with the coupled version (same build date for nightlies, same variant always), then the
// dependency closure from that index.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "resolver/resolver.hpp"
#include "specs/cuda_version.hpp"
#include "specs/gpu_arch.hpp"
#include "wheel/coverage.hpp"

namespace envfix::resolver {

// One index a framework publishes: e.g. stable/cu128 → https://download.pytorch.org/whl/cu128.
struct FrameworkIndex {
  std::string channel; // stable | test | nightly
  std::string variant; // cu128 | cpu | rocm6.3
  std::optional<specs::CudaVersion> cuda;
  std::string url;
  // Non-empty for an index found on the channel's aggregate page rather than listed by the matrices
  // (resolver/discovery.hpp): the warning a plan from it carries.
  util::Message discovered;
  // The variant's GPU package set (matrices::Variant): the pip extra that selects it ("cuda13" for
  // jax[cuda13], "and-cuda"), its own main package when it differs from the framework's ("paddlepaddle"
  // on cpu), the packages that join the set through that extra (jaxlib, jax-cuda13-plugin, …: same
  // index, same vetoes as companions), and the packages whose binaries hold its GPU kernels (empty:
  // the main package and its companions).
  std::string extra;
  std::string main_package;
  std::vector<std::string> packages;
  std::vector<std::string> kernels;
  std::string ptx_isa; // the PTX ISA of the variant's CUDA ("8.5"); "" when unknown
  // An index envfix adds beside the framework's own (a JetPack index, knowledge_adapter.hpp): one it
  // cannot read is skipped with a warning, where the indexes the user named fail the plan.
  bool supplementary = false;
};

// Kernels read from a build's binaries, and where they were read.
struct BuildFacts {
  std::vector<wheel::ProfiledFile> files;
  std::string source; // "installed in /…/site-packages", "downloaded torch 2.11.0+cu130 (…)"
};

// An announced end of support for old GPUs (matrices::SupportEnd): from `from` on, no build has code
// for compute capabilities below `below`.
struct SupportEndInfo {
  specs::Version from;
  specs::ComputeCapability below;
  std::string variant; // the last variant that had them ("cu126"); may be empty
  std::string source;
};

// What the resolver needs to know about a framework (filled from matrices::Knowledge by the CLI, or
// from fixture data by scenarios).
struct FrameworkSpec {
  std::string name;                    // "torch"
  std::string main_package;            // "torch"
  std::vector<std::string> companions; // default set members after the main package
  std::vector<FrameworkIndex> indexes;
  // Kernel archs in a build; nullopt when the data does not know (→ arch-unverified).
  std::function<std::optional<std::vector<specs::GpuArch>>(const specs::Version&, std::string_view variant)> archs;
  // Whether those archs were confirmed (confidence verified); unset: none are.
  std::function<bool(const specs::Version&, std::string_view variant)> archs_verified;
  // What the binaries of a build already said (read by apply's kernel gate, or from the installed
  // set), by the index's file (its sha256 keys what was read from it), its wheel name and the index
  // variant; nullopt when none was read. Evidence beats the table above.
  std::function<std::optional<BuildFacts>(const index::Candidate&, const specs::WheelFilename&, std::string_view variant)>
      evidence;
  // The companion version coupled to a main version ("0.22.0" for torchvision and torch 2.7.0).
  std::function<std::optional<std::string>(const specs::Version&, std::string_view companion)> companion_version;
  // The first CUDA toolkit whose nvcc has code for a GPU (the source-build recipe's prerequisite).
  std::function<std::optional<specs::CudaVersion>(specs::ComputeCapability)> first_toolkit;
  std::vector<SupportEndInfo> support_ends;
};

// When `version`, chosen for `gpus`, is older than an announced end of support covering one of them,
// the line that says so. `newest`: it is the newest build on the index that covers them (no pin), so
// "torch 2.14.0 is the last release with code for sm_61: …". Empty when no end applies.
[[nodiscard]] util::Message last_release_note(const FrameworkSpec& spec, const specs::Version& version,
                                              const std::vector<specs::ComputeCapability>& gpus, bool newest);

struct HostTarget {
  std::vector<specs::ComputeCapability> gpus; // every GPU must be covered
  std::string driver_version;                 // "" = none/unknown
  // Can this driver run that CUDA (minor-version compatibility)? Unset: every CUDA is allowed.
  std::function<bool(const specs::CudaVersion&)> driver_supports;
  // Can it run that CUDA without minor-version compatibility (the toolkit's own minimum driver)?
  // Unset: same as driver_supports. Variants the driver runs natively are tried first; variants it
  // runs only through minor-version compatibility only when no native variant gives a set.
  std::function<bool(const specs::CudaVersion&)> driver_native;
  // The oldest driver that runs that CUDA, minor-version compatibility counted ("525.60.13" for 12.8):
  // what an error for a driver too old for every variant names. Unset: no number is named.
  std::function<std::optional<std::string>(const specs::CudaVersion&)> driver_floor;
  TargetEnvironment python;
};

// The nearest set a request misses only by a companion (issue 56, item 1): a build of the main
// package that covers the host's GPUs, whose index has no file of a companion the request names
// (companion-missing). api/plan.cpp resolves the request without that companion and, when it
// resolves, offers it: an error's first line names this, never "no build covers".
struct CompanionGap {
  std::string main; // normalized
  specs::Version version;
  std::string channel, variant;
  std::string companion; // normalized: the one its index lacks
};

// A covering build whose set a package the request names beside the framework (an extension such as
// xformers) keeps out: without it the set resolves; with it, no build of it on the index fits
// (xformers 0.0.29.post2 requires torch==2.6.0). No single command fixes that: the error names it,
// with the extension's build for the covering release as the recipe (issue 56, item 2).
struct ExtensionGap {
  std::string main; // normalized
  specs::Version version;
  std::string channel, variant;
  std::string extension;                               // normalized
  std::string conflict;                                // the resolver's own words
  std::optional<specs::Version> wanted = std::nullopt; // the main version its builds pin exactly (torch==2.6.0)
};

struct FrameworkRequest {
  std::vector<specs::Requirement> framework; // main package and companions, with pins
  std::vector<specs::Requirement> others;    // any other packages to resolve with them
  std::string channel = "auto";              // auto = stable, then test, then nightly
  std::string variant;                       // --variant
  bool allow_cpu = false;
  bool allow_unhashed = false;
  CandidateFilter user_filter;                    // the -c constraints and --hash values (resolver/user_limits.hpp); may be empty
  std::vector<Rejection>* rejected_out = nullptr; // when nothing fits: every rejection, for --explain
  std::optional<CompanionGap>* gap_out = nullptr; // when nothing fits: the nearest set, if a companion kept it out
};

struct FrameworkChoice {
  FrameworkIndex index;
  Resolution resolution;
  util::Message why;                   // one or two lines: why this channel/index/variant
  std::vector<util::Message> warnings; // PTX-JIT only, arch-unverified, …
  std::vector<Rejection> rejected;     // over all indexes tried
};

// Provider for an index (owned by the caller; called once per index).
using ProviderFor = std::function<CandidateProvider&(const FrameworkIndex&)>;

// ErrorCode::unsatisfiable when no build covers the GPUs (the message says so, the causes list the
// closest builds and why, the hint offers --allow-cpu and the TORCH_CUDA_ARCH_LIST recipe).
[[nodiscard]] Expected<FrameworkChoice> select_framework_set(const FrameworkSpec& spec, const HostTarget& host,
                                                             const FrameworkRequest& request, const ProviderFor& provider_for);

// "sm_86, sm_120" etc. Coverage of one build for all GPUs: which GPU is not covered, and whether any
// is covered only through PTX JIT.
struct CoverageVerdict {
  std::vector<specs::ComputeCapability> uncovered;
  std::vector<specs::ComputeCapability> ptx_only;
};
[[nodiscard]] CoverageVerdict check_coverage(const std::vector<specs::GpuArch>& archs,
                                             const std::vector<specs::ComputeCapability>& gpus);

} // namespace envfix::resolver

namespace envfix::resolver {

// Every package of the framework's set (main first, then companions), normalized.
[[nodiscard]] std::vector<std::string> framework_family(const FrameworkSpec& spec);
// The family plus every variant's own main package and set packages (paddlepaddle, jaxlib,
// jax-cuda12-plugin, …): what a plan may remove when the new set does not hold it.
[[nodiscard]] std::vector<std::string> framework_packages(const FrameworkSpec& spec);

// The request with the main package pinned to `version`, its other clauses kept (lock's one version for
// every target). A request without a clause for it gets `main==version` first and, when empty, the
// family members in `resolved` (normalized names of the set it resolved to before).
[[nodiscard]] std::vector<std::string> pin_main_request(const FrameworkSpec& spec, const std::vector<std::string>& requests,
                                                        const specs::Version& version, const std::vector<std::string>& resolved);

// Split a request into the framework set and other packages. An empty request means the framework
// packages already installed, else the main package and its companions (docs/architecture.md,
// Choosing the framework set).
[[nodiscard]] FrameworkRequest split_request(const FrameworkSpec& spec, const std::vector<specs::Requirement>& request,
                                             const std::vector<std::string>& installed_names);

// The request without the companion a gap lacks, on the gap's channel: the nearest request, which
// api/plan.cpp resolves before offering it. An empty framework list stands for the default set
// (FrameworkSpec::companions), spelled out here so that the companion can be left out.
[[nodiscard]] FrameworkRequest without_companion(const FrameworkSpec& spec, FrameworkRequest request, const CompanionGap& gap);

} // namespace envfix::resolver
