#pragma once
// Test helper: compare `cuobjdump --list-elf/--list-ptx` output with a KernelSet (docs/kernels.md,
// Cross-check with cuobjdump).
#include <map>
#include <string>
#include <string_view>

#include "wheel/kernel_set.hpp"

namespace envfix::test {

// "ELF file    1: libtorch_cuda.1.sm_75.cubin" / "PTX file 1: x.1.sm_90.ptx" → arch name → count
// (cubins as "sm_75", PTX as "compute_90"; cuobjdump prints PTX targets as sm_XX).
std::map<std::string, std::size_t> cuobjdump_arch_counts(std::string_view listing);

// The same multiset from a KernelSet, restricted to what cuobjdump lists for a linked .so:
// .nv_fatbin entries only, LTO-IR left out, and the `f` suffix dropped from cubins.
std::map<std::string, std::size_t> cuobjdump_view(const wheel::KernelSet& ks);

// "" when equal, else a readable diff ("sm_90: cuobjdump 444, envfix 443").
std::string diff_counts(const std::map<std::string, std::size_t>& cuobjdump, const std::map<std::string, std::size_t>& envfix);

} // namespace envfix::test
