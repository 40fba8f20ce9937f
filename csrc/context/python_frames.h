// The python context: the Python call stack of the launching thread as interned frame names
// "<file>:<line>@<function>", outermost first, with Triton's and this package's own frames
// left out so that the innermost frame is the user's launch site.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ftp {

// Fills `out`; takes the GIL if the calling thread does not hold it. Leaves `out` empty when
// Python is not running (e.g. a launch from a C++ thread during interpreter shutdown).
void capturePythonFrames(std::vector<uint32_t>& out);

// Files whose path contains one of `fragments` are left out of the stack too (flagtree-profiler
// pytest: pytest's and pluggy's frames above each test). Set before the first capture: frames
// already seen keep the decision made for them.
void setExtraInternalFiles(std::vector<std::string> fragments);

}  // namespace ftp
