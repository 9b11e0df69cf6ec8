#pragma once
// Reading a wheel's ZIP (ZIP64 included) through libarchive: the member listing from the central
// directory, single members, and streaming passes over ranges of members. Untrusted input: sizes
// are bounded and counted while decompressing; policy (which names are acceptable) lives in staging.
// A pass reads only the bytes of its members (from their local-header offsets in the central
// directory), so memory per pass does not grow with the member count and no pass walks from member 0.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace envfix::wheel {

struct ArchiveEntry {
  enum class Type { file, directory, symlink, hardlink, other };
  std::string name; // member name as stored (UTF-8 when the zip says so)
  Type type = Type::file;
  std::uint64_t size = 0; // declared uncompressed size
  bool size_known = false;
  unsigned mode = 0;       // permission bits (external_attr >> 16), 0 when the zip has none
  std::string link_target; // for symlinks/hardlinks
  std::size_t index = 0;   // position in the archive (local-header order)
};

struct ArchiveLimits {
  std::uint64_t max_total_size = 64ull << 30; // sum of uncompressed sizes
  std::uint64_t max_ratio = 250;              // uncompressed total / archive size (zip bombs)
  std::uint64_t max_entries = 1'000'000;
  std::uint64_t max_member_read = 256ull << 20; // read_member() cap (metadata files)
};

// Receives the bytes of one member, in order. Returning an error aborts the pass.
using DataSink = std::function<Expected<void>(std::string_view chunk)>;
// Called for each member; return a sink to receive its data, or nullopt to skip it.
using EntryVisitor = std::function<Expected<std::optional<DataSink>>(const ArchiveEntry&)>;

class WheelArchive {
public:
  // Lists the members (central directory) and checks the size limits against the declared sizes.
  [[nodiscard]] static Expected<WheelArchive> open(const std::filesystem::path& path, ArchiveLimits limits = {});
  // Same over bytes in memory (the caller keeps them alive); used by the fuzzer and tests.
  [[nodiscard]] static Expected<WheelArchive> open_memory(std::span<const std::uint8_t> bytes, std::string name_for_errors,
                                                          ArchiveLimits limits = {});

  [[nodiscard]] const std::vector<ArchiveEntry>& entries() const { return m_entries; }
  // Member names exactly as the central directory stores them (bytes, in directory order):
  // libarchive rewrites backslashes and hides duplicates, so policy checks use these.
  [[nodiscard]] const std::vector<std::string>& raw_names() const { return m_raw_names; }
  [[nodiscard]] const ArchiveEntry* find(std::string_view name) const;
  [[nodiscard]] const std::string& name() const { return m_name; }
  [[nodiscard]] std::uint64_t archive_size() const { return m_archive_size; }
  [[nodiscard]] std::uint64_t total_size() const { return m_total_size; }

  // The whole content of one member (at most limits.max_member_read bytes); reads only its bytes.
  [[nodiscard]] Expected<std::string> read_member(std::string_view member) const;
  // One pass over the members [begin, end) in archive order, reading only their byte range. The
  // visitor gets the central directory's entry (authoritative type, mode, size); each local header
  // must sit where the directory says and carry the same name. Bytes produced are counted against
  // the declared size of each member and the total limit, whatever the headers claim. Members
  // with a data descriptor (flag bit 3) read back whole, stored ones included: the reader ends a
  // stored member at the first descriptor signature followed by its CRC, and a false match fails
  // the declared-size check. Passes over disjoint ranges may run concurrently (each opens its own
  // reader).
  [[nodiscard]] Expected<void> stream(const EntryVisitor& visit, std::size_t begin = 0,
                                      std::size_t end = static_cast<std::size_t>(-1)) const;

private:
  WheelArchive() = default;
  [[nodiscard]] Expected<void> list();
  std::filesystem::path m_path; // empty for memory archives
  std::span<const std::uint8_t> m_bytes;
  std::string m_name;
  ArchiveLimits m_limits;
  std::uint64_t m_archive_size = 0;
  std::uint64_t m_total_size = 0;
  std::vector<ArchiveEntry> m_entries;
  std::vector<std::string> m_raw_names;
  // Local-header offset of m_entries[i], ascending; one more at the end: the central directory's
  // start. Member i's bytes (header, data, descriptor) lie in [m_offsets[i], m_offsets[i+1]).
  std::vector<std::uint64_t> m_offsets;
};

// The names in a ZIP central directory (ZIP64 aware, bounds-checked), in order.
[[nodiscard]] Expected<std::vector<std::string>>
zip_central_directory_names(std::span<const std::uint8_t> bytes, std::string_view name_for_errors, std::uint64_t max_entries);

} // namespace envfix::wheel
