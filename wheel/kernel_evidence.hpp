#pragma once
// Kernel facts read from binaries, kept so that later runs (plan, lock, doctor, matrix) use what
// the binaries said before any table (docs/architecture.md, "Kernel coverage"): by file hash (the
// RECORD hash of an installed or staged file, so a file once read is not read again) and by build:
// the sha256 of the wheel file read (issue 42: a name/version key let another file's binaries rule out
// a good build, and `lock` write verified for a file never read), or, for an installed build, which
// has no wheel file, its key (project, version, variant, platform), for doctor and `envfix matrix` only.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "specs/gpu_arch.hpp"
#include "specs/wheel_filename.hpp"
#include "util/error.hpp"
#include "wheel/coverage.hpp"

namespace envfix::wheel {

struct BuildKey {
  std::string project;                         // normalized name
  std::string version;                         // as in the wheel, local label included ("2.11.0+cu130")
  std::string variant;                         // the index's variant ("cu130"), or "" when unknown
  std::string platform;                        // the wheel's platform tags joined with '.', "manylinux_2_28_x86_64"
  [[nodiscard]] std::string to_string() const; // "torch 2.11.0+cu130 (cu130, manylinux_2_28_x86_64)"
  auto operator<=>(const BuildKey&) const = default;
};

// Do two keys name the same wheel (project, version, platform)? The variant is the index's, and one
// file may be listed on several (jax-cuda13-pjrt names its variant in its project name).
[[nodiscard]] inline bool same_wheel(const BuildKey& a, const BuildKey& b) {
  return a.project == b.project && a.version == b.version && a.platform == b.platform;
}
// The key of a wheel offered by an index of `variant`.
[[nodiscard]] BuildKey build_key(const specs::WheelFilename& wf, std::string_view variant);
// The platform part of a key: the tags joined with '.' ("manylinux_2_27_x86_64.manylinux_2_28_x86_64").
[[nodiscard]] std::string platform_key(const std::vector<std::string>& platform_tags);

struct BuildEvidence {
  BuildKey key;
  std::string source;              // "downloaded torch-2.11.0+cu130-….whl" | "installed in /…/site-packages"
  std::vector<ProfiledFile> files; // files with GPU code, by path inside the package
  std::string sha256;              // of the wheel file whose binaries these are; "" for an installed build
};

// What a real run on one device saw an installed build do: its kernels ran (the repro's step B
// passed) or the driver found "no kernel image" for the device. NVIDIA documents no binary
// compatibility on Tegra, yet one public report (bitsandbytes#1939) saw an sm_80 cubin run on an
// Orin: such a run is recorded and shown beside the rule's verdict, never in its place
// (docs/kernels.md, "Runs-on rules"). Keyed by the build, its RECORD (so another build of the same
// version is not meant) and the device's compute capability and kind.
struct RunObservation {
  BuildKey key;
  std::string record_sha256;   // of the dist-info's RECORD: these exact files
  specs::ComputeCapability cc; // the device's, with its integrated flag
  std::string device;          // "NVIDIA Jetson AGX Orin"
  bool ran = false;            // false: "no kernel image is available"
  std::string step;            // "step B"
  std::string error;           // the exception line when it did not run
  std::string when;            // UTC, "2026-12-05T13:20:00Z"
  std::string by;              // "envfix doctor" | "envfix verify"
};

// Does the run contradict the rule's verdict for that device? It ran where the rule finds nothing
// runnable, or found no kernel image where the rule finds everything runnable (`partial` can be both).
[[nodiscard]] inline bool contradicts(const RunObservation& o, Verdict rule) {
  return o.ran ? rule == Verdict::none : rule == Verdict::full;
}

// The store's directory under the cache: v2 keys downloaded builds by their file's sha256.
inline constexpr const char* evidence_dir_name = "evidence-v2";

// The store before issue 42, <cache>/evidence-v1: files/ keyed as v2's are (the file's RECORD
// hash), builds/ keyed by (project, version, variant, platform), which let another file's binaries
// rule out a good build of the same version.
inline constexpr const char* evidence_v1_dir_name = "evidence-v1";

struct EvidenceMigration {
  std::size_t files_kept = 0;     // file entries that parsed, checked, and were imported into v2
  std::size_t files_dropped = 0;  // entries that did not parse or did not name their own hash
  std::size_t builds_dropped = 0; // name-keyed build records: never imported (a build's verdict is its file's)
  [[nodiscard]] std::string to_string() const;
};

// Moves <cache_dir>/evidence-v1 into <cache_dir>/evidence-v2 once: file entries are read through the
// cache's trust check and a checked parse, and imported unsigned (hints: a file is read before they
// would decide) where v2 has none; build records are dropped;
// the v1 directory is then removed. nullopt when there is no v1 store; an error when it cannot be
// removed (the next run tries again, nothing imported twice matters: imports never overwrite).
[[nodiscard]] Expected<std::optional<EvidenceMigration>> migrate_evidence_v1(const std::filesystem::path& cache_dir);

// A build record as stored (JSON text), checked: nullopt for anything but a well-formed record.
[[nodiscard]] std::optional<BuildEvidence> parse_build_record(std::string_view text);

// <cache>/evidence-v2: files/<sha256 of the file hash>.json, builds/<wheel sha256>.json,
// installed/<sha256 of the key>.json, observations/<sha256 of key, RECORD and device>.json. Entries are named by a hash, never by
// a name that came from outside; each is read back only when this user's alone (util/cache_trust.hpp) and names its own key.
//
// A file record decides a file's kernels (the kernel gate, doctor) without the file being read, so it
// is bound to this user on this machine: it carries an HMAC under `secret` (util::local_secret) of the
// file's hash and the profile. A record without it, or with another's, is a hint only: the file is
// read and the record replaced. So a record planted in the cache, or restored from another machine's
// cache, installs nothing (issue 60, item 5); whoever can read the secret can still forge one
// (docs/reliability.md §6). With an empty secret no file record decides.
class EvidenceStore {
public:
  EvidenceStore(std::filesystem::path dir, std::string secret) : m_dir(std::move(dir)), m_secret(std::move(secret)) {}
  [[nodiscard]] const std::filesystem::path& dir() const { return m_dir; }
  // Can its records decide (a secret to sign and check them with)?
  [[nodiscard]] bool signs() const { return !m_secret.empty(); }

