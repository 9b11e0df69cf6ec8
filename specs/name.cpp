#include "specs/name.hpp"

namespace envfix::specs {

std::string normalize_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  bool in_run = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      if (!in_run) out += '-';
      in_run = true;
      continue;
    }
    in_run = false;
    out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

bool is_valid_project_name(std::string_view name) {
  auto alnum = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (name.empty() || !alnum(name.front()) || !alnum(name.back())) return false;
  for (char c : name)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

} // namespace envfix::specs
