#pragma once
// One downloadable file offered by an index page (PEP 503 HTML, PEP 691 JSON, find-links folder).
// Both page forms produce identical Candidate values; the resolver decides which one to use.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace envfix::index {

struct Candidate {
  std::string project;  // PEP 503-normalized project name ("torch", "nvidia-cudnn-cu12")
  std::string filename; // as offered, URL-decoded ("torch-2.7.0+cu128-cp310-cp310-linux_x86_64.whl")
  // Absolute URL (http, https or file), fragment removed. May carry user:password for a private
  // mirror: it lives in memory only; use redact_url() before printing, logging or writing it.
  std::string url;
  std::optional<std::string> sha256;          // lower-case hex, from #sha256= or JSON hashes
  std::optional<std::string> requires_python; // raw text, entities decoded; may be empty
  bool yanked = false;
  std::string yanked_reason;
  bool has_metadata = false;                  // PEP 658/714: <url>.metadata exists
  std::optional<std::string> metadata_sha256; // hash of the .metadata file, when the index gives it
  std::optional<std::uint64_t> size;          // PEP 700 JSON "size", or the file size for local files
  std::string index_url;                      // the index (or find-links dir) it came from, redacted
  // Where sha256 and size come from: the index's page, or a lockfile (apply --locked), which a
  // mismatch then blames: the file behind the URL is not the one locked.
  enum class Recorded { by_index, by_lockfile };
  Recorded recorded = Recorded::by_index;

  [[nodiscard]] bool is_wheel() const { return filename.size() > 4 && filename.ends_with(".whl"); }
  [[nodiscard]] std::string metadata_url() const { return url + ".metadata"; }
  bool operator==(const Candidate&) const = default;
};

// "https://user:secret@host/x" -> "https://***@host/x"; other URLs unchanged.
[[nodiscard]] std::string redact_url(std::string_view url);

} // namespace envfix::index
