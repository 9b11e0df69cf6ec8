#pragma once
// FrameworkSpec from the matrices: the (channel, variant) indexes a framework publishes, the kernel
// archs of each build and the companion coupling.
#include <string_view>

#include "matrices/knowledge.hpp"
#include "probe/host_facts.hpp"
#include "resolver/discovery.hpp"
#include "resolver/framework_selector.hpp"

namespace envfix::resolver {

// `knowledge` must outlive the returned spec (its callbacks refer to it). `platform` as in the
// matrices ("linux_x86_64"); `mirror` replaces the official base URL when not empty.
[[nodiscard]] Expected<FrameworkSpec> framework_spec_from(const matrices::Knowledge& knowledge, std::string_view framework,
                                                          std::string_view mirror = {},
                                                          std::string_view platform = "linux_x86_64");

// The JetPack index an L4T release names for a framework (matrices `l4t` rows, jetson.yaml), as a
// stable index of variant "jetpack<JetPack version>" with the release's CUDA; nullopt when the row
// names none. PyTorch's aarch64 wheels lack Orin's exact arch (docs/kernels.md, the Tegra rule);
// the JetPack index's builds are made for the SoC. The matrices hold no arch rows for it, so its
// builds are arch-unverified and the kernel check after download decides; its `discovered` text is
// the warning a plan from it carries.
[[nodiscard]] std::optional<FrameworkIndex> jetpack_index(const matrices::Knowledge& knowledge, std::string_view framework,
                                                          const matrices::L4tRelease& release);

// On a Jetson whose L4T row names a JetPack index for the framework: that index too, after the
// framework's own (the selector prefers their builds at the same version and CUDA), so that a Thor
// takes PyTorch's aarch64 build and an Orin, which those lack, the JetPack one (jetson.yaml).
void add_jetpack_index(FrameworkSpec& spec, const matrices::Knowledge& knowledge, std::string_view framework,
                       const probe::HostFacts& facts);

// A Jetson (probe::TegraInfo in `facts`): its integrated GPU from the device tree when neither NVML
// nor libcuda answered, and the CUDA its driver runs from the L4T release (matrices/data/jetson.yaml):
// on a Jetson the driver is part of L4T, so the desktop driver floors do not say it.
void complete_tegra(const matrices::Knowledge& knowledge, probe::HostFacts& facts);

// The host as the selector sees it: GPUs, driver, interpreter, and which CUDA the driver runs (the
// matrices' driver floors; on a Jetson, its L4T release's CUDA and older). `knowledge` must outlive it.
[[nodiscard]] HostTarget host_target(const probe::HostFacts& facts, const TargetEnvironment& python,
                                     const matrices::Knowledge& knowledge);

// The aggregate index of every channel whose template ends in {variant} ("{mirror}/nightly/{variant}"
// → "{mirror}/nightly"), for discover_indexes(). `knowledge` must outlive the result.
[[nodiscard]] std::vector<DiscoverySource> discovery_sources(const matrices::Knowledge& knowledge, std::string_view framework,
                                                             std::string_view mirror = {});
// A variant name read with the matrices: a declared variant no release row of the channel lists, or
// one understood from its name (cu136 → CUDA 13.6), with its driver floor from cuda.yaml or, when the
// toolkit is unknown too, the major's minor-version-compatibility floor. `knowledge` must outlive it.
[[nodiscard]] DescribeVariant variant_describer(const matrices::Knowledge& knowledge, std::string_view framework);

} // namespace envfix::resolver
