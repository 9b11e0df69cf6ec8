#include "cli/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "cli/views.hpp"
#include "i18n/i18n.hpp"

namespace envfix::cli {

std::string progress_text(std::string_view label, std::uint64_t done, std::uint64_t total, double seconds, int width) {
  std::string out = i18n::pad(label, 12); // cells: a translated label is wide (i18n/i18n.hpp)
  if (total > 0) {
    double f = std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
    int fill = static_cast<int>(f * width);
    std::string bar(static_cast<std::size_t>(width), ' ');
    for (int i = 0; i < fill; ++i) bar[static_cast<std::size_t>(i)] = '=';
    if (fill < width) bar[static_cast<std::size_t>(fill)] = '>';
    out += fmt::format(" [{}] {}/{}", bar, human_size(done), human_size(total));
  } else {
    out += " " + human_size(done);
  }
  if (seconds > 0.2 && done > 0) {
    double rate = static_cast<double>(done) / seconds;
    out += fmt::format(" {}/s", human_size(static_cast<std::uint64_t>(rate)));
    if (total > done) out += " " + i18n::trf("ETA {}", fmt::format("{:.0f}s", static_cast<double>(total - done) / rate));
  }
  return out;
}

ProgressLine::ProgressLine(const Globals& g, std::string label)
    : m_enabled(!g.no_progress && !g.quiet && g.format != "json" && ::isatty(STDERR_FILENO)), m_label(std::move(label)),
      m_start(std::chrono::steady_clock::now()) {}

void ProgressLine::update(std::uint64_t done, std::uint64_t total) {
  if (!m_enabled) return;
  std::lock_guard lock(m_mutex);
  auto now = std::chrono::steady_clock::now();
  if (m_drawn && now - m_last < std::chrono::milliseconds(100) && done < total) return;
  m_last = now;
  auto line = progress_text(m_label, done, total, std::chrono::duration<double>(now - m_start).count());
  std::fprintf(stderr, "\r\033[2K%s", i18n::for_terminal(line).c_str());
  std::fflush(stderr);
  m_drawn = true;
}

void ProgressLine::restart() {
  std::lock_guard lock(m_mutex);
  m_start = std::chrono::steady_clock::now();
}

void ProgressLine::clear() {
  if (!m_enabled) return;
  std::lock_guard lock(m_mutex);
  if (!m_drawn) return;
  std::fputs("\r\033[2K", stderr);
  std::fflush(stderr);
  m_drawn = false;
}

ProgressReporter::ProgressReporter(const Globals& g)
    : m_globals(g), m_download(g, i18n::trs("Downloading")), m_unpack(g, i18n::trs("Unpacking")) {}

ProgressReporter::~ProgressReporter() = default;

void ProgressReporter::phase(api::Phase p) {
  m_download.clear();
  m_unpack.clear();
  if (p == api::Phase::download) m_download.restart();
  if (p == api::Phase::unpack) m_unpack.restart();
}

void ProgressReporter::progress(api::Phase p, std::uint64_t done, std::uint64_t total) {
  if (p == api::Phase::download)
    m_download.update(done, total);
  else if (p == api::Phase::unpack)
    m_unpack.update(done, total);
}

void ProgressReporter::note(const util::Message& m, bool detail) {
  if (!detail)
    human(i18n::tr(m));
  else if (m_globals.verbose > 0)
    human(styled(i18n::tr(m), Style::dim));
}

void ProgressReporter::warning(const util::Message& m) { warn(m); }

} // namespace envfix::cli
