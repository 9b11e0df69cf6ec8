#pragma once
// RFC 822 headers, the form of METADATA, PKG-INFO and WHEEL (core metadata spec,
// https://packaging.python.org/en/latest/specifications/core-metadata/, which defers to Python's
// email.parser with the compat32 policy; the binary distribution format spec reads WHEEL the same way).
// The one reader of such headers: specs/metadata.cpp and wheel/ both use it.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.hpp"

namespace envfix::specs {

struct Header {
  std::string name;     // as written
  std::string value;    // leading blanks and trailing whitespace trimmed; continuation lines kept as "\n<line>"
  std::size_t line = 0; // 1-based line of the header
};

struct HeaderBlock {
  std::vector<Header> headers;
  std::string body;          // everything after the empty line, or from the first line that is not a header
  std::size_t body_line = 0; // 1-based line where the body starts (0: no body)
  // The headers ended at a line that is not a header (body_line), not at an empty line.
  bool ended_at_non_header = false;

  // The first value of a header (case-insensitive name), or nullptr.
  [[nodiscard]] const Header* find(std::string_view name) const;
};

// Headers end at the first empty line or at a line that is not a header (the body starts there).
// A continuation line (leading space or tab) extends the previous header; one before any header is
// an error naming its line ("WHEEL:3: …" given `name_for_errors`, else "line 3: …"). Accepts \n and \r\n.
[[nodiscard]] Expected<HeaderBlock> read_headers(std::string_view text, std::string_view name_for_errors = {});

// A folded value as one line: a line break plus the indentation after it becomes one space.
[[nodiscard]] std::string unfold(std::string_view value);

// ASCII case-insensitive equality of header names.
[[nodiscard]] bool header_name_equals(std::string_view a, std::string_view b);

} // namespace envfix::specs
