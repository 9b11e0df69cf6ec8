#include "wheel/wheel_info.hpp"

#include <charconv>

#include <fmt/format.h>

namespace envfix::wheel {

namespace {

struct Header {
  std::string name;
  std::string value;
  std::size_t line = 0;
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

Error at(std::string_view name, std::size_t line, std::string why) {
  return Error{ErrorCode::invalid_input, fmt::format("{}:{}: {}", name, line, why), {}, {}};
}

// RFC 822 style headers; stops at the first blank line. Continuation lines (leading whitespace)
// extend the previous value.
Expected<std::vector<Header>> read_headers(std::string_view text, std::string_view name) {
  std::vector<Header> out;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (trim(line).empty()) break;
    if (line.front() == ' ' || line.front() == '\t') {
      if (out.empty()) return std::unexpected(at(name, line_no, fmt::format("continuation line before any header: '{}'", line)));
      out.back().value += fmt::format(" {}", trim(line));
      continue;
    }
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 || trim(line.substr(0, colon)).size() != colon)
      return std::unexpected(at(name, line_no, fmt::format("expected 'Name: value', found '{}'", line)));
    out.push_back({std::string(line.substr(0, colon)), std::string(trim(line.substr(colon + 1))), line_no});
  }
  return out;
}

bool parse_uint(std::string_view s, int& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc{} && p == s.data() + s.size() && v >= 0;
}

} // namespace

Expected<WheelInfo> WheelInfo::parse(std::string_view text, std::string_view name_for_errors) {
  auto headers = ENVFIX_TRY(read_headers(text, name_for_errors));
  WheelInfo info;
  bool have_version = false;
  for (auto& h : headers) {
    const std::string key = lower(h.name);
    if (key == "wheel-version") {
      if (have_version) continue; // duplicates exist in the wild (mkl_fft); the first wins
      have_version = true;
      auto dot = h.value.find('.');
      bool ok = dot != std::string::npos && parse_uint(std::string_view(h.value).substr(0, dot), info.version_major) &&
                parse_uint(std::string_view(h.value).substr(dot + 1), info.version_minor);
      if (!ok)
        return std::unexpected(at(name_for_errors, h.line, fmt::format("bad Wheel-Version '{}', expected <major>.<minor>", h.value)));
      if (info.version_major > supported_major)
        return std::unexpected(
            at(name_for_errors, h.line,
               fmt::format("Wheel-Version {} is not supported (this envfix reads {}.x)", h.value, supported_major))
                .with_hint("the wheel was built for a newer wheel format; upgrade envfix or choose another build"));
      if (info.version_major < 1)
        return std::unexpected(at(name_for_errors, h.line, fmt::format("Wheel-Version {} predates 1.0", h.value)));
      info.newer_minor = info.version_minor > supported_minor;
    } else if (key == "generator") {
      info.generator = h.value;
    } else if (key == "root-is-purelib") {
      info.root_is_purelib = lower(h.value) == "true";
    } else if (key == "tag") {
      auto tags = specs::parse_tag_set(h.value);
      if (!tags) return std::unexpected(std::move(tags.error()).context(fmt::format("{}:{}: bad Tag line", name_for_errors, h.line)));
      for (auto& t : *tags) info.tags.push_back(std::move(t));
    } else if (key == "build") {
      info.build = h.value;
    }
    info.fields.emplace_back(std::move(h.name), std::move(h.value));
  }
  if (!have_version)
    return std::unexpected(Error{ErrorCode::invalid_input, fmt::format("{}: no Wheel-Version header", name_for_errors), {},
                                 "a WHEEL file starts with 'Wheel-Version: 1.0'"});
  return info;
}

std::string WheelInfo::to_string() const {
  std::string out = fmt::format("Wheel-Version: {}.{}\n", version_major, version_minor);
  if (!generator.empty()) out += fmt::format("Generator: {}\n", generator);
  out += fmt::format("Root-Is-Purelib: {}\n", root_is_purelib ? "true" : "false");
  for (const auto& t : tags) out += fmt::format("Tag: {}\n", t.to_string());
  if (!build.empty()) out += fmt::format("Build: {}\n", build);
  return out;
}

} // namespace envfix::wheel
