// CPU application proxies for P-DFS (the paper's Table 3): a kernel whose instruction mix is
// about phi*20% of one kind (phi = 0..5), the rest integer adds on registers. Each call processes
// n elements of five one-instruction slots, phi of them of the proxy's kind (an SSE single or
// double add, a lock-prefixed add, a load from a new cache line of a 128 MiB array or of a
// 16 KiB L1-resident one), and returns how many operations of that kind it performed
// (phi * n), so that a profile can be normalised. nitro.profiling.cpu measures the mix.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nitro::proxies {

enum class Kind { SpFlop, DpFlop, Atomic, MemBw, ShMemBw };

std::uint64_t run(Kind kind, int phi, std::size_t n);

}  // namespace nitro::proxies
