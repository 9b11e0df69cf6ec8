#pragma once
// Evidence beats tables (docs/architecture.md, Choosing the framework set): what binaries said about
// a build, before the matrices' claims. The selector reads it through FrameworkSpec::evidence.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "probe/host_facts.hpp"
#include "resolver/framework_selector.hpp"
#include "specs/requirement.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::resolver {

// The framework's whole set (framework_packages) and every variant's kernel packages: what the
// selector chooses as a whole, never kept because it is installed (the installed jax-cuda13-pjrt may
// be the build whose binaries lack the GPU's code), and whose installed binaries can hold the
// framework's kernels (jax's plugin and pjrt carry them, jax itself none).
[[nodiscard]] std::vector<std::string> whole_set(const FrameworkSpec& spec);

// Sets spec.evidence: the installed set's own framework binaries first (read once per file, kept by
// RECORD hash; only on a host with GPUs, for the set's packages and every one the request names, a
// GPU extension such as xformers), then the build the kernel gate read from this very file before,
// by its sha256 (wheel/kernel_evidence.hpp): a record of another file with the same name and version
// rules nothing out. Returns the names whose installed binaries were read.
[[nodiscard]] std::set<std::string> attach_evidence(FrameworkSpec& spec, const std::vector<probe::InstalledDist>& installed,
                                                    bool has_gpus, std::shared_ptr<wheel::EvidenceStore> store,
                                                    const std::vector<specs::Requirement>& request, unsigned threads);

} // namespace envfix::resolver
