// Callgrind client requests around a profiled call (nitro.profiling.cpu): with
// `valgrind --tool=callgrind --instr-atstart=no`, only code between start() and stop() is
// simulated and counted; dump() writes the counts so far to a new numbered output file. Outside valgrind, or when <valgrind/callgrind.h> was not found at
// build time, they do nothing (available() says which).
#pragma once

namespace nitro::profiling {

bool available();
void start();
void stop();
void dump();

}  // namespace nitro::profiling
