// run_steps (smoke/smoke.hpp): the smoke steps in one interpreter. A small Python driver, passed with
// -c so that nothing is written into the environment, reads the steps from stdin and runs each in
// a fresh __main__; before and after each it writes a marker line to stdout and to stderr, so that
// what the step printed on each stream is told apart from the next one's and, when the interpreter
// dies, the step that was running is known. Each step's timeout is counted here, from the end of
// the step before it: a hanging step is killed with its whole session, and the steps after it run
// in a fresh interpreter (as after any failure).
#include <cstdlib>
#include <random>
#include <utility>

#include <fmt/format.h>

#include "smoke/smoke.hpp"
#include "util/python.hpp"

namespace envfix::smoke {

namespace {

using Clock = std::chrono::steady_clock;

// stdin holds the marker's nonce on its first line, then the steps, each as "<bytes>\n<code>". The
// nonce is never in argv (issue 60, 8: /proc/<pid>/cmdline and ps show argv to the steps and to every
// user, who could print a forged "end <i> ok"); the driver keeps only the marker's prefix. A failed step
// prints its traceback as `python -c` would (without the driver's frame) and ends the interpreter;
// os._exit at the end skips the interpreter's teardown, which is not part of any step (hence the
// fflush of C's stdio before each marker: what a library printed is its step's, and not lost). A
// marker is one write() of less than PIPE_BUF, so a thread's output never splits it.
constexpr const char* kDriver = R"PY(
import os, sys, traceback, types
def _envfix_smoke():
    data = sys.stdin.buffer.read()
    at = data.index(b"\n") + 1
    tag = b"\n\x1e" + data[:at - 1] + b" "
    steps = []
    while at < len(data):
        nl = data.index(b"\n", at)
        n = int(data[at:nl])
        steps.append(data[nl + 1:nl + 1 + n].decode("utf-8"))
        at = nl + 1 + n
    try:
        import ctypes
        fflush = ctypes.CDLL(None).fflush
    except BaseException:
        fflush = None
    def mark(what):
        for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                f.flush()
            except BaseException:
                pass
        if fflush is not None:
            fflush(None)
        line = tag + (what + "\n").encode()
        os.write(1, line)
        os.write(2, line)
    for i, code in enumerate(steps):
        mark("start %d" % i)
        status = "ok"
        main = types.ModuleType("__main__")
        main.__builtins__ = __builtins__
        sys.modules["__main__"] = main
        sys.argv[:] = ["-c"]
        try:
            exec(compile(code, "<string>", "exec"), main.__dict__)
        except SystemExit as e:
            c = 0 if e.code is None else e.code
            if not isinstance(c, int):
                print(c, file=sys.stderr)
                c = 1
            if c & 0xFF:
                status = "exit %d" % (c & 0xFF)
        except BaseException as e:
            traceback.print_exception(type(e), e, e.__traceback__.tb_next)
            status = "exit 1"
        mark("end %d %s" % (i, status))
        if status != "ok":
            break
    os._exit(0)
_envfix_smoke()
)PY";

// One stream of the driver's output cut at its marker lines ("\n\x1e<nonce> start|end …"): the
// text before a marker (less the newline the driver wrote before it) is the running step's. Only
// a line's start is held back, while it may still be a marker; at most the last MiB of a step is
// kept (a step that prints without end, docs/reliability.md §5 item 8).
class StreamSplit {
public:
  explicit StreamSplit(std::string prefix) : m_prefix(std::move(prefix)) {}

