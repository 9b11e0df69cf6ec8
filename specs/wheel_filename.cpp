#include "specs/wheel_filename.hpp"

#include <charconv>

#include <fmt/format.h>

#include "specs/name.hpp"

namespace envfix::specs {

namespace {

Error filename_error(std::string_view filename, std::size_t pos, const util::Message& why) {
  return Error::made(ErrorCode::invalid_input, util::msg("invalid wheel filename '{}': {}\n  {}\n  {}", filename, why, filename,
                                                         fmt::format("{:>{}}", "^", pos + 1)));
}

std::vector<std::string> split_dot_fields(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '.') {
      out.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// packaging: `^[\w\d._]*$` (Unicode \w, so non-ASCII bytes pass) and no "__".
bool name_char_ok(char c) {
  auto u = static_cast<unsigned char>(c);
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || u >= 0x80;
}

} // namespace

Expected<WheelFilename> WheelFilename::parse(std::string_view filename) {
  if (!filename.ends_with(".whl"))
    return std::unexpected(
        filename_error(filename, filename.size() >= 4 ? filename.size() - 4 : 0, util::msg("the extension must be '.whl'")));
  std::string_view stem = filename.substr(0, filename.size() - 4);
  std::vector<std::size_t> dashes;
  for (std::size_t i = 0; i < stem.size(); ++i)
    if (stem[i] == '-') dashes.push_back(i);
  if (dashes.size() != 4 && dashes.size() != 5)
    return std::unexpected(
        Error(filename_error(filename, dashes.empty() ? 0 : dashes.back(),
                             util::msg("expected 4 or 5 '-' separators, found {}", dashes.size())))
            .with_hint(
                util::msg("wheel names are {{name}}-{{version}}(-{{build}})?-{{python}}-{{abi}}-{{platform}}.whl with '-' in the "
                          "name and version escaped as '_'")));
  // Field boundaries: [start, end) of each part.
  auto part = [&](std::size_t k) {
    std::size_t begin = k == 0 ? 0 : dashes[k - 1] + 1;
    std::size_t end = k < dashes.size() ? dashes[k] : stem.size();
    return std::pair{begin, stem.substr(begin, end - begin)};
  };
  WheelFilename w;
  auto [name_pos, name] = part(0);
  if (name.empty()) return std::unexpected(filename_error(filename, 0, util::msg("empty project name")));
  for (std::size_t i = 0; i < name.size(); ++i)
    if (!name_char_ok(name[i]))
      return std::unexpected(filename_error(filename, name_pos + i, util::msg("invalid character in the project name")));
  if (auto dd = name.find("__"); dd != std::string_view::npos)
    return std::unexpected(filename_error(filename, name_pos + dd, util::msg("'__' in the project name")));
  w.name = std::string(name);

  auto [ver_pos, ver_text] = part(1);
  auto version = Version::parse(ver_text);
  if (!version)
    return std::unexpected(
        std::move(version.error())
            .context(filename_error(filename, ver_pos, util::msg("invalid version '{}'", ver_text)).said_message()));
  w.version = std::move(*version);

  std::size_t next = 2;
  if (dashes.size() == 5) {
    auto [build_pos, build_text] = part(2);
    std::size_t digits = 0;
    while (digits < build_text.size() && build_text[digits] >= '0' && build_text[digits] <= '9') ++digits;
    std::uint64_t number = 0;
    auto [p, ec] = std::from_chars(build_text.data(), build_text.data() + digits, number);
    if (digits == 0 || ec != std::errc{})
      return std::unexpected(filename_error(filename, build_pos, util::msg("the build tag must start with a number")));
    w.build = std::pair{number, std::string(build_text.substr(digits))};
    next = 3;
  }
  std::vector<std::string>* fields[3] = {&w.python_tags, &w.abi_tags, &w.platform_tags};
  for (std::size_t f = 0; f < 3; ++f) {
    auto [pos, text] = part(next + f);
    *fields[f] = split_dot_fields(text);
    std::size_t p = pos;
    for (const auto& item : *fields[f]) {
      if (item.empty()) return std::unexpected(filename_error(filename, p, util::msg("empty compatibility tag")));
      for (std::size_t i = 0; i < item.size(); ++i) {
        char c = item[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        if (!ok) return std::unexpected(filename_error(filename, p + i, util::msg("invalid character in a compatibility tag")));
      }
      p += item.size() + 1;
    }
  }
  return w;
}

std::vector<Tag> WheelFilename::tags() const {
  std::string text =
      fmt::format("{}-{}-{}", fmt::join(python_tags, "."), fmt::join(abi_tags, "."), fmt::join(platform_tags, "."));
  auto tags = parse_tag_set(text);
  return tags ? std::move(*tags) : std::vector<Tag>{}; // fields were validated by parse()
}

std::string WheelFilename::normalized_name() const { return normalize_name(name); }

std::string WheelFilename::to_string() const {
  std::string out = fmt::format("{}-{}", name, version.to_string());
  if (build) out += fmt::format("-{}{}", build->first, build->second);
  out += fmt::format("-{}-{}-{}.whl", fmt::join(python_tags, "."), fmt::join(abi_tags, "."), fmt::join(platform_tags, "."));
  return out;
}

} // namespace envfix::specs
