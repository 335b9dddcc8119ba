// CUDA histogram variants (see histogram_cuda.hpp).
//
// Work mappings: "even" kernels walk the input with a grid-stride loop, so every thread
// gets the same share; "dynamic" kernels let each block claim fixed-size chunks from a
// global work counter (atomicAdd) until the input is exhausted.
// sort_even is CUB's device-wide radix sort followed by CUB's run-length encoding;
// sort_dynamic sorts each claimed chunk inside the block (cub::BlockRadixSort) and counts
// its runs in shared memory, as CUB's sort-based block histogram does.
#include "histogram_cuda.hpp"
#include "cuda_error.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cub/block/block_radix_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

namespace nitro::cuda {
namespace {

using Bin = unsigned long long;

constexpr int kThreads = 256;            // threads per block; == bins (sort_dynamic relies on it)
constexpr int kChunk = kThreads * 16;    // bytes per claim of the atomic kernels' work counter
constexpr int kSortItems = 8;            // keys per thread in sort_dynamic
constexpr int kSortTile = kThreads * kSortItems;
static_assert(kThreads == kHistogramBins, "one thread per bin in the merge steps");

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error in ") + what + ": " + nitro::cuda_error_text(err));
}

int current_device() {
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

// nitro's stream-ordered memory pool on a device (nullptr where the device has no memory pools).
// Its release threshold is unlimited: memory freed at the end of a call stays in the pool and
// the next call's scratch is a sub-allocation, not a cudaMalloc (with the default threshold, 0,
// every call would hand memory back to the driver and pay for it again inside the timing).
// A pool of its own leaves the device's default pool, which the caller may use, as it is.
cudaMemPool_t scratch_pool(int device) {
  static std::mutex mutex;
  static std::map<int, cudaMemPool_t> pools;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = pools.find(device);
  if (found != pools.end()) return found->second;
  int supported = 0;
  check(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device), "querying memory pools");
  cudaMemPool_t pool = nullptr;
  if (supported) {
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    check(cudaMemPoolCreate(&pool, &props), "creating the scratch memory pool");
    std::uint64_t unlimited = UINT64_MAX;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &unlimited),
          "keeping scratch memory in its pool");
  }
  pools.emplace(device, pool);
  return pool;
}

// Device scratch memory from nitro's pool (stream-ordered), cudaMalloc where pools are unsupported.
class Scratch {
 public:
  Scratch(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    cudaMemPool_t pool = scratch_pool(current_device());
    async_ = pool != nullptr;
    check(async_ ? cudaMallocFromPoolAsync(&ptr_, bytes, pool, stream) : cudaMalloc(&ptr_, bytes),
          "allocating scratch memory");
  }
  ~Scratch() {
    if (ptr_) (void)(async_ ? cudaFreeAsync(ptr_, stream_) : cudaFree(ptr_));
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  char* get() const { return static_cast<char*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_;
  bool async_ = true;
};

// ---- kernels -------------------------------------------------------------------------------

// Start of the next chunk claimed by this block (all threads of the block must call it).
__device__ std::size_t claim(Bin* counter) {
  __shared__ Bin start;
  if (threadIdx.x == 0) start = atomicAdd(counter, static_cast<Bin>(kChunk));
  __syncthreads();
  const std::size_t begin = start;
  __syncthreads();  // every thread has read it before the next claim overwrites it
  return begin;
}

__global__ void global_atomic_even_kernel(const std::uint8_t* data, std::size_t n, Bin* bins) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    atomicAdd(&bins[data[i]], Bin{1});
}

__global__ void global_atomic_dynamic_kernel(const std::uint8_t* data, std::size_t n, Bin* bins, Bin* counter) {
  for (std::size_t begin = claim(counter); begin < n; begin = claim(counter)) {
    const std::size_t end = min(n, begin + kChunk);
    for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) atomicAdd(&bins[data[i]], Bin{1});
  }
}

// Per-block counts fit 32 bits: n <= kMaxItems < 2^32.
__device__ void merge_shared(const unsigned int* local, Bin* bins) {
  __syncthreads();
  const unsigned int count = local[threadIdx.x];
  if (count) atomicAdd(&bins[threadIdx.x], static_cast<Bin>(count));
}

__global__ void shared_atomic_even_kernel(const std::uint8_t* data, std::size_t n, Bin* bins) {
  __shared__ unsigned int local[kHistogramBins];
  local[threadIdx.x] = 0;
  __syncthreads();
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    atomicAdd(&local[data[i]], 1u);
  merge_shared(local, bins);
}

__global__ void shared_atomic_dynamic_kernel(const std::uint8_t* data, std::size_t n, Bin* bins, Bin* counter) {
  __shared__ unsigned int local[kHistogramBins];
  local[threadIdx.x] = 0;
  __syncthreads();
  for (std::size_t begin = claim(counter); begin < n; begin = claim(counter)) {
    const std::size_t end = min(n, begin + kChunk);
    for (std::size_t i = begin + threadIdx.x; i < end; i += blockDim.x) atomicAdd(&local[data[i]], 1u);
  }
  merge_shared(local, bins);
}

