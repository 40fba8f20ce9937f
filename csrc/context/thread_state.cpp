#include "context/thread_state.h"

namespace ftp {

ThreadState& threadState() {
  static thread_local ThreadState state;
  return state;
}

}  // namespace ftp