  template <class OnMarker>
  void feed(std::string_view d, OnMarker&& on_marker) {
    while (!d.empty()) {
      const auto nl = d.find('\n');
      const auto part = d.substr(0, nl);
      if (m_in_line)
        add(part);
      else if (m_line.append(part); !may_be_marker()) {
        add(m_line);
        m_line.clear();
        m_in_line = true;
      }
      if (nl == std::string_view::npos) return;
      d.remove_prefix(nl + 1);
      if (!m_in_line && m_line.starts_with(m_prefix)) {
        if (!m_text.empty() && m_text.back() == '\n') m_text.pop_back();
        on_marker(std::string_view(m_line).substr(m_prefix.size()));
      } else {
        add(m_line);
        add("\n");
      }
      m_line.clear();
      m_in_line = false;
    }
  }
  [[nodiscard]] std::string take() { return std::exchange(m_text, {}); }

private:
  static constexpr std::size_t kKeep = std::size_t{1} << 20;
  void add(std::string_view s) {
    m_text.append(s);
    if (m_text.size() > 2 * kKeep) m_text.erase(0, m_text.size() - kKeep);
  }
  [[nodiscard]] bool may_be_marker() const {
    return m_line.size() <= m_prefix.size() ? std::string_view(m_prefix).starts_with(m_line)
                                            : m_line.starts_with(m_prefix) && m_line.size() < m_prefix.size() + 64;
  }
  std::string m_prefix, m_line, m_text;
  bool m_in_line = false; // inside a line that is not a marker
};

std::string make_nonce() {
  std::random_device rd;
  return fmt::format("envfix-smoke-{:08x}{:08x}", rd(), rd());
}

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What one interpreter reported while it ran steps[first, last).
struct Batch {
  const std::vector<SmokeStep>* steps = nullptr;
  std::size_t first = 0, last = 0;
  std::vector<StepRun> done;     // the steps it ended, in order
  std::vector<std::string> errs; // their stderr, as its markers come
  std::size_t reported = 0;      // of `done`, told to on_step
  Clock::time_point clock;       // the running step's start: the interpreter's, or the end of the step before
  bool timed_out = false;        // killed here: the running step outlived the timeout
};

// An "end <i> ok|exit <n>" marker on stdout: step first + done.size() ended.
void on_stdout_marker(Batch& b, std::string_view m, StreamSplit& out, const SmokeRunOptions& opt) {
  if (!m.starts_with("end ") || b.first + b.done.size() >= b.last) return;
  StepRun s;
  s.name = (*b.steps)[b.first + b.done.size()].name;
  const auto status = m.substr(m.find(' ', 4) + 1);
  s.ok = status == "ok";
  if (status.starts_with("exit ")) s.exit_code = std::atoi(std::string(status.substr(5)).c_str());
  s.seconds = since(b.clock);
  s.out = out.take();
  b.clock = Clock::now();
  b.done.push_back(std::move(s));
  // A passed step is told at once (the interpreter goes on); a failure once the interpreter is gone.
  if (b.done.back().ok && opt.on_step && b.reported + 1 == b.done.size()) {
    if (b.errs.size() >= b.done.size()) b.done.back().err = b.errs[b.done.size() - 1];
    opt.on_step(b.done.back());
    ++b.reported;
  }
}

util::SubprocessOptions interpreter_options(SmokeDevice device) {
  util::SubprocessOptions o;
  o.set_env["CUDA_LAUNCH_BLOCKING"] = "1";
  o.set_env["PYTHONDONTWRITEBYTECODE"] = "1";
  if (device == SmokeDevice::cpu) o.set_env["CUDA_VISIBLE_DEVICES"] = "";
  o.set_env["ENVFIX_DEVICE"] = device == SmokeDevice::cpu ? "cpu" : "cuda";
  o.unset_env = {"PYTHONPATH", "PYTHONHOME"};
  // Its own session: what a step leaves running is found and stopped when the interpreter ends,
  // before a rollback removes the files it runs from; and no index credentials (it needs none).
  o.new_session = true;
  o.drop_index_credentials = true;
  o.max_output = std::size_t{64} << 10; // the steps' own text is kept by StreamSplit
  return o;
}

// The step the interpreter was running when it ended without ending it (crashed, killed, exited).
StepRun unfinished_step(const Batch& b, const util::SubprocessResult& r, StreamSplit& out, StreamSplit& err) {
  StepRun s;
  s.name = (*b.steps)[b.first + b.done.size()].name;
  s.timed_out = b.timed_out || r.timed_out;
  s.term_signal = s.timed_out ? 0 : r.term_signal;
  s.exit_code = r.exit_code;
  // A step that ended the interpreter with status 0 (os._exit(0)) passed, as in its own process.
  s.ok = !s.timed_out && r.term_signal == 0 && r.exit_code == 0;
  s.seconds = since(b.clock);
  s.out = out.take();
  s.err = err.take();
  return s;
}

// Runs steps[first, last) (of one device) in one interpreter, up to the first that does not pass,
// appending at least one result to `run`.
Expected<void> run_interpreter(const std::filesystem::path& python, const std::vector<SmokeStep>& steps, std::size_t first,
                               std::size_t last, const SmokeRunOptions& opt, SmokeRun& run) {
  const std::string nonce = make_nonce();
  StreamSplit out("\x1e" + nonce + " "), err("\x1e" + nonce + " ");
  Batch b{&steps, first, last, {}, {}, 0, Clock::now(), false};
  util::SubprocessOptions o = interpreter_options(steps[first].device);
  std::string input = nonce + "\n";
  for (std::size_t i = first; i < last; ++i) input += fmt::format("{}\n{}", steps[i].code.size(), steps[i].code);
  o.stdin_data = std::move(input);
  // The per-step timeout is kept here; this one only stops an interpreter that outlives them all.
  o.timeout = opt.timeout * static_cast<int>(last - first + 1);
  o.cancel = [&] {
    if (opt.cancel && opt.cancel()) return true;
    b.timed_out = Clock::now() - b.clock > opt.timeout;
    return b.timed_out;
  };
  o.on_output = [&](int stream, std::string_view d) {
    if (stream == 1)
      out.feed(d, [&](std::string_view m) { on_stdout_marker(b, m, out, opt); });
    else
      err.feed(d, [&](std::string_view m) {
        if (m.starts_with("end ")) b.errs.push_back(err.take());
      });
  };
  // -I (run_python) from an empty directory: nothing in the caller's cwd shadows the installed
  // packages. -B: -I ignores PYTHONDONTWRITEBYTECODE, and byte-code written into the new set
  // would make a later rollback find files it did not install.
  b.clock = Clock::now();
  auto r = ENVFIX_TRY(util::run_python(python, {"-B", "-c", kDriver}, o));
  ++run.interpreters;
  const bool ran_out = b.first + b.done.size() >= last;
  if (r.cancelled && !b.timed_out)
    return fail(ErrorCode::interrupted, "smoke test {} stopped: envfix was interrupted",
                steps[ran_out ? last - 1 : first + b.done.size()].name);
  for (std::size_t i = 0; i < b.done.size() && i < b.errs.size(); ++i) b.done[i].err = b.errs[i];
  if (!ran_out && (b.done.empty() || b.done.back().ok)) b.done.push_back(unfinished_step(b, r, out, err));
  b.done.back().stopped = r.leftovers;
  run.stopped.insert(run.stopped.end(), r.leftovers.begin(), r.leftovers.end());
  for (std::size_t i = b.reported; i < b.done.size() && opt.on_step; ++i) opt.on_step(b.done[i]);
  run.steps.insert(run.steps.end(), std::make_move_iterator(b.done.begin()), std::make_move_iterator(b.done.end()));
  return {};
}

} // namespace

Expected<SmokeRun> run_steps(const std::filesystem::path& python, const std::vector<SmokeStep>& steps,
                             const SmokeRunOptions& options) {
  SmokeRun run;
  // Consecutive steps of one device share an interpreter: a CPU step never runs where CUDA is visible.
  while (run.steps.size() < steps.size()) {
    const std::size_t first = run.steps.size();
    std::size_t last = first;
    while (last < steps.size() && steps[last].device == steps[first].device) ++last;
    ENVFIX_TRY_VOID(run_interpreter(python, steps, first, last, options, run));
    if (options.stop_at_failure && !run.steps.back().ok) break;
  }
  return run;
}

} // namespace envfix::smoke
