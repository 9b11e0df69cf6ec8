#pragma once
// The GPU kernels inside an installed distribution's shared objects (those listed in its RECORD).
#include <filesystem>
#include <utility>
#include <vector>

#include "probe/host_facts.hpp"
#include "wheel/kernel_set.hpp"

namespace envfix::probe {

struct InstalledKernels {
  std::vector<std::pair<std::filesystem::path, wheel::KernelSet>> files; // only files with GPU code
  std::size_t scanned = 0;                                               // shared objects read
  std::vector<std::string> notes;                                        // unreadable files
};

// Reads every *.so / *.so.N the dist's RECORD lists. A file that cannot be parsed is a note, not
// an error; an error only when RECORD itself is unreadable.
[[nodiscard]] Expected<InstalledKernels> read_installed_kernels(const InstalledDist& dist);

} // namespace envfix::probe
