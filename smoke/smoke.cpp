#include "smoke/smoke.hpp"

#include <algorithm>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "installer/transaction.hpp"
#include "specs/name.hpp"
#include "util/fs.hpp"

namespace envfix::smoke {

namespace fs = std::filesystem;

std::vector<SmokeStep> smoke_steps(const matrices::SmokeTest& smoke, const std::vector<std::string>& present,
                                   SmokeDevice device) {
  std::vector<SmokeStep> steps;
  const bool cpu = device == SmokeDevice::cpu;
  if (cpu) {
    if (smoke.cpu.empty()) return steps;
    steps.push_back({"CPU step", smoke.cpu, device, StepKind::cpu});
  } else {
    if (!smoke.step_a.empty()) steps.push_back({"step A", smoke.step_a, device, StepKind::copy});
    if (!smoke.step_b.empty()) steps.push_back({"step B", smoke.step_b, device, StepKind::kernel});
  }
  for (const auto& [companion, code] : cpu ? smoke.cpu_companions : smoke.companions) {
    auto n = specs::normalize_name(companion);
    for (const auto& p : present)
      if (p == n) {
        steps.push_back({cpu ? companion + " (CPU)" : companion, code, device, StepKind::companion});
        break;
      }
  }
  return steps;
}

std::vector<SmokeStep> model_steps(const matrices::SmokeTest& smoke, const std::vector<std::string>& present,
                                   SmokeDevice device) {
  std::vector<SmokeStep> steps;
  for (const auto& [name, code] : smoke.model) {
    if (auto colon = name.find(": "); colon != std::string::npos) {
      auto need = specs::normalize_name(name.substr(0, colon));
      if (std::find(present.begin(), present.end(), need) == present.end()) continue;
    }
    steps.push_back({"model: " + name, code, device, StepKind::model});
  }
  return steps;
}

std::string_view to_string(Layer l) { return l == Layer::repro ? "repro" : "model"; }

std::optional<Layer> parse_layer(std::string_view s) {
  for (auto l : {Layer::repro, Layer::model})
    if (s == to_string(l)) return l;
  return std::nullopt;
}

std::vector<SmokeStep> layer_steps(Layer l, const matrices::SmokeTest& smoke, const std::vector<std::string>& present,
                                   SmokeDevice device) {
  return l == Layer::repro ? smoke_steps(smoke, present, device) : model_steps(smoke, present, device);
}

CpuReason cpu_reason(bool has_gpu, bool gpus_planned, bool cpu_build) {
  return cpu_build      ? CpuReason::cpu_build
         : gpus_planned ? CpuReason::planned_gpus
         : !has_gpu     ? CpuReason::no_gpu
                        : CpuReason::none;
}

util::Message describe(CpuReason r) {
  switch (r) {
  case CpuReason::cpu_build: return util::msg("CPU build");
  case CpuReason::planned_gpus: return util::msg("planned GPUs (--gpu) are not this machine's");
  case CpuReason::no_gpu: return util::msg("no GPU");
  case CpuReason::none: break;
  }
  return {};
}

ApplySmoke plan_apply_smoke(const ApplySmokeRequest& r) {
  ApplySmoke out;
  const auto cpu = cpu_reason(r.has_gpu, r.gpus_planned, r.cpu_build);
  const auto device = cpu == CpuReason::none ? SmokeDevice::gpu : SmokeDevice::cpu;
  if (r.skipped) {
    out.note = util::msg("smoke test skipped (--no-verify)");
    return out;
  }
  if (!r.framework) {
    out.note = util::msg("no framework: smoke test skipped (plain requirement set)");
    return out;
  }
  for (auto layer : r.layers) {
    auto more = layer_steps(layer, r.framework->smoke, r.present, device);
    out.steps.insert(out.steps.end(), more.begin(), more.end());
  }
  const auto why = describe(cpu);
  if (out.steps.empty() && cpu != CpuReason::none)
    out.note = util::msg("{}: smoke test skipped ({} has no CPU smoke test in the matrices)", why, r.framework->name);
  else if (out.steps.empty())
    out.note = util::msg("{} has no smoke test in the matrices", r.framework->name);
  else if (cpu != CpuReason::none) {
    out.note = util::msg("{}: smoke test ran on the CPU", why);
    out.cpu = cpu;
  }
  return out;
}

namespace {

// A child that prints without newlines (docs/reliability.md §5 item 8) must not put megabytes into
// an error or a report: a long line keeps its head and tail.
std::string elide(std::string line) {
  constexpr std::size_t keep = 200;
  if (line.size() <= 2 * keep + 64) return line;
  return fmt::format("{} [... {} characters ...] {}", line.substr(0, keep), line.size() - 2 * keep,
                     line.substr(line.size() - keep));
}

// The last `n` non-empty lines of a text: the exception and its message, not the whole traceback.
std::vector<std::string> tail_lines(const std::string& text, std::size_t n) {
  std::vector<std::string> lines;
  std::size_t i = 0;
  while (i < text.size()) {
    auto j = text.find('\n', i);
    if (j == std::string::npos) j = text.size();
    if (j > i) lines.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - static_cast<std::ptrdiff_t>(n));
  for (auto& l : lines) l = elide(std::move(l));
  return lines;
}

} // namespace

Expected<SmokeReport> run_smoke(const fs::path& python, const std::vector<SmokeStep>& steps, std::chrono::milliseconds timeout) {
  SmokeRunOptions ro;
  ro.timeout = timeout;
  // SIGINT/SIGTERM to envfix (the smoke test runs in its own session, so a terminal's ^C does not
  // reach it) stops the step at once instead of after the timeout.
  ro.cancel = [] { return installer::interrupt_signal() != 0; };
  auto run = ENVFIX_TRY(run_steps(python, steps, ro));
  auto stopped_lines = [](const std::vector<util::LeftoverProcess>& left) {
    std::vector<std::string> out;
    for (const auto& p : left)
      out.push_back(fmt::format("left running by the smoke test, stopped: pid {} ({})", p.pid, elide(p.command)));
    return out;
  };
  SmokeReport report;
  report.stopped = stopped_lines(run.stopped);
  report.interpreters = run.interpreters;
  for (const auto& s : run.steps) {
    report.seconds.push_back({s.name, s.seconds});
    if (s.ok) {
      report.passed.push_back(s.name);
      continue;
    }
    // The step's own output follows as it printed it (no id: it is the program's words).
    Error e{ErrorCode::subprocess, {}, tail_lines(s.err.empty() ? s.out : s.err, 6)};
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout).count();
    e.say(s.timed_out     ? util::msg("smoke test {} timed out after {}s in {}", s.name, secs, python.string())
          : s.term_signal ? util::msg("smoke test {} failed in {} (exit signal {})", s.name, python.string(), s.term_signal)
                          : util::msg("smoke test {} failed in {} (exit {})", s.name, python.string(), s.exit_code));
    e.advise(util::msg("the new files were removed again; run `envfix doctor` for a diagnosis"));
    for (const auto& p : s.stopped)
      e.add_cause(util::msg("left running by the smoke test, stopped: pid {} ({})", p.pid, elide(p.command)));
    return std::unexpected(std::move(e));
  }
  return report;
}

