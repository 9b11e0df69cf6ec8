#pragma once
// Early write-back for a file written front to back: every `every` bytes, the range written since
// the last call is handed to the kernel's write-back (sync_file_range SYNC_FILE_RANGE_WRITE starts
// the I/O and does not wait for it). An install ends with syncfs (the power-loss guarantee,
// docs/installing.md); without this the gigabytes of a torch set sit dirty until then and the sync
// waits for all of them, where started early they are written while the download and unpack run.
// Best effort: where it fails (a filesystem without it) the final sync does the work.
#include <cstdint>
#include <optional>

namespace envfix::util {

struct WritebackRange {
  std::uint64_t from = 0, to = 0;
};

// Starts write-back of [from, to) of fd (best effort).
void start_writeback(int fd, WritebackRange range);

class WritebackPacer {
public:
  explicit WritebackPacer(std::uint64_t every = 8ull << 20) : m_every(every) {}
  // `fd` now holds `written` bytes from its start.
  void wrote(int fd, std::uint64_t written) {
    if (auto r = due(written)) start_writeback(fd, *r);
  }
  // The range `wrote` would hand over now (marked as handed over), for a caller that starts it on
  // another thread: index/http_client.cpp keeps the system call off its transfer loop.
  [[nodiscard]] std::optional<WritebackRange> due(std::uint64_t written);
  // The rest, once the file is complete. Nothing for a file that stayed under `every`: its pages
  // join the final sync (a system call each for the 12,000 small files of a torch wheel would cost
  // more than it saves).
  void finish(int fd, std::uint64_t written);
  // Bytes handed to write-back so far (tests).
  [[nodiscard]] std::uint64_t started() const { return m_started; }

private:
  std::uint64_t m_every;
  std::uint64_t m_started = 0;
};

} // namespace envfix::util
