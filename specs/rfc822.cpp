#include "specs/rfc822.hpp"

#include <fmt/format.h>

#include "util/strings.hpp"

namespace envfix::specs {
namespace {

std::string_view rtrim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// RFC 5322 field name: printable ASCII except ':' and space.
bool is_ftext(char c) { return c >= 33 && c <= 126 && c != ':'; }

} // namespace

bool header_name_equals(std::string_view a, std::string_view b) { return util::iequals(a, b); }

const Header* HeaderBlock::find(std::string_view name) const {
  for (const auto& h : headers)
    if (header_name_equals(h.name, name)) return &h;
  return nullptr;
}

Expected<HeaderBlock> read_headers(std::string_view text, std::string_view name_for_errors) {
  HeaderBlock out;
  std::size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::size_t next = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view line = text.substr(pos, (nl == std::string_view::npos ? text.size() : nl) - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++line_no;
    if (line.empty()) { // end of headers
      out.body = std::string(text.substr(next));
      if (!out.body.empty()) out.body_line = line_no + 1;
      break;
    }
    if (line.front() == ' ' || line.front() == '\t') {
      if (out.headers.empty())
        return fail(ErrorCode::invalid_input, "{}{}: continuation line '{}' before any header",
                    name_for_errors.empty() ? "line " : fmt::format("{}:", name_for_errors), line_no, line);
      out.headers.back().value += '\n';
      out.headers.back().value += line;
      pos = next;
      continue;
    }
    std::size_t colon = 0;
    while (colon < line.size() && is_ftext(line[colon])) ++colon;
    if (colon == 0 || colon >= line.size() || line[colon] != ':') { // not a header: the body starts here
      out.body = std::string(text.substr(pos));
      out.body_line = line_no;
      out.ended_at_non_header = true;
      break;
    }
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    out.headers.push_back(Header{std::string(line.substr(0, colon)), std::string(value), line_no});
    pos = next;
  }
  for (auto& h : out.headers) h.value = std::string(rtrim(h.value));
  return out;
}

std::string unfold(std::string_view v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\n' || v[i] == '\r') {
      while (i + 1 < v.size() && (v[i + 1] == ' ' || v[i + 1] == '\t' || v[i + 1] == '\n' || v[i + 1] == '\r')) ++i;
      out += ' ';
    } else {
      out += v[i];
    }
  }
  return out;
}

} // namespace envfix::specs
