#include "wheel/wheel_info.hpp"

#include <charconv>

#include <fmt/format.h>

#include "specs/rfc822.hpp"
#include "util/strings.hpp"

namespace envfix::wheel {

namespace {

Error at(std::string_view name, std::size_t line, const util::Message& why) {
  return Error::made(ErrorCode::invalid_input, util::msg("{}:{}: {}", name, line, why));
}

// WHEEL through the one RFC 822 reader (specs/rfc822.hpp); unlike METADATA, WHEEL has no body,
// so a line that is not a header is an error.
Expected<std::vector<specs::Header>> read_wheel_headers(std::string_view text, std::string_view name) {
  auto block = ENVFIX_TRY(specs::read_headers(text, name));
  if (block.ended_at_non_header) {
    std::string_view first = block.body;
    first = first.substr(0, first.find('\n'));
    if (first.ends_with('\r')) first.remove_suffix(1);
    return std::unexpected(at(name, block.body_line, util::msg("expected 'Name: value', found '{}'", first)));
  }
  for (auto& h : block.headers) h.value = specs::unfold(h.value);
  return std::move(block.headers);
}

bool parse_uint(std::string_view s, int& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc{} && p == s.data() + s.size() && v >= 0;
}

} // namespace

Expected<WheelInfo> WheelInfo::parse(std::string_view text, std::string_view name_for_errors) {
  auto headers = ENVFIX_TRY(read_wheel_headers(text, name_for_errors));
  WheelInfo info;
  bool have_version = false;
  for (auto& h : headers) {
    const std::string key = util::lower(h.name);
    if (key == "wheel-version") {
      if (have_version) continue; // duplicates exist in the wild (mkl_fft); the first wins
      have_version = true;
      auto dot = h.value.find('.');
      bool ok = dot != std::string::npos && parse_uint(std::string_view(h.value).substr(0, dot), info.version_major) &&
                parse_uint(std::string_view(h.value).substr(dot + 1), info.version_minor);
      if (!ok)
        return std::unexpected(
            at(name_for_errors, h.line, util::msg("bad Wheel-Version '{}', expected <major>.<minor>", h.value)));
      if (info.version_major > supported_major)
        return std::unexpected(
            at(name_for_errors, h.line,
               util::msg("Wheel-Version {} is not supported (this envfix reads {}.x)", h.value, supported_major))
                .with_hint(util::msg("the wheel was built for a newer wheel format; upgrade envfix or choose another build")));
      if (info.version_major < 1)
        return std::unexpected(at(name_for_errors, h.line, util::msg("Wheel-Version {} predates 1.0", h.value)));
      info.newer_minor = info.version_minor > supported_minor;
    } else if (key == "generator") {
      info.generator = h.value;
    } else if (key == "root-is-purelib") {
      info.root_is_purelib = util::lower(h.value) == "true";
    } else if (key == "tag") {
      auto tags = specs::parse_tag_set(h.value);
      if (!tags)
        return std::unexpected(std::move(tags.error()).context(util::msg("{}:{}: bad Tag line", name_for_errors, h.line)));
      for (auto& t : *tags) info.tags.push_back(std::move(t));
    } else if (key == "build") {
      info.build = h.value;
    }
    info.fields.emplace_back(std::move(h.name), std::move(h.value));
  }
  if (!have_version)
    return std::unexpected(Error::made(ErrorCode::invalid_input, util::msg("{}: no Wheel-Version header", name_for_errors), {},
                                       util::msg("a WHEEL file starts with 'Wheel-Version: 1.0'")));
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
