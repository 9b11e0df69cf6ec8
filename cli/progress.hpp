#pragma once
// One-line progress bars on stderr (downloads, unpacking), like uv's: only on a terminal, never with
// --format json, -q or --no-progress, redrawn at most ten times a second, erased when done so the
// summary lines ("Prepared 33 packages in 1.2s") stay the only trace.
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <string_view>

#include "api/reporter.hpp"

namespace envfix::cli {

struct Globals;

// "Downloading [=====>     ] 120.3 MiB/386.0 MiB 3/33 files 95.2 MiB/s ETA 3s" (`total` 0: no bar,
// no ETA; files 0 of 0: no count).
[[nodiscard]] std::string progress_text(std::string_view label, std::uint64_t done, std::uint64_t total, double seconds,
                                        api::Reporter::Files files = {}, int width = 24);

class ProgressLine {
public:
  ProgressLine(const Globals& g, std::string label);
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { clear(); }
  // Thread-safe; cheap when disabled or called faster than the redraw rate.
  void update(std::uint64_t done, std::uint64_t total, api::Reporter::Files files = {});
  void clear();
  void restart(); // rate and ETA count from now
  // The label and the seconds since restart(), for a phase without a size (the smoke test).
  void tick();
  [[nodiscard]] bool enabled() const { return m_enabled; }

private:
  void draw(const std::string& line); // over the current line; m_mutex held
  bool m_enabled = false;
  bool m_drawn = false;
  std::string m_label;
  std::mutex m_mutex;
  std::chrono::steady_clock::time_point m_start, m_last;
};

// The api/ reporter for a terminal: one progress bar per sized phase (Downloading, Unpacking),
// erased when the next phase begins; while the smoke test runs (up to --smoke-timeout a step), its
// elapsed time, redrawn each second by a thread of its own, and without a terminal one line that
// says it began; notes and warnings as human lines.
class ProgressReporter : public virtual api::Reporter {
public:
  explicit ProgressReporter(const Globals& g);
  ~ProgressReporter() override;
  void phase(api::Phase p) override;
  void progress(api::Phase p, std::uint64_t done, std::uint64_t total, Files files) override;
  void note(const util::Message& m, bool detail) override;
  void warning(const util::Message& m) override;
  // Ends the smoke test's line (its thread and the line), before the result is printed.
  void finish();

protected:
  const Globals& m_globals;

private:
  void erase_lines(); // every line drawn; m_tick_mutex held, so the ticker draws none meanwhile
  ProgressLine m_download, m_unpack, m_verify;
  std::thread m_ticker;
  std::mutex m_tick_mutex;
  std::condition_variable m_tick_cv;
  bool m_ticking = false;
};

} // namespace envfix::cli
