#pragma once
// The GPU kernels inside an installed distribution's shared objects (those listed in its RECORD),
// as kernel profiles (wheel/coverage.hpp). A file whose RECORD hash and size match a profile in the
// evidence store is not read again.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "probe/host_facts.hpp"
#include "wheel/coverage.hpp"
#include "wheel/kernel_evidence.hpp"

namespace envfix::probe {

struct InstalledKernels {
  std::vector<wheel::ProfiledFile> files; // only files with GPU code; path as RECORD gives it
  std::size_t scanned = 0;                // shared objects considered
  std::size_t from_evidence = 0;          // of those, profiles taken from the evidence store
  std::vector<util::Message> notes;       // unreadable files
};

// Reads every *.so / *.so.N the dist's RECORD lists. A file that cannot be parsed is a note, not
// an error; an error only when RECORD itself is unreadable. `store` may be null.
[[nodiscard]] Expected<InstalledKernels>
read_installed_kernels(const InstalledDist& dist, const wheel::EvidenceStore* store = nullptr, unsigned threads = 1);

// The evidence key of an installed build: its name, version, local label as variant, WHEEL's platforms.
[[nodiscard]] wheel::BuildKey installed_build_key(const InstalledDist& dist);

// The sha256 of the dist-info's RECORD, which names these exact files; nullopt when it is unreadable.
[[nodiscard]] std::optional<std::string> record_sha256(const InstalledDist& dist);

// What a real run of the repro on `gpu` saw this installed build do (wheel::RunObservation), stamped
// now; nullopt when its RECORD cannot be read (no key for its files).
[[nodiscard]] std::optional<wheel::RunObservation> run_observation(const InstalledDist& dist, const GpuInfo& gpu, bool ran,
                                                                   std::string step, std::string error, std::string by);

} // namespace envfix::probe
