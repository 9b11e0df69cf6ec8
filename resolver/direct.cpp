// Wheel files the user names (see direct.hpp).
#include "resolver/direct.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "index/url.hpp"
#include "specs/name.hpp"
#include "specs/wheel_filename.hpp"
#include "util/fs.hpp"
#include "wheel/record.hpp"

namespace envfix::resolver {

namespace fs = std::filesystem;

namespace {

// The file at `path` as the only candidate of its project, pinned by `r` (its extras and marker kept).
Expected<DirectFile> file_request(const fs::path& given, specs::Requirement r, std::string_view as_given) {
  std::error_code ec;
  const fs::path path = fs::absolute(given, ec).lexically_normal();
  if (ec || !fs::is_regular_file(path, ec))
    return make_error(ErrorCode::not_found, util::msg("'{}': no such wheel file", as_given),
                      util::msg("name a wheel file as pip does: ./torch-2.7.0+cu128-cp312-cp312-linux_x86_64.whl"));
  auto wf = specs::WheelFilename::parse(path.filename().string());
  if (!wf) return std::unexpected(std::move(wf.error()).context(util::msg("'{}' is not a wheel file name", as_given)));
  if (!r.name.empty() && specs::normalize_name(r.name) != wf->normalized_name())
    return make_error(ErrorCode::invalid_input,
                      util::msg("'{}': the file is a build of {}, not of {}", as_given, wf->normalized_name(), r.name),
                      util::msg("name it as {} @ {}", wf->normalized_name(), index::path_to_file_url(path.string())));
  r.name = wf->normalized_name();
  r.url.clear();
  r.specifier = ENVFIX_TRY(specs::SpecifierSet::parse("==" + wf->version.to_string()));
  index::Candidate c;
  c.project = wf->normalized_name();
  c.filename = path.filename().string();
  c.url = index::path_to_file_url(path.string());
  c.index_url = path.string();
  if (auto size = fs::file_size(path, ec); !ec) c.size = size;
  return DirectFile{std::move(r), std::move(c)};
}

} // namespace

Expected<std::optional<DirectFile>> direct_file(std::string_view arg) {
  if (!arg.ends_with(".whl")) return std::nullopt;
  const bool pathlike = arg.starts_with("/") || arg.starts_with("./") || arg.starts_with("../");
  std::error_code ec;
  if (!pathlike && !fs::exists(fs::path(arg), ec)) return std::nullopt;
  return ENVFIX_TRY(file_request(fs::path(arg), {}, arg));
}

Expected<std::optional<DirectFile>> direct_file(const specs::Requirement& r) {
  if (r.url.empty()) return std::nullopt;
  auto path = index::file_url_to_path(r.url);
  if (!path)
    return make_error(ErrorCode::invalid_input,
                      util::msg("'{}': envfix installs a direct URL only from a local wheel (file://)", r.to_string()),
                      util::msg("download the wheel first, then name its file (./x.whl or name @ file:///path/x.whl)"));
  if (!path->ends_with(".whl"))
    return make_error(ErrorCode::invalid_input, util::msg("'{}': not a wheel (.whl)", r.to_string()),
                      util::msg("build a wheel from it first (pip wheel --no-deps .), then name that file"));
  return ENVFIX_TRY(file_request(fs::path(*path), r, r.to_string()));
}

std::string direct_variant(const matrices::Framework& fw, const std::vector<DirectFile>& files) {
  for (const auto& f : files)
    if (f.file.project == specs::normalize_name(fw.main_package))
      if (auto wf = specs::WheelFilename::parse(f.file.filename))
        if (const auto* v = fw.variant(wf->version.local())) return v->name;
  return {};
}

Expected<ParsedRequest> parse_request(const std::vector<std::string>& args) {
  ParsedRequest out;
  for (const auto& a : args) {
    auto direct = ENVFIX_TRY(direct_file(a));
    if (!direct) {
      auto req = specs::Requirement::parse(a);
      if (!req) return std::unexpected(std::move(req).error().context(util::msg("request '{}'", a)));
      direct = ENVFIX_TRY(direct_file(*req));
      if (!direct) {
        out.requirements.push_back(std::move(*req));
        continue;
      }
    }
    out.requirements.push_back(direct->requirement);
    out.direct.push_back(std::move(*direct));
  }
  return out;
}

DirectFileProvider::DirectFileProvider(CandidateProvider& inner, CandidateProvider& reader, const std::vector<DirectFile>& files)
    : m_inner(inner), m_reader(reader) {
  for (const auto& f : files) m_files.emplace(f.file.project, f.file);
}

bool DirectFileProvider::is_direct(const index::Candidate& c) const {
  auto it = m_files.find(c.project);
  return it != m_files.end() && it->second.url == c.url;
}

Expected<std::vector<index::Candidate>> DirectFileProvider::candidates(const std::string& project) {
  if (auto it = m_files.find(project); it != m_files.end()) return std::vector<index::Candidate>{it->second};
  return m_inner.candidates(project);
}

Expected<specs::CoreMetadata> DirectFileProvider::metadata(const index::Candidate& candidate) {
  return is_direct(candidate) ? m_reader.metadata(candidate) : m_inner.metadata(candidate);
}

Expected<void> DirectFileProvider::complete_hash(index::Candidate& file) {
  return is_direct(file) ? m_reader.complete_hash(file) : m_inner.complete_hash(file);
}

void name_direct_choice(Plan& plan, std::string_view main_package, const std::vector<DirectFile>& files) {
  const auto main = specs::normalize_name(main_package);
  for (const auto& f : files)
    if (f.file.project == main)
      for (const auto& i : plan.install)
        if (i.name == main && i.url == f.file.url) {
          plan.why = util::msg("{} {}, the file named in the request (variant {}); its kernels are read before anything "
                               "is installed",
                               i.name, i.version, plan.variant.empty() ? "unknown" : plan.variant);
          plan.index = f.file.index_url;
        }
}

std::set<std::string> direct_replacements(const std::vector<DirectFile>& files,
                                          const std::vector<probe::InstalledDist>& installed, const RecordReader& wheel_record) {
  std::set<std::string> out;
  for (const auto& f : files)
    for (const auto& d : installed) {
      if (d.normalized_name() != f.file.project) continue;
      bool same = false;
      if (auto mine = util::read_file(d.dist_info / "RECORD"); mine && wheel_record)
        if (auto theirs = wheel_record(f.file))
          if (auto a = wheel::Record::parse(*mine, d.dist_info.string(), wheel::RecordSource::installed))
            if (auto b = wheel::Record::parse(*theirs, f.file.filename)) same = wheel::same_build(*a, *b);
      if (!same) out.insert(f.file.project);
    }
  return out;
}

} // namespace envfix::resolver
