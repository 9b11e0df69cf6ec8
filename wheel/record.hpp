#pragma once
// The RECORD file of a wheel or an installed distribution (PEP 427, binary distribution format spec
// ".dist-info directory"; PEP 376/627, recording installed packages spec "The RECORD file"): a CSV of
// `path,hash,size` rows read with Python csv rules (quoted fields, doubled quotes, LF or CRLF).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace envfix::wheel {

struct RecordEntry {
  std::string path;      // relative to the directory containing .dist-info; may start with ../
  std::string hash_algo; // "sha256", or "" when the row has no hash (RECORD itself, .pyc)
  std::string hash_b64;  // urlsafe base64 of the digest, no padding
  std::optional<std::uint64_t> size;

  // "sha256=<b64>" or "".
  [[nodiscard]] std::string hash_field() const;
  // True when `content` has this entry's size and sha256 (false for other algorithms or no hash).
  [[nodiscard]] bool matches(std::string_view content) const;
  // An entry for `content` at `path` with its sha256 and size.
  [[nodiscard]] static RecordEntry for_content(std::string path, std::string_view content);
  bool operator==(const RecordEntry&) const = default;
};

// Where a RECORD comes from: a wheel's has three fields a row; an installed one (read by doctor and
// uninstall) may omit the trailing empty fields, as some installers write it.
enum class RecordSource { wheel, installed };

struct Record {
  std::vector<RecordEntry> entries;

  // Errors name `name_for_errors` and the 1-based line of the offending row.
  [[nodiscard]] static Expected<Record> parse(std::string_view csv_text, std::string_view name_for_errors,
                                              RecordSource source = RecordSource::wheel);
  // CSV as pip writes it: minimal quoting, CRLF line endings, rows in the stored order.
  [[nodiscard]] std::string to_string() const;
  [[nodiscard]] const RecordEntry* find(std::string_view path) const;
};

// Is an installed distribution the build a wheel holds? Every file the wheel's RECORD hashes (its
// `.dist-info/` and `.data/` folders aside: installers write those, or move them elsewhere) is
// installed at the same path with the same sha256. A build is its files (issue 56): name and
// version alone never decide; a wheel that hashes no file is no evidence either way (false).
[[nodiscard]] bool same_build(const Record& installed, const Record& wheel);

} // namespace envfix::wheel
