#include "resolver/memory_provider.hpp"

#include <fmt/format.h>

#include "specs/name.hpp"
#include "util/sha256.hpp"

namespace envfix::resolver {

void MemoryProvider::add(index::Candidate file, std::string metadata) {
  if (file.project.empty()) {
    auto dash = file.filename.find('-');
    file.project = specs::normalize_name(file.filename.substr(0, dash));
  }
  if (file.index_url.empty()) file.index_url = m_description;
  if (file.url.empty()) file.url = "memory://" + file.project + "/" + file.filename;
  m_metadata[file.url] = std::move(metadata);
  m_files[file.project].push_back(std::move(file));
}

void MemoryProvider::add_wheel(std::string_view filename, const std::vector<std::string>& requires_dist,
                               std::string_view requires_python) {
  index::Candidate c;
  c.filename = std::string(filename);
  c.sha256 = util::sha256_hex(filename);
  auto dash = filename.find('-');
  auto dash2 = filename.find('-', dash + 1);
  std::string md = fmt::format("Metadata-Version: 2.1\nName: {}\nVersion: {}\n", filename.substr(0, dash),
                               filename.substr(dash + 1, dash2 - dash - 1));
  if (!requires_python.empty()) md += fmt::format("Requires-Python: {}\n", requires_python);
  for (const auto& r : requires_dist) md += fmt::format("Requires-Dist: {}\n", r);
  add(std::move(c), std::move(md));
}

Expected<std::vector<index::Candidate>> MemoryProvider::candidates(const std::string& project) {
  ++candidate_calls;
  auto it = m_files.find(project);
  if (it == m_files.end()) return std::vector<index::Candidate>{};
  return it->second;
}

Expected<specs::CoreMetadata> MemoryProvider::metadata(const index::Candidate& candidate) {
  ++metadata_calls;
  auto it = m_metadata.find(candidate.url);
  if (it == m_metadata.end()) return fail(ErrorCode::not_found, "no metadata for {}", candidate.url);
  return specs::CoreMetadata::parse(it->second);
}

} // namespace envfix::resolver
