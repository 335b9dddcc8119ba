// CPU application proxies for P-DFS (the paper's Table 3): a kernel whose instruction mix is
// about phi*20% of one kind (phi = 0..5), the rest plain integer work. Each call processes n
// elements with five operation slots per element, phi of them of the proxy's kind, and returns
// how many operations of that kind it performed (phi * n), so that a profile can be normalised.
#pragma once
#include <cstddef>
#include <cstdint>

namespace nitro::proxies {

enum class Kind { SpFlop, DpFlop, Atomic, MemBw, ShMemBw };

std::uint64_t run(Kind kind, int phi, std::size_t n);

}  // namespace nitro::proxies
