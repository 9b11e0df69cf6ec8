#pragma once
// What the evidence store learned from binaries of a framework's builds (wheel/kernel_evidence.hpp),
// compared with the matrices' rows for the same builds: what the binaries say outranks the table
// (docs/architecture.md, Kernel coverage). `envfix matrix` shows it (api/matrix.hpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "matrices/knowledge.hpp"
#include "specs/gpu_arch.hpp"
#include "specs/version.hpp"
#include "wheel/coverage.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::resolver {

// A learned build against the matrices' row for the same build (only the main package's archs are
// in the table).
struct RowComparison {
  enum class State { not_applicable, not_listed, no_arch_data, compared };
  State state = State::not_applicable; // not_applicable: a companion, or a build without a variant
  std::string row_label, where;        // where: ArchBuild::where ("" when the row lists no platform)
  matrices::Confidence confidence = matrices::Confidence::unverified;
  std::vector<std::string> table_sass, table_ptx;
  std::vector<std::string> table_only, binary_only; // SASS then PTX archs one side lists and the other lacks
  [[nodiscard]] bool agrees() const { return table_only.empty() && binary_only.empty(); }
};
struct LearnedBuild {
  wheel::BuildEvidence evidence;
  std::vector<std::string> sass, ptx; // over its files, in arch order
  std::uint64_t containers = 0;
  std::vector<wheel::PackageCoverage> coverage; // one per GPU asked, in order
  RowComparison row;
};
// Every build `store` holds for the framework's packages (main package, companions, each variant's
// kernel packages) and `version` when given, sorted by key, each with its coverage of `gpus` in order.
[[nodiscard]] std::vector<LearnedBuild> learned_builds(const matrices::Knowledge& k, const matrices::Framework& f,
                                                       const wheel::EvidenceStore& store,
                                                       const std::optional<specs::Version>& version,
                                                       const std::vector<specs::ComputeCapability>& gpus);

} // namespace envfix::resolver
