// memest-calibrate, GPU side: fills a Measurement on the device the options name.
// CUDA runtime (linked statically, so the program starts without libcuda), cuBLAS (shared);
// NVML and NCCL are loaded with dlopen when present and skipped with a note when not.
#include <cuda_bf16.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "measure.hpp"

namespace memest_calibrate {

namespace {

// ---------------------------------------------------------------------------------------------
// Errors

std::string cuda_text(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cuda_text(e));
}

void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
  }
}

int64_t free_bytes() {
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return static_cast<int64_t>(free);
}

// Device memory that frees itself.
struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) { check(cudaMalloc(&ptr, bytes), "cudaMalloc"); }
  ~DeviceBuffer() { if (ptr) cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  Events() {
    check(cudaEventCreate(&start), "cudaEventCreate");
    check(cudaEventCreate(&stop), "cudaEventCreate");
  }
  ~Events() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  float ms() {
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    return t;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// ---------------------------------------------------------------------------------------------
// Kernels: fill (GEMM inputs must not be zeros: a power-limited GPU runs zeros faster) and copy

__global__ void fill_bf16(__nv_bfloat16* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    p[i] = __float2bfloat16((static_cast<float>(x & 0xffffu) / 65536.0f - 0.5f) * 0.25f);
  }
}

void fill(void* p, size_t elements, uint32_t seed) {
  fill_bf16<<<1024, 256>>>(static_cast<__nv_bfloat16*>(p), elements, seed);
  check(cudaGetLastError(), "fill kernel");
}

// ---------------------------------------------------------------------------------------------
// NVML (dlopen): device memory in use before the context exists, and the driver version

struct Nvml {
  struct Memory {
    unsigned long long total, free, used;
  };
  using InitFn = int (*)();
  using ShutdownFn = int (*)();
  using HandleFn = int (*)(const char*, void**);
  using MemoryFn = int (*)(void*, Memory*);
  using DriverFn = int (*)(char*, unsigned);

  void* lib = nullptr;
  void* device = nullptr;
  MemoryFn memory = nullptr;
  ShutdownFn shutdown = nullptr;
  std::string driver;

  explicit Nvml(const char* pci_bus_id) {
    lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
    shutdown = reinterpret_cast<ShutdownFn>(dlsym(lib, "nvmlShutdown"));
    auto handle = reinterpret_cast<HandleFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    memory = reinterpret_cast<MemoryFn>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
    auto version = reinterpret_cast<DriverFn>(dlsym(lib, "nvmlSystemGetDriverVersion"));
    if (!init || !shutdown || !handle || !memory || init() != 0) {
      dlclose(lib);
      lib = nullptr;
      return;
    }
    char text[96] = {0};
    if (version && version(text, sizeof text) == 0) driver = text;
    if (handle(pci_bus_id, &device) != 0) device = nullptr;
  }
  ~Nvml() {
    if (lib) {
      shutdown();
      dlclose(lib);
    }
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  bool used(int64_t& out) const {
    Memory m{};
    if (!lib || !device || memory(device, &m) != 0) return false;
    out = static_cast<int64_t>(m.used);
    return true;
  }
};

// ---------------------------------------------------------------------------------------------
// NCCL (dlopen): one process, one communicator over every local GPU (ncclCommInitAll)

void measure_nccl(Measurement& m, std::ostream& log) {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    m.nccl_note = std::string("NCCL not measured: libnccl.so.2 did not load (") +
                  (why ? why : "unknown") + ")";
    return;
  }
  using Comm = void*;
  using VersionFn = int (*)(int*);
  using InitAllFn = int (*)(Comm*, int, const int*);
  using DestroyFn = int (*)(Comm);
  using AllReduceFn = int (*)(const void*, void*, size_t, int, int, Comm, cudaStream_t);
  using GroupFn = int (*)();
  using ErrorFn = const char* (*)(int);
  auto version = reinterpret_cast<VersionFn>(dlsym(lib, "ncclGetVersion"));
  auto init_all = reinterpret_cast<InitAllFn>(dlsym(lib, "ncclCommInitAll"));
  auto destroy = reinterpret_cast<DestroyFn>(dlsym(lib, "ncclCommDestroy"));
  auto all_reduce = reinterpret_cast<AllReduceFn>(dlsym(lib, "ncclAllReduce"));
  auto group_start = reinterpret_cast<GroupFn>(dlsym(lib, "ncclGroupStart"));
  auto group_end = reinterpret_cast<GroupFn>(dlsym(lib, "ncclGroupEnd"));
  auto error = reinterpret_cast<ErrorFn>(dlsym(lib, "ncclGetErrorString"));
  if (!version || !init_all || !destroy || !all_reduce || !group_start || !group_end) {
    m.nccl_note = "NCCL not measured: libnccl.so.2 lacks an expected symbol";
    dlclose(lib);
    return;
  }
  auto nccl_text = [&](int r) { return error ? std::string(error(r)) : "error " + std::to_string(r); };
  constexpr int kFloat32 = 7, kSum = 0;  // ncclFloat32, ncclSum (nccl.h)
  constexpr size_t kCount = 1 << 18;     // 1 MiB of floats per rank

  const int n = m.device_count;
  log << "memest-calibrate: NCCL communicator over " << n << " GPU(s)\n";
  std::vector<int> devices(static_cast<size_t>(n));
  std::vector<void*> buffers(static_cast<size_t>(n), nullptr);
  std::vector<cudaStream_t> streams(static_cast<size_t>(n), nullptr);
  std::vector<Comm> comms(static_cast<size_t>(n), nullptr);
  for (int d = 0; d < n; ++d) {
    devices[static_cast<size_t>(d)] = d;
    check(cudaSetDevice(d), "cudaSetDevice");
    check(cudaMalloc(&buffers[static_cast<size_t>(d)], kCount * sizeof(float)), "cudaMalloc");
    check(cudaMemset(buffers[static_cast<size_t>(d)], 0, kCount * sizeof(float)), "cudaMemset");
    check(cudaStreamCreate(&streams[static_cast<size_t>(d)]), "cudaStreamCreate");
  }
  check(cudaSetDevice(m.device_index), "cudaSetDevice");
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const int64_t before = free_bytes();

  int r = init_all(comms.data(), n, devices.data());
  if (r == 0) {
    group_start();
    for (int d = 0; d < n && r == 0; ++d) {
      const size_t i = static_cast<size_t>(d);
      r = all_reduce(buffers[i], buffers[i], kCount, kFloat32, kSum, comms[i], streams[i]);
    }
    const int end = group_end();
    if (r == 0) r = end;
    for (int d = 0; d < n; ++d) {
      check(cudaSetDevice(d), "cudaSetDevice");
      check(cudaStreamSynchronize(streams[static_cast<size_t>(d)]), "cudaStreamSynchronize");
    }
    check(cudaSetDevice(m.device_index), "cudaSetDevice");
    if (r == 0) {
      m.nccl_bytes = before - free_bytes();
      int v = 0;
      version(&v);
      m.nccl_version = v;
      m.nccl_ranks = n;
    } else {
      m.nccl_note = "NCCL not measured: all-reduce failed (" + nccl_text(r) + ")";
    }
    for (Comm c : comms) destroy(c);
  } else {
    m.nccl_note = "NCCL not measured: ncclCommInitAll failed (" + nccl_text(r) + ")";
  }
  for (int d = 0; d < n; ++d) {
    cudaSetDevice(d);
    cudaStreamDestroy(streams[static_cast<size_t>(d)]);
    cudaFree(buffers[static_cast<size_t>(d)]);
  }
  check(cudaSetDevice(m.device_index), "cudaSetDevice");
  // libnccl stays loaded: its teardown at exit is its own business.
}

// ---------------------------------------------------------------------------------------------
// GEMMs: Y[m x n] = X[m x k] W[n x k]^T as nn.Linear's forward (cuBLAS column-major: TN)

cublasStatus_t linear(cublasHandle_t h, const GemmPoint& g, const void* x, const void* w, void* y) {
  const float alpha = 1.0f, beta = 0.0f;
  return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(g.n), static_cast<int>(g.m),
                      static_cast<int>(g.k), &alpha, w, CUDA_R_16BF, static_cast<int>(g.k), x,
                      CUDA_R_16BF, static_cast<int>(g.k), &beta, y, CUDA_R_16BF,
                      static_cast<int>(g.n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

// Seconds per GEMM: two warm-up calls, then 5 repetitions of a batch long enough for ~20 ms;
// the median repetition.
double time_gemm(cublasHandle_t h, const GemmPoint& g, const void* x, const void* w, void* y) {
  Events ev;
  for (int i = 0; i < 2; ++i) check_blas(linear(h, g, x, w, y), "cublasGemmEx");
  check(cudaEventRecord(ev.start), "cudaEventRecord");
  check_blas(linear(h, g, x, w, y), "cublasGemmEx");
  check(cudaEventRecord(ev.stop), "cudaEventRecord");
  const double one = std::max(1e-6, ev.ms() / 1e3);
  const int iters = static_cast<int>(std::clamp(0.02 / one, 3.0, 500.0));
  std::vector<double> reps;
  for (int rep = 0; rep < 5; ++rep) {
    check(cudaEventRecord(ev.start), "cudaEventRecord");
    for (int i = 0; i < iters; ++i) check_blas(linear(h, g, x, w, y), "cublasGemmEx");
    check(cudaEventRecord(ev.stop), "cudaEventRecord");
    reps.push_back(ev.ms() / 1e3 / iters);
  }
  return median(reps);
}

// ---------------------------------------------------------------------------------------------
// Copies

double time_copy(void* dst, int dst_dev, const void* src, int src_dev, size_t bytes) {
  Events ev;
  auto copy = [&]() {
    if (dst_dev == src_dev) {
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpyAsync");
    } else {
      check(cudaMemcpyPeerAsync(dst, dst_dev, src, src_dev, bytes), "cudaMemcpyPeerAsync");
    }
  };
  copy();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::vector<double> reps;
  for (int rep = 0; rep < 5; ++rep) {
    check(cudaEventRecord(ev.start), "cudaEventRecord");
    for (int i = 0; i < 4; ++i) copy();
    check(cudaEventRecord(ev.stop), "cudaEventRecord");
    reps.push_back(ev.ms() / 1e3 / 4);
  }
  return median(reps);
}

}  // namespace

MeasureStatus measure_cuda(const Options& opt, Measurement& m, std::string& message,
                           std::ostream& log) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    message = "no CUDA device found (cudaGetDeviceCount: " +
              (e != cudaSuccess ? cuda_text(e) : std::string("0 devices")) + ")";
    return MeasureStatus::no_device;
  }
  if (opt.device >= count) {
    message = "--device " + std::to_string(opt.device) + ": only " + std::to_string(count) +
              " CUDA device(s) visible (0.." + std::to_string(count - 1) + ")";
    return MeasureStatus::bad_argument;
  }
  const int dev = opt.device;
  m.device_index = dev;
  m.device_count = count;

  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, dev), "cudaGetDeviceProperties");
  m.device_name = prop.name;
  m.cc_major = prop.major;
  m.cc_minor = prop.minor;
  m.multiprocessors = prop.multiProcessorCount;
  char bus[32] = {0};
  check(cudaDeviceGetPCIBusId(bus, sizeof bus, dev), "cudaDeviceGetPCIBusId");
  m.pci_bus_id = bus;
  check(cudaDriverGetVersion(&m.driver_version), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&m.runtime_version), "cudaRuntimeGetVersion");
  log << "memest-calibrate: " << m.device_name << " (device " << dev << " of " << count << ", "
      << m.pci_bus_id << ")\n";

  // Context: NVML's "used" before and after it exists; without NVML, total - free once it does
  // (which also counts what other processes hold).
  {
    Nvml nvml(bus);
    m.nvml_driver_version = nvml.driver;
    int64_t used_before = 0, used_after = 0;
    const bool have_before = nvml.used(used_before);
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(cudaFree(nullptr), "context creation (cudaFree(0))");
    size_t free = 0, total = 0;
    check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
    m.total_bytes = static_cast<int64_t>(total);
    m.free_bytes = static_cast<int64_t>(free);
    if (have_before && nvml.used(used_after)) {
      m.context_bytes = used_after - used_before;
      m.context_method = "nvml";
    } else {
      m.context_bytes = m.total_bytes - m.free_bytes;
      m.context_method = "total_minus_free";
      m.notes.push_back("context measured as total - free after context creation (NVML "
                        "unavailable): includes what other processes hold on the device");
    }
  }

  // Allocation granularity: what single cudaMallocs take from free memory.
  for (const int64_t size : {int64_t{1}, int64_t{512} << 10, (int64_t{1} << 20) + 1,
                             (int64_t{2} << 20) + 1, (int64_t{3} << 20) + 1,
                             (int64_t{64} << 20) + 1}) {
    const int64_t before = free_bytes();
    void* p = nullptr;
    check(cudaMalloc(&p, static_cast<size_t>(size)), "cudaMalloc");
    const int64_t after = free_bytes();
    check(cudaFree(p), "cudaFree");
    m.allocations.push_back({size, before - after});
  }

  // cuBLAS: the handle, then its workspace and kernels with a first GEMM.
  cublasHandle_t blas = nullptr;
  {
    GemmPoint first;
    first.m = 256;
    first.n = 4096;
    first.k = 4096;
    DeviceBuffer x(static_cast<size_t>(first.m * first.k) * 2), w(static_cast<size_t>(first.n * first.k) * 2),
        y(static_cast<size_t>(first.m * first.n) * 2);
    fill(x.ptr, static_cast<size_t>(first.m * first.k), 1);
    fill(w.ptr, static_cast<size_t>(first.n * first.k), 2);
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const int64_t before = free_bytes();
    check_blas(cublasCreate(&blas), "cublasCreate");
    m.cublas_handle_bytes = before - free_bytes();
    check_blas(linear(blas, first, x.ptr, w.ptr, y.ptr), "cublasGemmEx");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    m.cublas_workspace_bytes = before - free_bytes();
  }

  if (opt.skip_nccl) {
    m.nccl_note = "NCCL not measured: --skip-nccl";
  } else {
    measure_nccl(m, log);
  }

  // GEMM throughput over the shapes a layout produces.
  {
    std::vector<GemmPoint> shapes = gemm_shapes(opt.quick);
    const int64_t budget = free_bytes() * 8 / 10;
    auto need = [](const std::vector<GemmPoint>& s) {
      int64_t x = 0, w = 0, y = 0;
      for (const GemmPoint& g : s) {
        x = std::max(x, g.m * g.k);
        w = std::max(w, g.n * g.k);
        y = std::max(y, g.m * g.n);
      }
      return 2 * (x + w + y);
    };
    while (!shapes.empty() && need(shapes) > budget) {  // drop the largest row count
      int64_t top = 0;
      for (const GemmPoint& g : shapes) top = std::max(top, g.m);
      m.notes.push_back("GEMMs with " + std::to_string(top) + " rows skipped: not enough free memory");
      shapes.erase(std::remove_if(shapes.begin(), shapes.end(),
                                  [&](const GemmPoint& g) { return g.m == top; }),
                   shapes.end());
    }
    if (!shapes.empty()) {
      int64_t xe = 0, we = 0, ye = 0;
      for (const GemmPoint& g : shapes) {
        xe = std::max(xe, g.m * g.k);
        we = std::max(we, g.n * g.k);
        ye = std::max(ye, g.m * g.n);
      }
      DeviceBuffer x(static_cast<size_t>(xe) * 2), w(static_cast<size_t>(we) * 2), y(static_cast<size_t>(ye) * 2);
      fill(x.ptr, static_cast<size_t>(xe), 3);
      fill(w.ptr, static_cast<size_t>(we), 4);
      check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      log << "memest-calibrate: " << shapes.size() << " bf16 GEMMs\n";
      for (GemmPoint& g : shapes) {
        g.seconds = time_gemm(blas, g, x.ptr, w.ptr, y.ptr);
        m.gemm.push_back(g);
      }
    }
  }
  cublasDestroy(blas);

  // HBM: device-to-device copy of 1 GiB (256 MiB when memory is short).
  {
    size_t bytes = size_t{1} << 30;
    if (free_bytes() < 3 * static_cast<int64_t>(bytes)) bytes = size_t{256} << 20;
    DeviceBuffer a(bytes), b(bytes);
    check(cudaMemset(a.ptr, 1, bytes), "cudaMemset");
    log << "memest-calibrate: HBM copy\n";
    CopyTiming t;
    t.src = t.dst = dev;
    t.bytes = static_cast<int64_t>(bytes);
    t.seconds = time_copy(b.ptr, dev, a.ptr, dev, bytes);
    m.hbm_copy = t;
  }

  // Peer-to-peer: 256 MiB from the measured GPU to each other local GPU.
  for (int peer = 0; peer < count; ++peer) {
    if (peer == dev) continue;
    int can = 0;
    check(cudaDeviceCanAccessPeer(&can, dev, peer), "cudaDeviceCanAccessPeer");
    if (!can) {
      m.notes.push_back("no peer access from device " + std::to_string(dev) + " to " +
                        std::to_string(peer) + ": not measured (copies would go through the host)");
      continue;
    }
    const size_t bytes = size_t{256} << 20;
    check(cudaSetDevice(peer), "cudaSetDevice");
    const cudaError_t pe = cudaDeviceEnablePeerAccess(dev, 0);
    if (pe != cudaSuccess && pe != cudaErrorPeerAccessAlreadyEnabled) check(pe, "cudaDeviceEnablePeerAccess");
    cudaGetLastError();
    DeviceBuffer dst(bytes);
    check(cudaSetDevice(dev), "cudaSetDevice");
    const cudaError_t de = cudaDeviceEnablePeerAccess(peer, 0);
    if (de != cudaSuccess && de != cudaErrorPeerAccessAlreadyEnabled) check(de, "cudaDeviceEnablePeerAccess");
    cudaGetLastError();
    DeviceBuffer src(bytes);
    check(cudaMemset(src.ptr, 1, bytes), "cudaMemset");
    log << "memest-calibrate: peer copy " << dev << " -> " << peer << "\n";
    CopyTiming t;
    t.src = dev;
    t.dst = peer;
    t.bytes = static_cast<int64_t>(bytes);
    t.seconds = time_copy(dst.ptr, peer, src.ptr, dev, bytes);
    m.peer_copies.push_back(t);
  }
  check(cudaSetDevice(dev), "cudaSetDevice");
  return MeasureStatus::ok;
}

}  // namespace memest_calibrate
