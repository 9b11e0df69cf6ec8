#pragma once
// Read `<name>.dist-info/METADATA` (or another member of the dist-info folder) out of a wheel (a zip) through a random-access
// reader: the same code serves HTTP range reads (pip's "lazy wheel", when there is no PEP 658 metadata file) and local files.
// Bounds-checked, untrusted input.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace envfix::index {

// Returns exactly `length` bytes at `offset`, or an error.
using RangeReader = std::function<Expected<std::string>(std::uint64_t offset, std::uint64_t length)>;

struct ZipMetadataStats {
  int reads = 0; // reader calls
  std::uint64_t bytes_read = 0;
};

// `tail_hint`: bytes to read from the end in the first request (the central directory of most
// wheels fits in it; larger ones take a second read).
[[nodiscard]] Expected<std::string> read_wheel_metadata(std::uint64_t file_size, const RangeReader& read,
                                                        std::string_view name_for_errors, ZipMetadataStats* stats = nullptr,
                                                        std::uint64_t tail_hint = 64 * 1024);

// The same for another member of the wheel's one top-level `*.dist-info/` folder: "RECORD" (which
// files, with which sha256: what a build is, index/index_client.hpp fetch_record).
[[nodiscard]] Expected<std::string> read_wheel_dist_info(std::uint64_t file_size, const RangeReader& read,
                                                         std::string_view member, std::string_view name_for_errors,
                                                         ZipMetadataStats* stats = nullptr, std::uint64_t tail_hint = 64 * 1024);

} // namespace envfix::index
