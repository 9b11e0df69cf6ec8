#pragma once
// What a failed run printed, read for verify's report (api/verify.cpp): the CUDA error line and its
// class, where the Python traceback ends, and the operator a model check was running.
#include <string>
#include <string_view>
#include <utility>

#include "diagnosis/cuda_error.hpp"
#include "util/message.hpp"

namespace envfix::diagnosis {

// The first line of `text` naming a CUDA error, and its class; {"", none} when no line does.
[[nodiscard]] std::pair<std::string, CudaError> first_cuda_error(std::string_view text);
// The innermost frame of the last Python traceback in `text`: its `File "…", line N, in f` line and
// the source line under it (`File "x.py", line 7, in f: y = op(x)`); "" without a traceback. With
// asynchronous kernel errors this is where CUDA *reported* the error.
[[nodiscard]] std::string traceback_end(std::string_view text);
// The last "OP <name>" line a model check printed (matrices `smoke.model`): the operator that was
// running; "" when none.
[[nodiscard]] std::string last_op(std::string_view out);

// The guide's second and third layers of the error: kernel launches are asynchronous, so without
// CUDA_LAUNCH_BLOCKING=1 the error surfaces at a later call and the traceback's end (`where`) may
// point past the culprit. "" for a run that was synchronous or showed no error.
[[nodiscard]] util::Message async_note(std::string_view command, std::string_view where, bool sync, bool errored);
// "no kernel image" in an app while the binaries of `framework` and of every GPU extension hold code
// for `gpus` ("sm_90, sm_120"): what must be rebuilt, since no reinstall can help.
[[nodiscard]] util::Message rebuild_note(std::string_view framework, std::string_view gpus);

} // namespace envfix::diagnosis
