#pragma once
// envfix.lock (docs/lockfile.md): the committed record of a working set, one target per host
// description.
// Deterministic: the same value always prints to the same bytes (sorted, no timestamps).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"
#include "util/url.hpp"

namespace envfix::lockfile {

struct LockedKernels {
  std::vector<std::string> sass; // sorted unique arch names (sm_90, sm_90a)
  std::vector<std::string> ptx;  // compute_XY
  bool verified = false;         // read from the binary (true) or only claimed by the matrices (false)
  bool operator==(const LockedKernels&) const = default;
};

struct LockedPackage {
  std::string name;    // normalized project name
  std::string version; // full version with local label (2.7.0+cu128)
  std::string filename;
  std::string url;                      // credentials stripped
  std::string sha256;                   // 64 lower-case hex digits
  std::optional<std::uint64_t> size;    // bytes; absent when nobody knows it (never written as 0)
  std::optional<LockedKernels> kernels; // only for packages with GPU binaries
  bool operator==(const LockedPackage&) const = default;
};

struct LockedHost {
  std::vector<std::string> gpus; // compute capabilities as sm names, sorted (sm_86, sm_120)
  std::string driver_min;        // lowest driver the set needs ("570.26"); empty for CPU sets
  std::string python;            // "3.10"
  std::string platform;          // manylinux_2_28_x86_64
  bool operator==(const LockedHost&) const = default;
};

// A distribution the set keeps as installed although the target's index does not serve it (the
// resolver keeps an installed version that satisfies every requirement, resolver/installed.hpp).
// There is no file to lock, so it is recorded with where it came from, never left out silently:
// `apply --locked` requires it installed at this version; the exports name it (docs/lockfile.md).
struct InstalledOnly {
  std::string name; // normalized
  std::string version;
  std::string provenance; // "installed by pip; not served by https://…/simple"
  bool operator==(const InstalledOnly&) const = default;
};

// The machine an apply verified the target on (the guide's "GPU arch - driver - runtime - framework"
// record): written by apply after its smoke test passed, kept by later applies that change nothing.
// Facts, not requirements: apply --locked never checks them.
struct VerifiedOn {
  std::vector<std::string> gpus;  // "NVIDIA H200 (sm_90)"; empty: verified on the CPU
  std::string driver;             // "580.159.04"; empty without a driver
  std::string cuda_runtime;       // "13.0" of the set's nvidia-cuda-runtime wheel; empty for none
  std::string toolkit;            // "nvcc 13.0 (PATH)"; empty when there is no local nvcc
  std::string interpreter;        // "/work/.venv/bin/python 3.12.3"
  std::string environment;        // "container (docker)", "WSL2", ""
  std::vector<std::string> smoke; // the smoke-test steps that passed
  bool operator==(const VerifiedOn&) const = default;
};

struct LockTarget {
  std::string id; // sm_120-cp310-manylinux_2_28_x86_64
  LockedHost host;
  std::string channel;
  std::string index;
  std::string variant;
  std::vector<LockedPackage> packages;       // sorted by name
  std::vector<InstalledOnly> installed_only; // sorted by name
  std::optional<VerifiedOn> verified_on;
  bool operator==(const LockTarget&) const = default;
};

struct LockFile {
  static constexpr int current_version = 1;
  int lock_version = current_version;
  std::string created_by; // "envfix 0.1.0"
  std::string framework;  // empty for plain requirement sets
  std::vector<std::string> request;
  std::vector<LockTarget> targets; // sorted by id
  bool operator==(const LockFile&) const = default;

  // Parse YAML text; `source` names the file in errors (file:line:column).
  [[nodiscard]] static Expected<LockFile> parse(std::string_view text, std::string_view source);
  [[nodiscard]] static Expected<LockFile> read(const std::filesystem::path& path);
  // Canonical YAML (sorts targets and packages first).
  [[nodiscard]] std::string to_yaml() const;
  [[nodiscard]] Expected<void> write(const std::filesystem::path& path) const;

  // Insert or replace the target with the same id.
  void upsert(LockTarget target);
  [[nodiscard]] const LockTarget* find(std::string_view id) const;
};

// The id of a target: GPUs joined by '+', the CPython tag, the platform ("cpu" when there is no GPU).
[[nodiscard]] std::string make_target_id(const LockedHost& host);

// What an earlier lock learned of the same files (same sha256), kept in a target made anew: the size
// of a file whose index gives none, and the kernels read from its binaries (verified: true) where the
// new target has none read in its own run.
void keep_learned(LockTarget& fresh, const LockTarget& old);

// Remove user:password@ from a URL (lockfiles, logs and errors never carry credentials): util's.
using util::strip_credentials;

// The warning for one installed-only entry as a lockfile is written.
[[nodiscard]] util::Message installed_only_warning(const InstalledOnly& p, std::string_view lockfile_path);

// What of `target.installed_only` the environment lacks (`installed`: normalized name → version as
// installed): "typing-extensions 4.15.0 (installed by pip; not served by …): 4.12.2 is installed".
// Empty when every one is there.
[[nodiscard]] std::vector<std::string> unmet_installed_only(const LockTarget& target,
                                                            const std::vector<std::pair<std::string, std::string>>& installed);
// apply --locked's refusal when one is unmet (invalid_input, each unmet one a cause, naming `lockfile_path`).
[[nodiscard]] Expected<void> check_installed_only(const LockTarget& target,
                                                  const std::vector<std::pair<std::string, std::string>>& installed,
                                                  std::string_view lockfile_path);

// The exports copy strings out of a lockfile that someone else may have written: each refuses (an
// error naming the target and the field) a string with a control character (a line break began a
// pip option line of its own: "1.0\n--extra-index-url http://…") and a name or version that is not
// a PEP 508 name or a PEP 440 version.
// PEP 751 pylock.toml for one target.
[[nodiscard]] Expected<std::string> to_pylock_toml(const LockFile& lock, const LockTarget& target);
// pip requirements with --index-url and --hash lines (accepted by pip install --require-hashes -r).
[[nodiscard]] Expected<std::string> to_requirements_txt(const LockFile& lock, const LockTarget& target);
// The file `export --all` writes for a target: pylock.<id>.toml (PEP 751's names) or
// requirements-<id>.txt. The id comes from the lockfile, and one that is not a plain name would choose
// another directory: refused, naming `lockfile_path` (a path separator, "..", a control character, empty).
[[nodiscard]] Expected<std::string> export_file_name(const LockTarget& target, bool pylock, std::string_view lockfile_path);

} // namespace envfix::lockfile
