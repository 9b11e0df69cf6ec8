#pragma once
// Evidence beats tables (docs/architecture.md, Choosing the framework set): what binaries said about
// a build, before the matrices' claims. The selector reads it through FrameworkSpec::evidence.
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "probe/host_facts.hpp"
#include "resolver/framework_selector.hpp"
#include "resolver/resolver.hpp"
#include "specs/requirement.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::resolver {

// The framework's whole set (framework_packages) and every variant's kernel packages: what the
// selector chooses as a whole, never kept because it is installed (the installed jax-cuda13-pjrt may
// be the build whose binaries lack the GPU's code), and whose installed binaries can hold the
// framework's kernels (jax's plugin and pjrt carry them, jax itself none).
[[nodiscard]] std::vector<std::string> whole_set(const FrameworkSpec& spec);

// A wheel's RECORD (index::IndexClient::fetch_record); unset or an error: unknown.
using RecordReader = std::function<Expected<std::string>(const index::Candidate&)>;

// What attach_evidence learned of the installed builds it read.
struct InstalledBuilds {
  std::set<std::string> read; // names whose installed binaries were read
  // Those whose binaries leave one of the host's GPUs without full coverage.
  std::set<std::string> short_of_gpus;
  // Is `file` the installed build of its name? Its RECORD against the installed one
  // (wheel::same_build), asked once per file; false when either cannot be read.
  std::function<bool(const index::Candidate&)> same_as_installed;
  // A pin at the installed version replaces the installed build (PlanInputs::replaces_installed)
  // when that build falls short of a GPU and the pin's file is another build: the index's file,
  // never judged by the installed one's name and version (issue 56, item 3).
  [[nodiscard]] bool replaces(const Pin& pin) const;
};

// Sets spec.evidence: the installed set's own framework binaries first (read once per file, kept by
// RECORD hash; only on a host with GPUs, for the set's packages and every one the request names, a
// GPU extension such as xformers), but only for the very file that was installed (its RECORD, read
// through `wheel_record`, lists the same files with the same hashes); then the build the kernel gate
// read from this very file before, by its sha256 (wheel/kernel_evidence.hpp): a record of another
// file with the same name and version rules nothing out.
[[nodiscard]] InstalledBuilds attach_evidence(FrameworkSpec& spec, const std::vector<probe::InstalledDist>& installed,
                                              const std::vector<specs::ComputeCapability>& gpus,
                                              std::shared_ptr<wheel::EvidenceStore> store,
                                              const std::vector<specs::Requirement>& request, unsigned threads,
                                              RecordReader wheel_record = {});

} // namespace envfix::resolver