  // The profile of the file with this hash, when its record is signed with this store's secret.
  [[nodiscard]] std::optional<KernelProfile> file(std::string_view file_hash) const;
  // Is there a record for this hash at all, signed or not?
  [[nodiscard]] bool has_file(std::string_view file_hash) const;
  // Written signed (unsigned with an empty secret: a hint for no one).
  [[nodiscard]] Expected<void> put_file(std::string_view file_hash, const KernelProfile& p) const;
  // The record of the wheel file with this sha256 (64 hex digits), when it names that same sha256.
  [[nodiscard]] std::optional<BuildEvidence> build(std::string_view wheel_sha256) const;
  // Stored by e.sha256 when set, else (an installed build) by its key.
  [[nodiscard]] Expected<void> put_build(const BuildEvidence& e) const;
  // Every build recorded, downloaded and installed, sorted by key (for `envfix matrix` and doctor).
  [[nodiscard]] std::vector<BuildEvidence> builds() const;
  // One record per build, RECORD and device: a later run replaces an earlier one.
  [[nodiscard]] Expected<void> put_observation(const RunObservation& o) const;
  // The runs recorded for these files (key and RECORD), on any device, sorted by device.
  [[nodiscard]] std::vector<RunObservation> observations(const BuildKey& key, std::string_view record_sha256) const;

private:
  std::filesystem::path m_dir;
  std::string m_secret;
};

// The store under a cache directory (<cache>/evidence-v2), signed with util::local_secret(), an older
// store in it migrated first, once per process and directory (migrate_evidence_v1), and what that did
// said through util::cache_notice.
[[nodiscard]] EvidenceStore open_evidence_store(const std::filesystem::path& cache_dir);

// One file whose kernels are wanted, and the hash its content is known by ("" when none is).
struct ProfileSource {
  std::string path;
  std::string hash; // RECORD hash: the evidence store's key for the file
};

struct ReadProfile {
  Expected<KernelProfile> profile;
  bool from_store = false; // taken from the evidence store, not read
};

// The kernel profile of each file, in order: a file whose hash the store knows is not read again;
// the others are read in parallel, each reader keeping about one window of its file resident (128 MiB
// in all, whatever the cores), and stored by hash. `store` may be null.
[[nodiscard]] std::vector<ReadProfile> read_profiles(const std::vector<ProfileSource>& files, const EvidenceStore* store,
                                                     unsigned threads);

} // namespace envfix::wheel
