#pragma once
// PEP 440 versions (the version specifiers spec, "Public version identifiers" and "Local version
// identifiers"): permissive parse, canonical to_string, packaging's ordering.
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/error.hpp"

namespace envfix::specs {

enum class PreKind { a = 0, b = 1, rc = 2 };

class Version {
public:
  Version() = default; // "0"

  // Permissive parse (case-insensitive, leading 'v', separators, implicit post `1.0-1`, local
  // `+cu128`). Errors name the text and the column: `invalid version '1.0a-b': unexpected '-' at column 5`.
  [[nodiscard]] static Expected<Version> parse(std::string_view text);

  // Canonical form, e.g. "1!2.8.0rc1.post2.dev20250501+cu128". Parses back equal.
  std::string to_string() const;

  std::uint64_t epoch() const { return m_epoch; }
  const std::vector<std::uint64_t>& release() const { return m_release; }
  const std::optional<std::pair<PreKind, std::uint64_t>>& pre() const { return m_pre; }
  std::optional<std::uint64_t> post() const { return m_post; }
  std::optional<std::uint64_t> dev() const { return m_dev; }
  // Local label segments, lowercase, separators normalized to '.', numeric segments without
  // leading zeros ("cu128", "rocm6.3"); "" when none.
  std::string local() const;
  const std::vector<std::string>& local_segments() const { return m_local; }

  bool is_prerelease() const { return m_pre.has_value() || m_dev.has_value(); } // dev counts
  bool is_devrelease() const { return m_dev.has_value(); }
  bool is_postrelease() const { return m_post.has_value(); }
  bool has_local() const { return !m_local.empty(); }

  Version public_version() const; // local label dropped
  Version base_version() const;   // epoch + release only

  friend std::strong_ordering operator<=>(const Version& a, const Version& b);
  friend bool operator==(const Version& a, const Version& b) { return (a <=> b) == 0; }

private:
  std::uint64_t m_epoch = 0;
  std::vector<std::uint64_t> m_release{0};
  std::optional<std::pair<PreKind, std::uint64_t>> m_pre;
  std::optional<std::uint64_t> m_post;
  std::optional<std::uint64_t> m_dev;
  std::vector<std::string> m_local;
};

} // namespace envfix::specs
