#include "specs/metadata.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "specs/name.hpp"

namespace envfix::specs {
namespace {

using Field = Header;

bool iequals(std::string_view a, std::string_view b) { return header_name_equals(a, b); }

std::string_view trim_body_end(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

Expected<std::pair<std::vector<Field>, std::string>> parse_headers(std::string_view text) {
  auto block = ENVFIX_TRY(read_headers(text));
  return std::pair{std::move(block.headers), std::move(block.body)};
}

} // namespace

Expected<std::vector<std::pair<std::string, std::string>>> parse_rfc822(std::string_view text) {
  auto [fields, body] = ENVFIX_TRY(parse_headers(text));
  std::vector<std::pair<std::string, std::string>> out;
  bool has_description = false;
  for (auto& f : fields) {
    has_description = has_description || iequals(f.name, "Description");
    out.emplace_back(std::move(f.name), std::move(f.value));
  }
  if (!has_description && !trim_body_end(body).empty()) out.emplace_back("Description", std::move(body));
  return out;
}

Expected<CoreMetadata> CoreMetadata::parse(std::string_view text) {
  auto parsed = parse_headers(text);
  if (!parsed) return std::unexpected(std::move(parsed.error()).context(util::msg("invalid core metadata")));
  auto& [fields, body] = *parsed;

  auto bad = [](const Field& f, std::string why) {
    return make_error(ErrorCode::invalid_input, util::msg("invalid core metadata: line {}: {}: {}", f.line, f.name, why));
  };
  CoreMetadata md;
  const Field* single[4] = {nullptr, nullptr, nullptr, nullptr};
  static constexpr std::string_view single_names[4] = {"Metadata-Version", "Name", "Version", "Requires-Python"};
  for (const auto& f : fields) {
    for (int i = 0; i < 4; ++i) {
      if (!iequals(f.name, single_names[i])) continue;
      if (single[i]) return bad(f, fmt::format("appears again (first at line {}); it may appear only once", single[i]->line));
      single[i] = &f;
    }
  }
  if (!single[0]) return make_error(ErrorCode::invalid_input, util::msg("invalid core metadata: no Metadata-Version field"));
  if (!single[1]) return make_error(ErrorCode::invalid_input, util::msg("invalid core metadata: no Name field"));
  if (!single[2]) return make_error(ErrorCode::invalid_input, util::msg("invalid core metadata: no Version field"));

  md.metadata_version = single[0]->value;
  {
    // "M.N": fail on a major version we do not know (core metadata spec, "Metadata-Version").
    const std::string& mv = md.metadata_version;
    std::size_t dot = mv.find('.');
    std::string_view major = std::string_view(mv).substr(0, dot);
    bool ok = dot != std::string::npos && !major.empty() && dot + 1 < mv.size() &&
              std::all_of(mv.begin(), mv.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
    if (!ok) return bad(*single[0], fmt::format("'{}' is not of the form M.N", mv));
    if (major.size() > 1 || major[0] > '2')
      return with_hint(bad(*single[0], fmt::format("version {} is newer than this tool understands (2.x)", mv)),
                       util::msg("upgrade envfix"));
  }
  md.name = single[1]->value;
  if (!is_valid_project_name(md.name)) return bad(*single[1], fmt::format("'{}' is not a valid project name", md.name));
  auto version = Version::parse(single[2]->value);
  if (!version) return std::unexpected(std::move(version.error()).context(bad(*single[2], "bad version").error().message));
  md.version = std::move(*version);
  if (single[3]) {
    auto rp = SpecifierSet::parse(unfold(single[3]->value));
    if (!rp) return std::unexpected(std::move(rp.error()).context(bad(*single[3], "bad specifier").error().message));
    md.requires_python = std::move(*rp);
  }
  for (const auto& f : fields) {
    if (iequals(f.name, "Requires-Dist")) {
      auto req = Requirement::parse(unfold(f.value));
      if (!req) return std::unexpected(std::move(req.error()).context(bad(f, "bad requirement").error().message));
      md.requires_dist.push_back(std::move(*req));
    } else if (iequals(f.name, "Provides-Extra")) {
      md.provides_extra.push_back(f.value);
    }
  }
  bool has_description = false;
  for (auto& f : fields) {
    has_description = has_description || iequals(f.name, "Description");
    md.fields.emplace_back(f.name, f.value);
  }
  if (!has_description && !trim_body_end(body).empty()) md.fields.emplace_back("Description", std::move(body));
  return md;
}

std::vector<std::string> CoreMetadata::get_all(std::string_view field) const {
  std::vector<std::string> out;
  for (const auto& [k, v] : fields)
    if (iequals(k, field)) out.push_back(v);
  return out;
}

std::optional<std::string> CoreMetadata::get(std::string_view field) const {
  for (const auto& [k, v] : fields)
    if (iequals(k, field)) return v;
  return std::nullopt;
}

} // namespace envfix::specs