std::string failure_text(const StepRun& s, std::chrono::milliseconds timeout) {
  if (s.ok) return "";
  if (s.timed_out) return fmt::format("timed out after {} s", std::chrono::duration_cast<std::chrono::seconds>(timeout).count());
  if (s.term_signal) { // with what the step wrote to stderr last (a C++ abort's message), if anything
    const auto line = exception_line("", s.err);
    auto text = fmt::format("killed by signal {} ({})", s.term_signal, ::strsignal(s.term_signal));
    return line.empty() ? text : text + ": " + line;
  }
  auto line = exception_line(s.out, s.err);
  return line.empty() ? fmt::format("exit code {}", s.exit_code) : line;
}

std::string exception_line(const std::string& out, const std::string& err) {
  std::string_view text = err.empty() ? std::string_view(out) : std::string_view(err);
  std::string last, exception;
  std::size_t i = 0;
  while (i < text.size()) {
    auto nl = text.find('\n', i);
    if (nl == std::string_view::npos) nl = text.size();
    auto line = text.substr(i, nl - i);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (!line.empty() && !line.starts_with(' ')) {
      last = std::string(line);
      auto colon = line.find(": ");
      auto head = line.substr(0, colon);
      bool ident =
          colon != std::string_view::npos && !head.empty() &&
          head.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.") == std::string_view::npos;
      if (ident && (head.ends_with("Error") || head.ends_with("Exception"))) exception = last;
    }
    i = nl + 1;
  }
  return elide(exception.empty() ? last : exception);
}

} // namespace envfix::smoke
