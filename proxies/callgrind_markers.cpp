#include "callgrind_markers.hpp"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define NITRO_HAVE_CALLGRIND 1
#endif

namespace nitro::profiling {

#ifdef NITRO_HAVE_CALLGRIND
bool available() { return true; }
void start() {
  CALLGRIND_ZERO_STATS;
  CALLGRIND_START_INSTRUMENTATION;
}
void stop() { CALLGRIND_STOP_INSTRUMENTATION; }
void dump() { CALLGRIND_DUMP_STATS; }
#else
bool available() { return false; }
void start() {}
void stop() {}
void dump() {}
#endif

}  // namespace nitro::profiling
