#include "util/error.hpp"

namespace envfix {

const char* to_string(ErrorCode code) {
  switch (code) {
  case ErrorCode::invalid_input: return "invalid-input";
  case ErrorCode::not_found: return "not-found";
  case ErrorCode::unsatisfiable: return "unsatisfiable";
  case ErrorCode::io: return "io";
  case ErrorCode::network: return "network";
  case ErrorCode::hash_mismatch: return "hash-mismatch";
  case ErrorCode::subprocess: return "subprocess";
  case ErrorCode::interrupted: return "interrupted";
  case ErrorCode::rollback_failed: return "rollback-failed";
  case ErrorCode::internal: return "internal";
  }
  return "internal";
}

std::string Error::render() const {
  std::string out = "error: " + message + "\n";
  for (const auto& c : causes) out += "  caused by: " + c + "\n";
  if (!hint.empty()) out += "hint: " + hint + "\n";
  return out;
}

} // namespace envfix
