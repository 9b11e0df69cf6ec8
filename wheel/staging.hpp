#pragma once
// Staged extraction of a wheel (PEP 427, the binary distribution format spec:
// https://packaging.python.org/en/latest/specifications/binary-distribution-format/; RECORD hashes
// verified as its ".dist-info directory" section requires): every check that can refuse a hostile
// or broken wheel runs before a byte is written, then members are extracted into a private staging
// directory while their sha256 is computed and compared with RECORD. Nothing outside the staging directory
// is touched; installer/ later moves the staged files into place.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"
#include "wheel/wheel_archive.hpp"

namespace envfix::wheel {

struct StagedFile {
  std::string member; // archive path: "pkg/__init__.py", "demo-1.0.data/scripts/demo"
  // Absolute path of the extracted bytes. A plain string: a std::filesystem::path also keeps a
  // list of its components, several times the path's size, for each of 12,000 files of a torch wheel.
  std::string staged;
  std::string hash; // "sha256=<urlsafe b64, no padding>" of the bytes written
  std::uint64_t size = 0;
  bool executable = false; // the zip mode had an execute bit
  // Unpacked cache only (installer/unpacked_cache.hpp): the inode and change time the file had
  // when its content was last known good, so that linking it can tell whether it moved since.
  std::uint64_t checked_ino = 0;
  std::int64_t checked_ctime = 0;
};

struct StagedWheel {
  std::filesystem::path wheel;    // the .whl it came from
  std::uint64_t archive_size = 0; // bytes of the .whl
  std::filesystem::path tree;     // staging root of the extracted members
  std::string name;               // METADATA Name, as written
  std::string version;            // METADATA Version, as written
  std::string dist_info;          // "demo_pkg-1.0.dist-info"
  std::string data_dir;           // "demo_pkg-1.0.data" (whether or not present)
  bool root_is_purelib = true;
  std::string wheel_version;     // "1.0"
  std::string metadata;          // METADATA text
  std::string entry_points;      // entry_points.txt text, "" when absent
  std::vector<StagedFile> files; // every regular member, RECORD and its signatures excluded
  std::vector<std::string> warnings;

  // Staged shared objects (".so", ".so.N"): what the kernel check inspects before install.
  [[nodiscard]] std::vector<const StagedFile*> shared_objects() const;
};

struct StagingOptions {
  ArchiveLimits limits;
  // The spec: fail when a member is missing from RECORD or hashes differently. false: record a
  // warning and heal (uv's behaviour), still writing a RECORD that matches the files.
  bool strict_record = true;
  // Test hook called at "unpack" (before the first write) and "hash" (after each member's hash
  // check); an error aborts staging like a real failure.
  std::function<Expected<void>(std::string_view step)> fault;
  // Readers used to unpack one wheel (stage_wheel splits large wheels into this many groups).
  unsigned threads = 1;
};

// "sha256=<b64>" of bytes / of a file.
[[nodiscard]] std::string record_hash(std::string_view bytes);
[[nodiscard]] Expected<std::string> record_hash_file(const std::filesystem::path& path);

// Checks a member name (never outside its destination, which pip refuses too): UTF-8, relative,
// '/' separators, no '.', '..' or empty components.
[[nodiscard]] Expected<void> check_member_name(std::string_view name);

// Staging in three steps, so a caller can spread the extraction of many wheels over one set of
// threads: prepare (validate, create the directories), extract every group (distinct groups may
// run concurrently), finish (check every hash and size against RECORD). Until finish() succeeds
// the destructor removes the staging directory.
class WheelStager {
public:
  [[nodiscard]] static Expected<WheelStager> prepare(const std::filesystem::path& wheel, const std::filesystem::path& staging_dir,
                                                     const StagingOptions& options = {});
  WheelStager(WheelStager&&) noexcept;
  WheelStager& operator=(WheelStager&&) noexcept;
  ~WheelStager();

  [[nodiscard]] std::uint64_t payload_bytes() const; // declared uncompressed total
  [[nodiscard]] const std::string& filename() const;
  // Splits the members into at most max_groups contiguous ranges of about equal size, none
  // smaller than min_group_bytes (a single group when the wheel is small). Returns the count.
  std::size_t split(std::size_t max_groups, std::uint64_t min_group_bytes);
  [[nodiscard]] Expected<void> extract(std::size_t group);
  [[nodiscard]] Expected<StagedWheel> finish();

private:
  struct Impl;
  explicit WheelStager(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
};

// Validates the whole wheel, then extracts it into `staging_dir` (created; must not exist or be
// empty). On error the staging directory is removed again.
[[nodiscard]] Expected<StagedWheel> stage_wheel(const std::filesystem::path& wheel, const std::filesystem::path& staging_dir,
                                                const StagingOptions& options = {});

} // namespace envfix::wheel
