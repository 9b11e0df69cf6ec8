#include "util/writeback.hpp"

#include <fcntl.h>

namespace envfix::util {

namespace {
void start_writeback(int fd, std::uint64_t from, std::uint64_t to) {
  (void)::sync_file_range(fd, static_cast<off_t>(from), static_cast<off_t>(to - from), SYNC_FILE_RANGE_WRITE);
}
} // namespace

void WritebackPacer::wrote(int fd, std::uint64_t written) {
  if (written < m_started) m_started = 0; // truncated and written again (a download's retry)
  if (written < m_started + m_every) return;
  start_writeback(fd, m_started, written);
  m_started = written;
}

void WritebackPacer::finish(int fd, std::uint64_t written) {
  if (m_started == 0 || written <= m_started) return;
  start_writeback(fd, m_started, written);
  m_started = written;
}

} // namespace envfix::util
