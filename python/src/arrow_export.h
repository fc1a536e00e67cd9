// Arrow arrays and schemas built in C++ and handed to pyarrow through the
// Arrow C data interface (arrow_c.h), wrapped in the PyCapsules named
// "arrow_schema" and "arrow_array" that pyarrow's __arrow_c_array__ protocol
// takes. No Arrow library is linked.
//
// Ownership: every exported array and schema owns its buffers, children and
// dictionary, and frees them in its release callback, which pyarrow calls
// when the last reference goes. Column buffers come from a process-wide pool
// that recycles them from chunk to chunk (64-byte aligned, up to 64 MiB kept).
//
// Thread safety: release callbacks may run on any thread, with or without the
// GIL; the pool is locked. Building arrays and schemas (FixedColumn,
// string_array, new_*) touches no Python object and may run without the GIL;
// one FixedColumn is used by one thread at a time. The capsule functions need
// the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "arrow_c.h"

namespace iotape::python {

// The memory behind one exported array: what its release callback frees.
struct ArrayOwner {
  std::vector<std::pair<void*, size_t>> allocations;  // pool buffers and their sizes
  std::vector<const void*> buffers;                    // the array's buffers, in Arrow's order
  std::vector<ArrowArray*> children;
  ArrowArray* dictionary = nullptr;
};

// A buffer of `bytes` (uninitialised) from the pool, owned by `owner`.
// Throws std::bad_alloc.
void* alloc_buffer(ArrayOwner& owner, size_t bytes);

// Returns the buffers of an owner never exported to the pool and deletes it.
void discard(ArrayOwner* owner);

// An array of `owner`'s buffers, children and dictionary, which it takes.
ArrowArray* new_array(int64_t length, int64_t null_count, ArrayOwner* owner);

// A struct array of `children` (all of `length`), which it takes.
ArrowArray* new_struct_array(int64_t length, std::vector<ArrowArray*> children);

// A schema node of Arrow `format` ("l", "i", "c", "u", ...) named `name`;
// it takes `dictionary` (the values' schema of a dictionary-encoded column).
ArrowSchema* new_schema(std::string format, std::string name, bool nullable, ArrowSchema* dictionary = nullptr);

// The unnamed, non-nullable struct schema of `children`, which it takes.
ArrowSchema* new_struct_schema(std::vector<ArrowSchema*> children);

// A fixed-width column: decoded for every row of the chunk (put), cut to the
// rows kept (keep), then given a validity bitmap when it is nullable
// (null_unless), written 8 rows to a byte without branches and dropped when
// nothing is null. Call start before anything else and finish last; a column
// destroyed unfinished returns its buffers to the pool.
template <typename T>
struct FixedColumn {
  ArrayOwner* owner = nullptr;
  T* values = nullptr;
  uint8_t* validity = nullptr;
  int64_t nulls = 0;

  FixedColumn() = default;
  FixedColumn(const FixedColumn&) = delete;
  FixedColumn& operator=(const FixedColumn&) = delete;
  ~FixedColumn() {
    if (owner) discard(owner);
  }

  // Room for n values.
  void start(size_t n) {
    owner = new ArrayOwner;
    values = static_cast<T*>(alloc_buffer(*owner, n * sizeof(T)));
  }
  // The put of ChunkColumns' decoders.
  auto put() {
    return [v = values](uint32_t i, auto x) { v[i] = static_cast<T>(x); };
  }
  // Moves rows[r] to r (rows ascending).
  void keep(const std::vector<uint32_t>& rows) {
    for (size_t r = 0; r < rows.size(); ++r) values[r] = values[rows[r]];
  }
  // Rows [0, n) whose value fails known(value) become nulls (and zeros).
  template <typename Known>
  void null_unless(size_t n, Known known) {
    validity = static_cast<uint8_t*>(alloc_buffer(*owner, (n + 7) / 8));
    auto bits = [&](size_t r, size_t m) {
      unsigned byte = 0, valid = 0;
#pragma GCC unroll 8
      for (size_t k = 0; k < m; ++k) {
        const bool ok = known(values[r + k]);
        values[r + k] = ok ? values[r + k] : T{};
        byte |= static_cast<unsigned>(ok) << k;
        valid += ok;
      }
      validity[r / 8] = static_cast<uint8_t>(byte);
      return valid;
    };
    size_t valid = 0, r = 0;
    for (; r + 8 <= n; r += 8) valid += bits(r, 8);  // a constant 8: unrolled, no branch
    if (r < n) valid += bits(r, n - r);
    nulls = static_cast<int64_t>(n - valid);
  }
  // The array of the first `length` values (its dictionary, which it takes,
  // for dictionary indexes); the column is empty after.
  ArrowArray* finish(size_t length, ArrowArray* dictionary = nullptr) {
    owner->buffers = {nulls ? validity : nullptr, values};
    owner->dictionary = dictionary;
    auto* a = new_array(static_cast<int64_t>(length), nulls, owner);
    owner = nullptr;
    return a;
  }
};

// Arrow strings must be UTF-8; names are bytes. Invalid sequences become
// U+FFFD, as in iotape cat --format jsonl.
std::string valid_utf8(std::string_view s);

// A utf8 array of `values` (valid UTF-8): a dictionary's values.
ArrowArray* string_array(const std::vector<std::string>& values);

// Capsules that own `s` and `a`: released and deleted with the capsule, unless
// pyarrow has moved them out (then their release is null). REQUIRES: the GIL.
pybind11::capsule schema_capsule(ArrowSchema* s);
pybind11::capsule array_capsule(ArrowArray* a);

}  // namespace iotape::python
