#pragma once
// What a lock target records of one resolution for one host (docs/lockfile.md, "Fields of a
// target"): `envfix lock` writes one per target, apply one for the host it committed on.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fetch/fetch.hpp"
#include "installer/kernel_gate.hpp"
#include "lockfile/lockfile.hpp"
#include "matrices/knowledge.hpp"
#include "probe/host_facts.hpp"
#include "resolver/framework_selector.hpp"
#include "resolver/resolver.hpp"
#include "util/error.hpp"

namespace envfix::fetch {

// The resolution and the host it was made for (api/lock.cpp gathers them from a plan).
struct TargetInputs {
  const resolver::Resolution* resolution = nullptr;
  const matrices::Knowledge* knowledge = nullptr;            // the driver floor and claimed kernels; may be null
  const resolver::FrameworkSpec* spec = nullptr;             // framework mode only
  const resolver::FrameworkIndex* framework_index = nullptr; // framework mode only
  std::set<specs::ComputeCapability> gpus;
  std::string python_mm;                                        // "3.11"
  std::string platform_tag;                                     // --platform as given, "" when probed
  std::string arch;                                             // the interpreter's machine, for the set's platform tag
  std::string platform;                                         // the matrices' platform name
  std::string driver;                                           // the host's driver, for the floor the set runs by
  const std::vector<probe::InstalledDist>* installed = nullptr; // where a kept installed pin came from
  std::string channel, variant, index;                          // the plan's
};

// The host part: GPUs as sorted sm names, python X.Y, the platform tag the set needs (--platform when
// given, else the most demanding manylinux tag among the wheels, else linux_ARCH), driver-min from the
// matrices for the chosen CUDA variant on this driver ("" for plain and CPU sets).
[[nodiscard]] lockfile::LockedHost locked_host(const TargetInputs& in);

// What the matrices claim for the main package of a framework set (verified: false). Never what this
// machine's cache has read: a lock is the same bytes for the same index whatever the cache holds;
// `verified: true` comes only from binaries an apply read in its own run, or from an earlier lock of
// the same file (lockfile::keep_learned).
[[nodiscard]] std::map<std::string, lockfile::LockedKernels> claimed_kernels(const TargetInputs& in);

// What the binaries the gate just read hold, for the lockfile (verified: true).
[[nodiscard]] std::map<std::string, lockfile::LockedKernels> kernels_read(const installer::KernelGate& gate);

// The target. `kernels` by normalized name; `local` gives the sha256 and size of downloaded files
// whose index published none. A pin kept as installed, not on the index, is recorded with its
// provenance. Fails naming a pin without a sha256.
[[nodiscard]] Expected<lockfile::LockTarget> lock_target(const TargetInputs& in,
                                                         const std::map<std::string, lockfile::LockedKernels>& kernels,
                                                         const std::map<std::string, LocalFile>& local = {});

} // namespace envfix::fetch
