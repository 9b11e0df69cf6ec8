#include "util/message.hpp"

#include <fmt/args.h>

namespace envfix::util {

std::optional<std::string> fill(std::string_view format, const std::vector<std::string>& args) {
  fmt::dynamic_format_arg_store<fmt::format_context> store;
  for (const auto& a : args) store.push_back(a);
  try {
    return fmt::vformat(fmt::string_view(format.data(), format.size()), store);
  } catch (const fmt::format_error&) {
    return std::nullopt;
  }
}

} // namespace envfix::util
