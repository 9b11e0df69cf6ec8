#pragma once
// `envfix inspect FILE...` as values (cli/command_inspect.cpp renders them): the GPU code each file
// holds, read by wheel/kernel_set.hpp, and per planned GPU the coverage wheel/coverage.hpp judges.
// The GPUs are the planned ones every command takes (--gpu or ENVFIX_GPU; names through the matrices).
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "api/options.hpp"
#include "specs/gpu_arch.hpp"
#include "util/error.hpp"
#include "wheel/coverage.hpp"
#include "wheel/kernel_set.hpp"

namespace envfix::api {

// The values cli/ renders, by the names it calls them.
using wheel::ContainerCounts;
using wheel::FileCoverage;
using wheel::KernelSet;
using wheel::Verdict;

struct InspectedGpu {
  specs::ComputeCapability cc;
  FileCoverage coverage;
};
// The containers of one ELF section ("(raw)" for a file that is a fatbin or cubin itself).
struct SectionSummary {
  std::size_t containers = 0, entries = 0;
  std::map<std::string, std::size_t> archs; // entries per arch: what a cuobjdump listing can be compared with
};
struct InspectedFile {
  std::string path;
  Expected<KernelSet> kernels;
  double read_ms = 0;
  std::vector<InspectedGpu> gpus; // one per GPU asked; none when the file holds no GPU code
  std::map<std::string, SectionSummary> sections;
};
struct InspectReport {
  std::vector<specs::ComputeCapability> gpus; // asked, deduplicated, in order
  std::vector<InspectedFile> files;
};

// Fails only on a GPU that names no arch; a file that cannot be read is reported in its entry.
[[nodiscard]] Expected<InspectReport> inspect(const Options& o, const std::vector<std::string>& files);

} // namespace envfix::api
