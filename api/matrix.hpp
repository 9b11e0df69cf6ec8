#pragma once
// `envfix matrix` answers as values (cli/command_matrix.cpp renders them as text and JSON): per GPU
// and framework, the builds the matrices say run there and the newest stable ones; per framework,
// the builds the evidence store learned from binaries on this machine, compared with the matrices'
// rows (what the binaries say outranks the table: docs/architecture.md, Kernel coverage).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "matrices/answers.hpp"
#include "matrices/knowledge.hpp"
#include "resolver/learned.hpp"
#include "specs/gpu_arch.hpp"
#include "specs/version.hpp"
#include "wheel/coverage.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::api {

// The knowledge's own answers (matrices/answers.hpp), by the names cli/ calls them.
using matrices::arch_names;
using matrices::builds_for_gpu;
using matrices::builds_of;
using matrices::GpuBuild;
using matrices::GpuBuilds;
using matrices::matrix_platform;
using matrices::NewestStable;
using matrices::rows_newest_first;
// What a GPU is, what a framework and one of its releases are (matrices/answers.hpp).
using matrices::answer_gpu;
using matrices::answer_release;
using matrices::framework_named;
using matrices::GpuAnswer;
using matrices::PlatformAnswer;
using matrices::ReleaseAnswer;
using matrices::VariantAnswer;
// The coverage verdict's name (wheel/coverage.hpp).
using wheel::to_string;

// The knowledge `envfix matrix` reads: the embedded matrices, or `matrices_dir` / ENVFIX_MATRICES.
[[nodiscard]] Expected<matrices::Knowledge> matrix_knowledge(const std::string& matrices_dir);

// What the evidence store learned, compared with the matrices' rows (resolver/learned.hpp).
using resolver::LearnedBuild;
using resolver::RowComparison;

// Every build the evidence store under `cache_dir` (empty: the default cache) holds for the
// framework's packages (main package, companions, each variant's kernel packages) and `version`
// when given, sorted by key; none when there is no store.
[[nodiscard]] std::vector<LearnedBuild> learned_builds(const matrices::Knowledge& k, const matrices::Framework& f,
                                                       const std::string& cache_dir, const std::optional<specs::Version>& version,
                                                       const std::vector<specs::ComputeCapability>& gpus);

} // namespace envfix::api
