#pragma once
// Which frameworks of the matrices a Python environment holds, and which variant of each: the
// installed dists (names, local labels, the extras their Requires-Dist asks for) read against each
// variant's package set (matrices/knowledge.hpp, Variant::main_package/packages/kernels). doctor
// reports every framework found; plan and apply default to the first.
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "matrices/knowledge.hpp"
#include "probe/host_facts.hpp"
#include "specs/marker.hpp"
#include "specs/requirement.hpp"
#include "util/error.hpp"
#include "util/message.hpp"

namespace envfix::resolver {

// The framework `verify` checks: choose_frameworks' first, installed in the target; `main_local` is
// its main package's local label (the variant, "cu128"). Not installed: not_found naming `python`,
// with the install command as its hint.
struct InstalledFramework {
  const matrices::Framework* framework = nullptr;
  std::string main_local;
  util::Message note; // choose_frameworks' note
};
[[nodiscard]] Expected<InstalledFramework> installed_framework(const std::string& asked, bool detect,
                                                               const matrices::Knowledge& k,
                                                               const std::vector<probe::InstalledDist>& installed,
                                                               const std::string& python);

// The frameworks whose main package (any variant's: paddlepaddle-gpu or paddlepaddle) is installed,
// in the matrices' order.
[[nodiscard]] std::vector<const matrices::Framework*> installed_frameworks(const matrices::Knowledge& k,
                                                                           const std::vector<probe::InstalledDist>& installed);

// The framework(s) to act on.
struct FrameworkTargets {
  std::vector<std::string> names; // never empty, except from "none"
  std::string from;               // option (--framework) | request | installed | assumed | none
  util::Message note;             // for `assumed` and for several installed where one is used; else ""
};
// `asked` when !detect; else the installed frameworks (`asked`, the default torch, first when it is
// one of them); else `asked`, saying so.
[[nodiscard]] FrameworkTargets choose_frameworks(const std::string& asked, bool detect, const matrices::Knowledge* k,
                                                 const std::vector<probe::InstalledDist>& installed);

// The frameworks whose main package (any variant's: paddlepaddle-gpu) or companion (torchvision,
// jaxlib) a request names, in the request's order.
[[nodiscard]] std::vector<const matrices::Framework*> requested_frameworks(const matrices::Knowledge& k,
                                                                           const std::vector<specs::Requirement>& request);

// The framework plan, apply and lock act on (README.md, Frameworks): `asked` when !detect (--framework);
// else the one framework the request names ('jax[cuda13]' → jax), an invalid_input error asking for
// --framework when it names several; else, for a request naming none (numpy), no framework at all
// (names empty, from "none": the request alone is resolved, pip-like, and the installed framework is
// kept as any installed package is); else, for an empty request, choose_frameworks().
[[nodiscard]] Expected<FrameworkTargets> choose_plan_framework(const std::string& asked, bool detect,
                                                               const matrices::Knowledge* k,
                                                               const std::vector<probe::InstalledDist>& installed,
                                                               const std::vector<specs::Requirement>& request);

// The role of a package (normalized name) in a framework: "main" (a variant's main package),
// "companion", "variant" (in a variant's package or kernel set: jaxlib, jax-cuda13-plugin), or "".
[[nodiscard]] std::string package_role(const matrices::Framework& fw, std::string_view normalized);

// The variant a package marks, when exactly one variant's set holds it and it is not the framework's
// main package: jax-cuda13-plugin → cuda13, paddlepaddle → cpu.
[[nodiscard]] std::optional<std::string> variant_marked_by(const matrices::Framework& fw, std::string_view normalized);

// The cpu variant when no marker of a GPU variant is installed and every GPU variant has one (jax
// without any jax-cudaNN-plugin or -pjrt is a CPU-only jax); nullopt otherwise.
[[nodiscard]] std::optional<std::string> variant_by_absence(const matrices::Framework& fw,
                                                            const std::set<std::string>& installed_names);

// The packages whose absence makes variant_by_absence() say cpu ("jax-cuda12-plugin, …").
[[nodiscard]] std::vector<std::string> gpu_markers(const matrices::Framework& fw);

// What `dist[extra]` asks for beyond `dist`: Requires-Dist lines whose marker holds only with the extra.
[[nodiscard]] std::vector<specs::Requirement> extra_requirements(const probe::InstalledDist& d, const std::string& extra,
                                                                 const specs::MarkerEnvironment& env);

// The CUDA compiler wheels (nvidia-cuda-nvcc: ptxas; nvidia-nvvm) of a GPU extra: XLA finds a
// ptxas elsewhere too (the H200's jax runs without them: tests/fixtures/gpu-h200/jax-0.11.2).
[[nodiscard]] bool is_cuda_compiler_wheel(std::string_view normalized);

// The requirements of `main[extra]`, followed through the installed dists' own extras and the
// requirements of the dists so reached (jax[cuda13] → jax-cuda13-plugin[with-cuda] → nvidia-*, and
// jax-cuda13-plugin → jax-cuda13-pjrt), that no installed dist provides.
[[nodiscard]] std::vector<specs::Requirement> missing_for_extra(const probe::InstalledDist& main, const std::string& extra,
                                                                const std::vector<probe::InstalledDist>& installed,
                                                                const specs::MarkerEnvironment& env);

} // namespace envfix::resolver
