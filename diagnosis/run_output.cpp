#include "diagnosis/run_output.hpp"

#include <fmt/format.h>

namespace envfix::diagnosis {

namespace {

// Calls fn(line) for each line of `text` (without its '\n') until fn returns true.
template <class Fn>
void each_line(std::string_view text, Fn fn) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto j = text.find('\n', i);
    if (j == std::string_view::npos) j = text.size();
    if (fn(text.substr(i, j - i))) return;
    i = j + 1;
  }
}

} // namespace

std::pair<std::string, CudaError> first_cuda_error(std::string_view text) {
  std::pair<std::string, CudaError> out{"", CudaError::none};
  each_line(text, [&](std::string_view line) {
    if (line.find("CUDA error") == std::string_view::npos && line.find("CUDA_ERROR") == std::string_view::npos &&
        line.find("no kernel image") == std::string_view::npos && line.find("CUDA out of memory") == std::string_view::npos)
      return false;
    out = {std::string(line), classify_cuda_error(line)};
    return true;
  });
  return out;
}

std::string traceback_end(std::string_view text) {
  const auto at = text.rfind("  File \"");
  if (at == std::string_view::npos) return "";
  const auto eol = text.find('\n', at);
  std::string frame(text.substr(at + 2, eol == std::string_view::npos ? std::string_view::npos : eol - at - 2));
  if (eol != std::string_view::npos) {
    const auto next = text.find('\n', eol + 1);
    const auto code = text.substr(eol + 1, next == std::string_view::npos ? std::string_view::npos : next - eol - 1);
    const auto first = code.find_first_not_of(' ');
    if (first != std::string_view::npos && code.starts_with("    ")) frame += ": " + std::string(code.substr(first));
  }
  return frame;
}

std::string last_op(std::string_view out) {
  std::string op;
  each_line(out, [&](std::string_view line) {
    if (line.starts_with("OP ")) op = std::string(line.substr(3));
    return false;
  });
  return op;
}

util::Message async_note(std::string_view command, std::string_view where, bool sync, bool errored) {
  if (sync || !errored) return {};
  const auto rerun = std::string(command);
  if (where.empty())
    return util::msg("CUDA reports kernel errors asynchronously: the traceback may point at a later call than the operator "
                     "that failed. Rerun with `envfix verify --app '{}' --sync` (CUDA_LAUNCH_BLOCKING=1: every launch "
                     "waits for its kernel, slower) to stop at the failing launch",
                     rerun);
  return util::msg("CUDA reports kernel errors asynchronously: the traceback ({}) may point at a later call than the "
                   "operator that failed. Rerun with `envfix verify --app '{}' --sync` (CUDA_LAUNCH_BLOCKING=1: every "
                   "launch waits for its kernel, slower) to stop at the failing launch",
                   where, rerun);
}

util::Message rebuild_note(std::string_view framework, std::string_view gpus) {
  const auto fw = std::string(framework), archs = std::string(gpus);
  if (framework == "torch")
    return util::msg("the binaries of {} and of every GPU extension installed hold code for {}, so reinstalling cannot fix "
                     "this: the kernel that failed comes from code no installed RECORD lists (an extension built or "
                     "JIT-compiled at run time, a library loaded from outside the environment); rebuild that code for {} "
                     "(torch extensions read TORCH_CUDA_ARCH_LIST)",
                     fw, archs, archs);
  return util::msg("the binaries of {} and of every GPU extension installed hold code for {}, so reinstalling cannot fix "
                   "this: the kernel that failed comes from code no installed RECORD lists (an extension built or "
                   "JIT-compiled at run time, a library loaded from outside the environment); rebuild that code for {}",
                   fw, archs, archs);
}

} // namespace envfix::diagnosis
