#include "util/writeback.hpp"

#include <fcntl.h>

namespace envfix::util {

void start_writeback(int fd, WritebackRange r) {
  if (r.to > r.from)
    (void)::sync_file_range(fd, static_cast<off_t>(r.from), static_cast<off_t>(r.to - r.from), SYNC_FILE_RANGE_WRITE);
}

std::optional<WritebackRange> WritebackPacer::due(std::uint64_t written) {
  if (written < m_started) m_started = 0; // truncated and written again (a download's retry)
  if (written < m_started + m_every) return std::nullopt;
  WritebackRange r{m_started, written};
  m_started = written;
  return r;
}

void WritebackPacer::finish(int fd, std::uint64_t written) {
  if (m_started == 0 || written <= m_started) return;
  start_writeback(fd, {m_started, written});
  m_started = written;
}

} // namespace envfix::util
