#include <cuda.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_check.cuh"
#include "vmm.hpp"

namespace lab::vmm {
namespace {

// Driver functions through the runtime: nothing links libcuda itself.
template <class F>
F driver(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found));
  if (fn == nullptr || found != cudaDriverEntryPointSuccess)
    throw std::runtime_error(std::string("the CUDA driver has no ") + name);
  return reinterpret_cast<F>(fn);
}

struct Api {
  decltype(&cuMemCreate) create = driver<decltype(&cuMemCreate)>("cuMemCreate");
  decltype(&cuMemExportToShareableHandle) export_handle =
      driver<decltype(&cuMemExportToShareableHandle)>("cuMemExportToShareableHandle");
  decltype(&cuMemImportFromShareableHandle) import_handle =
      driver<decltype(&cuMemImportFromShareableHandle)>("cuMemImportFromShareableHandle");
  decltype(&cuMemAddressReserve) reserve =
      driver<decltype(&cuMemAddressReserve)>("cuMemAddressReserve");
  decltype(&cuMemMap) map = driver<decltype(&cuMemMap)>("cuMemMap");
  decltype(&cuMemSetAccess) set_access = driver<decltype(&cuMemSetAccess)>("cuMemSetAccess");
  decltype(&cuMemUnmap) unmap = driver<decltype(&cuMemUnmap)>("cuMemUnmap");
  decltype(&cuMemAddressFree) address_free =
      driver<decltype(&cuMemAddressFree)>("cuMemAddressFree");
  decltype(&cuMemRelease) release = driver<decltype(&cuMemRelease)>("cuMemRelease");
  decltype(&cuMemGetAllocationGranularity) granularity =
      driver<decltype(&cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
};

const Api& api() {
  static const Api a;
  return a;
}

void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS)
    throw CudaError(cudaErrorUnknown,
                    std::string(what) + " failed (CUresult " + std::to_string(r) + ")");
}

int device() {
  int d = 0;
  CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

Mapping map_here(CUmemGenericAllocationHandle handle, std::size_t bytes, AccessMask mask) {
  if (mask == 0) mask = AccessMask{1} << device();
  std::vector<CUmemAccessDesc> access;
  for (int d = 0; d < 32; ++d) {
    if (!(mask >> d & 1)) continue;
    CUmemAccessDesc a{};
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = d;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    access.push_back(a);
  }
  CUdeviceptr va = 0;
  check(api().reserve(&va, bytes, 0, 0, 0), "cuMemAddressReserve");
  check(api().map(va, bytes, 0, handle, 0), "cuMemMap");
  check(api().set_access(va, bytes, access.data(), access.size()), "cuMemSetAccess");
  return {reinterpret_cast<void*>(va), bytes, static_cast<std::uint64_t>(handle), mask};
}

CUmemAllocationProp properties(int on) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = on;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

}  // namespace

std::size_t rounded(std::size_t bytes, int on) {
  if (on < 0) on = device();
  const CUmemAllocationProp prop = properties(on);
  std::size_t granule = 0;
  check(api().granularity(&granule, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity");
  return (std::max<std::size_t>(bytes, 1) + granule - 1) / granule * granule;
}

Mapping allocate(std::size_t bytes, int* fd, int on, AccessMask access) {
  if (on < 0) on = device();
  const CUmemAllocationProp prop = properties(on);
  bytes = rounded(bytes, on);
  CUmemGenericAllocationHandle handle = 0;
  check(api().create(&handle, bytes, &prop, 0), "cuMemCreate");
  check(api().export_handle(fd, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
        "cuMemExportToShareableHandle");
  return map_here(handle, bytes, access | AccessMask{1} << on);
}

Mapping import(int fd, std::size_t bytes, AccessMask access) {
  CUmemGenericAllocationHandle handle = 0;
  check(api().import_handle(&handle, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
        "cuMemImportFromShareableHandle");
  return map_here(handle, bytes, access);
}

void release(const Mapping& m) {
  // From destructors: failures leak, they must not throw.
  int current = 0;
  cudaGetDevice(&current);
  for (int d = 0; d < 32; ++d) {
    if (!(m.access >> d & 1) || d == current) continue;
    cudaSetDevice(d);
    cudaDeviceSynchronize();
  }
  cudaSetDevice(current);
  cudaDeviceSynchronize();
  const auto va = reinterpret_cast<CUdeviceptr>(m.pointer);
  api().unmap(va, m.bytes);
  api().address_free(va, m.bytes);
  api().release(static_cast<CUmemGenericAllocationHandle>(m.handle));
}

}  // namespace lab::vmm