// Sorts each claimed tile in the block; a run of equal keys [start, end) in the sorted tile
// adds end - start to its bin. Thread b accumulates bin b over the block's tiles.
__global__ void __launch_bounds__(kThreads)
sort_dynamic_kernel(const std::uint8_t* data, std::size_t n, Bin* bins, Bin* counter) {
  using BlockSort = cub::BlockRadixSort<unsigned char, kThreads, kSortItems>;
  __shared__ typename BlockSort::TempStorage sort_storage;
  __shared__ unsigned char sorted[kSortTile];
  __shared__ unsigned int run_start[kHistogramBins], run_end[kHistogramBins];
  __shared__ Bin tile_start;
  Bin mine = 0;
  for (;;) {
    if (threadIdx.x == 0) tile_start = atomicAdd(counter, static_cast<Bin>(kSortTile));
    run_start[threadIdx.x] = 0;
    run_end[threadIdx.x] = 0;
    __syncthreads();
    const std::size_t begin = tile_start;
    if (begin >= n) break;  // the same for every thread of the block
    const unsigned int valid = static_cast<unsigned int>(min(static_cast<std::size_t>(kSortTile), n - begin));
    unsigned char keys[kSortItems];
    for (int j = 0; j < kSortItems; ++j) {
      const unsigned int k = threadIdx.x * kSortItems + j;
      keys[j] = k < valid ? data[begin + k] : 0xFF;  // padding sorts last; removed from bin 255 below
    }
    BlockSort(sort_storage).Sort(keys);  // blocked arrangement: thread t holds ranks t*kSortItems + j
    for (int j = 0; j < kSortItems; ++j) sorted[threadIdx.x * kSortItems + j] = keys[j];
    __syncthreads();
    for (int i = threadIdx.x; i < kSortTile; i += kThreads) {
      const unsigned char k = sorted[i];
      if (i == 0 || sorted[i - 1] != k) run_start[k] = i;
      if (i == kSortTile - 1 || sorted[i + 1] != k) run_end[k] = i + 1;
    }
    __syncthreads();
    unsigned int count = run_end[threadIdx.x] - run_start[threadIdx.x];
    if (threadIdx.x == kHistogramBins - 1) count -= kSortTile - valid;
    mine += count;
    __syncthreads();  // all reads done before the next tile resets the shared arrays
  }
  if (mine) atomicAdd(&bins[threadIdx.x], mine);
}

// bins[unique[r]] = counts[r] for every run r of the device-wide run-length encoding.
__global__ void scatter_runs_kernel(const unsigned char* unique, const int* counts, const int* num_runs, Bin* bins) {
  if (static_cast<int>(threadIdx.x) < *num_runs) bins[unique[threadIdx.x]] = static_cast<Bin>(counts[threadIdx.x]);
}

// ---- launch helpers ------------------------------------------------------------------------

struct Launch {
  const std::uint8_t* data;
  std::size_t n;
  Bin* bins;
  cudaStream_t stream;
};

// Validates the arguments and zeroes the bins; false when there is nothing to count.
bool start(Launch& l, std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream) {
  if (n > kMaxItems) throw std::invalid_argument("CUDA histogram: at most 2^31 - 1 items per call");
  if (bins == 0 || (n > 0 && data == 0)) throw std::invalid_argument("CUDA histogram: null device pointer");
  l = {reinterpret_cast<const std::uint8_t*>(data), n, reinterpret_cast<Bin*>(bins),
       reinterpret_cast<cudaStream_t>(stream)};
  check(cudaMemsetAsync(l.bins, 0, kHistogramBins * sizeof(Bin), l.stream), "zeroing the bins");
  return n > 0;
}

// Blocks that fill a device with a kernel (SMs x resident blocks per SM), queried once per
// kernel and device rather than on every launch.
template <class Kernel>
std::size_t resident_blocks(Kernel kernel, int device) {
  static std::mutex mutex;
  static std::map<std::pair<const void*, int>, std::size_t> known;
  const auto key = std::make_pair(reinterpret_cast<const void*>(kernel), device);
  std::lock_guard<std::mutex> lock(mutex);
  auto found = known.find(key);
  if (found != known.end()) return found->second;
  int sms = 0, per_sm = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "querying multiprocessors");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0), "querying occupancy");
  const std::size_t full = static_cast<std::size_t>(std::max(1, sms * std::max(1, per_sm)));
  known.emplace(key, full);
  return full;
}

// Enough blocks to fill the device (occupancy-limited), no more than the work needs.
template <class Kernel>
int grid_size(Kernel kernel, std::size_t n, std::size_t items_per_block) {
  const std::size_t needed = (n + items_per_block - 1) / items_per_block;
  const std::size_t full = resident_blocks(kernel, current_device());
  return static_cast<int>(std::max<std::size_t>(1, std::min(needed, full)));
}

