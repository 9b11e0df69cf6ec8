#include "cli/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

#include "cli/globals.hpp"
#include "cli/render.hpp"
#include "cli/views.hpp"
#include "i18n/i18n.hpp"

namespace envfix::cli {

std::string progress_text(std::string_view label, std::uint64_t done, std::uint64_t total, double seconds,
                          api::Reporter::Files files, int width) {
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
  if (files.total > 0) out += " " + i18n::trf("{}/{} files", files.done, files.total);
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

void ProgressLine::update(std::uint64_t done, std::uint64_t total, api::Reporter::Files files) {
  if (!m_enabled) return;
  std::lock_guard lock(m_mutex);
  auto now = std::chrono::steady_clock::now();
  // At most ten frames a second, but the last frame of a sized phase always (an unknown total, 0,
  // is never the last frame).
  if (m_drawn && now - m_last < std::chrono::milliseconds(100) && !(total > 0 && done >= total)) return;
  m_last = now;
  draw(progress_text(m_label, done, total, std::chrono::duration<double>(now - m_start).count(), files));
}

void ProgressLine::draw(const std::string& line) {
  std::fprintf(stderr, "\r\033[2K%s", i18n::for_terminal(line).c_str());
  std::fflush(stderr);
  m_drawn = true;
}

void ProgressLine::restart() {
  std::lock_guard lock(m_mutex);
  m_start = std::chrono::steady_clock::now();
}

void ProgressLine::tick() {
  if (!m_enabled) return;
  std::lock_guard lock(m_mutex);
  const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
  draw(i18n::pad(m_label, 12) + " " + fmt::format("{:.0f}s", secs));
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
    : m_globals(g), m_download(g, i18n::trs("Downloading")), m_unpack(g, i18n::trs("Unpacking")),
      m_verify(g, i18n::trs("Smoke test")) {}

ProgressReporter::~ProgressReporter() { finish(); }

void ProgressReporter::finish() {
  {
    std::lock_guard lock(m_tick_mutex);
    m_ticking = false;
  }
  m_tick_cv.notify_all();
  if (m_ticker.joinable()) m_ticker.join();
  m_verify.clear();
}

void ProgressReporter::phase(api::Phase p) {
  finish();
  m_download.clear();
  m_unpack.clear();
  if (p == api::Phase::download) m_download.restart();
  if (p == api::Phase::unpack) m_unpack.restart();
  if (p != api::Phase::verify) return;
  // The smoke test can take minutes a step: a bar would lie, its elapsed time does not.
  if (!m_verify.enabled()) {
    human(styled(i18n::tr("Running the smoke test in the new set…"), Style::dim)); // nothing under -q
    return;
  }
  m_verify.restart();
  m_ticking = true;
  m_ticker = std::thread([this] {
    std::unique_lock lock(m_tick_mutex);
    while (m_ticking) {
      m_verify.tick();
      m_tick_cv.wait_for(lock, std::chrono::seconds(1), [this] { return !m_ticking; });
    }
  });
}

void ProgressReporter::progress(api::Phase p, std::uint64_t done, std::uint64_t total, Files files) {
  if (p == api::Phase::download)
    m_download.update(done, total, files);
  else if (p == api::Phase::unpack)
    m_unpack.update(done, total, files);
}

void ProgressReporter::erase_lines() {
  m_download.clear();
  m_unpack.clear();
  m_verify.clear();
}

void ProgressReporter::note(const util::Message& m, bool detail) {
  // A line printed over a drawn bar or the smoke test's line would be cut into it: erased first,
  // with the ticker held off until the line is out.
  std::lock_guard lock(m_tick_mutex);
  erase_lines();
  if (!detail)
    human(i18n::tr(m));
  else if (m_globals.verbose > 0)
    human(styled(i18n::tr(m), Style::dim));
}

void ProgressReporter::warning(const util::Message& m) {
  std::lock_guard lock(m_tick_mutex);
  erase_lines();
  warn(m);
}

} // namespace envfix::cli