// A zeroed work counter on the launch's stream.
struct Counter {
  explicit Counter(cudaStream_t stream) : memory(sizeof(Bin), stream) {
    check(cudaMemsetAsync(memory.get(), 0, sizeof(Bin), stream), "zeroing the work counter");
  }
  Bin* get() const { return reinterpret_cast<Bin*>(memory.get()); }
  Scratch memory;
};

void launched(const char* what) { check(cudaGetLastError(), what); }

constexpr std::size_t align_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

void histogram_sort_even(std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream) {
  Launch l;
  if (!start(l, data, n, bins, stream)) return;
  const int items = static_cast<int>(n);
  unsigned char* null_keys = nullptr;
  int* null_ints = nullptr;
  std::size_t sort_bytes = 0, rle_bytes = 0;
  check(cub::DeviceRadixSort::SortKeys(nullptr, sort_bytes, l.data, null_keys, items, 0, 8, l.stream),
        "sizing cub::DeviceRadixSort");
  check(cub::DeviceRunLengthEncode::Encode(nullptr, rle_bytes, null_keys, null_keys, null_ints, null_ints, items,
                                           l.stream),
        "sizing cub::DeviceRunLengthEncode");
  // layout: sorted keys | unique keys | run lengths | number of runs | CUB temporary storage
  const std::size_t sorted_at = 0, unique_at = align_up(n), counts_at = unique_at + align_up(kHistogramBins),
                    runs_at = counts_at + align_up(kHistogramBins * sizeof(int)), temp_at = runs_at + align_up(sizeof(int));
  std::size_t temp_bytes = std::max(sort_bytes, rle_bytes);
  Scratch scratch(temp_at + temp_bytes, l.stream);
  char* base = scratch.get();
  auto* sorted = reinterpret_cast<unsigned char*>(base + sorted_at);
  auto* unique = reinterpret_cast<unsigned char*>(base + unique_at);
  auto* counts = reinterpret_cast<int*>(base + counts_at);
  auto* num_runs = reinterpret_cast<int*>(base + runs_at);
  void* temp = base + temp_at;
  check(cub::DeviceRadixSort::SortKeys(temp, temp_bytes, l.data, sorted, items, 0, 8, l.stream),
        "cub::DeviceRadixSort::SortKeys");
  temp_bytes = std::max(sort_bytes, rle_bytes);
  check(cub::DeviceRunLengthEncode::Encode(temp, temp_bytes, sorted, unique, counts, num_runs, items, l.stream),
        "cub::DeviceRunLengthEncode::Encode");
  scatter_runs_kernel<<<1, kHistogramBins, 0, l.stream>>>(unique, counts, num_runs, l.bins);
  launched("scatter_runs_kernel");
}

void histogram_sort_dynamic(std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream) {
  Launch l;
  if (!start(l, data, n, bins, stream)) return;
  Counter counter(l.stream);
  const int grid = grid_size(sort_dynamic_kernel, n, kSortTile);
  sort_dynamic_kernel<<<grid, kThreads, 0, l.stream>>>(l.data, l.n, l.bins, counter.get());
  launched("sort_dynamic_kernel");
}

void histogram_global_atomic_even(std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream) {
  Launch l;
  if (!start(l, data, n, bins, stream)) return;
  const int grid = grid_size(global_atomic_even_kernel, n, kThreads);
  global_atomic_even_kernel<<<grid, kThreads, 0, l.stream>>>(l.data, l.n, l.bins);
  launched("global_atomic_even_kernel");
}

void histogram_global_atomic_dynamic(std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream) {
  Launch l;
  if (!start(l, data, n, bins, stream)) return;
  Counter counter(l.stream);
  const int grid = grid_size(global_atomic_dynamic_kernel, n, kChunk);
  global_atomic_dynamic_kernel<<<grid, kThreads, 0, l.stream>>>(l.data, l.n, l.bins, counter.get());
  launched("global_atomic_dynamic_kernel");
}

void histogram_shared_atomic_even(std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream) {
  Launch l;
  if (!start(l, data, n, bins, stream)) return;
  const int grid = grid_size(shared_atomic_even_kernel, n, kThreads);
  shared_atomic_even_kernel<<<grid, kThreads, 0, l.stream>>>(l.data, l.n, l.bins);
  launched("shared_atomic_even_kernel");
}

void histogram_shared_atomic_dynamic(std::uintptr_t data, std::size_t n, std::uintptr_t bins, std::uintptr_t stream) {
  Launch l;
  if (!start(l, data, n, bins, stream)) return;
  Counter counter(l.stream);
  const int grid = grid_size(shared_atomic_dynamic_kernel, n, kChunk);
  shared_atomic_dynamic_kernel<<<grid, kThreads, 0, l.stream>>>(l.data, l.n, l.bins, counter.get());
  launched("shared_atomic_dynamic_kernel");
}

}  // namespace nitro::cuda
